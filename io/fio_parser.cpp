// fio JSON parser: see fio_parser.hpp and docs/fio.md.
#include "io/fio_parser.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "records/utf8.hpp"

namespace clusterbench::io {

namespace {

double num(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const json& v = j.at(key);
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return std::strtod(v.get<std::string>().c_str(), nullptr);
  return 0;
}

/// Percentile `q` (e.g. 99.9) from fio's map {"99.900000": value}, keys compared numerically.
std::optional<double> percentile(const json& pct, double q) {
  if (!pct.is_object()) return std::nullopt;
  for (const auto& [key, value] : pct.items()) {
    char* end = nullptr;
    double k = std::strtod(key.c_str(), &end);
    if (end != key.c_str() && std::fabs(k - q) < 1e-6 && value.is_number())
      return value.get<double>();
  }
  return std::nullopt;
}

FioDirection direction(const json& d, bool fio2) {
  FioDirection out;
  if (!d.is_object()) return out;
  out.iops = num(d, "iops");
  if (d.contains("bw_bytes")) {
    out.bw_bytes_per_s = num(d, "bw_bytes");
    out.bw_source = "bw_bytes";
  } else {
    out.bw_bytes_per_s = num(d, "bw") * 1024.0;  // KiB/s in fio 2.x and 3.0/3.1
    out.bw_source = "bw*1024";
  }
  // fio 2.x: io_bytes counts KiB; 3.x: bytes (and io_kbytes beside it).
  out.io_bytes = fio2 ? num(d, "io_bytes") * 1024.0 : num(d, "io_bytes");
  if (num(d, "total_ios") > 0 && out.io_bytes == 0) out.io_bytes = 1;  // active, size unknown
  // Latency: clat_ns (ns) in 3.x, clat (us) in 2.x.
  const json* clat = nullptr;
  double to_us = 1.0;
  if (d.contains("clat_ns")) {
    clat = &d.at("clat_ns");
    to_us = 1e-3;
  } else if (d.contains("clat")) {
    clat = &d.at("clat");
  }
  if (clat && clat->is_object()) {
    out.clat_mean_us = num(*clat, "mean") * to_us;
    if (clat->contains("percentile")) {
      const json& p = clat->at("percentile");
      if (auto v = percentile(p, 50.0)) out.clat_p50_us = *v * to_us;
      if (auto v = percentile(p, 99.0)) out.clat_p99_us = *v * to_us;
      if (auto v = percentile(p, 99.9)) out.clat_p999_us = *v * to_us;
    }
  }
  return out;
}

}  // namespace

FioOutput parse_fio_json(const std::string& raw) {
  // fio's bytes (a job or file name, a warning) need not be UTF-8; stored text must be.
  const std::string text = valid_utf8(raw);
  // The document starts with a '{' at the start of a line; a warning line may hold braces itself.
  auto start = text.rfind('{', 0) == 0 ? 0 : text.find("\n{");
  if (start != std::string::npos && start > 0) ++start;
  if (start == std::string::npos) start = text.find('{');
  if (start == std::string::npos)
    throw FioParseError("fio output holds no JSON document (no '{'): " +
                        valid_utf8(text.substr(0, 200)));
  FioOutput out;
  out.preamble = text.substr(0, start);
  json doc;
  try {
    // Nesting first: the copies below are recursive (kMaxJsonDepth, records.hpp).
    check_json_depth(std::string_view(text).substr(start), "", 0);
    // A parser callback is not needed: parse the first complete value and ignore what follows.
    std::istringstream in(text.substr(start));
    in >> doc;
  } catch (const std::exception& e) {  // json::exception, or InputError from the depth check
    throw FioParseError(std::string("fio JSON does not parse: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("jobs") || !doc.at("jobs").is_array())
    throw FioParseError("fio JSON has no \"jobs\" array");
  if (doc.at("jobs").empty())
    throw FioParseError("fio JSON has an empty \"jobs\" array: no job ran");
  // value() would throw json's type_error on a non-string version: only a string is a version.
  if (auto v = doc.find("fio version"); v != doc.end() && v->is_string())
    out.version = v->get<std::string>();
  out.document = doc;
  bool fio2 = out.version.rfind("fio-2.", 0) == 0 || out.version.rfind("fio-1.", 0) == 0;
  if (doc.contains("global options") && doc.at("global options").is_object())
    out.global_options = doc.at("global options");
  int index = 0;
  for (const auto& j : doc.at("jobs")) {
    std::string what = "fio JSON jobs[" + std::to_string(index++) + "]";
    if (!j.is_object() || !j.contains("jobname") || !j.contains("error"))
      throw FioParseError(what + " lacks \"jobname\" or \"error\"");
    if (!j.contains("read") && !j.contains("write"))
      throw FioParseError(what + " has neither \"read\" nor \"write\"");
    FioJob job;
    job.name = j.at("jobname").is_string() ? j.at("jobname").get<std::string>() : "";
    // Clamped before the cast: a double outside int's range would be undefined behaviour.
    const double error = num(j, "error");
    job.error = std::isnan(error) ? 1 : static_cast<int>(std::clamp(error, -1e9, 1e9));
    if (j.contains("read")) job.read = direction(j.at("read"), fio2);
    if (j.contains("write")) job.write = direction(j.at("write"), fio2);
    if (j.contains("job options") && j.at("job options").is_object())
      job.options = j.at("job options");
    out.jobs.push_back(std::move(job));
  }
  return out;
}

std::string fio_error_text(const std::string& preamble, const std::string& stderr_text,
                           int max_lines) {
  std::string out;
  int n = 0;
  for (const std::string* src : {&preamble, &stderr_text}) {
    std::istringstream in(*src);
    std::string line;
    while (n < max_lines && std::getline(in, line)) {
      if (line.rfind("fio:", 0) != 0 && line.find("err=") == std::string::npos) continue;
      if (!out.empty()) out += "; ";
      out += line;
      ++n;
    }
  }
  return out;
}

double fio_in_flight(const json& options) {
  if (!options.is_object() || !options.contains("jobs") || !options["jobs"].is_array()) return 0;
  const json global = options.value("global", json::object());
  auto option = [&](const json& job, const char* key, const std::string& fallback) {
    const json& from = job.contains(key) ? job : global;
    return from.is_object() && from.contains(key) && from[key].is_string()
               ? from[key].get<std::string>()
               : fallback;
  };
  double total = 0;
  for (const auto& job : options["jobs"]) {
    if (!job.is_object()) return 0;
    const std::string engine = option(job, "ioengine", "psync");
    const bool async = engine == "libaio" || engine == "io_uring" || engine == "posixaio";
    const double depth = async ? std::atof(option(job, "iodepth", "1").c_str()) : 1;
    total += std::max(1.0, std::atof(option(job, "numjobs", "1").c_str())) * std::max(1.0, depth);
  }
  return total;
}

}  // namespace clusterbench::io
