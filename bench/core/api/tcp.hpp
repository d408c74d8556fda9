// TCP helpers shared by the progress channel (core/progress.cpp: "where are you?" between ranks,
// beside MPI), network.p2p's rails (traffic over one NIC, sockets bound to its address) and
// network.tuning's two-node A/B transfer. No MPI here: the callers exchange addresses.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace clusterbench::tcp {

/// This node's IPv4 addresses (dotted quads) on interfaces that are up, loopback excluded;
/// with `ifname`, only that interface's (empty when it has none or is down).
std::vector<std::string> ipv4_addresses(const std::string& ifname = "");

/// Connects to addr:port within `ms` milliseconds, first binding the local address `from` when
/// it is not empty (traffic then leaves through that address's interface). Returns a blocking
/// socket, or -1 with `err` set.
int connect_within(const std::string& addr, int port, int ms, std::string& err,
                   const std::string& from = "");

/// A listening TCP socket on `addr` (empty: every address), ephemeral port written to `port`.
/// Throws SystemError (core/api/error.hpp) when a call fails.
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

/// Where a peer listens: its IPv4 addresses, tried in order, and its port.
struct Endpoint {
  std::vector<std::string> addrs;
  int port = 0;
};

/// Sends `requests[i]` to `peers[i]` (skipped when empty), each over a new connection, up to
/// `window` at once, and reads each reply up to its first '\n'. An address that refuses, does not
/// connect within `connect_ms`, or closes without a reply (another process: the peer checks the
/// request) is given up for the peer's next one. Returns the reply lines without the '\n'; "" for
/// a peer that gave none within `seconds` in all (a stopped process accepts but never answers).
std::vector<std::string> request_all(const std::vector<Endpoint>& peers,
                                     const std::vector<std::string>& requests, double seconds,
                                     int connect_ms = 250, size_t window = 256);

}  // namespace clusterbench::tcp
