// The run directory's lock: see run_lock.hpp.
#include "core/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "core/api/error.hpp"

namespace clusterbench {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

/// The value of "key=" in a "pid=P host=H" line.
std::string field(const std::string& line, const std::string& key) {
  std::istringstream in(line);
  for (std::string w; in >> w;)
    if (w.rfind(key + "=", 0) == 0) return w.substr(key.size() + 1);
  return "";
}

/// run.json of `dir` has an exit code: that run ended (a killed run's stays null).
bool run_ended(const std::string& dir) {
  std::string text = read_text(dir + "/run.json");
  auto at = text.find("\"exit_code\"");
  if (at == std::string::npos) return text.empty();
  auto colon = text.find(':', at);
  return colon != std::string::npos &&
         text.compare(text.find_first_not_of(" \t\n", colon + 1), 4, "null") != 0;
}

}  // namespace

std::string run_lock_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

void acquire_run_lock(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, int> held;  // canonical directory -> its locked descriptor
  std::lock_guard<std::mutex> guard(mu);
  std::error_code ec;
  const std::string key = std::filesystem::weakly_canonical(dir, ec).string();
  if (held.count(key)) return;
  const std::string path = dir + "/run.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw InputError(path + ": cannot open the run directory's lock (" + std::strerror(errno) +
                     ")");
  const std::string before = read_text(path);
  const std::string who = "pid " + field(before, "pid") + " on host " + field(before, "host");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw InputError("refused: " + dir + " belongs to a run that is still going (" + who +
                     " holds " + path + "); wait for it to end");
  }
  const std::string host = run_lock_host();
  if (!before.empty() && field(before, "host") != host && !run_ended(dir)) {
    ::close(fd);
    throw InputError("refused: " + dir + " belongs to a run of another host (" + who +
                     ") that has not ended (run.json has no exit code); if that run is gone, "
                     "remove " +
                     path + " and try again");
  }
  const std::string line = "pid=" + std::to_string(::getpid()) + " host=" + host + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) < 0) {
    ::close(fd);
    throw InputError(path + ": cannot write the run directory's lock (" + std::strerror(errno) +
                     ")");
  }
  held[key] = fd;  // kept open: the flock lasts as long as this process
}

}  // namespace clusterbench
