// What the rewrite writes must mean what the original meant where it is written: a loop that a
// block runs again without a loop statement around it (a lambda called twice, a backward goto)
// keeps a barrier after it; the rewrite's own names capture no name of the program, not even one
// a macro pastes together; a launcher at namespace scope repeats no name the kernel declares
// for itself, nor an attribute only a kernel may have; a launch keeps the order in which its configuration and arguments are evaluated;
// the element type is spelled only where it names the same type; the includes go where every
// compilation sees them.
//
// RUN: %check_tilepipe "%s" "%t"

// The first include stands under a conditional: the pipeline's include goes above it.
// CHECK-FIXES: {{^}}#include <cuda/pipeline>
// CHECK-FIXES-NOT: {{^}}#endif
// CHECK-FIXES: {{^}}#ifdef __CUDA_ARCH__
#ifdef __CUDA_ARCH__
#include <cuda_fp16.h>
#endif

#define T 32
#define CAT(a, b) a##b

// A name the copy phase or the compute phase declares ends with the loop body, before the loop's
// increment: the increment after them in the rewrite's lambdas still reads the kernel's `step`.
// CHECK-FIXES: {{^}}        { // the copy phase's own scope, as in the loop body: its names end before the increment
// CHECK-FIXES-NEXT: {{^}}          auto &s = s_stages[fetch_stage];
// CHECK-FIXES-NEXT: {{^}}          const int step = 4;
// CHECK-FIXES: {{^}}        }
// CHECK-FIXES-NEXT: {{^}}        t += step;
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace BodyNamesEndBeforeTheIncrement {
__global__ void k(const float *A, float *C, int nt, int step) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; t += step) {
    const int step = 4;
    s[threadIdx.x] = A[t * 64 + (threadIdx.x + step) % 64];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace BodyNamesEndBeforeTheIncrement

// A structured binding declared before the loop: the rewrite's lambdas could capture it only
// from C++20.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [unsupported] {{.*}}the loop names the structured binding 'lo'
namespace OuterStructuredBinding {
struct Range { int lo, hi; };
__global__ void k(const float *A, float *C, int nt, Range r) {
  __shared__ float s[64];
  float acc = 0;
  auto [lo, hi] = r;
  for (int t = lo; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * hi;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OuterStructuredBinding

namespace RunTwiceByALambda {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  auto run = [&](int base) {
    // CHECK-MESSAGES: :[[@LINE+1]]:5: remark: [pipelined]
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[(base + t) * 64 + threadIdx.x];
      __syncthreads();
      acc += s[(threadIdx.x + 1) % 64];
      __syncthreads();
    }
  };
  run(0);
  run(nt);
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
// CHECK-FIXES: __syncthreads(); // the buffers may be refilled when this block {{runs}} again
} // namespace RunTwiceByALambda

namespace RunTwiceByAGoto {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  int base = 0;
again:
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(base + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  if (base == 0) {
    base = nt;
    goto again;
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
// CHECK-FIXES: __syncthreads(); // the buffers may be refilled when this block {{runs}} again
} // namespace RunTwiceByAGoto

namespace PastedNames {
__constant__ int stage = 5;
__constant__ float As_next = 0.25f;
__device__ float As_stages[3][T];
__global__ void k(const float *in, float *out, int nt) {
  __shared__ float As[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    As[threadIdx.x] = in[t * T + threadIdx.x];
    __syncthreads();
    acc += As[(threadIdx.x + 1) % T] * CAT(As, _next) + CAT(sta, ge) + CAT(As, _stages)[1][threadIdx.x];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
// CHECK-FIXES: __shared__ float As_stages{{_1}}[
} // namespace PastedNames

namespace LocalConstantHidesAGlobal {
constexpr int LD = 512;
__global__ void mm(float *C, const float *A, const float *B) {
  static constexpr int LD = 1024;
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}As without tensor or bulk copies: the row stride 'LD'
  for (int t = 0; t < LD / T; ++t) {
    As[ty][tx] = A[row * LD + t * T + tx];
    Bs[ty][tx] = B[(t * T + ty) * LD + col];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * LD + col] = acc;
}
} // namespace LocalConstantHidesAGlobal

namespace LaunchArgumentWithAnEffect {
__global__ void mm(float *C, const float *A, const float *B, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}1 launch site(s) in this file now call tilepipe_launch_mm; 1 launch site(s) left as they are (written in a macro, with a configuration or arguments that may have effects
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
  mm<<<dim3(K / T, K / T), dim3(T, T)>>>(C, A, B, K *= 2);
}
} // namespace LaunchArgumentWithAnEffect

namespace GridConstantParameter {
struct Params {
  int K;
  float scale;
};
__global__ void gc(float *C, const float *A, const float *B, const __grid_constant__ Params p) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < p.K / T; ++t) {
    As[ty][tx] = A[row * p.K + t * T + tx];
    Bs[ty][tx] = B[(t * T + ty) * p.K + col];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * p.K + col] = acc * p.scale;
}
// The launcher, a host function, repeats the parameter without the kernel-only attribute.
// CHECK-FIXES: static void tilepipe_launch_gc({{.*}}, const {{ *}}Params p) {
} // namespace GridConstantParameter

namespace ElementTypeNameHidden {
typedef float real;
__global__ void k(const real *in, float *out, int nt) {
  __shared__ real As[T];
  const double real = 1.0;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unsupported] {{.*}}the element type of 'As' ('real') names 'real', which the function also declares
  for (int t = 0; t < nt; ++t) {
    As[threadIdx.x] = in[t * T + threadIdx.x];
    __syncthreads();
    acc += As[(threadIdx.x + 1) % T] * (float)real;
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ElementTypeNameHidden

namespace ParenthesizedDeclarator {
__global__ void k(const float *in, float *out, int nt) {
  __shared__ float (Bs)[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    Bs[threadIdx.x] = in[t * T + threadIdx.x];
    __syncthreads();
    acc += Bs[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
// CHECK-FIXES: __shared__ float (Bs_stages{{\[}}3])[T];
// CHECK-FIXES-NOT: float {{\(}}Bs)[T]
} // namespace ParenthesizedDeclarator

// The launcher reads the kernel's text where the kernel ends: there, after a pop_macro, 'LD' is
// the file's, not the kernel's. No tensor copy (its map would stride by the wrong 'LD').
#define LD 512
// CHECK-MESSAGES: :[[@LINE+11]]:3: remark: [pipelined] {{.*}}'LD' is not made of kernel parameters and constants
namespace MacroRestoredBeforeTheLauncher {
#pragma push_macro("LD")
#undef LD
#define LD K
__global__ void mm(float *C, const float *A, const float *B, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int t = 0; t < K / T; ++t) {
    As[ty][tx] = A[row * LD + t * T + tx];
    Bs[ty][tx] = B[(t * T + ty) * LD + col];
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * LD + col] = acc;
#pragma pop_macro("LD")
}
} // namespace MacroRestoredBeforeTheLauncher

// One launch text in a host template whose instantiations launch different overloads: it is not
// turned into a call of the launcher of one of them.
namespace LaunchSiteOfTwoOverloads {
__global__ void mm(float *C, const float *A, const float *B, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}no launch of mm in this file was rewritten{{.*}}in a template whose instantiations launch other kernels there
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
__global__ void mm(double *C, const double *A, const double *B, long long K) { C[threadIdx.x] = A[threadIdx.x] * B[0] + K; }
template <class F, class I> void multiply(F *C, const F *A, const F *B, I K) {
  mm<<<dim3(K / T, K / T), dim3(T, T)>>>(C, A, B, K);
}
template void multiply<float, int>(float *, const float *, const float *, int);
template void multiply<double, long long>(double *, const double *, const double *, long long);
} // namespace LaunchSiteOfTwoOverloads

// Macros the host pass alone defines are names the rewrite's own variables avoid too. (And the
// whole-tile copies spread each tile over the block: a barrier stands before the first ones.)
// CHECK-FIXES: {{^ *}}__syncthreads(); // each thread copies chunks that other threads may have written before the loop
// CHECK-FIXES: {{^ *}}int stage_{{[0-9]+}} = 0;
#ifndef __CUDA_ARCH__
#define stage 0
#endif
namespace HostOnlyMacroName {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace HostOnlyMacroName
