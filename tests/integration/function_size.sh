#!/usr/bin/env bash
# No function outside tests/ is longer than 80 lines, no class longer than 300 and no file longer
# than 800 (tests/support/function_size.py: ctags start lines and brace matching), and the counter
# counts a planted long function, class and file. Budget: < 10 s.
source "$(dirname "$0")/lib.sh"
F=$CB_SOURCE_DIR/tests/support/function_size.py
expect_rc 0 python3 "$F" "$CB_SOURCE_DIR" --max 80
expect_out "function_size: [0-9]+ functions, 0 over 80 lines"
expect_out "function_size: [0-9]+ files and [0-9]+ classes, 0 over 800 and 300 lines"
ok "no function over 80 lines, no class over 300, no file over 800"

# A function of 81 lines (braces in strings and comments do not count) is named with its length.
mkdir -p "$TMP/t/bench/core"
{
  echo 'int long_one(int x) {  // {'
  for i in $(seq 1 79); do echo "  x += $i; /* } */ const char* s$i = \"}\";"; done
  echo '}'
  echo 'int short_one() { return 1; }'
} >"$TMP/t/bench/core/long.cpp"
expect_rc 1 python3 "$F" "$TMP/t" --max 80
expect_out "^bench/core/long.cpp:1: long_one is 81 lines \(max 80\)$"
expect_out "function_size: 2 functions, 1 over 80 lines"
ok "a planted 81-line function is found"

# A class of 301 lines (its functions short) and a file of 801 lines are named with their lengths.
rm -rf "$TMP/t"; mkdir -p "$TMP/t/reports"
{
  echo 'class Wide {'
  for i in $(seq 1 299); do echo "  int f$i() { return $i; }"; done
  echo '};'
  for i in $(seq 1 500); do echo "// line $i"; done
} >"$TMP/t/reports/wide.cpp"
expect_rc 1 python3 "$F" "$TMP/t" --max 80
expect_out "^reports/wide.cpp:1: class Wide is 301 lines \(max 300\)$"
expect_out "^reports/wide.cpp: 801 lines \(max 800 a file\)$"
expect_out "function_size: 1 files and 1 classes, 2 over 800 and 300 lines"
ok "a planted 301-line class and 801-line file are found"
