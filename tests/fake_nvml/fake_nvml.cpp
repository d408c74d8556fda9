// A fake libnvidia-ml.so (docs/design.md "GPU plugin"): the core dlopen's it through
// CLUSTERBENCH_NVML_LIB, so every line of bench/nvml.cpp runs in CI without a GPU.
//
// At nvmlInit_v2 it reads the JSON file named by $FAKE_NVML_JSON:
//   {"init_error": 9,                         optional: nvmlInit_v2 returns this nvmlReturn_t
//    "driver_version": "535.161.08", "cuda_driver_version": 12020,
//    "gpus": [{"name", "uuid", "serial", "vbios", "pci_bus_id": "00000000:18:00.0",
//              "pci_device_id": "0x233010de" (string or number), "memory_total_bytes",
//              "pcie": {"gen_current", "gen_max", "width_current", "width_max"},
//              "nvlink_up": 18, "nvlink_links": 18 (default 18), "ecc": true, "numa_node": 0,
//              "sm_clock_mhz", "temperature_c", "power_mw", "power_limit_mw",
//              "clocks_event_reasons",
//              "board_part_number": "699-2G520-0200-000", "persistence_mode": true,
//              "mig_mode": false, "memory_used_bytes" (default 0),
//              "handle_error": 15,                     nvmlDeviceGetHandleByIndex_v2 fails so
//              "errors": {"nvmlDeviceGetSerial": 15}   that entry point fails so
//             }]}
// A GPU's "health" object (ECC, retired pages, row remapping, NVLink errors, XID events; counters
// that rise between readings) is described at the health section near the end of this file.
// A field absent from a GPU makes its getter return NVML_ERROR_NOT_SUPPORTED. Device handles
// are pointers to the GPU entries.
//
// Exported as a 535-era driver does, to exercise the loader's fallbacks: the versioned names,
// plus the unversioned nvmlInit / nvmlDeviceGetCount / nvmlDeviceGetHandleByIndex returning
// NVML_ERROR_UNKNOWN (so a loader preferring them fails), nvmlDeviceGetPciInfo_v3 only, and
// only the old nvmlDeviceGetCurrentClocksThrottleReasons (not ...ClocksEventReasons).
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;

struct Gpu {
  json j;
};

struct State {
  int init_count = 0;
  json doc;
  std::vector<Gpu> gpus;
};

State& state() {
  static State s;
  return s;
}

void reset_health_sequences();

nvmlReturn_t load_json() {
  const char* path = std::getenv("FAKE_NVML_JSON");
  if (!path || !*path) {
    std::fprintf(stderr, "fake_nvml: FAKE_NVML_JSON is not set\n");
    return NVML_ERROR_UNKNOWN;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "fake_nvml: cannot open %s\n", path);
    return NVML_ERROR_UNKNOWN;
  }
  State& s = state();
  try {
    s.doc = json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake_nvml: %s: %s\n", path, e.what());
    return NVML_ERROR_UNKNOWN;
  }
  s.gpus.clear();
  for (const auto& g : s.doc.value("gpus", json::array())) s.gpus.push_back(Gpu{g});
  reset_health_sequences();
  return NVML_SUCCESS;
}

// The GPU behind a handle, or nullptr when NVML is not initialised or the handle is not ours.
const json* gpu_of(nvmlDevice_t device) {
  State& s = state();
  if (s.init_count == 0 || s.gpus.empty()) return nullptr;
  auto* g = reinterpret_cast<const Gpu*>(device);
  if (g < s.gpus.data() || g >= s.gpus.data() + s.gpus.size()) return nullptr;
  return &g->j;
}

