// The verification kernels over lazy content (checksums.hpp).
#include "checksums.hpp"

#include <cmath>
#include <list>
#include <set>

#include "node.hpp"
#include "perf.hpp"
#include "product.hpp"

namespace cbsim {

namespace {

/// A few recent results by key: the burn-in re-checks one product many times.
template <class V>
class Recent {
 public:
  const V* find(const std::string& key) {
    for (auto& [k, v] : items_)
      if (k == key) return &v;
    return nullptr;
  }
  const V& put(const std::string& key, V v) {
    items_.emplace_front(key, std::move(v));
    if (items_.size() > 4) items_.pop_back();
    return items_.front().second;
  }

 private:
  std::list<std::pair<std::string, V>> items_;
};

struct Sums {
  std::vector<double> sum, norm;
};

/// y_p = sum_j B_pj and r_p = ||B_p||_2 of B stored K x N (the kernel's first pass).
Sums b_sums(const Segs& b, Elem t, std::uint64_t k, std::uint64_t n) {
  static Recent<Sums> cache;
  const std::string key = fingerprint(b) + "/" + std::to_string(static_cast<int>(t)) + "/" +
                          std::to_string(k) + "x" + std::to_string(n);
  if (const Sums* hit = cache.find(key)) return *hit;
  Sums s{std::vector<double>(k, 0), std::vector<double>(k, 0)};
  std::vector<float> col;
  for (std::uint64_t j = 0; j < n; ++j) {
    read_values(b, t, j * k, k, col);
    for (std::uint64_t p = 0; p < k; ++p) s.sum[p] += col[p], s.norm[p] += double(col[p]) * col[p];
  }
  for (double& r : s.norm) r = std::sqrt(r);
  return cache.put(key, std::move(s));
}

/// op(A)'s row dot a column, fast (partial sums): for norms only.
float quick_dot(const std::vector<float>& x, const std::vector<float>& y) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const size_t n = x.size(), n8 = n / 8 * 8;
  for (size_t p = 0; p < n8; p += 8)
    for (int l = 0; l < 8; ++l) acc[l] += x[p + l] * y[p + l];
  float s = 0;
  for (size_t p = n8; p < n; ++p) s += x[p] * y[p];
  for (float v : acc) s += v;
  return s;
}

/// ||D_i||_2 for every row of product `p` (batch 0) without its overrides: exact or from 8
/// sampled columns.
std::vector<double> product_norms(const ProductDesc& p) {
  const bool exact = p.m * p.n * p.k <= (1ULL << 26) && p.n * p.k <= (1ULL << 24);
  const std::uint64_t cols = exact ? p.n : std::min<std::uint64_t>(p.n, 8);
  std::vector<std::vector<float>> bcols(cols);
  std::vector<std::uint64_t> js(cols);
  for (std::uint64_t s = 0; s < cols; ++s)
    js[s] = exact ? s : s * p.n / cols, column_of_b(p, js[s], 0, bcols[s]);
  std::vector<double> norm(p.m, 0);
  std::vector<float> arow;
  for (std::uint64_t i = 0; i < p.m; ++i) {
    row_of_a(p, i, 0, arow);
    double q = 0;
    for (std::uint64_t s = 0; s < cols; ++s) {
      const double c = p.beta != 0 ? p.beta * operand_element(p.c, i, js[s], 0) : 0;
      const double v = exact ? round_to(p.out, accumulate(p, arow, bcols[s], i, js[s], 0))
                             : round_to(p.out, p.alpha * quick_dot(arow, bcols[s]) + c);
      q += v * v;
    }
    norm[i] = std::sqrt(q * static_cast<double>(p.n) / static_cast<double>(cols));
  }
  return norm;
}

/// D's product when D is exactly one dense product from its first element.
const ProductDesc* product_of(const Segs& d, std::uint64_t m, std::uint64_t n) {
  if (d.size() != 1 || d[0].src->kind() != SrcKind::product || d[0].src_off != 0) return nullptr;
  const ProductDesc& p = static_cast<const ProductSource&>(*d[0].src).desc();
  return p.m == m && p.n == n && p.ldd == m ? &p : nullptr;
}

/// Row sums and norms of product `p` from its own operands: linearity, any layout.
Sums product_sums(const ProductDesc& p) {
  const std::uint64_t m = p.m, n = p.n;
  std::vector<double> y(p.k, 0), csum(m, 0);
  std::vector<float> v;
  for (std::uint64_t j = 0; j < n; ++j) {
    column_of_b(p, j, 0, v);
    for (std::uint64_t q = 0; q < p.k; ++q) y[q] += v[q];
    if (p.beta != 0)
      for (std::uint64_t i = 0; i < m; ++i) csum[i] += operand_element(p.c, i, j, 0);
  }
  Sums s{std::vector<double>(m, 0), product_norms(p)};
  for (std::uint64_t i = 0; i < m; ++i) {
    row_of_a(p, i, 0, v);
    double dot = 0;
    for (std::uint64_t q = 0; q < p.k; ++q) dot += v[q] * y[q];
    s.sum[i] = p.alpha * dot + p.beta * csum[i];
  }
  return s;
}

/// Adds each override's difference from the plain product to the row sums and norms of D
/// (an override is one element: it enters a sampled norm once, not N / 8 times).
void add_overrides(const ProductDesc& p, Sums& s) {
  if (p.overrides.empty()) return;
  ProductDesc plain = p;
  plain.overrides.clear();
  for (const auto& [e, val] : p.overrides) {
    const std::uint64_t i = e % p.ldd;
    if (i >= p.m || e / p.ldd >= p.n) continue;
    const double was = product_element(plain, e);
    s.sum[i] += val - was;
    s.norm[i] = std::sqrt(std::max(0.0, s.norm[i] * s.norm[i] + val * val - was * was));
  }
}

/// Whether `p` is the product of the kernel's A (K x M, used transposed) and B (K x N) as
/// stored, so that one pass over A gives the reference and D's sums alike.
bool same_operands(const ProductDesc& p, const Segs& a, const Segs& b, Elem ti, std::uint64_t k) {
  const bool same_values =
      elem_size(p.a.type) == elem_size(ti) && p.a.type == p.b.type &&
      (p.input_round == Elem::f32 || (p.input_round == Elem::tf32 && ti == Elem::tf32));
  return same_values && p.a.trans && !p.b.trans && p.a.ld == k && p.b.ld == k && p.batch == 1 &&
         p.beta == 0 && (p.a.type == ti || ti == Elem::tf32) &&
         fingerprint(p.a.data) == fingerprint(a) && fingerprint(p.b.data) == fingerprint(b);
}

/// Row sums and norms of D (M x N, column-major) read element by element.
Sums plain_sums(const Segs& d, Elem t, std::uint64_t m, std::uint64_t n) {
  Sums s{std::vector<double>(m, 0), std::vector<double>(m, 0)};
  if (d.size() == 1 && d[0].src->kind() == SrcKind::constant) {
    unsigned char b[8];
    d[0].src->read(0, elem_size(t), b);
    const double v = load(t, b, 0);
    for (std::uint64_t i = 0; i < m; ++i) s.sum[i] = v * n, s.norm[i] = std::sqrt(n * v * v);
    return s;
  }
  std::vector<float> col;
  for (std::uint64_t j = 0; j < n; ++j) {
    read_values(d, t, j * m, m, col);
    for (std::uint64_t i = 0; i < m; ++i) s.sum[i] += col[i], s.norm[i] += double(col[i]) * col[i];
  }
  for (double& q : s.norm) q = std::sqrt(q);
  return s;
}

}  // namespace

