// dot_double_while.cu: a `while` tiled loop over double (8-byte) tiles; the
// induction update `k += blockDim.x` is the last statement, after the trailing
// barrier. Each block pairs x with a block-dependent rotation of y, then reduces.
#include <cuda/pipeline>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda.h>
// tilepipe's runtime for tensor and bulk copies: compile with -I<the folder that
// `tilepipe --print-runtime-dir` prints>, or rewrite with --runtime=inline.
#include <tilepipe/runtime.cuh>
static_assert(TILEPIPE_RUNTIME_VERSION == 1,
              "rewritten by tilepipe 0.1.0 for tilepipe/runtime.cuh version 1, but the one included is "
              "version " TILEPIPE_RUNTIME_VERSION_STRING);

#line 4
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

__global__ void shifted_dots(double* out, const double* x, const double* y, int n) {
  alignas(128) __shared__ double sa_stages[3][256];
  alignas(128) __shared__ double sb_stages[3][256];
  __shared__ double warpSums[8];
  const int shift = blockIdx.x % blockDim.x;
  double acc = 0.0;
  int k = 0;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, however launched: one bulk copy (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (blockDim.x == sizeof(sa_stages[0]) / sizeof(sa_stages[0][0]) &&
        blockDim.x == sizeof(sb_stages[0]) / sizeof(sb_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto k_fetch = k;
      // Bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto k = k_fetch;
        for (int probe = 0; probe < 2 && (k < n); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned && ::tilepipe_rt::starts_on_16(x, (long long)(k + threadIdx.x));
            tiles_aligned = tiles_aligned && ::tilepipe_rt::starts_on_16(y, (long long)(k + threadIdx.x));
          }
          k += blockDim.x;
        }
        if (tiles_aligned) {
          for (int s = 0; s < 3; ++s)
            ::tilepipe_rt::init_barrier(stage_barriers[s], 1);
          ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared); // the copy engine sees the barriers
        }
      }
      // Each thread orders its earlier stores to global memory (generic proxy) before the reads of the
      // copy engine (async proxy) that the leader issues after this barrier, so that the copies see what
      // the block wrote before the loop: one fence.proxy.async.global per thread, once per entry. The
      // barrier also stands for the leading barrier of a loop of the rotated form.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_global);
      tensor_copies = __syncthreads_or(leader && tiles_aligned);
      if (tensor_copies) {
        int fetch_stage = 0;
        // In the leader: copies the tile under the fetch cursor into buffer fetch_stage (nothing past the end).
        auto issue_tile = [&]() {
          auto k = k_fetch;
          if (k < n) {
            { // the copy phase's own scope
              auto &sa = sa_stages[fetch_stage];
              auto &sb = sb_stages[fetch_stage];
              ::tilepipe_rt::bulk_copy(sa, x, (long long)(k + threadIdx.x), stage_barriers[fetch_stage]);
              ::tilepipe_rt::bulk_copy(sb, y, (long long)(k + threadIdx.x), stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(sa) + sizeof(sb));
            }
            k += blockDim.x;
            k_fetch = k;
          }
          fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
        };
        if (leader) // prologue: the copies of the first 2 tiles
          for (int prologue = 0; prologue < 2; ++prologue)
            issue_tile();
        unsigned parities = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage = 0;
        // Mainloop: compute on one tile while the leader's copies of the next ones land.
        while (k < n) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &sa = sa_stages[stage];
          auto &sb = sb_stages[stage];
          const double other = sb[(threadIdx.x + shift) % blockDim.x];
          acc += sa[threadIdx.x] * other + 0.5 * sa[(threadIdx.x + 1) % blockDim.x] * other;
          stage = stage + 1 == 3 ? 0 : stage + 1;
          k += blockDim.x;
        }
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
      auto k_fetch = k;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe.producer_acquire();
        auto k = k_fetch;
        if (k < n) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &sa = sa_stages[fetch_stage];
            auto &sb = sb_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using sa_index = decltype(+(k + threadIdx.x));
            const sa_index sa_base = (sa_index)(k + threadIdx.x) - (sa_index)threadIdx.x;
            if (sizeof(sa) % 16 == 0 &&
                blockDim.x == sizeof(sa) / sizeof(sa[0]) &&
                reinterpret_cast<unsigned long long>(&x[sa_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&sa[0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(sa) / 16; chunk += threads) {
                const unsigned col = chunk % (sizeof(sa) / 16) * (16 / sizeof(sa[0]));
                ::cuda::memcpy_async(&sa[col],
                                     &x[sa_base + (sa_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&sa[threadIdx.x], &x[k + threadIdx.x],
                                     ::cuda::aligned_size_t<sizeof(sa[0])>(sizeof(sa[0])), pipe);
            }
            using sb_index = decltype(+(k + threadIdx.x));
            const sb_index sb_base = (sb_index)(k + threadIdx.x) - (sb_index)threadIdx.x;
            if (sizeof(sb) % 16 == 0 &&
                blockDim.x == sizeof(sb) / sizeof(sb[0]) &&
                reinterpret_cast<unsigned long long>(&y[sb_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&sb[0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk_1 = rank; chunk_1 < sizeof(sb) / 16; chunk_1 += threads) {
                const unsigned col_1 = chunk_1 % (sizeof(sb) / 16) * (16 / sizeof(sb[0]));
                ::cuda::memcpy_async(&sb[col_1],
                                     &y[sb_base + (sb_index)col_1],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&sb[threadIdx.x], &y[k + threadIdx.x],
                                     ::cuda::aligned_size_t<sizeof(sb[0])>(sizeof(sb[0])), pipe);
            }
          }
          k += blockDim.x;
          k_fetch = k;
        }
        pipe.producer_commit();
        fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
      };
      __syncthreads(); // each thread copies chunks that other threads may have written before the loop
      // Prologue: the copies of the first 2 tiles.
      for (int prologue = 0; prologue < 2; ++prologue)
        issue_tile();
      int stage = 0;
      // Mainloop: compute on one tile while the next ones are copied.
      while (k < n) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &sa = sa_stages[stage];
        auto &sb = sb_stages[stage];
        const double other = sb[(threadIdx.x + shift) % blockDim.x];
        acc += sa[threadIdx.x] * other + 0.5 * sa[(threadIdx.x + 1) % blockDim.x] * other;
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
        k += blockDim.x;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &sa = sa_stages[0];
    auto &sb = sb_stages[0];
    while (k < n) {
      sa[threadIdx.x] = x[k + threadIdx.x];
      sb[threadIdx.x] = y[k + threadIdx.x];
      __syncthreads();
      const double other = sb[(threadIdx.x + shift) % blockDim.x];
      acc += sa[threadIdx.x] * other + 0.5 * sa[(threadIdx.x + 1) % blockDim.x] * other;
      __syncthreads();
      k += blockDim.x;
    }
  }
#endif
#line 153
  // Deterministic block reduction: warp shuffles, then warp 0's lane 0 sums in order.
  for (int off = 16; off > 0; off >>= 1)
    acc += __shfl_down_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0) warpSums[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += warpSums[w];
    out[blockIdx.x] = total;
  }
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int n, int blocks, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<double> hx((size_t)n), hy((size_t)n);
  for (auto& v : hx) v = rng.uniformd();
  for (auto& v : hy) v = rng.uniformd();
  double* dx = toDevice(hx);
  double* dy = toDevice(hy);
  double* dOut = poisonedOutput<double>((size_t)blocks);
  shifted_dots<<<blocks, 256>>>(dOut, dx, dy, n);
  checkLaunch();
  writeOutput(f, dOut, (size_t)blocks);
  printf("case %d: shifted_dots n=%d tiles=%d blocks=%d elements=%d\n", caseNo, n, n / 256, blocks,
         blocks);
  if (timeIt) timeKernel([&] { shifted_dots<<<blocks, 256>>>(dOut, dx, dy, n); });
  CK(cudaFree(dx));
  CK(cudaFree(dy));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 0, 5, false);            // 0 tiles
  runCase(f, seed, 1, 256, 7, false);          // 1 tile
  runCase(f, seed, 2, 512, 300, false);        // 2 tiles
  runCase(f, seed, 3, 768, 260, false);        // 3 tiles
  runCase(f, seed, 4, 256 * 64, 4096, false);  // 64 tiles, 4096 blocks
  runCase(f, seed, 5, 256 * 100, 6000, true);  // 100 tiles, 6000 blocks (timed)
  closeOutput(f);
  return 0;
}
