// Dataset files for io.dataloader: see dataset.hpp and docs/dataloader.md.
#include "io/dataset.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/api/error.hpp"
#include "io/scratch.hpp"

namespace fs = std::filesystem;

namespace clusterbench::io {

uint64_t sample_checksum(const unsigned char* data, size_t n) {
  uint64_t sum = 0;
  size_t words = n / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, data + 8 * i, 8);
    sum += w * (2 * i + 1);
  }
  if (n % 8) {
    uint64_t w = 0;
    std::memcpy(&w, data + 8 * words, n % 8);
    sum += w * (2 * words + 1);
  }
  return sum;
}

std::string sample_name(long long i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "sample_%08lld.bin", i);
  return buf;
}

long long sample_size(const DatasetSpec& spec, long long i) {
  if (spec.size_max <= spec.size) return spec.size;
  std::mt19937_64 rng(spec.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(i));
  return spec.size +
         static_cast<long long>(rng() % static_cast<uint64_t>(spec.size_max - spec.size + 1));
}

long long make_dataset(const DatasetSpec& spec) {
  if (spec.count < 1) throw InputError("make-dataset: --count must be at least 1");
  if (spec.size < static_cast<long long>(sizeof(SampleHeader)) + 1)
    throw InputError("make-dataset: --size must be at least 33 B (32-byte header + payload)");
  std::error_code ec;
  fs::create_directories(spec.dir, ec);
  if (ec) throw InputError("make-dataset: cannot create " + spec.dir + ": " + ec.message());
  for (const auto& e : fs::directory_iterator(spec.dir))
    if (e.path().filename().string().rfind("sample_", 0) == 0)
      throw InputError("make-dataset: " + spec.dir +
                       " already holds samples; use an empty directory");
  long long total = 0;
  std::vector<unsigned char> buf;
  for (long long i = 0; i < spec.count; ++i) {
    long long bytes = sample_size(spec, i);
    buf.assign(static_cast<size_t>(bytes), 0);
    std::mt19937_64 rng(spec.seed ^ (static_cast<uint64_t>(i) << 20));
    for (size_t k = sizeof(SampleHeader); k + 8 <= buf.size(); k += 8) {
      uint64_t r = rng();
      std::memcpy(&buf[k], &r, 8);
    }
    for (size_t k = buf.size() - (buf.size() - sizeof(SampleHeader)) % 8; k < buf.size(); ++k)
      buf[k] = static_cast<unsigned char>(rng());
    SampleHeader h{};
    std::memcpy(h.magic, "CBSAMPL1", 8);
    h.index = static_cast<uint64_t>(i);
    h.payload_bytes = static_cast<uint64_t>(bytes) - sizeof(SampleHeader);
    h.checksum = sample_checksum(buf.data() + sizeof(SampleHeader), h.payload_bytes);
    std::memcpy(buf.data(), &h, sizeof h);
    std::string path = spec.dir + "/" + sample_name(i);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    CHECK_SYS(fd);
    ssize_t w = ::write(fd, buf.data(), buf.size());
    int err = errno;
    ::close(fd);
    errno = err;
    CHECK_SYS(w);
    CHECK_MSG(w == bytes, "libc", "short write to " + path);
    total += bytes;
  }
  int dfd = ::open(spec.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::syncfs(dfd);
    ::close(dfd);
  }
  return total;
}

std::vector<SampleFile> list_dataset(const std::string& dir) {
  std::vector<SampleFile> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().filename() != kScratchOwnerFile)  // ScratchDir's own
      out.push_back({e.path().string(), static_cast<long long>(e.file_size())});
  if (ec) throw InputError("dataloader: cannot list dataset " + dir + ": " + ec.message());
  if (out.empty()) throw InputError("dataloader: dataset " + dir + " holds no files");
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

void drop_page_cache(const std::vector<SampleFile>& files) {
  for (const auto& f : files) {
    int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

}  // namespace clusterbench::io
