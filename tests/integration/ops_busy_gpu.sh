#!/usr/bin/env bash
# Busy GPUs: with other processes on the GPUs (the fake NVML lists them: a compute process with a
# name and memory, and a graphics process NVML has no name for), a run with GPU cases refuses
# with exit 2 and names each process (host, GPU, pid, name, memory) before writing anything.
# --allow-shared-gpus runs, and the GPU records say so. A run without GPU cases is not refused.
# Uses the tests' binary (test.gpu_probe, a GPU case). Budget: ~10 s.
source "$(dirname "$0")/lib.sh"
: "${CB_TESTBIN:?}"
BIN=$CB_TESTBIN
ROOT=$CB_FIXTURES/fsroot/two-socket   # one NVIDIA GPU on its PCI bus
FAKE_NVML=${CB_BINARY_DIR:-}/tests/fake_nvml/libnvidia-ml.so
FAKE_PLUGIN=${CB_BINARY_DIR:-}/tests/fake_plugin/libfake_gpu_plugin.so
[ "${CB_HAVE_NVML:-1}" = "1" ] && [ -f "$FAKE_NVML" ] || { echo "SKIP: no fake NVML in this build"; exit 77; }

# Two real processes of "another job"; the fake NVML puts them on GPUs 0 and 3.
sleep 300 &
other1=$!
sleep 300 &
other2=$!
trap 'kill $other1 $other2 2>/dev/null; rm -rf "$TMP"' EXIT
python3 - "$CB_FIXTURES/nvml/h100x8.json" "$TMP/busy.json" "$other1" "$other2" <<'P'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["gpus"][0]["processes"] = [{"pid": int(sys.argv[3]), "name": "python3",
                                "used_memory_bytes": 10 * 2**30 + 2**29}]
doc["gpus"][3]["processes"] = [{"pid": int(sys.argv[4]), "type": "graphics"}]
json.dump(doc, open(sys.argv[2], "w"))
P
export CLUSTERBENCH_NVML_LIB=$FAKE_NVML CLUSTERBENCH_GPU_PLUGIN=$FAKE_PLUGIN

# 1. Refused: exit 2, every process named, nothing written.
FAKE_NVML_JSON=$TMP/busy.json expect_rc 2 "$BIN" run --suite ci --only test.gpu_probe \
  --fs-root "$ROOT" --out "$TMP/a"
expect_out "refusing to run GPU cases: other processes use the GPUs"
expect_out "GPU 0 \(GPU-[0-9a-f-]+\): pid $other1 python3, compute, 10.50 GiB"
# No name from NVML: the name comes from /proc/PID/comm; NVML gave no memory figure.
expect_out "GPU 3 \(GPU-[0-9a-f-]+\): pid $other2 sleep, graphics, memory unknown"
expect_out "--allow-shared-gpus"
[ ! -e "$TMP/a" ] || fail "a refused run created its directory"
ok "busy GPUs: refused with exit 2, processes named (pid, name, GPU, memory)"

# 2. --dry-run is not refused; it notes the processes.
FAKE_NVML_JSON=$TMP/busy.json expect_rc 0 "$BIN" run --suite ci --only test.gpu_probe \
  --fs-root "$ROOT" --dry-run
expect_out "note: other processes use the GPUs"
expect_out "pid $other1 python3"
ok "--dry-run notes the processes"

# 3. --allow-shared-gpus: the run goes on (the fake plugin fails the case: exit 1) and the GPU
#    records and run.json name the processes.
FAKE_NVML_JSON=$TMP/busy.json expect_rc 1 "$BIN" run --suite ci --only test.gpu_probe \
  --fs-root "$ROOT" --allow-shared-gpus --out "$TMP/b"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
probe = [r for r in recs if r['benchmark'] == 'test.gpu_probe']
assert probe, recs
for r in probe:
    sg = r['extra']['shared_gpus']
    assert sg['allowed'] == '--allow-shared-gpus', sg
    got = sorted((p['gpu_index'], p['pid'], p['name'], p['type'], p['used_bytes']) for p in sg['processes'])
    assert got == [(0, int(sys.argv[2]), 'python3', 'compute', 10 * 2**30 + 2**29),
                   (3, int(sys.argv[3]), 'sleep', 'graphics', None)], got
run = json.load(open(sys.argv[1] + '/run.json'))
assert sorted(p['pid'] for p in run['shared_gpus']) == sorted([int(sys.argv[2]), int(sys.argv[3])]), run['shared_gpus']
" "$TMP/b" "$other1" "$other2"
ok "--allow-shared-gpus: records carry extra.shared_gpus with the processes"

# 4. No GPU case selected: busy GPUs do not matter.
FAKE_NVML_JSON=$TMP/busy.json "$BIN" run --suite ci --only test.quick --fs-root "$ROOT" \
  --spec "$CB_FIXTURES/specs/gpu-probe.json" --out "$TMP/c" >"$TMP/out" 2>&1
rc=$?
[ "$rc" -ne 2 ] || { cat "$TMP/out"; fail "a run without GPU cases was refused"; }
ok "no GPU cases: not refused (exit $rc)"

# 5. Idle GPUs: no refusal, no shared_gpus field.
FAKE_NVML_JSON=$CB_FIXTURES/nvml/h100x8.json expect_rc 1 "$BIN" run --suite ci --only test.gpu_probe \
  --fs-root "$ROOT" --out "$TMP/d"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert all('shared_gpus' not in r.get('extra', {}) for r in recs), recs
assert 'shared_gpus' not in json.load(open(sys.argv[1] + '/run.json'))
" "$TMP/d"
ok "idle GPUs: runs, records without shared_gpus"
echo "$PASSES passed, 0 failed"
