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

#include "records/records.hpp"
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

  // The default path is DIR.tar.gz beside the run directory.
  EXPECT_EQ(default_archive_path(run_.string() + "/"), run_.string() + ".tar.gz");
}

// -o inside the run directory (a new file, a run file, the directory itself, via a symlink) is
// refused before anything is written, and records.jsonl keeps its bytes; so are a missing parent,
// a parent where no file can be created (/proc) and an existing directory.
TEST_F(ArchiveTest, OutputPathRefusedBeforeWriting) {
  std::string records = sha256_file((run_ / "records.jsonl").string());
  fs::create_directory_symlink(run_, tmp_ / "alias");
  for (const fs::path& out : {run_ / "records.jsonl", run_ / "self.tar.gz", run_,
                              run_ / "fio" / "x.tar.gz", tmp_ / "alias" / "run.json"}) {
    try {
      write_archive(run_.string(), out.string());
      ADD_FAILURE() << out << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("-o " + out.string() + ": ", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(sha256_file((run_ / "records.jsonl").string()), records);
  EXPECT_FALSE(fs::exists(run_ / "self.tar.gz"));
  auto why = [&](const std::string& out) {
    try {
      write_archive(run_.string(), out);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(why("/nonexistent/x.tar.gz"),
            "-o /nonexistent/x.tar.gz: directory /nonexistent does not exist");
  EXPECT_EQ(why("/proc/x.tar.gz").rfind("-o /proc/x.tar.gz: cannot create a file in /proc (", 0),
            0u);
  EXPECT_EQ(why(tmp_.string()), "-o " + tmp_.string() + ": is a directory; name a file");
}

// Members that would land outside the extraction directory, and links and devices, fail
// verification naming the member, even when SHA256SUMS lists them.
TEST_F(ArchiveTest, UnsafeAndNonRegularMembersAreNamed) {
  struct Raw {
    std::string name, data;
    unsigned type = AE_IFREG;
    std::string link;  // symlink target, or hard link target when type == 0
  };
  auto write_raw = [](const std::string& path, const std::vector<Raw>& members) {
    struct archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
    ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
    for (const auto& m : members) {
      struct archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, m.name.c_str());
      archive_entry_set_filetype(e, m.type ? m.type : AE_IFREG);
      archive_entry_set_perm(e, 0644);
      if (m.type == AE_IFLNK) archive_entry_set_symlink(e, m.link.c_str());
      if (m.type == 0) archive_entry_set_hardlink(e, m.link.c_str());
      archive_entry_set_size(e, static_cast<la_int64_t>(m.data.size()));
      archive_write_header(a, e);
      if (!m.data.empty()) archive_write_data(a, m.data.data(), m.data.size());
      archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
  };
  // A self-consistent archive one level up: every hash matches, yet nothing may be extracted.
  std::string up = (tmp_ / "up.tar.gz").string();
  write_raw(up, {{"../run.json", "{}\n", AE_IFREG, ""},
                 {"../SHA256SUMS", sha256_hex("{}\n") + "  run.json\n", AE_IFREG, ""}});
  EXPECT_EQ(verify_archive(up).problems,
            (Strings{"../run.json: member path climbs out with .. (unsafe to extract)",
                     "../SHA256SUMS: member path climbs out with .. (unsafe to extract)",
                     "SHA256SUMS: missing from the archive"}));

  std::string good = (tmp_ / "good.tar.gz").string();
  write_archive(run_.string(), good);
  auto members = read_members(good);
  const std::string p = "20261130T100000Z-node01/";
  std::vector<Raw> raw = {{"/etc/cbx", "x", AE_IFREG, ""},
                          {p + "../../etc/x", "x", AE_IFREG, ""},
                          {p + "link", "", AE_IFLNK, "/etc/shadow"},
                          {p + "hard", "", 0, p + "run.json"},
                          {p + "tty", "", AE_IFCHR, ""},
                          {p + "fio/", "", AE_IFDIR, ""}};
  for (const auto& m : members) raw.push_back({m.name, m.data, AE_IFREG, ""});
  std::string bad = (tmp_ / "bad.tar.gz").string();
  write_raw(bad, raw);
  VerifyResult v = verify_archive(bad);
  EXPECT_EQ(v.problems,
            (Strings{"/etc/cbx: absolute member path (unsafe to extract)",
                     p + "../../etc/x: member path climbs out with .. (unsafe to extract)",
                     p + "link: symbolic link to /etc/shadow, not a regular file",
                     p + "hard: hard link to " + p + "run.json, not a regular file",
                     p + "tty: character device, not a regular file"}));
  EXPECT_EQ(v.files_checked, 4);

  // Issue 46: a directory member named as a verified file ("<run>/records.jsonl/"), which replaces
  // the file on extraction, is a problem; an ordinary directory member (fio/ above) is not.
  raw = {};
  for (const auto& m : members) raw.push_back({m.name, m.data, AE_IFREG, ""});
  raw.push_back({p + "records.jsonl/", "", AE_IFDIR, ""});
  write_raw(bad, raw);
  EXPECT_EQ(verify_archive(bad).problems,
            (Strings{"records.jsonl/: a directory member with the name of a file, which it would "
                     "replace on extraction"}));
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
  VerifyResult v;
  try {
    v = verify_archive(bad);
  } catch (const InputError& e) {  // not even the first member header decompressed
    EXPECT_EQ(std::string(e.what()).rfind(bad + ": cannot be opened as a clusterbench archive", 0),
              0u);
    return;
  }
  // Reading stops at the damage, or the damaged bytes decompress into other content. Either way
  // every finding names a file: a member (read when the damage was found, or whose hash no
  // longer matches) or the archive itself when not even the first member decompresses.
  ASSERT_FALSE(v.ok());
  for (const std::string& p : v.problems) {
    bool named = false;
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
  // Not a tar (text that libarchive's mtree reader would take, an empty file, a directory, a gzip
  // cut inside its first member header): exit 2, naming the file.
  std::ofstream(tmp_ / "plain.txt") << "not an archive\n";
  std::ofstream(tmp_ / "passwd") << "root:x:0:0:root:/root:/bin/bash\n";
  std::ofstream(tmp_ / "empty.tar.gz");
  std::string good = (tmp_ / "good.tar.gz").string();
  std::ofstream(run_ / "run.json") << "{}\n";
  write_archive(run_.string(), good);
  fs::copy_file(good, tmp_ / "cut.tar.gz");
  fs::resize_file(tmp_ / "cut.tar.gz", 30);
  for (const fs::path& f :
       {tmp_ / "plain.txt", tmp_ / "passwd", tmp_ / "empty.tar.gz", tmp_ / "cut.tar.gz", tmp_}) {
    try {
      verify_archive(f.string());
      ADD_FAILURE() << f << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(f.string() + ": "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cannot be opened as a clusterbench archive"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace clusterbench::report
