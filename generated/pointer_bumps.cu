// pointer_bumps.cu: the tiled GEMM as the popular SGEMM tutorials write it. The kernel's pointer
// parameters are moved to the block's tiles before the loop (`A += blockIdx.y * TB * K;`) and
// advanced in the loop body after the copies (`A += TB; B += TB * N;`), or after the trailing
// barrier, the loop counter steps by the tile. Those increments run once in every iteration, after the copy phase, by steps the loop
// never changes: A and B are induction variables like the loop's counter, and the fetch cursor
// advances them too. Twins that are refused: an increment under a condition, an increment whose
// step the loop changes, an increment before the barrier that publishes the tiles. The cost model
// picks each loop's plan; the twins marked `// tilepipe: plan=always` take the cp.async pipeline.
// Run at scale: thousands of blocks, many more tiles than stages, random inputs, poisoned outputs
// (tests/gpu/verify_testdata.sh).
#include <cuda/pipeline>
#line 11
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

#define TB 16

// The tutorial's kernel: parameters moved to the block's tiles, then bumped after the barrier.
__global__ void sgemm_bumped(int M, int N, int K, float alpha, const float* A, const float* B,
                             float beta, float* C) {
  __shared__ float As[TB * TB];
  __shared__ float Bs[TB * TB];
  const int tx = threadIdx.x % TB, ty = threadIdx.x / TB;
  A += blockIdx.y * TB * K;
  B += blockIdx.x * TB;
  C += blockIdx.y * TB * N + blockIdx.x * TB;
  float tmp = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int bk = 0;
    float As_next[4];
    float Bs_next[4];
    auto bk_fetch = bk;
    auto A_fetch = A;
    auto B_fetch = B;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto bk = bk_fetch;
      auto A = A_fetch;
      auto B = B_fetch;
      if (bk < K) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          As_next[slot] = A[ty * K + tx];
          Bs_next[slot] = B[ty * N + tx];
        }
        bk += TB; A += TB; B += TB * N;
        bk_fetch = bk;
        A_fetch = A;
        B_fetch = B;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        As[ty * TB + tx] = As_next[slot];
        Bs[ty * TB + tx] = Bs_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        A += TB;
        B += TB * N;
        for (int k = 0; k < TB; ++k)
          tmp += As[ty * TB + k] * Bs[k * TB + tx];
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      bk += TB;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (bk < K) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(bk < K))
          break;
        trip(slot);
      }
    }
  }
#line 143
  C[ty * N + tx] = alpha * tmp + beta * C[ty * N + tx];
}

// The same, the bumps after the compute, in one statement, the loop counting tiles.
__global__ void sgemm_bumped_late(int M, int N, int K, float alpha, const float* A, const float* B,
                                  float beta, float* C) {
  alignas(16) __shared__ float As_stages[3][TB][TB];
  alignas(16) __shared__ float Bs_stages[3][TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  A += blockIdx.y * TB * K;
  B += blockIdx.x * TB;
  float tmp = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    auto A_fetch = A;
    auto B_fetch = B;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      auto A = A_fetch;
      auto B = B_fetch;
      if (t < K / TB) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using As_index = decltype(+(ty * K + tx));
          const As_index As_base = (As_index)(ty * K + tx)
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
              const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
              ::cuda::memcpy_async(&As[row0][col],
                                   &A[As_base + (As_index)row0 * (As_index)(K) + (As_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&As[ty][tx], &A[ty * K + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
          }
          using Bs_index = decltype(+(ty * N + tx));
          const Bs_index Bs_base = (Bs_index)(ty * N + tx)
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
              const unsigned col_1 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
              ::cuda::memcpy_async(&Bs[row0_1][col_1],
                                   &B[Bs_base + (Bs_index)row0_1 * (Bs_index)(N) + (Bs_index)col_1],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&Bs[ty][tx], &B[ty * N + tx],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
          }
        }
        ++t; A += TB, B += TB * N;
        t_fetch = t;
        A_fetch = A;
        B_fetch = B;
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
    for (; t < K / TB; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < TB; ++k)
        tmp += As[ty][k] * Bs[k][tx];
      A += TB, B += TB * N;
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
    for (int t = 0; t < K / TB; ++t) {
      As[ty][tx] = A[ty * K + tx];
      Bs[ty][tx] = B[ty * N + tx];
      __syncthreads();
      for (int k = 0; k < TB; ++k)
        tmp += As[ty][k] * Bs[k][tx];
      A += TB, B += TB * N;
      __syncthreads();
    }
  }
#endif
#line 166
  C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx] = alpha * tmp + beta * C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx];
}

