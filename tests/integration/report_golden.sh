#!/usr/bin/env bash
# `clusterbench report` on every fixture run directory gives the report.json that the binary gave
# before the renovation of the core (tests/fixtures/golden/NAME.report.json, written by it from
# tests/fixtures/results/NAME): every verdict, row, item, outlier and warning, byte for byte once
# parsed. A change of output by design updates the golden file in the same commit.
# Budget: < 20 s.
source "$(dirname "$0")/lib.sh"
G=$CB_FIXTURES/golden
cd "$CB_SOURCE_DIR" || fail "no source dir"  # the fixtures name their spec tables relative to it
n=0
for golden in "$G"/*.report.json; do
  name=$(basename "$golden" .report.json)
  cp -r "$CB_FIXTURES/results/$name" "$TMP/$name"
  rm -f "$TMP/$name"/report.*
  "$CB_BIN" report "$TMP/$name" >"$TMP/$name.out" 2>&1
  rc=$?
  want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_code"])' "$golden")
  [ "$rc" -eq "$want" ] || { cat "$TMP/$name.out" >&2; fail "$name: exit $rc, golden $want"; }
  python3 "$CB_SOURCE_DIR/tests/support/json_diff.py" "$TMP/$name/report.json" "$golden" \
    --ignore clusterbench_version >&2 || fail "$name: report.json differs from $golden"
  n=$((n + 1))
done
[ "$n" -ge 7 ] || fail "expected at least 7 golden reports, found $n"
ok "report.json of $n fixture runs equals the golden files"

# The malformed fixtures stay input errors (exit 2) naming the file and what is wrong.
cp -r "$CB_FIXTURES/results/malformed-middle" "$TMP/mm"
expect_rc 2 "$CB_BIN" report "$TMP/mm"
expect_out "records.jsonl:2: .*parse error"
cp -r "$CB_FIXTURES/results/truncated-last" "$TMP/tl"
expect_rc 2 "$CB_BIN" report "$TMP/tl"
expect_out "run.json: names no spec table; pass --spec FILE"
# A spec.path in run.json that does not load: the error names run.json and its field (issue 46).
cp -r "$CB_FIXTURES/results/cpu-pass" "$TMP/sp"
python3 -c 'import json,sys; p=sys.argv[1]; j=json.load(open(p)); j["spec"]["path"]="/nonexistent/table.json"; json.dump(j,open(p,"w"))' "$TMP/sp/run.json"
expect_rc 2 "$CB_BIN" report "$TMP/sp"
expect_out "sp/run.json: field 'spec.path': .*/nonexistent/table.json.*pass --spec FILE"
ok "malformed and spec-less fixtures: exit 2 with the file named"

# Bytes that are not UTF-8 in records.jsonl: in a truncated last line, ignored with a warning as
# any truncated last line is (the verdict of the lines before it stands); in a middle line, an
# input error naming file and line. Never a crash (exit 3) writing the warning into report.json.
cp -r "$CB_FIXTURES/results/cpu-pass" "$TMP/bb"
rm -f "$TMP/bb"/report.*
printf '{"schema":"clusterbench.result/1","message":"\xff\xfe' >>"$TMP/bb/records.jsonl"
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_code"])' \
  "$G/cpu-pass.report.json")
expect_rc "$want" "$CB_BIN" report "$TMP/bb"
expect_out "records.jsonl:7: truncated last record ignored"
py "
r = json.loads(open(sys.argv[1], encoding='utf-8', errors='strict').read())
assert any('records.jsonl:7: truncated last record ignored' in w for w in r['warnings']), r['warnings']
" "$TMP/bb/report.json"
printf '"}\n%s\n' "$(head -n 1 "$TMP/bb/records.jsonl")" >>"$TMP/bb/records.jsonl"
expect_rc 2 "$CB_BIN" report "$TMP/bb"
expect_out "records.jsonl:7: column 46: byte 0xFF is not UTF-8$"
ok "bytes that are not UTF-8 in records.jsonl: a truncated last line warns, a middle one is exit 2"
