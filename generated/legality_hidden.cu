// legality_hidden.cu: code the program runs that its text does not spell as a call or a store
// (destructors of temporaries, a range-for's begin(), default arguments, default member
// initializers, constructors), pointers re-pointed only through a cast to a reference, threads
// that leave in a destructor, and a loop a block runs twice without a loop statement around it.
// Each refused form stands beside a close safe form that is rewritten, run at scale: thousands of
// blocks, many more tiles than stages, random inputs, poisoned outputs. Refused loops stay as
// written; rewritten ones must match the original bit for bit (tests/gpu/verify_testdata.sh).
// In each refused form the compute phase writes the element of A that the same thread copies
// later, so a copy issued early would read the old value.
// The safe forms carry `// tilepipe: plan=always`: the point is that the analysis proves them
// legal; the cost model alone would not pipeline their small stages.
#include <cuda/pipeline>
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

#define T 64  // == blockDim.x for the one-dimensional kernels

// The first element of tile u of block b; thread x copies element x of it.
__device__ size_t tileAt(int b, int nt, int u) { return ((size_t)b * nt + u) * T; }

// A destructor that stores: the temporary's end of life is a store the text does not spell.
struct PutOnExit {
  float* p;
  size_t i;
  float v;
  __device__ ~PutOnExit() {
    if (p) p[i] = v;
  }
};

__global__ void temporary_destructor_stores(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: unknown-effects
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    (void)PutOnExit{t + 1 < nt ? A : nullptr, tileAt(blockIdx.x, nt, nt - 1) + threadIdx.x, acc};
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: a temporary with a trivial destructor and a member function pure by its body.
struct Pair {
  float a, b;
  __device__ float mix() const { return a * 0.75f + b; }
};

__global__ void temporary_without_effects(const float* A, float* C, int nt) {
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
          using s_index = decltype(+(tileAt(blockIdx.x, nt, t) + threadIdx.x));
          const s_index s_base = (s_index)(tileAt(blockIdx.x, nt, t) + threadIdx.x)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[tileAt(blockIdx.x, nt, t) + threadIdx.x],
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
      acc += Pair{s[(threadIdx.x + 1) % T], s[(threadIdx.x + 9) % T]}.mix();
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
      s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
      __syncthreads();
      acc += Pair{s[(threadIdx.x + 1) % T], s[(threadIdx.x + 9) % T]}.mix();
      __syncthreads();
    }
  }
#endif
#line 167
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Default arguments and default member initializers run code at the call or the declaration.
__device__ float* gA;  // the A of the running launch (set from the host)
__device__ int gNt;
__device__ int bumpLastTile() {
  gA[tileAt(blockIdx.x, gNt, gNt - 1) + threadIdx.x] += 1.0f;
  return 1;
}
__device__ float plusBumped(float x, int u = bumpLastTile()) { return x + (float)u; }
__device__ float plusOne(float x, int u = 1) { return x + (float)u; }
struct Bumped {
  int u = bumpLastTile();
};
struct One {
  int u = 1;
};

__global__ void default_argument_stores(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: unknown-effects
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
    __syncthreads();
    acc = plusBumped(acc * 0.5f + s[(threadIdx.x + 3) % T]);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void default_argument_constant(const float* A, float* C, int nt) {
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
          using s_index = decltype(+(tileAt(blockIdx.x, nt, t) + threadIdx.x));
          const s_index s_base = (s_index)(tileAt(blockIdx.x, nt, t) + threadIdx.x)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[tileAt(blockIdx.x, nt, t) + threadIdx.x],
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
      acc = plusOne(acc * 0.5f + s[(threadIdx.x + 3) % T]);
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
      s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
      __syncthreads();
      acc = plusOne(acc * 0.5f + s[(threadIdx.x + 3) % T]);
      __syncthreads();
    }
  }
#endif
#line 210
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void member_initializer_stores(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: unknown-effects
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
    __syncthreads();
    Bumped z;
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T] + (float)z.u;
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void member_initializer_constant(const float* A, float* C, int nt) {
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
          using s_index = decltype(+(tileAt(blockIdx.x, nt, t) + threadIdx.x));
          const s_index s_base = (s_index)(tileAt(blockIdx.x, nt, t) + threadIdx.x)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[tileAt(blockIdx.x, nt, t) + threadIdx.x],
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
      One z;
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T] + (float)z.u;
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
      s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
      __syncthreads();
      One z;
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T] + (float)z.u;
      __syncthreads();
    }
  }
#endif
#line 239
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// A range-for calls begin() and end(): here begin() stores.
struct StoringRange {
  float* p;
  size_t i;
  const float* q;
  __device__ const float* begin() {
    p[i] += 1.0f;
    return q;
  }
  __device__ const float* end() { return q + 4; }
};
// The close safe form: a view of four values whose begin() and end() only compute.
struct FourView {
  const float* q;
  __device__ const float* begin() const { return q; }
  __device__ const float* end() const { return q + 4; }
};

