// pragma_loops.cu: `#pragma unroll` where real kernels put it. On the tiled loop itself the rewrite
// writes it on its mainloop (and on the loop kept as it was); on an inner copy loop the copy loop
// keeps it, in every place the copy phase goes. The cost model picks each loop's plan; the twins
// marked `// tilepipe: plan=always` take the cp.async pipeline (another loop pragma, which nvcc
// warns of in device code, is refused: tests/lit/pragmas.cu). Run at scale: thousands of blocks,
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

#define T 64  // == blockDim.x
#define W 256 // a tile of four elements a thread

// The tiled loop, not unrolled.
__global__ void unroll_one(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int t = 0;
    float s_next[4];
    auto t_fetch = t;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto t = t_fetch;
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          s_next[slot] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
        }
        ++t;
        t_fetch = t;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        s[threadIdx.x] = s_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      ++t;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    #pragma unroll 1
    while (t < nt) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(t < nt))
          break;
        trip(slot);
      }
    }
  }
#line 131
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void unroll_one_pipelined(const float* A, float* C, int nt) {
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
    __syncthreads(); // each thread copies chunks that other threads may have written before the loop
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
#pragma unroll 1
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
    auto &s = s_stages[0];
    #pragma unroll 1
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
      __syncthreads();
    }
  }
#endif
#line 146
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// A strided inner copy loop, unrolled, and an unrolled inner compute loop.
__global__ void unrolled_copy(const float* A, float* C, int nt) {
  __shared__ float s_stages[2][W];
  float acc = 0.0f;
  // EXPECT: pipelined
  { // tilepipe: the pipeline where the launch leaves the SMs mostly idle (at most 16 warps per SM)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if ((unsigned long long)gridDim.x * gridDim.y * gridDim.z * ((blockDim.x * blockDim.y * blockDim.z + 31) / 32) <= 16ull * [] { unsigned sms; asm("mov.u32 %0, %%nsmid;" : "=r"(sms)); return sms; }())
  // tilepipe: 2-stage pipeline of cp.async copies; the copies of the next 1 tiles overlap the compute on this one.
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
#pragma unroll
            for (int i = threadIdx.x; i < W; i += T)
              ::cuda::memcpy_async(&s[i], &A[((size_t)blockIdx.x * nt + t) * W + i],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
        }
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 2 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 1 tiles.
    for (int prologue = 0; prologue < 1; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 0 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
#pragma unroll 4
        for (int j = 0; j < 4; ++j)
          acc = acc * 0.75f + s[(threadIdx.x * 4 + j + 3) % W];
      pipe.consumer_release();
      stage = stage + 1 == 2 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
  else
#endif
  { // tilepipe: below compute capability 8.0 and in launches that fill the GPU, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < nt; ++t) {
#pragma unroll
      for (int i = threadIdx.x; i < W; i += T)
        s[i] = A[((size_t)blockIdx.x * nt + t) * W + i];
      __syncthreads();
#pragma unroll 4
      for (int j = 0; j < 4; ++j)
        acc = acc * 0.75f + s[(threadIdx.x * 4 + j + 3) % W];
      __syncthreads();
    }
  }
  }
#line 164
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void unrolled_copy_pipelined(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][W];
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
#pragma unroll
            for (int i = threadIdx.x; i < W; i += T)
              ::cuda::memcpy_async(&s[i], &A[((size_t)blockIdx.x * nt + t) * W + i],
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
#pragma unroll 2
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
#pragma unroll 4
        for (int j = 0; j < 4; ++j)
          acc = acc * 0.75f + s[(threadIdx.x * 4 + j + 3) % W];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    #pragma unroll 2
    for (int t = 0; t < nt; ++t) {
#pragma unroll
      for (int i = threadIdx.x; i < W; i += T)
        s[i] = A[((size_t)blockIdx.x * nt + t) * W + i];
      __syncthreads();
#pragma unroll 4
      for (int j = 0; j < 4; ++j)
        acc = acc * 0.75f + s[(threadIdx.x * 4 + j + 3) % W];
      __syncthreads();
    }
  }
#endif
#line 183
  C[blockIdx.x * T + threadIdx.x] = acc;
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
  const size_t nA = (size_t)blocks * nt * W, nC = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(nA, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  runKernel(f, nC, [&](float* dC) { unroll_one<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { unroll_one_pipelined<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { unrolled_copy<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { unrolled_copy_pipelined<<<blocks, T>>>(dA, dC, nt); });
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
