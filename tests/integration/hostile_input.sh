#!/usr/bin/env bash
# Hostile input files (issue 20): deep nesting, long `extends` chains, device files and FIFOs,
# pathological regexes, out-of-range numbers and mistyped fields. Each exits 2 within 10 s with a
# message naming the file and the line or field (docs/specs.md "Limits").
source "$(dirname "$0")/lib.sh"

cp -r "$CB_FIXTURES/results/cpu-pass" "$TMP/cpu-pass"  # report writes beside the records
RUN=$TMP/cpu-pass
# in10 WANT CMD...: CMD exits WANT within 10 s (timeout's 124 is never WANT).
in10() {
  local want=$1
  shift
  expect_rc "$want" timeout -s KILL 10 "$@"
}
# A spec row over the CPU model (a string), with `op` and `value` given as JSON text.
row() {
  printf '{"id": "r1", "title": "t", "source": "s", "severity": "fail", "scope": "node",'
  printf ' "aggregate": "each", "unit": "", "select": %s, "op": "%s", "value": %s}' "$1" "$2" "$3"
}
spec() {  # spec FILE ROW [EXTRA]: a one-row table
  printf '{"schema": "clusterbench.spec/1", "name": "x", %s "requirements": [%s]}\n' "${3:-}" "$2" >"$1"
}
cpu_model='{"env": "/cpu/model"}'

# 9. Nesting: a regex of 20,000 nested groups, select.params 100,000 deep, records and run.json.
spec "$TMP/groups.json" "$(row "$cpu_model" matches "\"$(python3 -c 'print("(" * 20000 + "a" + ")" * 20000)')\"")"
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/groups.json"
expect_out "groups.json: requirements\[0\]: requirement 'r1': field 'value' is not a valid regex: groups nested deeper than 64"
ok "a regex of 20,000 nested groups is refused, naming the file and field"

deep=$(python3 -c 'print("{\"a\":" * 100000 + "1" + "}" * 100000)')
spec "$TMP/params.json" "$(row "{\"benchmark\": \"b\", \"metric\": \"m\", \"params\": $deep}" '>=' 1)"
sed -i 's/"unit": ""/"unit": "GB\/s"/' "$TMP/params.json"
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/params.json"
expect_out "params.json: line 1: JSON nested deeper than 128 levels"
ok "select.params nested 100,000 deep names the spec and line"

cp -r "$RUN" "$TMP/deeprec"
python3 - "$TMP/deeprec/records.jsonl" <<'P'
import sys
lines = open(sys.argv[1]).read().splitlines()
deep = '{"a":' * 100000 + '1' + '}' * 100000
lines[2] = lines[2].replace('"params":{', '"params":{"deep":' + deep + ',', 1)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
P
in10 2 "$CB_BIN" report "$TMP/deeprec" --spec "$SPECS/cpu-node.json"
expect_out "deeprec/records.jsonl:3: JSON nested deeper than 128 levels"
ok "a record's params nested 100,000 deep names records.jsonl and the line"

cp -r "$RUN" "$TMP/deeprun"
python3 - "$TMP/deeprun/run.json" <<'P'
import sys
text = open(sys.argv[1]).read()
text = text.replace('"argv": [', '"argv": [' + '[' * 100000 + ']' * 100000 + ', ', 1)
open(sys.argv[1], "w").write(text)
P
in10 2 "$CB_BIN" report "$TMP/deeprun" --spec "$SPECS/cpu-node.json"
expect_out "deeprun/run.json: line 4: JSON nested deeper than 128 levels"
in10 2 "$CB_BIN" compare "$TMP/deeprun" "$RUN"
expect_out "deeprun/run.json: line 4: JSON nested deeper than 128 levels"
ok "run.json nested 100,000 deep names the file and line (with and without its plan)"

mkdir -p "$TMP/chain"
spec "$TMP/chain/t0.json" "$(row "$cpu_model" '!=' '"x"')"
for i in $(seq 1 12000); do
  printf '{"schema": "clusterbench.spec/1", "name": "t%d", "extends": "t%d.json", "requirements": []}\n' \
    "$i" "$((i - 1))" >"$TMP/chain/t$i.json"
done
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/chain/t12000.json"
expect_out "t11984.json: 'extends' chain longer than 16 tables \(extended by .*t11985.json\)"
in10 0 "$CB_BIN" report "$RUN" --spec "$TMP/chain/t15.json"
ok "an extends chain of 12,000 tables is refused past 16"

