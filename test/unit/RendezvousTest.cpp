// RendezvousTest.cpp — runtime/driver/Rendezvous: rank 0 and its peers as threads on
// 127.0.0.1. The blob arrives bit-exactly at every peer (also when the peers start first);
// every failure (world-size mismatch, duplicate rank, nobody listening, a missing peer, a
// port in use, a foreign or truncated connection on either side) throws a message naming the
// address, the rank, the world size and what failed, within the timeout.
#include "runtime/driver/Rendezvous.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using tgrt::RendezvousError;
using tgrt::RendezvousOptions;
using tgrt::rendezvousBroadcast;

namespace {

using Clock = std::chrono::steady_clock;

/// A TCP port on 127.0.0.1 that nothing listens on right now (bound to port 0, then closed).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  EXPECT_EQ(::bind(fd, (sockaddr*)&a, sizeof a), 0);
  socklen_t l = sizeof a;
  EXPECT_EQ(::getsockname(fd, (sockaddr*)&a, &l), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

RendezvousOptions opts(int port, int rank, int world, double timeout_s) {
  RendezvousOptions o;
  o.addr = "127.0.0.1";
  o.port = port;
  o.rank = rank;
  o.world = world;
  o.timeout_s = timeout_s;
  return o;
}

/// Runs one rank in a thread; the future yields its blob or rethrows its error.
std::future<std::string> start(const RendezvousOptions& o, const std::string& blob = "") {
  return std::async(std::launch::async, [o, blob] { return rendezvousBroadcast(o, blob); });
}

/// The error message of a rank that must fail ("" and a test failure if it succeeded).
std::string errorOf(std::future<std::string>& f) {
  try {
    f.get();
  } catch (const RendezvousError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a RendezvousError: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "the rank succeeded but should have failed";
  return "";
}

/// 128 bytes like an NCCL unique id, every byte value including 0 and 0xff, plus a tail.
std::string idBlob() {
  std::string b;
  for (int i = 0; i < 128; ++i) b.push_back((char)(unsigned char)((i * 37 + 11) & 0xff));
  b[5] = '\0', b[77] = (char)0xff;
  return b;
}

/// A plain TCP client connected to 127.0.0.1:port (retrying for up to 5 s); -1 if none.
int rawConnect(int port) {
  const auto end = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < end) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (::connect(fd, (sockaddr*)&a, sizeof a) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

} // namespace

TEST(Rendezvous, BlobReachesEveryPeerBitExactly) {
  for (int world : {2, 3, 4}) {
    const int port = freePort();
    const std::string blob = idBlob();
    std::vector<std::future<std::string>> peers;
    for (int r = 1; r < world; ++r) peers.push_back(start(opts(port, r, world, 20)));
    // Rank 0 starts after the peers: they must keep retrying their connect.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto root = start(opts(port, 0, world, 20), blob);
    EXPECT_EQ(root.get(), blob) << "world " << world;
    for (int r = 1; r < world; ++r) {
      const std::string got = peers[(size_t)r - 1].get();
      ASSERT_EQ(got.size(), blob.size()) << "rank " << r << " of " << world;
      EXPECT_EQ(got, blob) << "rank " << r << " of " << world;
    }
  }
}

TEST(Rendezvous, RankZeroFirstAndEmptyAndLargeBlobs) {
  for (const std::string& blob : {std::string(), std::string(200000, '\x5a')}) {
    const int port = freePort();
    auto root = start(opts(port, 0, 3, 20), blob);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto p1 = start(opts(port, 1, 3, 20)), p2 = start(opts(port, 2, 3, 20));
    EXPECT_EQ(p2.get(), blob);
    EXPECT_EQ(p1.get(), blob);
    EXPECT_EQ(root.get(), blob);
  }
}

TEST(Rendezvous, WorldOfOneNeedsNoSocket) {
  // Port 0 and no address would be refused with more than one rank.
  RendezvousOptions o = opts(0, 0, 1, 1);
  o.addr.clear();
  EXPECT_EQ(rendezvousBroadcast(o, "abc"), "abc");
}

TEST(Rendezvous, WorldSizeMismatchFailsBothSides) {
  const int port = freePort();
  auto root = start(opts(port, 0, 2, 10), idBlob());
  auto peer = start(opts(port, 1, 3, 10));
  const auto t0 = Clock::now();
  const std::string e0 = errorOf(root), e1 = errorOf(peer);
  EXPECT_LT(secondsSince(t0), 5.0); // refused at once, not at the timeout
  const std::string where = "rendezvous at 127.0.0.1:" + std::to_string(port);
  EXPECT_NE(e0.find(where + ", rank 0 of 2: world-size mismatch: rank 1 (from 127.0.0.1:"),
            std::string::npos) << e0;
  EXPECT_NE(e0.find(") has world size 3, rank 0 has 2"), std::string::npos) << e0;
  EXPECT_NE(e1.find(where + ", rank 1 of 3: rank 0 ended the rendezvous: world-size mismatch"),
            std::string::npos) << e1;
}

TEST(Rendezvous, DuplicateRankFailsEveryone) {
  const int port = freePort();
  auto root = start(opts(port, 0, 3, 10), idBlob());
  auto a = start(opts(port, 1, 3, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200)); // a connects first
  auto b = start(opts(port, 1, 3, 10));
  const auto t0 = Clock::now();
  const std::string e0 = errorOf(root), ea = errorOf(a), eb = errorOf(b);
  EXPECT_LT(secondsSince(t0), 5.0);
  EXPECT_NE(e0.find("rank 0 of 3: duplicate rank 1: connected from 127.0.0.1:"),
            std::string::npos) << e0;
  for (const std::string& e : {ea, eb})
    EXPECT_NE(e.find("rank 1 of 3: rank 0 ended the rendezvous: duplicate rank 1"),
              std::string::npos) << e;
}

TEST(Rendezvous, NobodyListeningTimesOut) {
  const int port = freePort();
  const auto t0 = Clock::now();
  auto peer = start(opts(port, 1, 2, 1.0));
  const std::string e = errorOf(peer);
  const double took = secondsSince(t0);
  EXPECT_GE(took, 0.9) << e; // it retried until the timeout...
  EXPECT_LT(took, 3.0) << e; // ...and not much longer
  EXPECT_NE(e.find("rendezvous at 127.0.0.1:" + std::to_string(port) +
                   ", rank 1 of 2: connect: Connection refused until the timeout of 1 s"),
            std::string::npos) << e;
  EXPECT_NE(e.find("is rank 0 running"), std::string::npos) << e;
}

TEST(Rendezvous, MissingPeerTimesOutOnBothSides) {
  const int port = freePort();
  const auto t0 = Clock::now();
  auto root = start(opts(port, 0, 4, 1.5), idBlob());
  auto p2 = start(opts(port, 2, 4, 10)); // waits longer than rank 0
  const std::string e0 = errorOf(root), e2 = errorOf(p2);
  const double took = secondsSince(t0);
  EXPECT_GE(took, 1.4);
  EXPECT_LT(took, 4.0);
  EXPECT_NE(e0.find("rank 0 of 4: waited 1.5 s (the timeout) for the other ranks: 1 of 3 "
                    "connected; missing ranks 1, 3"),
            std::string::npos) << e0;
  EXPECT_NE(e2.find("rank 2 of 4: rank 0 ended the rendezvous: waited 1.5 s"),
            std::string::npos) << e2;
}

TEST(Rendezvous, PortInUse) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(fd, (sockaddr*)&a, sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t l = sizeof a;
  ASSERT_EQ(::getsockname(fd, (sockaddr*)&a, &l), 0);
  const int port = ntohs(a.sin_port);
  try {
    rendezvousBroadcast(opts(port, 0, 2, 1), "x");
    ADD_FAILURE() << "bound a port in use";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 of 2: cannot listen on port " +
                                         std::to_string(port) + " (all interfaces): bind:"),
              std::string::npos) << e.what();
  }
  ::close(fd);
}

TEST(Rendezvous, ForeignAndTruncatedConnectionsAtRankZero) {
  { // 16 bytes that are not a peer's header
    const int port = freePort();
    auto root = start(opts(port, 0, 2, 5), "x");
    const int fd = rawConnect(port);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, "GET / HTTP/1.0\r\n", 16, 0), 16);
    const std::string e = errorOf(root);
    EXPECT_NE(e.find("is not a tgrt rendezvous peer"), std::string::npos) << e;
    ::close(fd);
  }
  { // 5 header bytes, then the connection closes
    const int port = freePort();
    auto root = start(opts(port, 0, 2, 5), "x");
    const int fd = rawConnect(port);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, "TGRV\0", 5, 0), 5);
    ::close(fd);
    const std::string e = errorOf(root);
    EXPECT_NE(e.find("rank 0 of 2: short read from 127.0.0.1:"), std::string::npos) << e;
    EXPECT_NE(e.find(": 5 of 16 header bytes (the connection was closed)"), std::string::npos)
        << e;
  }
}

