// tma_row_wrap.cu: 8 x 16 tiles of a row-major matrix with row pitch ld; tile t starts at
// column t * step, so the last tiles of each row strip run past the end of their rows into the
// next ones (the kernel treats A as one array). A tensor map of rows cannot hold such a box: the
// rewrite must copy those tiles another way, by rows where they start on 16 bytes (step 8 or 4)
// and element by element where they do not (step 5).
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

#define TR 8   // == blockDim.y
#define TC 16  // == blockDim.x

__global__ void sliding_rows(float* out, const float* A, int ld, int step, int numTiles) {
  __shared__ float tile[TR][TC];
  const int tx = threadIdx.x, ty = threadIdx.y;
  float acc = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int t = 0;
    float tile_next[4];
    auto t_fetch = t;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto t = t_fetch;
      if (t < numTiles) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          tile_next[slot] = A[(blockIdx.x * TR + ty) * ld + t * step + tx];
        }
        ++t;
        t_fetch = t;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        tile[ty][tx] = tile_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        acc = tile[ty][(tx + t) % TC] * tile[(ty + 1) % TR][tx] - 0.5f * acc;
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
#line 152
  out[(blockIdx.x * TR + ty) * TC + tx] = acc;
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int ld, int step, int numTiles,
                    bool timeIt) {
  Rng rng(seed, caseNo);
  const size_t nA = numTiles ? (size_t)(blocks * TR - 1) * ld + (size_t)(numTiles - 1) * step + TC : 1;
  std::vector<float> hA = randomFloats(nA, rng);
  float* dA = toDevice(hA);
  const size_t nOut = (size_t)blocks * TR * TC;
  float* dOut = poisonedOutput<float>(nOut);
  const dim3 block(TC, TR);
  sliding_rows<<<blocks, block>>>(dOut, dA, ld, step, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: sliding_rows blocks=%d ld=%d step=%d tiles=%d elements=%zu\n", caseNo, blocks, ld,
         step, numTiles, nOut);
  if (timeIt) timeKernel([&] { sliding_rows<<<blocks, block>>>(dOut, dA, ld, step, numTiles); });
  CK(cudaFree(dA));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 3, 64, 8, 0, false);        // 0 tiles
  runCase(f, seed, 1, 5, 64, 8, 1, false);        // 1 tile
  runCase(f, seed, 2, 7, 64, 8, 9, false);        // 9 tiles, the last two wrap
  runCase(f, seed, 3, 4096, 256, 8, 40, false);   // 4096 blocks x 40 tiles, 9 of them wrap
  runCase(f, seed, 4, 3000, 64, 5, 20, false);    // step 5: tiles off 16 bytes, 10 of them wrap
  runCase(f, seed, 5, 3000, 64, 4, 20, false);    // step 4: 7 of 20 tiles wrap, on 16 bytes
  runCase(f, seed, 6, 8192, 1024, 8, 100, true);  // 8192 blocks x 100 tiles, none wraps (timed)
  closeOutput(f);
  return 0;
}
