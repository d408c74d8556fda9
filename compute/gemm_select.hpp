// compute.gemm's choice of a cuBLASLt algorithm, shared by the GPU plugin (compute/gemm_gpu.cpp)
// and the tests (docs/gemm.md "GPU path"): a warm-up by time, then every candidate timed once per
// round, round-robin, over several rounds, and each judged by the median of its rounds.
// Why: timed once each right after the fill kernels, the first candidate ran on an idle-clocked
// GPU (345 MHz idle against 1980 MHz loaded on an H200) and lost to the clocks,
// not to its speed; interleaving spreads any drift that is left over every candidate alike.
// The timed batches then launch CUDA graphs of gemm_graph_products products.
// Pure functions over timing callbacks: the plugin times with CUDA events, the tests with a model.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace clusterbench::compute {

constexpr double kGemmWarmupSeconds = 0.2;   ///< products run before any candidate is timed
constexpr int kGemmSelectionRounds = 3;      ///< rounds of the interleaved timing (>= 2)
constexpr double kGemmTimingSeconds = 0.01;  ///< about this long per candidate per round

/// What the warm-up ran.
struct GemmWarmup {
  double seconds = 0;              ///< total measured time of its batches
  long long products = 0;          ///< products run
  double seconds_per_product = 0;  ///< of the last (largest) batch
};

/// Runs batches through `batch(reps)` (returns the batch's measured seconds), 1, 2, 4, ...
/// products, each at most what the time left needs, until their measured total reaches
/// `target_s` or `max_batches` batches ran. Throws what `batch` throws.
inline GemmWarmup gemm_warm_up(double target_s, const std::function<double(long long)>& batch,
                               int max_batches = 40) {
  GemmWarmup w;
  long long reps = 1;
  for (int b = 0; b < max_batches && w.seconds < target_s; ++b) {
    const double t = batch(reps);
    w.seconds += t > 0 ? t : 0;
    w.products += reps;
    w.seconds_per_product = t / static_cast<double>(reps);
    const double left = target_s - w.seconds;
    long long need = w.seconds_per_product > 0
                         ? static_cast<long long>(std::ceil(left / w.seconds_per_product))
                         : 2 * reps;
    reps = std::max(1LL, std::min(2 * reps, need));
  }
  return w;
}

/// Products per timing of one candidate: about kGemmTimingSeconds at the warm-up's rate, 1..200.
inline long long gemm_timing_reps(double seconds_per_product) {
  if (!(seconds_per_product > 0)) return 1;
  return static_cast<long long>(
      std::clamp(std::ceil(kGemmTimingSeconds / seconds_per_product), 1.0, 200.0));
}

constexpr double kGemmGraphSeconds = 0.002;  ///< GPU work per CUDA graph of the timed batches

/// Products per CUDA graph (compute/gemm_gpu.cpp): about kGemmGraphSeconds of GPU work at
/// `seconds_per_product`, 1..256, so that a small shape pays one host launch per many products
/// and a large one loses nothing.
inline long long gemm_graph_products(double seconds_per_product) {
  if (!(seconds_per_product > 0)) return 1;
  return static_cast<long long>(
      std::clamp(std::ceil(kGemmGraphSeconds / seconds_per_product), 1.0, 256.0));
}

/// One candidate's timings, seconds per product, one per round it ran in.
struct GemmCandidateTimes {
  std::vector<double> seconds;
  bool failed = false;  ///< it could not run (it is out from then on)
  /// The median of `seconds` (the mean of the middle two for an even count); NAN when empty.
  double median() const {
    if (seconds.empty()) return NAN;
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    const size_t n = s.size();
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }
};

/// The outcome of gemm_select_interleaved.
struct GemmSelection {
  int best = -1;            ///< the chosen candidate; -1 when none ran
  double best_seconds = 0;  ///< its median seconds per product
  int rounds = 0;           ///< rounds run
  std::vector<GemmCandidateTimes> candidates;
  /// Candidates that ran in every round.
  int tried() const {
    return static_cast<int>(std::count_if(candidates.begin(), candidates.end(),
                                          [](const GemmCandidateTimes& c) { return !c.failed; }));
  }
};

/// Times `count` candidates round-robin: each of `rounds` (at least 2) rounds calls
/// `seconds_per_product(i)` once for every candidate still in, round r starting at candidate
/// r % count so that none always follows the same one. A result that is not finite and positive
/// means the candidate could not run: it is out. The best has the smallest median; a tie keeps
/// the lower index (the heuristic's preference).
inline GemmSelection gemm_select_interleaved(
    int count, int rounds, const std::function<double(int)>& seconds_per_product) {
  GemmSelection sel;
  sel.candidates.resize(static_cast<size_t>(std::max(count, 0)));
  sel.rounds = std::max(rounds, 2);
  for (int r = 0; r < sel.rounds; ++r)
    for (int step = 0; step < count; ++step) {
      const int i = (r + step) % count;
      GemmCandidateTimes& c = sel.candidates[static_cast<size_t>(i)];
      if (c.failed) continue;
      const double t = seconds_per_product(i);
      if (std::isfinite(t) && t > 0)
        c.seconds.push_back(t);
      else
        c.failed = true;
    }
  for (int i = 0; i < count; ++i) {
    const GemmCandidateTimes& c = sel.candidates[static_cast<size_t>(i)];
    if (c.failed) continue;
    const double m = c.median();
    if (sel.best < 0 || m < sel.best_seconds) sel.best = i, sel.best_seconds = m;
  }
  return sel;
}

}  // namespace clusterbench::compute
