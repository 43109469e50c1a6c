// Copy-phase locals: a tile store that reads a local set once from global memory is a copy of
// that read, and the pipeline copies the read where the store stands. Each legal form that must
// not be read so is refused with its reason, beside the close form that is rewritten.
//
// RUN: %check_tilepipe "%s" "%t"

__device__ float pass(float x) { return x; }
#define LOAD(name) float name = A[(blockIdx.x * nt + t) * 64 + threadIdx.x]
#define STORE_V s[threadIdx.x] = v

// A local read once and stored once: a copy of that read.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}per element: the copy into 's' reads through the local 'v'
namespace Plain {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace Plain

// Comments between the local and its store, and inside the store, change nothing.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}reads through the local 'v'
namespace CommentsInTheWay {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x]; // the element
    /* then the tile */
    s[threadIdx.x] = /* v */ v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace CommentsInTheWay

// A reference is no copy of the element: it names global memory, which the loop reads again
// whenever the reference is used.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-phase] {{.*}}'const float &v = A{{\[}}(blockIdx.x * nt + t) * 64 + threadIdx.x{{\]}};' is not a plain index variable
namespace AReference {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    const float &v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AReference

// A lambda that reads the local: where its body runs cannot be seen from the store.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [unsupported] {{.*}}the loop holds a lambda
namespace ReadByALambda {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    auto get = [&] { return v; };
    s[threadIdx.x] = get();
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ReadByALambda

// Passed to a device function, the local is an operand, not the stored element (A is unchanged
// while the kernel runs, so v is an index variable, but what is stored is no copy).
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-computes] {{.*}}'pass(v)' is not one plain read of global memory
namespace PassedToADeviceFunction {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    s[threadIdx.x] = pass(v);
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace PassedToADeviceFunction

// The local declared by a macro: its text cannot be moved to the store.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [macro] {{.*}}the copy 'LOAD(v);' is written in a macro
namespace DeclaredByAMacro {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    LOAD(v);
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace DeclaredByAMacro

// The store written by a macro.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [macro] {{.*}}is written in a macro
namespace StoredByAMacro {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    STORE_V;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoredByAMacro

// An early return between the read and its store leaves the loop body.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [control-flow] {{.*}}the body has a 'return'
namespace AnEarlyReturnBetween {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    if (nt > 1000000) return;
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AnEarlyReturnBetween

// Read by the compute phase too: the pipeline would read a later tile's value there, were v copied
// through (A is unchanged while the kernel runs, so v is an index variable, but what is stored
// through it is no copy).
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-computes] {{.*}}'v' is not one plain read of global memory
namespace ReadAgainByTheCompute {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * v;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ReadAgainByTheCompute

// The loop also stores through a pointer the read may alias: without __restrict__ the
// read ahead could miss that store.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [store-may-alias] 
namespace AliasingStore {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    s[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    C[blockIdx.x * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AliasingStore
