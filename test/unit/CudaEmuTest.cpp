// CudaEmuTest.cpp — the CPU emulator's (runtime/cuda/emu) thread block clusters, mbarriers
// across blocks, TMA multicast and stmatrix, checked directly: the own GEMM's cluster
// schedules (runtime/cuda/Gemm.cu) rely on them, and tgrt-cuda-emu-check only sees them
// through the GEMM's results.
#include <gtest/gtest.h>

#include "runtime/cuda/emu/CudaEmu.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

/// Launches body over `grid` blocks of `threads` threads in clusters of `clusterX`, with
/// `smem` bytes of dynamic shared memory each; the launch's error.
cudaError_t run(unsigned grid, unsigned threads, size_t smem, unsigned clusterX,
                const std::function<void()>& body) {
  cudaGetLastError();
  emu::launch(dim3(grid), dim3(threads), smem, body, clusterX);
  return cudaGetLastError();
}

TEST(CudaEmu, ClusterBlocksRunTogetherWithTheirOwnSharedMemory) {
  // 4 blocks in clusters of 2: each thread writes its block index into its block's shared
  // memory; after the cluster barrier, thread 0 records what its block holds.
  constexpr unsigned kThreads = 64;
  std::vector<int> seen(4 * kThreads, -1), rank(4, -1), size(4, -1);
  ASSERT_EQ(run(4, kThreads, kThreads * sizeof(int), 2,
                [&] {
                  int* s = static_cast<int*>(emu::dynamicSmem());
                  s[threadIdx.x] = (int)blockIdx.x;
                  __syncthreads();
                  emu::clusterSync();
                  if (threadIdx.x == 0) {
                    rank[blockIdx.x] = (int)emu::clusterCtaRank();
                    size[blockIdx.x] = (int)emu::clusterSize();
                    for (unsigned t = 0; t < kThreads; ++t)
                      seen[blockIdx.x * kThreads + t] = s[t];
                  }
                }),
            cudaSuccess);
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(rank[b], b % 2) << "block " << b;
    EXPECT_EQ(size[b], 2) << "block " << b;
    for (unsigned t = 0; t < kThreads; ++t) ASSERT_EQ(seen[b * kThreads + t], b);
  }
}

TEST(CudaEmu, ClusterBarrierWaitsForTheOtherBlock) {
  // Block 1 writes a flag before the cluster barrier; block 0 reads it after: with the
  // blocks of a cluster run together, the barrier orders them.
  int flag = 0, read = -1;
  ASSERT_EQ(run(2, 32, 0, 2,
                [&] {
                  if (blockIdx.x == 1 && threadIdx.x == 0) flag = 7;
                  emu::clusterSync();
                  if (blockIdx.x == 0 && threadIdx.x == 0) read = flag;
                }),
            cudaSuccess);
  EXPECT_EQ(read, 7);
}

TEST(CudaEmu, GridNotAMultipleOfTheClusterIsRefused) {
  bool ran = false;
  EXPECT_EQ(run(3, 32, 0, 2, [&] { ran = true; }), cudaErrorInvalidValue);
  EXPECT_FALSE(ran);
  EXPECT_EQ(run(2, 32, 0, 9, [&] { ran = true; }), cudaErrorInvalidValue);
  EXPECT_FALSE(ran);
}

TEST(CudaEmu, RemoteArrivalsCompleteTheOtherBlocksBarrier) {
  // Each block's barrier expects 2 arrivals: one from each block of the cluster.
  std::vector<int> done(2, 0);
  ASSERT_EQ(run(2, 32, 64, 2,
                [&] {
                  void* bar = emu::dynamicSmem();
                  if (threadIdx.x == 0) emu::mbarInit(bar, 2);
                  emu::clusterSync();
                  if (threadIdx.x == 0) {
                    emu::mbarArriveCluster(bar, 0);
                    emu::mbarArriveCluster(bar, 1);
                  }
                  while (!emu::mbarDone(bar, 0)) emu::yieldThread();
                  if (threadIdx.x == 0) done[blockIdx.x] = 1;
                }),
            cudaSuccess);
  EXPECT_EQ(done[0], 1);
  EXPECT_EQ(done[1], 1);
}

