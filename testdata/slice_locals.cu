// slice_locals.cu: copy phases that set locals the kernel declares before the loop, as C-style
// kernels declare every local at their top and set it in the loop. lavaMD's loop: each block's
// box, then its neighbours (count and list in memory, const __restrict__), each tile copied from
// the box that `pointer`, `first_j` and `rB` name, set at the top of the copy phase each
// iteration; a matrix multiply whose tile offsets `a` and `b` are set there, and one whose counter
// is declared with the other locals and started by the loop's init (`for (t = 0; ...)`, tensor
// copies); a local chosen per thread by an if/else (each thread copies its own element). The twin that is refused
// (load-phase): a local read after the loop. Loops marked `// tilepipe: plan=always` take the
// cp.async pipeline; the others the cost model's plan. Run at scale: thousands of blocks, many
// more tiles than stages, random inputs, poisoned outputs (tests/gpu/verify_testdata.sh).
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


#define T 64

// Rounded operations, which nvcc never contracts: the rewrite's unrolled trips may be contracted
// otherwise than the original's loop, and the outputs compare bit for bit.
__device__ float mix(float acc, float a, float b) { return __fadd_rn(__fmul_rn(acc, 0.5f), __fmul_rn(a, b)); }

// lavaMD's loop, its locals declared at the top: the home box (k = 0), then as many neighbours as
// the box's count says (masked: 0 to mask), each tile T floats of the box the list names.
__global__ void neighbour_boxes(const float* __restrict__ rv, const int2* __restrict__ box,
                                const int* __restrict__ nei, float* __restrict__ out, int nboxes, int mask) {
  __shared__ float sB[T];
  int bx = blockIdx.x, tx = threadIdx.x;
  int pointer;
  int first_j;
  const float* rB;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int k = 0; k < 1 + (box[bx].y & mask); k++) {
    if (k == 0) {
      pointer = bx;
    } else {
      pointer = (nei[bx * 128 + k - 1] & 0x7fffffff) % nboxes;
    }
    first_j = pointer * T;
    rB = &rv[first_j];
    sB[tx] = rB[tx];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, sB[(tx + 13 * j) % T], sB[(3 * tx + j) % T]);
    __syncthreads();
  }
  out[bx * T + tx] = acc;
}

// A matrix multiply of 16 x 16 tiles, C-style: a and b, the tiles' offsets, set each iteration.
__global__ void c_style_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                               int wA, int wB) {
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int a, b, t;
  float sum = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (t = 0; t < wA / 16; ++t) {
    a = wA * 16 * by + 16 * t;
    b = 16 * bx + 16 * wB * t;
    As[ty][tx] = A[a + wA * ty + tx];
    Bs[ty][tx] = B[b + wB * ty + tx];
    __syncthreads();
    for (int k = 0; k < 16; ++k)
      sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));
    __syncthreads();
  }
  C[(by * 16 + ty) * wB + bx * 16 + tx] = sum;
}

// The counter declared with the other locals and started by the loop's init, `for (t = 0; ...)`:
// its start is the init's value, the same in every thread, so the tiles may take tensor copies.
__global__ void c_style_counter(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                int wA, int wB) {
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int t;
  float sum = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (t = 0; t < wA / 16; ++t) {
    As[ty][tx] = A[wA * 16 * by + 16 * t + wA * ty + tx];
    Bs[ty][tx] = B[16 * bx + 16 * wB * t + wB * ty + tx];
    __syncthreads();
    for (int k = 0; k < 16; ++k)
      sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));
    __syncthreads();
  }
  C[(by * 16 + ty) * wB + bx * 16 + tx] = sum;
}

// A local chosen per thread: odd threads copy from the tile's start, even ones 4 elements on.
__global__ void chosen_per_thread(const float* __restrict__ A, float* __restrict__ out, int nt) {
  __shared__ float s[T];
  int tx = threadIdx.x, a;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    if (tx % 2)
      a = ((size_t)blockIdx.x * nt + t) * (T + 4);
    else
      a = ((size_t)blockIdx.x * nt + t) * (T + 4) + 4;
    s[tx] = A[a + tx];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tx + 13 * j) % T], s[(3 * tx + j) % T]);
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}

