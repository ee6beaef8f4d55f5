// nccl_footprint.cu — how much device memory NCCL takes per rank, beside the plan (issue 25).
//
// One process, one thread per GPU, one communicator (ncclCommInitRank per thread, as tgc's
// rank processes do, one GPU each). Per rank, free device memory (cudaMemGetInfo) is read
// after the CUDA context exists, after ncclCommInitRank, and after each of tgc's kinds of
// collective (runtime/cuda/Comm.cu: all-reduce average of bf16 and f32, reduce-scatter
// average, all-gather, broadcast, grouped reduce), each at a small (4 KiB) and a large
// (256 MiB) size, then before and after ncclCommDestroy. Prints one line per rank and stage:
//   rank R stage S: NCCL holds N bytes (N / 2^20 MiB)
// where N = free after the context minus free now. NCCL's settings come from the
// environment (NCCL_RUNTIME_CONNECT, NCCL_MAX_NCHANNELS, NCCL_BUFFSIZE, ...); run it under
// several (scripts/gpu-nccl.sh). Build: nvcc -O2 -o nccl-footprint nccl_footprint.cu -lnccl
// Errors: exits 1 naming the failing call.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {
std::mutex gPrint;

void die(const char* what, const char* detail) {
  std::fprintf(stderr, "nccl-footprint: %s: %s\n", what, detail);
  std::exit(1);
}
#define CUDA(x)                                                                          \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) die(#x, cudaGetErrorString(e_));                              \
  } while (0)
#define NCCL(x)                                                                          \
  do {                                                                                   \
    ncclResult_t r_ = (x);                                                               \
    if (r_ != ncclSuccess) die(#x, ncclGetErrorString(r_));                              \
  } while (0)

size_t freeBytes() {
  size_t f = 0, t = 0;
  CUDA(cudaMemGetInfo(&f, &t));
  return f;
}

void rankMain(int rank, int ranks, ncclUniqueId id) {
  CUDA(cudaSetDevice(rank));
  CUDA(cudaFree(nullptr)); // the context, before the first reading
  const size_t base = freeBytes();
  // The payload buffer and the stream are the program's, not NCCL's: the baseline is read
  // after them.
  const size_t big = 256u << 20;
  void* buf = nullptr;
  CUDA(cudaMalloc(&buf, big));
  CUDA(cudaMemset(buf, 0, big));
  cudaStream_t s;
  CUDA(cudaStreamCreate(&s));
  const size_t base2 = freeBytes();
  const long long payload = (long long)base - (long long)base2;
  {
    std::lock_guard<std::mutex> lock(gPrint);
    std::printf("rank %d payload and stream: %lld bytes (not counted below)\n", rank, payload);
  }
  auto held = [&](const char* stage) {
    CUDA(cudaDeviceSynchronize());
    const long long h = (long long)base2 - (long long)freeBytes();
    std::lock_guard<std::mutex> lock(gPrint);
    std::printf("rank %d stage %-22s NCCL holds %lld bytes (%.1f MiB)\n", rank, stage, h,
                h / 1048576.0);
    std::fflush(stdout);
  };
  ncclComm_t comm;
  NCCL(ncclCommInitRank(&comm, ranks, id, rank));
  held("init");
  for (size_t bytes : {(size_t)4096, big}) {
    const std::string tag = bytes == 4096 ? "4KiB" : "256MiB";
    NCCL(ncclAllReduce(buf, buf, bytes / 2, ncclBfloat16, ncclAvg, comm, s));
    held(("allreduce-bf16-" + tag).c_str());
    NCCL(ncclAllReduce(buf, buf, bytes / 4, ncclFloat32, ncclAvg, comm, s));
    held(("allreduce-f32-" + tag).c_str());
    const size_t chunk = bytes / 4 / ranks;
    NCCL(ncclReduceScatter(buf, (char*)buf + rank * chunk * 4, chunk, ncclFloat32, ncclAvg,
                           comm, s));
    held(("reducescatter-" + tag).c_str());
    NCCL(ncclAllGather((char*)buf + rank * chunk * 4, buf, chunk, ncclFloat32, comm, s));
    held(("allgather-" + tag).c_str());
    NCCL(ncclBroadcast(buf, buf, bytes / 4, ncclFloat32, 0, comm, s));
    held(("broadcast-" + tag).c_str());
    NCCL(ncclGroupStart());
    for (int r = 0; r < ranks; ++r)
      NCCL(ncclReduce((char*)buf + r * chunk * 4, (char*)buf + r * chunk * 4, chunk,
                      ncclFloat32, ncclAvg, r, comm, s));
    NCCL(ncclGroupEnd());
    held(("grouped-reduce-" + tag).c_str());
  }
  CUDA(cudaStreamSynchronize(s));
  held("before-destroy");
  NCCL(ncclCommDestroy(comm));
  held("after-destroy");
  CUDA(cudaStreamDestroy(s));
  CUDA(cudaFree(buf));
}
} // namespace

int main(int argc, char** argv) {
  int ranks = 0;
  CUDA(cudaGetDeviceCount(&ranks));
  if (argc > 1) ranks = std::atoi(argv[1]);
  if (ranks < 1) die("ranks", "need at least one GPU");
  int version = 0;
  NCCL(ncclGetVersion(&version));
  std::printf("NCCL %d, %d ranks; env NCCL_RUNTIME_CONNECT=%s NCCL_MAX_NCHANNELS=%s "
              "NCCL_BUFFSIZE=%s NCCL_NVLS_ENABLE=%s\n",
              version, ranks, std::getenv("NCCL_RUNTIME_CONNECT") ?: "-",
              std::getenv("NCCL_MAX_NCHANNELS") ?: "-", std::getenv("NCCL_BUFFSIZE") ?: "-",
              std::getenv("NCCL_NVLS_ENABLE") ?: "-");
  ncclUniqueId id;
  NCCL(ncclGetUniqueId(&id));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(rankMain, r, ranks, id);
  for (auto& t : threads) t.join();
  return 0;
}
