// read_before_wait.cu: reads of a stage buffer whose copy group the wait before them may leave in
// flight (tilepipe audit, async-read-before-wait), beside waits that cover them. A wait for all but
// the newest K groups covers the tile read only where K groups or more were committed after the
// read tile's. A finding is expected on the line after each `EXPECT-AUDIT:` comment, and nowhere
// else.
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_pipeline.h>

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

constexpr int N = 4;

// Three tiles ahead, committed before the wait: all but the newest 3 groups cover tile t; the
// wait leaves 4 in flight.
__global__ void one_group_too_many(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N>(pipe);
    __syncthreads();
    // EXPECT-AUDIT: async-read-before-wait
    acc += s[t % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The same with the count that covers it.
__global__ void counted(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += s[t % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The wait before the iteration's commit: the newest group there is the previous iteration's,
// tile t + 2, so only all but 2 cover tile t.
__global__ void wait_before_commit(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    // EXPECT-AUDIT: async-read-before-wait
    acc += s[t % N][255 - tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Correct: the same order, all but 2.
__global__ void wait_before_commit_counted(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    cuda::pipeline_consumer_wait_prior<N - 2>(pipe);
    __syncthreads();
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    acc += s[t % N][255 - tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The primitives: two tiles ahead, and a wait that leaves three groups in flight.
__global__ void primitives(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    __pipeline_memcpy_async(&s[(t + 2) % N][tid], &A[(t + 2) * 256 + tid], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(3);
    __syncthreads();
    // EXPECT-AUDIT: async-read-before-wait
    acc += s[t % N][(tid + 1) % 256];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// A read of the next tile as well: it needs one group fewer in flight than tile t does.
__global__ void reads_ahead(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += s[t % N][255 - tid];
    // EXPECT-AUDIT: async-read-before-wait
    acc += s[(t + 1) % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// A producer loop running three tiles ahead of the loop (`aStage < a + aStep * N`), one commit per
// tile, and a wait that leaves all four groups in flight.
template <int BLOCK>
__global__ void producer_loop(float *C, const float *A, int wA) {
  alignas(16) __shared__ float As[N][BLOCK][BLOCK];
  float Csub = 0;
  const int aBegin = wA * BLOCK * blockIdx.y;
  const int aEnd = aBegin + wA - 1;
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int a = aBegin, i = 0, aStage = aBegin, iStage = 0; a <= aEnd; a += BLOCK, ++i) {
    for (; aStage < a + BLOCK * N; aStage += BLOCK, ++iStage) {
      pipe.producer_acquire();
      if (aStage <= aEnd)
        cuda::memcpy_async(&As[iStage % N][threadIdx.y][threadIdx.x], &A[aStage + wA * threadIdx.y + threadIdx.x],
                           cuda::aligned_size_t<4>(sizeof(float)), pipe);
      pipe.producer_commit();
    }
    cuda::pipeline_consumer_wait_prior<N>(pipe);
    __syncthreads();
    for (int k = 0; k < BLOCK; ++k)
      // EXPECT-AUDIT: async-read-before-wait
      Csub += As[i % N][threadIdx.y][k];
    __syncthreads();
  }
  C[blockIdx.x * BLOCK + threadIdx.x] = Csub;
}
template __global__ void producer_loop<16>(float *, const float *, int);

// Waited for another way as well (the pipeline's consumer_wait): not read, no finding.
__global__ void also_consumer_wait(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N>(pipe);
    pipe.consumer_wait();
    __syncthreads();
    acc += s[t % N][255 - tid];
    pipe.consumer_release();
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The copy and its commit under the tile's bound: in the last N - 1 iterations nothing is
// committed, and the wait leaves the group of the tile read in flight.
__global__ void commit_under_bound(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (t + N - 1 < n) {
      pipe.producer_acquire();
      cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
      // EXPECT-AUDIT: async-read-before-wait
      pipe.producer_commit();
    }
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += s[t % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Correct: the commit stands outside the bound, an empty group at the tail.
__global__ void commit_every_iteration(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (t + N - 1 < n) {
      pipe.producer_acquire();
      cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    }
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += s[t % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The tile handed to a function of the user's that reads it: the function waits for nothing, so
// the wait before the call is the one that must cover the tile.
__device__ float rowSum(const float *row, int tid) {
  float acc = 0;
  for (int k = 0; k < 32; ++k)
    acc += row[(tid + k) & 255];
  return acc;
}
__global__ void handed_to_function(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N>(pipe);
    __syncthreads();
    // EXPECT-AUDIT: async-read-before-wait
    acc += rowSum(s[t % N], tid);
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// A function of the user's that waits another way (through another that calls consumer_wait): the
// wait count alone does not tell what is in flight, no finding.
__device__ void settle(cuda::pipeline<cuda::thread_scope_thread> &pipe) { pipe.consumer_wait(); }
__device__ float settledSum(cuda::pipeline<cuda::thread_scope_thread> &pipe, const float *row, int tid) {
  settle(pipe);
  return rowSum(row, tid);
}
__global__ void function_waits(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N>(pipe);
    __syncthreads();
    acc += settledSum(pipe, s[t % N], tid);
    pipe.consumer_release();
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Copies of the whole block on a barrier per stage: the loop waits on the barrier of the tile it is
// about to copy (t + 1), before the copy, and never on tile t's after its copy was issued.
__global__ void barrier_wrong_stage(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][256];
  __shared__ block_barrier bar[2];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    for (int i = 0; i < 2; ++i)
      init(&bar[i], block.size());
  block.sync();
  cuda::memcpy_async(block, s[0], A, cuda::aligned_size_t<16>(1024), bar[0]);
  for (int t = 0; t < n; ++t) {
    bar[(t + 1) % 2].arrive_and_wait();
    cuda::memcpy_async(block, s[(t + 1) % 2], A + (t + 1) * 256, cuda::aligned_size_t<16>(1024), bar[(t + 1) % 2]);
    // EXPECT-AUDIT: async-read-before-wait
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}

// No wait at all on the barriers the copies complete on: the block's sync does not wait for them.
__global__ void barrier_never_waited(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][256];
  __shared__ block_barrier bar[2];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    for (int i = 0; i < 2; ++i)
      init(&bar[i], block.size());
  block.sync();
  cuda::memcpy_async(block, s[0], A, cuda::aligned_size_t<16>(1024), bar[0]);
  for (int t = 0; t < n; ++t) {
    cuda::memcpy_async(block, s[(t + 1) % 2], A + (t + 1) * 256, cuda::aligned_size_t<16>(1024), bar[(t + 1) % 2]);
    block.sync();
    // EXPECT-AUDIT: async-read-before-wait
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}

// Correct: the wait on the next tile's barrier at the end of the iteration covers the next read
// (tile t + 1's copy was issued before it in this iteration).
__global__ void barrier_waited_ahead(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][256];
  __shared__ block_barrier bar[2];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    for (int i = 0; i < 2; ++i)
      init(&bar[i], block.size());
  block.sync();
  cuda::memcpy_async(block, s[0], A, cuda::aligned_size_t<16>(1024), bar[0]);
  bar[0].arrive_and_wait();
  for (int t = 0; t < n; ++t) {
    cuda::memcpy_async(block, s[(t + 1) % 2], A + (t + 1) * 256, cuda::aligned_size_t<16>(1024), bar[(t + 1) % 2]);
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
    bar[(t + 1) % 2].arrive_and_wait();
  }
}

// Correct: the barrier of the tile read, after its copy (issued in the iteration before).
__global__ void barrier_right_stage(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][256];
  __shared__ block_barrier bar[2];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    for (int i = 0; i < 2; ++i)
      init(&bar[i], block.size());
  block.sync();
  cuda::memcpy_async(block, s[0], A, cuda::aligned_size_t<16>(1024), bar[0]);
  for (int t = 0; t < n; ++t) {
    bar[t % 2].arrive_and_wait();
    cuda::memcpy_async(block, s[(t + 1) % 2], A + (t + 1) * 256, cuda::aligned_size_t<16>(1024), bar[(t + 1) % 2]);
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}
