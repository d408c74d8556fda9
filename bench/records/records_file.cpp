// records.jsonl read fast: chunks of lines parsed on up to 4 threads with simdjson's on-demand
// parser, each line that it cannot take read by the ordinary path (run_dir.hpp read_records).
#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <thread>

#include "records/ondemand.hpp"
#include "records/run_dir.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace {

namespace od = simdjson::ondemand;
using ondemand::get_string;
using ondemand::raw_object;
using ondemand::raw_value;

/// Reads a JSON number as a double; false for anything else, and for a negative zero (nlohmann
/// reads the integer -0 as 0, simdjson as -0.0: the ordinary path decides).
bool get_double(od::value v, double& out) {
  return !v.get_double().get(out) && !(out == 0 && std::signbit(out));
}

/// Reads a JSON integer that fits an int; false otherwise (a float, a string, out of range).
bool get_int(od::value v, int& out) {
  int64_t n = 0;
  if (v.get_int64().get(n) || n < INT_MIN || n > INT_MAX) return false;
  out = static_cast<int>(n);
  return true;
}

/// Reads a JSON array of numbers; false for anything else (the ordinary path decides).
bool read_doubles(od::value v, std::vector<double>& out) {
  od::array a;
  if (v.get_array().get(a)) return false;
  out.clear();
  for (auto e : a) {
    od::value x;
    double d = 0;
    if (std::move(e).get(x) || !get_double(x, d)) return false;
    out.push_back(d);
  }
  return true;
}

/// Calls `each(key, value)` for every field of an object, in order; false when `v` is not an
/// object, a field does not parse, or `each` returns false.
template <class Each>
bool each_field(od::object o, Each each) {
  for (auto f : o) {
    od::field field;
    std::string_view key;
    if (std::move(f).get(field) || field.unescaped_key().get(key)) return false;
    if (!each(key, field.value())) return false;
  }
  return true;
}
template <class Each>
bool each_field(od::value v, Each each) {
  od::object o;
  return !v.get_object().get(o) && each_field(o, each);
}

/// Builds nlohmann json from a simdjson value as nlohmann's own parser would (a non-negative
/// integer unsigned, a negative one signed, any other number a double, a repeated key's last
/// value), with no second pass over the text. `depth`: the value's depth in its line (the line's
/// object is 1). False where the two could differ or the value is not JSON (a big integer, the
/// integer -0, nesting deeper than kMaxJsonDepth): the ordinary path decides.
bool to_json_value(od::value v, json& out, int depth = 1) {
  od::json_type type;
  if (depth > kMaxJsonDepth || v.type().get(type)) return false;
  switch (type) {
    case od::json_type::object:
      out = json::object();
      return each_field(v, [&](std::string_view key, od::value x) {
        return to_json_value(x, out[std::string(key)], depth + 1);
      });
    case od::json_type::array: {
      od::array a;
      if (v.get_array().get(a)) return false;
      out = json::array();
      for (auto e : a) {
        od::value x;
        if (std::move(e).get(x) || !to_json_value(x, out.emplace_back(), depth + 1)) return false;
      }
      return true;
    }
    case od::json_type::string: {
      std::string_view s;
      if (v.get_string().get(s)) return false;
      out = std::string(s);
      return true;
    }
    case od::json_type::boolean: {
      bool b = false;
      if (v.get_bool().get(b)) return false;
      out = b;
      return true;
    }
    case od::json_type::null: {
      bool null = false;
      out = nullptr;
      return !v.is_null().get(null) && null;
    }
    case od::json_type::number: {
      od::number n;
      if (v.get_number().get(n)) return false;
      if (n.is_double()) {
        out = n.get_double();
      } else if (n.is_uint64()) {
        out = n.get_uint64();
      } else if (n.get_int64() >= 0) {
        if (n.get_int64() == 0 && v.raw_json_token().front() == '-') return false;  // -0
        out = static_cast<std::uint64_t>(n.get_int64());
      } else {
        out = n.get_int64();
      }
      return true;
    }
  }
  return false;
}

bool read_metric(od::value v, Metric& m) {
  bool has_value = false;
  return each_field(v,
                    [&](std::string_view key, od::value x) {
                      if (key == "name") return get_string(x, m.name);
                      if (key == "unit") return get_string(x, m.unit);
                      // A non-finite value is written as null: the ordinary path says so.
                      if (key == "value") return has_value = get_double(x, m.value);
                      if (key == "higher_is_better") return !x.get_bool().get(m.higher_is_better);
                      if (key == "reps") return read_doubles(x, m.reps);
                      if (key == "resolution") return get_double(x, m.resolution);
                      if (key == "work") return get_double(x, m.work);
                      double ignored;  // derived from reps (to_json)
                      if (key == "spread") return get_double(x, ignored);
                      return false;  // skipped values are not validated: the ordinary path
                    }) &&
         has_value;
}

