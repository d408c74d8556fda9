#!/usr/bin/env bash
# The MPI backend of the collectives for real: mpirun -np 2 with float, half and bfloat16, and
# -np 4 with the ci sweep (float). Every record is checked against its own numbers: busbw and
# algbw recomputed from the size and the slowest rank's median time, the factor for n ranks, and
# #wrong = 0; the console shows nccl-tests' table from rank 0 only. A rank that corrupts its result
# makes the case failed through #wrong. Budget: about 60 s on 2 cores.
source "$(dirname "$0")/lib.sh"
[ "${CB_HAVE_MPI:-1}" = "1" ] || { echo "SKIP: built without MPI"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }

# A table any machine passes: all_reduce float busbw at the largest size > 0, every case's #wrong 0.
python3 - "$TMP/spec.json" <<'P'
import json, sys
rows = [{"id": "coll.all_reduce_busbw", "title": "all_reduce busbw", "source": "test",
         "severity": "fail", "select": {"benchmark": "collectives.all_reduce",
         "params": {"dtype": "float"}, "metric": "busbw"},
         "scope": "cluster", "aggregate": "max", "op": ">=", "value": 1e-9, "unit": "GB/s"}]
rows += [{"id": "coll.%s_wrong" % op, "title": op + " #wrong", "source": "test", "severity": "fail",
          "select": {"benchmark": "collectives." + op, "params": {}, "metric": "wrong"},
          "scope": "cluster", "aggregate": "max", "op": "==", "value": 0, "unit": "count"}
         for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                    "alltoall", "sendrecv")]
json.dump({"schema": "clusterbench.spec/1", "name": "coll-test", "requirements": rows},
          open(sys.argv[1], "w"))
P

# check DIR RANKS: every record against its own numbers; prints the number of ok records.
check='
import json, math, sys
d, n = sys.argv[1], int(sys.argv[2])
factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
          "alltoall": (n - 1) / n, "broadcast": 1, "reduce": 1, "sendrecv": 1}
size = {"float": 4, "half": 2, "bfloat16": 2}
recs = [json.loads(l) for l in open(d + "/records.jsonl")]
run = json.load(open(d + "/run.json"))
assert len(recs) == len(run["plan"]), (len(recs), len(run["plan"]))
ok = 0
for r in recs:
    op = r["benchmark"].split(".")[1]
    p = r["params"]
    es = size[p["dtype"]]
    count = p["bytes"] // es
    gathering = op in ("all_gather", "reduce_scatter", "alltoall")
    # alltoall: the per-peer block is whole 16-byte units (as nccl-tests alltoall.cu).
    block = count // n // (16 // es) * (16 // es) if op == "alltoall" else count // n
    if gathering and block == 0:
        assert r["status"] == "waived" and "less than one" in r["message"], r
        continue
    assert r["status"] == "ok", r
    assert r["scope"] == {"kind": "cluster"} and r["combine"] == "max", r
    m = {x["name"]: x for x in r["metrics"]}
    # nccl-tests: S = max(send, recv) bytes; gathering ops use whole blocks of count / n.
    s = block * n * es if gathering else count * es
    assert r["extra"]["size_bytes"] == s and r["extra"]["ranks"] == n, (r["extra"], s)
    assert abs(r["extra"]["busbw_factor"] - factor[op]) < 1e-12, r["extra"]
    t = r["time"]["median"]
    assert t > 0 and r["time"]["n"] >= 1 and r["time"]["min"] <= t <= r["time"]["max"], r["time"]
    algbw = s / t / 1e9
    assert math.isclose(m["algbw"]["value"], algbw, rel_tol=1e-9), (m["algbw"], algbw)
    assert math.isclose(m["busbw"]["value"], algbw * factor[op], rel_tol=1e-9), (m["busbw"], algbw)
    assert m["busbw"]["unit"] == "GB/s" and m["time"]["unit"] == "us", m
    assert math.isclose(m["time"]["value"], t * 1e6, rel_tol=1e-9)
    assert m["wrong"]["value"] == 0, m
    if op == "sendrecv":
        assert "busbw_inplace" not in m and "not measured" in r["extra"]["inplace"], r["extra"]
    else:
        ti = r["extra"]["time_inplace"]["median"]
        assert math.isclose(m["busbw_inplace"]["value"], s / ti / 1e9 * factor[op], rel_tol=1e-9)
        assert m["wrong_inplace"]["value"] == 0, m
    assert r["extra"]["redop"] == ("sum" if op in ("all_reduce", "reduce_scatter", "reduce") else "none")
    assert r["extra"]["root"] == (0 if op in ("broadcast", "reduce") else -1)
    ok += 1
