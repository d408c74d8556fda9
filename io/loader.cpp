// The DataLoader-like pipeline of io.dataloader: see dataloader.hpp and docs/dataloader.md.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>

#include "core/api/error.hpp"
#include "io/dataloader.hpp"

namespace clusterbench::io {

namespace {
constexpr size_t kAlign = 4096;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

StagingMemory plain_memory() {
  return {[](size_t n) -> void* {
            // A buffer of 2 MiB or more is 2 MiB aligned and asks for transparent huge pages:
            // an O_DIRECT read then pins and maps one page per sample instead of one per 4 KiB
            // (docs/dataloader.md). Best effort: without THP it is ordinary memory.
            constexpr size_t kHuge = 2 << 20;
            bool huge = n >= kHuge;
            size_t bytes = huge ? (n + kHuge - 1) / kHuge * kHuge : n;
            void* p = nullptr;
            if (posix_memalign(&p, huge ? kHuge : kAlign, bytes) != 0) return nullptr;
            if (huge) ::madvise(p, bytes, MADV_HUGEPAGE);
            return p;
          },
          [](void* p) { std::free(p); }};
}

Loader::Loader(std::vector<SampleFile> files, LoaderOptions opt, StagingMemory mem)
    : files_(std::move(files)), opt_(opt), mem_(std::move(mem)) {
  if (opt_.workers < 1 || opt_.batch < 1 || opt_.prefetch < 1)
    throw InputError("dataloader: workers, batch and prefetch must be at least 1");
  batches_per_epoch_ = static_cast<long long>(files_.size()) / opt_.batch;
  if (batches_per_epoch_ < 1)
    throw InputError("dataloader: the dataset has " + std::to_string(files_.size()) +
                     " files, fewer than one batch of " + std::to_string(opt_.batch));
  long long biggest = 0;
  for (const auto& f : files_) biggest = std::max(biggest, f.bytes);
  slot_stride_ = round_up(static_cast<size_t>(std::max(1LL, biggest)));
  slots_ = opt_.workers * opt_.prefetch;
  for (int s = 0; s < slots_; ++s) {
    void* p = mem_.alloc(slot_bytes());
    if (!p) {
      for (void* q : slot_mem_) mem_.free(q);
      throw std::runtime_error("dataloader: cannot allocate a staging buffer of " +
                               std::to_string(slot_bytes()) + " B");
    }
    slot_mem_.push_back(p);
  }
  slot_batch_.resize(static_cast<size_t>(slots_));
  ready_.assign(static_cast<size_t>(slots_), -1);
  slot_free_.assign(static_cast<size_t>(slots_), 1);
  start_workers();
}

void Loader::start_workers() {
  int w = 0;
  try {
    for (; w < opt_.workers; ++w) threads_.emplace_back([this, w] { worker(w); });
  } catch (const std::system_error& e) {
    // The constructor does not finish, so no destructor runs: the started threads are stopped
    // and joined here (a joinable std::thread destroyed calls std::terminate, as workers=1000
    // under `ulimit -v` once did, leaving no record).
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    for (void* p : slot_mem_) mem_.free(p);
    throw std::runtime_error("dataloader: cannot start worker thread " + std::to_string(w + 1) +
                             " of " + std::to_string(opt_.workers) + ": " + e.what() +
                             "; use fewer workers");
  }
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  for (void* p : slot_mem_) mem_.free(p);
}

std::vector<long long> Loader::expected_indices(long long seq) {
  long long epoch = seq / batches_per_epoch_, k = seq % batches_per_epoch_;
  std::vector<long long> out;
  {
    std::lock_guard<std::mutex> lk(perm_mu_);
    auto it = perms_.find(epoch);
    if (it == perms_.end()) {
      std::vector<long long> p(files_.size());
      std::iota(p.begin(), p.end(), 0);
      std::mt19937_64 rng(opt_.seed + static_cast<uint64_t>(epoch));
      std::shuffle(p.begin(), p.end(), rng);
      while (perms_.size() > 4) perms_.erase(perms_.begin());  // workers span few epochs
      it = perms_.emplace(epoch, std::move(p)).first;
    }
    out.assign(it->second.begin() + k * opt_.batch, it->second.begin() + (k + 1) * opt_.batch);
  }
  return out;
}

void Loader::worker(int w) {
  for (long long k = 0;; ++k) {
    long long seq = w + k * opt_.workers;
    int slot = static_cast<int>(seq % slots_);
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (opt_.in_order) {
        // The slot is free once the consumer released the batch that used it before.
        cv_.wait(lk, [&] { return stop_ || seq < released_ + slots_; });
      } else {
        // Slots w*P .. w*P+P-1 are this worker's; it takes the sampler's next batch when one
        // of them is free.
        cv_.wait(lk, [&] {
          for (slot = w * opt_.prefetch; slot < (w + 1) * opt_.prefetch; ++slot)
            if (slot_free_[static_cast<size_t>(slot)]) return true;
          return stop_;
        });
        if (!stop_) {
          slot_free_[static_cast<size_t>(slot)] = 0;
          seq = issued_++;
        }
      }
      if (stop_) return;
    }
    try {
      fill(seq, slot);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      ready_[static_cast<size_t>(slot)] = seq;
    }
    cv_.notify_all();
  }
}

void Loader::fill(long long seq, int slot) {
  LoadedBatch& b = slot_batch_[static_cast<size_t>(slot)];
  b.seq = seq;
  b.slot = slot;
  b.slot_stride = slot_stride_;
  b.indices = expected_indices(seq);
  b.bytes.assign(b.indices.size(), 0);
  b.total_bytes = 0;
  auto* base = static_cast<unsigned char*>(slot_mem_[static_cast<size_t>(slot)]);
  b.data = base;
  if (opt_.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(opt_.delay_s));
  for (size_t j = 0; j < b.indices.size(); ++j) {
    const SampleFile& f = files_[static_cast<size_t>(b.indices[j])];
    // A failed call names the sample file (a file deleted or unreadable mid-run).
    auto io_error = [&](const char* call, int err) {
      throw_call_error("libc", std::to_string(err), f.path + ": " + std::strerror(err), call,
                       __FILE__, __LINE__);
    };
    int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC | (opt_.direct ? O_DIRECT : 0));
    if (fd < 0) io_error("open", errno);
    unsigned char* dst = base + j * slot_stride_;
    size_t want = round_up(static_cast<size_t>(f.bytes));
    long long got = 0;
    while (true) {  // read to end of file (O_DIRECT: aligned lengths, short at EOF)
      ssize_t n = ::pread(fd, dst + got, want - static_cast<size_t>(got), got);
      if (n < 0) {
        int e = errno;
        ::close(fd);
        io_error("pread", e);
      }
      if (n == 0) break;
      got += n;
      if (static_cast<size_t>(got) >= want) break;
    }
    // Cold: what a buffered read cached goes again (O_DIRECT caches nothing).
    if (opt_.cold && !opt_.direct) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    CHECK_MSG(got == f.bytes, "dataloader",
              f.path + ": read " + std::to_string(got) + " B, expected " + std::to_string(f.bytes));
    // Decode: a sample in our format must carry its own checksum (the loader's CPU work per byte).
    if (got >= static_cast<long long>(sizeof(SampleHeader)) &&
        std::memcmp(dst, "CBSAMPL1", 8) == 0) {
      SampleHeader h;
      std::memcpy(&h, dst, sizeof h);
      CHECK_MSG(h.payload_bytes + sizeof h == static_cast<uint64_t>(got), "dataloader",
                f.path + ": header length does not match the file");
      CHECK_MSG(sample_checksum(dst + sizeof h, h.payload_bytes) == h.checksum, "dataloader",
                f.path + ": payload checksum does not match its header");
    }
    b.bytes[j] = got;
    b.total_bytes += got;
  }
}

