// legality_forms.cu: the forms the legality analysis must see through (docs/legality.md), each
// beside a close safe form, run at scale: thousands of blocks, many more tiles than stages,
// random inputs, poisoned outputs. Refused loops stay as written; rewritten ones must match the
// original bit for bit.
// The safe forms carry `// tilepipe: plan=always`: the point is that the analysis proves them
// legal; the cost model alone would not pipeline their small stages.
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

#line 7
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

#define T 64  // == blockDim.x for the one-dimensional kernels

// C5: the compute phase stores, through a lambda, into the part of A the next tile's copy reads.
// The original's trailing barrier orders that store before the copy; a rewrite would not.
__global__ void lambda_into_source(float* A, float* C, int nt) {
  __shared__ float s[T];
  auto put = [&](int i, float x) { A[i] = x; };
  float acc = 0.0f;
  // EXPECT: store-aliases-load
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (t + 1 < nt) put((blockIdx.x * nt + t + 1) * T + (threadIdx.x + 5) % T, acc);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: the lambda stores into another array, and the signature says so.
__global__ void lambda_into_output(const float* __restrict__ A, float* __restrict__ D, int nt) {
  alignas(16) __shared__ float s_stages[3][T];
  auto put = [&](int i, float x) { D[i] = x; };
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+((blockIdx.x * nt + t) * T + threadIdx.x));
          const s_index s_base = (s_index)((blockIdx.x * nt + t) * T + threadIdx.x)
              - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &A[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[threadIdx.x], &A[(blockIdx.x * nt + t) * T + threadIdx.x],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
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
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      acc += s[(threadIdx.x + 1) % T] * s[(threadIdx.x + 7) % T];
      put((blockIdx.x * nt + t) * T + threadIdx.x, acc);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads(); // the loop's writes to memory are seen by every thread after it
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc += s[(threadIdx.x + 1) % T] * s[(threadIdx.x + 7) % T];
      put((blockIdx.x * nt + t) * T + threadIdx.x, acc);
      __syncthreads();
    }
  }
#endif
#line 172
}

// C2/C3: the bound changes through a reference the compute phase writes.
__global__ void bound_through_reference(const float* A, float* C, int nt) {
  __shared__ float s[T];
  int lim = nt;
  int& lr = lim;
  float acc = 0.0f;
  // EXPECT: loop-condition
  for (int t = 0; t < lim; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 3) % T];
    if (s[0] > 0.9f) lr = t + 1 < lr ? lr - 1 : lr;  // the same in all threads of the block
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// C4: an index through a function, pure by its body.
__device__ int tileOf(int b, int t, int nt) { return b * nt + t; }

__global__ void pure_index(const float* A, float* C, int nt) {
  alignas(16) __shared__ float s_stages[3][T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+(tileOf(blockIdx.x, t, nt) * T + threadIdx.x));
          const s_index s_base = (s_index)(tileOf(blockIdx.x, t, nt) * T + threadIdx.x)
              - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &A[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[threadIdx.x], &A[tileOf(blockIdx.x, t, nt) * T + threadIdx.x],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
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
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      acc = acc * 0.5f + s[T - 1 - threadIdx.x];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[tileOf(blockIdx.x, t, nt) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[T - 1 - threadIdx.x];
      __syncthreads();
    }
  }
#endif
#line 205
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// W1: the top half of each 16x16 block returns before the loop; the rest compute on the rows they
// load. A copy spread over the block's ranks would leave the returned threads' chunks uncopied.
__global__ void rows_after_early_exit(const float* A, float* C, int nt) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (ty < 8) return;
  __shared__ float s_stages[3][16][16];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          ::cuda::memcpy_async(&s[ty][tx], &A[((size_t)(blockIdx.x * nt + t) * 16 + ty) * 16 + tx],
                               ::cuda::aligned_size_t<sizeof(s[0][0])>(sizeof(s[0][0])), pipe);
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
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      for (int k = 0; k < 16; ++k) acc += s[ty][k] * (float)(k + 1);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < nt; ++t) {
      s[ty][tx] = A[((size_t)(blockIdx.x * nt + t) * 16 + ty) * 16 + tx];
      __syncthreads();
      for (int k = 0; k < 16; ++k) acc += s[ty][k] * (float)(k + 1);
      __syncthreads();
    }
  }
#endif
#line 223
  C[(blockIdx.x * 16 + ty) * 16 + tx] = acc;
}

