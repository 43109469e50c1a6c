// counter_loops.cu: copy loops over a counter the kernel declares outside the tiled loop, as
// C-style kernels write them (lavaMD): `while (wtx < N) { ...; wtx += T; } wtx = tx;`, a for loop
// with no init, one started by its init; the counter reset after the copy loop, so that every
// copy phase (replayed ahead by the rewrite) and every compute phase leaves it at one value.
// And tiles of elements whose size is not their alignment (lavaMD's four doubles, float3),
// copied element by element; an inner loop of its own counter stepped by `i = i + T`. The twin
// that is refused (load-phase): a compute phase that leaves the counter elsewhere. Loops marked
// `// tilepipe: plan=always` take the cp.async pipeline; the others the cost model's plan. Run at
// scale: thousands of blocks, many more tiles than stages, random inputs, poisoned outputs
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



#define T 64
#define P 100

// Rounded operations, which nvcc never contracts: the rewrite's unrolled trips may be contracted
// otherwise than the original's loop, and the outputs compare bit for bit.
__device__ float mix(float acc, float a, float b) { return __fadd_rn(__fmul_rn(acc, 0.5f), __fmul_rn(a, b)); }
__device__ double mixd(double acc, double a, double b) { return __dadd_rn(__dmul_rn(acc, 0.5), __dmul_rn(a, b)); }

// lavaMD's particle: four doubles, 32 bytes aligned to 8.
typedef struct {
  double v, x, y, z;
} Four;

// lavaMD's loop as it is written: every local at the top, the box's particles (P of them, more
// than the block's threads) copied by a while loop over the thread's counter `wtx`, which the
// statement after it resets; the compute phase walks the particles with the same counter.
__global__ void __launch_bounds__(64, 32) particle_boxes(const double* __restrict__ rvd, const double* __restrict__ qv,
                               const int2* __restrict__ box, const int* __restrict__ nei,
                               double* __restrict__ out, int nboxes, int mask) {
  const Four* rv = reinterpret_cast<const Four*>(rvd);
  __shared__ Four rB_s[P];
  __shared__ double qB_s[P];
  int bx = blockIdx.x, tx = threadIdx.x;
  int wtx = tx;
  int pointer, first_j;
  const Four* rB;
  const double* qB;
  double acc = 0.0;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int k = 0; k < 1 + (box[bx].y & mask); k++) {
    if (k == 0) {
      pointer = bx;
    } else {
      pointer = (nei[bx * 128 + k - 1] & 0x7fffffff) % nboxes;
    }
    first_j = pointer * P;
    rB = &rv[first_j];
    qB = &qv[first_j];
    while (wtx < P) {
      rB_s[wtx] = rB[wtx];
      qB_s[wtx] = qB[wtx];
      wtx = wtx + T;
    }
    wtx = tx;
    __syncthreads();
    while (wtx < P) {
      for (int j = 0; j < 8; ++j) {
        const int b = (wtx + 13 * j) % P;
        acc = mixd(acc, __dadd_rn(__dmul_rn(rB_s[b].v, rB_s[wtx].x), __dmul_rn(rB_s[b].y, rB_s[b].z)),
                   qB_s[(3 * wtx + j) % P]);
      }
      wtx = wtx + T;
    }
    wtx = tx;
    __syncthreads();
  }
  out[bx * T + tx] = acc;
}

// A for loop over the counter, with no init: it starts where the last reset left it.
__global__ void strided_for(const float* __restrict__ A, float* __restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int w = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * 2 * T;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    for (; w < 2 * T; w += blockDim.x)
      s[w] = a[t * 2 * T + 2 * T - 1 - w];
    w = threadIdx.x;
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(threadIdx.x + 37 * j) % (2 * T)], s[(3 * threadIdx.x + j) % (2 * T)]);
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

// The counter started by the copy loop's init, and read (at its reset value) by the compute phase.
__global__ void init_counter(const float* __restrict__ A, float* __restrict__ out, int nt) {
  __shared__ float s[3 * T / 2];
  int tx = threadIdx.x, w;
  const float* a = A + (size_t)blockIdx.x * nt * (3 * T / 2);
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    for (w = tx; w < 3 * T / 2; w += T)
      s[w] = a[t * (3 * T / 2) + w];
    w = tx;
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(w + 29 * j) % (3 * T / 2)], s[(5 * w + j) % (3 * T / 2)]);
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}

// An inner copy loop of its own counter, stepped by `i = i + T` (a step stepOf reads, as `+=`).
__global__ void assign_step(const float* __restrict__ A, float* __restrict__ out, int nt) {
  __shared__ float s[3 * T / 2];
  const int tx = threadIdx.x;
  const float* a = A + (size_t)blockIdx.x * nt * (3 * T / 2);
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    for (int i = tx; i < 3 * T / 2; i = i + T)
      s[i] = a[t * (3 * T / 2) + 3 * T / 2 - 1 - i];
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(tx + 29 * j) % (3 * T / 2)], s[(5 * tx + j) % (3 * T / 2)]);
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}

