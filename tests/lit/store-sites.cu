// Two stores into one tile in one iteration (P4: copies in flight land in no fixed order, so no
// element may be written twice). Stores in the same inner copy loops whose indices give each
// inner variable the same coefficient write one element only where the variables' differences
// bring them together; stores on the two sides of an if whose guard has one value throughout the
// iteration never both run. Pointer parameters offset by assignment (`A = &A[e]`) still point
// into what they were given. A pointer local that views a tile, stored through alone, is a store
// through its cast, where nothing its initializer reads changes before the stores.
//
// RUN: %check_tilepipe "%s" "%t"

// A public tutorial's split copy: the second half STEP columns on, j moves one element at most.
namespace HalvesApart {
template <int BLOCK, int STRIDE>
__global__ void k(int n, int kk, const float *a, const float *b, float *c) {
  constexpr int STEP = BLOCK * STRIDE;
  const int tx = threadIdx.x * STRIDE, ty = threadIdx.y * STRIDE;
  __shared__ float ashare[STEP][2 * STEP];
  float acc = 0;
  const float *end = a + kk;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (const float *p = a + blockIdx.y * STEP * kk; p < end; p += 2 * STEP) {
    for (int i = 0; i < STRIDE; ++i)
      for (int j = 0; j < STRIDE; ++j) {
        ashare[ty + i][tx + j] = p[(ty + i) * kk + tx + j];
        ashare[ty + i][tx + j + STEP] = p[(ty + i) * kk + tx + j + STEP];
      }
    __syncthreads();
    acc += ashare[ty][(tx + 1) % (2 * STEP)];
    __syncthreads();
  }
  c[blockIdx.x * 256 + threadIdx.y * 16 + threadIdx.x] = acc;
}
template __global__ void k<16, 2>(int, int, const float *, const float *, float *);
} // namespace HalvesApart

// One column apart, and j moves one: iteration j = 1 of the first writes what j = 0 of the
// second does.
namespace HalvesTouch {
__global__ void k(int n, int kk, const float *a, float *c) {
  const int tx = threadIdx.x * 2, ty = threadIdx.y * 2;
  __shared__ float ashare[32][64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [tile-overlap] {{.*}}'ashare[ty + i][tx + j]' and 'ashare[ty + i][tx + j + 1]' both write 'ashare' in an inner copy loop
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        ashare[ty + i][tx + j] = a[(t * 32 + ty + i) * kk + tx + j];
        ashare[ty + i][tx + j + 1] = a[(t * 32 + ty + i) * kk + tx + j + 33];
      }
    __syncthreads();
    acc += ashare[ty][(tx + 1) % 64];
    __syncthreads();
  }
  c[blockIdx.x * 256 + threadIdx.y * 16 + threadIdx.x] = acc;
}
} // namespace HalvesTouch

// The bounds-checked copy of a GEMM tutorial: its edge blocks take the guarded side, the others
// the plain one, in every iteration.
namespace SidesOfTheBlocksPlace {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int M, int K) {
  __shared__ float As[32][32];
  const int tid = threadIdx.x, row0 = tid / 32, col = tid % 32;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < K; t += 32) {
    for (int i = 0; i < 32; i += 8) {
      const int row = 32 * blockIdx.y + i + row0;
      if (blockIdx.y == gridDim.y - 1)
        As[i + row0][col] = row < M && col + t < K ? A[row * K + col + t] : 0;
      else
        As[i + row0][col] = A[row * K + col + t];
    }
    __syncthreads();
    acc += As[row0][(col + 1) % 32];
    __syncthreads();
  }
  C[blockIdx.y * 256 + tid] = acc;
}
} // namespace SidesOfTheBlocksPlace

// The guard names the inner variable: iteration i = 0 takes one side, i = 1 the other, and both
// write element tid.
namespace SidesOfTheInnerVariable {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int n) {
  __shared__ float s[65];
  const int tid = threadIdx.x;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [tile-overlap]
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < 2; ++i) {
      if (i == 0)
        s[tid + i] = A[t * 64 + tid];
      else
        s[tid + i - 1] = A[t * 64 + tid + 1];
    }
    __syncthreads();
    acc += s[(tid + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + tid] = acc;
}
} // namespace SidesOfTheInnerVariable

