// narrow_elements.cu: tiles of elements cp.async cannot move (it moves 4, 8 or 16 bytes): `short`,
// `short3` (6 bytes aligned to 2), `uint8_t` and `__half`. Their loops take the register-staged
// prefetch, the one plan that moves any element: each thread loads its elements of the next tiles
// into registers of the element's own type and stores them where the copy phase did. The refused
// twins (a store in an inner copy loop) are testdata/neg_element_type.cu. Run at scale: thousands
// of blocks, many more tiles than the prefetch depth, random inputs, poisoned outputs.
#include <cuda_fp16.h>
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

#define T 64  // == blockDim.x

__global__ void short_products(int* out, const short* g, int numTiles) {
  __shared__ short s[T];
  int acc = 0;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    s[threadIdx.x] = g[(blockIdx.x * numTiles + t) * T + threadIdx.x];
    __syncthreads();
    acc += (int)s[threadIdx.x] * (int)s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

__global__ void short3_dots(int* out, const short3* p, int numTiles) {
  __shared__ short3 s3[T];
  int acc = 0;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    s3[threadIdx.x] = p[(blockIdx.x * numTiles + t) * T + threadIdx.x];
    __syncthreads();
    const short3 a = s3[threadIdx.x];
    const short3 b = s3[(threadIdx.x + 4) % T];
    acc += a.x * b.x + a.y * b.y + a.z * b.z;
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

// An int8 GEMM's shape: 16 x 16 tiles of bytes, products summed in int.
__global__ void byte_matmul(int* C, const uint8_t* A, const uint8_t* B, int wA, int wB) {
  __shared__ uint8_t As[16][16];
  __shared__ uint8_t Bs[16][16];
  const int tx = threadIdx.x, ty = threadIdx.y;
  int sum = 0;
  // EXPECT: pipelined
  for (int t = 0; t < wA / 16; ++t) {
    As[ty][tx] = A[(blockIdx.y * 16 + ty) * wA + t * 16 + tx];
    Bs[ty][tx] = B[(t * 16 + ty) * wB + blockIdx.x * 16 + tx];
    __syncthreads();
    for (int k = 0; k < 16; ++k)
      sum += (int)As[ty][k] * (int)Bs[k][tx];
    __syncthreads();
  }
  C[(blockIdx.y * 16 + ty) * wB + blockIdx.x * 16 + tx] = sum;
}

// Half-precision tiles, summed in float.
__global__ void half_window(float* out, const __half* g, int numTiles) {
  __shared__ __half h[T];
  float acc = 0.0f;
  // EXPECT: pipelined
  for (int t = 0; t < numTiles; ++t) {
    h[threadIdx.x] = g[(blockIdx.x * numTiles + t) * T + threadIdx.x];
    __syncthreads();
    acc = __fadd_rn(acc, __fmul_rn(__half2float(h[threadIdx.x]), __half2float(h[(threadIdx.x + 7) % T])));
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

static void runShort(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles) {
  Rng rng(seed, caseNo);
  std::vector<short> hG((size_t)blocks * (numTiles > 0 ? numTiles : 1) * T);
  for (auto& v : hG) v = (short)rng.range(-100, 100);
  std::vector<short3> hP((size_t)blocks * (numTiles > 0 ? numTiles : 1) * T);
  for (auto& v : hP) v = make_short3((short)rng.range(-100, 100), (short)rng.range(-100, 100), (short)rng.range(-100, 100));
  std::vector<__half> hH((size_t)blocks * (numTiles > 0 ? numTiles : 1) * T);
  for (auto& v : hH) v = __float2half((float)rng.range(-1000, 1000) / 64.0f);
  short* dG = toDevice(hG);
  short3* dP = toDevice(hP);
  __half* dH = toDevice(hH);
  const size_t nOut = (size_t)blocks * T;
  printf("case %d: blocks=%d tiles=%d\n", caseNo, blocks, numTiles);
  int* dOut = poisonedOutput<int>(nOut);
  short_products<<<blocks, T>>>(dOut, dG, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  short3_dots<<<blocks, T>>>(dOut, dP, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  CK(cudaFree(dOut));
  float* dF = poisonedOutput<float>(nOut);
  half_window<<<blocks, T>>>(dF, dH, numTiles);
  checkLaunch();
  writeOutput(f, dF, nOut);
  CK(cudaFree(dF));
  CK(cudaFree(dG));
  CK(cudaFree(dP));
  CK(cudaFree(dH));
}

// C = A * B in bytes, A hA x wA, B wA x wB, all multiples of 16.
static void runBytes(FILE* f, uint64_t seed, int caseNo, int hA, int wA, int wB) {
  Rng rng(seed, 100 + caseNo);
  std::vector<uint8_t> hAm((size_t)hA * wA + 16), hB((size_t)wA * wB + 16);
  for (auto& v : hAm) v = (uint8_t)rng.range(0, 255);
  for (auto& v : hB) v = (uint8_t)rng.range(0, 255);
  printf("bytes case %d: %d x %d x %d\n", caseNo, hA, wA, wB);
  uint8_t* dA = toDevice(hAm);
  uint8_t* dB = toDevice(hB);
  int* dC = poisonedOutput<int>((size_t)hA * wB);
  byte_matmul<<<dim3(wB / 16, hA / 16), dim3(16, 16)>>>(dC, dA, dB, wA, wB);
  checkLaunch();
  writeOutput(f, dC, (size_t)hA * wB);
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runShort(f, seed, 0, 5, 0);      // no tiles
  runShort(f, seed, 1, 5, 1);      // one tile
  runShort(f, seed, 2, 7, 3);      // below the prefetch depth
  runShort(f, seed, 3, 4096, 97);  // 97 tiles, 4096 blocks
  runBytes(f, seed, 0, 32, 0, 48);        // no tiles
  runBytes(f, seed, 1, 32, 16, 48);       // one tile
  runBytes(f, seed, 2, 48, 48, 16);       // three tiles
  runBytes(f, seed, 3, 1024, 1552, 1024); // 97 tiles, 4096 blocks
  closeOutput(f);
  return 0;
}
