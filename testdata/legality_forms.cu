// legality_forms.cu: the forms the legality analysis must see through (docs/legality.md), each
// beside a close safe form, run at scale: thousands of blocks, many more tiles than stages,
// random inputs, poisoned outputs. Refused loops stay as written; rewritten ones must match the
// original bit for bit.
// The safe forms carry `// tilepipe: plan=always`: the point is that the analysis proves them
// legal; the cost model alone would not pipeline their small stages.
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

#define T 64  // == blockDim.x for the one-dimensional kernels

// C5: the compute phase stores, through a lambda, into the part of A the next tile's copy reads.
// The original's trailing barrier orders that store before the copy; a rewrite would not.
__global__ void lambda_into_source(float* A, float* C, int nt) {
  __shared__ float s[T];
  auto put = [&](int i, float x) { A[i] = x; };
  float acc = 0.0f;
  // EXPECT: store-aliases-load
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    if (t + 1 < nt) put((blockIdx.x * nt + t + 1) * T + (threadIdx.x + 5) % T, acc);
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// The close safe form: the lambda stores into another array, and the signature says so.
__global__ void lambda_into_output(const float* __restrict__ A, float* __restrict__ D, int nt) {
  __shared__ float s[T];
  auto put = [&](int i, float x) { D[i] = x; };
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T] * s[(threadIdx.x + 7) % T];
    put((blockIdx.x * nt + t) * T + threadIdx.x, acc);
    __syncthreads();
  }
}

// C2/C3: the bound changes through a reference the compute phase writes.
__global__ void bound_through_reference(const float* A, float* C, int nt) {
  __shared__ float s[T];
  int lim = nt;
  int& lr = lim;
  float acc = 0.0f;
  // EXPECT: loop-condition
  for (int t = 0; t < lim; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 3) % T];
    if (s[0] > 0.9f) lr = t + 1 < lr ? lr - 1 : lr;  // the same in all threads of the block
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// C4: an index through a function, pure by its body.
__device__ int tileOf(int b, int t, int nt) { return b * nt + t; }

__global__ void pure_index(const float* A, float* C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[tileOf(blockIdx.x, t, nt) * T + threadIdx.x];
    __syncthreads();
    acc = acc * 0.5f + s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// W1: the top half of each 16x16 block returns before the loop; the rest compute on the rows they
// load. A copy spread over the block's ranks would leave the returned threads' chunks uncopied.
__global__ void rows_after_early_exit(const float* A, float* C, int nt) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (ty < 8) return;
  __shared__ float s[16][16];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[ty][tx] = A[((size_t)(blockIdx.x * nt + t) * 16 + ty) * 16 + tx];
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += s[ty][k] * (float)(k + 1);
    __syncthreads();
  }
  C[(blockIdx.x * 16 + ty) * 16 + tx] = acc;
}

// B2: the compute phase accumulates into another __shared__ array, and after the loop thread 0
// reads all of it. The original's last trailing barrier orders those writes before that read.
__global__ void shared_read_after_loop(const float* A, float* C, int nt) {
  __shared__ float s[T];
  __shared__ float red[T];
  red[threadIdx.x] = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    red[threadIdx.x] += s[(threadIdx.x + t) % T];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int i = 0; i < T; ++i) sum += red[i] * (float)(i + 1);
    C[blockIdx.x] = sum;
  }
}

// B3: threads write the block's first tile of A before a loop of the rotated form; the
// original's leading barrier publishes those writes before any thread copies.
__global__ void rotated_after_writes(float* A, float* C, int nt) {
  A[(size_t)blockIdx.x * nt * T + (threadIdx.x * 5 + 3) % T] = (float)(threadIdx.x + blockIdx.x);
  __shared__ float s[T];
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    __syncthreads();
    s[threadIdx.x] = A[((size_t)blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 11) % T] * 0.25f;
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}

// B3 with tiles big enough for tensor copies on sm_90: 32x32 floats, rows of A written before
// the loop by other threads of the block.
__global__ void rotated_after_writes_2d(float* A, float* C, int ld, int nt) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  A[(blockIdx.x * 32 + (ty + 1) % 32) * ld + tx] += 1.0f;
  __shared__ float s[32][32];
  float acc = 0.0f;
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    __syncthreads();
    s[ty][tx] = A[(blockIdx.x * 32 + ty) * ld + t * 32 + tx];
    __syncthreads();
    acc += s[tx][ty] + s[ty][(tx + 1) % 32];
  }
  C[(blockIdx.x * 32 + ty) * 32 + tx] = acc;
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, caseNo);
  const size_t nA = (size_t)blocks * nt * T;
  std::vector<float> hA = randomFloats(nA, rng);
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, nt);
  {  // lambda_into_source: A is also written
    float* dA = toDevice(hA);
    float* dC = poisonedOutput<float>((size_t)blocks * T);
    lambda_into_source<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    writeOutput(f, dA, nA);
    CK(cudaFree(dA));
    CK(cudaFree(dC));
  }
  float* dA = toDevice(hA);
  {
    float* dD = poisonedOutput<float>(nA);
    lambda_into_output<<<blocks, T>>>(dA, dD, nt);
    checkLaunch();
    writeOutput(f, dD, nA);
    CK(cudaFree(dD));
  }
  {
    float* dC = poisonedOutput<float>((size_t)blocks * T);
    bound_through_reference<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    pure_index<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    CK(cudaFree(dC));
  }
  {  // 16x16 tiles: nA / 256 tiles in all, nt per block, so blocks * T / 256 blocks
    const int b2 = blocks / 4;
    float* dC = poisonedOutput<float>((size_t)b2 * 256);
    rows_after_early_exit<<<b2, dim3(16, 16)>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)b2 * 256);
    CK(cudaFree(dC));
  }
  {
    float* dC = poisonedOutput<float>(blocks);
    shared_read_after_loop<<<blocks, T>>>(dA, dC, nt);
    checkLaunch();
    writeOutput(f, dC, blocks);
    CK(cudaFree(dC));
  }
  {
    float* dW = toDevice(hA);
    float* dC = poisonedOutput<float>((size_t)blocks * T);
    rotated_after_writes<<<blocks, T>>>(dW, dC, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)blocks * T);
    CK(cudaFree(dW));
    CK(cudaFree(dC));
  }
  {  // 32x32 tiles: rows of ld = nt * 32 floats, blocks / 16 row strips of 32 rows
    const int b3 = blocks / 16, ld = nt * 32;
    float* dW = toDevice(hA);  // b3 * 32 * ld == blocks * nt * T floats
    float* dC = poisonedOutput<float>((size_t)b3 * 1024);
    rotated_after_writes_2d<<<b3, dim3(32, 32)>>>(dW, dC, ld, nt);
    checkLaunch();
    writeOutput(f, dC, (size_t)b3 * 1024);
    writeOutput(f, dW, nA);
    CK(cudaFree(dW));
    CK(cudaFree(dC));
  }
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
