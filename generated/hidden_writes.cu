// hidden_writes.cu: writes and barriers that only a declaration shows, each beside a close safe
// form, run at scale: thousands of blocks, many more tiles than stages, random inputs, poisoned
// outputs. A struct's reference member is not the struct's storage; const does not keep an object
// as it was (a const member function may cast const away); an object holding a pointer
// (an iterator) handed to the toolkit's templates may be written through, and a class of the
// user's may have its members run by them; a type named thread_block is a barrier only when it is
// cooperative groups'. Refused loops stay as written; rewritten ones must match the original.
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
#include <cuda/std/iterator>
#include <cuda/std/__algorithm/fill_n.h>
namespace cg = cooperative_groups;

#define T 64  // == blockDim.x

// [[maybe_unused]] below: nvcc counts a use through a reference member as no use of the struct.
struct FloatRef { float& x; };
struct IntRef { int& x; };
struct Val { int x; };

// C5: the compute phase stores into the next tile of A through a struct's reference member.
__global__ void store_through_reference_member(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: unknown-effects
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (t + 1 < nt) {
      [[maybe_unused]] FloatRef r{A[(blockIdx.x * nt + t + 1) * T + (threadIdx.x + 5) % T]};
      r.x = acc;
    }
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: a struct holding the value itself is the struct's own storage.
__global__ void store_into_member_of_local_struct(const float* A, float* C, int nt) {
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
      Val v{(int)(s[(threadIdx.x + 1) % T] * 1000.0f)};
      v.x += 3;
      acc += (float)v.x;
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
      s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      Val v{(int)(s[(threadIdx.x + 1) % T] * 1000.0f)};
      v.x += 3;
      acc += (float)v.x;
      __syncthreads();
    }
  }
#endif
#line 187
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// C1/C2: the copy reads an offset through a reference member; the compute phase changes it.
__global__ void offset_through_reference_member(const float* A, float* C, int nt) {
  __shared__ float s[T];
  int off = 0;
  [[maybe_unused]] IntRef r{off};
  float acc = 0.0f;
  // EXPECT: address-not-invariant
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x + r.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (s[0] > 0.0f && off < T) off++;  // s[0]: the same in every thread of the block
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// C1: the bound, read through a reference member, shrinks in the compute phase.
__global__ void bound_through_reference_member(const float* A, float* C, int nt) {
  __shared__ float s[T];
  int lim = nt;
  [[maybe_unused]] IntRef r{lim};
  float acc = 0.0f;
  // EXPECT: loop-condition
  for (int t = 0; t < r.x; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 3) % T];
    if (s[0] > 0.5f && lim > t + 1) lim--;
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: an offset held by value in a local struct that nothing changes.
__global__ void offset_in_member_of_local_struct(const float* A, float* C, int nt) {
  alignas(16) __shared__ float s_stages[3][T];
  Val o{T / 2};
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
          using s_index = decltype(+((blockIdx.x * nt + t) * T + threadIdx.x + o.x));
          const s_index s_base = (s_index)((blockIdx.x * nt + t) * T + threadIdx.x + o.x)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[(blockIdx.x * nt + t) * T + threadIdx.x + o.x],
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
      acc += s[(threadIdx.x + 1) % T];
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
      s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x + o.x];
      __syncthreads();
      acc += s[(threadIdx.x + 1) % T];
      __syncthreads();
    }
  }
#endif
#line 237
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// C2: const keeps nothing as it was: the compute phase calls a const member function that casts
// const away and moves the offset the copy reads.
struct Offset {
  int v;
  __device__ void bump() const {
    if (v < T) const_cast<Offset*>(this)->v++;
  }
  __device__ int get() const { return v; }
};
__global__ void offset_changed_by_const_member(const float* A, float* C, int nt) {
  __shared__ float s[T];
  Offset o{0};
  float acc = 0.0f;
  // EXPECT: address-not-invariant
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x + o.v];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (s[0] > 0.0f) o.bump();
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: the compute phase only reads the offset through a const member function.
__global__ void offset_read_by_const_member(const float* A, float* C, int nt) {
  alignas(16) __shared__ float s_stages[3][T];
  Offset o{T / 4};
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
          using s_index = decltype(+((blockIdx.x * nt + t) * T + threadIdx.x + o.v));
          const s_index s_base = (s_index)((blockIdx.x * nt + t) * T + threadIdx.x + o.v)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[(blockIdx.x * nt + t) * T + threadIdx.x + o.v],
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
      acc += s[(threadIdx.x + 1) % T] * (float)o.get();
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
      s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x + o.v];
      __syncthreads();
      acc += s[(threadIdx.x + 1) % T] * (float)o.get();
      __syncthreads();
    }
  }
