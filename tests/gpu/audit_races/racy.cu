// racy.cu: hand-written asynchronous copies with the mistakes tilepipe audit reports, written as
// whole programs that run: every stage is filled before it is read, every copy is guarded by the
// tile count, and all kernels compute the same result, so one reference checks them all. Block b,
// thread i: out[b * 256 + i] = sum over tiles t < n, k < K of A[t * 256 + (i + k) % 256] * (k + 1),
// added in that order, where A is the block's own slice of the input (slice b % S of S = 1024 slices of
// n tiles, so that copies come from DRAM, not from a cache line another block brought in). K sets
// the length of the compute phase: the overruns need a long one (a slow thread still reads when a
// fast one refills), the early reads a short one.
// tests/gpu/audit_races/run.sh applies the audit's fix-its to this file (fixed.cu) and runs both.
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/ptx>
#include <cuda_pipeline.h>

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

constexpr int N = 4;

__device__ __forceinline__ float tileSum(const float *s, int tid, int K) {
  float acc = 0;
  for (int k = 0; k < K; ++k)
    acc += s[(tid + k) & 255] * static_cast<float>(k + 1);
  return acc;
}

// cuda::pipeline of thread scope, 3 tiles ahead into 4 buffers, issued before the barrier, no
// barrier after the read.
__global__ void pipeline_overrun(const float *A, float *C, int n, int K, int slices) {
  A += size_t(blockIdx.x % slices) * n * 256;
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  for (int t = 0; t < N - 1; ++t) {
    pipe.producer_acquire();
    if (t < n)
      cuda::memcpy_async(&s[t][tid], &A[t * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    if (t + N - 1 < n)
      cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += tileSum(s[t % N], tid, K);
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The primitives of cuda_pipeline.h, the same schedule.
__global__ void primitives_overrun(const float *A, float *C, int n, int K, int slices) {
  A += size_t(blockIdx.x % slices) * n * 256;
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  for (int t = 0; t < N - 1; ++t) {
    if (t < n)
      __pipeline_memcpy_async(&s[t][tid], &A[t * 256 + tid], sizeof(float));
    __pipeline_commit();
  }
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (t + N - 1 < n)
      __pipeline_memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(N - 1);
    __syncthreads();
    acc += tileSum(s[t % N], tid, K);
  }
  C[blockIdx.x * 256 + tid] = acc;
}

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async4(void *smem, const void *gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int W> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(W)); }

// cp.async in inline assembly, wrapped in helpers, the same schedule.
__global__ void asm_overrun(const float *A, float *C, int n, int K, int slices) {
  A += size_t(blockIdx.x % slices) * n * 256;
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  for (int t = 0; t < N - 1; ++t) {
    if (t < n)
      cp_async4(&s[t][tid], &A[t * 256 + tid]);
    cp_commit();
  }
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (t + N - 1 < n)
      cp_async4(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid]);
    cp_commit();
    cp_wait<N - 1>();
    __syncthreads();
    acc += tileSum(s[t % N], tid, K);
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Three tiles ahead, but the wait leaves the newest 4 groups in flight: tile t's among them.
__global__ void wait_count(const float *A, float *C, int n, int K, int slices) {
  A += size_t(blockIdx.x % slices) * n * 256;
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  for (int t = 0; t < N - 1; ++t) {
    pipe.producer_acquire();
    if (t < n)
      cuda::memcpy_async(&s[t][tid], &A[t * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    if (t + N - 1 < n)
      cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N>(pipe);
    __syncthreads();
    acc += tileSum(s[t % N], tid, K);
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The commit under the tile's bound: the last iterations commit nothing, so the wait for all but
// the newest 3 groups leaves the tile read in flight.
__global__ void commit_under_bound(const float *A, float *C, int n, int K, int slices) {
  A += size_t(blockIdx.x % slices) * n * 256;
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  for (int t = 0; t < N - 1; ++t) {
    pipe.producer_acquire();
    if (t < n)
      cuda::memcpy_async(&s[t][tid], &A[t * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (t + N - 1 < n) {
      pipe.producer_acquire();
      cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
      pipe.producer_commit();
    }
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += tileSum(s[t % N], tid, K);
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Copies of the whole block completing on a cuda::barrier per stage, two stages: the copy of tile
// t + 1 refills the buffer of tile t - 1 before this iteration's arrive_and_wait, while a slower
// thread may still read tile t - 1.
__global__ void barrier_overrun(const float *A, float *C, int n, int K, int slices) {
  A += size_t(blockIdx.x % slices) * n * 256;
  alignas(16) __shared__ float s[2][256];
  __shared__ block_barrier bar[2];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    for (int i = 0; i < 2; ++i)
      init(&bar[i], block.size());
  block.sync();
  if (n > 0)
    cuda::memcpy_async(block, s[0], A, cuda::aligned_size_t<16>(1024), bar[0]);
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (t + 1 < n)
      cuda::memcpy_async(block, s[(t + 1) % 2], A + (t + 1) * 256, cuda::aligned_size_t<16>(1024), bar[(t + 1) % 2]);
    bar[t % 2].arrive_and_wait();
    acc += tileSum(s[t % 2], threadIdx.x, K);
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}

// The form of CUDA's guide: a prologue of N - 1 tiles whose counter the main loop carries on, and
// consumer_wait; the copy 3 tiles ahead is issued before the wait and its barrier, and no barrier
// follows the read.
__global__ void carried_overrun(const float *A, float *C, int n, int K, int slices) {
  A += size_t(blockIdx.x % slices) * n * 256;
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  int tf = 0;
  for (int k = 0; k < N - 1; ++k, ++tf) {
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % N][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % N][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    ++tf;
    pipe.consumer_wait();
    __syncthreads();
    acc += tileSum(s[t % N], tid, K);
    pipe.consumer_release();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Bulk copies (TMA) into 2 stages, each tile in two halves of 512 bytes on its own mbarrier (one
// per tile: a broken phase cannot upset the next), whose expectation counts one half. The phase
// then completes early (once the first half has landed, and the threads read the second too soon),
// or never (where the two halves' bytes are counted at once, past zero): a wait gives up after
// about 2 ms, so that the broken phase shows as a wrong result, not as a hang. Before it ends, the
// block gives the copies it may have left in flight 20 us to land in its shared memory.
__device__ bool waitBounded(uint64_t *Bar) {
  const long long Start = clock64();
  while (!cuda::ptx::mbarrier_try_wait_parity(Bar, 0))
    if (clock64() - Start > 4000000)
      return false;
  return true;
}

__global__ void tx_bytes_short(const float *A, float *C, int n, int K, int slices) {
  A += size_t(blockIdx.x % slices) * n * 256;
  alignas(128) __shared__ float s[2][256];
  __shared__ uint64_t full[64];
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int t = 0; t < 64; ++t)
      cuda::ptx::mbarrier_init(&full[t], 1);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  float acc = 0;
  for (int t = 0; t < n && t < 64; ++t) {
    const int b = t & 1;
    if (tid == 0) {
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &full[t], 512);
      cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, &s[b][0], &A[t * 256], 512, &full[t]);
      cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, &s[b][128], &A[t * 256 + 128], 512,
                               &full[t]);
    }
    (void)waitBounded(&full[t]);
    acc += tileSum(s[b], tid, K);
    __syncthreads(); // the buffer is refilled two iterations on
  }
  if (tid == 0)
    for (int i = 0; i < 20; ++i)
      __nanosleep(1000);
  C[blockIdx.x * 256 + tid] = acc;
}

// What the harness runs, in order.
#define TPV_AUDIT_KERNELS(X)                                                                         \
  X(pipeline_overrun) X(primitives_overrun) X(asm_overrun) X(wait_count) X(commit_under_bound)      \
  X(barrier_overrun) X(carried_overrun) X(tx_bytes_short)
