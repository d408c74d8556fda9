// Errors that carry where and what: library, code, error string, call text, file:line, host, rank.
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "records/records.hpp"

namespace clusterbench {

/// Host name and world rank of this process, set once by the MPI context; used in error texts.
void set_error_origin(const std::string& host, int rank);
const std::string& origin_host();
int origin_rank();

/// A failed library or system call. what() reads
/// "<library> error <code> (<text>) in <call> at <file:line> on <host> rank <rank>".
class CallError : public std::runtime_error {
 public:
  CallError(std::string library, std::string code, std::string text, std::string call,
            std::string where);
  const ErrorInfo& info() const { return info_; }
  const std::string& text() const { return text_; }

 private:
  ErrorInfo info_;
  std::string text_;
};

/// A case that cannot run here for a stated reason; the runner records it `waived`.
class Waived : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A case refused because running it could harm others or their data (an unsafe fio target, a
/// file another process is writing, not enough free space). Recorded `waived` with the reason and
/// extra.refused = true, like Waived; the run then exits 2 (docs/design.md "Exit codes").
class Refused : public Waived {
 public:
  using Waived::Waived;
};

/// The run cannot go on (hung or failed collective, dead rank): the runner writes the record,
/// marks run.json aborted and exits 3.
class AbortRun : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_call_error(const char* library, const std::string& code,
                                   const std::string& text, const char* call, const char* file,
                                   int line);

}  // namespace clusterbench

#define CB_STR2(x) #x
#define CB_STR(x) CB_STR2(x)

/// System call returning -1 / errno on failure.
#define CHECK_SYS(call)                                                                         \
  do {                                                                                          \
    if ((call) < 0) {                                                                           \
      int cb_err_ = errno;                                                                      \
      ::clusterbench::throw_call_error("libc", std::to_string(cb_err_), std::strerror(cb_err_), \
                                       #call, __FILE__, __LINE__);                              \
    }                                                                                           \
  } while (0)

/// A condition that must hold; `msg` says what went wrong.
#define CHECK_MSG(cond, library, msg)                                                       \
  do {                                                                                      \
    if (!(cond))                                                                            \
      ::clusterbench::throw_call_error(library, "check", (msg), #cond, __FILE__, __LINE__); \
  } while (0)
