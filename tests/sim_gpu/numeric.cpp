// Element types and conversions (numeric.hpp). The host implementations of cuda_fp16.h,
// cuda_bf16.h and cuda_fp8.h round exactly as the device does.
#include "numeric.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "compute/gemm.hpp"

namespace cbsim {

namespace {

/// A finite normal double rounded to `bits` explicit mantissa bits, to nearest even, once.
double round_mantissa(double v, int bits) {
  std::uint64_t u;
  std::memcpy(&u, &v, 8);
  const int drop = 52 - bits;
  u += (std::uint64_t{1} << (drop - 1)) - 1 + ((u >> drop) & 1);
  u &= ~((std::uint64_t{1} << drop) - 1);
  std::memcpy(&v, &u, 8);
  return v;
}

/// A float rounded to 10 mantissa bits, to nearest even (the fill kernel's Tf32).
float tf32_round(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0xFFFu + ((u >> 13) & 1u);
  u &= ~0x1FFFu;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

std::size_t elem_size(Elem t) {
  switch (t) {
    case Elem::f16:
    case Elem::bf16:
      return 2;
    case Elem::e4m3:
      return 1;
    case Elem::f64:
      return 8;
    default:
      return 4;
  }
}

const char* elem_name(Elem t) {
  static const char* names[] = {"float", "half", "bfloat16", "fp8_e4m3", "double", "tf32"};
  return names[static_cast<int>(t)];
}

double load(Elem t, const void* p, std::size_t i) {
  const auto* b = static_cast<const unsigned char*>(p);
  switch (t) {
    case Elem::f32:
    case Elem::tf32: {
      float f;
      std::memcpy(&f, b + 4 * i, 4);
      return f;
    }
    case Elem::f16: {
      __half h;
      std::memcpy(&h, b + 2 * i, 2);
      return __half2float(h);
    }
    case Elem::bf16: {
      std::uint32_t u = 0;
      std::memcpy(reinterpret_cast<unsigned char*>(&u) + 2, b + 2 * i, 2);
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case Elem::e4m3: {
      __nv_fp8_e4m3 h;
      std::memcpy(&h, b + i, 1);
      return static_cast<float>(h);
    }
    case Elem::f64: {
      double d;
      std::memcpy(&d, b + 8 * i, 8);
      return d;
    }
  }
  return 0;
}

void store(Elem t, void* p, std::size_t i, double v) {
  auto* b = static_cast<unsigned char*>(p);
  switch (t) {
    case Elem::f32: {
      float f = static_cast<float>(v);
      std::memcpy(b + 4 * i, &f, 4);
      return;
    }
    case Elem::tf32: {
      float f = tf32_round(static_cast<float>(v));
      std::memcpy(b + 4 * i, &f, 4);
      return;
    }
    case Elem::f16: {
      __half h = __float2half_rn(static_cast<float>(v));
      std::memcpy(b + 2 * i, &h, 2);
      return;
    }
    case Elem::bf16: {
      __nv_bfloat16 h = __float2bfloat16_rn(static_cast<float>(v));
      std::memcpy(b + 2 * i, &h, 2);
      return;
    }
    case Elem::e4m3: {
      __nv_fp8_e4m3 h(static_cast<float>(v));
      std::memcpy(b + i, &h, 1);
      return;
    }
    case Elem::f64:
      std::memcpy(b + 8 * i, &v, 8);
      return;
  }
}

double round_to(Elem t, double v) {
  unsigned char buf[8];
  store(t, buf, 0, v);
  return load(t, buf, 0);
}

Elem fill_elem(int fill) {
  static const Elem by_fill[] = {Elem::f32, Elem::f16, Elem::bf16, Elem::e4m3, Elem::tf32};
  return fill >= 0 && fill < 5 ? by_fill[fill] : Elem::f32;
}

void gemm_fill_element(int fill, std::uint64_t seed, int which, std::uint64_t index,
                       unsigned char* out) {
  const double v = clusterbench::compute::gemm_input_value(seed, which, index);
  float f;
  switch (fill) {
    case 1:  // f16: __double2half, one rounding from the double
    case 2:  // bf16: __double2bfloat16
    case 3:  // fp8_e4m3: magnitudes in [0.25, 1) are normal in every type
      f = static_cast<float>(round_mantissa(v, fill == 1 ? 10 : fill == 2 ? 7 : 3));
      break;
    case 4:  // tf32: to float, then to 10 bits (the kernel's Tf32)
      f = tf32_round(static_cast<float>(v));
      break;
    default:
      f = static_cast<float>(v);
  }
  store(fill_elem(fill), out, 0, f);  // exact: f holds a value of the type
}

namespace {

/// gemm_input_value (compute/gemm.hpp), bit for bit, without its data-dependent branch: the
/// random sign is or'ed into the sign bit (a branch on it mispredicts every other element).
inline double input_value_branchless(std::uint64_t seed, int which, std::uint64_t index) {
  std::uint64_t z =
      seed * 0x9E3779B97F4A7C15ULL + (static_cast<std::uint64_t>(which) << 62) + index;
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  double mag = 0.25 + 0.75 * (static_cast<double>(static_cast<std::int64_t>(z >> 11)) * 0x1.0p-53);
  std::uint64_t bits;
  std::memcpy(&bits, &mag, 8);
  bits |= (z & 1) << 63;
  std::memcpy(&mag, &bits, 8);
  return mag;
}

template <int kFill>
void fill_values(std::uint64_t seed, int which, std::uint64_t first, std::uint64_t n, float* out) {
  constexpr int kBits = kFill == 1 ? 10 : kFill == 2 ? 7 : kFill == 3 ? 3 : 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const double v = input_value_branchless(seed, which, first + i);
    if constexpr (kBits != 0)
      out[i] = static_cast<float>(round_mantissa(v, kBits));
    else if constexpr (kFill == 4)
      out[i] = tf32_round(static_cast<float>(v));
    else
      out[i] = static_cast<float>(v);
  }
}

}  // namespace

void gemm_fill_values(int fill, std::uint64_t seed, int which, std::uint64_t first, std::uint64_t n,
                      float* out) {
  switch (fill) {
    case 1:
      return fill_values<1>(seed, which, first, n, out);
    case 2:
      return fill_values<2>(seed, which, first, n, out);
    case 3:
      return fill_values<3>(seed, which, first, n, out);
    case 4:
      return fill_values<4>(seed, which, first, n, out);
    default:
      return fill_values<0>(seed, which, first, n, out);
  }
}

namespace {

/// Every half (or FP8 E4M3) bit pattern as a float.
const float* table(Elem t) {
  static const std::vector<float> f16 = [] {
    std::vector<float> v(65536);
    for (unsigned i = 0; i < 65536; ++i) {
      const unsigned char b[2] = {static_cast<unsigned char>(i),
                                  static_cast<unsigned char>(i >> 8)};
      v[i] = static_cast<float>(load(Elem::f16, b, 0));
    }
    return v;
  }();
  static const std::vector<float> e4m3 = [] {
    std::vector<float> v(256);
    for (unsigned i = 0; i < 256; ++i) {
      const unsigned char b = static_cast<unsigned char>(i);
      v[i] = static_cast<float>(load(Elem::e4m3, &b, 0));
    }
    return v;
  }();
  return t == Elem::f16 ? f16.data() : e4m3.data();
}

}  // namespace

void decode_run(Elem t, const unsigned char* bytes, std::uint64_t n, float* out) {
  switch (t) {
    case Elem::f32:
    case Elem::tf32:
      std::memcpy(out, bytes, 4 * n);
      return;
    case Elem::bf16:
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint32_t u = (static_cast<std::uint32_t>(bytes[2 * i + 1]) << 24) |
                                (static_cast<std::uint32_t>(bytes[2 * i]) << 16);
        std::memcpy(out + i, &u, 4);
      }
      return;
    case Elem::f16: {
      const float* tab = table(Elem::f16);
      for (std::uint64_t i = 0; i < n; ++i) out[i] = tab[bytes[2 * i] | (bytes[2 * i + 1] << 8)];
      return;
    }
    case Elem::e4m3: {
      const float* tab = table(Elem::e4m3);
      for (std::uint64_t i = 0; i < n; ++i) out[i] = tab[bytes[i]];
      return;
    }
    case Elem::f64:
      for (std::uint64_t i = 0; i < n; ++i) out[i] = static_cast<float>(load(Elem::f64, bytes, i));
      return;
  }
}

void copy_pattern_word(long long i, unsigned char* out) {
  const unsigned x = static_cast<unsigned>(i) * 2654435761u + 1u;
  const unsigned w[4] = {x, x ^ 0xA5A5A5A5u, static_cast<unsigned>(i >> 32) + 7u, ~x};
  std::memcpy(out, w, 16);
}

}  // namespace cbsim
