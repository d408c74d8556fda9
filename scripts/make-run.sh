#!/usr/bin/env bash
# `make run`: runs the default suite on this node under mpirun (one rank per GPU, else one) and
# prints the verdict. It succeeds whenever the run and its report completed (verdict exit codes
# 0, 1 and 4) and leaves the verdict to the binary's exit code, which it prints.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SUITE=${SUITE:-quick}
BIN=$BUILD/clusterbench

gpus=0
for d in /sys/bus/pci/devices/*; do
  [ -r "$d/vendor" ] || continue
  if [ "$(cat "$d/vendor")" = "0x10de" ] && [[ "$(cat "$d/class")" == 0x030[02]* ]]; then
    gpus=$((gpus + 1))
  fi
done
np=$((gpus > 0 ? gpus : 1))

cmd=("$BIN" run --suite "$SUITE" ${SPEC:+--spec "$SPEC"} ${RUN_ARGS:-})
if grep -q "CLUSTERBENCH_MPI:BOOL=ON" "$BUILD/CMakeCache.txt" 2>/dev/null; then
  # -q: no "job has been aborted" block from mpirun for a FAIL verdict (exit 1): the verdict is
  # the binary's exit code, printed below.
  mpi=(mpirun -q -np "$np" --bind-to none)
  [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
  cmd=("${mpi[@]}" "${cmd[@]}")
fi
echo "make run: ${cmd[*]}"
# The run's own directory comes from its "results: DIR" line: results/latest names whichever run
# started last, which is another one when two runs share results/.
log=$(mktemp /tmp/cb-make-run.XXXXXX)
trap 'rm -f "$log"' EXIT
"${cmd[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
dir=$(sed -n 's/^results: //p' "$log" | head -1)
[ -n "$dir" ] || dir=$(readlink -f results/latest)
case $rc in
  0) verdict="PASS: every row PASS or WARN" ;;
  1) verdict="FAIL: at least one row FAILs" ;;
  4) verdict="INCOMPLETE: no FAIL, but a fail-severity row is MISSING or WAIVED" ;;
  2) echo "make run: the run was refused or its input was bad (exit 2); see above"; exit 2 ;;
  3) echo "make run: the run was aborted (exit 3); see $dir/run.json"; exit 3 ;;
  *) echo "make run: clusterbench ended with exit code $rc"; exit "$rc" ;;
esac
echo "make run: verdict $verdict (clusterbench exit code $rc)"
echo "make run: report in $dir/report.md"
exit 0
