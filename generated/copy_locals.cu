// copy_locals.cu: copy phases that hold locals, as real kernels write them. The SGEMM tutorials'
// vectorised load reads a float4 into a local and stores its four parts transposed
// (`float4 t = reinterpret_cast<const float4 *>(&A[..])[0]; As[..] = t.x; ...`); a 1-D kernel
// reads into a scalar first (`float v = A[i]; s[tid] = v;`); an inner copy loop declares its own
// index (`int xo = i * T + tid;`); the tutorials' later kernels reuse the float4 for the second
// tile (`t = ...;`), which sets the local again. A tile store that reads a local set once from global memory is
// a copy of that part of the read; every other use of the local refuses the loop. Twins that are
// refused: the local read again by the compute phase (address-not-invariant) or set again under a
// condition (load-phase), two inner variables that meet
// in one subscript, or a store of one element spelled two ways (tile-overlap), a name of the read declared again before the store
// (name-binding). The cost model picks each loop's plan, and keeps sgemm_vec4's loop, whose
// register prefetch ptxas would spill; loops marked `// tilepipe: plan=always` take the cp.async
// pipeline. Run at scale: thousands of blocks, many more tiles than stages,
// random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
#include <cuda/pipeline>
#line 15
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
// 128 threads compute a 64 x 64 block of C, each a 4 x 8 piece; each thread loads one float4 of
// the 64 x 8 tile of A (stored transposed, k-major) and one of the 8 x 64 tile of B.
// The cost model would prefetch into registers (cp.async would copy element by element), which
// needs 86 registers on sm_90; the __launch_bounds__(896) that keep every block size the original
// allows (65 registers) cap them at 72, and ptxas spills 128 bytes per thread: that rewrite ran
// 0.89x on the H200. The launch check sees the spill and the model keeps the loop (no-gain).
__global__ void sgemm_vec4(int M, int N, int K, float alpha, const float* A, const float* B,
                           float beta, float* C) {
  __shared__ float As[BK * BM];
  __shared__ float Bs[BK * BM];
  const int tid = threadIdx.x;
  const int rowA = tid / 2, colA = tid % 2;
  const int rowB = tid / 16, colB = tid % 16;
  const int tr = tid / 8, tc = tid % 8;
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BM;
  C += blockIdx.y * BM * N + blockIdx.x * BM;
  float acc[4][8] = {};
  // EXPECT: no-gain
  for (int k0 = 0; k0 < K; k0 += BK) {
    float4 t = reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4])[0];
    As[(colA * 4 + 0) * BM + rowA] = t.x;
    As[(colA * 4 + 1) * BM + rowA] = t.y;
    As[(colA * 4 + 2) * BM + rowA] = t.z;
    As[(colA * 4 + 3) * BM + rowA] = t.w;
    float4 u = reinterpret_cast<const float4*>(&B[(k0 + rowB) * N + colB * 4])[0];
    Bs[rowB * BM + colB * 4 + 0] = u.x;
    Bs[rowB * BM + colB * 4 + 1] = u.y;
    Bs[rowB * BM + colB * 4 + 2] = u.z;
    Bs[rowB * BM + colB * 4 + 3] = u.w;
    __syncthreads();
    for (int k = 0; k < BK; ++k)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 8; ++j)
          acc[i][j] += As[k * BM + tr * 4 + i] * Bs[k * BM + tc * 8 + j];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      C[(tr * 4 + i) * N + tc * 8 + j] = alpha * acc[i][j] + beta * C[(tr * 4 + i) * N + tc * 8 + j];
}

