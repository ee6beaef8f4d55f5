// Comm.cu — data parallelism on the CUDA backend (runtime/tgrt.h "data parallel"): one process
// per GPU, joined by an NCCL communicator (NCCL ships with the CUDA toolkit). The driver
// (runtime/driver/Driver.cpp) creates the unique id in the launching process
// (tgrt_comm_unique_id), passes it to every rank process, and each rank calls
// tgrt_comm_create_nccl, which selects its GPU and joins (ncclCommInitRank).
//
// tgrt_all_reduce_mean is ncclAllReduce with ncclAvg, in place, on the context's stream: the
// calls after it on that stream see the mean. The summation order is NCCL's (fixed for a
// given number of ranks and topology, but not rank order, and not the CPU backend's bits).
// tgrt_all_reduce_mean_host sums float64 values through a small device buffer.
// tgrt_broadcast (ZeRO-1: a parameter range's owner sends its updated values) is
// ncclBroadcast, in place, on the same stream.
//
// ZeRO-2 / ZeRO-3 (tensors sharded evenly, chunks of c elements per rank): tgrt_all_gather_start
// is ncclAllGather when N*c == n (in place when the shard is the rank's own chunk of full), else
// one ncclBroadcast per rank's chunk from that rank, grouped. tgrt_reduce_scatter_mean_start is
// ncclReduceScatter (average) in place in full when N*c == n, else one ncclReduce (average) per
// rank's chunk to that rank, grouped, then a small kernel adds the rank's chunk of the mean into
// its shard (float32, rounded once). Both run like tgrt_all_reduce_mean_start on the
// communicator's stream (after the context's stream so far; visible on the context's stream
// after tgrt_all_reduce_wait), or on the context's stream with TGRT_ALLREDUCE_OVERLAP=0.
// tgrt_all_reduce_sum_f32 is ncclAllReduce (sum), in place, on the context's stream.
//
// Faults: every NCCL error names the collective, the rank, the number of ranks and the op's
// location. A rank that dies leaves the others waiting inside NCCL; the launching process
// (`./train --gpus N`) then ends them (Driver.cpp), so nothing hangs.
#include "runtime/cuda/CudaRuntime.h"
#include "runtime/cuda/Dtype.cuh"
#include "runtime/cuda/Internal.h"
#include "runtime/tgrt.h"

#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

struct tgrt_comm {
  ncclComm_t nccl = nullptr;
  int32_t rank = 0, ranks = 1;
  double* dbuf = nullptr; ///< device scratch of tgrt_all_reduce_mean_host (kHostMax doubles)
  /// tgrt_all_reduce_mean_start, tgrt_all_gather_start, tgrt_reduce_scatter_mean_start: the
  /// stream the overlapped collectives run on, the event it waits for (the context's stream so
  /// far) and the one the wait records; made on first use. `pending`: a start of any kind since
  /// the last tgrt_all_reduce_wait.
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr, done = nullptr;
  bool pending = false;
  int32_t device = 0;
  /// Free device memory on this rank's GPU just before ncclCommInitRank (cudaMemGetInfo,
  /// bytes; 0 when it could not be read) and what NCCL took in it (-1: not read).
  long long freeBeforeInit = 0, initBytes = -1;
};

