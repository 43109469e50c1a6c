// template_guard.cu: templates rewritten for the instantiations tilepipe analysed, and only those.
// A template's text serves every instantiation, including ones tilepipe never sees: a file that
// includes this one, an instantiation added later. The rewrite runs under `if constexpr` on the
// arguments the analysis proved it for; any other instantiation runs the loop as it was. Here the
// GPU check builds with TILEPIPE_UNSEEN_INSTANCES defined (tests/gpu/verify_testdata.sh), which
// launches instantiations that tilepipe's parse did not see: a window of another size and element
// type, and a matrix multiply that nothing in the parsed text instantiates, which tilepipe
// analysed with the tile sizes it tries itself (8, 16, 32, 64: all but 64 rewritten) and which
// runs with 16 (rewritten) and 12 (as it was). The refused twin: a template whose compute phase
// writes its tile, refused in every instantiation tried. Run at scale: thousands of blocks, many
// more tiles than stages, random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
// A template whose rewrite needs more registers than the original (wide_bounds<40, 8>: about 160
// against 255 on sm_90) gets __launch_bounds__ in the instantiations built here alone:
// wide_bounds<8, 32>, unseen, still launches with 1024 threads.
#include <cuda/pipeline>
#include <cuda/std/type_traits>
#line 15
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


__device__ float mix(float acc, float a, float b) { return __fadd_rn(__fmul_rn(acc, 0.5f), __fmul_rn(a, b)); }
__device__ double mix(double acc, double a, double b) { return __dadd_rn(__dmul_rn(acc, 0.5), __dmul_rn(a, b)); }

// A window of TS elements of E per tile: instantiated here as <float, 128>.
template <typename E, int TS>
__global__ void window(const E* __restrict__ A, E* __restrict__ out, int nt) {
  alignas(16) __shared__ E s_stages[(::cuda::std::is_same_v<E, float> && TS == 128) ? 3 : 1][TS];
  const int tx = threadIdx.x;
  E acc = 0;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if constexpr (::cuda::std::is_same_v<E, float> && TS == 128) { // the instantiations tilepipe analysed
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
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+(((size_t)blockIdx.x * nt + t) * TS + tx));
          const s_index s_base = (s_index)(((size_t)blockIdx.x * nt + t) * TS + tx)
              - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &A[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[tx], &A[((size_t)blockIdx.x * nt + t) * TS + tx],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
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
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tx + 13 * j) % TS], s[(3 * tx + j) % TS]);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
  } else
#endif
  { // tilepipe: below compute capability 8.0 and in instantiations tilepipe did not analyse, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < nt; ++t) {
      s[tx] = A[((size_t)blockIdx.x * nt + t) * TS + tx];
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tx + 13 * j) % TS], s[(3 * tx + j) % TS]);
      __syncthreads();
    }
  }
#line 143
  out[(size_t)blockIdx.x * TS + tx] = acc;
}

