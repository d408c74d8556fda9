// TCP helpers (tcp.hpp).
#include "core/api/tcp.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "core/api/error.hpp"

namespace clusterbench::tcp {

std::vector<std::string> ipv4_addresses(const std::string& ifname) {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  CHECK_SYS(::getifaddrs(&list));
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) continue;
    if (!ifname.empty() && ifname != i->ifa_name) continue;
    char buf[INET_ADDRSTRLEN];
    auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if (::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf)) out.emplace_back(buf);
  }
  ::freeifaddrs(list);
  return out;
}

namespace {

/// addr (dotted quad, or empty for any) and port as a sockaddr_in; false for a bad address.
bool make_addr(const std::string& addr, int port, sockaddr_in& a) {
  a = sockaddr_in{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (addr.empty()) {
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    return true;
  }
  return ::inet_pton(AF_INET, addr.c_str(), &a.sin_addr) == 1;
}

}  // namespace

int connect_within(const std::string& addr, int port, int ms, std::string& err,
                   const std::string& from) {
  sockaddr_in a{}, local{};
  if (!make_addr(addr, port, a) || !make_addr(from, 0, local)) return err = "bad address", -1;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return err = std::strerror(errno), -1;
  if (!from.empty() && ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) < 0) {
    err = "bind to " + from + ": " + std::strerror(errno);
    return ::close(fd), -1;
  }
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (rc < 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, ms);
    int so = 0;
    socklen_t len = sizeof so;
    if (rc == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len) == 0 && so == 0)
      rc = 0;
    else
      err = rc == 0 ? "timed out" : std::strerror(so ? so : errno), rc = -1;
  } else if (rc < 0) {
    err = std::strerror(errno);
  }
  if (rc < 0) return ::close(fd), -1;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

int listen_on(const std::string& addr, int& port) {
  sockaddr_in a{};
  if (!make_addr(addr, 0, a)) throw std::invalid_argument("bad IPv4 address '" + addr + "'");
  int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  CHECK_SYS(ls);
  try {
    CHECK_SYS(::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a));
    CHECK_SYS(::listen(ls, 4));
    socklen_t len = sizeof a;
    CHECK_SYS(::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len));
  } catch (...) {
    ::close(ls);
    throw;
  }
  port = ntohs(a.sin_port);
  return ls;
}

int accept_within(int ls, int ms) {
  pollfd p{ls, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1 ? ::accept(ls, nullptr, nullptr) : -1;
}

void tune_socket(int fd, int seconds) {
  int one = 1;
  CHECK_SYS(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
  timeval tv{seconds, 0};
  CHECK_SYS(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
  CHECK_SYS(::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
}

void send_all(int fd, const char* p, size_t len) {
  while (len > 0) {
    ssize_t r = ::send(fd, p, len, MSG_NOSIGNAL);
    CHECK_SYS(r);
    p += r, len -= static_cast<size_t>(r);
  }
}

void recv_all(int fd, char* p, size_t len) {
  while (len > 0) {
    ssize_t r = ::recv(fd, p, len, 0);
    CHECK_SYS(r);
    if (r == 0) throw std::runtime_error("the peer closed the TCP connection");
    p += r, len -= static_cast<size_t>(r);
  }
}

namespace {

using Clock = std::chrono::steady_clock;

/// One request in flight: its peer, the address tried, the socket and what is left to do.
struct Exchange {
  size_t peer = 0;
  size_t addr = 0;
  int fd = -1;
  enum Phase { connecting, sending, reading } phase = connecting;
  size_t sent = 0;
  std::string in;
  Clock::time_point connect_by;
};

/// Starts a non-blocking connect to the exchange's current address; false when it failed at once.
bool start_connect(Exchange& x, const Endpoint& e, int connect_ms) {
  sockaddr_in a{};
  x.fd = -1;
  if (!make_addr(e.addrs[x.addr], e.port, a)) return false;
  x.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (x.fd < 0) return false;
  int one = 1;
  ::setsockopt(x.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  x.phase = Exchange::connecting, x.sent = 0, x.in.clear();
  x.connect_by = Clock::now() + std::chrono::milliseconds(connect_ms);
  if (::connect(x.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    x.phase = Exchange::sending;
    return true;
  }
  if (errno == EINPROGRESS) return true;
  ::close(x.fd), x.fd = -1;
  return false;
}

/// Advances one exchange after poll() said `revents`. Returns 1 when its reply is complete, -1
/// when this address failed, 0 to go on.
int step(Exchange& x, short revents, const std::string& request) {
  if (x.phase == Exchange::connecting) {
    int so = 0;
    socklen_t len = sizeof so;
    if (::getsockopt(x.fd, SOL_SOCKET, SO_ERROR, &so, &len) < 0 || so != 0) return -1;
    if (!(revents & POLLOUT)) return 0;
    x.phase = Exchange::sending;
  }
  if (x.phase == Exchange::sending) {
    ssize_t r = ::send(x.fd, request.data() + x.sent, request.size() - x.sent, MSG_NOSIGNAL);
    if (r < 0) return errno == EAGAIN ? 0 : -1;
    x.sent += static_cast<size_t>(r);
    if (x.sent == request.size()) x.phase = Exchange::reading;
    return 0;
  }
  char buf[512];
  ssize_t r = ::recv(x.fd, buf, sizeof buf, 0);
  if (r < 0) return errno == EAGAIN ? 0 : -1;
  if (r == 0) return -1;  // closed without a reply: not the peer we meant
  x.in.append(buf, static_cast<size_t>(r));
  auto nl = x.in.find('\n');
  if (nl == std::string::npos) return x.in.size() > (1u << 20) ? -1 : 0;
  x.in.resize(nl);
  return 1;
}

}  // namespace

std::vector<std::string> request_all(const std::vector<Endpoint>& peers,
                                     const std::vector<std::string>& requests, double seconds,
                                     int connect_ms, size_t window) {
  std::vector<std::string> out(peers.size());
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  std::vector<Exchange> active;
  size_t next = 0;
  // Tries x's addresses from its current one on; false when none is left.
  auto launch = [&](Exchange& x) {
    for (; x.addr < peers[x.peer].addrs.size(); ++x.addr)
      if (start_connect(x, peers[x.peer], connect_ms)) return true;
    return false;
  };
  while (Clock::now() < deadline) {
    for (; next < peers.size() && active.size() < window; ++next) {
      if (next >= requests.size() || requests[next].empty()) continue;
      Exchange x;
      x.peer = next;
      if (launch(x)) active.push_back(std::move(x));
    }
    if (active.empty()) break;
    std::vector<pollfd> fds;
    for (const auto& x : active)
      fds.push_back({x.fd, static_cast<short>(x.phase == Exchange::reading ? POLLIN : POLLOUT), 0});
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(left.count(), 0, 20)));
    const auto now = Clock::now();
    std::vector<Exchange> still;
    for (size_t i = 0; i < active.size(); ++i) {
      Exchange& x = active[i];
      int r = fds[i].revents ? step(x, fds[i].revents, requests[x.peer]) : 0;
      if (r == 0 && x.phase == Exchange::connecting && now > x.connect_by) r = -1;
      if (r == 1) out[x.peer] = x.in;
      if (r != 0) ::close(x.fd), x.fd = -1;
      if (r == -1 && (++x.addr, launch(x))) r = 0;
      if (r == 0) still.push_back(std::move(x));
    }
    active.swap(still);
  }
  for (auto& x : active) ::close(x.fd);
  return out;
}

}  // namespace clusterbench::tcp
