#!/usr/bin/env bash
# The container image (issue 22): the Containerfile's runtime stage, on a plain Debian 12 base
# made from the cached minbase root (scripts/rootfs-minbase.sh, `podman import`, kept per machine
# as localhost/clusterbench-base:bookworm) and fed the package `make test` built
# (PACKAGE_FROM=prebuilt: the project is not compiled a second time), built with
# `buildah build --isolation chroot` (no daemon). In it (`buildah run --isolation chroot`):
#  - `clusterbench run --suite ci` completes with its report, exit 0, 1 or 4;
#  - mpirun (as root, as the MPIJob's launcher runs it) runs a 2-rank all_reduce;
#  - the InfiniBand userspace is there: `ibv_devinfo` runs and, with no HCA here, says "No IB
#    devices found" (or, on a kernel without verbs, "Failed to get IB devices list: Function not
#    implemented"; not "command not found"), the verbs providers
#    (mlx5 among them) are installed, and `ucx_info` lists UCX's transports;
#  - `clusterbench inventory` writes this node's EnvRecord;
#  - the MPIJob's worker: the image has no SSH host key; `mpijob-entry.sh worker` makes them and
#    runs sshd, which lets root in with a key and runs `clusterbench --version` and finds `orted`
#    (what mpirun runs over ssh); sshd and ssh default to port 2222.
#  - the packaged CUDA 12 plugin, with the CUDA 12.2 wheels (.deps/cuda12) mounted and on
#    LD_LIBRARY_PATH, has every library and symbol it needs (`ldd -r`); without them it names
#    libcudart.so.12 missing. (No GPU here: gpu_plugin_cuda12 loads it through the binary.)
# Prints the image size. Needs the package_deb fixture and the network (apt). Budget: ~3 min.
source "$(dirname "$0")/lib.sh"
: "${CB_BINARY_DIR:?}"
for t in buildah podman; do command -v $t >/dev/null || fail "no $t (scripts/setup.sh --test)"; done
debs=("$CB_BINARY_DIR"/package/clusterbench_*_amd64.deb)
[ -f "${debs[0]}" ] || fail "no package in $CB_BINARY_DIR/package (the package_deb test makes it)"
RFS=$(bash "$CB_SOURCE_DIR/scripts/rootfs-minbase.sh") || fail "cannot make the bare root (mmdebstrap)"
# The base is made again when the cached root is (its tag: the root's completion time).
BASE=localhost/clusterbench-base:bookworm-$(stat -c %Y "$RFS/.complete")
IMG=localhost/clusterbench:test-$$
CTR=""
cleanup() {
  [ -n "$CTR" ] && buildah rm "$CTR" >/dev/null 2>&1
  buildah rmi -f "$IMG" >/dev/null 2>&1
  # Only the untagged images this build made (the prebuilt stage's), never another's.
  [ -n "${images_before+x}" ] && comm -13 <(echo "$images_before") <(buildah images -q --no-trunc | sort) |
    while read -r id; do buildah rmi "$id" >/dev/null 2>&1; done
  rm -rf "$TMP"
}
trap cleanup EXIT
if ! podman image exists "$BASE"; then
  tar -C "$RFS" -c . | podman import - "$BASE" >"$TMP/out" 2>&1 ||
    { cat "$TMP/out" >&2; fail "podman import of $RFS"; }
fi
ok "base image $BASE (the cached minbase root, podman import)"
images_before=$(buildah images -q --no-trunc | sort)
containers_before=$(buildah containers -q | sort)

mkdir -p "$TMP/ctx/package"
cp "${debs[0]}" "$TMP/ctx/package/"
expect_rc 0 timeout 300 buildah build --isolation chroot --build-arg RUNTIME_BASE="$BASE" \
  --build-arg PACKAGE_FROM=prebuilt --target runtime -f "$CB_SOURCE_DIR/Containerfile" \
  -t "$IMG" "$TMP/ctx"
! grep -q "nvidia/cuda" "$TMP/out" || fail "the build stage ran (it pulled the CUDA base)"
[ "$(buildah containers -q | sort)" = "$containers_before" ] ||
  fail "the build left a working container: $(buildah containers)"