namespace {

/// One pass over A (K x M): (A^T y)_i, sum_p |A_pi| r_p and, when D is the product of these A
/// and B, D's row sums (linearity) and norms (exact or sampled columns, see checksums.hpp),
/// without D's overrides.
void a_pass(const Segs& a, const Segs& b, Elem ti, std::uint64_t m, std::uint64_t n,
            std::uint64_t k, const Sums& yr, const ProductDesc* p, Sums& ref, Sums& dsums) {
  const bool exact = m * n * k <= (1ULL << 26) && n * k <= (1ULL << 22);
  const std::uint64_t cols = p ? (exact ? n : std::min<std::uint64_t>(n, 8)) : 0;
  std::vector<std::vector<float>> bcols(cols);
  std::vector<std::uint64_t> js(cols);
  for (std::uint64_t s = 0; s < cols; ++s)
    js[s] = exact ? s : s * n / cols, read_values(b, ti, js[s] * k, k, bcols[s]);
  ref = {std::vector<double>(m, 0), std::vector<double>(m, 0)};
  dsums = {std::vector<double>(m, 0), std::vector<double>(m, 0)};
  std::vector<float> col;
  for (std::uint64_t i = 0; i < m; ++i) {
    read_values(a, ti, i * k, k, col);
    double r = 0, acc = 0;
    for (std::uint64_t q = 0; q < k; ++q)
      r += col[q] * yr.sum[q], acc += std::fabs(col[q]) * yr.norm[q];
    ref.sum[i] = r, ref.norm[i] = acc;
    if (!p) continue;
    double sq = 0;
    for (std::uint64_t s = 0; s < cols; ++s) {  // exact: D's element; sampled: an estimate
      const double v = exact ? round_to(p->out, accumulate(*p, col, bcols[s], i, js[s], 0))
                             : round_to(p->out, p->alpha * quick_dot(col, bcols[s]));
      sq += v * v;
    }
    dsums.sum[i] = p->alpha * r;
    dsums.norm[i] = std::sqrt(sq * static_cast<double>(n) /
                              static_cast<double>(std::max<std::uint64_t>(cols, 1)));
  }
}

}  // namespace

