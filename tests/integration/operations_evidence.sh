#!/usr/bin/env bash
# Procurement evidence and fleet uniformity through the CLI (issue 9, parts 1-2):
#  - `report` on the uniformity-5 fleet fixture names node03 (driver) and node05 (tuning) in
#    report.md, report.json, report.html and on the console, with the spec's sha256 and the
#    clusterbench version;
#  - `archive` + `verify`: exit 0; a flipped byte in a member and a removed member exit 1 naming the
#    file (tampered with Python's tarfile, independently of libarchive); a missing file exits 2.
# Budget: < 30 s.
source "$(dirname "$0")/lib.sh"

run="$TMP/20261130T100000Z-node01"
cp -r "$CB_FIXTURES/results/uniformity-5" "$run"
spec="$run/spec.json"
sha=$(sha256sum "$spec" | cut -d' ' -f1)

expect_rc 0 "$CB_BIN" report "$run" --spec "$spec"
expect_out "^spec: uniformity-fixture \\($spec\\), sha256 $sha; run by clusterbench 0\\.1\\.0\\+3f2a9c1d7e0b$"
expect_out "^uniformity: 2 of 5 node\\(s\\) differ$"
expect_out "^  node03: versions\\.driver = 535\\.104\\.05 \\(reference 535\\.161\\.08; differs from 4 of 5 nodes\\)$"
expect_out "^  node05: tuning\\.governor = powersave \\(reference performance"
ok "console names node03 (driver) and node05 (tuning), the spec sha256 and the version"

py "
r = json.load(open(sys.argv[1] + '/report.json'))
u = r['uniformity']
assert u['hosts'] == ['node03', 'node05'], u['hosts']
got = sorted((d['host'], d['field'], d['value'], d['reference']) for d in u['deviations'])
assert got == [('node03', 'versions.driver', '535.104.05', '535.161.08'),
               ('node05', 'tuning.governor', 'powersave', 'performance'),
               ('node05', 'tuning.nr_hugepages', '0', '8192')], got
assert r['spec']['sha256'] == sys.argv[2], r['spec']
assert r['clusterbench_version'] == '0.1.0+3f2a9c1d7e0b'
" "$run" "$sha"
grep -qF '2 of 5 node(s) differ: node03, node05.' "$run/report.md" || fail "report.md lacks the uniformity line"
grep -q "sha256 \`$sha\`" "$run/report.md" || fail "report.md lacks the spec sha256"
grep -q '<h2 id="uniformity">' "$run/report.html" || fail "report.html lacks the uniformity section"
grep -q '<td>node03</td><td><code>versions.driver</code></td><td>535.104.05</td>' "$run/report.html" \
  || fail "report.html lacks node03's driver"
grep -q '<th>clusterbench</th><td>0.1.0+3f2a9c1d7e0b</td>' "$run/report.html" \
  || fail "report.html lacks the clusterbench version"
ok "report.json, report.md and report.html name the same two nodes"

# archive: default path DIR.tar.gz; verify.
expect_rc 0 "$CB_BIN" archive "$run"
expect_out "^archive: $run\\.tar\\.gz \\([0-9]+ files, [0-9]+ B, manifest 20261130T100000Z-node01/SHA256SUMS\\)$"
expect_rc 0 "$CB_BIN" verify "$run.tar.gz"
expect_out "^verified: .*: [0-9]+ files match SHA256SUMS$"
# The manifest checks with sha256sum itself once extracted.
mkdir "$TMP/x" && tar -xzf "$run.tar.gz" -C "$TMP/x" || fail "tar cannot extract the archive"
(cd "$TMP/x/20261130T100000Z-node01" && sha256sum --quiet -c SHA256SUMS) || fail "sha256sum -c fails"
ok "archive verifies (and sha256sum -c agrees)"

expect_rc 0 "$CB_BIN" archive "$run" -o "$TMP/evidence.tgz"
# Tamper: one byte flipped in records.jsonl; report.md removed.
python3 - "$TMP/evidence.tgz" "$TMP/flipped.tgz" "$TMP/removed.tgz" <<'EOF' || fail "tampering failed"
import io, sys, tarfile
src, flipped, removed = sys.argv[1:]
members = []
with tarfile.open(src, "r:gz") as t:
    for m in t.getmembers():
        members.append((m, t.extractfile(m).read() if m.isfile() else None))
def write(path, change):
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as t:
        for m, data in members:
            data = change(m.name, data)
            if data is None:
                continue
            m.size = len(data)
            t.addfile(m, io.BytesIO(data))
