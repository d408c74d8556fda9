#!/usr/bin/env bash
# io.fio for real (fio 3.x on a temporary directory, ci sizes: 5 runs of 300 ms + 200 ms ramp per
# profile, 16 MiB files): every profile gives an ok record whose metrics are the medians of its 5
# runs, whose last repetition equals the numbers in fio's own JSON of the last run (kept in the
# record), the evidence is there, and the scratch directory is left empty. Budget: about 40 s.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "fio not installed"; exit 77; }
SCR=$TMP/scratch
mkdir -p "$SCR" "$TMP/tmpdir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# run_cb CMD...: a run that completed; its verdict (0, 1 or 4) depends on this machine's spec rows.
run_cb() {
  "$@" >"$TMP/out" 2>&1
  local rc=$?
  case $rc in 0 | 1 | 4) ;; *) cat "$TMP/out" >&2; fail "exit $rc: $*" ;; esac
}
TMPDIR=$TMP/tmpdir run_cb "$CB_BIN" run --suite ci --only io.fio --set io.fio.scratch="$SCR" --out "$TMP/run"
[ -z "$(ls -A "$SCR")" ] || fail "scratch not empty after the run: $(ls -A "$SCR")"
# (OpenMPI keeps its own session directory there; ours are named cb-*.)
[ -z "$(ls -A "$TMP/tmpdir" | grep '^cb-')" ] || fail "capture directory left in TMPDIR: $(ls -A "$TMP/tmpdir")"
ok "scratch and TMPDIR empty after the run"
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
assert len(recs) == 6, len(recs)
want_dirs = {'seq_read': ['read'], 'seq_write': ['write'], 'rand_read': ['read'],
             'rand_write': ['write'], 'mixed_7030': ['read', 'write'], 'checkpoint_write': ['write']}
for r in recs:
    p = r['params']['profile']
    assert r['status'] == 'ok', r
    x = r['extra']
    assert x['fio_version'].startswith('fio-3'), x['fio_version']
    assert x['direct'] is True and 'direct_fallback' not in x
    assert x['job_options']['global']['ioengine'] == 'libaio'
    assert x['job_options']['global']['direct'] == '1'
    assert x['job_options']['global']['time_based'] == '1'
    assert x['fio_env']['CB_FIO_RUNTIME'] == '300ms' and x['fio_env']['CB_FIO_SIZE'] == str(16 << 20)
    assert x['repeat'] == 5 and x['fio_exit_code'] == [0] * 5, (x['repeat'], x['fio_exit_code'])
    assert '[' + p + ']' in x['job_file_text']
    m = {k['name']: k for k in r['metrics']}
    for k in r['metrics']:
        reps = sorted(k['reps'])
        assert len(reps) == 5 and k['value'] == reps[2], k  # the median of the 5 runs
    # The last repetition is the last run, whose whole JSON the record keeps.
    m = {k: dict(v, value=v['reps'][-1]) for k, v in m.items()}
    jobs = x['fio_json']['jobs']
    assert len(jobs) == 1  # group_reporting
    for d in ['read', 'write']:
        fj = jobs[0][d]
        if d not in want_dirs[p]:
            assert d + '_bw' not in m, (p, d)
            continue
        # docs/metrics.md fio: GB/s = bw_bytes / 1e9; IOPS as fio; clat percentiles ns -> us.
        assert abs(m[d + '_bw']['value'] - fj['bw_bytes'] / 1e9) <= 1e-12 * max(1, fj['bw_bytes']), (p, d)
        assert m[d + '_bw']['unit'] == 'GB/s' and m[d + '_bw']['value'] > 0
        assert m[d + '_iops']['value'] == fj['iops'] and m[d + '_iops']['unit'] == 'IOPS'
        pct = fj['clat_ns']['percentile']
        for name, key in [('p50', '50.000000'), ('p99', '99.000000'), ('p999', '99.900000')]:
            mm = m[d + '_clat_' + name]
            assert abs(mm['value'] - pct[key] / 1000.0) < 1e-9, (p, d, name)
            assert mm['unit'] == 'us' and mm['higher_is_better'] is False
    if p == 'checkpoint_write':
        assert jobs[0]['job options']['end_fsync'] == '1'
    if p == 'mixed_7030':
        assert jobs[0]['job options']['rwmixread'] == '70'
print({r['params']['profile']: [(k['name'], round(k['value'], 3)) for k in r['metrics'] if k['unit'] != 'us'] for r in recs})
" "$TMP/run"
ok "records equal fio's JSON for all 6 profiles"

