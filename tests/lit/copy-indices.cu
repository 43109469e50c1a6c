// What a copy index is, read from what the code says: a value a call returns may differ between
// threads unless the call reads nothing of the thread's own; a conversion to a narrower integer
// wraps where the arithmetic does not; a parameter the function re-points is no longer the
// global memory it was passed. Each of these took whole-tile or tensor copies wrongly before.
//
// RUN: %check_tilepipe "%s" "%t" -- --mode=tma --tma-min-stage-bytes=0

__device__ int lane() { return threadIdx.x % 4; }
__device__ int tileBase(int b, int nt, int t) { return (b * nt + t) * 256; }

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}per element: '(blockIdx.x * nt + t) * 256 + ty * 16 + tx + sk' is not a uniform value
namespace PerThreadTermFromACall {
__global__ void k(const float *A, float *C, int nt) {
  const int tx = threadIdx.x, ty = threadIdx.y, sk = lane();
  __shared__ float s[16][16];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[ty][tx] = A[(blockIdx.x * nt + t) * 256 + ty * 16 + tx + sk];
    __syncthreads();
    acc += s[tx][ty];
    __syncthreads();
  }
  C[(blockIdx.x * 16 + ty) * 16 + tx] = acc;
}
} // namespace PerThreadTermFromACall
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:per-element

// A call that reads only its arguments stays uniform: the tile is still copied whole.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace UniformTermFromACall {
__global__ void k(const float *A, float *C, int nt) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  __shared__ float s[16][16];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[ty][tx] = A[tileBase(blockIdx.x, nt, t) + ty * 16 + tx];
    __syncthreads();
    acc += s[tx][ty];
    __syncthreads();
  }
  C[(blockIdx.x * 16 + ty) * 16 + tx] = acc;
}
} // namespace UniformTermFromACall
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|engine}}

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}'c' is not a coordinate of the box
namespace NarrowGuardCoordinate {
__global__ void k(const double *x, double *out, int n, int tiles) {
  const int tx = threadIdx.x;
  __shared__ double xs[64];
  double acc = 0;
  for (int t = 0; t < tiles; ++t) {
    unsigned short c = t * 64 + tx;
    xs[tx] = c < n ? x[t * 64 + tx] : 0.0;
    __syncthreads();
    acc += xs[(tx + 1) % 64];
    __syncthreads();
  }
  out[blockIdx.x * 64 + tx] = acc;
}
} // namespace NarrowGuardCoordinate

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [load-source] {{.*}}'src' points to global memory
namespace ParameterRepointedAtSharedMemory {
__global__ void k(const float *src, float *C, int nt) {
  __shared__ float stage[64 * 64];
  stage[threadIdx.x] = 1.0f;
  if (blockIdx.x & 1) src = stage;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = src[(t % 64) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ParameterRepointedAtSharedMemory

// A __device__ function's parameter is what each thread passed: here 4 * threadIdx.x, so the
// copy is per thread, however uniform the index looks inside the function.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined] {{.*}}per element: 't * 1024 + threadIdx.x + off' is not a uniform value
namespace PerThreadParameterOfADeviceFunction {
__device__ float tiles(const float *A, int nt, int off) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 1024 + threadIdx.x + off];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  return acc;
}
__global__ void k(const float *A, float *C, int nt) {
  C[blockIdx.x * 64 + threadIdx.x] = tiles(A, nt, 4 * threadIdx.x);
}
} // namespace PerThreadParameterOfADeviceFunction
// CHECK-PLAN: {{^}}[[@LINE-12]]:3: [pipelined] plan={{[0-9]+}}:per-element

// Unsigned arithmetic widened into the index: `(h - 1 - y) * w` is computed modulo 2^32 and then
// widened to size_t, so its affine form (-w per row of threads) holds modulo 2^32 only, and a
// box computed from it in 64 bits would be off by 2^32 per row. Per element; beside it, the
// same rows in 32-bit arithmetic throughout, which the box computes in too, get it.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined] {{.*}}per element: 'rowStart + t * 32 + threadIdx.x' is not a uniform value
namespace WidenedUnsignedRows {
__global__ void k(const float *img, float *C, unsigned w, unsigned h, int nt) {
  __shared__ float s[8][32];
  const unsigned y = blockIdx.x * 8 + threadIdx.y;
  const size_t rowStart = (h - 1 - y) * w;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = img[rowStart + t * 32 + threadIdx.x];
    __syncthreads();
    acc += s[7 - threadIdx.y][threadIdx.x];
    __syncthreads();
  }
  C[y * 32 + threadIdx.x] = acc;
}
} // namespace WidenedUnsignedRows
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:per-element

