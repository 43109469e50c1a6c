// Kernels named outside a launch: a harness's table of kernels launched through pointers is
// followed while no launch through a pointer asks for dynamic shared memory and no function
// pointer is handed to a call (both facts of the whole file, hence a file of their own; the
// cases where they do not hold are in legality-launches.cu).
//
// RUN: %check_tilepipe "%s" "%t"

// A harness's table of kernels launched through pointers: followed while no launch through a
// pointer asks for dynamic shared memory and no function pointer is handed to a call.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace KernelTableLaunchedPlainly {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
__global__ void other(const float *A, float *C, int nt) { C[threadIdx.x] = A[threadIdx.x] + nt; }
void launch(const float *A, float *C, int nt) {
  using Kernel = void (*)(const float *, float *, int);
  for (Kernel f : {k, other})
    f<<<1024, 64>>>(A, C, nt);
}
} // namespace KernelTableLaunchedPlainly