# extra.scratch_device against what the kernel says of the scratch directory, read here without
# clusterbench: its mount (st_dev = mountinfo's major:minor), /sys/dev/block, a partition's
# parent, dm/md slaves, queue/rotational and the device's subsystem.
py "
scr, run = sys.argv[1], sys.argv[2]
recs = [json.loads(l) for l in open(run + '/records.jsonl')]
st = os.stat(scr)
dev = '%d:%d' % (os.major(st.st_dev), os.minor(st.st_dev))
mounts = [l.split() for l in open('/proc/self/mountinfo')]
best = max((m for m in mounts if scr == m[4] or scr.startswith(m[4].rstrip('/') + '/')),
           key=lambda m: len(m[4]))
def disks(d):
    if os.path.exists(d + '/partition'):
        d = os.path.dirname(d)
    sl = sorted(os.listdir(d + '/slaves')) if os.path.isdir(d + '/slaves') else []
    if sl:
        return [x for s in sl for x in disks(os.path.realpath(d + '/slaves/' + s))]
    return [d]
want = []
if os.path.exists('/sys/dev/block/' + best[2]):
    want = disks(os.path.realpath('/sys/dev/block/' + best[2]))
for r in recs:
    x = r['extra']['scratch_device']
    assert x['path'] == scr, x
    assert x['mount_point'] == best[4] and x['dev'] == best[2], (x, best)
    assert x['fs_type'] == best[best.index('-') + 1], x
    if best[2] == dev and want:  # not btrfs: the mount's number is st_dev
        names = [os.path.basename(d) for d in want]
        assert [d['name'] for d in x['disks']] == names, (x, names)
        for d, path in zip(x['disks'], want):
            rot = open(path + '/queue/rotational').read().strip()
            assert d['rotational'] == (rot == '1'), (d, rot)
            link = path + '/device/subsystem'
            sub = os.path.basename(os.path.realpath(link)) if os.path.exists(link) else None
            assert d['nvme'] == (sub in ('nvme', 'nvme-subsystem')), (d, sub)
        assert x['summary'].startswith(names[0] + ' ('), x['summary']
    assert x['local_nvme'] == (x['nvme'] is True and x['transport'] == 'pcie'), x
print(recs[0]['extra']['scratch_device']['summary'])
" "$SCR" "$TMP/run"
ok "extra.scratch_device names the device under the scratch directory, as /sys says"

# extra.disk_load: the scratch's disk (its one whole disk, else the mounted device) and the bytes
# fio moved by getrusage, at least what fio's own JSON of the last run says it read and wrote
# (the sum covers all 5 runs, their ramps and layouts); the other bytes are the difference.
py "
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
for r in recs:
    x, d = r['extra']['scratch_device'], r['extra']['disk_load']
    want = x['disks'][0]['name'] if len(x['disks']) == 1 else x['block_device']
    if want is None:
        assert d['disk'] is None and d['reason'], d
        continue
    assert d['disk'] == want, (d, x)
    if 'reason' in d:
        continue
    moved = sum(j['read']['io_bytes'] + j['write']['io_bytes'] for j in r['extra']['fio_json']['jobs'])
    assert d['fio_bytes'] >= moved > 0, (d, moved)
    assert d['other_bytes'] == max(0, d['disk_bytes'] - d['fio_bytes']), d
    share = min(1.0, d['fio_bytes'] / d['disk_bytes']) if d['disk_bytes'] else 1.0
    assert abs(d['fio_share'] - share) < 1e-9, d
print(recs[0]['extra']['disk_load'])
" "$TMP/run"
ok "extra.disk_load counts the scratch disk's bytes and fio's own"

# The storage rows: judged on a local NVMe scratch, naming it; MISSING on anything else, saying
# where fio ran and how to point it at NVMe. report.md says so too.
py "
run = sys.argv[1]
rep = json.load(open(run + '/report.json'))
md = open(run + '/report.md').read()
x = json.loads(open(run + '/records.jsonl').readline())['extra']['scratch_device']
rows = {r['id']: r for r in rep['rows']}
for rid in ['storage.nvme_seq_read', 'storage.nvme_seq_write', 'storage.nvme_rand_read_iops']:
    row = rows[rid]
    if x['local_nvme']:
        assert row['outcome'] in ('PASS', 'FAIL', 'WARN'), row
        assert row['message'].endswith('measured on ' + x['summary']), row['message']
        assert 'measured on ' + x['summary'] in md
    else:
        assert row['outcome'] == 'MISSING', row
        want = 'not judged: fio ran on ' + sys.argv[2] + ': ' + x['summary'] + '; that is not a local NVMe drive'
        assert want in row['message'], (row['message'], want)
        assert 'pass --set io.fio.scratch=/path/on/nvme' in row['message'], row['message']
        assert want in md, 'report.md lacks: ' + want
print(rows['storage.nvme_seq_read']['outcome'], rows['storage.nvme_seq_read']['message'])
" "$TMP/run" "$SCR"
ok "the storage rows name the device fio measured, or say why they are not judged"
echo "PASS ($PASSES checks)"
