// complex_float2.cu: single-precision complex matrix product C = A * B with float2
// (8-byte) tiles, a `k0 += T` induction step and barriers written as
// cg::this_thread_block().sync().
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
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define T 16

// A is M x K, B is K x N, C is M x N; all dimensions multiples of T.
__global__ void cgemm(float2* C, const float2* A, const float2* B, int N, int K, const __grid_constant__ ::tilepipe_rt::TileMap As_tmap = ::tilepipe_rt::TileMap{}, const __grid_constant__ ::tilepipe_rt::TileMap Bs_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ float2 As_stages[3][T][T];
  alignas(128) __shared__ float2 Bs_stages[3][T][T];
  const int row = blockIdx.y * T + threadIdx.y;
  const int col = blockIdx.x * T + threadIdx.x;
  float re = 0.0f, im = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, launched with tensor maps: one tensor copy (TMA) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int k0 = 0;
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
      auto k0_fetch = k0;
      // Tensor copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto k0 = k0_fetch;
        for (int probe = 0; probe < 2 && (k0 < K); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)(row * K + k0 + threadIdx.x));
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(B, (long long)((k0 + threadIdx.y) * N + col));
          }
          k0 += T;
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
          auto k0 = k0_fetch;
          if (k0 < K) {
            { // the copy phase's own scope
              auto &As = As_stages[fetch_stage];
              auto &Bs = Bs_stages[fetch_stage];
              ::tilepipe_rt::copy_tile(As_tmap, As, A, (long long)(row * K + k0 + threadIdx.x),
                                       stage_barriers[fetch_stage]);
              ::tilepipe_rt::copy_tile(Bs_tmap, Bs, B, (long long)((k0 + threadIdx.y) * N + col),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(As) + sizeof(Bs));
            }
            k0 += T;
            k0_fetch = k0;
          }
          fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
        };
        if (leader) // prologue: the copies of the first 2 tiles
          for (int prologue = 0; prologue < 2; ++prologue)
            issue_tile();
        unsigned parities = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage = 0;
        // Mainloop: compute on one tile while the leader's copies of the next ones land.
        for (; k0 < K; k0 += T) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &As = As_stages[stage];
          auto &Bs = Bs_stages[stage];
          for (int k = 0; k < T; ++k) {
            const float2 a = As[threadIdx.y][k];
            const float2 b = Bs[k][threadIdx.x];
            re += a.x * b.x - a.y * b.y;
            im += a.x * b.y + a.y * b.x;
          }
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
      auto k0_fetch = k0;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe.producer_acquire();
        auto k0 = k0_fetch;
        if (k0 < K) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &As = As_stages[fetch_stage];
            auto &Bs = Bs_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using As_index = decltype(+(row * K + k0 + threadIdx.x));
            const As_index As_base = (As_index)(row * K + k0 + threadIdx.x)
                - (As_index)threadIdx.y * (As_index)(K)
                - (As_index)threadIdx.x;
            if (sizeof(As[0]) % 16 == 0 &&
                blockDim.y == sizeof(As) / sizeof(As[0]) &&
                blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
                (K) % (16 / sizeof(As[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&A[As_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
                const unsigned row0 = chunk / (sizeof(As[0]) / 16);
                const unsigned col_1 = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
                ::cuda::memcpy_async(&As[row0][col_1],
                                     &A[As_base + (As_index)row0 * (As_index)(K) + (As_index)col_1],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&As[threadIdx.y][threadIdx.x], &A[row * K + k0 + threadIdx.x],
                                     ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
            }
            using Bs_index = decltype(+((k0 + threadIdx.y) * N + col));
            const Bs_index Bs_base = (Bs_index)((k0 + threadIdx.y) * N + col)
                - (Bs_index)threadIdx.y * (Bs_index)(N)
                - (Bs_index)threadIdx.x;
            if (sizeof(Bs[0]) % 16 == 0 &&
                blockDim.y == sizeof(Bs) / sizeof(Bs[0]) &&
                blockDim.x == sizeof(Bs[0]) / sizeof(Bs[0][0]) &&
                (N) % (16 / sizeof(Bs[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&B[Bs_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&Bs[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk_1 = rank; chunk_1 < sizeof(Bs) / 16; chunk_1 += threads) {
                const unsigned row0_1 = chunk_1 / (sizeof(Bs[0]) / 16);
                const unsigned col_2 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
                ::cuda::memcpy_async(&Bs[row0_1][col_2],
                                     &B[Bs_base + (Bs_index)row0_1 * (Bs_index)(N) + (Bs_index)col_2],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&Bs[threadIdx.y][threadIdx.x], &B[(k0 + threadIdx.y) * N + col],
                                     ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
            }
          }
          k0 += T;
          k0_fetch = k0;
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
      for (; k0 < K; k0 += T) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &As = As_stages[stage];
        auto &Bs = Bs_stages[stage];
        for (int k = 0; k < T; ++k) {
          const float2 a = As[threadIdx.y][k];
          const float2 b = Bs[k][threadIdx.x];
          re += a.x * b.x - a.y * b.y;
          im += a.x * b.y + a.y * b.x;
        }
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (int k0 = 0; k0 < K; k0 += T) {
      As[threadIdx.y][threadIdx.x] = A[row * K + k0 + threadIdx.x];
      Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * N + col];
      cg::this_thread_block().sync();
      for (int k = 0; k < T; ++k) {
        const float2 a = As[threadIdx.y][k];
        const float2 b = Bs[k][threadIdx.x];
        re += a.x * b.x - a.y * b.y;
        im += a.x * b.y + a.y * b.x;
      }
      cg::this_thread_block().sync();
    }
  }
#endif
#line 161
  C[row * N + col] = make_float2(re, im);
}

// tilepipe: launches cgemm with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_cgemm 1
static void tilepipe_launch_cgemm(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float2* C, const float2* A, const float2* B, int N, int K) {
  ::tilepipe_rt::TileMap As_tmap = {};
  ::tilepipe_rt::TileMap Bs_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&As_tmap, A, sizeof(float2), (long long)(K), (long long)(T), (long long)(T));
  tma = tma && ::tilepipe_rt::encode(&Bs_tmap, B, sizeof(float2), (long long)(N), (long long)(T), (long long)(T));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_cgemm", tma, traced);
  ::cgemm<<<grid, block, shared_bytes, stream>>>(C, A, B, N, K, As_tmap, Bs_tmap, tma);
}
#line 163

static std::vector<float2> randomComplex(size_t n, Rng& rng) {
  std::vector<float2> v(n);
  for (auto& z : v) {
    z.x = rng.uniform();
    z.y = rng.uniform();
  }
  return v;
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int M, int N, int K, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float2> hA = randomComplex((size_t)M * K, rng);
  std::vector<float2> hB = randomComplex((size_t)K * N, rng);
  float2* dA = toDevice(hA);
  float2* dB = toDevice(hB);
  const size_t nC = (size_t)M * N;
  float2* dC = poisonedOutput<float2>(nC);
  const dim3 block(T, T), grid(N / T, M / T);
  ::tilepipe_launch_cgemm(grid, block, 0, 0, dC, dA, dB, N, K);
  checkLaunch();
  writeOutput(f, dC, nC);
  printf("case %d: cgemm M=%d N=%d K=%d tiles=%d blocks=%u elements=%zu\n", caseNo, M, N, K, K / T,
         grid.x * grid.y, nC);
  if (timeIt) timeKernel([&] { ::tilepipe_launch_cgemm(grid, block, 0, 0, dC, dA, dB, N, K); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 32, 48, 0, false);          // 0 tiles: C = 0
  runCase(f, seed, 1, 48, 32, 16, false);         // 1 tile
  runCase(f, seed, 2, 16, 80, 32, false);         // 2 tiles
  runCase(f, seed, 3, 64, 16, 48, false);         // 3 tiles
  runCase(f, seed, 4, 1024, 1024, 1024, true);    // 64 tiles, 4096 blocks (timed)
  closeOutput(f);
  return 0;
}
