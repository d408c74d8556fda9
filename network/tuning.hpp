// network.tuning: the measured effect of the seed's host tuning as A/B pairs (docs/tuning.md).
#pragma once

#include <string>
#include <vector>

namespace clusterbench::network {

/// A/B summary over alternating repeats: per repeat ratio_i = t_A,i / t_B,i (seconds per
/// operation, so > 1 means B is faster); `ratio` is their median and `spread` is
/// (p75 - p25) / median (nearest rank), as the time statistics' spread.
struct AbRatio {
  double ratio = 0, spread = 0;
  std::vector<double> ratios;
};

/// Throws std::invalid_argument when the vectors differ in length, are empty, or hold t <= 0.
AbRatio ab_ratio(const std::vector<double>& seconds_a, const std::vector<double>& seconds_b);

/// Whitespace-normalised sysctl text ("4096\t87380\t2147483647\n" -> "4096 87380 2147483647").
std::string normalise_sysctl(const std::string& text);

}  // namespace clusterbench::network
