// multi_loops.cu: two kernels in one file. row_then_column has two consecutive
// tiled loops over different tiles (a row phase over P, then a column phase over Q);
// window_sums has one more tiled loop, with 128-wide tiles.
#include <cuda/pipeline>
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
  alignas(16) __shared__ float rs_stages[3][T];
  __shared__ float cs_stages[3][T];
  const int b = blockIdx.x;
  const int ld = gridDim.x;
  float accR = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < cols1 / T) {
        auto &rs = rs_stages[fetch_stage];
        const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
        using rs_index = decltype(+(b * cols1 + t * T + threadIdx.x));
        const rs_index rs_base = (rs_index)(b * cols1 + t * T + threadIdx.x) - (rs_index)threadIdx.x;
        if (sizeof(rs) % 16 == 0 &&
            blockDim.x == sizeof(rs) / sizeof(rs[0]) &&
            reinterpret_cast<unsigned long long>(&P[rs_base]) % 16 == 0 &&
            __cvta_generic_to_shared(&rs[0]) % 16 == 0) {
          // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
          for (unsigned chunk = rank; chunk < sizeof(rs) / 16; chunk += threads) {
            const unsigned col = chunk % (sizeof(rs) / 16) * (16 / sizeof(rs[0]));
            ::cuda::memcpy_async(&rs[col],
                                 &P[rs_base + (rs_index)col],
                                 ::cuda::aligned_size_t<16>(16), pipe);
          }
        } else {
          if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
            ::cuda::memcpy_async(&rs[threadIdx.x], &P[b * cols1 + t * T + threadIdx.x],
                                 ::cuda::aligned_size_t<sizeof(float)>(sizeof(float)), pipe);
        }
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    for (; t < cols1 / T; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &rs = rs_stages[stage];
      accR += rs[threadIdx.x] * rs[T - 1 - threadIdx.x];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    ::cuda::pipeline_consumer_wait_prior<0>(pipe); // only empty groups remain; wait for them anyway
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &rs = rs_stages[0];
    for (int t = 0; t < cols1 / T; ++t) {
      rs[threadIdx.x] = P[b * cols1 + t * T + threadIdx.x];
      __syncthreads();
      accR += rs[threadIdx.x] * rs[T - 1 - threadIdx.x];
      __syncthreads();
    }
  }
#endif
  float accC = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < rows2 / T) {
        auto &cs = cs_stages[fetch_stage];
        ::cuda::memcpy_async(&cs[threadIdx.x], &Q[(t * T + threadIdx.x) * ld + b],
                             ::cuda::aligned_size_t<sizeof(float)>(sizeof(float)), pipe);
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    for (; t < rows2 / T; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &cs = cs_stages[stage];
      accC = 0.75f * accC + cs[threadIdx.x] - 0.5f * cs[(threadIdx.x + 1) % T];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    ::cuda::pipeline_consumer_wait_prior<0>(pipe); // only empty groups remain; wait for them anyway
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &cs = cs_stages[0];
    for (int t = 0; t < rows2 / T; ++t) {
      cs[threadIdx.x] = Q[(t * T + threadIdx.x) * ld + b];
      __syncthreads();
      accC = 0.75f * accC + cs[threadIdx.x] - 0.5f * cs[(threadIdx.x + 1) % T];
      __syncthreads();
    }
  }
#endif
  rowOut[b * T + threadIdx.x] = accR;
  colOut[b * T + threadIdx.x] = accC;
}

// Block b reads the window u[b * shift ...] and the shared vector w.
__global__ void window_sums(float* out, const float* u, const float* w, int numTiles, int shift) {
  alignas(16) __shared__ float us_stages[3][T2];
  alignas(16) __shared__ float ws_stages[3][T2];
  float acc = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < numTiles) {
        auto &us = us_stages[fetch_stage];
        auto &ws = ws_stages[fetch_stage];
        const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
        using us_index = decltype(+(blockIdx.x * shift + t * T2 + threadIdx.x));
        const us_index us_base = (us_index)(blockIdx.x * shift + t * T2 + threadIdx.x)
            - (us_index)threadIdx.x;
        if (sizeof(us) % 16 == 0 &&
            blockDim.x == sizeof(us) / sizeof(us[0]) &&
            reinterpret_cast<unsigned long long>(&u[us_base]) % 16 == 0 &&
            __cvta_generic_to_shared(&us[0]) % 16 == 0) {
          // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
          for (unsigned chunk = rank; chunk < sizeof(us) / 16; chunk += threads) {
            const unsigned col = chunk % (sizeof(us) / 16) * (16 / sizeof(us[0]));
            ::cuda::memcpy_async(&us[col],
                                 &u[us_base + (us_index)col],
                                 ::cuda::aligned_size_t<16>(16), pipe);
          }
        } else {
          if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
            ::cuda::memcpy_async(&us[threadIdx.x], &u[blockIdx.x * shift + t * T2 + threadIdx.x],
                                 ::cuda::aligned_size_t<sizeof(float)>(sizeof(float)), pipe);
        }
        using ws_index = decltype(+(t * T2 + threadIdx.x));
        const ws_index ws_base = (ws_index)(t * T2 + threadIdx.x) - (ws_index)threadIdx.x;
        if (sizeof(ws) % 16 == 0 &&
            blockDim.x == sizeof(ws) / sizeof(ws[0]) &&
            reinterpret_cast<unsigned long long>(&w[ws_base]) % 16 == 0 &&
            __cvta_generic_to_shared(&ws[0]) % 16 == 0) {
          // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
          for (unsigned chunk_1 = rank; chunk_1 < sizeof(ws) / 16; chunk_1 += threads) {
            const unsigned col_1 = chunk_1 % (sizeof(ws) / 16) * (16 / sizeof(ws[0]));
            ::cuda::memcpy_async(&ws[col_1],
                                 &w[ws_base + (ws_index)col_1],
                                 ::cuda::aligned_size_t<16>(16), pipe);
          }
        } else {
          if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
            ::cuda::memcpy_async(&ws[threadIdx.x], &w[t * T2 + threadIdx.x],
                                 ::cuda::aligned_size_t<sizeof(float)>(sizeof(float)), pipe);
        }
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    for (; t < numTiles; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &us = us_stages[stage];
      auto &ws = ws_stages[stage];
      acc += us[(threadIdx.x * 5) % T2] * ws[threadIdx.x] + ws[T2 - 1 - threadIdx.x];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    ::cuda::pipeline_consumer_wait_prior<0>(pipe); // only empty groups remain; wait for them anyway
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &us = us_stages[0];
    auto &ws = ws_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      us[threadIdx.x] = u[blockIdx.x * shift + t * T2 + threadIdx.x];
      ws[threadIdx.x] = w[t * T2 + threadIdx.x];
      __syncthreads();
      acc += us[(threadIdx.x * 5) % T2] * ws[threadIdx.x] + ws[T2 - 1 - threadIdx.x];
      __syncthreads();
    }
  }
#endif
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