def flip(name, data):
    if name.endswith("/records.jsonl"):
        b = bytearray(data); b[len(b) // 2] ^= 1; return bytes(b)
    return data
write(flipped, flip)
write(removed, lambda name, data: None if name.endswith("/report.md") else data)
EOF
expect_rc 1 "$CB_BIN" verify "$TMP/flipped.tgz"
expect_out "^verify: records\\.jsonl: sha256 mismatch \\(manifest [0-9a-f]{64}, archive [0-9a-f]{64}\\)$"
expect_rc 1 "$CB_BIN" verify "$TMP/removed.tgz"
expect_out "^verify: report\\.md: listed in SHA256SUMS but missing from the archive$"
expect_out "FAILED \\(1 problem, "
ok "a flipped byte and a removed member fail with exit 1, naming the file"

expect_rc 2 "$CB_BIN" verify "$TMP/absent.tgz"
expect_out "absent\\.tgz: cannot open"
expect_rc 2 "$CB_BIN" archive "$TMP/x"
expect_out "no run\\.json here"
ok "a missing archive or a directory that is not a run: exit 2"

# -o inside the run directory (a run file, a new file, the directory itself) is refused before
# anything is written: records.jsonl keeps its bytes. Unwritable targets are exit 2 too.
rec_sha=$(sha256sum "$run/records.jsonl" | cut -d' ' -f1)
for o in "$run/records.jsonl" "$run/new.tar.gz" "$run" "$run/../$(basename "$run")/run.json"; do
  expect_rc 2 "$CB_BIN" archive "$run" -o "$o"
  expect_out "^clusterbench: -o $o: lies inside the run directory $run; write it elsewhere$"
done
[ "$(sha256sum "$run/records.jsonl" | cut -d' ' -f1)" = "$rec_sha" ] || fail "records.jsonl changed"
[ ! -e "$run/new.tar.gz" ] || fail "an archive was written inside the run directory"
expect_rc 2 "$CB_BIN" archive "$run" -o /nonexistent/x.tar.gz
expect_out "^clusterbench: -o /nonexistent/x\\.tar\\.gz: directory /nonexistent does not exist$"
expect_rc 2 "$CB_BIN" archive "$run" -o /proc/x.tar.gz
expect_out "^clusterbench: -o /proc/x\\.tar\\.gz: cannot create a file in /proc \\("
expect_rc 2 "$CB_BIN" archive "$run" -o "$TMP/x"
expect_out "^clusterbench: -o $TMP/x: is a directory; name a file$"
ok "archive -o inside the run, in a missing or unwritable directory, or a directory: exit 2"

# Members that escape the extraction directory, links and devices fail naming the member, even
# when every hash matches (written with Python's tarfile).
python3 - "$TMP/evidence.tgz" "$TMP" <<'PY' || fail "writing the unsafe archives failed"
import hashlib, io, sys, tarfile
src, tmp = sys.argv[1:]
def reg(name, data):
    m = tarfile.TarInfo(name); m.size = len(data); return m, data
def write(path, members):
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as t:
        for m, data in members:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
data = b'{"x": 1}\n'
sums = (hashlib.sha256(data).hexdigest() + "  run.json\n").encode()
write(tmp + "/up.tgz", [reg("../run.json", data), reg("../SHA256SUMS", sums)])
with tarfile.open(src, "r:gz") as t:
    good = [(m, t.extractfile(m).read()) for m in t.getmembers()]
p = good[0][0].name.split("/")[0]
link = tarfile.TarInfo(p + "/link"); link.type = tarfile.SYMTYPE; link.linkname = "/etc/shadow"
hard = tarfile.TarInfo(p + "/hard"); hard.type = tarfile.LNKTYPE; hard.linkname = p + "/run.json"
dev = tarfile.TarInfo(p + "/null"); dev.type = tarfile.CHRTYPE; dev.devmajor, dev.devminor = 1, 3
write(tmp + "/odd.tgz", [reg("/etc/cbx", b"x"), reg(p + "/../../etc/x", b"x"),
                         (link, None), (hard, None), (dev, None)] + good)
PY
expect_rc 1 "$CB_BIN" verify "$TMP/up.tgz"
expect_out "^verify: \\.\\./run\\.json: member path climbs out with \\.\\. \\(unsafe to extract\\)$"
expect_out "^verify: \\.\\./SHA256SUMS: member path climbs out with \\.\\. \\(unsafe to extract\\)$"
expect_rc 1 "$CB_BIN" verify "$TMP/odd.tgz"
expect_out "^verify: /etc/cbx: absolute member path \\(unsafe to extract\\)$"
expect_out "^verify: 20261130T100000Z-node01/\\.\\./\\.\\./etc/x: member path climbs out with"
expect_out "^verify: 20261130T100000Z-node01/link: symbolic link to /etc/shadow, not a regular file$"
expect_out "^verify: 20261130T100000Z-node01/hard: hard link to 20261130T100000Z-node01/run\\.json, not a regular file$"
expect_out "^verify: 20261130T100000Z-node01/null: character device, not a regular file$"
expect_out "FAILED \\(5 problems, "
ok "absolute and .. members, a symlink, a hard link and a device fail verification, named"

# Not a tar: text (libarchive's mtree reader would take /etc/passwd), a directory, an empty file,
# a gzip cut inside its first member header: exit 2. Cut after some members: exit 1.
: >"$TMP/empty.tgz"
head -c 40 "$TMP/evidence.tgz" >"$TMP/cut.tgz"
for f in /etc/passwd /tmp "$TMP/empty.tgz" "$TMP/cut.tgz"; do
  expect_rc 2 "$CB_BIN" verify "$f"
  expect_out "^clusterbench: $f: .*cannot be opened as a clusterbench archive"
done
head -c $(($(stat -c %s "$TMP/evidence.tgz") - 200)) "$TMP/evidence.tgz" >"$TMP/late.tgz"
expect_rc 1 "$CB_BIN" verify "$TMP/late.tgz"
expect_out "damaged"
ok "non-archives, directories, empty and early-truncated files exit 2; a late truncation exits 1"

echo "operations_evidence: $PASSES checks passed"
