// The burn-in's all_reduce loop (compute/burnin_soak.cpp): the load on NVLink and the network
// beside the GEMM soak, each result checked. Internal to compute/: only the soak includes it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/collective.hpp"
#include "core/gpu_disposition.hpp"

namespace clusterbench::compute {

/// The all_reduce loop on its own thread: during each interval it runs sum all_reduces of
/// `count` floats back to back. One more element travels with the data: each rank puts 1 there
/// once its interval is over, and every rank stops after the first operation whose sum of it is
/// non-zero, so all ranks run the same number of operations. The last result is checked against
/// the expected sums (collectives::kAllReduce) after every interval.
class AllReduceLoop {
 public:
  struct Interval {
    long long ops = 0;
    double seconds = 0;
    long long wrong = 0;      ///< wrong elements of the interval's last result (count_wrong)
    long long wrong_ops = 0;  ///< operations whose result differed from the first checked one
    long long compared = 0;   ///< operations compared with it
    std::string error;
  };

  AllReduceLoop(collectives::Backend* be, long long count, int device)
      : be_(be), count_(count), device_(device) {
    const size_t bytes = static_cast<size_t>(count_ + 1) * sizeof(float);
    host_.resize(static_cast<size_t>(count_ + 1));
    for (long long i = 0; i < count_; ++i)
      host_[static_cast<size_t>(i)] = static_cast<float>(collectives::input_value(be_->rank(), i));
    host_.back() = 0;
    send_ = be_->alloc(bytes);
    recv_ = be_->alloc(bytes);
    be_->upload(send_, host_.data(), bytes);
    thread_ = std::thread([this] { loop(); });
  }
  ~AllReduceLoop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
    be_->release(send_);
    be_->release(recv_);
    if (ref_) be_->release(ref_);
  }
  long long bytes() const { return count_ * static_cast<long long>(sizeof(float)); }

  void start() {
    std::lock_guard<std::mutex> lock(mu_);
    end_.store(false);
    ++started_;
    cv_.notify_all();
  }
  /// Marks this rank's interval over and waits for the loop to stop (with every rank's).
  Interval finish() {
    end_.store(true);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return finished_ == started_; });
    return last_;
  }

 private:
  void loop() {
    if (device_ >= 0) select_gpu(device_);  // NCCL from this thread: the device is per thread
    long long seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return quit_ || started_ > seen; });
        if (quit_) return;
        seen = started_;
      }
      Interval r = run_interval();
      std::lock_guard<std::mutex> lock(mu_);
      last_ = r;
      finished_ = seen;
      cv_.notify_all();
    }
  }

  Interval run_interval() {
    Interval r;
    if (!error_.empty()) {
      r.error = error_;
      return r;
    }
    const auto& c = collectives::kAllReduce;
    collectives::Layout l = c.layout(count_ + 1, be_->rank(), be_->size(), sizeof(float));
    float* flag_dst = static_cast<float*>(send_) + count_;
    const float* flag_src = static_cast<const float*>(recv_) + count_;
    auto t0 = std::chrono::steady_clock::now();
    try {
      if (!ref_) make_reference(l);
      while (true) {
        float flag = end_.load() ? 1.0f : 0.0f, sum = 0;
        be_->upload(flag_dst, &flag, sizeof flag);
        double sec = be_->run(c, collectives::Dtype::f32, send_, recv_, l, 0, false, 1);
        ++r.ops;
        if (sec >= 0) r.seconds += sec;
        // Every result against the first checked one (gpu-burn's way): one wrong sum among many
        // correct ones is counted, not overwritten unseen.
        if (ref_) {
          ++r.compared;
          if (be_->count_differing(recv_, ref_, count_, collectives::Dtype::f32) != 0)
            ++r.wrong_ops;
        }
        be_->download(&sum, flag_src, sizeof sum);
        if (sum > 0) break;
      }
      if (r.seconds == 0)
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      r.wrong = wrong_of_last();
    } catch (const std::exception& e) {
      error_ = r.error = e.what();  // the communicator cannot be trusted any more
    }
    return r;
  }

  /// Wrong elements of the last result (collectives::count_wrong over input_value's sums).
  long long wrong_of_last() {
    std::vector<float> out(static_cast<size_t>(count_));
    be_->download(out.data(), recv_, out.size() * sizeof(float));
    return collectives::count_wrong(collectives::kAllReduce, collectives::Dtype::f32, out.data(),
                                    count_, be_->rank(), be_->size(), count_, 0);
  }

  /// One untimed operation, checked element by element; a correct result is kept as the
  /// reference every later one is compared with (a wrong one is not: the interval's end check
  /// reports it).
  void make_reference(const collectives::Layout& l) {
    float zero = 0;
    be_->upload(static_cast<float*>(send_) + count_, &zero, sizeof zero);
    be_->run(collectives::kAllReduce, collectives::Dtype::f32, send_, recv_, l, 0, false, 1);
    if (wrong_of_last() != 0) return;
    std::vector<float> out(static_cast<size_t>(count_));
    be_->download(out.data(), recv_, out.size() * sizeof(float));
    ref_ = be_->alloc(out.size() * sizeof(float));
    be_->upload(ref_, out.data(), out.size() * sizeof(float));
  }

  collectives::Backend* be_;
  long long count_;
  int device_;
  std::vector<float> host_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  void* ref_ = nullptr;  ///< the first checked result (make_reference)
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false;
  long long started_ = 0, finished_ = 0;
  std::atomic<bool> end_{false};
  Interval last_;
  std::string error_;
};

}  // namespace clusterbench::compute
