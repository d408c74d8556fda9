#!/usr/bin/env bash
# A stopped record writer (SIGSTOP to rank 0's cb-record-writer; issue 46, defect 18): rank 0's
# writes are not confirmed, the phase deadline ends the run (exit 3), and the stopped writer is
# killed as the run ends, saying so, instead of staying stopped forever with what it held.
# Budget: about 15 s.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
quick_spec writer-stopped
"$CB_TESTBIN" run --suite ci --only test.quick --only test.hang --set test.hang.seconds=2 \
  --spec "$TMP/spec.json" --phase-timeout 4 --case-timeout 10 --out "$TMP/run" >"$TMP/out" 2>&1 &
pid=$!
wait_until 30 grep -q '"test.quick"' "$TMP/run/records.jsonl" 2>/dev/null || { kill $pid; fail "no first record"; }
writer=
for p in $(pgrep -x cb-record-write); do  # comm is cut to 15 characters; ours writes our run
  ls -l "/proc/$p/fd" 2>/dev/null | grep -qF "$TMP/run/records.jsonl" && writer=$p
done
[ -n "$writer" ] || { kill $pid; fail "no cb-record-writer process of this run"; }
[ "$(ps -o sid= -p "$writer" | tr -d ' ')" != "$(ps -o sid= -p $$ | tr -d ' ')" ] || fail "the writer is in our session"
kill -STOP "$writer"
wait $pid
rc=$?
[ $rc -eq 3 ] || { cat "$TMP/out" >&2; fail "expected exit 3, got $rc"; }
expect_out "the record writer \\(pid $writer\\) was stopped; killed it"
sleep 0.5
state=$(ps -o stat= -p "$writer" 2>/dev/null | tr -d ' ')
[[ -z $state || $state == Z* ]] || { kill -KILL "$writer"; fail "the stopped writer $writer is still there ($state)"; }
ok "a stopped record writer ends the run (exit 3) and is killed, not left stopped"
echo "$PASSES passed, 0 failed"
