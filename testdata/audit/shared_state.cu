// shared_state.cu: __shared__ objects of CCCL that Clang rejects on its own and nvcc accepts (a
// cuda::barrier, a cuda::pipeline_shared_state: their destructors are not empty), which every TMA
// kernel and CUDA's guide declare: tilepipe's parse reads them (README, "Usage"), so the
// audit reviews the copies that depend on them (async-stage-count here). clang-tidy's parse cannot,
// so this file is not among the clang-tidy module's tests. A finding is expected on the line after
// each `EXPECT-AUDIT:` comment, and nowhere else.
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// The pipeline's state declared as CUDA's guide does, a __shared__ object (which Clang parses
// only as tilepipe reads CCCL's barrier): a depth of 2 for 3 buffers.
__global__ void shared_state_of_two(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[3][256];
  // EXPECT-AUDIT: async-stage-count
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
  auto block = cg::this_thread_block();
  auto pipe = cuda::make_pipeline(block, &state);
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(block, s[t % 3], A + t * 256, cuda::aligned_size_t<16>(1024), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    C[t * 256 + threadIdx.x] = s[t % 3][255 - threadIdx.x];
    pipe.consumer_release();
  }
}

// Correct: the depth the buffers have, and a single barrier of its own beside it.
__global__ void shared_state_of_three(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[3][256];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 3> state;
  __shared__ block_barrier done;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    init(&done, block.size());
  auto pipe = cuda::make_pipeline(block, &state);
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(block, s[t % 3], A + t * 256, cuda::aligned_size_t<16>(1024), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    C[t * 256 + threadIdx.x] = s[t % 3][255 - threadIdx.x];
    pipe.consumer_release();
  }
  done.arrive_and_wait();
}
