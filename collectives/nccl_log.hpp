// NCCL's own logging, read back: the untimed probe of the NCCL backend (docs/collectives.md
// "What NCCL chose") runs NCCL with NCCL_DEBUG=INFO into a file and parses its lines here, to
// record the NCCL version and the transports, network and algorithms NCCL chose. Pure text
// parsing: no NCCL, unit-tested on lines in NCCL's own format (tests/unit/test_collectives.cpp).
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::collectives {

/// One collective's choice, from NCCL_DEBUG_SUBSYS=TUNING on rank 0 (NCCL >= 2.19 enqueue.cc):
/// "AllReduce: 1073741824 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}".
struct NcclChoice {
  std::string func;  ///< "AllReduce", "AllGather", ...
  long long bytes = 0;
  std::string algo;   ///< "RING", "TREE", "NVLS", "NVLS_TREE", "COLLNET_DIRECT", "PAT", ...
  std::string proto;  ///< "LL", "LL128", "SIMPLE"
  int channels = 0;   ///< Hi - Lo + 1; 0 when the line gives none
};

/// What one rank's NCCL log says. Unknown or absent facts stay empty (nvls: -1).
struct NcclLogFacts {
  std::string version;                  ///< "2.24.3+cuda12.2" ("NCCL version ..." line)
  std::string network;                  ///< "IB", "Socket", "IBext_v8" ("Using network X")
  std::vector<std::string> nics;        ///< "mlx5_0:1/IB", "mlx5_4:1/RoCE" ("NET/IB : Using ...")
  std::vector<std::string> transports;  ///< distinct, index-free: "P2P/IPC/read", "NET/IB/GDRDMA"
  int nvls = -1;                        ///< NVLS multicast available on this GPU: 1, 0, -1 unknown
  std::vector<std::string> connected;   ///< "all rings", "all trees", "NVLS", ... as logged
  json env = json::object();            ///< "NCCL_IB_GID_INDEX": "3" ("set by environment to")
  std::vector<NcclChoice> choices;      ///< per collective call logged (TUNING)
};

/// Parses NCCL log lines ("host:pid:tid [dev] NCCL INFO ..." and the bare "NCCL version" line);
/// lines it does not know are skipped.
NcclLogFacts parse_nccl_log(std::istream& in);

/// The facts as JSON for a record's extra: {"version", "network", "nics", "transports", "nvls",
/// "connected", "env"} (empty fields left out).
json to_json(const NcclLogFacts& f);

/// The last choice logged for `func` (NCCL's name, "AllReduce"), or null.
const NcclChoice* last_choice(const NcclLogFacts& f, const std::string& func);

/// NCCL's function name for a collective of collective.hpp ("all_reduce" -> "AllReduce"); ""
/// for sendrecv and alltoall, which NCCL runs as point-to-point sends with no algorithm.
std::string nccl_func_name(const std::string& collective);

/// Whether busbw measures the wire under this NCCL algorithm: ring (and broadcast/reduce's
/// pipeline, which NCCL names RING) moves every byte over the links nccl-tests' factor assumes;
/// TREE, NVLS, NVLS_TREE (NVLink SHARP), COLLNET_* (network SHARP) and PAT reduce inside the
/// switch or move fewer bytes, so busbw is not wire bandwidth (docs/design.md "Collectives").
bool algorithm_is_wire(const std::string& algo);

}  // namespace clusterbench::collectives
