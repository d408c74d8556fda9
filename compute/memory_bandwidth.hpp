// compute.memory_bandwidth: STREAM on the host (docs/metrics.md "STREAM", docs/memory_bandwidth.md).
#pragma once

#include <string>

namespace clusterbench::compute {

/// Bytes STREAM counts per array element for a kernel (McCalpin's stream.c): copy and scale move
/// 2 arrays, add and triad 3, of 8-byte doubles: 16, 16, 24, 24. Throws std::invalid_argument for
/// an unknown kernel name.
double stream_bytes_per_element(const std::string& kernel);

/// STREAM's validation for one kernel repeated on arrays initialised a=1, b=2, c=1 (scalar 3):
/// returns the average relative error of the kernel's output array against its expected value.
/// `out` is the output array (c for copy/add, b for scale, a for triad), `n` elements.
double stream_relative_error(const std::string& kernel, const double* out, long long n);

/// Expected output value of a kernel for the initial values above.
double stream_expected(const std::string& kernel);

}  // namespace clusterbench::compute
