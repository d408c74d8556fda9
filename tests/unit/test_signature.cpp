// The archive's own evidence (reports/signature.cpp): the SHA-256 of a file as sha256sum gives
// it, and gpg's status lines read into a verdict: a good signature names its key and signer; a
// BAD one, a missing public key, an expired key and a failing gpg are not good and say why.
// Budget: < 1 s.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "reports/signature.hpp"

namespace clusterbench::report {
namespace {

TEST(FileSha256, MatchesSha256sum) {
  std::string path =
      std::filesystem::temp_directory_path() / ("cb-sha-" + std::to_string(getpid()) + ".txt");
  std::ofstream(path) << "abc";
  // sha256sum of "abc" (FIPS 180-2's example).
  EXPECT_EQ(file_sha256(path), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::filesystem::remove(path);
  EXPECT_THROW(file_sha256(path), std::runtime_error);
}

const char* const kGood =
    "[GNUPG:] NEWSIG\n"
    "[GNUPG:] KEY_CONSIDERED F11901EA4E4F43AA85547C0570E716ACC5FBD163 0\n"
    "[GNUPG:] SIG_ID abc 2026-12-04 1733300000\n"
    "[GNUPG:] GOODSIG 70E716ACC5FBD163 demo signer <d@example.invalid>\n"
    "[GNUPG:] VALIDSIG F11901EA4E4F43AA85547C0570E716ACC5FBD163 2026-12-04 1733300000 0 4 0 22 10 "
    "00 F11901EA4E4F43AA85547C0570E716ACC5FBD163\n"
    "[GNUPG:] TRUST_ULTIMATE 0 pgp\n";

TEST(ParseGpgStatus, GoodSignatureNamesKeyAndSigner) {
  SignatureCheck c = parse_gpg_status(kGood, 0, "");
  EXPECT_TRUE(c.good) << c.problem;
  EXPECT_EQ(c.fingerprint, "F11901EA4E4F43AA85547C0570E716ACC5FBD163");
  EXPECT_EQ(c.signer, "demo signer <d@example.invalid>");
  EXPECT_EQ(c.problem, "");
  // The same lines with gpg failing are not good.
  EXPECT_FALSE(parse_gpg_status(kGood, 2, "boom").good);
}

TEST(ParseGpgStatus, BadMissingKeyExpiredAndSilent) {
  SignatureCheck bad = parse_gpg_status(
      "[GNUPG:] NEWSIG\n[GNUPG:] BADSIG 70E716ACC5FBD163 demo signer <d@example.invalid>\n", 1, "");
  EXPECT_FALSE(bad.good);
  EXPECT_EQ(bad.problem,
            "BAD signature by demo signer <d@example.invalid>: the file is not what that key "
            "signed");
  SignatureCheck nokey = parse_gpg_status(
      "[GNUPG:] ERRSIG 70E716ACC5FBD163 22 10 00 1733300000 9 F119\n"
      "[GNUPG:] NO_PUBKEY 70E716ACC5FBD163\n",
      2, "");
  EXPECT_FALSE(nokey.good);
  EXPECT_EQ(nokey.problem,
            "no public key 70E716ACC5FBD163 to check it with (gpg --import the signer's key)");
  SignatureCheck expired = parse_gpg_status(
      "[GNUPG:] EXPKEYSIG 70E716ACC5FBD163 old <o@example.invalid>\n"
      "[GNUPG:] VALIDSIG F119 2026-12-04 1 0 4 0 22 10 00 F119\n",
      0, "");
  EXPECT_FALSE(expired.good);
  EXPECT_EQ(expired.problem, "signed by an expired key: old <o@example.invalid>");
  SignatureCheck silent = parse_gpg_status("", 2, "gpg: no valid OpenPGP data found.\n");
  EXPECT_FALSE(silent.good);
  EXPECT_EQ(silent.problem, "gpg --verify failed (exit 2): gpg: no valid OpenPGP data found.");
}

}  // namespace
}  // namespace clusterbench::report