TEST(CudaEmu, MulticastLandsInEveryBlockOfTheMask) {
  // An 8 x 64 bf16 tensor (values 1..512), one box of all of it, multicast by block 0 into
  // both blocks; each block announces the box's 1024 bytes on its own barrier. Block 0
  // copies before block 1 announces them (block 0's threads run first): block 1's
  // transaction count goes below zero first, which must not complete its phase early.
  std::vector<uint16_t> src(8 * 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (uint16_t)(i + 1);
  emu::TensorMap map;
  std::memset(&map, 0, sizeof map);
  map.base = src.data();
  map.dims[0] = 64;
  map.dims[1] = 8;
  map.rowBytes = 128;
  map.box[0] = 64;
  map.box[1] = 8;
  map.elemBytes = 2;
  map.swizzle128 = 0;
  std::vector<std::vector<uint16_t>> got(2);
  ASSERT_EQ(run(2, 32, 2048, 2,
                [&] {
                  unsigned char* smem = static_cast<unsigned char*>(emu::dynamicSmem());
                  void* bar = smem + 1024;
                  if (threadIdx.x == 0) emu::mbarInit(bar, 1);
                  emu::clusterSync();
                  if (threadIdx.x == 0) {
                    if (blockIdx.x == 0) {
                      emu::mbarArrive(bar, 1024);
                      emu::tmaLoad2dMulticast(smem, &map, 0, 0, bar, 0x3);
                    } else {
                      EXPECT_FALSE(emu::mbarDone(bar, 0)); // the bytes, but no arrival yet
                      emu::mbarArrive(bar, 1024);
                    }
                  }
                  while (!emu::mbarDone(bar, 0)) emu::yieldThread();
                  if (threadIdx.x == 0) {
                    const uint16_t* s = reinterpret_cast<const uint16_t*>(smem);
                    got[blockIdx.x].assign(s, s + 8 * 64);
                  }
                  emu::clusterSync(); // block 0 multicast into block 1: both stay till here
                }),
            cudaSuccess);
  EXPECT_EQ(got[0], src);
  EXPECT_EQ(got[1], src);
}

TEST(CudaEmu, StmatrixWritesWhatLdmatrixReads) {
  // One warp: four 8 x 8 b16 matrices stored with stmatrix at rows 16 bytes apart in a
  // permuted order, read back with ldmatrix: every lane gets its registers back, and the
  // matrix element (row, col) of matrix i is where the fragment layout says.
  std::vector<uint32_t> back(32 * 4, 0);
  std::vector<uint16_t> smemCopy(4 * 8 * 8, 0);
  ASSERT_EQ(run(1, 32, 4 * 8 * 16, 1,
                [&] {
                  uint16_t* s = static_cast<uint16_t*>(emu::dynamicSmem());
                  const int lane = (int)threadIdx.x, g = lane / 4, q = lane % 4;
                  uint32_t r[4];
                  for (int i = 0; i < 4; ++i) // element (g, 2q) = 1000 i + 10 g + 2q
                    r[i] = (uint32_t)(1000 * i + 10 * g + 2 * q) |
                           ((uint32_t)(1000 * i + 10 * g + 2 * q + 1) << 16);
                  const int mi = lane / 8, row = lane % 8;
                  void* addr = s + (8 * (3 - mi) + (7 - row)) * 8; // matrices and rows reversed
                  emu::stmatrix(r, 4, addr);
                  emu::syncwarp();
                  uint32_t l[4];
                  emu::ldmatrix(l, 4, false, addr);
                  for (int i = 0; i < 4; ++i) back[lane * 4 + i] = l[i] ^ r[i];
                  if (lane == 0) std::memcpy(smemCopy.data(), s, smemCopy.size() * 2);
                }),
            cudaSuccess);
  for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], 0u) << "lane " << i / 4;
  for (int i = 0; i < 4; ++i)
    for (int row = 0; row < 8; ++row)
      for (int col = 0; col < 8; ++col)
        ASSERT_EQ(smemCopy[(8 * (3 - i) + (7 - row)) * 8 + col], 1000 * i + 10 * row + col)
            << "matrix " << i << " row " << row << " col " << col;
}

TEST(CudaEmuDeathTest, AClusterWhoseThreadsOnlySpinIsADeadlock) {
  // Block 1 waits on a barrier no one arrives at while block 0 waits at the cluster
  // barrier: no thread can go on.
  EXPECT_EXIT(
      {
        run(2, 32, 64, 2, [] {
          void* bar = emu::dynamicSmem();
          if (threadIdx.x == 0) emu::mbarInit(bar, 1);
          __syncthreads();
          if (blockIdx.x == 1)
            while (!emu::mbarDone(bar, 0)) emu::yieldThread();
          emu::clusterSync();
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "deadlock");
}

} // namespace
