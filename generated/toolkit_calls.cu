// toolkit_calls.cu: loops that call what nvcc declares and Clang's CUDA headers lack, and a
// function object made where it is called. __stcs (a streaming store: evict first) on float4 and
// __ldca (a load cached at all levels) are declared for tilepipe's parse by its own prelude, and
// known by signature as the toolkit's: they reach memory through their pointer alone. `Mul()`
// runs its implicit, trivial constructor, which is no code. Run at scale: thousands of blocks,
// many more tiles than stages, random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
#include <cuda/pipeline>
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

struct Mul {
  __device__ float operator()(float a, float b) const { return __fmul_rn(a, b); }
};

// 64 float4 a tile; the block's sums leave by streaming stores.
__global__ void streaming_out(const float4* __restrict__ A, float4* __restrict__ C, int nt) {
  alignas(16) __shared__ float4 s_stages[3][64];
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
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
          using s_index = decltype(+(((size_t)blockIdx.x * nt + t) * 64 + threadIdx.x));
          const s_index s_base = (s_index)(((size_t)blockIdx.x * nt + t) * 64 + threadIdx.x)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[((size_t)blockIdx.x * nt + t) * 64 + threadIdx.x],
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
      const float4 a = s[(threadIdx.x + 7) % 64], b = s[(3 * threadIdx.x + 1) % 64];
      acc.x = __fadd_rn(acc.x, __fmul_rn(a.x, b.w));
      acc.y = __fadd_rn(acc.y, __fmul_rn(a.y, b.z));
      acc.z = __fadd_rn(acc.z, __fmul_rn(a.z, b.y));
      acc.w = __fadd_rn(acc.w, __fmul_rn(a.w, b.x));
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
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * 64 + threadIdx.x];
      __syncthreads();
      const float4 a = s[(threadIdx.x + 7) % 64], b = s[(3 * threadIdx.x + 1) % 64];
      acc.x = __fadd_rn(acc.x, __fmul_rn(a.x, b.w));
      acc.y = __fadd_rn(acc.y, __fmul_rn(a.y, b.z));
      acc.z = __fadd_rn(acc.z, __fmul_rn(a.z, b.y));
      acc.w = __fadd_rn(acc.w, __fmul_rn(a.w, b.x));
      __syncthreads();
    }
  }
#endif
#line 136
  __stcs(&C[(size_t)blockIdx.x * 64 + threadIdx.x], acc);
}

// A function object, and weights read with __ldca in the compute phase.
__global__ void functor_mix(const float* __restrict__ A, const float* __restrict__ W, float* __restrict__ C, int nt) {
  alignas(16) __shared__ float s_stages[3][128];
  float acc = 0.f;
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
          using s_index = decltype(+(((size_t)blockIdx.x * nt + t) * 128 + threadIdx.x));
          const s_index s_base = (s_index)(((size_t)blockIdx.x * nt + t) * 128 + threadIdx.x)
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
              ::cuda::memcpy_async(&s[threadIdx.x], &A[((size_t)blockIdx.x * nt + t) * 128 + threadIdx.x],
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
      for (int j = 0; j < 4; ++j)
        acc = __fadd_rn(acc, Mul()(s[(threadIdx.x + 17 * j) % 128], __ldca(&W[(t + j) % 16])));
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
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * 128 + threadIdx.x];
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = __fadd_rn(acc, Mul()(s[(threadIdx.x + 17 * j) % 128], __ldca(&W[(t + j) % 16])));
      __syncthreads();
    }
  }
#endif
#line 152
  C[(size_t)blockIdx.x * 128 + threadIdx.x] = acc;
}

static void runStreaming(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  std::vector<float> h = randomFloats((size_t)blocks * (nt > 0 ? nt : 1) * 64 * 4, rng);
  std::vector<float4> hA(h.size() / 4);
  memcpy(hA.data(), h.data(), hA.size() * sizeof(float4));
  printf("streaming_out case %d: %d blocks, %d tiles\n", caseNo, blocks, nt);
  float4* dA = toDevice(hA);
  float4* dC = poisonedOutput<float4>((size_t)blocks * 64);
  streaming_out<<<blocks, 64>>>(dA, dC, nt);
  checkLaunch();
  writeOutput(f, dC, (size_t)blocks * 64);
  CK(cudaFree(dA));
  CK(cudaFree(dC));
}

static void runFunctor(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, 100 + caseNo);
  std::vector<float> hA = randomFloats((size_t)blocks * (nt > 0 ? nt : 1) * 128, rng), hW = randomFloats(16, rng);
  printf("functor_mix case %d: %d blocks, %d tiles\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  float* dW = toDevice(hW);
  float* dC = poisonedOutput<float>((size_t)blocks * 128);
  functor_mix<<<blocks, 128>>>(dA, dW, dC, nt);
  checkLaunch();
  writeOutput(f, dC, (size_t)blocks * 128);
  CK(cudaFree(dA));
  CK(cudaFree(dW));
  CK(cudaFree(dC));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runStreaming(f, seed, 0, 3, 0);     // no tiles
  runStreaming(f, seed, 1, 5, 1);     // one tile
  runStreaming(f, seed, 2, 7, 3);     // three tiles
  runStreaming(f, seed, 3, 4096, 70); // 70 tiles, 4096 blocks
  runFunctor(f, seed, 0, 3, 0);
  runFunctor(f, seed, 1, 5, 1);
  runFunctor(f, seed, 2, 7, 2);
  runFunctor(f, seed, 3, 4096, 97);   // 97 tiles, 4096 blocks
  closeOutput(f);
  return 0;
}
