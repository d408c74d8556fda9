// NVML health counters, XID events and the GPUs' processes (nvml.hpp; bench/env/health.hpp,
// docs/health.md), over the function table of nvml_api.hpp.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "env/nvml_api.hpp"

namespace clusterbench {

#if CLUSTERBENCH_HAVE_NVML
namespace {

using nvml_detail::bus_id_of;
using nvml_detail::GpuReader;

/// ECC counts: {volatile, aggregate} x {corrected, uncorrected}; {} when none could be read.
json ecc_counts(const Nvml::Api& a, GpuReader& r, nvmlDevice_t dev) {
  const std::pair<nvmlEccCounterType_t, const char*> kinds[] = {{NVML_VOLATILE_ECC, "volatile"},
                                                                {NVML_AGGREGATE_ECC, "aggregate"}};
  const std::pair<nvmlMemoryErrorType_t, const char*> errors[] = {
      {NVML_MEMORY_ERROR_TYPE_CORRECTED, "corrected"},
      {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "uncorrected"}};
  json ecc = json::object();
  for (const auto& [kind, kind_name] : kinds) {
    for (const auto& [error, error_name] : errors) {
      unsigned long long n = 0;
      if (r.call(a.device_get_total_ecc_errors, "nvmlDeviceGetTotalEccErrors", dev, error, kind,
                 &n))
        ecc[kind_name][error_name] = n;
    }
  }
  return ecc;
}

/// Retired pages (pre-Ampere): the count of each cause (a 0-sized query returns the count, as
/// NVML_SUCCESS (none) or NVML_ERROR_INSUFFICIENT_SIZE (some)) and whether one is pending.
json retired_pages(const Nvml& nvml, GpuReader& r, nvmlDevice_t dev, unsigned index,
                   std::vector<std::string>& warnings) {
  const Nvml::Api& a = nvml.api();
  json retired = json::object();
  const std::pair<nvmlPageRetirementCause_t, const char*> causes[] = {
      {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, "single_bit"},
      {NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, "double_bit"}};
  if (a.device_get_retired_pages) {
    for (const auto& [cause, name] : causes) {
      unsigned n = 0;
      unsigned long long address = 0;
      const nvmlReturn_t rc = a.device_get_retired_pages(dev, cause, &n, &address);
      if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        retired[name] = n;
      } else if (rc != NVML_ERROR_NOT_SUPPORTED) {
        warnings.push_back("gpu " + std::to_string(index) +
                           ": nvmlDeviceGetRetiredPages: " + nvml.error_string(rc));
      }
    }
  }
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  if (r.call(a.device_get_retired_pages_pending_status, "nvmlDeviceGetRetiredPagesPendingStatus",
             dev, &pending))
    retired["pending"] = pending == NVML_FEATURE_ENABLED;
  return retired;
}

/// Row remapping (Ampere and newer): counts, pending/failed and the remapper's histogram.
json row_remap(const Nvml::Api& a, GpuReader& r, nvmlDevice_t dev) {
  json remap = json::object();
  unsigned corr = 0, unc = 0, is_pending = 0, failed = 0;
  if (r.call(a.device_get_remapped_rows, "nvmlDeviceGetRemappedRows", dev, &corr, &unc, &is_pending,
             &failed)) {
    remap = {{"correctable", corr},
             {"uncorrectable", unc},
             {"pending", is_pending != 0},
             {"failed", failed != 0}};
  }
  nvmlRowRemapperHistogramValues_t hist{};
  if (r.call(a.device_get_row_remapper_histogram, "nvmlDeviceGetRowRemapperHistogram", dev,
             &hist)) {
    remap["histogram"] = {{"max", hist.max},
                          {"high", hist.high},
                          {"partial", hist.partial},
                          {"low", hist.low},
                          {"none", hist.none}};
  }
  return remap;
}

/// One field value as an unsigned count; nullopt when NVML did not give one.
std::optional<unsigned long long> field_count(const nvmlFieldValue_t& f) {
  if (f.nvmlReturn != NVML_SUCCESS) return std::nullopt;
  switch (f.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return f.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return f.value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return f.value.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return f.value.sllVal >= 0 ? std::optional<unsigned long long>(f.value.sllVal) : std::nullopt;
    default:
      return std::nullopt;
  }
}

/// The counters of `link` that the DL counters could not give, from field values: the per-link
/// DL fields (crc, replay, recovery), and on NVLink5 (Blackwell), where nvml.h retires those,
/// NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS as recovery and ..._EFFECTIVE_ERRORS as
/// effective_errors. Fills `l`; returns why the field values could not be read ("" when they
/// could).
std::string nvlink_fields(const Nvml& nvml, nvmlDevice_t dev, unsigned link, json& l) {
  const Nvml::Api& a = nvml.api();
  if (!a.device_get_field_values) return "nvmlDeviceGetFieldValues: not in " + nvml.library();
  const unsigned ids[] = {NVML_FI_DEV_NVLINK_ERROR_DL_CRC, NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY,
                          NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY,
                          NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS,
                          NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS};
  nvmlFieldValue_t v[5] = {};
  for (int i = 0; i < 5; ++i) v[i].fieldId = ids[i], v[i].scopeId = link;
  if (nvmlReturn_t rc = a.device_get_field_values(dev, 5, v); rc != NVML_SUCCESS)
    return "nvmlDeviceGetFieldValues: " + nvml.error_string(rc);
  const bool crc_dl = l.contains("crc_flit") || l.contains("crc_data");
  if (!crc_dl)
    if (auto n = field_count(v[0])) l["crc"] = *n;
  if (!l.contains("replay"))
    if (auto n = field_count(v[1])) l["replay"] = *n;
  if (!l.contains("recovery")) {
    if (auto n = field_count(v[2]))
      l["recovery"] = *n;
    else if (auto e = field_count(v[3]))
      l["recovery"] = *e;
  }
  if (!crc_dl && !l.contains("crc"))
    if (auto n = field_count(v[4])) l["effective_errors"] = *n;
  return "";
}

/// One active link's error counters: the DL counters (crc_flit, crc_data, replay, recovery), the
/// missing ones from field values (nvlink_fields), and "unreadable": {counter: why} for what
/// neither gave. A counter NVML cannot read is absent, never 0.
json nvlink_link(const Nvml& nvml, nvmlDevice_t dev, unsigned link) {
  const Nvml::Api& a = nvml.api();
  const std::pair<nvmlNvLinkErrorCounter_t, const char*> counters[] = {
      {NVML_NVLINK_ERROR_DL_CRC_FLIT, "crc_flit"},
      {NVML_NVLINK_ERROR_DL_CRC_DATA, "crc_data"},
      {NVML_NVLINK_ERROR_DL_REPLAY, "replay"},
      {NVML_NVLINK_ERROR_DL_RECOVERY, "recovery"}};
  json l = {{"link", link}};
  std::string dl_error;
  for (const auto& [counter, name] : counters) {
    unsigned long long n = 0;
    nvmlReturn_t rc = a.device_get_nvlink_error_counter
                          ? a.device_get_nvlink_error_counter(dev, link, counter, &n)
                          : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (rc == NVML_SUCCESS)
      l[name] = n;
    else if (dl_error.empty())
      dl_error = "nvmlDeviceGetNvLinkErrorCounter: " + nvml.error_string(rc);
  }
  std::string field_error;
  if (!dl_error.empty()) field_error = nvlink_fields(nvml, dev, link, l);
  const bool crc = l.contains("crc_flit") || l.contains("crc_data") || l.contains("crc") ||
                   l.contains("effective_errors");
  json unreadable = json::object();
  const std::string why =
      dl_error + (field_error.empty() ? "; no field value" : "; " + field_error);
  if (!crc) unreadable["crc"] = why;
  for (const char* name : {"replay", "recovery"})
    if (!l.contains(name)) unreadable[name] = why;
  if (!unreadable.empty()) l["unreadable"] = unreadable;
  return l;
}

/// NVLink error counters of every active link into g["nvlink"], and g["nvlink_status"]: "ok",
/// "no NVLink on this GPU" (link 0 answers Not Supported), "no active NVLink link", or why the
/// links could not be read. Inactive links and links past the device's count answer errors that
/// are no finding.
void nvlink_errors(const Nvml& nvml, nvmlDevice_t dev, json& g) {
  const Nvml::Api& a = nvml.api();
  json links = json::array();
  if (!a.device_get_nvlink_state) {
    g["nvlink_status"] = "nvmlDeviceGetNvLinkState: not in " + nvml.library();
    return;
  }
  std::string first_error;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t rc = a.device_get_nvlink_state(dev, link, &active);
    if (rc == NVML_ERROR_NOT_SUPPORTED && link == 0) {
      g["nvlink_status"] = "no NVLink on this GPU";
      return;
    }
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_INVALID_ARGUMENT && first_error.empty())
      first_error = "nvmlDeviceGetNvLinkState: " + nvml.error_string(rc);
    if (rc == NVML_SUCCESS && active == NVML_FEATURE_ENABLED)
      links.push_back(nvlink_link(nvml, dev, link));
  }
  g["nvlink"] = links;
  g["nvlink_status"] = !links.empty()        ? "ok"
                       : first_error.empty() ? "no active NVLink link"
                                             : first_error;
}

