// The console's line per finished case (case_line.hpp).
#include "core/case_line.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace clusterbench {

std::string console_number(double v) {
  char buf[64];
  if (std::isfinite(v) && (v == std::floor(v) || std::fabs(v) >= 1000) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string case_line(const ResultRecord& r) {
  std::string line = r.benchmark + " " + r.params.dump() + " " + scope_item(r.scope) + ": ";
  if (r.status == Status::failed) return line + "FAILED: " + r.message;
  if (r.status == Status::waived) return line + "waived: " + r.message;
  if (r.metrics.empty()) return line + (r.message.empty() ? "ok" : r.message);
  const Metric& m = r.metrics.front();
  line += m.name + " " + console_number(m.value);
  if (!m.unit.empty() && m.unit != "count" && m.unit != "ratio") line += " " + m.unit;
  if (m.reps.size() >= 2) {
    char spread[32];
    std::snprintf(spread, sizeof spread, "%.1f%%", 100 * relative_spread(m.reps));
    line += " (" + std::to_string(m.reps.size()) + " reps, spread " + spread + ")";
  }
  return line;
}

std::string progress_prefix(const std::string& place, double elapsed_s, double left_s) {
  return "[" + place + ", " + console_number(std::round(elapsed_s)) + " s, about " +
         console_number(std::round(std::max(0.0, left_s))) + " s left]";
}

namespace {

/// The Heartbeat of this process (rank 0's), for console_progress() and progress_note().
std::mutex g_active_mu;
Heartbeat* g_active = nullptr;

}  // namespace

void console_progress(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_active_mu);
  if (g_active) g_active->line(text);
}

void progress_note(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_active_mu);
  if (g_active) g_active->note(text);
}

void console_table(const std::string& text, bool open) {
  std::lock_guard<std::mutex> lock(g_active_mu);
  if (g_active)
    g_active->table(text, open);
  else
    std::cout << text << std::flush;
}

Heartbeat::Heartbeat(double quiet_s, std::ostream& out, Clock::time_point t0)
    : quiet_s_(quiet_s), out_(out), t0_(t0), thread_([this] { loop(); }) {
  std::lock_guard<std::mutex> lock(g_active_mu);
  g_active = this;
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(g_active_mu);
    if (g_active == this) g_active = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Heartbeat::start_case(const std::string& place, const std::string& what, double estimate_s) {
  std::lock_guard<std::mutex> lock(mu_);
  place_ = place, what_ = what, estimate_s_ = estimate_s;
  // A table left open by a benchmark that stopped (its last case failed) ends with it.
  if (what.substr(0, what.find(' ')) != table_of_) table_of_.clear();
  in_case_ = true;
  case_start_ = Clock::now();
}

void Heartbeat::end_case() {
  std::lock_guard<std::mutex> lock(mu_);
  in_case_ = false;
  note_.clear();
}

void Heartbeat::line(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  out_ << comment()
       << "[" + place_ + ", " +
              console_number(std::round(std::chrono::duration<double>(now - t0_).count())) +
              " s] " + text + "\n"
       << std::flush;
  last_ = now;
}

void Heartbeat::table(const std::string& text, bool open) {
  std::lock_guard<std::mutex> lock(mu_);
  out_ << text << std::flush;
  last_ = Clock::now();
  table_of_ = open ? what_.substr(0, what_.find(' ')) : "";
}

void Heartbeat::note(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  note_ = text;
}

void Heartbeat::printed() {
  std::lock_guard<std::mutex> lock(mu_);
  last_ = Clock::now();
}

void Heartbeat::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
    const auto now = Clock::now();
    if (stop_ || !in_case_ || std::chrono::duration<double>(now - last_).count() < quiet_s_)
      continue;
    auto secs = [&](Clock::time_point from) {
      return console_number(std::round(std::chrono::duration<double>(now - from).count()));
    };
    const std::string estimate =
        estimate_s_ < 0.5 ? "under 1" : console_number(std::round(estimate_s_));
    const std::string line = comment() + "[" + place_ + ", " + secs(t0_) + " s] still running " +
                             what_ + ": " + secs(case_start_) + " s so far (estimated " + estimate +
                             " s)" + (note_.empty() ? "" : ": " + note_) + "\n";
    out_ << line << std::flush;
    last_ = now;
  }
}

}  // namespace clusterbench
