#!/usr/bin/env bash
# run --dry-run prints the plan with an estimated duration per case and the total, and runs and
# writes nothing; a bad spec is exit 2. How close the estimates come: ops_estimates.sh.
# Budget: < 10 s.
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
expect_out "^spec: cpu-node \\(.*cpu-node.json, auto: no NVIDIA GPU on the PCI bus, so cpu-node.json\\)"

# The spec is checked as a real run checks it: a missing or non-JSON table is exit 2.
expect_rc 2 "$CB_BIN" run --suite ci --dry-run --spec "$TMP/nonexist.json"
expect_out "nonexist.json"
expect_rc 2 "$CB_BIN" run --suite ci --dry-run --spec "$CB_SOURCE_DIR/README.md"
expect_out "README.md"
ok "--dry-run names the spec it would use and refuses a bad one (exit 2)"

# 2. Estimates against measured durations: tests/integration/ops_estimates.sh (run alone).
echo "PASS: $PASSES checks"
