// NCCL's environment, read once per process at its first use (NCCL_PARAM caches each value;
// later setenv changes are ignored), and NCCL's logging: NCCL_DEBUG, NCCL_DEBUG_SUBSYS and
// NCCL_DEBUG_FILE (%h host, %p pid) are read at the first line logged after start-up or after
// ncclResetDebugInit.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "nccl_impl.hpp"
#include "node.hpp"

extern char** environ;

namespace cbsim {

namespace {

struct Debug {
  bool initialised = false;
  int level = 0;  // 0 none, 1 version, 2 warn, 3 info, 4+ trace
  std::vector<std::string> subsys;
  bool subsys_invert = false;
  FILE* file = nullptr;
  bool version_shown = false;
  std::string last_error;
};

std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}

Debug& debug() {
  static Debug* d = new Debug;
  return *d;
}

std::string expand(const char* pattern) {
  std::string out;
  for (const char* p = pattern; *p; ++p) {
    if (*p == '%' && p[1] == 'h') {
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      out += host, ++p;
    } else if (*p == '%' && p[1] == 'p') {
      out += std::to_string(getpid()), ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

void init_debug(Debug& d) {
  if (d.initialised) return;
  d.initialised = true;
  const char* level = std::getenv("NCCL_DEBUG");
  std::string l = level ? level : "";
  for (char& ch : l) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  d.level = l == "VERSION" ? 1 : l == "WARN" ? 2 : l == "INFO" ? 3 : l == "TRACE" ? 4 : 0;
  const char* subsys = std::getenv("NCCL_DEBUG_SUBSYS");
  d.subsys.clear();
  std::string s = subsys ? subsys : "INIT,BOOTSTRAP,ENV";
  d.subsys_invert = !s.empty() && s[0] == '^';
  if (d.subsys_invert) s.erase(0, 1);
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    for (char& ch : item) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    d.subsys.push_back(item);
  }
  if (d.file && d.file != stdout) std::fclose(d.file);
  d.file = stdout;
  const char* path = std::getenv("NCCL_DEBUG_FILE");
  if (d.level > 0 && path && *path)
    if (FILE* f = std::fopen(expand(path).c_str(), "w")) d.file = f;
}

/// Whether any of the comma-separated subsystems `flags` (a line's NCCL_INIT|NCCL_NET, ...) is
/// logged.
bool subsys_on(const Debug& d, const char* flags) {
  std::stringstream ss(flags);
  for (std::string f; std::getline(ss, f, ',');) {
    bool listed = false;
    for (const std::string& s : d.subsys) listed = listed || s == "ALL" || s == f;
    if (d.subsys_invert ? !listed : listed) return true;
  }
  return false;
}

void write_line(int device, const char* kind, const std::string& text) {
  Debug& d = debug();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::fprintf(d.file, "%s:%d:%ld [%d] NCCL %s %s\n", host, static_cast<int>(getpid()),
               static_cast<long>(syscall(SYS_gettid)), device, kind, text.c_str());
  std::fflush(d.file);
}

/// The "X set by environment to Y." lines, for every variable read (NCCL_DEBUG* excepted).
void log_env(const std::map<std::string, std::string>& env) {
  for (const auto& [k, v] : env)
    if (k.rfind("NCCL_DEBUG", 0) != 0 && k != "NCCL_ALGO")
      nccl_info(0, "ENV", k + " set by environment to " + v + ".");
}

}  // namespace

const std::map<std::string, std::string>& nccl_env() {
  static std::map<std::string, std::string>* env = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    env = new std::map<std::string, std::string>;
    for (char** e = environ; e && *e; ++e)
      if (std::strncmp(*e, "NCCL_", 5) == 0)
        if (const char* eq = std::strchr(*e, '='))
          (*env)[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
    log_env(*env);
  });
  return *env;
}

std::string nccl_env(const std::string& name) {
  const auto& env = nccl_env();
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

bool nccl_logs(const char* subsys) {
  std::lock_guard<std::mutex> lock(log_mutex());
  Debug& d = debug();
  init_debug(d);
  return d.level >= 3 && subsys_on(d, subsys);
}

void nccl_info(int device, const char* subsys, const std::string& text) {
  std::lock_guard<std::mutex> lock(log_mutex());
  Debug& d = debug();
  init_debug(d);
  if (d.level >= 3 && subsys_on(d, subsys)) write_line(device, "INFO", text);
}

void nccl_warn(int device, const std::string& text) {
  std::lock_guard<std::mutex> lock(log_mutex());
  Debug& d = debug();
  init_debug(d);
  if (d.level >= 2) write_line(device, "WARN", text);
}

void nccl_log_version(int device) {
  std::lock_guard<std::mutex> lock(log_mutex());
  Debug& d = debug();
  init_debug(d);
  if (d.version_shown || d.level < 1) return;
  d.version_shown = true;
  const int v = node().nccl_version;
  char text[96];
  std::snprintf(text, sizeof text, "NCCL version %d.%d.%d+cuda%d.%d", v / 10000, (v % 10000) / 100,
                v % 100, CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
  if (d.level >= 3)
    write_line(device, "INFO", text);
  else
    std::fprintf(d.file, "%s\n", text);
}

void nccl_reset_debug() {
  std::lock_guard<std::mutex> lock(log_mutex());
  Debug& d = debug();
  if (d.file && d.file != stdout) std::fclose(d.file);
  d.file = nullptr;
  d.initialised = false;
}

void nccl_set_last_error(int device, const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(log_mutex());
    debug().last_error = text;
  }
  nccl_warn(device, text);
}

const char* nccl_last_error() {
  std::lock_guard<std::mutex> lock(log_mutex());
  return debug().last_error.c_str();
}

}  // namespace cbsim
