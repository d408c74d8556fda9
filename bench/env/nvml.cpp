// NVML by dlopen (nvml.hpp). The only file of the core that includes nvml.h; the only place that
// knows NVML's symbol versions.
#include "env/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if CLUSTERBENCH_HAVE_NVML
// Keep nvml.h from renaming nvmlInit to nvmlInit_v2 etc.: we name every symbol ourselves.
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>
#endif

namespace clusterbench {

namespace {

constexpr const char* kCompiledOut = "NVML support compiled out (nvml.h not found at build time)";

// nvml.h's nvmlClocksEventReason* bits, in bit order, with our snake_case names.
struct ReasonBit {
  unsigned long long bit;
  const char* name;
};
constexpr ReasonBit kReasonBits[] = {
    {0x1ULL, "gpu_idle"},
    {0x2ULL, "applications_clocks_setting"},
    {0x4ULL, "sw_power_cap"},
    {0x8ULL, "hw_slowdown"},
    {0x10ULL, "sync_boost"},
    {0x20ULL, "sw_thermal_slowdown"},
    {0x40ULL, "hw_thermal_slowdown"},
    {0x80ULL, "hw_power_brake_slowdown"},
    {0x100ULL, "display_clock_setting"},
    {0x200ULL, "board_limit"},
    {0x400ULL, "reliability"},
};

#if CLUSTERBENCH_HAVE_NVML
// The table above must agree with the header we build against (older headers lack the newest).
static_assert(nvmlClocksThrottleReasonGpuIdle == 0x1);
static_assert(nvmlClocksThrottleReasonApplicationsClocksSetting == 0x2);
static_assert(nvmlClocksThrottleReasonSwPowerCap == 0x4);
static_assert(nvmlClocksThrottleReasonHwSlowdown == 0x8);
static_assert(nvmlClocksThrottleReasonSyncBoost == 0x10);
static_assert(nvmlClocksThrottleReasonSwThermalSlowdown == 0x20);
static_assert(nvmlClocksThrottleReasonHwThermalSlowdown == 0x40);
static_assert(nvmlClocksThrottleReasonHwPowerBrakeSlowdown == 0x80);
static_assert(nvmlClocksThrottleReasonDisplayClockSetting == 0x100);
#ifdef nvmlClocksEventReasonBoardLimit
static_assert(nvmlClocksEventReasonBoardLimit == 0x200);
#endif
#ifdef nvmlClocksEventReasonReliability
static_assert(nvmlClocksEventReasonReliability == 0x400);
#endif
#endif

std::mutex& instance_mutex() {
  static std::mutex m;
  return m;
}

// Leaked on purpose: no nvmlShutdown/dlclose from static destructors at exit.
Nvml*& instance_slot() {
  static Nvml* p = nullptr;
  return p;
}

}  // namespace

std::vector<std::string> clock_event_reason_names(unsigned long long mask) {
  std::vector<std::string> names;
  for (int b = 0; b < 64; ++b) {
    const unsigned long long bit = 1ULL << b;
    if (!(mask & bit)) continue;
    std::string name;
    for (const auto& r : kReasonBits) {
      if (r.bit == bit) name = r.name;
    }
    if (name.empty()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "unknown_0x%llx", bit);
      name = buf;
    }
    names.push_back(std::move(name));
  }
  return names;
}

std::string normalize_nvml_bus_id(std::string_view bus_id) {
  std::string s(bus_id);
  unsigned long long domain = 0;
  unsigned bus = 0, device = 0, function = 0;
  int used = 0;
  if (std::sscanf(s.c_str(), "%llx:%x:%x.%x%n", &domain, &bus, &device, &function, &used) == 4 &&
      used == static_cast<int>(s.size())) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04llx:%02x:%02x.%x", domain, bus, device, function);
    return buf;
  }
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ---------------------------------------------------------------------------------------------
// The function table.