// The guard reads a local the copy phase sets: its value may change between the two stores.
namespace SidesOfALocalTheCopySets {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int n) {
  __shared__ float s[64];
  const int tid = threadIdx.x;
  int lane;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [tile-overlap]
  for (int t = 0; t < n; ++t) {
    lane = tid % 2;
    if (lane)
      s[tid] = A[t * 64 + tid];
    else
      s[tid] = A[t * 64 + (tid ^ 1)];
    __syncthreads();
    acc += s[(tid + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + tid] = acc;
}
} // namespace SidesOfALocalTheCopySets

// A public tutorial's pointer parameters, offset in place by assignment before the loop and
// stepped after the leading barrier.
namespace OffsetByAssignment {
__global__ void k(int N, int K, float *A, float *B, float *C) {
  __shared__ float As[16 * 16];
  __shared__ float Bs[16 * 16];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  A = &A[blockIdx.y * 16 * K];
  B = &B[blockIdx.x * 16];
  float tmp = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}copied from A, B;
  for (int k = 0; k < K; k += 16) {
    As[ty * 16 + tx] = A[ty * K + tx];
    Bs[ty * 16 + tx] = B[ty * N + tx];
    __syncthreads();
    A += 16;
    B = B + 16 * N;
    for (int i = 0; i < 16; i++)
      tmp += As[ty * 16 + i] * Bs[i * 16 + tx];
    __syncthreads();
  }
  C[(blockIdx.y * 16 + ty) * N + blockIdx.x * 16 + tx] = tmp;
}
} // namespace OffsetByAssignment

// Assigned from another parameter: A may point anywhere B does.
namespace AssignedAnotherPointer {
__global__ void k(int N, int K, float *A, float *B, float *C) {
  __shared__ float As[16 * 16];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  if (N > K)
    A = &B[blockIdx.y * 16 * K];
  float tmp = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [load-source] {{.*}}cannot prove that 'A' points to global memory
  for (int k = 0; k < K; k += 16) {
    As[ty * 16 + tx] = A[ty * K + tx + k];
    __syncthreads();
    for (int i = 0; i < 16; i++)
      tmp += As[ty * 16 + i];
    __syncthreads();
  }
  C[(blockIdx.y * 16 + ty) * N + blockIdx.x * 16 + tx] = tmp;
}
} // namespace AssignedAnotherPointer

// cuda-samples' MatrixMulNaiveLargeChunk: views of the tiles and of the sources, a quarter of the
// threads copying.
namespace ViewLocals {
__global__ void k(const float *A, float *C, int wA) {
  __shared__ alignas(16) float As[32][32];
  int t4x = threadIdx.x * 4;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}As in copies of 16 bytes, one per vector the copy phase stores
  for (int a = 0; a < wA; a += 32) {
    if (t4x < 32) {
      float4 *const A4s = reinterpret_cast<float4 *>(&As[threadIdx.y][t4x]);
      const float4 *const A4 = reinterpret_cast<const float4 *>(&A[a + wA * threadIdx.y + t4x]);
      *A4s = *A4;
    }
    __syncthreads();
    acc += As[threadIdx.y][(threadIdx.x + 1) % 32];
    __syncthreads();
  }
  C[threadIdx.y * 32 + threadIdx.x] = acc;
}
} // namespace ViewLocals

// The view's index is set by the copy phase before the view: it may change before the store.
namespace ViewOfALocalTheCopySets {
__global__ void k(const float2 *__restrict__ A, float *C, int n) {
  __shared__ alignas(16) float s[64];
  const int tid = threadIdx.x;
  int x;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [load-phase] {{.*}}the pointer 'd' into a tile reads 'x', which the copy phase may change before a store through it
  for (int t = 0; t < n; ++t) {
    x = 2 * tid;
    float2 *const d = reinterpret_cast<float2 *>(&s[x]);
    *d = A[t * 32 + tid];
    __syncthreads();
    acc += s[(tid + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 32 + tid] = acc;
}
} // namespace ViewOfALocalTheCopySets

// The view is also read: it is no store target alone, and an index variable may not take an
// address into a tile.
namespace ViewAlsoRead {
__global__ void k(const float2 *__restrict__ A, float *C, int n) {
  __shared__ alignas(16) float s[64];
  const int tid = threadIdx.x;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [address-not-invariant]
  for (int t = 0; t < n; ++t) {
    float2 *const d = reinterpret_cast<float2 *>(&s[2 * tid]);
    *d = A[t * 32 + tid];
    acc += (float)(d != nullptr);
    __syncthreads();
    acc += s[(tid + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 32 + tid] = acc;
}
} // namespace ViewAlsoRead

// The view moves before its store: a pointer the copy phase changes.
namespace ViewMoved {
__global__ void k(const float2 *__restrict__ A, float *C, int n) {
  __shared__ alignas(16) float s[66];
  const int tid = threadIdx.x;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [address-not-invariant]
  for (int t = 0; t < n; ++t) {
    float2 *d = reinterpret_cast<float2 *>(&s[2 * tid]);
    d += 1;
    *d = A[t * 32 + tid];
    __syncthreads();
    acc += s[(tid + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 32 + tid] = acc;
}
} // namespace ViewMoved
