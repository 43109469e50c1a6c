// mixed_tiles.cu: a row block times a vector, tiled: each trip copies a 32 x 32 tile of A (a tensor
// copy on Hopper, through a map) and 32 elements of x (a bulk copy, no map) into __shared__, and
// each thread mixes elements of other threads' rows and columns.
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


#define T 32

// out[row * T + tx] for row = blockIdx.x * T + ty: over numTiles tiles of A's row block (lda apart)
// and of x, sums products of the tile's elements that other threads loaded.
__global__ void rows_times_vector(float* out, const float* A, const float* x, int lda, int numTiles) {
  __shared__ float As[T][T];
  __shared__ float xs[T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.x * T + ty;
  float acc = 0.0f;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    As[ty][tx] = A[row * lda + t * T + tx];
    xs[tx] = x[t * T + tx];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[ty][(k + tx) % T] * xs[(3 * k + tx) % T];
    acc *= 0.75f;
    __syncthreads();
  }
  out[row * T + tx] = acc;
}

static void run(FILE* f, uint64_t seed, int caseNo, int blocks, int lda, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  const size_t rows = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(rows * lda, rng);
  std::vector<float> hx = randomFloats((size_t)numTiles * T, rng);
  float* dA = toDevice(hA);
  float* dx = toDevice(hx);
  const size_t nOut = rows * T;
  float* dOut = poisonedOutput<float>(nOut);
  const dim3 block(T, T);
  rows_times_vector<<<blocks, block>>>(dOut, dA, dx, lda, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: rows_times_vector blocks=%d lda=%d tiles=%d\n", caseNo, blocks, lda, numTiles);
  if (timeIt) timeKernel([&] { rows_times_vector<<<blocks, block>>>(dOut, dA, dx, lda, numTiles); });
  CK(cudaFree(dA));
  CK(cudaFree(dx));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  run(f, seed, 0, 3, 32, 0, false);        // 0 tiles
  run(f, seed, 1, 5, 32, 1, false);        // 1 tile
  run(f, seed, 2, 7, 96, 2, false);        // 2 tiles
  run(f, seed, 3, 9, 100, 3, false);       // 3 tiles
  run(f, seed, 4, 40, 163, 5, false);      // rows off 16 bytes: cp.async
  run(f, seed, 5, 4096, 2048, 64, true);   // 64 tiles x 4096 blocks
  closeOutput(f);
  return 0;
}
