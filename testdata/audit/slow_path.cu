// slow_path.cu: cuda::memcpy_async calls whose types prove less alignment than their size allows
// (tilepipe audit, async-slow-path), beside calls that prove it. CCCL's dispatch reads the
// alignment from the call's types alone: the larger of the pointers' element type's and the
// shape's (cuda::aligned_size_t<A>); it issues cp.async only from 4 bytes, and 16-byte ones only
// at 16. A finding is expected on the line after each `EXPECT-AUDIT:` comment, and nowhere else.
#include <cooperative_groups.h>
#include <cuda/pipeline>

namespace cg = cooperative_groups;

// Untyped pointers and a plain byte count: the copy runs synchronously, with no cp.async.
__global__ void untyped(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][256];
  auto block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    // EXPECT-AUDIT: async-slow-path
    cuda::memcpy_async(block, (void *)s[t % 2], (const void *)(A + t * 256), 1024, pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    block.sync();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}

// Pointers to float and a plain count (the guide's first example): 4-byte cp.async where the
// 1024 bytes allow 16-byte ones; the shared array is not declared 16-byte aligned either (the
// fix-it adds alignas(16)).
__global__ void typed_float(const float *A, float *C, int n) {
  __shared__ float s[2][256];
  auto block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    // EXPECT-AUDIT: async-slow-path
    cuda::memcpy_async(block, s[t % 2], A + t * 256, sizeof(float) * 256, pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    block.sync();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}

// Bytes: char pointers prove 1-byte alignment, so even 16 bytes a thread copy synchronously.
__global__ void bytes(const char *A, char *C, int n) {
  alignas(16) __shared__ char s[2][4096];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    // EXPECT-AUDIT: async-slow-path
    cuda::memcpy_async(&s[t % 2][threadIdx.x * 16], &A[t * 4096 + threadIdx.x * 16], 16, pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    C[t * 4096 + threadIdx.x] = s[t % 2][4095 - threadIdx.x];
    __syncthreads();
  }
}

// A size that is not a constant, in a template: the instantiation is what runs, and the finding
// is reported once for the text both instantiations share.
template <typename T>
__global__ void generic(const T *A, T *C, int n, int count) {
  alignas(16) __shared__ T s[2][256];
  auto block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    // EXPECT-AUDIT: async-slow-path
    cuda::memcpy_async(block, s[t % 2], A + t * count, sizeof(T) * count, pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    block.sync();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}
template __global__ void generic<float>(const float *, float *, int, int);
template __global__ void generic<int>(const int *, int *, int, int);

// Correct: the shape proves 16 bytes, and the array is aligned to them.
__global__ void aligned16(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][256];
  auto block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(block, s[t % 2], A + t * 256, cuda::aligned_size_t<16>(sizeof(float) * 256), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    block.sync();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    block.sync();
  }
}

// Correct: one element a thread, which no wider instruction could move.
__global__ void per_element(const float *A, float *C, int n) {
  __shared__ float s[2][256];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[t % 2][threadIdx.x], &A[t * 256 + threadIdx.x], cuda::aligned_size_t<4>(4), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    __syncthreads();
  }
}

// Correct: one element a thread, through a shape held in a const local, as NVIDIA's
// globalToShmemAsyncCopy sample writes it.
__global__ void per_element_held_shape(const float *A, float *C, int n) {
  __shared__ float s[2][256];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  const auto shape = cuda::aligned_size_t<alignof(float)>(sizeof(float));
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[t % 2][threadIdx.x], &A[t * 256 + threadIdx.x], shape, pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    __syncthreads();
  }
}

// Correct: the same shape in a local that is not const but that nothing changes.
__global__ void per_element_local_shape(const float *A, float *C, int n) {
  __shared__ float s[2][256];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  auto shape = cuda::aligned_size_t<alignof(float)>(sizeof(float));
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[t % 2][threadIdx.x], &A[t * 256 + threadIdx.x], shape, pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    C[t * 256 + threadIdx.x] = s[t % 2][255 - threadIdx.x];
    __syncthreads();
  }
}

// A local set again holds whatever it was set to last when the copy runs: the count is not a
// constant, and a 16-byte shape would need it to be a multiple of 16.
__global__ void per_element_mutable_shape(const float *A, float *C, int n, int wide) {
  __shared__ float s[2][512];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  auto shape = cuda::aligned_size_t<alignof(float)>(sizeof(float));
  if (wide)
    shape = cuda::aligned_size_t<alignof(float)>(2 * sizeof(float));
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    // EXPECT-AUDIT: async-slow-path
    cuda::memcpy_async(&s[t % 2][2 * threadIdx.x], &A[t * 512 + 2 * threadIdx.x], shape, pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    C[t * 256 + threadIdx.x] = s[t % 2][511 - threadIdx.x];
    __syncthreads();
  }
}

// Correct: a struct of four doubles (32 bytes, aligned to 8) whose shape states its alignment
// with alignof, as tilepipe's own copies of such elements do: its global source is aligned as
// the kernel's pointer is, a run-time fact; 16-byte instructions would need that promise.
struct Four {
  double v, x, y, z;
};
__global__ void stated_alignment(const Four *A, Four *C, int n) {
  __shared__ Four s[2][64];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[t % 2][threadIdx.x], &A[t * 64 + threadIdx.x], cuda::aligned_size_t<alignof(Four)>(sizeof(Four)), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    C[t * 64 + threadIdx.x] = s[t % 2][63 - threadIdx.x];
    __syncthreads();
  }
}

// The same struct with the shape's alignment as a number: 8-byte instructions where the size
// allows 16.
__global__ void numbered_alignment(const Four *A, Four *C, int n) {
  __shared__ Four sq[2][128];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    // EXPECT-AUDIT: async-slow-path
    cuda::memcpy_async(&sq[t % 2][threadIdx.x], &A[t * 128 + threadIdx.x], cuda::aligned_size_t<8>(sizeof(Four)), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    C[t * 128 + threadIdx.x] = sq[t % 2][127 - threadIdx.x];
    __syncthreads();
  }
}

// Correct: float4 elements prove 16 bytes through their type.
__global__ void vector_type(const float4 *A, float4 *C, int n) {
  __shared__ float4 s[2][64];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[t % 2][threadIdx.x], &A[t * 64 + threadIdx.x], sizeof(float4), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    C[t * 64 + threadIdx.x] = s[t % 2][63 - threadIdx.x];
    __syncthreads();
  }
}
