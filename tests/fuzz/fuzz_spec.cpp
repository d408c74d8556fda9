// libFuzzer target: load_spec over a spec table (tests/fuzz/CMakeLists.txt). An InputError is a
// rejection (exit 2); any other exception, crash or hang is a finding.
#include <cstdint>

#include "records/spec.hpp"
#include "scratch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clusterbench;
  const std::string path = fuzz::scratch_dir() + "/spec.json";
  fuzz::write_file(path, data, size);
  try {
    Spec spec = load_spec(path);
    // What the reports do with a loaded table: match GPU names, expand env pointers.
    if (!spec.match.gpu_name.empty())
      SpecRegex(spec.match.gpu_name, "match.gpu_name", true).search("NVIDIA H100 80GB HBM3");
    for (const auto& r : spec.requirements) {
      if (r.op == "matches") SpecRegex(r.value.get<std::string>(), r.id).search("Intel(R) Xeon");
      if (!r.select.env.empty()) expand_pointer(json::object(), r.select.env);
    }
  } catch (const InputError&) {
  }
  return 0;
}
