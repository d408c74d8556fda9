// Health counter deltas (health.hpp, docs/health.md): start and end snapshots -> one value per
// metric and item, with the evidence. Reads the snapshots only.
#include "reports/health.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace clusterbench::report {

namespace {

using Count = unsigned long long;

const std::vector<std::string> kGpuMetrics = {
    "gpu.ecc_uncorrected",       "gpu.ecc_corrected",           "gpu.retired_pages",
    "gpu.retired_pages_pending", "gpu.row_remap_uncorrectable", "gpu.row_remap_pending",
    "gpu.row_remap_failed"};
const std::vector<std::string> kNvlinkMetrics = {"gpu.nvlink_crc", "gpu.nvlink_replay",
                                                 "gpu.nvlink_recovery"};
const std::vector<std::string> kIbMetrics = {"ib.symbol_error", "ib.link_downed",
                                             "ib.link_error_recovery", "ib.port_rcv_errors",
                                             "ib.port_xmit_discards"};
const std::vector<std::string> kAerMetrics = {"pcie.aer_correctable", "pcie.aer_nonfatal",
                                              "pcie.aer_fatal"};

/// A counter at a JSON pointer, when present and a number.
std::optional<Count> counter(const json& doc, const std::string& pointer) {
  if (!doc.is_object()) return std::nullopt;
  const json::json_pointer p(pointer);
  if (!doc.contains(p)) return std::nullopt;
  const json& v = doc.at(p);
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() >= 0))
    return v.get<Count>();
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return std::nullopt;
}

/// What rose between two readings. A counter that fell was reset (volatile ECC counts reset
/// when the driver reloads): what it counts now rose since the reset.
struct Rise {
  std::optional<Count> delta;
  std::string text;  ///< "0 -> 2", "5 -> 1 (reset)", "absent at end"
};

Rise rise(const std::optional<Count>& a, const std::optional<Count>& b) {
  Rise r;
  if (!a && !b) {
    r.text = "not reported";
  } else if (!a) {
    r.text = "absent at start";
  } else if (!b) {
    r.text = "absent at end";
  } else if (*b >= *a) {
    r.delta = *b - *a;
    r.text = std::to_string(*a) + " -> " + std::to_string(*b);
  } else {
    r.delta = *b;
    r.text = std::to_string(*a) + " -> " + std::to_string(*b) + " (reset)";
  }
  return r;
}

json value_of(const std::optional<Count>& c) { return c ? json(*c) : json(nullptr); }

/// Elements of an array field, keyed by a string field.
std::map<std::string, const json*> by_key(const json& doc, const char* array, const char* key) {
  std::map<std::string, const json*> out;
  if (!doc.is_object() || !doc.contains(array) || !doc[array].is_array()) return out;
  for (const auto& e : doc[array])
    if (e.is_object() && e.contains(key))
      out[e[key].is_string() ? e[key].get<std::string>() : e[key].dump()] = &e;
  return out;
}

/// An array member of a snapshot, by reference (never a temporary: items point into it).
const json& array_of(const json& doc, const char* key) {
  static const json kEmpty = json::array();
  if (!doc.is_object()) return kEmpty;
  auto it = doc.find(key);
  return it != doc.end() && it->is_array() ? *it : kEmpty;
}

const json& or_null(const json* p) {
  static const json kNull;
  return p ? *p : kNull;
}

std::string gpu_item(const std::string& host, const json& g) {
  return host + "/gpu" + std::to_string(g.value("index", -1)) + "[" + g.value("uuid", "") + "]@" +
         g.value("pci_bus_id", "");
}

/// The key that matches one GPU across snapshots: its UUID, else its index.
std::string gpu_match_key(const json& g) {
  const std::string uuid = g.value("uuid", "");
  return uuid.empty() ? "#" + std::to_string(g.value("index", -1)) : uuid;
}

