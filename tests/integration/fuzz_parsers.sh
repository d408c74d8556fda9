#!/usr/bin/env bash
# libFuzzer over the input parsers (issue 20): builds tests/fuzz with clang (a build of its own
# under $CB_BINARY_DIR/fuzz), then runs each target for $CB_FUZZ_SECONDS (30) s from its seed
# corpus (tests/fuzz/corpus/<target>). Fails on a crash, a hang over 5 s, a leak or an exception
# other than the parser's rejection type; prints libFuzzer's executions per target.
source "$(dirname "$0")/lib.sh"
: "${CB_BINARY_DIR:?CB_BINARY_DIR must name the build directory}"
command -v clang++ >/dev/null || fail "clang++ is missing: scripts/setup.sh installs clang and libclang-rt-14-dev"
SECS=${CB_FUZZ_SECONDS:-30}
BUILD=$CB_BINARY_DIR/fuzz
cmake -S "$CB_SOURCE_DIR/tests/fuzz" -B "$BUILD" -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$TMP/configure.log" 2>&1 || { cat "$TMP/configure.log"; fail "configuring the fuzz build"; }
cmake --build "$BUILD" -j2 >"$TMP/build.log" 2>&1 || { tail -40 "$TMP/build.log"; fail "building the fuzz targets"; }
ok "fuzz targets built with clang (-fsanitize=fuzzer,address)"

mkdir -p "$BUILD/artifacts"
for t in spec records fio; do
  mkdir -p "$TMP/corpus-$t"  # new inputs land here, not in the committed seeds
  (cd "$TMP" && "$BUILD/fuzz_$t" -max_total_time="$SECS" -timeout=5 -rss_limit_mb=2048 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" \
    "$TMP/corpus-$t" "$CB_SOURCE_DIR/tests/fuzz/corpus/$t") >"$TMP/fuzz-$t.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/fuzz-$t.log")
  echo "fuzz_$t: ${execs:-?} executions in $SECS s (stat::number_of_executed_units)"
  if [ "$rc" -ne 0 ] || [ -z "$execs" ]; then
    grep -v '^#' "$TMP/fuzz-$t.log" | tail -60 >&2
    fail "fuzz_$t: exit $rc; the input is in $BUILD/artifacts/$t-*"
  fi
  ok "fuzz_$t: 0 crashes, 0 hangs, every rejection an InputError"
done

echo "$PASSES passed, 0 failed"
