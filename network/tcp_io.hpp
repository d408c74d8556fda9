// TCP traffic for network.p2p's rails (sockets bound to one NIC's address) and network.tuning's
// two-node A/B transfer; the socket helpers are core/tcp.hpp's. No MPI here.
#pragma once

#include <string>
#include <vector>

#include "core/api/tcp.hpp"

namespace clusterbench::network {

using tcp::accept_within;
using tcp::connect_within;
using tcp::ipv4_addresses;
using tcp::listen_on;
using tcp::recv_all;
using tcp::send_all;
using tcp::tune_socket;

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
