// legality_names.cu: names that move keep their meaning. The rewrite writes the user's text
// elsewhere: tiles declared in the body before the loop, the copy phase's index declarations again
// before the compute phase, the loop's increments into the lambda that fetches ahead, element
// types and row strides into a host launcher beside the kernel, launch sites as calls of that
// launcher. Where a name would bind to another declaration there, the loop is refused
// (name-binding) or the piece stays (no tensor copy); kernels of one name in several namespaces
// each get their own launcher, called by its name from the global namespace. A program that
// sizes its grid from the kernel's occupancy keeps its loop (launch-resources). Each stands beside
// a close safe form, run at scale: thousands of blocks, many more tiles than stages, random
// inputs, poisoned outputs (tests/gpu/verify_testdata.sh). The safe forms carry
// `// tilepipe: plan=always`: the point is that the analysis proves them legal.
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

#line 12
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

#define T 64  // == blockDim.x

// A tile declared in the body whose extent is a constant of the body hiding one outside the loop:
// stage arrays before the loop would have 16 elements, and the copies would overrun them.
constexpr int W = 16;
__global__ void extent_hidden(const float* A, float* C, int nt) {
  float acc = 0.0f;
  // (The register-staged prefetch, which the cost model would choose, keeps the tile in the body.)
  // tilepipe: plan=always
  // EXPECT: name-binding
  for (int t = 0; t < nt; ++t) {
    constexpr int W = T;
    __shared__ float s[W];
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * W + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % W];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc + W;
}

// The safe form: the extent names the block's width, the same before the loop.
__global__ void extent_outer(const float* A, float* C, int nt) {
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    alignas(16) __shared__ float s_stages[3][T];
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
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    for (int t = 0; t < nt; ++t) {
      __shared__ float s[T];
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
      __syncthreads();
    }
  }
#endif
#line 154
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The compute phase reads an index built from a copy-phase local that hides the kernel's own
// parameter: both are declared again before the compute phase, so that 'i' is the local's.
__global__ void index_from_hiding_local(const float* A, float* C, int nt, int base) {
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
          const int base = (int)blockIdx.x * nt * T + t * T;
          const int i = base + threadIdx.x;
          using s_index = decltype(+(i));
          const s_index s_base = (s_index)(i) - (s_index)threadIdx.x;
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[i],
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
      const int base = (int)blockIdx.x * nt * T + t * T;
      const int i = base + threadIdx.x;
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T] * (float)(i & 7);
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
      const int base = (int)blockIdx.x * nt * T + t * T;
      const int i = base + threadIdx.x;
      s[threadIdx.x] = A[i];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T] * (float)(i & 7);
      __syncthreads();
    }
  }
#endif
#line 172
  C[blockIdx.x * T + threadIdx.x] = acc + (float)base;
}

// A while loop whose increment reads a constant of the body hiding the kernel's parameter: in the
// lambda that fetches ahead it would step by the parameter (a step declared in the body is no
// loop-invariant step).
__global__ void step_hidden(const float* A, float* C, int nt, int step) {
  __shared__ float s[T];
  float acc = 0.0f;
  int t = 0;
  // EXPECT: induction-step
  while (t < nt) {
    const int step = 1;
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
    __syncthreads();
    t += step;
  }
  C[blockIdx.x * T + threadIdx.x] = acc + (float)step;
}

// The safe form: the step is the parameter, in the body and in the lambda alike.
__global__ void step_param(const float* A, float* C, int nt, int step) {
  alignas(16) __shared__ float s_stages[3][T];
  float acc = 0.0f;
  int t = 0;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
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
        t += step;
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
    while (t < nt) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
      t += step;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    while (t < nt) {
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
      __syncthreads();
      t += step;
    }
  }
#endif
#line 208
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Matrix products C = scale * A B of N x K by K x N, in 32 x 32 tiles.
#define TM 32
typedef double real_t;

