// Every blocker, not the first: the report lists what else refuses a loop (its `blockers`), so
// that a user can see how far the loop is from a rewrite. Each blocker listed refuses the loop on
// its own; a statement the copy phase refuses is not refused again by the steps after it; a loop
// whose shape or inductions are not known lists no more, since every later step reads them.
//
// RUN: %check_tilepipe "%s" "%t"

#define T 64

// Three blockers, each of its own statement: an index that reads memory, a store that is no tile
// store, and a compute phase that writes the tile.
namespace Three {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [address-not-invariant] {{.*}}'j' reads memory
  // CHECK-BLOCKERS: [[@LINE+1]]:3: address-not-invariant load-phase compute-writes-tile
  for (int t = 0; t < nt; ++t) {
    int j = (int)A[t];
    s[threadIdx.x] = A[(t + j) * T + threadIdx.x];
    C[t] = 1.0f;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    s[0] = acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace Three

// The index read from memory refuses the loop once: the store that uses it is judged as if the
// index were fixed, and refuses nothing more.
namespace OneCause {
__global__ void k(const float *A, const int *P, float *C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [address-not-invariant]
  // CHECK-BLOCKERS: [[@LINE+1]]:3: address-not-invariant
  for (int t = 0; t < nt; ++t) {
    int j = P[t];
    s[threadIdx.x] = A[j * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace OneCause

// A condition that reads memory, and a copy that computes on its read.
namespace ConditionAndCopy {
__global__ void k(const float *A, const int *N, float *C) {
  __shared__ float s[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [loop-condition]
  // CHECK-BLOCKERS: [[@LINE+1]]:3: loop-condition load-computes
  for (int t = 0; t < N[blockIdx.x]; ++t) {
    s[threadIdx.x] = 2.0f * A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ConditionAndCopy

// A third phase: the shape is not known, so nothing after it is read.
namespace ShapeEndsTheList {
__global__ void k(const float *A, const int *N, float *C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [loop-shape]
  // CHECK-BLOCKERS: [[@LINE+1]]:3: loop-shape
  for (int t = 0; t < N[blockIdx.x]; ++t) {
    s[threadIdx.x] = 2.0f * A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
    acc *= 0.5f;
  }
  C[threadIdx.x] = acc;
}
} // namespace ShapeEndsTheList

// A fact of the function beside the loop's own: text that differs per architecture.
namespace FunctionAndLoop {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [compute-writes-tile]
  // CHECK-BLOCKERS: [[@LINE+1]]:3: compute-writes-tile arch-dependent
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
#if __CUDA_ARCH__ >= 900
    acc += s[(threadIdx.x + 1) % T];
#else
    acc += s[threadIdx.x];
#endif
    s[1] = acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace FunctionAndLoop

// One blocker alone is a list of one.
namespace One {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [compute-writes-tile]
  // CHECK-BLOCKERS: [[@LINE+1]]:3: compute-writes-tile
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    s[1] = acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace One
