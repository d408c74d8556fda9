// libFuzzer target: parse_fio_json over fio's output (tests/fuzz/CMakeLists.txt). FioParseError
// is its rejection (the case is recorded failed); any other exception, crash or hang is a finding.
#include <cstdint>
#include <string>

#include "io/fio_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clusterbench::io;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    FioOutput out = parse_fio_json(text);
    fio_error_text(out.preamble, text);
  } catch (const FioParseError&) {
  }
  return 0;
}