/// The health counters of GPU `i`.
json gpu_health(const Nvml& nvml, unsigned i) {
  const Nvml::Api& a = nvml.api();
  const int index = static_cast<int>(i);
  json g = {{"index", index}};
  nvmlDevice_t dev = nullptr;
  if (const nvmlReturn_t hrc = a.device_get_handle_by_index(i, &dev); hrc != NVML_SUCCESS) {
    g["status"] = "nvmlDeviceGetHandleByIndex: " + nvml.error_string(hrc);
    return g;
  }
  std::vector<std::string> warnings;
  GpuReader r(nvml, index, &warnings);
  g["uuid"] = r.text(a.device_get_uuid, "nvmlDeviceGetUUID", dev, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
  g["serial"] =
      r.text(a.device_get_serial, "nvmlDeviceGetSerial", dev, NVML_DEVICE_SERIAL_BUFFER_SIZE);
  nvmlPciInfo_t pci{};
  g["pci_bus_id"] =
      r.call(a.device_get_pci_info, "nvmlDeviceGetPciInfo", dev, &pci) ? bus_id_of(pci) : "";
  if (json ecc = ecc_counts(a, r, dev); !ecc.empty()) g["ecc"] = ecc;
  if (json retired = retired_pages(nvml, r, dev, i, warnings); !retired.empty())
    g["retired_pages"] = retired;
  if (json remap = row_remap(a, r, dev); !remap.empty()) g["row_remap"] = remap;
  nvlink_errors(nvml, dev, g);
  std::string text;
  for (const auto& w : warnings) text += (text.empty() ? "" : "; ") + w;
  g["status"] = text.empty() ? "ok" : text;
  return g;
}

}  // namespace
#endif