// Common prologue of a device getter: handle check, injected error, field presence.
nvmlReturn_t lookup(nvmlDevice_t device, const char* entry, const char* field, const json** out) {
  if (state().init_count == 0) return NVML_ERROR_UNINITIALIZED;
  const json* g = gpu_of(device);
  if (!g) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->contains("errors") && (*g)["errors"].contains(entry)) {
    return static_cast<nvmlReturn_t>((*g)["errors"][entry].get<int>());
  }
  const json* v = g;
  for (const char* part = field; part;) {
    const char* dot = std::strchr(part, '.');
    const std::string key = dot ? std::string(part, dot) : std::string(part);
    if (!v->is_object() || !v->contains(key)) return NVML_ERROR_NOT_SUPPORTED;
    v = &(*v)[key];
    part = dot ? dot + 1 : nullptr;
  }
  *out = v;
  return NVML_SUCCESS;
}

nvmlReturn_t copy_text(const std::string& text, char* buf, unsigned length) {
  if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t text_field(nvmlDevice_t device, const char* entry, const char* field, char* buf,
                        unsigned length) {
  const json* v = nullptr;
  if (nvmlReturn_t rc = lookup(device, entry, field, &v); rc != NVML_SUCCESS) return rc;
  try {
    return copy_text(v->get<std::string>(), buf, length);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake_nvml: %s: %s\n", field, e.what());
    return NVML_ERROR_UNKNOWN;
  }
}

template <class T>
nvmlReturn_t number_field(nvmlDevice_t device, const char* entry, const char* field, T* out) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  const json* v = nullptr;
  if (nvmlReturn_t rc = lookup(device, entry, field, &v); rc != NVML_SUCCESS) return rc;
  try {
    *out = v->get<T>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake_nvml: %s: %s\n", field, e.what());
    return NVML_ERROR_UNKNOWN;
  }
  return NVML_SUCCESS;
}

unsigned parse_hex(const json& v) {
  return v.is_string() ? static_cast<unsigned>(std::stoul(v.get<std::string>(), nullptr, 16))
                       : v.get<unsigned>();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Library-wide entry points.

nvmlReturn_t nvmlInit_v2(void) {
  State& s = state();
  if (s.init_count == 0) {
    if (nvmlReturn_t rc = load_json(); rc != NVML_SUCCESS) return rc;
    if (s.doc.contains("init_error"))
      return static_cast<nvmlReturn_t>(s.doc["init_error"].get<int>());
  }
  ++s.init_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  State& s = state();
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --s.init_count;
  return NVML_SUCCESS;
}

// NVML's own texts (as nvidia-smi prints them).
const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_UNKNOWN:
      return "Unknown Error";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  State& s = state();
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!s.doc.contains("driver_version")) return NVML_ERROR_NOT_SUPPORTED;
  return copy_text(s.doc["driver_version"].get<std::string>(), version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  State& s = state();
  if (!cudaDriverVersion) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!s.doc.contains("cuda_driver_version")) return NVML_ERROR_NOT_SUPPORTED;
  *cudaDriverVersion = s.doc["cuda_driver_version"].get<int>();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  State& s = state();
  if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  *deviceCount = static_cast<unsigned>(s.gpus.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  State& s = state();
  if (!device) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= s.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  const json& g = s.gpus[index].j;
  if (g.contains("handle_error")) return static_cast<nvmlReturn_t>(g["handle_error"].get<int>());
  *device = reinterpret_cast<nvmlDevice_t>(&s.gpus[index]);
  return NVML_SUCCESS;
}

// The pre-_v2 names: present in real drivers with other semantics; here they fail, so a loader
// that picks them over the versioned ones fails its tests.
nvmlReturn_t nvmlInit(void) { return NVML_ERROR_UNKNOWN; }
nvmlReturn_t nvmlDeviceGetCount(unsigned int*) { return NVML_ERROR_UNKNOWN; }
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int, nvmlDevice_t*) { return NVML_ERROR_UNKNOWN; }

