// What a loop body declares that must stand once in its function: the rewrite holds the body, or
// its compute phase, in two paths (the small-launch test, the copy-engine dispatch), so a label
// would be declared twice and a static variable that outlives the launch would be split between
// launches that take different paths. Beside the safe form: a static __shared__ variable is the
// block's, and a block runs one path.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [unsupported] {{.*}}declares the label 'skip'
namespace LabelInTheBody {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
  skip:
    acc *= 0.5f;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace LabelInTheBody

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [unsupported] {{.*}}declares the static variable 'calls'
namespace StaticDeviceLocal {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    static __device__ int calls;
    acc += s[threadIdx.x] + (threadIdx.x == 0 ? calls++ : 0) * 0.0f;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace StaticDeviceLocal

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace StaticSharedLocal {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    static __shared__ float scale;
    acc += s[threadIdx.x] * scale;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace StaticSharedLocal
