// stage_count.cu: per-stage barriers whose number differs from the number of buffers the copies
// rotate through (tilepipe audit, async-stage-count), beside ones that agree. A finding is
// expected on the line after each `EXPECT-AUDIT:` comment, and nowhere else.
#include <cooperative_groups.h>
#include <cuda/barrier>

namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// Three buffers, two barriers: stage t and stage t + 2 share a barrier but not a buffer.
__global__ void two_barriers_three_buffers(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[3][256];
  // EXPECT-AUDIT: async-stage-count
  __shared__ block_barrier bar[2];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    for (int i = 0; i < 2; ++i)
      init(&bar[i], block.size());
  block.sync();
  for (int t = 0; t < n; ++t) {
    cuda::memcpy_async(block, s[t % 3], A + t * 256, cuda::aligned_size_t<16>(1024), bar[t % 2]);
    bar[t % 2].arrive_and_wait();
    C[t * 256 + threadIdx.x] = s[t % 3][255 - threadIdx.x];
    block.sync();
  }
}

// Correct: one barrier per buffer.
__global__ void one_barrier_per_buffer(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][256];
  __shared__ block_barrier bar[2];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0)
    for (int i = 0; i < 2; ++i)
      init(&bar[i], block.size());
  block.sync();
  for (int t = 0; t < n; ++t) {
    cuda::memcpy_async(block, s[t % 2], A + t * 256, cuda::aligned_size_t<16>(1024), bar[t % 2]);
    bar[t % 2].arrive_and_wait();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}
