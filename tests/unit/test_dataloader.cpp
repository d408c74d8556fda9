// io.dataloader's pieces: the dataset format (checksum by hand), make_dataset, and the loader:
// every batch holds exactly the samples the shuffling sampler chose, in order, intact, across
// epochs, with O_DIRECT and a cold cache too; a corrupted file makes the loader fail.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "core/api/error.hpp"
#include "io/dataloader.hpp"
#include "io/dataset.hpp"

using namespace clusterbench;
using namespace clusterbench::io;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    path = (fs::temp_directory_path() / ("cbdl-" + std::to_string(getpid()) + "-" +
                                         std::to_string(reinterpret_cast<uintptr_t>(this))))
               .string();
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};
}  // namespace

TEST(Dataset, ChecksumByHand) {
  // Words (little-endian) 1 and 2, then a 1-byte tail 3: 1*1 + 2*3 + 3*5 = 22.
  unsigned char d[17] = {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3};
  EXPECT_EQ(sample_checksum(d, 17), 22u);
  EXPECT_EQ(sample_checksum(d, 8), 1u);
  // Swapping the two words changes it: 2*1 + 1*3 = 5.
  unsigned char e[16] = {2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(sample_checksum(e, 16), 5u);
}

TEST(Dataset, MakeDatasetWritesHeadersAndSizes) {
  TempDir t;
  DatasetSpec spec{t.path + "/ds", 10, 100, 300, 7};
  long long total = make_dataset(spec);
  auto files = list_dataset(spec.dir);
  ASSERT_EQ(files.size(), 10u);
  long long sum = 0;
  for (long long i = 0; i < 10; ++i) {
    EXPECT_EQ(files[i].path, spec.dir + "/" + sample_name(i));
    EXPECT_EQ(files[i].bytes, sample_size(spec, i));
    EXPECT_GE(files[i].bytes, 100);
    EXPECT_LE(files[i].bytes, 300);
    sum += files[i].bytes;
    std::ifstream in(files[i].path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    SampleHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    EXPECT_EQ(std::string(h.magic, 8), "CBSAMPL1");
    EXPECT_EQ(h.index, static_cast<uint64_t>(i));
    EXPECT_EQ(h.payload_bytes + 32, static_cast<uint64_t>(files[i].bytes));
    EXPECT_EQ(h.checksum, sample_checksum(reinterpret_cast<const unsigned char*>(bytes.data()) + 32,
                                          h.payload_bytes));
  }
  EXPECT_EQ(total, sum);
  EXPECT_THROW(make_dataset(spec), InputError);  // refuses a directory that holds samples
  EXPECT_THROW(make_dataset({t.path + "/x", 1, 20, 0, 1}), InputError);  // smaller than a header
}

namespace {
void check_loader(const LoaderOptions& opt, long long batches) {
  TempDir t;
  DatasetSpec spec{t.path + "/ds", 100, 4096, 12000, 3};
  make_dataset(spec);
  auto files = list_dataset(spec.dir);
  Loader loader(files, opt, plain_memory());
  ASSERT_EQ(loader.batches_per_epoch(), 100 / opt.batch);  // drop_last
  std::set<long long> epoch0, seen;
  // Out of order, go on until the first epoch is complete.
  for (long long s = 0; s < batches || static_cast<long long>(epoch0.size()) <
                                           loader.batches_per_epoch() * opt.batch;
       ++s) {
    ASSERT_LT(s, 20 * batches);
    LoadedBatch b = loader.next();
    if (opt.in_order)
      ASSERT_EQ(b.seq, s);
    else  // each batch once; never more than the slots ahead of the consumer
      ASSERT_TRUE(seen.insert(b.seq).second && b.seq < s + loader.slots()) << b.seq;
    ASSERT_EQ(b.indices.size(), static_cast<size_t>(opt.batch));
    EXPECT_EQ(loader.verify(b, true), "");
    long long bytes = 0;
    for (size_t j = 0; j < b.indices.size(); ++j) {
      EXPECT_EQ(b.bytes[j], files[static_cast<size_t>(b.indices[j])].bytes);
      bytes += b.bytes[j];
      if (b.seq < loader.batches_per_epoch()) epoch0.insert(b.indices[j]);
    }
    EXPECT_EQ(b.total_bytes, bytes);
    loader.release(b);
  }
  // One epoch visits distinct samples: a permutation, cut into batches.
  EXPECT_EQ(epoch0.size(), static_cast<size_t>(loader.batches_per_epoch() * opt.batch));
  // Epochs are shuffled differently.
  EXPECT_NE(loader.expected_indices(0), loader.expected_indices(loader.batches_per_epoch()));
}
}  // namespace

TEST(Loader, BatchesInOrderAcrossEpochs) { check_loader({4, 8, 2, false, false, 1}, 40); }
TEST(Loader, OneWorker) { check_loader({1, 32, 1, false, false, 9}, 10); }
TEST(Loader, DirectAndColdCache) { check_loader({3, 5, 2, true, true, 5}, 25); }
TEST(Loader, OutOfOrder) { check_loader({4, 8, 2, false, false, 1, false}, 40); }
TEST(Loader, OutOfOrderDirectCold) { check_loader({3, 5, 1, true, true, 5, false}, 25); }

TEST(Loader, VerifyCatchesAWrongBatch) {
  TempDir t;
  DatasetSpec spec{t.path + "/ds", 40, 1000, 0, 1};
  make_dataset(spec);
  Loader loader(list_dataset(spec.dir), {2, 4, 2, false, false, 1}, plain_memory());
  LoadedBatch b = loader.next();
  LoadedBatch swapped = b;
  std::swap(swapped.indices[0], swapped.indices[1]);
  EXPECT_NE(loader.verify(swapped, false).find("other samples"), std::string::npos);
  // A flipped byte in the staged payload: caught by the full check only.
  auto* p = const_cast<unsigned char*>(b.data) + 100;
  *p ^= 0xff;
  EXPECT_EQ(loader.verify(b, false), "");
  EXPECT_NE(loader.verify(b, true).find("does not match its checksum"), std::string::npos);
  *p ^= 0xff;
  loader.release(b);
}

namespace {
// Changes one payload byte of sample i in place: its checksum no longer matches.
void corrupt_sample(const std::string& dir, long long i) {
  std::fstream f(dir + "/" + sample_name(i), std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(500);
  f.put('\x7f');
}
}  // namespace

TEST(Loader, CorruptFileFailsTheLoader) {
  TempDir t;
  DatasetSpec spec{t.path + "/ds", 16, 2000, 0, 1};
  make_dataset(spec);
  corrupt_sample(spec.dir, 5);
  Loader loader(list_dataset(spec.dir), {2, 16, 1, false, false, 1}, plain_memory());
  try {
    LoadedBatch b = loader.next();  // the only batch of the epoch holds sample 5
    FAIL() << "a corrupted sample was delivered";
  } catch (const CallError& e) {
    EXPECT_NE(std::string(e.what()).find("sample_00000005.bin: payload checksum"),
              std::string::npos)
        << e.what();
  }
}

TEST(Loader, OutOfOrderAWorkersErrorIsNotHiddenByTheOthers) {
  TempDir t;
  DatasetSpec spec{t.path + "/ds", 64, 2000, 0, 1};
  make_dataset(spec);
  corrupt_sample(spec.dir, 5);
  // A slow consumer: the other workers always have a batch ready when the bad one fails.
  Loader loader(list_dataset(spec.dir), {4, 4, 2, false, false, 1, false}, plain_memory());
  long long consumed = 0;
  try {
    for (; consumed < 200; ++consumed) {
      LoadedBatch b = loader.next();
      loader.release(b);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    FAIL() << "a corrupted sample was never reported";
  } catch (const CallError& e) {
    EXPECT_NE(std::string(e.what()).find("sample_00000005.bin"), std::string::npos) << e.what();
  }
  // Sample 5 is in epoch 0: the error comes before the slots of epoch 1 are used up.
  EXPECT_LE(consumed, loader.batches_per_epoch() + loader.slots());
}

TEST(Loader, AFileGoneMidRunIsNamed) {
  TempDir t;
  DatasetSpec spec{t.path + "/ds", 8, 2000, 0, 1};
  make_dataset(spec);
  auto files = list_dataset(spec.dir);
  std::filesystem::remove(spec.dir + "/" + sample_name(3));
  Loader loader(files, {1, 8, 1, false, false, 1}, plain_memory());
  try {
    loader.next();
    FAIL() << "a missing sample was delivered";
  } catch (const CallError& e) {
    EXPECT_NE(std::string(e.what()).find("sample_00000003.bin: No such file or directory"),
              std::string::npos)
        << e.what();
  }
}

TEST(Loader, TooFewFilesForABatch) {
  TempDir t;
  DatasetSpec spec{t.path + "/ds", 3, 100, 0, 1};
  make_dataset(spec);
  EXPECT_THROW(Loader(list_dataset(spec.dir), {1, 32, 2, false, false, 1}, plain_memory()),
               InputError);
}

// Issue 46: workers=1000 under a small address-space limit: a worker thread that cannot start
// stopped the process ("terminate called without an active exception": the started threads were
// destroyed joinable). It is an error naming the thread, the others joined; run in a child whose
// RLIMIT_AS leaves room for a few 8 MiB thread stacks only.
TEST(Loader, AWorkerThatCannotStartIsAnErrorNotATerminate) {
  TempDir t;
  DatasetSpec spec{t.path + "/ds", 100, 4096, 12000, 3};
  make_dataset(spec);
  auto files = list_dataset(spec.dir);
  EXPECT_EXIT(
      {
        rlimit lim{};
        getrlimit(RLIMIT_AS, &lim);
        std::ifstream st("/proc/self/statm");
        long pages = 0;
        st >> pages;
        lim.rlim_cur = static_cast<rlim_t>(pages) * 4096 + (160ull << 20);
        setrlimit(RLIMIT_AS, &lim);
        try {
          Loader loader(files, {1000, 1, 1, false, false, 1}, plain_memory());
        } catch (const std::runtime_error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(std::string(e.what()).find("cannot start worker thread") != std::string::npos
                         ? 1
                         : 0);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(1), "dataloader: cannot start worker thread [0-9]+ of 1000: ");
}
