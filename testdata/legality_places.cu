// legality_places.cu: text whose value depends on where it stands, and index arithmetic that wraps
// before it is widened. '__func__' in a copy index, and __builtin_LINE() reached through a default
// argument in the compute phase, take other values where the rewrite moves the loop's text into
// lambdas and onto other lines: refused. Rows of an image stored bottom-up, computed in 32-bit
// unsigned arithmetic and widened to size_t, hold their affine form modulo 2^32 only: copied per
// element, never as a box. Each stands beside a close safe form, run at scale: thousands of
// blocks, many more tiles than stages, random inputs, poisoned outputs. Refused loops stay as
// written; rewritten ones must match the original bit for bit (tests/gpu/verify_testdata.sh).
// The safe forms carry `// tilepipe: plan=always`: the point is that the analysis proves them
// legal, whatever the cost model would choose.
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

// A copy index that names its function: sizeof(__func__) is that of the kernel's name
// (16 characters and the terminator), and 11 in a lambda ('operator()').
__global__ void func_named_index(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: source-text
  for (int t = 0; t < nt; ++t) {
    const int lane = threadIdx.x * (sizeof(__func__) - 16);
    s[lane] = A[((size_t)blockIdx.x * nt + t) * T + lane];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The safe form: the same index without the function's name.
__global__ void plain_index(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    const int lane = threadIdx.x;
    s[lane] = A[((size_t)blockIdx.x * nt + t) * T + lane];
    __syncthreads();
    acc = acc * 0.5f + s[(threadIdx.x + 5) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// A default argument takes the line of the call: the compute phase's, which the rewrite moves.
__device__ float weighted(float x, unsigned line = __builtin_LINE()) { return x * (float)(line % 7 + 1); }
__global__ void line_of_call(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // EXPECT: source-text
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + weighted(s[(threadIdx.x + 3) % T]);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The safe form: the line is the called function's own.
__device__ float weighted_here(float x) { return x * (float)(__builtin_LINE() % 7 + 1); }
__global__ void line_of_callee(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + weighted_here(s[(threadIdx.x + 3) % T]);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// An image of h rows of w floats stored bottom-up: block b's 8 rows are image rows 8b..8b+7, at
// memory row h - 1 - y, computed in unsigned arithmetic ((h - 1 - y) * w wraps nowhere, but its
// affine form -w per thread row does, modulo 2^32) and widened to size_t. Per-element copies.
#define R 8  // rows per block, == blockDim.y
__global__ void rows_bottom_up(const float* img, float* C, unsigned w, unsigned h, int nt) {
  __shared__ float s[R][T];
  const unsigned y = blockIdx.x * R + threadIdx.y;
  const size_t rowStart = (h - 1 - y) * w;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = img[rowStart + t * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[R - 1 - threadIdx.y][(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[(size_t)y * T + threadIdx.x] = acc;
}

// The safe form: the same rows in 32-bit arithmetic throughout, whose box the copies may fill.
__global__ void rows_bottom_up_narrow(const float* img, float* C, int w, int h, int nt) {
  __shared__ float s[R][T];
  const int y = blockIdx.x * R + threadIdx.y;
  const int rowStart = (h - 1 - y) * w;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = img[rowStart + t * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[R - 1 - threadIdx.y][(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[(size_t)y * T + threadIdx.x] = acc;
}

template <typename L>
static void runKernel(FILE* f, size_t nC, L launch) {
  float* dC = poisonedOutput<float>(nC);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, nC);
  CK(cudaFree(dC));
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T, nC = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(nA, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  runKernel(f, nC, [&](float* dC) { func_named_index<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { plain_index<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { line_of_call<<<blocks, T>>>(dA, dC, nt); });
  runKernel(f, nC, [&](float* dC) { line_of_callee<<<blocks, T>>>(dA, dC, nt); });
  // The image: blocks / 8 blocks of 8 rows each, rows of nt tiles (w = nt * T).
  const int imgBlocks = blocks / R;
  const unsigned w = (unsigned)nt * T, h = (unsigned)imgBlocks * R;
  const size_t nI = (size_t)imgBlocks * R * T;
  runKernel(f, nI, [&](float* dC) { rows_bottom_up<<<imgBlocks, dim3(T, R)>>>(dA, dC, w, h, nt); });
  runKernel(f, nI, [&](float* dC) {
    rows_bottom_up_narrow<<<imgBlocks, dim3(T, R)>>>(dA, dC, (int)w, (int)h, nt);
  });
  CK(cudaFree(dA));
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
