// Rendezvous.h — hands one opaque byte string from rank 0 to the other ranks of a job over
// TCP (POSIX sockets, IPv4), for launchers that start every rank themselves (torchrun,
// mpirun): the training executable passes the NCCL unique id through it. Independent of NCCL
// and of the driver.
//
// Protocol (all integers big-endian u32):
//   peer -> rank 0   "TGRV", version (1), rank, world size                      (16 bytes)
//   rank 0 -> peer   status (0 = ok, 1 = refused), length n, n bytes: the blob when ok, the
//                    reason when refused
// Rank 0 listens on the port on all interfaces, accepts world-1 peers, checks each one's
// rank (in [1, world), not seen before) and world size (equal to its own), and only when
// all have arrived sends every peer the blob. A bad peer is refused with the reason, and so
// are the peers already waiting, so every rank fails with a message instead of hanging.
#ifndef TGRT_DRIVER_RENDEZVOUS_H
#define TGRT_DRIVER_RENDEZVOUS_H

#include <stdexcept>
#include <string>

namespace tgrt {

/// A failed rendezvous. what() names the address and port, this rank, the world size and
/// what failed, e.g. "rendezvous at 10.0.0.1:29500, rank 1 of 2: connect: refused for 120 s
/// (is rank 0 running there?)".
struct RendezvousError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RendezvousOptions {
  std::string addr;        ///< rank 0's host name or IPv4 address (peers connect there)
  int port = 0;            ///< TCP port, 1..65535; rank 0 binds it on all interfaces
  int rank = 0;            ///< this process's rank, 0..world-1
  int world = 1;           ///< number of ranks (processes) in the job, >= 1
  double timeout_s = 120;  ///< bound on the whole exchange, seconds (> 0)
};

/// Default of RendezvousOptions::timeout_s: 120 seconds.
constexpr double kRendezvousTimeoutS = 120.0;

/// Largest blob the peers accept, bytes (a sanity bound on the length rank 0 sends).
constexpr size_t kRendezvousMaxBlob = 1u << 20;

/// Exchanges `blob` from rank 0 to every rank and returns it (bit-exact, any bytes,
/// at most kRendezvousMaxBlob). Rank 0 passes the blob and returns it once every peer has
/// been sent it; peers pass anything (ignored) and return rank 0's. Peers retry connecting
/// (every 100 ms) until the timeout, since rank 0 may start later. world == 1 returns blob
/// at once without a socket. Every wait (bind, accept, connect, each read) ends at
/// start + timeout_s; past it, or on any failure (connection refused until the timeout,
/// duplicate rank, world-size mismatch, a short read, a port in use), throws RendezvousError.
std::string rendezvousBroadcast(const RendezvousOptions& opt, const std::string& blob);

} // namespace tgrt

#endif
