// Archive digests and GnuPG signatures (signature.hpp). gpg runs through bench/process with a
// timeout: an agent that waits for a passphrase must not hang `archive` or `verify`.
#include "reports/signature.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "process/process.hpp"
#include "records/records.hpp"

namespace clusterbench::report {

namespace {

constexpr double kGpgTimeoutS = 120;

/// A scratch directory for gpg's captured output, removed with it.
struct Scratch {
  std::string path;
  Scratch() {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string t = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/clusterbench-gpg.XXXXXX";
    if (!::mkdtemp(t.data())) throw std::runtime_error(t + ": mkdtemp: " + std::strerror(errno));
    path = t;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string gpg_path() {
  std::string gpg = find_on_path("gpg");
  if (gpg.empty())
    throw InputError(
        "gpg not found on PATH: signing and checking signatures need GnuPG (Debian: "
        "apt-get install gnupg)");
  return gpg;
}

ProcessResult run_gpg(std::vector<std::string> args) {
  Scratch scratch;
  args.insert(args.begin(), gpg_path());
  return run_process(args, {}, "", scratch.path, kGpgTimeoutS);
}

/// gpg's stderr on one line, for a message.
std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ';';
  return s.empty() ? "no message" : s;
}

/// The words after "[GNUPG:] KEYWORD " on the line, split at spaces.
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

/// The rest of the line after its first n words (a user id holds spaces).
std::string rest_after(const std::string& line, int n) {
  size_t at = 0;
  for (int i = 0; i < n && at != std::string::npos; ++i) {
    at = line.find_first_not_of(' ', at);
    at = at == std::string::npos ? at : line.find(' ', at);
  }
  return at == std::string::npos ? "" : line.substr(line.find_first_not_of(' ', at));
}

}  // namespace

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  Sha256Stream sha;
  std::vector<char> buf(size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) sha.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return sha.hex();
}

SignatureCheck parse_gpg_status(const std::string& status, int exit_code, const std::string& err) {
  SignatureCheck c;
  bool goodsig = false, validsig = false;
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("[GNUPG:] ", 0) != 0) continue;
    std::vector<std::string> f = fields(line);
    if (f.size() < 2) continue;
    const std::string& kw = f[1];
    if (kw == "GOODSIG") {
      goodsig = true;
      c.signer = rest_after(line, 3);
    } else if (kw == "VALIDSIG") {
      validsig = true;
      c.fingerprint = f.size() > 11 ? f[11] : (f.size() > 2 ? f[2] : "");
    } else if (kw == "BADSIG") {
      c.signer = rest_after(line, 3);
      c.problem = "BAD signature by " + (c.signer.empty() ? f.back() : c.signer) +
                  ": the file is not what that key signed";
    } else if ((kw == "EXPKEYSIG" || kw == "REVKEYSIG") && c.problem.empty()) {
      c.signer = rest_after(line, 3);
      c.problem = std::string("signed by ") + (kw == "EXPKEYSIG" ? "an expired" : "a revoked") +
                  " key: " + c.signer;
    } else if (kw == "NO_PUBKEY" && f.size() > 2) {
      c.problem = "no public key " + f[2] + " to check it with (gpg --import the signer's key)";
    } else if (kw == "ERRSIG" && c.problem.empty()) {
      c.problem = "the signature cannot be checked (gpg ERRSIG)";
    } else if (kw == "NODATA" && c.problem.empty()) {
      c.problem = "not an OpenPGP signature";
    }
  }
  c.good = goodsig && validsig && c.problem.empty() && exit_code == 0;
  if (!c.good && c.problem.empty())
    c.problem = "gpg --verify failed (exit " + std::to_string(exit_code) + "): " + one_line(err);
  return c;
}

void sign_file(const std::string& file, const std::string& key_id, const std::string& sig) {
  ProcessResult r = run_gpg({"--batch", "--yes", "--pinentry-mode", "error", "--local-user", key_id,
                             "--armor", "--detach-sign", "--output", sig, "--", file});
  if (r.exit_code != 0)
    throw InputError("gpg could not sign " + file + " with key " + key_id + " (exit " +
                     std::to_string(r.exit_code) + (r.timed_out ? ", timed out" : "") +
                     "): " + one_line(r.err));
}

SignatureCheck verify_signature(const std::string& file, const std::string& sig) {
  if (::access(sig.c_str(), R_OK) != 0)
    throw InputError(sig + ": cannot read the signature (" + std::strerror(errno) + ")");
  ProcessResult r = run_gpg({"--batch", "--status-fd", "1", "--verify", "--", sig, file});
  return parse_gpg_status(r.out, r.timed_out ? 124 : r.exit_code, r.err);
}

}  // namespace clusterbench::report
