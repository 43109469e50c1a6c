// guarded_tiles.cu: guarded copies in the forms a tensor map zero-fills: a 1-D tile of doubles
// guarded by an unsigned '<=' bound, and a 2-D SGEMM whose guards are if/else statements with
// mirrored comparisons and '<=' bounds.
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

#define W 256
#define T 16

// Block b sums, over numTiles tiles of W elements from X[b * seg], each thread's element of another
// thread's column; elements past X[last] read as zero.
__global__ void segment_sums(double* out, const double* X, unsigned last, unsigned seg, int numTiles, const __grid_constant__ ::tilepipe_rt::TileMap s_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ double s_stages[3][W];
  double acc = 0.0;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, launched with tensor maps: one tensor copy (TMA) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (tilepipe_tma &&
        ::tilepipe_rt::takes(s_tmap, s_stages[0], true) &&
        blockDim.x == sizeof(s_stages[0]) / sizeof(s_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Tensor copies where the first two tiles start on 16 bytes and, for a guarded copy,
      // where the index is the place of its coordinates in the map (so do all, where the indices step
      // evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        ::tilepipe_rt::BoxProbe s_probe;
        for (int probe = 0; probe < 2 && (t < numTiles); ++probe) {
          { // the copy phase's own scope
            const unsigned i = blockIdx.x * seg + t * W + threadIdx.x;
            tiles_aligned = tiles_aligned && s_probe.fits(s_tmap, X, (long long)(i), 0, i);
          }
          ++t;
        }
        if (tiles_aligned) {
          for (int s_1 = 0; s_1 < 3; ++s_1)
            ::tilepipe_rt::init_barrier(stage_barriers[s_1], 1);
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
          auto t = t_fetch;
          if (t < numTiles) {
            { // the copy phase's own scope
              auto &s = s_stages[fetch_stage];
              const unsigned i = blockIdx.x * seg + t * W + threadIdx.x;
              ::tilepipe_rt::copy_box(s_tmap, s, 0, i, stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(s));
            }
            ++t;
            t_fetch = t;
          }
          fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
        };
        if (leader) // prologue: the copies of the first 2 tiles
          for (int prologue = 0; prologue < 2; ++prologue)
            issue_tile();
        unsigned parities = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage = 0;
        // Mainloop: compute on one tile while the leader's copies of the next ones land.
        for (; t < numTiles; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &s = s_stages[stage];
          acc += s[(threadIdx.x * 7u + t) % W] * (double)(t + 1);
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
      auto t_fetch = t;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe.producer_acquire();
        auto t = t_fetch;
        if (t < numTiles) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &s = s_stages[fetch_stage];
            const unsigned i = blockIdx.x * seg + t * W + threadIdx.x;
            if (i <= last)
              ::cuda::memcpy_async(&s[threadIdx.x], &X[i],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
            else
              s[threadIdx.x] = 0.0;
          }
          ++t;
          t_fetch = t;
        }
        pipe.producer_commit();
        fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
      };
      // Prologue: the copies of the first 2 tiles.
      for (int prologue = 0; prologue < 2; ++prologue)
        issue_tile();
      int stage = 0;
      // Mainloop: compute on one tile while the next ones are copied.
      for (; t < numTiles; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &s = s_stages[stage];
        acc += s[(threadIdx.x * 7u + t) % W] * (double)(t + 1);
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      const unsigned i = blockIdx.x * seg + t * W + threadIdx.x;
      s[threadIdx.x] = i <= last ? X[i] : 0.0;
      __syncthreads();
      acc += s[(threadIdx.x * 7u + t) % W] * (double)(t + 1);
      __syncthreads();
    }
  }
#endif
#line 152
  out[blockIdx.x * W + threadIdx.x] = acc;
}

// tilepipe: launches segment_sums with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_segment_sums 1
static void tilepipe_launch_segment_sums(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, double* out, const double* X, unsigned last, unsigned seg, int numTiles) {
  ::tilepipe_rt::TileMap s_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&s_tmap, X, sizeof(double), 0, 0, (long long)(W), 0, (long long)((last) + 1));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_segment_sums", tma, traced);
  ::segment_sums<<<grid, block, shared_bytes, stream>>>(out, X, last, seg, numTiles, s_tmap, tma);
}
#line 154

