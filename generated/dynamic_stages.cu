// dynamic_stages.cu: loops whose two stages do not fit in 48 KiB of static shared memory, so
// that the stages lie in dynamic shared memory, which a launcher beside the kernel asks for (and
// opts in to past 48 KiB); every launch in the file calls it. Two 16 KiB tiles copied by inner
// strided loops (per element); a 64 x 64 x 64 GEMM whose tiles are stored as float4 vectors in
// an inner copy loop over rows; a template over a 1-D tile of 32 KiB and 48 KiB (both instantiations take two
// stages, the launcher the larger size). The twins that are refused (shared-memory): a kernel
// launched through a macro, whose launch no launcher can replace, and tiles in a __device__
// function. Run at scale: thousands of blocks, many more tiles than stages, random inputs,
// poisoned outputs (tests/gpu/verify_testdata.sh).
#include <cuda/pipeline>
#line 10
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



// Rounded operations, which nvcc never contracts: the rewrite's unrolled trips may be contracted
// otherwise than the original's loop, and the outputs compare bit for bit.
__device__ float mul_add_rn(float acc, float a, float b) { return __fadd_rn(acc, __fmul_rn(a, b)); }

#define TILE 4096  // floats per tile (16 KiB)
#define NT 256     // == blockDim.x

// Block b walks the window a[b * shift ...] against the shared vector v.
__global__ void big_tiles(float* out, const float* a, const float* v, int numTiles, int shift) {
  __shared__ float sa[TILE];
  __shared__ float sv[TILE];
  float acc = 0.0f;
  // EXPECT: no-gain
  for (int t = 0; t < numTiles; ++t) {
    for (int i = threadIdx.x; i < TILE; i += blockDim.x)
      sa[i] = a[blockIdx.x * shift + t * TILE + i];
    for (int i = threadIdx.x; i < TILE; i += blockDim.x)
      sv[i] = v[t * TILE + i];
    __syncthreads();
    for (int j = 0; j < TILE / NT; ++j)
      acc = mul_add_rn(acc, sa[threadIdx.x * (TILE / NT) + j], sv[(threadIdx.x + j * NT) % TILE]);
    __syncthreads();
  }
  out[blockIdx.x * NT + threadIdx.x] = acc;
}

// C = A * B in 64 x 64 blocks of C, K in steps of 64; 256 threads, each 4 x 4 elements of C. The
// tiles are stored as float4 vectors, 4 per thread and tile. M, N, K multiples of 64.
__global__ void wide_gemm(const float* A, const float* B, float* C, int M, int N, int K, bool tilepipe_staged = false) {
  // tilepipe: the 3 stages lie in dynamic shared memory, which the kernel's launcher asks for
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  constexpr unsigned live_stages = 1; // the loop as it was, on stage 0
#else
  constexpr unsigned live_stages = 3;
#endif
  alignas(16) extern __shared__ unsigned char dynamic_smem[];
  if (!tilepipe_staged) // launched without its launcher, so without room for the stages
    __trap();
  auto &As_stages = *reinterpret_cast<float (*)[3][64][64]>(&dynamic_smem[0]);
#line 151
  auto &Bs_stages = *reinterpret_cast<float (*)[3][64][64]>(&dynamic_smem[(sizeof(As_stages[0]) * live_stages + 127) / 128 * 128]);
  const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][4] = {};
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int k0 = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto k0_fetch = k0;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto k0 = k0_fetch;
      if (k0 < K) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          for (int r = ty; r < 64; r += 16) {
            ::cuda::memcpy_async(&(*reinterpret_cast<float4*>(&As[r][tx * 4])), &(*reinterpret_cast<const float4*>(&A[(size_t)(row0 + r) * K + k0 + tx * 4])),
                                 ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
            ::cuda::memcpy_async(&(*reinterpret_cast<float4*>(&Bs[r][tx * 4])), &(*reinterpret_cast<const float4*>(&B[(size_t)(k0 + r) * N + col0 + tx * 4])),
                                 ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
          }
        }
        k0 += 64;
        k0_fetch = k0;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; k0 < K; k0 += 64) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int kk = 0; kk < 64; ++kk)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j)
            acc[i][j] = mul_add_rn(acc[i][j], As[ty * 4 + i][kk], Bs[kk][tx * 4 + j]);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (int k0 = 0; k0 < K; k0 += 64) {
      for (int r = ty; r < 64; r += 16) {
        *reinterpret_cast<float4*>(&As[r][tx * 4]) = *reinterpret_cast<const float4*>(&A[(size_t)(row0 + r) * K + k0 + tx * 4]);
        *reinterpret_cast<float4*>(&Bs[r][tx * 4]) = *reinterpret_cast<const float4*>(&B[(size_t)(k0 + r) * N + col0 + tx * 4]);
      }
      __syncthreads();
      for (int kk = 0; kk < 64; ++kk)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j)
            acc[i][j] = mul_add_rn(acc[i][j], As[ty * 4 + i][kk], Bs[kk][tx * 4 + j]);
      __syncthreads();
    }
  }
