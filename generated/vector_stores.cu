// vector_stores.cu: copy phases that store whole vectors into the tile through a cast, as real
// kernels write their 16-byte loads: `reinterpret_cast<float4 *>(&Bs[i])[0] =
// reinterpret_cast<const float4 *>(&B[j])[0];` (the SGEMM tutorials' kernels 6 and later),
// `*(float2 *)&s[i] = ...`, `((float4 *)s)[tid] = ...`, in an inner copy loop, and into a tile of
// two dimensions. Each vector store is one copy of 8 or 16 bytes: the original dereferences a
// pointer to the vector at both addresses, so both are aligned to its size there; the tile's
// offset is proven a whole number of vectors from its index, and the stage arrays start on 16
// bytes. Twins that are refused (neg_vector_stores.cu): vectors that may overlap, an offset not
// provably a multiple of the vector, a vector type aligned below its size. Loops marked
// `// tilepipe: plan=always` take the cp.async pipeline; the others the cost model's plan.
// Run at scale: thousands of blocks, many more tiles than stages, random inputs, poisoned outputs
// (tests/gpu/verify_testdata.sh).
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


#define BM 64
#define BK 8
#define T 128

// The SGEMM tutorial's kernel 6: A read as a float4 and stored transposed, B stored as a float4.
// 128 threads compute a 64 x 64 block of C, each a 4 x 8 piece.
__global__ void sgemm_vec_store(int M, int N, int K, float alpha, const float* A, const float* B,
                                float beta, float* C) {
  __shared__ float As_stages[3][BK * BM];
  alignas(16) __shared__ float Bs_stages[3][BK * BM];
  const int tid = threadIdx.x;
  const int rowA = tid / 2, colA = tid % 2;
  const int rowB = tid / 16, colB = tid % 16;
  const int tr = tid / 8, tc = tid % 8;
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BM;
  C += blockIdx.y * BM * N + blockIdx.x * BM;
  float acc[4][8] = {};
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int k0 = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto k0_fetch = k0;
    auto A_fetch = A;
    auto B_fetch = B;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto k0 = k0_fetch;
      auto A = A_fetch;
      auto B = B_fetch;
      if (k0 < K) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          ::cuda::memcpy_async(&As[(colA * 4 + 0) * BM + rowA], &(reinterpret_cast<const float4*>(&A[rowA * K + colA * 4])[0]).x,
                               ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          ::cuda::memcpy_async(&As[(colA * 4 + 1) * BM + rowA], &(reinterpret_cast<const float4*>(&A[rowA * K + colA * 4])[0]).y,
                               ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          ::cuda::memcpy_async(&As[(colA * 4 + 2) * BM + rowA], &(reinterpret_cast<const float4*>(&A[rowA * K + colA * 4])[0]).z,
                               ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          ::cuda::memcpy_async(&As[(colA * 4 + 3) * BM + rowA], &(reinterpret_cast<const float4*>(&A[rowA * K + colA * 4])[0]).w,
                               ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          ::cuda::memcpy_async(&reinterpret_cast<float4*>(&Bs[rowB * BM + colB * 4])[0], &reinterpret_cast<const float4*>(&B[rowB * N + colB * 4])[0],
                               ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
        }
        k0 += BK; A += BK; B += BK * N;
        k0_fetch = k0;
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
    for (; k0 < K; k0 += BK) {
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
            acc[i][j] += As[k * BM + tr * 4 + i] * Bs[k * BM + tc * 8 + j];
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
    for (int k0 = 0; k0 < K; k0 += BK) {
      float4 t = reinterpret_cast<const float4*>(&A[rowA * K + colA * 4])[0];
      As[(colA * 4 + 0) * BM + rowA] = t.x;
      As[(colA * 4 + 1) * BM + rowA] = t.y;
      As[(colA * 4 + 2) * BM + rowA] = t.z;
      As[(colA * 4 + 3) * BM + rowA] = t.w;
      reinterpret_cast<float4*>(&Bs[rowB * BM + colB * 4])[0] =
          reinterpret_cast<const float4*>(&B[rowB * N + colB * 4])[0];
      __syncthreads();
      A += BK;
      B += BK * N;
      for (int k = 0; k < BK; ++k)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 8; ++j)
            acc[i][j] += As[k * BM + tr * 4 + i] * Bs[k * BM + tc * 8 + j];
      __syncthreads();
    }
  }
#endif
#line 160
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      C[(tr * 4 + i) * N + tc * 8 + j] = alpha * acc[i][j] + beta * C[(tr * 4 + i) * N + tc * 8 + j];
}

// Both tiles as float4 stores (A not transposed), with the cost model's plan.
__global__ void sgemm_vec_both(int M, int N, int K, float alpha, const float* A, const float* B,
                               float beta, float* C) {
  alignas(16) __shared__ float As_stages[3][BM * BK];
  alignas(16) __shared__ float Bs_stages[3][BK * BM];
  const int tid = threadIdx.x;
  const int rowA = tid / 2, colA = tid % 2;
  const int rowB = tid / 16, colB = tid % 16;
  const int tr = tid / 8, tc = tid % 8;
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BM;
  C += blockIdx.y * BM * N + blockIdx.x * BM;
  float acc[4][8] = {};
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int k0 = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto k0_fetch = k0;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto k0 = k0_fetch;
      if (k0 < K) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          ::cuda::memcpy_async(&(*reinterpret_cast<float4*>(&As[rowA * BK + colA * 4])), &(*reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4])),
                               ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
          ::cuda::memcpy_async(&reinterpret_cast<float4*>(&Bs[rowB * BM + colB * 4])[0], &reinterpret_cast<const float4*>(&B[(k0 + rowB) * N + colB * 4])[0],
                               ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
        }
        k0 += BK;
        k0_fetch = k0;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; k0 < K; k0 += BK) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < BK; ++k)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 8; ++j)
            acc[i][j] += As[(tr * 4 + i) * BK + k] * Bs[k * BM + tc * 8 + j];
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
    for (int k0 = 0; k0 < K; k0 += BK) {
      *reinterpret_cast<float4*>(&As[rowA * BK + colA * 4]) =
          *reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4]);
      reinterpret_cast<float4*>(&Bs[rowB * BM + colB * 4])[0] =
          reinterpret_cast<const float4*>(&B[(k0 + rowB) * N + colB * 4])[0];
      __syncthreads();
      for (int k = 0; k < BK; ++k)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 8; ++j)
            acc[i][j] += As[(tr * 4 + i) * BK + k] * Bs[k * BM + tc * 8 + j];
      __syncthreads();
    }
  }
