#!/usr/bin/env bash
# run --resume: a run killed with SIGKILL mid-run is completed by `run --resume DIR`, which runs
# only the cases without a record and appends to the same directory; cases already finished are
# not run again (one record per case key, the earlier lines untouched). A failed case is rerun.
# Options that differ from the earlier run's (suite, --set, --only, spec) are refused with exit 2.
# Budget: ~25 s on 2 shared cores.
source "$(dirname "$0")/lib.sh"

stream_spec "$TMP/spec.json" 0.001 resume-test
SETS=(--set compute.memory_bandwidth.min_time=0.6 --set compute.memory_bandwidth.array_bytes=8M)

# 1. Kill -9 once the first record is on disk.
"$CB_BIN" run --suite ci --only compute.memory_bandwidth --spec "$TMP/spec.json" "${SETS[@]}" \
  --out "$TMP/run" >"$TMP/run.log" 2>&1 &
kill9_after_first_record $! "$TMP/run"
cp "$TMP/run/records.jsonl" "$TMP/before.jsonl"
ok "killed after $n case(s)"

# 2. Options that differ from the earlier run's: exit 2, naming what differs; nothing appended.
expect_rc 2 "$CB_BIN" run --resume "$TMP/run" --suite quick
expect_out "differs from the earlier one"
expect_out "suite: earlier 'ci', now 'quick'"
expect_rc 2 "$CB_BIN" run --resume "$TMP/run" --set compute.memory_bandwidth.min_time=0.5
expect_out "--set: earlier '\[compute.memory_bandwidth.min_time=0.6, compute.memory_bandwidth.array_bytes=8M\]'"
expect_rc 2 "$CB_BIN" run --resume "$TMP/run" --only 'compute.*'
expect_out "--only: earlier '\[compute.memory_bandwidth\]', now '\[compute.\*\]'"
sed 's/0.001/0.002/' "$TMP/spec.json" >"$TMP/spec2.json"
expect_rc 2 "$CB_BIN" run --resume "$TMP/run" --spec "$TMP/spec2.json"
expect_out "spec: earlier .*spec.json \(sha256 [0-9a-f]{64}\), now .*spec2.json"
expect_rc 2 "$CB_BIN" run --resume "$TMP/nonexistent"
expect_out "--resume .*nonexistent: .*run.json: cannot open"
cmp -s "$TMP/run/records.jsonl" "$TMP/before.jsonl" || fail "a refused resume wrote records"
ok "differing suite, --set, --only, spec and a missing directory refused with exit 2"

# 3. The resume (same options given, or none): only the missing cases run, appended.
expect_rc 0 "$CB_BIN" run --resume "$TMP/run" --suite ci
expect_out "resuming .*: $((4 - n)) of 4 planned case\(s\) to run"
expect_out "VERDICT: PASS"
py "
lines = open(sys.argv[1]).read().splitlines()
before = open(sys.argv[2]).read().splitlines()
n = int(sys.argv[3])
assert lines[:n] == before, 'earlier records changed'
recs = [json.loads(l) for l in lines]
keys = [r['case_key'] for r in recs]
assert len(keys) == 4 and len(set(keys)) == 4, keys
assert sorted(r['params']['kernel'] for r in recs) == ['add', 'copy', 'scale', 'triad'], recs
assert all(r['status'] == 'ok' for r in recs)
assert len({r['run_id'] for r in recs}) == 1, 'one run id'
# The resumed cases started after the earlier ones.
assert min(r['started_at'] for r in recs[n:]) >= max(r['started_at'] for r in recs[:n])
run = json.load(open(sys.argv[4]))
assert run['exit_code'] == 0 and run['finished_at'], run
res = run['resumes']
assert len(res) == 1 and res[0]['cases_rerun'] == 4 - n and res[0]['cases_done'] == n, res
assert res[0]['earlier_exit_code'] is None and not res[0]['earlier_finished_at'], res
assert run['suite'] == 'ci' and run['only'] == ['compute.memory_bandwidth'], run
" "$TMP/run/records.jsonl" "$TMP/before.jsonl" "$n" "$TMP/run/run.json"
ok "resume ran the $((4 - n)) missing case(s) only; one record per case key; earlier lines kept"