// ---------------------------------------------------------------------------------------------
// Inventory.

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return text_field(device, "nvmlDeviceGetName", "name", name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return text_field(device, "nvmlDeviceGetUUID", "uuid", uuid, length);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return text_field(device, "nvmlDeviceGetSerial", "serial", serial, length);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version, unsigned int length) {
  return text_field(device, "nvmlDeviceGetVbiosVersion", "vbios", version, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  const json* v = nullptr;
  if (nvmlReturn_t rc = lookup(device, "nvmlDeviceGetPciInfo_v3", "pci_bus_id", &v);
      rc != NVML_SUCCESS) {
    return rc;
  }
  *pci = nvmlPciInfo_t{};
  const std::string bus_id = v->get<std::string>();
  std::snprintf(pci->busId, sizeof pci->busId, "%s", bus_id.c_str());
  unsigned domain = 0, bus = 0, dev = 0;
  std::sscanf(bus_id.c_str(), "%x:%x:%x", &domain, &bus, &dev);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
                domain, bus, dev);
  const json& g = *gpu_of(device);
  if (g.contains("pci_device_id")) pci->pciDeviceId = parse_hex(g["pci_device_id"]);
  if (g.contains("pci_subsystem_id")) pci->pciSubSystemId = parse_hex(g["pci_subsystem_id"]);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long long total = 0;
  if (nvmlReturn_t rc =
          number_field(device, "nvmlDeviceGetMemoryInfo", "memory_total_bytes", &total);
      rc != NVML_SUCCESS) {
    return rc;
  }
  // "memory_used_bytes" (default 0): what other processes and ours hold.
  const unsigned long long used = gpu_of(device)->value("memory_used_bytes", 0ULL);
  memory->total = total;
  memory->used = std::min(used, total);
  memory->free = total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* currLinkGen) {
  return number_field(device, "nvmlDeviceGetCurrPcieLinkGeneration", "pcie.gen_current",
                      currLinkGen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGen) {
  return number_field(device, "nvmlDeviceGetMaxPcieLinkGeneration", "pcie.gen_max", maxLinkGen);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* currLinkWidth) {
  return number_field(device, "nvmlDeviceGetCurrPcieLinkWidth", "pcie.width_current",
                      currLinkWidth);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* maxLinkWidth) {
  return number_field(device, "nvmlDeviceGetMaxPcieLinkWidth", "pcie.width_max", maxLinkWidth);
}

// Links [0, nvlink_up) are up, [nvlink_up, nvlink_links) down, later ones Invalid Argument (as a
// real driver answers past the device's link count).
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive) {
  if (!isActive) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned up = 0;
  if (nvmlReturn_t rc = number_field(device, "nvmlDeviceGetNvLinkState", "nvlink_up", &up);
      rc != NVML_SUCCESS) {
    return rc;
  }
  const unsigned links = gpu_of(device)->value("nvlink_links", 18u);
  if (link >= links) return NVML_ERROR_INVALID_ARGUMENT;
  *isActive = link < up ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                  nvmlEnableState_t* pending) {
  if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
  bool ecc = false;
  if (nvmlReturn_t rc = number_field(device, "nvmlDeviceGetEccMode", "ecc", &ecc);
      rc != NVML_SUCCESS) {
    return rc;
  }
  *current = *pending = ecc ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int nodeSetSize,
                                         unsigned long* nodeSet, nvmlAffinityScope_t scope) {
  if (!nodeSet || nodeSetSize == 0 || scope != NVML_AFFINITY_SCOPE_NODE) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned node = 0;
  if (nvmlReturn_t rc = number_field(device, "nvmlDeviceGetMemoryAffinity", "numa_node", &node);
      rc != NVML_SUCCESS) {
    return rc;
  }
  constexpr unsigned kBits = 8 * sizeof(unsigned long);
  if (node >= nodeSetSize * kBits) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memset(nodeSet, 0, nodeSetSize * sizeof(unsigned long));
  nodeSet[node / kBits] = 1UL << (node % kBits);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char* partNumber,
                                          unsigned int length) {
  return text_field(device, "nvmlDeviceGetBoardPartNumber", "board_part_number", partNumber,
                    length);
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode) {
  if (!mode) return NVML_ERROR_INVALID_ARGUMENT;
  bool on = false;
  if (nvmlReturn_t rc =
          number_field(device, "nvmlDeviceGetPersistenceMode", "persistence_mode", &on);
      rc != NVML_SUCCESS) {
    return rc;
  }
  *mode = on ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                  unsigned int* pendingMode) {
  if (!currentMode || !pendingMode) return NVML_ERROR_INVALID_ARGUMENT;
  bool on = false;
  if (nvmlReturn_t rc = number_field(device, "nvmlDeviceGetMigMode", "mig_mode", &on);
      rc != NVML_SUCCESS) {
    return rc;
  }
  *currentMode = *pendingMode = on ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Telemetry.

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int* clock) {
  if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
  return number_field(device, "nvmlDeviceGetClockInfo", "sm_clock_mhz", clock);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) {
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return number_field(device, "nvmlDeviceGetTemperature", "temperature_c", temp);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return number_field(device, "nvmlDeviceGetPowerUsage", "power_mw", power);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  return number_field(device, "nvmlDeviceGetEnforcedPowerLimit", "power_limit_mw", limit);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* clocksThrottleReasons) {
  return number_field(device, "nvmlDeviceGetCurrentClocksThrottleReasons", "clocks_event_reasons",
                      clocksThrottleReasons);
}

