// mixed_tiles.cu: a row block times a vector, tiled: each trip copies a 32 x 32 tile of A (a tensor
// copy on Hopper, through a map) and 32 elements of x (a bulk copy, no map) into __shared__, and
// each thread mixes elements of other threads' rows and columns.
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


#define T 32

// out[row * T + tx] for row = blockIdx.x * T + ty: over numTiles tiles of A's row block (lda apart)
// and of x, sums products of the tile's elements that other threads loaded.
__global__ void rows_times_vector(float* out, const float* A, const float* x, int lda, int numTiles, const __grid_constant__ ::tilepipe_rt::TileMap As_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ float As_stages[3][T][T];
  alignas(128) __shared__ float xs_stages[3][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.x * T + ty;
  float acc = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, launched with tensor maps: one tensor copy (TMA) or bulk copy
  // (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (tilepipe_tma &&
        ::tilepipe_rt::takes(As_tmap, As_stages[0]) &&
        blockDim.y == sizeof(As_stages[0]) / sizeof(As_stages[0][0]) &&
        blockDim.x == sizeof(As_stages[0][0]) / sizeof(As_stages[0][0][0]) &&
        blockDim.x == sizeof(xs_stages[0]) / sizeof(xs_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Tensor and bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < numTiles); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)(row * lda + t * T + tx));
            tiles_aligned = tiles_aligned && ::tilepipe_rt::starts_on_16(x, (long long)(t * T + tx));
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
              auto &As = As_stages[fetch_stage];
              auto &xs = xs_stages[fetch_stage];
              ::tilepipe_rt::copy_tile(As_tmap, As, A, (long long)(row * lda + t * T + tx),
                                       stage_barriers[fetch_stage]);
              ::tilepipe_rt::bulk_copy(xs, x, (long long)(t * T + tx), stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(As) + sizeof(xs));
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
          auto &As = As_stages[stage];
          auto &xs = xs_stages[stage];
          for (int k = 0; k < T; ++k)
            acc += As[ty][(k + tx) % T] * xs[(3 * k + tx) % T];
          acc *= 0.75f;
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
            auto &As = As_stages[fetch_stage];
            auto &xs = xs_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using As_index = decltype(+(row * lda + t * T + tx));
            const As_index As_base = (As_index)(row * lda + t * T + tx)
                - (As_index)threadIdx.y * (As_index)(lda)
                - (As_index)threadIdx.x;
            if (sizeof(As[0]) % 16 == 0 &&
                blockDim.y == sizeof(As) / sizeof(As[0]) &&
                blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
                (lda) % (16 / sizeof(As[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&A[As_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
                const unsigned row0 = chunk / (sizeof(As[0]) / 16);
                const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
                ::cuda::memcpy_async(&As[row0][col],
                                     &A[As_base + (As_index)row0 * (As_index)(lda) + (As_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&As[ty][tx], &A[row * lda + t * T + tx],
                                     ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
            }
            using xs_index = decltype(+(t * T + tx));
            const xs_index xs_base = (xs_index)(t * T + tx) - (xs_index)threadIdx.x;
            if (sizeof(xs) % 16 == 0 &&
                blockDim.x == sizeof(xs) / sizeof(xs[0]) &&
                reinterpret_cast<unsigned long long>(&x[xs_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&xs[0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk_1 = rank; chunk_1 < sizeof(xs) / 16; chunk_1 += threads) {
                const unsigned col_1 = chunk_1 % (sizeof(xs) / 16) * (16 / sizeof(xs[0]));
                ::cuda::memcpy_async(&xs[col_1],
                                     &x[xs_base + (xs_index)col_1],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&xs[tx], &x[t * T + tx],
                                     ::cuda::aligned_size_t<sizeof(xs[0])>(sizeof(xs[0])), pipe);
            }
          }
          ++t;
          t_fetch = t;
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
      for (; t < numTiles; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &As = As_stages[stage];
        auto &xs = xs_stages[stage];
        for (int k = 0; k < T; ++k)
          acc += As[ty][(k + tx) % T] * xs[(3 * k + tx) % T];
        acc *= 0.75f;
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
    auto &xs = xs_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      As[ty][tx] = A[row * lda + t * T + tx];
      xs[tx] = x[t * T + tx];
      __syncthreads();
      for (int k = 0; k < T; ++k)
        acc += As[ty][(k + tx) % T] * xs[(3 * k + tx) % T];
      acc *= 0.75f;
      __syncthreads();
    }
  }
#endif
#line 157
  out[row * T + tx] = acc;
}

// tilepipe: launches rows_times_vector with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_rows_times_vector 1
static void tilepipe_launch_rows_times_vector(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* out, const float* A, const float* x, int lda, int numTiles) {
  ::tilepipe_rt::TileMap As_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&As_tmap, A, sizeof(float), (long long)(lda), (long long)(T), (long long)(T));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_rows_times_vector", tma, traced);
  ::rows_times_vector<<<grid, block, shared_bytes, stream>>>(out, A, x, lda, numTiles, As_tmap, tma);
}
#line 159

static void run(FILE* f, uint64_t seed, int caseNo, int blocks, int lda, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  const size_t rows = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(rows * lda, rng);
  std::vector<float> hx = randomFloats((size_t)numTiles * T, rng);
  float* dA = toDevice(hA);
  float* dx = toDevice(hx);
  const size_t nOut = rows * T;
  float* dOut = poisonedOutput<float>(nOut);
  const dim3 block(T, T);
  ::tilepipe_launch_rows_times_vector(blocks, block, 0, 0, dOut, dA, dx, lda, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: rows_times_vector blocks=%d lda=%d tiles=%d\n", caseNo, blocks, lda, numTiles);
  if (timeIt) timeKernel([&] { ::tilepipe_launch_rows_times_vector(blocks, block, 0, 0, dOut, dA, dx, lda, numTiles); });
  CK(cudaFree(dA));
  CK(cudaFree(dx));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  run(f, seed, 0, 3, 32, 0, false);        // 0 tiles
  run(f, seed, 1, 5, 32, 1, false);        // 1 tile
  run(f, seed, 2, 7, 96, 2, false);        // 2 tiles
  run(f, seed, 3, 9, 100, 3, false);       // 3 tiles
  run(f, seed, 4, 40, 163, 5, false);      // rows off 16 bytes: cp.async
  run(f, seed, 5, 4096, 2048, 64, true);   // 64 tiles x 4096 blocks
  closeOutput(f);
  return 0;
}