/// XID events of one GPU (by PCI bus id) from the two sources.
struct XidSeen {
  Count nvml = 0, log = 0;
  std::vector<std::string> what;
  Count count() const { return std::max(nvml, log); }
  std::string detail() const {
    std::string out;
    for (const auto& w : what) out += (out.empty() ? "" : "; ") + w;
    return out;
  }
};

/// XID events by PCI bus id ("" when unknown): `watch`'s NVML events, and the kernel log records
/// of `end_log` after `start_log`'s last sequence number. An empty object skips a source.
std::map<std::string, XidSeen> xid_events(const json& watch, const json& start_log,
                                          const json& end_log) {
  std::map<std::string, XidSeen> by_bus;
  for (const auto& ev : watch.value("events", json::array())) {
    XidSeen& s = by_bus[ev.value("pci_bus_id", "")];
    ++s.nvml;
    s.what.push_back("NVML XID " + ev.value("xid", json(0)).dump() + " at " + ev.value("at", ""));
  }
  const long long after = start_log.value("last_seq", -1LL);
  for (const auto& x : end_log.value("xid", json::array())) {
    if (x.value("seq", -1LL) <= after) continue;
    XidSeen& s = by_bus[x.value("pci_bus_id", "")];
    ++s.log;
    s.what.push_back("kernel log: " + x.value("text", ""));
  }
  return by_bus;
}

/// Why `counter` of a link snapshot is absent, from its "unreadable" object.
std::string unreadable(const json& l, const char* counter) {
  if (l.is_object() && l.contains("unreadable") && l["unreadable"].is_object() &&
      l["unreadable"].contains(counter) && l["unreadable"][counter].is_string())
    return " (" + l["unreadable"][counter].get<std::string>() + ")";
  return "";
}

/// CRC errors of a link from the DL counters (flit + data), the CRC field value, or NVLink5's
/// effective errors, with how they were read.
std::pair<Rise, std::string> nvlink_crc(const json& ls, const json& le) {
  Rise flit = rise(counter(ls, "/crc_flit"), counter(le, "/crc_flit"));
  Rise data = rise(counter(ls, "/crc_data"), counter(le, "/crc_data"));
  if (flit.delta || data.delta) {
    Rise r;
    r.delta = flit.delta.value_or(0) + data.delta.value_or(0);
    return {r, "CRC flit " + flit.text + ", CRC data " + data.text};
  }
  Rise crc = rise(counter(ls, "/crc"), counter(le, "/crc"));
  if (crc.delta) return {crc, "CRC " + crc.text};
  Rise eff = rise(counter(ls, "/effective_errors"), counter(le, "/effective_errors"));
  if (eff.delta) return {eff, "effective errors (NVLink5) " + eff.text};
  return {flit, "CRC flit " + flit.text + ", CRC data " + data.text + unreadable(le, "crc")};
}

/// Why a GPU's ECC counters are absent, from its snapshot status.
std::string status_note(const json& g) {
  const std::string st = g.value("status", "");
  return st.empty() || st == "ok" ? " (ECC disabled or not supported)" : " (" + st + ")";
}

class Builder {
 public:
  Builder(const json& start, const json& end, const std::string& host)
      : start_(start), end_(end), host_(host) {}

  std::vector<HealthValue> build() {
    if (!start_.is_object() || start_.empty() || !end_.is_object() || end_.empty()) {
      const std::string why = !start_.is_object() || start_.empty()
                                  ? "no start snapshot (a run without health counters)"
                                  : "no end snapshot: the run did not finish";
      for (const auto& m : health_metrics()) add(m, host_, nullptr, why);
      return std::move(out_);
    }
    gpus();
    xids();
    ib_ports();
    pcie_aer();
    return std::move(out_);
  }

 private:
  HealthValue& add(const std::string& metric, const std::string& item, json value,
                   const std::string& detail) {
    HealthValue v;
    v.metric = metric, v.item = item, v.value = std::move(value), v.detail = detail;
    out_.push_back(std::move(v));
    return out_.back();
  }

