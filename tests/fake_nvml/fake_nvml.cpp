// A fake libnvidia-ml.so (DESIGN.md "GPU plugin"): the core dlopen's it through
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
//              "handle_error": 15,                     nvmlDeviceGetHandleByIndex_v2 fails so
//              "errors": {"nvmlDeviceGetSerial": 15}   that entry point fails so
//             }]}
// A field absent from a GPU makes its getter return NVML_ERROR_NOT_SUPPORTED. Device handles
// are pointers to the GPU entries.
//
// Exported as a 535-era driver does, to exercise the loader's fallbacks: the versioned names,
// plus the unversioned nvmlInit / nvmlDeviceGetCount / nvmlDeviceGetHandleByIndex returning
// NVML_ERROR_UNKNOWN (so a loader preferring them fails), nvmlDeviceGetPciInfo_v3 only, and
// only the old nvmlDeviceGetCurrentClocksThrottleReasons (not ...ClocksEventReasons).
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
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
  memory->total = total;
  memory->used = 0;
  memory->free = total;
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
