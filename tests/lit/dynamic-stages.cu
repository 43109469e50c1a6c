// Stages in dynamic shared memory: where two stages of a loop's tiles do not fit in 48 KiB of
// static shared memory, they lie in dynamic shared memory, which a launcher beside the kernel asks
// for; every launch must call it. The refusals say why the stages could not move there.
//
// RUN: %check_tilepipe "%s" "%t"

#define T 4096

// CHECK-MESSAGES: :[[@LINE+18]]:3: remark: [pipelined] {{.*}}the stages in dynamic shared memory, which tilepipe_launch_k asks for (the kernel stops if launched otherwise){{.*}}1 launch site(s) in this file now call tilepipe_launch_k
// CHECK-PLAN: [[@LINE+17]]:3: [pipelined] plan=3:per-element
// CHECK-FIXES: __global__ void k(const float *A, const float *B, float *C, int nt, bool tilepipe_staged = false) {
// CHECK-FIXES-NEXT: // tilepipe: the 3 stages lie in dynamic shared memory, which the kernel's launcher asks for
// CHECK-FIXES-NEXT: #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
// CHECK-FIXES-NEXT: constexpr unsigned live_stages = 1; // the loop as it was, on stage 0
// CHECK-FIXES-NEXT: #else
// CHECK-FIXES-NEXT: constexpr unsigned live_stages = 3;
// CHECK-FIXES-NEXT: #endif
// CHECK-FIXES-NEXT: alignas(16) extern __shared__ unsigned char dynamic_smem[];
// CHECK-FIXES-NEXT: if (!tilepipe_staged) // launched without its launcher, so without room for the stages
// CHECK-FIXES-NEXT: __trap();
// CHECK-FIXES-NEXT: auto &sa_stages = *reinterpret_cast<float (*)[3][T]>(&dynamic_smem[0]);
// CHECK-FIXES-NEXT: auto &sb_stages = *reinterpret_cast<float (*)[3][T]>(&dynamic_smem[(sizeof(sa_stages[0]) * live_stages + 127) / 128 * 128]);
namespace TwoTiles {
__global__ void k(const float *A, const float *B, float *C, int nt) {
  __shared__ float sa[T], sb[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < T; i += blockDim.x) {
      sa[i] = A[t * T + i];
      sb[i] = B[t * T + i];
    }
    __syncthreads();
    acc += sa[threadIdx.x] * sb[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
// CHECK-FIXES: static void tilepipe_launch_k(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, const float *A, const float *B, float *C, int nt) {
// CHECK-FIXES: const ::size_t dynamic_bytes = shared_bytes + (major >= 8 ? 98304 : 32768);
// CHECK-FIXES: (void)::cudaFuncSetAttribute(::TwoTiles::k, ::cudaFuncAttributeMaxDynamicSharedMemorySize,
// CHECK-FIXES: ::TwoTiles::k<<<grid, block, dynamic_bytes, stream>>>(A, B, C, nt, true);
// CHECK-FIXES: void run(const float *A, const float *B, float *C, int nt) { ::TwoTiles::tilepipe_launch_k(64, 256, 0, 0, A, B, C, nt); }
void run(const float *A, const float *B, float *C, int nt) { k<<<64, 256>>>(A, B, C, nt); }
} // namespace TwoTiles

// One text serves both instantiations: the stages of one fit in static shared memory, the other's
// only in dynamic.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [shared-memory] {{.*}}: the stages of TemplateSizes::k<8192> fit only in dynamic shared memory, those of another instantiation in static: one text cannot place both
namespace TemplateSizes {
template <int N>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[N];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < N; i += blockDim.x)
      s[i] = A[t * N + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
void run(const float *A, float *C, int nt) {
  k<1024><<<64, 256>>>(A, C, nt);
  k<8192><<<64, 256>>>(A, C, nt);
}
} // namespace TemplateSizes

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [shared-memory] {{.*}}; nor can they lie in dynamic shared memory: this file does not launch it, so no launch would give the stages their room
namespace NotLaunchedHere {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[3 * T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 3 * T; i += blockDim.x)
      s[i] = A[t * 3 * T + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
} // namespace NotLaunchedHere

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [shared-memory] {{.*}}; nor can they lie in dynamic shared memory: the statement that declares 's' declares more than the loop's tiles
namespace SharedBesideInOneStatement {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[3 * T], total[4];
  float acc = 0;
  total[threadIdx.x % 4] = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 3 * T; i += blockDim.x)
      s[i] = A[t * 3 * T + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = acc + total[0];
}
void run(const float *A, float *C, int nt) { k<<<64, 256>>>(A, C, nt); }
} // namespace SharedBesideInOneStatement

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [shared-memory] {{.*}}; nor can they lie in dynamic shared memory: two stages take 106496 bytes, more than 101376 beside the other shared variables
namespace TooLargeEvenThere {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[6656], u[6656];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 6656; i += blockDim.x) {
      s[i] = A[t * 6656 + i];
      u[i] = A[t * 6656 + i + 1];
    }
    __syncthreads();
    acc += s[threadIdx.x] * u[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
void run(const float *A, float *C, int nt) { k<<<64, 256>>>(A, C, nt); }
} // namespace TooLargeEvenThere

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [shared-memory] {{.*}}; nor can they lie in dynamic shared memory: the kernel has C linkage, so a launch in another file would not pass the parameters tilepipe adds
namespace CLinkage {
extern "C" __global__ void k_c(const float *A, float *C, int nt) {
  __shared__ float s[3 * T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 3 * T; i += blockDim.x)
      s[i] = A[t * 3 * T + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
void run(const float *A, float *C, int nt) { k_c<<<64, 256>>>(A, C, nt); }
} // namespace CLinkage

// A function the kernel calls declares shared memory of its own, which the stages' size does not
// count.
// CHECK-MESSAGES: :[[@LINE+11]]:3: remark: [shared-memory] {{.*}}; nor can they lie in dynamic shared memory: 'red' is a __shared__ variable of a function it calls, which is not counted beside the stages
namespace CalleeShared {
__device__ float total(float v) {
  __shared__ float red[256];
  red[threadIdx.x] = v;
  __syncthreads();
  return red[0] + red[threadIdx.x];
}
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[3 * T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 3 * T; i += blockDim.x)
      s[i] = A[t * 3 * T + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = total(acc);
}
void run(const float *A, float *C, int nt) { k<<<64, 256>>>(A, C, nt); }
} // namespace CalleeShared

// Planned with stages in dynamic shared memory, but not emitted (the loop does not
// begin its line, so the original cannot stand beside the pipeline): left alone, and so are the
// kernel's parameters and its launch.
// CHECK-MESSAGES: :[[@LINE+6]]:18: remark: [unsupported] {{.*}}the loop does not begin its line
// CHECK-FIXES: __global__ void k_cut(const float *A, float *C, int nt) {
// CHECK-FIXES: void run_cut(const float *A, float *C, int nt) { k_cut<<<64, 256>>>(A, C, nt); }
namespace CutFails {
__global__ void k_cut(const float *A, float *C, int nt) {
  __shared__ float s[3 * T];
  float acc = 0; for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 3 * T; i += blockDim.x)
      s[i] = A[t * 3 * T + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
void run_cut(const float *A, float *C, int nt) { k_cut<<<64, 256>>>(A, C, nt); }
} // namespace CutFails

// The region's extern declaration names a variable of the namespace around the kernel: one of
// that name there would be the region.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [name-binding] {{.*}}: 'dynamic_smem', the name the stages' region takes, is declared in a namespace around the kernel
namespace RegionNameTaken {
__device__ float dynamic_smem[4];
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[3 * T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 3 * T; i += blockDim.x)
      s[i] = A[t * 3 * T + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__global__ void other(float *C) { C[threadIdx.x] = dynamic_smem[threadIdx.x % 4]; }
void run(const float *A, float *C, int nt) { k<<<64, 256>>>(A, C, nt); }
} // namespace RegionNameTaken
