// Run archives (archive.hpp): libarchive writes and reads; records' sha256_hex hashes.
#include "reports/archive.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "records/records.hpp"
#include "reports/render.hpp"
#include "reports/signature.hpp"

namespace clusterbench::report {

namespace {

namespace fs = std::filesystem;

constexpr const char* kManifest = "SHA256SUMS";

using WriteHandle = std::unique_ptr<struct archive, decltype(&archive_write_free)>;
using ReadHandle = std::unique_ptr<struct archive, decltype(&archive_read_free)>;
using EntryHandle = std::unique_ptr<struct archive_entry, decltype(&archive_entry_free)>;

std::string resolved(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::canonical(dir, ec);
  if (ec) throw InputError(dir + ": " + ec.message());
  return p.string();
}

class Writer {
 public:
  explicit Writer(const std::string& path) : a_(archive_write_new(), archive_write_free) {
    if (archive_write_set_format_pax_restricted(a_.get()) != ARCHIVE_OK ||
        archive_write_add_filter_gzip(a_.get()) != ARCHIVE_OK ||
        archive_write_open_filename(a_.get(), path.c_str()) != ARCHIVE_OK)
      fail(path);
    path_ = path;
  }
  void add(const std::string& name, const std::string& data, mode_t perm, time_t mtime) {
    EntryHandle e(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), perm & 07777);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(data.size()));
    archive_entry_set_mtime(e.get(), mtime, 0);
    if (archive_write_header(a_.get(), e.get()) != ARCHIVE_OK) fail(name);
    if (!data.empty() && archive_write_data(a_.get(), data.data(), data.size()) !=
                             static_cast<la_ssize_t>(data.size()))
      fail(name);
  }
  /// Adds the regular file `p` (`st`: its stat) as `name`, streamed in 1 MiB pieces, and returns
  /// its SHA-256: a file larger than memory is archived without holding it. A file that changes
  /// size while it is read is an error naming it.
  std::string add_file(const std::string& name, const fs::path& p, const struct stat& st) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw InputError(p.string() + ": cannot open (" + std::strerror(errno) + ")");
    EntryHandle e(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), st.st_mode & 07777);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(st.st_size));
    archive_entry_set_mtime(e.get(), st.st_mtime, 0);
    if (archive_write_header(a_.get(), e.get()) != ARCHIVE_OK) fail(name);
    Sha256Stream hash;
    std::vector<char> buf(1 << 20);
    long long total = 0;
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
      const auto n = static_cast<size_t>(in.gcount());
      total += static_cast<long long>(n);
      if (total > st.st_size) break;
      hash.update(buf.data(), n);
      if (archive_write_data(a_.get(), buf.data(), n) != static_cast<la_ssize_t>(n)) fail(name);
    }
    if (in.bad()) throw InputError(p.string() + ": read error");
    if (total != st.st_size)
      throw InputError(p.string() + ": changed size while it was archived (" +
                       std::to_string(st.st_size) + " bytes, then " + std::to_string(total) +
                       "); archive a finished run");
    return hash.hex();
  }
  void close() {
    if (archive_write_close(a_.get()) != ARCHIVE_OK) fail(path_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    const char* err = archive_error_string(a_.get());
    throw std::runtime_error(what + ": libarchive: " + (err ? err : "unknown error"));
  }
  WriteHandle a_;
  std::string path_;
};

/// Why a member name is unsafe to extract (absolute, or a ".." component), or "" when it is not.
std::string unsafe_name(const std::string& name) {
  if (name.empty()) return "empty member name";
  if (name[0] == '/') return "absolute member path";
  for (const auto& part : fs::path(name))
    if (part == "..") return "member path climbs out with ..";
  return "";
}

/// What a non-regular member is, for the problem line.
std::string member_kind(struct archive_entry* e) {
  if (archive_entry_hardlink(e)) return std::string("hard link to ") + archive_entry_hardlink(e);
  switch (archive_entry_filetype(e)) {
    case AE_IFLNK:
      return std::string("symbolic link to ") +
             (archive_entry_symlink(e) ? archive_entry_symlink(e) : "?");
    case AE_IFCHR:
      return "character device";
    case AE_IFBLK:
      return "block device";
    case AE_IFIFO:
      return "FIFO";
    case AE_IFSOCK:
      return "socket";
    default:
      return "not a regular file";
  }
}

