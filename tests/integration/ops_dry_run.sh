#!/usr/bin/env bash
# run --dry-run prints the plan with an estimated duration per case and the total, and runs and
# writes nothing. Its estimates (Benchmark::estimate_s, from each benchmark's knobs) are compared
# with a real ci run of fio, OpenBLAS GEMM, the dataloader and STREAM (small arrays): the total
# within 2x, and every case that took more than 1 s within 2x. The machine is shared and noisy:
# when a bound is missed the run is repeated (at most 3 runs), and a bound holds when one of the
# runs meets it. Budget: ~25 s per run, 100 s at most.
source "$(dirname "$0")/lib.sh"

# 1. The whole ci suite: every planned case listed, a total, nothing written.
expect_rc 0 "$CB_BIN" run --suite ci --dry-run --out "$TMP/never"
[ ! -e "$TMP/never" ] || fail "--dry-run created its --out directory"
expect_out "^clusterbench --dry-run: suite ci"
expect_out "^total: [0-9]+ case\(s\), [0-9]+ to run, estimated [0-9.]+ s$"
py "
out = open(sys.argv[1]).read().splitlines()
rows = [l.split() for l in out if l.startswith('  ') and l.split()[0][0].isdigit()]
total = [l for l in out if l.startswith('total: ')][0].split()
assert len(rows) == int(total[1]), (len(rows), total)
est = sum(float(r[0]) for r in rows)
assert abs(est - float(total[-2])) <= 0.01 * len(rows) + 0.1, (est, total)
gpu = [r for r in rows if r[2] == 'compute.gemm' and 'cublaslt' in r[3]]
assert gpu and all(float(r[0]) == 0 and 'waived:' in ' '.join(r) for r in gpu), gpu
fio = [r for r in rows if r[2] == 'io.fio']
assert len(fio) == 6 and all(float(r[0]) > 1.5 for r in fio), fio
print('ci suite: %d cases, estimated %.1f s' % (len(rows), est))
" "$TMP/out"
ok "--dry-run lists the ci plan with estimates and a total; writes nothing"
expect_out "^spec: cpu-node \\(.*cpu-node.json, auto: "

# The spec is checked as a real run checks it: a missing or non-JSON table is exit 2.
expect_rc 2 "$CB_BIN" run --suite ci --dry-run --spec "$TMP/nonexist.json"
expect_out "nonexist.json"
expect_rc 2 "$CB_BIN" run --suite ci --dry-run --spec "$CB_SOURCE_DIR/README.md"
expect_out "README.md"
ok "--dry-run names the spec it would use and refuses a bad one (exit 2)"

# 2. Estimates against measured durations.
ONLY=(--suite ci --only io.fio --only compute.gemm --only io.dataloader --only compute.memory_bandwidth
      --set compute.memory_bandwidth.array_bytes=16M)
expect_rc 0 "$CB_BIN" run "${ONLY[@]}" --dry-run
cp "$TMP/out" "$TMP/dry.txt"
for attempt in 1 2 3; do
  "$CB_BIN" run "${ONLY[@]}" --out "$TMP/run$attempt" >"$TMP/run.log" 2>&1
  rc=$?
  case $rc in 0 | 1 | 4) ;; *) cat "$TMP/run.log" >&2; fail "the measured run exited $rc" ;; esac
  # A bound holds when one of the runs so far meets it (load moves durations both ways: a busy
  # machine slows cases down, an idle one speeds them up against the calibration).
  if python3 - "$TMP/dry.txt" "$TMP"/run[0-9]*/records.jsonl <<'P'; then
import json, sys
dry, files = sys.argv[1], sys.argv[2:]
est = {}
for l in open(dry):
    t = l.split()
    if l.startswith('  ') and t and t[0][0].isdigit():
        est[t[2] + ' ' + json.dumps(json.loads(t[3]), sort_keys=True)] = float(t[0])
runs = []
for f in files:
    d = {}
    for l in open(f):
        r = json.loads(l)
        d[r['benchmark'] + ' ' + json.dumps(r['params'], sort_keys=True)] = r['duration_s']
    assert set(d) <= set(est), set(d) - set(est)
    runs.append(d)
within = lambda e, m: m / 2 <= e <= 2 * m
bad = []
for k in sorted(runs[-1]):
    ms = [d[k] for d in runs if k in d]
    flag = ''
    # The bound (within 2x when it took over 1 s) holds when one run meets it.
    if not any(m <= 1 or within(est[k], m) for m in ms):
        flag = '  <- outside 2x'
        bad.append(k)
    print('%8.2f est  measured %s  %s%s' % (est[k], ' '.join('%.2f' % m for m in ms), k, flag))
totals = [(sum(est[k] for k in d), sum(d.values())) for d in runs]
for i, (te, tm) in enumerate(totals):
    print('run %d total: estimated %.1f s, measured %.1f s (ratio %.2f)' % (i + 1, te, tm, te / tm))
if not any(within(te, tm) for te, tm in totals):
    bad.append('total')
sys.exit(1 if bad else 0)
P
    ok "estimates within 2x of the measured durations (total, and each case over 1 s)"
    echo "$PASSES passed, 0 failed"
    exit 0
  fi
done
fail "estimates outside 2x in each of 3 measured runs (see above)"
