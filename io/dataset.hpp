// The sample files io.dataloader reads (docs/dataloader.md "Dataset"), and `clusterbench io
// make-dataset`, which writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clusterbench::io {

/// Every sample file starts with this 32-byte header, then `payload_bytes` of payload.
struct SampleHeader {
  char magic[8];           ///< "CBSAMPL1"
  uint64_t index;          ///< the sample's index in its dataset
  uint64_t payload_bytes;  ///< bytes after the header
  uint64_t checksum;       ///< sample_checksum(payload)
};
static_assert(sizeof(SampleHeader) == 32);

/// Position-dependent 64-bit checksum: sum over little-endian 8-byte words w_i (the last one
/// zero-padded) of w_i * (2i + 1), mod 2^64. A swapped, shifted or foreign block changes it.
uint64_t sample_checksum(const unsigned char* data, size_t n);

/// Options of `clusterbench io make-dataset`.
struct DatasetSpec {
  std::string dir;
  long long count = 0;     ///< number of sample files
  long long size = 0;      ///< bytes per file (header included); the minimum when size_max > 0
  long long size_max = 0;  ///< > size: sizes uniform in [size, size_max]
  uint64_t seed = 1;
};

/// File name of sample `i`: "sample_00000042.bin".
std::string sample_name(long long i);

/// Size in bytes of sample `i` under `spec` (deterministic in seed and i).
long long sample_size(const DatasetSpec& spec, long long i);

/// Writes the dataset: `count` files in `dir` (created if absent; must not already hold
/// samples), each a header plus pseudo-random payload, then syncfs so a cold-cache run can drop
/// them. Returns the total bytes written. Throws InputError for bad sizes (size < 33 B) or a
/// non-empty directory, CallError on I/O errors.
long long make_dataset(const DatasetSpec& spec);

/// One sample file found in a dataset directory.
struct SampleFile {
  std::string path;
  long long bytes = 0;
};

/// The regular files of `dir` (not a ScratchDir's owner file), sorted by name. Throws
/// InputError when none.
std::vector<SampleFile> list_dataset(const std::string& dir);

/// Drops the page cache of every file (posix_fadvise POSIX_FADV_DONTNEED; clean pages only, so
/// make_dataset syncs what it writes), as fio's invalidate=1 does before a job: a cold-cache
/// run then reads from the device from its first sample. A file that cannot be opened is
/// skipped (the loader names it when it reads it).
void drop_page_cache(const std::vector<SampleFile>& files);

}  // namespace clusterbench::io