size=$(podman image inspect --format '{{.Size}}' "$IMG")
ok "buildah build --target runtime from the package: $IMG, $size B"

CTR=$(buildah from "$IMG") || fail "buildah from $IMG"
buildah run --isolation chroot "$CTR" -- sh -c \
  'CLUSTERBENCH_ROUNDS=1 timeout 300 clusterbench run --suite ci --out /results/r' >"$TMP/out" 2>&1
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] || [ "$rc" = 4 ] || { cat "$TMP/out" >&2; fail "run --suite ci: exit $rc"; }
expect_out "^report: /results/r/report.md$"
M=$(buildah mount "$CTR") || fail "buildah mount"
py "
d = sys.argv[1]
run = json.load(open(d + '/run.json'))
assert run['exit_code'] == $rc and not run['aborted'], run
assert run['spec']['path'].startswith('/usr/share/clusterbench/specs/'), run['spec']
assert run['argv'][0] == 'clusterbench' or run['argv'][0] == '/usr/bin/clusterbench', run['argv']
assert os.path.getsize(d + '/report.md') > 0
" "$M/results/r"
buildah umount "$CTR" >/dev/null
ok "run --suite ci in the image: exit $rc, report written, the installed spec table"

buildah run --isolation chroot "$CTR" -- sh -c 'CLUSTERBENCH_ROUNDS=1 timeout 120 mpirun -np 2 --bind-to none \
  clusterbench run --suite ci --only collectives.all_reduce --out /results/np2' >"$TMP/out" 2>&1
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] || [ "$rc" = 4 ] || { cat "$TMP/out" >&2; fail "mpirun -np 2: exit $rc"; }
M=$(buildah mount "$CTR") || fail "buildah mount"
py "
run = json.load(open(sys.argv[1] + '/run.json'))
assert run['world_size'] == 2 and run['exit_code'] == $rc and not run['aborted'], run
" "$M/results/np2"
buildah umount "$CTR" >/dev/null
ok "mpirun -np 2 as root in the image (the MPIJob's launcher): world size 2, exit $rc"

# The InfiniBand userspace and UCX. ibv_devinfo without an HCA says "No IB devices found" where the
# kernel has its verbs interface (ib_uverbs), and "Failed to get IB devices list: Function not
# implemented" where it has none (this VM): either way libibverbs ran, and exits 255.
buildah run --isolation chroot "$CTR" -- sh -c 'ibv_devinfo; echo "rc=$?"; ls /usr/lib/*/libibverbs/;
  ucx_info -v; ucx_info -d | grep -i "transport:" | sort -u' >"$TMP/out" 2>&1
expect_out "No IB devices found|Failed to get IB devices list: Function not implemented"
expect_out "^rc=255$"
grep -q "^rc=127" "$TMP/out" && { cat "$TMP/out" >&2; fail "ibv_devinfo is not in the image"; }
expect_out "libmlx5-rdmav[0-9]+\.so"
expect_out "^# Version [0-9]+\.[0-9]+"
expect_out "Transport: (posix|tcp|self)"
ok "ibv_devinfo runs (no HCA here: $(grep -m1 -E 'No IB|Failed to get IB' "$TMP/out")), verbs providers (mlx5) installed, UCX $(sed -n 's/^# Version \([0-9.]*\).*/\1/p' "$TMP/out" | head -1) with $(grep -ci 'transport:' "$TMP/out") transports"

# The CUDA 12 plugin where the CUDA 12.2 wheels are mounted (pip's layout, as on a node that
# installs them in the image or mounts them): ldd -r loads it and binds every symbol.
WHEELS=$CB_SOURCE_DIR/.deps/cuda12/nvidia
[ -f "$WHEELS/cuda_runtime/lib/libcudart.so.12" ] || fail "no CUDA 12.2 wheels in $WHEELS (scripts/setup.sh --test)"
P12=/usr/lib/clusterbench/libclusterbench_gpu_cuda12.so
W=/opt/nvidia-cu12
buildah run --isolation chroot -v "$WHEELS:$W:ro" "$CTR" -- sh -c "
  LD_LIBRARY_PATH=$W/cuda_runtime/lib:$W/cublas/lib:$W/nccl/lib ldd -r $P12; echo rc=\$?
  echo without; ldd $P12 | grep 'not found'" >"$TMP/out" 2>&1
