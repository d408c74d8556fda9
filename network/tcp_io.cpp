// TCP pair traffic (tcp_io.hpp).
#include "network/tcp_io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "core/api/error.hpp"
#include "core/api/tcp.hpp"

namespace clusterbench::network {

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
