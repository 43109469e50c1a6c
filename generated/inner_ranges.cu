// inner_ranges.cu: copy phases whose stores into one tile sit in inner copy loops, told apart by
// the constant ranges of the loop variables. The SGEMM tutorial's kernel 9 copies A transposed:
// one float4 read, four scalar stores `As[(c * 4 + j) * BM + r + offset]` per pass of a loop over
// offset = 0, rowStride, ... < BM, no two of them one element in one tile; B as float4 stores in
// a second loop. Also: two loops that fill the two halves of one tile, a loop and a store past its
// range, nested loops whose variables count in mixed radix, a loop counting down, a loop strided
// over the block whose two stores fill two halves; and three
// stages of 16 KiB, exactly the 48 KiB of static shared memory a block may declare. Twins that are
// refused (tile-overlap): two loops whose ranges meet at one element; a strided loop whose two
// stores reach one element; an opaque term of the inner variable that looks alike in both stores. Loops marked `// tilepipe: plan=always` take the
// cp.async pipeline; the others the cost model's plan. Run at scale: thousands of blocks, many
// more tiles than stages, random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
#include <cuda/pipeline>
#line 13
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



#define T 128

// The SGEMM tutorial's kernel 9, at BM = BN = 64, BK = 8 and 128 threads: each thread reads one
// float4 of A per pass and stores it transposed; B is stored as float4s. Each thread computes a
// 4 x 8 piece of C.
template <int BM, int BN, int BK, int NT>
__global__ void __launch_bounds__(NT)
    sgemm_transposed(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  __shared__ float As_stages[(BM == 64 && BN == 64 && BK == 8 && NT == 128) ? 3 : 1][BM * BK];
  alignas(16) __shared__ float Bs_stages[(BM == 64 && BN == 64 && BK == 8 && NT == 128) ? 3 : 1][BK * BN];
  const unsigned innerRowA = threadIdx.x / (BK / 4), innerColA = threadIdx.x % (BK / 4);
  constexpr unsigned rowStrideA = (NT * 4) / BK;
  const unsigned innerRowB = threadIdx.x / (BN / 4), innerColB = threadIdx.x % (BN / 4);
  constexpr unsigned rowStrideB = NT / (BN / 4);
  const int tr = threadIdx.x / 8, tc = threadIdx.x % 8;
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BN;
  C += blockIdx.y * BM * N + blockIdx.x * BN;
  float acc[4][8] = {};
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if constexpr (BM == 64 && BN == 64 && BK == 8 && NT == 128) { // the instantiations tilepipe analysed
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
          for (unsigned offset = 0; offset + rowStrideA <= BM; offset += rowStrideA) {
            ::cuda::memcpy_async(&As[(innerColA * 4 + 0) * BM + innerRowA + offset], &(reinterpret_cast<const float4*>(&A[(innerRowA + offset) * K + innerColA * 4])[0]).x,
                                 ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
            ::cuda::memcpy_async(&As[(innerColA * 4 + 1) * BM + innerRowA + offset], &(reinterpret_cast<const float4*>(&A[(innerRowA + offset) * K + innerColA * 4])[0]).y,
                                 ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
            ::cuda::memcpy_async(&As[(innerColA * 4 + 2) * BM + innerRowA + offset], &(reinterpret_cast<const float4*>(&A[(innerRowA + offset) * K + innerColA * 4])[0]).z,
                                 ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
            ::cuda::memcpy_async(&As[(innerColA * 4 + 3) * BM + innerRowA + offset], &(reinterpret_cast<const float4*>(&A[(innerRowA + offset) * K + innerColA * 4])[0]).w,
                                 ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          }
          for (unsigned offset = 0; offset + rowStrideB <= BK; offset += rowStrideB)
            ::cuda::memcpy_async(&reinterpret_cast<float4*>(&Bs[(innerRowB + offset) * BN + innerColB * 4])[0], &reinterpret_cast<const float4*>(&B[(innerRowB + offset) * N + innerColB * 4])[0],
                                 ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
        }
        bk += BK; A += BK; B += BK * N;
        bk_fetch = bk;
        A_fetch = A;
        B_fetch = B;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; bk < K; bk += BK) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      A += BK;
      B += BK * N;
      for (int k = 0; k < BK; ++k)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 8; ++j)
            acc[i][j] += As[k * BM + tr * 4 + i] * Bs[k * BN + tc * 8 + j];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
  } else
#endif
  { // tilepipe: below compute capability 8.0 and in instantiations tilepipe did not analyse, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (int bk = 0; bk < K; bk += BK) {
      for (unsigned offset = 0; offset + rowStrideA <= BM; offset += rowStrideA) {
        const float4 tmp = reinterpret_cast<const float4*>(&A[(innerRowA + offset) * K + innerColA * 4])[0];
        As[(innerColA * 4 + 0) * BM + innerRowA + offset] = tmp.x;
        As[(innerColA * 4 + 1) * BM + innerRowA + offset] = tmp.y;
        As[(innerColA * 4 + 2) * BM + innerRowA + offset] = tmp.z;
        As[(innerColA * 4 + 3) * BM + innerRowA + offset] = tmp.w;
      }
      for (unsigned offset = 0; offset + rowStrideB <= BK; offset += rowStrideB)
        reinterpret_cast<float4*>(&Bs[(innerRowB + offset) * BN + innerColB * 4])[0] =
            reinterpret_cast<const float4*>(&B[(innerRowB + offset) * N + innerColB * 4])[0];
      __syncthreads();
      A += BK;
      B += BK * N;
      for (int k = 0; k < BK; ++k)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 8; ++j)
            acc[i][j] += As[k * BM + tr * 4 + i] * Bs[k * BN + tc * 8 + j];
      __syncthreads();
    }
  }
#line 165
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      C[(tr * 4 + i) * N + tc * 8 + j] = alpha * acc[i][j] + beta * C[(tr * 4 + i) * N + tc * 8 + j];
}

