// Health rows (select.health): each node's health-counter deltas (reports/health.hpp), judged per
// value (a GPU, an NVLink, a port) or reduced per node or over the cluster.
#include "reports/rows/row_base.hpp"

namespace clusterbench::report::rows {

namespace {

/// Judges a health row (select.health) over every node's counter deltas.
class HealthRows : public RowEvaluator {
 public:
  using RowEvaluator::RowEvaluator;

 protected:
  /// Every node's deltas of the row's metric; `each` makes every value an item (a GPU, an NVLink,
  /// a port, a PCIe device), other aggregates reduce them per node (or over the cluster).
  void collect(RowResult& row) override {
    for (const NodeHealth& node : health_) {
      std::vector<HealthValue> values;
      try {
        values = health_values(node.values, req_.select.health);
      } catch (const InputError& e) {
        throw InputError(where_ + ": field 'select.health': " + e.what());
      }
      if (!node.evidence.empty()) add_unique(row.evidence, node.evidence);
      for (const auto& v : values) {
        const std::string key = req_.aggregate == "each"  ? v.item
                                : req_.scope == "cluster" ? "cluster"
                                                          : node.host;
        Item& item = items_.get(key, key);
        if (v.absent)
          item.absent.push_back(v.item + ": " + v.detail);
        else if (v.value.is_null())
          item.unknown.push_back(v.item + ": " + v.detail);
        else
          item.values.push_back(v.value);
        if (!v.value.is_null() && !v.detail.empty())
          item.notes.push_back(req_.aggregate == "each" ? v.detail : v.item + ": " + v.detail);
      }
    }
  }
  ItemResult judge_item(const Item& item) override { return judge_health_item(item); }

 private:
  ItemResult judge_health_item(const Item& item) {
    ItemResult r;
    r.item = item.name;
    if (!item.unknown.empty()) {
      r.outcome = kMissing;
      r.message = item.unknown.front();
      if (item.unknown.size() > 1)
        r.message += " (and " + std::to_string(item.unknown.size() - 1) + " more unknown)";
      return r;
    }
    if (item.values.empty() && !item.absent.empty()) {
      r.outcome = kWaived;
      r.message = item.absent.front();
      return r;
    }
    if (req_.aggregate == "each") {
      r = judged(r, item.values, "");
    } else {
      std::vector<double> xs;
      for (const auto& v : item.values) xs.push_back(v.get<double>());
      r = judged(r, {aggregate_numbers(xs, req_.aggregate)}, req_.aggregate + " ");
    }
    // The evidence: each value's start -> end (only the rising ones of an aggregate).
    std::vector<std::string> notes;
    for (size_t i = 0; i < item.notes.size(); ++i)
      if (req_.aggregate == "each" || item.notes.size() == 1 ||
          (i < item.values.size() && item.values[i].get<double>() > 0))
        notes.push_back(item.notes[i]);
    if (!notes.empty()) r.message += ": " + join(notes, "; ");
    return r;
  }
};

}  // namespace

std::unique_ptr<RowEvaluator> health_row(const RowContext& ctx, const Requirement& req) {
  return std::make_unique<HealthRows>(ctx, req);
}

}  // namespace clusterbench::report::rows
