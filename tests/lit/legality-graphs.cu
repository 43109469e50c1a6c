// A CUDA graph whose kernel nodes the program reads or sets (their function, arguments and
// dynamic shared memory) launches a kernel with what no launch of its text shows: a tensor map
// built for the captured arguments, or more static shared memory beside the node's dynamic
// shared memory, would be wrong there. Every kernel of such a file is left alone.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources] {{.*}}cudaGraphKernelNodeSetParams
namespace CapturedThenRetargeted {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace CapturedThenRetargeted

void retarget(cudaGraphNode_t node, const float *A2, float *C, int nt) {
  cudaKernelNodeParams p{};
  void *args[] = {&A2, &C, &nt};
  p.kernelParams = args;
  p.sharedMemBytes = 40000;
  cudaGraphKernelNodeSetParams(node, &p);
}

void capture(cudaStream_t s, const float *A, float *C, int nt) {
  CapturedThenRetargeted::k<<<4, 64, 0, s>>>(A, C, nt);
}
