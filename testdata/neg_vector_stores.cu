// neg_vector_stores.cu: the refused twins of vector_stores.cu. A vector store is copied whole
// only where Check proves what it writes: a vector and another store of the same thread that may
// write one element (tile-overlap), an offset that is not provably a whole number of vectors, a
// vector type aligned below its size, a tile that is no whole number of vectors (element-type),
// and a vector built from several reads (address-not-invariant). Every loop is left as it is.
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

struct Quad {
  float a, b, c, d;
};

// A float4 and a scalar store of the same thread: s[4 * tid + 3] is in both.
__global__ void vec_and_scalar(const float* A, float* C, int nt) {
  __shared__ float s[8 * T];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: tile-overlap
  for (int t = 0; t < nt; ++t) {
    reinterpret_cast<float4*>(&s[4 * tid])[0] = reinterpret_cast<const float4*>(&A[t * 8 * T + 4 * tid])[0];
    s[4 * tid + 3] = A[t * 8 * T + 4 * T + tid];
    __syncthreads();
    acc += s[(tid * 5) % (8 * T)];
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// Two vectors whose offsets differ by no constant: they may be the same vector.
__global__ void vec_two_rows(const float* A, float* C, int nt, int u) {
  __shared__ float s[8 * T];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: tile-overlap
  for (int t = 0; t < nt; ++t) {
    reinterpret_cast<float4*>(&s[4 * tid])[0] = reinterpret_cast<const float4*>(&A[t * 8 * T + 4 * tid])[0];
    reinterpret_cast<float4*>(&s[4 * u])[0] = reinterpret_cast<const float4*>(&A[t * 8 * T + 4 * T + 4 * tid])[0];
    __syncthreads();
    acc += s[(tid * 5) % (8 * T)];
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// An offset that the original may keep aligned, but that nothing here proves a multiple of 4.
__global__ void vec_offset(const float* A, float* C, int nt, int off) {
  __shared__ float s[8 * T];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: element-type
  for (int t = 0; t < nt; ++t) {
    reinterpret_cast<float4*>(&s[4 * tid + off])[0] = reinterpret_cast<const float4*>(&A[t * 8 * T + 4 * tid])[0];
    __syncthreads();
    acc += s[(tid * 5) % (8 * T)];
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// A 16-byte struct aligned to 4: its copy could not be one 16-byte copy.
__global__ void vec_underaligned(const float* A, float* C, int nt) {
  __shared__ float s[4 * T];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: element-type
  for (int t = 0; t < nt; ++t) {
    reinterpret_cast<Quad*>(&s[4 * tid])[0] = reinterpret_cast<const Quad*>(&A[t * 4 * T + 4 * tid])[0];
    __syncthreads();
    acc += s[(tid * 5) % (4 * T)];
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// 4 * T + 2 floats: the next stage would not start on a whole float4.
__global__ void vec_odd_tile(const float* A, float* C, int nt) {
  __shared__ float s[4 * T + 2];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: element-type
  for (int t = 0; t < nt; ++t) {
    reinterpret_cast<float4*>(&s[4 * tid])[0] = reinterpret_cast<const float4*>(&A[t * 4 * T + 4 * tid])[0];
    __syncthreads();
    acc += s[(tid * 5) % (4 * T)];
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

// A vector built from four reads: no one copy of it (what the store builds is not followed).
__global__ void vec_built(const float* A, float* C, int nt) {
  __shared__ float s[4 * T];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: address-not-invariant
  for (int t = 0; t < nt; ++t) {
    const float* p = &A[t * 4 * T + 4 * tid];
    reinterpret_cast<float4*>(&s[4 * tid])[0] = make_float4(p[0], p[1], p[2], p[3]);
    __syncthreads();
    acc += s[(tid * 5) % (4 * T)];
    __syncthreads();
  }
  C[blockIdx.x * T + tid] = acc;
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  const int blocks = 300, nt = 5;
  Rng rng(seed, 0);
  std::vector<float> hA = randomFloats((size_t)nt * 8 * T, rng);
  float* dA = toDevice(hA);
  float* dC = poisonedOutput<float>(blocks * T);
  vec_and_scalar<<<blocks, T>>>(dA, dC, nt);
  checkLaunch();
  writeOutput(f, dC, blocks * T);
  vec_two_rows<<<blocks, T>>>(dA, dC, nt, 5);
  checkLaunch();
  writeOutput(f, dC, blocks * T);
  vec_offset<<<blocks, T>>>(dA, dC, nt, 4);
  checkLaunch();
  writeOutput(f, dC, blocks * T);
  vec_underaligned<<<blocks, T>>>(dA, dC, nt);
  checkLaunch();
  writeOutput(f, dC, blocks * T);
  vec_odd_tile<<<blocks, T>>>(dA, dC, nt);
  checkLaunch();
  writeOutput(f, dC, blocks * T);
  vec_built<<<blocks, T>>>(dA, dC, nt);
  checkLaunch();
  writeOutput(f, dC, blocks * T);
  CK(cudaFree(dA));
  CK(cudaFree(dC));
  closeOutput(f);
  return 0;
}