namespace {
constexpr int64_t kHostMax = 64;
std::mutex gMu;
std::unordered_map<const tgrt_ctx*, tgrt_comm*> gAttached; ///< tgrt_set_comm

tgrt_comm* attached(const tgrt_ctx* ctx) {
  std::lock_guard<std::mutex> lock(gMu);
  auto it = gAttached.find(ctx);
  return it == gAttached.end() ? nullptr : it->second;
}

tgrt_cuda::Context* C(tgrt_ctx* ctx) { return reinterpret_cast<tgrt_cuda::Context*>(ctx); }

/// tgrt_all_reduce_mean's and tgrt_broadcast's element types (`what` names the collective in
/// the error).
ncclDataType_t ncclType(int32_t dt, const char* loc, const char* what) {
  switch (dt) {
  case TGRT_F32: return ncclFloat32;
  case TGRT_BF16: return ncclBfloat16;
  case TGRT_F16: return ncclFloat16;
  default: tgrt_cuda::fail(loc, "%s: unknown dtype %d", what, (int)dt);
  }
  return ncclFloat32; // not reached: fail exits
}

void checkNccl(ncclResult_t r, const tgrt_comm* c, const char* loc, const char* what) {
  if (r == ncclSuccess) return;
  tgrt_cuda::fail(loc, "%s: NCCL error '%s' (rank %d of %d)%s%s", what, ncclGetErrorString(r),
                  (int)c->rank, (int)c->ranks, ncclGetLastError(c->nccl) ? ": " : "",
                  ncclGetLastError(c->nccl) ? ncclGetLastError(c->nccl) : "");
}

/// TGRT_ALLREDUCE_OVERLAP (a measurement switch; read once): true unless it is "0". Off, the
/// "_start" collectives run in order on the context's stream, not overlapped.
bool overlapOn() {
  static const bool on = [] {
    const char* e = std::getenv("TGRT_ALLREDUCE_OVERLAP");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

/// Creates c's own stream and its two events on first use (`what` names the caller).
void ensureCommStream(tgrt_comm* c, const char* loc, const char* what) {
  if (c->stream) return;
  char msg[128];
  std::snprintf(msg, sizeof msg, "%s: cudaStreamCreate", what);
  tgrt_cuda::check(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), loc, msg);
  std::snprintf(msg, sizeof msg, "%s: cudaEventCreate", what);
  tgrt_cuda::check(cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming), loc, msg);
  tgrt_cuda::check(cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming), loc, msg);
}

/// The stream a ZeRO-2/3 "_start" collective issues on: the communicator's own, made to wait
/// for the work issued on the context's stream so far, or (TGRT_ALLREDUCE_OVERLAP=0) the
/// context's stream itself.
cudaStream_t startStream(tgrt_ctx* ctx, tgrt_comm* c, const char* loc, const char* what) {
  if (!overlapOn()) return C(ctx)->stream;
  ensureCommStream(c, loc, what);
  char msg[128];
  std::snprintf(msg, sizeof msg, "%s: cudaEventRecord", what);
  tgrt_cuda::check(cudaEventRecord(c->ready, C(ctx)->stream), loc, msg);
  std::snprintf(msg, sizeof msg, "%s: cudaStreamWaitEvent", what);
  tgrt_cuda::check(cudaStreamWaitEvent(c->stream, c->ready, 0), loc, msg);
  return c->stream;
}

/// After a "_start" collective issued on s: on the communicator's stream, tgrt_all_reduce_wait
/// must make the context's stream wait for it; TGRT_CUDA_SYNC=1 synchronises.
void finishStart(tgrt_ctx* ctx, tgrt_comm* c, cudaStream_t s, const char* loc, const char* what) {
  if (s != C(ctx)->stream) c->pending = true;
  if (C(ctx)->sync_each) tgrt_cuda::check(cudaStreamSynchronize(s), loc, what);
}

/// Fails (naming loc and the collective) unless chunks of c elements on `ranks` ranks cover
/// n elements: c >= ceil(n / ranks).
void checkChunk(const char* loc, const char* what, int64_t n, int64_t c, int32_t ranks) {
  const int64_t need = (n + ranks - 1) / ranks;
  if (c < need)
    tgrt_cuda::fail(loc, "%s: chunk of %lld elements < ceil(%lld / %d ranks) = %lld (the ranks' "
                         "shards do not cover the tensor)",
                    what, (long long)c, (long long)n, (int)ranks, (long long)need);
}

/// n, c >= 0 (else fails naming the collective).
void checkSizes(const char* loc, const char* what, int64_t n, int64_t c) {
  if (n < 0 || c < 0)
    tgrt_cuda::fail(loc, "%s: negative size (n %lld, c %lld)", what, (long long)n, (long long)c);
}

/// shard[i] = round(float(shard[i]) + float(src[i])) for i < n (tgrt_reduce_scatter_mean_start's
/// add of the rank's chunk of the mean into its shard).
template <typename T>
__global__ void add_into_shard_kernel(T* shard, const T* src, int64_t n) {
  using tgrt_cuda::fromF;
  using tgrt_cuda::toF;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    shard[i] = fromF<T>(toF(shard[i]) + toF(src[i]));
}

