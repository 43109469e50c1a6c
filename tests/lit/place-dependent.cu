// Text whose value depends on where it is written: '__func__' names the function its text is in (a
// lambda's is 'operator()'), and __builtin_LINE(), __builtin_COLUMN(), __builtin_FUNCTION() and
// std::source_location take the place of their text, or in a default argument or a default member
// initializer the place of the call. The rewrite moves the loop's text into lambdas of its own and
// onto other lines and columns, so each such loop is left alone; a source location inside a
// function the loop calls is that function's own, and the loop is rewritten.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [source-text] {{.*}}the loop uses '__func__', which names the function its text is in
namespace FuncInCopyIndex {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    const int i = threadIdx.x * (sizeof(__func__) - 1);
    s[i] = A[(blockIdx.x * nt + t) * 64 + i];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace FuncInCopyIndex

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [source-text] {{.*}}the loop uses '__PRETTY_FUNCTION__'
namespace PrettyFunctionInCompute {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * sizeof(__PRETTY_FUNCTION__);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace PrettyFunctionInCompute

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [source-text] {{.*}}the loop uses '__builtin_LINE()', which takes the place of its text
namespace LineInCompute {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * (__builtin_LINE() % 7);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LineInCompute

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [source-text] {{.*}}the loop uses '__builtin_COLUMN()'
namespace ColumnInCompute {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * (__builtin_COLUMN() % 3);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ColumnInCompute

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [source-text] {{.*}}the loop uses '__builtin_LINE()', which takes the place of its text (in the default argument of 'line')
namespace LineInDefaultArgument {
__device__ float weight(float x, unsigned line = __builtin_LINE()) { return x * (line % 5); }
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += weight(s[(threadIdx.x + 1) % 64]);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LineInDefaultArgument

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [source-text] {{.*}}the loop uses '__builtin_FUNCTION()', which takes the place of its text (in the default initializer of 'where')
namespace FunctionInDefaultMemberInitializer {
struct Tag {
  const char *where = __builtin_FUNCTION();
};
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    Tag tag{};
    acc += s[(threadIdx.x + 1) % 64] * (tag.where[0] == 'k');
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace FunctionInDefaultMemberInitializer

// CHECK-MESSAGES: :[[@LINE+9]]:3: remark: [source-text] {{.*}}the loop uses '__builtin_LINE()', which takes the place of its text (in the default initializer of 'line')
namespace LineInImplicitConstructor {
struct Base {
  unsigned line = __builtin_LINE();
};
struct Mark : Base {};
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    Mark m;
    acc += s[(threadIdx.x + 1) % 64] * (m.line % 5);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LineInImplicitConstructor

// The twin: the source location is written in the function the loop calls, and is its own.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace LineInCalledFunction {
__device__ float weight(float x) { return x * (__builtin_LINE() % 5); }
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += weight(s[(threadIdx.x + 1) % 64]);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LineInCalledFunction
