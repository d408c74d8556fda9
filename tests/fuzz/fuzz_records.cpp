// libFuzzer target: the results readers (tests/fuzz/CMakeLists.txt). The first byte chooses:
// 'r' reads the rest as records.jsonl (read_records); otherwise the rest is a run directory's
// run.json, read with its plan ('p') or without. An InputError is a rejection (exit 2); any
// other exception, crash or hang is a finding.
#include <unistd.h>

#include <cstdint>

#include "records/records.hpp"
#include "scratch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clusterbench;
  if (size == 0) return 0;
  const std::string dir = fuzz::scratch_dir();
  try {
    if (data[0] == 'r') {
      fuzz::write_file(dir + "/records.jsonl", data + 1, size - 1);
      RecordsFile f = read_records(dir + "/records.jsonl");
      for (const auto& r : f.records) make_case_key(r.benchmark, r.params, r.scope);
    } else {
      ::unlink((dir + "/records.jsonl").c_str());
      fuzz::write_file(dir + "/run.json", data + 1, size - 1);
      RunDir rd = read_run_dir(dir, data[0] == 'p');
      json back = rd.run;  // what `run --resume` writes back
    }
  } catch (const InputError&) {
  }
  return 0;
}
