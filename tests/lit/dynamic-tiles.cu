// Tiles in dynamic shared memory: the extern array itself, a pointer set once into it, the CUDA
// samples' SharedMemory<T>(). Their size is each launch's, so no stages: the register-staged
// prefetch alone, which keeps the one buffer where it is. Anything that is not a fixed view of
// the region stays (tile-declaration), as does what would make the prefetch's registers matter
// to a launch the check cannot see (launch-resources).
//
// RUN: %check_tilepipe "%s" "%t"

template <class T> struct SharedMemory {
  __device__ inline operator T *() { extern __shared__ int words[]; return (T *)words; }
};

namespace HelperView {
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}'pos4' is dynamic shared memory (extern __shared__, through a pointer that views it){{.*}}the register-staged prefetch needs no more shared memory
// CHECK-PLAN: [[@LINE+4]]:3: [pipelined] plan=4:registers pos4=registers/registers
__global__ void k(float4 *out, const float4 *__restrict__ pos, int numTiles) {
  float4 *pos4 = SharedMemory<float4>();
  float ax = 0;
  for (int tile = 0; tile < numTiles; tile++) {
    pos4[threadIdx.x] = pos[tile * blockDim.x + threadIdx.x];
    __syncthreads();
    for (unsigned c = 0; c < blockDim.x; c++) ax += pos4[c].x;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x].x = ax;
}
// CHECK-FIXES: float4 pos4_next[4];
// CHECK-FIXES: pos4_next[slot] = pos[tile * blockDim.x + threadIdx.x];
// CHECK-FIXES: pos4[threadIdx.x] = pos4_next[slot];
} // namespace HelperView

