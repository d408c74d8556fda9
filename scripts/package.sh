#!/usr/bin/env bash
# The Debian package of a build (what `make package` runs), and which NVIDIA driver it needs.
#   scripts/package.sh [BUILD [OUT]]     BUILD defaults to build, OUT (where the .deb goes) to BUILD
# Runs `cpack -G DEB` (its log in BUILD/cpack.log, printed when it fails: exit 2), then reads the
# GPU plugins' .cuda side files inside the package it made and says, on one line each, the
# driver every plugin needs (CUDA 13.x: >= 580; CUDA 12.x: >= 525, which covers 535 and CUDA
# 12.2; NVIDIA's CUDA compatibility guide; a plugin with PTX kernels: its side file's driver, 535
# for CUDA 12.2). When no plugin runs on driver 535 it says so loudly,
# and what to do instead (docs/install.md "Which driver the package needs").
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-$BUILD}
BUILD=$(cd "$BUILD" && pwd) || { echo "package: no build directory $1" >&2; exit 2; }
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/clusterbench_*.deb
if ! (cd "$BUILD" && cpack -G DEB -B "$OUT") >"$BUILD/cpack.log" 2>&1; then
  cat "$BUILD/cpack.log" >&2
  echo "package: cpack failed (log above, and in $BUILD/cpack.log)" >&2
  exit 2
fi
rm -rf "$OUT/_CPack_Packages"
debs=("$OUT"/clusterbench_*.deb)
[ -f "${debs[0]}" ] || { echo "package: cpack made no clusterbench_*.deb in $OUT" >&2; exit 2; }
DEB=${debs[0]}
echo "package: $DEB"
echo "package: version $(dpkg-deb -f "$DEB" Version)"

# The side files say "clusterbench-gpu-plugin abi=N cuda=13000" (CUDART_VERSION), and a plugin
# whose kernels are PTX the driver compiles adds "kernels=ptx driver=535": the driver it needs.
runs_535=0 plugins=0
while read -r member; do
  [ -n "$member" ] || continue
  side=$(dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - "$member")
  cuda=$(sed -n 's/.*cuda=\([0-9]*\).*/\1/p' <<<"$side")
  [ -n "$cuda" ] || continue
  major=$((cuda / 1000)) minor=$(((cuda % 1000) / 10))
  if [ "$major" -ge 13 ]; then driver=580; else driver=525; fi
  ptx=$(sed -n 's/.*kernels=ptx driver=\([0-9]*\).*/\1/p' <<<"$side")
  [ -n "$ptx" ] && driver=$ptx
  [ "$driver" -le 535 ] && runs_535=1
  plugins=$((plugins + 1))
  echo "package: GPU plugin $(basename "${member%.cuda}"): CUDA $major.$minor, needs NVIDIA driver >= $driver"
done < <(dpkg-deb -c "$DEB" | awk '{print $6}' | grep '/lib/clusterbench/libclusterbench_gpu.*\.so\.cuda$')

if [ "$plugins" -eq 0 ]; then
  cat <<MSG
package: ======================================================================================
package: this package has NO GPU plugin (built without nvcc): on a node with NVIDIA GPUs every
package: GPU case fails. Build where a CUDA toolkit is installed (docs/install.md).
package: ======================================================================================
MSG
elif [ "$runs_535" -eq 0 ]; then
  cat <<MSG
package: ======================================================================================
package: this package's GPU plugin needs driver >= 580 (CUDA 13). On a node with an older driver
package: (the cluster architecture guide specifies 535 with CUDA 12.2) every GPU run stops with exit 2,
package: naming the driver and the plugins present. For driver 535, make the package with
package: "make package" (without CB_SETUP_CUDA12=0): it fetches the CUDA 12.2 wheels and builds the
package: CUDA 12 plugin from them (both plugins are packaged and the binary picks the one the driver
package: runs), or use the container image built on CUDA 12.2 (Containerfile). docs/install.md
package: "Which driver the package needs".
package: ======================================================================================
MSG
else
  echo "package: a node with driver 535 (CUDA 12.2) runs this package's GPU cases"
fi
