// unchanged_reads.cu: loops whose trip count, or whose tiles' source, is read from memory that
// holds the same values while the kernel runs, so the rewrite may read it ahead of the loop's own
// iteration. The shape of lavaMD: each block's box has a neighbour count and a neighbour list in
// memory (`const __restrict__` parameters that the kernel never writes), and each tile is copied
// from the box the list names. Also: the count with a bulk copy per tile, issued by one thread; the
// toolkit's read-only load (`__ldg`) for the count and the copy, and into a local the copy takes; a trip count in __constant__ memory; a count read through a plain pointer where the loop says
// --assume-noalias. Twins that are refused (address-not-invariant): the list through a pointer
// without __restrict__, and through one the kernel writes. Loops marked `// tilepipe:
// plan=always` take the cp.async pipeline; the others the cost model's plan. Run at scale:
// thousands of blocks, many more tiles than stages, random inputs, poisoned outputs
// (tests/gpu/verify_testdata.sh).
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


#define T 128

// Rounded operations, which nvcc never contracts: the rewrite's unrolled trips may be contracted
// otherwise than the original's loop, and the outputs compare bit for bit.
__device__ float mix(float acc, float a, float b) { return __fadd_rn(__fmul_rn(acc, 0.5f), __fmul_rn(a, b)); }

// lavaMD's loop: the block's own box, then its neighbours, as many as its count in memory says
// (masked: 0 to mask trips); each tile is one box's T floats.
__global__ void box_neighbours(const float* __restrict__ A, const int2* __restrict__ boxes,
                               const int* __restrict__ nbr, float* __restrict__ C, int nboxes, int mask) {
  __shared__ float s[T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int k = 0; k < (boxes[bx].y & mask); ++k) {
    const int src = k == 0 ? bx : (nbr[bx * 128 + k] & 0x7fffffff) % nboxes;
    s[tid] = A[(size_t)src * T + tid];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
    __syncthreads();
  }
  C[bx * T + tid] = acc;
}

// The count again, with tiles of 512 floats: one bulk copy per tile on compute capability 9.0,
// issued by one thread for the block while the count, read by every thread, says a tile is there.
// Four blocks an SM hold the rewrite to the original's 32 registers (without the bound, the bulk
// copies' state takes 35, and three blocks of 512 threads fit where four did).
#define T2 512
__global__ void __launch_bounds__(512, 4)
    counted_bulk(const float* __restrict__ A, const int2* __restrict__ boxes, float* __restrict__ C, int mask) {
  __shared__ float s[T2];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int k = 0; k < (boxes[bx].y & mask); ++k) {
    s[tid] = A[((size_t)(bx % 1024) * 32 + k) * T2 + tid];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % T2], s[(3 * tid + j) % T2]);
    __syncthreads();
  }
  C[bx * T2 + tid] = acc;
}