#endif
#line 168
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      C[(size_t)(row0 + ty * 4 + i) * N + col0 + tx * 4 + j] = acc[i][j];
}

// tilepipe: launches wide_gemm with the dynamic shared memory its pipeline's stages lie in: 98304
// bytes on compute capability 8.0 and later, 32768 below, where the loop runs as it was on one stage.
// The kernel takes no dynamic shared memory of its own; past 48 KiB a kernel must opt in to more.
#define TILEPIPE_LAUNCHER_wide_gemm 1
static void tilepipe_launch_wide_gemm(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, const float* A, const float* B, float* C, int M, int N, int K) {
  int device = 0, major = 0;
  (void)::cudaGetDevice(&device);
  (void)::cudaDeviceGetAttribute(&major, ::cudaDevAttrComputeCapabilityMajor, device);
  const ::size_t dynamic_bytes = shared_bytes + (major >= 8 ? 98304 : 32768);
  if (dynamic_bytes > 48 * 1024)
    (void)::cudaFuncSetAttribute(::wide_gemm, ::cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)dynamic_bytes);
  ::wide_gemm<<<grid, block, dynamic_bytes, stream>>>(A, B, C, M, N, K, true);
}
#line 172

// Each thread sums W products of the tile with its own weights; the tile is the window of x that
// block b reads at each step: TILE floats from b * shift + t * TILE.
template <int W_TILE>
__global__ void window_sum(const float* x, const float* w, float* out, int numTiles, int shift) {
  __shared__ float xs[W_TILE];
  float acc = 0.0f;
  // EXPECT: no-gain
  for (int t = 0; t < numTiles; ++t) {
    for (int i = threadIdx.x; i < W_TILE; i += blockDim.x)
      xs[i] = x[(size_t)blockIdx.x * shift + (size_t)t * W_TILE + i];
    __syncthreads();
    for (int j = 0; j < 32; ++j)
      acc = mul_add_rn(acc, xs[(threadIdx.x * 37 + j * 251) % W_TILE], w[j * blockDim.x + threadIdx.x]);
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The twins that are refused. A launch spelt by a macro cannot call a launcher, and the stages
// need every launch to ask for their room.
#define LAUNCH_MACRO_TILES(g, b, ...) macro_launched<<<g, b>>>(__VA_ARGS__)
__global__ void macro_launched(float* out, const float* a, int numTiles) {
  __shared__ float sa[TILE];
  __shared__ float sb[TILE];
  float acc = 0.0f;
  // EXPECT: shared-memory
  for (int t = 0; t < numTiles; ++t) {
    for (int i = threadIdx.x; i < TILE; i += blockDim.x) {
      sa[i] = a[(size_t)t * 2 * TILE + i];
      sb[i] = a[(size_t)t * 2 * TILE + TILE + i];
    }
    __syncthreads();
    acc = mul_add_rn(acc, sa[threadIdx.x], sb[(threadIdx.x + 1) % TILE]);
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Tiles in a __device__ function: the kernels that call it set the dynamic shared memory.
__device__ float device_tiles(const float* a, int numTiles) {
  __shared__ float sa[TILE];
  __shared__ float sb[TILE];
  float acc = 0.0f;
  // EXPECT: shared-memory
  for (int t = 0; t < numTiles; ++t) {
    for (int i = threadIdx.x; i < TILE; i += blockDim.x) {
      sa[i] = a[(size_t)t * 2 * TILE + i];
      sb[i] = a[(size_t)t * 2 * TILE + TILE + i];
    }
    __syncthreads();
    acc = mul_add_rn(acc, sa[threadIdx.x], sb[(threadIdx.x + 3) % TILE]);
    __syncthreads();
  }
  return acc;
}
__global__ void calls_device_tiles(float* out, const float* a, int numTiles) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = device_tiles(a, numTiles);
}

template <typename L>
static void runKernel(FILE* f, size_t n, L launch) {
  float* d = poisonedOutput<float>(n);
  launch(d);
  checkLaunch();
  writeOutput(f, d, n);
  CK(cudaFree(d));
}

static void runBigTiles(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, int shift) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)(blocks - 1) * shift + (size_t)numTiles * TILE + 1, rng);
  std::vector<float> hV = randomFloats((size_t)numTiles * TILE + 1, rng);
  float* dA = toDevice(hA);
  float* dV = toDevice(hV);
  printf("big_tiles case %d: blocks=%d tiles=%d shift=%d\n", caseNo, blocks, numTiles, shift);
  runKernel(f, (size_t)blocks * NT, [&](float* d) { big_tiles<<<blocks, NT>>>(d, dA, dV, numTiles, shift); });
  CK(cudaFree(dA));
  CK(cudaFree(dV));
}

