// launch_resources.cu: a rewrite must launch wherever the original launched.
//  - wide_block runs 1024-thread blocks (32 x 32). Its original needs 56 registers per thread on
//    sm_90 (64 is the most a 1024-thread block allows); the pipelined loop, unbounded, needs 70,
//    and every launch would fail with "too many resources requested" (found by the fuzzer, seed
//    150, kernel 14). The tool compiles both with nvcc, sees the drop, and adds
//    __launch_bounds__(1024), which ptxas honours.
//  - scratch_after and scratch_helper also use dynamic shared memory (extern __shared__), sized at
//    launch to fill 48 KiB next to their static shared memory. The stages of a pipeline would add
//    static shared memory and push those launches over the limit, so the tool leaves both loops
//    alone with launch-resources; no_scratch, the same loop without dynamic shared memory, is
//    rewritten.
// wide_block and no_scratch carry `// tilepipe: plan=always`: the cost model alone would not pipeline
// them (a per-element tile; 1 KiB stages), and the point is the launch check on a rewrite.
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

// ---- wide_block: 1024 threads per block ----------------------------------------------------
__global__ void wide_block(int* __restrict__ out, const int* __restrict__ src0,
                           const int* __restrict__ src1, int ld0, int ld1, int nr_src0, int rs_src0,
                           int n_src1, int numTiles) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * 32 + tx;
  __shared__ int tile0[32][32];
  __shared__ int buf1[32][64];
  const int base_src0 = (blockIdx.x % nr_src0) * rs_src0;
  int acc = 0;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; t++) {
    __syncthreads();
    tile0[ty][tx] = src0[base_src0 + t * 32 + ty * ld0 + tx];
    buf1[ty][tx] = src1[min(t * 32 * ld1 + ty * ld1 + tx, n_src1 - 1)];
    buf1[ty][tx + 32] = src1[min(t * 32 * ld1 + ty * ld1 + tx + 32, n_src1 - 1)];
    __syncthreads();
    acc += (buf1[(ty + 24) % 32][63 - tx % 64] & 63);
    for (int k = 0; k < 64; ++k)
      acc += (tile0[(ty + 10) % 32][(tx + t) % 32] & 63) * (buf1[(ty + 29) % 32][(tx * 7 + 8) % 64] & 63);
    for (int k = 0; k < 16; ++k)
      acc += (tile0[(k + ty) % 32][(k + tx) % 32] & 63) * (buf1[(k + ty) % 32][(k + tx) % 64] & 63);
  }
  out[blockIdx.x * 1024 + tid] = acc;
}

// ---- dynamic shared memory beside a tile -----------------------------------------------------
#define TS 256                                      // == blockDim.x
#define SCRATCH_BYTES (48 * 1024 - TS * sizeof(float)) // fills 48 KiB with the tile

__global__ void scratch_after(float* out, const float* g, int numTiles) {
  __shared__ float tile[TS];
  extern __shared__ float scratch[];
  float acc = 0.0f;
  // EXPECT: launch-resources
  for (int t = 0; t < numTiles; ++t) {
    tile[threadIdx.x] = g[(blockIdx.x * numTiles + t) * TS + threadIdx.x];
    __syncthreads();
    acc += tile[threadIdx.x] * tile[(threadIdx.x + 37) % TS];
    __syncthreads();
  }
  scratch[threadIdx.x] = acc;
  __syncthreads();
  out[blockIdx.x * TS + threadIdx.x] = acc - scratch[(threadIdx.x + 1) % TS];
}

__device__ float tiled_sum(const float* g, int numTiles) {
  __shared__ float tile[TS];
  float acc = 0.0f;
  // EXPECT: launch-resources
  for (int t = 0; t < numTiles; ++t) {
    tile[threadIdx.x] = g[(blockIdx.x * numTiles + t) * TS + threadIdx.x];
    __syncthreads();
    acc += tile[threadIdx.x] * tile[(threadIdx.x + 37) % TS];
    __syncthreads();
  }
  return acc;
}

__global__ void scratch_helper(float* out, const float* g, int numTiles) {
  extern __shared__ float scratch[];
  float acc = tiled_sum(g, numTiles);
  scratch[threadIdx.x] = acc;
  __syncthreads();
  out[blockIdx.x * TS + threadIdx.x] = acc - scratch[(threadIdx.x + 1) % TS];
}

__global__ void no_scratch(float* out, const float* g, int numTiles) {
  __shared__ float tile[TS];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    tile[threadIdx.x] = g[(blockIdx.x * numTiles + t) * TS + threadIdx.x];
    __syncthreads();
    acc += tile[threadIdx.x] * tile[(threadIdx.x + 37) % TS];
    __syncthreads();
  }
  out[blockIdx.x * TS + threadIdx.x] = acc;
}

// The program sets the kernel's preferred split of L1 and shared memory: a preference, which
// launches nothing and sets no limit a launch is checked against.
__global__ void carveout_preferred(float* out, const float* g, int numTiles) {
  __shared__ float tile[TS];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    tile[threadIdx.x] = g[(blockIdx.x * numTiles + t) * TS + threadIdx.x];
    __syncthreads();
    acc += tile[threadIdx.x] * tile[(threadIdx.x + 41) % TS];
    __syncthreads();
  }
  out[blockIdx.x * TS + threadIdx.x] = acc;
}

