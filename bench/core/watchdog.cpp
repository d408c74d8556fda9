// Watchdog: see watchdog.hpp.
#include "core/watchdog.hpp"

#include <csignal>

#include "core/cleanup.hpp"
#include "core/context.hpp"

namespace clusterbench {

namespace {
std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal.store(sig); }
}  // namespace

Watchdog::Watchdog(std::function<void(const std::string&)> on_abort)
    : on_abort_(std::move(on_abort)) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
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
    std::string reason;
    if (int sig = g_signal.load()) {
      reason = std::string("terminated by signal ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
               " (a rank died, or the job was cancelled)" + (armed_ ? " during " + what_ : "");
    } else if (!tripped_.empty()) {
      reason = tripped_;
    } else if (armed_ && std::chrono::steady_clock::now() > deadline_) {
      reason = "case deadline of " + std::to_string(static_cast<int>(seconds_)) +
               " s passed during " + what_ + " (hung collective or dead peer?)";
    }
    if (reason.empty()) continue;
    lock.unlock();
    on_abort_(reason);
    run_abort_cleanups();
    Context::get().abort(3);
  }
}

}  // namespace clusterbench
