#!/usr/bin/env bash
# Issue 25, the software stack: `clusterbench inventory` with stand-ins for what this machine lacks
# (nvidia-ctk and a python3 with torch first on PATH, a kubelet with NVIDIA's device-plugin socket
# and GPU feature discovery's labels in a fixture root, a DCGM exporter on 127.0.0.1 serving
# metrics text) records each as present with its version; the GPU table's rows over that stack
# PASS, and WARN or FAIL when a stand-in is removed or reports an old version. cuDNN and NCCL are
# the real libraries of this machine's CUDA toolkit. Budget: about 10 s.
source "$(dirname "$0")/lib.sh"
PY=$(command -v python3) || fail "python3 not installed (scripts/setup.sh installs it)"
PY=$("$PY" -c 'import sys; print(sys.executable)')

# Stand-ins on PATH. python3 answers the torch probe and runs everything else for real.
mkdir -p "$TMP/bin"
cat >"$TMP/bin/nvidia-ctk" <<'EOF'
#!/bin/sh
echo "NVIDIA Container Toolkit CLI version ${FAKE_CTK_VERSION:-1.14.3}"
echo "commit: 53b24618a542025b108239fe602e66e912b7d6e2"
EOF
cat >"$TMP/bin/python3" <<EOF
#!/bin/sh
case "\$2" in *"import torch"*) printf '2.3.1+cu121\n12.1\n'; exit 0 ;; esac
exec "$PY" "\$@"
EOF
chmod +x "$TMP/bin/nvidia-ctk" "$TMP/bin/python3"

# A fixture root: the inventory's tree plus a kubelet with NVIDIA's plugin and GFD's labels.
cp -r "$CB_FIXTURES/fsroot" "$TMP/root"
"$PY" - "$TMP/root" <<'EOF'
import os, socket, sys
root = sys.argv[1]
d = root + "/var/lib/kubelet/device-plugins"
os.makedirs(d, exist_ok=True)
for name in ("kubelet.sock", "nvidia-gpu.sock"):
    socket.socket(socket.AF_UNIX).bind(d + "/" + name)
os.makedirs(root + "/etc/kubernetes/node-feature-discovery/features.d", exist_ok=True)
open(root + "/etc/kubernetes/node-feature-discovery/features.d/gfd", "w").write(
    "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n")
EOF

