// Internal to bench/env: NVML's function table (Nvml::Api) and the per-GPU reader shared by the
// NVML sources (nvml.cpp: loading, inventory, telemetry; nvml_health.cpp: health counters, XID
// events, processes). Only these sources include nvml.h.
#pragma once

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "env/nvml.hpp"

#if CLUSTERBENCH_HAVE_NVML
// Keep nvml.h from renaming nvmlInit to nvmlInit_v2 etc.: we name every symbol ourselves.
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>
#endif

namespace clusterbench {

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
  // Field values: the NVLink counters where the DL counters above answer Not Supported.
  nvmlReturn_t (*device_get_field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
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

#if CLUSTERBENCH_HAVE_NVML
namespace nvml_detail {

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

/// The bus id of nvmlPciInfo_t (normalize_nvml_bus_id's form).
std::string bus_id_of(const nvmlPciInfo_t& pci);

}  // namespace nvml_detail
#endif

}  // namespace clusterbench
