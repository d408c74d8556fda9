#!/usr/bin/env bash
# The Debian package installs and runs on a bare Debian 12 (issue 22): in a chroot of the cached
# minbase root (lib.sh bare_root), `apt-get install ./clusterbench_*.deb` pulls what it needs
# from the Debian mirror, then
#  - `clusterbench run --suite ci` completes with its report, exit 0, 1 or 4, judged by the
#    installed spec table and running the installed fio profiles (no source tree there);
#  - the GPU plugin is looked for in /usr/lib/clusterbench (a GPU on the fake PCI bus, driver 535:
#    the CUDA 12 plugin);
#  - --specs-dir and CLUSTERBENCH_SPECS_DIR choose another directory of spec tables.
# Needs the package_deb fixture and the network (apt). Budget: about 1.5 min.
source "$(dirname "$0")/lib.sh"
: "${CB_BINARY_DIR:?}"
debs=("$CB_BINARY_DIR"/package/clusterbench_*_amd64.deb)
[ -f "${debs[0]}" ] || fail "no package in $CB_BINARY_DIR/package (the package_deb test makes it)"
bare_root
cp /etc/resolv.conf "$R/etc/resolv.conf"
cp "${debs[0]}" "$R/root/"
D=/root/$(basename "${debs[0]}")
expect_rc 1 in_root "command -v clusterbench mpirun fio"  # none of them in the bare root
expect_rc 0 in_root "timeout 240 apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
  timeout 240 apt-get install -y -qq --no-install-recommends $D"
expect_rc 0 in_root "command -v clusterbench mpirun fio"
expect_out "^/usr/bin/clusterbench$"
ok "apt-get install $(basename "$D") into a bare Debian 12: clusterbench, mpirun and fio there"

in_root "cd /root && timeout 300 clusterbench run --suite ci --out /root/r" >"$TMP/out" 2>&1
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] || [ "$rc" = 4 ] || { cat "$TMP/out" >&2; fail "run --suite ci: exit $rc"; }
expect_out "^report: /root/r/report.md$"
[ -s "$R/root/r/report.md" ] || fail "no report.md"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['spec']['path'].startswith('/usr/share/clusterbench/specs/'), run['spec']
assert run['exit_code'] == $rc and not run['aborted'], run
rep = json.load(open(d + '/report.json'))
assert rep['spec']['path'] == run['spec']['path'] and rep['exit_code'] == $rc, rep['spec']
jobs = {r['extra']['job_file'] for l in open(d + '/records.jsonl')
        if (r := json.loads(l))['benchmark'] == 'io.fio' and 'job_file' in r.get('extra', {})}
assert jobs and all(j.startswith('/usr/share/clusterbench/profiles/') for j in jobs), jobs
" "$R/root/r"
ok "run --suite ci in the chroot: exit $rc, report written, installed spec table and fio profiles"

# A GPU on the PCI bus (fixture tree and the tests' fake NVML): the loader looks in lib/clusterbench.
mkdir -p "$R/root/fx"
cp -r "$CB_FIXTURES/fsroot/two-socket" "$CB_FIXTURES/nvml/h100x8.json" "$R/root/fx/"
cp "$CB_BINARY_DIR/tests/fake_nvml/libnvidia-ml.so" "$R/root/fx/" || fail "fake NVML not built"
in_root "cd /root && CLUSTERBENCH_NVML_LIB=/root/fx/libnvidia-ml.so FAKE_NVML_JSON=/root/fx/h100x8.json \
  timeout 120 clusterbench run --suite ci --only compute.gemm --set compute.gemm.backends=cublaslt \
  --set compute.gemm.dtypes=fp16 --spec /usr/share/clusterbench/specs/gpu-node-base.json \
  --fs-root /root/fx/two-socket --out /root/gpu" >"$TMP/out" 2>&1
grep -o '"message":"[^"]*"' "$R/root/gpu/records.jsonl" >>"$TMP/out" 2>/dev/null
# The fake NVML says driver 535 (CUDA 12.2): the packaged CUDA 12 plugin is chosen, and with no
# CUDA installed here it names the CUDA 12 runtime it needs.
expect_out "GPU plugin /usr/lib/clusterbench/libclusterbench_gpu_cuda12.so: libcudart.so.12: cannot open"
ok "driver 535: the packaged CUDA 12 plugin is chosen from /usr/lib/clusterbench: $(grep -o 'GPU plugin [^"]*' "$TMP/out" | head -1 | cut -c1-160)"

# --specs-dir and CLUSTERBENCH_SPECS_DIR: a copy of the tables elsewhere is the one chosen from.
in_root "mkdir -p /root/myspecs /root/env && cp /usr/share/clusterbench/specs/*.json /root/myspecs/ &&
  cp /root/myspecs/* /root/env/"
expect_rc 2 in_root "clusterbench run --suite ci --dry-run --specs-dir /root/nonexistent"
expect_out "--specs-dir: Directory does not exist: /root/nonexistent"
expect_rc 0 in_root "clusterbench run --suite ci --dry-run --specs-dir /root/myspecs --out /root/d1"
expect_out "^spec: cpu-node \(/root/myspecs/cpu-node.json, auto: "
expect_rc 0 in_root "CLUSTERBENCH_SPECS_DIR=/root/env clusterbench run --suite ci --dry-run --out /root/d2"
expect_out "^spec: cpu-node \(/root/env/cpu-node.json, auto: "
expect_rc 0 in_root "clusterbench run --suite ci --dry-run --out /root/d3"
expect_out "^spec: cpu-node \(/usr/share/clusterbench/specs/cpu-node.json, auto: "
ok "--specs-dir, else CLUSTERBENCH_SPECS_DIR, else the installed tables; a missing directory is exit 2"
echo "$PASSES passed, 0 failed"
