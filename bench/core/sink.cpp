// Record sink: see sink.hpp.
#include "core/sink.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/run_lock.hpp"

namespace clusterbench {

Sink::Sink(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    throw std::runtime_error(dir_ + ": cannot create the results directory (" + ec.message() + ")");
  acquire_run_lock(dir_);  // one live run per directory (a resume of a running run is refused)
  std::string path = dir_ + "/records.jsonl";
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": open: " + std::strerror(errno));
}

Sink::~Sink() {
  if (fd_ >= 0) ::close(fd_);
}

void Sink::write_run(const RunRecord& run) {
  std::lock_guard<std::mutex> lock(mu_);
  json j = run;
  for (const auto& [k, v] : run_fields_.items()) j[k] = v;
  write_file_atomic(dir_ + "/run.json", j.dump(2) + "\n");
}

void Sink::set_run_field(const std::string& key, json value) {
  std::lock_guard<std::mutex> lock(mu_);
  run_fields_[key] = std::move(value);
}

void Sink::append(const ResultRecord& rec) { append_line(json(rec).dump()); }

void Sink::append_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string buf = line + "\n";
  // One write(2) on an O_APPEND descriptor: a reader never sees two records interleaved.
  ssize_t n = ::write(fd_, buf.data(), buf.size());
  if (n != static_cast<ssize_t>(buf.size())) {
    int err = n < 0 ? errno : ENOSPC;
    throw std::runtime_error(dir_ + "/records.jsonl: write: " + std::strerror(err));
  }
  ::fdatasync(fd_);
}

void update_latest_link(const std::string& root, const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = fs::path(run_dir).lexically_relative(root);
  if (target.empty() || target.string().rfind("..", 0) == 0) target = fs::absolute(run_dir);
  fs::path tmp = fs::path(root) / (".latest.tmp." + std::to_string(getpid()));
  fs::remove(tmp, ec);
  fs::create_directory_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, fs::path(root) / "latest", ec);
}

}  // namespace clusterbench
