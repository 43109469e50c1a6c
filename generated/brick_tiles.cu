// brick_tiles.cu: a volume (rows `pitch` elements apart, planes `plane` elements apart) read in
// bricks of TZ planes x TY rows x TX elements: each trip copies one brick into __shared__ (16-byte
// cp.async copies by default; with --tma-3d-tiles one tensor copy of three dimensions on Hopper,
// through a map), and each thread mixes elements that threads of other planes, rows and columns
// loaded.
#include <cuda/pipeline>
#line 6
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


#define TX 32
#define TY 4
#define TZ 4

// Block (bx, bz) walks numTiles bricks along the rows TY * bx .. of planes TZ * bz ..; out holds one
// value per thread: out[((bz * TZ + tz) * gridDim.x * TY + bx * TY + ty) * TX + tx].
__global__ void brick_mix(float* out, const float* vol, int pitch, int plane, int numTiles) {
  alignas(16) __shared__ float s_stages[3][TZ][TY][TX];
  const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
  const int base = blockIdx.y * TZ * plane + blockIdx.x * TY * pitch;
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
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+(base + tz * plane + ty * pitch + t * TX + tx));
          const s_index s_base = (s_index)(base + tz * plane + ty * pitch + t * TX + tx)
              - (s_index)threadIdx.z * (s_index)(plane)
              - (s_index)threadIdx.y * (s_index)(pitch)
              - (s_index)threadIdx.x;
          if (sizeof(s[0][0]) % 16 == 0 &&
              blockDim.z == sizeof(s) / sizeof(s[0]) &&
              blockDim.y == sizeof(s[0]) / sizeof(s[0][0]) &&
              blockDim.x == sizeof(s[0][0]) / sizeof(s[0][0][0]) &&
              (plane) % (16 / sizeof(s[0][0][0])) == 0 &&
              (pitch) % (16 / sizeof(s[0][0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&vol[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0][0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned row0 = chunk / (sizeof(s[0]) / 16);
              const unsigned row1 = chunk / (sizeof(s[0][0]) / 16) % (sizeof(s[0]) / sizeof(s[0][0]));
              const unsigned col = chunk % (sizeof(s[0][0]) / 16) * (16 / sizeof(s[0][0][0]));
              ::cuda::memcpy_async(&s[row0][row1][col],
                                   &vol[s_base + (s_index)row0 * (s_index)(plane) + (s_index)row1 * (s_index)(pitch) + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            ::cuda::memcpy_async(&s[tz][ty][tx], &vol[base + tz * plane + ty * pitch + t * TX + tx],
                                 ::cuda::aligned_size_t<sizeof(s[0][0][0])>(sizeof(s[0][0][0])), pipe);
          }
        }
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    __syncthreads(); // each thread copies chunks that other threads may have written before the loop
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; t < numTiles; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      const float v = s[tz][ty][tx] + 0.5f * s[(tz + 1) % TZ][ty][tx] -
                      0.25f * s[tz][(ty + 3) % TY][(tx + 1) % TX] + 0.125f * s[TZ - 1 - tz][TY - 1 - ty][TX - 1 - tx];
      acc = acc * 0.875f + v;
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      s[tz][ty][tx] = vol[base + tz * plane + ty * pitch + t * TX + tx];
      __syncthreads();
      const float v = s[tz][ty][tx] + 0.5f * s[(tz + 1) % TZ][ty][tx] -
                      0.25f * s[tz][(ty + 3) % TY][(tx + 1) % TX] + 0.125f * s[TZ - 1 - tz][TY - 1 - ty][TX - 1 - tx];
      acc = acc * 0.875f + v;
      __syncthreads();
    }
  }
#endif
#line 159
  out[((blockIdx.y * TZ + tz) * gridDim.x * TY + blockIdx.x * TY + ty) * TX + tx] = acc;
}

// Elements the bricks of a gx x gz grid read: every plane and row they touch, and numTiles bricks
// along the last row (which may run on into the next rows where numTiles * TX > pitch).
static size_t volumeElements(int gx, int gz, int pitch, int plane, int numTiles) {
  return (size_t)gz * TZ * plane + (size_t)gx * TY * pitch + (size_t)numTiles * TX;
}

static void run(FILE* f, uint64_t seed, int caseNo, int gx, int gz, int pitch, int plane, int numTiles,
                bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hv = randomFloats(volumeElements(gx, gz, pitch, plane, numTiles), rng);
  float* dv = toDevice(hv);
  const size_t nOut = (size_t)gx * gz * TX * TY * TZ;
  float* dOut = poisonedOutput<float>(nOut);
  const dim3 grid(gx, gz), block(TX, TY, TZ);
  brick_mix<<<grid, block>>>(dOut, dv, pitch, plane, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: brick_mix grid=%dx%d pitch=%d plane=%d tiles=%d\n", caseNo, gx, gz, pitch, plane, numTiles);
  if (timeIt) timeKernel([&] { brick_mix<<<grid, block>>>(dOut, dv, pitch, plane, numTiles); });
  CK(cudaFree(dv));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  run(f, seed, 0, 3, 2, 64, 64 * 12, 0, false);            // 0 tiles
  run(f, seed, 1, 3, 2, 64, 64 * 12, 1, false);            // 1 tile
  run(f, seed, 2, 2, 3, 96, 96 * 8 + 32, 2, false);        // 2 tiles; planes not a multiple of rows
  run(f, seed, 3, 4, 2, 128, 128 * 16, 3, false);          // 3 tiles
  run(f, seed, 4, 3, 2, 130, 130 * 12, 4, false);          // rows off 16 bytes: cp.async
  run(f, seed, 5, 3, 2, 64, 64 * 9 + 4, 5, false);         // the third row block runs past a plane's rows
  run(f, seed, 6, 2, 2, 64, 64 * 8, 6, false);             // bricks run past the end of their rows
  run(f, seed, 7, 64, 32, 2048, 2048 * 256, 64, true);     // 2048 blocks x 64 tiles
  closeOutput(f);
  return 0;
}
