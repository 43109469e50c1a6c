// matmul_classic.cu: classic shared-memory tiled SGEMM C = A * B, templated on
// BLOCK_SIZE (16 and 32). The tiled loop has two induction variables (a, b) and
// the compute phase reads the tiles through the AS/BS macros in an unrolled loop.
#include <cuda/pipeline>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda.h>
// tilepipe's runtime for tensor and bulk copies: compile with -I<the folder that
// `tilepipe --print-runtime-dir` prints>, or rewrite with --runtime=inline.
#include <tilepipe/runtime.cuh>
static_assert(TILEPIPE_RUNTIME_VERSION == 1,
              "rewritten by tilepipe 0.1.0 for tilepipe/runtime.cuh version 1, but the one included is "
              "version " TILEPIPE_RUNTIME_VERSION_STRING);

#line 4
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cstdint>
#include <algorithm>

#define CK(call)                                                            \
  do {                                                                      \
    cudaError_t ck_err_ = (call);                                           \
    if (ck_err_ != cudaSuccess) {                                           \
      fprintf(stderr, "%s:%d: CUDA error: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(ck_err_), #call);                          \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

// Deterministic xorshift64* generator, seeded from (seed, case number).
struct Rng {
  uint64_t s;
  Rng(uint64_t seed, uint64_t caseNo) {
    s = ((seed + 0x9E3779B97F4A7C15ULL) * 0xBF58476D1CE4E5B9ULL) ^
        ((caseNo + 1) * 0x94D049BB133111EBULL);
    if (s == 0) s = 0x2545F4914F6CDD1DULL;
    for (int i = 0; i < 4; ++i) next();
  }
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  // Uniform in [-1, 1).
  float uniform() { return (float)(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }
  double uniformd() { return (double)(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0; }
  // Uniform integer in [lo, hi].
  int range(int lo, int hi) { return lo + (int)(next() % (uint64_t)(hi - lo + 1)); }
};

template <typename F = float>
static std::vector<F> randomFloats(size_t n, Rng& r) {
  std::vector<F> v(n);
  size_t i = 0;
  for (; i + 1 < n; i += 2) {  // two 24-bit values per draw
    const uint64_t x = r.next();
    v[i] = (F)(x >> 40) * (F)(2.0f / 16777216.0f) - (F)1.0f;
    v[i + 1] = (F)((x >> 16) & 0xFFFFFFu) * (F)(2.0f / 16777216.0f) - (F)1.0f;
  }
  if (i < n) v[i] = (F)r.uniform();
  return v;
}

template <typename T>
static T* toDevice(const std::vector<T>& h) {
  T* d = nullptr;
  CK(cudaMalloc(&d, std::max<size_t>(h.size(), 1) * sizeof(T)));
  if (!h.empty()) CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// Allocates an output buffer of n elements and poisons it with 0xFF bytes.
template <typename T>
static T* poisonedOutput(size_t n) {
  T* d = nullptr;
  const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
  CK(cudaMalloc(&d, bytes));
  CK(cudaMemset(d, 0xFF, bytes));
  return d;
}

template <typename T>
static void writeOutput(FILE* f, const T* d, size_t n) {
  if (n == 0) return;
  std::vector<T> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  if (fwrite(h.data(), sizeof(T), n, f) != n) {
    fprintf(stderr, "%s:%d: short write to output file\n", __FILE__, __LINE__);
    exit(1);
  }
}

static void checkLaunch() {
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}

// 3 warm-up launches, then 20 individually timed launches; prints the median.
template <typename F>
static void timeKernel(F launch) {
  for (int i = 0; i < 3; ++i) launch();
  checkLaunch();
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < 20; ++i) {
    CK(cudaEventRecord(start));
    launch();
    CK(cudaEventRecord(stop));
    CK(cudaEventSynchronize(stop));
    CK(cudaGetLastError());
    float t = 0.0f;
    CK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  printf("time_ms=%.4f\n", 0.5 * (ms[9] + ms[10]));
  CK(cudaEventDestroy(start));
  CK(cudaEventDestroy(stop));
}

static FILE* openOutput(int argc, char** argv, uint64_t* seed) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <output.bin> [seed]\n", argv[0]);
    exit(2);
  }
  FILE* f = fopen(argv[1], "wb");
  if (!f) {
    perror(argv[1]);
    exit(1);
  }
  *seed = argc > 2 ? strtoull(argv[2], nullptr, 10) : 1;
  return f;
}

static void closeOutput(FILE* f) {
  if (fclose(f) != 0) {
    perror("fclose");
    exit(1);
  }
}

#define AS(i, j) As[i][j]
#define BS(i, j) Bs[i][j]

// A is hA x wA, B is wA x wB, C is hA x wB (all row-major, sizes multiples of BLOCK_SIZE).
template <int BLOCK_SIZE>
__global__ void matmul(float* C, const float* A, const float* B, int wA, int wB, const __grid_constant__ ::tilepipe_rt::TileMap As_tmap = ::tilepipe_rt::TileMap{}, const __grid_constant__ ::tilepipe_rt::TileMap Bs_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  const int bx = blockIdx.x, by = blockIdx.y;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int aBegin = wA * BLOCK_SIZE * by;  // first element of A's row strip
  const int aEnd = aBegin + wA - 1;         // last element of the strip's first row
  const int aStep = BLOCK_SIZE;
  const int bBegin = BLOCK_SIZE * bx;       // first element of B's column strip
  const int bStep = BLOCK_SIZE * wB;
  alignas(128) __shared__ float As_stages[(BLOCK_SIZE == 16 || BLOCK_SIZE == 32) ? 3 : 1][BLOCK_SIZE][BLOCK_SIZE];
  alignas(128) __shared__ float Bs_stages[(BLOCK_SIZE == 16 || BLOCK_SIZE == 32) ? 3 : 1][BLOCK_SIZE][BLOCK_SIZE];
  float Csub = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if constexpr (BLOCK_SIZE == 16 || BLOCK_SIZE == 32) { // the instantiations tilepipe analysed
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, launched with tensor maps: one tensor copy (TMA) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int a = aBegin, b = bBegin;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (tilepipe_tma &&
        ::tilepipe_rt::takes(As_tmap, As_stages[0]) &&
        ::tilepipe_rt::takes(Bs_tmap, Bs_stages[0]) &&
        blockDim.y == sizeof(As_stages[0]) / sizeof(As_stages[0][0]) &&
        blockDim.x == sizeof(As_stages[0][0]) / sizeof(As_stages[0][0][0]) &&
        blockDim.y == sizeof(Bs_stages[0]) / sizeof(Bs_stages[0][0]) &&
        blockDim.x == sizeof(Bs_stages[0][0]) / sizeof(Bs_stages[0][0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto a_fetch = a;
      auto b_fetch = b;
      // Tensor copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto a = a_fetch;
        auto b = b_fetch;
        for (int probe = 0; probe < 2 && (a <= aEnd); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)(a + wA * ty + tx));
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(B, (long long)(b + wB * ty + tx));
          }
          a += aStep, b += bStep;
        }
        if (tiles_aligned) {
          for (int s = 0; s < 3; ++s)
            ::tilepipe_rt::init_barrier(stage_barriers[s], 1);
          ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared); // the copy engine sees the barriers
        }
      }
      // Each thread orders its earlier stores to global memory (generic proxy) before the reads of the
      // copy engine (async proxy) that the leader issues after this barrier, so that the copies see what
      // the block wrote before the loop: one fence.proxy.async.global per thread, once per entry. The
      // barrier also stands for the leading barrier of a loop of the rotated form.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_global);
      tensor_copies = __syncthreads_or(leader && tiles_aligned);
      if (tensor_copies) {
        int fetch_stage = 0;
        // In the leader: copies the tile under the fetch cursor into buffer fetch_stage (nothing past the end).
        auto issue_tile = [&]() {
          auto a = a_fetch;
          auto b = b_fetch;
          if (a <= aEnd) {
            { // the copy phase's own scope
              auto &As = As_stages[fetch_stage];
              auto &Bs = Bs_stages[fetch_stage];
              ::tilepipe_rt::copy_tile(As_tmap, As, A, (long long)(a + wA * ty + tx),
                                       stage_barriers[fetch_stage]);
              ::tilepipe_rt::copy_tile(Bs_tmap, Bs, B, (long long)(b + wB * ty + tx),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(As) + sizeof(Bs));
            }
            a += aStep, b += bStep;
            a_fetch = a;
            b_fetch = b;
          }
          fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
        };
        if (leader) // prologue: the copies of the first 2 tiles
          for (int prologue = 0; prologue < 2; ++prologue)
            issue_tile();
        unsigned parities = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage = 0;
        // Mainloop: compute on one tile while the leader's copies of the next ones land.
        for (; a <= aEnd; a += aStep, b += bStep) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &As = As_stages[stage];
          auto &Bs = Bs_stages[stage];
#pragma unroll
          for (int k = 0; k < BLOCK_SIZE; ++k)
            Csub += AS(ty, k) * BS(k, tx);
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
      auto a_fetch = a;
      auto b_fetch = b;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe.producer_acquire();
        auto a = a_fetch;
        auto b = b_fetch;
        if (a <= aEnd) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &As = As_stages[fetch_stage];
            auto &Bs = Bs_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using As_index = decltype(+(a + wA * ty + tx));
            const As_index As_base = (As_index)(a + wA * ty + tx)
                - (As_index)threadIdx.y * (As_index)(wA)
                - (As_index)threadIdx.x;
            if (sizeof(As[0]) % 16 == 0 &&
                blockDim.y == sizeof(As) / sizeof(As[0]) &&
                blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
                (wA) % (16 / sizeof(As[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&A[As_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
                const unsigned row0 = chunk / (sizeof(As[0]) / 16);
                const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
                ::cuda::memcpy_async(&As[row0][col],
                                     &A[As_base + (As_index)row0 * (As_index)(wA) + (As_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&As[ty][tx], &A[a + wA * ty + tx],
                                     ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
            }
            using Bs_index = decltype(+(b + wB * ty + tx));
            const Bs_index Bs_base = (Bs_index)(b + wB * ty + tx)
                - (Bs_index)threadIdx.y * (Bs_index)(wB)
                - (Bs_index)threadIdx.x;
            if (sizeof(Bs[0]) % 16 == 0 &&
                blockDim.y == sizeof(Bs) / sizeof(Bs[0]) &&
                blockDim.x == sizeof(Bs[0]) / sizeof(Bs[0][0]) &&
                (wB) % (16 / sizeof(Bs[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&B[Bs_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&Bs[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk_1 = rank; chunk_1 < sizeof(Bs) / 16; chunk_1 += threads) {
                const unsigned row0_1 = chunk_1 / (sizeof(Bs[0]) / 16);
                const unsigned col_1 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
                ::cuda::memcpy_async(&Bs[row0_1][col_1],
                                     &B[Bs_base + (Bs_index)row0_1 * (Bs_index)(wB) + (Bs_index)col_1],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&Bs[ty][tx], &B[b + wB * ty + tx],
                                     ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
            }
          }
          a += aStep, b += bStep;
          a_fetch = a;
          b_fetch = b;
        }
        pipe.producer_commit();
        fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
      };
      __syncthreads(); // each thread copies chunks that other threads may have written before the loop
      // Prologue: the copies of the first 2 tiles.
      for (int prologue = 0; prologue < 2; ++prologue)
        issue_tile();
      int stage = 0;
      // Mainloop: compute on one tile while the next ones are copied.
      for (; a <= aEnd; a += aStep, b += bStep) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &As = As_stages[stage];
        auto &Bs = Bs_stages[stage];
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k)
          Csub += AS(ty, k) * BS(k, tx);
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    }
  }
  } else
#endif
  { // tilepipe: below compute capability 8.0 and in instantiations tilepipe did not analyse, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
      As[ty][tx] = A[a + wA * ty + tx];
      Bs[ty][tx] = B[b + wB * ty + tx];
      __syncthreads();
#pragma unroll
      for (int k = 0; k < BLOCK_SIZE; ++k)
        Csub += AS(ty, k) * BS(k, tx);
      __syncthreads();
    }
  }
#line 162
  const int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
  C[c + wB * ty + tx] = Csub;
}

// tilepipe: launches matmul<BLOCK_SIZE> with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_matmul 1
template <int BLOCK_SIZE>
static void tilepipe_launch_matmul(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* C, const float* A, const float* B, int wA, int wB) {
  ::tilepipe_rt::TileMap As_tmap = {};
  ::tilepipe_rt::TileMap Bs_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&As_tmap, A, sizeof(float), (long long)(wA), (long long)(BLOCK_SIZE), (long long)(BLOCK_SIZE));
  tma = tma && ::tilepipe_rt::encode(&Bs_tmap, B, sizeof(float), (long long)(wB), (long long)(BLOCK_SIZE), (long long)(BLOCK_SIZE));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_matmul", tma, traced);
  ::matmul<BLOCK_SIZE><<<grid, block, shared_bytes, stream>>>(C, A, B, wA, wB, As_tmap, Bs_tmap, tma);
}
#line 165

template <int BS>
static void runCase(FILE* f, uint64_t seed, int caseNo, int hA, int wA, int wB, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hAm = randomFloats((size_t)hA * wA, rng);
  std::vector<float> hBm = randomFloats((size_t)wA * wB, rng);
  float* dA = toDevice(hAm);
  float* dB = toDevice(hBm);
  const size_t nC = (size_t)hA * wB;
  float* dC = poisonedOutput<float>(nC);
  const dim3 block(BS, BS), grid(wB / BS, hA / BS);
  ::tilepipe_launch_matmul<BS>(grid, block, 0, 0, dC, dA, dB, wA, wB);
  checkLaunch();
  writeOutput(f, dC, nC);
  printf("case %d: matmul<%d> hA=%d wA=%d wB=%d tiles=%d blocks=%u elements=%zu\n", caseNo, BS,
         hA, wA, wB, wA / BS, grid.x * grid.y, nC);
  if (timeIt) timeKernel([&] { ::tilepipe_launch_matmul<BS>(grid, block, 0, 0, dC, dA, dB, wA, wB); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase<16>(f, seed, 0, 32, 16, 48, false);       // 1 tile
  runCase<16>(f, seed, 1, 48, 32, 16, false);       // 2 tiles
  runCase<16>(f, seed, 2, 16, 48, 64, false);       // 3 tiles
  runCase<32>(f, seed, 3, 64, 32, 96, false);       // 1 tile
  runCase<32>(f, seed, 4, 32, 64, 64, false);       // 2 tiles
  runCase<32>(f, seed, 5, 96, 96, 32, false);       // 3 tiles
  runCase<16>(f, seed, 6, 1024, 1024, 2048, false); // 64 tiles, 8192 blocks
  runCase<16>(f, seed, 7, 160, 1600, 224, false);   // 100 tiles, few blocks
  runCase<32>(f, seed, 8, 2048, 2048, 2048, true);  // 64 tiles, 4096 blocks (timed)
  closeOutput(f);
  return 0;
}
