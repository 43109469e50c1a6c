// unknown_schedule.cu: loops whose schedule of tiles the audit cannot read (tilepipe audit,
// async-unknown, a remark): a stage picked by data, or by a counter that starts where another loop
// of run-time length left it (carried_counters.cu). The remark stands once, at the loop, and names each copy and read it could not place;
// a loop it reads, a prologue that only copies, and a loop around a loop it reads get none. A
// finding is expected on the line after each `EXPECT-AUDIT:` comment, and nowhere else.
#include <cuda/pipeline>

constexpr int N = 3;

// The stage comes from memory: which buffer a copy refills is known at run time only.
__global__ void stage_from_memory(const float *A, const int *order, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  // EXPECT-AUDIT: async-unknown
  for (int t = 0; t < n; ++t) {
    const int st = order[t] % N;
    pipe.producer_acquire();
    cuda::memcpy_async(&s[st][tid], &A[t * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    acc += s[st][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The copies' stage is read, the reads' is not: the read's buffer comes from memory.
__global__ void read_from_memory(const float *A, const int *order, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  // EXPECT-AUDIT: async-unknown
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[t % N][tid], &A[t * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    acc += s[order[t] % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// A prologue that fills the first N - 1 buffers reads none of them: nothing to pair, no remark. The
// main loop's stage is read, and its schedule is safe.
__global__ void prologue_and_main_loop(const float *A, float *C, int n) {
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
    acc += s[t % N][255 - tid];
    __syncthreads();
    pipe.producer_acquire();
    if (t + N - 1 < n)
      cuda::memcpy_async(&s[(t + N - 1) % N][tid], &A[(t + N - 1) * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// A loop over rows around the tiled loop: the inner loop's schedule is read, and the outer loop,
// whose copies are the inner loop's, says nothing of its own.
__global__ void rows_around_tiles(const float *A, float *C, int n, int rows) {
  alignas(16) __shared__ float s[2][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  for (int r = 0; r < rows; ++r) {
    float acc = 0;
    for (int t = 0; t < n; ++t) {
      pipe.producer_acquire();
      cuda::memcpy_async(&s[t % 2][tid], &A[(r * n + t) * 256 + tid], sizeof(float), pipe);
      pipe.producer_commit();
      cuda::pipeline_consumer_wait_prior<0>(pipe);
      __syncthreads();
      acc += s[t % 2][255 - tid];
      __syncthreads();
    }
    C[(blockIdx.x * rows + r) * 256 + tid] = acc;
  }
}

// One buffer per matrix whose first subscript picks a row (NVIDIA's single-stage sample): the
// copies fill the same row every iteration, so there are no stages to place, however the compute
// indexes the rows. No remark.
template <int T>
__global__ void one_buffer_in_rows(const float *A, const float *B, float *C, int n) {
  __shared__ alignas(16) float As[T][T];
  __shared__ alignas(16) float Bs[T][T];
  const int tx4 = threadIdx.x * 4, row = threadIdx.y;
  auto pipe = cuda::make_pipeline();
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    if (tx4 < T) {
      pipe.producer_acquire();
      cuda::memcpy_async(&As[row][tx4], &A[(t * T + row) * T + tx4], cuda::aligned_size_t<16>(16), pipe);
      cuda::memcpy_async(&Bs[threadIdx.y][tx4], &B[(t * T + row) * T + tx4], cuda::aligned_size_t<16>(16), pipe);
      pipe.producer_commit();
      pipe.consumer_wait();
    }
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    pipe.consumer_release();
    __syncthreads();
  }
  C[(blockIdx.x * T + threadIdx.y) * T + threadIdx.x] = acc;
}

// The row comes from a local the loop declares from its tile: a stage after all, which the
// audit cannot place (it is not the tile plus a constant, modulo the buffers).
__global__ void row_from_the_tile(const float *A, float *C, int n) {
  __shared__ alignas(16) float s[N][256];
  auto pipe = cuda::make_pipeline();
  float acc = 0;
  // EXPECT-AUDIT: async-unknown
  for (int t = 0; t < n; ++t) {
    const int row = (t / 2) % N;
    pipe.producer_acquire();
    cuda::memcpy_async(&s[row][threadIdx.x], &A[t * 256 + threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    __syncthreads();
    acc += s[row][255 - threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}

// Both at once, in a template instantiated twice: one remark, not one per instantiation.
template <int Stages>
__global__ void templated_from_memory(const float *A, const int *order, float *C, int n) {
  alignas(16) __shared__ float s[Stages][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  // EXPECT-AUDIT: async-unknown
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[order[t] % Stages][tid], &A[t * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    acc += s[order[t] % Stages][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

void launch(const float *A, const int *order, float *C, int n, int rows) {
  stage_from_memory<<<1024, 256>>>(A, order, C, n);
  read_from_memory<<<1024, 256>>>(A, order, C, n);
  prologue_and_main_loop<<<1024, 256>>>(A, C, n);
  rows_around_tiles<<<1024, 256>>>(A, C, n, rows);
  one_buffer_in_rows<16><<<1024, dim3(16, 16)>>>(A, A, C, n);
  row_from_the_tile<<<1024, 256>>>(A, C, n);
  templated_from_memory<2><<<1024, 256>>>(A, order, C, n);
  templated_from_memory<4><<<1024, 256>>>(A, order, C, n);
}
