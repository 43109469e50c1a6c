// pointer_views.cu: copies that store through a pointer local that views the tile, as
// cuda-samples' MatrixMulNaiveLargeChunk writes them: `float4 *const A4s = reinterpret_cast<float4
// *>(&As[ty][t4x]); ... *A4s = *A4;`, each local used only as the target of its stores, its
// initializer reading only what the copy phase does not change before them (the tile's address,
// locals set once before the loop, induction variables, the variable of an inner copy loop around
// it). `chunk_matmul`: a quarter of the threads copy four floats of each row, through locals for
// both the tile and the source; `pair_rows`: a 1-D tile copied two floats at a time in an inner
// loop, the view declared inside it. Loops marked `// tilepipe: plan=always` take the cp.async
// pipeline; the others the cost model's plan. Run at scale: thousands of blocks, many more tiles
// than stages, random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
#include <cuda/pipeline>
#line 11
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

#define BS 32

// C = A * B with BS x BS tiles; blocks of BS x BS threads, the first BS / 4 of each row copying.
__global__ void chunk_matmul(const float* A, const float* B, float* C, int wA, int wB) {
  alignas(16) __shared__ alignas(alignof(float4)) float As_stages[3][BS][BS];
  alignas(16) __shared__ alignas(alignof(float4)) float Bs_stages[3][BS][BS];
  int t4x = threadIdx.x * 4;
  int aBegin = wA * BS * blockIdx.y, aEnd = aBegin + wA - 1, aStep = BS;
  int bBegin = BS * blockIdx.x, bStep = BS * wB;
  float Csub = 0;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int a = aBegin, b = bBegin;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto a_fetch = a;
    auto b_fetch = b;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto a = a_fetch;
      auto b = b_fetch;
      if (a <= aEnd) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          if (t4x < BS) {
            float4* const A4s = reinterpret_cast<float4*>(&As[threadIdx.y][t4x]);
            float4* const B4s = reinterpret_cast<float4*>(&Bs[threadIdx.y][t4x]);
            const float4* const A4 = reinterpret_cast<const float4*>(&A[a + wA * threadIdx.y + t4x]);
            const float4* const B4 = reinterpret_cast<const float4*>(&B[b + wB * threadIdx.y + t4x]);
            ::cuda::memcpy_async(&(*A4s), &(*A4),
                                 ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
            ::cuda::memcpy_async(&(*B4s), &(*B4),
                                 ::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe);
          }
        }
        a += aStep, b += bStep;
        a_fetch = a;
        b_fetch = b;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; a <= aEnd; a += aStep, b += bStep) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < BS; ++k)
        Csub = mul_add_rn(Csub, As[threadIdx.y][k], Bs[k][threadIdx.x]);
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
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
      if (t4x < BS) {
        float4* const A4s = reinterpret_cast<float4*>(&As[threadIdx.y][t4x]);
        float4* const B4s = reinterpret_cast<float4*>(&Bs[threadIdx.y][t4x]);
        const float4* const A4 = reinterpret_cast<const float4*>(&A[a + wA * threadIdx.y + t4x]);
        const float4* const B4 = reinterpret_cast<const float4*>(&B[b + wB * threadIdx.y + t4x]);
        *A4s = *A4;
        *B4s = *B4;
      }
      __syncthreads();
      for (int k = 0; k < BS; ++k)
        Csub = mul_add_rn(Csub, As[threadIdx.y][k], Bs[k][threadIdx.x]);
      __syncthreads();
    }
  }
#endif
#line 152
  C[(BS * blockIdx.y + threadIdx.y) * wB + BS * blockIdx.x + threadIdx.x] = Csub;
}

#define T 128

