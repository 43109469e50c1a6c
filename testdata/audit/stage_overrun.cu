// stage_overrun.cu: copies that refill a stage buffer while it may still be read (tilepipe audit,
// async-stage-overrun), beside schedules that are safe. With N buffers and a copy D tiles ahead
// of the read, the buffer a copy fills held the tile read N - D iterations earlier; a block
// barrier must lie between that read and the copy, since a pipeline of thread scope orders only
// the thread's own copies. A finding is expected on the line after each `EXPECT-AUDIT:` comment,
// and nowhere else.
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_pipeline.h>

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

constexpr int N = 4;

// N - 1 ahead, issued before the iteration's barrier, no barrier after the read: a thread that
// passed the barrier refills the buffer of tile t - 1 while a slower one still reads it.
__global__ void ahead_before_barrier(const float *A, float *C, int n) {
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
      // EXPECT-AUDIT: async-stage-overrun
      cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += s[t % N][255 - tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The same, issued after the barrier: the barrier proves every thread is done with tile t - 1.
__global__ void ahead_after_barrier(const float *A, float *C, int n) {
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
    cuda::pipeline_consumer_wait_prior<N - 2>(pipe);
    __syncthreads();
    pipe.producer_acquire();
    if (t + N - 1 < n)
      cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    acc += s[t % N][255 - tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// N - 1 ahead before the barrier, with a barrier after the read: safe.
__global__ void ahead_trailing_barrier(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    const int fill = (t + N - 1) % N;
    pipe.producer_acquire();
    cuda::memcpy_async(&s[fill][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += s[t % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// N - 2 ahead before the barrier: the previous iteration's barrier already separates the read of
// the tile whose buffer is refilled (two iterations back).
__global__ void two_short(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 2) % N][tid], &A[(t + N - 2) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 2>(pipe);
    __syncthreads();
    acc += s[t % N][255 - tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// NVIDIA's sample form: an inner producer loop runs its own inductions up to N tiles past the
// outer one (`aStage <= a + aStep * N`), so it refills the buffer this iteration reads.
template <int BLOCK>
__global__ void producer_loop(float *C, const float *A, int wA) {
  alignas(16) __shared__ float As[N][BLOCK][BLOCK];
  float Csub = 0;
  const int aBegin = wA * BLOCK * blockIdx.y;
  const int aEnd = aBegin + wA - 1;
  int aStep = BLOCK;
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int a = aBegin, i = 0, aStage = aBegin, iStage = 0; a <= aEnd; a += aStep, ++i) {
    for (; aStage <= a + aStep * N; aStage += aStep, ++iStage) {
      pipe.producer_acquire();
      if (aStage <= aEnd) {
        const int j = iStage % N;
        // EXPECT-AUDIT: async-stage-overrun
        cuda::memcpy_async(&As[j][threadIdx.y][threadIdx.x], &A[aStage + wA * threadIdx.y + threadIdx.x],
                           cuda::aligned_size_t<4>(sizeof(float)), pipe);
      }
      pipe.producer_commit();
    }
    pipe.consumer_wait();
    __syncthreads();
    const int j = i % N;
    for (int k = 0; k < BLOCK; ++k)
      Csub += As[j][threadIdx.y][k];
    pipe.consumer_release();
  }
  C[blockIdx.x * BLOCK + threadIdx.x] = Csub;
}
template __global__ void producer_loop<16>(float *, const float *, int);

// The producer loop stopping N - 1 tiles past the outer one, with a barrier after the read: safe.
template <int BLOCK>
__global__ void producer_loop_safe(float *C, const float *A, int wA) {
  alignas(16) __shared__ float As[N][BLOCK][BLOCK];
  float Csub = 0;
  const int aBegin = wA * BLOCK * blockIdx.y;
  const int aEnd = aBegin + wA - 1;
  int aStep = BLOCK;
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int a = aBegin, i = 0, aStage = aBegin, iStage = 0; a <= aEnd; a += aStep, ++i) {
    for (; aStage < a + aStep * N; aStage += aStep, ++iStage) {
      pipe.producer_acquire();
      if (aStage <= aEnd)
        cuda::memcpy_async(&As[iStage % N][threadIdx.y][threadIdx.x], &A[aStage + wA * threadIdx.y + threadIdx.x],
                           cuda::aligned_size_t<4>(sizeof(float)), pipe);
      pipe.producer_commit();
    }
    pipe.consumer_wait();
    __syncthreads();
    for (int k = 0; k < BLOCK; ++k)
      Csub += As[i % N][threadIdx.y][k];
    pipe.consumer_release();
    __syncthreads();
  }
  C[blockIdx.x * BLOCK + threadIdx.x] = Csub;
}
template __global__ void producer_loop_safe<16>(float *, const float *, int);

// The primitives of cuda_pipeline.h: N - 1 ahead before the barrier, no barrier after the read.
__global__ void primitives(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    // EXPECT-AUDIT: async-stage-overrun
    __pipeline_memcpy_async(&s[(t + N - 1) & (N - 1)][tid], &A[(t + N - 1) * 256 + tid], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(N - 1);
    __syncthreads();
    acc += s[t & (N - 1)][(tid + 1) % 256];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Each thread reads back only the element it copied: its own pipeline orders that, no barrier is
// needed.
__global__ void own_element(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    acc += s[t % N][tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// N ahead into N buffers: the copy replaces the tile this iteration reads, even in this thread.
__global__ void as_many_as_buffers(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    // EXPECT-AUDIT: async-stage-overrun
    cuda::memcpy_async(&s[(t + N) % N][tid], &A[(t + N) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N>(pipe);
    __syncthreads();
    acc += s[t % N][tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The stages move in counters of their own, a barrier after the read: safe. A counter tells the
// tile modulo the buffers only: the copy refills the buffer read (0 - 3) mod 4 = 1 iteration before.
__global__ void rotating_counter(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int fill = N - 1, use = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[fill][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += s[use][255 - tid];
    __syncthreads();
    fill = fill + 1 == N ? 0 : fill + 1;
    use = use + 1 == N ? 0 : use + 1;
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Per-stage block barriers: a barrier counts the copies' completion, not their issue. The copy of
// tile t + 1 into the buffer of tile t - 1 is issued before this iteration's arrive_and_wait, while
// a slower thread may still read tile t - 1.
__global__ void barrier_stages(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][256];
  __shared__ block_barrier bar[2];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    for (int i = 0; i < 2; ++i)
      init(&bar[i], block.size());
  block.sync();
  cuda::memcpy_async(block, s[0], A, cuda::aligned_size_t<16>(1024), bar[0]);
  for (int t = 0; t < n; ++t) {
    // EXPECT-AUDIT: async-stage-overrun
    cuda::memcpy_async(block, s[(t + 1) % 2], A + (t + 1) * 256, cuda::aligned_size_t<16>(1024), bar[(t + 1) % 2]);
    bar[t % 2].arrive_and_wait();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
  }
}

// The same with the block's barrier after the read: safe.
__global__ void barrier_stages_synced(const float *A, float *C, int n) {
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
    bar[t % 2].arrive_and_wait();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}

// The same counters without the barrier after the read.
__global__ void rotating_counter_racy(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int fill = N - 1, use = 0;
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    // EXPECT-AUDIT: async-stage-overrun
    cuda::memcpy_async(&s[fill][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<N - 1>(pipe);
    __syncthreads();
    acc += s[use][255 - tid];
    if (++fill == N)
      fill = 0;
    use = (use + 1) % N;
  }
  C[blockIdx.x * 256 + tid] = acc;
}
