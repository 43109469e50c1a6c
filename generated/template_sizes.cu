// template_sizes.cu: one matrix-multiply template over its block size and its index type, the shape
// of a public sample tilepipe's cost model was not fitted to: the tiled loop lies in a __device__
// function template, its two inductions and its bound are 64-bit (`Index` is long long), and three
// kernels run it with 8 x 8, 16 x 16 and 32 x 32 threads. One text serves all three instantiations,
// whose stages differ 16-fold (512 to 8192 bytes): the plan chosen for the text is paid by each.
// Held out of the cost model's fitting (docs/benchmark). Run at scale: thousands of blocks, many
// more tiles than stages, random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
#include <cuda/std/type_traits>
#line 8
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

// A is hA x wA, B is wA x wB, C is hA x wB (row-major, every size a multiple of BS).
template <int BS, typename Index>
__device__ void gemm_tile(float* C, const float* A, const float* B, Index wA, Index wB) {
  const Index bx = blockIdx.x, by = blockIdx.y;
  const Index tx = threadIdx.x, ty = threadIdx.y;
  const Index rowA = wA * BS * by;  // the block's strip of A
  const Index lastA = rowA + wA - 1;
  const Index colB = BS * bx;       // the block's strip of B
  const Index stepB = BS * wB;
  float sum = 0.0f;
  // EXPECT: pipelined
  if constexpr ((BS == 8 && ::cuda::std::is_same_v<Index, long long>) || (BS == 16 && ::cuda::std::is_same_v<Index, long long>) || (BS == 32 && ::cuda::std::is_same_v<Index, long long>)) { // the instantiations tilepipe analysed
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    Index a = rowA, b = colB;
    float As_next[4];
    float Bs_next[4];
    auto a_fetch = a;
    auto b_fetch = b;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto a = a_fetch;
      auto b = b_fetch;
      if (a <= lastA) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          As_next[slot] = A[a + wA * ty + tx];
          Bs_next[slot] = B[b + wB * ty + tx];
        }
        a += BS, b += stepB;
        a_fetch = a;
        b_fetch = b;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        __shared__ float As[BS][BS];
        __shared__ float Bs[BS][BS];
        As[ty][tx] = As_next[slot];
        Bs[ty][tx] = Bs_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
#pragma unroll
        for (Index k = 0; k < BS; ++k)
          sum += As[ty][k] * Bs[k][tx];
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      a += BS, b += stepB;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (a <= lastA) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(a <= lastA))
          break;
        trip(slot);
      }
    }
  }
  } else { // tilepipe: in instantiations tilepipe did not analyse, the loop as it was
    for (Index a = rowA, b = colB; a <= lastA; a += BS, b += stepB) {
      __shared__ float As[BS][BS];
      __shared__ float Bs[BS][BS];
      As[ty][tx] = A[a + wA * ty + tx];
      Bs[ty][tx] = B[b + wB * ty + tx];
      __syncthreads();
#pragma unroll
      for (Index k = 0; k < BS; ++k)
        sum += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
#line 162
  C[wB * BS * by + BS * bx + wB * ty + tx] = sum;
}

__global__ void gemm_bs8(float* C, const float* A, const float* B, long long wA, long long wB) {
  gemm_tile<8, long long>(C, A, B, wA, wB);
}
__global__ void gemm_bs16(float* C, const float* A, const float* B, long long wA, long long wB) {
  gemm_tile<16, long long>(C, A, B, wA, wB);
}
__global__ void gemm_bs32(float* C, const float* A, const float* B, long long wA, long long wB) {
  gemm_tile<32, long long>(C, A, B, wA, wB);
}

template <int BS>
static void launch(dim3 grid, dim3 block, float* C, const float* A, const float* B, long long wA, long long wB) {
  if constexpr (BS == 8)
    gemm_bs8<<<grid, block>>>(C, A, B, wA, wB);
  else if constexpr (BS == 16)
    gemm_bs16<<<grid, block>>>(C, A, B, wA, wB);
  else
    gemm_bs32<<<grid, block>>>(C, A, B, wA, wB);
}

template <int BS>
static void runCase(FILE* f, uint64_t seed, int caseNo, int hA, int wA, int wB, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hAm = randomFloats((size_t)hA * wA, rng);
  std::vector<float> hBm = randomFloats((size_t)wA * wB, rng);
  float* dA = toDevice(hAm);
  float* dB = toDevice(hBm);
  const size_t nC = (size_t)hA * wB;
  float* dC = poisonedOutput<float>(nC);
  const dim3 block(BS, BS), grid(wB / BS, hA / BS);
  launch<BS>(grid, block, dC, dA, dB, wA, wB);
  checkLaunch();
  writeOutput(f, dC, nC);
  printf("case %d: gemm_bs%d hA=%d wA=%d wB=%d tiles=%d blocks=%u elements=%zu\n", caseNo, BS, hA, wA,
         wB, wA / BS, grid.x * grid.y, nC);
  if (timeIt) timeKernel([&] { launch<BS>(grid, block, dC, dA, dB, wA, wB); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase<8>(f, seed, 0, 16, 0, 24, false);        // no tiles
  runCase<8>(f, seed, 1, 16, 8, 24, false);        // 1 tile
  runCase<8>(f, seed, 2, 24, 40, 16, false);       // 5 tiles
  runCase<16>(f, seed, 3, 32, 16, 48, false);     // 1 tile
  runCase<16>(f, seed, 4, 48, 48, 32, false);     // 3 tiles
  runCase<32>(f, seed, 5, 64, 64, 96, false);     // 2 tiles
  runCase<32>(f, seed, 6, 32, 128, 64, false);    // 4 tiles
  runCase<8>(f, seed, 7, 1024, 1024, 1024, true);  // 128 tiles, 16384 blocks
  runCase<16>(f, seed, 8, 2048, 2048, 2048, true); // 128 tiles, 16384 blocks
  runCase<32>(f, seed, 9, 2048, 2048, 2048, true); // 64 tiles, 4096 blocks
  closeOutput(f);
  return 0;
}
