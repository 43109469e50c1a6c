// neg_dynamic_shared.cu: the tile is dynamic shared memory (extern __shared__ float s[]),
// reached through a pointer the kernel sets twice (the other half of the region in odd blocks):
// it is no fixed view of the region, which is what a tile in dynamic shared memory must be for
// the register-staged prefetch (testdata/dynamic_tiles.cu), and its stages could not be sized.
// The tool must refuse with tile-declaration.
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

#define T 64  // == blockDim.x

__global__ void dynamic_tile(float* out, const float* g, int numTiles) {
  extern __shared__ float s[];
  float* tile = s;
  if (blockIdx.x % 2) tile += T;
  float acc = 0.0f;
  // EXPECT: tile-declaration
  for (int t = 0; t < numTiles; ++t) {
    tile[threadIdx.x] = g[(blockIdx.x * numTiles + t) * T + threadIdx.x];
    __syncthreads();
    acc += tile[threadIdx.x] * tile[(threadIdx.x + 11) % T];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

// Runs one case: g holds blocks * numTiles * T random floats, out holds blocks * T
// floats. launch(out, g, blocks, numTiles) launches the kernel under test.
template <typename L>
static void runCase(FILE* f, uint64_t seed, int caseNo, const char* name, int blocks, int numTiles,
                    bool timeIt, L launch) {
  Rng rng(seed, caseNo);
  std::vector<float> hG = randomFloats((size_t)blocks * numTiles * T, rng);
  float* dG = toDevice(hG);
  const size_t nOut = (size_t)blocks * T;
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
  auto k = [](float* o, const float* g, int b, int nt) {
    dynamic_tile<<<b, T, 2 * T * sizeof(float)>>>(o, g, nt);
  };
  runCase(f, seed, 0, "dynamic_tile", 5, 3, false, k);
  runCase(f, seed, 1, "dynamic_tile", 400, 30, true, k);
  closeOutput(f);
  return 0;
}