# The DCGM exporter stand-in: metrics text on an ephemeral port of 127.0.0.1.
cat >"$TMP/exporter.py" <<'EOF'
import http.server, sys
body = open(sys.argv[1], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/metrics" else 404)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.serve_forever()
EOF
printf '# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1"} 41\n' >"$TMP/metrics"
"$PY" "$TMP/exporter.py" "$TMP/metrics" "$TMP/port" &
exporter=$!
trap 'kill $exporter 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 1 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
[ -s "$TMP/port" ] || fail "the exporter stand-in did not start"
URL=http://127.0.0.1:$(cat "$TMP/port")/metrics

inventory() {  # inventory OUT [ENV...]: this node's EnvRecord with the stand-ins
  local out=$1
  shift
  env PATH="$TMP/bin:$PATH" CLUSTERBENCH_DCGM_EXPORTER_URL="$URL" NCCL_IB_DISABLE=0 \
    NCCL_SOCKET_IFNAME=ib0 "$@" "$CB_BIN" inventory --fs-root "$TMP/root" >"$TMP/$out" 2>"$TMP/$out.err" ||
    { cat "$TMP/$out.err" >&2; fail "inventory $out failed"; }
}
inventory all.json
py "
s = json.load(open(sys.argv[1]))['software']
assert s['pytorch'] == {'state': 'present', 'version': '2.3.1+cu121',
                        'detail': \"python3 -c 'import torch'\"}, s['pytorch']
assert s['pytorch_cuda'] == '12.1', s
assert s['container_toolkit']['state'] == 'present' and s['container_toolkit']['version'] == '1.14.3', s
assert s['kubernetes']['state'] == 'present', s
assert s['device_plugin']['state'] == 'present' and s['device_plugin']['detail'].endswith(
    '/var/lib/kubelet/device-plugins/nvidia-gpu.sock'), s
assert s['gpu_feature_discovery']['state'] == 'present', s
assert s['dcgm_exporter']['state'] == 'up', s
assert s['nccl_env'] == {'NCCL_IB_DISABLE': '0', 'NCCL_SOCKET_IFNAME': 'ib0'}, s
# The real libraries of the CUDA toolkit installed here (scripts/setup.sh): a version, not 0.
for lib in ('cudnn', 'nccl'):
    assert s[lib]['state'] == 'present', s[lib]
    assert s[lib]['version'] and s[lib]['version'][0] in '0123456789' and s[lib]['version'] != '0', s[lib]
print('cudnn', s['cudnn']['version'], 'nccl', s['nccl']['version'])
" "$TMP/all.json"
ok "every stand-in found, with its version; cuDNN and NCCL from this machine's libraries"

# The rows, on the gpu-killed fixture run (gpu01: driver 535, CUDA 12.2) with this stack.
report_with() {  # report_with NAME INVENTORY [CUDA]: report.json of the fixture with that stack
  local name=$1 inv=$2 cuda=${3:-12.2}
  cp -r "$CB_FIXTURES/results/gpu-killed" "$TMP/$name"
  rm -f "$TMP/$name"/report.*
  "$PY" - "$TMP/$name/run.json" "$TMP/$inv" "$cuda" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
run["env"][0]["software"] = json.load(open(sys.argv[2]))["software"]
run["env"][0]["versions"]["cuda_driver"] = sys.argv[3]
json.dump(run, open(sys.argv[1], "w"))
EOF
  (cd "$CB_SOURCE_DIR" && "$CB_BIN" report "$TMP/$name" >"$TMP/$name.out" 2>&1)
}
outcomes() {  # outcomes NAME: row id -> outcome of the stack rows, as JSON
  "$PY" -c "
import json, sys
rows = json.load(open(sys.argv[1] + '/report.json'))['rows']
print(json.dumps({r['id']: r['outcome'] for r in rows if r['id'] in (
    'gpu.cuda_version', 'gpu.nccl_present', 'gpu.cudnn_present', 'gpu.container_toolkit',
    'gpu.device_plugin', 'gpu.dcgm_exporter', 'gpu.nccl_ib_disable', 'gpu.nccl_socket_ifname')}))
" "$TMP/$1"
}
report_with good all.json
[ "$(outcomes good)" = '{"gpu.cuda_version": "PASS", "gpu.nccl_present": "PASS", "gpu.cudnn_present": "PASS", "gpu.container_toolkit": "PASS", "gpu.device_plugin": "PASS", "gpu.dcgm_exporter": "PASS", "gpu.nccl_ib_disable": "PASS", "gpu.nccl_socket_ifname": "PASS"}' ] ||
  fail "stack rows with every stand-in: $(outcomes good)"
ok "each stack row PASSes with its stand-in"

# Remove the stand-ins: no nvidia-ctk, the plugin's socket gone, the exporter without the GPU
# temperature, NCCL_SOCKET_IFNAME unset, cuDNN not loadable; and CUDA 12.1 on the node.
rm "$TMP/bin/nvidia-ctk" "$TMP/root/var/lib/kubelet/device-plugins/nvidia-gpu.sock"
printf 'DCGM_FI_DEV_SM_CLOCK{gpu="0"} 1980\n' >"$TMP/metrics"
kill $exporter
"$PY" "$TMP/exporter.py" "$TMP/metrics" "$TMP/port2" &
exporter=$!
for _ in $(seq 1 50); do [ -s "$TMP/port2" ] && break; sleep 0.1; done
URL=http://127.0.0.1:$(cat "$TMP/port2")/metrics
inventory none.json env -u NCCL_SOCKET_IFNAME
"$PY" - "$TMP/none.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["software"]["cudnn"] = {"state": "absent", "version": None,
                          "detail": "libcudnn.so.9: cannot open shared object file"}
json.dump(d, open(sys.argv[1], "w"))
EOF
py "
s = json.load(open(sys.argv[1]))['software']
assert s['container_toolkit']['state'] == 'absent' and 'nvidia-ctk not found on PATH' in s['container_toolkit']['detail'], s
assert s['container_toolkit']['version'] is None, s
assert s['device_plugin']['state'] == 'absent', s
assert s['dcgm_exporter']['state'] == 'down' and 'DCGM_FI_DEV_GPU_TEMP is not exported' in s['dcgm_exporter']['detail'], s
assert s['nccl_env']['NCCL_SOCKET_IFNAME'] == 'unset', s
" "$TMP/none.json"
report_with bad none.json 12.1
[ "$(outcomes bad)" = '{"gpu.cuda_version": "FAIL", "gpu.nccl_present": "PASS", "gpu.cudnn_present": "FAIL", "gpu.container_toolkit": "WARN", "gpu.device_plugin": "WARN", "gpu.dcgm_exporter": "WARN", "gpu.nccl_ib_disable": "PASS", "gpu.nccl_socket_ifname": "WARN"}' ] ||
  fail "stack rows without the stand-ins: $(outcomes bad)"
grep -q "gpu.nccl_socket_ifname" "$TMP/bad/report.md" || fail "report.md lacks the NCCL_SOCKET_IFNAME row"
ok "stand-ins removed or old: the FAIL and WARN rows, each naming its value"

# An old toolkit is recorded with its version, for the fleet table and compare.
printf '#!/bin/sh\necho "NVIDIA Container Toolkit CLI version 1.9.0"\n' >"$TMP/bin/nvidia-ctk"
chmod +x "$TMP/bin/nvidia-ctk"
inventory old.json
py "
s = json.load(open(sys.argv[1]))['software']
assert s['container_toolkit']['version'] == '1.9.0', s
" "$TMP/old.json"
ok "an old container toolkit's version is recorded"
echo "PASS ($PASSES checks)"
