// What the toolkit's headers define and undefine under their own architecture tests is no macro of
// the user's text (P1): `warpSize` is a macro only between sm_30_intrinsics.h's `#define` and
// `#undef`, and `<cstring>` undefines `memset` (which no header made a macro). Names in comments are
// no uses. A macro of the user's defined per architecture still is one.
//
// RUN: %check_tilepipe "%s" "%t"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace HostCodeUsesLibraryNames {
__global__ void k(const float *__restrict__ A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64]; // the same on every __CUDA_ARCH__
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
void launch(const float *A, float *C, int nt) {
  // 64 threads: two of warpSize.
  char name[16];
  memset(name, 0, sizeof(name));
  std::printf("%d %ld\n", (int)strlen(name), (long)time(nullptr));
  k<<<128, 64>>>(A, C, nt);
}
} // namespace HostCodeUsesLibraryNames

#if __CUDA_ARCH__ >= 900
#define LANES 32
#else
#define LANES 64
#endif
namespace HostCodeUsesAMacroOfTheUsersPerArchitecture {
__global__ void k(const float *__restrict__ A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [arch-dependent] {{.*}}'launch' expands 'LANES', which depends on the compute capability
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
void launch(const float *A, float *C, int nt) {
  std::printf("%d lanes\n", LANES);
  k<<<128, 64>>>(A, C, nt);
}
} // namespace HostCodeUsesAMacroOfTheUsersPerArchitecture
#undef LANES
