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

#line 12
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
  alignas(16) __shared__ float s_stages[3][T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int k = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto k_fetch = k;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto k = k_fetch;
      if (k < (boxes[bx].y & mask)) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          const int src = k == 0 ? bx : (nbr[bx * 128 + k] & 0x7fffffff) % nboxes;
          using s_index = decltype(+((size_t)src * T + tid));
          const s_index s_base = (s_index)((size_t)src * T + tid) - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &A[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[tid], &A[(size_t)src * T + tid],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          }
        }
        ++k;
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
    for (; k < (boxes[bx].y & mask); ++k) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
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
    for (int k = 0; k < (boxes[bx].y & mask); ++k) {
      const int src = k == 0 ? bx : (nbr[bx * 128 + k] & 0x7fffffff) % nboxes;
      s[tid] = A[(size_t)src * T + tid];
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
      __syncthreads();
    }
  }
#endif
#line 145
  C[bx * T + tid] = acc;
}

// The count again, with tiles of 512 floats: one bulk copy per tile on compute capability 9.0,
// issued by one thread for the block while the count, read by every thread, says a tile is there.
// Four blocks an SM hold the rewrite to the original's 32 registers (without the bound, the bulk
// copies' state takes 35, and three blocks of 512 threads fit where four did).
#define T2 512
__global__ void __launch_bounds__(512, 4)
    counted_bulk(const float* __restrict__ A, const int2* __restrict__ boxes, float* __restrict__ C, int mask) {
  alignas(128) __shared__ float s_stages[3][T2];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, however launched: one bulk copy (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    int k = 0;
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
      auto k_fetch = k;
      // Bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto k = k_fetch;
        for (int probe = 0; probe < 2 && (k < (boxes[bx].y & mask)); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)(((size_t)(bx % 1024) * 32 + k) * T2 + tid));
          }
          ++k;
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
          auto k = k_fetch;
          if (k < (boxes[bx].y & mask)) {
            { // the copy phase's own scope
              auto &s = s_stages[fetch_stage];
              ::tilepipe_rt::bulk_copy(s, A, (long long)(((size_t)(bx % 1024) * 32 + k) * T2 + tid),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(s));
            }
            ++k;
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
        for (; k < (boxes[bx].y & mask); ++k) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &s = s_stages[stage];
          for (int j = 0; j < 4; ++j)
            acc = mix(acc, s[(tid + 37 * j) % T2], s[(3 * tid + j) % T2]);
          stage = stage + 1 == 3 ? 0 : stage + 1;
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
        if (k < (boxes[bx].y & mask)) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &s = s_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using s_index = decltype(+(((size_t)(bx % 1024) * 32 + k) * T2 + tid));
            const s_index s_base = (s_index)(((size_t)(bx % 1024) * 32 + k) * T2 + tid)
                - (s_index)threadIdx.x;
            if (sizeof(s) % 16 == 0 &&
                blockDim.x == sizeof(s) / sizeof(s[0]) &&
                reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&s[0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
                const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
                ::cuda::memcpy_async(&s[col],
                                     &A[s_base + (s_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&s[tid], &A[((size_t)(bx % 1024) * 32 + k) * T2 + tid],
                                     ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
            }
          }
          ++k;
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
      for (; k < (boxes[bx].y & mask); ++k) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &s = s_stages[stage];
        for (int j = 0; j < 4; ++j)
          acc = mix(acc, s[(tid + 37 * j) % T2], s[(3 * tid + j) % T2]);
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int k = 0; k < (boxes[bx].y & mask); ++k) {
      s[tid] = A[((size_t)(bx % 1024) * 32 + k) * T2 + tid];
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % T2], s[(3 * tid + j) % T2]);
      __syncthreads();
    }
  }
#endif
#line 167
  C[bx * T2 + tid] = acc;
}

// The toolkit's read-only load, for the count and for the copy into the tile: `__ldg(&A[i])` is the
// read A[i] to the copies.
__global__ void ldg_copy(const float* __restrict__ A, const int* __restrict__ nbr, float* __restrict__ C, int mask) {
  __shared__ float s[T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int k = 0;
    float s_next[4];
    auto k_fetch = k;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto k = k_fetch;
      if (k < (__ldg(&nbr[bx * 128]) & mask)) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          s_next[slot] = __ldg(&A[((size_t)bx * 128 + k) * T + tid]);
        }
        ++k;
        k_fetch = k;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        s[tid] = s_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        for (int j = 0; j < 4; ++j)
          acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      ++k;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (k < (__ldg(&nbr[bx * 128]) & mask)) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(k < (__ldg(&nbr[bx * 128]) & mask)))
          break;
        trip(slot);
      }
    }
  }
