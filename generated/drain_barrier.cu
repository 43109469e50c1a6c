// drain_barrier.cu: tiled loops whose compute phase writes memory that other threads read after
// the loop. In block_totals each thread adds into its own element of another __shared__ array,
// red[], and after the loop thread 0 sums red[]; in neighbour_means each thread writes its own
// element of a global row, and after the loop reads its neighbour's. In the original the trailing
// barrier of the last iteration orders those writes before the reads; the rewrite must keep a
// barrier after the loop. own_totals is the close safe form: each thread reads back only what it
// wrote itself. block_totals has tiles of 2 KiB (bulk copies on sm_90), the others cp.async.
// Its loops carry `// tilepipe: plan=always`: they exist to hold emission to its barrier
// obligation; the cost model alone would not pipeline the loop with 512-byte stages.
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

#line 10
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

#define T 512  // block_totals, own_totals: == blockDim.x
#define T2 128 // neighbour_means: == blockDim.x

__global__ void block_totals(float* out, const float* in, int numTiles) {
  alignas(128) __shared__ float s_stages[3][T];
  __shared__ float red[T];
  red[threadIdx.x] = 0.0f;
  __syncthreads();
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, however launched: one bulk copy (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (blockDim.x == sizeof(s_stages[0]) / sizeof(s_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < numTiles); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(in, (long long)((blockIdx.x * numTiles + t) * T + threadIdx.x));
          }
          ++t;
        }
        if (tiles_aligned) {
          for (int s_1 = 0; s_1 < 3; ++s_1)
            ::tilepipe_rt::init_barrier(stage_barriers[s_1], 1);
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
          auto t = t_fetch;
          if (t < numTiles) {
            { // the copy phase's own scope
              auto &s = s_stages[fetch_stage];
              ::tilepipe_rt::bulk_copy(s, in, (long long)((blockIdx.x * numTiles + t) * T + threadIdx.x),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(s));
            }
            ++t;
            t_fetch = t;
          }
          fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
        };
        if (leader) // prologue: the copies of the first 2 tiles
          for (int prologue = 0; prologue < 2; ++prologue)
            issue_tile();
        unsigned parities = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage = 0;
        // Mainloop: compute on one tile while the leader's copies of the next ones land.
        for (; t < numTiles; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &s = s_stages[stage];
          red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
        __syncthreads(); // the loop's writes to memory are seen by every thread after it
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
      auto t_fetch = t;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe.producer_acquire();
        auto t = t_fetch;
        if (t < numTiles) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &s = s_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using s_index = decltype(+((blockIdx.x * numTiles + t) * T + threadIdx.x));
            const s_index s_base = (s_index)((blockIdx.x * numTiles + t) * T + threadIdx.x)
                - (s_index)threadIdx.x;
            if (sizeof(s) % 16 == 0 &&
                blockDim.x == sizeof(s) / sizeof(s[0]) &&
                reinterpret_cast<unsigned long long>(&in[s_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&s[0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
                const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
                ::cuda::memcpy_async(&s[col],
                                     &in[s_base + (s_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&s[threadIdx.x], &in[(blockIdx.x * numTiles + t) * T + threadIdx.x],
                                     ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
            }
          }
          ++t;
          t_fetch = t;
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
      for (; t < numTiles; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &s = s_stages[stage];
        red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
      __syncthreads(); // the loop's writes to memory are seen by every thread after it
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      s[threadIdx.x] = in[(blockIdx.x * numTiles + t) * T + threadIdx.x];
      __syncthreads();
      red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
      __syncthreads();
    }
  }
#endif
#line 157
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int i = 0; i < T; ++i) sum += red[i];
    out[blockIdx.x] = sum;
  }
}

__global__ void own_totals(float* out, const float* in, int numTiles) {
  alignas(128) __shared__ float s_stages[3][T];
  __shared__ float red[T];
  red[threadIdx.x] = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, however launched: one bulk copy (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (blockDim.x == sizeof(s_stages[0]) / sizeof(s_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < numTiles); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(in, (long long)((blockIdx.x * numTiles + t) * T + threadIdx.x));
          }
          ++t;
        }
        if (tiles_aligned) {
          for (int s_1 = 0; s_1 < 3; ++s_1)
            ::tilepipe_rt::init_barrier(stage_barriers[s_1], 1);
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
          auto t = t_fetch;
          if (t < numTiles) {
            { // the copy phase's own scope
              auto &s = s_stages[fetch_stage];
              ::tilepipe_rt::bulk_copy(s, in, (long long)((blockIdx.x * numTiles + t) * T + threadIdx.x),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(s));
            }
            ++t;
            t_fetch = t;
          }
          fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
        };
        if (leader) // prologue: the copies of the first 2 tiles
          for (int prologue = 0; prologue < 2; ++prologue)
            issue_tile();
        unsigned parities = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage = 0;
        // Mainloop: compute on one tile while the leader's copies of the next ones land.
        for (; t < numTiles; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &s = s_stages[stage];
          red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
        __syncthreads(); // the loop's writes to memory are seen by every thread after it
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
      auto t_fetch = t;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe.producer_acquire();
        auto t = t_fetch;
        if (t < numTiles) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &s = s_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using s_index = decltype(+((blockIdx.x * numTiles + t) * T + threadIdx.x));
            const s_index s_base = (s_index)((blockIdx.x * numTiles + t) * T + threadIdx.x)
                - (s_index)threadIdx.x;
            if (sizeof(s) % 16 == 0 &&
                blockDim.x == sizeof(s) / sizeof(s[0]) &&
                reinterpret_cast<unsigned long long>(&in[s_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&s[0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
                const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
                ::cuda::memcpy_async(&s[col],
                                     &in[s_base + (s_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&s[threadIdx.x], &in[(blockIdx.x * numTiles + t) * T + threadIdx.x],
                                     ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
            }
          }
          ++t;
          t_fetch = t;
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
      for (; t < numTiles; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &s = s_stages[stage];
        red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
      __syncthreads(); // the loop's writes to memory are seen by every thread after it
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      s[threadIdx.x] = in[(blockIdx.x * numTiles + t) * T + threadIdx.x];
      __syncthreads();
      red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
      __syncthreads();
    }
  }
#endif
#line 175
  out[blockIdx.x * T + threadIdx.x] = red[threadIdx.x];
}

__global__ void neighbour_means(float* out, float* row, const float* in, int numTiles) {
  alignas(16) __shared__ float s_stages[3][T2];
  row[blockIdx.x * T2 + threadIdx.x] = 0.0f;
  __syncthreads();
  // row is not in: the launches below pass separate buffers. (Not __restrict__: row is written and
  // read by other threads, which __restrict__ would let the compiler ignore.)
  // tilepipe: assume-noalias=true
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < numTiles) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+((blockIdx.x * numTiles + t) * T2 + threadIdx.x));
          const s_index s_base = (s_index)((blockIdx.x * numTiles + t) * T2 + threadIdx.x)
              - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&in[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &in[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[threadIdx.x], &in[(blockIdx.x * numTiles + t) * T2 + threadIdx.x],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          }
        }
        ++t;
        t_fetch = t;
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
    for (; t < numTiles; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      row[blockIdx.x * T2 + threadIdx.x] += 0.5f * (s[threadIdx.x] + s[(threadIdx.x + 1) % T2]);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads(); // the loop's writes to memory are seen by every thread after it
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      s[threadIdx.x] = in[(blockIdx.x * numTiles + t) * T2 + threadIdx.x];
      __syncthreads();
      row[blockIdx.x * T2 + threadIdx.x] += 0.5f * (s[threadIdx.x] + s[(threadIdx.x + 1) % T2]);
      __syncthreads();
    }
  }
#endif
#line 193
  out[blockIdx.x * T2 + threadIdx.x] = row[blockIdx.x * T2 + (threadIdx.x + 1) % T2];
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> h = randomFloats((size_t)blocks * numTiles * T, rng);
  std::vector<float> h2 = randomFloats((size_t)blocks * numTiles * T2, rng);
  float* d = toDevice(h);
  float* d2 = toDevice(h2);
  float* dTotals = poisonedOutput<float>(blocks);
  float* dOwn = poisonedOutput<float>((size_t)blocks * T);
  float* dMeans = poisonedOutput<float>((size_t)blocks * T2);
  float* dRow = poisonedOutput<float>((size_t)blocks * T2);
  block_totals<<<blocks, T>>>(dTotals, d, numTiles);
  checkLaunch();
  own_totals<<<blocks, T>>>(dOwn, d, numTiles);
  checkLaunch();
  neighbour_means<<<blocks, T2>>>(dMeans, dRow, d2, numTiles);
  checkLaunch();
  writeOutput(f, dTotals, blocks);
  writeOutput(f, dOwn, (size_t)blocks * T);
  writeOutput(f, dMeans, (size_t)blocks * T2);
  printf("case %d: block_totals, own_totals, neighbour_means blocks=%d tiles=%d\n", caseNo, blocks, numTiles);
  if (timeIt) {
    timeKernel([&] { block_totals<<<blocks, T>>>(dTotals, d, numTiles); });
    timeKernel([&] { neighbour_means<<<blocks, T2>>>(dMeans, dRow, d2, numTiles); });
  }
  CK(cudaFree(d));
  CK(cudaFree(d2));
  CK(cudaFree(dTotals));
  CK(cudaFree(dOwn));
  CK(cudaFree(dMeans));
  CK(cudaFree(dRow));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 3, 0, false);     // 0 tiles
  runCase(f, seed, 1, 5, 1, false);     // 1 tile
  runCase(f, seed, 2, 7, 2, false);     // 2 tiles
  runCase(f, seed, 3, 9, 3, false);     // 3 tiles
  runCase(f, seed, 4, 2048, 64, true);  // 2048 blocks x 64 tiles (timed)
  closeOutput(f);
  return 0;
}
