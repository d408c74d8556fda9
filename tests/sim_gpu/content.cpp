// Lazy device memory content (content.hpp).
#include "content.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

#include "numeric.hpp"

namespace cbsim {

namespace {

std::atomic<std::uint64_t> g_next_id{1};

class UninitSource : public Source {
 public:
  UninitSource() : Source(SrcKind::uninit) {}
  void read(std::uint64_t, std::uint64_t n, unsigned char* out) const override {
    std::memset(out, 0xFF, n);
  }
};

class ConstantSource : public Source {
 public:
  explicit ConstantSource(unsigned char v) : Source(SrcKind::constant), v_(v) {}
  void read(std::uint64_t, std::uint64_t n, unsigned char* out) const override {
    std::memset(out, v_, n);
  }
  unsigned char value() const { return v_; }

 private:
  unsigned char v_;
};

class BytesSource : public Source {
 public:
  explicit BytesSource(std::vector<unsigned char> b) : Source(SrcKind::bytes), b_(std::move(b)) {}
  void read(std::uint64_t pos, std::uint64_t n, unsigned char* out) const override {
    std::memcpy(out, b_.data() + pos, n);
  }
  const std::vector<unsigned char>& bytes() const { return b_; }

 private:
  std::vector<unsigned char> b_;
};

class PeriodicSource : public Source {
 public:
  explicit PeriodicSource(std::vector<unsigned char> p)
      : Source(SrcKind::periodic), p_(std::move(p)) {}
  void read(std::uint64_t pos, std::uint64_t n, unsigned char* out) const override {
    const std::uint64_t size = p_.size(), phase = pos % size;
    std::uint64_t first = std::min(n, size - phase);
    std::memcpy(out, p_.data() + phase, first);
    std::uint64_t done = first;
    if (done < n) {  // whole periods from here on: copy, then double what is written
      std::uint64_t chunk = std::min(n - done, size);
      std::memcpy(out + done, p_.data(), chunk);
      done += chunk;
      while (done < n) {
        const std::uint64_t span = done - first, c = std::min(n - done, span);
        std::memcpy(out + done, out + first, c);
        done += c;
      }
    }
  }
  const std::vector<unsigned char>& period() const { return p_; }

