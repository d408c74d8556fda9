// The watchdog and the abort cleanups (watchdog.hpp).
#include "core/watchdog.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include "core/api/context.hpp"

namespace clusterbench {

namespace {

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal.store(sig); }
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

std::mutex g_cleanup_mu;
std::map<long, std::function<void()>> g_cleanups;
long g_next_cleanup = 0;

/// "3", "0.5": seconds as a person would write them.
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

/// The first of `names` set in the environment, with its name; empty when none is.
std::pair<std::string, std::string> first_env(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v && *v) return {n, v};
  return {};
}

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

void Watchdog::arm(const std::string& what, double seconds, const std::string& kind,
                   const std::string& hint) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = true;
  what_ = what;
  kind_ = kind;
  hint_ = hint;
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
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mu_);
  auto last = Clock::now();
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_) break;
    const auto now = Clock::now();
    const double gap = std::chrono::duration<double>(now - last).count();
    last = now;
    if (gap > 1.5) {  // ticks every 0.1 s: the process was stopped (a gap stays news for 10 s)
      stopped_s_ = gap;
      stopped_until_ = now;
    }
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
           kind_ + " deadline of " + seconds_text(seconds_) + " s passed during " + what_ +
               (hint_.empty() ? "" : " " + hint_),
           0};
      armed_ = false;
    } else {
      continue;
    }
    if (now - stopped_until_ < std::chrono::seconds(10)) e.stopped_s = stopped_s_;
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

ProcessDeadline::ProcessDeadline(std::string phase, double seconds, std::string detail) {
  thread_ = std::thread([this, phase = std::move(phase), seconds, detail = std::move(detail)] {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; }))
      return;
    std::string msg = "clusterbench: " + phase + ": did not complete within " +
                      seconds_text(seconds) + " s (" + detail + ")\n";
    if (::write(2, msg.data(), msg.size()) < 0) {
    }
    run_abort_cleanups();
    std::_Exit(3);
  });
}

ProcessDeadline::~ProcessDeadline() {
  done();
  if (thread_.joinable()) thread_.join();
}

void ProcessDeadline::done() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

std::string launcher_world_text() {
  auto [size_var, size] =
      first_env({"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  auto [rank_var, rank] =
      first_env({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"});
  std::string text = size.empty() ? "world size unknown: no launcher variable"
                                  : "expected world size " + size + " (from " + size_var + ")";
  if (!rank.empty()) text += ", this is rank " + rank;
  return text;
}

void test_stop_point(const std::string& point, int rank) {
  const char* spec = std::getenv("CLUSTERBENCH_TEST_STOP");
  if (!spec || !*spec) return;
  std::string s = spec;
  size_t at = s.find('@');
  if (at == std::string::npos || s.substr(at + 1) != point) return;
  if (rank < 0) {
    auto [var, value] = first_env({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"});
    rank = value.empty() ? 0 : std::atoi(value.c_str());
  }
  if (s.substr(0, at) != std::to_string(rank)) return;
  std::cerr << "clusterbench: test: rank " << rank << " stops itself (SIGSTOP) at " << point
            << " (CLUSTERBENCH_TEST_STOP)" << std::endl;
  ::raise(SIGSTOP);
}

}  // namespace clusterbench
