// device_function.cu: the tiled loop (and its __shared__ tiles) lives in a
// __device__ function; the __global__ kernel passes its pointer parameters
// straight through. Tiles of a (per-block row) and b (shared vector), 64 wide.
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

__device__ void row_tile_mix(float* out, const float* a, const float* b, int lda, int numTiles) {
  __shared__ float sa[T];
  __shared__ float sb[T];
  const int row = blockIdx.x;
  float acc = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int t = 0;
    float sa_next[4];
    float sb_next[4];
    auto t_fetch = t;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto t = t_fetch;
      if (t < numTiles) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          sa_next[slot] = a[row * lda + t * T + threadIdx.x];
          sb_next[slot] = b[t * T + threadIdx.x];
        }
        ++t;
        t_fetch = t;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        sa[threadIdx.x] = sa_next[slot];
        sb[threadIdx.x] = sb_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        float s = 0.0f;
        for (int j = 0; j < 8; ++j)
          s += sa[(threadIdx.x + j) % T] * sb[(threadIdx.x + 3 * j) % T];
        acc = 0.5f * acc + s;
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      ++t;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (t < numTiles) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(t < numTiles))
          break;
        trip(slot);
      }
    }
  }
#line 154
  out[row * T + threadIdx.x] = acc;
}

__global__ void row_tile_kernel(float* out, const float* a, const float* b, int lda,
                                int numTiles) {
  row_tile_mix(out, a, b, lda, numTiles);
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int rows, int numTiles, int lda,
                    bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)(rows - 1) * lda + (size_t)numTiles * T, rng);
  std::vector<float> hB = randomFloats((size_t)numTiles * T, rng);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  const size_t nOut = (size_t)rows * T;
  float* dOut = poisonedOutput<float>(nOut);
  row_tile_kernel<<<rows, T>>>(dOut, dA, dB, lda, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: row_tile_mix rows=%d tiles=%d lda=%d elements=%zu\n", caseNo, rows, numTiles,
         lda, nOut);
  if (timeIt) timeKernel([&] { row_tile_kernel<<<rows, T>>>(dOut, dA, dB, lda, numTiles); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 4, 0, 7, false);          // 0 tiles
  runCase(f, seed, 1, 6, 1, 64, false);         // 1 tile
  runCase(f, seed, 2, 11, 2, 30, false);        // 2 tiles
  runCase(f, seed, 3, 8, 3, 192, false);        // 3 tiles
  runCase(f, seed, 4, 4096, 64, 50, false);     // 4096 blocks x 64 tiles
  runCase(f, seed, 5, 6000, 96, 129, true);     // 6000 blocks x 96 tiles (timed)
  closeOutput(f);
  return 0;
}
