// io::open_writers: processes holding a file at or below a target open for writing, from a /proc
// tree in the kernel's formats (fd links, fdinfo "flags:" in octal).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/scratch.hpp"
#include "process/process.hpp"

namespace fs = std::filesystem;
using clusterbench::io::describe_writers;
using clusterbench::io::open_writers;

namespace {

class OpenWritersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("cb-open-writers-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  /// One fd of a fake process: fd/N -> target, fdinfo/N with flags (octal text as the kernel).
  void fd(int pid, int n, const std::string& target, const std::string& flags_octal,
          const std::string& comm = "writer") {
    fs::path p = root_ / std::to_string(pid);
    fs::create_directories(p / "fd");
    fs::create_directories(p / "fdinfo");
    std::ofstream(p / "comm") << comm << "\n";
    fs::create_symlink(target, p / "fd" / std::to_string(n));
    std::ofstream(p / "fdinfo" / std::to_string(n))
        << "pos:\t0\nflags:\t" << flags_octal << "\nmnt_id:\t29\nino:\t1234\n";
  }
  fs::path root_;
};

TEST_F(OpenWritersTest, WritersBelowTheTargetOnly) {
  // 0100001 = O_LARGEFILE | O_WRONLY; 02 = O_RDWR; 0100000 = O_RDONLY | O_LARGEFILE.
  fd(101, 3, "/scratch/job/ckpt.bin", "0100001", "python3");
  fd(102, 4, "/scratch/data.bin", "02", "dd");
  fd(103, 5, "/scratch/job/input.bin", "0100000", "reader");  // read-only: not a writer
  fd(104, 6, "/scratchpad/other.bin", "01", "near");          // a sibling path, not below
  fd(105, 7, "pipe:[12345]", "01", "pipe");                   // not a file
  fd(106, 8, "/scratch", "0200001", "dir");                   // the target itself, O_WRONLY
  std::ofstream(root_ / "self") << "not a pid\n";

  int unreadable = -1;
  auto w = open_writers("/scratch", &unreadable, root_.string());
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].pid, 101);
  EXPECT_EQ(w[0].comm, "python3");
  EXPECT_EQ(w[0].path, "/scratch/job/ckpt.bin");
  EXPECT_EQ(w[1].pid, 102);
  EXPECT_EQ(w[1].path, "/scratch/data.bin");
  EXPECT_EQ(w[2].pid, 106);
  EXPECT_EQ(unreadable, 0);
  EXPECT_EQ(describe_writers({w[0]}), "pid 101 (python3) writes /scratch/job/ckpt.bin");

  // A trailing slash and "." components name the same target.
  EXPECT_EQ(open_writers("/scratch/./job/", nullptr, root_.string()).size(), 1u);
  EXPECT_TRUE(open_writers("/elsewhere", nullptr, root_.string()).empty());
}

// Issue 46, defect 9: a writer that reaches the target through a bind mount (another path to the
// same directory) is a writer to the target: compared by device and inode, not by path. A file on
// the same filesystem outside the target is not.
TEST_F(OpenWritersTest, AWriterThroughABindMountIsSeen) {
  const fs::path real = root_ / "real", bind = root_ / "bind", proc = root_ / "proc";
  fs::create_directories(real / "job");
  fs::create_directories(bind);
  std::ofstream(real / "job" / "ckpt.bin") << "x";
  std::ofstream(root_ / "beside.bin") << "y";
  ASSERT_EQ(::mount(real.c_str(), bind.c_str(), nullptr, MS_BIND, nullptr), 0)
      << "mount --bind needs root: " << std::strerror(errno);
  fs::create_directories(proc / "201" / "fd");
  fs::create_directories(proc / "201" / "fdinfo");
  std::ofstream(proc / "201" / "comm") << "trainer\n";
  fs::create_symlink(bind / "job" / "ckpt.bin", proc / "201" / "fd" / "3");
  std::ofstream(proc / "201" / "fdinfo" / "3") << "pos:\t0\nflags:\t0100001\n";
  fs::create_symlink(root_ / "beside.bin", proc / "201" / "fd" / "4");
  std::ofstream(proc / "201" / "fdinfo" / "4") << "pos:\t0\nflags:\t0100001\n";
  auto w = open_writers(real.string(), nullptr, proc.string());
  ::umount2(bind.c_str(), MNT_DETACH);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].pid, 201);
  EXPECT_EQ(w[0].path, (bind / "job" / "ckpt.bin").string());
}

