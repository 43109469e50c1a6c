// Locals the copy phase sets: C-style kernels declare every local at their top and set it in the
// loop (lavaMD's `pointer`, `first_j`, `rB`). A local declared before the loop that the copy phase
// sets, at its top level, before anything reads it, is a value of the iteration, as an index
// variable is: the rewrite replays the statement with the copy phase for a later tile. That is
// sound only where nothing but the rest of the copy phase reads it; each way it can fail has its
// twin, refused with its reason.
//
// RUN: %check_tilepipe "%s" "%t"

#define T 64

// CHECK-MESSAGES: :[[@LINE+11]]:3: remark: [pipelined]
// CHECK-PLAN: {{^}}[[@LINE+10]]:3: [pipelined] plan={{[0-9]+}}:16-byte
namespace NeighbourBoxes {
__global__ void k(const float *__restrict__ rv, const int2 *__restrict__ box, const int *__restrict__ nei,
                  float *__restrict__ out) {
  __shared__ float sB[T];
  int bx = blockIdx.x, tx = threadIdx.x;
  int pointer;
  int first_j;
  const float *rB;
  float acc = 0;
  for (int k = 0; k < 1 + box[bx].y; k++) {
    if (k == 0) {
      pointer = bx;
    } else {
      pointer = nei[bx * 26 + k - 1];
    }
    first_j = box[pointer].x;
    rB = &rv[first_j];
    sB[tx] = rB[tx];
    __syncthreads();
    for (int j = 0; j < T; ++j) acc += sB[j];
    __syncthreads();
  }
  out[bx * T + tx] = acc;
}
} // namespace NeighbourBoxes

// An index set at the top of the copy phase, with no value before the loop.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace IndexSetEachIteration {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T];
  int a, row = blockIdx.x * nt;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    a = (row + t) * T;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace IndexSetEachIteration

// Refused: read after the loop, which would see a tile copied ahead.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-phase] {{.*}}the local 'a', set in the copy phase, is used outside the copy phase
namespace ReadAfterTheLoop {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    a = (blockIdx.x * nt + t) * T;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc + a;
}
} // namespace ReadAfterTheLoop

// Refused: read by the compute phase.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-phase] {{.*}}is used outside the copy phase
namespace ReadByTheCompute {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    a = (blockIdx.x * nt + t) * T;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T] * a;
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ReadByTheCompute

// Refused: read by a lambda of the compute phase.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [load-phase] {{.*}}is used outside the copy phase
namespace ReadByALambda {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a;
  float acc = 0;
  auto f = [&]() { return a; };
  for (int t = 0; t < nt; ++t) {
    a = (blockIdx.x * nt + t) * T;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc + f();
}
} // namespace ReadByALambda

// Refused: the loop's condition reads it.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [loop-condition]
namespace ReadByTheCondition {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a = 0;
  float acc = 0;
  for (int t = 0; t < nt && a < 1 << 30; ++t) {
    a = (blockIdx.x * nt + t) * T;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ReadByTheCondition

// Refused: set from its own value, so it carries a value from iteration to iteration.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-phase] {{.*}}the local 'a', set in the copy phase, is read before the copy phase sets it
namespace CarriedAcrossIterations {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a = blockIdx.x * nt * T;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    a = a + T;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace CarriedAcrossIterations

// Refused: set again later in the copy phase.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-phase] {{.*}}the local 'a', set in the copy phase, is set again by 'a += 1'
namespace SetTwice {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    a = (blockIdx.x * nt + t) * T;
    a += 1;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace SetTwice

// Refused: its address is taken, so a store through the pointer may change it.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-phase] {{.*}}the local 'a', set in the copy phase, escapes
namespace AddressTaken {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a; int *p = &a;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    a = (blockIdx.x * nt + t) * T;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc + *p;
}
} // namespace AddressTaken

// Refused: set from memory that may change while the kernel runs.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [address-not-invariant] {{.*}}the local 'a', set in the copy phase, reads memory
namespace SetFromChangingMemory {
__global__ void k(const float *__restrict__ A, const int *idx, float *C, int nt) {
  __shared__ float s[T]; int a;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    a = idx[t];
    s[threadIdx.x] = A[a * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace SetFromChangingMemory

// Refused: only one branch sets it, so the other keeps a value from before.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [guard-without-fill] {{.*}}'if (t % 2)' has no else branch
namespace OneBranchSets {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    if (t % 2) a = (blockIdx.x * nt + t) * T;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace OneBranchSets

// Set from a value that differs between threads: each thread copies its own element (no 16-byte
// chunks spread over the block).
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
// CHECK-PLAN: {{^}}[[@LINE+6]]:3: [pipelined] plan={{[0-9]+}}:per-element
namespace DiffersBetweenThreads {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a;
  float acc = 0;
  // tilepipe: plan=always
  for (int t = 0; t < nt; ++t) {
    a = (blockIdx.x * nt + t) * T + (threadIdx.x % 2) * 4;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace DiffersBetweenThreads

// Chosen by a condition that differs between threads, from two values the same in all of them.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
// CHECK-PLAN: {{^}}[[@LINE+6]]:3: [pipelined] plan={{[0-9]+}}:per-element
namespace ChosenPerThread {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T]; int a;
  float acc = 0;
  // tilepipe: plan=always
  for (int t = 0; t < nt; ++t) {
    if (threadIdx.x % 2) a = (blockIdx.x * nt + t) * T; else a = (blockIdx.x * nt + t) * T + 4;
    s[threadIdx.x] = A[a + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ChosenPerThread