// The same on the cp.async pipeline: each part of the float4 is a 4-byte copy.
__global__ void sgemm_vec4_async(int M, int N, int K, float alpha, const float* A, const float* B,
                                 float beta, float* C) {
  __shared__ float As_stages[3][BK * BM];
  __shared__ float Bs_stages[3][BK * BM];
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
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto k0 = k0_fetch;
      if (k0 < K) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          ::cuda::memcpy_async(&As[(colA * 4 + 0) * BM + rowA], &(reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4])[0]).x,
                               ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          ::cuda::memcpy_async(&As[(colA * 4 + 1) * BM + rowA], &(reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4])[0]).y,
                               ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          ::cuda::memcpy_async(&As[(colA * 4 + 2) * BM + rowA], &(reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4])[0]).z,
                               ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          ::cuda::memcpy_async(&As[(colA * 4 + 3) * BM + rowA], &(reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4])[0]).w,
                               ::cuda::aligned_size_t<sizeof(As[0])>(sizeof(As[0])), pipe);
          ::cuda::memcpy_async(&Bs[rowB * BM + colB * 4 + 0], &(*reinterpret_cast<const float4*>(B + (k0 + rowB) * N + colB * 4)).x,
                               ::cuda::aligned_size_t<sizeof(Bs[0])>(sizeof(Bs[0])), pipe);
          ::cuda::memcpy_async(&Bs[rowB * BM + colB * 4 + 1], &(*reinterpret_cast<const float4*>(B + (k0 + rowB) * N + colB * 4)).y,
                               ::cuda::aligned_size_t<sizeof(Bs[0])>(sizeof(Bs[0])), pipe);
          ::cuda::memcpy_async(&Bs[rowB * BM + colB * 4 + 2], &(*reinterpret_cast<const float4*>(B + (k0 + rowB) * N + colB * 4)).z,
                               ::cuda::aligned_size_t<sizeof(Bs[0])>(sizeof(Bs[0])), pipe);
          ::cuda::memcpy_async(&Bs[rowB * BM + colB * 4 + 3], &(*reinterpret_cast<const float4*>(B + (k0 + rowB) * N + colB * 4)).w,
                               ::cuda::aligned_size_t<sizeof(Bs[0])>(sizeof(Bs[0])), pipe);
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
      float4 t = reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4])[0];
      As[(colA * 4 + 0) * BM + rowA] = t.x;
      As[(colA * 4 + 1) * BM + rowA] = t.y;
      As[(colA * 4 + 2) * BM + rowA] = t.z;
      As[(colA * 4 + 3) * BM + rowA] = t.w;
      const float4 u = *reinterpret_cast<const float4*>(B + (k0 + rowB) * N + colB * 4);
      Bs[rowB * BM + colB * 4 + 0] = u.x;
      Bs[rowB * BM + colB * 4 + 1] = u.y;
      Bs[rowB * BM + colB * 4 + 2] = u.z;
      Bs[rowB * BM + colB * 4 + 3] = u.w;
      __syncthreads();
      for (int k = 0; k < BK; ++k)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 8; ++j)
            acc[i][j] += As[k * BM + tr * 4 + i] * Bs[k * BM + tc * 8 + j];
      __syncthreads();
    }
  }
#endif
#line 201
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      C[(tr * 4 + i) * N + tc * 8 + j] = alpha * acc[i][j] + beta * C[(tr * 4 + i) * N + tc * 8 + j];
}

// The tutorials' later kernels reuse one float4 for both tiles: `t = ...B...;` sets it again.
__global__ void sgemm_vec4_reused(int M, int N, int K, float alpha, const float* A, const float* B,
                                  float beta, float* C) {
  __shared__ float As_stages[3][BK * BM];
  __shared__ float Bs_stages[3][BK * BM];
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
          ::cuda::memcpy_async(&Bs[rowB * BM + colB * 4 + 0], &(reinterpret_cast<const float4*>(&B[rowB * N + colB * 4])[0]).x,
                               ::cuda::aligned_size_t<sizeof(Bs[0])>(sizeof(Bs[0])), pipe);
          ::cuda::memcpy_async(&Bs[rowB * BM + colB * 4 + 1], &(reinterpret_cast<const float4*>(&B[rowB * N + colB * 4])[0]).y,
                               ::cuda::aligned_size_t<sizeof(Bs[0])>(sizeof(Bs[0])), pipe);
          ::cuda::memcpy_async(&Bs[rowB * BM + colB * 4 + 2], &(reinterpret_cast<const float4*>(&B[rowB * N + colB * 4])[0]).z,
                               ::cuda::aligned_size_t<sizeof(Bs[0])>(sizeof(Bs[0])), pipe);
          ::cuda::memcpy_async(&Bs[rowB * BM + colB * 4 + 3], &(reinterpret_cast<const float4*>(&B[rowB * N + colB * 4])[0]).w,
                               ::cuda::aligned_size_t<sizeof(Bs[0])>(sizeof(Bs[0])), pipe);
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
      t = reinterpret_cast<const float4*>(&B[rowB * N + colB * 4])[0];
      Bs[rowB * BM + colB * 4 + 0] = t.x;
      Bs[rowB * BM + colB * 4 + 1] = t.y;
      Bs[rowB * BM + colB * 4 + 2] = t.z;
      Bs[rowB * BM + colB * 4 + 3] = t.w;
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
#line 241
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      C[(tr * 4 + i) * N + tc * 8 + j] = alpha * acc[i][j] + beta * C[(tr * 4 + i) * N + tc * 8 + j];
}