LoadedBatch Loader::next() {
  auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lk(mu_);
  int slot = -1;
  auto have = [&] {
    if (opt_.in_order) {
      slot = static_cast<int>(next_seq_ % slots_);
      return ready_[static_cast<size_t>(slot)] == next_seq_;
    }
    slot = -1;  // the lowest-numbered batch ready
    for (int s = 0; s < slots_; ++s)
      if (ready_[static_cast<size_t>(s)] >= 0 &&
          (slot < 0 || ready_[static_cast<size_t>(s)] < ready_[static_cast<size_t>(slot)]))
        slot = s;
    return slot >= 0;
  };
  // A worker's error ends the loader at once: out of order, the other workers' batches would
  // otherwise hide it (its batch never comes, theirs keep coming).
  cv_.wait(lk, [&] { return error_ || have(); });
  if (error_) std::rethrow_exception(error_);
  ++next_seq_;
  ready_[static_cast<size_t>(slot)] = -1;  // handed out; the slot stays taken until release
  LoadedBatch b = slot_batch_[static_cast<size_t>(slot)];
  b.wait_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return b;
}

void Loader::release(const LoadedBatch& b) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    CHECK_MSG(!opt_.in_order || b.seq == released_, "dataloader",
              "batches must be released in order");
    slot_free_[static_cast<size_t>(b.slot)] = 1;
    ++released_;
  }
  cv_.notify_all();
}

std::string Loader::verify(const LoadedBatch& b, bool full) {
  auto want = expected_indices(b.seq);
  if (b.indices != want)
    return "batch " + std::to_string(b.seq) + " holds other samples than the sampler chose";
  for (size_t j = 0; j < b.indices.size(); ++j) {
    const SampleFile& f = files_[static_cast<size_t>(b.indices[j])];
    const unsigned char* p = b.data + j * b.slot_stride;
    std::string where =
        "batch " + std::to_string(b.seq) + " sample " + std::to_string(j) + " (" + f.path + ")";
    if (b.bytes[j] != f.bytes)
      return where + ": " + std::to_string(b.bytes[j]) + " B, file has " + std::to_string(f.bytes);
    if (f.bytes < static_cast<long long>(sizeof(SampleHeader)) ||
        std::memcmp(p, "CBSAMPL1", 8) != 0)
      continue;
    SampleHeader h;
    std::memcpy(&h, p, sizeof h);
    // make-dataset names each file after the index its header holds.
    long long named = -1;
    std::string base = f.path.substr(f.path.find_last_of('/') + 1);
    if (std::sscanf(base.c_str(), "sample_%lld.bin", &named) == 1 &&
        h.index != static_cast<uint64_t>(named))
      return where + ": header says sample " + std::to_string(h.index);
    if (full && sample_checksum(p + sizeof h, h.payload_bytes) != h.checksum)
      return where + ": staged payload does not match its checksum";
  }
  return "";
}

}  // namespace clusterbench::io