# 4. A failed case is rerun; its new record supersedes the failed one in the report.
python3 - "$TMP/run/records.jsonl" <<'P'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[1]); r['status'] = 'failed'; r['message'] = 'injected failure'; r['metrics'] = []
lines[1] = json.dumps(r)
open(sys.argv[1], 'w').write('\n'.join(lines) + '\n')
P
expect_rc 1 "$CB_BIN" report "$TMP/run"
failed_kernel=$(sed -n 2p "$TMP/run/records.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["params"]["kernel"])')
expect_rc 0 "$CB_BIN" run --resume "$TMP/run"
expect_out "1 of 4 planned case\(s\) to run"
expect_out "warning: .*1 record\(s\) superseded by a later record of the same case"
py "
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 5, len(recs)
assert recs[4]['params']['kernel'] == sys.argv[2] and recs[4]['status'] == 'ok', recs[4]
assert len(json.load(open(sys.argv[3]))['resumes']) == 2
" "$TMP/run/records.jsonl" "$failed_kernel" "$TMP/run/run.json"
ok "failed case ($failed_kernel) rerun; report takes the last record (PASS)"

# 5. A complete run: a resume runs nothing.
expect_rc 0 "$CB_BIN" run --resume "$TMP/run"
expect_out "0 of 4 planned case\(s\) to run"
[ "$(wc -l <"$TMP/run/records.jsonl")" -eq 5 ] || fail "a resume of a complete run wrote records"
expect_rc 0 "$CB_BIN" run --resume "$TMP/run" --dry-run
[ "$(grep -c '(done in the earlier run)' "$TMP/out")" -eq 4 ] || { cat "$TMP/out"; fail "dry-run of a complete resume"; }
expect_out "total: 4 case\(s\), 0 to run, estimated 0.00 s"
expect_rc 2 "$CB_BIN" run --resume "$TMP/run" --out "$TMP/elsewhere"
expect_out "appends to that directory; --out .*elsewhere names another"
expect_rc 0 "$CB_BIN" run --resume "$TMP/run/" --out "$TMP/run/"
ok "resume of a complete run runs nothing; its dry-run says so; --out elsewhere refused, R/ is R"

# 5b. A run whose spec was chosen from the hardware: its resume keeps that table and says how it
#     was chosen (not "--spec").
# The verdict is this machine's (exit 0 or 1): what matters is how the spec was chosen.
verdict_run() {
  "$@" >"$TMP/out" 2>&1
  local rc=$?
  [ "$rc" -le 1 ] || { cat "$TMP/out" >&2; fail "exit $rc: $*"; }
}
verdict_run "$CB_BIN" run --suite ci --only compute.memory_bandwidth \
  --set compute.memory_bandwidth.array_bytes=8M --set compute.memory_bandwidth.min_time=0.02 \
  --out "$TMP/auto"
expect_out "^spec: .* \(auto: "
verdict_run "$CB_BIN" run --resume "$TMP/auto"
expect_out "^spec: .* \(auto: "
py "
run = json.load(open(sys.argv[1]))
assert run['spec']['selected_by'].startswith('auto: '), run['spec']
" "$TMP/auto/run.json"
ok "resume of an auto-chosen spec says how it was chosen"

# 6. A torn last line (a killed run's partial write): moved to records.jsonl.torn and cut off,
#    so the rerun record starts on its own line and the directory stays readable.
head -n 4 "$TMP/run/records.jsonl" >"$TMP/torn.jsonl"
printf '{"benchmark":"compute.memory_bandwidth","params":{"kernel":"tr' >>"$TMP/torn.jsonl"
mkdir -p "$TMP/torn" && cp "$TMP/run/run.json" "$TMP/torn/" && cp "$TMP/torn.jsonl" "$TMP/torn/records.jsonl"
expect_rc 0 "$CB_BIN" run --resume "$TMP/torn"
expect_out "torn last line .* moved to .*records.jsonl.torn"
py "
d = sys.argv[1]
lines = open(d + '/records.jsonl').read().splitlines()
recs = [json.loads(l) for l in lines]   # every line whole
assert len(recs) == 5, len(recs)
assert open(d + '/records.jsonl.torn').read().startswith('{\"benchmark\":\"compute.memory_bandwidth\",\"params\":{\"kernel\":\"tr'), 'torn bytes kept'
" "$TMP/torn"
expect_rc 0 "$CB_BIN" report "$TMP/torn"
ok "torn last line set aside; resumed run dir is readable and reports"

# 7. A malformed line in the middle: refused before anything runs, naming the line.
{ head -n 1 "$TMP/run/records.jsonl"; echo 'garbage'; sed -n 2,3p "$TMP/run/records.jsonl"; } >"$TMP/mid.jsonl"
mkdir -p "$TMP/mid" && cp "$TMP/run/run.json" "$TMP/mid/" && cp "$TMP/mid.jsonl" "$TMP/mid/records.jsonl"
expect_rc 2 "$CB_BIN" run --resume "$TMP/mid"
expect_out "records.jsonl:2: not a record"
cmp -s "$TMP/mid.jsonl" "$TMP/mid/records.jsonl" || fail "the refused resume changed records.jsonl"
ok "malformed middle line: exit 2 naming records.jsonl:2, nothing appended"
echo "$PASSES passed, 0 failed"