  HealthValue& add_gpu(const std::string& metric, const json& g, const std::string& item,
                       json value, const std::string& detail) {
    HealthValue& v = add(metric, item, std::move(value), detail);
    v.gpu_index = g.value("index", -1);
    v.uuid = g.value("uuid", "");
    v.pci_bus_id = g.value("pci_bus_id", "");
    return v;
  }

  /// GPUs of both snapshots, matched by UUID, in end order then start-only ones.
  std::vector<std::pair<const json*, const json*>> gpu_pairs() const {
    std::vector<std::pair<const json*, const json*>> pairs;
    std::map<std::string, const json*> starts;
    for (const auto& g : array_of(start_, "gpus")) starts[gpu_match_key(g)] = &g;
    std::set<std::string> seen;
    for (const auto& g : array_of(end_, "gpus")) {
      auto it = starts.find(gpu_match_key(g));
      pairs.emplace_back(it == starts.end() ? nullptr : it->second, &g);
      seen.insert(gpu_match_key(g));
    }
    for (const auto& [k, g] : starts)
      if (!seen.count(k)) pairs.emplace_back(g, nullptr);
    return pairs;
  }

  void gpus() {
    const std::string nvml = end_.value("nvml", "");
    auto pairs = gpu_pairs();
    if (pairs.empty()) {
      const bool none = nvml == "ok" && start_.value("nvml", "") == "ok";
      for (const auto& m : kGpuMetrics)
        add(m, host_, none ? json(0) : json(nullptr),
            none ? "no GPU in the snapshots" : "NVML: " + (nvml.empty() ? "not read" : nvml));
      for (const auto& m : kNvlinkMetrics)
        add(m, host_, none ? json(0) : json(nullptr),
            none ? "no GPU in the snapshots" : "NVML: " + (nvml.empty() ? "not read" : nvml));
      return;
    }
    for (const auto& [s, e] : pairs) {
      const json& g = e ? *e : *s;
      const std::string item = gpu_item(host_, g);
      if (!s || !e) {
        const std::string why = !e ? "GPU absent from the end snapshot (lost during the run?)"
                                   : "GPU absent from the start snapshot";
        for (const auto& m : kGpuMetrics) add_gpu(m, g, item, nullptr, why);
        continue;
      }
      ecc(*s, *e, item, "gpu.ecc_uncorrected", "uncorrected");
      ecc(*s, *e, item, "gpu.ecc_corrected", "corrected");
      retired(*s, *e, item);
      remap(*s, *e, item);
      if (!nvlink(*s, *e, item)) no_nvlink_links(*e, item);
    }
  }

  /// A GPU whose snapshots list no NVLink link: 0 errors where it has no NVLink at all, else
  /// unknown (null, MISSING) with why, never a 0 for counters nobody read.
  void no_nvlink_links(const json& e, const std::string& item) {
    const std::string status = e.value("nvlink_status", "");
    const bool none = status == "no NVLink on this GPU";
    for (const auto& m : kNvlinkMetrics)
      add_gpu(m, e, item, none ? json(0) : json(nullptr),
              none ? status
              : status.empty()
                  ? "no NVLink counters in the snapshots (the run did not read them per link)"
                  : "NVLink counters not read: " + status);
  }

  void ecc(const json& s, const json& e, const std::string& item, const std::string& metric,
           const std::string& error) {
    Rise v = rise(counter(s, "/ecc/volatile/" + error), counter(e, "/ecc/volatile/" + error));
    Rise a = rise(counter(s, "/ecc/aggregate/" + error), counter(e, "/ecc/aggregate/" + error));
    std::optional<Count> d;
    if (v.delta || a.delta) d = std::max(v.delta.value_or(0), a.delta.value_or(0));
    std::string detail = "volatile " + v.text + ", aggregate " + a.text;
    if (!d) detail += status_note(e);
    add_gpu(metric, e, item, value_of(d), detail);
  }

