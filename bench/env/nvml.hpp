// NVML, dlopen'ed by the core (docs/design.md "GPU plugin"): entry points found by the versioned
// names driver 535 exports, with fallbacks. CLUSTERBENCH_NVML_LIB names another library (the
// tests' fake, tests/fake_nvml). Every NVML entry point the core uses is bound in one place,
// Nvml's constructor in nvml.cpp; add new ones there (and to Nvml::Api).
#pragma once

#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "records/records.hpp"

namespace clusterbench {

/// What NVML told us about this node's GPUs.
struct NvmlInventory {
  bool ok = false;
  std::string status;          ///< "ok", or why not: dlopen error, NVML's error string
  std::string driver_version;  ///< nvmlSystemGetDriverVersion
  std::string cuda_driver;     ///< nvmlSystemGetCudaDriverVersion_v2, as "12.2"
  std::vector<GpuInfo> gpus;   ///< source = "nvml"
  /// Per-GPU failures other than "Not Supported", e.g. "gpu 3: nvmlDeviceGetHandleByIndex: GPU
  /// is lost". The query still succeeds (ok = true); the fields concerned stay empty.
  std::vector<std::string> warnings;
};

/// Loads NVML (once per process), initialises it, and reads every GPU's inventory fields.
/// Never throws: failures are in `status` ("nvmlInit: Driver Not Loaded", or dlerror()'s text,
/// which names the library). A field NVML cannot give stays at its default ("" / 0 / -1), except
/// memory_gib and nvlink_links_up: those are unknown (null), with the failing call and NVML's
/// text in the GPU's `unknown` ("nvmlDeviceGetMemoryInfo: GPU is lost").
/// Compiled to ok = false, status "NVML support compiled out (nvml.h not found at build time)"
/// when CLUSTERBENCH_HAVE_NVML is 0.
NvmlInventory query_nvml_inventory();

/// One reading of a GPU's clocks, temperature and power, e.g. around a timed region.
/// Doubles are NaN where NVML could not give the value.
struct GpuTelemetry {
  bool ok = false;              ///< the GPU's handle was obtained
  std::string status;           ///< "ok", or why not (NVML not loaded, bad index)
  double sm_clock_mhz = kNaN;   ///< nvmlDeviceGetClockInfo(NVML_CLOCK_SM), MHz
  double temperature_c = kNaN;  ///< nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU), C
  double power_w = kNaN;        ///< nvmlDeviceGetPowerUsage (mW) / 1000, W
  double power_limit_w = kNaN;  ///< nvmlDeviceGetEnforcedPowerLimit (mW) / 1000, W
  /// nvmlDeviceGetCurrentClocksEventReasons (older drivers: ...ClocksThrottleReasons) bit mask.
  unsigned long long clock_event_reasons = 0;
  bool clock_event_reasons_valid = false;  ///< false: NVML could not give the mask
  std::vector<std::string> reason_names;   ///< clock_event_reason_names(clock_event_reasons)
  /// nvmlDeviceGetCurrPcieLinkGeneration / ...Width while the sample is taken (an idle link
  /// downclocks, so read them under load); 0 where NVML could not give them.
  int pcie_gen_current = 0, pcie_width_current = 0;
  int pcie_gen_max = 0, pcie_width_max = 0;  ///< nvmlDeviceGetMaxPcieLink{Generation,Width}
  double memory_used_bytes = kNaN;           ///< nvmlDeviceGetMemoryInfo used, B
  double memory_total_bytes = kNaN;          ///< nvmlDeviceGetMemoryInfo total, B

  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
};

/// Samples GPU `index` (NVML's index). Never throws; see GpuTelemetry::status.
GpuTelemetry sample_telemetry(int index);

/// A process that holds a context on a GPU (nvmlDeviceGetComputeRunningProcesses_v2, else
/// the unversioned v1 call; the same for ...GraphicsRunningProcesses), as nvidia-smi lists them.
struct NvmlProcess {
  int gpu_index = -1;
  std::string gpu_uuid;
  unsigned pid = 0;
  std::string name;           ///< nvmlSystemGetProcessName; "" when NVML cannot say
  long long used_bytes = -1;  ///< usedGpuMemory, B; -1 when NVML_VALUE_NOT_AVAILABLE
  std::string type;           ///< "compute" or "graphics"
};

/// Every process on every GPU of this node, a process on both lists once per list. Never
/// throws: `status` becomes "ok" or why not (NVML not loaded, a call's error text); a GPU whose
/// lists cannot be read is named in `status` and the others are still listed.
std::vector<NvmlProcess> query_gpu_processes(std::string& status);

/// Names of the set bits of an NVML clocks-event (throttle) reason mask, low bit first:
/// 0x1 gpu_idle, 0x2 applications_clocks_setting, 0x4 sw_power_cap, 0x8 hw_slowdown,
/// 0x10 sync_boost, 0x20 sw_thermal_slowdown, 0x40 hw_thermal_slowdown,
/// 0x80 hw_power_brake_slowdown, 0x100 display_clock_setting, 0x200 board_limit,
/// 0x400 reliability (nvml.h's nvmlClocksEventReason* constants); other bits "unknown_0x<bit>".
std::vector<std::string> clock_event_reason_names(unsigned long long mask);

/// NVML's bus id ("00000000:9A:00.0", 8-digit domain, upper case) in sysfs form:
/// "0000:9a:00.0" (4-digit domain unless it needs more, lower case). Text it cannot parse is
/// returned lower-cased.
std::string normalize_nvml_bus_id(std::string_view bus_id);

/// The process's NVML library: dlopen'ed, its entry points bound and nvmlInit called once per
/// process, on first use (thread-safe). Never unloaded (no nvmlShutdown at exit).
class Nvml {
 public:
  /// The entry points (function pointers with nvml.h's types); a member is nullptr where the
  /// library lacks every name tried. Defined in nvml.cpp, the only file that includes nvml.h.
  struct Api;

