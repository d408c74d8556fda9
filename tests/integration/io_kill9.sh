#!/usr/bin/env bash
# A run SIGKILLed while fio writes: fio and its job processes stop within seconds (fio gets
# SIGTERM when its parent dies, PR_SET_PDEATHSIG, and stops its jobs), the scratch it wrote in
# goes too (its guard), and the next run removes what a dead run of this host left where no guard
# ran (cb-fio-* in the scratch directory, cb-fio-output-* in TMPDIR: their owner file names a pid
# of this host that is gone), while a live owner's directory, another host's and one without an
# owner file stay.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "SKIP: fio not installed"; exit 77; }
mkdir -p "$TMP/scratch" "$TMP/tmpdir"
FIO=(--only io.fio --set io.fio.profiles=seq_write --set io.fio.size=4M --set io.fio.repeat=1
  --set io.fio.scratch="$TMP/scratch" --spec "$SPECS/cpu-node.json")
TMPDIR=$TMP/tmpdir "$CB_BIN" run --suite ci "${FIO[@]}" --set io.fio.runtime=60 --out "$TMP/run" \
  >"$TMP/run.log" 2>&1 &
pid=$!
wait_for_our_fio $pid "$TMP/run.log"
sleep 0.5
kill -9 $pid
wait $pid 2>/dev/null
for _ in $(seq 1 50); do [ -z "$(our_fio)" ] && break; sleep 0.1; done
left=$(our_fio)
if [ -n "$left" ]; then
  ps -o pid,ppid,pgid,sid,cmd -p "$(echo $left | tr ' ' ,)" >&2
  kill -9 $left
  fail "fio still runs 5 s after its run was SIGKILLed: $left"
fi
ok "SIGKILL during fio: fio and its jobs gone within 5 s"

# What the dead run left goes with it: each scratch directory's guard process removes it once its
# owner is gone (io/scratch.hpp start_scratch_guard).
for _ in $(seq 1 100); do
  ls -d "$TMP"/scratch/cb-fio-seq_write-* "$TMP"/tmpdir/cb-fio-output-* >/dev/null 2>&1 || break
  sleep 0.1
done
left=$(ls -d "$TMP"/scratch/cb-fio-seq_write-* "$TMP"/tmpdir/cb-fio-output-* 2>/dev/null)
[ -z "$left" ] || fail "10 s after the SIGKILL, the killed run's scratch is still there: $left"
ok "SIGKILL during fio: its scratch and fio output directories removed by their guards"

# Where the guard could not run either (the node rebooted, the guard was killed), the next run
# sweeps what a dead owner of this host left, and keeps a live owner's directory, another
# host's and one without an owner file.
mkdir "$TMP/scratch/cb-fio-seq_write-dead" "$TMP/tmpdir/cb-fio-output-dead"
for d in "$TMP/scratch/cb-fio-seq_write-dead" "$TMP/tmpdir/cb-fio-output-dead"; do
  echo "pid=$pid host=$(hostname) start=1" >"$d/.cb-owner"
  head -c 4096 /dev/zero >"$d/seq_write.0.0"
done
mkdir "$TMP/scratch/cb-fio-live-x" "$TMP/scratch/cb-fio-other-x" "$TMP/scratch/cb-fio-noowner-x"
echo "pid=$$ host=$(hostname) start=$(awk '{print $22}' /proc/$$/stat)" >"$TMP/scratch/cb-fio-live-x/.cb-owner"
echo "pid=$pid host=not-$(hostname) start=1" >"$TMP/scratch/cb-fio-other-x/.cb-owner"

TMPDIR=$TMP/tmpdir "$CB_BIN" run --suite ci "${FIO[@]}" --out "$TMP/run2" >"$TMP/out" 2>&1
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert len(recs) == 1 and recs[0]['status'] == 'ok', recs
" "$TMP/run2"
expect_out "removed $TMP/scratch/cb-fio-seq_write-[^,]*, left by a run that is gone"
left=$(find "$TMP/scratch" "$TMP/tmpdir" -mindepth 1 -maxdepth 1 -not -name "ompi.*" | sort)
want=$(printf '%s\n' "$TMP/scratch/cb-fio-live-x" "$TMP/scratch/cb-fio-noowner-x" \
  "$TMP/scratch/cb-fio-other-x" | sort)
[ "$left" = "$want" ] || fail "after the next run, expected only the live, no-owner and other-host dirs; found:
$left"
ok "the next run removed the dead run's scratch and output, kept the others"
echo "$PASSES passed, 0 failed"
