// Loops that keep cp.async under --mode=tma, each with the reason the remark gives for no tensor
// or bulk copy: the kernel or the pointer cannot take a map, a box too large, a bulk tile of odd
// bytes, an index that does not step evenly, and each guard or fill a guarded tensor copy refuses.
// The plan (CHECK-PLAN) has no copy-engine path, and no tensor map is written.
//
// RUN: %check_tilepipe "%s" "%t" -- --mode=tma --tma-min-stage-bytes=0

// CHECK-FIXES-NOT: CUtensorMap

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}in a __device__ function
namespace DeviceFunction {

__device__ void tiles(float *C, const float *A, int ld, int nt) {
  __shared__ float s[16][16];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[threadIdx.y * ld + t * 16 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
__global__ void k(float *C, const float *A, int ld, int nt) { tiles(C, A, ld, nt); }
} // namespace DeviceFunction
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}is guarded and has three dimensions; guarded tensor copies take one or two
namespace GuardedThreeDimensions {

__global__ void k(float *C, const float *V, int pitch, int plane, int n, int nt) {
  __shared__ float s[4][4][32];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    const int x = t * 32 + threadIdx.x;
    s[threadIdx.z][threadIdx.y][threadIdx.x] = x < n ? V[threadIdx.z * plane + threadIdx.y * pitch + x] : 0.0f;
    __syncthreads();
    acc += s[3 - threadIdx.z][3 - threadIdx.y][31 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardedThreeDimensions
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined] {{.*}}is not an unchanged parameter of the kernel
namespace PointerNotAParameter {

__global__ void k(float *C, const float *A, int ld, int nt) {
  __shared__ float s[16][16];
  const float *P = A + blockIdx.x * 16 * ld;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = P[threadIdx.y * ld + t * 16 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace PointerNotAParameter
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined] {{.*}}is not made of kernel parameters and constants
namespace StrideFromALocal {

__global__ void k(float *C, const float *A, int ld, int nt) {
  __shared__ float s[16][16];
  const int pitch = ld * 2;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[threadIdx.y * pitch + t * 16 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace StrideFromALocal
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined] {{.*}}declared more than once
namespace KernelDeclaredTwice {

__global__ void k(float *C, const float *A, int ld, int nt);
__global__ void k(float *C, const float *A, int ld, int nt) {
  __shared__ float s[16][16];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[threadIdx.y * ld + t * 16 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace KernelDeclaredTwice
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}s without tensor or bulk copies: copies by the copy engine take every tile of a loop or none, and 'x' cannot take one (the copy into 'x' is inside an if or an inner loop)
namespace OneTileOfTwoCannot {

__global__ void k(float *C, const float *A, const float *X, int nt) {
  __shared__ float s[64], x[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    if (nt > 1)
      x[threadIdx.x] = X[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[63 - threadIdx.x] * x[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace OneTileOfTwoCannot
// CHECK-PLAN: {{^}}[[@LINE-11]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}the box of 's' (2 x 256 elements of 16 bytes) exceeds the 256 elements a tensor copy moves per dimension
namespace BoxTooLarge {

__global__ void k(float4 *C, const float4 *A, int ld, int nt) {
  __shared__ float4 s[2][256];
  float4 acc = make_float4(0, 0, 0, 0);
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[threadIdx.y * ld + t * 256 + threadIdx.x];
    __syncthreads();
    acc.x += s[1 - threadIdx.y][255 - threadIdx.x].x;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace BoxTooLarge
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}s without tensor or bulk copies: 's' holds 248 bytes, not a whole number of the 16-byte units a bulk copy moves
namespace BulkTileOfOddBytes {

__global__ void k(float *C, const float *A, int nt) {
  __shared__ float s[62];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 62 + threadIdx.x];
    __syncthreads();
    acc += s[61 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace BulkTileOfOddBytes
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}the index 'first + threadIdx.x' does not move by a fixed step from tile to tile
namespace IndexDoesNotStepEvenly {

__global__ void k(float *C, const float *A, int nt, int skew) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int first = t * 256 + t / 2 * skew;
    s[threadIdx.x] = A[first + threadIdx.x];
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace IndexDoesNotStepEvenly
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}the index 't * t * 256 + threadIdx.x' does not move by a fixed step from tile to tile
namespace IndexGrowsWithTheSquare {

__global__ void k(float *C, const float *A, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * t * 256 + threadIdx.x];
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace IndexGrowsWithTheSquare
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}the guarded copy into 's' fills '1.0f' where a tensor copy would fill zeros
namespace GuardFillsOne {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i < n ? A[i] : 1.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardFillsOne
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}fills '-0.0f' where a tensor copy would fill zeros
namespace GuardFillsNegativeZero {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i < n ? A[i] : -0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardFillsNegativeZero
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}the copy into 's' is guarded
namespace GuardReadsWhereItFails {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i >= n ? 0.0f : A[i];
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardReadsWhereItFails
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}'i >= lo' bounds a coordinate from below, which a tensor map does not
namespace GuardBoundsFromBelow {
__global__ void k(float *C, const float *A, int lo, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i >= lo && i < n ? A[i] : 0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardBoundsFromBelow
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}the guard '(i < n || n < 0)' is not a conjunction of comparisons
namespace GuardIsADisjunction {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = (i < n || n < 0) ? A[i] : 0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardIsADisjunction
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}'t < 5' does not compare a thread's coordinate with a bound the same in all threads
namespace GuardTestsTheTile {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i < n && t < 5 ? A[i] : 0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardTestsTheTile
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}'(long)i < (long)n' does not compare ints or unsigned ints
namespace GuardComparesLongs {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = (long)i < (long)n ? A[i] : 0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardComparesLongs
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}the bound 'lim' is not made of kernel parameters and constants
namespace GuardBoundFromALocal {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  const int lim = n - blockIdx.x;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i < lim ? A[i] : 0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardBoundFromALocal
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}'i + (int)threadIdx.x' is not a coordinate of the box
namespace GuardCoordinateStepsTwice {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i + (int)threadIdx.x < n ? A[i] : 0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardCoordinateStepsTwice
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}bounds a dimension of the box twice
namespace GuardBoundsOneDimensionTwice {
__global__ void k(float *C, const float *A, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i < n && i < 2 * nt ? A[i] : 0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace GuardBoundsOneDimensionTwice
// CHECK-PLAN: {{^}}[[@LINE-10]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined] {{.*}}the guard 'col < K' does not bound every dimension of the box
namespace GuardLeavesTheRowsUnbounded {

#define T 16
__global__ void k(float *C, const float *A, int M, int K) {
  __shared__ float s[T][T];
  const int row = blockIdx.y * T + threadIdx.y;
  float acc = 0;
  for (int t = 0; t * T < K; ++t) {
    int col = t * T + threadIdx.x;
    s[threadIdx.y][threadIdx.x] = col < K ? A[row * K + col] : 0.0f;
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[row * T + threadIdx.x] = acc;
}
} // namespace GuardLeavesTheRowsUnbounded
#undef T
// CHECK-PLAN: {{^}}[[@LINE-11]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|per-element}}