// ---------------------------------------------------------------------------------------------
// Processes on a GPU (the busy-GPU check). A GPU's "processes": [{"pid": 4242, "name": "python3",
// "used_memory_bytes": 1073741824 (absent: NVML_VALUE_NOT_AVAILABLE), "type": "compute" (default)
// or "graphics"}]. Both lists under _v2 (the 24-byte nvmlProcessInfo_v2_t on every driver) and
// _v3, whose layout depends on the driver being emulated: $FAKE_NVML_PROCESS_LAYOUT=r535 writes
// R535's 32-byte nvmlProcessInfo_t (usedGpuCcProtectedMemory at the end), anything else R580's
// 24-byte one. The unversioned names fail; nvmlSystemGetProcessName answers from "name", else
// Not Found.

namespace {

// R535's nvml.h nvmlProcessInfo_t (nvmlDeviceGet*RunningProcesses_v3); its first 24 bytes are
// nvmlProcessInfo_v2_t.
struct ProcessInfoR535 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};
static_assert(sizeof(ProcessInfoR535) == 32 && sizeof(nvmlProcessInfo_v2_t) == 24);

// Bytes per entry that _v3 writes for the emulated driver.
size_t v3_stride() {
  const char* layout = std::getenv("FAKE_NVML_PROCESS_LAYOUT");
  return layout && std::string(layout) == "r535" ? sizeof(ProcessInfoR535)
                                                 : sizeof(nvmlProcessInfo_v2_t);
}

// Writes the `type` processes of `device` as entries of `stride` bytes.
nvmlReturn_t fake_processes(nvmlDevice_t device, const char* entry, const char* type,
                            unsigned int* count, void* infos, size_t stride) {
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (state().init_count == 0) return NVML_ERROR_UNINITIALIZED;
  const json* g = gpu_of(device);
  if (!g) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->contains("errors") && (*g)["errors"].contains(entry))
    return static_cast<nvmlReturn_t>((*g)["errors"][entry].get<int>());
  static const json kNone = json::array();
  const json& all = g->contains("processes") ? (*g)["processes"] : kNone;
  std::vector<const json*> mine;
  for (const auto& p : all)
    if (p.value("type", std::string("compute")) == type) mine.push_back(&p);
  const unsigned room = *count;
  *count = static_cast<unsigned>(mine.size());
  if (mine.size() > room || (!infos && !mine.empty())) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (size_t i = 0; i < mine.size(); ++i) {
    ProcessInfoR535 info{};
    info.pid = (*mine[i])["pid"].get<unsigned>();
    const auto none = static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE);
    info.usedGpuMemory = mine[i]->value("used_memory_bytes", none);
    info.gpuInstanceId = info.computeInstanceId = 0xFFFFFFFF;
    std::memcpy(static_cast<char*>(infos) + i * stride, &info, stride);
  }
  return NVML_SUCCESS;
}

}  // namespace

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  return fake_processes(device, "nvmlDeviceGetComputeRunningProcesses_v3", "compute", count, infos,
                        v3_stride());
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                      nvmlProcessInfo_t* infos) {
  return fake_processes(device, "nvmlDeviceGetGraphicsRunningProcesses_v3", "graphics", count,
                        infos, v3_stride());
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_v2_t* infos) {
  return fake_processes(device, "nvmlDeviceGetComputeRunningProcesses_v2", "compute", count, infos,
                        sizeof(nvmlProcessInfo_v2_t));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int* count,
                                                      nvmlProcessInfo_v2_t* infos) {
  return fake_processes(device, "nvmlDeviceGetGraphicsRunningProcesses_v2", "graphics", count,
                        infos, sizeof(nvmlProcessInfo_v2_t));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t, unsigned int*,
                                                  nvmlProcessInfo_v1_t*) {
  return NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int length) {
  State& s = state();
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  for (const auto& g : s.gpus)
    for (const auto& p : g.j.value("processes", json::array()))
      if (p.value("pid", 0u) == pid && p.contains("name"))
        return copy_text(p["name"].get<std::string>(), name, length);
  return NVML_ERROR_NOT_FOUND;
}

