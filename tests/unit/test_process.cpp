// The shared child-process helper (bench/process): output capture, environment, exit codes,
// signals, exec failures, descriptors not inherited, leftover group members killed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "process/process.hpp"

namespace {

using clusterbench::find_on_path;
using clusterbench::run_process;

struct Capture {
  std::string dir;
  Capture() {
    std::string t = std::filesystem::temp_directory_path().string() + "/cb-test-process.XXXXXX";
    EXPECT_NE(::mkdtemp(t.data()), nullptr);
    dir = t;
  }
  ~Capture() { std::filesystem::remove_all(dir); }
};

const std::string kSh = "/bin/sh";

/// Whether `pid` still runs (a zombie waiting for init to reap it does not), polled for up to 5 s
/// while it does: SIGKILL is delivered at once, but the exit may take a moment.
bool still_running(pid_t pid) {
  for (int i = 0; i < 50; ++i) {
    std::string stat;
    if (FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r")) {
      char buf[512] = {};
      stat.assign(buf, std::fread(buf, 1, sizeof buf - 1, f));
      std::fclose(f);
    }
    auto rp = stat.rfind(')');
    if (stat.empty() || rp == std::string::npos || stat.size() < rp + 3 || stat[rp + 2] == 'Z')
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid, SIGKILL);  // not ours to leave behind
  return true;
}

TEST(Process, CapturesStdoutStderrAndExitCode) {
  Capture c;
  auto r = run_process({kSh, "-c", "echo out; echo err >&2; exit 7"}, {}, "", c.dir);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(Process, EnvironmentOverridesAndWorkingDirectory) {
  Capture c;
  ::setenv("CB_TEST_PROCESS_A", "ours", 1);
  ::setenv("CB_TEST_PROCESS_B", "kept", 1);
  auto r = run_process({kSh, "-c", "echo $CB_TEST_PROCESS_A $CB_TEST_PROCESS_B; pwd"},
                       {{"CB_TEST_PROCESS_A", "theirs"}}, "/", c.dir);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "theirs kept\n/\n");
}

TEST(Process, SignalDeathIs128PlusSignal) {
  Capture c;
  auto r = run_process({kSh, "-c", "kill -SEGV $$"}, {}, "", c.dir);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV);
}

TEST(Process, ExecFailureIs127WithTheReason) {
  Capture c;
  auto r = run_process({"/nonexistent/tool", "x"}, {}, "", c.dir);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("exec /nonexistent/tool: No such file or directory"), std::string::npos)
      << r.err;
}

TEST(Process, ChildInheritsOnlyStdinStdoutStderr) {
  Capture c;
  int fd = ::open("/dev/null", O_RDONLY);  // not close-on-exec: a plain fork+exec would pass it on
  ASSERT_GE(fd, 3);
  // ls replaces the shell and lists its own descriptors: 0-2 and the one it reads /proc/self/fd
  // through, which is 3 unless something of ours came along.
  auto r = run_process({kSh, "-c", "exec ls /proc/self/fd"}, {}, "", c.dir);
  ::close(fd);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "0\n1\n2\n3\n") << "fd " << fd << " of the parent leaked into the child";
}

TEST(Process, StdinIsDevNull) {
  Capture c;
  auto r = run_process({kSh, "-c", "cat; echo done"}, {}, "", c.dir);
  EXPECT_EQ(r.out, "done\n");
}

TEST(Process, WhatTheChildLeftInItsGroupIsKilled) {
  Capture c;
  auto r = run_process({kSh, "-c", "sleep 60 & echo $!"}, {}, "", c.dir);
  ASSERT_EQ(r.exit_code, 0);
  pid_t orphan = std::stoi(r.out);
  EXPECT_FALSE(still_running(orphan))
      << "pid " << orphan << " (sleep 60) outlived its parent's run_process";
}

TEST(Process, TimeoutKillsTheWholeGroup) {
  Capture c;
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_process({kSh, "-c", "sleep 30 & echo $!; sleep 30"}, {}, "", c.dir, 0.5);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(s, 5.0);
  pid_t child = std::stoi(r.out);
  EXPECT_FALSE(still_running(child)) << "the background sleep " << child << " outlived the timeout";
}

// fio's job processes call setsid(): they leave the group and the session, and a group kill
// misses them. They still carry the child's tag in their environment.
TEST(Process, DescendantsInTheirOwnSessionAreKilled) {
  Capture c;
  // The escaped process writes its own pid ($! would name the shell's intermediate subshell).
  const std::string pid_file = c.dir + "/escaped.pid";
  auto r = run_process({kSh, "-c",
                        "setsid sh -c 'echo $$ >\"$0\"; exec sleep 60' \"$1\" </dev/null "
                        ">/dev/null 2>&1 & while [ ! -s \"$1\" ]; do sleep 0.05; done",
                        "sh", pid_file},
                       {}, "", c.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(pid_file);
  pid_t escaped = 0;
  in >> escaped;
  ASSERT_GT(escaped, 0);
  EXPECT_FALSE(still_running(escaped)) << "setsid sleep " << escaped << " outlived run_process";
}

TEST(Process, NoTimeoutWhenItFinishes) {
  Capture c;
  auto r = run_process({kSh, "-c", "echo fine"}, {}, "", c.dir, 5);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "fine\n");
}

TEST(Process, FindOnPath) {
  EXPECT_EQ(find_on_path("sh").empty(), false);
  EXPECT_EQ(find_on_path("/bin/sh"), "/bin/sh");
  EXPECT_EQ(find_on_path("cb-no-such-tool-anywhere"), "");
  EXPECT_EQ(find_on_path("/nonexistent/tool"), "");
  EXPECT_EQ(find_on_path(""), "");
}

}  // namespace

// A run SIGKILLed while its tool runs: the tool gets SIGTERM (PR_SET_PDEATHSIG) and ends, instead
// of writing on into a scratch directory nobody will remove.
TEST(Process, ChildDiesWithItsParent) {
  Capture c;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t parent = fork();
  if (parent == 0) {  // the "run": starts a long child, says its pid, waits to be killed
    ::close(fds[0]);
    auto child = clusterbench::start_process({"/bin/sleep", "60"}, {}, "", c.dir);
    ::dprintf(fds[1], "%d\n", static_cast<int>(child.pid));
    ::pause();
    _exit(0);
  }
  ::close(fds[1]);
  char buf[32] = {};
  ASSERT_GT(::read(fds[0], buf, sizeof buf - 1), 0);
  ::close(fds[0]);
  pid_t child = std::atoi(buf);
  ASSERT_GT(child, 0);
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  EXPECT_FALSE(still_running(child)) << "sleep " << child << " outlived its SIGKILLed parent";
}
