// The watchdog and the abort cleanups (watchdog.hpp).
#include "core/watchdog.hpp"

#include <csignal>
#include <map>

#include "core/context.hpp"

namespace clusterbench {

namespace {

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal.store(sig); }
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

std::mutex g_cleanup_mu;
std::map<long, std::function<void()>> g_cleanups;
long g_next_cleanup = 0;

}  // namespace

Watchdog::Watchdog(std::function<bool(const WatchdogEvent&)> on_event)
    : on_event_(std::move(on_event)) {
  // Without a watchdog the signals keep their default action: a signal seen before this one was
  // an earlier watchdog's (the tests make several in one process), not this run's.
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) sigaction(sig, &sa, nullptr);
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (int sig : kSignals) signal(sig, SIG_DFL);
}

int Watchdog::signal_received() { return g_signal.load(); }

const char* Watchdog::signal_name(int sig) {
  return sig == SIGTERM  ? "SIGTERM"
         : sig == SIGINT ? "SIGINT"
         : sig == SIGHUP ? "SIGHUP"
                         : "a signal";
}

void Watchdog::arm(const std::string& what, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = true;
  what_ = what;
  seconds_ = seconds;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(seconds));
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = false;
}

void Watchdog::trip(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tripped_ = reason;
  }
  cv_.notify_all();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_) break;
    WatchdogEvent e;
    if (int sig = g_signal.load(); sig && sig != handled_signal_) {
      handled_signal_ = sig;
      e = {WatchdogEvent::Kind::signal,
           std::string("terminated by signal ") + signal_name(sig) +
               " (a rank died, or the job was cancelled)" + (armed_ ? " during " + what_ : ""),
           sig};
    } else if (!tripped_.empty()) {
      e = {WatchdogEvent::Kind::trip, tripped_, 0};
      tripped_.clear();
    } else if (armed_ && std::chrono::steady_clock::now() > deadline_) {
      e = {WatchdogEvent::Kind::deadline,
           "case deadline of " + std::to_string(static_cast<int>(seconds_)) + " s passed during " +
               what_ + " (hung collective or dead peer?)",
           0};
      armed_ = false;
    } else {
      continue;
    }
    lock.unlock();
    const bool end = on_event_(e);
    if (end) {
      run_abort_cleanups();
      Context::get().abort(3);
    }
    lock.lock();
  }
}

AbortCleanup::AbortCleanup(std::function<void()> undo) {
  std::lock_guard<std::mutex> lock(g_cleanup_mu);
  id_ = g_next_cleanup++;
  g_cleanups.emplace(id_, std::move(undo));
}

AbortCleanup::~AbortCleanup() {
  std::lock_guard<std::mutex> lock(g_cleanup_mu);
  g_cleanups.erase(id_);
}

void run_abort_cleanups() {
  std::map<long, std::function<void()>> pending;
  {
    std::lock_guard<std::mutex> lock(g_cleanup_mu);
    pending.swap(g_cleanups);
  }
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) it->second();
}

}  // namespace clusterbench