/// Launches add_into_shard_kernel for dt (f32, bf16, f16; checked by the caller) on stream s.
void addIntoShard(tgrt_ctx* ctx, cudaStream_t s, const char* loc, int32_t dt, void* shard,
                  const void* src, int64_t n) {
  if (n <= 0) return;
  constexpr int kBlock = 256;
  const unsigned grid = tgrt_cuda::gridFor(n, kBlock, 4096);
  switch (dt) {
  case TGRT_F32:
    add_into_shard_kernel<float><<<grid, kBlock, 0, s>>>(static_cast<float*>(shard),
                                                         static_cast<const float*>(src), n);
    break;
  case TGRT_BF16:
    add_into_shard_kernel<tgrt_cuda::bf16_t><<<grid, kBlock, 0, s>>>(
        static_cast<tgrt_cuda::bf16_t*>(shard), static_cast<const tgrt_cuda::bf16_t*>(src), n);
    break;
  default:
    add_into_shard_kernel<tgrt_cuda::f16_t><<<grid, kBlock, 0, s>>>(
        static_cast<tgrt_cuda::f16_t*>(shard), static_cast<const tgrt_cuda::f16_t*>(src), n);
    break;
  }
  tgrt_cuda::check(cudaGetLastError(), loc, "reduce_scatter_mean: add_into_shard_kernel");
  if (C(ctx)->sync_each)
    tgrt_cuda::check(cudaStreamSynchronize(s), loc, "reduce_scatter_mean: add_into_shard_kernel");
}
} // namespace