// C = A * B for arbitrary M, N, K (A is M x K, B is K x N, row-major), the guards written as
// if/else statements, mirrored or with '<=' bounds.
__global__ void gemm_ifelse(float* C, const float* A, const float* B, int M, int N, int K, const __grid_constant__ ::tilepipe_rt::TileMap As_tmap = ::tilepipe_rt::TileMap{}, const __grid_constant__ ::tilepipe_rt::TileMap Bs_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ float As_stages[3][T][T];
  alignas(128) __shared__ float Bs_stages[3][T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
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
        ::tilepipe_rt::takes(As_tmap, As_stages[0], true) &&
        ::tilepipe_rt::takes(Bs_tmap, Bs_stages[0], true) &&
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
      // Tensor copies where the first two tiles start on 16 bytes and, for a guarded copy,
      // where the index is the place of its coordinates in the map (so do all, where the indices step
      // evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto k0 = k0_fetch;
        ::tilepipe_rt::BoxProbe As_probe;
        ::tilepipe_rt::BoxProbe Bs_probe;
        for (int probe = 0; probe < 2 && (k0 < K); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            As_probe.fits(As_tmap, A, (long long)(row * K + k0 + tx), row, k0 + tx);
            tiles_aligned = tiles_aligned &&
                            Bs_probe.fits(Bs_tmap, B, (long long)((k0 + ty) * N + col), k0 + ty, col);
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
              ::tilepipe_rt::copy_box(As_tmap, As, row, k0 + tx, stage_barriers[fetch_stage]);
              ::tilepipe_rt::copy_box(Bs_tmap, Bs, k0 + ty, col, stage_barriers[fetch_stage]);
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
          for (int k = 0; k < T; ++k)
            acc += As[ty][k] * Bs[k][tx];
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
            if (M > row && K > k0 + tx)
              ::cuda::memcpy_async(&As[ty][tx], &A[row * K + k0 + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
            else
              As[ty][tx] = 0.0f;
            if (k0 + ty <= K - 1 && col <= N - 1) {
              ::cuda::memcpy_async(&Bs[ty][tx], &B[(k0 + ty) * N + col],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
            } else {
              Bs[ty][tx] = 0;
            }
          }
          k0 += T;
          k0_fetch = k0;
        }
        pipe.producer_commit();
        fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
      };
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
        for (int k = 0; k < T; ++k)
          acc += As[ty][k] * Bs[k][tx];
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
      if (M > row && K > k0 + tx)
        As[ty][tx] = A[row * K + k0 + tx];
      else
        As[ty][tx] = 0.0f;
      if (k0 + ty <= K - 1 && col <= N - 1) {
        Bs[ty][tx] = B[(k0 + ty) * N + col];
      } else {
        Bs[ty][tx] = 0;
      }
      __syncthreads();
      for (int k = 0; k < T; ++k)
        acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
#endif
#line 179
  if (row < M && col < N) C[row * N + col] = acc;
}

// tilepipe: launches gemm_ifelse with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_gemm_ifelse 1
static void tilepipe_launch_gemm_ifelse(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* C, const float* A, const float* B, int M, int N, int K) {
  ::tilepipe_rt::TileMap As_tmap = {};
  ::tilepipe_rt::TileMap Bs_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&As_tmap, A, sizeof(float), (long long)(K), (long long)(T), (long long)(T), (long long)(M), (long long)(K));
  tma = tma && ::tilepipe_rt::encode(&Bs_tmap, B, sizeof(float), (long long)(N), (long long)(T), (long long)(T), (long long)((K - 1) + 1), (long long)((N - 1) + 1));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_gemm_ifelse", tma, traced);
  ::gemm_ifelse<<<grid, block, shared_bytes, stream>>>(C, A, B, M, N, K, As_tmap, Bs_tmap, tma);
}
#line 181

static void runSums(FILE* f, uint64_t seed, int caseNo, unsigned blocks, unsigned seg, unsigned last,
                    int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<double> hX = randomFloats<double>((size_t)last + 1, rng);
  double* dX = toDevice(hX);
  const size_t nOut = (size_t)blocks * W;
  double* dOut = poisonedOutput<double>(nOut);
  ::tilepipe_launch_segment_sums(blocks, W, 0, 0, dOut, dX, last, seg, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: segment_sums blocks=%u seg=%u last=%u tiles=%d\n", caseNo, blocks, seg, last, numTiles);
  if (timeIt) timeKernel([&] { ::tilepipe_launch_segment_sums(blocks, W, 0, 0, dOut, dX, last, seg, numTiles); });
  CK(cudaFree(dX));
  CK(cudaFree(dOut));
}

static void runGemm(FILE* f, uint64_t seed, int caseNo, int M, int N, int K, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K, rng);
  std::vector<float> hB = randomFloats((size_t)K * N, rng);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  const size_t nC = (size_t)M * N;
  float* dC = poisonedOutput<float>(nC);
  const dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
  ::tilepipe_launch_gemm_ifelse(grid, block, 0, 0, dC, dA, dB, M, N, K);
  checkLaunch();
  writeOutput(f, dC, nC);
  printf("case %d: gemm_ifelse M=%d N=%d K=%d tiles=%d blocks=%u\n", caseNo, M, N, K, (K + T - 1) / T,
         grid.x * grid.y);
  if (timeIt) timeKernel([&] { ::tilepipe_launch_gemm_ifelse(grid, block, 0, 0, dC, dA, dB, M, N, K); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runSums(f, seed, 0, 3, 256, 700, 0, false);              // 0 tiles
  runSums(f, seed, 1, 4, 200, 650, 1, false);              // 1 tile, the last block's partly past X
  runSums(f, seed, 2, 6, 768, 3000, 3, false);             // 3 tiles, blocks past the end read zeros
  runSums(f, seed, 3, 50, 1001, 40000, 5, false);          // segments that start off 16 bytes
  runSums(f, seed, 4, 4096, 16384, 4096u * 16384u - 5000, 64, true);  // 64 tiles x 4096 blocks
  runGemm(f, seed, 5, 37, 52, 0, false);                   // 0 tiles
  runGemm(f, seed, 6, 45, 28, 12, false);                  // 1 partial tile, rows on 16 bytes
  runGemm(f, seed, 7, 50, 41, 35, false);                  // 3 tiles, rows off 16 bytes
  runGemm(f, seed, 8, 1001, 772, 1012, false);             // 64 tiles, ragged edges
  runGemm(f, seed, 9, 2016, 2048, 1028, true);             // 65 tiles x 16128 blocks
  closeOutput(f);
  return 0;
}
