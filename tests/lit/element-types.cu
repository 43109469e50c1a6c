// Element types that the copies would move otherwise than the original's assignments: a name
// for an array type (each copy would move the whole array), a volatile part (a copy issued early
// reads memory that someone else changes, or spins on), an operator& of the user's (the copies
// take addresses). Each beside a twin that is rewritten.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [element-type] {{.*}}written as 'Quad', an array of 'float'
namespace TypedefOfAnArray {
typedef float Quad[4];
__global__ void k(const float *A, float *C, int nt) {
  __shared__ Quad s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x / 4][threadIdx.x % 4] = A[(blockIdx.x * nt + t) * 256 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64][threadIdx.x % 4];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}
} // namespace TypedefOfAnArray

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace TypedefOfAScalar {
typedef float Real;
__global__ void k(const float *A, float *C, int nt) {
  __shared__ Real s[64][4];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x / 4][threadIdx.x % 4] = A[(blockIdx.x * nt + t) * 256 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64][threadIdx.x % 4];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}
} // namespace TypedefOfAScalar

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [element-type] {{.*}}volatile part
namespace VolatileMember {
struct Cell { volatile float x; };
__global__ void k(const Cell *A, float *C, int nt) {
  __shared__ Cell s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64].x;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace VolatileMember

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace PlainMember {
struct Cell { float x; };
__global__ void k(const Cell *A, float *C, int nt) {
  __shared__ Cell s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64].x;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace PlainMember

// CHECK-MESSAGES: :[[@LINE+9]]:3: remark: [element-type] {{.*}}operator& may be the user's
namespace MemberAddressOf {
struct Val {
  float v;
  __device__ const Val *operator&() const { return this + 1; }
};
__global__ void k(const Val *A, float *C, int nt) {
  __shared__ Val s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64].v;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace MemberAddressOf

// A non-member operator& anywhere in the file may apply to any class (found by argument-dependent
// lookup): every class element type is then refused, scalars are not.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [element-type] {{.*}}operator& may be the user's
namespace NonMemberAddressOf {
struct Val { float v; };
__device__ const Val *operator&(const Val &x);
__global__ void k(const Val *A, float *C, int nt) {
  __shared__ Val s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64].v;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace NonMemberAddressOf
