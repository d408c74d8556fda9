#!/usr/bin/env bash
# The Debian package (issues 22, 45): scripts/package.sh (what `make package` runs) of this build
# into $CB_BINARY_DIR/package (the package the deploy_package and deploy_image tests install),
# and what it holds:
#  - the FHS layout (bin/, lib/clusterbench/, share/clusterbench/, share/doc/clusterbench/) with
#    every spec table and fio profile of the source tree, the launch recipes, copyright and
#    changelog.gz; no test script (the netns cluster);
#  - the version 0.1.0~git<N>.<sha>: the binary's sha, ordered for apt (a later commit above, the
#    release 0.1.0 and no-git builds' 0.1.0~git0.unknown on either side), the changelog's;
#  - Depends: the Debian libraries the binary and plugin link (dpkg-shlibdeps) and the programs it
#    runs (openmpi-bin, fio); never a CUDA library (those come from the CUDA installation);
#  - what package.sh says about drivers: one line per plugin (CUDA 13: driver >= 580); both plugins (CUDA 13 and the CUDA 12 one built from the wheels) packaged with their side
#    files, and the line saying driver 535 runs it; the description lists the same.
# Budget: < 30 s.
source "$(dirname "$0")/lib.sh"
: "${CB_BINARY_DIR:?}"
command -v cpack >/dev/null || fail "no cpack (cmake; scripts/setup.sh)"
command -v dpkg-shlibdeps >/dev/null || fail "no dpkg-shlibdeps (dpkg-dev; scripts/setup.sh)"
PKG=$CB_BINARY_DIR/package
rm -rf "$PKG"
bash "$CB_SOURCE_DIR/scripts/package.sh" "$CB_BINARY_DIR" "$PKG" >"$TMP/pkg.out" 2>&1 ||
  { cat "$TMP/pkg.out" >&2; fail "scripts/package.sh"; }