#if CLUSTERBENCH_HAVE_NVML
struct Nvml::Api {
  // Library-wide.
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*system_get_driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*system_get_cuda_driver_version)(int*) = nullptr;
  nvmlReturn_t (*device_get_count)(unsigned*) = nullptr;
  nvmlReturn_t (*device_get_handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
  // Inventory.
  nvmlReturn_t (*device_get_name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*device_get_uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*device_get_serial)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*device_get_vbios_version)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*device_get_pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*device_get_memory_info)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*device_get_curr_pcie_link_generation)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*device_get_max_pcie_link_generation)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*device_get_curr_pcie_link_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*device_get_max_pcie_link_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*device_get_nvlink_state)(nvmlDevice_t, unsigned, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*device_get_ecc_mode)(nvmlDevice_t, nvmlEnableState_t*,
                                      nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*device_get_memory_affinity)(nvmlDevice_t, unsigned, unsigned long*,
                                             nvmlAffinityScope_t) = nullptr;
  nvmlReturn_t (*device_get_board_part_number)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*device_get_persistence_mode)(nvmlDevice_t, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*device_get_mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  // Health counters and XID events (bench/env/health.hpp).
  nvmlReturn_t (*device_get_total_ecc_errors)(nvmlDevice_t, nvmlMemoryErrorType_t,
                                              nvmlEccCounterType_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*device_get_retired_pages)(nvmlDevice_t, nvmlPageRetirementCause_t, unsigned*,
                                           unsigned long long*) = nullptr;
  nvmlReturn_t (*device_get_retired_pages_pending_status)(nvmlDevice_t,
                                                          nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*device_get_remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*,
                                           unsigned*) = nullptr;
  nvmlReturn_t (*device_get_row_remapper_histogram)(nvmlDevice_t,
                                                    nvmlRowRemapperHistogramValues_t*) = nullptr;
  nvmlReturn_t (*device_get_nvlink_error_counter)(nvmlDevice_t, unsigned, nvmlNvLinkErrorCounter_t,
                                                  unsigned long long*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*device_register_events)(nvmlDevice_t, unsigned long long,
                                         nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;
  // Telemetry.
  nvmlReturn_t (*device_get_clock_info)(nvmlDevice_t, nvmlClockType_t, unsigned*) = nullptr;
  nvmlReturn_t (*device_get_temperature)(nvmlDevice_t, nvmlTemperatureSensors_t,
                                         unsigned*) = nullptr;
  nvmlReturn_t (*device_get_power_usage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*device_get_enforced_power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*device_get_current_clocks_event_reasons)(nvmlDevice_t,
                                                          unsigned long long*) = nullptr;
  // Processes (busy-GPU check): _v2 takes the 24-byte nvmlProcessInfo_v2_t on every driver, the
  // unversioned call v1. _v3 is never bound: R535's nvml.h gives it a 32-byte struct (with
  // usedGpuCcProtectedMemory), R580's a 24-byte one, so one binding reads the wrong stride.
  nvmlReturn_t (*device_get_compute_processes)(nvmlDevice_t, unsigned*,
                                               nvmlProcessInfo_v2_t*) = nullptr;
  nvmlReturn_t (*device_get_compute_processes_v1)(nvmlDevice_t, unsigned*,
                                                  nvmlProcessInfo_v1_t*) = nullptr;
  nvmlReturn_t (*device_get_graphics_processes)(nvmlDevice_t, unsigned*,
                                                nvmlProcessInfo_v2_t*) = nullptr;
  nvmlReturn_t (*device_get_graphics_processes_v1)(nvmlDevice_t, unsigned*,
                                                   nvmlProcessInfo_v1_t*) = nullptr;
  nvmlReturn_t (*system_get_process_name)(unsigned, char*, unsigned) = nullptr;
};
#else
struct Nvml::Api {};
#endif

template <class Fn>
void Nvml::bind(Fn& slot, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* p = dlsym(handle_, name)) {
      slot = reinterpret_cast<Fn>(p);
      resolved_[*names.begin()] = name;
      return;
    }
  }
}

Nvml::Nvml() : api_(std::make_unique<Api>()) { load(); }

Nvml::~Nvml() {
#if CLUSTERBENCH_HAVE_NVML
  if (initialised_ && api_->shutdown) api_->shutdown();
#endif
  if (handle_) dlclose(handle_);
}

