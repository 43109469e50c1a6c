// arch_dependent.cu: code that an `#if` on __CUDA_ARCH__ selects. tilepipe parses for one
// architecture (--gpu-arch, sm_90 by default), but the rewrite runs on several: the cp.async path
// from compute capability 8.0, tensor copies from 9.0. A store, an exit or a definition that only
// another architecture compiles is one the analysis never saw, so every loop whose code (or code it
// calls, or code that calls it) depends on the architecture is refused (arch-dependent,
// docs/legality.md P1). Beside each, a close form that is the same on every architecture and is
// rewritten. The refused forms store into their source only below sm_90, so on an sm_90 GPU they
// compute what the safe forms do; built for compute_80 they would differ after a rewrite.
// The safe forms carry `// tilepipe: plan=always`: the cost model alone would not pipeline their small stages.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cstdint>
#include <algorithm>
#include <cassert>

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

#define T 64  // == blockDim.x for the one-dimensional kernels

// P1: the store into the next tile's source is compiled only below sm_90.
__global__ void store_below_sm90(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: arch-dependent
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
#if __CUDA_ARCH__ < 900
    if (t + 1 < nt) A[(blockIdx.x * nt + t + 1) * T + (threadIdx.x + 5) % T] = acc;
#endif
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// P1: a device function with one body per architecture; the one parsed stores nothing.
#if __CUDA_ARCH__ >= 900
__device__ void publish(float*, int, float) {}
#else
__device__ void publish(float* p, int i, float v) { p[i] = v; }
#endif

__global__ void store_through_arch_function(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: arch-dependent
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (t + 1 < nt) publish(A, (blockIdx.x * nt + t + 1) * T + (threadIdx.x + 5) % T, acc);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// P1: a name that is a macro only below sm_90 (and a function that stores nothing above).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define keep_value(p, i, v) ((p)[i] = (v))
#endif
__device__ void(keep_value)(float*, int, float) {}  // parenthesised: never the macro

__global__ void store_through_arch_macro(float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: arch-dependent
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (t + 1 < nt) keep_value(A, (blockIdx.x * nt + t + 1) * T + (threadIdx.x + 5) % T, acc);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// P1: the loop is in a device function; its caller makes half the block exit below sm_90.
__device__ float tiled_sum(const float* A, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: arch-dependent
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T] * s[(threadIdx.x + 7) % T];
    __syncthreads();
  }
  return acc;
}

__global__ void exit_below_sm90(const float* A, float* C, int nt) {
#if __CUDA_ARCH__ < 900
  if (nt < 0) return;  // never taken here; its form is what matters
#endif
  C[blockIdx.x * T + threadIdx.x] = tiled_sum(A, nt);
}

// Safe: a __host__ __device__ helper that tells host from device, which every architecture's
// device code does alike (`#ifdef __CUDA_ARCH__` is true in all of it).
__host__ __device__ inline float twice(float x) {
#ifdef __CUDA_ARCH__
  return 2.0f * x;
#else
  return x + x;
#endif
}

__global__ void host_device_helper(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += twice(s[(threadIdx.x + 1) % T]);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Safe: the architecture's #if is in another kernel, which the loop neither calls nor is called by.
__global__ void arch_elsewhere(float* C) {
#if __CUDA_ARCH__ >= 800
  C[threadIdx.x] += 1.0f;
#endif
}

__global__ void beside_arch_code(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 3) % T] - s[(threadIdx.x + 9) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Safe: the C library's assert. The toolkit's wrappers include <assert.h> under an #if on the
// architecture, but assert evaluates its argument and traps where it is false on every one. (Inside
// the loop, which the rewrite moves, assert's __LINE__ would change: source-text.)
__global__ void asserts_in_loop(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  assert(blockDim.x == T);
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 5) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng r(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T;
  const std::vector<float> hA = randomFloats(nA, r);
  using Kernel = void (*)(float*, float*, int);
  for (Kernel k : {store_below_sm90, store_through_arch_function, store_through_arch_macro}) {
    float* dA = toDevice(hA);
    float* dC = poisonedOutput<float>((size_t)blocks * T);
    k<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    writeOutput(f, dA, nA);
    CK(cudaFree(dA));
    CK(cudaFree(dC));
  }
  float* dA = toDevice(hA);
  using ConstKernel = void (*)(const float*, float*, int);
  for (ConstKernel k : {exit_below_sm90, host_device_helper, beside_arch_code, asserts_in_loop}) {
    float* dC = poisonedOutput<float>((size_t)blocks * T);
    k<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
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
