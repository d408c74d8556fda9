// TCP helpers shared by network.p2p's rails (traffic over one NIC, sockets bound to its address)
// and network.tuning's two-node A/B transfer. No MPI here: the callers exchange addresses.
#pragma once

#include <string>
#include <vector>

namespace clusterbench::network {

/// This node's IPv4 addresses (dotted quads) on interfaces that are up, loopback excluded;
/// with `ifname`, only that interface's (empty when it has none or is down).
std::vector<std::string> ipv4_addresses(const std::string& ifname = "");

/// Connects to addr:port within `ms` milliseconds, first binding the local address `from` when
/// it is not empty (traffic then leaves through that address's interface). Returns a blocking
/// socket, or -1 with `err` set.
int connect_within(const std::string& addr, int port, int ms, std::string& err,
                   const std::string& from = "");

/// A listening TCP socket on `addr` (empty: every address), ephemeral port written to `port`.
/// Throws SystemError (core/error.hpp) when a call fails.
int listen_on(const std::string& addr, int& port);

/// One connection accepted on `ls` within `ms` milliseconds; -1 when none came.
int accept_within(int ls, int ms);

/// TCP_NODELAY (small messages go at once) and send/receive timeouts of `seconds`, so that a
/// peer that stops answering fails the call instead of blocking forever.
void tune_socket(int fd, int seconds);

/// Writes / reads exactly `len` bytes. Throws std::runtime_error when the peer closed the
/// connection, SystemError on an error or a timeout (tune_socket).
void send_all(int fd, const char* p, size_t len);
void recv_all(int fd, char* p, size_t len);

/// One pair's traffic over a connected TCP socket, the same three modes as over MPI
/// (docs/p2p.md): `first` is the lower node of the pair. A message is max(bytes, 1) bytes.
struct TcpPairIo {
  int fd;
  bool first;
  std::vector<char>& sbuf;  ///< at least `bytes` bytes
  std::vector<char>& rbuf;
  size_t bytes;

  /// The first node sends n messages, the second reads them and acknowledges with one byte.
  void unidirectional(long long n) const;
  /// Both ends send and receive n messages at once (one poll loop, non-blocking).
  void bidirectional(long long n) const;
  /// Ping-pong; the first node appends half of each round trip (seconds) to `one_way`.
  void latency(long long n, std::vector<double>& one_way) const;
};

}  // namespace clusterbench::network