// The bumps after the trailing barrier, the for loop's tail increments.
__global__ void sgemm_bumped_after(int M, int N, int K, float alpha, const float* A,
                                   const float* B, float beta, float* C) {
  alignas(16) __shared__ float As_stages[3][TB][TB];
  alignas(16) __shared__ float Bs_stages[3][TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  A += blockIdx.y * TB * K;
  B += blockIdx.x * TB;
  float tmp = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int bk = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto bk_fetch = bk;
    auto A_fetch = A;
    auto B_fetch = B;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto bk = bk_fetch;
      auto A = A_fetch;
      auto B = B_fetch;
      if (bk < K) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using As_index = decltype(+(ty * K + tx));
          const As_index As_base = (As_index)(ty * K + tx)
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
              const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
              ::cuda::memcpy_async(&As[row0][col],
                                   &A[As_base + (As_index)row0 * (As_index)(K) + (As_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&As[ty][tx], &A[ty * K + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
          }
          using Bs_index = decltype(+(ty * N + tx));
          const Bs_index Bs_base = (Bs_index)(ty * N + tx)
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
              const unsigned col_1 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
              ::cuda::memcpy_async(&Bs[row0_1][col_1],
                                   &B[Bs_base + (Bs_index)row0_1 * (Bs_index)(N) + (Bs_index)col_1],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&Bs[ty][tx], &B[ty * N + tx],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
          }
        }
        bk += TB; A += TB; B += TB * N;
        bk_fetch = bk;
        A_fetch = A;
        B_fetch = B;
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
    for (; bk < K; bk += TB) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < TB; ++k)
        tmp += As[ty][k] * Bs[k][tx];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
      A += TB;
      B += TB * N;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (int bk = 0; bk < K; bk += TB) {
      As[ty][tx] = A[ty * K + tx];
      Bs[ty][tx] = B[ty * N + tx];
      __syncthreads();
      for (int k = 0; k < TB; ++k)
        tmp += As[ty][k] * Bs[k][tx];
      __syncthreads();
      A += TB;
      B += TB * N;
    }
  }
#endif
#line 189
  C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx] = alpha * tmp + beta * C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx];
}

