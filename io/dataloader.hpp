// io.dataloader: a loader that behaves like PyTorch's DataLoader (docs/dataloader.md): worker
// threads read shuffled sample files and assemble batches, each worker keeps up to `prefetch`
// batches ahead, batches are staged in (pinned) host memory and consumed in order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/dataset.hpp"

namespace clusterbench::io {

struct LoaderOptions {
  int workers = 8;   ///< worker threads (PyTorch num_workers)
  int batch = 32;    ///< samples per batch (drop_last: a short last batch of an epoch is skipped)
  int prefetch = 2;  ///< batches each worker may hold ahead (PyTorch prefetch_factor)
  bool direct = false;  ///< O_DIRECT reads
  bool cold = false;    ///< posix_fadvise(DONTNEED) each file after reading it: every read is cold
  uint64_t seed = 1;    ///< shuffle seed; epoch e uses seed + e
  /// true: batches reach the consumer in sampler order, batch s from worker s mod workers
  /// (PyTorch's default). false: as they complete (PyTorch's in_order=False): each worker
  /// takes the sampler's next batch whenever one of its `prefetch` slots is free.
  bool in_order = true;
  /// Test fault injection (compute.training_step's slow_loader): each batch takes this many more
  /// seconds to assemble in its worker, as a slow decode would. 0: none.
  double delay_s = 0;
};

/// Allocates / frees one staging buffer of `bytes` (pinned through the GPU plugin, or plain).
struct StagingMemory {
  std::function<void*(size_t)> alloc;
  std::function<void(void*)> free;
};

/// Plain, 4 KiB-aligned host memory.
StagingMemory plain_memory();

/// One batch handed to the consumer.
struct LoadedBatch {
  long long seq = -1;                   ///< 0, 1, 2, ... in consumption order
  int slot = -1;                        ///< staging slot holding it
  const unsigned char* data = nullptr;  ///< sample j at data + j * slot_stride
  size_t slot_stride = 0;
  std::vector<long long> indices;  ///< dataset positions of its samples, in order
  std::vector<long long> bytes;    ///< bytes of each sample as read
  long long total_bytes = 0;
  double wait_s = 0;  ///< time next() blocked waiting for it
};

/// The loader: starts its workers on construction and stops them on destruction.
class Loader {
 public:
  /// Throws InputError when the dataset has fewer files than one batch.
  Loader(std::vector<SampleFile> files, LoaderOptions opt, StagingMemory mem);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// The next batch: in order, or with in_order=false the lowest-numbered one ready; blocks
  /// until a worker has it. Rethrows a worker's error.
  LoadedBatch next();
  /// Gives the batch's slot back to the workers; in order unless in_order=false.
  void release(const LoadedBatch& b);
  /// Dataset positions batch `seq` must hold: epoch seq / batches_per_epoch of a shuffle.
  std::vector<long long> expected_indices(long long seq);
  /// Checks a batch: its indices are expected_indices(seq); every sample in our format has a
  /// header naming its own index and, when `full`, a payload whose checksum matches the header;
  /// foreign files have the size the directory listing gave. Returns "" or what is wrong.
  std::string verify(const LoadedBatch& b, bool full);
  long long batches_per_epoch() const { return batches_per_epoch_; }
  int slots() const { return slots_; }
  size_t slot_bytes() const { return slot_stride_ * static_cast<size_t>(opt_.batch); }
  void* slot_data(int slot) const { return slot_mem_[static_cast<size_t>(slot)]; }

 private:
  /// Starts opt_.workers threads; when one cannot start, stops and joins those that did, frees
  /// the staging buffers and throws std::runtime_error naming the thread.
  void start_workers();
  void worker(int w);
  void fill(long long seq, int slot);

  std::vector<SampleFile> files_;
  LoaderOptions opt_;
  StagingMemory mem_;
  long long batches_per_epoch_ = 0;
  int slots_ = 0;
  size_t slot_stride_ = 0;
  std::vector<void*> slot_mem_;
  std::vector<LoadedBatch> slot_batch_;
  std::vector<long long> ready_;  ///< per slot: the seq it holds ready, or -1
  std::vector<char> slot_free_;   ///< in_order=false: per slot, free for its worker to fill
  long long next_seq_ = 0, released_ = 0;
  long long issued_ = 0;  ///< in_order=false: batches handed to workers so far
  bool stop_ = false;
  std::exception_ptr error_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::mutex perm_mu_;
  std::map<long long, std::vector<long long>> perms_;
  std::vector<std::thread> threads_;
};

}  // namespace clusterbench::io
