// Model FLOPs utilisation (docs/training.md "MFU"): a training step's model FLOP rate per GPU
// against the GPU's dense tensor peak for its dtype, from the spec table's `dense_peaks`.
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"
#include "records/spec.hpp"

namespace clusterbench::report {

/// The MFU of one training-step record (a node, or the cluster).
struct Mfu {
  std::string item;          ///< the record's scope item ("node01", "cluster")
  std::string dtype;         ///< the step's GEMM dtype (params.dtype)
  double model_tflops = 0;   ///< the record's model_tflops (per GPU, the median over steps)
  double peak_tflops = 0;    ///< the table's dense peak for `dtype`
  double percent = 0;        ///< 100 x model_tflops / peak_tflops
  std::vector<double> reps;  ///< the same for each step (its model_tflops repetitions)
  std::string case_key;
};

/// Every training step's MFU, and why none could be given.
struct MfuView {
  std::vector<Mfu> items;
  /// Training-step records that have no MFU, each with why ("no dense peak for fp32 in table
  /// cpu-node": a CPU's GEMM rate has no tensor peak to divide by). Empty when all have one.
  std::vector<std::string> unknown;
  std::string source;  ///< the table's dense_peaks_source
};

/// The MFU of each ok record with a model_tflops metric (the training step's; the last record of
/// each case, as RunDir keeps them) whose params.dtype has a dense peak in `spec`. Records
/// without one are listed in `unknown` with the reason: unknown is not zero.
MfuView model_flops_utilisation(const RunDir& run, const Spec& spec);

/// report.md's "Model FLOPs utilisation" section; "" when no training step ran.
std::string render_mfu_markdown(const MfuView& view);

/// report.json's `mfu`: {items: [{item, dtype, model_tflops, peak_tflops, percent, reps,
/// case_key}], unknown, source}.
json mfu_json(const MfuView& view);

}  // namespace clusterbench::report
