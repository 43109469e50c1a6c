// carried_counters.cu: pipelines whose tile counter starts where a prologue left it, and waits
// that are consumer_wait (tilepipe audit). A counter declared before the prologue and stepped once
// an iteration by it and by the main loop is read as an induction of the main loop: its value there
// is its initializer plus the prologue's steps (the prologue runs a constant number of times) plus
// the main loop's. consumer_wait waits for the pipeline's oldest group not yet waited for: with
// the prologue's commits counted, it leaves a known number of the newest groups in flight. The
// loops NVIDIA-style hand-written pipelines use are read so; what cannot be counted is a remark.
// A finding is expected on the line after each `EXPECT-AUDIT:` comment, and nowhere else.
#include <cuda/pipeline>

constexpr int S = 4;

// The prologue fills S - 1 buffers; each iteration waits for the oldest group, then a barrier,
// then refills the buffer the previous iteration read, S - 1 tiles ahead: safe.
template <int T, int Stages>
__global__ void wait_then_copy(const float *A, const float *B, float *C, int N) {
  __shared__ float As[Stages][T][T];
  __shared__ float Bs[Stages][T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0;
  auto pipe = cuda::make_pipeline();
  const int nt = N / T;
  int tf = 0;
  for (int s = 0; s < Stages - 1; ++s, ++tf) {
    pipe.producer_acquire();
    if (tf < nt) {
      cuda::memcpy_async(&As[tf % Stages][ty][tx], &A[row * N + tf * T + tx], sizeof(float), pipe);
      cuda::memcpy_async(&Bs[tf % Stages][ty][tx], &B[(tf * T + ty) * N + col], sizeof(float), pipe);
    }
    pipe.producer_commit();
  }
  for (int t = 0; t < nt; ++t) {
    pipe.consumer_wait();
    __syncthreads();
    pipe.producer_acquire();
    if (tf < nt) {
      cuda::memcpy_async(&As[tf % Stages][ty][tx], &A[row * N + tf * T + tx], sizeof(float), pipe);
      cuda::memcpy_async(&Bs[tf % Stages][ty][tx], &B[(tf * T + ty) * N + col], sizeof(float), pipe);
    }
    pipe.producer_commit();
    ++tf;
    const int cur = t % Stages;
#pragma unroll
    for (int k = 0; k < T; ++k)
      acc += As[cur][ty][k] * Bs[cur][k][tx];
    pipe.consumer_release();
  }
  C[row * N + col] = acc;
}

// The copy and its commit before the wait, a barrier after the read: the wait leaves S - 1
// groups in flight, all newer than the tile read. Safe.
__global__ void copy_then_wait(const float *A, float *C, int n) {
  __shared__ float s[S][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int tf = 0;
  for (int k = 0; k < S - 1; ++k) {
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    tf++;
  }
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    tf += 1;
    pipe.consumer_wait();
    __syncthreads();
    acc += s[t % S][255 - tid];
    pipe.consumer_release();
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Stage counters of their own, the copies' carried over from the prologue (which rotated it S - 1
// times), the reads' starting at 0: the copy runs S - 1 tiles ahead, after a barrier. Safe.
__global__ void rotating_counters(const float *in, float *out, int n) {
  __shared__ float s[S][256];
  auto pipe = cuda::make_pipeline();
  int bf = blockIdx.x * 256;
  int sf = 0;
  for (int k = 0; k < S - 1; ++k) {
    pipe.producer_acquire();
    if (bf + 256 <= n)
      cuda::memcpy_async(&s[sf][threadIdx.x], &in[bf + threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
    bf += gridDim.x * 256;
    sf = (sf + 1) % S;
  }
  int sc = 0;
  for (int base = blockIdx.x * 256; base + 256 <= n; base += gridDim.x * 256) {
    pipe.consumer_wait();
    __syncthreads();
    pipe.producer_acquire();
    if (bf + 256 <= n)
      cuda::memcpy_async(&s[sf][threadIdx.x], &in[bf + threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
    bf += gridDim.x * 256;
    sf = (sf + 1) % S;
    out[base + threadIdx.x] = s[sc][255 - threadIdx.x];
    pipe.consumer_release();
    sc = (sc + 1) % S;
  }
}

// copy_then_wait without the barrier after the read: the copy S - 1 tiles ahead refills the
// buffer the previous iteration read, and no barrier lies between that read and this copy.
__global__ void carried_overrun(const float *A, float *C, int n) {
  __shared__ float s[S][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int tf = 0;
  for (int k = 0; k < S - 1; ++k, ++tf) {
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    if (tf < n)
      // EXPECT-AUDIT: async-stage-overrun
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    ++tf;
    pipe.consumer_wait();
    __syncthreads();
    acc += s[t % S][255 - tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// A prologue that fills all S buffers: the main loop's copy, S tiles ahead, refills the buffer
// this very iteration reads.
__global__ void prologue_fills_every_buffer(const float *A, float *C, int n) {
  __shared__ float s[S][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int tf = 0;
  for (int k = 0; k < S; ++k, ++tf) {
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  for (int t = 0; t < n; ++t) {
    pipe.consumer_wait();
    __syncthreads();
    pipe.producer_acquire();
    if (tf < n)
      // EXPECT-AUDIT: async-stage-overrun
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    ++tf;
    acc += s[t % S][255 - tid];
    pipe.consumer_release();
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// One commit too many before the loop (an empty group): consumer_wait then leaves S - 1 groups
// in flight, one of which holds the tile read.
__global__ void stray_commit(const float *A, float *C, int n) {
  __shared__ float s[S][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int tf = 0;
  for (int k = 0; k < S - 1; ++k, ++tf) {
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  pipe.producer_commit();
  for (int t = 0; t < n; ++t) {
    pipe.consumer_wait();
    __syncthreads();
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    ++tf;
    // EXPECT-AUDIT: async-read-before-wait
    acc += s[t % S][255 - tid];
    pipe.consumer_release();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The prologue runs a number of times known at run time only: where the counter starts is not
// known, nor how many groups are in flight.
__global__ void prologue_of_run_time_length(const float *A, float *C, int n) {
  __shared__ float s[S][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int tf = 0;
  for (int k = 0; k < min(S - 1, n); ++k, ++tf) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  // EXPECT-AUDIT: async-unknown
  for (int t = 0; t < n; ++t) {
    pipe.consumer_wait();
    __syncthreads();
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    ++tf;
    acc += s[t % S][255 - tid];
    pipe.consumer_release();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// A `continue` before the counter's step skips it in some iterations: the counter is not one step
// an iteration, and the loop is not read.
__global__ void step_skipped(const float *A, const int *skip, float *C, int n) {
  __shared__ float s[S][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int tf = 0;
  for (int k = 0; k < S - 1; ++k, ++tf) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  // EXPECT-AUDIT: async-unknown
  for (int t = 0; t < n; ++t) {
    pipe.consumer_wait();
    __syncthreads();
    acc += s[t % S][255 - tid];
    __syncthreads();
    if (skip[t])
      continue;
    pipe.producer_acquire();
    cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    ++tf;
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The counter's address is taken before the loop: what the pointer writes is not read, nor the
// counter with it.
__global__ void counter_escapes(const float *A, float *C, int n) {
  __shared__ float s[S][256];
  auto pipe = cuda::make_pipeline();
  const int tid = threadIdx.x;
  float acc = 0;
  int tf = 0;
  int *cursor = &tf;
  for (int k = 0; k < S - 1; ++k, ++*cursor) {
    pipe.producer_acquire();
    cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
  }
  // EXPECT-AUDIT: async-unknown
  for (int t = 0; t < n; ++t) {
    pipe.consumer_wait();
    __syncthreads();
    pipe.producer_acquire();
    if (tf < n)
      cuda::memcpy_async(&s[tf % S][tid], &A[tf * 256 + tid], sizeof(float), pipe);
    pipe.producer_commit();
    ++tf;
    acc += s[t % S][255 - tid];
    pipe.consumer_release();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

void launch(const float *A, const float *B, const int *skip, float *C, int n) {
  wait_then_copy<16, 3><<<dim3(64, 64), dim3(16, 16)>>>(A, B, C, n);
  copy_then_wait<<<1024, 256>>>(A, C, n);
  rotating_counters<<<1024, 256>>>(A, C, n);
  carried_overrun<<<1024, 256>>>(A, C, n);
  prologue_fills_every_buffer<<<1024, 256>>>(A, C, n);
  stray_commit<<<1024, 256>>>(A, C, n);
  prologue_of_run_time_length<<<1024, 256>>>(A, C, n);
  step_skipped<<<1024, 256>>>(A, skip, C, n);
  counter_escapes<<<1024, 256>>>(A, C, n);
}