// Another host's rank's fio in its own scratch directory (cb-* with its owner file) below a shared
// tier is not a writer to refuse; a cb-* directory without the owner file is not a scratch
// directory.
TEST_F(OpenWritersTest, AnotherClusterbenchScratchDirIsNotAWriter) {
  const fs::path tier = root_ / "tier";
  fs::create_directories(tier / "cb-fio-seq_write-abc123");
  std::ofstream(tier / "cb-fio-seq_write-abc123" / ".cb-owner") << "pid=1 host=n1\n";
  fs::create_directories(tier / "cb-user-data");
  fd(201, 3, (tier / "cb-fio-seq_write-abc123" / "seq_write.0.0").string(), "01", "fio");
  fd(202, 4, (tier / "cb-fio-seq_write-abc123" / ".cb-owner").string(), "01", "clusterbench");
  fd(203, 5, (tier / "cb-user-data" / "ckpt.bin").string(), "01", "python3");
  fd(204, 6, (tier / "ckpt.bin").string(), "02", "dd");
  // Not exempt: a run of this host (a concurrent run), an owner file that names no owner, and a
  // cb-* directory above the target (the target is inside it, not another rank's scratch).
  fs::create_directories(tier / "cb-fio-rand_read-local");
  std::ofstream(tier / "cb-fio-rand_read-local" / ".cb-owner")
      << "pid=1 host=" << clusterbench::io::scratch_host() << "\n";
  fd(205, 7, (tier / "cb-fio-rand_read-local" / "rand_read.0.0").string(), "01", "fio");
  fs::create_directories(tier / "cb-mine");
  std::ofstream(tier / "cb-mine" / ".cb-owner") << "just a user file\n";
  fd(206, 8, (tier / "cb-mine" / "userdata.bin").string(), "01", "python3");
  auto w = open_writers(tier.string(), nullptr, root_.string());
  ASSERT_EQ(w.size(), 4u) << describe_writers(w);
  EXPECT_EQ(w[0].pid, 203);
  EXPECT_EQ(w[1].pid, 204);
  EXPECT_EQ(w[2].pid, 205);
  EXPECT_EQ(w[3].pid, 206);
  const fs::path above = root_ / "cb-proj";
  fs::create_directories(above / "data");
  std::ofstream(above / ".cb-owner") << "pid=1 host=n1\n";
  fd(207, 9, (above / "data" / "x.bin").string(), "01", "dd");
  w = open_writers((above / "data").string(), nullptr, root_.string());
  ASSERT_EQ(w.size(), 1u) << describe_writers(w);
  EXPECT_EQ(w[0].pid, 207);
}

TEST_F(OpenWritersTest, DescribeCapsAtFive) {
  std::vector<clusterbench::io::OpenWriter> many(7, {7, "w", "/s/f"});
  std::string d = describe_writers(many);
  EXPECT_NE(d.find("; and 2 more"), std::string::npos) << d;
}

TEST_F(OpenWritersTest, FindsThisMachinesRealWriter) {
  // A child holding a file open O_WRONLY is found through the real /proc; this process is not.
  fs::path dir = root_ / "target";
  fs::create_directories(dir);
  std::string file = (dir / "held.bin").string();
  int self_fd = ::open((dir / "mine.bin").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(self_fd, 0);
  // The writer is a grandchild: this process's own children (its records writer) do not count.
  int pids[2];
  ASSERT_EQ(::pipe(pids), 0);
  pid_t child = ::fork();
  if (child == 0) {
    ::close(self_fd);
    pid_t writer = ::fork();
    if (writer == 0) {  // holds only held.bin
      int f = ::open(file.c_str(), O_WRONLY | O_CREAT, 0644);
      if (f < 0) _exit(1);
      ::pause();
      _exit(0);
    }
    if (::write(pids[1], &writer, sizeof writer) != sizeof writer) _exit(1);
    ::pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  pid_t writer = -1;
  ASSERT_EQ(::read(pids[0], &writer, sizeof writer), static_cast<ssize_t>(sizeof writer));
  std::vector<clusterbench::io::OpenWriter> w;
  for (int i = 0; i < 100 && w.empty(); ++i) {
    ::usleep(20000);
    w = open_writers(dir.string());
  }
  ::kill(writer, SIGKILL);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(self_fd);
  ::close(pids[0]), ::close(pids[1]);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].pid, writer);
  EXPECT_EQ(w[0].path, file);
  // A child of this process holding a file there is this run's own (the records writer).
  pid_t own = ::fork();
  if (own == 0) {
    int f = ::open(file.c_str(), O_WRONLY | O_CREAT, 0644);
    if (f < 0) _exit(1);
    ::pause();
    _exit(0);
  }
  ::usleep(200000);
  EXPECT_TRUE(open_writers(dir.string()).empty());
  ::kill(own, SIGKILL);
  ::waitpid(own, nullptr, 0);
  // A helper this process detached into a session of its own (the records writer: setsid, then
  // a grandchild) is its own too, once its session is marked.
  int sids[2];
  ASSERT_EQ(::pipe(sids), 0);
  pid_t leader = ::fork();
  if (leader == 0) {
    ::setsid();
    pid_t helper = ::fork();
    if (helper == 0) {
      int f = ::open(file.c_str(), O_WRONLY | O_CREAT, 0644);
      if (f < 0) _exit(1);
      ::pause();
      _exit(0);
    }
    if (::write(sids[1], &helper, sizeof helper) != sizeof helper) _exit(1);
    _exit(0);  // the helper is reparented: no longer a child of anyone here
  }
  pid_t helper = -1;
  ASSERT_EQ(::read(sids[0], &helper, sizeof helper), static_cast<ssize_t>(sizeof helper));
  ::waitpid(leader, nullptr, 0);
  std::vector<clusterbench::io::OpenWriter> before;
  for (int i = 0; i < 100 && before.empty(); ++i) {
    ::usleep(20000);
    before = open_writers(dir.string());
  }
  clusterbench::add_own_session(leader);
  const auto after = open_writers(dir.string());
  ::kill(helper, SIGKILL);
  ::close(sids[0]), ::close(sids[1]);
  ASSERT_EQ(before.size(), 1u);  // unmarked: another writer
  EXPECT_EQ(before[0].pid, helper);
  EXPECT_TRUE(after.empty());
}

}  // namespace

// Issue 46: a target of "/" (io.fio.scratch=/ or a symlink to it) holds every file below it; the
// walk up from a writer's file towards the target stopped never ("/".parent_path() is "/") and a
// core spun to the case deadline. It ends, and the writers are every writer.
TEST_F(OpenWritersTest, TheRootAsTargetEnds) {
  fd(201, 3, "/var/lib/db/table.dat", "0100001", "db");
  fd(202, 4, "/etc/hosts", "0100000", "reader");
  const auto w = open_writers("/", nullptr, root_.string());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].pid, 201);
  EXPECT_EQ(open_writers("/var/..", nullptr, root_.string()).size(), 1u);
}