json query_nvml_health(std::string& status) {
  json gpus = json::array();
  const Nvml& nvml = Nvml::get();
  status = nvml.status();
  if (!nvml.ok()) return gpus;
#if CLUSTERBENCH_HAVE_NVML
  unsigned count = 0;
  if (const nvmlReturn_t rc = nvml.api().device_get_count(&count); rc != NVML_SUCCESS) {
    status = "nvmlDeviceGetCount: " + nvml.error_string(rc);
    return gpus;
  }
  for (unsigned i = 0; i < count; ++i) gpus.push_back(gpu_health(nvml, i));
#endif
  return gpus;
}

NvmlXidEvents::NvmlXidEvents() {
  const Nvml& nvml = Nvml::get();
  status_ = nvml.status();
  if (!nvml.ok()) return;
#if CLUSTERBENCH_HAVE_NVML
  const Nvml::Api& a = nvml.api();
  if (!a.event_set_create || !a.device_register_events || !a.event_set_wait || !a.event_set_free) {
    status_ = nvml.library() + ": lacks the event API (nvmlEventSetCreate, " +
              "nvmlDeviceRegisterEvents, nvmlEventSetWait_v2, nvmlEventSetFree)";
    return;
  }
  nvmlEventSet_t set = nullptr;
  if (const nvmlReturn_t rc = a.event_set_create(&set); rc != NVML_SUCCESS) {
    status_ = "nvmlEventSetCreate: " + nvml.error_string(rc);
    return;
  }
  set_ = set;
  unsigned count = 0;
  if (a.device_get_count(&count) != NVML_SUCCESS) count = 0;
  std::string refused;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (a.device_get_handle_by_index(i, &dev) != NVML_SUCCESS) continue;
    const nvmlReturn_t rc = a.device_register_events(dev, nvmlEventTypeXidCriticalError, set);
    if (rc != NVML_SUCCESS) {
      refused += (refused.empty() ? "" : "; ") + std::string("gpu ") + std::to_string(i) +
                 ": nvmlDeviceRegisterEvents: " + nvml.error_string(rc);
      continue;
    }
    Gpu g;
    g.handle = dev;
    g.index = static_cast<int>(i);
    GpuReader r(nvml, g.index, nullptr);
    g.uuid = r.text(a.device_get_uuid, "", dev, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
    nvmlPciInfo_t pci{};
    if (r.call(a.device_get_pci_info, "", dev, &pci)) g.pci_bus_id = bus_id_of(pci);
    gpus_.push_back(g);
  }
  status_ = refused.empty() ? "ok" : refused;
#endif
}

