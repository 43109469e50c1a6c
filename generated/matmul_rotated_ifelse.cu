// matmul_rotated_ifelse.cu: C = A * B^T (B stored N x K) in the rotated loop form
// { barrier; copies; barrier; compute; }, loads guarded with if/else zero fill,
// a padded Bs tile (T + 1 columns) and a `t * T < K` loop condition.
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

#define T 16

__global__ void matmul_abt(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T + 1];  // Bs[n][k], padded against bank conflicts
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty;   // row of C / A
  const int bRow = blockIdx.x * T + ty;  // row of B loaded by this thread
  const int col = blockIdx.x * T + tx;   // column of C
  float acc = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int t = 0;
    float As_next[4];
    float Bs_next[4];
    auto t_fetch = t;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto t = t_fetch;
      if (t * T < K) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          if (row < M && t * T + tx < K)
            As_next[slot] = A[row * K + t * T + tx];
          else
            (void)0;
          if (bRow < N && t * T + tx < K) {
            Bs_next[slot] = B[bRow * K + t * T + tx];
          } else {
            (void)0;
          }
        }
        ++t;
        t_fetch = t;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        __syncthreads();
        if (row < M && t * T + tx < K)
          As[ty][tx] = As_next[slot];
        else
          As[ty][tx] = 0.0f;
        if (bRow < N && t * T + tx < K) {
          Bs[ty][tx] = Bs_next[slot];
        } else {
          Bs[ty][tx] = 0.0f;
        }
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        for (int k = 0; k < T; ++k)
          acc += As[ty][k] * Bs[tx][k];
      }
      ++t;
    };
    __syncthreads(); // as the loop's leading barrier: what the block wrote before it is seen by the first loads
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (t * T < K) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(t * T < K))
          break;
        trip(slot);
      }
    }
  }
#line 162
  if (row < M && col < N) C[row * N + col] = acc;
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int M, int N, int K, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K, rng);
  std::vector<float> hB = randomFloats((size_t)N * K, rng);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  const size_t nC = (size_t)M * N;
  float* dC = poisonedOutput<float>(nC);
  const dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
  matmul_abt<<<grid, block>>>(dC, dA, dB, M, N, K);
  checkLaunch();
  writeOutput(f, dC, nC);
  printf("case %d: matmul_abt rotated M=%d N=%d K=%d tiles=%d blocks=%u elements=%zu\n", caseNo, M,
         N, K, (K + T - 1) / T, grid.x * grid.y, nC);
  if (timeIt) timeKernel([&] { matmul_abt<<<grid, block>>>(dC, dA, dB, M, N, K); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 33, 20, 0, false);        // 0 tiles
  runCase(f, seed, 1, 17, 48, 16, false);       // 1 tile
  runCase(f, seed, 2, 64, 23, 27, false);       // 2 tiles, last partial
  runCase(f, seed, 3, 40, 90, 47, false);       // 3 tiles
  runCase(f, seed, 4, 1000, 777, 1013, false);  // 64 tiles, ragged
  runCase(f, seed, 5, 1100, 3000, 1030, true);  // 65 tiles, 12972 blocks (timed)
  closeOutput(f);
  return 0;
}
