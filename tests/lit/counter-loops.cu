// Copy loops over a counter the kernel declares outside the tiled loop, as C-style kernels write
// them (lavaMD: `while (wtx < N) { ...; wtx += T; } wtx = tx;`). The rewrite replays the copy
// phase, counter loop and reset with it, for a later tile: sound where every copy phase and
// every compute phase leaves the counter at one value, the same in every iteration, and the
// counter loop starts at a value the same in every iteration. Each way that can fail has its
// twin, refused with its reason. And tiles of elements whose size is not their alignment
// (float3, lavaMD's four doubles): copies of the alignment, never whole-tile copies.
//
// RUN: %check_tilepipe "%s" "%t"

#define T 64
#define N 100

// lavaMD's shape: the counter declared with the thread's index, reset after the copy loop and
// after the compute phase's own walk over it.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined]
// CHECK-PLAN: {{^}}[[@LINE+7]]:3: [pipelined] plan={{[0-9]+}}:per-element
namespace WhileReset {
__global__ void k(const float *__restrict__ A, const float *__restrict__ Q, float *__restrict__ out, int nt) {
  __shared__ float sA[N], sQ[N];
  int tx = threadIdx.x;
  int wtx = tx;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    while (wtx < N) {
      sA[wtx] = A[t * N + wtx];
      sQ[wtx] = Q[t * N + wtx];
      wtx = wtx + T;
    }
    wtx = tx;
    __syncthreads();
    while (wtx < N) {
      for (int j = 0; j < N; ++j)
        acc += sA[wtx] * sQ[j];
      wtx = wtx + T;
    }
    wtx = tx;
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}
} // namespace WhileReset

// A for loop with no init; the counter set in a block around the loop.
// CHECK-MESSAGES: :[[@LINE+8]]:5: remark: [pipelined]
namespace ForNoInit {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt, int n) {
  __shared__ float s[2 * T];
  int w;
  float acc = 0;
  if (blockIdx.x < n) {
    w = threadIdx.x;
    for (int t = 0; t < nt; ++t) {
      for (; w < 2 * T; w += blockDim.x)
        s[w] = A[t * 2 * T + w];
      w = threadIdx.x;
      __syncthreads();
      acc += s[(threadIdx.x + 5) % (2 * T)];
      __syncthreads();
    }
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ForNoInit

// Started by the copy loop's init: the value before the loop does not matter.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace ForInit {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int w = 7, tx = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (w = tx; w < 2 * T; w += T)
      s[w] = A[t * 2 * T + w];
    w = tx;
    __syncthreads();
    acc += s[(w + 5) % (2 * T)];
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc + w;
}
} // namespace ForInit

// float3: three 4-byte copies an element, sized by alignof; never a whole-tile copy.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined] {{.*}}'sp' holds elements of 12 bytes aligned to 4
// CHECK-PLAN: {{^}}[[@LINE+7]]:3: [pipelined] plan={{[0-9]+}}:per-element
// CHECK-FIXES: ::cuda::memcpy_async(&sp[threadIdx.x], &P[t * T + threadIdx.x],
// CHECK-FIXES-NEXT: ::cuda::aligned_size_t<alignof(decltype(sp[0]))>(sizeof(sp[0])), pipe);
namespace Float3 {
__global__ void k(const float3 *__restrict__ P, float *__restrict__ out, int nt) {
  __shared__ float3 sp[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    sp[threadIdx.x] = P[t * T + threadIdx.x];
    __syncthreads();
    acc += sp[(threadIdx.x + 1) % T].x * sp[threadIdx.x].z;
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace Float3

// In a template: another instantiation's element could be another type, so the rewrite runs in
// k<float3> alone, the instantiation analysed (docs/legality.md, L4).
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}in the instantiations analysed (E = ::float3)
namespace Float3Template {
template <typename E> __global__ void k(const E *__restrict__ P, float *__restrict__ out, int nt) {
  __shared__ E sp[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    sp[threadIdx.x] = P[t * T + threadIdx.x];
    __syncthreads();
    acc += sp[(threadIdx.x + 1) % T].x;
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
template __global__ void k<float3>(const float3 *, float *, int);
} // namespace Float3Template
// CHECK-FIXES: if constexpr (::cuda::std::is_same_v<E, ::float3>) { // the instantiations tilepipe analysed

// Refused: no reset after the copy loop (the next iteration's loop would start at its end).
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [load-phase] {{.*}}'while (w < 2 * T)
namespace NoReset {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int w = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = A[t * 2 * T + w];
      w += T;
    }
    __syncthreads();
    acc += s[(threadIdx.x + 5) % (2 * T)];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace NoReset

// Refused: the first copy loop starts where the declaration left the counter, not at the reset's.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [load-phase] {{.*}}counter 'w' starts at the value it holds where the loop starts, which is not provably 'tx': it is set to 'tx + 1' before the loop
namespace EntryDiffers {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int tx = threadIdx.x, w = tx + 1;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = A[t * 2 * T + w];
      w += T;
    }
    w = tx;
    __syncthreads();
    acc += s[(tx + 5) % (2 * T)];
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}
} // namespace EntryDiffers

// Refused: what the reset reads changes between the counter's first value and the loop.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [load-phase] {{.*}}what 'tx' reads changes between that and the loop
namespace ResetReadsChange {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int tx = threadIdx.x, w = tx;
  tx = tx ^ 1;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = A[t * 2 * T + w];
      w += T;
    }
    w = tx;
    __syncthreads();
    acc += s[(tx + 5) % (2 * T)];
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}
} // namespace ResetReadsChange