// B2: the compute phase accumulates into another __shared__ array, and after the loop thread 0
// reads all of it. The original's last trailing barrier orders those writes before that read.
__global__ void shared_read_after_loop(const float* A, float* C, int nt) {
  alignas(16) __shared__ float s_stages[3][T];
  __shared__ float red[T];
  red[threadIdx.x] = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+((blockIdx.x * nt + t) * T + threadIdx.x));
          const s_index s_base = (s_index)((blockIdx.x * nt + t) * T + threadIdx.x)
              - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &A[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[threadIdx.x], &A[(blockIdx.x * nt + t) * T + threadIdx.x],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
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
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      red[threadIdx.x] += s[(threadIdx.x + t) % T];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads(); // the loop's writes to memory are seen by every thread after it
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      red[threadIdx.x] += s[(threadIdx.x + t) % T];
      __syncthreads();
    }
  }
#endif
#line 240
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int i = 0; i < T; ++i) sum += red[i] * (float)(i + 1);
    C[blockIdx.x] = sum;
  }
}

// B3: threads write the block's first tile of A before a loop of the rotated form; the
// original's leading barrier publishes those writes before any thread copies.
__global__ void rotated_after_writes(float* A, float* C, int nt) {
  A[(size_t)blockIdx.x * nt * T + (threadIdx.x * 5 + 3) % T] = (float)(threadIdx.x + blockIdx.x);
  alignas(16) __shared__ float s_stages[3][T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+(((size_t)blockIdx.x * nt + t) * T + threadIdx.x));
          const s_index s_base = (s_index)(((size_t)blockIdx.x * nt + t) * T + threadIdx.x)
              - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &A[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[threadIdx.x], &A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          }
        }
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    __syncthreads(); // as the loop's leading barrier: what the block wrote before it is seen by the copies
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      acc += s[(threadIdx.x + 11) % T] * 0.25f;
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < nt; ++t) {
      __syncthreads();
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc += s[(threadIdx.x + 11) % T] * 0.25f;
    }
  }