  void retired(const json& s, const json& e, const std::string& item) {
    Rise sb =
        rise(counter(s, "/retired_pages/single_bit"), counter(e, "/retired_pages/single_bit"));
    Rise db =
        rise(counter(s, "/retired_pages/double_bit"), counter(e, "/retired_pages/double_bit"));
    std::optional<Count> d;
    if (sb.delta || db.delta) d = sb.delta.value_or(0) + db.delta.value_or(0);
    add_gpu("gpu.retired_pages", e, item, value_of(d),
            "single bit " + sb.text + ", double bit " + db.text);
    auto pending = counter(e, "/retired_pages/pending");
    // Ampere and newer remap rows instead of retiring pages: no retirement can be pending.
    if (!pending && counter(e, "/row_remap/pending")) pending = 0;
    add_gpu("gpu.retired_pages_pending", e, item, value_of(pending),
            pending ? (*pending                      ? "a page retirement is pending: reset the GPU"
                       : e.contains("retired_pages") ? "none pending"
                                                     : "row remapping GPU: no page retirement")
                    : "not reported");
  }

  void remap(const json& s, const json& e, const std::string& item) {
    Rise u = rise(counter(s, "/row_remap/uncorrectable"), counter(e, "/row_remap/uncorrectable"));
    Rise c = rise(counter(s, "/row_remap/correctable"), counter(e, "/row_remap/correctable"));
    std::string hist;
    if (e.contains("row_remap") && e["row_remap"].contains("histogram")) {
      const json& h = e["row_remap"]["histogram"];
      hist = "; histogram (banks by spare rows left) max " + h.value("max", json(0)).dump() +
             ", high " + h.value("high", json(0)).dump() + ", partial " +
             h.value("partial", json(0)).dump() + ", low " + h.value("low", json(0)).dump() +
             ", none " + h.value("none", json(0)).dump();
    }
    // Pre-Ampere GPUs retire pages instead: no remapping can be pending or fail.
    const bool retires = !e.contains("row_remap") && e.contains("retired_pages");
    auto remap_or_zero = [&](const char* ptr) {
      auto v = counter(e, ptr);
      return v || !retires ? v : std::optional<Count>(0);
    };
    add_gpu("gpu.row_remap_uncorrectable", e, item, value_of(retires && !u.delta ? 0 : u.delta),
            "uncorrectable " + u.text + ", correctable " + c.text + hist);
    auto pending = remap_or_zero("/row_remap/pending");
    auto failed = remap_or_zero("/row_remap/failed");
    add_gpu("gpu.row_remap_pending", e, item, value_of(pending),
            pending
                ? (*pending ? "a row remapping is pending: reset the GPU" : "none pending") + hist
                : std::string("not reported"));
    add_gpu("gpu.row_remap_failed", e, item, value_of(failed),
            failed ? (*failed ? "a row remapping failed: the GPU is out of spare rows"
                              : "none failed") +
                         hist
                   : std::string("not reported"));
  }

  bool nvlink(const json& s, const json& e, const std::string& item) {
    auto starts = by_key(s, "nvlink", "link");
    auto ends = by_key(e, "nvlink", "link");
    if (ends.empty() && starts.empty()) return false;
    // Links in numeric order.
    std::set<int> links;
    for (const auto& [k, l] : ends) links.insert(std::stoi(k));
    for (const auto& [k, l] : starts) links.insert(std::stoi(k));
    for (int link : links) {
      const std::string k = std::to_string(link);
      const json& ls = or_null(starts.count(k) ? starts[k] : nullptr);
      const json& le = or_null(ends.count(k) ? ends[k] : nullptr);
      const std::string li = item + "/nvlink" + k;
      auto [crc, crc_text] = nvlink_crc(ls, le);
      add_gpu("gpu.nvlink_crc", e, li, value_of(crc.delta), crc_text);
      Rise replay = rise(counter(ls, "/replay"), counter(le, "/replay"));
      add_gpu("gpu.nvlink_replay", e, li, value_of(replay.delta),
              "replay " + replay.text + (replay.delta ? "" : unreadable(le, "replay")));
      Rise rec = rise(counter(ls, "/recovery"), counter(le, "/recovery"));
      add_gpu("gpu.nvlink_recovery", e, li, value_of(rec.delta),
              "recovery " + rec.text + (rec.delta ? "" : unreadable(le, "recovery")));
    }
    return true;
  }