 private:
  std::vector<unsigned char> p_;
};

/// Element-wise procedural content: element e of `es` bytes from `make(e, out)`.
template <class Make>
void read_elements(std::uint64_t pos, std::uint64_t n, unsigned char* out, std::uint64_t es,
                   const Make& make) {
  unsigned char tmp[16];
  std::uint64_t done = 0;
  while (done < n) {
    const std::uint64_t at = pos + done, e = at / es, skip = at % es;
    const std::uint64_t take = std::min(es - skip, n - done);
    if (skip == 0 && take == es) {
      make(e, out + done);
    } else {
      make(e, tmp);
      std::memcpy(out + done, tmp + skip, take);
    }
    done += take;
  }
}

class GemmFillSource : public Source {
 public:
  GemmFillSource(int fill, std::uint64_t seed, int which)
      : Source(SrcKind::gemm_fill), fill_(fill), seed_(seed), which_(which) {}
  void read(std::uint64_t pos, std::uint64_t n, unsigned char* out) const override {
    read_elements(pos, n, out, elem_size(fill_elem(fill_)), [&](std::uint64_t e, unsigned char* o) {
      gemm_fill_element(fill_, seed_, which_, e, o);
    });
  }
  int fill_;
  std::uint64_t seed_;
  int which_;
};

class CopyFillSource : public Source {
 public:
  CopyFillSource() : Source(SrcKind::copy_fill) {}
  void read(std::uint64_t pos, std::uint64_t n, unsigned char* out) const override {
    read_elements(pos, n, out, 16, [](std::uint64_t e, unsigned char* o) {
      copy_pattern_word(static_cast<long long>(e), o);
    });
  }
};

/// Whether two neighbouring windows continue one another on one source.
bool continues(const Seg& a, const Seg& b) {
  if (a.src != b.src) return false;
  SrcKind k = a.src->kind();
  return k == SrcKind::uninit || k == SrcKind::constant || a.src_off + a.len == b.src_off;
}

void push_merged(Segs& out, Seg s) {
  if (s.len == 0) return;
  if (!out.empty() && continues(out.back(), s)) {
    out.back().len += s.len;
    return;
  }
  out.push_back(std::move(s));
}

/// Index of the segment holding byte `off`.
size_t find(const Segs& c, std::uint64_t off) {
  auto it = std::upper_bound(c.begin(), c.end(), off,
                             [](std::uint64_t o, const Seg& s) { return o < s.off; });
  return it == c.begin() ? 0 : static_cast<size_t>(it - c.begin()) - 1;
}

/// Length of the common prefix of a and b, at most `max`.
std::uint64_t common_prefix(const unsigned char* a, const unsigned char* b, std::uint64_t max) {
  constexpr std::uint64_t kChunk = 64 << 10;
  std::uint64_t done = 0;
  while (done < max) {
    const std::uint64_t c = std::min(kChunk, max - done);
    if (std::memcmp(a + done, b + done, c) != 0) {
      while (a[done] == b[done]) ++done;
      return done;
    }
    done += c;
  }
  return max;
}

constexpr std::uint64_t kMinRun = 4096;        // shorter repeats stay bytes
constexpr std::uint64_t kMaxPeriod = 1 << 20;  // periods searched up to 1 MiB

/// A repeating run at the start of q[0, r): its period and length (>= kMinRun).
bool find_run(const unsigned char* q, std::uint64_t r, std::uint64_t& period, std::uint64_t& len) {
  if (r < 2 * kMinRun) return false;
  const std::uint64_t same = common_prefix(q, q + 1, r - 1) + 1;
  if (same >= kMinRun) {
    period = 1, len = same;
    return true;
  }
  constexpr std::uint64_t kHead = 16;
  const unsigned char* from = q + 1;
  const unsigned char* end = q + std::min(r, kMaxPeriod + kHead);
  len = 0;
  for (int tries = 0; tries < 4 && from + kHead <= end; ++tries) {
    const void* hit = memmem(from, static_cast<size_t>(end - from), q, kHead);
    if (!hit) break;
    const std::uint64_t p = static_cast<std::uint64_t>(static_cast<const unsigned char*>(hit) - q);
    const std::uint64_t l = p + common_prefix(q, q + p, r - p);
    if (l >= std::max(kMinRun, 2 * p) && l > len) period = p, len = l;
    from = static_cast<const unsigned char*>(hit) + 1;
  }
  return len > 0;
}

}  // namespace

Source::Source(SrcKind k) : kind_(k), id_(g_next_id.fetch_add(1)) {}

SourcePtr uninit_source() {
  static const SourcePtr s = std::make_shared<UninitSource>();
  return s;
}

SourcePtr constant_source(unsigned char value) {
  static std::array<SourcePtr, 256> all;
  static std::once_flag once;
  std::call_once(once, [] {
    for (int v = 0; v < 256; ++v)
      all[static_cast<size_t>(v)] = std::make_shared<ConstantSource>(static_cast<unsigned char>(v));
  });
  return all[value];
}

SourcePtr bytes_source(std::vector<unsigned char> bytes) {
  return std::make_shared<BytesSource>(std::move(bytes));
}

SourcePtr periodic_source(std::vector<unsigned char> period) {
  if (period.size() == 1) return constant_source(period[0]);
  return std::make_shared<PeriodicSource>(std::move(period));
}

SourcePtr gemm_fill_source(int fill, std::uint64_t seed, int which) {
  return std::make_shared<GemmFillSource>(fill, seed, which);
}

SourcePtr copy_fill_source() { return std::make_shared<CopyFillSource>(); }

const std::vector<unsigned char>& periodic_bytes(const Source& s) {
  return static_cast<const PeriodicSource&>(s).period();
}

unsigned char constant_value(const Source& s) {
  return static_cast<const ConstantSource&>(s).value();
}

void gemm_fill_params(const Source& s, int& fill, std::uint64_t& seed, int& which) {
  const auto& g = static_cast<const GemmFillSource&>(s);
  fill = g.fill_, seed = g.seed_, which = g.which_;
}

const std::vector<unsigned char>& bytes_of(const Source& s) {
  return static_cast<const BytesSource&>(s).bytes();
}

Content make_content(std::uint64_t size) {
  return std::make_shared<const Segs>(single(size, uninit_source()));
}

Segs single(std::uint64_t len, SourcePtr src, std::uint64_t src_off) {
  Segs out;
  if (len) out.push_back(Seg{0, len, std::move(src), src_off});
  return out;
}

Segs slice(const Segs& c, std::uint64_t off, std::uint64_t len) {
  Segs out;
  if (len == 0 || c.empty()) return out;
  for (size_t i = find(c, off); i < c.size() && c[i].off < off + len; ++i) {
    const Seg& s = c[i];
    const std::uint64_t a = std::max(s.off, off), b = std::min(s.off + s.len, off + len);
    if (b > a) push_merged(out, Seg{a - off, b - a, s.src, s.src_off + (a - s.off)});
  }
  return out;
}

Content replace(const Content& c, std::uint64_t off, const Segs& piece) {
  std::uint64_t len = 0;
  for (const Seg& s : piece) len += s.len;
  const std::uint64_t total = c->empty() ? 0 : c->back().off + c->back().len;
  Segs out;
  out.reserve(c->size() + piece.size() + 2);
  for (const Seg& s : slice(*c, 0, off)) push_merged(out, s);
  for (const Seg& s : piece) push_merged(out, Seg{s.off + off, s.len, s.src, s.src_off});
  for (const Seg& s : slice(*c, off + len, total - std::min(total, off + len)))
    push_merged(out, Seg{s.off + off + len, s.len, s.src, s.src_off});
  return std::make_shared<const Segs>(std::move(out));
}

void read(const Segs& c, std::uint64_t off, std::uint64_t len, unsigned char* out) {
  for (const Seg& s : slice(c, off, len)) s.src->read(s.src_off, s.len, out + s.off);
}

std::uint64_t uninit_bytes(const Segs& c, std::uint64_t off, std::uint64_t len) {
  std::uint64_t n = 0;
  for (const Seg& s : slice(c, off, len))
    if (s.src->kind() == SrcKind::uninit) n += s.len;
  return n;
}

std::string fingerprint(const Segs& piece) {
  std::string f;
  for (const Seg& s : piece) {
    std::uint64_t at = s.src_off;
    if (s.src->kind() == SrcKind::uninit || s.src->kind() == SrcKind::constant) at = 0;
    if (s.src->kind() == SrcKind::periodic) at %= periodic_bytes(*s.src).size();
    f += std::to_string(s.src->id()) + ":" + std::to_string(at) + ":" + std::to_string(s.len) + ";";
  }
  return f;
}

Segs from_host(const unsigned char* p, std::uint64_t n) {
  Segs out;
  std::uint64_t pos = 0, pending = 0, step = kMinRun;
  auto flush = [&](std::uint64_t end) {
    if (end > pending)
      push_merged(out, Seg{pending, end - pending,
                           bytes_source(std::vector<unsigned char>(p + pending, p + end)), 0});
  };
  while (pos < n) {
    std::uint64_t period = 0, len = 0;
    if (find_run(p + pos, n - pos, period, len)) {
      flush(pos);
      push_merged(out, Seg{pos, len, periodic_source({p + pos, p + pos + period}), 0});
      pos += len, pending = pos, step = kMinRun;
    } else {
      pos = std::min(n, pos + step);
      step = std::min<std::uint64_t>(step * 2, 16 << 20);
    }
  }
  flush(n);
  return out;
}

}  // namespace cbsim
