// Names that move keep their meaning. The rewrite writes the user's text elsewhere: tiles declared
// in the body before the loop, index declarations again before the compute phase, the copy phase
// and the loop's increments into its lambdas, element types and strides into a host launcher,
// and launch sites as calls of that launcher. Wherever a name would bind to another declaration
// there (or to none), the loop is left alone (name-binding), or the piece that would move stays
// where it is (no tensor copy); beside each, its safe twin is still rewritten.
//
// RUN: %check_tilepipe "%s" "%t"

#define T 32

// A tile declared in the body, whose extent is a constant of the body that hides one outside the
// loop: before the loop the stage arrays would take the outer one's 64 elements, not 256.
namespace HoistedExtentHidden {
constexpr int W = 64;
__global__ void k(const float *A, float *C, int nt) {
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [name-binding] {{.*}}'W' in the declaration of a tile in the loop body, which the rewrite writes before the loop (line [[@LINE+3]]) names the declaration at line [[@LINE+2]], which is not in scope where the rewrite writes it
  for (int t = 0; t < nt; ++t) {
    constexpr int W = 256;
    __shared__ float s[W];
    s[threadIdx.x] = A[t * W + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % W];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc + W;
}
} // namespace HoistedExtentHidden

// Its twin: the extent is the outer constant, the same before the loop.
namespace HoistedExtentOuter {
constexpr int W = 256;
__global__ void k(const float *A, float *C, int nt) {
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    __shared__ float s[W];
    s[threadIdx.x] = A[t * W + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % W];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}
// CHECK-FIXES: __shared__ float s_stages[3][W];
} // namespace HoistedExtentOuter

// The compute phase reads an index built from a copy-phase local that hides the kernel's
// parameter of the same name: both are declared again before the compute phase, in their order,
// so that 'i' is built from the local 'base', as in the loop body.
// CHECK-FIXES:      {{^}}namespace IndexFromAHidingLocal {
// CHECK-FIXES:      {{^ *}}auto &s = s_stages[stage];
// CHECK-FIXES-NEXT: {{^ *}}const int base = t * 64;
// CHECK-FIXES-NEXT: {{^ *}}const int i = base + threadIdx.x;
// CHECK-FIXES-NEXT: {{^ *}}acc += s[(threadIdx.x + 1) % 64] * i;
namespace IndexFromAHidingLocal {
__global__ void k(const float *A, float *C, int nt, int base) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    const int base = t * 64;
    const int i = base + threadIdx.x;
    s[threadIdx.x] = A[i];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * i;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc + base;
}
} // namespace IndexFromAHidingLocal

// The increment at the end of a while loop's body reads a constant of the body that hides the
// kernel's parameter: in the lambda that fetches ahead it would read the parameter. (Refused before
// the names are looked at: a step declared in the body is no loop-invariant step.)
namespace IncrementReadsABodyConstant {
__global__ void k(const float *A, float *C, int nt, int step) {
  __shared__ float s[64];
  float acc = 0;
  int t = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [induction-step] {{.*}}the step of 't' 'step' is computed inside the loop
  while (t < nt) {
    const int step = 2;
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
    t += step;
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc + step;
}
} // namespace IncrementReadsABodyConstant

// A local type of the element's name beside a namespace one: the launcher, beside the kernel,
// would size the map's elements as doubles. The loop is rewritten without tensor copies.
namespace LocalElementTypedef {
typedef double real_t;
__global__ void mm(float *C, const float *A, const float *B, int K) {
  typedef float real_t;
  __shared__ real_t As[T][T];
  __shared__ real_t Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}the element type of 'As' names 'real_t', which the launcher beside the kernel would not find as the kernel does
  for (int t = 0; t < K / T; ++t) {
    As[ty][tx] = A[row * K + t * T + tx];
    Bs[ty][tx] = B[(t * T + ty) * K + col];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * K + col] = acc;
}
void launch(float *C, const float *A, const float *B, int K) {
  mm<<<dim3(K / T, K / T), dim3(T, T)>>>(C, A, B, K);
}
} // namespace LocalElementTypedef

