// neg_element_type.cu: tiles whose elements are aligned to less than the 4 bytes cp.async moves
// at least: a `short` tile (2 bytes) and a `short3` tile (6 bytes, aligned to 2), each filled by an
// inner copy loop. cp.async cannot move them, and the register-staged prefetch, which could (see
// testdata/narrow_elements.cu), cannot hold what a store in an inner loop stores several times a
// tile: the tool must refuse both loops with element-type. (A `float3` tile, 12 bytes aligned to
// 4, is copied as three 4-byte copies an element: testdata/counter_loops.cu.)
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

__global__ void short_products(int* out, const short* g, int numTiles) {
  __shared__ short s[T];
  int acc = 0;
  // EXPECT: element-type
  for (int t = 0; t < numTiles; ++t) {
    for (int i = threadIdx.x; i < T; i += blockDim.x)
      s[i] = g[(blockIdx.x * numTiles + t) * T + i];
    __syncthreads();
    acc += (int)s[threadIdx.x] * (int)s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void short3_dots(int* out, const short3* p, int numTiles) {
  __shared__ short3 s3[T];
  int acc = 0;
  // EXPECT: element-type
  for (int t = 0; t < numTiles; ++t) {
    for (int i = threadIdx.x; i < T; i += blockDim.x)
      s3[i] = p[(blockIdx.x * numTiles + t) * T + i];
    __syncthreads();
    const short3 a = s3[threadIdx.x];
    const short3 b = s3[(threadIdx.x + 4) % T];
    acc += a.x * b.x + a.y * b.y + a.z * b.z;
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

static void runShort(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<short> hG((size_t)blocks * numTiles * T);
  for (auto& v : hG) v = (short)rng.range(-100, 100);
  short* dG = toDevice(hG);
  const size_t nOut = (size_t)blocks * T;
  int* dOut = poisonedOutput<int>(nOut);
  short_products<<<blocks, T>>>(dOut, dG, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: short_products blocks=%d tiles=%d elements=%zu\n", caseNo, blocks, numTiles,
         nOut);
  if (timeIt) timeKernel([&] { short_products<<<blocks, T>>>(dOut, dG, numTiles); });
  CK(cudaFree(dG));
  CK(cudaFree(dOut));
}

static void runShort3(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<short3> hP((size_t)blocks * numTiles * T);
  for (auto& v : hP) v = make_short3((short)rng.range(-100, 100), (short)rng.range(-100, 100), (short)rng.range(-100, 100));
  short3* dP = toDevice(hP);
  const size_t nOut = (size_t)blocks * T;
  int* dOut = poisonedOutput<int>(nOut);
  short3_dots<<<blocks, T>>>(dOut, dP, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: short3_dots blocks=%d tiles=%d elements=%zu\n", caseNo, blocks, numTiles, nOut);
  if (timeIt) timeKernel([&] { short3_dots<<<blocks, T>>>(dOut, dP, numTiles); });
  CK(cudaFree(dP));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runShort(f, seed, 0, 5, 3, false);
  runShort3(f, seed, 1, 5, 3, false);
  runShort(f, seed, 2, 300, 20, false);
  runShort3(f, seed, 3, 300, 20, true);
  closeOutput(f);
  return 0;
}