// Refused: the local is set again under a condition, so which read a store copies is not known
// from the text.
__global__ void sgemm_vec4_maybe(int M, int N, int K, float alpha, const float* A, const float* B,
                                 float beta, float* C) {
  __shared__ float As[BK * BM];
  __shared__ float Bs[BK * BM];
  const int tid = threadIdx.x;
  const int rowA = tid / 2, colA = tid % 2;
  const int rowB = tid / 16, colB = tid % 16;
  const int tr = tid / 8, tc = tid % 8;
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BM;
  C += blockIdx.y * BM * N + blockIdx.x * BM;
  float acc[4][8] = {};
  // EXPECT: load-phase
  for (int k0 = 0; k0 < K; k0 += BK) {
    float4 t = reinterpret_cast<const float4*>(&A[rowA * K + colA * 4])[0];
    As[(colA * 4 + 0) * BM + rowA] = t.x;
    As[(colA * 4 + 1) * BM + rowA] = t.y;
    As[(colA * 4 + 2) * BM + rowA] = t.z;
    As[(colA * 4 + 3) * BM + rowA] = t.w;
    if (N > 0)
      t = reinterpret_cast<const float4*>(&B[rowB * N + colB * 4])[0];
    Bs[rowB * BM + colB * 4 + 0] = t.x;
    Bs[rowB * BM + colB * 4 + 1] = t.y;
    Bs[rowB * BM + colB * 4 + 2] = t.z;
    Bs[rowB * BM + colB * 4 + 3] = t.w;
    __syncthreads();
    A += BK;
    B += BK * N;
    for (int k = 0; k < BK; ++k)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 8; ++j)
          acc[i][j] += As[k * BM + tr * 4 + i] * Bs[k * BM + tc * 8 + j];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      C[(tr * 4 + i) * N + tc * 8 + j] = alpha * acc[i][j] + beta * C[(tr * 4 + i) * N + tc * 8 + j];
}

#define T 128
// A scalar read into a local, then stored: a 1-D reduction of a window over tiles of A.
__global__ void scalar_local(const float* A, float* C, int nt) {
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
          ::cuda::memcpy_async(&s[threadIdx.x], &(A[(blockIdx.x * nt + t) * T + threadIdx.x]),
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
      acc += s[(threadIdx.x + 3) % T] - 0.5f * s[(threadIdx.x + 77) % T];
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
      float v = A[(blockIdx.x * nt + t) * T + threadIdx.x];
      s[threadIdx.x] = v;
      __syncthreads();
      acc += s[(threadIdx.x + 3) % T] - 0.5f * s[(threadIdx.x + 77) % T];
      __syncthreads();
    }
  }
#endif
#line 301
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// An inner copy loop that declares its own index.
__global__ void inner_index(const float* A, float* C, int nt) {
  __shared__ float s_stages[2][2 * T];
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
          for (int i = 0; i < 2; ++i) {
            const int xo = i * T + threadIdx.x;
            ::cuda::memcpy_async(&s[xo], &A[(blockIdx.x * nt + t) * 2 * T + xo],
                                 ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          }
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
      acc += s[(threadIdx.x * 2 + 1) % (2 * T)] * s[(threadIdx.x + 100) % (2 * T)];
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
      for (int i = 0; i < 2; ++i) {
        const int xo = i * T + threadIdx.x;
        s[xo] = A[(blockIdx.x * nt + t) * 2 * T + xo];
      }
      __syncthreads();
      acc += s[(threadIdx.x * 2 + 1) % (2 * T)] * s[(threadIdx.x + 100) % (2 * T)];
      __syncthreads();
    }
  }
  }
