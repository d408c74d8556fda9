// Element types of the simulated device memory and their exact conversions, as the GPU does
// them: round to nearest even, FP8 E4M3 saturating at +-448 (the fill kernel's __nv_fp8_e4m3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cbsim {

/// An element type of device memory.
enum class Elem : std::uint8_t { f32, f16, bf16, e4m3, f64, tf32 };

/// Bytes per element (tf32 is stored as a float).
std::size_t elem_size(Elem t);
const char* elem_name(Elem t);

/// Element `i` of an array of `t` at `p`, widened.
double load(Elem t, const void* p, std::size_t i);
/// Stores `v` rounded to nearest even in `t` as element `i` (tf32: a float of 10 mantissa bits).
void store(Elem t, void* p, std::size_t i, double v);
/// `v` as `t` would hold it (store then load).
double round_to(Elem t, double v);

/// The bytes of element `index` of fill_gemm_input(seed, which) in fill type `fill`
/// (compute/gemm_gpu.hpp FillType as an int: f32, f16, bf16, fp8_e4m3, tf32), written to
/// `out` (elem_size bytes): gemm_input_value rounded once, from the double, as the fill kernel
/// does.
void gemm_fill_element(int fill, std::uint64_t seed, int which, std::uint64_t index,
                       unsigned char* out);
/// The element type of a fill type.
Elem fill_elem(int fill);

/// Elements [first, first + n) of fill_gemm_input(seed, which) in fill type `fill`, as floats
/// (the values gemm_fill_element stores).
void gemm_fill_values(int fill, std::uint64_t seed, int which, std::uint64_t first, std::uint64_t n,
                      float* out);
/// `n` elements of `t` at `bytes`, widened to float.
void decode_run(Elem t, const unsigned char* bytes, std::uint64_t n, float* out);

/// Word `i` of fill_copy_pattern (compute/gpu_copy_kernels.hpp copy_pattern), 16 bytes.
void copy_pattern_word(long long i, unsigned char* out);

}  // namespace cbsim
