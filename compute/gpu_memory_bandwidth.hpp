// compute.gpu_memory_bandwidth: device-to-device copy bandwidth of each GPU's memory
// (docs/metrics.md "GPU memory bandwidth", docs/gpu_memory_bandwidth.md).
#pragma once

namespace clusterbench::compute {

/// Bytes one copy of `bytes` moves through the GPU's memory: each byte is read once and written
/// once, so 2 x bytes (the convention of nvbandwidth and of STREAM's copy kernel).
double device_copy_bytes_moved(long long bytes);

}  // namespace clusterbench::compute