#line 318
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Refused: the compute phase reads the local too, so it is a value the loop reads from memory,
// which no copy issued ahead may stand for.
__global__ void local_read_later(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: address-not-invariant
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 3) % T] * v;
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Refused: two inner variables meet in one subscript; (0, 1) and (1, 0) store one element, whose
// two copies, in flight together, may land in either order.
__global__ void two_inner(const float* A, float* C, int nt) {
  __shared__ float s[T][3];
  float acc = 0.0f;
  // EXPECT: tile-overlap
  for (int t = 0; t < nt; ++t) {
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        s[threadIdx.x][i + j] = A[(blockIdx.x * nt + t) * T + (threadIdx.x + 32 * (2 * i + j)) % T];
    __syncthreads();
    acc += s[(threadIdx.x + 3) % T][1] + s[threadIdx.x][0] * s[threadIdx.x][2];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Refused: 'off' in the read names another variable where the store stands.
__global__ void rebound(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  const int off = blockIdx.x * nt * T;
  // EXPECT: name-binding
  for (int t = 0; t < nt; ++t) {
    const float v = A[off + t * T + threadIdx.x];
    {
      const int off = 5;
      s[(threadIdx.x + off) % T] = v;
    }
    __syncthreads();
    acc += s[(threadIdx.x + 3) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The SGEMM tutorial's "linearised" tile: the stores' index holds `c % 2` and `c / 2` of an
// unsigned c, which no affine form expands. Within one thread and one iteration each is one value,
// read alike by both stores, so the stores differ by 16: distinct elements.
__global__ void linearized(const float* A, float* C, int nt) {
  __shared__ float s_stages[3][2 * T];
  float acc = 0.0f;
  const unsigned c = threadIdx.x % 32, r = threadIdx.x / 32;
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
          ::cuda::memcpy_async(&s[((c % 2) * 2 + r * 4 + 0) * 16 + c / 2], &(reinterpret_cast<const float2*>(A)[(blockIdx.x * nt + t) * T + threadIdx.x]).x,
                               ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          ::cuda::memcpy_async(&s[((c % 2) * 2 + r * 4 + 1) * 16 + c / 2], &(reinterpret_cast<const float2*>(A)[(blockIdx.x * nt + t) * T + threadIdx.x]).y,
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
      acc += s[(threadIdx.x * 2 + 1) % (2 * T)] * s[(threadIdx.x + 100) % (2 * T)];
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
      const float2 v = reinterpret_cast<const float2*>(A)[(blockIdx.x * nt + t) * T + threadIdx.x];
      s[((c % 2) * 2 + r * 4 + 0) * 16 + c / 2] = v.x;
      s[((c % 2) * 2 + r * 4 + 1) * 16 + c / 2] = v.y;
      __syncthreads();
      acc += s[(threadIdx.x * 2 + 1) % (2 * T)] * s[(threadIdx.x + 100) % (2 * T)];
      __syncthreads();
    }
  }
#endif
#line 390
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Refused: the second store writes the first's element, spelled otherwise; in the original its
// value lands last, which two copies in flight together do not promise.
__global__ void respelled(const float* A, float* C, int nt) {
  __shared__ float s[2 * T];
  float acc = 0.0f;
  const unsigned c = threadIdx.x % 32, r = threadIdx.x / 32;
  // EXPECT: tile-overlap
  for (int t = 0; t < nt; ++t) {
    const float2 v = reinterpret_cast<const float2*>(A)[(blockIdx.x * nt + t) * T + threadIdx.x];
    s[r * 64 + c] = v.x;
    s[r * 64 + (c / 2) * 2 + c % 2] = v.y;
    s[r * 64 + 32 + c] = A[(blockIdx.x * nt + t) * 2 * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x * 2 + 1) % (2 * T)] * s[(threadIdx.x + 100) % (2 * T)];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
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
  runKernel(f, hC, [&](float* dC) { sgemm_vec4<<<grid, 128>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_vec4_async<<<grid, 128>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_vec4_reused<<<grid, 128>>>(M, N, K, alpha, dA, dB, beta, dC); });
  runKernel(f, hC, [&](float* dC) { sgemm_vec4_maybe<<<grid, 128>>>(M, N, K, alpha, dA, dB, beta, dC); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

// blocks blocks, nt tiles each (of 2 * T elements: inner_index reads both halves).
static void runRows(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, 100 + caseNo);
  std::vector<float> hA = randomFloats((size_t)blocks * nt * 2 * T, rng);
  std::vector<float> hC(blocks * T, 0.0f);
  printf("rows case %d: blocks=%d nt=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  runKernel(f, hC, [&](float* dC) { scalar_local<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { inner_index<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { local_read_later<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { two_inner<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { rebound<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { linearized<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, hC, [&](float* dC) { respelled<<<blocks, T>>>(dA, dC, nt); });
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
