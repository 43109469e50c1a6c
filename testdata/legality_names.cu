// legality_names.cu: names that move keep their meaning. The rewrite writes the user's text
// elsewhere: tiles declared in the body before the loop, the copy phase's index declarations again
// before the compute phase, the loop's increments into the lambda that fetches ahead, element
// types and row strides into a host launcher beside the kernel, launch sites as calls of that
// launcher. Where a name would bind to another declaration there, the loop is refused
// (name-binding) or the piece stays (no tensor copy); kernels of one name in several namespaces
// each get their own launcher, called by its name from the global namespace. A program that
// sizes its grid from the kernel's occupancy keeps its loop (launch-resources). Each stands beside
// a close safe form, run at scale: thousands of blocks, many more tiles than stages, random
// inputs, poisoned outputs (tests/gpu/verify_testdata.sh). The safe forms carry
// `// tilepipe: plan=always`: the point is that the analysis proves them legal.
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

#define T 64  // == blockDim.x

// A tile declared in the body whose extent is a constant of the body hiding one outside the loop:
// stage arrays before the loop would have 16 elements, and the copies would overrun them.
constexpr int W = 16;
__global__ void extent_hidden(const float* A, float* C, int nt) {
  float acc = 0.0f;
  // (The register-staged prefetch, which the cost model would choose, keeps the tile in the body.)
  // tilepipe: plan=always
  // EXPECT: name-binding
  for (int t = 0; t < nt; ++t) {
    constexpr int W = T;
    __shared__ float s[W];
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * W + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % W];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc + W;
}