// The toolkit's read-only load, for the count and for the copy into the tile: `__ldg(&A[i])` is the
// read A[i] to the copies.
__global__ void ldg_copy(const float* __restrict__ A, const int* __restrict__ nbr, float* __restrict__ C, int mask) {
  __shared__ float s[T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: pipelined
  for (int k = 0; k < (__ldg(&nbr[bx * 128]) & mask); ++k) {
    s[tid] = __ldg(&A[((size_t)bx * 128 + k) * T + tid]);
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
    __syncthreads();
  }
  C[bx * T + tid] = acc;
}

// __ldg through a local: each thread's element read into a register with the read-only load,
// then stored; the copy reads A's element itself.
__global__ void ldg_local(const float* __restrict__ A, const int* __restrict__ nbr, float* __restrict__ C, int mask) {
  __shared__ float s[T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int k = 0; k < (__ldg(&nbr[bx * 128]) & mask); ++k) {
    const float v = __ldg(&A[((size_t)bx * 128 + k) * T + T - 1 - tid]);
    s[tid] = v;
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
    __syncthreads();
  }
  C[bx * T + tid] = acc;
}

__constant__ int c_tiles;

// The trip count in __constant__ memory, which device code cannot write.
__global__ void constant_trips(const float* __restrict__ A, float* __restrict__ C) {
  __shared__ float s[T];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: pipelined
  for (int k = 0; k < c_tiles; ++k) {
    s[tid] = A[((size_t)blockIdx.x * c_tiles + k) * T + tid];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// The count through a plain pointer: unchanged only because the loop assumes that no other
// pointer reaches it (and the kernel writes nothing through it).
__global__ void noalias_count(const float* A, const int2* boxes, float* C, int mask) {
  __shared__ float s[T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // tilepipe: assume-noalias=true
  // EXPECT: pipelined
  for (int k = 0; k < (boxes[bx].y & mask); ++k) {
    s[tid] = A[((size_t)bx * 128 + k) * T + tid];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
    __syncthreads();
  }
  C[bx * T + tid] = acc;
}

// Refused: without __restrict__, another pointer (C) may write the list while the loop runs.
__global__ void list_plain(const float* __restrict__ A, const int* nbr, float* C, int nboxes) {
  __shared__ float s[T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: address-not-invariant
  for (int k = 0; k < 8; ++k) {
    s[tid] = A[(size_t)((nbr[bx * 128 + k] & 0x7fffffff) % nboxes) * T + tid];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
    __syncthreads();
  }
  C[bx * T + tid] = acc;
}

// Refused: the kernel writes the list (the value it holds, after the loop), so it may change
// while other blocks run the loop.
__global__ void list_written(const float* __restrict__ A, const int* __restrict__ nbr, float* __restrict__ C,
                             int nboxes) {
  __shared__ float s[T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: address-not-invariant
  for (int k = 0; k < 8; ++k) {
    s[tid] = A[(size_t)((nbr[bx * 128 + k] & 0x7fffffff) % nboxes) * T + tid];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
    __syncthreads();
  }
  C[bx * T + tid] = acc;
  if (tid == 0)
    const_cast<int*>(nbr)[bx * 128] = nbr[bx * 128];
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
  std::vector<float> hA = randomFloats((size_t)nboxes * 128 * T, rng);
  std::vector<int2> hBoxes(nboxes);
  for (int2& b : hBoxes) b = make_int2((int)(rng.next() >> 33), (int)(rng.next() >> 33));
  std::vector<int> hNbr((size_t)nboxes * 128);
  for (int& v : hNbr) v = (int)(rng.next() >> 32);
  printf("boxes case %d: nboxes=%d mask=%d\n", caseNo, nboxes, mask);
  float* dA = toDevice(hA);
  int2* dBoxes = toDevice(hBoxes);
  int* dNbr = toDevice(hNbr);
  const size_t n = (size_t)nboxes * T;
  runKernel(f, n, [&](float* dC) { box_neighbours<<<nboxes, T>>>(dA, dBoxes, dNbr, dC, nboxes, mask); });
  runKernel(f, n, [&](float* dC) { noalias_count<<<nboxes, T>>>(dA, dBoxes, dC, mask); });
  runKernel(f, n, [&](float* dC) { ldg_copy<<<nboxes, T>>>(dA, dNbr, dC, mask); });
  runKernel(f, n, [&](float* dC) { ldg_local<<<nboxes, T>>>(dA, dNbr, dC, mask); });
  runKernel(f, (size_t)nboxes * T2, [&](float* dC) { counted_bulk<<<nboxes, T2>>>(dA, dBoxes, dC, mask); });
  runKernel(f, n, [&](float* dC) { list_plain<<<nboxes, T>>>(dA, dNbr, dC, nboxes); });
  runKernel(f, n, [&](float* dC) { list_written<<<nboxes, T>>>(dA, dNbr, dC, nboxes); });
  const int tiles = mask < 127 ? mask : 97;
  CK(cudaMemcpyToSymbol(c_tiles, &tiles, sizeof tiles));
  runKernel(f, n, [&](float* dC) { constant_trips<<<nboxes, T>>>(dA, dC); });
  CK(cudaFree(dA));
  CK(cudaFree(dBoxes));
  CK(cudaFree(dNbr));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runBoxes(f, seed, 0, 3, 0);       // no tiles
  runBoxes(f, seed, 1, 5, 1);       // at most one tile
  runBoxes(f, seed, 2, 7, 3);       // at most three tiles
  runBoxes(f, seed, 3, 4096, 3);    // at most three tiles, 4096 blocks
  runBoxes(f, seed, 4, 4096, 127);  // up to 127 tiles (97 for constant_trips), 4096 blocks
  closeOutput(f);
  return 0;
}
