# check_run DIR (sourced after lib.sh): a `run --suite ci --only compute.memory_bandwidth` run
# directory of one process is complete and its report rows agree with the records they cite.
check_run() {  # check_run DIR: files present, report rows match records
  local dir=$1
  for f in run.json records.jsonl report.md report.json junit.xml gbench.json; do
    [ -s "$dir/$f" ] || fail "$dir/$f missing or empty"
  done
  py "
run = json.load(open(sys.argv[1] + '/run.json'))
recs = [json.loads(l) for l in open(sys.argv[1] + '/records.jsonl')]
rep = json.load(open(sys.argv[1] + '/report.json'))
assert run['schema'] == 'clusterbench.run/1' and run['world_size'] == 1, run['world_size']
assert run['exit_code'] == 1 and not run['aborted'] and run['finished_at']
assert len(run['plan']) == 4 and len(recs) == 4, (len(run['plan']), len(recs))
kernels = {r['params']['kernel']: r for r in recs}
assert set(kernels) == {'copy', 'scale', 'add', 'triad'}
for k, r in kernels.items():
    assert r['status'] == 'ok', r
    m = {x['name']: x for x in r['metrics']}
    bpe = {'copy': 16, 'scale': 16, 'add': 24, 'triad': 24}[k]
    n = r['extra']['array_bytes'] // 8
    # bandwidth = bytes per element x elements / median time / 1e9 (docs/metrics.md, STREAM)
    want = bpe * n / r['time']['median'] / 1e9
    assert abs(m['bandwidth']['value'] - want) <= 1e-9 * want, (m, want)
    assert m['bandwidth']['unit'] == 'GB/s' and r['scope']['kind'] == 'node'
    assert r['extra']['validation_relative_error'] <= 1e-13
    assert r['case_key'] == 'compute.memory_bandwidth|{\"kernel\":\"%s\"}|%s' % (k, r['scope']['host'])
rows = {x['id']: x for x in rep['rows']}
triad = rows['host.memory_bandwidth_triad']
assert abs(triad['value'] - {x['name']: x['value'] for x in kernels['triad']['metrics']}['bandwidth']) < 1e-9
assert triad['evidence'] == [kernels['triad']['case_key']], triad['evidence']
cores = rows['host.cpu_cores']
assert cores['outcome'] == 'FAIL' and cores['value'] == run['env'][0]['cpu']['physical_cores']
assert rep['exit_code'] == 1 and rep['verdict'] == 'FAIL'
" "$dir"
  grep -q '<testcase' "$dir/junit.xml" || fail "junit.xml has no testcase"
  grep -q 'host.cpu_cores' "$dir/report.md" || fail "report.md lacks the cpu row"
}
