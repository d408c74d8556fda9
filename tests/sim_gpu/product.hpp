// A cuBLASLt result as device content: D = alpha op(A) op(B) + beta C, kept as snapshots of its
// inputs and evaluated element by element only where D is read, as the GPU computes it: the
// inputs as stored, FP32 accumulation (in order of K), the sum scaled and rounded once to
// D's type. A sparse map of overridden elements carries injected faults.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "content.hpp"
#include "numeric.hpp"

namespace cbsim {

/// One operand as stored: column-major `rows` x `cols` with leading dimension `ld` (elements),
/// batch b at element b * stride, `trans` whether the product uses its transpose.
struct Operand {
  Segs data;  ///< snapshot of the operand's bytes, from its pointer on
  Elem type = Elem::f32;
  std::uint64_t rows = 0, cols = 0, ld = 0;
  std::int64_t stride = 0;
  bool trans = false;
};

/// Everything that determines D.
struct ProductDesc {
  Operand a, b, c;  ///< c is read only when beta != 0
  Elem out = Elem::f32;
  Elem input_round = Elem::f32;  ///< inputs rounded to this first (FAST_TF32/16F/16BF compute)
  std::uint64_t m = 0, n = 0, k = 0, ldd = 0;
  std::int64_t d_stride = 0;
  int batch = 1;
  double alpha = 1, beta = 0;
  std::map<std::uint64_t, double> overrides;  ///< D storage index -> value (fault injection)
  /// Identity of everything but the overrides (two products of one key hold equal elements
  /// except at their overrides).
  std::string key() const;
};

/// Element (i, j) of batch `b` of op(x) as a float, read from x's snapshot.
float operand_element(const Operand& x, std::uint64_t i, std::uint64_t j, int b);
/// op(A)'s row i (k values) and op(B)'s column j (k values) of batch `b`.
void row_of_a(const ProductDesc& d, std::uint64_t i, int b, std::vector<float>& out);
void column_of_b(const ProductDesc& d, std::uint64_t j, int b, std::vector<float>& out);

/// D's element (i, j) of batch b before any override and before rounding to D's type, given
/// op(A)'s row i and op(B)'s column j.
float accumulate(const ProductDesc& d, const std::vector<float>& arow,
                 const std::vector<float>& bcol, std::uint64_t i, std::uint64_t j, int b);
/// D's element at storage index `e` as D holds it (override, else the rounded sum).
double product_element(const ProductDesc& d, std::uint64_t e);
/// Whether storage index `e` is an element of the product (not ld padding or a batch gap).
bool in_product(const ProductDesc& d, std::uint64_t e);

/// The source of D's bytes: byte 0 is D's element 0.
class ProductSource : public Source {
 public:
  explicit ProductSource(std::shared_ptr<const ProductDesc> d);
  void read(std::uint64_t pos, std::uint64_t n, unsigned char* out) const override;
  const ProductDesc& desc() const { return *d_; }

 private:
  std::shared_ptr<const ProductDesc> d_;
};

/// The segments a product writes over D (from D's pointer on): one window when D is dense,
/// else one per column of each batch (ld padding keeps what was there).
Segs product_segments(const std::shared_ptr<const ProductDesc>& d, SourcePtr src);

/// Values of `count` elements of type `t` starting at element `first` of `c` (any source).
void read_values(const Segs& c, Elem t, std::uint64_t first, std::uint64_t count,
                 std::vector<float>& out);

}  // namespace cbsim
