// stencil1d.cu: 1-D stencil of radius R = 8 with weights from a kernel parameter,
// grid-stride walk over tiles of TS = 256 outputs; each tile copies TS + 2R inputs
// (the halo by an `if` that depends only on threadIdx.x). blockDim.x == TS.
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

#define TS 256
#define R 8

// out[i] = sum_j w[j] * in[i + j], j = 0..2R, for i in [0, n - 2R).
__global__ void stencil1d(float* out, const float* in, const float* w, int n) {
  __shared__ float s[TS + 2 * R];
  // The launches below never pass overlapping buffers: say so, since nothing in the code does.
  // tilepipe: assume-noalias=true
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int base = blockIdx.x * TS;
    float s_next[4];
    float s_next_1[4];
    auto base_fetch = base;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto base = base_fetch;
      if (base + TS + 2 * R <= n) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          s_next[slot] = in[base + threadIdx.x];
          if (threadIdx.x < 2 * R) s_next_1[slot] = in[base + TS + threadIdx.x];
        }
        base += gridDim.x * TS;
        base_fetch = base;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        s[threadIdx.x] = s_next[slot];
        if (threadIdx.x < 2 * R) s[TS + threadIdx.x] = s_next_1[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        float acc = 0.0f;
        for (int j = 0; j <= 2 * R; ++j)
          acc += w[j] * s[threadIdx.x + j];
        out[base + threadIdx.x] = acc;
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      base += gridDim.x * TS;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (base + TS + 2 * R <= n) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(base + TS + 2 * R <= n))
          break;
        trip(slot);
      }
    }
  }
#line 155
}

// numTiles tiles of TS outputs; n = numTiles * TS + 2R inputs.
static void runCase(FILE* f, uint64_t seed, int caseNo, int numTiles, int grid, bool timeIt) {
  Rng rng(seed, caseNo);
  const int n = numTiles * TS + 2 * R;
  std::vector<float> hIn = randomFloats((size_t)n, rng);
  std::vector<float> hW = randomFloats(2 * R + 1, rng);
  float* dIn = toDevice(hIn);
  float* dW = toDevice(hW);
  const size_t nOut = (size_t)numTiles * TS;
  float* dOut = poisonedOutput<float>(nOut);
  stencil1d<<<grid, TS>>>(dOut, dIn, dW, n);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: stencil1d tiles=%d grid=%d tiles_per_block<=%d elements=%zu\n", caseNo, numTiles,
         grid, (numTiles + grid - 1) / grid, nOut);
  if (timeIt) timeKernel([&] { stencil1d<<<grid, TS>>>(dOut, dIn, dW, n); });
  CK(cudaFree(dIn));
  CK(cudaFree(dW));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  // Case 0: n = TS - 1 + 2R inputs, no full tile: every block walks 0 tiles
  // (out has TS - 1 elements that stay poisoned).
  {
    Rng rng(seed, 0);
    const int n = TS - 1 + 2 * R;
    std::vector<float> hIn = randomFloats((size_t)n, rng);
    std::vector<float> hW = randomFloats(2 * R + 1, rng);
    float* dIn = toDevice(hIn);
    float* dW = toDevice(hW);
    const size_t nOut = (size_t)(n - 2 * R);
    float* dOut = poisonedOutput<float>(nOut);
    stencil1d<<<4, TS>>>(dOut, dIn, dW, n);
    checkLaunch();
    writeOutput(f, dOut, nOut);
    printf("case 0: stencil1d tiles=0 grid=4 tiles_per_block=0 elements=%zu\n", nOut);
    CK(cudaFree(dIn));
    CK(cudaFree(dW));
    CK(cudaFree(dOut));
  }
  runCase(f, seed, 1, 8, 8, false);           // 1 tile per block
  runCase(f, seed, 2, 16, 8, false);          // 2 tiles per block
  runCase(f, seed, 3, 15, 5, false);          // 3 tiles per block
  runCase(f, seed, 4, 20, 7, false);          // 2 or 3 tiles per block
  runCase(f, seed, 5, 132 * 64, 132, false);  // 64 tiles per block, one wave
  runCase(f, seed, 6, 4000 * 64, 4000, true); // 4000 blocks x 64 tiles (timed)
  closeOutput(f);
  return 0;
}
