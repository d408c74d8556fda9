// Error origin (host, rank) and the CallError text every CHECK macro produces.
#include "core/api/error.hpp"

namespace clusterbench {

namespace {
std::string g_host = "localhost";
int g_rank = 0;
}  // namespace

void set_error_origin(const std::string& host, int rank) {
  g_host = host;
  g_rank = rank;
}
const std::string& origin_host() { return g_host; }
int origin_rank() { return g_rank; }

CallError::CallError(std::string library, std::string code, std::string text, std::string call,
                     std::string where)
    : std::runtime_error(library + " error " + code + " (" + text + ") in " + call + " at " +
                         where + " on " + g_host + " rank " + std::to_string(g_rank)),
      text_(std::move(text)) {
  info_.library = std::move(library);
  info_.code = std::move(code);
  info_.call = std::move(call);
  info_.where = std::move(where);
  info_.host = g_host;
  info_.rank = g_rank;
}

void throw_call_error(const char* library, const std::string& code, const std::string& text,
                      const char* call, const char* file, int line) {
  std::string f = file;
  auto pos = f.find(CLUSTERBENCH_SOURCE_DIR);
  if (pos == 0) f = f.substr(std::string(CLUSTERBENCH_SOURCE_DIR).size() + 1);
  throw CallError(library, code, text, call, f + ":" + std::to_string(line));
}

}  // namespace clusterbench