// float3 points, 12 bytes aligned to 4: the cost model keeps the loop (the register prefetch would
// take 40 registers against 32, fewer warps an SM).
__global__ void float3_points(const float3* __restrict__ Q, float* __restrict__ out, int nt) {
  __shared__ float3 sp[T];
  const int tx = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: no-gain
  for (int t = 0; t < nt; ++t) {
    sp[tx] = Q[((size_t)blockIdx.x * nt + t) * T + tx];
    __syncthreads();
    for (int j = 0; j < 4; ++j) {
      const int b = (tx + 13 * j) % T;
      acc = mix(acc, __fadd_rn(sp[b].x, sp[(b + 1) % T].y), sp[(3 * tx + j) % T].z);
    }
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}

// The same with the cp.async pipeline: three 4-byte copies a point.
__global__ void float3_pipelined(const float3* __restrict__ Q, float* __restrict__ out, int nt) {
  __shared__ float3 sp[T];
  const int tx = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
  for (int t = 0; t < nt; ++t) {
    sp[tx] = Q[((size_t)blockIdx.x * nt + t) * T + tx];
    __syncthreads();
    for (int j = 0; j < 4; ++j) {
      const int b = (tx + 13 * j) % T;
      acc = mix(acc, __fadd_rn(sp[b].x, sp[(b + 1) % T].y), sp[(3 * tx + j) % T].z);
    }
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}

// Refused: the compute phase leaves the counter one further, so each copy loop starts where the
// last one's compute phase left it, not at a value the same in every iteration.
__global__ void counter_drifts(const float* __restrict__ A, float* __restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int tx = threadIdx.x, w = tx;
  const float* a = A + (size_t)blockIdx.x * nt * 2 * T;
  float acc = 0.0f;
  // EXPECT: load-phase
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = a[t * 2 * T + w];
      w += T;
    }
    w = tx;
    __syncthreads();
    for (int j = 0; j < 4; ++j)
      acc = mix(acc, s[(w + 37 * j) % (2 * T)], s[(3 * tx + j) % (2 * T)]);
    w = (tx + t + 1) % T;
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}

template <typename E, typename L>
static void runKernel(FILE* f, size_t n, L launch) {
  E* dC = poisonedOutput<E>(n);
  launch(dC);
  checkLaunch();
  writeOutput(f, dC, n);
  CK(cudaFree(dC));
}

// nboxes blocks, each with up to mask neighbours (mask + 1 a power of two, at most 128).
static void runBoxes(FILE* f, uint64_t seed, int caseNo, int nboxes, int mask) {
  Rng rng(seed, caseNo);
  std::vector<double> hR = randomFloats<double>((size_t)nboxes * P * 4, rng);
  std::vector<double> hQ = randomFloats<double>((size_t)nboxes * P, rng);
  std::vector<int2> hBox(nboxes);
  for (int2& b : hBox) b = make_int2((int)(rng.next() >> 33), (int)(rng.next() >> 33));
  std::vector<int> hNei((size_t)nboxes * 128);
  for (int& v : hNei) v = (int)(rng.next() >> 32);
  printf("boxes case %d: nboxes=%d mask=%d\n", caseNo, nboxes, mask);
  double* dR = toDevice(hR);
  double* dQ = toDevice(hQ);
  int2* dBox = toDevice(hBox);
  int* dNei = toDevice(hNei);
  runKernel<double>(f, (size_t)nboxes * T, [&](double* dC) {
    particle_boxes<<<nboxes, T>>>(dR, dQ, dBox, dNei, dC, nboxes, mask);
  });
  CK(cudaFree(dR));
  CK(cudaFree(dQ));
  CK(cudaFree(dBox));
  CK(cudaFree(dNei));
}

// blocks blocks of T threads, nt tiles each.
static void runRows(FILE* f, uint64_t seed, int caseNo, int blocks, int nt) {
  Rng rng(seed, 100 + caseNo);
  // 3 T floats a tile: the float3 tiles' (T points), above the others' 2 T and 3 T / 2.
  std::vector<float> hA = randomFloats((size_t)blocks * std::max(nt, 1) * 3 * T, rng);
  printf("rows case %d: blocks=%d nt=%d\n", caseNo, blocks, nt);
  float* dA = toDevice(hA);
  const size_t n = (size_t)blocks * T;
  runKernel<float>(f, n, [&](float* dC) { strided_for<<<blocks, T>>>(dA, dC, nt); });
  runKernel<float>(f, n, [&](float* dC) { init_counter<<<blocks, T>>>(dA, dC, nt); });
  runKernel<float>(f, n, [&](float* dC) { assign_step<<<blocks, T>>>(dA, dC, nt); });
  runKernel<float>(f, n, [&](float* dC) { counter_drifts<<<blocks, T>>>(dA, dC, nt); });
  const float3* dQ = reinterpret_cast<const float3*>(dA);
  runKernel<float>(f, n, [&](float* dC) { float3_points<<<blocks, T>>>(dQ, dC, nt); });
  runKernel<float>(f, n, [&](float* dC) { float3_pipelined<<<blocks, T>>>(dQ, dC, nt); });
  CK(cudaFree(dA));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runBoxes(f, seed, 0, 3, 0);       // the home box alone
  runBoxes(f, seed, 1, 5, 1);       // up to two tiles
  runBoxes(f, seed, 2, 7, 3);       // up to four tiles
  runBoxes(f, seed, 3, 4096, 3);    // up to four tiles, 4096 blocks
  runBoxes(f, seed, 4, 4096, 127);  // up to 128 tiles, 4096 blocks
  runRows(f, seed, 0, 3, 0);        // no tiles
  runRows(f, seed, 1, 5, 1);        // one tile
  runRows(f, seed, 2, 7, 2);        // two tiles
  runRows(f, seed, 3, 4096, 3);     // three tiles, 4096 blocks
  runRows(f, seed, 4, 4096, 97);    // 97 tiles, 4096 blocks
  closeOutput(f);
  return 0;
}
