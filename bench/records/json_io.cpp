// JSON files in and out (json_io.hpp).
#include "records/json_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "records/utf8.hpp"

namespace clusterbench {

FieldError::FieldError(std::string pointer, std::string detail)
    : InputError("field '" + pointer + "' " + detail),
      pointer_(std::move(pointer)),
      detail_(std::move(detail)) {}

namespace {

/// Counts the nesting of objects and arrays in JSON text fed to it byte by byte, outside
/// strings, and throws InputError past kMaxJsonDepth, before the JSON library builds anything.
class DepthGuard {
 public:
  DepthGuard(const std::string& where, int first_line) : where_(where), line_(first_line) {}
  void feed(char c) {
    if (done_) return;
    if (in_string_) {
      if (escape_)
        escape_ = false;
      else if (c == '\\')
        escape_ = true;
      else if (c == '"')
        in_string_ = false;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      if (++depth_ > kMaxJsonDepth) fail();
    } else if ((c == '}' || c == ']') && depth_ > 0) {
      done_ = --depth_ == 0;  // the first value ends here
    } else if (c == '\n' && line_ > 0) {
      ++line_;
    }
  }

 private:
  [[noreturn]] void fail() const {
    std::string at = where_.empty() ? "" : where_ + ": ";
    if (line_ > 0) at += "line " + std::to_string(line_) + ": ";
    throw InputError(at + "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  const std::string& where_;
  int line_;
  int depth_ = 0;
  bool in_string_ = false, escape_ = false, done_ = false;
};

/// An input iterator over a stream that feeds each byte it passes to a DepthGuard, so that a
/// streamed parse (run.json without its plan) is guarded without holding the text.
struct GuardedIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;
  std::istreambuf_iterator<char> it;
  DepthGuard* guard = nullptr;
  char operator*() const { return *it; }
  GuardedIterator& operator++() {
    guard->feed(*it);
    ++it;
    return *this;
  }
  bool operator==(const GuardedIterator& o) const { return it == o.it; }
  bool operator!=(const GuardedIterator& o) const { return it != o.it; }
};

std::string by(const std::string& referenced_by) {
  return referenced_by.empty() ? "" : " (" + referenced_by + ")";
}

}  // namespace

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": not a regular file");
}

std::string read_regular_file(const std::string& path, size_t max_bytes,
                              const std::string& referenced_by) {
  auto error = [&](const std::string& why) {
    return InputError(path + ": " + why + by(referenced_by));
  };
  auto errno_text = [] { return std::string(" (") + std::strerror(errno) + ")"; };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw error("cannot open" + errno_text());
  if (!S_ISREG(st.st_mode)) throw error("not a regular file");
  // O_NONBLOCK: the file may have become a FIFO since the stat; opening that must not block.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw error("cannot open" + errno_text());
  std::string out;
  try {
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw error("not a regular file");
    const std::string too_large = "larger than " + std::to_string(max_bytes) + " bytes";
    if (static_cast<uint64_t>(st.st_size) > max_bytes) throw error(too_large);
    // Read at most limit + 1 bytes: a file that grows past the limit while read is refused too.
    const size_t limit = std::min(max_bytes, SIZE_MAX - 1);
    out.resize(std::min(static_cast<size_t>(st.st_size), limit) + 1);
    size_t got = 0;
    for (;;) {
      if (got == out.size()) {
        if (got > limit) throw error(too_large);
        out.resize(out.size() > limit / 2 ? limit + 1 : out.size() * 2 + 1);
      }
      ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw error("read error" + errno_text());
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return out;
}

void check_json_depth(std::string_view text, const std::string& where, int first_line) {
  DepthGuard guard(where, first_line);
  for (char c : text) guard.feed(c);
}

namespace {

/// Where nlohmann's "number overflow parsing 'TOKEN'" (out_of_range.406, which names no place)
/// stands in `text`: "line L, column C: number TOKEN is out of range (beyond a double)" for the
/// first number outside a string spelled TOKEN; "" when `what` is not that error or it is not
/// found.
std::string overflow_error(std::string_view text, std::string_view what, int first_line) {
  static constexpr std::string_view kHead = "number overflow parsing '";
  const size_t a = what.find(kHead), b = what.rfind('\'');
  if (a == std::string_view::npos || b <= a + kHead.size()) return "";
  const std::string_view token = what.substr(a + kHead.size(), b - a - kHead.size());
  auto in_number = [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' ||
           c == 'e' || c == 'E';
  };
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = i;
      while (end < text.size() && in_number(text[end])) ++end;
      if (text.substr(i, end - i) == token)
        return text_position(text, i, first_line) + ": number " + std::string(token) +
               " is out of range (beyond a double)";
      i = end - 1;
    }
  }
  return "";
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& where, int first_line) {
  check_json_depth(text, where, first_line);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // Bytes that are not UTF-8 are named by line, column and value, not quoted raw.
    std::string what = utf8_error(text, first_line);
    // nlohmann 3.11 says "parse error at line L, column C: ..."; a number overflow names no place
    if (what.empty()) what = overflow_error(text, e.what(), first_line);
    if (what.empty()) what = error_text(e.what());
    throw InputError(where.empty() ? what : where + ": " + what);
  }
}

json read_json_file(const std::string& path, size_t max_bytes, const std::string& referenced_by) {
  const std::string text = read_regular_file(path, max_bytes, referenced_by);
  try {
    return parse_json_text(text, path);
  } catch (const InputError& e) {
    if (referenced_by.empty()) throw;
    throw InputError(e.what() + by(referenced_by));
  }
}

namespace {
/// Writes `text` to `tmp` and fsyncs it; on failure unlinks it and throws naming it.
void write_synced(const std::string& tmp, const std::string& text) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(tmp + ": open: " + std::strerror(errno));
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(tmp + ": write: " + std::strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(tmp + ": fsync/close: " + std::strerror(err));
  }
}
}  // namespace

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string suffix = ".tmp." + std::to_string(getpid());
  size_t written = 0;
  try {
    for (; written < files.size(); ++written)
      write_synced(files[written].first + suffix, files[written].second);
  } catch (...) {
    for (size_t i = 0; i < written; ++i) ::unlink((files[i].first + suffix).c_str());
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string tmp = files[i].first + suffix;
    if (::rename(tmp.c_str(), files[i].first.c_str()) != 0) {
      int err = errno;
      for (size_t j = i; j < files.size(); ++j) ::unlink((files[j].first + suffix).c_str());
      throw std::runtime_error(files[i].first + ": rename: " + std::strerror(err));
    }
  }
}

void write_file_atomic(const std::string& path, const std::string& text) {
  write_files_atomic({{path, text}});
}

json parse_json_stream(std::istream& in, const std::string& where,
                       const json::parser_callback_t& keep) {
  DepthGuard guard(where, 1);
  GuardedIterator first{std::istreambuf_iterator<char>(in), &guard}, last{{}, &guard};
  return json::parse(first, last, keep);
}

}  // namespace clusterbench