extern "C" {

tgrt_comm* tgrt_comm_create_local(int32_t ranks) {
  std::fprintf(stderr, "tgrt: the cuda backend runs data parallelism as one process per GPU "
                       "(./train --gpus %d), not as threads\n", (int)ranks);
  return nullptr;
}

int32_t tgrt_comm_unique_id(char* hex, int64_t size) {
  ncclUniqueId id;
  if (!hex || size < 2 * (int64_t)sizeof id.internal + 1) {
    std::fprintf(stderr, "tgrt: comm_unique_id: the buffer needs %d bytes\n",
                 (int)(2 * sizeof id.internal + 1));
    return -1;
  }
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) {
    std::fprintf(stderr, "tgrt: comm_unique_id: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
    return -1;
  }
  for (size_t i = 0; i < sizeof id.internal; ++i)
    std::snprintf(hex + 2 * i, 3, "%02x", (unsigned)(unsigned char)id.internal[i]);
  return 0;
}

tgrt_comm* tgrt_comm_create_nccl(int32_t rank, int32_t ranks, int32_t device,
                                 const char* id_hex) {
  ncclUniqueId id;
  if (ranks < 1 || rank < 0 || rank >= ranks || device < 0) {
    std::fprintf(stderr, "tgrt: comm_create_nccl: rank %d of %d on device %d is out of range\n",
                 (int)rank, (int)ranks, (int)device);
    return nullptr;
  }
  if (!id_hex || std::strlen(id_hex) != 2 * sizeof id.internal) {
    std::fprintf(stderr, "tgrt: comm_create_nccl: the unique id must be %d hex digits\n",
                 (int)(2 * sizeof id.internal));
    return nullptr;
  }
  for (size_t i = 0; i < sizeof id.internal; ++i) {
    unsigned v = 0;
    if (std::sscanf(id_hex + 2 * i, "%2x", &v) != 1) {
      std::fprintf(stderr, "tgrt: comm_create_nccl: the unique id is not hex\n");
      return nullptr;
    }
    id.internal[i] = (char)v;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device >= count) {
    std::fprintf(stderr, "tgrt: comm_create_nccl: rank %d wants CUDA device %d, but %d "
                         "device(s) are visible\n", (int)rank, (int)device, count);
    return nullptr;
  }
  if (cudaSetDevice(device) != cudaSuccess) {
    std::fprintf(stderr, "tgrt: comm_create_nccl: cudaSetDevice(%d) failed\n", (int)device);
    return nullptr;
  }
  auto* c = new tgrt_comm();
  c->rank = rank;
  c->ranks = ranks;
  c->device = device;
  // NCCL's own device memory (connection buffers, its device-side state) is outside tgc's
  // plan; tgc reserves it (tgc plan: "NCCL reserve", docs/distributed.md). Measured here
  // around the initialisation, and at the end around ncclCommDestroy (what it held by then,
  // buffers connected at the first collectives included).
  size_t freeBefore = 0, freeAfter = 0, total = 0;
  const bool readBefore = cudaFree(nullptr) == cudaSuccess &&
                          cudaMemGetInfo(&freeBefore, &total) == cudaSuccess;
  const ncclResult_t r = ncclCommInitRank(&c->nccl, ranks, id, rank);
  if (r != ncclSuccess) {
    std::fprintf(stderr, "tgrt: comm_create_nccl: ncclCommInitRank (rank %d of %d): %s\n",
                 (int)rank, (int)ranks, ncclGetErrorString(r));
    delete c;
    return nullptr;
  }
  if (readBefore) c->freeBeforeInit = (long long)freeBefore;
  if (readBefore && cudaMemGetInfo(&freeAfter, &total) == cudaSuccess) {
    c->initBytes = (long long)freeBefore - (long long)freeAfter;
    int version = 0;
    ncclGetVersion(&version);
    std::fprintf(stderr,
                 "tgrt: cuda: rank %d of %d: NCCL %d took %lld bytes of device memory at "
                 "initialisation (GPU %d)\n",
                 (int)rank, (int)ranks, version, c->initBytes, (int)device);
  }
  if (cudaMalloc(&c->dbuf, kHostMax * sizeof(double)) != cudaSuccess) {
    std::fprintf(stderr, "tgrt: comm_create_nccl: cudaMalloc of %d bytes failed\n",
                 (int)(kHostMax * sizeof(double)));
    ncclCommDestroy(c->nccl);
    delete c;
    return nullptr;
  }
  return c;
}

void tgrt_comm_destroy(tgrt_comm* comm) {
  if (!comm) return;
  {
    std::lock_guard<std::mutex> lock(gMu);
    for (auto it = gAttached.begin(); it != gAttached.end();)
      it = it->second == comm ? gAttached.erase(it) : std::next(it);
  }
  if (comm->nccl) {
    // What NCCL held at the end of the run: the driver destroys the rank's context (the
    // plan's regions, library handles) before its communicator, so free memory now against
    // free memory before ncclCommInitRank is NCCL's, with the buffers it connected at the
    // first collectives, plus this communicator's stream, events and 512-byte scratch.
    // (Not the change across ncclCommDestroy: buffers the peer has mapped are released
    // only when the peer unmaps them, so that figure depends on which rank ends first.)
    size_t freeNow = 0, total = 0;
    if (comm->freeBeforeInit > 0 && cudaSetDevice(comm->device) == cudaSuccess &&
        cudaDeviceSynchronize() == cudaSuccess &&
        cudaMemGetInfo(&freeNow, &total) == cudaSuccess)
      std::fprintf(stderr,
                   "tgrt: cuda: rank %d of %d: NCCL held %lld bytes of device memory at the "
                   "end of the run (%lld at initialisation)\n",
                   (int)comm->rank, (int)comm->ranks,
                   comm->freeBeforeInit - (long long)freeNow, comm->initBytes);
    ncclCommDestroy(comm->nccl);
  }
  if (comm->dbuf) cudaFree(comm->dbuf);
  if (comm->ready) cudaEventDestroy(comm->ready);
  if (comm->done) cudaEventDestroy(comm->done);
  if (comm->stream) cudaStreamDestroy(comm->stream);
  delete comm;
}

void tgrt_set_comm(tgrt_ctx* ctx, tgrt_comm* comm, int32_t rank, int32_t ranks) {
  tgrt_cuda::checkCtx(C(ctx), "set_comm");
  std::lock_guard<std::mutex> lock(gMu);
  if (!comm) {
    if (ranks > 1)
      tgrt_cuda::fail("set_comm", "%d ranks need a communicator (tgrt_comm_create_nccl)",
                      (int)ranks);
    gAttached.erase(ctx);
    C(ctx)->comm_attached = false;
    return;
  }
  if (rank != comm->rank || ranks != comm->ranks)
    tgrt_cuda::fail("set_comm", "rank %d of %d does not match the communicator's rank %d of %d",
                    (int)rank, (int)ranks, (int)comm->rank, (int)comm->ranks);
  gAttached[ctx] = comm;
  C(ctx)->comm_attached = true; // tgrt_run_graph: collectives synchronise, no capture
}

void tgrt_all_reduce_mean(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf, int64_t n) {
  tgrt_comm* c = attached(ctx);
  if (!c || c->ranks == 1 || n == 0) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_all_reduce_mean", loc);
  const ncclDataType_t t = ncclType(dt, loc, "all_reduce_mean");
  if (n < 0) tgrt_cuda::fail(loc, "all_reduce_mean: negative element count %lld", (long long)n);
  checkNccl(ncclAllReduce(buf, buf, (size_t)n, t, ncclAvg, c->nccl, C(ctx)->stream), c, loc,
            "all_reduce_mean (ncclAllReduce, average)");
  if (C(ctx)->sync_each)
    tgrt_cuda::check(cudaStreamSynchronize(C(ctx)->stream), loc, "all_reduce_mean");
}

void tgrt_all_reduce_mean_start(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf,
                                int64_t n, int32_t grad_accum) {
  tgrt_comm* c = attached(ctx);
  if (!c || c->ranks == 1 || n == 0) return;
  if (C(ctx)->micro_batch != grad_accum - 1) return; // the slots still accumulate
  // TGRT_ALLREDUCE_OVERLAP=0 (a measurement switch): the same buckets, in order on the
  // context's stream, i.e. not overlapped with the backward.
  if (!overlapOn()) {
    tgrt_all_reduce_mean(ctx, loc, dt, buf, n);
    return;
  }
  const ncclDataType_t t = ncclType(dt, loc, "all_reduce_mean_start");
  if (n < 0)
    tgrt_cuda::fail(loc, "all_reduce_mean_start: negative element count %lld", (long long)n);
  ensureCommStream(c, loc, "all_reduce_mean_start");
  tgrt_cuda::check(cudaEventRecord(c->ready, C(ctx)->stream), loc,
                   "all_reduce_mean_start: cudaEventRecord");
  tgrt_cuda::check(cudaStreamWaitEvent(c->stream, c->ready, 0), loc,
                   "all_reduce_mean_start: cudaStreamWaitEvent");
  checkNccl(ncclAllReduce(buf, buf, (size_t)n, t, ncclAvg, c->nccl, c->stream), c, loc,
            "all_reduce_mean_start (ncclAllReduce, average, overlapped)");
  c->pending = true;
  if (C(ctx)->sync_each)
    tgrt_cuda::check(cudaStreamSynchronize(c->stream), loc, "all_reduce_mean_start");
}

void tgrt_all_reduce_wait(tgrt_ctx* ctx, const char* loc) {
  tgrt_comm* c = attached(ctx);
  if (!c || !c->pending) return;
  tgrt_cuda::check(cudaEventRecord(c->done, c->stream), loc, "all_reduce_wait: cudaEventRecord");
  tgrt_cuda::check(cudaStreamWaitEvent(C(ctx)->stream, c->done, 0), loc,
                   "all_reduce_wait: cudaStreamWaitEvent");
  c->pending = false;
}

void tgrt_all_reduce_mean_host(tgrt_ctx* ctx, const char* loc, double* v, int64_t n) {
  tgrt_comm* c = attached(ctx);
  if (!c || c->ranks == 1 || n == 0) return;
  if (n < 0 || n > kHostMax)
    tgrt_cuda::fail(loc, "all_reduce_mean_host: %lld values (at most %lld)", (long long)n,
                    (long long)kHostMax);
  cudaStream_t s = C(ctx)->stream;
  tgrt_cuda::check(cudaMemcpyAsync(c->dbuf, v, (size_t)n * sizeof(double),
                                   cudaMemcpyHostToDevice, s),
                   loc, "all_reduce_mean_host: cudaMemcpyAsync");
  checkNccl(ncclAllReduce(c->dbuf, c->dbuf, (size_t)n, ncclFloat64, ncclSum, c->nccl, s), c, loc,
            "all_reduce_mean_host (ncclAllReduce, sum)");
  tgrt_cuda::check(cudaMemcpyAsync(v, c->dbuf, (size_t)n * sizeof(double),
                                   cudaMemcpyDeviceToHost, s),
                   loc, "all_reduce_mean_host: cudaMemcpyAsync");
  tgrt_cuda::check(cudaStreamSynchronize(s), loc, "all_reduce_mean_host: synchronize");
  for (int64_t i = 0; i < n; ++i) v[i] /= (double)c->ranks;
}

int32_t tgrt_comm_rank(tgrt_ctx* ctx) {
  tgrt_comm* c = attached(ctx);
  return c ? c->rank : 0;
}

void tgrt_broadcast(tgrt_ctx* ctx, const char* loc, int32_t dt, void* buf, int64_t n,
                    int32_t root) {
  tgrt_comm* c = attached(ctx);
  if (!c) return;
  if (root < 0 || root >= c->ranks)
    tgrt_cuda::fail(loc, "broadcast: root %d outside [0, %d)", (int)root, (int)c->ranks);
  if (n < 0) tgrt_cuda::fail(loc, "broadcast: negative element count %lld", (long long)n);
  const ncclDataType_t t = ncclType(dt, loc, "broadcast");
  if (c->ranks == 1 || n == 0) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_broadcast", loc);
  checkNccl(ncclBroadcast(buf, buf, (size_t)n, t, root, c->nccl, C(ctx)->stream), c, loc,
            "broadcast (ncclBroadcast)");
  if (C(ctx)->sync_each)
    tgrt_cuda::check(cudaStreamSynchronize(C(ctx)->stream), loc, "broadcast");
}

void tgrt_all_gather_start(tgrt_ctx* ctx, const char* loc, int32_t dt, const void* shard,
                           void* full, int64_t n, int64_t c) {
  tgrt_cuda::checkCtx(C(ctx), loc);
  checkSizes(loc, "all_gather", n, c);
  const ncclDataType_t t = ncclType(dt, loc, "all_gather");
  const int64_t size = tgrt_dtype_size(dt);
  tgrt_comm* cm = attached(ctx);
  if (cm) checkChunk(loc, "all_gather", n, c, cm->ranks);
  if (!shard) // in place: this rank's chunk of full (tgrt.h)
    shard = static_cast<const char*>(full) + (int64_t)tgrt_comm_rank(ctx) * c * size;
  if (!cm || cm->ranks == 1) { // rank 0's chunk, min(n, c) elements, on the context's stream
    const int64_t count = n < c ? n : c;
    if (count > 0 && shard != full) {
      tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_all_gather_start", loc);
      tgrt_cuda::check(cudaMemcpyAsync(full, shard, (size_t)(count * size),
                                       cudaMemcpyDeviceToDevice, C(ctx)->stream),
                       loc, "all_gather: cudaMemcpyAsync");
      if (C(ctx)->sync_each)
        tgrt_cuda::check(cudaStreamSynchronize(C(ctx)->stream), loc, "all_gather");
    }
    return;
  }
  if (n == 0) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_all_gather_start", loc);
  cudaStream_t s = startStream(ctx, cm, loc, "all_gather");
  if ((int64_t)cm->ranks * c == n) {
    // In place when shard == full + rank*c (NCCL's in-place all-gather).
    checkNccl(ncclAllGather(shard, full, (size_t)c, t, cm->nccl, s), cm, loc,
              "all_gather (ncclAllGather)");
  } else {
    // Uneven: each rank's valid count from that rank (the last chunks are short or empty).
    checkNccl(ncclGroupStart(), cm, loc, "all_gather (ncclGroupStart)");
    for (int32_t q = 0; q < cm->ranks; ++q) {
      int64_t begin = 0, count = 0;
      tgrt_shard_span(n, c, q, &begin, &count);
      if (count == 0) continue;
      void* dst = static_cast<char*>(full) + begin * size;
      checkNccl(ncclBroadcast(shard, dst, (size_t)count, t, q, cm->nccl, s), cm, loc,
                "all_gather (ncclBroadcast of each rank's chunk)");
    }
    checkNccl(ncclGroupEnd(), cm, loc, "all_gather (ncclGroupEnd)");
  }
  finishStart(ctx, cm, s, loc, "all_gather");
}

void tgrt_reduce_scatter_mean_start(tgrt_ctx* ctx, const char* loc, int32_t dt, void* full,
                                    void* shard, int64_t n, int64_t c) {
  tgrt_cuda::checkCtx(C(ctx), loc);
  checkSizes(loc, "reduce_scatter_mean", n, c);
  const ncclDataType_t t = ncclType(dt, loc, "reduce_scatter_mean");
  const int64_t size = tgrt_dtype_size(dt);
  tgrt_comm* cm = attached(ctx);
  if (cm) checkChunk(loc, "reduce_scatter_mean", n, c, cm->ranks);
  if (!cm || cm->ranks == 1) { // shard[i] += full[i], i < min(n, c), on the context's stream
    const int64_t count = n < c ? n : c;
    if (count > 0) {
      tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_reduce_scatter_mean_start", loc);
      addIntoShard(ctx, C(ctx)->stream, loc, dt, shard, full, count);
    }
    return;
  }
  if (n == 0) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_reduce_scatter_mean_start", loc);
  cudaStream_t s = startStream(ctx, cm, loc, "reduce_scatter_mean");
  int64_t begin = 0, count = 0;
  tgrt_shard_span(n, c, cm->rank, &begin, &count);
  char* mine = static_cast<char*>(full) + begin * size; // this rank's chunk of full
  if ((int64_t)cm->ranks * c == n) {
    // In place: the mean of chunk r lands in rank r's own chunk of full.
    checkNccl(ncclReduceScatter(full, mine, (size_t)c, t, ncclAvg, cm->nccl, s), cm, loc,
              "reduce_scatter_mean (ncclReduceScatter, average)");
  } else {
    // Uneven: each rank's valid chunk reduced (average) to that rank, in place.
    checkNccl(ncclGroupStart(), cm, loc, "reduce_scatter_mean (ncclGroupStart)");
    for (int32_t q = 0; q < cm->ranks; ++q) {
      int64_t qb = 0, qc = 0;
      tgrt_shard_span(n, c, q, &qb, &qc);
      if (qc == 0) continue;
      void* chunk = static_cast<char*>(full) + qb * size;
      checkNccl(ncclReduce(chunk, chunk, (size_t)qc, t, ncclAvg, q, cm->nccl, s), cm, loc,
                "reduce_scatter_mean (ncclReduce of each rank's chunk, average)");
    }
    checkNccl(ncclGroupEnd(), cm, loc, "reduce_scatter_mean (ncclGroupEnd)");
  }
  addIntoShard(ctx, s, loc, dt, shard, mine, count);
  finishStart(ctx, cm, s, loc, "reduce_scatter_mean");
}

void tgrt_all_reduce_sum_f32(tgrt_ctx* ctx, const char* loc, float* buf, int64_t n) {
  if (n < 0) tgrt_cuda::fail(loc, "all_reduce_sum_f32: negative element count %lld", (long long)n);
  tgrt_comm* c = attached(ctx);
  if (!c || c->ranks == 1 || n == 0) return;
  tgrt_cuda::ProfileScope prof_(C(ctx), "tgrt_all_reduce_sum_f32", loc);
  checkNccl(ncclAllReduce(buf, buf, (size_t)n, ncclFloat32, ncclSum, c->nccl, C(ctx)->stream), c,
            loc, "all_reduce_sum_f32 (ncclAllReduce, sum)");
  if (C(ctx)->sync_each)
    tgrt_cuda::check(cudaStreamSynchronize(C(ctx)->stream), loc, "all_reduce_sum_f32");
}

} // extern "C"

namespace tgrt_cuda {
bool commRank(const Context* ctx, int32_t* rank, int32_t* ranks) {
  tgrt_comm* c = attached(reinterpret_cast<const tgrt_ctx*>(ctx));
  if (rank) *rank = c ? c->rank : 0;
  if (ranks) *ranks = c ? c->ranks : 1;
  return c != nullptr;
}
} // namespace tgrt_cuda
