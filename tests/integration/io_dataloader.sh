#!/usr/bin/env bash
# io.dataloader end to end: `clusterbench io make-dataset` writes a dataset; the benchmark reads it
# (and only reads it) with a worker sweep; samples/s, GB/s and AU are recomputed from each record;
# a generated dataset with O_DIRECT and a cold cache leaves the scratch directory empty; a corrupted
# sample fails the case with the file's name. Budget: about 15 s.
source "$(dirname "$0")/lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run_cb() {  # a run that completed; its verdict (0, 1 or 4) depends on this machine's spec rows
  "$@" >"$TMP/out" 2>&1
  local rc=$?
  case $rc in 0 | 1 | 4) ;; *) cat "$TMP/out" >&2; fail "exit $rc: $*" ;; esac
}

expect_rc 0 "$CB_BIN" io make-dataset "$TMP/ds" --count 256 --size 8K --size-max 24K
expect_out "^wrote 256 sample files, [0-9]+ B, to $TMP/ds$"
[ "$(ls "$TMP/ds" | wc -l)" -eq 256 ] || fail "make-dataset wrote $(ls "$TMP/ds" | wc -l) files"
expect_rc 2 "$CB_BIN" io make-dataset "$TMP/ds" --count 1 --size 8K
expect_out "already holds samples"
ok "make-dataset"
before=$(cd "$TMP/ds" && find . -type f -printf '%p %s %T@\n' | sort | sha256sum)

run_cb "$CB_BIN" run --suite ci --only io.dataloader --set io.dataloader.dataset="$TMP/ds" \
  --set io.dataloader.workers=1,2,4 --set io.dataloader.compute_ms=1 --out "$TMP/run"
after=$(cd "$TMP/ds" && find . -type f -printf '%p %s %T@\n' | sort | sha256sum)
[ "$before" = "$after" ] || fail "the benchmark changed the dataset it was pointed at"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert [r['params']['workers'] for r in recs] == [1, 2, 4], [r['params'] for r in recs]
sizes = [os.path.getsize(os.path.join(sys.argv[2], f)) for f in os.listdir(sys.argv[2])]
for r in recs:
    assert r['status'] == 'ok', r
    x, t = r['extra'], r['time']
    m = {k['name']: k for k in r['metrics']}
    assert x['batch_size'] == 32 and x['prefetch'] == 2 and x['workers'] == r['params']['workers']
    assert x['in_order'] is True
    assert x['dataset_generated'] is False and x['dataset_files'] == 256 and x['verify'] == 'full'
    assert x['pinned'] is False and 'no NVIDIA GPU' in x['pinned_note']
    assert x['batches_verified'] == x['batches_consumed'] > 0
    # samples/s = steps_per_op x batch / median seconds per op (docs/metrics.md dataloader).
    sps = x['steps_per_op'] * 32 / t['median']
    assert abs(m['samples_per_s']['value'] - sps) <= 1e-9 * sps, (m['samples_per_s'], sps)
    assert m['samples_per_s']['unit'] == 'samples/s'
    # Mean bytes per sample within the file sizes; GB/s = samples/s x bytes/sample / 1e9.
    assert min(sizes) <= x['bytes_per_sample_mean'] <= max(sizes)
    assert x['bytes_per_sample_mean'] == x['bytes_consumed'] / x['samples_consumed']
    assert abs(m['bandwidth']['value'] - sps * x['bytes_per_sample_mean'] / 1e9) <= 1e-9 * m['bandwidth']['value']
    assert m['batch_wait_p50']['unit'] == 'us' and m['batch_wait_p50']['value'] <= m['batch_wait_p99']['value']
    # AU = compute time / wall time after the first step, in %.
    au = 100 * x['compute_seconds_after_first'] / x['wall_seconds_after_first']
    assert abs(m['accelerator_utilisation']['value'] - au) < 1e-9 and 0 < au <= 100, au
    print(r['params'], round(m['samples_per_s']['value']), 'samples/s', round(au, 1), '% AU')
" "$TMP/run" "$TMP/ds"
ok "worker sweep on an existing dataset: numbers recomputed from the records"

mkdir -p "$TMP/scratch"
run_cb "$CB_BIN" run --suite ci --only io.dataloader --set io.dataloader.workers=2 \
  --set io.dataloader.direct=true --set io.dataloader.cache=cold --set io.dataloader.count=128 \
  --set io.dataloader.in_order=false --set io.dataloader.scratch="$TMP/scratch" --out "$TMP/cold"
[ -z "$(ls -A "$TMP/scratch")" ] || fail "generated dataset left behind: $(ls -A "$TMP/scratch")"
py "
r = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')][0]
assert r['status'] == 'ok', r
x = r['extra']
assert x['direct'] is True and x['cache'] == 'cold' and x['dataset_generated'] is True
assert x['dataset_files'] == 128 and x['bytes_per_sample_mean'] == 16384
assert x['in_order'] is False and x['batches_verified'] == x['batches_consumed'] > 0
" "$TMP/cold"
ok "generated dataset, O_DIRECT, cold cache, out of order; removed afterwards"
expect_rc 2 "$CB_BIN" run --suite ci --only io.dataloader --set io.dataloader.in_order=maybe \
  --set io.dataloader.dataset="$TMP/ds" --out "$TMP/badorder"
expect_out "io.dataloader.in_order: unknown value 'maybe' \\(true, false\\)"
expect_rc 2 "$CB_BIN" run --suite ci --only io.dataloader --set io.dataloader.direct=yes \
  --set io.dataloader.dataset="$TMP/ds" --out "$TMP/baddirect"
expect_out "io.dataloader.direct: unknown value 'yes' \\(false, true\\)"
expect_rc 2 "$CB_BIN" run --suite ci --only io.dataloader --set io.dataloader.batch=0 \
  --set io.dataloader.dataset="$TMP/ds" --out "$TMP/badbatch"
expect_out "io.dataloader.batch: must be at least 1"
ok "in_order=maybe, direct=yes, batch=0 refused before anything runs (exit 2)"

cp -r "$TMP/ds" "$TMP/bad"
printf '\x7f' | dd of="$TMP/bad/sample_00000007.bin" bs=1 seek=200 conv=notrunc status=none
run_cb "$CB_BIN" run --suite ci --only io.dataloader --set io.dataloader.dataset="$TMP/bad" \
  --set io.dataloader.workers=2 --out "$TMP/badrun"
py "
r = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')][0]
assert r['status'] == 'failed' and 'sample_00000007.bin: payload checksum does not match' in r['message'], r
" "$TMP/badrun"
ok "a corrupted sample fails the case"
echo "PASS ($PASSES checks)"
