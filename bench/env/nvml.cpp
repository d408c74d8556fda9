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

#include "env/nvml_api.hpp"

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
  bind(a.device_get_field_values, {"nvmlDeviceGetFieldValues"});
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
// The bus id from nvmlPciInfo_t: busId (v3: 8-digit domain), else the legacy text, else the
// numeric fields.
std::string nvml_detail::bus_id_of(const nvmlPciInfo_t& pci) {
  std::string id(pci.busId, strnlen(pci.busId, sizeof pci.busId));
  if (id.empty()) id.assign(pci.busIdLegacy, strnlen(pci.busIdLegacy, sizeof pci.busIdLegacy));
  if (id.empty()) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%x:%x:%x.0", pci.domain, pci.bus, pci.device);
    id = buf;
  }
  return normalize_nvml_bus_id(id);
}
#endif

#if CLUSTERBENCH_HAVE_NVML
namespace {

using nvml_detail::bus_id_of;
using nvml_detail::GpuReader;

std::string cuda_version_text(int v) {
  return std::to_string(NVML_CUDA_DRIVER_VERSION_MAJOR(v)) + "." +
         std::to_string(NVML_CUDA_DRIVER_VERSION_MINOR(v));
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

}  // namespace clusterbench