/// "prefix/rel" -> {"prefix", "rel"}; a name without a slash has an empty rel.
std::pair<std::string, std::string> split_prefix(std::string name) {
  while (name.rfind("./", 0) == 0) name = name.substr(2);
  auto slash = name.find('/');
  if (slash == std::string::npos) return {name, ""};
  return {name.substr(0, slash), name.substr(slash + 1)};
}

/// A file name SHA256SUMS can hold, one per line, and a reader can show: UTF-8 without control
/// characters (a newline would end the line early, and could forge one). Throws InputError.
void check_member_name(const std::string& root, const std::string& rel) {
  const bool control = std::any_of(rel.begin(), rel.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (is_valid_utf8(rel) && !control) return;
  throw InputError(
      root + "/" + valid_utf8(rel) + ": " +
      (control ? "a control character (newline, tab, ...)" : "bytes that are not UTF-8") +
      " in a file name of the run: SHA256SUMS cannot list it; rename or remove the "
      "file, then archive the run");
}

}  // namespace

std::string default_archive_path(const std::string& dir) { return resolved(dir) + ".tar.gz"; }

ArchiveSummary write_archive(const std::string& dir, const std::string& out) {
  std::string root = resolved(dir);
  if (!fs::is_regular_file(fs::path(root) / "run.json"))
    throw InputError(dir + ": no run.json here; is this a clusterbench results directory?");
  // Before reading anything: never inside the run (it would replace a run file), parent writable.
  check_output_file(out, "-o", root);
  ArchiveSummary sum;
  sum.path = out;
  sum.prefix = fs::path(root).filename().string();

  // check_output_file keeps `out` out of the run directory; these checks stay as a second guard.
  std::error_code ec;
  fs::path out_abs = fs::absolute(out, ec);
  std::string tmp = out + ".tmp." + std::to_string(getpid());
  fs::path tmp_abs = fs::absolute(tmp, ec);

  std::vector<fs::path> files;
  std::string failed_at;  // the folder a listing error is in
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const fs::path& p = it->path();
    failed_at = p.string();
    std::string rel = fs::relative(p, root).generic_string();
    auto st = it->symlink_status(ec);
    if (fs::is_directory(st)) continue;
    if (!fs::is_regular_file(st)) {
      sum.skipped.push_back(rel + ": not a regular file");
      continue;
    }
    std::error_code same_ec;  // `out` may not exist yet: not the same file then
    if (rel == kManifest || p == tmp_abs || fs::equivalent(p, out_abs, same_ec)) continue;
    check_member_name(root, rel);
    files.push_back(p);
  }
  if (ec)
    throw InputError((failed_at.empty() ? root : failed_at) + ": cannot list (" + ec.message() +
                     ")");
  std::sort(files.begin(), files.end());

  std::string manifest;
  try {
    Writer w(tmp);
    for (const auto& p : files) {
      std::string rel = fs::relative(p, root).generic_string();
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0)
        throw std::runtime_error(p.string() + ": stat: " + std::strerror(errno));
      manifest += w.add_file(sum.prefix + "/" + rel, p, st) + "  " + rel + "\n";
      ++sum.files;
      sum.bytes += static_cast<unsigned long long>(st.st_size);
    }
    w.add(sum.prefix + "/" + kManifest, manifest, 0644, std::time(nullptr));
    w.close();
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  if (::rename(tmp.c_str(), out.c_str()) != 0) {
    int err = errno;
    fs::remove(tmp, ec);
    throw std::runtime_error(out + ": rename: " + std::strerror(err));
  }
  return sum;
}