NvmlXidEvents::~NvmlXidEvents() {
#if CLUSTERBENCH_HAVE_NVML
  if (set_) Nvml::get().api().event_set_free(static_cast<nvmlEventSet_t>(set_));
#endif
}

int NvmlXidEvents::wait([[maybe_unused]] unsigned timeout_ms, [[maybe_unused]] NvmlXidEvent& out) {
  if (!set_ || gpus_.empty()) return -1;
#if CLUSTERBENCH_HAVE_NVML
  const Nvml& nvml = Nvml::get();
  nvmlEventData_t data{};
  const nvmlReturn_t rc =
      nvml.api().event_set_wait(static_cast<nvmlEventSet_t>(set_), &data, timeout_ms);
  if (rc == NVML_ERROR_TIMEOUT) return 0;
  if (rc != NVML_SUCCESS) {
    status_ = "nvmlEventSetWait_v2: " + nvml.error_string(rc);
    return -1;
  }
  if (!(data.eventType & nvmlEventTypeXidCriticalError)) return 0;
  out = NvmlXidEvent{};
  out.xid = data.eventData;
  for (const auto& g : gpus_) {
    if (g.handle == static_cast<void*>(data.device)) {
      out.gpu_index = g.index;
      out.uuid = g.uuid;
      out.pci_bus_id = g.pci_bus_id;
    }
  }
  return 1;
#else
  return -1;
#endif
}

// ---------------------------------------------------------------------------------------------
// Processes on the GPUs.

#if CLUSTERBENCH_HAVE_NVML
namespace {

// One list (compute or graphics) of one GPU, grown while NVML answers Insufficient Size.
template <class Info, class Fn>
nvmlReturn_t list_processes(Fn fn, nvmlDevice_t dev, std::vector<Info>& out) {
  unsigned count = 16;
  for (int attempt = 0; attempt < 4; ++attempt) {
    out.assign(count, Info{});
    unsigned n = count;
    const nvmlReturn_t rc = fn(dev, &n, out.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      count = n + 16;
      continue;
    }
    out.resize(rc == NVML_SUCCESS ? std::min(n, count) : 0);
    return rc;
  }
  return NVML_ERROR_INSUFFICIENT_SIZE;
}

}  // namespace
#endif

