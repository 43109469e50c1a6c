// Loop variables, offsets and bounds changed behind the analysis's back (a reference, a pointer,
// a lambda, a device function taking int&, a const member that is not const), and functions in an
// index that read memory; beside the safe forms that are rewritten.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [induction-step]
namespace InductionThroughReference {
__global__ void k(const float *A, float *C, int nt) {
  int t = 0;
  int &tr = t;
  __shared__ float s[64];
  float acc = 0;
  for (; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    if (acc > 100.0f) tr += 1;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace InductionThroughReference

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [loop-condition]
namespace BoundThroughReference {
__global__ void k(const float *A, float *C, int nt) {
  int lim = nt;
  int &lr = lim;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < lim; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    if (acc > 100.0f) lr -= 1;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace BoundThroughReference

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [address-not-invariant]
namespace OffsetThroughPointer {
__global__ void k(const float *A, float *C, int nt) {
  int off = 0;
  int *po = &off;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + off + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; *po = acc > 1.0f;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetThroughPointer

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [induction-step]
namespace InductionThroughLambda {
__global__ void k(const float *A, float *C, int nt) {
  int t = 0;
  auto bump = [&] { ++t; };
  __shared__ float s[64];
  float acc = 0;
  for (; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    if (acc > 100.0f) bump();
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace InductionThroughLambda

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [loop-condition]
namespace BoundThroughLambda {
__global__ void k(const float *A, float *C, int nt) {
  auto shrink = [&] { --nt; };
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; if (acc > 9.0f) shrink();
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace BoundThroughLambda

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [induction-step]
namespace InductionThroughDeviceFunctionReference {
__device__ void inc(int &x) { x += 1; }
__global__ void k(const float *A, float *C, int nt) {
  int t = 0;
  int &tr = t;
  __shared__ float s[64];
  float acc = 0;
  for (; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    if (acc > 100.0f) inc(tr);
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace InductionThroughDeviceFunctionReference

// CHECK-MESSAGES: :[[@LINE+9]]:3: remark: [address-not-invariant]
namespace OffsetKeptByDeviceFunction {
__device__ int *kept;
__device__ void keep(int &x) { kept = &x; }
__global__ void k(const float *A, float *C, int nt) {
  int off = 0;
  keep(off);
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + off + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetKeptByDeviceFunction

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [address-not-invariant]
namespace OffsetReadThroughReferenceMember {
struct Ref { int &x; };
__global__ void k(const float *A, float *C, int nt) {
  int off = 0;
  Ref r{off};
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + r.x + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; if (s[0] > 0.5f) off++;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetReadThroughReferenceMember

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [loop-condition]
namespace BoundReadThroughReferenceMember {
struct Ref { int &x; };
__global__ void k(const float *A, float *C, int n) {
  int lim = n;
  Ref r{lim};
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < r.x; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * n + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    if (s[0] > 0.9f && lim > t + 1) lim--;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace BoundReadThroughReferenceMember

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
namespace OffsetInMemberOfLocalStructIsSafe {
struct Val { int x; };
__global__ void k(const float *A, float *C, int nt) {
  Val v{3};
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + v.x + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetInMemberOfLocalStructIsSafe

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [address-not-invariant]
namespace OffsetChangedByConstMemberCastingAwayConst {
struct N { int v; __device__ void bump() const { if (v < 64) const_cast<N *>(this)->v++; } };
__global__ void k(const float *A, float *C, int nt) {
  N m{0};
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + m.v + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; if (s[0] > 0.5f) m.bump();
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetChangedByConstMemberCastingAwayConst

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [address-not-invariant]
namespace OffsetChangedByConstMemberThroughMutable {
struct M { mutable int v; __device__ void bump() const { if (v < 64) ++v; } };
__global__ void k(const float *A, float *C, int nt) {
  const M m{0};
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + m.v + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; if (s[0] > 0.5f) m.bump();
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetChangedByConstMemberThroughMutable

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [address-not-invariant]
namespace OffsetChangedThroughConstReferenceToMutable {
struct M { mutable int v; };
__device__ void bump(const M &m) { if (m.v < 64) m.v++; }
__global__ void k(const float *A, float *C, int nt) {
  M m{0};
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + m.v + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; if (s[0] > 0.5f) bump(m);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetChangedThroughConstReferenceToMutable

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
namespace OffsetReadByConstMemberIsSafe {
struct G { int v; __device__ int get() const { return v; } };
__global__ void k(const float *A, float *C, int nt) {
  G g{3};
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + g.v + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x] * g.get();
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetReadByConstMemberIsSafe

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined]
namespace OffsetReadThroughConstReferenceIsSafe {
__global__ void k(const float *A, float *C, int nt) {
  int off = 3;
  const int &co = off;
  float bias = co;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + off + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x] + bias;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OffsetReadThroughConstReferenceIsSafe

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
namespace LambdaCapturingByValueIsSafe {
__global__ void k(const float *A, float *C, int nt) {
  int off = 3;
  auto scale = [=](float v) { return v * off; };
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + off + threadIdx.x];
    __syncthreads();
    acc += scale(s[threadIdx.x]);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LambdaCapturingByValueIsSafe

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [address-not-invariant]
namespace ConstexprFunctionThatReadsMemory {
__device__ constexpr int get(const int *p, int i) { return p[i]; }
__global__ void k(const float *A, float *C, const int *idx, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[get(idx, t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ConstexprFunctionThatReadsMemory

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [address-not-invariant]
namespace FunctionNamedMaxThatReadsMemory {
__device__ int *table;
__device__ int max(int a, long b) { return a > table[b] ? a : table[b]; }
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[max(t, 2L) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace FunctionNamedMaxThatReadsMemory

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace PureFunctionInIndex {
__device__ int twice(int i) { return 2 * i; }
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + twice(t) / 2) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace PureFunctionInIndex

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace ToolkitMinInIndex {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + min(t, nt - 1)) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ToolkitMinInIndex
