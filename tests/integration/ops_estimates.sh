#!/usr/bin/env bash
# Estimates you can plan with: the `ci` suite in one process, as `make run` runs a suite on a
# node, measured against its --dry-run. The run's wall time within +-30% of the estimated total,
# and each benchmark whose cases take over 5 s in all within +-30% of its estimates' sum
# (docs/operations.md "Estimates"). Run alone (RUN_SERIAL): the calibration is for an otherwise
# idle machine. A shared machine is noisy: when a bound is missed the run is repeated once, and
# a bound holds when one of the two runs meets it. Prints the accuracy table. Budget: ~40 s a run.
source "$(dirname "$0")/lib.sh"

expect_rc 0 "$CB_BIN" run --suite ci --dry-run
cp "$TMP/out" "$TMP/dry.txt"
for attempt in 1 2; do
  t0=$(date +%s.%N)
  "$CB_BIN" run --suite ci --out "$TMP/run$attempt" >"$TMP/log$attempt" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  case $rc in 0 | 1 | 4) ;; *) cat "$TMP/log$attempt" >&2; fail "the ci run exited $rc" ;; esac
  echo "$t0 $t1" >"$TMP/run$attempt/wall"
  if python3 - "$TMP/dry.txt" "$TMP"/run[0-9]* <<'P'; then
import collections, json, sys
dry, runs = sys.argv[1], sys.argv[2:]
est, est_total = collections.Counter(), 0.0
for l in open(dry):
    t = l.split()
    if l.startswith('  ') and t and t[0][0].isdigit():
        est[t[2]] += float(t[0])
    if l.startswith('total: '):
        est_total = float(t[-2])
assert est_total > 0 and abs(sum(est.values()) - est_total) < 0.5, (est_total, est)
measured = []
for d in runs:
    # A case spread over rounds appends its merge after each round (extra.snapshot) and the
    # later record of a case key replaces the earlier one: only the last one's time counts.
    last = {}
    for l in open(d + '/records.jsonl'):
        r = json.loads(l)
        last[(r['benchmark'], json.dumps(r.get('params'), sort_keys=True))] = r
    m = collections.Counter()
    for (b, _), r in last.items():
        m[b] += r['duration_s']
    t0, t1 = map(float, open(d + '/wall').read().split())
    measured.append((m, t1 - t0))
within = lambda e, x: 0.7 * e <= x <= 1.3 * e
bad = []
print('| benchmark | estimated s | measured s (run 1, run 2) | measured / estimated |')
print('|---|---|---|---|')
for b in sorted(set(est) | set(measured[0][0])):
    ms = [m[b] for m, _ in measured]
    judged = max(ms) > 5
    ok = not judged or any(within(est[b], x) for x in ms)
    if not ok:
        bad.append(b)
    ratio = ', '.join('%.2f' % (x / est[b]) if est[b] > 0 else '-' for x in ms)
    print('| %s | %.1f | %s | %s%s |' % (b, est[b], ', '.join('%.1f' % x for x in ms), ratio,
                                         '' if not judged else (' (judged)' if ok else ' OUTSIDE 30%')))
walls = [w for _, w in measured]
print('| suite (wall) | %.1f | %s | %s |' % (est_total, ', '.join('%.1f' % w for w in walls),
                                             ', '.join('%.2f' % (w / est_total) for w in walls)))
if not any(within(est_total, w) for w in walls):
    bad.append('suite total')
if bad:
    print('outside +-30%: ' + ', '.join(bad))
sys.exit(1 if bad else 0)
P
    ok "ci suite: the total and each benchmark over 5 s within 30% of --dry-run's estimate"
    echo "PASS: $PASSES checks"
    exit 0
  fi
done
fail "estimates outside 30% in both measured runs (table above)"
