// dynamic_tiles.cu: tiles in dynamic shared memory, whose size each launch sets: the array
// itself (`extern __shared__ float s[];`), pointers set once into it (`float *As = smem,
// *Bs = smem + bs * bs;`) and the CUDA samples' `SharedMemory<T>()` helper, in a kernel and a
// kernel template. The tile is blockDim.x elements (or blockDim.x squared), a run-time value:
// no stages of it can be sized, so each loop takes the register-staged prefetch, which keeps the
// one buffer where it is and needs no more shared memory. Trip counts 0 to 5 (the prefetch runs
// 4 tiles ahead) and 64 or more over thousands of blocks.
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

// The CUDA samples' helper: one extern array, viewed as the type each kernel wants.
template <class E>
struct SharedMemory {
  __device__ inline operator E*() {
    extern __shared__ int shared_words[];
    return (E*)shared_words;
  }
};

// All-pairs n-body accelerations: each trip copies blockDim.x bodies into dynamic shared memory.
__global__ void body_accel_dyn(float* accel, const float4* targets, const float4* sources,
                               int numSources, float eps2) {
  float4* bodies = SharedMemory<float4>();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 me = targets[i];
  float3 a = make_float3(0.0f, 0.0f, 0.0f);
  const int numTiles = numSources / blockDim.x;
  // The prefetch of four float4 ahead costs this kernel warps on an SM (40 registers a thread
  // against 32), which the model does not pay; --plan=always rewrites it.
  // EXPECT: no-gain
  for (int tile = 0; tile < numTiles; tile++) {
    bodies[threadIdx.x] = sources[tile * blockDim.x + threadIdx.x];
    __syncthreads();
    for (unsigned j = 0; j < blockDim.x; j++) {
      const float4 o = bodies[j];
      const float dx = o.x - me.x, dy = o.y - me.y, dz = o.z - me.z;
      const float inv = rsqrtf(dx * dx + dy * dy + dz * dz + eps2);
      const float s = o.w * inv * inv * inv;
      a.x += dx * s;
      a.y += dy * s;
      a.z += dz * s;
    }
    __syncthreads();
  }
  accel[3 * i + 0] = a.x;
  accel[3 * i + 1] = a.y;
  accel[3 * i + 2] = a.z;
}

// The extern array itself: each thread correlates the tile with itself, shifted by its rank.
extern __shared__ float window[];
__global__ void shifted_dots_dyn(float* out, const float* g, int numTiles) {
  const unsigned n = blockDim.x;
  float acc = 0.0f;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    window[threadIdx.x] = g[((size_t)blockIdx.x * numTiles + t) * n + threadIdx.x];
    __syncthreads();
    for (unsigned j = 0; j < n; ++j)
      acc += window[j] * window[(j + threadIdx.x) % n];
    __syncthreads();
  }
  out[blockIdx.x * n + threadIdx.x] = acc;
}

