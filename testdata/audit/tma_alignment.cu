// tma_alignment.cu: the shared addresses and sizes of bulk copies (cp.async.bulk: 16-byte aligned
// addresses, whole 16-byte units) and tensor copies (cp.async.bulk.tensor: a 128-byte aligned
// shared address). A finding is expected on the line after each `EXPECT-AUDIT:` comment, and
// nowhere else.
#include <cuda.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cstdint>

using barrier_t = cuda::barrier<cuda::thread_scope_block>;
namespace ptx = cuda::ptx;

// A helper of the user's, one asm statement: a bulk copy of Bytes into Dst on Bar.
__device__ inline void bulk_load(void *Dst, const void *Src, unsigned Bytes, barrier_t &Bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :
               : "r"((unsigned)__cvta_generic_to_shared(Dst)), "l"(Src), "r"(Bytes),
                 "r"((unsigned)__cvta_generic_to_shared(cuda::device::barrier_native_handle(Bar)))
               : "memory");
}

// Set up by thread 0 as CUDA's guide does: the init, then the proxy fence.
__device__ inline void setup(barrier_t &Bar) {
  if (threadIdx.x == 0) {
    init(&Bar, 1);
    ptx::fence_proxy_async(ptx::space_shared);
  }
  __syncthreads();
}

// A tensor copy into an array declared with float's alignment: 128 bytes is up to the layout.
__global__ void tensor_unaligned(const __grid_constant__ CUtensorMap map, float *C) {
  __shared__ float tile[32][32];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x == 0) {
    int32_t c[2] = {0, (int)blockIdx.x * 32};
    // EXPECT-AUDIT: async-tma-alignment
    ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, &tile[0][0], &map, c,
                              cuda::device::barrier_native_handle(bar));
    (void)cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  C[blockIdx.x * 1024 + threadIdx.x] = tile[threadIdx.x % 32][threadIdx.x / 32];
}

// Correct: 128-byte aligned stages of 4 KiB each, whichever the stage.
__global__ void tensor_staged(const __grid_constant__ CUtensorMap map, float *C, int s) {
  alignas(128) __shared__ float tile[2][32][32];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x == 0) {
    int32_t c[2] = {0, (int)blockIdx.x * 32};
    ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, &tile[s & 1][0][0], &map, c,
                              cuda::device::barrier_native_handle(bar));
    (void)cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile[0]));
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  C[blockIdx.x * 1024 + threadIdx.x] = tile[s & 1][threadIdx.x % 32][threadIdx.x / 32];
}

// A bulk copy one float into an aligned buffer: 4 bytes past a 16-byte boundary, always.
__global__ void bulk_offset(const float *A, float *C) {
  alignas(16) __shared__ float buf[257];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x == 0) {
    // EXPECT-AUDIT: async-tma-alignment
    cuda::device::memcpy_async_tx(&buf[1], A + blockIdx.x * 256, cuda::aligned_size_t<16>(1024), bar);
    (void)cuda::device::barrier_arrive_tx(bar, 1, 1024);
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  C[blockIdx.x * 256 + threadIdx.x] = buf[1 + threadIdx.x];
}

// A bulk copy of 100 bytes: not whole 16-byte units.
__global__ void bulk_size(const float *A, float *C) {
  alignas(16) __shared__ float buf[32];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x == 0) {
    // EXPECT-AUDIT: async-tma-alignment
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, buf, A + blockIdx.x * 32, 100,
                       cuda::device::barrier_native_handle(bar));
    (void)cuda::device::barrier_arrive_tx(bar, 1, 100);
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  if (threadIdx.x < 25)
    C[blockIdx.x * 32 + threadIdx.x] = buf[threadIdx.x];
}

// Rows of 5 floats through the helper: each row starts 20 bytes after the last, so only 4-byte
// alignment holds for row r.
__global__ void helper_rows(const float *A, float *C, int r) {
  alignas(16) __shared__ float rows[8][5];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x == 0) {
    // EXPECT-AUDIT: async-tma-alignment
    bulk_load(&rows[r][0], A + blockIdx.x * 16, 16, bar);
    (void)cuda::device::barrier_arrive_tx(bar, 1, 16);
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  if (threadIdx.x < 4)
    C[blockIdx.x * 4 + threadIdx.x] = rows[r][threadIdx.x];
}

// Correct: rows of 8 floats (32 bytes) through the helper, and a pointer local that holds a row.
__global__ void helper_rows_of_8(const float *A, float *C, int r) {
  alignas(16) __shared__ float rows[8][8];
  __shared__ barrier_t bar;
  setup(bar);
  if (threadIdx.x == 0) {
    float *row = rows[r];
    bulk_load(row, A + blockIdx.x * 8, 32, bar);
    (void)cuda::device::barrier_arrive_tx(bar, 1, 32);
  } else {
    (void)bar.arrive();
  }
  bar.wait_parity(0);
  if (threadIdx.x < 8)
    C[blockIdx.x * 8 + threadIdx.x] = rows[r][threadIdx.x];
}
