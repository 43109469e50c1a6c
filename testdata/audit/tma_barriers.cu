// tma_barriers.cu: the mbarriers bulk copies complete on, and the proxy fences around them: the
// bytes a phase expects against those its copies move (async-tx-bytes), a fence.proxy.async
// between the threads' stores and a bulk copy that reads them, or between a barrier's init and a
// copy that completes on it (async-proxy-fence), and a barrier initialised again while a copy
// may still land on it (async-barrier-reinit). A finding is expected on the line after each
// `EXPECT-AUDIT:` comment, and nowhere else.
#include <cuda/barrier>
#include <cuda/ptx>
#include <cstdint>

using barrier_t = cuda::barrier<cuda::thread_scope_block>;
namespace ptx = cuda::ptx;

// The barrier set up for one arrival, made visible to the copy engine, as CUDA's guide does.
__device__ inline void setup(barrier_t &Bar) {
  if (threadIdx.x == 0) {
    init(&Bar, 1);
    ptx::fence_proxy_async(ptx::space_shared);
  }
  __syncthreads();
}

// Expects 4096 bytes, and the copies move 2048: the phase never completes.
__global__ void expects_more(const float *A, const float *B, float *C) {
  alignas(16) __shared__ float a[256], b[256];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x == 0) {
    cuda::device::memcpy_async_tx(a, A + blockIdx.x * 256, cuda::aligned_size_t<16>(sizeof(a)), bar);
    cuda::device::memcpy_async_tx(b, B + blockIdx.x * 256, cuda::aligned_size_t<16>(sizeof(b)), bar);
    // EXPECT-AUDIT: async-tx-bytes
    (void)cuda::device::barrier_arrive_tx(bar, 1, 4096);
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  C[blockIdx.x * 256 + threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}

// A pipeline of 2 stages whose expectation counts one of the two copies of a tile: the phase
// completes when the first lands, and the threads read the second's buffer before it has.
__global__ void expects_fewer(const float *A, const float *B, float *C, int n) {
  alignas(128) __shared__ float a[2][256], b[2][256];
  __shared__ uint64_t full[2];
  if (threadIdx.x == 0) {
    for (int s = 0; s < 2; ++s)
      ptx::mbarrier_init(&full[s], 1);
    ptx::fence_proxy_async(ptx::space_shared);
  }
  __syncthreads();
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    int s = t & 1;
    if (threadIdx.x == 0) {
      // EXPECT-AUDIT: async-tx-bytes
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s], 1024);
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, a[s], A + (t * gridDim.x + blockIdx.x) * 256, 1024, &full[s]);
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, b[s], B + (t * gridDim.x + blockIdx.x) * 256, 1024, &full[s]);
    }
    while (!ptx::mbarrier_try_wait_parity(&full[s], (t >> 1) & 1))
      ;
    acc += a[s][threadIdx.x] * b[s][255 - threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}

// Correct: the expectation adds the copies up, one row at a time in a loop of 4.
__global__ void expects_rows(const float *A, float *C) {
  alignas(16) __shared__ float rows[4][64];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x == 0) {
    (void)cuda::device::barrier_arrive_tx(bar, 1, sizeof(rows));
    for (int r = 0; r < 4; ++r)
      cuda::device::memcpy_async_tx(rows[r], A + (blockIdx.x * 4 + r) * 64, cuda::aligned_size_t<16>(256), bar);
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  C[blockIdx.x * 256 + threadIdx.x] = rows[threadIdx.x / 64][threadIdx.x % 64];
}

// Correct, and not read: the copies are spread over a warp's lanes, one expectation for all of them.
__global__ void expects_lanes(const float *A, float *C) {
  alignas(16) __shared__ float rows[32][64];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x < 32) {
    if (threadIdx.x == 0)
      cuda::device::barrier_expect_tx(bar, sizeof(rows));
    __syncwarp();
    cuda::device::memcpy_async_tx(rows[threadIdx.x], A + (blockIdx.x * 32 + threadIdx.x) * 64,
                                  cuda::aligned_size_t<16>(256), bar);
    __syncwarp();
  }
  if (threadIdx.x == 0)
    (void)bar.arrive();
  else
    (void)bar.arrive();
  bar.wait_parity(0);
  C[blockIdx.x * 2048 + threadIdx.x] = rows[threadIdx.x % 32][threadIdx.x / 32];
}

// The threads write a tile, and a bulk copy stores it to global memory with no proxy fence: the
// copy engine may read the tile as it was before the writes.
__global__ void store_unfenced(const float *A, float *C) {
  alignas(16) __shared__ float out[256];
  out[threadIdx.x] = 2.0f * A[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    // EXPECT-AUDIT: async-proxy-fence
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, C + blockIdx.x * 256, out, sizeof(out));
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
  }
}

// Correct: each thread fences its writes before the barrier, as CUDA's guide does.
__global__ void store_fenced(const float *A, float *C) {
  alignas(16) __shared__ float out[256];
  out[threadIdx.x] = 2.0f * A[blockIdx.x * 256 + threadIdx.x];
  ptx::fence_proxy_async(ptx::space_shared);
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, C + blockIdx.x * 256, out, sizeof(out));
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
  }
}

// The barrier's init and the copy that completes on it with only a block barrier between.
__global__ void init_unfenced(const float *A, float *C) {
  alignas(16) __shared__ float a[256];
  __shared__ barrier_t bar;
  if (threadIdx.x == 0)
    init(&bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    // EXPECT-AUDIT: async-proxy-fence
    cuda::device::memcpy_async_tx(a, A + blockIdx.x * 256, cuda::aligned_size_t<16>(sizeof(a)), bar);
    (void)cuda::device::barrier_arrive_tx(bar, 1, sizeof(a));
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  C[blockIdx.x * 256 + threadIdx.x] = a[255 - threadIdx.x];
}

// A barrier set up again for each tile, before the wait for the tile copied the iteration before:
// the init may run while that copy is still landing on it.
__global__ void reinit_in_flight(const float *A, float *C, int n) {
  alignas(16) __shared__ float a[2][256];
  __shared__ uint64_t full;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&full, 1);
    ptx::fence_proxy_async(ptx::space_shared);
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full, 1024);
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, a[0], A + blockIdx.x * 256, 1024, &full);
  }
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (threadIdx.x == 0 && t + 1 < n) {
      // EXPECT-AUDIT: async-barrier-reinit
      ptx::mbarrier_init(&full, 1);
      ptx::fence_proxy_async(ptx::space_shared);
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full, 1024);
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, a[(t + 1) & 1],
                         A + ((t + 1) * gridDim.x + blockIdx.x) * 256, 1024, &full);
    }
    while (!ptx::mbarrier_try_wait_parity(&full, 0))
      ;
    acc += a[t & 1][threadIdx.x];
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}

// Correct: set up again for each tile only after the wait for the last one.
__global__ void reinit_after_wait(const float *A, float *C, int n) {
  alignas(16) __shared__ float a[256];
  __shared__ uint64_t full;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (threadIdx.x == 0) {
      ptx::mbarrier_init(&full, 1);
      ptx::fence_proxy_async(ptx::space_shared);
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full, 1024);
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, a, A + (t * gridDim.x + blockIdx.x) * 256, 1024, &full);
    }
    __syncthreads();
    while (!ptx::mbarrier_try_wait_parity(&full, 0))
      ;
    acc += a[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}
