// Rendezvous.cpp — see Rendezvous.h. Blocking logic over non-blocking sockets: every wait is
// a poll() bounded by the one deadline (start + timeout_s) of the exchange.
#include "runtime/driver/Rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace tgrt {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x54475256u; // "TGRV"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kStatusOk = 0, kStatusRefused = 1;
constexpr int kRetryMs = 100; ///< pause between a peer's connect attempts, milliseconds

std::string fmtSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

/// One exchange's context: the message prefix and the deadline.
struct Session {
  const RendezvousOptions& o;
  Clock::time_point deadline;

  [[noreturn]] void fail(const std::string& what) const {
    throw RendezvousError("rendezvous at " + o.addr + ":" + std::to_string(o.port) + ", rank " +
                          std::to_string(o.rank) + " of " + std::to_string(o.world) + ": " +
                          what);
  }
  /// Milliseconds left before the deadline (0 when past it), for poll().
  int msLeft() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            Clock::now());
    return (int)std::max<int64_t>(0, std::min<int64_t>(left.count(), 1 << 30));
  }
  std::string timeoutText() const { return "the timeout of " + fmtSeconds(o.timeout_s) + " s"; }
};

/// Closes a descriptor on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& x) noexcept : fd(x.fd) { x.fd = -1; }
  Fd& operator=(Fd&& x) noexcept {
    if (this != &x) {
      reset();
      fd = x.fd;
      x.fd = -1;
    }
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

void setNonBlocking(int fd) {
  const int fl = fcntl(fd, F_GETFL, 0);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/// Waits until fd has `events` or the deadline passes. Returns false on the deadline.
bool waitFor(const Session& s, int fd, short events) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, s.msLeft());
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) s.fail(std::string("poll: ") + std::strerror(errno));
  }
}

/// Reads exactly n bytes before the deadline. Returns the bytes read (< n on end of stream,
/// a connection error or the deadline); *err says which.
size_t readFull(const Session& s, int fd, void* buf, size_t n, std::string* err) {
  size_t got = 0;
  while (got < n) {
    if (!waitFor(s, fd, POLLIN)) {
      *err = "no data before " + s.timeoutText();
      return got;
    }
    const ssize_t r = ::recv(fd, (char*)buf + got, n - got, 0);
    if (r > 0) got += (size_t)r;
    else if (r == 0) {
      *err = "the connection was closed";
      return got;
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      *err = std::strerror(errno);
      return got;
    }
  }
  return got;
}

/// Writes exactly n bytes before the deadline (no SIGPIPE). Returns "" or what failed.
std::string writeFull(const Session& s, int fd, const void* buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    if (!waitFor(s, fd, POLLOUT)) return "could not send before " + s.timeoutText();
    const ssize_t r = ::send(fd, (const char*)buf + put, n - put, MSG_NOSIGNAL);
    if (r > 0) put += (size_t)r;
    else if (r < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
      return std::strerror(errno);
  }
  return "";
}