expect_out "libcudart\.so\.12 => $W/cuda_runtime/lib/libcudart\.so\.12"
expect_out "libcublasLt\.so\.12 => $W/cublas/lib/libcublasLt\.so\.12"
expect_out "libnccl\.so\.2 => $W/nccl/lib/libnccl\.so\.2"
expect_out "^rc=0$"
! grep -q "undefined symbol" "$TMP/out" || { cat "$TMP/out" >&2; fail "the CUDA 12 plugin has undefined symbols"; }
sed -n '/^without$/,$p' "$TMP/out" | grep -q "libcudart.so.12 => not found" ||
  { cat "$TMP/out" >&2; fail "without the wheels the plugin should lack libcudart.so.12"; }
ok "the packaged CUDA 12 plugin: with the CUDA 12.2 wheels mounted every library and symbol binds (ldd -r); without them libcudart.so.12 is missing"

buildah run --isolation chroot "$CTR" -- sh -c 'clusterbench inventory' >"$TMP/inv.json" 2>"$TMP/out"
rc=$?
[ "$rc" = 0 ] || { cat "$TMP/out" >&2; fail "clusterbench inventory: exit $rc"; }
py "
e = json.load(open(sys.argv[1]))
assert e['schema'].startswith('clusterbench.env/') and e['host'], e.get('schema')
" "$TMP/inv.json"
ok "clusterbench inventory in the image: an EnvRecord of $(stat -c %s "$TMP/inv.json") B"

# The MPIJob's worker: sshd on a free port (the test shares the host's network), root logs in
# with a key as the MPI Operator's launcher would, and runs what mpirun runs there.
PORT=$((30000 + ($$ % 4000) * 2))
while ss -ltn 2>/dev/null | grep -qE ":$PORT\b"; do PORT=$((PORT + 1)); done
buildah run --isolation chroot "$CTR" -- bash -c '
  ls /etc/ssh/ssh_host_* 2>/dev/null | sed "s/^/baked host key: /"
  ssh -G anyhost | grep -E "^(port|stricthostkeychecking) "
  mkdir -p -m 700 /root/.ssh && ssh-keygen -q -t ed25519 -N "" -f /root/.ssh/id_ed25519 &&
    cp /root/.ssh/id_ed25519.pub /root/.ssh/authorized_keys
  CB_SSH_PORT='"$PORT"' /usr/share/clusterbench/scripts/launch/mpijob-entry.sh worker 2>/tmp/sshd.log &
  pid=$!
  for i in $(seq 50); do ssh-keyscan -p '"$PORT"' 127.0.0.1 >/dev/null 2>&1 && break; sleep 0.1; done
  ls /etc/ssh/ssh_host_*_key | sed "s/^/host key made: /"
  sshd -T | grep -E "^(port|usepam|permitrootlogin) "
  ssh -o BatchMode=yes -p '"$PORT"' root@127.0.0.1 "clusterbench --version; command -v orted"
  echo "ssh rc=$?"
  kill $pid; wait $pid 2>/dev/null; cat /tmp/sshd.log | tail -3' >"$TMP/out" 2>&1
! grep -q "^baked host key" "$TMP/out" || { cat "$TMP/out" >&2; fail "the image carries SSH host keys"; }
expect_out "^port 2222$"
expect_out "^stricthostkeychecking (false|no)$"
expect_out "^host key made: /etc/ssh/ssh_host_ed25519_key$"
expect_out "^usepam no$"
expect_out "^permitrootlogin without-password$|^permitrootlogin prohibit-password$"
expect_out "^clusterbench 0\.1\.0"
expect_out "^/usr/bin/orted$"
expect_out "^ssh rc=0$"
ok "mpijob-entry.sh worker: host keys made at start (none in the image), sshd lets root in by key (port 2222 by default; $PORT here) and runs clusterbench and finds orted"
echo "$PASSES passed, 0 failed"