// The program raises the kernel's limit of dynamic shared memory, and may launch it with more:
// the stages the rewrite adds could pass the device's limit with it.
__global__ void dynamic_limit_raised(float* out, const float* g, int numTiles) {
  __shared__ float tile[TS];
  float acc = 0.0f;
  // EXPECT: launch-resources
  for (int t = 0; t < numTiles; ++t) {
    tile[threadIdx.x] = g[(blockIdx.x * numTiles + t) * TS + threadIdx.x];
    __syncthreads();
    acc += tile[threadIdx.x] * tile[(threadIdx.x + 43) % TS];
    __syncthreads();
  }
  out[blockIdx.x * TS + threadIdx.x] = acc;
}

static void runWide(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  const int ld0 = 32, ld1 = 1025, nr = 13, rs = 977;
  const size_t n0 = (size_t)(nr - 1) * rs + (size_t)numTiles * 32 + 31 * ld0 + 32;
  const size_t n1 = (size_t)numTiles * 32 * ld1 + 31 * ld1 + 64 - 900; // the min() clamps the rest
  std::vector<int> h0(n0), h1(n1);
  for (int& v : h0) v = (int)(rng.next() >> 33);
  for (int& v : h1) v = (int)(rng.next() >> 33);
  int* d0 = toDevice(h0);
  int* d1 = toDevice(h1);
  const size_t nOut = (size_t)blocks * 1024;
  int* dOut = poisonedOutput<int>(nOut);
  auto launch = [&] {
    wide_block<<<blocks, dim3(32, 32)>>>(dOut, d0, d1, ld0, ld1, nr, rs, (int)n1, numTiles);
  };
  launch();
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: wide_block blocks=%d tiles=%d elements=%zu\n", caseNo, blocks, numTiles, nOut);
  if (timeIt) timeKernel(launch);
  CK(cudaFree(d0));
  CK(cudaFree(d1));
  CK(cudaFree(dOut));
}

template <typename L>
static void runScratch(FILE* f, uint64_t seed, int caseNo, const char* name, int blocks,
                       int numTiles, bool timeIt, L launch) {
  Rng rng(seed, caseNo);
  std::vector<float> hG = randomFloats((size_t)blocks * numTiles * TS, rng);
  float* dG = toDevice(hG);
  const size_t nOut = (size_t)blocks * TS;
  float* dOut = poisonedOutput<float>(nOut);
  launch(dOut, dG, blocks, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: %s blocks=%d tiles=%d elements=%zu\n", caseNo, name, blocks, numTiles, nOut);
  if (timeIt) timeKernel([&] { launch(dOut, dG, blocks, numTiles); });
  CK(cudaFree(dG));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  int c = 0;
  for (int tiles : {0, 1, 2, 6})
    runWide(f, seed, c++, 7, tiles, false);
  runWide(f, seed, c++, 3000, 64, true);
  auto after = [](float* o, const float* g, int b, int nt) {
    scratch_after<<<b, TS, SCRATCH_BYTES>>>(o, g, nt);
  };
  auto helper = [](float* o, const float* g, int b, int nt) {
    scratch_helper<<<b, TS, SCRATCH_BYTES>>>(o, g, nt);
  };
  auto plain = [](float* o, const float* g, int b, int nt) { no_scratch<<<b, TS>>>(o, g, nt); };
  CK(cudaFuncSetAttribute(carveout_preferred, cudaFuncAttributePreferredSharedMemoryCarveout,
                          cudaSharedmemCarveoutMaxShared));
  CK(cudaFuncSetAttribute(dynamic_limit_raised, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  auto carveout = [](float* o, const float* g, int b, int nt) { carveout_preferred<<<b, TS>>>(o, g, nt); };
  auto raised = [](float* o, const float* g, int b, int nt) { dynamic_limit_raised<<<b, TS>>>(o, g, nt); };
  for (int tiles : {0, 1, 3}) {
    runScratch(f, seed, c++, "scratch_after", 5, tiles, false, after);
    runScratch(f, seed, c++, "scratch_helper", 5, tiles, false, helper);
    runScratch(f, seed, c++, "no_scratch", 5, tiles, false, plain);
    runScratch(f, seed, c++, "carveout_preferred", 5, tiles, false, carveout);
    runScratch(f, seed, c++, "dynamic_limit_raised", 5, tiles, false, raised);
  }
  runScratch(f, seed, c++, "scratch_after", 2000, 40, true, after);
  runScratch(f, seed, c++, "scratch_helper", 2000, 40, true, helper);
  runScratch(f, seed, c++, "no_scratch", 2000, 40, true, plain);
  runScratch(f, seed, c++, "carveout_preferred", 4000, 40, true, carveout);
  runScratch(f, seed, c++, "dynamic_limit_raised", 4000, 40, true, raised);
  closeOutput(f);
  return 0;
}