// A matrix multiply of BS x BS tiles that nothing here instantiates.
template <int BS>
__global__ void probe_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                             int wA, int wB) {
  alignas(16) __shared__ float As_stages[(BS == 8 || BS == 16 || BS == 32) ? 3 : 1][BS][BS];
  alignas(16) __shared__ float Bs_stages[(BS == 8 || BS == 16 || BS == 32) ? 3 : 1][BS][BS];
  const int tx = threadIdx.x, ty = threadIdx.y;
  float sum = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if constexpr (BS == 8 || BS == 16 || BS == 32) { // the instantiations tilepipe analysed
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
      if (t < wA / BS) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using As_index = decltype(+((blockIdx.y * BS + ty) * wA + t * BS + tx));
          const As_index As_base = (As_index)((blockIdx.y * BS + ty) * wA + t * BS + tx)
              - (As_index)threadIdx.y * (As_index)(wA)
              - (As_index)threadIdx.x;
          if (sizeof(As[0]) % 16 == 0 &&
              blockDim.y == sizeof(As) / sizeof(As[0]) &&
              blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
              (wA) % (16 / sizeof(As[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&A[As_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
              const unsigned row0 = chunk / (sizeof(As[0]) / 16);
              const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
              ::cuda::memcpy_async(&As[row0][col],
                                   &A[As_base + (As_index)row0 * (As_index)(wA) + (As_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&As[ty][tx], &A[(blockIdx.y * BS + ty) * wA + t * BS + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
          }
          using Bs_index = decltype(+((t * BS + ty) * wB + blockIdx.x * BS + tx));
          const Bs_index Bs_base = (Bs_index)((t * BS + ty) * wB + blockIdx.x * BS + tx)
              - (Bs_index)threadIdx.y * (Bs_index)(wB)
              - (Bs_index)threadIdx.x;
          if (sizeof(Bs[0]) % 16 == 0 &&
              blockDim.y == sizeof(Bs) / sizeof(Bs[0]) &&
              blockDim.x == sizeof(Bs[0]) / sizeof(Bs[0][0]) &&
              (wB) % (16 / sizeof(Bs[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&B[Bs_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&Bs[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk_1 = rank; chunk_1 < sizeof(Bs) / 16; chunk_1 += threads) {
              const unsigned row0_1 = chunk_1 / (sizeof(Bs[0]) / 16);
              const unsigned col_1 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
              ::cuda::memcpy_async(&Bs[row0_1][col_1],
                                   &B[Bs_base + (Bs_index)row0_1 * (Bs_index)(wB) + (Bs_index)col_1],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&Bs[ty][tx], &B[(t * BS + ty) * wB + blockIdx.x * BS + tx],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
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
    for (; t < wA / BS; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < BS; ++k)
        sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
  } else
#endif
  { // tilepipe: below compute capability 8.0 and in instantiations tilepipe did not analyse, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (int t = 0; t < wA / BS; ++t) {
      As[ty][tx] = A[(blockIdx.y * BS + ty) * wA + t * BS + tx];
      Bs[ty][tx] = B[(t * BS + ty) * wB + blockIdx.x * BS + tx];
      __syncthreads();
      for (int k = 0; k < BS; ++k)
        sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));
      __syncthreads();
    }
  }
#line 164
  C[(size_t)(blockIdx.y * BS + ty) * wB + blockIdx.x * BS + tx] = sum;
}

// Refused in every instantiation tried: the compute phase writes the tile.
template <int N>
__global__ void writes_tile(const float* __restrict__ A, float* __restrict__ out, int nt) {
  __shared__ float s[N];
  float acc = 0.0f;
  // EXPECT: template-not-instantiated
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * N + threadIdx.x];
    __syncthreads();
    acc = __fadd_rn(acc, s[(threadIdx.x + 1) % N]);
    s[threadIdx.x] = acc;
    __syncthreads();
  }
  out[(size_t)blockIdx.x * N + threadIdx.x] = acc;
}

// Register-heavy: W accumulators a thread, R rows of 32 threads. Integer sums, exact.
template <int W, int R>
__global__ void __launch_bounds__((W == 40 && R == 8) ? 384 : 1024) wide_bounds(int* __restrict__ out, const int* __restrict__ a, const int* __restrict__ b, int nt) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  alignas(16) __shared__ int t0_stages[(W == 40 && R == 8) ? 3 : 1][R][32];
  __shared__ int t1_stages[(W == 40 && R == 8) ? 3 : 1][R][64];
  int acc[W];
#pragma unroll
  for (int w = 0; w < W; ++w)
    acc[w] = w;
  const size_t base = (size_t)blockIdx.x * nt;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if constexpr (W == 40 && R == 8) { // the instantiations tilepipe analysed
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
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &t0 = t0_stages[fetch_stage];
          auto &t1 = t1_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using t0_index = decltype(+(((base + t) * R + ty) * 32 + tx));
          const t0_index t0_base = (t0_index)(((base + t) * R + ty) * 32 + tx)
              - (t0_index)threadIdx.y * (t0_index)(32)
              - (t0_index)threadIdx.x;
          if (sizeof(t0[0]) % 16 == 0 &&
              blockDim.y == sizeof(t0) / sizeof(t0[0]) &&
              blockDim.x == sizeof(t0[0]) / sizeof(t0[0][0]) &&
              (32) % (16 / sizeof(t0[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&a[t0_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&t0[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(t0) / 16; chunk += threads) {
              const unsigned row0 = chunk / (sizeof(t0[0]) / 16);
              const unsigned col = chunk % (sizeof(t0[0]) / 16) * (16 / sizeof(t0[0][0]));
              ::cuda::memcpy_async(&t0[row0][col],
                                   &a[t0_base + (t0_index)row0 * (t0_index)(32) + (t0_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&t0[ty][tx], &a[((base + t) * R + ty) * 32 + tx],
                                   ::cuda::aligned_size_t<sizeof(t0[0][0])>(sizeof(t0[0][0])), pipe);
          }
          ::cuda::memcpy_async(&t1[ty][tx], &b[((base + t) * R + ty) * 64 + tx],
                               ::cuda::aligned_size_t<sizeof(t1[0][0])>(sizeof(t1[0][0])), pipe);
          ::cuda::memcpy_async(&t1[ty][tx + 32], &b[((base + t) * R + ty) * 64 + tx + 32],
                               ::cuda::aligned_size_t<sizeof(t1[0][0])>(sizeof(t1[0][0])), pipe);
        }
        t++;
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
    for (; t < nt; t++) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &t0 = t0_stages[stage];
      auto &t1 = t1_stages[stage];
#pragma unroll
      for (int w = 0; w < W; ++w)
        acc[w] += (t0[(ty + w) % R][(tx + t) % 32] & 63) * (t1[(ty + 29 * w) % R][(tx * 7 + w) % 64] & 63) +
                  acc[(w + 1) % W];
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
  } else
#endif
  { // tilepipe: below compute capability 8.0 and in instantiations tilepipe did not analyse, the loop as it was
    auto &t0 = t0_stages[0];
    auto &t1 = t1_stages[0];
    for (int t = 0; t < nt; t++) {
      t0[ty][tx] = a[((base + t) * R + ty) * 32 + tx];
      t1[ty][tx] = b[((base + t) * R + ty) * 64 + tx];
      t1[ty][tx + 32] = b[((base + t) * R + ty) * 64 + tx + 32];
      __syncthreads();
#pragma unroll
      for (int w = 0; w < W; ++w)
        acc[w] += (t0[(ty + w) % R][(tx + t) % 32] & 63) * (t1[(ty + 29 * w) % R][(tx * 7 + w) % 64] & 63) +
                  acc[(w + 1) % W];
      __syncthreads();
    }
  }
#line 207
  int s = 0;
#pragma unroll
  for (int w = 0; w < W; ++w)
    s ^= acc[w] * (w + 1);
  out[((size_t)blockIdx.x * R + ty) * 32 + tx] = s;
}

template <typename L>
static void runKernel(FILE* f, size_t n, L launch) {
  float* dC = poisonedOutput<float>(n);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, n);
  CK(cudaFree(dC));
}

// blocks windows of nt tiles each.
template <typename E, int TS>
static void runWindow(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  std::vector<E> hA = randomFloats<E>((size_t)blocks * (nt > 0 ? nt : 1) * TS, rng);
  printf("window<%d> case %d: %d blocks, %d tiles\n", TS, caseNo, blocks, nt);
  E* dA = toDevice(hA);
  E* dOut = poisonedOutput<E>((size_t)blocks * TS);
  window<E, TS><<<blocks, TS>>>(dA, dOut, nt);
  checkLaunch();
  writeOutput(f, dOut, (size_t)blocks * TS);
  CK(cudaFree(dA));
  CK(cudaFree(dOut));
}

// C = A * B, A hA x wA, B wA x wB, all multiples of BS.
template <int BS>
static void runMatmul(FILE* f, uint64_t seed, int caseNo, int hA, int wA, int wB) {
  Rng rng(seed, 200 + caseNo);
  std::vector<float> hAm = randomFloats((size_t)hA * wA, rng), hB = randomFloats((size_t)wA * wB, rng);
  printf("matmul<%d> case %d: %d x %d x %d\n", BS, caseNo, hA, wA, wB);
  float* dA = toDevice(hAm);
  float* dB = toDevice(hB);
  runKernel(f, (size_t)hA * wB, [&](float* dC) {
    probe_matmul<BS><<<dim3(wB / BS, hA / BS), dim3(BS, BS)>>>(dA, dB, dC, wA, wB);
  });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

template <int W, int R>
static void runWide(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, 300 + caseNo);
  const size_t tiles = (size_t)blocks * (nt > 0 ? nt : 1) * R;
  std::vector<int> ha(tiles * 32), hb(tiles * 64);
  for (int& v : ha) v = (int)(rng.next() >> 33);
  for (int& v : hb) v = (int)(rng.next() >> 33);
  printf("wide_bounds<%d, %d> case %d: %d blocks, %d tiles\n", W, R, caseNo, blocks, nt);
  int* da = toDevice(ha);
  int* db = toDevice(hb);
  int* dOut = poisonedOutput<int>((size_t)blocks * R * 32);
  wide_bounds<W, R><<<blocks, dim3(32, R)>>>(dOut, da, db, nt);
  checkLaunch();
  writeOutput(f, dOut, (size_t)blocks * R * 32);
  CK(cudaFree(da));
  CK(cudaFree(db));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runWindow<float, 128>(f, seed, 0, 3, 0);      // no tiles
  runWindow<float, 128>(f, seed, 1, 5, 1);      // one tile
  runWindow<float, 128>(f, seed, 2, 7, 2);      // two tiles
  runWindow<float, 128>(f, seed, 3, 4096, 5);   // 4096 blocks
  runWindow<float, 128>(f, seed, 4, 4096, 97);  // 97 tiles, 4096 blocks
  runWide<40, 8>(f, seed, 0, 3, 0);     // no tiles
  runWide<40, 8>(f, seed, 1, 5, 1);     // one tile
  runWide<40, 8>(f, seed, 2, 7, 3);     // three tiles
  runWide<40, 8>(f, seed, 3, 4096, 70); // 70 tiles, 4096 blocks
#ifdef TILEPIPE_UNSEEN_INSTANCES
  // Not analysed, so not bounded: 1024 threads.
  runWide<8, 32>(f, seed, 4, 2048, 40);
  // Instantiations tilepipe did not see: they run the loop as it was.
  runWindow<float, 96>(f, seed, 5, 4096, 37);
  runWindow<double, 64>(f, seed, 6, 4096, 37);
  runWindow<double, 64>(f, seed, 7, 3, 1);
  // The probe 16 runs the rewrite, 12 (never tried) the loop as it was.
  runMatmul<16>(f, seed, 0, 32, 0, 48);        // no tiles
  runMatmul<16>(f, seed, 1, 32, 16, 48);       // one tile
  runMatmul<16>(f, seed, 2, 48, 32, 16);       // two tiles
  runMatmul<16>(f, seed, 3, 1024, 1552, 1024); // 97 tiles, 4096 blocks
  runMatmul<12>(f, seed, 4, 1200, 1200, 480);  // 100 tiles, 4000 blocks
#endif
  closeOutput(f);
  return 0;
}