// A local pointer stepped in the body and read by the loop's condition as well.
__global__ void sgemm_cursor(int M, int N, int K, float alpha, const float* A, const float* B,
                             float beta, float* C) {
  alignas(16) __shared__ float As_stages[3][TB][TB];
  alignas(16) __shared__ float Bs_stages[3][TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const float* a = A + blockIdx.y * TB * K;
  const float* const aEnd = a + K;
  const float* b = B + blockIdx.x * TB;
  float tmp = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto a_fetch = a;
    auto b_fetch = b;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto a = a_fetch;
      auto b = b_fetch;
      if (a < aEnd) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using As_index = decltype(+(ty * K + tx));
          const As_index As_base = (As_index)(ty * K + tx)
              - (As_index)threadIdx.y * (As_index)(K)
              - (As_index)threadIdx.x;
          if (sizeof(As[0]) % 16 == 0 &&
              blockDim.y == sizeof(As) / sizeof(As[0]) &&
              blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
              (K) % (16 / sizeof(As[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&a[As_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
              const unsigned row0 = chunk / (sizeof(As[0]) / 16);
              const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
              ::cuda::memcpy_async(&As[row0][col],
                                   &a[As_base + (As_index)row0 * (As_index)(K) + (As_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&As[ty][tx], &a[ty * K + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
          }
          using Bs_index = decltype(+(ty * N + tx));
          const Bs_index Bs_base = (Bs_index)(ty * N + tx)
              - (Bs_index)threadIdx.y * (Bs_index)(N)
              - (Bs_index)threadIdx.x;
          if (sizeof(Bs[0]) % 16 == 0 &&
              blockDim.y == sizeof(Bs) / sizeof(Bs[0]) &&
              blockDim.x == sizeof(Bs[0]) / sizeof(Bs[0][0]) &&
              (N) % (16 / sizeof(Bs[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&b[Bs_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&Bs[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk_1 = rank; chunk_1 < sizeof(Bs) / 16; chunk_1 += threads) {
              const unsigned row0_1 = chunk_1 / (sizeof(Bs[0]) / 16);
              const unsigned col_1 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
              ::cuda::memcpy_async(&Bs[row0_1][col_1],
                                   &b[Bs_base + (Bs_index)row0_1 * (Bs_index)(N) + (Bs_index)col_1],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&Bs[ty][tx], &b[ty * N + tx],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
          }
        }
        a += TB; b += TB * N;
        a_fetch = a;
        b_fetch = b;
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
    while (a < aEnd) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      a += TB;
      for (int k = 0; k < TB; ++k)
        tmp += As[ty][k] * Bs[k][tx];
      b += TB * N;
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
    while (a < aEnd) {
      As[ty][tx] = a[ty * K + tx];
      Bs[ty][tx] = b[ty * N + tx];
      __syncthreads();
      a += TB;
      for (int k = 0; k < TB; ++k)
        tmp += As[ty][k] * Bs[k][tx];
      b += TB * N;
      __syncthreads();
    }
  }
#endif
#line 214
  C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx] = alpha * tmp + beta * C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx];
}

// Two pointers and the end declared in the for-init, the end never changed: each iteration reads
// the value it got once, before the first, where the rewrite hoists the init.
__global__ void sgemm_pointer_range(int M, int N, int K, float alpha, const float* A, const float* B,
                                    float beta, float* C) {
  alignas(16) __shared__ float As_stages[3][TB][TB];
  alignas(16) __shared__ float Bs_stages[3][TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  float tmp = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    const float *a = A + blockIdx.y * TB * K, *b = B + blockIdx.x * TB, *aEnd = a + K;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto a_fetch = a;
    auto b_fetch = b;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto a = a_fetch;
      auto b = b_fetch;
      if (a < aEnd) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using As_index = decltype(+(ty * K + tx));
          const As_index As_base = (As_index)(ty * K + tx)
              - (As_index)threadIdx.y * (As_index)(K)
              - (As_index)threadIdx.x;
          if (sizeof(As[0]) % 16 == 0 &&
              blockDim.y == sizeof(As) / sizeof(As[0]) &&
              blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
              (K) % (16 / sizeof(As[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&a[As_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
              const unsigned row0 = chunk / (sizeof(As[0]) / 16);
              const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
              ::cuda::memcpy_async(&As[row0][col],
                                   &a[As_base + (As_index)row0 * (As_index)(K) + (As_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&As[ty][tx], &a[ty * K + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
          }
          using Bs_index = decltype(+(ty * N + tx));
          const Bs_index Bs_base = (Bs_index)(ty * N + tx)
              - (Bs_index)threadIdx.y * (Bs_index)(N)
              - (Bs_index)threadIdx.x;
          if (sizeof(Bs[0]) % 16 == 0 &&
              blockDim.y == sizeof(Bs) / sizeof(Bs[0]) &&
              blockDim.x == sizeof(Bs[0]) / sizeof(Bs[0][0]) &&
              (N) % (16 / sizeof(Bs[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&b[Bs_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&Bs[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk_1 = rank; chunk_1 < sizeof(Bs) / 16; chunk_1 += threads) {
              const unsigned row0_1 = chunk_1 / (sizeof(Bs[0]) / 16);
              const unsigned col_1 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
              ::cuda::memcpy_async(&Bs[row0_1][col_1],
                                   &b[Bs_base + (Bs_index)row0_1 * (Bs_index)(N) + (Bs_index)col_1],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&Bs[ty][tx], &b[ty * N + tx],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
          }
        }
        a += TB, b += TB * N;
        a_fetch = a;
        b_fetch = b;
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
    for (; a < aEnd; a += TB, b += TB * N) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < TB; ++k)
        tmp += As[ty][k] * Bs[k][tx];
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
    for (const float *a = A + blockIdx.y * TB * K, *b = B + blockIdx.x * TB, *aEnd = a + K; a < aEnd;
         a += TB, b += TB * N) {
      As[ty][tx] = a[ty * K + tx];
      Bs[ty][tx] = b[ty * N + tx];
      __syncthreads();
      for (int k = 0; k < TB; ++k)
        tmp += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
#endif
#line 236
  C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx] = alpha * tmp + beta * C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx];
}

// Refused: the end the condition reads is declared in the for-init but moved in the body, so the
// condition cannot be evaluated ahead for a later tile.
__global__ void sgemm_pointer_range_moves(int M, int N, int K, float alpha, const float* A,
                                          const float* B, float beta, float* C) {
  __shared__ float As[TB][TB];
  __shared__ float Bs[TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  float tmp = 0.0f;
  // EXPECT: loop-condition
  for (const float *a = A + blockIdx.y * TB * K, *b = B + blockIdx.x * TB, *aEnd = a + K; a < aEnd;
       a += TB, b += TB * N) {
    As[ty][tx] = a[ty * K + tx];
    Bs[ty][tx] = b[ty * N + tx];
    __syncthreads();
    for (int k = 0; k < TB; ++k)
      tmp += As[ty][k] * Bs[k][tx];
    if (tmp > 1e30f) // never, on these inputs; the analysis does not count on it
      aEnd = a;
    __syncthreads();
  }
  C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx] = alpha * tmp + beta * C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx];
}

// Refused: the bump runs in some iterations only.
__global__ void sgemm_bump_sometimes(int M, int N, int K, float alpha, const float* A,
                                     const float* B, float beta, float* C) {
  __shared__ float As[TB][TB];
  __shared__ float Bs[TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  A += blockIdx.y * TB * K;
  B += blockIdx.x * TB;
  float tmp = 0.0f;
  // EXPECT: address-not-invariant
  for (int t = 0; t < K / TB; ++t) {
    As[ty][tx] = A[ty * K + tx];
    Bs[ty][tx] = B[ty * N + tx];
    __syncthreads();
    if (tx < TB) // every thread, but the analysis does not count on a condition
      A += TB;
    B += TB * N;
    for (int k = 0; k < TB; ++k)
      tmp += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx] = alpha * tmp + beta * C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx];
}

// Refused: the step is a variable the loop changes.
__global__ void sgemm_bump_grows(int M, int N, int K, float alpha, const float* A, const float* B,
                                 float beta, float* C) {
  __shared__ float As[TB][TB];
  __shared__ float Bs[TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  A += blockIdx.y * TB * K;
  B += blockIdx.x * TB;
  int step = TB;
  float tmp = 0.0f;
  // EXPECT: induction-step
  for (int t = 0; t < K / TB; ++t) {
    As[ty][tx] = A[ty * K + tx];
    Bs[ty][tx] = B[ty * N + tx];
    __syncthreads();
    A += step;
    B += TB * N;
    for (int k = 0; k < TB; ++k)
      tmp += As[ty][k] * Bs[k][tx];
    step = step == TB ? TB : step + 1;
    __syncthreads();
  }
  C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx] = alpha * tmp + beta * C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx];
}

// Refused: the bump comes before the barrier that publishes the tiles, in the copy phase, where
// the copies that follow it would read the stepped pointer.
__global__ void sgemm_bump_early(int M, int N, int K, float alpha, const float* A, const float* B,
                                 float beta, float* C) {
  __shared__ float As[TB][TB];
  __shared__ float Bs[TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  A += blockIdx.y * TB * K;
  B += blockIdx.x * TB;
  float tmp = 0.0f;
  // EXPECT: address-not-invariant
  for (int t = 0; t < K / TB; ++t) {
    As[ty][tx] = A[ty * K + tx];
    Bs[ty][tx] = B[ty * N + tx];
    A += TB;
    B += TB * N;
    __syncthreads();
    for (int k = 0; k < TB; ++k)
      tmp += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx] = alpha * tmp + beta * C[(blockIdx.y * TB + ty) * N + blockIdx.x * TB + tx];
}

template <typename L>
static void runKernel(FILE* f, const std::vector<float>& hC, L launch) {
  // C is read too (beta * C): each kernel gets the same random C; poisoned first, then filled.
  float* dC = poisonedOutput<float>(hC.size());
  if (!hC.empty())
    CK(cudaMemcpy(dC, hC.data(), hC.size() * sizeof(float), cudaMemcpyHostToDevice));
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, hC.size());
  CK(cudaFree(dC));
}

// M and N multiples of TB, K a multiple of TB: the tutorial's kernels read no guard.
static void runCase(FILE* f, uint64_t seed, int caseNo, int M, int N, int K) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K, rng), hB = randomFloats((size_t)K * N, rng);
  std::vector<float> hC = randomFloats((size_t)M * N, rng);
  const float alpha = 0.75f + rng.uniform() / 8, beta = rng.uniform();
  printf("case %d: M=%d N=%d K=%d\n", caseNo, M, N, K);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  const dim3 grid(N / TB, M / TB), flat(TB * TB), square(TB, TB);
  runKernel(f, hC, [&](float* dC) { sgemm_bumped<<<grid, flat>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_bumped_late<<<grid, square>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_bumped_after<<<grid, square>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_cursor<<<grid, square>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_pointer_range<<<grid, square>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_pointer_range_moves<<<grid, square>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_bump_sometimes<<<grid, square>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_bump_grows<<<grid, square>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_bump_early<<<grid, square>>>(M, N, K, alpha, dA, dB, beta, dC); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 32, 48, 0);        // no tiles
  runCase(f, seed, 1, 32, 48, 16);       // one tile
  runCase(f, seed, 2, 64, 32, 32);       // two tiles, fewer than stages
  runCase(f, seed, 3, 1024, 1024, 48);   // three tiles, 4096 blocks
  runCase(f, seed, 4, 1024, 1024, 1552); // 97 tiles, 4096 blocks
  runCase(f, seed, 5, 2048, 768, 336);   // 21 tiles, 6144 blocks
  closeOutput(f);
  return 0;
}