  /// The process's instance, loaded on the first call: $CLUSTERBENCH_NVML_LIB if set, else
  /// "libnvidia-ml.so.1", else "libnvidia-ml.so".
  static const Nvml& get();

  /// Shuts NVML down, unloads it and loads it again from the current environment. Tests only:
  /// no other thread may hold a reference from get() meanwhile.
  static void reload_for_testing();

  /// Library loaded, required entry points found, and nvmlInit succeeded.
  bool ok() const { return ok_; }
  /// "ok"; dlerror()'s text; "<library>: lacks nvmlInit_v2"; "nvmlInit: Driver Not Loaded";
  /// or the compiled-out message.
  const std::string& status() const { return status_; }
  /// The library path dlopen'ed; when none opened, the first one tried.
  const std::string& library() const { return library_; }
  /// nvmlErrorString(code), or "NVML error <code>" when the library lacks it.
  std::string error_string(int code) const;
  /// The symbol an entry point was bound to, keyed by its preferred name, e.g.
  /// resolved("nvmlDeviceGetCurrentClocksEventReasons") ==
  /// "nvmlDeviceGetCurrentClocksThrottleReasons" on a driver that predates the rename; "" when the
  /// library has none of its names.
  std::string resolved(std::string_view preferred_name) const;
  /// The bound entry points; only usable where nvml.h is included.
  const Api& api() const { return *api_; }

  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml();

 private:
  Nvml();
  void load();
  bool open_library();  ///< dlopen: sets library_ and, on failure, status_
  void bind_inventory();
  void bind_health_and_telemetry();
  template <class Fn>
  void bind(Fn& slot, std::initializer_list<const char*> names);

  bool ok_ = false;
  std::string status_;
  std::string library_;
  void* handle_ = nullptr;
  bool initialised_ = false;
  std::unique_ptr<Api> api_;
  std::map<std::string, std::string, std::less<>> resolved_;
};

/// Health counters of every GPU, the "gpus" array of a health snapshot (bench/env/health.hpp,
/// docs/health.md): per GPU {"index", "uuid", "pci_bus_id", "status", "ecc", "retired_pages",
/// "row_remap", "nvlink"}, a counter NVML does not support left out. `status` becomes "ok" or
/// why NVML could not be used (then the array is empty). Never throws.
json query_nvml_health(std::string& status);

/// One NVML XID critical-error event.
struct NvmlXidEvent {
  int gpu_index = -1;  ///< NVML index of the GPU, -1 when the handle is not one registered
  std::string uuid, pci_bus_id;
  unsigned long long xid = 0;  ///< nvmlEventData_t::eventData (999: unknown XID)
};

/// An NVML event set with every GPU registered for nvmlEventTypeXidCriticalError
/// (nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait_v2, nvmlEventSetFree).
class NvmlXidEvents {
 public:
  NvmlXidEvents();
  ~NvmlXidEvents();
  NvmlXidEvents(const NvmlXidEvents&) = delete;
  NvmlXidEvents& operator=(const NvmlXidEvents&) = delete;
  /// "ok", or why no GPU (or not every GPU) could be registered.
  const std::string& status() const { return status_; }
  int registered() const { return static_cast<int>(gpus_.size()); }
  /// Waits up to timeout_ms: 1 with `out` filled, 0 on timeout (or a non-XID event), -1 when the
  /// set is unusable or the wait failed (status() says why). Call from one thread at a time.
  int wait(unsigned timeout_ms, NvmlXidEvent& out);

 private:
  struct Gpu {
    void* handle = nullptr;  ///< nvmlDevice_t
    int index = -1;
    std::string uuid, pci_bus_id;
  };
  void* set_ = nullptr;
  std::string status_;
  std::vector<Gpu> gpus_;
};

}  // namespace clusterbench
