// The simulated node: its GPUs and settings, read once per process from the node description
// (the fake NVML's JSON file, docs/simulated-gpu.md "Node description"): $CBSIM_NODE, else
// $FAKE_NVML_JSON. CUDA_VISIBLE_DEVICES filters and renumbers the GPUs as CUDA does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cbsim {

/// The "wrong_product" fault of one GPU: the first cublasLtMatmul that starts at least `after_s`
/// wall seconds after the device's first one (`from_compare`: after its first compare_elements,
/// which is when a burn-in's soak starts comparing its products) gets one wrong output element,
/// and so do the `count` - 1 products after it.
struct WrongProduct {
  bool enabled = false;
  double after_s = 0;
  long long count = 1;
  bool from_compare = false;
};

/// The "sticky_error" fault of one GPU: the first operation that runs on the device at least
/// `after_s` wall seconds after its first one fails with CUDA error `code` (sticky, as an
/// uncorrectable ECC error or an XID leaves a context).
struct StickyFault {
  bool enabled = false;
  double after_s = 0;
  int code = 214;  // cudaErrorECCUncorrectable
};

/// One GPU as CUDA sees it.
struct Gpu {
  int nvml_index = 0;  ///< position in the description's "gpus" array
  std::string name, uuid;
  std::string bus_id;  ///< as NVML writes it, "00000000:18:00.0"
  unsigned domain = 0, bus = 0, device = 0;
  long long memory_bytes = 0;
  int pcie_gen = 5, pcie_width = 16;
  int nvlink_up = 18, nvlink_links = 18;
  int major = 9, minor = 0;  ///< compute capability
  int sm_count = 132, l2_bytes = 50 << 20;
  double speed = 1.0;  ///< 1 = healthy; 0.8 = 20% slow on everything it computes or moves
  WrongProduct wrong_product;
  StickyFault sticky;
  /// Modelled rates of a healthy GPU of this model (docs/simulated-gpu.md "Performance model").
  double bf16_tflops = 795, tf32_tflops = 397, fp32_tflops = 51;
  double fp8_tflops = 1520, fp8_tflops_no_fast = 1300;
  double hbm_copy_gbs = 3000, hbm_memcpy_gbs = 3050;
};

/// The node: the GPUs visible to this process, the driver and the simulation's settings.
struct Node {
  bool loaded = false;
  std::string error;  ///< why the description could not be read ("" when loaded)
  std::string path;
  int driver_cuda = 13000;  ///< "cuda_driver_version"
  int nccl_version = 22703;
  int ib_ports_active = 8;
  double wall_sleep_cap_s = 0.02;
  long long context_reserve_bytes = 512LL << 20;
  std::vector<Gpu> gpus;  ///< after CUDA_VISIBLE_DEVICES
};

/// The node of this process (read on first use; thread-safe).
const Node& node();

/// Reads the description again (for in-process tests that switch $CBSIM_NODE).
void reload_node();

/// Parses a description from JSON text (the tests' helper); `visible` is CUDA_VISIBLE_DEVICES's
/// value (nullptr: unset).
Node parse_node(const std::string& json_text, const char* visible);

}  // namespace cbsim
