// inline_cp_async.cu: the schedule checks (async-stage-overrun, async-read-before-wait) on
// cp.async written as inline assembly, in the helpers real code wraps it in and bare in a
// kernel. A helper is read from its body: one asm statement that copies into a shared address
// made from its pointer parameter, commits, or waits (its count a template parameter). A finding
// is expected on the line after each `EXPECT-AUDIT:` comment, and nowhere else.
constexpr int N = 4;

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async4(void *smem, const void *gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int K> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(K)); }
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// Three ahead, issued before the barrier, no barrier after the read.
__global__ void helpers_overrun(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    // EXPECT-AUDIT: async-stage-overrun
    cp_async4(&s[(t + 3) % N][tid], &A[(t + 3) * 256 + tid]);
    cp_commit();
    cp_wait<3>();
    __syncthreads();
    acc += s[t % N][255 - tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// A barrier after the read, and a wait that leaves one group too many in flight.
__global__ void helpers_wait(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    cp_async4(&s[(t + 3) % N][tid], &A[(t + 3) * 256 + tid]);
    cp_commit();
    cp_wait<4>();
    __syncthreads();
    // EXPECT-AUDIT: async-read-before-wait
    acc += s[t % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Correct: the same with the count that covers the read.
__global__ void helpers_correct(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    cp_async4(&s[(t + 3) % N][tid], &A[(t + 3) * 256 + tid]);
    cp_commit();
    cp_wait<3>();
    __syncthreads();
    acc += s[t % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// Correct: a wait for every group.
__global__ void helpers_wait_all(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    cp_async4(&s[(t + 1) % N][tid], &A[(t + 1) * 256 + tid]);
    cp_commit();
    cp_wait_all();
    __syncthreads();
    acc += s[t % N][255 - tid];
  }
  C[blockIdx.x * 256 + tid] = acc;
}

// The assembly bare in the kernel, as many tiles ahead as there are buffers.
__global__ void bare_asm(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[N][256];
  const int tid = threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; ++t) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&s[(t + N) % N][tid]));
    // EXPECT-AUDIT: async-stage-overrun
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(&A[(t + N) * 256 + tid]));
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group 4;\n" ::);
    __syncthreads();
    acc += s[t % N][255 - tid];
    __syncthreads();
  }
  C[blockIdx.x * 256 + tid] = acc;
}