// Each block walks its row of nt tiles of T floats; 32 threads, each copying two float2 of a tile
// in an inner loop whose variable the view reads.
__global__ void pair_rows(const float2* __restrict__ A2, float* __restrict__ out, int nt) {
  alignas(16) __shared__ alignas(16) float s_stages[2][T];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: pipelined
  { // tilepipe: the pipeline where the launch leaves the SMs mostly idle (at most 16 warps per SM)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if ((unsigned long long)gridDim.x * gridDim.y * gridDim.z * ((blockDim.x * blockDim.y * blockDim.z + 31) / 32) <= 16ull * [] { unsigned sms; asm("mov.u32 %0, %%nsmid;" : "=r"(sms)); return sms; }())
  // tilepipe: 2-stage pipeline of cp.async copies; the copies of the next 1 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          for (int i = 0; i < 2; ++i) {
            float2* const d = reinterpret_cast<float2*>(&s[2 * (tid + 32 * i)]);
            ::cuda::memcpy_async(&(*d), &A2[((size_t)blockIdx.x * nt + t) * (T / 2) + tid + 32 * i],
                                 ::cuda::aligned_size_t<sizeof(float2)>(sizeof(float2)), pipe);
          }
        }
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 2 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 1 tiles.
    for (int prologue = 0; prologue < 1; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 0 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      for (int j = 0; j < 4; ++j)
        acc = mul_add_rn(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
      pipe.consumer_release();
      stage = stage + 1 == 2 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
  else
#endif
  { // tilepipe: below compute capability 8.0 and in launches that fill the GPU, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < nt; ++t) {
      for (int i = 0; i < 2; ++i) {
        float2* const d = reinterpret_cast<float2*>(&s[2 * (tid + 32 * i)]);
        *d = A2[((size_t)blockIdx.x * nt + t) * (T / 2) + tid + 32 * i];
      }
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = mul_add_rn(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
      __syncthreads();
    }
  }
  }
#line 174
  out[blockIdx.x * 32 + tid] = acc;
}

template <typename L>
static void runKernel(FILE* f, size_t n, L launch) {
  float* dC = poisonedOutput<float>(n);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, n);
  CK(cudaFree(dC));
}

// C = A * B, A hA x wA, B wA x wB, all multiples of BS.
static void runMatmul(FILE* f, uint64_t seed, int caseNo, int hA, int wA, int wB) {
  Rng rng(seed, caseNo);
  std::vector<float> hAm = randomFloats((size_t)hA * wA, rng), hB = randomFloats((size_t)wA * wB, rng);
  printf("matmul case %d: %d x %d x %d\n", caseNo, hA, wA, wB);
  float* dA = toDevice(hAm);
  float* dB = toDevice(hB);
  runKernel(f, (size_t)hA * wB, [&](float* dC) {
    chunk_matmul<<<dim3(wB / BS, hA / BS), dim3(BS, BS)>>>(dA, dB, dC, wA, wB);
  });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

// rows blocks of nt tiles each.
static void runRows(FILE* f, uint64_t seed, int caseNo, int rows, int nt) {
  Rng rng(seed, 100 + caseNo);
  std::vector<float> h = randomFloats((size_t)rows * nt * T + 2, rng);
  printf("rows case %d: %d rows of %d tiles\n", caseNo, rows, nt);
  float* d = toDevice(h);
  runKernel(f, (size_t)rows * 32, [&](float* dC) { pair_rows<<<rows, 32>>>(reinterpret_cast<const float2*>(d), dC, nt); });
  CK(cudaFree(d));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runMatmul(f, seed, 0, 64, 0, 64);        // no tiles
  runMatmul(f, seed, 1, 64, 32, 96);       // one tile
  runMatmul(f, seed, 2, 96, 64, 32);       // two tiles
  runMatmul(f, seed, 3, 2048, 96, 1024);   // three tiles, 2048 blocks
  runMatmul(f, seed, 4, 2048, 1024, 2048); // 32 tiles, 4096 blocks
  runRows(f, seed, 0, 3, 0);               // no tiles
  runRows(f, seed, 1, 5, 1);               // one tile
  runRows(f, seed, 2, 7, 3);               // three tiles
  runRows(f, seed, 3, 4096, 97);           // 97 tiles, 4096 blocks
  closeOutput(f);
  return 0;
}
