// TCP helpers (tcp_io.hpp).
#include "network/tcp_io.hpp"

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

#include "core/error.hpp"

namespace clusterbench::network {

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

void TcpPairIo::unidirectional(long long n) const {
  const size_t len = std::max<size_t>(bytes, 1);
  for (long long i = 0; i < n; ++i) {
    if (first)
      send_all(fd, sbuf.data(), len);
    else
      recv_all(fd, rbuf.data(), len);
  }
  char ack = 1;
  if (first)
    recv_all(fd, &ack, 1);
  else
    send_all(fd, &ack, 1);
}

void TcpPairIo::bidirectional(long long n) const {
  const size_t len = std::max<size_t>(bytes, 1);
  const long long total = n * static_cast<long long>(len);
  long long sent = 0, got = 0;
  int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  struct Restore {
    int fd, flags;
    ~Restore() { ::fcntl(fd, F_SETFL, flags); }
  } restore{fd, flags};
  while (sent < total || got < total) {
    pollfd p{fd, static_cast<short>((got < total ? POLLIN : 0) | (sent < total ? POLLOUT : 0)), 0};
    int rc = ::poll(&p, 1, 60000);
    CHECK_SYS(rc);
    if (rc == 0) throw std::runtime_error("no TCP progress in 60 s (bidirectional)");
    if ((p.revents & POLLOUT) && sent < total) {
      size_t off = static_cast<size_t>(sent % static_cast<long long>(len));
      ssize_t r = ::send(fd, sbuf.data() + off, len - off, MSG_NOSIGNAL);
      if (r < 0 && errno != EAGAIN) CHECK_SYS(r);
      if (r > 0) sent += r;
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && got < total) {
      size_t off = static_cast<size_t>(got % static_cast<long long>(len));
      ssize_t r = ::recv(fd, rbuf.data() + off, len - off, 0);
      if (r == 0) throw std::runtime_error("the peer closed the TCP connection");
      if (r < 0 && errno != EAGAIN) CHECK_SYS(r);
      if (r > 0) got += r;
    }
  }
}

void TcpPairIo::latency(long long n, std::vector<double>& one_way) const {
  const size_t len = std::max<size_t>(bytes, 1);
  for (long long i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (first) {
      send_all(fd, sbuf.data(), len);
      recv_all(fd, rbuf.data(), len);
      double rtt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      one_way.push_back(rtt / 2);
    } else {
      recv_all(fd, rbuf.data(), len);
      send_all(fd, sbuf.data(), len);
    }
  }
}

}  // namespace clusterbench::network