// Rounded operations, which nvcc never contracts: the rewrite's unrolled trips may be contracted
// otherwise than the original's loop, and the outputs compare bit for bit.
__device__ float mix(float acc, float a, float b) { return __fadd_rn(__fmul_rn(acc, 0.5f), __fmul_rn(a, b)); }

// Two copy loops, each filling one half of a tile of 4 * T floats.
__global__ void halves(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][4 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 4 * T;
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
          for (int i = 0; i < 2; ++i)
            ::cuda::memcpy_async(&s[tid + T * i], &a[t * 4 * T + tid + T * i],
                                 ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          for (int i = 2; i < 4; ++i)
            ::cuda::memcpy_async(&s[tid + T * i], &a[t * 4 * T + tid + T * i],
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
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % (4 * T)], s[(3 * tid + j) % (4 * T)]);
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
      for (int i = 0; i < 2; ++i)
        s[tid + T * i] = a[t * 4 * T + tid + T * i];
      for (int i = 2; i < 4; ++i)
        s[tid + T * i] = a[t * 4 * T + tid + T * i];
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % (4 * T)], s[(3 * tid + j) % (4 * T)]);
      __syncthreads();
    }
  }
#endif
#line 192
  C[blockIdx.x * T + tid] = acc;
}

// A loop over three rows and a store of the fourth row after it, and nested loops whose
// variables count in mixed radix (rows 4 + i + 2 * j).
__global__ void rows_after_loop(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][8 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 8 * T;
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
          for (int i = 0; i < 3; ++i)
            ::cuda::memcpy_async(&s[tid + T * i], &a[t * 8 * T + tid + T * i],
                                 ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          ::cuda::memcpy_async(&s[tid + 3 * T], &a[t * 8 * T + tid + 3 * T],
                               ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
              ::cuda::memcpy_async(&s[tid + T * (4 + i + 2 * j)], &a[t * 8 * T + tid + T * (4 + 2 * i + j)],
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
      for (int j = 0; j < 8; ++j)
        acc = mix(acc, s[(tid * 8 + j * 9) % (8 * T)], (float)(j + 1));
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
      for (int i = 0; i < 3; ++i)
        s[tid + T * i] = a[t * 8 * T + tid + T * i];
      s[tid + 3 * T] = a[t * 8 * T + tid + 3 * T];
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
          s[tid + T * (4 + i + 2 * j)] = a[t * 8 * T + tid + T * (4 + 2 * i + j)];
      __syncthreads();
      for (int j = 0; j < 8; ++j)
        acc = mix(acc, s[(tid * 8 + j * 9) % (8 * T)], (float)(j + 1));
      __syncthreads();
    }
  }
#endif
#line 216
  C[blockIdx.x * T + tid] = acc;
}

// A loop counting down over a thread's four consecutive elements, and a store of the element
// before them.
__global__ void countdown(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][5 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 5 * T;
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
          for (int i = 4; i >= 1; --i)
            ::cuda::memcpy_async(&s[tid * 5 + i], &a[t * 5 * T + tid * 5 + i],
                                 ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          ::cuda::memcpy_async(&s[tid * 5], &a[t * 5 * T + tid * 5],
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
      for (int j = 0; j < 5; ++j)
        acc = mix(acc, s[(tid * 7 + j * 11) % (5 * T)], s[tid * 5 + j]);
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
      for (int i = 4; i >= 1; --i)
        s[tid * 5 + i] = a[t * 5 * T + tid * 5 + i];
      s[tid * 5] = a[t * 5 * T + tid * 5];
      __syncthreads();
      for (int j = 0; j < 5; ++j)
        acc = mix(acc, s[(tid * 7 + j * 11) % (5 * T)], s[tid * 5 + j]);
      __syncthreads();
    }
  }
#endif
#line 237
  C[blockIdx.x * T + tid] = acc;
}

// A tile of 16 KiB, 32 floats a thread in an inner copy loop: three stages are 49,152 bytes, the
// most static shared memory a block may declare, and fit exactly (cp.async copies need no barrier
// in shared memory).
__global__ void stages_48k(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][32 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 32 * T;
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
          for (int i = 0; i < 32; ++i)
            ::cuda::memcpy_async(&s[tid + T * i], &a[t * 32 * T + tid + T * i],
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
      for (int j = 0; j < 8; ++j)
        acc = mix(acc, s[(tid * 33 + j * 517) % (32 * T)], s[(tid + 64 * j) % (32 * T)]);
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
      for (int i = 0; i < 32; ++i)
        s[tid + T * i] = a[t * 32 * T + tid + T * i];
      __syncthreads();
      for (int j = 0; j < 8; ++j)
        acc = mix(acc, s[(tid * 33 + j * 517) % (32 * T)], s[(tid + 64 * j) % (32 * T)]);
      __syncthreads();
    }
  }
#endif
#line 258
  C[blockIdx.x * T + tid] = acc;
}

