#!/usr/bin/env bash
# Health counters end to end (docs/health.md): the tests' binary runs one no-op case on a copy of
# the two-socket fixture node with the health files of fsroot-health/start laid over it, and the
# fake NVML. During the run, test.health_inject lays the end tree over it (counters that rise);
# the fake NVML's counters rise between its first and second reading. The run's run.json holds
# both snapshots, and `report` judges the health.* rows of reports/specs with their evidence.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
BIN=$CB_TESTBIN
FAKE_NVML=${CB_BINARY_DIR:-}/tests/fake_nvml/libnvidia-ml.so
[ "${CB_HAVE_NVML:-1}" = "1" ] && [ -f "$FAKE_NVML" ] || { echo "skip: no fake NVML"; exit 77; }
H=$CB_FIXTURES/fsroot-health

# A spec of the health rows alone (health-host.json's and health-gpu.json's), so the exit code is
# theirs.
python3 - "$SPECS" "$TMP/health.json" <<'P' || fail "cannot write the spec"
import json, sys
rows = []
for name in ("health-host.json", "health-gpu.json"):
    rows += [r for r in json.load(open(f"{sys.argv[1]}/{name}"))["requirements"]
             if r["id"].startswith("health.")]
json.dump({"schema": "clusterbench.spec/5", "name": "health", "title": "health rows",
           "requirements": rows}, open(sys.argv[2], "w"), indent=1)
P

# run_case NAME NVML_FIXTURE END_TREE WANT_RC: one run into $TMP/NAME.
run_case() {
  local root=$TMP/$1-root
  cp -a "$CB_FIXTURES/fsroot/two-socket" "$root"
  tar -C "$H/start" -cf - . | tar -C "$root" -xf - || fail "cannot lay the start tree"
  expect_rc "$4" env CLUSTERBENCH_NVML_LIB="$FAKE_NVML" FAKE_NVML_JSON="$CB_FIXTURES/nvml/$2" \
    "$BIN" run --suite ci --only test.health_inject --set "test.health_inject.overlay=$H/$3" \
    --fs-root "$root" --spec "$TMP/health.json" --out "$TMP/$1"
}

# 1. Healthy: every health row PASS (exit 0); run.json holds both snapshots.
run_case healthy health-healthy.json healthy-end 0
HOST=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['env'][0]['host'])" "$TMP/healthy/run.json")
expect_out "health.ib_symbol_error +PASS"
py "
r = json.load(open(sys.argv[1]))
h = r['env'][0]['health']
assert h['start']['schema'] == 'clusterbench.health/1', h['start']
assert h['start']['ib_ports'][0]['counters']['symbol_error'] == 0
assert h['end']['ib_ports'][0]['counters']['symbol_error'] == 2
assert h['start']['gpus'][1]['ecc']['volatile']['corrected'] == 0
assert h['end']['gpus'][1]['ecc']['volatile']['corrected'] == 4
assert h['end']['xid_watch']['status'] == 'ok' and h['end']['xid_watch']['events'] == []
assert h['start']['kernel_log']['last_seq'] == 1500 and h['end']['kernel_log']['last_seq'] == 1502
" "$TMP/healthy/run.json"
py "
r = json.load(open(sys.argv[1]))
rows = {x['id']: x for x in r['rows']}
assert len(rows) == 17, sorted(rows)
assert all(x['outcome'] == 'PASS' for x in rows.values()), [(i, x['outcome'], x['message']) for i, x in rows.items() if x['outcome'] != 'PASS']
assert rows['health.ib_symbol_error']['value'] == 2
assert rows['health.ib_symbol_error']['evidence'][0].startswith('run.json env[%s].health: start ' % sys.argv[2])
" "$TMP/healthy/report.json" "$HOST"
ok "healthy run: 17 health rows PASS, both snapshots in run.json"

# 2. Faulty: the rows FAIL or WARN naming the GPU, the port, the PCIe device (exit 1).
run_case faulty health-faulty.json faulty-end 1
G0="$HOST"'/gpu0\[GPU-6d8a3b2e-1f4c-7a90-b2d1-0c5e8f3a4b01\]@0000:17:00.0'
expect_out "health.gpu_ecc_uncorrected +FAIL"
py "
r = json.load(open(sys.argv[1]))
rows = {x['id']: x for x in r['rows']}
want = {'health.gpu_ecc_uncorrected': ('FAIL', 2), 'health.gpu_xid': ('FAIL', 1),
        'health.gpu_row_remap_pending': ('FAIL', 1), 'health.gpu_nvlink_crc': ('WARN', 150),
        'health.gpu_nvlink_recovery': ('FAIL', 1), 'health.ib_link_downed': ('FAIL', 1),
        'health.ib_symbol_error': ('WARN', 45), 'health.pcie_aer_correctable': ('WARN', 12),
        'health.pcie_aer_nonfatal': ('FAIL', 1), 'health.pcie_aer_fatal': ('PASS', 0)}
for rid, (outcome, value) in want.items():
    assert (rows[rid]['outcome'], rows[rid]['value']) == (outcome, value), (rid, rows[rid])
h = sys.argv[2]
g0 = h + '/gpu0[GPU-6d8a3b2e-1f4c-7a90-b2d1-0c5e8f3a4b01]@0000:17:00.0'
assert rows['health.gpu_ecc_uncorrected']['worst_item'] == g0
assert rows['health.gpu_xid']['worst_item'] == g0
assert rows['health.ib_symbol_error']['worst_item'] == h + '/nic[mlx5_1/1]'
assert rows['health.pcie_aer_nonfatal']['worst_item'] == h + '/pci[0000:9a:00.0]/mlx5_1'
assert r['exit_code'] == 1
" "$TMP/faulty/report.json" "$HOST"
ok "faulty run: FAIL/WARN rows name the GPU, port and PCIe device"

# 3. `report` on the run directory renders the rows with their evidence.
expect_rc 1 "$BIN" report "$TMP/faulty"
expect_out "health.gpu_ecc_uncorrected +FAIL +2"
MD=$TMP/faulty/report.md
grep -qF -- '- `health.gpu_ecc_uncorrected` FAIL: ' "$MD" || fail "report.md lacks the ECC finding"
grep -Eq "2 on $G0 \(above 0\): volatile 0 -> 2, aggregate 5 -> 7" "$MD" || { cat "$MD" >&2; fail "report.md lacks the ECC evidence"; }
grep -q "selects \`health gpu.ecc_uncorrected\`" "$MD" || fail "report.md does not say what the row selects"
grep -q "kernel log: NVRM: Xid (PCI:0000:17:00): 79" "$MD" || fail "report.md lacks the XID evidence"
grep -q "symbol_error 3 -> 48" "$MD" || fail "report.md lacks the symbol_error evidence"
grep -qF "Evidence: \`run.json env[$HOST].health: start " "$MD" || fail "report.md lacks the snapshot evidence"
ok "report: rows with evidence"
echo "$PASSES checks passed"
