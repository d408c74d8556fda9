// cuBLASLt results evaluated on demand (product.hpp).
#include "product.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace cbsim {

namespace {

/// Reads one element of `es` bytes at element index `e` of `c`.
void read_element(const Segs& c, std::uint64_t e, std::size_t es, unsigned char* out) {
  read(c, e * es, es, out);
}

/// Warns once per process when products are read element by element on a large scale.
void note_cost(std::uint64_t elements, std::uint64_t k) {
  static bool warned = false;
  if (!warned && elements * k > (1ULL << 32)) {
    warned = true;
    std::fprintf(stderr,
                 "cbsim: reading %llu elements of a simulated GEMM product (K = %llu) evaluates "
                 "each on the host: slow\n",
                 static_cast<unsigned long long>(elements), static_cast<unsigned long long>(k));
  }
}

}  // namespace

namespace {

/// Values of one element-aligned window of `n` elements into `out`: the fill's values computed
/// directly, a constant decoded once, anything else read as bytes and decoded.
void window_values(const Seg& s, Elem t, std::uint64_t n, float* out) {
  const std::uint64_t es = elem_size(t);
  if (s.src->kind() == SrcKind::gemm_fill) {
    int fill = 0, which = 0;
    std::uint64_t seed = 0;
    gemm_fill_params(*s.src, fill, seed, which);
    if (fill_elem(fill) == t) return gemm_fill_values(fill, seed, which, s.src_off / es, n, out);
  }
  if (s.src->kind() == SrcKind::constant || s.src->kind() == SrcKind::uninit) {
    unsigned char b[8];
    s.src->read(0, es, b);
    float v;
    decode_run(t, b, 1, &v);
    return std::fill(out, out + n, v);
  }
  std::vector<unsigned char> raw;
  constexpr std::uint64_t kChunk = 1 << 16;
  for (std::uint64_t done = 0; done < n; done += kChunk) {
    const std::uint64_t c = std::min(kChunk, n - done);
    raw.resize(c * es);
    s.src->read(s.src_off + done * es, c * es, raw.data());
    decode_run(t, raw.data(), c, out + done);
  }
}

}  // namespace

void read_values(const Segs& c, Elem t, std::uint64_t first, std::uint64_t count,
                 std::vector<float>& out) {
  const std::uint64_t es = elem_size(t);
  out.resize(count);
  const Segs piece = slice(c, first * es, count * es);
  bool aligned = true;
  for (const Seg& s : piece)
    aligned = aligned && s.off % es == 0 && s.len % es == 0 && s.src_off % es == 0;
  if (aligned) {
    for (const Seg& s : piece) window_values(s, t, s.len / es, out.data() + s.off / es);
    return;
  }
  std::vector<unsigned char> raw(count * es);
  read(piece, 0, count * es, raw.data());
  decode_run(t, raw.data(), count, out.data());
}

std::string ProductDesc::key() const {
  auto op = [](const Operand& x) {
    return std::to_string(static_cast<int>(x.type)) + "," + std::to_string(x.rows) + "," +
           std::to_string(x.cols) + "," + std::to_string(x.ld) + "," + std::to_string(x.stride) +
           "," + std::to_string(x.trans) + "[" + fingerprint(x.data) + "]";
  };
  char scal[96];
  std::snprintf(scal, sizeof scal, "%a,%a,%d,%lld,%llu", alpha, beta, batch,
                static_cast<long long>(d_stride), static_cast<unsigned long long>(ldd));
  return op(a) + "|" + op(b) + "|" + (beta != 0 ? op(c) : std::string("-")) + "|" +
         std::to_string(static_cast<int>(out)) + "," +
         std::to_string(static_cast<int>(input_round)) + "," + std::to_string(m) + "," +
         std::to_string(n) + "," + std::to_string(k) + "," + scal;
}

float operand_element(const Operand& x, std::uint64_t i, std::uint64_t j, int b) {
  // op(x)(i, j) = x(j, i) when transposed; storage index row + col * ld.
  const std::uint64_t row = x.trans ? j : i, col = x.trans ? i : j;
  const std::uint64_t e = row + col * x.ld + static_cast<std::uint64_t>(b) * x.stride;
  unsigned char buf[8];
  read_element(x.data, e, elem_size(x.type), buf);
  return static_cast<float>(load(x.type, buf, 0));
}

/// Rounds fetched inputs as a FAST_* compute type does before the tensor cores.
void round_inputs(const ProductDesc& d, std::vector<float>& v) {
  if (d.input_round == Elem::f32) return;
  for (float& x : v) x = static_cast<float>(round_to(d.input_round, x));
}