// The same through a row stride: 'pitch / sizeof(real_t)' names the kernel's own type.
namespace LocalTypedefInAStride {
typedef double real_t;
__global__ void mm(float *C, const float *A, const float *B, int K, int pitch) {
  using real_t = float;
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}the row stride '(pitch / sizeof(real_t))' is not made of kernel parameters and constants
  for (int t = 0; t < K / T; ++t) {
    As[ty][tx] = A[row * (pitch / sizeof(real_t)) + t * T + tx];
    Bs[ty][tx] = B[(t * T + ty) * K + col];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * K + col] = acc;
}
void launch(float *C, const float *A, const float *B, int K) {
  mm<<<dim3(K / T, K / T), dim3(T, T)>>>(C, A, B, K, K * 4);
}
} // namespace LocalTypedefInAStride

// Kernels of one name in several namespaces, each launched by every route: unqualified, through a
// namespace alias, qualified, through `using namespace` and through a using-declaration. Each
// launcher has a name of its own, and each launch site calls its kernel's launcher by its name
// from the global namespace.
namespace SameNameKernels {
namespace {
__global__ void k(float *C, const float *A, const float *B, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}by tensor copy
  for (int t = 0; t < K / T; ++t) {
    As[ty][tx] = A[row * K + t * T + tx];
    Bs[ty][tx] = B[(t * T + ty) * K + col];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * K + col] = acc;
}
// CHECK-FIXES: static void [[UNNAMED:tilepipe_launch_k(_[0-9]+)?]](
} // namespace
namespace b {
__global__ void k(float *C, const float *A, const float *B, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}by tensor copy
  for (int t = 0; t < K / T; ++t) {
    As[ty][tx] = A[row * K + t * T + tx];
    Bs[ty][tx] = B[(t * T + ty) * K + col];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += 2.0f * As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * K + col] = acc;
}
// CHECK-FIXES: static void [[B:tilepipe_launch_k(_[0-9]+)?]](
} // namespace b
namespace outer {
extern "C++" {
namespace c {
__global__ void k(float *C, const float *A, const float *B, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}by tensor copy
  for (int t = 0; t < K / T; ++t) {
    As[ty][tx] = A[row * K + t * T + tx];
    Bs[ty][tx] = B[(t * T + ty) * K + col];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += 3.0f * As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * K + col] = acc;
}
// CHECK-FIXES: static void [[C:tilepipe_launch_k(_[0-9]+)?]](
} // namespace c
}
} // namespace outer
namespace al = b;
void launch(float *C, const float *A, const float *B, int K) {
  dim3 g(K / T, K / T), bl(T, T);
  // CHECK-FIXES: ::SameNameKernels::[[UNNAMED]](g, bl, 0, 0, C, A, B, K);
  k<<<g, bl>>>(C, A, B, K);
  // CHECK-FIXES: ::SameNameKernels::b::[[B]](g, bl, 0, 0, C, A, B, K);
  al::k<<<g, bl>>>(C, A, B, K);
  // CHECK-FIXES: ::SameNameKernels::b::[[B]](g, bl, 0, 0, C, A, B, K);
  b::k<<<g, bl>>>(C, A, B, K);
  // CHECK-FIXES: ::SameNameKernels::outer::c::[[C]](g, bl, 0, 0, C, A, B, K);
  outer::c::k<<<g, bl>>>(C, A, B, K);
}
void launchThroughUsing(float *C, const float *A, const float *B, int K) {
  using outer::c::k;
  // CHECK-FIXES: ::SameNameKernels::outer::c::[[C]](dim3(K / T, K / T), dim3(T, T), 0, 0, C, A, B, K);
  k<<<dim3(K / T, K / T), dim3(T, T)>>>(C, A, B, K);
}
namespace user {
using namespace ::SameNameKernels::outer;
void launchThroughDirective(float *C, const float *A, const float *B, int K) {
  // CHECK-FIXES: ::SameNameKernels::outer::c::[[C]](dim3(K / T, K / T), dim3(T, T), 0, 0, C, A, B, K);
  c::k<<<dim3(K / T, K / T), dim3(T, T)>>>(C, A, B, K);
}
} // namespace user
} // namespace SameNameKernels

// A program that asks the runtime about its kernel (a persistent kernel sized from its occupancy)
// would run another grid once the rewrite changes the kernel's registers or shared memory.
namespace OccupancySizedGrid {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [launch-resources] {{.*}}the program asks the runtime about it ('cudaOccupancyMaxActiveBlocksPerMultiprocessor' at line [[@LINE+11]])
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
int blocksPerSm() {
  int n = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, 64, 0);
  return n;
}
} // namespace OccupancySizedGrid