void putU32(unsigned char* p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}
uint32_t getU32(const unsigned char* p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/// Sends a reply (status, length, bytes). Returns "" or what failed.
std::string sendReply(const Session& s, int fd, uint32_t status, const std::string& body) {
  unsigned char h[8];
  putU32(h, status);
  putU32(h + 4, (uint32_t)body.size());
  std::string e = writeFull(s, fd, h, sizeof h);
  if (e.empty() && !body.empty()) e = writeFull(s, fd, body.data(), body.size());
  return e;
}

std::string peerName(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

/// Rank 0: accept world-1 peers, check them, then send each the blob.
std::string serve(const Session& s, const std::string& blob) {
  const RendezvousOptions& o = s.o;
  Fd lis(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (lis.fd < 0) s.fail(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(lis.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons((uint16_t)o.port);
  if (::bind(lis.fd, (const sockaddr*)&a, sizeof a) != 0)
    s.fail("cannot listen on port " + std::to_string(o.port) + " (all interfaces): bind: " +
           std::strerror(errno));
  if (::listen(lis.fd, std::max(16, o.world)) != 0)
    s.fail(std::string("listen: ") + std::strerror(errno));
  setNonBlocking(lis.fd);

  std::vector<Fd> peers((size_t)o.world);
  std::vector<std::string> from((size_t)o.world);
  int arrived = 0;
  // Refuses every waiting peer (best effort) and throws `why`.
  auto abort = [&](const std::string& why, int extra_fd) {
    const Session quick{o, Clock::now() + std::chrono::milliseconds(500)};
    if (extra_fd >= 0) sendReply(quick, extra_fd, kStatusRefused, why);
    for (Fd& p : peers)
      if (p.fd >= 0) sendReply(quick, p.fd, kStatusRefused, why);
    s.fail(why);
  };
  while (arrived < o.world - 1) {
    if (!waitFor(s, lis.fd, POLLIN)) {
      std::string missing;
      int listed = 0;
      for (int r = 1; r < o.world; ++r)
        if (peers[(size_t)r].fd < 0 && listed++ < 8)
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      if (listed > 8) missing += ", ...";
      abort("waited " + fmtSeconds(o.timeout_s) + " s (the timeout) for the other ranks: " +
                std::to_string(arrived) + " of " + std::to_string(o.world - 1) +
                " connected; missing rank" + (o.world - 1 - arrived == 1 ? " " : "s ") +
                missing,
            -1);
    }
    sockaddr_in pa{};
    socklen_t pl = sizeof pa;
    Fd c(::accept4(lis.fd, (sockaddr*)&pa, &pl, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (c.fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED)
        continue;
      abort(std::string("accept: ") + std::strerror(errno), -1);
    }
    const std::string who = peerName(pa);
    unsigned char h[16];
    std::string err;
    const size_t got = readFull(s, c.fd, h, sizeof h, &err);
    if (got < sizeof h)
      abort("short read from " + who + ": " + std::to_string(got) + " of " +
                std::to_string(sizeof h) + " header bytes (" + err + ")",
            -1);
    if (getU32(h) != kMagic || getU32(h + 4) != kVersion)
      abort("the connection from " + who + " is not a tgrt rendezvous peer of version " +
                std::to_string(kVersion) + " (another program on this port?)",
            c.fd);
    const uint32_t pr = getU32(h + 8), pw = getU32(h + 12);
    if (pw != (uint32_t)o.world)
      abort("world-size mismatch: rank " + std::to_string(pr) + " (from " + who +
                ") has world size " + std::to_string(pw) + ", rank 0 has " +
                std::to_string(o.world),
            c.fd);
    if (pr < 1 || pr >= (uint32_t)o.world)
      abort("rank " + std::to_string(pr) + " (from " + who + ") is outside [1, " +
                std::to_string(o.world) + ")",
            c.fd);
    if (peers[pr].fd >= 0)
      abort("duplicate rank " + std::to_string(pr) + ": connected from " + from[pr] +
                " and from " + who,
            c.fd);
    peers[pr] = std::move(c);
    from[pr] = who;
    ++arrived;
  }
  for (int r = 1; r < o.world; ++r) {
    const std::string e = sendReply(s, peers[(size_t)r].fd, kStatusOk, blob);
    if (!e.empty())
      s.fail("sending the blob to rank " + std::to_string(r) + " (" + from[(size_t)r] +
             "): " + e);
  }
  return blob;
}

/// Resolves o.addr to an IPv4 address, retrying temporary failures until the deadline.
sockaddr_in resolve(const Session& s) {
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(s.o.addr.c_str(), nullptr, &hints, &res);
    if (rc == 0 && res) {
      sockaddr_in a = *(const sockaddr_in*)res->ai_addr;
      ::freeaddrinfo(res);
      a.sin_port = htons((uint16_t)s.o.port);
      return a;
    }
    if (res) ::freeaddrinfo(res);
    if (rc != EAI_AGAIN || s.msLeft() == 0)
      s.fail("cannot resolve the address '" + s.o.addr + "' (IPv4): " + gai_strerror(rc));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(kRetryMs, s.msLeft())));
  }
}

/// A peer: connect (retrying until the deadline), send rank and world size, receive the blob.
std::string join(const Session& s) {
  const RendezvousOptions& o = s.o;
  const sockaddr_in a = resolve(s);
  std::string last = "no attempt";
  int attempts = 0;
  Fd c;
  for (;;) {
    c = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (c.fd < 0) s.fail(std::string("socket: ") + std::strerror(errno));
    ++attempts;
    int e = 0;
    if (::connect(c.fd, (const sockaddr*)&a, sizeof a) != 0) {
      e = errno;
      if (e == EINPROGRESS || e == EINTR) {
        if (!waitFor(s, c.fd, POLLOUT)) e = ETIMEDOUT;
        else {
          socklen_t l = sizeof e;
          if (getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &e, &l) != 0) e = errno;
        }
      }
    }
    if (e == 0) break;
    last = std::strerror(e);
    const bool retry = e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH ||
                       e == ENETUNREACH || e == ECONNRESET || e == ECONNABORTED ||
                       e == EAGAIN;
    if (!retry) s.fail("connect: " + last);
    if (s.msLeft() == 0)
      s.fail("connect: " + last + " until " + s.timeoutText() + " (" +
             std::to_string(attempts) + " attempts; is rank 0 running and listening there?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(kRetryMs, s.msLeft())));
  }
  const int one = 1;
  setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  unsigned char h[16];
  putU32(h, kMagic);
  putU32(h + 4, kVersion);
  putU32(h + 8, (uint32_t)o.rank);
  putU32(h + 12, (uint32_t)o.world);
  const std::string we = writeFull(s, c.fd, h, sizeof h);
  if (!we.empty()) s.fail("sending this rank's header to rank 0: " + we);
  unsigned char r[8];
  std::string err;
  size_t got = readFull(s, c.fd, r, sizeof r, &err);
  if (got < sizeof r)
    s.fail("short read of rank 0's reply: " + std::to_string(got) + " of " +
           std::to_string(sizeof r) + " header bytes (" + err + ")");
  const uint32_t status = getU32(r), n = getU32(r + 4);
  if (status != kStatusOk && status != kStatusRefused)
    s.fail("rank 0's reply has status " + std::to_string(status) +
           " (another program on this port?)");
  if (n > kRendezvousMaxBlob)
    s.fail("rank 0's reply announces " + std::to_string(n) + " bytes, more than the " +
           std::to_string(kRendezvousMaxBlob) + " accepted (another program on this port?)");
  std::string body(n, '\0');
  got = n ? readFull(s, c.fd, &body[0], n, &err) : 0;
  if (got < n)
    s.fail("short read of rank 0's " + std::string(status == kStatusOk ? "blob" : "reason") +
           ": " + std::to_string(got) + " of " + std::to_string(n) + " bytes (" + err + ")");
  if (status == kStatusRefused) s.fail("rank 0 ended the rendezvous: " + body);
  return body;
}

} // namespace

std::string rendezvousBroadcast(const RendezvousOptions& opt, const std::string& blob) {
  const double t = opt.timeout_s;
  const auto span = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::isfinite(t) ? std::min(t, 1e7) : 0.0));
  const Session s{opt, Clock::now() + span};
  if (opt.world < 1) s.fail("the world size must be >= 1");
  if (opt.rank < 0 || opt.rank >= opt.world)
    s.fail("the rank is outside [0, " + std::to_string(opt.world) + ")");
  if (!(t > 0) || !std::isfinite(t))
    s.fail("the timeout must be a positive number of seconds, got " + fmtSeconds(t));
  if (opt.world == 1) return blob;
  if (opt.port < 1 || opt.port > 65535)
    s.fail("the port must be in 1..65535, got " + std::to_string(opt.port));
  if (opt.addr.empty()) s.fail("no address for rank 0");
  if (opt.rank == 0) {
    if (blob.size() > kRendezvousMaxBlob)
      s.fail("the blob has " + std::to_string(blob.size()) + " bytes, more than " +
             std::to_string(kRendezvousMaxBlob));
    return serve(s, blob);
  }
  return join(s);
}

} // namespace tgrt