debs=("$PKG"/clusterbench_*_amd64.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || fail "expected one clusterbench_*_amd64.deb in $PKG: ${debs[*]}"
DEB=${debs[0]}
ok "package $(basename "$DEB"): $(stat -c %s "$DEB") B"

dpkg-deb -c "$DEB" | awk '{print $6}' >"$TMP/files"
for f in ./usr/bin/clusterbench ./usr/lib/clusterbench/libclusterbench_gpu.so \
         ./usr/lib/clusterbench/libclusterbench_gpu.so.cuda ./usr/share/clusterbench/scripts/tune.sh \
         ./usr/share/clusterbench/scripts/launch/slurm.sbatch ./usr/share/doc/clusterbench/README.md \
         ./usr/share/clusterbench/scripts/launch/mpijob.yaml \
         ./usr/share/clusterbench/scripts/launch/mpijob-results.yaml \
         ./usr/share/clusterbench/scripts/launch/mpijob-entry.sh \
         ./usr/share/doc/clusterbench/copyright ./usr/share/doc/clusterbench/changelog.gz \
         ./usr/share/doc/clusterbench/CHANGELOG.md ./usr/share/doc/clusterbench/docs/install.md; do
  grep -qxF "$f" "$TMP/files" || fail "the package lacks $f"
done
for f in "$CB_SOURCE_DIR"/reports/specs/*.json; do
  grep -qxF "./usr/share/clusterbench/specs/$(basename "$f")" "$TMP/files" || fail "no spec $(basename "$f")"
done
for f in "$CB_SOURCE_DIR"/io/profiles/*.fio; do
  grep -qxF "./usr/share/clusterbench/profiles/$(basename "$f")" "$TMP/files" || fail "no profile $(basename "$f")"
done
! grep -q "^./usr/local\|^./work\|tests/\|scripts/netns-" "$TMP/files" || fail "the package holds a test or a local path"
ok "FHS layout: bin, lib/clusterbench (plugin + side file), every spec table and fio profile, launch recipes, docs, copyright, changelog; no test script"

# The version: the binary's commit, ordered for apt.
ver=$(dpkg-deb -f "$DEB" Version)
[[ $ver =~ ^0\.1\.0~git([0-9]+)\.([0-9a-f]{12})(\.dirty)?$ ]] || fail "version $ver is not 0.1.0~git<N>.<sha>"
n=${BASH_REMATCH[1]} sha=${BASH_REMATCH[2]}
[ "$n" = "$(git -C "$CB_SOURCE_DIR" rev-list --count HEAD)" ] || fail "version $ver: N is not the commit count"
"$CB_BINARY_DIR/clusterbench" --version | grep -q "+$sha" || fail "version $ver: not the binary's $("$CB_BINARY_DIR/clusterbench" --version)"
[ "$(basename "$DEB")" = "clusterbench_${ver}_amd64.deb" ] || fail "file name $(basename "$DEB") for $ver"
dpkg --compare-versions "$ver" lt "0.1.0~git$((n + 1)).000000000000" &&
  dpkg --compare-versions "$ver" gt "0.1.0~git$((n - 1)).ffffffffffff" &&
  dpkg --compare-versions "$ver" lt 0.1.0 && dpkg --compare-versions "$ver" gt 0.1.0~git0.unknown ||
  fail "version $ver is not ordered between its neighbours"
dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - ./usr/share/doc/clusterbench/changelog.gz | gzip -dc >"$TMP/changelog"
[ "$(dpkg-parsechangelog -l "$TMP/changelog" -S Version)" = "$ver" ] ||
  fail "changelog.gz's version: $(head -1 "$TMP/changelog")"
dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - ./usr/share/doc/clusterbench/copyright >"$TMP/copyright"
grep -q "^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" "$TMP/copyright" &&
  grep -q "^License: BSD-3-clause" "$TMP/copyright" && grep -q "^License: Expat" "$TMP/copyright" ||
  fail "copyright: $(head -3 "$TMP/copyright")"
ok "version $ver: the binary's commit, above commit $((n - 1))'s and below $((n + 1))'s, the release's and no-git builds'; changelog.gz says it; copyright in Debian's format"

# Which driver: one line per plugin from its side file, the warning when none runs on 535.
expect_line() { grep -Eq -- "$1" "$TMP/pkg.out" || { cat "$TMP/pkg.out" >&2; fail "package.sh output lacks /$1/"; }; }
expect_line "^package: $DEB$"
expect_line "^package: version $ver$"
desc=$(dpkg-deb -f "$DEB" Description)
if [ -f "$CB_BINARY_DIR/libclusterbench_gpu.so.cuda" ]; then
  cuda=$(sed -n 's/.*cuda=\([0-9]*\).*/\1/p' "$CB_BINARY_DIR/libclusterbench_gpu.so.cuda")
  major=$((cuda / 1000)) minor=$(((cuda % 1000) / 10))
  drv=$((major >= 13 ? 580 : 525))
  expect_line "^package: GPU plugin libclusterbench_gpu.so: CUDA $major.$minor, needs NVIDIA driver >= $drv$"
  grep -q "libclusterbench_gpu.so: CUDA $major.$minor, NVIDIA driver >= $drv." <<<"$desc" ||
    fail "the description does not name the plugin's driver: $desc"
  # The CUDA 12 plugin from the CUDA 12.2 wheels (scripts/setup.sh --test fetches them): packaged
  # beside the CUDA 13 one, so a driver-535 node runs the package.
  [ -f "$CB_BINARY_DIR/libclusterbench_gpu_cuda12.so.cuda" ] ||
    fail "no CUDA 12 plugin in $CB_BINARY_DIR (built from .deps/cuda12: scripts/setup.sh --test)"
  # Its kernels are PTX 8.2: driver 535 (CUDA 12.2) at least, not the 525 of minor-version
  # compatibility.
  expect_line "^package: GPU plugin libclusterbench_gpu_cuda12.so: CUDA 12.2, needs NVIDIA driver >= 535$"
  expect_line "^package: a node with driver 535 \(CUDA 12.2\) runs this package's GPU cases$"
  grep -q "libclusterbench_gpu_cuda12.so: CUDA 12.2, NVIDIA driver >= 535." <<<"$desc" ||
    fail "the description does not name the CUDA 12 plugin: $desc"
  files=$(dpkg-deb -c "$DEB" | awk '{print $NF}')
  for f in libclusterbench_gpu.so libclusterbench_gpu.so.cuda libclusterbench_gpu_cuda12.so \
           libclusterbench_gpu_cuda12.so.cuda; do
    grep -qx "./usr/lib/clusterbench/$f" <<<"$files" || fail "the package lacks usr/lib/clusterbench/$f"
  done
  side=$(dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - ./usr/lib/clusterbench/libclusterbench_gpu_cuda12.so.cuda)
  [[ $side == *" cuda=12020 kernels=ptx driver=535" ]] || fail "the packaged CUDA 12 plugin's side file: $side"
  ok "package.sh: both plugins packaged (CUDA $major.$minor, driver >= $drv; CUDA 12.2 with PTX kernels, driver >= 535), in its output and the package's description"
else
  expect_line "^package: this package has NO GPU plugin"
  ok "package.sh: no GPU plugin in this build, said loudly"
fi

deps=$(dpkg-deb -f "$DEB" Depends)
names=" $(sed -E 's/ \([^)]*\)//g; s/,//g' <<<"$deps") "
for d in openmpi-bin fio libopenmpi3 libhwloc15 libopenblas0 libre2-9 libsimdjson14 libstdc++6; do
  [[ $names == *" $d "* ]] || fail "Depends lacks $d: $deps"
done
! grep -Eiq "cuda|cublas|nccl|nvidia" <<<"$deps" || fail "Depends names a CUDA library: $deps"
ok "Depends from the linked libraries plus openmpi-bin and fio, no CUDA: $deps"
# The install tree moves with its prefix; a binary without it says where it looked (exit 2).
dpkg-deb -x "$DEB" "$TMP/x" || fail "dpkg-deb -x"
mv "$TMP/x" "$TMP/moved prefix"
M="$TMP/moved prefix/usr"
expect_rc 0 "$M/bin/clusterbench" run --suite ci --dry-run --out "$TMP/d1"
expect_out "^spec: cpu-node \($M/share/clusterbench/specs/cpu-node.json, auto: "
mkdir -p "$TMP/link" && ln -s "$M/bin/clusterbench" "$TMP/link/cb"
expect_rc 0 "$TMP/link/cb" run --suite ci --dry-run --out "$TMP/d2"
expect_out "^spec: cpu-node \($M/share/clusterbench/specs/cpu-node.json, auto: "
mkdir -p "$TMP/lonely/bin" && cp "$M/bin/clusterbench" "$TMP/lonely/bin/"
expect_rc 2 "$TMP/lonely/bin/clusterbench" run --suite ci --only compute.memory_bandwidth \
  --dry-run --out "$TMP/d3"
expect_out "$TMP/lonely/share/clusterbench/specs: cannot list spec tables .*--specs-dir DIR"
expect_rc 2 "$TMP/lonely/bin/clusterbench" run --suite ci --only io.fio \
  --spec "$M/share/clusterbench/specs/cpu-node.json" --dry-run --out "$TMP/d4"
expect_out "io.fio: no job file $TMP/lonely/share/clusterbench/profiles/[a-z_]+.fio"
ok "the extracted package runs from a moved prefix and through a symlink; a lone binary names where it looked (exit 2)"
echo "$PASSES passed, 0 failed"
