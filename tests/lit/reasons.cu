// One construct per reason ID: each loop gets its reason and is left byte for byte.
//
// RUN: %check_tilepipe "%s" "%t"

#include <cuda_pipeline.h>
#define T 64
__device__ float sum(const float *p) { return p[0] + p[1]; }

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [loop-shape]
namespace LoopShapeExtraStatement {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
    acc *= 0.5f;
  }
  C[threadIdx.x] = acc;
}
} // namespace LoopShapeExtraStatement

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [conditional-barrier]
namespace ConditionalBarrier {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    if (nt > 4) { acc += s[threadIdx.x]; __syncthreads(); }
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ConditionalBarrier

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [control-flow]
namespace Break {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    if (acc > 100.0f) break;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace Break

// A switch takes a break but not a continue: this one continues the tiled loop.
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [control-flow] {{.*}}the body has a 'continue'
namespace ContinueInASwitch {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    switch (t % 3) {
    case 0: acc += s[threadIdx.x]; break;
    case 1: continue;
    default: acc -= s[(threadIdx.x + 1) % T];
    }
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ContinueInASwitch

// A jump in an inner loop's condition (a statement expression) is the body's, not the inner loop's.
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [control-flow] {{.*}}the body has a 'return'
namespace ReturnInAnInnerCondition {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    for (int j = 0; ({ if (acc > 1e30f) return; j < 2; }); ++j)
      acc += s[(threadIdx.x + j) % T];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ReturnInAnInnerCondition

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [control-flow]
namespace Goto {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    if (acc > 100.0f) goto out;
    __syncthreads();
  }
out:
  C[threadIdx.x] = acc;
}
} // namespace Goto

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [loop-condition]
namespace ConditionReadsMemory {
__global__ void k(const float *A, float *C, const int *n) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < *n; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ConditionReadsMemory

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [induction-step]
namespace GeometricStep {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 1; t < nt; t *= 2) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GeometricStep

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [induction-step]
namespace InductionModifiedInBody {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    if (acc > 1.0f) ++t;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace InductionModifiedInBody

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [address-not-invariant]
namespace Gather {
__global__ void k(const float *A, float *C, int nt, const int *idx) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[idx[t] + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace Gather

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [address-not-invariant]
namespace AddressUsesComputedValue {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0; int off = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[off + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    off = (int)acc; // not a step: the value the compute phase gives it
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace AddressUsesComputedValue

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [load-computes]
namespace Scaled {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = 2.0f * A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace Scaled

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [load-computes]
namespace Converted {
__global__ void k(const int *I, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = I[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace Converted

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-source]
namespace SourceIsSharedMemory {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; __shared__ float src[T * 8]; float acc = 0;
  src[threadIdx.x] = C[threadIdx.x];
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = src[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace SourceIsSharedMemory

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [load-phase]
namespace OtherStatementInCopyPhase {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    acc *= 0.5f;
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace OtherStatementInCopyPhase

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [guard-without-fill]
namespace GuardWithoutFill {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    if (t * T + threadIdx.x < 1000) s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardWithoutFill

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [tile-index]
namespace TileIndexVaries {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T * 4]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[(t % 4) * T + threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace TileIndexVaries

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [tile-overlap]
namespace SameElementTwice {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    s[threadIdx.x] = A[t * T + threadIdx.x + 1];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace SameElementTwice

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [compute-writes-tile]
namespace ComputeWritesTile {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    s[threadIdx.x] += 1.0f;
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ComputeWritesTile

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [tile-escapes]
namespace TilePassedOn {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += sum(s);
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace TilePassedOn

// A tile element as a braced initializer's element: read when the element is a value, bound
// (and here written) when it is a reference.
struct TwoValues { float a, b; };
struct OneRef { float &r; };
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [pipelined]
namespace TileReadInBracedInit {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += TwoValues{s[(threadIdx.x + 1) % T], s[threadIdx.x]}.a;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace TileReadInBracedInit

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [tile-escapes] {{.*}}'s' is used as 's[threadIdx.x]'
namespace TileBoundInBracedInit {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    OneRef o{s[threadIdx.x]};
    acc += o.r;
    o.r = acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace TileBoundInBracedInit

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [tile-used-outside]
namespace TileReadAfterLoop {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc + s[0];
}
} // namespace TileReadAfterLoop

// Dynamic shared memory of two dimensions: no fixed view of one (tests/lit/dynamic-tiles.cu has
// those, which the register-staged prefetch takes).
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [tile-declaration] {{.*}}'s' is dynamic shared memory (extern __shared__), whose size each launch sets, and the copy does not store into a fixed view of it
namespace DynamicShared {
__global__ void k(const float *A, float *C, int nt) {
  extern __shared__ float s[][T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[0][threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[0][threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace DynamicShared

// A pointer into dynamic shared memory that the kernel sets again, and the CUDA samples'
// SharedMemory<T> helper kept in a pointer whose address is taken: the same refusal, with what to
// change.
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [tile-declaration] {{.*}}the copy stores through the pointer 's': 'smem' is dynamic shared memory (extern __shared__), whose size each launch sets
namespace DynamicSharedThroughAPointer {
__global__ void k(const float *A, float *C, int nt) {
  extern __shared__ float smem[]; float *s = smem + 32; s += blockIdx.x % 2; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace DynamicSharedThroughAPointer

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [tile-declaration] {{.*}}'__smem' is dynamic shared memory
namespace DynamicSharedHelper {
template <class E> struct SharedMemory {
  __device__ E *get() { extern __shared__ int __smem[]; return (E *)__smem; }
};
__global__ void k(const float *A, float *C, int nt) {
  float *s = SharedMemory<float>().get(); float **where = &s; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += (*where)[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace DynamicSharedHelper

// A pointer into a static tile is no tile either (the copy would have to follow it).
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [load-phase] {{.*}}stores through the pointer 's', not into a tile
namespace PointerIntoAStaticTile {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float buf[2 * T]; float *s = buf + T; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace PointerIntoAStaticTile

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [store-aliases-load]
namespace InPlace {
__global__ void k(float *D, int nt) {
  __shared__ float s[T];
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = D[t * T + threadIdx.x];
    __syncthreads();
    D[t * T + threadIdx.x] = s[T - 1 - threadIdx.x];
    __syncthreads();
  }
}
} // namespace InPlace

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [store-aliases-load]
namespace InPlaceThroughLocalPointer {
__global__ void k(float *D, int nt) {
  __shared__ float s[T]; float *out = D + 5;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = D[t * T + threadIdx.x];
    __syncthreads();
    atomicAdd(&out[t], s[threadIdx.x]);
    __syncthreads();
  }
}
} // namespace InPlaceThroughLocalPointer

// Two-byte elements, stored by an inner copy loop: neither cp.async nor the register prefetch.
// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [element-type]
namespace TwoByteElements {
__global__ void k(const short *S, int *C, int nt) {
  __shared__ short s[T]; int acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < T; i += blockDim.x) s[i] = S[t * T + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace TwoByteElements

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [shared-memory]
namespace TooMuchSharedMemory {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[8192]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 8192; i += blockDim.x) s[i] = A[t * 8192 + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace TooMuchSharedMemory

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [macro]
namespace CopyInMacro {
__global__ void k(const float *A, float *C, int nt) {
#define LOAD(t) s[threadIdx.x] = A[(t) * T + threadIdx.x]
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    LOAD(t);
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace CopyInMacro
#undef LOAD

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [already-pipelined]
namespace AlreadyPipelined {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    __pipeline_memcpy_async(&s[threadIdx.x], &A[t * T + threadIdx.x], 4);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace AlreadyPipelined

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [conditional-barrier]
namespace BarrierInAssembly {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    asm volatile("bar.sync 0;");
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace BarrierInAssembly

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [unsupported]
namespace PragmaOnTheLoop {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
#pragma clang loop unroll(disable)
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace PragmaOnTheLoop

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [unknown-effects]
namespace InlineAssembly {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    asm volatile("membar.gl;");
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace InlineAssembly