#endif
#line 277
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// C5/C6: an iterator made before the loop is handed to the toolkit's fill_n, which writes the
// next tile of A through the pointer inside it.
__global__ void toolkit_writes_through_iterator(float* A, float* C, int nt) {
  __shared__ float s[T];
  const long total = (long)gridDim.x * nt * T;
  cuda::std::reverse_iterator<float*> end(A + total);
  float acc = 0.0f;
  // EXPECT: unknown-effects
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (t + 1 < nt) {
      const long e = (long)(blockIdx.x * nt + t + 1) * T + (threadIdx.x + 7) % T;
      cuda::std::fill_n(end + (total - 1 - e), 1, acc);
    }
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// C6: an iterator class of the user's: the toolkit's fill_n runs its operator*, which the
// analysis never sees called.
struct Cursor {
  float* p;
  __device__ float& operator*() const { return *p; }
  __device__ Cursor& operator++() { ++p; return *this; }
};
__global__ void toolkit_runs_user_iterator(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: unknown-effects
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (t + 1 < nt) {
      Cursor c{A + (blockIdx.x * nt + t + 1) * T + (threadIdx.x + 9) % T};
      cuda::std::fill_n(c, 1, acc);
    }
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: the toolkit's fill_n on a local array, through a plain pointer.
__global__ void toolkit_fills_local_array(const float* A, float* C, int nt) {
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
      float pair[2];
      const float v = s[(threadIdx.x + 1) % T];
      cuda::std::fill_n(pair, 2, v);
      acc += pair[0] * 0.5f + pair[1];
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
      float pair[2];
      const float v = s[(threadIdx.x + 1) % T];
      cuda::std::fill_n(pair, 2, v);
      acc += pair[0] * 0.5f + pair[1];
      __syncthreads();
    }
  }
#endif
#line 340
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// A type of the user's named like cooperative groups' block, whose sync() does nothing. The
// original is right as written (each thread reads only its own element, and threads run different
// trip counts), so it is no candidate: a rewrite would put a real __syncthreads() where threads
// arrive unevenly.
namespace mylib {
struct thread_block { __device__ void sync() const {} };
}
__global__ void look_alike_barrier(const float* A, float* C, int nt) {
  __shared__ float s[T];
  mylib::thread_block block;
  float acc = 0.0f;
  for (int t = 0; t < nt - (int)(threadIdx.x & 1); ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    block.sync();
    acc = acc * 0.75f + s[threadIdx.x];
    block.sync();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: cooperative groups' own block barrier.
__global__ void cooperative_groups_barrier(const float* A, float* C, int nt) {
  alignas(16) __shared__ float s_stages[3][T];
  cg::thread_block block = cg::this_thread_block();
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
      acc = acc * 0.75f + s[(threadIdx.x + 13) % T];
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
      s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
      block.sync();
      acc = acc * 0.75f + s[(threadIdx.x + 13) % T];
      block.sync();
    }
  }
#endif
#line 376
  C[blockIdx.x * T + threadIdx.x] = acc;
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T;
  // One tile more than the kernels read at offset 0, for the one that reads T / 2 further.
  std::vector<float> hA = randomFloats(nA + T, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  const size_t nC = (size_t)blocks * T;
  // The kernels that write A: each gets its own copy, and A is an output too.
  void (*writers[])(float*, float*, int) = {store_through_reference_member,
                                            toolkit_writes_through_iterator,
                                            toolkit_runs_user_iterator};
  for (auto k : writers) {
    float* dW = toDevice(hA);
    float* dC = poisonedOutput<float>(nC);
    k<<<blocks, T>>>(dW, dC, nt);
    checkLaunch();
    writeOutput(f, dC, nC);
    writeOutput(f, dW, nA);
    CK(cudaFree(dW));
    CK(cudaFree(dC));
  }
  void (*readers[])(const float*, float*, int) = {
      store_into_member_of_local_struct, offset_through_reference_member,
      bound_through_reference_member,    offset_in_member_of_local_struct,
      toolkit_fills_local_array,         look_alike_barrier,
      cooperative_groups_barrier,        offset_changed_by_const_member,
      offset_read_by_const_member};
  float* dA = toDevice(hA);
  for (auto k : readers) {
    float* dC = poisonedOutput<float>(nC);
    k<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, nC);
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
