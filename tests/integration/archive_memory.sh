#!/usr/bin/env bash
# `verify` streams archive members (issue 20): a run archive of one 2 GiB member of zeros (a
# few MB gzip'ed) is hashed in chunks within 64 MiB peak RSS (/usr/bin/time -v). Not a sparse tar
# member: libarchive returns no data for an all-hole member.
source "$(dirname "$0")/lib.sh"
[ -x /usr/bin/time ] || fail "/usr/bin/time is missing (package time; scripts/setup.sh)"

mkdir -p "$TMP/run"
truncate -s 2G "$TMP/run/big.bin"
# sha256 of 2 GiB of zeros (sha256sum of truncate -s 2G), fixed rather than computed here (30 s).
echo "a7c744c13cc101ed66c29f672f92455547889cc586ce6d44fe76ae824958ea51  big.bin" >"$TMP/run/SHA256SUMS"
tar -cf - -C "$TMP" run/big.bin run/SHA256SUMS | gzip -1 >"$TMP/run.tar.gz"
[ "$(stat -c %s "$TMP/run.tar.gz")" -lt 10000000 ] || fail "the sparse archive is not small"

expect_rc 0 /usr/bin/time -v "$CB_BIN" verify "$TMP/run.tar.gz"
expect_out "verified: .*run.tar.gz: 1 files match SHA256SUMS"
kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TMP/out")
[ -n "$kb" ] || fail "no peak RSS in /usr/bin/time -v's output"
[ "$kb" -le 65536 ] || fail "verify of a 2 GiB member peaked at $kb KiB (limit 65536)"
ok "verify of a 2 GiB member: $kb KiB peak RSS"

# `archive` streams too (issue 46, defect 14): a run holding a 1 GiB file (zeros, sparse on
# disk) is archived within 64 MiB peak RSS, and the archive verifies.
mkdir -p "$TMP/arun"
echo '{"schema":"clusterbench.run/1","run_id":"r","hosts":[],"plan":[],"env":[]}' >"$TMP/arun/run.json"
: >"$TMP/arun/records.jsonl"
truncate -s 1G "$TMP/arun/big.bin"
expect_rc 0 /usr/bin/time -v "$CB_BIN" archive "$TMP/arun" -o "$TMP/arun.tar.gz"
kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TMP/out")
[ -n "$kb" ] && [ "$kb" -le 65536 ] || fail "archive of a 1 GiB file peaked at ${kb:-?} KiB (limit 65536)"
expect_rc 0 "$CB_BIN" verify "$TMP/arun.tar.gz"
expect_out "3 files match SHA256SUMS"
ok "archive of a run with a 1 GiB file: $kb KiB peak RSS, and it verifies"

# File names SHA256SUMS cannot list, one per line: a newline (it could forge a line) and bytes
# that are not UTF-8. Exit 2 naming the file, no archive written.
rm "$TMP/arun/big.bin"
touch "$TMP/arun/evil"$'\n'"0000  records.jsonl"
expect_rc 2 "$CB_BIN" archive "$TMP/arun" -o "$TMP/nl.tar.gz"
expect_out "a control character .* in a file name of the run"
[ ! -e "$TMP/nl.tar.gz" ] || fail "an archive was written beside the refusal"
rm "$TMP/arun/evil"*
touch "$TMP/arun/bad"$'\xff'"name"
expect_rc 2 "$CB_BIN" archive "$TMP/arun" -o "$TMP/u8.tar.gz"
expect_out "bytes that are not UTF-8 in a file name of the run"
ok "file names with a newline or bytes that are not UTF-8: exit 2 naming them"

echo "$PASSES passed, 0 failed"