// ---------------------------------------------------------------------------------------------
// Health counters and XID events (bench/health.hpp). A GPU's "health" object:
//   {"ecc": {"volatile": {"corrected": 0, "uncorrected": [0, 2]}, "aggregate": {...}},
//    "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": false},
//    "row_remap": {"correctable": 0, "uncorrectable": 0, "pending": false, "failed": false,
//                  "histogram": {"max": 640, "high": 0, "partial": 0, "low": 0, "none": 0}},
//    "nvlink_errors": [{"crc_flit": 0, "crc_data": 0, "replay": 0, "recovery": 0}, ...],
//    "xid_events": [79]}
// A counter given as an array yields its elements on successive calls, then repeats its last: a
// run's start snapshot reads the first and its end snapshot the second, so counters rise during
// a run. nvlink_errors[i] is link i (links past the array count 0 errors; no nvlink_errors: Not
// Supported). xid_events are handed out by nvmlEventSetWait_v2, one per call, to a set that
// registered the GPU; after that it waits its timeout and returns NVML_ERROR_TIMEOUT.

namespace {

std::mutex& health_mutex() {
  static std::mutex m;
  return m;
}

// Calls so far per (GPU, field): the index into an array-valued counter.
std::map<std::string, size_t>& counter_calls() {
  static std::map<std::string, size_t> calls;
  return calls;
}

// Events already handed out per GPU.
std::map<const json*, size_t>& xid_delivered() {
  static std::map<const json*, size_t> delivered;
  return delivered;
}

// The current reading of counter `v` (a number, or an array of successive readings).
template <class T>
nvmlReturn_t take(nvmlDevice_t device, const std::string& field, const json* v, T* out) {
  try {
    if (v->is_array()) {
      if (v->empty()) return NVML_ERROR_NOT_SUPPORTED;
      std::lock_guard lock(health_mutex());
      const std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(device)) + field;
      size_t& n = counter_calls()[key];
      *out = (*v)[std::min(n, v->size() - 1)].get<T>();
      ++n;
    } else {
      *out = v->get<T>();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake_nvml: %s: %s\n", field.c_str(), e.what());
    return NVML_ERROR_UNKNOWN;
  }
  return NVML_SUCCESS;
}

template <class T>
nvmlReturn_t counter_field(nvmlDevice_t device, const char* entry, const std::string& field,
                           T* out) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  const json* v = nullptr;
  if (nvmlReturn_t rc = lookup(device, entry, field.c_str(), &v); rc != NVML_SUCCESS) return rc;
  return take(device, field, v, out);
}

