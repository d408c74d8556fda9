// valid_utf8 and dump_json (bench/records/utf8.hpp): bytes from outside become valid UTF-8, and
// the writers never throw on bytes that are not.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "records/utf8.hpp"

namespace clusterbench {
namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

TEST(Utf8, ValidTextIsUnchanged) {
  for (std::string s : std::initializer_list<std::string>{"", "node01", "gr\xC3\xBC\xC3\x9F",
                                                          "\xE2\x82\xAC 5", "\xF0\x9F\x98\x80",
                                                          std::string("a\0b", 3), "\xEF\xBF\xBE"}) {
    EXPECT_TRUE(is_valid_utf8(s)) << s;
    EXPECT_EQ(valid_utf8(s), s);
  }
}

TEST(Utf8, EachInvalidByteBecomesOneReplacement) {
  EXPECT_FALSE(is_valid_utf8("\xff\xfe"));
  EXPECT_EQ(valid_utf8("\xff\xfe"), kFFFD + kFFFD);
  EXPECT_EQ(valid_utf8("host\xff-1"), "host" + kFFFD + "-1");
  EXPECT_EQ(valid_utf8("\x80"), kFFFD);                          // a continuation byte alone
  EXPECT_EQ(valid_utf8("\xC0\xAF"), kFFFD + kFFFD);              // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);  // a surrogate (U+D800)
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // > U+10FFFF
}

TEST(Utf8, TheFirstIllFormedByteIsNamedByLineColumnAndValue) {
  EXPECT_EQ(first_invalid_utf8("gr\xC3\xBC\xC3\x9F"), std::string::npos);
  EXPECT_EQ(first_invalid_utf8("ab\xE2\x82"), 2u);  // a truncated sequence starts the error
  EXPECT_EQ(utf8_error("{\"a\": 1}"), "");
  // Line 3 ("  \"b\": \"x" is 9 bytes, then 0xFE): lines from 1, columns in bytes from 1.
  EXPECT_EQ(utf8_error("{\n  \"a\": \"\xC3\xBC\",\n  \"b\": \"x\xFE\"\n}"),
            "line 3, column 10: byte 0xFE is not UTF-8");
  EXPECT_EQ(utf8_error("\x80", 7), "line 7, column 1: byte 0x80 is not UTF-8");
  EXPECT_EQ(utf8_error("ab\xC0\xAF", 0), "column 3: byte 0xC0 is not UTF-8");  // no line
}

TEST(Utf8, ATruncatedSequenceBecomesOneReplacement) {
  EXPECT_EQ(valid_utf8("ab\xE2\x82"), "ab" + kFFFD);  // at the end
  EXPECT_EQ(valid_utf8("\xE2\x82"
                       "x"),
            kFFFD + "x");  // before ASCII
  EXPECT_EQ(valid_utf8("\xF0\x9F\x98"
                       "\xC3\xBC"),
            kFFFD + "\xC3\xBC");  // before a valid one
}

TEST(Utf8, CleaningTwiceChangesNothing) {
  std::string once = valid_utf8("\xff\xfe\xE2\x82 ok \xC3");
  EXPECT_TRUE(is_valid_utf8(once));
  EXPECT_EQ(valid_utf8(once), once);
}

TEST(Utf8, JsonStringsAndKeysAreCleaned) {
  nlohmann::json j = {{"host", "n\xff"}, {"list", {"\xfe", 1, nullptr}}, {"k\xff", true}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  nlohmann::json clean = valid_utf8_json(j);
  EXPECT_EQ(clean.dump(), "{\"host\":\"n" + kFFFD + "\",\"k" + kFFFD + "\":true,\"list\":[\"" +
                              kFFFD + "\",1,null]}");
}

TEST(Utf8, DumpJsonNeverThrowsOnInvalidBytes) {
  nlohmann::json j = {{"stderr", "fio: \xff\xfe"}};
  std::string text;
  ASSERT_NO_THROW(text = dump_json(j));
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(nlohmann::json::parse(text)["stderr"].get<std::string>().substr(0, 5), "fio: ");
  EXPECT_EQ(dump_json({{"a", 1}}, 2), "{\n  \"a\": 1\n}");
}

TEST(Utf8, ErrorTextDropsNlohmannsTags) {
  try {
    const nlohmann::json j = nlohmann::json::parse("{\"a\":");
    FAIL() << "no parse error: " << j;
  } catch (const nlohmann::json::parse_error& e) {
    const std::string got = error_text(std::string("run.json: ") + e.what());
    EXPECT_EQ(got.rfind("run.json: parse error at line 1, column 6: ", 0), 0u) << got;
    EXPECT_EQ(got.find("[json.exception"), std::string::npos) << got;
  }
  EXPECT_EQ(error_text("a [json.exception.type_error.302] type must be number; b \xff"),
            "a type must be number; b " + kFFFD);
  EXPECT_EQ(error_text("[json.exception.x without its end"), "[json.exception.x without its end");
}

}  // namespace
}  // namespace clusterbench
