// Run archives (reports/archive.cpp): an archive of a run directory verifies; one with a byte
// flipped in a member, a member removed, a member added or the compressed stream damaged fails,
// naming the file. Tampered archives are rewritten member by member with libarchive.
// Budget: < 3 s.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "records.hpp"
#include "reports/archive.hpp"

namespace clusterbench::report {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

const std::string kFleet = std::string(CB_FIXTURES) + "/results/uniformity-5";

class ArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("cb-archive-" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    // A run directory named like a run id, with a nested file, copied from the fixture.
    run_ = tmp_ / "20261130T100000Z-node01";
    fs::create_directories(run_ / "fio");
    for (const char* f : {"run.json", "records.jsonl", "spec.json"})
      fs::copy_file(fs::path(kFleet) / f, run_ / f);
    std::ofstream(run_ / "fio" / "seqread.json") << "{\"jobs\": []}\n";
    std::ofstream(run_ / "SHA256SUMS") << "stale manifest, replaced\n";
  }
  void TearDown() override { fs::remove_all(tmp_); }

  struct Member {
    std::string name, data;
  };

  static std::vector<Member> read_members(const std::string& path) {
    std::vector<Member> out;
    struct archive* a = archive_read_new();
    archive_read_support_filter_all(a);
    archive_read_support_format_all(a);
    EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 65536), ARCHIVE_OK);
    struct archive_entry* e = nullptr;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
      Member m{archive_entry_pathname(e), ""};
      char buf[8192];
      la_ssize_t n;
      while ((n = archive_read_data(a, buf, sizeof buf)) > 0) m.data.append(buf, n);
      out.push_back(std::move(m));
    }
    archive_read_free(a);
    return out;
  }

  static void write_members(const std::string& path, const std::vector<Member>& members) {
    struct archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
    ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
    for (const auto& m : members) {
      struct archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, m.name.c_str());
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_perm(e, 0644);
      archive_entry_set_size(e, static_cast<la_int64_t>(m.data.size()));
      archive_write_header(a, e);
      archive_write_data(a, m.data.data(), m.data.size());
      archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
  }

  /// Copies `src` to `dst` with `change` applied to the member list.
  static void rewrite(const std::string& src, const std::string& dst,
                      const std::function<void(std::vector<Member>&)>& change) {
    auto members = read_members(src);
    change(members);
    write_members(dst, members);
  }

  fs::path tmp_, run_;
};

TEST_F(ArchiveTest, ArchiveVerifies) {
  std::string out = (tmp_ / "evidence.tar.gz").string();
  ArchiveSummary s = write_archive(run_.string(), out);
  EXPECT_EQ(s.prefix, "20261130T100000Z-node01");
  EXPECT_EQ(s.files, 4);  // fio/seqread.json, records.jsonl, run.json, spec.json
  EXPECT_EQ(s.bytes, fs::file_size(run_ / "run.json") + fs::file_size(run_ / "records.jsonl") +
                         fs::file_size(run_ / "spec.json") + 13);

  // Members in path order, the manifest last, in sha256sum's format over the run's own bytes.
  auto members = read_members(out);
  Strings names;
  for (const auto& m : members) names.push_back(m.name);
  EXPECT_EQ(names,
            (Strings{"20261130T100000Z-node01/fio/seqread.json",
                     "20261130T100000Z-node01/records.jsonl", "20261130T100000Z-node01/run.json",
                     "20261130T100000Z-node01/spec.json", "20261130T100000Z-node01/SHA256SUMS"}));
  EXPECT_EQ(members.back().data, sha256_hex("{\"jobs\": []}\n") + "  fio/seqread.json\n" +
                                     sha256_file((run_ / "records.jsonl").string()) +
                                     "  records.jsonl\n" +
                                     sha256_file((run_ / "run.json").string()) + "  run.json\n" +
                                     sha256_file((run_ / "spec.json").string()) + "  spec.json\n");

  VerifyResult v = verify_archive(out);
  EXPECT_TRUE(v.ok()) << v.problems.front();
  EXPECT_EQ(v.files_checked, 4);

  // The default path is DIR.tar.gz beside the run directory; an archive written inside the run
  // directory does not pack itself.
  EXPECT_EQ(default_archive_path(run_.string() + "/"), run_.string() + ".tar.gz");
  std::string inside = (run_ / "self.tar.gz").string();
  EXPECT_EQ(write_archive(run_.string(), inside).files, 4);
  EXPECT_TRUE(verify_archive(inside).ok());
}

