// The pipeline's include goes where the code that needs it sees it: before the first include
// that every compilation sees, if that comes before the rewritten code, else at the top. Here the
// only include follows the kernel.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-FIXES: {{^}}#include <cuda/pipeline>
// CHECK-FIXES: {{^}}#define T 64
#define T 64
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
// CHECK-FIXES: {{^}}#include <cstdio>
#include <cstdio>
void launch(const float *A, float *C, int nt) { k<<<1, T>>>(A, C, nt); }
