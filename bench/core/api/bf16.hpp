// bfloat16 (the top 16 bits of an IEEE 754 float) to and from float, for the benchmarks that
// fill or check bf16 buffers on the host (GEMM operands, collective elements).
#pragma once

#include <cstdint>
#include <cstring>

namespace clusterbench {

/// bfloat16 bits of a float, rounded to nearest even; NaN stays a (quiet) NaN.
inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

/// The float whose top 16 bits are `b`.
inline float bf16_to_float(std::uint16_t b) {
  std::uint32_t x = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace clusterbench