namespace {

/// Opens what `clusterbench archive` writes (tar, gzip or uncompressed): libarchive's other
/// readers accept nearly any text (/etc/passwd reads as an mtree). Throws InputError.
ReadHandle open_archive(const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0)
    throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::error_code dir_ec;
  if (fs::is_directory(path, dir_ec))
    throw InputError(path + ": is a directory; it cannot be opened as a clusterbench archive");
  ReadHandle a(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_none(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    const char* err = archive_error_string(a.get());
    throw InputError(path + ": cannot be opened as a clusterbench archive (" +
                     (err ? err : "unknown error") + ")");
  }
  return a;
}

/// The largest SHA256SUMS read (the only member held in memory; others are hashed in chunks).
constexpr size_t kMaxManifestBytes = size_t{64} << 20;

/// What the members of an archive hold.
struct Members {
  std::map<std::string, std::string> hashes;  ///< relative path -> sha256 of the member
  std::set<std::string> dirs;  ///< directory members' relative paths, without the trailing '/'
  std::string manifest;
  bool have_manifest = false, damaged = false;
};

/// Reads the current member in chunks: the manifest's bytes into `manifest` (when not null, up
/// to kMaxManifestBytes), every other member only into its hash `sha`. False (and a problem)
/// when the archive is damaged there or the manifest is too large.
bool read_member(ReadHandle& a, const std::string& name, Sha256Stream& sha, std::string* manifest,
                 VerifyResult& res) {
  std::vector<char> buf(64 * 1024);
  la_ssize_t n = 0;
  while ((n = archive_read_data(a.get(), buf.data(), buf.size())) > 0) {
    if (!manifest) {
      sha.update(buf.data(), static_cast<size_t>(n));
    } else if (manifest->size() + static_cast<size_t>(n) > kMaxManifestBytes) {
      res.problems.push_back(name + ": larger than " + std::to_string(kMaxManifestBytes) +
                             " bytes, not a clusterbench manifest");
      return false;
    } else {
      manifest->append(buf.data(), static_cast<size_t>(n));
    }
  }
  if (n >= 0) return true;
  const char* err = archive_error_string(a.get());
  res.problems.push_back(name +
                         ": archive damaged while reading it: " + (err ? err : "unknown error"));
  return false;
}

Members read_members(ReadHandle& a, const std::string& path, VerifyResult& res) {
  Members m;
  int members = 0;
  std::string prefix, last = "(start of archive)";
  for (;;) {
    struct archive_entry* e = nullptr;
    int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {  // RETRY ("Damaged tar archive") or FATAL
      m.damaged = true;
      const char* err = archive_error_string(a.get());
      if (members == 0)  // empty, truncated in the first header, or not a tar at all
        throw InputError(path + ": cannot be opened as a clusterbench archive (" +
                         (err ? err : "no tar member") + ")");
      res.problems.push_back(
          "after " + last +
          ": archive damaged, the next member cannot be read: " + (err ? err : "unknown error"));
      break;
    }
    ++members;
    std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    last = name;
    if (std::string why = unsafe_name(name); !why.empty()) {
      res.problems.push_back(name + ": " + why + " (unsafe to extract)");
      continue;
    }
    if (archive_entry_hardlink(e) || archive_entry_filetype(e) != AE_IFREG) {
      if (archive_entry_filetype(e) == AE_IFDIR && !archive_entry_hardlink(e)) {
        std::string rel = split_prefix(name).second;
        while (!rel.empty() && rel.back() == '/') rel.pop_back();
        if (!rel.empty()) m.dirs.insert(rel);
        continue;
      }
      res.problems.push_back(name + ": " + member_kind(e) + ", not a regular file");
      continue;
    }
    auto [top, rel] = split_prefix(name);
    if (prefix.empty()) prefix = top;
    const bool inside = top == prefix && !rel.empty();
    const bool is_manifest = inside && rel == kManifest;
    std::string data;
    Sha256Stream sha;
    if (!read_member(a, name, sha, is_manifest ? &data : nullptr, res)) {
      m.damaged = true;
      break;
    }
    if (!inside) {
      res.problems.push_back(name + ": outside the run directory " + prefix + "/");
    } else if (is_manifest) {
      m.manifest = std::move(data);
      m.have_manifest = true;
    } else if (!m.hashes.emplace(rel, sha.hex()).second) {
      res.problems.push_back(rel + ": appears twice");
    }
  }
  return m;
}

/// The members against SHA256SUMS (sha256sum's format: 64 hex digits, a space, then ' ' (text)
/// or '*' (binary), then the path).
void check_manifest(const Members& m, VerifyResult& res) {
  std::map<std::string, std::string> listed;
  std::istringstream in(m.manifest);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty()) continue;
    if (line.size() < 67 || line[64] != ' ' || (line[65] != ' ' && line[65] != '*') ||
        line.find_first_not_of("0123456789abcdef") < 64) {
      res.problems.push_back(std::string(kManifest) + " line " + std::to_string(no) +
                             ": malformed");
      continue;
    }
    listed[line.substr(66)] = line.substr(0, 64);
  }
  for (const auto& [rel, want] : listed) {
    auto it = m.hashes.find(rel);
    if (it == m.hashes.end())
      res.problems.push_back(rel + ": listed in SHA256SUMS but missing from the archive");
    else if (it->second != want)
      res.problems.push_back(rel + ": sha256 mismatch (manifest " + want + ", archive " +
                             it->second + ")");
    else
      ++res.files_checked;
  }
  for (const auto& [rel, got] : m.hashes)
    if (!listed.count(rel)) res.problems.push_back(rel + ": not listed in SHA256SUMS");
  // A directory member with a file's name ("run/records.jsonl/") replaces the file when the
  // archive is extracted: the verified bytes would not be what the reader gets.
  for (const auto& d : m.dirs)
    if (listed.count(d) || m.hashes.count(d))
      res.problems.push_back(d +
                             "/: a directory member with the name of a file, which it would "
                             "replace on extraction");
}

}  // namespace

