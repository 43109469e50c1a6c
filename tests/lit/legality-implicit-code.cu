// Code the program runs that its text does not spell as a call or a store: destructors of
// temporaries and of array elements, a range-for's begin(), default arguments, default member
// initializers, inherited constructors; and bindings that the text spells only through a cast
// to a reference, an asm output or a lambda that returns a reference. Each stores into memory a
// later copy reads, changes what a copy address reads, or lets threads leave before the loop.
// In every kernel the store writes the element of A that the same thread copies next (the
// original's copy sees the new value; a copy issued early would not).
//
// RUN: %check_tilepipe "%s" "%t"

struct Put {
  float *p;
  int i;
  float v;
  __device__ ~Put() {
    if (p)
      p[i] = v;
  }
};

namespace TemporaryDestructor {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}the destructor of a temporary 'Put'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    (void)Put{t + 1 < nt ? A : nullptr, (int)((blockIdx.x * nt + t + 1) * 64 + threadIdx.x), acc};
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace TemporaryDestructor

namespace ArrayElementDestructor {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}the destructor of 'arr'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    Put arr[1] = {{t + 1 < nt ? A : nullptr, (int)((blockIdx.x * nt + t + 1) * 64 + threadIdx.x), acc}};
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ArrayElementDestructor

struct Storing {
  float *p;
  int i;
  __device__ const float *begin() {
    p[i] = 1.0f;
    return nullptr;
  }
  __device__ const float *end() { return nullptr; }
};

namespace RangeForBeginStores {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}'p[i] = 1.0f'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    Storing r{A, (int)((blockIdx.x * nt + t + 1) * 64 + threadIdx.x) % (int)(gridDim.x * nt * 64)};
    for (float x : r)
      acc += x;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace RangeForBeginStores

struct Cursor {
  int off;
  __device__ const float *begin() {
    off += 1;
    return nullptr;
  }
  __device__ const float *end() { return nullptr; }
};

namespace RangeForBeginChangesAnAddress {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  Cursor c{0};
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [address-not-invariant] {{.*}}'c'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + c.off + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    for (float x : c)
      acc += x;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace RangeForBeginChangesAnAddress

__device__ float *gp;
__device__ int clobber() {
  gp[threadIdx.x] = 7.0f;
  return 1;
}
__device__ float plus(float x, int u = clobber()) { return x + u; }
struct Defaulted {
  int u = clobber();
};
struct Base {
  __device__ Base(float *p, int i, float v) { p[i] = v; }
};
struct Derived : Base {
  using Base::Base;
};

namespace DefaultArgument {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}'gp[threadIdx.x] = 7.0f'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += plus(s[threadIdx.x]);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace DefaultArgument

namespace DefaultMemberInitializer {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}'gp[threadIdx.x] = 7.0f'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    Defaulted z;
    acc += s[threadIdx.x] + z.u;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace DefaultMemberInitializer

namespace InheritedConstructor {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}an inherited constructor
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    Derived d(A, (int)(blockIdx.x * nt + t + 1) * 64 + threadIdx.x, acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace InheritedConstructor

namespace CastToReferenceRepointsAPointer {
__global__ void k(float *A, float *C, float *buf, int nt) {
  __shared__ float s[64];
  float acc = 0;
  float *w = buf;
  static_cast<float *&>(w) = A;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}the address of the pointer 'w' is taken or bound to a reference
  for (int t = 0; t + 1 < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    w[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace CastToReferenceRepointsAPointer

namespace AsmOutputRepointsAPointer {
__global__ void k(float *A, float *C, float *buf, int nt) {
  __shared__ float s[64];
  float acc = 0;
  float *w = buf;
  asm("mov.b64 %0, %1;" : "=l"(w) : "l"(A));
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}the address of the pointer 'w' is taken or bound to a reference
  for (int t = 0; t + 1 < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    w[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AsmOutputRepointsAPointer

namespace LambdaReturnsAReference {
__global__ void k(float *A, float *C, float *buf, int nt) {
  __shared__ float s[64];
  float acc = 0;
  float *w = buf;
  auto ref = [&]() -> float *& { return w; };
  ref() = A;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}the address of the pointer 'w' is taken or bound to a reference
  for (int t = 0; t + 1 < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    w[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LambdaReturnsAReference

// Threads that leave before the loop, unseen before: whole-tile copies would stand in for them.
namespace CastToReferenceHidesAnExit {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[32][32];
  int active = 1;
  static_cast<int &>(active) = threadIdx.y >= 16;
  if (!active)
    return;
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}per element: not every thread of the block provably reaches the loop: a 'return'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[((size_t)(blockIdx.x * nt + t) * 32 + threadIdx.y) * 32 + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < 32; ++j)
      acc += s[threadIdx.y][j] * (float)(j + 1);
    __syncthreads();
  }
  C[(blockIdx.x * 32 + threadIdx.y) * 32 + threadIdx.x] = acc;
}
} // namespace CastToReferenceHidesAnExit

struct Leave {
  __device__ ~Leave() {
    if (threadIdx.y < 16)
      asm volatile("exit;");
  }
};

namespace DestructorOfATemporaryExits {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[32][32];
  (void)Leave{};
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined] {{.*}}per element: not every thread of the block provably reaches the loop: inline assembly in '~Leave'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[((size_t)(blockIdx.x * nt + t) * 32 + threadIdx.y) * 32 + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < 32; ++j)
      acc += s[threadIdx.y][j] * (float)(j + 1);
    __syncthreads();
  }
  C[(blockIdx.x * 32 + threadIdx.y) * 32 + threadIdx.x] = acc;
}
} // namespace DestructorOfATemporaryExits