__global__ void range_for_begin_stores(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: unknown-effects
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
    __syncthreads();
    const float q[4] = {s[threadIdx.x], s[(threadIdx.x + 1) % T], s[(threadIdx.x + 2) % T], s[(threadIdx.x + 3) % T]};
    for (float x : StoringRange{A, tileAt(blockIdx.x, nt, nt - 1) + threadIdx.x, q}) acc = acc * 0.5f + x;
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void range_for_view(const float* A, float* C, int nt) {
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
          using s_index = decltype(+(tileAt(blockIdx.x, nt, t) + threadIdx.x));
          const s_index s_base = (s_index)(tileAt(blockIdx.x, nt, t) + threadIdx.x)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[tileAt(blockIdx.x, nt, t) + threadIdx.x],
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
      const float q[4] = {s[threadIdx.x], s[(threadIdx.x + 1) % T], s[(threadIdx.x + 2) % T], s[(threadIdx.x + 3) % T]};
      for (float x : FourView{q}) acc = acc * 0.5f + x;
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
      s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
      __syncthreads();
      const float q[4] = {s[threadIdx.x], s[(threadIdx.x + 1) % T], s[(threadIdx.x + 2) % T], s[(threadIdx.x + 3) % T]};
      for (float x : FourView{q}) acc = acc * 0.5f + x;
      __syncthreads();
    }
  }
#endif
#line 286
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// A pointer the compute phase stores through, re-pointed at A before the loop through a cast to a
// reference: the text names only `buf` as what w points to.
__global__ void cast_repoints_a_pointer(float* A, float* C, float* buf, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  float* w = buf;
  static_cast<float*&>(w) = A;
  // EXPECT: unknown-effects
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 7) % T];
    w[tileAt(blockIdx.x, nt, nt - 1) + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: w stays a copy of buf, which the signature says A does not overlap.
__global__ void pointer_copy_kept(const float* __restrict__ A, float* __restrict__ C,
                                  float* __restrict__ buf, int nt) {
  alignas(16) __shared__ float s_stages[3][T];
  float acc = 0.0f;
  float* w = buf;
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
          using s_index = decltype(+(tileAt(blockIdx.x, nt, t) + threadIdx.x));
          const s_index s_base = (s_index)(tileAt(blockIdx.x, nt, t) + threadIdx.x)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[tileAt(blockIdx.x, nt, t) + threadIdx.x],
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
      acc += s[(threadIdx.x + 7) % T];
      w[tileAt(blockIdx.x, nt, t) + threadIdx.x] = acc;
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
      s[threadIdx.x] = A[tileAt(blockIdx.x, nt, t) + threadIdx.x];
      __syncthreads();
      acc += s[(threadIdx.x + 7) % T];
      w[tileAt(blockIdx.x, nt, t) + threadIdx.x] = acc;
      __syncthreads();
    }
  }
#endif
#line 322
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The rows ty < 16 of each 32x32 block leave (PTX exit) in a temporary's destructor before the
// loop: the copies cannot be spread over the block's threads, so the rewrite copies per element,
// each thread its own, and must still match.
struct LeaveIfTopHalf {
  __device__ ~LeaveIfTopHalf() {
    if (threadIdx.y < 16) asm volatile("exit;");
  }
};

__global__ void exit_in_destructor(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][32][32];
  (void)LeaveIfTopHalf{};
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
          ::cuda::memcpy_async(&s[threadIdx.y][threadIdx.x], &A[((size_t)(blockIdx.x * nt + t) * 32 + threadIdx.y) * 32 + threadIdx.x],
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
      for (int j = 0; j < 32; ++j) acc += s[threadIdx.y][j] * (float)(j + 1);
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
      s[threadIdx.y][threadIdx.x] = A[((size_t)(blockIdx.x * nt + t) * 32 + threadIdx.y) * 32 + threadIdx.x];
      __syncthreads();
      for (int j = 0; j < 32; ++j) acc += s[threadIdx.y][j] * (float)(j + 1);
      __syncthreads();
    }
  }
#endif
#line 346
  C[(blockIdx.x * 32 + threadIdx.y) * 32 + threadIdx.x] = acc;
}

// A block runs the loop twice, through a lambda and through a backward goto, with no loop
// statement around it: the rewrite must keep a barrier after the loop, or a fast warp's next-run
// copies overwrite a stage a slow warp still reads. Warp 1 computes 24 times longer.
__global__ void rerun_through_lambda(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][T];
  float acc = 0.0f;
  const int reps = threadIdx.x >= 32 ? 24 : 1;
  auto run = [&](int pass) {
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
            ::cuda::memcpy_async(&s[threadIdx.x], &A[tileAt(blockIdx.x, nt, (t + pass * 5) % nt) + threadIdx.x],
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
        int idx = threadIdx.x;
        for (int r = 0; r < reps; ++r)
          for (int j = 0; j < 8; ++j) {
            const float v = s[idx];
            acc = acc * 0.5f + v;
            idx = (idx + 1 + (int)(__float_as_uint(v) & 7u)) % T;
          }
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
        s[threadIdx.x] = A[tileAt(blockIdx.x, nt, (t + pass * 5) % nt) + threadIdx.x];
        __syncthreads();
        int idx = threadIdx.x;
        for (int r = 0; r < reps; ++r)
          for (int j = 0; j < 8; ++j) {
            const float v = s[idx];
            acc = acc * 0.5f + v;
            idx = (idx + 1 + (int)(__float_as_uint(v) & 7u)) % T;
          }
        __syncthreads();
      }
    }