void row_of_a(const ProductDesc& d, std::uint64_t i, int b, std::vector<float>& out) {
  const Operand& a = d.a;
  const std::uint64_t base = static_cast<std::uint64_t>(b) * a.stride;
  if (a.trans) {
    read_values(a.data, a.type, base + i * a.ld, d.k, out);  // a column of the stored A
  } else {
    out.resize(d.k);
    for (std::uint64_t p = 0; p < d.k; ++p) out[p] = operand_element(a, i, p, b);
  }
  round_inputs(d, out);
}

void column_of_b(const ProductDesc& d, std::uint64_t j, int b, std::vector<float>& out) {
  const Operand& x = d.b;
  const std::uint64_t base = static_cast<std::uint64_t>(b) * x.stride;
  if (!x.trans) {
    read_values(x.data, x.type, base + j * x.ld, d.k, out);
  } else {
    out.resize(d.k);
    for (std::uint64_t p = 0; p < d.k; ++p) out[p] = operand_element(x, p, j, b);
  }
  round_inputs(d, out);
}

float accumulate(const ProductDesc& d, const std::vector<float>& arow,
                 const std::vector<float>& bcol, std::uint64_t i, std::uint64_t j, int b) {
  float acc = 0;
  for (std::uint64_t p = 0; p < d.k; ++p) acc += arow[p] * bcol[p];
  float v = static_cast<float>(d.alpha) * acc;
  if (d.beta != 0) v += static_cast<float>(d.beta) * operand_element(d.c, i, j, b);
  return v;
}

bool in_product(const ProductDesc& d, std::uint64_t e) {
  const std::uint64_t per = d.batch > 1 ? static_cast<std::uint64_t>(d.d_stride) : e + 1;
  const std::uint64_t b = e / per, r = e % per;
  return b < static_cast<std::uint64_t>(d.batch) && r % d.ldd < d.m && r / d.ldd < d.n;
}

double product_element(const ProductDesc& d, std::uint64_t e) {
  auto o = d.overrides.find(e);
  if (o != d.overrides.end()) return o->second;
  const std::uint64_t per = d.batch > 1 ? static_cast<std::uint64_t>(d.d_stride) : e + 1;
  const int b = static_cast<int>(e / per);
  const std::uint64_t r = e % per, i = r % d.ldd, j = r / d.ldd;
  std::vector<float> arow, bcol;
  row_of_a(d, i, b, arow);
  column_of_b(d, j, b, bcol);
  return round_to(d.out, accumulate(d, arow, bcol, i, j, b));
}

ProductSource::ProductSource(std::shared_ptr<const ProductDesc> d)
    : Source(SrcKind::product), d_(std::move(d)) {}

void ProductSource::read(std::uint64_t pos, std::uint64_t n, unsigned char* out) const {
  const ProductDesc& d = *d_;
  const std::size_t es = elem_size(d.out);
  const std::uint64_t e0 = pos / es, e1 = (pos + n + es - 1) / es;
  note_cost(e1 - e0, d.k);
  std::vector<float> arow, bcol;
  std::uint64_t col_cached = ~0ULL;
  int batch_cached = -1;
  unsigned char tmp[8];
  for (std::uint64_t e = e0; e < e1; ++e) {
    const std::uint64_t per = d.batch > 1 ? static_cast<std::uint64_t>(d.d_stride) : e + 1;
    const int b = static_cast<int>(e / per);
    const std::uint64_t r = e % per, i = r % d.ldd, j = r / d.ldd;
    double v;
    if (auto o = d.overrides.find(e); o != d.overrides.end()) {
      v = o->second;
    } else {
      if (j != col_cached || b != batch_cached) column_of_b(d, j, b, bcol);
      col_cached = j, batch_cached = b;
      row_of_a(d, i, b, arow);
      v = accumulate(d, arow, bcol, i, j, b);
    }
    store(d.out, tmp, 0, v);
    const std::uint64_t at = e * es, from = std::max(at, pos), to = std::min(at + es, pos + n);
    std::memcpy(out + (from - pos), tmp + (from - at), to - from);
  }
}

Segs product_segments(const std::shared_ptr<const ProductDesc>& d, SourcePtr src) {
  const std::size_t es = elem_size(d->out);
  const bool dense_cols = d->ldd == d->m;
  const bool dense_batches =
      d->batch == 1 || static_cast<std::uint64_t>(d->d_stride) == d->ldd * d->n;
  Segs out;
  if (dense_cols && dense_batches) {
    const std::uint64_t len = d->m * d->n * static_cast<std::uint64_t>(d->batch) * es;
    out.push_back(Seg{0, len, src, 0});
    return out;
  }
  for (int b = 0; b < d->batch; ++b)
    for (std::uint64_t j = 0; j < d->n; ++j) {
      const std::uint64_t at = (static_cast<std::uint64_t>(b) * d->d_stride + j * d->ldd) * es;
      out.push_back(Seg{at, d->m * es, src, at});
    }
  return out;
}

}  // namespace cbsim
