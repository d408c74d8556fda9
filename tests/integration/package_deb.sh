#!/usr/bin/env bash
# The Debian package (issue 22): `cpack -G DEB` of this build into $CB_BINARY_DIR/package (the
# package the deploy_package and deploy_image tests install), and what it holds:
#  - the FHS layout (bin/, lib/clusterbench/, share/clusterbench/, share/doc/clusterbench/) with
#    every seed spec table and fio profile of the source tree;
#  - Depends: the Debian libraries the binary and plugin link (dpkg-shlibdeps) and the programs it
#    runs (openmpi-bin, fio); never a CUDA library (those come from the CUDA installation).
# Budget: < 30 s.
source "$(dirname "$0")/lib.sh"
: "${CB_BINARY_DIR:?}"
command -v cpack >/dev/null || fail "no cpack (cmake; scripts/setup.sh)"
command -v dpkg-shlibdeps >/dev/null || fail "no dpkg-shlibdeps (dpkg-dev; scripts/setup.sh)"
PKG=$CB_BINARY_DIR/package
rm -rf "$PKG"
(cd "$CB_BINARY_DIR" && cpack -G DEB -B "$PKG") >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "cpack"; }
debs=("$PKG"/clusterbench_*_amd64.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || fail "expected one clusterbench_*_amd64.deb in $PKG: ${debs[*]}"
DEB=${debs[0]}
ok "package $(basename "$DEB"): $(stat -c %s "$DEB") B"

dpkg-deb -c "$DEB" | awk '{print $6}' >"$TMP/files"
for f in ./usr/bin/clusterbench ./usr/lib/clusterbench/libclusterbench_gpu.so \
         ./usr/lib/clusterbench/libclusterbench_gpu.so.cuda ./usr/share/clusterbench/scripts/tune.sh \
         ./usr/share/clusterbench/scripts/launch/slurm.sbatch ./usr/share/doc/clusterbench/README.md \
         ./usr/share/doc/clusterbench/docs/install.md; do
  grep -qxF "$f" "$TMP/files" || fail "the package lacks $f"
done
for f in "$CB_SOURCE_DIR"/reports/specs/*.json; do
  grep -qxF "./usr/share/clusterbench/specs/$(basename "$f")" "$TMP/files" || fail "no spec $(basename "$f")"
done
for f in "$CB_SOURCE_DIR"/io/profiles/*.fio; do
  grep -qxF "./usr/share/clusterbench/profiles/$(basename "$f")" "$TMP/files" || fail "no profile $(basename "$f")"
done
! grep -q "^./usr/local\|^./work\|tests/" "$TMP/files" || fail "the package holds a test or a local path"
ok "FHS layout: bin, lib/clusterbench (plugin + side file), every spec table and fio profile, docs"

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
