#!/usr/bin/env bash
# Installs what clusterbench needs on Debian 12 and does nothing when everything is there.
#   scripts/setup.sh          what `make run` builds and runs with
#   scripts/setup.sh --test   that, and what `make test` adds
# Run (apt): compilers, CMake, OpenMPI, fio, nlohmann-json, simdjson, CLI11, Google Benchmark,
#   hwloc, OpenBLAS, gperftools' tcmalloc, iproute2, gnuplot, libarchive, RE2 (spec regexes),
#   OpenSSL (SHA-256), pkg-config, python3-pip, dpkg-dev (the Debian package's dependencies).
#   pip: nvidia-nvml-dev for nvml.h, into .deps/python of this checkout. Without it NVML support
#   is compiled out (GPUs are still seen on the PCI bus) and this script says so.
# Test only (apt): GoogleTest, universal-ctags (the function_size test), libxml2-utils (xmllint:
#   the junit.xml tests), clang 14 with libFuzzer (fuzz_parsers), time (/usr/bin/time -v),
#   e2fsprogs and util-linux (mkfs.ext4, losetup, fsfreeze: the loop-device tests), mmdebstrap,
#   buildah and podman (the bare-root, package and image tests), numpy/scipy, benchmark tools,
#   Chromium (report.html looked at in a headless browser; `clusterbench report --pdf`),
#   poppler-utils (pdftotext: the PDF's cover page).
#   python3-yaml and python3-jsonschema (the MPIJob checked against the MPI Operator's schema), gnupg
#   (archive --sign and verify of a signed archive).
#   apt-get download: Slurm and munge (slurmctld, slurmd, slurm-client, munge and their plugins),
#   unpacked into .deps/slurm for the one-node Slurm test; not installed, so no systemd unit of
#   theirs is enabled beside a site's own Slurm. Likewise Debian's prometheus into .deps/prometheus
#   for its promtool (the rules of `report --alert-rules` checked and run over made-up series); the
#   server is never installed or started.
#   pip, where nvcc is: the CUDA 12.2 wheels into .deps/cuda12 (the CUDA 12 plugin).
# --package: what `make run` needs, and the CUDA 12.2 wheels that `make package` builds the CUDA 12
#   plugin with (cmake/gpu_plugin_cuda12.cmake).
set -euo pipefail
cd "$(dirname "$0")/.."
TEST=0 CUDA12=0
[ "${1:-}" = "--test" ] && TEST=1 CUDA12=1
[ "${1:-}" = "--package" ] && CUDA12=1

APT_PACKAGES=(
  build-essential g++ cmake make pkg-config git python3 python3-pip dpkg-dev
  libopenmpi-dev openmpi-bin fio nlohmann-json3-dev libcli11-dev libbenchmark-dev
  libhwloc-dev hwloc libopenblas-dev libssl-dev iproute2 procps
  gnuplot-nox libarchive-dev libsimdjson-dev libgoogle-perftools-dev libre2-dev
)
TEST_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-tools python3-numpy python3-scipy time universal-ctags
  libxml2-utils clang libclang-rt-14-dev e2fsprogs util-linux mmdebstrap xz-utils buildah podman
  chromium poppler-utils python3-yaml python3-jsonschema gnupg
)
((TEST)) && APT_PACKAGES+=("${TEST_PACKAGES[@]}")

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# nvml.h: the official header from PyPI (nvidia-nvml-dev), kept inside this checkout.
NVML_DIR=.deps/python
if [ -z "$(find "$NVML_DIR" -name nvml.h -path "*include*" 2>/dev/null | head -n 1)" ]; then
  echo "setup: fetching nvml.h (pip: nvidia-nvml-dev) into $NVML_DIR (this checkout only)"
  if ! python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$NVML_DIR" \
      nvidia-nvml-dev >/dev/null 2>&1; then
    echo "setup: nvidia-nvml-dev could not be installed: NVML support will be compiled out" \
         "(GPUs are still inventoried from the PCI bus)"
  fi