// A loop strided over the block that fills both halves of a tile of 4 * T floats, a store into
// each: i runs from the thread's rank up to 2 * T - 1 by blockDim.x, so the first store writes
// elements 0 .. 2 * T - 1 and the second 2 * T .. 4 * T - 1, whatever the block's size.
__global__ void strided_halves(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][4 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 4 * T;
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
          for (int i = tid; i < 2 * T; i += blockDim.x) {
            ::cuda::memcpy_async(&s[i], &a[t * 4 * T + i],
                                 ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
            ::cuda::memcpy_async(&s[i + 2 * T], &a[t * 4 * T + 4 * T - 1 - i],
                                 ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          }
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
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % (4 * T)], s[(3 * tid + j) % (4 * T)]);
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
      for (int i = tid; i < 2 * T; i += blockDim.x) {
        s[i] = a[t * 4 * T + i];
        s[i + 2 * T] = a[t * 4 * T + 4 * T - 1 - i];
      }
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % (4 * T)], s[(3 * tid + j) % (4 * T)]);
      __syncthreads();
    }
  }
#endif
#line 281
  C[blockIdx.x * T + tid] = acc;
}

// Refused: the strided loop's two stores reach T apart over a range of 2 * T elements, so one
// thread writes element tid + T twice (at i = tid by the second store, at i = tid + T by the
// first), and the later must win.
__global__ void strided_meet(const float* A, float* C, int nt) {
  __shared__ float s[3 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 4 * T;
  float acc = 0.0f;
  // EXPECT: tile-overlap
  for (int t = 0; t < nt; ++t) {
    for (int i = tid; i < 2 * T; i += blockDim.x) {
      s[i] = a[t * 4 * T + i];
      s[i + T] = a[t * 4 * T + 4 * T - 1 - i];
    }
    __syncthreads();
    for (int j = 0; j < 3; ++j)
      acc = mix(acc, s[(tid + 37 * j) % (3 * T)], s[(3 * tid + j) % (3 * T)]);
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// Refused: the two loops' ranges meet at row 2, which both store, from different places.
__global__ void ranges_meet(const float* A, float* C, int nt) {
  __shared__ float s[4 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 4 * T;
  float acc = 0.0f;
  // EXPECT: tile-overlap
  for (int t = 0; t < nt; ++t) {
    for (int i = 0; i < 3; ++i)
      s[tid + T * i] = a[t * 4 * T + tid + T * i];
    for (int i = 2; i < 4; ++i)
      s[tid + T * i] = a[t * 4 * T + tid + T * (5 - i)];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % (4 * T)], s[(3 * tid + j) % (4 * T)]);
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// Refused: `i % 2` looks alike in both stores but is not the same in both iterations:
// s[1][4 * tid + 1] is written at i = 0 by the second store and at i = 1 by the first.
__global__ void opaque_alike(const float* A, float* C, int nt) {
  __shared__ float s[2][4 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 2 * T;
  float acc = 0.0f;
  // EXPECT: tile-overlap
  for (int t = 0; t < nt; ++t) {
    for (int i = 0; i < 2; ++i) {
      s[i][4 * tid + i % 2] = a[t * 2 * T + tid];
      s[1 - i][4 * tid + i % 2 + 1] = a[t * 2 * T + T + tid];
    }
    __syncthreads();
    acc = mix(acc, s[0][4 * tid] + s[0][4 * tid + 2], s[1][4 * ((tid * 3) % T) + 1]);
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
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

// M and N multiples of 64, K a multiple of 8.
static void runGemm(FILE* f, uint64_t seed, int caseNo, int M, int N, int K) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K, rng), hB = randomFloats((size_t)K * N, rng);
  std::vector<float> hC = randomFloats((size_t)M * N, rng);
  const float alpha = 0.75f + rng.uniform() / 8, beta = rng.uniform();
  printf("gemm case %d: M=%d N=%d K=%d\n", caseNo, M, N, K);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  const dim3 grid(N / 64, M / 64);
  runKernel(f, hC, [&](float* dC) { sgemm_transposed<64, 64, 8, 128><<<grid, 128>>>(M, N, K, alpha, dA, dB, beta, dC); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

// blocks blocks, nt tiles each, of up to 32 * T elements.
static void runRows(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, 100 + caseNo);
  std::vector<float> hA = randomFloats((size_t)blocks * (nt + 1) * 32 * T, rng);
  std::vector<float> hC(blocks * T, 0.0f);
  printf("rows case %d: blocks=%d nt=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  runKernel(f, hC, [&](float* dC) { halves<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { rows_after_loop<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { countdown<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { stages_48k<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { strided_halves<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { strided_meet<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { ranges_meet<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { opaque_alike<<<blocks, T>>>(dA, dC, nt); });
  CK(cudaFree(dA));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runGemm(f, seed, 0, 64, 128, 0);      // no tiles
  runGemm(f, seed, 1, 64, 128, 8);      // one tile
  runGemm(f, seed, 2, 128, 64, 16);     // two tiles, fewer than stages
  runGemm(f, seed, 3, 4096, 1024, 24);  // three tiles, 1024 blocks
  runGemm(f, seed, 4, 4096, 4096, 776); // 97 tiles, 4096 blocks
  runRows(f, seed, 0, 3, 0);            // no tiles
  runRows(f, seed, 1, 5, 1);            // one tile
  runRows(f, seed, 2, 7, 2);            // two tiles
  runRows(f, seed, 3, 4096, 3);         // three tiles, 4096 blocks
  runRows(f, seed, 4, 4096, 97);        // 97 tiles, 4096 blocks
  closeOutput(f);
  return 0;
}
