#!/usr/bin/env bash
# A bare Debian root filesystem (mmdebstrap --variant=minbase --include=python3), made once per
# machine and cached outside the clone, for the tests that rehearse a machine that has nothing of
# ours (gpu_bundle_rehearsal). Prints its path. Needs root and a Debian mirror the first time.
#
#   scripts/rootfs-minbase.sh [CACHE_DIR]   (default /var/cache/clusterbench/rootfs-minbase)
#
# Exit status: 0 with the path on stdout; 77 when it cannot be made here (no root, no mmdebstrap,
# no mirror), with the reason on stderr.
set -uo pipefail
DIR=${1:-/var/cache/clusterbench/rootfs-minbase}
SUITE=${CLUSTERBENCH_ROOTFS_SUITE:-bookworm}
if [ -x "$DIR/usr/bin/python3" ] && [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "rootfs-minbase: needs root (chroot)" >&2; exit 77; }
command -v mmdebstrap >/dev/null || { echo "rootfs-minbase: no mmdebstrap (scripts/setup.sh)" >&2; exit 77; }
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9  # one maker per machine; the others wait and reuse it
if [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi
rm -rf "$DIR.tmp"
if ! mmdebstrap --variant=minbase --include=python3 --mode=root "$SUITE" "$DIR.tmp" \
    >"$DIR.log" 2>&1; then
  echo "rootfs-minbase: mmdebstrap failed (log: $DIR.log): $(tail -1 "$DIR.log")" >&2
  rm -rf "$DIR.tmp"
  exit 77
fi
touch "$DIR.tmp/.complete"
rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"
echo "$DIR"
