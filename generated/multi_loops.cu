// multi_loops.cu: two kernels in one file. row_then_column has two consecutive
// tiled loops over different tiles (a row phase over P, then a column phase over Q);
// window_sums has one more tiled loop, with 128-wide tiles.
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

#define T 64    // row_then_column: == blockDim.x
#define T2 128  // window_sums: == blockDim.x

// P is gridDim.x x cols1 (row-major), Q is rows2 x gridDim.x (row-major).
__global__ void row_then_column(float* rowOut, float* colOut, const float* P, const float* Q,
                                int cols1, int rows2) {
  __shared__ float rs[T];
  __shared__ float cs[T];
  const int b = blockIdx.x;
  const int ld = gridDim.x;
  float accR = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int t = 0;
    float rs_next[4];
    auto t_fetch = t;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto t = t_fetch;
      if (t < cols1 / T) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          rs_next[slot] = P[b * cols1 + t * T + threadIdx.x];
        }
        ++t;
        t_fetch = t;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        rs[threadIdx.x] = rs_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        accR += rs[threadIdx.x] * rs[T - 1 - threadIdx.x];
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      ++t;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (t < cols1 / T) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(t < cols1 / T))
          break;
        trip(slot);
      }
    }
  }
#line 154
  float accC = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int t = 0;
    float cs_next[4];
    auto t_fetch = t;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto t = t_fetch;
      if (t < rows2 / T) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          cs_next[slot] = Q[(t * T + threadIdx.x) * ld + b];
        }
        ++t;
        t_fetch = t;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        cs[threadIdx.x] = cs_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        accC = 0.75f * accC + cs[threadIdx.x] - 0.5f * cs[(threadIdx.x + 1) % T];
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      ++t;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (t < rows2 / T) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(t < rows2 / T))
          break;
        trip(slot);
      }
    }
  }
#line 162
  rowOut[b * T + threadIdx.x] = accR;
  colOut[b * T + threadIdx.x] = accC;
}

// Block b reads the window u[b * shift ...] and the shared vector w.
__global__ void window_sums(float* out, const float* u, const float* w, int numTiles, int shift) {
  __shared__ float us[T2];
  __shared__ float ws[T2];
  float acc = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int t = 0;
    float us_next[4];
    float ws_next[4];
    auto t_fetch = t;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto t = t_fetch;
      if (t < numTiles) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          us_next[slot] = u[blockIdx.x * shift + t * T2 + threadIdx.x];
          ws_next[slot] = w[t * T2 + threadIdx.x];
        }
        ++t;
        t_fetch = t;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        us[threadIdx.x] = us_next[slot];
        ws[threadIdx.x] = ws_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        acc += us[(threadIdx.x * 5) % T2] * ws[threadIdx.x] + ws[T2 - 1 - threadIdx.x];
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
#line 179
  out[blockIdx.x * T2 + threadIdx.x] = acc;
}

static void runRowCol(FILE* f, uint64_t seed, int caseNo, int grid, int cols1, int rows2,
                      bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hP = randomFloats((size_t)grid * cols1, rng);
  std::vector<float> hQ = randomFloats((size_t)rows2 * grid, rng);
  float* dP = toDevice(hP);
  float* dQ = toDevice(hQ);
  const size_t nOut = (size_t)grid * T;
  float* dRow = poisonedOutput<float>(nOut);
  float* dCol = poisonedOutput<float>(nOut);
  row_then_column<<<grid, T>>>(dRow, dCol, dP, dQ, cols1, rows2);
  checkLaunch();
  writeOutput(f, dRow, nOut);
  writeOutput(f, dCol, nOut);
  printf("case %d: row_then_column grid=%d row_tiles=%d col_tiles=%d elements=%zu\n", caseNo, grid,
         cols1 / T, rows2 / T, 2 * nOut);
  if (timeIt)
    timeKernel([&] { row_then_column<<<grid, T>>>(dRow, dCol, dP, dQ, cols1, rows2); });
  CK(cudaFree(dP));
  CK(cudaFree(dQ));
  CK(cudaFree(dRow));
  CK(cudaFree(dCol));
}

static void runWindow(FILE* f, uint64_t seed, int caseNo, int grid, int numTiles, int shift,
                      bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hU = randomFloats((size_t)(grid - 1) * shift + (size_t)numTiles * T2, rng);
  std::vector<float> hW = randomFloats((size_t)numTiles * T2, rng);
  float* dU = toDevice(hU);
  float* dW = toDevice(hW);
  const size_t nOut = (size_t)grid * T2;
  float* dOut = poisonedOutput<float>(nOut);
  window_sums<<<grid, T2>>>(dOut, dU, dW, numTiles, shift);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: window_sums grid=%d tiles=%d shift=%d elements=%zu\n", caseNo, grid, numTiles,
         shift, nOut);
  if (timeIt) timeKernel([&] { window_sums<<<grid, T2>>>(dOut, dU, dW, numTiles, shift); });
  CK(cudaFree(dU));
  CK(cudaFree(dW));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runRowCol(f, seed, 0, 5, 0, 64, false);          // 0 and 1 tiles
  runRowCol(f, seed, 1, 7, 128, 192, false);       // 2 and 3 tiles
  runRowCol(f, seed, 2, 9, 192, 0, false);         // 3 and 0 tiles
  runWindow(f, seed, 3, 4, 0, 9, false);           // 0 tiles
  runWindow(f, seed, 4, 6, 1, 128, false);         // 1 tile
  runWindow(f, seed, 5, 3, 2, 40, false);          // 2 tiles
  runWindow(f, seed, 6, 8, 3, 11, false);          // 3 tiles
  runWindow(f, seed, 7, 5000, 64, 77, false);      // 5000 blocks x 64 tiles
  runRowCol(f, seed, 8, 4096, 4096, 4096, true);   // 4096 blocks x 64 + 64 tiles (timed)
  closeOutput(f);
  return 0;
}