void run_row_checksums(State& st, Stream& s, const ChecksumArgs& c, Res& res, double& seconds) {
  const Elem ti = fill_elem(c.in), to = fill_elem(c.out);
  const auto m = static_cast<std::uint64_t>(std::max(0LL, c.m));
  const auto n = static_cast<std::uint64_t>(std::max(0LL, c.n));
  const auto k = static_cast<std::uint64_t>(std::max(0LL, c.k));
  const std::uint64_t abytes = m * k * elem_size(ti), bbytes = k * n * elem_size(ti);
  const std::uint64_t dbytes = m * n * elem_size(to);
  res = Res::compute;
  seconds = kernel_seconds(node().gpus[static_cast<size_t>(s.device)],
                           static_cast<double>(abytes + bbytes + dbytes));
  const char* kn = "gemm_row_checksums";
  Alloc* aa = kernel_range(st, s, kn, "a", c.a, abytes);
  Alloc* ba = aa ? kernel_range(st, s, kn, "b", c.b, bbytes) : nullptr;
  Alloc* da = ba ? kernel_range(st, s, kn, "d", c.d, dbytes) : nullptr;
  Alloc* sa = da ? kernel_range(st, s, kn, "scratch", c.scratch, 16 * k) : nullptr;
  Alloc* ra = sa ? kernel_range(st, s, kn, "rows", c.rows, 32 * m) : nullptr;
  if (!ra) return;
  auto at = [](const Alloc* a, const void* p) {
    return reinterpret_cast<std::uint64_t>(p) - a->base;
  };
  const Segs A = slice(*aa->content, at(aa, c.a), abytes);
  const Segs B = slice(*ba->content, at(ba, c.b), bbytes);
  const Segs D = slice(*da->content, at(da, c.d), dbytes);
  // Cached without D's overrides: a burn-in re-checks products of one set of inputs often.
  static Recent<std::pair<Sums, Sums>> cache;
  const ProductDesc* p = product_of(D, m, n);
  const std::string key =
      fingerprint(A) + "|" + fingerprint(B) + "|" + (p ? p->key() : fingerprint(D)) + "|" +
      std::to_string(static_cast<int>(ti)) + std::to_string(static_cast<int>(to));
  const std::pair<Sums, Sums>* hit = cache.find(key);
  const Sums yr = b_sums(B, ti, k, n);
  if (!hit) {
    const bool fused = p && same_operands(*p, A, B, ti, k);
    Sums ref, ds;
    a_pass(A, B, ti, m, n, k, yr, fused ? p : nullptr, ref, ds);
    if (!fused && p) ds = product_sums(*p);
    if (!p) ds = plain_sums(D, to, m, n);
    hit = &cache.put(key, {ref, ds});
  }
  const Sums& ar = hit->first;
  Sums ds = hit->second;
  if (p) add_overrides(*p, ds);
  std::vector<double> scratch(2 * k), rows(4 * m);
  for (std::uint64_t p = 0; p < k; ++p) scratch[p] = yr.sum[p], scratch[k + p] = yr.norm[p];
  for (std::uint64_t i = 0; i < m; ++i) {
    rows[4 * i] = ds.sum[i], rows[4 * i + 1] = ds.norm[i];
    rows[4 * i + 2] = ar.sum[i], rows[4 * i + 3] = ar.norm[i];
  }
  write_bytes(*sa, c.scratch, scratch.data(), 16 * k);
  write_bytes(*ra, c.rows, rows.data(), 32 * m);
}

