// conv2d_halo.cu: multi-channel 2-D convolution (radius R = 2) summed over channels.
// The tiled loop walks the channels; each trip copies a (TH+2R) x (TW+2R) halo tile
// with nested strided copy loops and in-bounds `?:` zero fill.
#include <cuda/pipeline>
#line 4
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

#define TW 32
#define TH 8
#define R 2
#define FW (2 * R + 1)

// in: C planes of H x W; filt: C x FW x FW; out: H x W.
__global__ void conv2d_channels(float* out, const float* in, const float* filt, int W, int H,
                                int channels) {
  __shared__ float tile_stages[2][TH + 2 * R][TW + 2 * R];
  const int x0 = blockIdx.x * TW - R;  // global coordinates of tile[0][0]
  const int y0 = blockIdx.y * TH - R;
  const int ox = blockIdx.x * TW + threadIdx.x;
  const int oy = blockIdx.y * TH + threadIdx.y;
  float acc = 0.0f;
  // EXPECT: pipelined
  { // tilepipe: the pipeline where the launch leaves the SMs mostly idle (at most 16 warps per SM)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if ((unsigned long long)gridDim.x * gridDim.y * gridDim.z * ((blockDim.x * blockDim.y * blockDim.z + 31) / 32) <= 16ull * [] { unsigned sms; asm("mov.u32 %0, %%nsmid;" : "=r"(sms)); return sms; }())
  // tilepipe: 2-stage pipeline of cp.async copies; the copies of the next 1 tiles overlap the compute on this one.
  {
    int c = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto c_fetch = c;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto c = c_fetch;
      if (c < channels) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &tile = tile_stages[fetch_stage];
          for (int y = threadIdx.y; y < TH + 2 * R; y += blockDim.y)
            for (int x = threadIdx.x; x < TW + 2 * R; x += blockDim.x)
              if (y0 + y >= 0 && y0 + y < H && x0 + x >= 0 && x0 + x < W)
                ::cuda::memcpy_async(&tile[y][x], &in[(c * H + y0 + y) * W + x0 + x],
                                     ::cuda::aligned_size_t<sizeof(tile[0][0])>(sizeof(tile[0][0])), pipe);
              else
                tile[y][x] = 0.0f;
        }
        ++c;
        c_fetch = c;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 2 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 1 tiles.
    for (int prologue = 0; prologue < 1; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; c < channels; ++c) {
      // This thread's copies of this tile have landed (one group per tile; 0 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &tile = tile_stages[stage];
      for (int dy = 0; dy < FW; ++dy)
        for (int dx = 0; dx < FW; ++dx)
          acc += filt[(c * FW + dy) * FW + dx] * tile[threadIdx.y + dy][threadIdx.x + dx];
      pipe.consumer_release();
      stage = stage + 1 == 2 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads(); // the loop's writes to memory are seen by every thread after it
  }
  else
#endif
  { // tilepipe: below compute capability 8.0 and in launches that fill the GPU, the loop as it was
    auto &tile = tile_stages[0];
    for (int c = 0; c < channels; ++c) {
      for (int y = threadIdx.y; y < TH + 2 * R; y += blockDim.y)
        for (int x = threadIdx.x; x < TW + 2 * R; x += blockDim.x)
          tile[y][x] = (y0 + y >= 0 && y0 + y < H && x0 + x >= 0 && x0 + x < W)
                           ? in[(c * H + y0 + y) * W + x0 + x]
                           : 0.0f;
      __syncthreads();
      for (int dy = 0; dy < FW; ++dy)
        for (int dx = 0; dx < FW; ++dx)
          acc += filt[(c * FW + dy) * FW + dx] * tile[threadIdx.y + dy][threadIdx.x + dx];
      __syncthreads();
    }
  }
  }
#line 163
  if (ox < W && oy < H) out[oy * W + ox] = acc;
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int W, int H, int channels, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> hIn = randomFloats((size_t)channels * H * W, rng);
  std::vector<float> hF = randomFloats((size_t)channels * FW * FW, rng);
  float* dIn = toDevice(hIn);
  float* dF = toDevice(hF);
  const size_t nOut = (size_t)W * H;
  float* dOut = poisonedOutput<float>(nOut);
  const dim3 block(TW, TH), grid((W + TW - 1) / TW, (H + TH - 1) / TH);
  conv2d_channels<<<grid, block>>>(dOut, dIn, dF, W, H, channels);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: conv2d_channels W=%d H=%d channels=%d blocks=%u elements=%zu\n", caseNo, W, H,
         channels, grid.x * grid.y, nOut);
  if (timeIt) timeKernel([&] { conv2d_channels<<<grid, block>>>(dOut, dIn, dF, W, H, channels); });
  CK(cudaFree(dIn));
  CK(cudaFree(dF));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 45, 20, 0, false);       // 0 channels: out = 0
  runCase(f, seed, 1, 70, 19, 1, false);       // 1 trip
  runCase(f, seed, 2, 33, 9, 2, false);        // 2 trips
  runCase(f, seed, 3, 100, 50, 3, false);      // 3 trips
  runCase(f, seed, 4, 130, 77, 100, false);    // 100 trips, few blocks
  runCase(f, seed, 5, 1030, 1000, 64, true);   // 64 trips, 4125 blocks (timed)
  closeOutput(f);
  return 0;
}
