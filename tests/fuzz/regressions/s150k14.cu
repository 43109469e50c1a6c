// ==== BEGIN COMMON
// A batch of random tiled kernels written by tests/fuzz/gen.py (seed 150). Each kernel is a
// legal program on its own: deterministic, race-free and in bounds for the launches its driver makes.
// Usage: <program> [--dump DIR] [--small] [--list] [kernel-id...]
//   prints one line per kernel: <kernel-id> <labels> <FNV-1a 64 of every output byte, all cases>
//   --dump DIR   also writes DIR/<id>.bin (the raw output bytes) and DIR/<id>.layout (type count)
//   --small      only the small cases (few blocks, few tiles): for compute-sanitizer
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define FZ_CK(call)                                                                          \
  do {                                                                                       \
    cudaError_t fz_err_ = (call);                                                            \
    if (fz_err_ != cudaSuccess) {                                                            \
      fprintf(stderr, "%s:%d: CUDA error: %s (%s)\n", __FILE__, __LINE__,                    \
              cudaGetErrorString(fz_err_), #call);                                           \
      fflush(stdout);                                                                        \
      exit(3);                                                                               \
    }                                                                                        \
  } while (0)

// Component-wise arithmetic on the vector element types.
__host__ __device__ inline float2 operator+(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__host__ __device__ inline float2 operator-(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
__host__ __device__ inline float2 operator*(float2 a, float2 b) { return make_float2(a.x * b.x, a.y * b.y); }
__host__ __device__ inline float2 operator*(float2 a, float s) { return make_float2(a.x * s, a.y * s); }
__host__ __device__ inline float2& operator+=(float2& a, float2 b) { a = a + b; return a; }
__host__ __device__ inline float4 operator+(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
__host__ __device__ inline float4 operator-(float4 a, float4 b) {
  return make_float4(a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w);
}
__host__ __device__ inline float4 operator*(float4 a, float4 b) {
  return make_float4(a.x * b.x, a.y * b.y, a.z * b.z, a.w * b.w);
}
__host__ __device__ inline float4 operator*(float4 a, float s) {
  return make_float4(a.x * s, a.y * s, a.z * s, a.w * s);
}
__host__ __device__ inline float4& operator+=(float4& a, float4 b) { a = a + b; return a; }

// Index helpers the kernels may call.
__host__ __device__ constexpr int fz_deref(const int* p) { return *p; }
__host__ __device__ constexpr int fz_mul(int a, int b) { return a * b; }
__device__ inline void fz_adv(int& x, int step) { x += step; }
__device__ inline int fz_lim(int n) { return n; }

// xorshift64*: the inputs of every kernel come from a fixed per-kernel seed.
struct FzRng {
  uint64_t s;
  explicit FzRng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL) {
    if (s == 0) s = 1;
  }
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  float f() {  // in [-1, 1), never zero
    float v = (float)(next() >> 40) * (2.0f / 16777216.0f) - 1.0f;
    return v == 0.0f ? 0.375f : v;
  }
  double d() {
    double v = (double)(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    return v == 0.0 ? 0.375 : v;
  }
  int i() {  // in [-50, 50], never zero
    int v = (int)(next() % 101) - 50;
    return v == 0 ? 17 : v;
  }
};
template <class T> T fz_rand(FzRng& r);
template <> float fz_rand<float>(FzRng& r) { return r.f(); }
template <> double fz_rand<double>(FzRng& r) { return r.d(); }
template <> int fz_rand<int>(FzRng& r) { return r.i(); }
template <> float2 fz_rand<float2>(FzRng& r) { float a = r.f(); return make_float2(a, r.f()); }
template <> float4 fz_rand<float4>(FzRng& r) {
  float a = r.f(), b = r.f(), c = r.f();
  return make_float4(a, b, c, r.f());
}
template <class T> const char* fz_type_name();
template <> const char* fz_type_name<float>() { return "float"; }
template <> const char* fz_type_name<double>() { return "double"; }
template <> const char* fz_type_name<int>() { return "int"; }
template <> const char* fz_type_name<float2>() { return "float2"; }
template <> const char* fz_type_name<float4>() { return "float4"; }

// One kernel's run: the hash of every output byte of every case, and the optional dump.
struct FzRun {
  uint64_t hash = 14695981039346656037ULL;
  FILE* bin = nullptr;
  FILE* layout = nullptr;
  std::vector<void*> buffers;
  void add(const void* p, size_t n) {
    const unsigned char* b = (const unsigned char*)p;
    for (size_t i = 0; i < n; ++i) {
      hash ^= b[i];
      hash *= 1099511628211ULL;
    }
  }
};
static bool fz_small = false;

// A device buffer of n elements (at least one), filled with random non-zero values.
template <class T> T* fz_in(FzRun& run, size_t n, uint64_t seed) {
  std::vector<T> h(n ? n : 1);
  FzRng r(seed);
  for (auto& v : h) v = fz_rand<T>(r);
  T* d = nullptr;
  FZ_CK(cudaMalloc(&d, h.size() * sizeof(T)));
  FZ_CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  run.buffers.push_back(d);
  return d;
}
// A device buffer of n elements (at least one), poisoned with 0xFF bytes.
template <class T> T* fz_out(FzRun& run, size_t n) {
  T* d = nullptr;
  const size_t bytes = (n ? n : 1) * sizeof(T);
  FZ_CK(cudaMalloc(&d, bytes));
  FZ_CK(cudaMemset(d, 0xFF, bytes));
  run.buffers.push_back(d);
  return d;
}
static int* fz_int(FzRun& run, int v) {
  int* d = nullptr;
  FZ_CK(cudaMalloc(&d, sizeof(int)));
  FZ_CK(cudaMemcpy(d, &v, sizeof(int), cudaMemcpyHostToDevice));
  run.buffers.push_back(d);
  return d;
}
static void fz_launched() {
  FZ_CK(cudaGetLastError());
  FZ_CK(cudaDeviceSynchronize());
}
// Hashes (and dumps) n elements of a device buffer.
template <class T> void fz_hash(FzRun& run, const T* d, size_t n) {
  std::vector<T> h(n);
  if (n) FZ_CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  run.add(h.data(), n * sizeof(T));
  if (run.bin && n) {
    fwrite(h.data(), sizeof(T), n, run.bin);
    fprintf(run.layout, "%s %zu\n", fz_type_name<T>(), n);
  }
}
static void fz_free(FzRun& run) {
  for (void* p : run.buffers) FZ_CK(cudaFree(p));
  run.buffers.clear();
}
// ==== END COMMON

// ==== BEGIN KERNEL s150k14 2d,barrier-ttb,bound-param,compute-kloop,guard-clamp,index-var,int,iv-counter,minmax,multi-tile,restrict,rotated,tripcounts,walk-x,walk-y,x-exact,x-multi
__global__ void k_s150k14(int* __restrict__ out, const int* __restrict__ src0, const int* __restrict__ src1, int ld0, int ld1, int nr_src0, int rs_src0, int n_src1, int numTiles) {
  const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
  const int tid = (tz * 32 + ty) * 32 + tx;
  __shared__ int tile0[32][32];
  __shared__ int buf1[32][64];
  const int base_src0 = (blockIdx.x % nr_src0) * rs_src0;
  const int base_src1 = (blockIdx.x % 1) * 2098239;
  int acc = 0;
  for (int t = 0; t < numTiles; t++) {
    cg::this_thread_block().sync();
    const int g0_0 = base_src0 + t * 32 + ty * ld0 + tx;
    tile0[ty][tx] = src0[g0_0];
    buf1[ty][tx] = src1[min(base_src1 + t * 32 * ld1 + ty * ld1 + tx, n_src1 - 1)];
    buf1[ty][tx + 32] = src1[min(base_src1 + t * 32 * ld1 + ty * ld1 + tx + 32, n_src1 - 1)];
    cg::this_thread_block().sync();
    acc += (buf1[(ty + 24) % 32][63 - tx % 64] & 63);
    for (int k = 0; k < 64; ++k)
      acc += (tile0[(ty + 10) % 32][(tx + t) % 32] & 63) * (buf1[(ty + 29) % 32][(tx * 7 + 8) % 64] & 63);
    for (int k = 0; k < 16; ++k)
      acc += (tile0[(k + ty) % 32][(k + tx) % 32] & 63) * (buf1[(k + ty) % 32][(k + tx) % 64] & 63);
  }
  out[blockIdx.x * 1024 + tid] = acc;
}
static void run_s150k14(FzRun& run) {
  if (!fz_small) {  // case main: 4096 blocks, 64 tiles
    int* b_src0 = fz_in<int>(run, 4192160, 668773388002ULL);
    int* b_src1 = fz_in<int>(run, 2098238, 668773388003ULL);
    int* b_out = fz_out<int>(run, 4194304);
    k_s150k14<<<4096, dim3(32, 32, 1)>>>(b_out, b_src0, b_src1, 32, 1025, 1379, 3040, 2098238, 64);
    fz_launched();
    fz_hash(run, b_out, 4194304);
    fz_free(run);
  }
  {  // case mini: 7 blocks, 6 tiles
    int* b_src0 = fz_in<int>(run, 1184, 668773388018ULL);
    int* b_src1 = fz_in<int>(run, 97920, 668773388019ULL);
    int* b_out = fz_out<int>(run, 7168);
    k_s150k14<<<7, dim3(32, 32, 1)>>>(b_out, b_src0, b_src1, 32, 1025, 1, 394, 97920, 6);
    fz_launched();
    fz_hash(run, b_out, 7168);
    fz_free(run);
  }
  {  // case trip2: 259 blocks, 2 tiles
    int* b_src0 = fz_in<int>(run, 67584, 668773388034ULL);
    int* b_src1 = fz_in<int>(run, 64638, 668773388035ULL);
    int* b_out = fz_out<int>(run, 265216);
    k_s150k14<<<259, dim3(32, 32, 1)>>>(b_out, b_src0, b_src1, 32, 1025, 64, 1056, 64638, 2);
    fz_launched();
    fz_hash(run, b_out, 265216);
    fz_free(run);
  }
}
// ==== END KERNEL s150k14

// ==== BEGIN MAIN
struct FzEntry {
  const char* id;
  const char* labels;
  void (*run)(FzRun&);
};
static const FzEntry fz_entries[] = {
  {"s150k14", "2d,barrier-ttb,bound-param,compute-kloop,guard-clamp,index-var,int,iv-counter,minmax,multi-tile,restrict,rotated,tripcounts,walk-x,walk-y,x-exact,x-multi", run_s150k14},
};

int main(int argc, char** argv) {
  const char* dump = nullptr;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    else if (!strcmp(argv[i], "--small")) fz_small = true;
    else if (!strcmp(argv[i], "--list")) {
      for (const FzEntry& e : fz_entries) printf("%s %s\n", e.id, e.labels);
      return 0;
    } else only.push_back(argv[i]);
  }
  for (const std::string& id : only) {
    bool found = false;
    for (const FzEntry& e : fz_entries) found |= id == e.id;
    if (!found) { fprintf(stderr, "no kernel %s\n", id.c_str()); return 2; }
  }
  for (const FzEntry& e : fz_entries) {
    if (!only.empty()) {
      bool want = false;
      for (const std::string& id : only) want |= id == e.id;
      if (!want) continue;
    }
    FzRun run;
    if (dump) {
      std::string b = std::string(dump) + "/" + e.id;
      run.bin = fopen((b + ".bin").c_str(), "wb");
      run.layout = fopen((b + ".layout").c_str(), "w");
      if (!run.bin || !run.layout) { perror(b.c_str()); return 1; }
    }
    e.run(run);
    if (run.bin) { fclose(run.bin); fclose(run.layout); }
    printf("%s %s %016llx\n", e.id, e.labels, (unsigned long long)run.hash);
    fflush(stdout);
  }
  return 0;
}
// ==== END MAIN