static void runGemm(FILE* f, uint64_t seed, int caseNo, int M, int N, int K) {
  Rng rng(seed, 100 + caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K + 1, rng), hB = randomFloats((size_t)K * N + 1, rng);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  printf("wide_gemm case %d: %d x %d x %d\n", caseNo, M, N, K);
  runKernel(f, (size_t)M * N, [&](float* d) { ::tilepipe_launch_wide_gemm(dim3(N / 64, M / 64), 256, 0, 0, dA, dB, d, M, N, K); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

template <int W_TILE>
static void runWindow(FILE* f, uint64_t seed, int caseNo, int blocks, int threads, int numTiles, int shift) {
  Rng rng(seed, 200 + caseNo);
  std::vector<float> hX = randomFloats((size_t)(blocks - 1) * shift + (size_t)numTiles * W_TILE + 1, rng);
  std::vector<float> hW = randomFloats((size_t)32 * threads, rng);
  float* dX = toDevice(hX);
  float* dW = toDevice(hW);
  printf("window_sum<%d> case %d: blocks=%d threads=%d tiles=%d\n", W_TILE, caseNo, blocks, threads, numTiles);
  runKernel(f, (size_t)blocks * threads,
            [&](float* d) { window_sum<W_TILE><<<blocks, threads>>>(dX, dW, d, numTiles, shift); });
  CK(cudaFree(dX));
  CK(cudaFree(dW));
}

static void runTwins(FILE* f, uint64_t seed, int blocks, int numTiles) {
  Rng rng(seed, 300);
  std::vector<float> hA = randomFloats((size_t)numTiles * 2 * TILE + 1, rng);
  float* dA = toDevice(hA);
  runKernel(f, (size_t)blocks * NT, [&](float* d) { LAUNCH_MACRO_TILES(blocks, NT, d, dA, numTiles); });
  runKernel(f, (size_t)blocks * NT, [&](float* d) { calls_device_tiles<<<blocks, NT>>>(d, dA, numTiles); });
  CK(cudaFree(dA));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runBigTiles(f, seed, 0, 3, 0, 100);        // no tiles
  runBigTiles(f, seed, 1, 3, 1, 100);        // one tile
  runBigTiles(f, seed, 2, 5, 2, 1000);       // as many tiles as the prologue copies
  runBigTiles(f, seed, 3, 4096, 9, 1000);    // 9 tiles, 4096 blocks
  runGemm(f, seed, 0, 64, 64, 0);            // no tiles
  runGemm(f, seed, 1, 64, 128, 64);          // one tile
  runGemm(f, seed, 2, 128, 64, 128);         // two tiles
  runGemm(f, seed, 3, 4096, 2048, 192);      // 3 tiles, 2048 blocks
  runGemm(f, seed, 4, 2048, 2048, 1024);     // 16 tiles, 1024 blocks
  runWindow<8192>(f, seed, 0, 2, 256, 0, 8);        // no tiles
  runWindow<8192>(f, seed, 1, 3, 256, 1, 8);        // one tile
  runWindow<8192>(f, seed, 2, 4096, 128, 11, 64);   // 11 tiles, 4096 blocks
  runWindow<12288>(f, seed, 3, 4096, 256, 7, 96);   // 7 tiles, 4096 blocks
  runTwins(f, seed, 64, 5);
  closeOutput(f);
  return 0;
}
