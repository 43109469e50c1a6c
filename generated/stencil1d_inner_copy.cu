// stencil1d_inner_copy.cu: templated 1-D stencil (TS, R) whose tile copy is an
// inner strided loop over TS + 2R elements; blockDim.x < TS + 2R so the copy loop
// (and the compute loop) iterate several times per thread. Grid-stride over tiles.
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

// out[i] = sum_j w[j] * in[i + j], j = 0..2R.
template <int TS, int R>
__global__ void stencil_tiles(float* out, const float* in, const float* w, int numTiles) {
  __shared__ float s_stages[((TS == 256 && R == 8) || (TS == 128 && R == 3)) ? 2 : 1][TS + 2 * R];
  // The launches below never pass overlapping buffers: say so, since nothing in the code does.
  // tilepipe: assume-noalias=true
  // EXPECT: pipelined
  { // tilepipe: the pipeline where the launch leaves the SMs mostly idle (at most 16 warps per SM)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if constexpr ((TS == 256 && R == 8) || (TS == 128 && R == 3)) { // the instantiations tilepipe analysed
  if ((unsigned long long)gridDim.x * gridDim.y * gridDim.z * ((blockDim.x * blockDim.y * blockDim.z + 31) / 32) <= 16ull * [] { unsigned sms; asm("mov.u32 %0, %%nsmid;" : "=r"(sms)); return sms; }())
  // tilepipe: 2-stage pipeline of cp.async copies; the copies of the next 1 tiles overlap the compute on this one.
  {
    int tile = blockIdx.x;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto tile_fetch = tile;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto tile = tile_fetch;
      if (tile < numTiles) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          for (int i = threadIdx.x; i < TS + 2 * R; i += blockDim.x)
            ::cuda::memcpy_async(&s[i], &in[tile * TS + i],
                                 ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
        }
        tile += gridDim.x;
        tile_fetch = tile;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 2 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 1 tiles.
    for (int prologue = 0; prologue < 1; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; tile < numTiles; tile += gridDim.x) {
      // This thread's copies of this tile have landed (one group per tile; 0 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      for (int i = threadIdx.x; i < TS; i += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j <= 2 * R; ++j)
          acc += w[j] * s[i + j];
        out[tile * TS + i] = acc;
      }
      pipe.consumer_release();
      stage = stage + 1 == 2 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads(); // the loop's writes to memory are seen by every thread after it
  }
  else
  { // tilepipe: in launches that fill the GPU, the loop as it was
    auto &s = s_stages[0];
    for (int tile = blockIdx.x; tile < numTiles; tile += gridDim.x) {
      for (int i = threadIdx.x; i < TS + 2 * R; i += blockDim.x)
        s[i] = in[tile * TS + i];
      __syncthreads();
      for (int i = threadIdx.x; i < TS; i += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j <= 2 * R; ++j)
          acc += w[j] * s[i + j];
        out[tile * TS + i] = acc;
      }
      __syncthreads();
    }
  }
  } else
#endif
  { // tilepipe: below compute capability 8.0, in launches that fill the GPU and in instantiations tilepipe did not analyse, the loop as it was
    auto &s = s_stages[0];
    for (int tile = blockIdx.x; tile < numTiles; tile += gridDim.x) {
      for (int i = threadIdx.x; i < TS + 2 * R; i += blockDim.x)
        s[i] = in[tile * TS + i];
      __syncthreads();
      for (int i = threadIdx.x; i < TS; i += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j <= 2 * R; ++j)
          acc += w[j] * s[i + j];
        out[tile * TS + i] = acc;
      }
      __syncthreads();
    }
  }
  }
#line 155
}

template <int TS, int R>
static void runCase(FILE* f, uint64_t seed, int caseNo, int numTiles, int grid, int threads,
                    bool timeIt) {
  Rng rng(seed, caseNo);
  const size_t n = (size_t)numTiles * TS + 2 * R;
  std::vector<float> hIn = randomFloats(n, rng);
  std::vector<float> hW = randomFloats(2 * R + 1, rng);
  float* dIn = toDevice(hIn);
  float* dW = toDevice(hW);
  const size_t nOut = (size_t)numTiles * TS;
  float* dOut = poisonedOutput<float>(nOut);
  stencil_tiles<TS, R><<<grid, threads>>>(dOut, dIn, dW, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: stencil_tiles<%d,%d> tiles=%d grid=%d threads=%d tiles_per_block<=%d "
         "elements=%zu\n",
         caseNo, TS, R, numTiles, grid, threads, (numTiles + grid - 1) / grid, nOut);
  if (timeIt) timeKernel([&] { stencil_tiles<TS, R><<<grid, threads>>>(dOut, dIn, dW, numTiles); });
  CK(cudaFree(dIn));
  CK(cudaFree(dW));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase<256, 8>(f, seed, 0, 0, 4, 64, false);        // 0 tiles
  runCase<256, 8>(f, seed, 1, 6, 6, 64, false);        // 1 tile per block, copy loop 5 trips
  runCase<256, 8>(f, seed, 2, 12, 6, 96, false);       // 2 tiles, uneven copy split
  runCase<128, 3>(f, seed, 3, 9, 3, 100, false);       // 3 tiles, ragged thread split
  runCase<128, 3>(f, seed, 4, 11, 4, 32, false);       // 2 or 3 tiles per block
  runCase<256, 8>(f, seed, 5, 100 * 70, 100, 128, false); // 70 tiles per block
  runCase<128, 3>(f, seed, 6, 4096 * 64, 4096, 64, true); // 4096 blocks x 64 tiles (timed)
  runCase<128, 3>(f, seed, 7, 2048 * 40, 2048, 32, false); // 2048 one-warp blocks x 40 tiles
  closeOutput(f);
  return 0;
}
