// What every collective shares (collective.hpp): element types and their sums, the inputs, the
// size sweep, nccl-tests' algbw/busbw arithmetic, the result check and nccl-tests' table.
// Formulas: docs/metrics.md "Collectives".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "collectives/collective.hpp"
#include "core/api/error.hpp"
#include "core/api/ops_progress.hpp"

namespace clusterbench::collectives {

Dtype parse_dtype(const std::string& name, const std::string& what) {
  if (name == "float") return Dtype::f32;
  if (name == "half") return Dtype::f16;
  if (name == "bfloat16") return Dtype::bf16;
  throw InputError(what + ": unknown type '" + name + "' (float, half, bfloat16)");
}

const char* dtype_name(Dtype t) {
  return t == Dtype::f32 ? "float" : t == Dtype::f16 ? "half" : "bfloat16";
}

std::size_t dtype_size(Dtype t) { return t == Dtype::f32 ? 4 : 2; }

std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t mant = x & 0x7fffffu;
  int exp = static_cast<int>((x >> 23) & 0xffu);
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    std::uint32_t h = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds up to infinity
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | (mant << 13);
  else
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}


double load(Dtype t, const void* data, long long i) {
  if (t == Dtype::f32) return static_cast<const float*>(data)[i];
  std::uint16_t v = static_cast<const std::uint16_t*>(data)[i];
  return t == Dtype::f16 ? half_to_float(v) : bf16_to_float(v);
}

void store(Dtype t, void* data, long long i, double v) {
  float f = static_cast<float>(v);
  if (t == Dtype::f32)
    static_cast<float*>(data)[i] = f;
  else
    static_cast<std::uint16_t*>(data)[i] = t == Dtype::f16 ? float_to_half(f) : float_to_bf16(f);
}

void sum_into(Dtype t, const void* in, void* inout, long long count) {
  if (t == Dtype::f32) {
    const float* a = static_cast<const float*>(in);
    float* b = static_cast<float*>(inout);
    for (long long i = 0; i < count; ++i) b[i] += a[i];
    return;
  }
  const std::uint16_t* a = static_cast<const std::uint16_t*>(in);
  std::uint16_t* b = static_cast<std::uint16_t*>(inout);
  if (t == Dtype::f16) {
    for (long long i = 0; i < count; ++i)
      b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
  } else {
    for (long long i = 0; i < count; ++i)
      b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
  }
}

double input_value(int rank, long long i) { return static_cast<double>((3LL * rank + i) % 5 + 1); }

long long op_bytes(const Layout& l, Dtype t) {
  return std::max(l.send_count, l.recv_count) * static_cast<long long>(dtype_size(t));
}

double algbw_gbs(double bytes, double seconds) { return gb_per_s(bytes / seconds); }

double busbw_gbs(const Collective& c, double bytes, double seconds, int n) {
  return algbw_gbs(bytes, seconds) * c.factor(n);
}

std::vector<long long> sweep(long long minbytes, long long maxbytes, double stepfactor,
                             const std::string& what) {
  if (minbytes <= 0 || maxbytes < minbytes)
    throw InputError(what + ": need 0 < minbytes <= maxbytes (got " + std::to_string(minbytes) +
                     ", " + std::to_string(maxbytes) + ")");
  if (!(stepfactor > 1))
    throw InputError(what + ": stepfactor must be > 1 (got " + std::to_string(stepfactor) + ")");
  // Bounded before the loop: a factor of 1.0000000001 would step from 8 B to 8 GiB about 2e11
  // times (a dry run that never returned).
  const double steps = std::log(static_cast<double>(maxbytes) / static_cast<double>(minbytes)) /
                       std::log(stepfactor);
  if (!(steps < kMaxSweepSteps))
    throw InputError(what + ": stepfactor " + std::to_string(stepfactor) + " from " +
                     std::to_string(minbytes) + " to " + std::to_string(maxbytes) +
                     " B makes more than " + std::to_string(kMaxSweepSteps) +
                     " steps; use a larger stepfactor (nccl-tests' -f: 2)");
  std::vector<long long> out;
  for (double s = static_cast<double>(minbytes); s <= static_cast<double>(maxbytes);
       s *= stepfactor) {
    long long b = static_cast<long long>(s);
    if (out.empty() || b != out.back()) out.push_back(b);
  }
  return out;
}