TEST(Rendezvous, TruncatedBlobAtPeer) {
  // A fake rank 0: reads the header, announces 100 bytes, sends 10 and closes.
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, (sockaddr*)&a, sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  socklen_t l = sizeof a;
  ASSERT_EQ(::getsockname(lfd, (sockaddr*)&a, &l), 0);
  const int port = ntohs(a.sin_port);
  auto peer = start(opts(port, 1, 2, 5));
  const int c = ::accept(lfd, nullptr, nullptr);
  ASSERT_GE(c, 0);
  unsigned char h[16];
  size_t got = 0;
  while (got < sizeof h) {
    const ssize_t r = ::recv(c, h + got, sizeof h - got, 0);
    ASSERT_GT(r, 0);
    got += (size_t)r;
  }
  EXPECT_EQ(std::string((const char*)h, 4), "TGRV");
  EXPECT_EQ(h[11], 1);  // rank 1 (big-endian)
  EXPECT_EQ(h[15], 2);  // world size 2
  const unsigned char reply[18] = {0, 0, 0, 0, 0, 0, 0, 100, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_EQ(::send(c, reply, sizeof reply, 0), (ssize_t)sizeof reply);
  ::close(c);
  const std::string e = errorOf(peer);
  EXPECT_NE(e.find("rank 1 of 2: short read of rank 0's blob: 10 of 100 bytes (the connection "
                   "was closed)"),
            std::string::npos) << e;
  ::close(lfd);
}

TEST(Rendezvous, BadOptionsAreRefused) {
  auto msg = [](const RendezvousOptions& o) {
    try {
      rendezvousBroadcast(o, "");
    } catch (const RendezvousError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg(opts(1234, 2, 2, 1)).find("rank 2 of 2: the rank is outside [0, 2)"),
            std::string::npos);
  EXPECT_NE(msg(opts(1234, 0, 0, 1)).find("the world size must be >= 1"), std::string::npos);
  EXPECT_NE(msg(opts(70000, 1, 2, 1)).find("the port must be in 1..65535, got 70000"),
            std::string::npos);
  EXPECT_NE(msg(opts(1234, 1, 2, 0)).find("the timeout must be a positive number of seconds"),
            std::string::npos);
  RendezvousOptions o = opts(1234, 1, 2, 1);
  o.addr = "no-such-host.invalid";
  EXPECT_NE(msg(o).find("cannot resolve the address 'no-such-host.invalid'"), std::string::npos)
      << msg(o);
}
