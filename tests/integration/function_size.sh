#!/usr/bin/env bash
# No function outside tests/ is longer than 80 lines (tests/support/function_size.py: ctags start
# lines and brace matching), and the counter counts a planted long function. Budget: < 10 s.
source "$(dirname "$0")/lib.sh"
F=$CB_SOURCE_DIR/tests/support/function_size.py
expect_rc 0 python3 "$F" "$CB_SOURCE_DIR" --max 80
expect_out "function_size: [0-9]+ functions, 0 over 80 lines"
ok "no function over 80 lines"

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
