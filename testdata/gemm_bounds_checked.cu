// gemm_bounds_checked.cu: the bounds-checked GEMM of the textbooks. One if guards the stores of
// both tiles and its else fills both with zeros: each element one branch stores, the other stores
// too, so every iteration writes the same elements. Sizes that are no multiple of the tile, so the
// guard fails at the edges, and a K of many tiles. The cost model picks one loop's plan; its twin
// marked `// tilepipe: plan=always` takes the cp.async pipeline (one if guards both tiles, so no
// tensor copy can replace it). Run at scale (tests/gpu/verify_testdata.sh).
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

__global__ void gemm_model(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TB][TB];
  __shared__ float Bs[TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TB + ty, col = blockIdx.x * TB + tx;
  float acc = 0.0f;
  // EXPECT: pipelined
  for (int t = 0; t < (K + TB - 1) / TB; ++t) {
    if (row < M && t * TB + tx < K && t * TB + ty < K && col < N) {
      As[ty][tx] = A[row * K + t * TB + tx];
      Bs[ty][tx] = B[(t * TB + ty) * N + col];
    } else {
      As[ty][tx] = 0.0f;
      Bs[ty][tx] = 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < TB; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N)
    C[row * N + col] = acc;
}

__global__ void gemm_pipelined(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TB][TB];
  __shared__ float Bs[TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TB + ty, col = blockIdx.x * TB + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < (K + TB - 1) / TB; ++t) {
    if (row < M && t * TB + tx < K && t * TB + ty < K && col < N) {
      Bs[ty][tx] = B[(t * TB + ty) * N + col];
      As[ty][tx] = A[row * K + t * TB + tx];
    } else {
      As[ty][tx] = 0.0f;
      Bs[ty][tx] = 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < TB; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N)
    C[row * N + col] = acc;
}

// A branch that leaves an element the other writes: refused.
__global__ void gemm_unfilled(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TB][TB];
  __shared__ float Bs[TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TB + ty, col = blockIdx.x * TB + tx;
  float acc = 0.0f;
  // EXPECT: guard-without-fill
  for (int t = 0; t < (K + TB - 1) / TB; ++t) {
    if (row < M && t * TB + tx < K && t * TB + ty < K && col < N) {
      As[ty][tx] = A[row * K + t * TB + tx];
      Bs[ty][tx] = B[(t * TB + ty) * N + col];
    } else {
      As[ty][tx] = 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < TB; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N)
    C[row * N + col] = acc;
}

template <typename L>
static void runKernel(FILE* f, size_t nC, L launch) {
  float* dC = poisonedOutput<float>(nC);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, nC);
  CK(cudaFree(dC));
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int M, int N, int K) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K, rng), hB = randomFloats((size_t)K * N, rng);
  printf("case %d: M=%d N=%d K=%d\n", caseNo, M, N, K);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  const dim3 grid((N + TB - 1) / TB, (M + TB - 1) / TB), block(TB, TB);
  const size_t nC = (size_t)M * N;
  runKernel(f, nC, [&](float* dC) { gemm_model<<<grid, block>>>(dC, dA, dB, M, N, K); });
  runKernel(f, nC, [&](float* dC) { gemm_pipelined<<<grid, block>>>(dC, dA, dB, M, N, K); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 37, 29, 0);        // no tiles
  runCase(f, seed, 1, 37, 29, 11);       // one partial tile
  runCase(f, seed, 2, 100, 90, 30);      // two tiles, fewer than stages
  runCase(f, seed, 3, 1021, 1019, 45);   // three tiles, 4096 blocks
  runCase(f, seed, 4, 1021, 1019, 1547); // 97 tiles, the last partial
  runCase(f, seed, 5, 2047, 777, 333);   // 21 tiles, 6272 blocks
  closeOutput(f);
  return 0;
}