#endif
#line 191
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      C[(tr * 4 + i) * N + tc * 8 + j] = alpha * acc[i][j] + beta * C[(tr * 4 + i) * N + tc * 8 + j];
}

// The tile viewed whole as float4 (a C-style cast of the array), 512 floats a tile.
__global__ void rows_vec4(const float* A, float* C, int nt) {
  alignas(16) __shared__ float s_stages[3][4 * T];
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
          ::cuda::memcpy_async(&((float4*)s)[tid], &((const float4*)(a + t * 4 * T))[tid],
                               ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
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
        acc += s[4 * tid + j] * s[(4 * tid + 5 * j + 7) % (4 * T)];
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
      ((float4*)s)[tid] = ((const float4*)(a + t * 4 * T))[tid];
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc += s[4 * tid + j] * s[(4 * tid + 5 * j + 7) % (4 * T)];
      __syncthreads();
    }
  }
#endif
#line 211
  C[blockIdx.x * T + tid] = acc;
}

// Two float2 stores a thread, `*(float2 *)&s[..]`, a whole float2 apart and more. The cost model
// would prefetch 4 tiles ahead into registers (8-byte copies it does not count as wide), which
// takes the kernel from 32 registers to 36 on sm_90, so that an SM holds 51 of its warps instead
// of 64: the model keeps the loop (no-gain). That prefetch ran 1.00x on the H100
// (docs/gpu-record.md, 2026-12-06).
__global__ void rows_vec2(const float* A, float* C, int nt) {
  __shared__ float s[4 * T];
  const int tid = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 4 * T;
  float acc = 0.0f;
  // EXPECT: no-gain
  for (int t = 0; t < nt; ++t) {
    *(float2*)&s[2 * tid] = *(const float2*)&a[t * 4 * T + 2 * tid];
    *(float2*)&s[2 * T + 2 * tid] = *(const float2*)&a[t * 4 * T + 2 * T + 2 * tid];
    __syncthreads();
    // Rounded operations, which nvcc never contracts: the rewrite's unrolled trips may be
    // contracted otherwise than the original's loop, and the outputs compare bit for bit.
    for (int j = 0; j < 4; ++j)
      acc = __fadd_rn(__fmul_rn(acc, 0.5f), __fmul_rn(s[(tid + 37 * j) % (4 * T)], s[(3 * tid + j) % (4 * T)]));
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// An inner copy loop of float4 stores (the tutorials' kernel 10 copies its tiles so), each pass a
// whole 512 floats further.
__global__ void inner_vec4(const float* A, float* C, int nt) {
  alignas(16) __shared__ float s_stages[3][8 * T];
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
          for (int off = 0; off < 2; ++off)
            ::cuda::memcpy_async(&reinterpret_cast<float4*>(&s[off * 4 * T + tid * 4])[0], &reinterpret_cast<const float4*>(&a[t * 8 * T + off * 4 * T + tid * 4])[0],
                                 ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
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
        acc += s[(tid * 8 + j * 9) % (8 * T)] * (j + 1);
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
      for (int off = 0; off < 2; ++off)
        reinterpret_cast<float4*>(&s[off * 4 * T + tid * 4])[0] =
            reinterpret_cast<const float4*>(&a[t * 8 * T + off * 4 * T + tid * 4])[0];
      __syncthreads();
      for (int j = 0; j < 8; ++j)
        acc += s[(tid * 8 + j * 9) % (8 * T)] * (j + 1);
      __syncthreads();
    }
  }
#endif
#line 256
  C[blockIdx.x * T + tid] = acc;
}

// A tile of two dimensions, 8 rows of 64 floats: each of 128 threads stores one float4.
__global__ void rows2d_vec4(const float* A, float* C, int nt, int ld) {
  alignas(16) __shared__ float s_stages[3][8][64];
  const int tid = threadIdx.x;
  const int r = tid / 16, c = tid % 16;
  const float* a = A + (size_t)blockIdx.x * 8 * ld;
  float acc = 0.0f;
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
          ::cuda::memcpy_async(&reinterpret_cast<float4*>(&s[r][c * 4])[0], &reinterpret_cast<const float4*>(&a[r * ld + t * 64 + c * 4])[0],
                               ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
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
        acc += s[j][(tid + j) % 64] * s[(tid + j) % 8][tid % 64];
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
      reinterpret_cast<float4*>(&s[r][c * 4])[0] = reinterpret_cast<const float4*>(&a[r * ld + t * 64 + c * 4])[0];
      __syncthreads();
      for (int j = 0; j < 8; ++j)
        acc += s[j][(tid + j) % 64] * s[(tid + j) % 8][tid % 64];
      __syncthreads();
    }
  }
#endif
#line 274
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

// M and N multiples of BM, K a multiple of BK.
static void runGemm(FILE* f, uint64_t seed, int caseNo, int M, int N, int K) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K, rng), hB = randomFloats((size_t)K * N, rng);
  std::vector<float> hC = randomFloats((size_t)M * N, rng);
  const float alpha = 0.75f + rng.uniform() / 8, beta = rng.uniform();
  printf("gemm case %d: M=%d N=%d K=%d\n", caseNo, M, N, K);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  const dim3 grid(N / BM, M / BM);
  runKernel(f, hC, [&](float* dC) { sgemm_vec_store<<<grid, 128>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_vec_both<<<grid, 128>>>(M, N, K, alpha, dA, dB, beta, dC); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

// blocks blocks, nt tiles each, of up to 8 * T elements.
static void runRows(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, 100 + caseNo);
  std::vector<float> hA = randomFloats((size_t)blocks * (nt + 1) * 8 * T, rng);
  std::vector<float> hC(blocks * T, 0.0f);
  printf("rows case %d: blocks=%d nt=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  const int ld = (nt + 1) * 64;
  runKernel(f, hC, [&](float* dC) { rows_vec4<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { rows_vec2<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { inner_vec4<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { rows2d_vec4<<<blocks, T>>>(dA, dC, nt, ld); });
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
