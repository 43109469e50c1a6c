// names_in_scope.cu: kernels whose parameters and locals carry the names that the rewritten code
// uses (init, cuda, pipe, stage, barrier, leader, tilepipe_tma, ...), a kernel with a parameter
// named as the kernel itself, and a namespace of the program's own named cuda around another
// kernel. None of them may change what the rewritten code calls: an unqualified `init(&bar, 1)`
// would call the parameter `float init`, `cuda::memcpy_async` inside namespace app would look in
// app::cuda, and a launcher's `weighted_tiles<<<...>>>` would name the float parameter. Both loops
// are rewritten; the output builds for sm_80 and sm_90 (tensor copies on sm_90 for weighted_tiles,
// bulk copies for app::shifted_dots).
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

#line 9
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

#define T 32   // weighted_tiles: blocks of T x T threads, tiles of T x T
#define N 512  // app::shifted_dots: blocks of N threads, tiles of N

__global__ void weighted_tiles(float* out, const float* A, int lda, int numTiles, float init, int stage,
                               int pipe, int tilepipe_tma, float weighted_tiles, const __grid_constant__ ::tilepipe_rt::TileMap tile_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma_1 = false) {
  alignas(128) __shared__ float tile_stages_1[3][T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  // Locals named as the rewrite's own variables.
  float cuda = init;
  int barrier = stage + 1, leader = pipe, s = tilepipe_tma, parities = 1, probe = 2;
  int fetch_stage = 3, issue_tile = 4, prologue = 5, tensor_copies = 6, tiles_aligned = 7;
  int stage_barriers = 8, rank = 9, threads = 10, chunk = 11, t_fetch = 12, tile_stages = 13;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, launched with tensor maps: one tensor copy (TMA) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies_1 = false;
    if (tilepipe_tma_1 &&
        ::tilepipe_rt::takes(tile_tmap, tile_stages_1[0]) &&
        blockDim.y == sizeof(tile_stages_1[0]) / sizeof(tile_stages_1[0][0]) &&
        blockDim.x == sizeof(tile_stages_1[0][0]) / sizeof(tile_stages_1[0][0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers_1[3];
#pragma nv_diagnostic pop
      const bool leader_1 = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch_1 = t;
      // Tensor copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned_1 = true;
      if (leader_1) {
        auto t = t_fetch_1;
        for (int probe_1 = 0; probe_1 < 2 && (t < numTiles); ++probe_1) {
          { // the copy phase's own scope
            tiles_aligned_1 = tiles_aligned_1 &&
                              ::tilepipe_rt::starts_on_16(A, (long long)((blockIdx.y * T + ty) * lda + t * T + tx));
          }
          ++t;
        }
        if (tiles_aligned_1) {
          for (int s_1 = 0; s_1 < 3; ++s_1)
            ::tilepipe_rt::init_barrier(stage_barriers_1[s_1], 1);
          ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared); // the copy engine sees the barriers
        }
      }
      // Each thread orders its earlier stores to global memory (generic proxy) before the reads of the
      // copy engine (async proxy) that the leader issues after this barrier, so that the copies see what
      // the block wrote before the loop: one fence.proxy.async.global per thread, once per entry. The
      // barrier also stands for the leading barrier of a loop of the rotated form.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_global);
      tensor_copies_1 = __syncthreads_or(leader_1 && tiles_aligned_1);
      if (tensor_copies_1) {
        int fetch_stage_1 = 0;
        // In the leader: copies the tile under the fetch cursor into buffer fetch_stage_1 (nothing past the end).
        auto issue_tile_1 = [&]() {
          auto t = t_fetch_1;
          if (t < numTiles) {
            { // the copy phase's own scope
              auto &tile = tile_stages_1[fetch_stage_1];
              ::tilepipe_rt::copy_tile(tile_tmap, tile, A, (long long)((blockIdx.y * T + ty) * lda + t * T + tx),
                                       stage_barriers_1[fetch_stage_1]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers_1[fetch_stage_1], 1, // all the copies' bytes
                                                      sizeof(tile));
            }
            ++t;
            t_fetch_1 = t;
          }
          fetch_stage_1 = fetch_stage_1 + 1 == 3 ? 0 : fetch_stage_1 + 1;
        };
        if (leader_1) // prologue: the copies of the first 2 tiles
          for (int prologue_1 = 0; prologue_1 < 2; ++prologue_1)
            issue_tile_1();
        unsigned parities_1 = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage_1 = 0;
        // Mainloop: compute on one tile while the leader's copies of the next ones land.
        for (; t < numTiles; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers_1[stage_1], parities_1 >> stage_1 & 1u); // the current tile has landed
          parities_1 ^= 1u << stage_1;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader_1)
            issue_tile_1();
          auto &tile = tile_stages_1[stage_1];
          cuda += weighted_tiles * tile[tx][ty] + barrier * tile[ty][(tx + leader + s) % T] - probe * tile[0][tx];
          stage_1 = stage_1 + 1 == 3 ? 0 : stage_1 + 1;
        }
      }
    }
    if (!tensor_copies_1)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe_1 = ::cuda::make_pipeline();
      auto t_fetch_1 = t;
      int fetch_stage_1 = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage_1 (an empty group past the end).
      auto issue_tile_1 = [&]() {
        pipe_1.producer_acquire();
        auto t = t_fetch_1;
        if (t < numTiles) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &tile = tile_stages_1[fetch_stage_1];
            const unsigned rank_1 = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads_1 = blockDim.x * blockDim.y * blockDim.z;
            using tile_index = decltype(+((blockIdx.y * T + ty) * lda + t * T + tx));
            const tile_index tile_base = (tile_index)((blockIdx.y * T + ty) * lda + t * T + tx)
                - (tile_index)threadIdx.y * (tile_index)(lda)
                - (tile_index)threadIdx.x;
            if (sizeof(tile[0]) % 16 == 0 &&
                blockDim.y == sizeof(tile) / sizeof(tile[0]) &&
                blockDim.x == sizeof(tile[0]) / sizeof(tile[0][0]) &&
                (lda) % (16 / sizeof(tile[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&A[tile_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&tile[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk_1 = rank_1; chunk_1 < sizeof(tile) / 16; chunk_1 += threads_1) {
                const unsigned row0 = chunk_1 / (sizeof(tile[0]) / 16);
                const unsigned col = chunk_1 % (sizeof(tile[0]) / 16) * (16 / sizeof(tile[0][0]));
                ::cuda::memcpy_async(&tile[row0][col],
                                     &A[tile_base + (tile_index)row0 * (tile_index)(lda) + (tile_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe_1);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&tile[ty][tx], &A[(blockIdx.y * T + ty) * lda + t * T + tx],
                                     ::cuda::aligned_size_t<sizeof(tile[0][0])>(sizeof(tile[0][0])), pipe_1);
            }
          }
          ++t;
          t_fetch_1 = t;
        }
        pipe_1.producer_commit();
        fetch_stage_1 = fetch_stage_1 + 1 == 3 ? 0 : fetch_stage_1 + 1;
      };
      __syncthreads(); // each thread copies chunks that other threads may have written before the loop
      // Prologue: the copies of the first 2 tiles.
      for (int prologue_1 = 0; prologue_1 < 2; ++prologue_1)
        issue_tile_1();
      int stage_1 = 0;
      // Mainloop: compute on one tile while the next ones are copied.
      for (; t < numTiles; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe_1);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile_1();
        auto &tile = tile_stages_1[stage_1];
        cuda += weighted_tiles * tile[tx][ty] + barrier * tile[ty][(tx + leader + s) % T] - probe * tile[0][tx];
        pipe_1.consumer_release();
        stage_1 = stage_1 + 1 == 3 ? 0 : stage_1 + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe_1);
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &tile = tile_stages_1[0];
    for (int t = 0; t < numTiles; ++t) {
      tile[ty][tx] = A[(blockIdx.y * T + ty) * lda + t * T + tx];
      __syncthreads();
      cuda += weighted_tiles * tile[tx][ty] + barrier * tile[ty][(tx + leader + s) % T] - probe * tile[0][tx];
      __syncthreads();
    }
  }
#endif
#line 160
  const int named = parities + fetch_stage + issue_tile + prologue + tensor_copies + tiles_aligned +
                    stage_barriers + rank + threads + chunk + t_fetch + tile_stages;
  out[(blockIdx.y * T + ty) * T + tx] = cuda + named;
}

// tilepipe: launches weighted_tiles with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_weighted_tiles 1
static void tilepipe_launch_weighted_tiles(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* out, const float* A, int lda, int numTiles, float init, int stage, int pipe, int tilepipe_tma, float weighted_tiles) {
  ::tilepipe_rt::TileMap tile_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&tile_tmap, A, sizeof(float), (long long)(lda), (long long)(T), (long long)(T));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_weighted_tiles", tma, traced);
  ::weighted_tiles<<<grid, block, shared_bytes, stream>>>(out, A, lda, numTiles, init, stage, pipe, tilepipe_tma, weighted_tiles, tile_tmap, tma);
}
#line 164

namespace app {
namespace cuda {  // the program's own helpers: inside app, `cuda::` names this namespace
__device__ inline float scaled(float x, float init) { return x * init; }
}  // namespace cuda

__global__ void shifted_dots(float* out, const float* x, const float* y, int numTiles, float init) {
  alignas(128) __shared__ float xs_stages[3][N];
  float pipe = init;
  const int stage = 1 + blockIdx.x % 7;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, however launched: one bulk copy (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (blockDim.x == sizeof(xs_stages[0]) / sizeof(xs_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < numTiles); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(x, (long long)(t * N + threadIdx.x));
          }
          ++t;
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
          auto t = t_fetch;
          if (t < numTiles) {
            { // the copy phase's own scope
              auto &xs = xs_stages[fetch_stage];
              ::tilepipe_rt::bulk_copy(xs, x, (long long)(t * N + threadIdx.x),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(xs));
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
        int stage_1 = 0;
        // Mainloop: compute on one tile while the leader's copies of the next ones land.
        for (; t < numTiles; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage_1], parities >> stage_1 & 1u); // the current tile has landed
          parities ^= 1u << stage_1;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &xs = xs_stages[stage_1];
          pipe += cuda::scaled(xs[(threadIdx.x + stage) % N], y[(blockIdx.x * numTiles + t) * N + threadIdx.x]);
          stage_1 = stage_1 + 1 == 3 ? 0 : stage_1 + 1;
        }
        __syncthreads(); // the loop's writes to memory are seen by every thread after it
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe_1 = ::cuda::make_pipeline();
      auto t_fetch = t;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe_1.producer_acquire();
        auto t = t_fetch;
        if (t < numTiles) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &xs = xs_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using xs_index = decltype(+(t * N + threadIdx.x));
            const xs_index xs_base = (xs_index)(t * N + threadIdx.x) - (xs_index)threadIdx.x;
            if (sizeof(xs) % 16 == 0 &&
                blockDim.x == sizeof(xs) / sizeof(xs[0]) &&
                reinterpret_cast<unsigned long long>(&x[xs_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&xs[0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(xs) / 16; chunk += threads) {
                const unsigned col = chunk % (sizeof(xs) / 16) * (16 / sizeof(xs[0]));
                ::cuda::memcpy_async(&xs[col],
                                     &x[xs_base + (xs_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe_1);
              }
            } else {
              if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&xs[threadIdx.x], &x[t * N + threadIdx.x],
                                     ::cuda::aligned_size_t<sizeof(xs[0])>(sizeof(xs[0])), pipe_1);
            }
          }
          ++t;
          t_fetch = t;
        }
        pipe_1.producer_commit();
        fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
      };
      __syncthreads(); // each thread copies chunks that other threads may have written before the loop
      // Prologue: the copies of the first 2 tiles.
      for (int prologue = 0; prologue < 2; ++prologue)
        issue_tile();
      int stage_1 = 0;
      // Mainloop: compute on one tile while the next ones are copied.
      for (; t < numTiles; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe_1);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &xs = xs_stages[stage_1];
        pipe += cuda::scaled(xs[(threadIdx.x + stage) % N], y[(blockIdx.x * numTiles + t) * N + threadIdx.x]);
        pipe_1.consumer_release();
        stage_1 = stage_1 + 1 == 3 ? 0 : stage_1 + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe_1);
      __syncthreads(); // the loop's writes to memory are seen by every thread after it
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &xs = xs_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      xs[threadIdx.x] = x[t * N + threadIdx.x];
      __syncthreads();
      pipe += cuda::scaled(xs[(threadIdx.x + stage) % N], y[(blockIdx.x * numTiles + t) * N + threadIdx.x]);
      __syncthreads();
    }
  }
#endif
#line 181
  out[blockIdx.x * N + threadIdx.x] = pipe;
}
}  // namespace app

