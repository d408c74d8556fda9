// NCCL's interface-list rules (NCCL_SOCKET_IFNAME), as NCCL applies them when it picks its
// bootstrap and socket interfaces: a judgement over recorded interface names.
#pragma once

#include <string>
#include <vector>

namespace clusterbench::report {

/// A parsed NCCL interface list.
struct IfnameList {
  bool exclude = false;              ///< leading '^': the names listed are excluded
  bool exact = false;                ///< leading '=' (after any '^'): whole names, not prefixes
  std::vector<std::string> entries;  ///< names or prefixes, any ":port" suffix removed
};

/// Parses NCCL_SOCKET_IFNAME text as NCCL does (src/misc/utils.cc parseStringList and
/// src/misc/socket.cc findInterfaces): optional '^', then optional '=', then a comma list of
/// prefixes, each with an optional ":port". Empty entries are dropped.
IfnameList parse_ifname_list(const std::string& text);

/// Whether NCCL would consider interface `name` under `list`: prefix (or exact) match against
/// any entry, inverted by '^'. An empty list matches every name (NCCL's exception), so "^" alone
/// matches none.
bool ifname_matches(const IfnameList& list, const std::string& name);

/// NCCL's behaviour when NCCL_SOCKET_IFNAME is unset: every interface except docker* and lo*.
inline constexpr const char* kNcclDefaultIfname = "^docker,lo";

}  // namespace clusterbench::report
