// The fio JSON parser on fixture files in the real formats of fio 2.2.10, 3.1 and 3.33 (the last
// from real runs here), one of them with a job error (ENOSPC). Every expected number below is the
// number written in the fixture file, converted by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/api/benchmark.hpp"
#include "io/fio.hpp"
#include "io/fio_parser.hpp"

using namespace clusterbench::io;

namespace {
std::string fixture(const std::string& name) {
  std::ifstream in(std::string(CB_FIXTURES) + "/fio/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST(FioParser, Fio2xMicrosecondsAndKibPerSecond) {
  FioOutput f = parse_fio_json(fixture("fio-2.2.10-randread.json"));
  EXPECT_EQ(f.version, "fio-2.2.10");
  ASSERT_EQ(f.jobs.size(), 1u);
  const FioJob& j = f.jobs[0];
  EXPECT_EQ(j.name, "randread");
  EXPECT_EQ(j.error, 0);
  EXPECT_TRUE(j.read.active());
  EXPECT_FALSE(j.write.active());
  // "bw" : 699050 KiB/s -> x1024 B/s.
  EXPECT_DOUBLE_EQ(j.read.bw_bytes_per_s, 699050.0 * 1024);
  EXPECT_EQ(j.read.bw_source, "bw*1024");
  EXPECT_DOUBLE_EQ(j.read.iops, 174762.50);
  EXPECT_DOUBLE_EQ(j.read.io_bytes, 41943040.0 * 1024);  // io_bytes counts KiB in fio 2.x
  // "clat" is already in us: 50th 716, 99th 1256, 99.9th 1768, mean 727.12.
  EXPECT_DOUBLE_EQ(*j.read.clat_p50_us, 716);
  EXPECT_DOUBLE_EQ(*j.read.clat_p99_us, 1256);
  EXPECT_DOUBLE_EQ(*j.read.clat_p999_us, 1768);
  EXPECT_DOUBLE_EQ(j.read.clat_mean_us, 727.12);
  EXPECT_EQ(f.global_options.at("ioengine"), "libaio");
  EXPECT_EQ(j.options.at("numjobs"), "4");
  EXPECT_TRUE(f.preamble.empty());
}

TEST(FioParser, Fio31NanosecondsWithoutBwBytesOrPercentilesAfterWarnings) {
  std::string text = fixture("fio-3.1-seqwrite-nopct.json");
  FioOutput f = parse_fio_json(text);
  EXPECT_EQ(f.version, "fio-3.1");
  // The two warning lines before the JSON are kept as the preamble.
  EXPECT_NE(f.preamble.find("process shared mutexes"), std::string::npos);
  EXPECT_NE(f.preamble.find("queue depth will be capped"), std::string::npos);
  ASSERT_EQ(f.jobs.size(), 1u);
  const FioJob& j = f.jobs[0];
  EXPECT_FALSE(j.read.active());
  ASSERT_TRUE(j.write.active());
  EXPECT_DOUBLE_EQ(j.write.bw_bytes_per_s, 3993346.0 * 1024);  // no bw_bytes in 3.1
  EXPECT_EQ(j.write.bw_source, "bw*1024");
  EXPECT_DOUBLE_EQ(j.write.iops, 3899.752);
  EXPECT_DOUBLE_EQ(j.write.io_bytes, 122675593216.0);  // bytes in 3.x
  EXPECT_DOUBLE_EQ(j.write.clat_mean_us, 16380127.22 / 1000);
  // clat_percentiles=0: no "percentile" section, so no percentiles (and no exception).
  EXPECT_FALSE(j.write.clat_p50_us.has_value());
  EXPECT_FALSE(j.write.clat_p99_us.has_value());
  EXPECT_FALSE(j.write.clat_p999_us.has_value());
  EXPECT_TRUE(f.global_options.empty());  // no "global options", no "disk_util"
}

TEST(FioParser, Fio333GroupReportingSeqRead) {
  FioOutput f = parse_fio_json(fixture("fio-3.33-seqread-group.json"));
  EXPECT_EQ(f.version, "fio-3.33");
  ASSERT_EQ(f.jobs.size(), 1u);
  const FioJob& j = f.jobs[0];
  EXPECT_EQ(j.read.bw_source, "bw_bytes");
  EXPECT_DOUBLE_EQ(j.read.bw_bytes_per_s, 867072722);
  EXPECT_DOUBLE_EQ(j.read.iops, 768.579492);
  // clat_ns percentiles, ns -> us.
  EXPECT_DOUBLE_EQ(*j.read.clat_p50_us, 81264.640);
  EXPECT_DOUBLE_EQ(*j.read.clat_p99_us, 105381.888);
  EXPECT_DOUBLE_EQ(*j.read.clat_p999_us, 106430.464);
  EXPECT_FALSE(j.write.active());
}

TEST(FioParser, Fio333MixedReadAndWrite) {
  FioOutput f = parse_fio_json(fixture("fio-3.33-randrw.json"));
  const FioJob& j = f.jobs.at(0);
  EXPECT_DOUBLE_EQ(j.read.bw_bytes_per_s, 117466262);
  EXPECT_DOUBLE_EQ(j.write.bw_bytes_per_s, 50318788);
  EXPECT_DOUBLE_EQ(j.read.iops, 28678.286853);
  EXPECT_DOUBLE_EQ(j.write.iops, 12284.860558);
  EXPECT_DOUBLE_EQ(*j.read.clat_p50_us, 387.072);
  EXPECT_DOUBLE_EQ(*j.write.clat_p999_us, 8028.160);
}

TEST(FioParser, JobErrorKeepsFiosMessage) {
  std::string text = fixture("fio-3.33-enospc.json");
  FioOutput f = parse_fio_json(text);
  ASSERT_EQ(f.jobs.size(), 1u);
  EXPECT_EQ(f.jobs[0].error, 28);  // ENOSPC
  EXPECT_DOUBLE_EQ(f.jobs[0].write.bw_bytes_per_s, 838860800);
  std::string msg = fio_error_text(f.preamble, "");
  EXPECT_EQ(msg,
            "fio: pid=25075, err=28/file:io_u.c:1876, func=io_u error, error=No space left on "
            "device");
  EXPECT_FALSE(looks_like_direct_refused(text, "", &f));
}

TEST(FioParser, RejectsTextWithoutJson) {
  EXPECT_THROW(parse_fio_json("fio: failed parsing rw=sideways\n"), FioParseError);
  EXPECT_THROW(parse_fio_json("{ \"fio version\" : \"fio-3.33\" }"), FioParseError);
  EXPECT_THROW(parse_fio_json("{ \"jobs\" : [ { \"jobname\" : \"x\" } ] }"), FioParseError);
  EXPECT_THROW(parse_fio_json("{ \"jobs\" : [ "), FioParseError);
  try {  // a fio that ran no job: a failure, never an ok record without metrics
    parse_fio_json("{\"fio version\":\"fio-3.33\",\"jobs\":[]}");
    ADD_FAILURE() << "an empty jobs array parsed";
  } catch (const FioParseError& e) {
    EXPECT_NE(std::string(e.what()).find("empty \"jobs\" array"), std::string::npos) << e.what();
  }
}

TEST(FioParser, BracesInAWarningLineDoNotStartTheDocument) {
  std::string text =
      "fio: option {foo} ignored\n{\"fio version\":\"fio-3.33\",\"jobs\":[{\"jobname\":"
      "\"a\",\"error\":0,\"read\":{\"bw_bytes\":2000,\"iops\":3,\"io_bytes\":6000},"
      "\"write\":{}}]}\ntrailing text";
  FioOutput f = parse_fio_json(text);
  EXPECT_EQ(f.preamble, "fio: option {foo} ignored\n");
  EXPECT_DOUBLE_EQ(f.jobs.at(0).read.bw_bytes_per_s, 2000);
}

// fio's bytes need not be UTF-8 (a job or file name, a warning): the result holds them as
// U+FFFD, so its JSON can be written; before, nlohmann's parser refused the document.
TEST(FioParser, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  std::string text =
      "fio: warning \xff\xfe\n{\"fio version\":\"fio-3.33\",\"jobs\":[{\"jobname\":"
      "\"a\xff\xfe\",\"error\":0,\"read\":{\"bw_bytes\":2000,\"iops\":3,\"io_bytes\":6000},"
      "\"write\":{}}]}\n";
  FioOutput f = parse_fio_json(text);
  EXPECT_EQ(f.preamble, "fio: warning " + fffd + fffd + "\n");
  EXPECT_EQ(f.jobs.at(0).name, "a" + fffd + fffd);
  EXPECT_EQ(f.document["jobs"][0]["jobname"], "a" + fffd + fffd);
  EXPECT_NO_THROW((void)f.document.dump());
  try {  // a message quoting the text stays UTF-8 too
    parse_fio_json(std::string(199, 'x') + "\xC3\xBC no JSON");
    ADD_FAILURE() << "text without JSON parsed";
  } catch (const FioParseError& e) {
    EXPECT_NO_THROW((void)clusterbench::json(e.what()).dump());
  }
}

// IOs in flight: numjobs x iodepth summed over the jobs, options from the job or else the global
// section; iodepth counts for an asynchronous engine only, fio's defaults are 1.
TEST(FioParser, InFlightFromTheJobOptions) {
  using nlohmann::json;
  const json shipped = {{"global", {{"ioengine", "libaio"}, {"direct", "1"}}},
                        {"jobs", {{{"bs", "1M"}, {"iodepth", "32"}, {"numjobs", "4"}}}}};
  EXPECT_EQ(fio_in_flight(shipped), 128);
  const json two = {{"global", {{"iodepth", "8"}}},
                    {"jobs",
                     {{{"ioengine", "io_uring"}, {"numjobs", "2"}},
                      {{"ioengine", "psync"}, {"numjobs", "3"}, {"iodepth", "64"}}}}};
  EXPECT_EQ(fio_in_flight(two), 2 * 8 + 3 * 1);
  EXPECT_EQ(fio_in_flight({{"jobs", {json::object()}}}), 1);  // fio's defaults
  EXPECT_EQ(fio_in_flight(json::object()), 0);
}

TEST(FioParser, DirectRefusalDetection) {
  EXPECT_TRUE(looks_like_direct_refused(
      "fio: pid=7, err=22/file:filesetup.c:805, func=open(/x/a.0.0), error=Invalid argument", "",
      nullptr));
  EXPECT_TRUE(looks_like_direct_refused(
      "", "fio: looks like your file system does not support direct=1/buffered=0\n", nullptr));
  EXPECT_FALSE(looks_like_direct_refused("fio: err=28", "No space left", nullptr));
}

namespace {
/// The message of the InputError io.fio's plan throws with `set` ("" when none).
std::string plan_error(const std::string& set) {
  try {
    clusterbench::Registry::get().find("io.fio")->cases(clusterbench::Settings("ci", {set}));
  } catch (const clusterbench::InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(FioKnobs, SuiteDefaultsAndChecks) {
  using clusterbench::Settings;
  const clusterbench::Benchmark* b = clusterbench::Registry::get().find("io.fio");
  ASSERT_NE(b, nullptr);
  auto cases = b->cases(Settings("ci", {}));
  ASSERT_EQ(cases.size(), fio_profiles().size());
  EXPECT_EQ(cases[0], clusterbench::json({{"profile", "seq_read"}}));
  std::string shown;
  for (const auto* k : b->knob_specs()) shown += clusterbench::describe_knob(b->id(), *k) + "\n";
  EXPECT_NE(shown.find("--set io.fio.size=16M/1G/4G  (size, B)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("--set io.fio.runtime=300ms/1500ms/12  (text)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("--set io.fio.ramp=200ms/500ms/2  (text)"), std::string::npos) << shown;
  EXPECT_EQ(plan_error("io.fio.runtime=-1"), "--set io.fio.runtime: must be a positive value");
  EXPECT_EQ(plan_error("io.fio.runtime=0"), "--set io.fio.runtime: must be a positive value");
  EXPECT_EQ(plan_error("io.fio.size=0"), "--set io.fio.size: must be a positive value");
  EXPECT_EQ(plan_error("io.fio.repeat=0"), "--set io.fio.repeat: must be at least 1");
  EXPECT_NE(shown.find("--set io.fio.repeat=5  (integer, count)"), std::string::npos) << shown;
  EXPECT_EQ(plan_error("io.fio.scratch=/a:b"),
            "--set io.fio.scratch: fio's directory= cannot hold ':'; choose another path");
  EXPECT_EQ(plan_error("io.fio.profiles=seq_read,fancy"),
            "--set io.fio.profiles: unknown profile 'fancy'");
  EXPECT_EQ(plan_error("io.fio.allow_destructive_device=yes"),
            "--set io.fio.allow_destructive_device: unknown value 'yes' (false, true)");
  // A profiles_dir of one's own may hold other names; a job file that is not there is bad input
  // (exit 2) at plan time, naming the file.
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / ("fio_profiles_" + std::to_string(getpid())))
          .lexically_normal()
          .string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/fancy.fio") << "[global]\n";
  EXPECT_EQ(
      b->cases(Settings("ci", {"io.fio.profiles=fancy", "io.fio.profiles_dir=" + dir})).size(), 1u);
  EXPECT_EQ(plan_error("io.fio.profiles_dir=" + dir),
            "io.fio: no job file " + dir + "/seq_read.fio (--set io.fio.profiles_dir)");
  std::filesystem::remove_all(dir);
}
