// The rewrite reorders the loop's text (the header's increment and condition after the copy
// phase) and repeats it (the compute phase once per copy path): a directive in the loop that
// changes the preprocessor's state would be read at other places. Only conditionals that open
// and close inside one piece, and #pragma unroll, leave it as it was.
//
// RUN: %check_tilepipe "%s" "%t"

#define STEP 1
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [source-text] {{.*}}a #undef directive at line
namespace MacroRedefinedInTheBody {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; t += STEP) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
#undef STEP
#define STEP 2
    __syncthreads();
    acc += s[threadIdx.x] * STEP;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace MacroRedefinedInTheBody
#undef STEP

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [source-text] {{.*}}a #pragma directive at line
namespace MacroPushedInTheBody {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
#pragma push_macro("W")
#define W 3.0f
    acc += s[threadIdx.x] * W;
#pragma pop_macro("W")
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace MacroPushedInTheBody

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [source-text] {{.*}}a _Pragma operator at line
namespace PragmaOperatorInTheBody {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    _Pragma("push_macro(\"W\")") acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace PragmaOperatorInTheBody

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace UnrollPragmasAndAConditional {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
#pragma unroll 4
    for (int j = 0; j < 8; ++j)
      acc += s[(threadIdx.x + j) % 64];
    _Pragma("unroll") for (int j = 0; j < 2; ++j) acc += s[j];
#if defined(EXTRA)
    acc += 1.0f;
#endif
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace UnrollPragmasAndAConditional

// __COUNTER__ counts each expansion and __LINE__ numbers the line it stands on: the rewrite's
// moved and repeated text would expand them to other values.
#define TRACE(m) (m |= 1u << __COUNTER__)
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [source-text] {{.*}}expands '__COUNTER__' at line
namespace CounterInTheBody {
__global__ void k(const float *A, float *C, unsigned *M, int nt) {
  __shared__ float s[64];
  float acc = 0;
  unsigned m = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    TRACE(m);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
  M[blockIdx.x * 64 + threadIdx.x] = m;
}
} // namespace CounterInTheBody

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [source-text] {{.*}}expands '__LINE__' at line
namespace LineInTheBody {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x] * __LINE__;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LineInTheBody

// The rewrite spells the tile's element type inside the loop: a macro redefined between the
// declaration and the loop would name another type there.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [source-text] {{.*}}from the declaration of 's' to the loop holds a #undef
namespace ElementMacroRedefinedBeforeTheLoop {
#define ELEM float
__global__ void k(const float *A, float *C, int nt) {
  __shared__ ELEM s[64];
#undef ELEM
#define ELEM long long
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
#undef ELEM
} // namespace ElementMacroRedefinedBeforeTheLoop

// The twin: a conditional between the declaration and the loop changes no name.
// CHECK-MESSAGES: :[[@LINE+9]]:3: remark: [pipelined]
namespace ConditionalBetweenDeclarationAndLoop {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
#ifdef TILEPIPE_LIT_NEVER_DEFINED
  float acc = 1;
#else
  float acc = 0;
#endif
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ConditionalBetweenDeclarationAndLoop
