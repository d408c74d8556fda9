// The archive's own evidence (docs/report.md "Archive and verify"): its SHA-256, which a third
// party records apart from it, and a detached GnuPG signature made with the signer's key, which
// changes to the archive (an edited report.md with a regenerated SHA256SUMS) cannot survive.
// GnuPG runs as an external program (`gpg`, Debian's gnupg), as gnuplot and Chromium do.
#pragma once

#include <string>

namespace clusterbench::report {

/// SHA-256 of the file's bytes, 64 lowercase hex digits, read in 1 MiB chunks. Throws
/// std::runtime_error naming the file when it cannot be read.
std::string file_sha256(const std::string& path);

/// What GnuPG said about a detached signature.
struct SignatureCheck {
  bool good = false;        ///< gpg reported GOODSIG and VALIDSIG: the file is what the key signed
  std::string fingerprint;  ///< the signing key's primary fingerprint (VALIDSIG), when known
  std::string signer;       ///< the user id GOODSIG (or BADSIG) names
  std::string problem;      ///< why not good: "BAD signature by ...", "no public key ...", ...
};

/// Reads gpg's machine-readable status lines ("[GNUPG:] GOODSIG ...", `gpg --status-fd`, as in
/// GnuPG's doc/DETAILS) and its exit code; `err` (its stderr) goes into the problem when no
/// status line explains it.
SignatureCheck parse_gpg_status(const std::string& status, int exit_code, const std::string& err);

/// Writes `sig`: an ASCII-armoured detached signature of `file` by the secret key `key_id`
/// (gpg --batch --local-user KEY_ID --armor --detach-sign), with the signer's GnuPG home
/// ($GNUPGHOME, else ~/.gnupg). Throws InputError when gpg is not installed, or fails (no such
/// secret key, a passphrase that batch mode cannot ask for), with gpg's own words.
void sign_file(const std::string& file, const std::string& key_id, const std::string& sig);

/// Checks the detached signature `sig` of `file` against the public keys of the GnuPG home.
/// Throws InputError when gpg is not installed or `sig` cannot be read.
SignatureCheck verify_signature(const std::string& file, const std::string& sig);

}  // namespace clusterbench::report
