#!/usr/bin/env bash
# run --resume refuses a run that is still going (its run.lock: exit 2 naming pid and host), and
# a resume whose spec's `extends` parent was edited (run.json "spec_chain"), while an unchanged
# chain resumes. Budget: ~15 s on 2 shared cores.
source "$(dirname "$0")/lib.sh"

python3 - "$TMP/parent.json" "$TMP/child.json" <<'P'
import json, sys
rows = [{"id": "bw." + k, "title": k, "source": "test", "severity": "fail",
         "select": {"benchmark": "compute.memory_bandwidth", "params": {"kernel": k}, "metric": "bandwidth"},
         "scope": "node", "aggregate": "each", "op": ">=", "value": 0.001, "unit": "GB/s"}
        for k in ("copy", "scale", "add", "triad")]
json.dump({"schema": "clusterbench.spec/1", "name": "parent", "requirements": rows}, open(sys.argv[1], "w"))
json.dump({"schema": "clusterbench.spec/1", "name": "child", "extends": "parent.json",
           "requirements": []}, open(sys.argv[2], "w"))
P
SETS=(--set compute.memory_bandwidth.min_time=1.5 --set compute.memory_bandwidth.array_bytes=8M)
"$CB_BIN" run --suite ci --only compute.memory_bandwidth --spec "$TMP/child.json" "${SETS[@]}" \
  --out "$TMP/run" >"$TMP/run.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -s "$TMP/run/records.jsonl" ] && break; sleep 0.1; done
[ -s "$TMP/run/records.jsonl" ] || { kill -9 $pid; cat "$TMP/run.log"; fail "no record after 30 s"; }

# 1. The run still goes: a resume is refused, naming its pid and host; nothing is appended.
cp "$TMP/run/records.jsonl" "$TMP/before.jsonl"
expect_rc 2 "$CB_BIN" run --resume "$TMP/run"
kill -0 $pid 2>/dev/null || { cat "$TMP/run.log"; fail "the first run ended before the check"; }
expect_out "refused: .*run belongs to a run that is still going \(pid $pid on host $(hostname) holds"
ok "resume of a live run refused (exit 2, pid $pid, host $(hostname))"
kill -9 $pid
wait $pid 2>/dev/null
head -c "$(stat -c %s "$TMP/before.jsonl")" "$TMP/run/records.jsonl" | cmp -s - "$TMP/before.jsonl" ||
  fail "the refused resume changed records.jsonl"
py "
run = json.load(open(sys.argv[1] + '/run.json'))
chain = run['spec_chain']
assert [os.path.basename(c['path']) for c in chain] == ['parent.json', 'child.json'], chain
assert all(len(c['sha256']) == 64 for c in chain), chain
" "$TMP/run"

# 2. The parent table edited: refused, naming it.
cp "$TMP/parent.json" "$TMP/parent.orig"
sed -i 's/"title": "copy"/"title": "copy, edited"/' "$TMP/parent.json"
expect_rc 2 "$CB_BIN" run --resume "$TMP/run"
expect_out "spec chain: .*parent.json changed: earlier sha256 [0-9a-f]{64}, now [0-9a-f]{64}"
ok "an edited extends parent refused (exit 2)"

# 3. Unchanged again: the dead run's lock is no obstacle; the resume completes the plan.
cp "$TMP/parent.orig" "$TMP/parent.json"
"$CB_BIN" run --resume "$TMP/run" >"$TMP/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { cat "$TMP/out"; fail "resume after the kill: expected exit 0, got $rc"; }
ok "resume of the killed run with an unchanged chain: exit 0"
echo "$PASSES passed, 0 failed"