  /// XID events during the run: NVML's events (end's xid_watch) and kernel log records after the
  /// start snapshot's last sequence number; per GPU the larger count of the two sources, since
  /// both see the same event.
  void xids() {
    const json& watch = end_.value("xid_watch", json::object());
    const bool nvml_ok = watch.value("status", "") == "ok";
    const json& ks = start_.value("kernel_log", json::object());
    const json& ke = end_.value("kernel_log", json::object());
    const bool log_ok = ks.value("readable", false) && ke.value("readable", false) &&
                        ks.value("last_seq", -1LL) >= 0;
    if (!nvml_ok && !log_ok) {
      add("gpu.xid", host_, nullptr,
          "no XID source: NVML events: " + watch.value("status", "not recorded") +
              "; kernel log: " + ke.value("status", "not read") +
              (ke.value("readable", false) && !ks.value("readable", false)
                   ? " (unreadable at start)"
                   : ""));
      return;
    }
    const std::string sources = std::string(nvml_ok ? "NVML events" : "") +
                                (nvml_ok && log_ok ? " and " : "") + (log_ok ? "kernel log" : "");
    add_xids(xid_events(nvml_ok ? watch : json::object(), ks, log_ok ? ke : json::object()),
             sources);
  }

  /// One gpu.xid value per GPU of the end snapshot, and per bus id with events but no GPU.
  void add_xids(const std::map<std::string, XidSeen>& by_bus, const std::string& sources) {
    std::set<std::string> judged;
    for (const auto& g : array_of(end_, "gpus")) {
      const std::string bus = g.value("pci_bus_id", "");
      judged.insert(bus);
      auto it = by_bus.find(bus);
      if (it == by_bus.end())
        add_gpu("gpu.xid", g, gpu_item(host_, g), 0, "no XID during the run (" + sources + ")");
      else
        add_gpu("gpu.xid", g, gpu_item(host_, g), it->second.count(), it->second.detail());
    }
    for (const auto& [bus, s] : by_bus) {
      if (judged.count(bus)) continue;
      HealthValue& v =
          add("gpu.xid", host_ + "/pci[" + (bus.empty() ? "?" : bus) + "]", s.count(), s.detail());
      v.pci_bus_id = bus;
    }
    if (array_of(end_, "gpus").empty() && by_bus.empty())
      add("gpu.xid", host_, 0, "no XID during the run (" + sources + ")");
  }

  void ib_ports() {
    auto starts = by_key(start_, "ib_ports", "name");
    auto ends = by_key(end_, "ib_ports", "name");
    if (starts.empty() && ends.empty()) {
      for (const auto& m : kIbMetrics)
        add(m, host_, nullptr, "no InfiniBand port on this node").absent = true;
      return;
    }
    std::set<std::string> names;
    for (const auto& [n, p] : ends) names.insert(n);
    for (const auto& [n, p] : starts) names.insert(n);
    for (const auto& name : names) {
      const json& s = or_null(starts.count(name) ? starts[name] : nullptr);
      const json& e = or_null(ends.count(name) ? ends[name] : nullptr);
      for (const auto& m : kIbMetrics) {
        const std::string c = m.substr(3);
        Rise r = rise(counter(s, "/counters/" + c), counter(e, "/counters/" + c));
        add(m, host_ + "/nic[" + name + "]", value_of(r.delta), c + " " + r.text);
      }
    }
  }