VerifyResult verify_archive(const std::string& path) {
  VerifyResult res;
  ReadHandle a = open_archive(path);
  Members m = read_members(a, path, res);
  if (!m.have_manifest) {
    // The manifest is the last member: after damage, the damage is the finding.
    if (!m.damaged) res.problems.push_back(std::string(kManifest) + ": missing from the archive");
    return res;
  }
  check_manifest(m, res);
  return res;
}

int archive_command(const std::string& dir, const std::string& out, const std::string& sign_key) {
  std::string target = out.empty() ? default_archive_path(dir) : out;
  ArchiveSummary s = write_archive(dir, target);
  for (const auto& k : s.skipped) std::cerr << "archive: skipped " << k << "\n";
  std::cout << "archive: " << s.path << " (" << s.files << " files, " << s.bytes << " B, manifest "
            << s.prefix << "/" << kManifest << ")\n";
  std::cout << "archive: sha256 " << file_sha256(s.path)
            << " (record it apart from the archive: `verify --sha256` checks it)\n";
  if (sign_key.empty()) return 0;
  const std::string sig = s.path + ".asc";
  sign_file(s.path, sign_key, sig);
  SignatureCheck c = verify_signature(s.path, sig);
  std::cout << "archive: signed " << sig << " (key " << sign_key;
  if (!c.fingerprint.empty()) std::cout << ", fingerprint " << c.fingerprint;
  if (!c.signer.empty()) std::cout << ", " << c.signer;
  std::cout << ")\n";
  return 0;
}

namespace {

/// The archive's digest and signature checks: problems go to `res`, one line per finding to
/// `said` (whole lines: "verified: sha256 ...", "verified: signature ... good", "verify:
/// unsigned").
void check_evidence(const std::string& path, const std::string& signature,
                    const std::string& expect_sha256, VerifyResult& res,
                    std::vector<std::string>& said) {
  const std::string digest = file_sha256(path);
  if (expect_sha256.empty())
    said.push_back("verify: archive sha256 " + digest +
                   " (not compared: give the one recorded with --sha256)");
  else if (expect_sha256 == digest)
    said.push_back("verified: sha256 " + digest + ", the one recorded (--sha256)");
  else
    res.problems.push_back(path + ": sha256 " + digest + ", not the " + expect_sha256 +
                           " recorded (--sha256): this is not the archive that was recorded");
  std::error_code ec;
  std::string sig = signature;
  if (sig.empty() && fs::exists(path + ".asc", ec)) sig = path + ".asc";
  if (sig.empty()) {
    said.push_back("verify: unsigned: no " + path +
                   ".asc beside it (archive --sign KEYID makes one)");
    return;
  }
  SignatureCheck c = verify_signature(path, sig);
  if (!c.good)
    res.problems.push_back(sig + ": " + c.problem);
  else
    said.push_back("verified: signature " + sig + " good, key " + c.fingerprint + " (" + c.signer +
                   ")");
}

}  // namespace

int verify_command(const std::string& path, const std::string& signature,
                   const std::string& expect_sha256) {
  std::string want = expect_sha256;
  std::transform(want.begin(), want.end(), want.begin(), ::tolower);
  if (!want.empty() &&
      (want.size() != 64 || want.find_first_not_of("0123456789abcdef") != std::string::npos))
    throw InputError("--sha256 " + expect_sha256 + ": not 64 hex digits");
  VerifyResult r = verify_archive(path);
  std::vector<std::string> said;
  check_evidence(path, signature, want, r, said);
  if (r.ok()) {
    std::cout << "verified: " << path << ": " << r.files_checked << " files match SHA256SUMS\n";
    for (const auto& line : said) std::cout << line << "\n";
    return 0;
  }
  for (const auto& p : r.problems) std::cerr << "verify: " << p << "\n";
  std::cerr << "verify: " << path << ": FAILED (" << r.problems.size() << " problem"
            << (r.problems.size() == 1 ? "" : "s") << ", " << r.files_checked << " files match)\n";
  return 1;
}

}  // namespace clusterbench::report
