// pragma_loops.cu: `#pragma unroll` where real kernels put it. On the tiled loop itself the rewrite
// writes it on its mainloop (and on the loop kept as it was); on an inner copy loop the copy loop
// keeps it, in every place the copy phase goes. The cost model picks each loop's plan; the twins
// marked `// tilepipe: plan=always` take the cp.async pipeline (another loop pragma, which nvcc
// warns of in device code, is refused: tests/lit/pragmas.cu). Run at scale: thousands of blocks,
// many more tiles than stages, random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
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
#pragma unroll 1
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void unroll_one_pipelined(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#pragma unroll 1
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// A strided inner copy loop, unrolled, and an unrolled inner compute loop.
__global__ void unrolled_copy(const float* A, float* C, int nt) {
  __shared__ float s[W];
  float acc = 0.0f;
  // EXPECT: pipelined
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
  C[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void unrolled_copy_pipelined(const float* A, float* C, int nt) {
  __shared__ float s[W];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
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
