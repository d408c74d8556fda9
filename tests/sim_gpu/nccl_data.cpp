// Content across processes: serialization of segments (compact for the procedural kinds) and
// element-wise reductions that keep periodic inputs periodic (period lcm of the inputs' and the
// element size), materializing only what is not.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include "nccl_impl.hpp"

namespace cbsim {

namespace {

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
T get(const std::string& in, size_t& at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

std::vector<unsigned char> rotated_period(const Seg& s) {
  const auto& p = periodic_bytes(*s.src);
  const std::uint64_t phase = s.src_off % p.size();
  std::vector<unsigned char> out(p.begin() + static_cast<long>(phase), p.end());
  out.insert(out.end(), p.begin(), p.begin() + static_cast<long>(phase));
  return out;
}

void serialize_seg(std::string& out, const Seg& s) {
  const SrcKind k = s.src->kind();
  const bool raw = k == SrcKind::bytes || k == SrcKind::product;
  put<std::uint8_t>(out, static_cast<std::uint8_t>(raw ? SrcKind::bytes : k));
  put<std::uint64_t>(out, s.len);
  switch (k) {
    case SrcKind::uninit:
      return;
    case SrcKind::constant:
      return put<std::uint8_t>(out, constant_value(*s.src));
    case SrcKind::periodic: {
      const auto p = rotated_period(s);
      put<std::uint64_t>(out, p.size());
      out.append(reinterpret_cast<const char*>(p.data()), p.size());
      return;
    }
    case SrcKind::gemm_fill: {
      int fill = 0, which = 0;
      std::uint64_t seed = 0;
      gemm_fill_params(*s.src, fill, seed, which);
      put<std::int32_t>(out, fill), put<std::uint64_t>(out, seed), put<std::int32_t>(out, which);
      return put<std::uint64_t>(out, s.src_off);
    }
    case SrcKind::copy_fill:
      return put<std::uint64_t>(out, s.src_off);
    default: {
      const size_t at = out.size();
      out.resize(at + s.len);
      s.src->read(s.src_off, s.len, reinterpret_cast<unsigned char*>(&out[at]));
    }
  }
}

/// Source and offset of byte `at` of each input, when every input is one window there.
struct Piece {
  std::uint64_t a, b;
  bool mixed;  ///< a boundary inside an element: materialized
};

std::vector<Piece> pieces(const std::vector<Segs>& in, std::uint64_t len, std::uint64_t es) {
  std::set<std::uint64_t> cuts{0, len}, split;
  for (const Segs& s : in)
    for (const Seg& g : s) {
      if (g.off % es == 0) {
        cuts.insert(g.off);
        continue;
      }
      const std::uint64_t lo = g.off / es * es;
      cuts.insert(lo), cuts.insert(std::min(len, lo + es)), split.insert(lo);
    }
  std::vector<Piece> out;
  for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it)
    out.push_back({*it, *std::next(it), split.count(*it) > 0});
  return out;
}

double combine(double acc, double v, ncclRedOp_t op) {
  switch (op) {
    case ncclProd:
      return acc * v;
    case ncclMax:
      return std::max(acc, v);
    case ncclMin:
      return std::min(acc, v);
    default:
      return acc + v;
  }
}

/// Reduces `count` elements of each input buffer into `out`, rounding to `t` after each step
/// (the order of the ranks).
void reduce_bytes(const std::vector<std::vector<unsigned char>>& in, Elem t, ncclRedOp_t op,
                  std::uint64_t count, unsigned char* out, size_t n) {
  for (std::uint64_t i = 0; i < count; ++i) {
    double acc = load(t, in[0].data(), i);
    for (size_t r = 1; r < in.size(); ++r)
      acc = round_to(t, combine(acc, load(t, in[r].data(), i), op));
    if (op == ncclAvg) acc = acc / static_cast<double>(n);
    store(t, out, i, acc);
  }
}

/// One piece of the reduction: periodic where every input is, else materialized (in chunks
/// of 64 MiB, to bound the temporary buffers).
void reduce_piece(const std::vector<Segs>& in, Elem t, ncclRedOp_t op, const Piece& p, Segs& out) {
  const std::uint64_t len = p.b - p.a, es = elem_size(t);
  std::uint64_t period = es;
  bool periodic = !p.mixed;
  for (const Segs& s : in) {
    const Segs w = slice(s, p.a, len);
    if (w.size() != 1) periodic = false;
    if (w.empty()) continue;
    const SrcKind k = w[0].src->kind();
    if (w.size() == 1 && k == SrcKind::uninit && !p.mixed)
      return out.push_back(Seg{p.a, len, uninit_source(), 0});
    if (k == SrcKind::periodic)
      period = std::lcm(period, static_cast<std::uint64_t>(periodic_bytes(*w[0].src).size()));
    else if (k != SrcKind::constant)
      periodic = false;
  }
  const bool repeat = periodic && period <= (1 << 20) && period < len;
  constexpr std::uint64_t kChunk = 64 << 20;
  for (std::uint64_t a = p.a; a < p.b; a += kChunk) {
    const std::uint64_t span = repeat ? period : std::min(kChunk, p.b - a);
    std::vector<std::vector<unsigned char>> bytes(in.size(), std::vector<unsigned char>(span));
    for (size_t r = 0; r < in.size(); ++r) read(in[r], a, span, bytes[r].data());
    std::vector<unsigned char> res(span);
    reduce_bytes(bytes, t, op, span / es, res.data(), in.size());
    if (repeat) return out.push_back(Seg{p.a, len, periodic_source(std::move(res)), 0});
    out.push_back(Seg{a, span, bytes_source(std::move(res)), 0});
  }
}

}  // namespace

std::string serialize(const Segs& piece) {
  std::string out;
  put<std::uint32_t>(out, static_cast<std::uint32_t>(piece.size()));
  for (const Seg& s : piece) serialize_seg(out, s);
  return out;
}

Segs deserialize(const std::string& in) {
  Segs out;
  if (in.size() < 4) return out;
  size_t at = 0;
  const auto n = get<std::uint32_t>(in, at);
  std::uint64_t off = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto kind = static_cast<SrcKind>(get<std::uint8_t>(in, at));
    const auto len = get<std::uint64_t>(in, at);
    Seg s{off, len, uninit_source(), 0};
    if (kind == SrcKind::constant) {
      s.src = constant_source(get<std::uint8_t>(in, at));
    } else if (kind == SrcKind::periodic) {
      const auto p = get<std::uint64_t>(in, at);
      s.src = periodic_source(
          {in.begin() + static_cast<long>(at), in.begin() + static_cast<long>(at + p)});
      at += p;
    } else if (kind == SrcKind::gemm_fill) {
      const int fill = get<std::int32_t>(in, at);
      const auto seed = get<std::uint64_t>(in, at);
      const int which = get<std::int32_t>(in, at);
      s.src = gemm_fill_source(fill, seed, which), s.src_off = get<std::uint64_t>(in, at);
    } else if (kind == SrcKind::copy_fill) {
      s.src = copy_fill_source(), s.src_off = get<std::uint64_t>(in, at);
    } else if (kind == SrcKind::bytes) {
      s.src = bytes_source(
          {in.begin() + static_cast<long>(at), in.begin() + static_cast<long>(at + len)});
      at += len;
    }
    out.push_back(s);
    off += len;
  }
  return out;
}

Segs reduce(const std::vector<Segs>& inputs, Elem t, ncclRedOp_t op, std::uint64_t len) {
  Segs out;
  if (inputs.empty() || len == 0) return out;
  for (const Piece& p : pieces(inputs, len, elem_size(t))) reduce_piece(inputs, t, op, p, out);
  return out;
}

bool nccl_elem(ncclDataType_t t, Elem& out) {
  switch (t) {
    case ncclFloat32:
      out = Elem::f32;
      return true;
    case ncclFloat16:
      out = Elem::f16;
      return true;
    case ncclBfloat16:
      out = Elem::bf16;
      return true;
    case ncclFloat64:
      out = Elem::f64;
      return true;
    default:
      return false;
  }
}

}  // namespace cbsim