fi
# CUDA 12.2 runtime, cuBLAS, NCCL, NVRTC and the nvcc wheel's crt headers and ptxas: the CUDA 12
# plugin is built from them (cmake/gpu_plugin_cuda12.cmake: PyPI has no CUDA 12 nvcc, so its kernels
# are compiled to PTX by NVRTC 12.2). About 1 GB unpacked; `make test` and `make package` only;
# CB_SETUP_CUDA12=0 skips it (no CUDA 12 plugin then).
CUDA12_DIR=.deps/cuda12
CUDA12_WHEELS=(nvidia-cuda-nvcc-cu12==12.2.140 nvidia-cuda-runtime-cu12==12.2.140
               nvidia-cuda-nvrtc-cu12==12.2.140 nvidia-cublas-cu12==12.2.5.6 nvidia-nccl-cu12==2.18.3)
have_nvcc() { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }
if ((CUDA12)) && [ "${CB_SETUP_CUDA12:-1}" != "0" ] && have_nvcc &&
   ! { [ -f "$CUDA12_DIR/nvidia/cuda_runtime/lib/libcudart.so.12" ] &&
       [ -f "$CUDA12_DIR/nvidia/cublas/lib/libcublasLt.so.12" ] &&
       [ -f "$CUDA12_DIR/nvidia/nccl/lib/libnccl.so.2" ] &&
       [ -f "$CUDA12_DIR/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ] &&
       [ -f "$CUDA12_DIR/nvidia/cuda_nvcc/include/crt/host_config.h" ]; }; then
  echo "setup: fetching CUDA 12.2 runtime, NVRTC, cuBLAS 12.2 and NCCL 2.18 (pip) for the CUDA 12 plugin"
  if ! python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade \
      --target "$CUDA12_DIR" "${CUDA12_WHEELS[@]}" >"$CUDA12_DIR.log" 2>&1; then
    tail -n 20 "$CUDA12_DIR.log" >&2
    echo "setup: the CUDA 12 wheels could not be installed (pip's output above, all of it in" \
         "$CUDA12_DIR.log); CB_SETUP_CUDA12=0 builds without the CUDA 12 plugin" >&2
    exit 1
  fi
fi
# Slurm and munge for tests/integration/reports_slurm.sh: Debian's packages unpacked (dpkg-deb -x:
# no maintainer script runs, nothing outside this checkout); the test puts them on its PATH.
SLURM_DIR=.deps/slurm
SLURM_DEBS=(slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libmunge2)
if ((TEST)) && [ ! -x "$SLURM_DIR/usr/sbin/slurmd" ]; then
  echo "setup: unpacking Slurm and munge (${SLURM_DEBS[*]}) into $SLURM_DIR"
  debs=$(mktemp -d)
  get_debs() { (cd "$debs" && apt-get download -qq "${SLURM_DEBS[@]}" >/dev/null 2>&1); }
  if ! get_debs; then
    $SUDO apt-get update -qq
    get_debs || { echo "setup: apt-get download ${SLURM_DEBS[*]} failed" >&2; exit 1; }
  fi
  rm -rf "$SLURM_DIR.part"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$SLURM_DIR.part"; done
  # The names the packages' update-alternatives would give the daemons.
  for d in slurmctld slurmd slurmstepd; do ln -s "$d-wlm" "$SLURM_DIR.part/usr/sbin/$d"; done
  rm -rf "$debs" "$SLURM_DIR"
  mv "$SLURM_DIR.part" "$SLURM_DIR"
fi
# promtool from Debian's prometheus package, unpacked likewise (tests/integration/alert_rules.sh).
PROM_DIR=.deps/prometheus
if ((TEST)) && [ ! -x "$PROM_DIR/usr/bin/promtool" ]; then
  echo "setup: unpacking promtool (Debian's prometheus package) into $PROM_DIR"
  debs=$(mktemp -d)
  if ! (cd "$debs" && apt-get download -qq prometheus >/dev/null 2>&1); then
    $SUDO apt-get update -qq
    (cd "$debs" && apt-get download -qq prometheus >/dev/null 2>&1) ||
      { echo "setup: apt-get download prometheus failed" >&2; exit 1; }
  fi
  rm -rf "$PROM_DIR.part" "$PROM_DIR"
  dpkg-deb -x "$debs"/prometheus_*.deb "$PROM_DIR.part"
  rm -rf "$debs"
  mv "$PROM_DIR.part" "$PROM_DIR"
fi
if have_nvcc; then
  :
else
  echo "setup: nvcc not found: the GPU plugin will not be built (GPU cases are waived)"
fi
exit 0