// The same through a chain of locals: a plain copy of a local set from the arithmetic.
// CHECK-MESSAGES: :[[@LINE+9]]:3: remark: [pipelined] {{.*}}per element: 'rowStart + t * 32 + threadIdx.x' is not a uniform value
namespace WidenedUnsignedRowsThroughLocals {
__global__ void k(const float *img, float *C, unsigned w, unsigned h, int nt) {
  __shared__ float s[8][32];
  const unsigned y = blockIdx.x * 8 + threadIdx.y;
  const unsigned r = (h - 1 - y) * w;
  const unsigned r2 = r;
  const size_t rowStart = r2;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = img[rowStart + t * 32 + threadIdx.x];
    __syncthreads();
    acc += s[7 - threadIdx.y][threadIdx.x];
    __syncthreads();
  }
  C[y * 32 + threadIdx.x] = acc;
}
} // namespace WidenedUnsignedRowsThroughLocals
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:per-element

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
namespace NarrowRows {
__global__ void k(const float *img, float *C, int w, int h, int nt) {
  __shared__ float s[8][32];
  const int y = blockIdx.x * 8 + threadIdx.y;
  const int rowStart = (h - 1 - y) * w;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = img[rowStart + t * 32 + threadIdx.x];
    __syncthreads();
    acc += s[7 - threadIdx.y][threadIdx.x];
    __syncthreads();
  }
  C[y * 32 + threadIdx.x] = acc;
}
} // namespace NarrowRows
// CHECK-PLAN: {{^}}[[@LINE-9]]:3: [pipelined] plan={{[0-9]+}}:{{16-byte|engine}}

// A division or a shift by a constant is affine where it is exact: `j * 128 / 4` is 32 * j, so
// the inner copy loop's j selects the tile element. `j * 65 / 2` is not exact, and the copies may
// overlap. (Signed values only: an unsigned form holds modulo 2^32, which no division keeps.)
#define NDIM 128
namespace ExactDivisionIsAffine {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float buf[NDIM];
  const int d = threadIdx.x;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    for (int j = 0; j < 4; ++j)
      buf[j * NDIM / 4 + d] = A[(blockIdx.x * nt + t) * NDIM + (j << 5) + d];
    __syncthreads();
    acc += buf[(d * 4 + 1) % NDIM];
    __syncthreads();
  }
  C[blockIdx.x * 32 + d] = acc;
}
} // namespace ExactDivisionIsAffine

namespace InexactDivision {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float buf[NDIM];
  const int d = threadIdx.x;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [tile-overlap]
  for (int t = 0; t < nt; ++t) {
    for (int j = 0; j < 4; ++j)
      buf[j * 65 / 2 + d] = A[(blockIdx.x * nt + t) * NDIM + j * 32 + d];
    __syncthreads();
    acc += buf[(d * 4 + 1) % NDIM];
    __syncthreads();
  }
  C[blockIdx.x * 32 + d] = acc;
}
} // namespace InexactDivision

// Each inner copy loop variable must select the element alone in some subscript. In
// `buf[d][i + j]` both appear, but (i, j) = (0, 1) and (1, 0) store into one element: two copies
// in flight to one element may land in either order. `buf[d + 32 * i][j]` selects by each.
namespace TwoInnerVariablesInOneSubscript {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float buf[32][3];
  const int d = threadIdx.x;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [tile-overlap] {{.*}}the inner copy loop variable 'i' does not select the tile element
  for (int t = 0; t < nt; ++t) {
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        buf[d][i + j] = A[(blockIdx.x * nt + t) * 128 + (d + 32 * (2 * i + j)) % 128];
    __syncthreads();
    acc += buf[(d + 1) % 32][1] + buf[d][0] * buf[d][2];
    __syncthreads();
  }
  C[blockIdx.x * 32 + d] = acc;
}
} // namespace TwoInnerVariablesInOneSubscript

namespace EachInnerVariableSelectsAlone {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float buf[64][2];
  const int d = threadIdx.x;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        buf[d + 32 * i][j] = A[(blockIdx.x * nt + t) * 128 + (d + 32 * i) * 2 + j];
    __syncthreads();
    acc += buf[(d + 1) % 64][1] + buf[d][0];
    __syncthreads();
  }
  C[blockIdx.x * 32 + d] = acc;
}
} // namespace EachInnerVariableSelectsAlone

// One if guards the copies of two tiles, and its else fills both: every element one branch
// stores, the other stores too. The copies stay per element (or by a register prefetch): one
// tensor copy could not replace an if that guards two tiles.
namespace OneIfGuardsTwoTiles {
__global__ void k(float *C, const float *A, const float *B, int M, int N, int K) {
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}the if that guards the copy into 'As' guards other copies too
  for (int t = 0; t < (K + 15) / 16; ++t) {
    if (row < M && t * 16 + tx < K && t * 16 + ty < K && col < N) {
      As[ty][tx] = A[row * K + t * 16 + tx];
      Bs[ty][tx] = B[(t * 16 + ty) * N + col];
    } else {
      Bs[ty][tx] = 0.0f;
      As[ty][tx] = 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < 16; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N)
    C[row * N + col] = acc;
}
} // namespace OneIfGuardsTwoTiles

// The else fills one of the two: the other tile would keep a stale element.
namespace ElseFillsOneOfTwo {
__global__ void k(float *C, const float *A, const float *B, int M, int N, int K) {
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [guard-without-fill] {{.*}}do not write the same tile elements
  for (int t = 0; t < (K + 15) / 16; ++t) {
    if (row < M && t * 16 + tx < K && t * 16 + ty < K && col < N) {
      As[ty][tx] = A[row * K + t * 16 + tx];
      Bs[ty][tx] = B[(t * 16 + ty) * N + col];
    } else {
      As[ty][tx] = 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < 16; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N)
    C[row * N + col] = acc;
}
} // namespace ElseFillsOneOfTwo