// Refused: the compute phase leaves the counter elsewhere.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [load-phase] {{.*}}is not reset to 'tx' by the last statement of the loop's body that changes it ('w = (tx + t) % T')
namespace ComputeMoves {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int tx = threadIdx.x, w = tx;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = A[t * 2 * T + w];
      w += T;
    }
    w = tx;
    __syncthreads();
    acc += s[(w + 5) % (2 * T)];
    w = (tx + t) % T;
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}
} // namespace ComputeMoves

// Refused: reset to a value of the iteration.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [load-phase] {{.*}}is reset to 't % 2', which is not the same in every iteration
namespace ResetByIteration {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int w = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (; w < 2 * T; w += 2)
      s[w] = A[t * 2 * T + w];
    w = t % 2;
    __syncthreads();
    acc += s[(threadIdx.x + 5) % (2 * T)];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
} // namespace ResetByIteration

// Refused: the counter escapes (a pointer could change it).
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [load-phase] {{.*}}counter 'w' escapes
namespace Escapes {
__device__ void bump(int *p) { *p += 1; }
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int tx = threadIdx.x, w = tx;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = A[t * 2 * T + w];
      w += T;
    }
    w = tx;
    __syncthreads();
    acc += s[(tx + 5) % (2 * T)];
    __syncthreads();
  }
  bump(&w);
  out[blockIdx.x * T + tx] = acc + w;
}
} // namespace Escapes

// Refused: the copy phase names the counter elsewhere (it would read the counter, not a value
// the iteration fixes).
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [load-phase] {{.*}}counter 'w' is named elsewhere in the copy phase, by 's2[tx] = A[w]'
namespace NamedElsewhere {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T], s2[T];
  int tx = threadIdx.x, w = tx;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = A[t * 2 * T + w];
      w += T;
    }
    w = tx;
    s2[tx] = A[w];
    __syncthreads();
    acc += s[(tx + 5) % (2 * T)] + s2[tx];
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}
} // namespace NamedElsewhere

// Refused: the copy loop changes its counter other than by its increment.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [load-phase] {{.*}}counter 'w' is changed other than by its increment
namespace ChangedInside {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[4 * T];
  int tx = threadIdx.x, w = tx;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = A[t * 2 * T + w];
      if (A[w] > 0)
        w++;
      w += T;
    }
    w = tx;
    __syncthreads();
    acc += s[(tx + 5) % (2 * T)];
    __syncthreads();
  }
  out[blockIdx.x * T + tx] = acc;
}
} // namespace ChangedInside

// Refused: a goto could enter the loop past the statement that sets the counter.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [load-phase] {{.*}}the function has a goto or a label
namespace Goto {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt) {
  __shared__ float s[2 * T];
  int tx = threadIdx.x, w = tx;
  float acc = 0;
  if (nt < 0)
    goto done;
  for (int t = 0; t < nt; ++t) {
    while (w < 2 * T) {
      s[w] = A[t * 2 * T + w];
      w += T;
    }
    w = tx;
    __syncthreads();
    acc += s[(tx + 5) % (2 * T)];
    __syncthreads();
  }
done:
  out[blockIdx.x * T + tx] = acc;
}
} // namespace Goto

// Refused: set before an enclosing loop, whose later passes reach the tiled loop from its end
// (no statement before the loop in its own passes sets the counter).
// CHECK-MESSAGES: :[[@LINE+7]]:5: remark: [load-phase] {{.*}}no statement before the loop sets it
namespace SetOutsideAnOuterLoop {
__global__ void k(const float *__restrict__ A, float *__restrict__ out, int nt, int reps) {
  __shared__ float s[2 * T];
  int tx = threadIdx.x, w = tx;
  float acc = 0;
  for (int r = 0; r < reps; ++r) {
    for (int t = 0; t < nt; ++t) {
      while (w < 2 * T) {
        s[w] = A[t * 2 * T + w];
        w += T;
      }
      w = tx;
      __syncthreads();
      acc += s[(tx + r) % (2 * T)];
      __syncthreads();
    }
  }
  out[blockIdx.x * T + tx] = acc;
}
} // namespace SetOutsideAnOuterLoop

