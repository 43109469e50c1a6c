// guarded_tiles.cu: guarded copies in the forms a tensor map zero-fills: a 1-D tile of doubles
// guarded by an unsigned '<=' bound, and a 2-D SGEMM whose guards are if/else statements with
// mirrored comparisons and '<=' bounds.
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

#define W 256
#define T 16

// Block b sums, over numTiles tiles of W elements from X[b * seg], each thread's element of another
// thread's column; elements past X[last] read as zero.
__global__ void segment_sums(double* out, const double* X, unsigned last, unsigned seg, int numTiles) {
  __shared__ double s[W];
  double acc = 0.0;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    const unsigned i = blockIdx.x * seg + t * W + threadIdx.x;
    s[threadIdx.x] = i <= last ? X[i] : 0.0;
    __syncthreads();
    acc += s[(threadIdx.x * 7u + t) % W] * (double)(t + 1);
    __syncthreads();
  }
  out[blockIdx.x * W + threadIdx.x] = acc;
}

// C = A * B for arbitrary M, N, K (A is M x K, B is K x N, row-major), the guards written as
// if/else statements, mirrored or with '<=' bounds.
__global__ void gemm_ifelse(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // EXPECT: pipelined
  for (int k0 = 0; k0 < K; k0 += T) {
    if (M > row && K > k0 + tx)
      As[ty][tx] = A[row * K + k0 + tx];
    else
      As[ty][tx] = 0.0f;
    if (k0 + ty <= K - 1 && col <= N - 1) {
      Bs[ty][tx] = B[(k0 + ty) * N + col];
    } else {
      Bs[ty][tx] = 0;
    }
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

static void runSums(FILE* f, uint64_t seed, int caseNo, unsigned blocks, unsigned seg, unsigned last,
                    int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<double> hX = randomFloats<double>((size_t)last + 1, rng);
  double* dX = toDevice(hX);
  const size_t nOut = (size_t)blocks * W;
  double* dOut = poisonedOutput<double>(nOut);
  segment_sums<<<blocks, W>>>(dOut, dX, last, seg, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: segment_sums blocks=%u seg=%u last=%u tiles=%d\n", caseNo, blocks, seg, last, numTiles);
  if (timeIt) timeKernel([&] { segment_sums<<<blocks, W>>>(dOut, dX, last, seg, numTiles); });
  CK(cudaFree(dX));
  CK(cudaFree(dOut));
}

static void runGemm(FILE* f, uint64_t seed, int caseNo, int M, int N, int K, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K, rng);
  std::vector<float> hB = randomFloats((size_t)K * N, rng);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  const size_t nC = (size_t)M * N;
  float* dC = poisonedOutput<float>(nC);
  const dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
  gemm_ifelse<<<grid, block>>>(dC, dA, dB, M, N, K);
  checkLaunch();
  writeOutput(f, dC, nC);
  printf("case %d: gemm_ifelse M=%d N=%d K=%d tiles=%d blocks=%u\n", caseNo, M, N, K, (K + T - 1) / T,
         grid.x * grid.y);
  if (timeIt) timeKernel([&] { gemm_ifelse<<<grid, block>>>(dC, dA, dB, M, N, K); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runSums(f, seed, 0, 3, 256, 700, 0, false);              // 0 tiles
  runSums(f, seed, 1, 4, 200, 650, 1, false);              // 1 tile, the last block's partly past X
  runSums(f, seed, 2, 6, 768, 3000, 3, false);             // 3 tiles, blocks past the end read zeros
  runSums(f, seed, 3, 50, 1001, 40000, 5, false);          // segments that start off 16 bytes
  runSums(f, seed, 4, 4096, 16384, 4096u * 16384u - 5000, 64, true);  // 64 tiles x 4096 blocks
  runGemm(f, seed, 5, 37, 52, 0, false);                   // 0 tiles
  runGemm(f, seed, 6, 45, 28, 12, false);                  // 1 partial tile, rows on 16 bytes
  runGemm(f, seed, 7, 50, 41, 35, false);                  // 3 tiles, rows off 16 bytes
  runGemm(f, seed, 8, 1001, 772, 1012, false);             // 64 tiles, ragged edges
  runGemm(f, seed, 9, 2016, 2048, 1028, true);             // 65 tiles x 16128 blocks
  closeOutput(f);
  return 0;
}