# 10. Device files and FIFOs, as the spec or as its parent.
in10 2 "$CB_BIN" report "$RUN" --spec /dev/zero
expect_out "^clusterbench: /dev/zero: not a regular file"
spec "$TMP/zero.json" "" '"extends": "/dev/zero",'
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/zero.json"
expect_out "^clusterbench: /dev/zero: not a regular file \(extended by .*zero.json\)"
mkfifo "$TMP/fifo.json"
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/fifo.json"
expect_out "fifo.json: not a regular file"
spec "$TMP/tofifo.json" "" '"extends": "fifo.json",'
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/tofifo.json"
expect_out "fifo.json: not a regular file \(extended by .*tofifo.json\)"
truncate -s 17M "$TMP/big.json"
spec "$TMP/tobig.json" "" '"extends": "big.json",'
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/tobig.json"
expect_out "big.json: larger than 16777216 bytes \(extended by .*tobig.json\)"
cp -r "$RUN" "$TMP/fiforec"
rm "$TMP/fiforec/records.jsonl"
mkfifo "$TMP/fiforec/records.jsonl"
in10 2 "$CB_BIN" report "$TMP/fiforec" --spec "$SPECS/cpu-node.json"
expect_out "fiforec/records.jsonl: not a regular file"
ok "device files, FIFOs and oversized files are refused, naming who referenced them"

# 11. A pathological regex runs in linear time; an invalid one names the file and field.
evil="$(python3 -c 'print("(.*)*" * 30 + "x")')"
spec "$TMP/evil.json" "$(row "$cpu_model" matches "\"$evil\"")"
in10 1 "$CB_BIN" report "$RUN" --spec "$TMP/evil.json"
spec "$TMP/lookbehind.json" "$(row "$cpu_model" matches '"(?<=a)b"')"
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/lookbehind.json"
expect_out "lookbehind.json: requirements\[0\]: requirement 'r1': field 'value' is not a valid regex '\(\?<=a\)b'"
spec "$TMP/badname.json" "$(row "$cpu_model" '!=' '"x"')" '"match": {"gpu_name": "(H100"},'
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/badname.json"
expect_out "badname.json: field 'match.gpu_name' is not a valid regex"
ok "regexes go through RE2: (.*)*...x finishes, invalid patterns exit 2"

# 14. Out-of-range numbers and mistyped fields name the file and the field (a JSON pointer).
cp -r "$RUN" "$TMP/hugegpu"
sed -i '0,/"case_keys": \[/s//"case_keys": ["compute.gemm|{}|node01\/gpu99999999999",/' "$TMP/hugegpu/run.json"
in10 2 "$CB_BIN" report "$TMP/hugegpu" --spec "$SPECS/cpu-node.json"
expect_out "hugegpu/run.json: field '/plan/0/case_keys/0' .* has a GPU index out of range"
cp -r "$RUN" "$TMP/types"
sed -i '2s/"n":20/"n":"twenty"/' "$TMP/types/records.jsonl"
in10 2 "$CB_BIN" report "$TMP/types" --spec "$SPECS/cpu-node.json"
expect_out "types/records.jsonl:2: field '/time/n' is \"twenty\", expected a whole number"
sed -i '2s/"n":"twenty"/"n":20/; 3s/"rank":[0-9]*/"rank":4294967296/' "$TMP/types/records.jsonl"
in10 2 "$CB_BIN" report "$TMP/types" --spec "$SPECS/cpu-node.json"
expect_out "types/records.jsonl:3: field '/scope/rank' is 4294967296, expected a whole number"
sed -i '3s/"rank":4294967296/"rank":0/' "$TMP/types/records.jsonl"
sed -i 's/"world_size": 2/"world_size": "two"/' "$TMP/types/run.json"
in10 2 "$CB_BIN" report "$TMP/types" --spec "$SPECS/cpu-node.json"
expect_out "types/run.json: field '/world_size' is \"two\", expected a whole number"
spec "$TMP/parent.json" '{"id": "p1"}'
spec "$TMP/child.json" "" '"extends": "parent.json",'
in10 2 "$CB_BIN" report "$RUN" --spec "$TMP/child.json"
expect_out "parent.json: requirements\[0\]: requirement 'p1': missing field 'title' \(extended by .*child.json\)"
ok "type and range errors name the file and the field; a parent's errors name its child"

echo "$PASSES passed, 0 failed"