void Nvml::load() {
#if !CLUSTERBENCH_HAVE_NVML
  status_ = kCompiledOut;
#else
  if (!open_library()) return;
  bind_inventory();
  bind_health_and_telemetry();
  const Api& a = *api_;
  const std::pair<bool, const char*> required[] = {
      {a.init != nullptr, "nvmlInit_v2"},
      {a.device_get_count != nullptr, "nvmlDeviceGetCount_v2"},
      {a.device_get_handle_by_index != nullptr, "nvmlDeviceGetHandleByIndex_v2"},
  };
  for (const auto& [found, name] : required) {
    if (!found) {
      status_ = library_ + ": lacks " + name;
      return;
    }
  }
  const nvmlReturn_t rc = a.init();
  if (rc != NVML_SUCCESS) {
    status_ = "nvmlInit: " + error_string(rc);
    return;
  }
  initialised_ = true;
  ok_ = true;
  status_ = "ok";
#endif
}

#if CLUSTERBENCH_HAVE_NVML
bool Nvml::open_library() {
  // dlopen: the override alone, or the driver's soname then the development name.
  const char* env = std::getenv("CLUSTERBENCH_NVML_LIB");
  std::vector<std::string> candidates;
  if (env && *env) {
    candidates = {env};
  } else {
    candidates = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
  }
  std::string first_error;
  for (const auto& path : candidates) {
    library_ = path;
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) return true;
    const char* err = dlerror();
    if (first_error.empty()) first_error = err ? err : path + ": dlopen failed";
  }
  library_ = candidates.front();
  status_ = first_error;
  return false;
}