extern __shared__ float region[];
namespace TheArrayItself {
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [pipelined] {{.*}}the register-staged prefetch needs no more shared memory
// CHECK-PLAN: [[@LINE+3]]:3: [pipelined] plan=4:registers region=registers/registers
__global__ void k(float *out, const float *in, int nt) {
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    region[threadIdx.x] = in[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += region[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace TheArrayItself

namespace TwoViews {
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}the register-staged prefetch needs no more shared memory
// CHECK-PLAN: [[@LINE+5]]:3: [pipelined] plan=4:registers As=registers/registers Bs=registers/registers
__global__ void k(float *out, const float *A, const float *B, int nt) {
  extern __shared__ float smem[];
  float *As = smem, *Bs = smem + blockDim.x;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    As[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    Bs[threadIdx.x] = B[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += As[j] * Bs[blockDim.x - 1 - j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace TwoViews

namespace QualifiedView {
// The registers take the element type, not the pointer's qualifiers.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
// CHECK-PLAN: [[@LINE+5]]:3: [pipelined] plan=4:registers p=registers/registers
__global__ void k(float *out, const float *A, int nt) {
  extern __shared__ float smem[];
  float *__restrict__ const p = smem + 8;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    p[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += p[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
// CHECK-FIXES: float p_next[4];
} // namespace QualifiedView

namespace InATemplate {
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}the register-staged prefetch needs no more shared memory
// CHECK-PLAN: [[@LINE+5]]:3: [pipelined] plan=4:registers s=registers/registers
template <class T>
__global__ void k(T *out, const T *A, int nt) {
  T *s = SharedMemory<T>();
  T acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += s[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
// CHECK-FIXES: if constexpr (::cuda::std::is_same_v<T, float> || ::cuda::std::is_same_v<T, double>) { // the instantiations tilepipe analysed
// CHECK-FIXES: T s_next[4];
template __global__ void k<float>(float *, const float *, int);
template __global__ void k<double>(double *, const double *, int);
} // namespace InATemplate

namespace SetTwice {
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [tile-declaration] {{.*}}the copy stores through the pointer 'p': 'smem' is dynamic shared memory (extern __shared__), whose size each launch sets, and the copy does not store into a fixed view of it
__global__ void k(float *out, const float *A, int nt) {
  extern __shared__ float smem[];
  float *p = smem;
  if (blockIdx.x & 1)
    p += 32;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    p[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += p[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace SetTwice

namespace AddressTaken {
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [tile-declaration] {{.*}}the copy stores through the pointer 'p'
__global__ void k(float *out, const float *A, int nt) {
  extern __shared__ float smem[];
  float *p = smem;
  float **pp = &p;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    p[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += (*pp)[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace AddressTaken

namespace MaybeGlobal {
// Every value a call returns must be dynamic shared memory: here one may be `out`.
extern __shared__ float smem[];
__device__ float *either(bool c, float *g) { return c ? smem : g; }
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [tile-declaration] {{.*}}the copy stores through the pointer 'p'
__global__ void k(float *out, const float *A, int nt) {
  float *p = either(nt > 3, out);
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    p[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += p[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace MaybeGlobal

namespace TwoDimensions {
extern __shared__ float grid2[][32];
// CHECK-MESSAGES: :[[@LINE+3]]:3: remark: [tile-declaration] {{.*}}'grid2' is dynamic shared memory (extern __shared__), whose size each launch sets, and the copy does not store into a fixed view of it
__global__ void k(float *out, const float *A, int nt) {
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    grid2[threadIdx.y][threadIdx.x] = A[t * 1024 + threadIdx.y * 32 + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < 32; ++j) acc += grid2[j][threadIdx.x];
    __syncthreads();
  }
  out[blockIdx.x * 1024 + threadIdx.y * 32 + threadIdx.x] = acc;
}
} // namespace TwoDimensions

namespace ReadThroughACopy {
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [tile-escapes] {{.*}}'p' is used as 'p', not read element by element
__global__ void k(float *out, const float *A, int nt) {
  extern __shared__ float smem[];
  float *p = smem;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    p[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    float *q = p;
    for (int j = 0; j < blockDim.x; ++j) acc += q[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace ReadThroughACopy

namespace ComputeWrites {
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [compute-writes-tile] {{.*}}'p[threadIdx.x] = 0'
__global__ void k(float *out, const float *A, int nt) {
  extern __shared__ float smem[];
  float *p = smem;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    p[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += p[j];
    p[threadIdx.x] = 0;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace ComputeWrites

namespace CopiesSharedMemory {
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-source] {{.*}}cannot prove that 'q' points to global memory
__global__ void k(float *out, const float *A, int nt) {
  extern __shared__ float smem[];
  float *p = smem, *q = smem + blockDim.x;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    p[threadIdx.x] = q[threadIdx.x + t];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += p[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace CopiesSharedMemory

namespace InnerCopyLoop {
// One register cannot hold what an inner copy loop stores: no plan is left.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [tile-declaration] {{.*}}nor can the register-staged prefetch, which moves any element, take the loop: a store into 'Kj' is in an inner copy loop
__global__ void k(float *out, const float *A, int nt) {
  extern __shared__ float smem[];
  float *Kj = smem;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int x = 0; x < 4; ++x)
      Kj[threadIdx.x * 4 + x] = A[(t * blockDim.x + threadIdx.x) * 4 + x];
    __syncthreads();
    for (int j = 0; j < blockDim.x * 4; ++j) acc += Kj[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace InnerCopyLoop

namespace AskedAboutOccupancy {
// The program sizes its grid from the runtime's answer, which the registers change.
extern __shared__ float smem[];
// CHECK-MESSAGES: :[[@LINE+3]]:3: remark: [launch-resources] {{.*}}the program asks the runtime about it ('cudaOccupancyMaxActiveBlocksPerMultiprocessor'
__global__ void k(float *out, const float *A, int nt) {
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    smem[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += smem[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
void host() {
  int n;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, 128, 512);
  k<<<n, 128, 512>>>(nullptr, nullptr, 4);
}
} // namespace AskedAboutOccupancy

namespace CalleeElsewhere {
// Code the launch check cannot build counts registers it cannot see.
__device__ void note(float *);
extern __shared__ float smem[];
// CHECK-MESSAGES: :[[@LINE+3]]:3: remark: [launch-resources] {{.*}}it calls 'note', whose body is not in this file
__global__ void k(float *out, const float *A, int nt) {
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    smem[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += smem[j];
    __syncthreads();
  }
  note(&acc);
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace CalleeElsewhere

namespace AutoView {
// The registers are declared in the element type the pointer's declaration writes.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [element-type] {{.*}}the element type of 'p' is written as 'auto', not as the type it points to, 'float'
__global__ void k(float *out, const float *A, int nt) {
  extern __shared__ float smem[];
  auto *p = smem + 8;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    p[threadIdx.x] = A[t * blockDim.x + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < blockDim.x; ++j) acc += p[j];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace AutoView