print(ok)
'

# Google Benchmark colours its console lines; the table is read without the escapes.
plain() { sed -i 's/\x1b\[[0-9;]*m//g' "$TMP/out"; }

# np 2: all seven collectives, three types, 64 B and 64 KiB, 0.02 s of timing per path.
expect_rc 0 "${MPIRUN[@]}" -np 2 "$CB_BIN" run --suite ci --spec "$TMP/spec.json" \
  --only 'collectives.*' --set collectives.dtypes=float,half,bfloat16 \
  --set collectives.minbytes=64 --set collectives.maxbytes=64K --set collectives.stepfactor=1024 \
  --set collectives.min_time=0.02 --out "$TMP/np2"
plain
n=$(python3 -c "$check" "$TMP/np2" 2) || fail "np 2 records: $(python3 -c "$check" "$TMP/np2" 2 2>&1 | tail -3)"
[ "$n" -eq 42 ] || fail "np 2: expected 7 collectives x 3 types x 2 sizes = 42 ok records, got $n"
expect_out "# collectives.all_reduce, mpi, 2 ranks"
expect_out "^ +65536 +16384 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$"
expect_out "^ +65536 +32768 +bfloat16 +sum +-1 "
expect_out "^ +65536 +32768 +half +none +0 +[0-9.]+ "
expect_out "^ +64 +32 +half +none +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +n/a +n/a +n/a +n/a$"
[ "$(grep -c '^# collectives.all_reduce, mpi' "$TMP/out")" -eq 1 ] || fail "table must print once, from rank 0"
py "
names = [b['name'] for b in json.load(open(sys.argv[1] + '/gbench.json'))['benchmarks']]
assert len(names) == len(set(names)) and any('/in-place/' in n for n in names), names[:4]
" "$TMP/np2"
# Each table closes as nccl-tests' does: out-of-bounds count, then the mean of the busbw columns.
py "
import re
text = open(sys.argv[1]).read()
tables = re.findall(r'^# (collectives\.\w+), mpi, 2 ranks\n(.*?)^# Out of bounds values : (\d+) (OK|FAILED)\n# Avg bus bandwidth    : ([0-9.e+-]+) \n#\n', text, re.S | re.M)
assert len(tables) == 7, [t[0] for t in tables]
for name, body, wrong, word, avg in tables:
    rows = [l.split() for l in body.splitlines() if l.strip() and not l.startswith('#')]
    assert len(rows) == 6, (name, rows)  # 3 types x 2 sizes
    bw = [float(r[7]) for r in rows] + [float(r[11]) for r in rows if r[11] != 'n/a']
    mean = sum(bw) / len(bw)
    assert (wrong, word) == ('0', 'OK'), (name, wrong, word)
    assert abs(float(avg) - mean) <= 0.006 + 1e-3 * mean, (name, avg, mean)  # rows show 2 decimals
" "$TMP/out"
ok "mpirun -np 2: 42 cases of float/half/bfloat16, busbw = S/t x factor, #wrong 0, each table closed by its Avg bus bandwidth"

# np 4: the ci sweep (8 B .. 2 MiB x 8, float); 8 B has no whole float per rank in gathering ops.
expect_rc 0 "${MPIRUN[@]}" -np 4 "$CB_BIN" run --suite ci --spec "$TMP/spec.json" \
  --only 'collectives.*' --out "$TMP/np4"
plain
n=$(python3 -c "$check" "$TMP/np4" 4) || fail "np 4 records: $(python3 -c "$check" "$TMP/np4" 4 2>&1 | tail -3)"
[ "$n" -eq 46 ] || fail "np 4: expected 7 x 7 - 3 waived = 46 ok records, got $n"
expect_out "^ +2097152 +524288 +float +sum +-1 "
expect_out "coll.all_reduce_busbw +PASS"
ok "mpirun -np 4: ci sweep, 46 ok and 3 waived cases, busbw factors of 4 ranks"