#if CLUSTERBENCH_HAVE_NVML
namespace {

/// The processes of one type ("compute" or "graphics") on GPU `i` (`dev`); a list NVML cannot
/// give adds its reason to `problems` (not-supported lists are none).
void list_gpu_processes(const Nvml& nvml, unsigned i, nvmlDevice_t dev, const char* uuid,
                        const char* type, std::vector<NvmlProcess>& out, std::string& problems) {
  const Nvml::Api& a = nvml.api();
  const bool compute = type[0] == 'c';
  auto v2 = compute ? a.device_get_compute_processes : a.device_get_graphics_processes;
  auto v1 = compute ? a.device_get_compute_processes_v1 : a.device_get_graphics_processes_v1;
  std::vector<std::pair<unsigned, unsigned long long>> found;  // pid, usedGpuMemory
  nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (v2) {
    std::vector<nvmlProcessInfo_v2_t> infos;
    rc = list_processes(v2, dev, infos);
    for (const auto& p : infos) found.emplace_back(p.pid, p.usedGpuMemory);
  } else if (v1) {
    std::vector<nvmlProcessInfo_v1_t> infos;
    rc = list_processes(v1, dev, infos);
    for (const auto& p : infos) found.emplace_back(p.pid, p.usedGpuMemory);
  }
  if (rc == NVML_ERROR_NOT_SUPPORTED) return;  // e.g. graphics lists on a compute GPU
  if (rc != NVML_SUCCESS) {
    problems += std::string("; gpu ") + std::to_string(i) + ": nvmlDeviceGet" +
                (compute ? "Compute" : "Graphics") + "RunningProcesses: " + nvml.error_string(rc);
    return;
  }
  for (const auto& [pid, used] : found) {
    NvmlProcess p;
    p.gpu_index = static_cast<int>(i);
    p.gpu_uuid = uuid;
    p.pid = pid;
    p.type = type;
    p.used_bytes = used == static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)
                       ? -1
                       : static_cast<long long>(used);
    char name[256] = {};
    if (a.system_get_process_name &&
        a.system_get_process_name(pid, name, sizeof name) == NVML_SUCCESS) {
      name[sizeof name - 1] = '\0';
      p.name = name;
    }
    out.push_back(std::move(p));
  }
}

}  // namespace
#endif

std::vector<NvmlProcess> query_gpu_processes(std::string& status) {
  std::vector<NvmlProcess> out;
  const Nvml& nvml = Nvml::get();
  status = nvml.status();
  if (!nvml.ok()) return out;
#if CLUSTERBENCH_HAVE_NVML
  const Nvml::Api& a = nvml.api();
  unsigned count = 0;
  if (nvmlReturn_t rc = a.device_get_count(&count); rc != NVML_SUCCESS) {
    status = "nvmlDeviceGetCount: " + nvml.error_string(rc);
    return out;
  }
  std::string problems;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (nvmlReturn_t rc = a.device_get_handle_by_index(i, &dev); rc != NVML_SUCCESS) {
      problems +=
          "; gpu " + std::to_string(i) + ": nvmlDeviceGetHandleByIndex: " + nvml.error_string(rc);
      continue;
    }
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (!a.device_get_uuid || a.device_get_uuid(dev, uuid, sizeof uuid) != NVML_SUCCESS)
      uuid[0] = '\0';
    for (const char* type : {"compute", "graphics"})
      list_gpu_processes(nvml, i, dev, uuid, type, out, problems);
  }
  if (!problems.empty()) status = problems.substr(2);
#endif
  return out;
}

}  // namespace clusterbench
