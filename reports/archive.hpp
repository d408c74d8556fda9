// Run archives as procurement evidence (docs/report.md "Archive and verify"): `clusterbench
// archive DIR` packs a run directory into one gzip-compressed tar with a SHA256SUMS manifest
// inside, and `clusterbench verify ARCHIVE` checks every member against it. libarchive reads and
// writes the tar; SHA-256 is the records library's (OpenSSL).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clusterbench::report {

/// What write_archive() packed.
struct ArchiveSummary {
  std::string path;                  ///< the archive written
  std::string prefix;                ///< top directory of every member: the run directory's name
  int files = 0;                     ///< regular files packed, SHA256SUMS not counted
  std::uint64_t bytes = 0;           ///< their total size, B
  std::vector<std::string> skipped;  ///< "path: why" for symlinks, sockets and the like
};

/// `<dir>.tar.gz` beside the run directory (its resolved path, trailing slashes dropped).
std::string default_archive_path(const std::string& dir);

/// Writes `out` (a temporary file, then rename): a pax tar, gzip-compressed, holding every regular
/// file below `dir` as `<prefix>/<relative path>` in path order, then `<prefix>/SHA256SUMS` with
/// one line per file, `<sha256 hex>  <relative path>` (sha256sum's format, so `sha256sum -c
/// SHA256SUMS` works in the extracted directory). prefix = the last component of `dir`'s resolved
/// path. A SHA256SUMS already at the top of `dir` is left out. Each file is read once into
/// memory: what is hashed is what is packed, even while records.jsonl grows.
/// Throws InputError, before reading anything, when `dir` is not a run directory (no run.json)
/// or `out` fails check_output_file() (inside `dir`, a directory, parent missing or not
/// writable), and std::runtime_error naming the path on an I/O or libarchive error.
ArchiveSummary write_archive(const std::string& dir, const std::string& out);

/// What verify_archive() found.
struct VerifyResult {
  int files_checked = 0;              ///< members whose hash matched the manifest
  std::vector<std::string> problems;  ///< one line each, naming the file; empty = verified
  bool ok() const { return problems.empty(); }
};

/// Reads the whole archive (tar formats only, gzip-compressed or not) and compares every member
/// with `<prefix>/SHA256SUMS`. Problems, each naming its file: "<member>: absolute member path
/// (unsafe to extract)", "<member>: member path climbs out with .. (unsafe to extract)",
/// "<member>: symbolic link to X, not a regular file" (hard links, devices, FIFOs, sockets
/// likewise; directory members are ignored), "<path>: sha256 mismatch
/// (manifest X, archive Y)", "<path>: listed in SHA256SUMS but missing from the archive",
/// "<path>: not listed in SHA256SUMS", "<path>: appears twice", "<path>: archive damaged while
/// reading it: <libarchive's text>", "after <member>: archive damaged, the next member cannot be
/// read: ...", "SHA256SUMS: missing from the archive" (only when nothing was damaged),
/// "SHA256SUMS line N: malformed".
/// Throws InputError when the file cannot be opened, is a directory, or is not a tar (gzip or
/// plain) whose first member header can be read: "<path>: cannot be opened as a clusterbench
/// archive (...)" — empty files, text files, and files truncated before the first member.
VerifyResult verify_archive(const std::string& path);

/// `clusterbench archive DIR [-o FILE] [--sign KEYID]`: prints the archive's path, files and
/// bytes, then its SHA-256 (signature.hpp file_sha256); with a `sign_key`, writes FILE.asc, a
/// detached GnuPG signature by that key, and prints the key's fingerprint. Returns 0; throws
/// InputError (exit 2) when signing fails, the archive itself then being written.
int archive_command(const std::string& dir, const std::string& out, const std::string& sign_key);

/// `clusterbench verify ARCHIVE [--signature FILE] [--sha256 HEX]`: the members against
/// SHA256SUMS (verify_archive), the archive's SHA-256 against `expect_sha256` when given, and
/// the detached signature `signature` (default ARCHIVE.asc where it exists; none is not a
/// problem but is said). Prints "verified: ..." with the digest and the signer and returns 0, or
/// prints each problem to stderr and returns 1 (a BAD signature, a digest that differs, a
/// signature by a key without its public key here). Throws InputError (exit 2) when a named
/// signature file cannot be read, gpg is missing, or `expect_sha256` is not 64 hex digits.
int verify_command(const std::string& path, const std::string& signature,
                   const std::string& expect_sha256);

}  // namespace clusterbench::report