double tolerance(Dtype t, int n) {
  double half_ulp = t == Dtype::f32   ? std::ldexp(1.0, -24)
                    : t == Dtype::f16 ? std::ldexp(1.0, -11)
                                      : std::ldexp(1.0, -8);
  return std::max(1, n) * half_ulp;
}

long long count_wrong(const Collective& c, Dtype t, const void* result, long long count, int rank,
                      int n, long long block, int root, long long first) {
  const double tol = tolerance(t, n);
  long long wrong = 0;
  // expected() depends on the index through its residue mod kInputPeriod and its block only:
  // computed kInputPeriod times per block, not per element (a 1 GiB all_reduce over 8 ranks
  // would otherwise spend 8 input_value calls on each of its 268 million elements).
  double want_of[kInputPeriod] = {};
  long long cached_block = -1;
  for (long long i = 0; i < count; ++i) {
    const long long g = first + i, b = block > 0 ? g / block : 0;
    if (b != cached_block) {
      for (long long k = 0; k < kInputPeriod; ++k)
        want_of[(g + k) % kInputPeriod] = c.expected(rank, n, g + k, block, root);
      cached_block = b;
    }
    const double want = want_of[g % kInputPeriod];
    if (std::isnan(want)) continue;
    const double got = load(t, result, i);
    if (!(std::fabs(got - want) <= tol * std::fabs(want))) ++wrong;
  }
  return wrong;
}

std::string table_header() {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "#%77s%34s\n"
                "#%11s %13s %9s %7s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n"
                "#%11s %13s %9s %7s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n",
                "out-of-place", "in-place", "size", "count", "type", "redop", "root", "time",
                "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "(B)", "(elements)",
                "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return buf;
}

long long Backend::count_differing(const void* data, const void* ref, long long count, Dtype t) {
  const size_t bytes = static_cast<size_t>(count) * dtype_size(t);
  std::vector<unsigned char> a(bytes), b(bytes);
  download(a.data(), data, bytes);
  download(b.data(), ref, bytes);
  long long differ = 0;
  for (long long i = 0; i < count; ++i)
    if (!(load(t, a.data(), i) == load(t, b.data(), i))) ++differ;
  return differ;
}

void table_add(CollectiveTable& t, double busbw, long long wrong, double inplace_busbw,
               long long inplace_wrong) {
  t.busbw_sum += busbw, ++t.busbw_n, t.wrong += wrong;
  if (inplace_busbw >= 0 && inplace_wrong >= 0)
    t.busbw_sum += inplace_busbw, ++t.busbw_n, t.wrong += inplace_wrong;
}

std::string table_footer(long long wrong, double busbw_sum, long long busbw_n) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "# Out of bounds values : %lld %s\n# Avg bus bandwidth    : %g \n#\n", wrong,
                wrong ? "FAILED" : "OK", busbw_n > 0 ? busbw_sum / busbw_n : 0.0);
  return buf;
}

std::string table_row(long long bytes, long long count, const std::string& type,
                      const std::string& redop, int root, double time_us, double algbw,
                      double busbw, long long wrong, double inplace_time_us, double inplace_algbw,
                      double inplace_busbw, long long inplace_wrong) {
  char buf[512];
  int k = std::snprintf(buf, sizeof buf, "%12lld %13lld %9s %7s %6d %9.2f %8.2f %8.2f %6lld", bytes,
                        count, type.c_str(), redop.c_str(), root, time_us, algbw, busbw, wrong);
  if (inplace_time_us >= 0 && inplace_wrong >= 0)
    std::snprintf(buf + k, sizeof buf - static_cast<size_t>(k), " %9.2f %8.2f %8.2f %6lld",
                  inplace_time_us, inplace_algbw, inplace_busbw, inplace_wrong);
  else if (inplace_time_us >= 0)
    std::snprintf(buf + k, sizeof buf - static_cast<size_t>(k), " %9.2f %8.2f %8.2f %6s",
                  inplace_time_us, inplace_algbw, inplace_busbw, "n/a");
  else
    std::snprintf(buf + k, sizeof buf - static_cast<size_t>(k), " %9s %8s %8s %6s", "n/a", "n/a",
                  "n/a", "n/a");
  return std::string(buf) + "\n";
}

}  // namespace clusterbench::collectives
