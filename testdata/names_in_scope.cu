// names_in_scope.cu: kernels whose parameters and locals carry the names that the rewritten code
// uses (init, cuda, pipe, stage, barrier, leader, tilepipe_tma, ...), a kernel with a parameter
// named as the kernel itself, and a namespace of the program's own named cuda around another
// kernel. None of them may change what the rewritten code calls: an unqualified `init(&bar, 1)`
// would call the parameter `float init`, `cuda::memcpy_async` inside namespace app would look in
// app::cuda, and a launcher's `weighted_tiles<<<...>>>` would name the float parameter. Both loops
// are rewritten; the output builds for sm_80 and sm_90 (tensor copies on sm_90 for weighted_tiles,
// bulk copies for app::shifted_dots).
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

#define T 32   // weighted_tiles: blocks of T x T threads, tiles of T x T
#define N 512  // app::shifted_dots: blocks of N threads, tiles of N

__global__ void weighted_tiles(float* out, const float* A, int lda, int numTiles, float init, int stage,
                               int pipe, int tilepipe_tma, float weighted_tiles) {
  __shared__ float tile[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  // Locals named as the rewrite's own variables.
  float cuda = init;
  int barrier = stage + 1, leader = pipe, s = tilepipe_tma, parities = 1, probe = 2;
  int fetch_stage = 3, issue_tile = 4, prologue = 5, tensor_copies = 6, tiles_aligned = 7;
  int stage_barriers = 8, rank = 9, threads = 10, chunk = 11, t_fetch = 12, tile_stages = 13;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    tile[ty][tx] = A[(blockIdx.y * T + ty) * lda + t * T + tx];
    __syncthreads();
    cuda += weighted_tiles * tile[tx][ty] + barrier * tile[ty][(tx + leader + s) % T] - probe * tile[0][tx];
    __syncthreads();
  }
  const int named = parities + fetch_stage + issue_tile + prologue + tensor_copies + tiles_aligned +
                    stage_barriers + rank + threads + chunk + t_fetch + tile_stages;
  out[(blockIdx.y * T + ty) * T + tx] = cuda + named;
}

namespace app {
namespace cuda {  // the program's own helpers: inside app, `cuda::` names this namespace
__device__ inline float scaled(float x, float init) { return x * init; }
}  // namespace cuda

__global__ void shifted_dots(float* out, const float* x, const float* y, int numTiles, float init) {
  __shared__ float xs[N];
  float pipe = init;
  const int stage = 1 + blockIdx.x % 7;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    xs[threadIdx.x] = x[t * N + threadIdx.x];
    __syncthreads();
    pipe += cuda::scaled(xs[(threadIdx.x + stage) % N], y[(blockIdx.x * numTiles + t) * N + threadIdx.x]);
    __syncthreads();
  }
  out[blockIdx.x * N + threadIdx.x] = pipe;
}
}  // namespace app

static void runCase(FILE* f, uint64_t seed, int caseNo, int rowTiles, int blocks, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  const int lda = numTiles * T;
  std::vector<float> hA = randomFloats((size_t)rowTiles * T * lda, rng);
  std::vector<float> hX = randomFloats((size_t)numTiles * N, rng);
  std::vector<float> hY = randomFloats((size_t)blocks * numTiles * N, rng);
  float* dA = toDevice(hA);
  float* dX = toDevice(hX);
  float* dY = toDevice(hY);
  const size_t nOut1 = (size_t)rowTiles * T * T, nOut2 = (size_t)blocks * N;
  float* dOut1 = poisonedOutput<float>(nOut1);
  float* dOut2 = poisonedOutput<float>(nOut2);
  weighted_tiles<<<dim3(1, rowTiles), dim3(T, T)>>>(dOut1, dA, lda, numTiles, 0.5f, 2, 3, 4, 1.5f);
  checkLaunch();
  app::shifted_dots<<<blocks, N>>>(dOut2, dX, dY, numTiles, 0.25f);
  checkLaunch();
  writeOutput(f, dOut1, nOut1);
  writeOutput(f, dOut2, nOut2);
  printf("case %d: weighted_tiles rows=%d, app::shifted_dots blocks=%d, tiles=%d\n", caseNo, rowTiles * T,
         blocks, numTiles);
  if (timeIt) {
    timeKernel([&] {
      weighted_tiles<<<dim3(1, rowTiles), dim3(T, T)>>>(dOut1, dA, lda, numTiles, 0.5f, 2, 3, 4, 1.5f);
    });
    timeKernel([&] { app::shifted_dots<<<blocks, N>>>(dOut2, dX, dY, numTiles, 0.25f); });
  }
  CK(cudaFree(dA));
  CK(cudaFree(dX));
  CK(cudaFree(dY));
  CK(cudaFree(dOut1));
  CK(cudaFree(dOut2));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 2, 3, 0, false);       // 0 tiles
  runCase(f, seed, 1, 3, 5, 1, false);       // 1 tile
  runCase(f, seed, 2, 2, 7, 2, false);       // 2 tiles
  runCase(f, seed, 3, 5, 9, 3, false);       // 3 tiles
  runCase(f, seed, 4, 512, 2048, 64, true);  // 64 tiles, 512 and 2048 blocks (timed)
  closeOutput(f);
  return 0;
}