bool read_time(od::value v, TimeStats& t) {
  t = TimeStats{};  // a repeated "time" replaces the earlier one, as in from_json
  return each_field(v, [&](std::string_view key, od::value x) {
    double* d = key == "min"      ? &t.min
                : key == "median" ? &t.median
                : key == "mean"   ? &t.mean
                : key == "p95"    ? &t.p95
                : key == "max"    ? &t.max
                : key == "spread" ? &t.spread
                                  : nullptr;
    if (d) return get_double(x, *d);
    if (key == "n") return get_int(x, t.n);
    return false;  // an unknown key's value would be skipped unvalidated: the ordinary path
  });
}

bool read_scope(od::value v, Scope& s) {
  s = Scope{};  // a repeated "scope" replaces the earlier one, as in from_json
  return each_field(v, [&](std::string_view key, od::value x) {
    if (key == "kind") {
      std::string kind;
      return get_string(x, kind) && parse_scope_kind(kind, s.kind);
    }
    std::string* str = key == "host"         ? &s.host
                       : key == "uuid"       ? &s.uuid
                       : key == "pci_bus_id" ? &s.pci_bus_id
                                             : nullptr;
    if (str) return get_string(x, *str);
    if (key == "rank") return get_int(x, s.rank);
    if (key == "gpu_index") return get_int(x, s.gpu_index);
    if (key == "hosts") {
      od::array a;
      if (x.get_array().get(a)) return false;
      s.hosts.clear();
      for (auto h : a) {
        od::value hv;
        if (std::move(h).get(hv) || !get_string(hv, s.hosts.emplace_back())) return false;
      }
      return true;
    }
    return false;  // an unknown key's value would be skipped unvalidated: the ordinary path
  });
}

/// What one thread reads lines with: simdjson's parsers (one for the line, one for an `extra`
/// read key by key) and the `extra` keys to keep (nullptr: all).
struct LineReader {
  od::parser line, extra;
  simdjson::dom::parser check;  ///< validates the `extra` values not kept
  const ExtraKeys* keep = nullptr;
};

/// A record's `extra` (its raw text, `capacity` readable bytes from its start): every key when
/// `all`, else only the keys of `reader.keep`: the rest is evidence the reader never looks at
/// (fio's own JSON, a link matrix: most of a large run's memory), validated by simdjson, never
/// built. False when a value is not JSON or could read differently (the ordinary path then
/// decides).
bool kept_extra(LineReader& reader, std::string_view text, size_t capacity, bool all, json& out) {
  od::document doc;
  od::object o;
  if (reader.extra.iterate(text.data(), text.size(), capacity).get(doc) || doc.get_object().get(o))
    return false;
  out = json::object();
  return each_field(o, [&](std::string_view key, od::value v) {
    if (all || reader.keep->find(key) != reader.keep->end())
      return to_json_value(v, out[std::string(key)], 3);  // the line, extra, this value
    std::string_view raw;
    return raw_value(v, raw) && !reader.check.parse(raw.data(), raw.size(), false).error();
  });
}

