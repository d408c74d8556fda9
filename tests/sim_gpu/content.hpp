// Lazy device memory content: an allocation's bytes are a list of immutable segments, each a
// window on a content source (never-written memory, a memset value, materialized bytes, a
// periodic upload, a fill kernel's procedural values, a cuBLASLt product evaluated on demand).
// Writes make a new list (copy-on-write, O(segments)); device-to-device copies copy segment
// references; only a read to the host evaluates bytes, and only the range read. So 8 simulated
// GPUs with 1 GiB buffers and 8192^3 GEMMs fit in a few hundred MiB of host memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cbsim {

/// What a source is, for the fast paths (reductions, checksums, serialization).
enum class SrcKind : std::uint8_t {
  uninit,
  constant,
  bytes,
  periodic,
  gemm_fill,
  copy_fill,
  product
};

/// An immutable, conceptually infinite byte sequence (a finite one for bytes).
class Source {
 public:
  explicit Source(SrcKind k);
  virtual ~Source() = default;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  SrcKind kind() const { return kind_; }
  /// Unique per source object (fingerprints of content, caches).
  std::uint64_t id() const { return id_; }
  /// Bytes [pos, pos + n) into `out`.
  virtual void read(std::uint64_t pos, std::uint64_t n, unsigned char* out) const = 0;

 private:
  SrcKind kind_;
  std::uint64_t id_;
};

using SourcePtr = std::shared_ptr<const Source>;

/// Memory never written: reads give 0xFF bytes (NaN in every float type), so that a result read
/// from it fails any check.
SourcePtr uninit_source();
/// Every byte `value` (cudaMemset).
SourcePtr constant_source(unsigned char value);
/// Materialized bytes.
SourcePtr bytes_source(std::vector<unsigned char> bytes);
/// `period` repeated: byte i is period[i % size].
SourcePtr periodic_source(std::vector<unsigned char> period);
/// fill_gemm_input(seed, which) in fill type `fill` (compute/gemm_gpu.hpp FillType): byte 0 is
/// element 0's first byte.
SourcePtr gemm_fill_source(int fill, std::uint64_t seed, int which);
/// fill_copy_pattern: byte 0 is word 0's first byte.
SourcePtr copy_fill_source();

/// The parameters of a periodic, constant, gemm_fill source (nullptr-safe accessors for the
/// serializer): period bytes; constant value; fill (type, seed, which).
const std::vector<unsigned char>& periodic_bytes(const Source& s);
unsigned char constant_value(const Source& s);
void gemm_fill_params(const Source& s, int& fill, std::uint64_t& seed, int& which);
/// The bytes of a bytes source.
const std::vector<unsigned char>& bytes_of(const Source& s);

/// One window: bytes [off, off + len) of the allocation are bytes [src_off, src_off + len) of
/// `src`.
struct Seg {
  std::uint64_t off = 0, len = 0;
  SourcePtr src;
  std::uint64_t src_off = 0;
};
/// Segments in order, covering [0, size) without gaps.
using Segs = std::vector<Seg>;
/// An allocation's content: immutable; a write makes a new one.
using Content = std::shared_ptr<const Segs>;

/// `size` bytes of never-written memory.
Content make_content(std::uint64_t size);
/// The segments of [off, off + len), rebased to start at 0.
Segs slice(const Segs& c, std::uint64_t off, std::uint64_t len);
/// `c` with [off, off + length of `piece`) replaced by `piece` (rebased at 0); adjacent windows
/// on one source are merged.
Content replace(const Content& c, std::uint64_t off, const Segs& piece);
/// A piece of `len` bytes of one source.
Segs single(std::uint64_t len, SourcePtr src, std::uint64_t src_off = 0);
/// Bytes [off, off + len) of `c` into `out`.
void read(const Segs& c, std::uint64_t off, std::uint64_t len, unsigned char* out);
/// Bytes of never-written memory among [off, off + len).
std::uint64_t uninit_bytes(const Segs& c, std::uint64_t off, std::uint64_t len);
/// Identity of a piece of content: equal fingerprints mean equal bytes.
std::string fingerprint(const Segs& piece);

/// The content of `n` host bytes: runs that repeat with a period up to 1 MiB become periodic
/// (or constant) sources, the rest materialized; one pass over the data.
Segs from_host(const unsigned char* p, std::uint64_t n);

}  // namespace cbsim