#line 184
  C[bx * T + tid] = acc;
}

// __ldg through a local: each thread's element read into a register with the read-only load,
// then stored; the copy reads A's element itself.
__global__ void ldg_local(const float* __restrict__ A, const int* __restrict__ nbr, float* __restrict__ C, int mask) {
  __shared__ float s_stages[3][T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int k = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto k_fetch = k;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto k = k_fetch;
      if (k < (__ldg(&nbr[bx * 128]) & mask)) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          ::cuda::memcpy_async(&s[tid], &(A[((size_t)bx * 128 + k) * T + T - 1 - tid]),
                               ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
        }
        ++k;
        k_fetch = k;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; k < (__ldg(&nbr[bx * 128]) & mask); ++k) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int k = 0; k < (__ldg(&nbr[bx * 128]) & mask); ++k) {
      const float v = __ldg(&A[((size_t)bx * 128 + k) * T + T - 1 - tid]);
      s[tid] = v;
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
      __syncthreads();
    }
  }
#endif
#line 203
  C[bx * T + tid] = acc;
}

__constant__ int c_tiles;

// The trip count in __constant__ memory, which device code cannot write.
__global__ void constant_trips(const float* __restrict__ A, float* __restrict__ C) {
  __shared__ float s[T];
  const int tid = threadIdx.x;
  float acc = 0.0f;
  // EXPECT: pipelined
  // tilepipe: register-staged prefetch, 4 tiles ahead. Each thread holds its elements of the next 4 tiles in
  // registers, one set per tile; it stores a set into the tile where the copy phase did, and the tile keeps its one buffer.
  {
    int k = 0;
    float s_next[4];
    auto k_fetch = k;
    // Loads this thread's elements of the tile under the fetch cursor into set slot (nothing past the end).
    auto load_next_tile = [&](int slot) {
      auto k = k_fetch;
      if (k < c_tiles) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          s_next[slot] = A[((size_t)blockIdx.x * c_tiles + k) * T + tid];
        }
        ++k;
        k_fetch = k;
      }
    };
    // One trip of the loop, on the tile in set slot, whose loads then fetch the tile 4 ahead.
    auto trip = [&](int slot) {
      { // the loop body's scope: its names end before the loop's increment
        s[tid] = s_next[slot];
        __syncthreads(); // the tile is published
        load_next_tile(slot); // in flight during the next 4 computes
        for (int j = 0; j < 4; ++j)
          acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
        __syncthreads(); // no thread still reads the tile when it is stored again
      }
      ++k;
    };
    // Prologue: the first 4 tiles.
#pragma unroll
    for (int slot = 0; slot < 4; ++slot)
      load_next_tile(slot);
    // Mainloop, unrolled by 4: each set's index is a constant, so that the sets stay in registers.
    while (k < c_tiles) {
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        if (slot > 0 && !(k < c_tiles))
          break;
        trip(slot);
      }
    }
  }
#line 221
  C[blockIdx.x * T + tid] = acc;
}

// The count through a plain pointer: unchanged only because the loop assumes that no other
// pointer reaches it (and the kernel writes nothing through it).
__global__ void noalias_count(const float* A, const int2* boxes, float* C, int mask) {
  alignas(16) __shared__ float s_stages[3][T];
  const int bx = blockIdx.x, tid = threadIdx.x;
  float acc = 0.0f;
  // tilepipe: plan=always
  // tilepipe: assume-noalias=true
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int k = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto k_fetch = k;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto k = k_fetch;
      if (k < (boxes[bx].y & mask)) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+(((size_t)bx * 128 + k) * T + tid));
          const s_index s_base = (s_index)(((size_t)bx * 128 + k) * T + tid) - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&A[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &A[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[tid], &A[((size_t)bx * 128 + k) * T + tid],
                                   ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
          }
        }
        ++k;
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
    for (; k < (boxes[bx].y & mask); ++k) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int k = 0; k < (boxes[bx].y & mask); ++k) {
      s[tid] = A[((size_t)bx * 128 + k) * T + tid];
      __syncthreads();
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tid + 37 * j) % T], s[(3 * tid + j) % T]);
      __syncthreads();
    }
  }
#endif
#line 240
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
