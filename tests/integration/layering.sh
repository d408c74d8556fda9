#!/usr/bin/env bash
# The include and link rules of docs/architecture.md hold over the tree (tests/support/layering.py),
# and the check finds a planted breach of each kind. Budget: < 5 s.
source "$(dirname "$0")/lib.sh"
L=$CB_SOURCE_DIR/tests/support/layering.py
expect_rc 0 python3 "$L" "$CB_SOURCE_DIR"
expect_out "layering: [0-9]+ source files, 0 breach"
ok "the tree keeps the layering rules"

# A copy of the tree's sources and CMake files, then one breach at a time.
copy() {
  rm -rf "$TMP/t"; mkdir -p "$TMP/t"
  (cd "$CB_SOURCE_DIR" && find bench compute collectives io network reports \
     \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name CMakeLists.txt \) \
     -print0 | xargs -0 cp --parents -t "$TMP/t")
  cp "$CB_SOURCE_DIR/CMakeLists.txt" "$TMP/t/"
}
plant() {  # plant FILE LINE WANT-REGEX
  copy
  printf '%s\n' "$2" >>"$TMP/t/$1"
  expect_rc 1 python3 "$L" "$TMP/t"
  expect_out "$3"
}
plant bench/core/sink.cpp '#include "reports/report.hpp"' "^bench/core/sink.cpp:[0-9]+: core includes reports/report.hpp"
plant bench/records/result.cpp '#include "core/api/context.hpp"' "records includes bench/core/api/context.hpp"
plant bench/env/nvml.cpp '#include "core/error.hpp"' "env includes bench/core/error.hpp"
plant reports/render.cpp '#include "core/benchmark.hpp"' "reports includes bench/core/benchmark.hpp"
plant collectives/all_reduce.cpp '#include "compute/gemm.hpp"' "collectives includes compute/gemm.hpp"
plant io/fio.cpp '#include "app/report_command.hpp"' "io includes bench/app/report_command.hpp"
plant compute/gemm.cpp '#include "reports/report.hpp"' "compute includes reports/report.hpp"
# bench/core's internals are out of a benchmark folder's reach: only bench/core/api/ (and an old
# path that only forwards to it) may be included.
plant collectives/all_reduce.cpp '#include "core/watchdog.hpp"' "^collectives/all_reduce.cpp:[0-9]+: collectives includes bench/core/watchdog.hpp, internal to bench/core"
plant io/fio.cpp '#include "core/session.hpp"' "^io/fio.cpp:[0-9]+: io includes bench/core/session.hpp, internal to bench/core"
plant network/p2p.hpp '#include "core/case_runner.hpp"' "^network/p2p.hpp:[0-9]+: network includes bench/core/case_runner.hpp, internal"
plant bench/CMakeLists.txt 'target_link_libraries(clusterbench_core PUBLIC clusterbench_reports)' "clusterbench_core links clusterbench_reports"
ok "a planted include or link breach of each kind is found and named"
