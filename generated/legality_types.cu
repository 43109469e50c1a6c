// legality_types.cu: element types, parameters and declarations whose meaning the copies could
// change. A name for an array type as the element type, a volatile member, an element macro
// redefined between the tile's declaration and the loop: refused. A __device__ function whose
// copy index takes a per-thread argument: rewritten with per-thread copies only. Each refused or
// narrowed form stands beside a close safe form that is rewritten, run at scale: thousands of
// blocks, many more tiles than stages, random inputs, poisoned outputs. Refused loops stay as
// written; rewritten ones must match the original bit for bit (tests/gpu/verify_testdata.sh).
// The safe forms carry `// tilepipe: plan=always`: the point is that the analysis proves them
// legal; the cost model alone would not pipeline their small stages.
#include <cuda/pipeline>
#line 10
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

// The first element of tile u of block b, T elements of 4 floats each.
__device__ size_t quadAt(int b, int nt, int u) { return ((size_t)b * nt + u) * T * 4; }

// A name for an array type: each element of the tile is four floats, which a copy sized by the
// name would move as one.
typedef float Quad[4];
__global__ void quad_elements(const float* A, float* C, int nt) {
  __shared__ Quad s[T];
  float acc = 0.0f;
  // EXPECT: element-type
  for (int t = 0; t < nt; ++t) {
    for (int q = 0; q < 4; ++q) s[threadIdx.x][q] = A[quadAt(blockIdx.x, nt, t) + threadIdx.x * 4 + q];
    __syncthreads();
    const Quad& n = s[(threadIdx.x + 1) % T];
    acc = acc * 0.5f + n[0] - n[1] + 0.25f * n[2] * n[3];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The safe form: a name for the scalar.
typedef float Real;
__global__ void real_elements(const float* A, float* C, int nt) {
  __shared__ Real s_stages[3][T][4];
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
          for (int q = 0; q < 4; ++q) ::cuda::memcpy_async(&s[threadIdx.x][q], &A[quadAt(blockIdx.x, nt, t) + threadIdx.x * 4 + q],
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
      const int n = (threadIdx.x + 1) % T;
      acc = acc * 0.5f + s[n][0] - s[n][1] + 0.25f * s[n][2] * s[n][3];
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
      for (int q = 0; q < 4; ++q) s[threadIdx.x][q] = A[quadAt(blockIdx.x, nt, t) + threadIdx.x * 4 + q];
      __syncthreads();
      const int n = (threadIdx.x + 1) % T;
      acc = acc * 0.5f + s[n][0] - s[n][1] + 0.25f * s[n][2] * s[n][3];
      __syncthreads();
    }
  }
#endif
#line 154
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// A volatile member: a copy of the element reads it, where and when the code says.
struct VolatileCell {
  volatile float x;
};
__global__ void volatile_member(const VolatileCell* A, float* C, int nt) {
  __shared__ VolatileCell s[T];
  float acc = 0.0f;
  // EXPECT: element-type
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 3) % T].x;
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The safe form: a plain member.
struct Cell {
  float x;
};
__global__ void plain_member(const Cell* A, float* C, int nt) {
  alignas(16) __shared__ Cell s_stages[3][T];
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
      acc = acc * 0.5f + s[(threadIdx.x + 3) % T].x;
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
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 3) % T].x;
      __syncthreads();
    }
  }
#endif
#line 189
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The element type's macro means another type at the loop than at the declaration.
#define ELEM float
__global__ void element_macro_redefined(const float* A, float* C, int nt) {
  __shared__ ELEM s[T];
#undef ELEM
#define ELEM int
  float acc = 0.0f;
  // EXPECT: source-text
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T] * (ELEM)2;
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
#undef ELEM

// The safe form: a conditional between the declaration and the loop changes no name.
__global__ void conditional_before_loop(const float* A, float* C, int nt) {
  alignas(16) __shared__ float s_stages[3][T];
#ifdef TILEPIPE_NEVER_DEFINED
  float acc = 1.0f;
#else
  float acc = 0.0f;
#endif
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
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T] * 2;
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
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T] * 2;
      __syncthreads();
    }
  }
#endif
#line 226
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// A __device__ function's parameter is what each thread passed: here a per-thread offset, so
// whole-tile copies (one box for the block) would fetch other elements; per-thread copies do not.
__device__ float strided_tiles(const float* A, int nt, int off) {
  __shared__ float s_stages[3][T];
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
          ::cuda::memcpy_async(&s[threadIdx.x], &A[((size_t)blockIdx.x * nt + t) * T * 4 + threadIdx.x + off],
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
      acc = acc * 0.5f + s[(threadIdx.x + 7) % T];
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
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T * 4 + threadIdx.x + off];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 7) % T];
      __syncthreads();
    }
  }
#endif
#line 242
  return acc;
}
__global__ void per_thread_argument(const float* A, float* C, int nt) {
  C[blockIdx.x * T + threadIdx.x] = strided_tiles(A, nt, 2 * threadIdx.x);
}

// The safe form: every call passes a value the same in all threads of the block.
__device__ float block_tiles(const float* A, int nt, int off) {
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
          using s_index = decltype(+(((size_t)blockIdx.x * nt + t) * T * 4 + threadIdx.x + off));
          const s_index s_base = (s_index)(((size_t)blockIdx.x * nt + t) * T * 4 + threadIdx.x + off)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[((size_t)blockIdx.x * nt + t) * T * 4 + threadIdx.x + off],
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
      acc = acc * 0.5f + s[(threadIdx.x + 7) % T];
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
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T * 4 + threadIdx.x + off];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 7) % T];
      __syncthreads();
    }
  }
#endif
#line 260
  return acc;
}
__global__ void uniform_argument(const float* A, float* C, int nt) {
  C[blockIdx.x * T + threadIdx.x] = block_tiles(A, nt, 2 * T);
}

template <typename L>
static void runKernel(FILE* f, size_t nC, L launch) {
  float* dC = poisonedOutput<float>(nC);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, nC);
  CK(cudaFree(dC));
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T * 4, nC = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(nA, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  runKernel(f, nC, [&](float* dC) { quad_elements<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { real_elements<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { volatile_member<<<blocks, T>>>((const VolatileCell*)dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { plain_member<<<blocks, T>>>((const Cell*)dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { element_macro_redefined<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { conditional_before_loop<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { per_thread_argument<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { uniform_argument<<<blocks, T>>>(dA, dC, nt); });
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