#endif
#line 371
  };
  run(0);
  run(1);
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void rerun_through_goto(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][T];
  float acc = 0.0f;
  const int reps = threadIdx.x >= 32 ? 24 : 1;
  int pass = 0;
again:
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
          ::cuda::memcpy_async(&s[threadIdx.x], &A[tileAt(blockIdx.x, nt, (t + pass * 5) % nt) + threadIdx.x],
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
      int idx = threadIdx.x;
      for (int r = 0; r < reps; ++r)
        for (int j = 0; j < 8; ++j) {
          const float v = s[idx];
          acc = acc * 0.5f + v;
          idx = (idx + 1 + (int)(__float_as_uint(v) & 7u)) % T;
        }
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
      s[threadIdx.x] = A[tileAt(blockIdx.x, nt, (t + pass * 5) % nt) + threadIdx.x];
      __syncthreads();
      int idx = threadIdx.x;
      for (int r = 0; r < reps; ++r)
        for (int j = 0; j < 8; ++j) {
          const float v = s[idx];
          acc = acc * 0.5f + v;
          idx = (idx + 1 + (int)(__float_as_uint(v) & 7u)) % T;
        }
      __syncthreads();
    }
  }
#endif
#line 397
  if (++pass < 2) goto again;
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Runs a kernel that also writes A on a fresh copy of A; writes C, then A.
template <typename L>
static void runWritingA(FILE* f, const std::vector<float>& hA, size_t nC, L launch) {
  float* dA = toDevice(hA);
  float* dC = poisonedOutput<float>(nC);
  CK(cudaMemcpyToSymbol(gA, &dA, sizeof dA));
  launch(dA, dC);
  checkLaunch();
  writeOutput(f, dC, nC);
  writeOutput(f, dA, hA.size());
  CK(cudaFree(dA));
  CK(cudaFree(dC));
}

// Runs a kernel that only reads A; writes C.
template <typename L>
static void runReadingA(FILE* f, const float* dA, size_t nC, L launch) {
  float* dC = poisonedOutput<float>(nC);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, nC);
  CK(cudaFree(dC));
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T, nC = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(nA, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  CK(cudaMemcpyToSymbol(gNt, &nt, sizeof nt));
  runWritingA(f, hA, nC, [&](float* dA, float* dC) { temporary_destructor_stores<<<blocks, T>>>(dA, dC, nt); });
  runWritingA(f, hA, nC, [&](float* dA, float* dC) { default_argument_stores<<<blocks, T>>>(dA, dC, nt); });
  runWritingA(f, hA, nC, [&](float* dA, float* dC) { member_initializer_stores<<<blocks, T>>>(dA, dC, nt); });
  runWritingA(f, hA, nC, [&](float* dA, float* dC) { range_for_begin_stores<<<blocks, T>>>(dA, dC, nt); });
  runWritingA(f, hA, nC, [&](float* dA, float* dC) {
    float* dBuf = poisonedOutput<float>(nA);
    cast_repoints_a_pointer<<<blocks, T>>>(dA, dC, dBuf, nt);
    checkLaunch();
    writeOutput(f, dBuf, nA);  // untouched: w was re-pointed at A
    CK(cudaFree(dBuf));
  });
  float* dA = toDevice(hA);
  runReadingA(f, dA, nC, [&](float* dC) { temporary_without_effects<<<blocks, T>>>(dA, dC, nt); });
  runReadingA(f, dA, nC, [&](float* dC) { default_argument_constant<<<blocks, T>>>(dA, dC, nt); });
  runReadingA(f, dA, nC, [&](float* dC) { member_initializer_constant<<<blocks, T>>>(dA, dC, nt); });
  runReadingA(f, dA, nC, [&](float* dC) { range_for_view<<<blocks, T>>>(dA, dC, nt); });
  runReadingA(f, dA, nC, [&](float* dC) {
    float* dBuf = poisonedOutput<float>(nA);
    pointer_copy_kept<<<blocks, T>>>(dA, dC, dBuf, nt);
    checkLaunch();
    writeOutput(f, dBuf, nA);
    CK(cudaFree(dBuf));
  });
  runReadingA(f, dA, nC, [&](float* dC) { rerun_through_lambda<<<blocks, T>>>(dA, dC, nt); });
  runReadingA(f, dA, nC, [&](float* dC) { rerun_through_goto<<<blocks, T>>>(dA, dC, nt); });
  // 32x32 tiles: nA / 1024 tiles in all, nt per block, so blocks / 16 blocks.
  runReadingA(f, dA, (size_t)(blocks / 16) * 1024,
              [&](float* dC) { exit_in_destructor<<<blocks / 16, dim3(32, 32)>>>(dA, dC, nt); });
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
