// Model FLOPs utilisation (mfu.hpp).
#include "reports/mfu.hpp"

#include <cmath>
#include <sstream>

#include "reports/rows.hpp"

namespace clusterbench::report {

MfuView model_flops_utilisation(const RunDir& run, const Spec& spec) {
  MfuView view;
  view.source = spec.dense_peaks_source;
  for (const ResultRecord& r : run.records.records) {
    if (r.status != Status::ok) continue;
    const Metric* m = nullptr;  // a training step's model FLOP rate, whichever benchmark has one
    for (const auto& x : r.metrics)
      if (x.name == "model_tflops") m = &x;
    if (!m) continue;
    const std::string item = scope_item(r.scope);
    if (m->unit != "TFLOP/s" || !std::isfinite(m->value) || m->value < 0) {
      view.unknown.push_back(item + ": model_tflops is " + format_number(m->value) + " " + m->unit +
                             ", not a rate in TFLOP/s");
      continue;
    }
    const auto d = r.params.find("dtype");
    const std::string dtype = d != r.params.end() && d->is_string() ? d->get<std::string>() : "";
    auto peak = spec.dense_peaks.find(dtype);
    if (peak == spec.dense_peaks.end()) {
      view.unknown.push_back(item + ": table " + spec.name + " gives no dense peak for " +
                             (dtype.empty() ? "the record's dtype" : dtype));
      continue;
    }
    Mfu x;
    x.item = item, x.dtype = dtype,
    x.case_key = r.case_key.empty() ? make_case_key(r.benchmark, r.params, r.scope) : r.case_key;
    x.model_tflops = m->value, x.peak_tflops = peak->second;
    x.percent = 100 * (m->value / peak->second);
    for (double v : m->reps) x.reps.push_back(100 * (v / peak->second));
    if (x.percent > 100) {  // no GPU runs past its dense peak: the peak or the count is wrong
      view.unknown.push_back(item + ": model_tflops " + format_number(m->value) +
                             " TFLOP/s is above the table's dense " + dtype + " peak " +
                             format_number(peak->second) +
                             " TFLOP/s: the peak or the FLOP count "
                             "is wrong");
      continue;
    }
    view.items.push_back(std::move(x));
  }
  return view;
}

std::string render_mfu_markdown(const MfuView& view) {
  if (view.items.empty() && view.unknown.empty()) return "";
  std::ostringstream md;
  md << "## Model FLOPs utilisation\n\nThe training step's model FLOP rate per GPU (the layers' "
        "GEMM FLOP of a step over the measured step) against the GPU's dense tensor peak for its "
        "dtype, from the table.\n\n";
  if (!view.items.empty()) {
    md << "| item | dtype | model TFLOP/s per GPU | dense peak TFLOP/s | MFU |\n"
          "|---|---|---|---|---|\n";
    for (const auto& x : view.items)
      md << "| " << x.item << " | " << x.dtype << " | " << format_number(x.model_tflops) << " | "
         << format_number(x.peak_tflops) << " | " << format_number(x.percent) << "% |\n";
    if (!view.source.empty()) md << "\nPeaks: " << view.source << "\n";
  }
  for (const auto& u : view.unknown) md << "\n- MFU unknown: " << u;
  if (!view.unknown.empty()) md << "\n";
  return md.str();
}

json mfu_json(const MfuView& view) {
  json items = json::array();
  for (const auto& x : view.items)
    items.push_back({{"item", x.item},
                     {"dtype", x.dtype},
                     {"model_tflops", x.model_tflops},
                     {"peak_tflops", x.peak_tflops},
                     {"percent", x.percent},
                     {"reps", x.reps},
                     {"case_key", x.case_key}});
  return {{"items", items},
          {"unknown", view.unknown},
          {"source", view.source.empty() ? json(nullptr) : json(view.source)}};
}

}  // namespace clusterbench::report
