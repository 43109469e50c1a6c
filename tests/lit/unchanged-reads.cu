// Memory read as unchanged: a loop bound, an index or a guard that reads memory is evaluated by the
// rewrite at another time than the original evaluates it (the fetch cursor runs ahead), which is
// the same program only where that memory holds the same values while the kernel runs: a
// `const __restrict__` pointer parameter of the kernel that no store of the kernel writes through,
// __constant__ memory, or a pointer parameter the loop's --assume-noalias covers. Each way the
// proof can fail has its twin, refused with its reason.
//
// RUN: %check_tilepipe "%s" "%t"

#define T 64
struct Box { int offset, nn; };

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace CountAndListConstRestrict {
__global__ void k(const float *__restrict__ A, const Box *__restrict__ boxes, const int *__restrict__ nbr,
                  float *__restrict__ C) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < 1 + boxes[blockIdx.x].nn; ++k) {
    const int src = nbr[boxes[blockIdx.x].offset + k];
    s[threadIdx.x] = A[src * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace CountAndListConstRestrict

// A guard and a pointer read through `->` and `*`.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace GuardArrowAndDeref {
__global__ void k(const float *__restrict__ A, const Box *__restrict__ box, const int *__restrict__ n, float *__restrict__ C) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < *n; ++k) {
    if (k < box->nn)
      s[threadIdx.x] = A[(box->offset + k) * T + threadIdx.x];
    else
      s[threadIdx.x] = 0.0f;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace GuardArrowAndDeref

__constant__ int c_n;
__constant__ int c_list[16];
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [pipelined]
namespace ConstantMemory {
__global__ void k(const float *__restrict__ A, float *__restrict__ C) {
  __shared__ float s[T]; float acc = 0;
  for (int k = 0; k < c_n; ++k) {
    s[threadIdx.x] = A[c_list[k % 16] * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ConstantMemory

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}assumes no other pointer writes what n points to while the kernel runs
namespace PlainPointerUnderAssumeNoAlias {
__global__ void k(const float *A, const int *n, float *C) {
  __shared__ float s[T];
  float acc = 0;
  // tilepipe: assume-noalias=true
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace PlainPointerUnderAssumeNoAlias

// Refused: without __restrict__, the store through C may write n.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [loop-condition] {{.*}}reads memory (n[blockIdx.x])
namespace PlainPointer {
__global__ void k(const float *__restrict__ A, const int *n, float *C) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace PlainPointer

// Refused: __restrict__ without const: nothing says the kernel's callers do not write it elsewhere
// (and under assume-noalias it would be taken).
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [loop-condition]
namespace RestrictNotConst {
__global__ void k(const float *__restrict__ A, int *__restrict__ n, float *__restrict__ C) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace RestrictNotConst

// Refused: the kernel writes through the pointer, after the loop (another block may be in its
// loop then), through a cast and a copy of the pointer.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [loop-condition]
namespace WrittenAfterTheLoop {
__global__ void k(const float *__restrict__ A, const int *__restrict__ n, float *__restrict__ C) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
  int *w = const_cast<int *>(n) + 1;
  w[blockIdx.x] = 0;
}
} // namespace WrittenAfterTheLoop

// Refused: a device function the kernel calls writes it, by an atomic.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [loop-condition]
__device__ void bump(int *p) { atomicAdd(p, 1); }
namespace WrittenByACall {
__global__ void k(const float *__restrict__ A, const int *__restrict__ n, float *__restrict__ C) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
  if (threadIdx.x == 0) bump(const_cast<int *>(n) + gridDim.x);
}
} // namespace WrittenByACall

// Refused: the kernel stores where the analysis cannot follow (a pointer read from memory), which
// may be the count.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [loop-condition]
namespace UnknownStoreInTheKernel {
__global__ void k(const float *__restrict__ A, const int *__restrict__ n, float *__restrict__ C, float *const *P) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
  P[0][threadIdx.x] = acc;
}
} // namespace UnknownStoreInTheKernel

// Refused: a __device__ function's parameter points wherever its callers' arguments do.
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [loop-condition]
__device__ float inDevice(const float *__restrict__ A, const int *__restrict__ n) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  return acc;
}
__global__ void callsInDevice(const float *__restrict__ A, const int *__restrict__ n, float *__restrict__ C) {
  C[blockIdx.x * T + threadIdx.x] = inDevice(A, n);
}

// Refused: a value computed from memory is no copy, even from unchanged memory.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-computes]
namespace ComputedValue {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < nt; ++k) {
    s[threadIdx.x] = 2.0f * A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ComputedValue

// Refused: the element a copy writes, read from memory, is not known from its form.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [address-not-invariant] {{.*}}the tile index 'perm[threadIdx.x]' reads memory
namespace TileIndexFromMemory {
__global__ void k(const float *__restrict__ A, const int *__restrict__ perm, float *__restrict__ C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < nt; ++k) {
    s[perm[threadIdx.x]] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace TileIndexFromMemory

// Refused: a volatile read may see other writers.
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [loop-condition]
namespace VolatileCount {
__global__ void k(const float *__restrict__ A, const volatile int *__restrict__ n, float *__restrict__ C) {
  __shared__ float s[T]; float acc = 0;
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace VolatileCount

// The toolkit's read-only load reads what its argument points to.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace ReadOnlyLoad {
__global__ void k(const float *__restrict__ A, const int *__restrict__ nbr, float *__restrict__ C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < __ldg(&nbr[0]); ++k) {
    s[threadIdx.x] = A[__ldg(nbr + 1 + k) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ReadOnlyLoad

// Refused: __ldg through a pointer without __restrict__.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [loop-condition] {{.*}}reads memory (__ldg(&n[0])) not proven unchanged
namespace ReadOnlyLoadPlainPointer {
__global__ void k(const float *__restrict__ A, const int *n, float *C) {
  __shared__ float s[T];
  float acc = 0;
  for (int k = 0; k < __ldg(&n[0]); ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ReadOnlyLoadPlainPointer

// Refused: the parameter is pointed elsewhere before the loop, at memory the kernel writes.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [loop-condition]
namespace ParameterPointedElsewhere {
__global__ void k(const float *__restrict__ A, const int *__restrict__ n, int *__restrict__ W, float *__restrict__ C) {
  __shared__ float s[T];
  float acc = 0;
  if (blockIdx.x % 2) n = W;
  for (int k = 0; k < n[blockIdx.x]; ++k) {
    s[threadIdx.x] = A[k * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
  W[blockIdx.x] = 0;
}
} // namespace ParameterPointedElsewhere

// The read-only load of one element into the tile is the copy of that element.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
// CHECK-PLAN: {{^}}[[@LINE+5]]:3: [pipelined] plan={{[0-9]+}}:16-byte
namespace ReadOnlyLoadIntoTheTile {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; float acc = 0;
  // tilepipe: plan=always
  for (int k = 0; k < nt; ++k) {
    s[threadIdx.x] = __ldg(&A[k * T + threadIdx.x]);
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ReadOnlyLoadIntoTheTile

// A read-only load into a local the store takes: the copy reads the element itself.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
// CHECK-PLAN: {{^}}[[@LINE+6]]:3: [pipelined] plan={{[0-9]+}}:per-element
// CHECK-FIXES: ::cuda::memcpy_async(&s[threadIdx.x], &(A[k * T + threadIdx.x]),
namespace ReadOnlyLoadThroughALocal {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; float acc = 0;
  // tilepipe: plan=always
  for (int k = 0; k < nt; ++k) {
    float v = __ldg(&A[k * T + threadIdx.x]);
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ReadOnlyLoadThroughALocal

// Refused: a read-only load into a local of another type converts (computes) on the way.
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [load-computes] {{.*}}'v' is not one plain read of global memory
namespace ReadOnlyLoadIntoAWiderLocal {
__global__ void k(const float *__restrict__ A, double *__restrict__ C, int nt) {
  __shared__ double s[T]; double acc = 0;
  for (int k = 0; k < nt; ++k) {
    double v = __ldg(&A[k * T + threadIdx.x]);
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ReadOnlyLoadIntoAWiderLocal

// Refused: a read-only load converted on its way into the tile computes.
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [load-computes]
namespace ReadOnlyLoadConverted {
__global__ void k(const float *__restrict__ A, double *__restrict__ C, int nt) {
  __shared__ double s[T]; double acc = 0;
  for (int k = 0; k < nt; ++k) {
    s[threadIdx.x] = __ldg(&A[k * T + threadIdx.x]);
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ReadOnlyLoadConverted