namespace {

bool differs(double d, double ref, double tol) {
  if (!std::isfinite(d) || !std::isfinite(ref)) return true;
  return std::fabs(d - ref) > tol * std::max(std::fabs(ref), 1e-30);
}

/// Whether `len` bytes of source `a` from `ao` equal those of `b` from `bo`, decided from the
/// sources' descriptions alone (false: not known equal).
bool same_window(const Seg& a, std::uint64_t ao, const Seg& b, std::uint64_t bo) {
  if (a.src->id() == b.src->id()) return ao == bo || a.src->kind() == SrcKind::constant;
  if (a.src->kind() != b.src->kind()) return false;
  if (a.src->kind() == SrcKind::constant) return constant_value(*a.src) == constant_value(*b.src);
  if (a.src->kind() == SrcKind::periodic) {
    const auto& pa = periodic_bytes(*a.src);
    return pa == periodic_bytes(*b.src) && ao % pa.size() == bo % pa.size();
  }
  return false;
}

/// Two pieces of equal length known equal without reading them: window by window, the same
/// source at the same place, or equal constants or periods in phase (two all_reduce results of
/// the burn-in's loop, made from the same inputs, are such periodic sources).
bool known_equal(const Segs& d, const Segs& r) {
  size_t i = 0, j = 0;
  std::uint64_t pos = 0, end = d.empty() ? 0 : d.back().off + d.back().len;
  while (pos < end && i < d.size() && j < r.size()) {
    const Seg &a = d[i], &b = r[j];
    if (!same_window(a, a.src_off + (pos - a.off), b, b.src_off + (pos - b.off))) return false;
    pos = std::min(a.off + a.len, b.off + b.len);
    if (pos == a.off + a.len) ++i;
    if (pos == b.off + b.len) ++j;
  }
  return pos == end;
}

/// Differing elements of two pieces of `count` elements of `t`.
long long count_differing(const Segs& d, const Segs& r, Elem t, std::uint64_t count, double tol) {
  if (known_equal(d, r)) return 0;
  const bool products = d.size() == 1 && r.size() == 1 && d[0].src->kind() == SrcKind::product &&
                        r[0].src->kind() == SrcKind::product && d[0].src_off == r[0].src_off;
  if (products) {
    const auto& pd = static_cast<const ProductSource&>(*d[0].src).desc();
    const auto& pr = static_cast<const ProductSource&>(*r[0].src).desc();
    if (pd.key() == pr.key()) {  // equal but at their overrides
      std::set<std::uint64_t> at;
      const std::uint64_t first = d[0].src_off / elem_size(t);
      for (const auto* p : {&pd, &pr})
        for (const auto& [e, v] : p->overrides)
          if (e >= first && e < first + count) at.insert(e);
      long long n = 0;
      for (std::uint64_t e : at) n += differs(product_element(pd, e), product_element(pr, e), tol);
      return n;
    }
  }
  long long n = 0;
  std::vector<float> a, b;
  constexpr std::uint64_t kChunk = 1 << 20;
  for (std::uint64_t done = 0; done < count; done += kChunk) {
    const std::uint64_t len = std::min(kChunk, count - done);
    read_values(d, t, done, len, a);
    read_values(r, t, done, len, b);
    for (std::uint64_t i = 0; i < len; ++i) n += differs(a[i], b[i], tol);
  }
  return n;
}

}  // namespace

void run_compare(State& st, Stream& s, const CompareArgs& c, Res& res, double& seconds) {
  DeviceState& ds = st.dev[static_cast<size_t>(s.device)];
  if (!ds.seen_compare) ds.seen_compare = true, ds.first_compare = std::chrono::steady_clock::now();
  const Elem t = fill_elem(c.out);
  const auto count = static_cast<std::uint64_t>(std::max(0LL, c.count));
  const std::uint64_t bytes = count * elem_size(t);
  res = Res::compute;
  seconds =
      kernel_seconds(node().gpus[static_cast<size_t>(s.device)], 2.0 * static_cast<double>(bytes));
  const char* kn = "compare_elements";
  Alloc* da = kernel_range(st, s, kn, "d", c.d, bytes);
  Alloc* ra = da ? kernel_range(st, s, kn, "ref", c.ref, bytes) : nullptr;
  Alloc* ca = ra ? kernel_range(st, s, kn, "counters", c.counters, 24) : nullptr;
  if (!ca) return;
  auto at = [](const Alloc* a, const void* p) {
    return reinterpret_cast<std::uint64_t>(p) - a->base;
  };
  const long long wrong =
      count_differing(slice(*da->content, at(da, c.d), bytes),
                      slice(*ra->content, at(ra, c.ref), bytes), t, count, c.rel_tolerance);
  if (uninit_bytes(*ca->content, at(ca, c.counters), 24)) return;  // garbage stays garbage
  unsigned long long v[3];
  read(*ca->content, at(ca, c.counters), 24, reinterpret_cast<unsigned char*>(v));
  v[0] += static_cast<unsigned long long>(wrong);
  if (wrong > 0) v[1] += 1;
  write_bytes(*ca, c.counters, v, 24);
}

}  // namespace cbsim