# A rank that corrupts one element of each result it checks: #wrong catches it, the case fails.
expect_rc 1 "${MPIRUN[@]}" -np 2 "$CB_BIN" run --suite ci --spec "$TMP/spec.json" \
  --only collectives.all_reduce --set collectives.fault=wrong:1 --set collectives.maxbytes=512 \
  --set collectives.stepfactor=64 --set collectives.min_time=0.02 --out "$TMP/wrong"
plain
expect_out "^ +8 +2 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +1$"
expect_out "coll.all_reduce_busbw +FAIL"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert [r['params']['bytes'] for r in recs] == [8, 512], recs
for r in recs:
    assert r['status'] == 'failed', r
    assert '#wrong = 1 out-of-place, 1 in-place, summed over 2 ranks' in r['message'], r['message']
" "$TMP/wrong"
ok "a corrupted result on rank 1: #wrong = 1 per path, both cases failed, exit 1"
# The NCCL backend follows the GPU disposition: on a node without GPUs its cases are waived with
# the reason, the MPI cases beside them still run, and the path preset is in the params.
py "
spec = json.load(open(sys.argv[1]))
spec['requirements'] = [r for r in spec['requirements'] if r['id'] == 'coll.all_reduce_wrong']
json.dump(spec, open(sys.argv[2], 'w'))
" "$TMP/spec.json" "$TMP/spec1.json"
expect_rc 0 "${MPIRUN[@]}" -np 2 "$CB_BIN" run --suite ci --spec "$TMP/spec1.json" \
  --only collectives.all_reduce --set collectives.backends=mpi,nccl --set collectives.path=network --set collectives.maxbytes=64 \
  --set collectives.min_time=0.01 --set collectives.all_reduce.reference=true --out "$TMP/nccl"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
mpi = [r for r in recs if r['params']['backend'] == 'mpi']
nccl = [r for r in recs if r['params']['backend'] == 'nccl']
assert [r['status'] for r in mpi] == ['ok', 'ok'], mpi
for r in mpi:  # the plain MPI_Allreduce loop of the same run: ratio = its median time / ours
    ref, x = r['extra']['reference'], r['extra']
    # No case of this run calls MPI from a second thread: MPI starts at MPI_THREAD_SINGLE,
    # where OpenMPI takes no locks.
    assert x['mpi_thread_level'] == 'single', x
    assert ref['batches'] > 0 and 'plain MPI_Allreduce' in ref['loop'], ref
    # One plain batch after each timed out-of-place batch: as many as the record's time samples.
    assert ref['batches'] == r['time']['n'] and 'after each timed' in ref['pairing'], (ref, r['time'])
    assert abs(ref['ratio'] - ref['time_median'] / r['time']['median']) <= 1e-9 * ref['ratio'], (ref, r['time'])
    busbw = x['size_bytes'] / ref['time_median'] / 1e9 * x['busbw_factor']
    assert abs(ref['busbw'] - busbw) <= 1e-9 * busbw, (ref, busbw)
assert [r['params']['bytes'] for r in nccl] == [8, 64], nccl
for r in nccl:
    assert r['status'] == 'waived' and r['params']['path'] == 'network', r
    assert 'no NVIDIA GPU' in r['message'] or 'built' in r['message'], r['message']
" "$TMP/nccl"
expect_rc 2 "$CB_BIN" run --suite ci --only collectives.all_reduce --set collectives.path=pcie \
  --out "$TMP/badpath"
expect_out "unknown path 'pcie' \(nvlink, network, internode\)"
expect_rc 2 "$CB_BIN" run --suite ci --only collectives.all_reduce --set collectives.reference=yes \
  --out "$TMP/badref"
expect_out "--set collectives.reference: unknown value 'yes' \\(false, true\\)"
ok "NCCL cases waived without GPUs, MPI cases beside them ok with the plain loop's reference; a bad path preset or reference is exit 2"
echo "$PASSES passed, 0 failed"