/// The fast path of read_records: simdjson's On-Demand API fills a ResultRecord straight from
/// the line, with no JSON document built first (parsing was most of `report` at 1,000 nodes,
/// docs/report.md "Scale"). It knows only well-formed records: on anything it does not expect (a
/// null, a type to convert, a missing required field, a key it does not read, whose value On-Demand
/// would skip without validating it, a parse error) it returns false and the caller parses the
/// line with nlohmann/json, which accepts it or says what is wrong with it.
/// `capacity` counts the readable bytes from `data` on; simdjson needs SIMDJSON_PADDING of them
/// past the line.
bool fast_record(LineReader& reader, const char* data, size_t len, size_t capacity,
                 ResultRecord& r) {
  od::document doc;
  od::object top;
  if (reader.line.iterate(data, len, capacity).get(doc) || doc.get_object().get(top)) return false;
  std::string_view extra;  // read once the status is known: a failed record keeps all of it
  bool has_schema = false, has_benchmark = false, has_status = false;
  std::string status;
  try {
    const bool read = each_field(top, [&](std::string_view key, od::value x) {
      std::string* str = key == "schema"       ? (has_schema = true, &r.schema)
                         : key == "run_id"     ? &r.run_id
                         : key == "benchmark"  ? (has_benchmark = true, &r.benchmark)
                         : key == "case_key"   ? &r.case_key
                         : key == "status"     ? (has_status = true, &status)
                         : key == "message"    ? &r.message
                         : key == "combine"    ? &r.combine
                         : key == "started_at" ? &r.started_at
                                               : nullptr;
      std::string_view text;
      if (str) return get_string(x, *str);
      if (key == "duration_s") return get_double(x, r.duration_s);
      if (key == "params") {  // an object at depth 2 of the line
        od::json_type t;
        return !x.type().get(t) && t == od::json_type::object && to_json_value(x, r.params, 2);
      }
      if (key == "extra") return raw_object(x, extra);
      if (key == "error")
        return raw_object(x, text) &&
               (r.error = parse_json_text(text, "", 0).get<ErrorInfo>(), true);
      if (key == "time") return read_time(x, r.time);
      if (key == "scope") return read_scope(x, r.scope);
      if (key == "metrics") {
        od::array a;
        if (x.get_array().get(a)) return false;
        r.metrics.clear();
        for (auto m : a) {
          od::value mv;
          if (std::move(m).get(mv) || !read_metric(mv, r.metrics.emplace_back())) return false;
        }
        return true;
      }
      return false;  // an unknown key's value would be skipped unvalidated: the ordinary path
    });
    if (!read) return false;
  } catch (const std::exception&) {  // nlohmann on params/extra/error: the ordinary path says why
    return false;
  }
  // Every token used: text after the record's closing brace is the ordinary path's to reject.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return false;
  if (!(has_schema && has_benchmark && has_status && r.schema == kResultSchema &&
        parse_status(status, r.status)))
    return false;
  if (extra.empty()) return true;
  try {
    return kept_extra(reader, extra, capacity - static_cast<size_t>(extra.data() - data),
                      !reader.keep || r.status != Status::ok, r.extra);
  } catch (const std::exception&) {
    return false;
  }
}

/// One parsed batch of lines: the records, or the first line that failed and why.
struct ParsedBatch {
  std::vector<ResultRecord> records;
  size_t failed_at = SIZE_MAX;  ///< index into the batch's lines
  std::string error;
};

/// Parses lines [begin, end) of `buf` (each a [offset, length) pair; `buf` holds
/// SIMDJSON_PADDING bytes past its last line).
void parse_lines(const std::string& buf, const std::vector<std::pair<size_t, size_t>>& lines,
                 size_t begin, size_t end, LineReader& reader, ParsedBatch& out) {
  out.records.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) {
    const auto [off, len] = lines[i];
    std::string_view line(buf.data() + off, len);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      ResultRecord r;
      if (!fast_record(reader, line.data(), len, buf.size() - off, r))
        r = parse_json_text(line, "", 0).get<ResultRecord>();  // accepts it, or says what is wrong
      check_host_names(r.scope);
      out.records.push_back(std::move(r));
    } catch (const std::exception& e) {
      out.failed_at = i, out.error = error_text(e.what());  // it may quote the bad bytes
      return;
    }
  }
}

}  // namespace

namespace {

/// The lines of buf[0, end), each as (offset, length) without its newline.
std::vector<std::pair<size_t, size_t>> split_lines(const std::string& buf, size_t end) {
  std::vector<std::pair<size_t, size_t>> lines;
  for (size_t at = 0; at < end;) {
    const char* nl = static_cast<const char*>(std::memchr(buf.data() + at, '\n', end - at));
    const size_t stop = nl ? static_cast<size_t>(nl - buf.data()) : end;
    lines.emplace_back(at, stop - at);
    at = stop + 1;
  }
  return lines;
}

/// Parses `lines` of `buf` (padded for simdjson) on up to readers.size() threads, in order, into
/// `parts` (one batch per thread; their arrays' memory reused).
void parse_chunk(const std::string& buf, const std::vector<std::pair<size_t, size_t>>& lines,
                 std::vector<LineReader>& readers, std::vector<ParsedBatch>& parts) {
  parts.resize(std::min(readers.size(), lines.size()));
  for (auto& p : parts) p.records.clear(), p.failed_at = SIZE_MAX, p.error.clear();
  std::vector<std::thread> workers;
  const size_t per = (lines.size() + parts.size() - 1) / parts.size();
  auto range = [&](size_t t) {
    parse_lines(buf, lines, std::min(lines.size(), t * per), std::min(lines.size(), (t + 1) * per),
                readers[t], parts[t]);
  };
  for (size_t t = 1; t < parts.size(); ++t) workers.emplace_back(range, t);
  range(0);
  for (auto& w : workers) w.join();
}

/// A line longer than a chunk that cannot be a record (it starts with a byte no JSON object
/// starts with: the zero-fill a file system leaves after a crash, binary junk) is skipped in O(1)
/// memory, chunk by chunk, to its end: at the end of the file it is ignored with a warning naming
/// its line and size; a newline after it makes it a malformed line like any other (InputError).
/// `buf` holds its first bytes; `line_no` is its line.
void skip_garbage(std::ifstream& in, const std::string& path, int line_no, std::string& buf,
                  RecordsFile& out) {
  const auto first = static_cast<unsigned char>(buf[buf.find_first_not_of(" \t\r")]);
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", first);
  const std::string where = path + ":" + std::to_string(line_no);
  unsigned long long bytes = buf.size();
  buf.assign(1 << 20, '\0');
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    const auto got = static_cast<size_t>(in.gcount());
    const auto nl = std::string_view(buf.data(), got).find('\n');
    if (nl != std::string_view::npos)
      throw InputError(where + ": not a JSON record (a line of " + std::to_string(bytes + nl) +
                       " bytes starting with byte " + hex + ")");
    bytes += got;
  }
  if (in.bad()) throw InputError(path + ": read error (" + std::strerror(errno) + ")");
  out.warnings.push_back(where + ": " + std::to_string(bytes) +
                         " bytes after the last record that are not JSON (starting with byte " +
                         hex + ": a crash's zero-fill?) ignored");
}

}  // namespace

