// Tiles that stay per element (no block-wide 16-byte chunks), each with the reason the remark
// gives; the copy kind itself is read from the report's plan (CHECK-PLAN).
//
// RUN: %check_tilepipe "%s" "%t"

#define T 64

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}is guarded
namespace Guarded {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = t * T + threadIdx.x < ld ? A[t * T + threadIdx.x] : 0.0f;
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace Guarded
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}does not read the rows of a box
namespace ColumnRead {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(t * T + threadIdx.x) * ld];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ColumnRead
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}does not read the rows of a box
namespace TransposedRead {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[16][16];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[t * 16 + threadIdx.x * ld + threadIdx.y];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace TransposedRead
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}is not a uniform value plus uniform multiples of thread indices
namespace InductionStartsPerThread {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = threadIdx.x % 2; t < nt; t += 2) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace InductionStartsPerThread
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined] {{.*}}is not a uniform value plus uniform multiples of thread indices
namespace WhileStartChangedBeforeTheLoop {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[T];
  float acc = 0;
  int k = 0;
  k += threadIdx.x / 32;
  while (k < nt) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
    k += 1;
  }
  C[threadIdx.x] = acc;
}
} // namespace WhileStartChangedBeforeTheLoop
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}is not a uniform value plus uniform multiples of thread indices
namespace SquaredThreadIndex {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x * threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace SquaredThreadIndex
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined] {{.*}}is not a uniform value plus uniform multiples of thread indices
namespace StrideNameDeclaredTwice {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[16][16];
  float acc = 0;
  const int w = ld;
  { int w = 3; acc += w; }
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[t * 16 + threadIdx.y * w + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace StrideNameDeclaredTwice
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}differs between threads
namespace PointerPerThread {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = (A + threadIdx.x)[t * T];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace PointerPerThread
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}are not distinct thread indices
namespace SubscriptNotAThreadIndex {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[T - 1 - threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace SubscriptNotAThreadIndex
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}inside an if or an inner loop
namespace InsideAnIf {
__global__ void k(const float *A, float *C, int nt, int ld) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    if (ld > 0)
      s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace InsideAnIf
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[^ ]*}} s=per-element/per-element
