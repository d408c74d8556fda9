#!/usr/bin/env bash
# The container image (issue 22): the Containerfile's runtime stage, on a plain Debian 12 base
# made from the cached minbase root (scripts/rootfs-minbase.sh, `podman import`, kept per machine
# as localhost/clusterbench-base:bookworm) and fed the package `make test` built
# (PACKAGE_FROM=prebuilt: the project is not compiled a second time), built with
# `buildah build --isolation chroot` (no daemon). In it (`buildah run --isolation chroot`):
#  - `clusterbench run --suite ci` completes with its report, exit 0, 1 or 4;
#  - mpirun (as root, as the MPIJob's launcher runs it) runs a 2-rank all_reduce.
# Prints the image size. Needs the package_deb fixture and the network (apt). Budget: ~2 min.
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
echo "$PASSES passed, 0 failed"
