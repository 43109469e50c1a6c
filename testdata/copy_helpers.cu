// copy_helpers.cu: copy phases that copy through small helper functions, and compute phases that
// read the tiles as vectors. llm.c's matmul_forward_kernel4: `st_vec(&lhs_s[y][xo], ld_vec(inp +
// ...))` in an inner copy loop, the compute phase reading `ld_vec(&lhs_s[r][si % 32])` with si
// stepped by 4 from a staggered start; scalar helpers `st1(&t[i], ld1(p))`; a helper store of a
// plain read (a whole-tile copy), with the compute phase reading through a cast,
// `*reinterpret_cast<const float4 *>(&Bs[k][c])`; float2 helpers in a namespace, through the
// register-staged prefetch. The twins that are refused: a helper of two
// statements (load-phase) and a vector read one element past a multiple of its width
// (tile-escapes). Loops marked `// tilepipe: plan=always` take the cp.async pipeline; the others
// the cost model's plan. Run at scale: thousands of blocks, many more tiles than stages, random
// inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
// more tiles than stages, random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
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

// llm.c's helpers: one 16-byte read, one 16-byte store.
__device__ float4 ld_vec(const float* address) { return *reinterpret_cast<const float4*>(address); }
__device__ void st_vec(float* address, float4 val) { *reinterpret_cast<float4*>(address) = val; }
// Scalar ones.
__device__ float ld1(const float* p) { return *p; }
__device__ void st1(float* p, float v) { *p = v; }

// out (M x N) = inp (M x K) times weight (N x K) transposed, 64 x 64 outputs a block of 16 x 16
// threads, 4 x 4 each; the tiles 64 rows of 32 floats, copied as float4 by the helpers.
__global__ void vec_helpers_gemm(float* out, const float* inp, const float* weight, int N, int K) {
  __shared__ float lhs_s[64][32];
  __shared__ float rhs_s[64][32];
  inp += 64 * blockIdx.x * K;
  weight += 64 * blockIdx.y * K;
  float vals[4][4] = {};
  int si_start = 4 * (16 * threadIdx.y + threadIdx.x);
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int so = 0; so < K; so += 32) {
    __syncthreads();
    int xmod8 = threadIdx.x % 8;
    int xby8 = threadIdx.x / 8;
    int xo = 4 * xmod8;
    for (int y = 2 * threadIdx.y + xby8; y < 64; y += 32) {
      st_vec(&lhs_s[y][xo], ld_vec(inp + y * K + so + xo));
      st_vec(&rhs_s[y][xo], ld_vec(weight + y * K + so + xo));
    }
    __syncthreads();
    for (int si = si_start; si < si_start + 32; si += 4) {
      float4 rhs[4];
      for (int u = 0; u < 4; ++u)
        rhs[u] = ld_vec(&rhs_s[u + 4 * threadIdx.y][si % 32]);
      for (int ii = 0; ii < 4; ++ii) {
        float4 lhs = ld_vec(&lhs_s[ii + 4 * threadIdx.x][si % 32]);
        for (int ji = 0; ji < 4; ++ji) {
          vals[ii][ji] = mul_add_rn(vals[ii][ji], lhs.x, rhs[ji].x);
          vals[ii][ji] = mul_add_rn(vals[ii][ji], lhs.y, rhs[ji].y);
          vals[ii][ji] = mul_add_rn(vals[ii][ji], lhs.z, rhs[ji].z);
          vals[ii][ji] = mul_add_rn(vals[ii][ji], lhs.w, rhs[ji].w);
        }
      }
    }
  }
  for (int ii = 0; ii < 4; ++ii)
    for (int ji = 0; ji < 4; ++ji)
      out[(64 * blockIdx.x + 4 * threadIdx.x + ii) * N + 64 * blockIdx.y + 4 * threadIdx.y + ji] = vals[ii][ji];
}