// A local type of the element's name beside the namespace's double: the launcher would size the
// tensor map's elements by 8 bytes. Rewritten without tensor copies.
__global__ void mm_local_typedef(float* C, const float* A, const float* B, int N, int K) {
  typedef float real_t;
  alignas(16) __shared__ real_t As_stages[3][TM][TM];
  alignas(16) __shared__ real_t Bs_stages[3][TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
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
      if (t < K / TM) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using As_index = decltype(+(row * K + t * TM + tx));
          const As_index As_base = (As_index)(row * K + t * TM + tx)
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
              ::cuda::memcpy_async(&As[ty][tx], &A[row * K + t * TM + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
          }
          using Bs_index = decltype(+((t * TM + ty) * N + col));
          const Bs_index Bs_base = (Bs_index)((t * TM + ty) * N + col)
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
              ::cuda::memcpy_async(&Bs[ty][tx], &B[(t * TM + ty) * N + col],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
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
    for (; t < K / TM; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < TM; ++k)
        acc += As[ty][k] * Bs[k][tx];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (int t = 0; t < K / TM; ++t) {
      As[ty][tx] = A[row * K + t * TM + tx];
      Bs[ty][tx] = B[(t * TM + ty) * N + col];
      __syncthreads();
      for (int k = 0; k < TM; ++k)
        acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
#endif
#line 234
  C[row * N + col] = acc;
}

// The same through a row stride in bytes over the local type's size.
__global__ void mm_stride_typedef(float* C, const float* A, const float* B, int N, int K, int pitch) {
  using real_t = float;
  alignas(16) __shared__ float As_stages[3][TM][TM];
  alignas(16) __shared__ float Bs_stages[3][TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
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
      if (t < K / TM) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using As_index = decltype(+(row * (int)(pitch / sizeof(real_t)) + t * TM + tx));
          const As_index As_base = (As_index)(row * (int)(pitch / sizeof(real_t)) + t * TM + tx)
              - (As_index)threadIdx.y * (As_index)((int)(pitch / sizeof(real_t)))
              - (As_index)threadIdx.x;
          if (sizeof(As[0]) % 16 == 0 &&
              blockDim.y == sizeof(As) / sizeof(As[0]) &&
              blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
              ((int)(pitch / sizeof(real_t))) % (16 / sizeof(As[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&A[As_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
              const unsigned row0 = chunk / (sizeof(As[0]) / 16);
              const unsigned col_1 = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
              ::cuda::memcpy_async(&As[row0][col_1],
                                   &A[As_base + (As_index)row0 * (As_index)((int)(pitch / sizeof(real_t))) + (As_index)col_1],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&As[ty][tx], &A[row * (int)(pitch / sizeof(real_t)) + t * TM + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
          }
          using Bs_index = decltype(+((t * TM + ty) * N + col));
          const Bs_index Bs_base = (Bs_index)((t * TM + ty) * N + col)
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
              ::cuda::memcpy_async(&Bs[ty][tx], &B[(t * TM + ty) * N + col],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
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
    for (; t < K / TM; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < TM; ++k)
        acc += As[ty][k] * Bs[k][tx];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (int t = 0; t < K / TM; ++t) {
      As[ty][tx] = A[row * (int)(pitch / sizeof(real_t)) + t * TM + tx];
      Bs[ty][tx] = B[(t * TM + ty) * N + col];
      __syncthreads();
      for (int k = 0; k < TM; ++k)
        acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
#endif
#line 255
  C[row * N + col] = acc;
}

// Kernels of one name in three namespaces, each scaling its product differently: each launch
// site must reach its own kernel's launcher.
namespace {
__global__ void mm(float* C, const float* A, const float* B, int N, int K, const __grid_constant__ ::tilepipe_rt::TileMap As_tmap = ::tilepipe_rt::TileMap{}, const __grid_constant__ ::tilepipe_rt::TileMap Bs_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ float As_stages[3][TM][TM];
  alignas(128) __shared__ float Bs_stages[3][TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
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
      auto t_fetch = t;
      // Tensor copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < K / TM); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)(row * K + t * TM + tx));
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(B, (long long)((t * TM + ty) * N + col));
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
          if (t < K / TM) {
            { // the copy phase's own scope
              auto &As = As_stages[fetch_stage];
              auto &Bs = Bs_stages[fetch_stage];
              ::tilepipe_rt::copy_tile(As_tmap, As, A, (long long)(row * K + t * TM + tx),
                                       stage_barriers[fetch_stage]);
              ::tilepipe_rt::copy_tile(Bs_tmap, Bs, B, (long long)((t * TM + ty) * N + col),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(As) + sizeof(Bs));
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
        for (; t < K / TM; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &As = As_stages[stage];
          auto &Bs = Bs_stages[stage];
          for (int k = 0; k < TM; ++k)
            acc += As[ty][k] * Bs[k][tx];
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
        if (t < K / TM) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &As = As_stages[fetch_stage];
            auto &Bs = Bs_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using As_index = decltype(+(row * K + t * TM + tx));
            const As_index As_base = (As_index)(row * K + t * TM + tx)
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
                ::cuda::memcpy_async(&As[ty][tx], &A[row * K + t * TM + tx],
                                     ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
            }
            using Bs_index = decltype(+((t * TM + ty) * N + col));
            const Bs_index Bs_base = (Bs_index)((t * TM + ty) * N + col)
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
                ::cuda::memcpy_async(&Bs[ty][tx], &B[(t * TM + ty) * N + col],
                                     ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
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
      for (; t < K / TM; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &As = As_stages[stage];
        auto &Bs = Bs_stages[stage];
        for (int k = 0; k < TM; ++k)
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
    for (int t = 0; t < K / TM; ++t) {
      As[ty][tx] = A[row * K + t * TM + tx];
      Bs[ty][tx] = B[(t * TM + ty) * N + col];
      __syncthreads();
      for (int k = 0; k < TM; ++k)
        acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
#endif
#line 277
  C[row * N + col] = acc;
}

// tilepipe: launches mm with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_mm 1
static void tilepipe_launch_mm(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* C, const float* A, const float* B, int N, int K) {
  ::tilepipe_rt::TileMap As_tmap = {};
  ::tilepipe_rt::TileMap Bs_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&As_tmap, A, sizeof(float), (long long)(K), (long long)(TM), (long long)(TM));
  tma = tma && ::tilepipe_rt::encode(&Bs_tmap, B, sizeof(float), (long long)(N), (long long)(TM), (long long)(TM));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_mm", tma, traced);
  mm<<<grid, block, shared_bytes, stream>>>(C, A, B, N, K, As_tmap, Bs_tmap, tma);
}
#line 279
}  // namespace
namespace twice {
__global__ void mm(float* C, const float* A, const float* B, int N, int K, const __grid_constant__ ::tilepipe_rt::TileMap As_tmap = ::tilepipe_rt::TileMap{}, const __grid_constant__ ::tilepipe_rt::TileMap Bs_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ float As_stages[3][TM][TM];
  alignas(128) __shared__ float Bs_stages[3][TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
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
      auto t_fetch = t;
      // Tensor copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < K / TM); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)(row * K + t * TM + tx));
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(B, (long long)((t * TM + ty) * N + col));
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
          if (t < K / TM) {
            { // the copy phase's own scope
              auto &As = As_stages[fetch_stage];
              auto &Bs = Bs_stages[fetch_stage];
              ::tilepipe_rt::copy_tile(As_tmap, As, A, (long long)(row * K + t * TM + tx),
                                       stage_barriers[fetch_stage]);
              ::tilepipe_rt::copy_tile(Bs_tmap, Bs, B, (long long)((t * TM + ty) * N + col),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(As) + sizeof(Bs));
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
        for (; t < K / TM; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &As = As_stages[stage];
          auto &Bs = Bs_stages[stage];
          for (int k = 0; k < TM; ++k)
            acc += 2.0f * As[ty][k] * Bs[k][tx];
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
        if (t < K / TM) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &As = As_stages[fetch_stage];
            auto &Bs = Bs_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using As_index = decltype(+(row * K + t * TM + tx));
            const As_index As_base = (As_index)(row * K + t * TM + tx)
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
                ::cuda::memcpy_async(&As[ty][tx], &A[row * K + t * TM + tx],
                                     ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
            }
            using Bs_index = decltype(+((t * TM + ty) * N + col));
            const Bs_index Bs_base = (Bs_index)((t * TM + ty) * N + col)
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
                ::cuda::memcpy_async(&Bs[ty][tx], &B[(t * TM + ty) * N + col],
                                     ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
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
      for (; t < K / TM; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &As = As_stages[stage];
        auto &Bs = Bs_stages[stage];
        for (int k = 0; k < TM; ++k)
          acc += 2.0f * As[ty][k] * Bs[k][tx];
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
    for (int t = 0; t < K / TM; ++t) {
      As[ty][tx] = A[row * K + t * TM + tx];
      Bs[ty][tx] = B[(t * TM + ty) * N + col];
      __syncthreads();
      for (int k = 0; k < TM; ++k)
        acc += 2.0f * As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
#endif
#line 297
  C[row * N + col] = acc;
}

// tilepipe: launches mm with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_mm 1
static void tilepipe_launch_mm_1(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* C, const float* A, const float* B, int N, int K) {
  ::tilepipe_rt::TileMap As_tmap = {};
  ::tilepipe_rt::TileMap Bs_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&As_tmap, A, sizeof(float), (long long)(K), (long long)(TM), (long long)(TM));
  tma = tma && ::tilepipe_rt::encode(&Bs_tmap, B, sizeof(float), (long long)(N), (long long)(TM), (long long)(TM));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_mm_1", tma, traced);
  ::twice::mm<<<grid, block, shared_bytes, stream>>>(C, A, B, N, K, As_tmap, Bs_tmap, tma);
}
#line 299
}  // namespace twice
namespace outer {
extern "C++" {
namespace thrice {
__global__ void mm(float* C, const float* A, const float* B, int N, int K, const __grid_constant__ ::tilepipe_rt::TileMap As_tmap = ::tilepipe_rt::TileMap{}, const __grid_constant__ ::tilepipe_rt::TileMap Bs_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ float As_stages[3][TM][TM];
  alignas(128) __shared__ float Bs_stages[3][TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
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
      auto t_fetch = t;
      // Tensor copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < K / TM); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)(row * K + t * TM + tx));
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(B, (long long)((t * TM + ty) * N + col));
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
          if (t < K / TM) {
            { // the copy phase's own scope
              auto &As = As_stages[fetch_stage];
              auto &Bs = Bs_stages[fetch_stage];
              ::tilepipe_rt::copy_tile(As_tmap, As, A, (long long)(row * K + t * TM + tx),
                                       stage_barriers[fetch_stage]);
              ::tilepipe_rt::copy_tile(Bs_tmap, Bs, B, (long long)((t * TM + ty) * N + col),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(As) + sizeof(Bs));
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
        for (; t < K / TM; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &As = As_stages[stage];
          auto &Bs = Bs_stages[stage];
          for (int k = 0; k < TM; ++k)
            acc += 3.0f * As[ty][k] * Bs[k][tx];
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
        if (t < K / TM) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &As = As_stages[fetch_stage];
            auto &Bs = Bs_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using As_index = decltype(+(row * K + t * TM + tx));
            const As_index As_base = (As_index)(row * K + t * TM + tx)
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
                ::cuda::memcpy_async(&As[ty][tx], &A[row * K + t * TM + tx],
                                     ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
            }
            using Bs_index = decltype(+((t * TM + ty) * N + col));
            const Bs_index Bs_base = (Bs_index)((t * TM + ty) * N + col)
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
                ::cuda::memcpy_async(&Bs[ty][tx], &B[(t * TM + ty) * N + col],
                                     ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
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
      for (; t < K / TM; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &As = As_stages[stage];
        auto &Bs = Bs_stages[stage];
        for (int k = 0; k < TM; ++k)
          acc += 3.0f * As[ty][k] * Bs[k][tx];
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
    for (int t = 0; t < K / TM; ++t) {
      As[ty][tx] = A[row * K + t * TM + tx];
      Bs[ty][tx] = B[(t * TM + ty) * N + col];
      __syncthreads();
      for (int k = 0; k < TM; ++k)
        acc += 3.0f * As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
#endif
#line 319
  C[row * N + col] = acc;
}

// tilepipe: launches mm with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_mm 1
static void tilepipe_launch_mm_2(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* C, const float* A, const float* B, int N, int K) {
  ::tilepipe_rt::TileMap As_tmap = {};
  ::tilepipe_rt::TileMap Bs_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&As_tmap, A, sizeof(float), (long long)(K), (long long)(TM), (long long)(TM));
  tma = tma && ::tilepipe_rt::encode(&Bs_tmap, B, sizeof(float), (long long)(N), (long long)(TM), (long long)(TM));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_mm_2", tma, traced);
  ::outer::thrice::mm<<<grid, block, shared_bytes, stream>>>(C, A, B, N, K, As_tmap, Bs_tmap, tma);
}
#line 321
}  // namespace thrice
}
}  // namespace outer
namespace alias = twice;

// A persistent kernel: a grid sized from the kernel's occupancy walks the rows, each block summing
// its rows' results into its own slot, so the output depends on the grid's size.
__global__ void persistent(const float* A, float* C, int rows, int nt) {
  __shared__ float s[T];
  float part = 0.0f;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    float acc = 0.0f;
    // EXPECT: launch-resources
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[((size_t)r * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
      __syncthreads();
    }
    part += acc;
  }
  C[blockIdx.x * T + threadIdx.x] = part;
}

// The safe form: the same kernel on a grid of fixed size.
__global__ void persistent_fixed(const float* A, float* C, int rows, int nt) {
  __shared__ float s_stages[3][T];
  float part = 0.0f;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
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
            ::cuda::memcpy_async(&s[threadIdx.x], &A[((size_t)r * nt + t) * T + threadIdx.x],
                                 ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
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
        acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
      __syncthreads(); // the buffers may be refilled when this block runs again
    }
#else
    { // tilepipe: below compute capability 8.0, the loop as it was
      auto &s = s_stages[0];
      for (int t = 0; t < nt; ++t) {
        s[threadIdx.x] = A[((size_t)r * nt + t) * T + threadIdx.x];
        __syncthreads();
        acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
        __syncthreads();
      }
    }
#endif
#line 359
    part += acc;
  }
  C[blockIdx.x * T + threadIdx.x] = part;
}

template <typename L>
static void runKernel(FILE* f, size_t nC, L launch) {
  float* dC = poisonedOutput<float>(nC);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, nC);
  CK(cudaFree(dC));
}

static void launchAll(FILE* f, const float* dA, const float* dB, int N, int K) {
  const size_t nC = (size_t)N * N;
  const dim3 grid(N / TM, N / TM), block(TM, TM);
  runKernel(f, nC, [&](float* dC) { mm_local_typedef<<<grid, block>>>(dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) { mm_stride_typedef<<<grid, block>>>(dC, dA, dB, N, K, K * 4); });
  runKernel(f, nC, [&](float* dC) { ::tilepipe_launch_mm(grid, block, 0, 0, dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) { ::twice::tilepipe_launch_mm_1(grid, block, 0, 0, dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) { ::twice::tilepipe_launch_mm_1(grid, block, 0, 0, dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) { ::outer::thrice::tilepipe_launch_mm_2(grid, block, 0, 0, dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) {
    using outer::thrice::mm;
    ::outer::thrice::tilepipe_launch_mm_2(grid, block, 0, 0, dC, dA, dB, N, K);
  });
  runKernel(f, nC, [&](float* dC) {
    using namespace outer;
    ::outer::thrice::tilepipe_launch_mm_2(grid, block, 0, 0, dC, dA, dB, N, K);
  });
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T, nC = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(nA, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  runKernel(f, nC, [&](float* dC) { extent_hidden<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { extent_outer<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { index_from_hiding_local<<<blocks, T>>>(dA, dC, nt, 7); });
  runKernel(f, nC, [&](float* dC) { step_hidden<<<blocks, T>>>(dA, dC, nt, 3); });
  runKernel(f, nC, [&](float* dC) { step_param<<<blocks, T>>>(dA, dC, nt, 1); });
  // The persistent kernels: as many blocks as fit, or 132, over blocks / 4 rows.
  const int rows = blocks / 4;
  int perSm = 0, sms = 0, dev = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, persistent, T, 0));
  const int grid = std::max(1, std::min(perSm * sms, 8192));
  runKernel(f, (size_t)8192 * T, [&](float* dC) {
    CK(cudaMemset(dC, 0, (size_t)8192 * T * sizeof(float)));
    persistent<<<grid, T>>>(dA, dC, rows, nt);
  });
  runKernel(f, (size_t)132 * T, [&](float* dC) { persistent_fixed<<<132, T>>>(dA, dC, rows, nt); });
  CK(cudaFree(dA));
  // The products: N = 32 * (2 + caseNo * 12) rows (3844 blocks in case 5), K = 32 * nt.
  const int N = TM * (2 + caseNo * 12), K = TM * std::max(nt, 0);
  std::vector<float> hMA = randomFloats((size_t)N * K, rng), hMB = randomFloats((size_t)K * N, rng);
  float* dMA = toDevice(hMA);
  float* dMB = toDevice(hMB);
  launchAll(f, dMA, dMB, N, K);
  CK(cudaFree(dMA));
  CK(cudaFree(dMB));
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
