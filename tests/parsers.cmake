# Input parsers under hostile input (issue 20): deep nesting, device files, FIFOs, pathological
# regexes, mistyped fields (< 30 s); verify's memory on a 2 GiB archive member (< 60 s here, the
# 2 GiB hash); libFuzzer over the spec, records/run.json and fio parsers (a clang build, then 30 s
# per target).
cb_integration_test(hostile_input TIMEOUT 120)
cb_integration_test(archive_memory TIMEOUT 240)
cb_integration_test(fuzz_parsers TIMEOUT 1200)
