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


#define T 64

// Rounded operations, which nvcc never contracts: the rewrite's unrolled trips may be contracted
// otherwise than the original's loop, and the outputs compare bit for bit.
__device__ float mix(float acc, float a, float b) { return __fadd_rn(__fmul_rn(acc, 0.5f), __fmul_rn(a, b)); }

// lavaMD's loop, its locals declared at the top: the home box (k = 0), then as many neighbours as
// the box's count says (masked: 0 to mask), each tile T floats of the box the list names.
__global__ void neighbour_boxes(const float* __restrict__ rv, const int2* __restrict__ box,
                                const int* __restrict__ nei, float* __restrict__ out, int nboxes, int mask) {
  alignas(16) __shared__ float sB_stages[3][T];
  int bx = blockIdx.x, tx = threadIdx.x;
  int pointer;
  int first_j;
  const float* rB;
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
      if (k < 1 + (box[bx].y & mask)) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &sB = sB_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          if (k == 0) {
            pointer = bx;
          } else {
            pointer = (nei[bx * 128 + k - 1] & 0x7fffffff) % nboxes;
          }
          first_j = pointer * T;
          rB = &rv[first_j];
          using sB_index = decltype(+(tx));
          const sB_index sB_base = (sB_index)(tx) - (sB_index)threadIdx.x;
          if (sizeof(sB) % 16 == 0 &&
              blockDim.x == sizeof(sB) / sizeof(sB[0]) &&
              reinterpret_cast<unsigned long long>(&rB[sB_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&sB[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(sB) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(sB) / 16) * (16 / sizeof(sB[0]));
              ::cuda::memcpy_async(&sB[col],
                                   &rB[sB_base + (sB_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&sB[tx], &rB[tx],
                                   ::cuda::aligned_size_t<sizeof(sB[0])>(sizeof(sB[0])), pipe);
          }
        }
        k++;
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
    for (; k < 1 + (box[bx].y & mask); k++) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &sB = sB_stages[stage];
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, sB[(tx + 13 * j) % T], sB[(3 * tx + j) % T]);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &sB = sB_stages[0];
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
  }
#endif
#line 154
  out[bx * T + tx] = acc;
}

// A matrix multiply of 16 x 16 tiles, C-style: a and b, the tiles' offsets, set each iteration.
__global__ void c_style_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                               int wA, int wB) {
  alignas(16) __shared__ float As_stages[3][16][16];
  alignas(16) __shared__ float Bs_stages[3][16][16];
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int a, b, t;
  float sum = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < wA / 16) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &As = As_stages[fetch_stage];
          auto &Bs = Bs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          a = wA * 16 * by + 16 * t;
          b = 16 * bx + 16 * wB * t;
          using As_index = decltype(+(a + wA * ty + tx));
          const As_index As_base = (As_index)(a + wA * ty + tx)
              - (As_index)threadIdx.y * (As_index)(wA)
              - (As_index)threadIdx.x;
          if (sizeof(As[0]) % 16 == 0 &&
              blockDim.y == sizeof(As) / sizeof(As[0]) &&
              blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
              (wA) % (16 / sizeof(As[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&A[As_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
              const unsigned row0 = chunk / (sizeof(As[0]) / 16);
              const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
              ::cuda::memcpy_async(&As[row0][col],
                                   &A[As_base + (As_index)row0 * (As_index)(wA) + (As_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&As[ty][tx], &A[a + wA * ty + tx],
                                   ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
          }
          using Bs_index = decltype(+(b + wB * ty + tx));
          const Bs_index Bs_base = (Bs_index)(b + wB * ty + tx)
              - (Bs_index)threadIdx.y * (Bs_index)(wB)
              - (Bs_index)threadIdx.x;
          if (sizeof(Bs[0]) % 16 == 0 &&
              blockDim.y == sizeof(Bs) / sizeof(Bs[0]) &&
              blockDim.x == sizeof(Bs[0]) / sizeof(Bs[0][0]) &&
              (wB) % (16 / sizeof(Bs[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&B[Bs_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&Bs[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk_1 = rank; chunk_1 < sizeof(Bs) / 16; chunk_1 += threads) {
              const unsigned row0_1 = chunk_1 / (sizeof(Bs[0]) / 16);
              const unsigned col_1 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
              ::cuda::memcpy_async(&Bs[row0_1][col_1],
                                   &B[Bs_base + (Bs_index)row0_1 * (Bs_index)(wB) + (Bs_index)col_1],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&Bs[ty][tx], &B[b + wB * ty + tx],
                                   ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
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
    for (; t < wA / 16; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &As = As_stages[stage];
      auto &Bs = Bs_stages[stage];
      for (int k = 0; k < 16; ++k)
        sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
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
  }
#endif
#line 177
  C[(by * 16 + ty) * wB + bx * 16 + tx] = sum;
}

// The counter declared with the other locals and started by the loop's init, `for (t = 0; ...)`:
// its start is the init's value, the same in every thread, so the tiles may take tensor copies.
__global__ void c_style_counter(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                int wA, int wB, const __grid_constant__ ::tilepipe_rt::TileMap As_tmap = ::tilepipe_rt::TileMap{}, const __grid_constant__ ::tilepipe_rt::TileMap Bs_tmap = ::tilepipe_rt::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ float As_stages[3][16][16];
  alignas(128) __shared__ float Bs_stages[3][16][16];
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int t;
  float sum = 0.0f;
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, launched with tensor maps: one tensor copy (TMA) per tile, issued by one thread; else cp.async copies.
  // The compute phase stands once in each path, as written, so that each path compiles the loop body as the original
  // did, with the tile names bound to its own stage buffers.
  {
    t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (tilepipe_tma &&
        ::tilepipe_rt::takes(As_tmap, As_stages[0]) &&
        ::tilepipe_rt::takes(Bs_tmap, Bs_stages[0]) &&
        blockDim.y == sizeof(As_stages[0]) / sizeof(As_stages[0][0]) &&
        blockDim.x == sizeof(As_stages[0][0]) / sizeof(As_stages[0][0][0]) &&
        blockDim.y == sizeof(Bs_stages[0]) / sizeof(Bs_stages[0][0]) &&
        blockDim.x == sizeof(Bs_stages[0][0]) / sizeof(Bs_stages[0][0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Tensor copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < wA / 16); ++probe) {
          { // the copy phase's own scope
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(A, (long long)(wA * 16 * by + 16 * t + wA * ty + tx));
            tiles_aligned = tiles_aligned &&
                            ::tilepipe_rt::starts_on_16(B, (long long)(16 * bx + 16 * wB * t + wB * ty + tx));
          }
          ++t;
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
          auto t = t_fetch;
          if (t < wA / 16) {
            { // the copy phase's own scope
              auto &As = As_stages[fetch_stage];
              auto &Bs = Bs_stages[fetch_stage];
              ::tilepipe_rt::copy_tile(As_tmap, As, A, (long long)(wA * 16 * by + 16 * t + wA * ty + tx),
                                       stage_barriers[fetch_stage]);
              ::tilepipe_rt::copy_tile(Bs_tmap, Bs, B, (long long)(16 * bx + 16 * wB * t + wB * ty + tx),
                                       stage_barriers[fetch_stage]);
              (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                      sizeof(As) + sizeof(Bs));
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
        for (; t < wA / 16; ++t) {
          ::tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &As = As_stages[stage];
          auto &Bs = Bs_stages[stage];
          for (int k = 0; k < 16; ++k)
            sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
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
        if (t < wA / 16) {
          { // the copy phase's own scope, as in the loop body: its names end before the increment
            auto &As = As_stages[fetch_stage];
            auto &Bs = Bs_stages[fetch_stage];
            const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
            const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
            using As_index = decltype(+(wA * 16 * by + 16 * t + wA * ty + tx));
            const As_index As_base = (As_index)(wA * 16 * by + 16 * t + wA * ty + tx)
                - (As_index)threadIdx.y * (As_index)(wA)
                - (As_index)threadIdx.x;
            if (sizeof(As[0]) % 16 == 0 &&
                blockDim.y == sizeof(As) / sizeof(As[0]) &&
                blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
                (wA) % (16 / sizeof(As[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&A[As_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
                const unsigned row0 = chunk / (sizeof(As[0]) / 16);
                const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
                ::cuda::memcpy_async(&As[row0][col],
                                     &A[As_base + (As_index)row0 * (As_index)(wA) + (As_index)col],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&As[ty][tx], &A[wA * 16 * by + 16 * t + wA * ty + tx],
                                     ::cuda::aligned_size_t<sizeof(As[0][0])>(sizeof(As[0][0])), pipe);
            }
            using Bs_index = decltype(+(16 * bx + 16 * wB * t + wB * ty + tx));
            const Bs_index Bs_base = (Bs_index)(16 * bx + 16 * wB * t + wB * ty + tx)
                - (Bs_index)threadIdx.y * (Bs_index)(wB)
                - (Bs_index)threadIdx.x;
            if (sizeof(Bs[0]) % 16 == 0 &&
                blockDim.y == sizeof(Bs) / sizeof(Bs[0]) &&
                blockDim.x == sizeof(Bs[0]) / sizeof(Bs[0][0]) &&
                (wB) % (16 / sizeof(Bs[0][0])) == 0 &&
                reinterpret_cast<unsigned long long>(&B[Bs_base]) % 16 == 0 &&
                __cvta_generic_to_shared(&Bs[0][0]) % 16 == 0) {
              // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
              for (unsigned chunk_1 = rank; chunk_1 < sizeof(Bs) / 16; chunk_1 += threads) {
                const unsigned row0_1 = chunk_1 / (sizeof(Bs[0]) / 16);
                const unsigned col_1 = chunk_1 % (sizeof(Bs[0]) / 16) * (16 / sizeof(Bs[0][0]));
                ::cuda::memcpy_async(&Bs[row0_1][col_1],
                                     &B[Bs_base + (Bs_index)row0_1 * (Bs_index)(wB) + (Bs_index)col_1],
                                     ::cuda::aligned_size_t<16>(16), pipe);
              }
            } else {
              if (threadIdx.z == 0) // the others copy the same elements
                ::cuda::memcpy_async(&Bs[ty][tx], &B[16 * bx + 16 * wB * t + wB * ty + tx],
                                     ::cuda::aligned_size_t<sizeof(Bs[0][0])>(sizeof(Bs[0][0])), pipe);
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
      for (; t < wA / 16; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &As = As_stages[stage];
        auto &Bs = Bs_stages[stage];
        for (int k = 0; k < 16; ++k)
          sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      // Drain: only empty groups remain; wait for them anyway.
      ::cuda::pipeline_consumer_wait_prior<0>(pipe);
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &As = As_stages[0];
    auto &Bs = Bs_stages[0];
    for (t = 0; t < wA / 16; ++t) {
      As[ty][tx] = A[wA * 16 * by + 16 * t + wA * ty + tx];
      Bs[ty][tx] = B[16 * bx + 16 * wB * t + wB * ty + tx];
      __syncthreads();
      for (int k = 0; k < 16; ++k)
        sum = __fadd_rn(sum, __fmul_rn(As[ty][k], Bs[k][tx]));
      __syncthreads();
    }
  }
#endif
#line 199
  C[(by * 16 + ty) * wB + bx * 16 + tx] = sum;
}

// tilepipe: launches c_style_counter with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_c_style_counter 1
static void tilepipe_launch_c_style_counter(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int wA, int wB) {
  ::tilepipe_rt::TileMap As_tmap = {};
  ::tilepipe_rt::TileMap Bs_tmap = {};
  bool tma = ::tilepipe_rt::available();
  tma = tma && ::tilepipe_rt::encode(&As_tmap, A, sizeof(float), (long long)(wA), (long long)(16), (long long)(16));
  tma = tma && ::tilepipe_rt::encode(&Bs_tmap, B, sizeof(float), (long long)(wB), (long long)(16), (long long)(16));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_rt::trace("tilepipe_launch_c_style_counter", tma, traced);
  ::c_style_counter<<<grid, block, shared_bytes, stream>>>(A, B, C, wA, wB, As_tmap, Bs_tmap, tma);
}
#line 201

// A local chosen per thread: odd threads copy from the tile's start, even ones 4 elements on.
__global__ void chosen_per_thread(const float* __restrict__ A, float* __restrict__ out, int nt) {
  __shared__ float s_stages[3][T];
  int tx = threadIdx.x, a;
  float acc = 0.0f;
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
      if (t < nt) {
        { // the copy phase's own scope, as in the loop body: its names end before the increment
          auto &s = s_stages[fetch_stage];
          if (tx % 2)
            a = ((size_t)blockIdx.x * nt + t) * (T + 4);
          else
            a = ((size_t)blockIdx.x * nt + t) * (T + 4) + 4;
          ::cuda::memcpy_async(&s[tx], &A[a + tx],
                               ::cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);
        }
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    // Prologue: the copies of the first 2 tiles.
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    // Mainloop: compute on one tile while the next ones are copied.
    for (; t < nt; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      for (int j = 0; j < 4; ++j)
        acc = mix(acc, s[(tx + 13 * j) % T], s[(3 * tx + j) % T]);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    // Drain: only empty groups remain; wait for them anyway.
    ::cuda::pipeline_consumer_wait_prior<0>(pipe);
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
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
  }
#endif
#line 220
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
  runKernel(f, (size_t)hA * wB, [&](float* dC) { ::tilepipe_launch_c_style_counter(dim3(wB / 16, hA / 16), dim3(16, 16), 0, 0, dA, dB, dC, wA, wB); });
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
