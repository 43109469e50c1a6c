// Templates: one text for every instantiation. Instantiations whose rewrites differ leave the
// template alone (instantiations-disagree): here one instantiation's compute phase writes another
// __shared__ array (through a specialized helper, or a branch of `if constexpr` only it keeps), so
// its rewrite needs a barrier after the loop and the other's does not. One bad instantiation
// refuses the whole template; one never instantiated cannot be sized.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+10]]:3: remark: [instantiations-disagree]
namespace InstantiationsDisagree {
template <int N> struct Sink { __device__ static void put(float *, float) {} };
template <> struct Sink<64> { __device__ static void put(float *d, float v) { d[threadIdx.x] += v; } };
template <int N>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[N];
  __shared__ float red[N];
  red[threadIdx.x] = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    Sink<N>::put(red, acc);
    __syncthreads();
  }
  C[threadIdx.x] = acc + red[(threadIdx.x + 1) % N];
}
template __global__ void k<64>(const float *, float *, int);
template __global__ void k<128>(const float *, float *, int);
} // namespace InstantiationsDisagree

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace RewrittenOnceForAllInstantiations {
template <typename E, int TS>
__global__ void k(const E *A, E *C, int nt) {
  __shared__ E s[TS];
  E acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * TS + threadIdx.x];
    __syncthreads();
    acc += s[TS - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
template __global__ void k<float, 64>(const float *, float *, int);
template __global__ void k<double, 128>(const double *, double *, int);
} // namespace RewrittenOnceForAllInstantiations
// CHECK-FIXES: __shared__ E s_stages[3][TS];
// CHECK-FIXES: cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0]))

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [element-type] {{.*}}k<short>
namespace OneBadInstantiation {
template <typename E>
__global__ void k(const E *A, E *C, int nt) {
  __shared__ E s[64];
  E acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[63 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
template __global__ void k<float>(const float *, float *, int);
template __global__ void k<short>(const short *, short *, int);
} // namespace OneBadInstantiation

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [template-not-instantiated]
namespace NotInstantiated {
template <int TS>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[TS];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * TS + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace NotInstantiated

// The same through `if constexpr`: only k<64> keeps the store into 'red', so only its rewrite
// needs the barrier after the loop.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [instantiations-disagree]
namespace InstantiationsDisagreeThroughIfConstexpr {
template <int N>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[N];
  __shared__ float red[N];
  red[threadIdx.x] = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    if constexpr (N == 64) red[threadIdx.x] += acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc + red[(threadIdx.x + 1) % N];
}
template __global__ void k<64>(const float *, float *, int);
template __global__ void k<128>(const float *, float *, int);
} // namespace InstantiationsDisagreeThroughIfConstexpr

// Every instantiation keeps the branch: one text for both, rewritten.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined]
namespace IfConstexprEveryInstantiationKeeps {
template <int N>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[N];
  __shared__ float red[N];
  red[threadIdx.x] = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    if constexpr (N >= 64) red[threadIdx.x] += acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc + red[(threadIdx.x + 1) % N];
}
template __global__ void k<64>(const float *, float *, int);
template __global__ void k<128>(const float *, float *, int);
} // namespace IfConstexprEveryInstantiationKeeps