static void runCase(FILE* f, uint64_t seed, int caseNo, int rowTiles, int blocks, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  const int lda = numTiles * T;
  std::vector<float> hA = randomFloats((size_t)rowTiles * T * lda, rng);
  std::vector<float> hX = randomFloats((size_t)numTiles * N, rng);
  std::vector<float> hY = randomFloats((size_t)blocks * numTiles * N, rng);
  float* dA = toDevice(hA);
  float* dX = toDevice(hX);
  float* dY = toDevice(hY);
  const size_t nOut1 = (size_t)rowTiles * T * T, nOut2 = (size_t)blocks * N;
  float* dOut1 = poisonedOutput<float>(nOut1);
  float* dOut2 = poisonedOutput<float>(nOut2);
  ::tilepipe_launch_weighted_tiles(dim3(1, rowTiles), dim3(T, T), 0, 0, dOut1, dA, lda, numTiles, 0.5f, 2, 3, 4, 1.5f);
  checkLaunch();
  app::shifted_dots<<<blocks, N>>>(dOut2, dX, dY, numTiles, 0.25f);
  checkLaunch();
  writeOutput(f, dOut1, nOut1);
  writeOutput(f, dOut2, nOut2);
  printf("case %d: weighted_tiles rows=%d, app::shifted_dots blocks=%d, tiles=%d\n", caseNo, rowTiles * T,
         blocks, numTiles);
  if (timeIt) {
    timeKernel([&] {
      ::tilepipe_launch_weighted_tiles(dim3(1, rowTiles), dim3(T, T), 0, 0, dOut1, dA, lda, numTiles, 0.5f, 2, 3, 4, 1.5f);
    });
    timeKernel([&] { app::shifted_dots<<<blocks, N>>>(dOut2, dX, dY, numTiles, 0.25f); });
  }
  CK(cudaFree(dA));
  CK(cudaFree(dX));
  CK(cudaFree(dY));
  CK(cudaFree(dOut1));
  CK(cudaFree(dOut2));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 2, 3, 0, false);       // 0 tiles
  runCase(f, seed, 1, 3, 5, 1, false);       // 1 tile
  runCase(f, seed, 2, 2, 7, 2, false);       // 2 tiles
  runCase(f, seed, 3, 5, 9, 3, false);       // 3 tiles
  runCase(f, seed, 4, 512, 2048, 64, true);  // 64 tiles, 512 and 2048 blocks (timed)
  closeOutput(f);
  return 0;
}