  void pcie_aer() {
    auto starts = by_key(start_, "pcie_aer", "pci_bus_id");
    auto ends = by_key(end_, "pcie_aer", "pci_bus_id");
    const std::pair<const char*, const char*> kinds[] = {{"correctable", "TOTAL_ERR_COR"},
                                                         {"nonfatal", "TOTAL_ERR_NONFATAL"},
                                                         {"fatal", "TOTAL_ERR_FATAL"}};
    bool any = false;
    for (const auto& [bus, e] : ends) {
      if (!e->value("aer", false)) continue;
      any = true;
      const json& s = or_null(starts.count(bus) ? starts[bus] : nullptr);
      const std::string name = e->value("name", "");
      const std::string item = host_ + "/pci[" + bus + "]" + (name.empty() ? "" : "/" + name);
      for (const auto& [kind, total] : kinds) {
        const std::string metric = std::string("pcie.aer_") + kind;
        const std::string base = std::string("/") + kind + "/";
        Rise t = rise(counter(s, base + total), counter(*e, base + total));
        std::string detail = std::string(total) + " " + t.text;
        // Which error types rose.
        if (t.delta && *t.delta > 0 && e->contains(kind)) {
          for (const auto& [err, v] : (*e)[kind].items()) {
            if (err == total) continue;
            Rise r = rise(counter(s, base + err), counter(*e, base + err));
            if (r.delta && *r.delta > 0) detail += "; " + err + " " + r.text;
          }
        }
        HealthValue& hv = add(metric, item, value_of(t.delta), detail);
        hv.pci_bus_id = bus;
      }
    }
    if (!any)
      for (const auto& m : kAerMetrics)
        add(m, host_, nullptr, "no GPU or NIC on this node reports AER counters").absent = true;
  }

  const json& start_;
  const json& end_;
  std::string host_;
  std::vector<HealthValue> out_;
};

}  // namespace

const std::vector<std::string>& health_metrics() {
  static const std::vector<std::string> kAll = [] {
    std::vector<std::string> all;
    for (const auto* list : {&kGpuMetrics, &kNvlinkMetrics})
      all.insert(all.end(), list->begin(), list->end());
    all.push_back("gpu.xid");
    for (const auto* list : {&kIbMetrics, &kAerMetrics})
      all.insert(all.end(), list->begin(), list->end());
    return all;
  }();
  return kAll;
}

std::vector<HealthValue> health_deltas(const json& start, const json& end,
                                       const std::string& host) {
  try {
    return Builder(start, end, host).build();
  } catch (const json::type_error& e) {
    // A snapshot field of another type than the snapshot writes (an xid_watch that is a number):
    // bad input naming the host, not a crash (exit 3).
    throw InputError("run.json: env of host " + host +
                     ": health snapshot malformed (a field of the wrong type: " + e.what() + ")");
  }
}

std::vector<HealthValue> health_values(const std::vector<HealthValue>& all,
                                       const std::string& metric) {
  const auto& names = health_metrics();
  if (std::find(names.begin(), names.end(), metric) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown health metric '" + metric + "' (known: " + known + ")");
  }
  std::vector<HealthValue> out;
  for (const auto& v : all)
    if (v.metric == metric) out.push_back(v);
  return out;
}

std::vector<NodeHealth> node_health(const std::vector<EnvRecord>& env) {
  std::vector<NodeHealth> out;
  out.reserve(env.size());
  for (const auto& e : env) {
    const json& h = e.health;
    const json start = h.is_object() ? h.value("start", json()) : json();
    const json end = h.is_object() ? h.value("end", json()) : json();
    NodeHealth n;
    n.host = e.host;
    n.values = health_deltas(start, end, e.host);
    if (start.is_object() && end.is_object())
      n.evidence = "run.json env[" + e.host + "].health: start " +
                   start.value("collected_at", "?") + ", end " + end.value("collected_at", "?");
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace clusterbench::report
