// The readers of /sys and /proc below a root (sysfs.hpp).
#include "env/sysfs.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "records/utf8.hpp"

namespace clusterbench::sysfs {

namespace fs = std::filesystem;

std::string under(const std::string& root, const std::string& abs) {
  if (root.empty() || root == "/") return abs;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r + abs;
}

bool is_live(const std::string& root) { return root.empty() || root == "/"; }

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::optional<std::string> read_raw(const std::string& path, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (why) *why = std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    if (why) *why = std::strerror(errno);
    return std::nullopt;
  }
  return ss.str();
}

std::optional<std::string> read_text(const std::string& path, std::string* why) {
  auto raw = read_raw(path, why);
  if (!raw) return std::nullopt;
  return valid_utf8(trim(*raw));
}

std::string read_or_empty(const std::string& path) { return read_text(path).value_or(""); }

std::optional<long long> parse_ll(const std::string& s, int base) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, base);
  if (errno != 0 || end == s.c_str()) return std::nullopt;
  return v;
}

std::optional<long long> read_ll(const std::string& path, int base) {
  auto t = read_text(path);
  if (!t) return std::nullopt;
  return parse_ll(*t, base);
}

std::vector<std::string> list_dir(const std::string& path, std::string* why) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(path, ec);
  if (ec) {
    if (why) *why = ec.message();
    return names;
  }
  for (const auto& e : it) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec)) && !ec;
}

std::string resolved(const std::string& link) {
  std::error_code ec;
  fs::path p = fs::canonical(link, ec);
  return ec ? std::string() : p.string();
}

DiskIdentity disk_identity(const std::string& dir, bool nvme) {
  DiskIdentity d;
  const std::string rot = read_or_empty(dir + "/queue/rotational");
  if (rot == "0" || rot == "1") d.rotational = rot == "1";
  d.model = read_or_empty(dir + "/device/model");
  d.serial = read_or_empty(dir + "/device/serial");
  if (d.serial.empty()) d.serial = read_or_empty(dir + "/serial");  // virtio-blk
  d.firmware = read_or_empty(dir + (nvme ? "/device/firmware_rev" : "/device/rev"));
  return d;
}

}  // namespace clusterbench::sysfs