// Every entry point, preferred (versioned, as driver 535 exports it) name first.
void Nvml::bind_inventory() {
  Api& a = *api_;
  bind(a.init, {"nvmlInit_v2", "nvmlInit"});
  bind(a.shutdown, {"nvmlShutdown"});
  bind(a.error_string, {"nvmlErrorString"});
  bind(a.system_get_driver_version, {"nvmlSystemGetDriverVersion"});
  bind(a.system_get_cuda_driver_version,
       {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  bind(a.device_get_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  bind(a.device_get_handle_by_index,
       {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  bind(a.device_get_name, {"nvmlDeviceGetName"});
  bind(a.device_get_uuid, {"nvmlDeviceGetUUID"});
  bind(a.device_get_serial, {"nvmlDeviceGetSerial"});
  bind(a.device_get_vbios_version, {"nvmlDeviceGetVbiosVersion"});
  bind(a.device_get_pci_info,
       {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"});
  bind(a.device_get_memory_info, {"nvmlDeviceGetMemoryInfo"});
  bind(a.device_get_curr_pcie_link_generation, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  bind(a.device_get_max_pcie_link_generation, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  bind(a.device_get_curr_pcie_link_width, {"nvmlDeviceGetCurrPcieLinkWidth"});
  bind(a.device_get_max_pcie_link_width, {"nvmlDeviceGetMaxPcieLinkWidth"});
  bind(a.device_get_nvlink_state, {"nvmlDeviceGetNvLinkState"});
  bind(a.device_get_ecc_mode, {"nvmlDeviceGetEccMode"});
  bind(a.device_get_memory_affinity, {"nvmlDeviceGetMemoryAffinity"});
  bind(a.device_get_board_part_number, {"nvmlDeviceGetBoardPartNumber"});
  bind(a.device_get_persistence_mode, {"nvmlDeviceGetPersistenceMode"});
  bind(a.device_get_mig_mode, {"nvmlDeviceGetMigMode"});
}

void Nvml::bind_health_and_telemetry() {
  Api& a = *api_;
  bind(a.device_get_total_ecc_errors, {"nvmlDeviceGetTotalEccErrors"});
  bind(a.device_get_retired_pages, {"nvmlDeviceGetRetiredPages"});
  bind(a.device_get_retired_pages_pending_status, {"nvmlDeviceGetRetiredPagesPendingStatus"});
  bind(a.device_get_remapped_rows, {"nvmlDeviceGetRemappedRows"});
  bind(a.device_get_row_remapper_histogram, {"nvmlDeviceGetRowRemapperHistogram"});
  bind(a.device_get_nvlink_error_counter, {"nvmlDeviceGetNvLinkErrorCounter"});
  bind(a.event_set_create, {"nvmlEventSetCreate"});
  bind(a.device_register_events, {"nvmlDeviceRegisterEvents"});
  bind(a.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  bind(a.event_set_free, {"nvmlEventSetFree"});
  bind(a.device_get_clock_info, {"nvmlDeviceGetClockInfo"});
  bind(a.device_get_temperature, {"nvmlDeviceGetTemperature"});
  bind(a.device_get_power_usage, {"nvmlDeviceGetPowerUsage"});
  bind(a.device_get_enforced_power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
  bind(a.device_get_current_clocks_event_reasons,
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  bind(a.device_get_compute_processes, {"nvmlDeviceGetComputeRunningProcesses_v2"});
  bind(a.device_get_compute_processes_v1, {"nvmlDeviceGetComputeRunningProcesses"});
  bind(a.device_get_graphics_processes, {"nvmlDeviceGetGraphicsRunningProcesses_v2"});
  bind(a.device_get_graphics_processes_v1, {"nvmlDeviceGetGraphicsRunningProcesses"});
  bind(a.system_get_process_name, {"nvmlSystemGetProcessName"});
}
#endif

const Nvml& Nvml::get() {
  std::lock_guard lock(instance_mutex());
  if (!instance_slot()) instance_slot() = new Nvml();
  return *instance_slot();
}

void Nvml::reload_for_testing() {
  std::lock_guard lock(instance_mutex());
  delete instance_slot();
  instance_slot() = new Nvml();
}

std::string Nvml::error_string(int code) const {
#if CLUSTERBENCH_HAVE_NVML
  if (api_->error_string) {
    if (const char* s = api_->error_string(static_cast<nvmlReturn_t>(code))) return s;
  }
#endif
  return "NVML error " + std::to_string(code);
}

std::string Nvml::resolved(std::string_view preferred_name) const {
  auto it = resolved_.find(preferred_name);
  return it == resolved_.end() ? std::string() : it->second;
}

// ---------------------------------------------------------------------------------------------
// Queries.

#if CLUSTERBENCH_HAVE_NVML
namespace {

// Calls one per-GPU getter: absent entry point or "Not Supported" -> false quietly; any other
// error -> false with a warning "gpu <i>: <call>: <NVML's text>".
class GpuReader {
 public:
  GpuReader(const Nvml& nvml, int index, std::vector<std::string>* warnings)
      : nvml_(nvml), index_(index), warnings_(warnings) {}

  template <class Fn, class... Args>
  bool call(Fn fn, const char* name, Args... args) {
    if (!fn) {
      last_error_ = std::string(name) + ": not in " + nvml_.library();
      return false;
    }
    const nvmlReturn_t rc = fn(args...);
    if (rc == NVML_SUCCESS) return true;
    last_error_ = std::string(name) + ": " + nvml_.error_string(rc);
    if (rc != NVML_ERROR_NOT_SUPPORTED && rc != NVML_ERROR_FUNCTION_NOT_FOUND && warnings_)
      warnings_->push_back("gpu " + std::to_string(index_) + ": " + last_error_);
    return false;
  }

  /// "<call>: <NVML's text>" of the last call that failed.
  const std::string& last_error() const { return last_error_; }

  template <class Fn>
  std::string text(Fn fn, const char* name, nvmlDevice_t dev, unsigned size) {
    std::vector<char> buf(size, '\0');
    if (!call(fn, name, dev, buf.data(), size)) return "";
    buf.back() = '\0';
    return buf.data();
  }

  template <class Fn>
  int uint_value(Fn fn, const char* name, nvmlDevice_t dev) {
    unsigned v = 0;
    return call(fn, name, dev, &v) ? static_cast<int>(v) : 0;
  }

 private:
  const Nvml& nvml_;
  int index_;
  std::vector<std::string>* warnings_;
  std::string last_error_;
};

std::string cuda_version_text(int v) {
  return std::to_string(NVML_CUDA_DRIVER_VERSION_MAJOR(v)) + "." +
         std::to_string(NVML_CUDA_DRIVER_VERSION_MINOR(v));
}

// The bus id from nvmlPciInfo_t: busId (v3: 8-digit domain), else the legacy text, else the
// numeric fields.
std::string bus_id_of(const nvmlPciInfo_t& pci) {
  std::string id(pci.busId, strnlen(pci.busId, sizeof pci.busId));
  if (id.empty()) id.assign(pci.busIdLegacy, strnlen(pci.busIdLegacy, sizeof pci.busIdLegacy));
  if (id.empty()) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%x:%x:%x.0", pci.domain, pci.bus, pci.device);
    id = buf;
  }
  return normalize_nvml_bus_id(id);
}

/// PCIe link generation and width, current and max.
PcieLink read_pcie(const Nvml::Api& a, GpuReader& r, nvmlDevice_t dev) {
  PcieLink p;
  p.gen_current = r.uint_value(a.device_get_curr_pcie_link_generation,
                               "nvmlDeviceGetCurrPcieLinkGeneration", dev);
  p.gen_max = r.uint_value(a.device_get_max_pcie_link_generation,
                           "nvmlDeviceGetMaxPcieLinkGeneration", dev);
  p.width_current =
      r.uint_value(a.device_get_curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth", dev);
  p.width_max =
      r.uint_value(a.device_get_max_pcie_link_width, "nvmlDeviceGetMaxPcieLinkWidth", dev);
  return p;
}

/// NVLink links up into g.nvlink_links_up. Links past the device's count answer Invalid Argument,
/// a GPU without NVLink Not Supported (0 links up): neither is worth a warning, so these calls
/// bypass the reader. An absent entry point or another error leaves the count unknown.
void read_nvlink_links_up(const Nvml& nvml, nvmlDevice_t dev, GpuInfo& g) {
  const Nvml::Api& a = nvml.api();
  if (!a.device_get_nvlink_state) {
    set_unknown(g.nvlink_links_up, g.unknown, "nvlink_links_up",
                "nvmlDeviceGetNvLinkState: not in " + nvml.library());
    return;
  }
  int up = 0;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t rc = a.device_get_nvlink_state(dev, link, &active);
    if (rc == NVML_SUCCESS && active == NVML_FEATURE_ENABLED) ++up;
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED && rc != NVML_ERROR_INVALID_ARGUMENT) {
      set_unknown(
          g.nvlink_links_up, g.unknown, "nvlink_links_up",
          "nvmlDeviceGetNvLinkState(link " + std::to_string(link) + "): " + nvml.error_string(rc));
      return;
    }
  }
  g.nvlink_links_up = up;
}

/// The nearest NUMA node: the lowest node in the GPU's memory affinity mask; -1 unknown.
int nearest_numa_node(const Nvml::Api& a, GpuReader& r, nvmlDevice_t dev) {
  unsigned long node_set[4] = {};
  if (!r.call(a.device_get_memory_affinity, "nvmlDeviceGetMemoryAffinity", dev, 4u, node_set,
              static_cast<nvmlAffinityScope_t>(NVML_AFFINITY_SCOPE_NODE)))
    return -1;
  constexpr int kBits = 8 * sizeof(unsigned long);
  for (int n = 0; n < 4 * kBits; ++n)
    if (node_set[n / kBits] & (1UL << (n % kBits))) return n;
  return -1;
}

/// The persistence and MIG modes: "enabled", "disabled", or "" where NVML cannot say.
void read_modes(const Nvml::Api& a, GpuReader& r, nvmlDevice_t dev, GpuInfo& g) {
  nvmlEnableState_t persistence = NVML_FEATURE_DISABLED;
  if (r.call(a.device_get_persistence_mode, "nvmlDeviceGetPersistenceMode", dev, &persistence))
    g.persistence_mode = persistence == NVML_FEATURE_ENABLED ? "enabled" : "disabled";
  unsigned mig_current = 0, mig_pending = 0;
  if (r.call(a.device_get_mig_mode, "nvmlDeviceGetMigMode", dev, &mig_current, &mig_pending))
    g.mig_mode = mig_current == NVML_DEVICE_MIG_ENABLE ? "enabled" : "disabled";
}

GpuInfo read_gpu(const Nvml& nvml, int index, nvmlDevice_t dev, const std::string& driver,
                 std::vector<std::string>* warnings) {
  const Nvml::Api& a = nvml.api();
  GpuReader r(nvml, index, warnings);
  GpuInfo g;
  g.index = index;
  g.source = "nvml";
  g.driver = driver;
  g.name = r.text(a.device_get_name, "nvmlDeviceGetName", dev, NVML_DEVICE_NAME_V2_BUFFER_SIZE);
  g.uuid = r.text(a.device_get_uuid, "nvmlDeviceGetUUID", dev, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
  g.serial =
      r.text(a.device_get_serial, "nvmlDeviceGetSerial", dev, NVML_DEVICE_SERIAL_BUFFER_SIZE);
  g.vbios = r.text(a.device_get_vbios_version, "nvmlDeviceGetVbiosVersion", dev,
                   NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE);
  nvmlPciInfo_t pci{};
  if (r.call(a.device_get_pci_info, "nvmlDeviceGetPciInfo", dev, &pci)) {
    g.pci_bus_id = bus_id_of(pci);
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%04x", pci.pciDeviceId >> 16);  // high 16 bits: device
    g.pci_device_id = buf;
  }
  nvmlMemory_t mem{};
  if (r.call(a.device_get_memory_info, "nvmlDeviceGetMemoryInfo", dev, &mem))
    g.memory_gib = static_cast<double>(mem.total) / (1ULL << 30);
  else
    set_unknown(g.memory_gib, g.unknown, "memory_gib", r.last_error());
  g.pcie = read_pcie(a, r, dev);
  read_nvlink_links_up(nvml, dev, g);
  nvmlEnableState_t ecc_current = NVML_FEATURE_DISABLED, ecc_pending = NVML_FEATURE_DISABLED;
  if (r.call(a.device_get_ecc_mode, "nvmlDeviceGetEccMode", dev, &ecc_current, &ecc_pending))
    g.ecc_mode = ecc_current == NVML_FEATURE_ENABLED ? "enabled" : "disabled";
  g.numa_node = nearest_numa_node(a, r, dev);
  g.board_part_number = r.text(a.device_get_board_part_number, "nvmlDeviceGetBoardPartNumber", dev,
                               NVML_DEVICE_PART_NUMBER_BUFFER_SIZE);
  read_modes(a, r, dev, g);
  return g;
}

}  // namespace
#endif

NvmlInventory query_nvml_inventory() {
  NvmlInventory inv;
  const Nvml& nvml = Nvml::get();
  inv.status = nvml.status();
  if (!nvml.ok()) return inv;
#if CLUSTERBENCH_HAVE_NVML
  const Nvml::Api& a = nvml.api();
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (a.system_get_driver_version && a.system_get_driver_version(buf, sizeof buf) == NVML_SUCCESS) {
    buf[sizeof buf - 1] = '\0';
    inv.driver_version = buf;
  }
  int cuda = 0;
  if (a.system_get_cuda_driver_version && a.system_get_cuda_driver_version(&cuda) == NVML_SUCCESS &&
      cuda > 0) {
    inv.cuda_driver = cuda_version_text(cuda);
  }
  unsigned count = 0;
  const nvmlReturn_t rc = a.device_get_count(&count);
  if (rc != NVML_SUCCESS) {
    inv.status = "nvmlDeviceGetCount: " + nvml.error_string(rc);
    return inv;
  }
  for (unsigned i = 0; i < count; ++i) {
    const int index = static_cast<int>(i);
    nvmlDevice_t dev = nullptr;
    const nvmlReturn_t hrc = a.device_get_handle_by_index(i, &dev);
    if (hrc != NVML_SUCCESS) {
      // Keep the GPU in the list: a GPU that is lost must not vanish from the inventory.
      GpuInfo g;
      g.index = index;
      g.source = "nvml";
      g.driver = inv.driver_version;
      std::string why = "nvmlDeviceGetHandleByIndex: " + nvml.error_string(hrc);
      set_unknown(g.memory_gib, g.unknown, "memory_gib", why);
      set_unknown(g.nvlink_links_up, g.unknown, "nvlink_links_up", why);
      inv.gpus.push_back(g);
      inv.warnings.push_back("gpu " + std::to_string(i) + ": " + why);
      continue;
    }
    inv.gpus.push_back(read_gpu(nvml, index, dev, inv.driver_version, &inv.warnings));
  }
  inv.ok = true;
#endif
  return inv;
}

GpuTelemetry sample_telemetry([[maybe_unused]] int index) {
  GpuTelemetry t;
  const Nvml& nvml = Nvml::get();
  t.status = nvml.status();
  if (!nvml.ok()) return t;
#if CLUSTERBENCH_HAVE_NVML
  const Nvml::Api& a = nvml.api();
  nvmlDevice_t dev = nullptr;
  const nvmlReturn_t rc = index < 0
                              ? NVML_ERROR_INVALID_ARGUMENT
                              : a.device_get_handle_by_index(static_cast<unsigned>(index), &dev);
  if (rc != NVML_SUCCESS) {
    t.status =
        "nvmlDeviceGetHandleByIndex(" + std::to_string(index) + "): " + nvml.error_string(rc);
    return t;
  }
  GpuReader r(nvml, index, nullptr);
  unsigned v = 0;
  if (r.call(a.device_get_clock_info, "", dev, NVML_CLOCK_SM, &v)) t.sm_clock_mhz = v;
  if (r.call(a.device_get_temperature, "", dev, NVML_TEMPERATURE_GPU, &v)) t.temperature_c = v;
  if (r.call(a.device_get_power_usage, "", dev, &v)) t.power_w = v / 1000.0;
  if (r.call(a.device_get_enforced_power_limit, "", dev, &v)) t.power_limit_w = v / 1000.0;
  unsigned long long mask = 0;
  if (r.call(a.device_get_current_clocks_event_reasons, "", dev, &mask)) {
    t.clock_event_reasons = mask;
    t.clock_event_reasons_valid = true;
    t.reason_names = clock_event_reason_names(mask);
  }
  if (r.call(a.device_get_curr_pcie_link_generation, "", dev, &v)) t.pcie_gen_current = v;
  if (r.call(a.device_get_curr_pcie_link_width, "", dev, &v)) t.pcie_width_current = v;
  if (r.call(a.device_get_max_pcie_link_generation, "", dev, &v)) t.pcie_gen_max = v;
  if (r.call(a.device_get_max_pcie_link_width, "", dev, &v)) t.pcie_width_max = v;
  nvmlMemory_t mem{};
  if (r.call(a.device_get_memory_info, "", dev, &mem)) {
    t.memory_used_bytes = static_cast<double>(mem.used);
    t.memory_total_bytes = static_cast<double>(mem.total);
  }
  t.ok = true;
  t.status = "ok";
#endif
  return t;
}

// ---------------------------------------------------------------------------------------------
// Health counters and XID events (bench/env/health.hpp, docs/health.md).

#if CLUSTERBENCH_HAVE_NVML
namespace {

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

/// NVLink error counters of every active link (inactive links and links past the device's count
/// answer errors that are no finding).
json nvlink_errors(const Nvml::Api& a, nvmlDevice_t dev) {
  json links = json::array();
  const std::pair<nvmlNvLinkErrorCounter_t, const char*> counters[] = {
      {NVML_NVLINK_ERROR_DL_CRC_FLIT, "crc_flit"},
      {NVML_NVLINK_ERROR_DL_CRC_DATA, "crc_data"},
      {NVML_NVLINK_ERROR_DL_REPLAY, "replay"},
      {NVML_NVLINK_ERROR_DL_RECOVERY, "recovery"}};
  if (!a.device_get_nvlink_state || !a.device_get_nvlink_error_counter) return links;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    if (a.device_get_nvlink_state(dev, link, &active) != NVML_SUCCESS ||
        active != NVML_FEATURE_ENABLED)
      continue;
    json l = {{"link", link}};
    for (const auto& [counter, name] : counters) {
      unsigned long long n = 0;
      if (a.device_get_nvlink_error_counter(dev, link, counter, &n) == NVML_SUCCESS) l[name] = n;
    }
    if (l.size() > 1) links.push_back(l);
  }
  return links;
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
  nvmlPciInfo_t pci{};
  g["pci_bus_id"] =
      r.call(a.device_get_pci_info, "nvmlDeviceGetPciInfo", dev, &pci) ? bus_id_of(pci) : "";
  if (json ecc = ecc_counts(a, r, dev); !ecc.empty()) g["ecc"] = ecc;
  if (json retired = retired_pages(nvml, r, dev, i, warnings); !retired.empty())
    g["retired_pages"] = retired;
  if (json remap = row_remap(a, r, dev); !remap.empty()) g["row_remap"] = remap;
  if (json links = nvlink_errors(a, dev); !links.empty()) g["nvlink"] = links;
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