// The safe form: the extent names the block's width, the same before the loop.
__global__ void extent_outer(const float* A, float* C, int nt) {
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    __shared__ float s[T];
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The compute phase reads an index built from a copy-phase local that hides the kernel's own
// parameter: both are declared again before the compute phase, so that 'i' is the local's.
__global__ void index_from_hiding_local(const float* A, float* C, int nt, int base) {
  __shared__ float s[T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    const int base = (int)blockIdx.x * nt * T + t * T;
    const int i = base + threadIdx.x;
    s[threadIdx.x] = A[i];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T] * (float)(i & 7);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc + (float)base;
}

// A while loop whose increment reads a constant of the body hiding the kernel's parameter: in the
// lambda that fetches ahead it would step by the parameter (a step declared in the body is no
// loop-invariant step).
__global__ void step_hidden(const float* A, float* C, int nt, int step) {
  __shared__ float s[T];
  float acc = 0.0f;
  int t = 0;
  // EXPECT: induction-step
  while (t < nt) {
    const int step = 1;
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
    __syncthreads();
    t += step;
  }
  C[blockIdx.x * T + threadIdx.x] = acc + (float)step;
}

// The safe form: the step is the parameter, in the body and in the lambda alike.
__global__ void step_param(const float* A, float* C, int nt, int step) {
  __shared__ float s[T];
  float acc = 0.0f;
  int t = 0;
  // tilepipe: plan=always
  // EXPECT: pipelined
  while (t < nt) {
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
    __syncthreads();
    t += step;
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// Matrix products C = scale * A B of N x K by K x N, in 32 x 32 tiles.
#define TM 32
typedef double real_t;

// A local type of the element's name beside the namespace's double: the launcher would size the
// tensor map's elements by 8 bytes. Rewritten without tensor copies.
__global__ void mm_local_typedef(float* C, const float* A, const float* B, int N, int K) {
  typedef float real_t;
  __shared__ real_t As[TM][TM];
  __shared__ real_t Bs[TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < K / TM; ++t) {
    As[ty][tx] = A[row * K + t * TM + tx];
    Bs[ty][tx] = B[(t * TM + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < TM; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}

// The same through a row stride in bytes over the local type's size.
__global__ void mm_stride_typedef(float* C, const float* A, const float* B, int N, int K, int pitch) {
  using real_t = float;
  __shared__ float As[TM][TM];
  __shared__ float Bs[TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < K / TM; ++t) {
    As[ty][tx] = A[row * (int)(pitch / sizeof(real_t)) + t * TM + tx];
    Bs[ty][tx] = B[(t * TM + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < TM; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}

// Kernels of one name in three namespaces, each scaling its product differently: each launch
// site must reach its own kernel's launcher.
namespace {
__global__ void mm(float* C, const float* A, const float* B, int N, int K) {
  __shared__ float As[TM][TM];
  __shared__ float Bs[TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < K / TM; ++t) {
    As[ty][tx] = A[row * K + t * TM + tx];
    Bs[ty][tx] = B[(t * TM + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < TM; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}
}  // namespace
namespace twice {
__global__ void mm(float* C, const float* A, const float* B, int N, int K) {
  __shared__ float As[TM][TM];
  __shared__ float Bs[TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < K / TM; ++t) {
    As[ty][tx] = A[row * K + t * TM + tx];
    Bs[ty][tx] = B[(t * TM + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < TM; ++k)
      acc += 2.0f * As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}
}  // namespace twice
namespace outer {
extern "C++" {
namespace thrice {
__global__ void mm(float* C, const float* A, const float* B, int N, int K) {
  __shared__ float As[TM][TM];
  __shared__ float Bs[TM][TM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TM + ty, col = blockIdx.x * TM + tx;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < K / TM; ++t) {
    As[ty][tx] = A[row * K + t * TM + tx];
    Bs[ty][tx] = B[(t * TM + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < TM; ++k)
      acc += 3.0f * As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}
}  // namespace thrice
}
}  // namespace outer
namespace alias = twice;

// A persistent kernel: a grid sized from the kernel's occupancy walks the rows, each block summing
// its rows' results into its own slot, so the output depends on the grid's size.
__global__ void persistent(const float* A, float* C, int rows, int nt) {
  __shared__ float s[T];
  float part = 0.0f;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    float acc = 0.0f;
    // EXPECT: launch-resources
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[((size_t)r * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
      __syncthreads();
    }
    part += acc;
  }
  C[blockIdx.x * T + threadIdx.x] = part;
}

// The safe form: the same kernel on a grid of fixed size.
__global__ void persistent_fixed(const float* A, float* C, int rows, int nt) {
  __shared__ float s[T];
  float part = 0.0f;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    float acc = 0.0f;
    // tilepipe: plan=always
    // EXPECT: pipelined
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[((size_t)r * nt + t) * T + threadIdx.x];
      __syncthreads();
      acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
      __syncthreads();
    }
    part += acc;
  }
  C[blockIdx.x * T + threadIdx.x] = part;
}

template <typename L>
static void runKernel(FILE* f, size_t nC, L launch) {
  float* dC = poisonedOutput<float>(nC);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, nC);
  CK(cudaFree(dC));
}

static void launchAll(FILE* f, const float* dA, const float* dB, int N, int K) {
  const size_t nC = (size_t)N * N;
  const dim3 grid(N / TM, N / TM), block(TM, TM);
  runKernel(f, nC, [&](float* dC) { mm_local_typedef<<<grid, block>>>(dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) { mm_stride_typedef<<<grid, block>>>(dC, dA, dB, N, K, K * 4); });
  runKernel(f, nC, [&](float* dC) { mm<<<grid, block>>>(dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) { twice::mm<<<grid, block>>>(dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) { alias::mm<<<grid, block>>>(dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) { outer::thrice::mm<<<grid, block>>>(dC, dA, dB, N, K); });
  runKernel(f, nC, [&](float* dC) {
    using outer::thrice::mm;
    mm<<<grid, block>>>(dC, dA, dB, N, K);
  });
  runKernel(f, nC, [&](float* dC) {
    using namespace outer;
    thrice::mm<<<grid, block>>>(dC, dA, dB, N, K);
  });
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T, nC = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(nA, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  runKernel(f, nC, [&](float* dC) { extent_hidden<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { extent_outer<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { index_from_hiding_local<<<blocks, T>>>(dA, dC, nt, 7); });
  runKernel(f, nC, [&](float* dC) { step_hidden<<<blocks, T>>>(dA, dC, nt, 3); });
  runKernel(f, nC, [&](float* dC) { step_param<<<blocks, T>>>(dA, dC, nt, 1); });
  // The persistent kernels: as many blocks as fit, or 132, over blocks / 4 rows.
  const int rows = blocks / 4;
  int perSm = 0, sms = 0, dev = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, persistent, T, 0));
  const int grid = std::max(1, std::min(perSm * sms, 8192));
  runKernel(f, (size_t)8192 * T, [&](float* dC) {
    CK(cudaMemset(dC, 0, (size_t)8192 * T * sizeof(float)));
    persistent<<<grid, T>>>(dA, dC, rows, nt);
  });
  runKernel(f, (size_t)132 * T, [&](float* dC) { persistent_fixed<<<132, T>>>(dA, dC, rows, nt); });
  CK(cudaFree(dA));
  // The products: N = 32 * (2 + caseNo * 12) rows (3844 blocks in case 5), K = 32 * nt.
  const int N = TM * (2 + caseNo * 12), K = TM * std::max(nt, 0);
  std::vector<float> hMA = randomFloats((size_t)N * K, rng), hMB = randomFloats((size_t)K * N, rng);
  float* dMA = toDevice(hMA);
  float* dMB = toDevice(hMB);
  launchAll(f, dMA, dMB, N, K);
  CK(cudaFree(dMA));
  CK(cudaFree(dMB));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 16, 0);      // no tiles
  runCase(f, seed, 1, 32, 1);      // one tile
  runCase(f, seed, 2, 64, 2);      // fewer tiles than stages
  runCase(f, seed, 3, 4096, 3);    // as many as stages
  runCase(f, seed, 4, 8192, 40);   // many blocks per SM, far more tiles than stages
  runCase(f, seed, 5, 2048, 97);   // odd tile count
  closeOutput(f);
  return 0;
}
