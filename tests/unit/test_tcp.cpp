// core/tcp.hpp: request_all, the progress channel's transport (issue 21): replies in order,
// a refused or wrong address given up for the next one, a silent peer costs the deadline only.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/api/tcp.hpp"

namespace clusterbench {
namespace {

enum class Mode { echo, close_at_once, silent };

/// A server on 127.0.0.1 that serves `n` connections: echo replies "got <request line>\n";
/// close_at_once closes without a reply (another process); silent accepts and never answers.
struct Server {
  int fd = -1, port = 0;
  std::thread thread;
  std::vector<int> held;
  Server(Mode mode, int n, const std::string& addr = "127.0.0.1", int at_port = 0) {
    if (at_port > 0) {  // a chosen port: bind it directly
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(at_port));
      ::inet_pton(AF_INET, addr.c_str(), &a.sin_addr);
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0)
        throw std::runtime_error("cannot listen on " + addr + ":" + std::to_string(at_port));
      port = at_port;
    } else {
      fd = tcp::listen_on(addr, port);
    }
    thread = std::thread([this, mode, n] {
      for (int i = 0; i < n; ++i) {
        int c = tcp::accept_within(fd, 5000);
        if (c < 0) return;
        if (mode == Mode::silent) {
          held.push_back(c);
          continue;
        }
        std::string line;
        char ch = 0;
        while (::recv(c, &ch, 1, 0) == 1 && ch != '\n') line += ch;
        if (mode == Mode::echo) {
          std::string reply = "got " + line + "\n";
          tcp::send_all(c, reply.data(), reply.size());
        }
        ::close(c);
      }
    });
  }
  ~Server() {
    thread.join();
    for (int c : held) ::close(c);
    ::close(fd);
  }
};

/// A port nobody listens on: bound once, then closed.
int free_port() {
  int port = 0;
  int fd = tcp::listen_on("127.0.0.1", port);
  ::close(fd);
  return port;
}

TEST(RequestAll, RepliesInOrderAndEmptyRequestsAreSkipped) {
  Server a(Mode::echo, 1), b(Mode::echo, 1);
  std::vector<tcp::Endpoint> peers = {
      {{"127.0.0.1"}, a.port}, {{"127.0.0.1"}, 1}, {{"127.0.0.1"}, b.port}};
  auto r = tcp::request_all(peers, {"one\n", "", "two\nrest"}, 2.0);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "got one");
  EXPECT_EQ(r[1], "");
  EXPECT_EQ(r[2], "got two");
}

TEST(RequestAll, RefusedAndWrongAddressesGiveWayToTheNextOne) {
  Server wrong(Mode::close_at_once, 1), right(Mode::echo, 2);
  // Refused (nobody listens), then the right server.
  std::vector<tcp::Endpoint> peers = {{{"127.0.0.1", "127.0.0.1"}, 0}};
  peers[0].port = free_port();
  auto r = tcp::request_all(peers, {"x\n"}, 2.0);
  EXPECT_EQ(r[0], "") << "refused on every address";
  // A process that closes without a reply gets no answer; a bad address gives way to a good one.
  std::vector<tcp::Endpoint> two = {{{"127.0.0.1"}, wrong.port}, {{"127.0.0.1"}, right.port}};
  auto q = tcp::request_all(two, {"a\n", "b\n"}, 2.0);
  EXPECT_EQ(q[0], "");
  EXPECT_EQ(q[1], "got b");
  std::vector<tcp::Endpoint> bad_then_good = {{{"999.1.1.1", "127.0.0.1"}, right.port}};
  EXPECT_EQ(tcp::request_all(bad_then_good, {"c\n"}, 2.0)[0], "got c");
  // One peer, two addresses on the same port: the first is another process that closes without
  // a reply, the second the peer.
  Server peer(Mode::echo, 1, "127.0.0.2");
  Server other(Mode::close_at_once, 1, "127.0.0.1", peer.port);
  std::vector<tcp::Endpoint> same = {{{"127.0.0.1", "127.0.0.2"}, peer.port}};
  EXPECT_EQ(tcp::request_all(same, {"d\n"}, 2.0)[0], "got d");
}

TEST(RequestAll, ASilentPeerCostsTheDeadlineAndTheOthersStillAnswer) {
  Server quiet(Mode::silent, 1), fine(Mode::echo, 1);
  std::vector<tcp::Endpoint> peers = {{{"127.0.0.1"}, quiet.port}, {{"127.0.0.1"}, fine.port}};
  auto t0 = std::chrono::steady_clock::now();
  auto r = tcp::request_all(peers, {"p\n", "q\n"}, 0.5);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r[0], "");
  EXPECT_EQ(r[1], "got q");
  EXPECT_GE(took, 0.45);
  EXPECT_LT(took, 1.5);
}

TEST(RequestAll, AWindowSmallerThanThePeersStillReachesEveryOne) {
  std::vector<std::unique_ptr<Server>> servers;
  std::vector<tcp::Endpoint> peers;
  std::vector<std::string> reqs;
  for (int i = 0; i < 12; ++i) {
    servers.push_back(std::make_unique<Server>(Mode::echo, 1));
    peers.push_back({{"127.0.0.1"}, servers.back()->port});
    reqs.push_back("n" + std::to_string(i) + "\n");
  }
  auto r = tcp::request_all(peers, reqs, 5.0, 250, 3);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(r[static_cast<size_t>(i)], "got n" + std::to_string(i));
}

}  // namespace
}  // namespace clusterbench
