// Localisation of slow links (docs/p2p.md "Localisation"): from the link records of a matrix,
// which part is at fault. A host all of whose links in a matrix are low is
// named instead of its links: as a node when it is low on every path measured (MPI's and each
// rail's), as a NIC (host and interface) when only one rail is low. A low link whose two hosts
// are otherwise normal is named as the link.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "records/records.hpp"
#include "reports/links.hpp"

namespace clusterbench::report {

/// Links a host needs in a matrix, all of them low, before the host (not its links) is named:
/// with two, one slow link and one measured in a loaded moment blame a healthy node.
inline constexpr size_t kMinLinksOfASuspect = 3;

/// The outlier tolerance (a fraction) of a benchmark's metric with its unit.
using ToleranceOf = std::function<double(const std::string& benchmark, const std::string& metric,
                                         const std::string& unit)>;

/// One located fault.
struct Located {
  std::string kind;                ///< node | nic | link
  std::string host;                ///< node, nic: the host; link: the first host
  std::vector<std::string> hosts;  ///< link: both hosts; node, nic: the host
  std::string nic;                 ///< nic: the interface (the rail's name)
  std::string benchmark, metric, unit;
  json params = json::object();    ///< the matrix's params (a node's: without "rail")
  std::vector<std::string> paths;  ///< paths it is low on: "mpi" or a rail's interface
  int low_links = 0, links = 0;    ///< node, nic: its low links and all its links, every path
  double worst_deviation = 0;      ///< of its links, against each matrix's median (fraction)
  std::string text;                ///< one sentence for report.md
};

/// Locates the faults behind slow links in the report's link matrices (`links`: link_matrices(),
/// one per benchmark, params and metric). In a matrix of at least 3 hosts, a link
/// is low when even its best repetition (the value at its record's minimum time) is worse than
/// the reference by more than `tolerance` (the fleet-outlier tolerance): out of the noise (a
/// link without time statistics of 2+ repetitions is never low; a negative value is skipped); the
/// reference is the median over hosts of each host's median link, robust to several slow hosts. A
/// host with at least kMinLinksOfASuspect (3) links in a matrix, all of them low, is a suspect.
/// Matrices that differ only in params.rail are the paths of one measurement (absent rail: "mpi"):
/// a suspect on every path it has links on is a node; on some paths only, a NIC per rail path (a
/// node for the mpi path). Low links without a suspect end are links. Sorted: nodes, NICs, links,
/// then by host.
std::vector<Located> locate_link_faults(const std::vector<LinkMatrix>& links,
                                        const ToleranceOf& tolerance);

/// JSON array of `located` (report.json fleet.localisation).
json located_json(const std::vector<Located>& located);

}  // namespace clusterbench::report