struct FakeEventSet {
  std::vector<nvmlDevice_t> devices;
};

}  // namespace

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType,
                                         unsigned long long* eccCounts) {
  const char* kind = counterType == NVML_VOLATILE_ECC    ? "volatile"
                     : counterType == NVML_AGGREGATE_ECC ? "aggregate"
                                                         : nullptr;
  const char* error = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED     ? "corrected"
                      : errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED ? "uncorrected"
                                                                        : nullptr;
  if (!kind || !error) return NVML_ERROR_INVALID_ARGUMENT;
  return counter_field(device, "nvmlDeviceGetTotalEccErrors",
                       std::string("health.ecc.") + kind + "." + error, eccCounts);
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                       unsigned int* pageCount, unsigned long long* addresses) {
  if (!pageCount) return NVML_ERROR_INVALID_ARGUMENT;
  const char* name = cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
                         ? "single_bit"
                     : cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? "double_bit"
                                                                                : nullptr;
  if (!name) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned n = 0;
  if (nvmlReturn_t rc = counter_field(device, "nvmlDeviceGetRetiredPages",
                                      std::string("health.retired_pages.") + name, &n);
      rc != NVML_SUCCESS) {
    return rc;
  }
  // As the driver does: the count always; the addresses only when the buffer holds them all.
  const unsigned room = *pageCount;
  *pageCount = n;
  if (n > room) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (unsigned i = 0; i < n && addresses; ++i) addresses[i] = 0x1000ULL * (i + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                    nvmlEnableState_t* isPending) {
  if (!isPending) return NVML_ERROR_INVALID_ARGUMENT;
  bool pending = false;
  if (nvmlReturn_t rc = counter_field(device, "nvmlDeviceGetRetiredPagesPendingStatus",
                                      "health.retired_pages.pending", &pending);
      rc != NVML_SUCCESS) {
    return rc;
  }
  *isPending = pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                       unsigned int* uncRows, unsigned int* isPending,
                                       unsigned int* failureOccurred) {
  if (!corrRows || !uncRows || !isPending || !failureOccurred) return NVML_ERROR_INVALID_ARGUMENT;
  const char* entry = "nvmlDeviceGetRemappedRows";
  bool pending = false, failed = false;
  for (nvmlReturn_t rc : {counter_field(device, entry, "health.row_remap.correctable", corrRows),
                          counter_field(device, entry, "health.row_remap.uncorrectable", uncRows),
                          counter_field(device, entry, "health.row_remap.pending", &pending),
                          counter_field(device, entry, "health.row_remap.failed", &failed)}) {
    if (rc != NVML_SUCCESS) return rc;
  }
  *isPending = pending ? 1 : 0;
  *failureOccurred = failed ? 1 : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRowRemapperHistogram(nvmlDevice_t device,
                                               nvmlRowRemapperHistogramValues_t* values) {
  if (!values) return NVML_ERROR_INVALID_ARGUMENT;
  const char* entry = "nvmlDeviceGetRowRemapperHistogram";
  const std::string h = "health.row_remap.histogram.";
  for (nvmlReturn_t rc : {counter_field(device, entry, h + "max", &values->max),
                          counter_field(device, entry, h + "high", &values->high),
                          counter_field(device, entry, h + "partial", &values->partial),
                          counter_field(device, entry, h + "low", &values->low),
                          counter_field(device, entry, h + "none", &values->none)}) {
    if (rc != NVML_SUCCESS) return rc;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                             nvmlNvLinkErrorCounter_t counter,
                                             unsigned long long* counterValue) {
  if (!counterValue) return NVML_ERROR_INVALID_ARGUMENT;
  const char* name = counter == NVML_NVLINK_ERROR_DL_REPLAY     ? "replay"
                     : counter == NVML_NVLINK_ERROR_DL_RECOVERY ? "recovery"
                     : counter == NVML_NVLINK_ERROR_DL_CRC_FLIT ? "crc_flit"
                     : counter == NVML_NVLINK_ERROR_DL_CRC_DATA ? "crc_data"
                                                                : nullptr;
  if (!name) return NVML_ERROR_NOT_SUPPORTED;
  const json* links = nullptr;
  if (nvmlReturn_t rc =
          lookup(device, "nvmlDeviceGetNvLinkErrorCounter", "health.nvlink_errors", &links);
      rc != NVML_SUCCESS) {
    return rc;
  }
  if (link >= gpu_of(device)->value("nvlink_links", 18u)) return NVML_ERROR_INVALID_ARGUMENT;
  if (link >= links->size() || !(*links)[link].contains(name)) {
    *counterValue = 0;
    return NVML_SUCCESS;
  }
  return take(device, "health.nvlink_errors." + std::to_string(link) + "." + name,
              &(*links)[link][name], counterValue);
}

// Field values: the NVLink counters of health.nvlink_fields[link] ({"crc", "replay", "recovery",
// "recovery_events", "effective_errors"}: the per-link DL fields and NVLink5's COUNT fields; a
// counter given as an array rises as the others do), per value NVML_ERROR_NOT_SUPPORTED where
// absent; every other field id Not Supported. Without health.nvlink_fields, every value is Not
// Supported (as a GPU that predates them answers).
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t* values) {
  if (!values || valuesCount < 0) return NVML_ERROR_INVALID_ARGUMENT;
  const json* links = nullptr;
  nvmlReturn_t rc = lookup(device, "nvmlDeviceGetFieldValues", "health.nvlink_fields", &links);
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED) return rc;
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    const char* name = v.fieldId == NVML_FI_DEV_NVLINK_ERROR_DL_CRC        ? "crc"
                       : v.fieldId == NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY   ? "replay"
                       : v.fieldId == NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY ? "recovery"
                       : v.fieldId == NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS
                           ? "recovery_events"
                       : v.fieldId == NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS ? "effective_errors"
                                                                                : nullptr;
    if (!links || !name || v.scopeId >= links->size() || !(*links)[v.scopeId].contains(name))
      continue;
    unsigned long long n = 0;
    v.nvmlReturn = take(device, "health.nvlink_fields." + std::to_string(v.scopeId) + "." + name,
                        &(*links)[v.scopeId][name], &n);
    v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    v.value.ullVal = n;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  if (state().init_count == 0) return NVML_ERROR_UNINITIALIZED;
  *set = reinterpret_cast<nvmlEventSet_t>(new FakeEventSet);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  const json* g = gpu_of(device);
  if (!g) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->contains("errors") && (*g)["errors"].contains("nvmlDeviceRegisterEvents"))
    return static_cast<nvmlReturn_t>((*g)["errors"]["nvmlDeviceRegisterEvents"].get<int>());
  if (!(eventTypes & nvmlEventTypeXidCriticalError)) return NVML_ERROR_NOT_SUPPORTED;
  std::lock_guard lock(health_mutex());
  reinterpret_cast<FakeEventSet*>(set)->devices.push_back(device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  if (!set || !data) return NVML_ERROR_INVALID_ARGUMENT;
  {
    std::lock_guard lock(health_mutex());
    for (nvmlDevice_t device : reinterpret_cast<FakeEventSet*>(set)->devices) {
      const json* g = gpu_of(device);
      if (!g || !g->contains("health") || !(*g)["health"].contains("xid_events")) continue;
      const json& xids = (*g)["health"]["xid_events"];
      size_t& n = xid_delivered()[g];
      if (n >= xids.size()) continue;
      *data = nvmlEventData_t{};
      data->device = device;
      data->eventType = nvmlEventTypeXidCriticalError;
      data->eventData = xids[n++].get<unsigned long long>();
      data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
      return NVML_SUCCESS;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(timeoutms));
  return NVML_ERROR_TIMEOUT;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  delete reinterpret_cast<FakeEventSet*>(set);
  return NVML_SUCCESS;
}

namespace {
// A new JSON document starts every counter sequence and event list afresh.
void reset_health_sequences() {
  std::lock_guard lock(health_mutex());
  counter_calls().clear();
  xid_delivered().clear();
}
}  // namespace