TEST_F(ArchiveTest, FlippedByteInAMemberNamesIt) {
  std::string good = (tmp_ / "good.tar.gz").string(), bad = (tmp_ / "bad.tar.gz").string();
  write_archive(run_.string(), good);
  rewrite(good, bad, [](std::vector<Member>& ms) {
    for (auto& m : ms)
      if (m.name.ends_with("/records.jsonl")) m.data[m.data.size() / 2] ^= 0x01;
  });
  VerifyResult v = verify_archive(bad);
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_EQ(v.problems[0].rfind("records.jsonl: sha256 mismatch (manifest ", 0), 0u)
      << v.problems[0];
  EXPECT_EQ(v.files_checked, 3);
}

TEST_F(ArchiveTest, RemovedAndAddedMembersAreNamed) {
  std::string good = (tmp_ / "good.tar.gz").string(), bad = (tmp_ / "bad.tar.gz").string();
  write_archive(run_.string(), good);
  rewrite(good, bad, [](std::vector<Member>& ms) {
    std::erase_if(ms, [](const Member& m) { return m.name.ends_with("/run.json"); });
    ms.insert(ms.begin(), Member{"20261130T100000Z-node01/extra.txt", "not in the manifest\n"});
  });
  VerifyResult v = verify_archive(bad);
  EXPECT_EQ(v.problems, (Strings{"run.json: listed in SHA256SUMS but missing from the archive",
                                 "extra.txt: not listed in SHA256SUMS"}));

  rewrite(good, bad, [](std::vector<Member>& ms) { ms.pop_back(); });  // the manifest itself
  EXPECT_EQ(verify_archive(bad).problems, Strings{"SHA256SUMS: missing from the archive"});
}

TEST_F(ArchiveTest, DamagedCompressedStreamFails) {
  std::string good = (tmp_ / "good.tar.gz").string();
  write_archive(run_.string(), good);
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  bytes[bytes.size() / 2] ^= 0x5A;
  std::string bad = (tmp_ / "damaged.tar.gz").string();
  std::ofstream(bad, std::ios::binary) << bytes;
  VerifyResult v = verify_archive(bad);
  // Reading stops at the damage, or the damaged bytes decompress into other content. Either way
  // every finding names a file: a member (read when the damage was found, or whose hash no
  // longer matches) or the archive itself when not even the first member decompresses.
  ASSERT_FALSE(v.ok());
  for (const std::string& p : v.problems) {
    bool named = p.rfind(bad + ": not a readable archive: ", 0) == 0;
    for (const char* f :
         {"fio/seqread.json", "records.jsonl", "run.json", "spec.json", "SHA256SUMS"})
      named = named || p.find(f) != std::string::npos;
    EXPECT_TRUE(named) << p;
  }
}

TEST_F(ArchiveTest, InputErrors) {
  EXPECT_THROW(verify_archive((tmp_ / "absent.tar.gz").string()), InputError);
  EXPECT_THROW(write_archive((tmp_ / "absent").string(), (tmp_ / "x.tar.gz").string()), InputError);
  fs::remove(run_ / "run.json");
  EXPECT_THROW(write_archive(run_.string(), (tmp_ / "x.tar.gz").string()), InputError);
  std::ofstream(tmp_ / "plain.txt") << "not an archive\n";
  VerifyResult v = verify_archive((tmp_ / "plain.txt").string());
  EXPECT_FALSE(v.ok());
}

}  // namespace
}  // namespace clusterbench::report
