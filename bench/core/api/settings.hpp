// Run settings: the suite and the --set values of one run (docs/design.md "CLI").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench {

/// The suites a run can take, in order: ci (small, minutes on 2 cores), quick (acceptance of one
/// node in 10 minutes), full. `burnin` is the suite of `clusterbench burnin` (its soak only).
inline const std::vector<std::string>& suite_names() {
  static const std::vector<std::string> names = {"ci", "quick", "full"};
  return names;
}

/// Suite and --set values. Keys are `id.key` for one benchmark or `area.key` for a whole area
/// (`collectives.path`); the benchmark's own key wins over the area's.
class Settings {
 public:
  Settings() = default;
  /// `suite`: ci | quick | full | burnin. `sets`: "KEY=VALUE" strings. Throws InputError on a
  /// malformed one or an unknown suite.
  Settings(std::string suite, const std::vector<std::string>& sets);
  const std::string& suite() const { return suite_; }
  /// Picks the suite's default: {ci, quick, full}; the burn-in suite takes full's.
  template <typename T>
  T by_suite(T ci, T quick, T full) const {
    return suite_ == "ci" ? ci : suite_ == "quick" ? quick : full;
  }
  bool has(const std::string& bench_id, const std::string& key) const;
  /// The --set key that gives `key` of `bench_id`: "ID.KEY", or "AREA.KEY" when only the area's
  /// is set ("ID.KEY" when neither is).
  std::string given_key(const std::string& bench_id, const std::string& key) const;
  std::string get(const std::string& bench_id, const std::string& key,
                  const std::string& def) const;
  double get_double(const std::string& bench_id, const std::string& key, double def) const;
  /// Size with binary suffixes K, M, G, T (as nccl-tests): "64M" = 64 * 2^20 bytes.
  long long get_size(const std::string& bench_id, const std::string& key, long long def) const;
  /// Comma-separated list.
  std::vector<std::string> get_list(const std::string& bench_id, const std::string& key,
                                    const std::vector<std::string>& def) const;
  /// Comma-separated list whose items must each be one of `allowed` (the default when unset).
  /// Throws InputError naming the key, the bad item and the allowed values.
  std::vector<std::string> get_choices(const std::string& bench_id, const std::string& key,
                                       const std::vector<std::string>& allowed) const;
  /// One value that must be one of `allowed`; the first is the default when unset. Throws
  /// InputError as get_choices does.
  std::string get_choice(const std::string& bench_id, const std::string& key,
                         const std::vector<std::string>& allowed) const;
  /// A copy with `key` ("id.key" or "area.key") set to `value`, as --set KEY=VALUE would.
  Settings with(const std::string& key, const std::string& value) const {
    Settings s = *this;
    s.values_[key] = value;
    return s;
  }
  /// Every KEY of --set, for validation against known benchmarks.
  const std::map<std::string, std::string>& values() const { return values_; }

  /// The run's spec table's storage tiers (SpecTier as JSON objects: name, path, shared,
  /// mount_point, title), set once the table is chosen (every rank, before the cases); empty
  /// before and in runs without one. io.tiers reads them where --set names no path.
  void set_spec_tiers(json tiers) { spec_tiers_ = std::move(tiers); }
  const json& spec_tiers() const { return spec_tiers_; }

  /// The timed samples a measurement loop of long operations takes (fixed_iterations,
  /// core/measure.hpp): 0 for the loop's own (kMinSamples); in one round of a case spread over
  /// N rounds (--rounds), fewer, since the rounds together give the repetitions.
  int loop_samples() const { return loop_samples_; }
  void set_loop_samples(int n) { loop_samples_ = n; }

 private:
  const std::string* find(const std::string& bench_id, const std::string& key) const;
  std::string suite_ = "ci";
  std::map<std::string, std::string> values_;
  json spec_tiers_ = json::array();
  int loop_samples_ = 0;
};

/// Whether `text` starts as a decimal number does (digits, a sign, a point): std::stod also
/// reads "0x10" (16), "inf" and "nan", which a setting would then take silently.
bool decimal_start(const std::string& text);

/// Parses a size with binary suffix ("8", "4K", "64M", "8G"). Throws InputError naming `what`.
long long parse_size(const std::string& text, const std::string& what);

/// Splits "a,b,c" into its non-empty items.
std::vector<std::string> split_list(const std::string& csv);

/// Time per case that Google Benchmark measures for a suite: ci 0.05 s, quick 0.5 s, full (and
/// burnin) 2 s.
double suite_min_time(const std::string& suite);

}  // namespace clusterbench
