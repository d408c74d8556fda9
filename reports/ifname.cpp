// NCCL interface-list matching (reports/ifname.hpp).
#include "reports/ifname.hpp"

namespace clusterbench::report {

IfnameList parse_ifname_list(const std::string& text) {
  IfnameList list;
  size_t pos = 0;
  if (pos < text.size() && text[pos] == '^') list.exclude = true, ++pos;
  if (pos < text.size() && text[pos] == '=') list.exact = true, ++pos;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string entry =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (auto colon = entry.find(':'); colon != std::string::npos) entry.resize(colon);
    if (!entry.empty()) list.entries.push_back(entry);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return list;
}

bool ifname_matches(const IfnameList& list, const std::string& name) {
  bool hit = list.entries.empty();  // NCCL: "no user list is defined" matches everything
  for (const auto& e : list.entries) {
    if (list.exact ? name == e : name.compare(0, e.size(), e) == 0) {
      hit = true;
      break;
    }
  }
  return hit != list.exclude;
}

}  // namespace clusterbench::report