RecordsFile read_records(const std::string& path, const ExtraKeys* keep, bool last_of_each_case) {
  RecordsFile out;
  LastOfEachCase last;
  require_regular_file(path);  // a FIFO would block the read
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  const double file_bytes = ::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) : 0;
  // Line by line, in chunks whose lines the cores parse in parallel: a 1,000-node run holds
  // 790 MB of records (docs/report.md "Scale"), never held as one string.
  constexpr size_t kChunkBytes = 16 << 20;
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  std::vector<LineReader> readers(threads);
  for (auto& r : readers) r.keep = keep;
  // carry: the start of a line the previous chunk cut. Both buffers and the parsed batches keep
  // their memory from chunk to chunk: allocated anew, a 16 MB chunk's pages were faulted in again
  // each time (a third of reading's system time at 1,000 nodes).
  std::string buf, carry;
  buf.reserve(kChunkBytes + (1 << 16) + simdjson::SIMDJSON_PADDING);
  std::vector<ParsedBatch> parts;
  int first_line_no = 1;  // line number of the chunk's first line
  bool eof = false;
  while (!eof) {
    buf.assign(carry);
    carry.clear();
    const size_t had = buf.size();
    buf.resize(had + kChunkBytes);
    in.read(buf.data() + had, static_cast<std::streamsize>(kChunkBytes));
    buf.resize(had + static_cast<size_t>(in.gcount()));
    if (in.bad()) throw InputError(path + ": read error (" + std::strerror(errno) + ")");
    eof = in.eof();
    size_t end = buf.size();
    if (!eof) {  // whole lines now, the cut one with the next chunk
      const size_t nl = buf.rfind('\n');
      if (nl == std::string::npos) {  // one line longer than a chunk: read on
        const size_t start = buf.find_first_not_of(" \t\r");
        if (start != std::string::npos && buf[start] != '{') {  // no record starts so
          skip_garbage(in, path, first_line_no, buf, out);
          break;
        }
        carry = std::move(buf);
        continue;
      }
      end = nl + 1;
      carry.assign(buf, end, std::string::npos);
      buf.resize(end);
    }
    if (end == 0) break;
    const bool last_unterminated = eof && buf.back() != '\n';
    const auto lines = split_lines(buf, end);
    buf.append(simdjson::SIMDJSON_PADDING, '\0');
    if (first_line_no == 1 && !eof)  // room for the whole file's records, from the first chunk's
      out.records.reserve(static_cast<size_t>(static_cast<double>(lines.size()) * 1.05 *
                                              file_bytes / static_cast<double>(end)));
    parse_chunk(buf, lines, readers, parts);
    for (auto& part : parts) {
      for (auto& r : part.records) {
        out.records.push_back(std::move(r));
        if (last_of_each_case) last.add(out.records, out.records.size() - 1);
      }
      if (part.failed_at == SIZE_MAX) continue;
      std::string where = path + ":" + std::to_string(first_line_no + part.failed_at);
      // Cut off by a crash: an unterminated last line that is not whole JSON. Whole JSON that is
      // not a valid record (a wrong status, an array) is an error like on any other line.
      const auto [cut_off, cut_len] = lines[part.failed_at];
      if (last_unterminated && part.failed_at + 1 == lines.size() &&
          !json::accept(std::string_view(buf.data() + cut_off, cut_len))) {
        out.warnings.push_back(where + ": truncated last record ignored (" + part.error + ")");
        break;
      }
      throw InputError(where + ": " + part.error);
    }
    first_line_no += static_cast<int>(lines.size());
  }
  if (last_of_each_case) last.finish(out, path);
  return out;
}

}  // namespace clusterbench
