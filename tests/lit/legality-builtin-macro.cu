// A macro named like a CUDA builtin: the rewrite's own code would read the macro. tilepipe
// refuses every loop of a file that defines one, so this case has a file of its own.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [unsupported]
namespace MacroNamedBlockDim {
__device__ uint3 myDim;
#define blockDim myDim
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x] * blockDim.x;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace MacroNamedBlockDim
#undef blockDim