// Two pointers into one extern array: a matrix multiply whose tile is the block, bs x bs, set at
// launch. C = A (M x K) * B (K x N), all multiples of bs.
__global__ void gemm_views(float* C, const float* A, const float* B, int K, int N) {
  extern __shared__ float smem[];
  const int bs = blockDim.x;
  float *As = smem, *Bs = smem + bs * bs;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * bs + ty, col = blockIdx.x * bs + tx;
  float sum = 0.0f;
  // EXPECT: pipelined
  for (int t = 0; t < K / bs; ++t) {
    As[ty * bs + tx] = A[row * K + t * bs + tx];
    Bs[ty * bs + tx] = B[(t * bs + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < bs; ++k)
      sum += As[ty * bs + k] * Bs[k * bs + tx];
    __syncthreads();
  }
  C[row * N + col] = sum;
}

// The helper in a kernel template, launched for float and double.
template <typename E>
__global__ void tile_sums(E* out, const E* g, int numTiles) {
  E* s = SharedMemory<E>();
  E acc = 0;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    s[threadIdx.x] = g[((size_t)blockIdx.x * numTiles + t) * blockDim.x + threadIdx.x];
    __syncthreads();
    for (unsigned j = 0; j < blockDim.x; j += 3)
      acc = acc * (E)0.5 + s[(j + threadIdx.x) % blockDim.x];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

static std::vector<float4> randomBodies(int n, Rng& rng) {
  std::vector<float4> b((size_t)n);
  for (auto& p : b) {
    p.x = rng.uniform();
    p.y = rng.uniform();
    p.z = rng.uniform();
    p.w = 0.5f * (rng.uniform() + 1.5f);  // mass in [0.25, 1.25)
  }
  return b;
}

static void runBodies(FILE* f, uint64_t seed, int caseNo, int numTargets, int numSources, int threads,
                      bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float4> hT = randomBodies(numTargets, rng), hS = randomBodies(numSources, rng);
  float4 *dT = toDevice(hT), *dS = toDevice(hS);
  const size_t nOut = (size_t)numTargets * 3;
  float* dAcc = poisonedOutput<float>(nOut);
  const int grid = numTargets / threads;
  const size_t smem = threads * sizeof(float4);
  body_accel_dyn<<<grid, threads, smem>>>(dAcc, dT, dS, numSources, 1e-3f);
  checkLaunch();
  writeOutput(f, dAcc, nOut);
  printf("case %d: body_accel_dyn targets=%d sources=%d threads=%d tiles=%d blocks=%d elements=%zu\n", caseNo,
         numTargets, numSources, threads, numSources / threads, grid, nOut);
  if (timeIt) timeKernel([&] { body_accel_dyn<<<grid, threads, smem>>>(dAcc, dT, dS, numSources, 1e-3f); });
  CK(cudaFree(dT));
  CK(cudaFree(dS));
  CK(cudaFree(dAcc));
}

static void runDots(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, int threads, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hG = randomFloats((size_t)blocks * numTiles * threads, rng);
  float* dG = toDevice(hG);
  const size_t nOut = (size_t)blocks * threads;
  float* dOut = poisonedOutput<float>(nOut);
  const size_t smem = threads * sizeof(float);
  shifted_dots_dyn<<<blocks, threads, smem>>>(dOut, dG, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: shifted_dots_dyn blocks=%d tiles=%d threads=%d elements=%zu\n", caseNo, blocks, numTiles,
         threads, nOut);
  if (timeIt) timeKernel([&] { shifted_dots_dyn<<<blocks, threads, smem>>>(dOut, dG, numTiles); });
  CK(cudaFree(dG));
  CK(cudaFree(dOut));
}

static void runGemm(FILE* f, uint64_t seed, int caseNo, int M, int N, int K, int bs, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K, rng), hB = randomFloats((size_t)K * N, rng);
  float *dA = toDevice(hA), *dB = toDevice(hB);
  const size_t nOut = (size_t)M * N;
  float* dC = poisonedOutput<float>(nOut);
  const dim3 grid(N / bs, M / bs), block(bs, bs);
  const size_t smem = 2 * bs * bs * sizeof(float);
  gemm_views<<<grid, block, smem>>>(dC, dA, dB, K, N);
  checkLaunch();
  writeOutput(f, dC, nOut);
  printf("case %d: gemm_views M=%d N=%d K=%d bs=%d tiles=%d blocks=%d elements=%zu\n", caseNo, M, N, K, bs, K / bs,
         grid.x * grid.y, nOut);
  if (timeIt) timeKernel([&] { gemm_views<<<grid, block, smem>>>(dC, dA, dB, K, N); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
}

template <typename E>
static void runSums(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, int threads) {
  Rng rng(seed, caseNo);
  std::vector<E> hG = randomFloats<E>((size_t)blocks * numTiles * threads, rng);
  E* dG = toDevice(hG);
  const size_t nOut = (size_t)blocks * threads;
  E* dOut = poisonedOutput<E>(nOut);
  tile_sums<E><<<blocks, threads, threads * sizeof(E)>>>(dOut, dG, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: tile_sums<%s> blocks=%d tiles=%d threads=%d elements=%zu\n", caseNo,
         sizeof(E) == 8 ? "double" : "float", blocks, numTiles, threads, nOut);
  CK(cudaFree(dG));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  int c = 0;
  // Trip counts 0 to 5 around the prefetch's 4 tiles ahead, then many over thousands of blocks.
  for (int tiles : {0, 1, 2, 3, 4, 5}) runBodies(f, seed, c++, 1024, tiles * 128, 128, false);
  runBodies(f, seed, c++, 4096 * 128, 8192, 128, false);  // 4096 blocks x 64 tiles of 128 bodies
  runBodies(f, seed, c++, 2048 * 256, 16384, 256, true);  // 2048 blocks x 64 tiles of 256 bodies
  for (int tiles : {0, 1, 2, 3, 4, 5}) runDots(f, seed, c++, 7, tiles, 96, false);
  runDots(f, seed, c++, 4096, 70, 96, false);  // a tile of 96: no power of two
  runDots(f, seed, c++, 8192, 64, 256, true);
  for (int k : {0, 16, 32, 48, 64, 80}) runGemm(f, seed, c++, 64, 48, k, 16, false);
  runGemm(f, seed, c++, 1024, 1024, 1024, 32, false);  // 1024 blocks x 32 tiles of 32 x 32
  runGemm(f, seed, c++, 2048, 2048, 1024, 16, true);   // 16384 blocks x 64 tiles of 16 x 16
  for (int tiles : {0, 1, 3, 5}) runSums<float>(f, seed, c++, 9, tiles, 64);
  for (int tiles : {0, 2, 4, 5}) runSums<double>(f, seed, c++, 9, tiles, 128);
  runSums<float>(f, seed, c++, 4096, 67, 128);
  runSums<double>(f, seed, c++, 4096, 66, 64);
  closeOutput(f);
  return 0;
}
