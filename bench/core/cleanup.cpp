// Abort cleanups: see cleanup.hpp.
#include "core/cleanup.hpp"

#include <map>
#include <mutex>

namespace clusterbench {

namespace {
std::mutex g_mu;
std::map<long, std::function<void()>> g_cleanups;
long g_next = 0;
}  // namespace

AbortCleanup::AbortCleanup(std::function<void()> undo) {
  std::lock_guard<std::mutex> lock(g_mu);
  id_ = g_next++;
  g_cleanups.emplace(id_, std::move(undo));
}

AbortCleanup::~AbortCleanup() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_cleanups.erase(id_);
}

void run_abort_cleanups() {
  std::map<long, std::function<void()>> pending;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    pending.swap(g_cleanups);
  }
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) it->second();
}

}  // namespace clusterbench