// Scalar helpers on a 1-D tile: block b sums a window of x that starts at b * shift.
__global__ void scalar_helpers(float* out, const float* x, int numTiles, int shift) {
  __shared__ float t[128];
  const float* row = x + blockIdx.x * shift;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int k = 0; k < numTiles; ++k) {
    st1(&t[threadIdx.x], ld1(row + 128 * k + threadIdx.x));
    __syncthreads();
    for (int j = 0; j < 8; ++j)
      acc = mul_add_rn(acc, t[(threadIdx.x + 13 * j) % 128], t[(5 * threadIdx.x + j) % 128]);
    __syncthreads();
  }
  out[blockIdx.x * 128 + threadIdx.x] = acc;
}

__device__ float lane(float4 v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// A 16 x 16 matrix multiply: As stored by a helper from a plain read, the whole tile as one box;
// Bs read as float4 through a cast in the compute phase.
__global__ void cast_reads_matmul(const float* A, const float* B, float* C, int wA, int wB) {
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  float sum = 0.0f;
  // EXPECT: pipelined
  for (int t = 0; t < wA / 16; ++t) {
    st1(&As[ty][tx], A[(by * 16 + ty) * wA + 16 * t + tx]);
    Bs[ty][tx] = B[(16 * t + ty) * wB + 16 * bx + tx];
    __syncthreads();
    for (int k = 0; k < 16; ++k) {
      float4 b4 = *reinterpret_cast<const float4*>(&Bs[k][4 * (tx / 4)]);
      sum = mul_add_rn(sum, As[ty][k], lane(b4, tx % 4));
    }
    __syncthreads();
  }
  C[(by * 16 + ty) * wB + bx * 16 + tx] = sum;
}

// Helpers in a namespace whose vector type is an alias there; the kernel's scope has another
// `vec`. The register-staged prefetch declares its registers by the type's full name (run with
// --plan-choice=registers, docs/gpu-record.md); the cost model keeps the loop, since the prefetch's
// registers would cost warps on sm_90 (the launch check's count).
namespace h {
using vec = float2;
__device__ void st(float* p, vec v) { *reinterpret_cast<vec*>(p) = v; }
__device__ vec ld(const float* p) { return *reinterpret_cast<const vec*>(p); }
}  // namespace h
struct vec {
  float a;
};
__global__ void namespaced_helpers(float* out, const float* x, int numTiles, int shift) {
  __shared__ float t[256];
  const float* row = x + blockIdx.x * shift;
  vec bias{0.5f};
  float acc = 0.0f;
  // EXPECT: no-gain
  for (int k = 0; k < numTiles; ++k) {
    h::st(&t[2 * threadIdx.x], h::ld(row + 256 * k + 2 * threadIdx.x));
    __syncthreads();
    for (int j = 0; j < 8; ++j)
      acc = mul_add_rn(acc, t[(threadIdx.x + 29 * j) % 256], t[(7 * threadIdx.x + j) % 256]);
    __syncthreads();
  }
  out[blockIdx.x * 128 + threadIdx.x] = __fadd_rn(acc, bias.a);
}

// The twins that are refused. A helper of two statements is no one store.
__device__ void st_twice(float* p, float v) {
  p[0] = v;
  p[0] = v;
}
__global__ void two_statement_helper(float* out, const float* x, int numTiles) {
  __shared__ float t[128];
  float acc = 0.0f;
  // EXPECT: load-phase
  for (int k = 0; k < numTiles; ++k) {
    st_twice(&t[threadIdx.x], x[128 * k + threadIdx.x]);
    __syncthreads();
    acc = mul_add_rn(acc, t[threadIdx.x], t[127 - threadIdx.x]);
    __syncthreads();
  }
  out[blockIdx.x * 128 + threadIdx.x] = acc;
}

// A float2 read of a float tile from an odd element: aligned in the original only if the tile
// sits 4 bytes past 8, which its stages do not. Not run: where the tile sits on 8 bytes, the
// original itself reads misaligned.
__global__ void odd_vector_read(float* out, const float* x, int numTiles) {
  __shared__ float t[130];
  float acc = 0.0f;
  // EXPECT: tile-escapes
  for (int k = 0; k < numTiles; ++k) {
    t[threadIdx.x] = x[128 * k + threadIdx.x];
    __syncthreads();
    float2 v = *reinterpret_cast<const float2*>(&t[2 * (threadIdx.x % 64) + 1]);
    acc = mul_add_rn(acc, v.x, v.y);
    __syncthreads();
  }
  out[blockIdx.x * 128 + threadIdx.x] = acc;
}

template <typename L>
static void runKernel(FILE* f, size_t n, L launch) {
  float* d = poisonedOutput<float>(n);
  launch(d);
  checkLaunch();
  writeOutput(f, d, n);
  CK(cudaFree(d));
}

static void runGemm(FILE* f, uint64_t seed, int caseNo, int M, int N, int K) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)M * K + 4, rng), hB = randomFloats((size_t)N * K + 4, rng);
  float* dA = toDevice(hA);
  float* dB = toDevice(hB);
  printf("vec_helpers_gemm case %d: %d x %d x %d\n", caseNo, M, N, K);
  runKernel(f, (size_t)M * N,
            [&](float* d) { vec_helpers_gemm<<<dim3(M / 64, N / 64), dim3(16, 16)>>>(d, dA, dB, N, K); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

static void runScalar(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, int shift) {
  Rng rng(seed, 100 + caseNo);
  std::vector<float> hX = randomFloats((size_t)(blocks - 1) * shift + (size_t)numTiles * 128 + 1, rng);
  float* dX = toDevice(hX);
  printf("scalar_helpers case %d: blocks=%d tiles=%d\n", caseNo, blocks, numTiles);
  runKernel(f, (size_t)blocks * 128, [&](float* d) { scalar_helpers<<<blocks, 128>>>(d, dX, numTiles, shift); });
  runKernel(f, (size_t)blocks * 128, [&](float* d) { two_statement_helper<<<blocks, 128>>>(d, dX, numTiles); });
  CK(cudaFree(dX));
  std::vector<float> hY = randomFloats((size_t)(blocks - 1) * shift + (size_t)numTiles * 256 + 2, rng);
  dX = toDevice(hY);
  printf("namespaced_helpers case %d: blocks=%d tiles=%d\n", caseNo, blocks, numTiles);
  runKernel(f, (size_t)blocks * 128,
            [&](float* d) { namespaced_helpers<<<blocks, 128>>>(d, dX, numTiles, shift); });
  CK(cudaFree(dX));
}

static void runMatmul(FILE* f, uint64_t seed, int caseNo, int hA, int wA, int wB) {
  Rng rng(seed, 200 + caseNo);
  std::vector<float> hostA = randomFloats((size_t)hA * wA + 1, rng), hostB = randomFloats((size_t)wA * wB + 1, rng);
  float* dA = toDevice(hostA);
  float* dB = toDevice(hostB);
  printf("cast_reads_matmul case %d: %d x %d x %d\n", caseNo, hA, wA, wB);
  runKernel(f, (size_t)hA * wB,
            [&](float* d) { cast_reads_matmul<<<dim3(wB / 16, hA / 16), dim3(16, 16)>>>(dA, dB, d, wA, wB); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runGemm(f, seed, 0, 64, 64, 0);          // no tiles
  runGemm(f, seed, 1, 64, 128, 32);        // one tile
  runGemm(f, seed, 2, 128, 64, 64);        // two tiles
  runGemm(f, seed, 3, 4096, 2048, 320);    // 10 tiles, 2048 blocks
  runScalar(f, seed, 0, 3, 0, 100);        // no tiles
  runScalar(f, seed, 1, 3, 1, 100);        // one tile
  runScalar(f, seed, 2, 5, 2, 1000);       // as many tiles as the prologue copies
  runScalar(f, seed, 3, 8192, 37, 1000);   // 37 tiles, 8192 blocks
  runMatmul(f, seed, 0, 32, 0, 32);        // no tiles
  runMatmul(f, seed, 1, 32, 16, 32);       // one tile
  runMatmul(f, seed, 2, 2048, 512, 1024);  // 32 tiles, 8192 blocks
  closeOutput(f);
  return 0;
}
