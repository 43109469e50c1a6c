// int_matvec_cg.cu: exact integer mat-vec y = A x with int (4-byte) tiles and
// cooperative-groups barriers (block.sync() after the copies, cg::sync(block) at the
// end). The x tile is copied by one row of threads only (`if (threadIdx.y == 0)`).
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
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define TX 32  // tile width (columns), == blockDim.x
#define TY 8   // rows per block, == blockDim.y

// Row r of A starts at A + r * lda (rows may overlap when lda < cols); cols % TX == 0.
__global__ void int_matvec(int* y, const int* A, const int* x, int cols, int lda) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ int as[TY][TX];
  __shared__ int xs[TX];
  const int row = blockIdx.x * TY + threadIdx.y;
  const int rot = (threadIdx.x + 7 * threadIdx.y) % TX;
  int acc = 0;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int t = 0;
    int as_next[4];
    int xs_next[4];
    auto t_fetch = t;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto t = t_fetch;
      if (t < cols / TX) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          as_next[slot] = A[row * lda + t * TX + threadIdx.x];
          if (threadIdx.y == 0) xs_next[slot] = x[t * TX + threadIdx.x];
        }
        ++t;
        t_fetch = t;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        as[threadIdx.y][threadIdx.x] = as_next[slot];
        if (threadIdx.y == 0) xs[threadIdx.x] = xs_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        acc += as[threadIdx.y][rot] * xs[rot];
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      ++t;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (t < cols / TX) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(t < cols / TX))
          break;
        trip(slot);
      }
    }
  }
#line 158
  for (int off = 16; off > 0; off >>= 1)
    acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (threadIdx.x == 0) y[row] = acc;
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int rows, int cols, int lda, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<int> hA((size_t)rows * lda + cols), hx((size_t)cols);
  for (auto& v : hA) v = rng.range(-100, 100);
  for (auto& v : hx) v = rng.range(-100, 100);
  int* dA = toDevice(hA);
  int* dx = toDevice(hx);
  int* dy = poisonedOutput<int>((size_t)rows);
  const dim3 block(TX, TY);
  const int grid = rows / TY;
  int_matvec<<<grid, block>>>(dy, dA, dx, cols, lda);
  checkLaunch();
  writeOutput(f, dy, (size_t)rows);
  printf("case %d: int_matvec rows=%d cols=%d lda=%d tiles=%d blocks=%d elements=%d\n", caseNo,
         rows, cols, lda, cols / TX, grid, rows);
  if (timeIt) timeKernel([&] { int_matvec<<<grid, block>>>(dy, dA, dx, cols, lda); });
  CK(cudaFree(dA));
  CK(cudaFree(dx));
  CK(cudaFree(dy));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 40, 0, 3, false);              // 0 tiles: y = 0
  runCase(f, seed, 1, 24, 32, 32, false);            // 1 tile, disjoint rows
  runCase(f, seed, 2, 64, 64, 13, false);            // 2 tiles, overlapping rows
  runCase(f, seed, 3, 16, 96, 100, false);           // 3 tiles, padded rows
  runCase(f, seed, 4, 4096 * TY, 64 * TX, 37, false); // 4096 blocks x 64 tiles
  runCase(f, seed, 5, 5000 * TY, 90 * TX, 301, true);  // 5000 blocks x 90 tiles (timed)
  closeOutput(f);
  return 0;
}
