// A file nvcc builds and Clang does not: a __shared__ object whose destructor is not empty (nvcc
// warns that it is never initialized; Clang rejects it), and host code calling isfinite without
// <cmath>, which nvcc declares for the host and Clang for the device only. Clang recovers from
// both; the loops that cannot reach the errors are rewritten (one beside an error in a function
// that names a function of the same name), the others are left alone with parse-error-nearby.
// (Host code calling min(int, int), the same for nvcc, parses: tilepipe declares nvcc's host min
// and max for its parse, and the cache-operator intrinsics Clang's headers lack.)
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

#line 8
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cstdint>
#include <algorithm>
#include <cuda_runtime.h>

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

#define COLS 128
#define WIDE 512

// Scratch space that nvcc takes as it is (with a warning, which this file turns off) and Clang
// rejects: an error in each function that declares one.
#pragma nv_diag_suppress static_var_with_dynamic_init
struct Scratch {
  float v;
  __device__ ~Scratch() { v = 0.f; }
};

__device__ void store_streaming(float *p, float v) {
  __shared__ Scratch scratch;
  *p = v;
}

// Reads the function with the error: left alone.
__global__ void streamed_sums(const float *in, float *out, int n) {
  __shared__ float tile[COLS];
  float acc = 0.f;
  // EXPECT: parse-error-nearby
  for (int t = 0; t < n; t += COLS) {
    tile[threadIdx.x] = in[(size_t)blockIdx.x * n + t + threadIdx.x];
    __syncthreads();
    for (int k = 0; k < COLS; ++k)
      acc += tile[k] * (float)(k + 1);
    __syncthreads();
  }
  store_streaming(&out[blockIdx.x * blockDim.x + threadIdx.x], acc);
}

// Two weights of one name. The function after them holds an error and names 'weight', but Clang
// parsed that name into colscale's, with every overload it finds there: no loop that reads
// rowscale's can be the one its error hides a call of.
namespace rowscale { __device__ float weight(int j) { return (float)(j + 1); } }
namespace colscale { __device__ float weight(int j) { return (float)(2 * j + 1); } }
__device__ void store_weighted(float *p, float v, int j) {
  __shared__ Scratch scratch;
  *p = v * colscale::weight(j);
}

// Nothing here reaches an error: rewritten. Each block walks one row of n columns, WIDE columns a
// tile, and each thread sums 8 of the tile's elements, weighted.
__global__ void weighted_rows(const float *in, float *out, int n) {
  alignas(128) __shared__ float tile_stages[3][WIDE];
  float acc = 0.f;
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
    if (blockDim.x == sizeof(tile_stages[0]) / sizeof(tile_stages[0][0])) {
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
        for (int probe = 0; probe < 2 && (t < n); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(in, (long long)((size_t)blockIdx.x * n + t + threadIdx.x));
          }
          t += WIDE;
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
          if (t < n) {
            { // the copy phase's own scope
              auto &tile = tile_stages[fetch_stage];
              ::tilepipe_rt::bulk_copy(tile, in, (long long)((size_t)blockIdx.x * n + t + threadIdx.x),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(tile));
            }
            t += WIDE;
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
        for (; t < n; t += WIDE) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &tile = tile_stages[stage];
          for (int j = 0; j < WIDE; j += 64)
            acc += tile[j + threadIdx.x % 64] * rowscale::weight(j);
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
        if (t < n) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &tile = tile_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using tile_index = decltype(+((size_t)blockIdx.x * n + t + threadIdx.x));
            const tile_index tile_base = (tile_index)((size_t)blockIdx.x * n + t + threadIdx.x)
                - (tile_index)threadIdx.x;
            if (sizeof(tile) % 16 == 0 &&
                blockDim.x == sizeof(tile) / sizeof(tile[0]) &&
                reinterpret_cast<unsigned long long>(&in[tile_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&tile[0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(tile) / 16; chunk += threads) {
                const unsigned col = chunk % (sizeof(tile) / 16) * (16 / sizeof(tile[0]));
                ::cuda::memcpy_async(&tile[col],
                                     &in[tile_base + (tile_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&tile[threadIdx.x], &in[(size_t)blockIdx.x * n + t + threadIdx.x],
                                     ::cuda::aligned_size_t<sizeof(tile[0])>(sizeof(tile[0])), pipe);
            }
          }
          t += WIDE;
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
      for (; t < n; t += WIDE) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &tile = tile_stages[stage];
        for (int j = 0; j < WIDE; j += 64)
          acc += tile[j + threadIdx.x % 64] * rowscale::weight(j);
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &tile = tile_stages[0];
    for (int t = 0; t < n; t += WIDE) {
      tile[threadIdx.x] = in[(size_t)blockIdx.x * n + t + threadIdx.x];
      __syncthreads();
      for (int j = 0; j < WIDE; j += 64)
        acc += tile[j + threadIdx.x % 64] * rowscale::weight(j);
      __syncthreads();
    }
  }
#endif
#line 195
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Launched from host code with an error (the call to isfinite): that code may hide a call or a
// launch the analysis would need, so the loop is left alone.
__global__ void launched_near_error(const float *in, float *out, int n) {
  __shared__ float tile[COLS];
  float acc = 0.f;
  // EXPECT: parse-error-nearby
  for (int t = 0; t < n; t += COLS) {
    tile[threadIdx.x] = in[(size_t)blockIdx.x * n + t + threadIdx.x];
    __syncthreads();
    for (int k = 0; k < COLS; ++k)
      acc += tile[(k + threadIdx.x) % COLS];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

int launch_checked(int blocks, float scale, const float *in, float *out, int n) {
  if (!isfinite(scale))
    return 1;
  launched_near_error<<<blocks, COLS>>>(in, out, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

// An error in host code that names no kernel.
int finite_count(float a, float b) { return isfinite(a) + isfinite(b); }

// Host code calling nvcc's host min and max: no error.
int clamp_blocks(int blocks, int most) { return max(1, min(blocks, most)); }

// Case: blocks rows of n columns, n a multiple of WIDE; out: blocks x WIDE.
static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int n, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hIn = randomFloats((size_t)blocks * n, rng);
  float* dIn = toDevice(hIn);
  const size_t nOut = (size_t)blocks * WIDE;
  float* dOut = poisonedOutput<float>(nOut);
  weighted_rows<<<blocks, WIDE>>>(dIn, dOut, n);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: weighted_rows blocks=%d tiles=%d elements=%zu\n", caseNo, blocks, n / WIDE, nOut);
  if (timeIt) timeKernel([&] { weighted_rows<<<blocks, WIDE>>>(dIn, dOut, n); });
  CK(cudaFree(dIn));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 4, 0, false);            // 0 tiles
  runCase(f, seed, 1, 4, WIDE, false);         // 1 tile
  runCase(f, seed, 2, 6, 2 * WIDE, false);     // 2 tiles
  runCase(f, seed, 3, 5, 3 * WIDE, false);     // 3 tiles
  runCase(f, seed, 4, 1000, 5 * WIDE, false);  // 5 tiles, 1000 blocks
  runCase(f, seed, 5, 4000, 64 * WIDE, true);  // 4000 blocks x 64 tiles (timed)
  closeOutput(f);
  return 0;
}
