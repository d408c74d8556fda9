// Run settings (settings.hpp).
#include "core/api/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace clusterbench {

bool decimal_start(const std::string& text) {
  size_t i = text.find_first_not_of(" \t");
  if (i != std::string::npos && (text[i] == '+' || text[i] == '-')) ++i;
  if (i >= text.size()) return false;
  // A point must be followed by a digit; "0x", "inf" and "nan" are not decimal.
  const bool digit = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
  const bool point = text[i] == '.' && i + 1 < text.size() &&
                     std::isdigit(static_cast<unsigned char>(text[i + 1])) != 0;
  if (!digit && !point) return false;
  return text.size() < i + 2 || !(text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X'));
}

long long parse_size(const std::string& text, const std::string& what) {
  size_t pos = 0;
  double v = 0;
  try {
    if (!decimal_start(text)) throw std::invalid_argument("not decimal");
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw InputError(what + ": '" + text + "' is not a size (examples: 8, 4K, 64M, 8G)");
  }
  std::string suffix = text.substr(pos);
  double mult = 1;
  if (suffix.empty() || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "KiB")
    mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "TiB")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    throw InputError(what + ": '" + text + "' has an unknown suffix '" + suffix +
                     "' (K, M, G, T are binary, as in nccl-tests)");
  if (v < 0 || !std::isfinite(v)) throw InputError(what + ": '" + text + "' must be >= 0");
  if (v * mult > 1e18) throw InputError(what + ": '" + text + "' is too large");
  return static_cast<long long>(v * mult);
}

Settings::Settings(std::string suite, const std::vector<std::string>& sets)
    : suite_(std::move(suite)) {
  const auto& names = suite_names();
  if (suite_ != "burnin" && std::find(names.begin(), names.end(), suite_) == names.end())
    throw InputError("--suite: '" + suite_ + "' is not one of ci, quick, full");
  for (const auto& kv : sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--set: '" + kv +
                       "' is not KEY=VALUE (e.g. compute.memory_bandwidth.threads=4)");
    std::string key = kv.substr(0, eq);
    if (std::count(key.begin(), key.end(), '.') < 1)
      throw InputError("--set: key '" + key + "' must be id.key or area.key");
    values_[key] = kv.substr(eq + 1);
  }
}

const std::string* Settings::find(const std::string& bench_id, const std::string& key) const {
  if (auto it = values_.find(bench_id + "." + key); it != values_.end()) return &it->second;
  auto dot = bench_id.find('.');
  std::string area = dot == std::string::npos ? bench_id : bench_id.substr(0, dot);
  if (auto it = values_.find(area + "." + key); it != values_.end()) return &it->second;
  return nullptr;
}

std::string Settings::given_key(const std::string& bench_id, const std::string& key) const {
  if (values_.count(bench_id + "." + key)) return bench_id + "." + key;
  auto dot = bench_id.find('.');
  std::string area = dot == std::string::npos ? bench_id : bench_id.substr(0, dot);
  if (values_.count(area + "." + key)) return area + "." + key;
  return bench_id + "." + key;
}

bool Settings::has(const std::string& bench_id, const std::string& key) const {
  return find(bench_id, key) != nullptr;
}

std::string Settings::get(const std::string& bench_id, const std::string& key,
                          const std::string& def) const {
  const std::string* v = find(bench_id, key);
  return v ? *v : def;
}

double Settings::get_double(const std::string& bench_id, const std::string& key, double def) const {
  const std::string* v = find(bench_id, key);
  if (!v) return def;
  try {
    size_t pos = 0;
    if (!decimal_start(*v)) throw std::invalid_argument("not decimal");
    double d = std::stod(*v, &pos);
    if (pos != v->size() || !std::isfinite(d)) throw std::invalid_argument("trailing");
    return d;
  } catch (const std::exception&) {
    throw InputError("--set " + bench_id + "." + key + ": '" + *v + "' is not a number");
  }
}

long long Settings::get_size(const std::string& bench_id, const std::string& key,
                             long long def) const {
  const std::string* v = find(bench_id, key);
  return v ? parse_size(*v, "--set " + bench_id + "." + key) : def;
}

std::vector<std::string> Settings::get_list(const std::string& bench_id, const std::string& key,
                                            const std::vector<std::string>& def) const {
  const std::string* v = find(bench_id, key);
  return v ? split_list(*v) : def;
}

namespace {
[[noreturn]] void not_allowed(const std::string& bench_id, const std::string& key,
                              const std::string& value, const std::vector<std::string>& allowed) {
  std::string known;
  for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
  throw InputError("--set " + bench_id + "." + key + ": unknown value '" + value + "' (" + known +
                   ")");
}
}  // namespace

std::vector<std::string> Settings::get_choices(const std::string& bench_id, const std::string& key,
                                               const std::vector<std::string>& allowed) const {
  auto items = get_list(bench_id, key, allowed);
  for (const auto& item : items)
    if (std::find(allowed.begin(), allowed.end(), item) == allowed.end())
      not_allowed(bench_id, key, item, allowed);
  return items;
}

std::string Settings::get_choice(const std::string& bench_id, const std::string& key,
                                 const std::vector<std::string>& allowed) const {
  std::string v = get(bench_id, key, allowed.at(0));
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    not_allowed(bench_id, key, v, allowed);
  return v;
}

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream ss(csv);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double suite_min_time(const std::string& suite) {
  return suite == "ci" ? 0.05 : suite == "quick" ? 0.5 : 2.0;
}

}  // namespace clusterbench
