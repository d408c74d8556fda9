#!/usr/bin/env bash
# The archive's own evidence (docs/report.md "Archive and verify"): `archive` prints the archive's
# SHA-256 and, with --sign KEYID, writes ARCHIVE.asc, a detached GnuPG signature; `verify` checks
# the signature (ARCHIVE.asc, or --signature FILE) and a recorded digest (--sha256).
#  - The case of the issue: report.md edited to say PASS, SHA256SUMS regenerated, the archive
#    repacked under its name. The manifest matches (as before), but the signature is BAD and the
#    digest is not the one recorded: exit 1, naming them.
#  - No public key for the signer: exit 1, saying so; an unreadable --signature, a malformed
#    --sha256, an unknown signing key: exit 2.
# A throwaway GnuPG home (ed25519 key, no passphrase) in the test's temp dir; its agent is
# stopped at the end. Budget: < 15 s.
source "$(dirname "$0")/lib.sh"
command -v gpg >/dev/null || fail "no gpg (gnupg: scripts/setup.sh --test)"
export GNUPGHOME=$TMP/gnupg
mkdir -m 700 "$GNUPGHOME"
trap 'GNUPGHOME=$TMP/gnupg gpgconf --kill gpg-agent 2>/dev/null; rm -rf "$TMP"' EXIT
gpg --batch --passphrase '' --quick-generate-key 'clusterbench test <evidence@example.invalid>' \
  ed25519 sign never >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "gpg key generation"; }
FPR=$(gpg --batch --with-colons --list-secret-keys | awk -F: '/^fpr:/ {print $10; exit}')
[ ${#FPR} = 40 ] || fail "no fingerprint: $FPR"

run=$TMP/20261130T100000Z-node01
mkdir -p "$run"
for f in run.json records.jsonl spec.json; do cp "$CB_FIXTURES/results/uniformity-5/$f" "$run/"; done
echo "# report: FAIL" >"$run/report.md"

expect_rc 0 "$CB_BIN" archive "$run" --sign evidence@example.invalid
expect_out "^archive: $run\\.tar\\.gz \\(4 files, "
digest=$(sha256sum "$run.tar.gz" | cut -c1-64)
expect_out "^archive: sha256 $digest \\(record it apart"
expect_out "^archive: signed $run\\.tar\\.gz\\.asc \\(key evidence@example.invalid, fingerprint $FPR, clusterbench test <evidence@example.invalid>\\)$"
grep -q "BEGIN PGP SIGNATURE" "$run.tar.gz.asc" || fail "no armoured signature in $run.tar.gz.asc"
gpg --batch --verify "$run.tar.gz.asc" "$run.tar.gz" 2>/dev/null || fail "gpg itself rejects the signature"
ok "archive --sign: sha256 printed (= sha256sum's), $run.tar.gz.asc made by the key, gpg --verify agrees"

expect_rc 0 "$CB_BIN" verify "$run.tar.gz" --sha256 "$digest"
expect_out "^verified: .*: 4 files match SHA256SUMS$"
expect_out "^verified: sha256 $digest, the one recorded \\(--sha256\\)$"
expect_out "^verified: signature $run\\.tar\\.gz\\.asc good, key $FPR \\(clusterbench test <evidence@example.invalid>\\)$"
cp "$run.tar.gz.asc" "$TMP/elsewhere.asc"
mv "$run.tar.gz.asc" "$TMP/moved.asc"
expect_rc 0 "$CB_BIN" verify "$run.tar.gz"
expect_out "^verify: unsigned: no $run\\.tar\\.gz\\.asc beside it"
expect_out "^verify: archive sha256 $digest \\(not compared"
expect_rc 0 "$CB_BIN" verify "$run.tar.gz" --signature "$TMP/elsewhere.asc"
expect_out "^verified: signature $TMP/elsewhere\\.asc good"
mv "$TMP/moved.asc" "$run.tar.gz.asc"
ok "verify: manifest, recorded digest and signature (beside it, or --signature); an unsigned archive is said, not failed"

# The tampered archive: report.md says PASS, SHA256SUMS regenerated, repacked under its name.
mkdir "$TMP/x" && tar -xzf "$run.tar.gz" -C "$TMP/x" || fail "tar -x"
(cd "$TMP/x/20261130T100000Z-node01" && echo "# report: PASS" >report.md &&
  grep -v ' report.md$' SHA256SUMS >S && sha256sum report.md >>S && sort -k2 S >SHA256SUMS && rm S) ||
  fail "tampering"
tar -czf "$run.tar.gz" -C "$TMP/x" 20261130T100000Z-node01 || fail "repack"
expect_rc 1 "$CB_BIN" verify "$run.tar.gz" --sha256 "$digest"
expect_out "^verify: $run\\.tar\\.gz\\.asc: BAD signature by clusterbench test <evidence@example.invalid>: the file is not what that key signed$"
expect_out "^verify: $run\\.tar\\.gz: sha256 [0-9a-f]{64}, not the $digest recorded"
expect_out "FAILED \\(2 problems, 4 files match\\)"
! grep -q "report.md" "$TMP/out" || fail "the regenerated manifest should match: $(cat "$TMP/out")"
ok "report.md edited to PASS with SHA256SUMS regenerated: the manifest matches, the signature is BAD and the digest differs (exit 1)"

# Another keyring: no public key to check with; bad inputs are exit 2.
export GNUPGHOME=$TMP/empty
mkdir -m 700 "$GNUPGHOME"
expect_rc 0 "$CB_BIN" archive "$run" -o "$TMP/y.tar.gz"
cp "$TMP/elsewhere.asc" "$TMP/y.tar.gz.asc"
expect_rc 1 "$CB_BIN" verify "$TMP/y.tar.gz"
expect_out "^verify: $TMP/y\\.tar\\.gz\\.asc: no public key [0-9A-F]+ to check it with"
expect_rc 2 "$CB_BIN" verify "$TMP/y.tar.gz" --signature "$TMP/absent.asc"
expect_out "absent.asc: cannot read the signature"
expect_rc 2 "$CB_BIN" verify "$TMP/y.tar.gz" --sha256 1234
expect_out "--sha256 1234: not 64 hex digits"
expect_rc 2 "$CB_BIN" archive "$run" -o "$TMP/z.tar.gz" --sign nobody@example.invalid
expect_out "gpg could not sign .*z\\.tar\\.gz with key nobody@example.invalid"
export GNUPGHOME=$TMP/gnupg
ok "no public key: exit 1 saying so; a missing --signature file, a malformed --sha256, an unknown key: exit 2"
echo "$PASSES passed, 0 failed"