// Refused: the local is read after the loop, where a rewrite would leave a later tile's value.
__global__ void read_after(const float* __restrict__ A, float* __restrict__ out, int nt) {
  __shared__ float s[T];
  int tx = threadIdx.x, a = 0;
  float acc = 0.0f;
  // EXPECT: load-phase
  for (int t = 0; t < nt; ++t) {
    a = (blockIdx.x * nt + t) * T;
    s[tx] = A[a + tx];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tx + 13 * j) % T], s[(3 * tx + j) % T]);
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = __fadd_rn(acc, (float)(a % 1024));
}

template <typename L>
static void runKernel(FILE* f, size_t n, L launch) {
  float* dC = poisonedOutput<float>(n);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, n);
  CK(cudaFree(dC));
}

// nboxes blocks, each with up to mask neighbours (mask + 1 a power of two, at most 128).
static void runBoxes(FILE* f, uint64_t seed, int caseNo, int nboxes, int mask) {
  Rng rng(seed, caseNo);
  std::vector<float> hA = randomFloats((size_t)nboxes * 128 * (T + 4), rng);
  std::vector<int2> hBox(nboxes);
  for (int2& b : hBox) b = make_int2((int)(rng.next() >> 33), (int)(rng.next() >> 33));
  std::vector<int> hNei((size_t)nboxes * 128);
  for (int& v : hNei) v = (int)(rng.next() >> 32);
  printf("boxes case %d: nboxes=%d mask=%d\n", caseNo, nboxes, mask);
  float* dA = toDevice(hA);
  int2* dBox = toDevice(hBox);
  int* dNei = toDevice(hNei);
  const size_t n = (size_t)nboxes * T;
  runKernel(f, n, [&](float* dC) { neighbour_boxes<<<nboxes, T>>>(dA, dBox, dNei, dC, nboxes, mask); });
  const int nt = mask < 127 ? mask : 97;
  runKernel(f, n, [&](float* dC) { chosen_per_thread<<<nboxes, T>>>(dA, dC, nt); });
  runKernel(f, n, [&](float* dC) { read_after<<<nboxes, T>>>(dA, dC, nt); });
  CK(cudaFree(dA));
  CK(cudaFree(dBox));
  CK(cudaFree(dNei));
}

// C = A * B, A hA x wA, B wA x wB, all multiples of 16.
static void runMatmul(FILE* f, uint64_t seed, int caseNo, int hA, int wA, int wB) {
  Rng rng(seed, 200 + caseNo);
  std::vector<float> hAm = randomFloats((size_t)hA * wA, rng), hB = randomFloats((size_t)wA * wB, rng);
  printf("matmul case %d: %d x %d x %d\n", caseNo, hA, wA, wB);
  float* dA = toDevice(hAm);
  float* dB = toDevice(hB);
  runKernel(f, (size_t)hA * wB, [&](float* dC) { c_style_matmul<<<dim3(wB / 16, hA / 16), dim3(16, 16)>>>(dA, dB, dC, wA, wB); });
  runKernel(f, (size_t)hA * wB, [&](float* dC) { c_style_counter<<<dim3(wB / 16, hA / 16), dim3(16, 16)>>>(dA, dB, dC, wA, wB); });
  CK(cudaFree(dA));
  CK(cudaFree(dB));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runBoxes(f, seed, 0, 3, 0);        // the home box alone, no tiles for the others
  runBoxes(f, seed, 1, 5, 1);        // up to two tiles
  runBoxes(f, seed, 2, 7, 3);        // up to four tiles
  runBoxes(f, seed, 3, 4096, 3);     // up to four tiles, 4096 blocks
  runBoxes(f, seed, 4, 4096, 127);   // up to 128 tiles (97 for the others), 4096 blocks
  runMatmul(f, seed, 0, 32, 0, 48);      // no tiles
  runMatmul(f, seed, 1, 32, 16, 48);     // one tile
  runMatmul(f, seed, 2, 48, 32, 16);     // two tiles
  runMatmul(f, seed, 3, 1024, 48, 1024); // three tiles, 4096 blocks
  runMatmul(f, seed, 4, 1024, 1552, 1024); // 97 tiles, 4096 blocks
  closeOutput(f);
  return 0;
}