#endif
#line 261
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// B3 with tiles big enough for tensor copies on sm_90: 32x32 floats, rows of A written before
// the loop by other threads of the block.
__global__ void rotated_after_writes_2d(float* A, float* C, int ld, int nt, const __grid_constant__ ::tilepipe_rt::TileMap s_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  A[(blockIdx.x * 32 + (ty + 1) % 32) * ld + tx] += 1.0f;
  alignas(128) __shared__ float s_stages[3][32][32];
  float acc = 0.0f;
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
        ::tilepipe_rt::takes(s_tmap, s_stages[0]) &&
        blockDim.y == sizeof(s_stages[0]) / sizeof(s_stages[0][0]) &&
        blockDim.x == sizeof(s_stages[0][0]) / sizeof(s_stages[0][0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Tensor copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < nt); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)((blockIdx.x * 32 + ty) * ld + t * 32 + tx));
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
          if (t < nt) {
            { // the copy phase's own scope
              auto &s = s_stages[fetch_stage];
              ::tilepipe_rt::copy_tile(s_tmap, s, A, (long long)((blockIdx.x * 32 + ty) * ld + t * 32 + tx),
                                       stage_barriers[fetch_stage]);
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
        for (; t < nt; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &s = s_stages[stage];
          acc += s[tx][ty] + s[ty][(tx + 1) % 32];
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
        if (t < nt) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &s = s_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using s_index = decltype(+((blockIdx.x * 32 + ty) * ld + t * 32 + tx));
            const s_index s_base = (s_index)((blockIdx.x * 32 + ty) * ld + t * 32 + tx)
                - (s_index)threadIdx.y * (s_index)(ld)
                - (s_index)threadIdx.x;
            if (sizeof(s[0]) % 16 == 0 &&
                blockDim.y == sizeof(s) / sizeof(s[0]) &&
                blockDim.x == sizeof(s[0]) / sizeof(s[0][0]) &&
                (ld) % (16 / sizeof(s[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&s[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
                const unsigned row0 = chunk / (sizeof(s[0]) / 16);
                const unsigned col = chunk % (sizeof(s[0]) / 16) * (16 / sizeof(s[0][0]));
                ::cuda::memcpy_async(&s[row0][col],
                                     &A[s_base + (s_index)row0 * (s_index)(ld) + (s_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&s[ty][tx], &A[(blockIdx.x * 32 + ty) * ld + t * 32 + tx],
                                     ::cuda::aligned_size_t<sizeof(s[0][0])>(sizeof(s[0][0])), pipe);
            }
          }
          ++t;
          t_fetch = t;
        }
        pipe.producer_commit();
        fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
      };
      __syncthreads(); // as the loop's leading barrier: what the block wrote before it is seen by the copies
      // Prologue: the copies of the first 2 tiles.
      for (int prologue = 0; prologue < 2; ++prologue)
        issue_tile();
      int stage = 0;
      // Mainloop: compute on one tile while the next ones are copied.
      for (; t < nt; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &s = s_stages[stage];
        acc += s[tx][ty] + s[ty][(tx + 1) % 32];
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
    for (int t = 0; t < nt; ++t) {
      __syncthreads();
      s[ty][tx] = A[(blockIdx.x * 32 + ty) * ld + t * 32 + tx];
      __syncthreads();
      acc += s[tx][ty] + s[ty][(tx + 1) % 32];
    }
  }
#endif
#line 278
  C[(blockIdx.x * 32 + ty) * 32 + tx] = acc;
}

// tilepipe: launches rotated_after_writes_2d with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_rotated_after_writes_2d 1
static void tilepipe_launch_rotated_after_writes_2d(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* A, float* C, int ld, int nt) {
  ::tilepipe_rt::TileMap s_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&s_tmap, A, sizeof(float), (long long)(ld), (long long)(32), (long long)(32));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_rotated_after_writes_2d", tma, traced);
  ::rotated_after_writes_2d<<<grid, block, shared_bytes, stream>>>(A, C, ld, nt, s_tmap, tma);
}
#line 280

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T;
  std::vector<float> hA = randomFloats(nA, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  {  // lambda_into_source: A is also written
    float* dA = toDevice(hA);
    float* dC = poisonedOutput<float>((size_t)blocks * T);
    lambda_into_source<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    writeOutput(f, dA, nA);
    CK(cudaFree(dA));
    CK(cudaFree(dC));
  }
  float* dA = toDevice(hA);
  {
    float* dD = poisonedOutput<float>(nA);
    lambda_into_output<<<blocks, T>>>(dA, dD, nt);
    checkLaunch();
    writeOutput(f, dD, nA);
    CK(cudaFree(dD));
  }
  {
    float* dC = poisonedOutput<float>((size_t)blocks * T);
    bound_through_reference<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    pure_index<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    CK(cudaFree(dC));
  }
  {  // 16x16 tiles: nA / 256 tiles in all, nt per block, so blocks * T / 256 blocks
    const int b2 = blocks / 4;
    float* dC = poisonedOutput<float>((size_t)b2 * 256);
    rows_after_early_exit<<<b2, dim3(16, 16)>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)b2 * 256);
    CK(cudaFree(dC));
  }
  {
    float* dC = poisonedOutput<float>(blocks);
    shared_read_after_loop<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, blocks);
    CK(cudaFree(dC));
  }
  {
    float* dW = toDevice(hA);
    float* dC = poisonedOutput<float>((size_t)blocks * T);
    rotated_after_writes<<<blocks, T>>>(dW, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    CK(cudaFree(dW));
    CK(cudaFree(dC));
  }
  {  // 32x32 tiles: rows of ld = nt * 32 floats, blocks / 16 row strips of 32 rows
    const int b3 = blocks / 16, ld = nt * 32;
    float* dW = toDevice(hA);  // b3 * 32 * ld == blocks * nt * T floats
    float* dC = poisonedOutput<float>((size_t)b3 * 1024);
    ::tilepipe_launch_rotated_after_writes_2d(b3, dim3(32, 32), 0, 0, dW, dC, ld, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)b3 * 1024);
    writeOutput(f, dW, nA);
    CK(cudaFree(dW));
    CK(cudaFree(dC));
  }
  CK(cudaFree(dA));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 16, 0);      // no tiles
  runCase(f, seed, 1, 32, 1);      // one tile
  runCase(f, seed, 2, 64, 2);      // fewer tiles than stages
  runCase(f, seed, 3, 4096, 3);    // as many as stages
  runCase(f, seed, 4, 8192, 40);   // many blocks per SM, far more tiles than stages
  runCase(f, seed, 5, 2048, 97);   // odd tile count
  closeOutput(f);
  return 0;
}
