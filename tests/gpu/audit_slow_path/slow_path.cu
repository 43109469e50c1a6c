// slow_path.cu: what one async-slow-path finding costs. Two kernels stream the same tiles through
// a 2-stage cuda::pipeline of thread scope, each thread copying 16 bytes a tile; they differ only
// in the copy's shape: a plain byte count (`16`), from which CCCL can prove only float's 4-byte
// alignment, so each copy is four 4-byte cp.async instructions (the audit reports it), and
// cuda::aligned_size_t<16>(16), the shape the finding names, one 16-byte cp.async. Both sum the
// same elements in the same order, so their outputs must be bitwise equal.
//   tilepipe audit slow_path.cu        two async-slow-path findings, both copies of stream_plain
//   nvcc -arch=sm_90 -O3 -DSLOW_PATH_MAIN slow_path.cu -o slow_path && ./slow_path
#include <cuda/pipeline>

constexpr int Tile = 1024; // floats per tile: 256 threads x 4

__device__ __forceinline__ float use(const float *s) {
  // Each thread reads four elements another warp copied.
  const int i = (threadIdx.x * 4 + 128) & (Tile - 1);
  return s[i] + s[i + 1] + s[i + 2] + s[i + 3];
}

__global__ void stream_plain(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][Tile];
  auto pipe = cuda::make_pipeline();
  const float *src = A + size_t(blockIdx.x) * n * Tile + 4 * threadIdx.x;
  float acc = 0;
  pipe.producer_acquire();
  cuda::memcpy_async(&s[0][4 * threadIdx.x], src, 16, pipe);
  pipe.producer_commit();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    if (t + 1 < n)
      cuda::memcpy_async(&s[(t + 1) & 1][4 * threadIdx.x], src + (t + 1) * Tile, 16, pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<1>(pipe);
    __syncthreads();
    acc += use(s[t & 1]);
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}

__global__ void stream_aligned(const float *A, float *C, int n) {
  alignas(16) __shared__ float s[2][Tile];
  auto pipe = cuda::make_pipeline();
  const float *src = A + size_t(blockIdx.x) * n * Tile + 4 * threadIdx.x;
  float acc = 0;
  pipe.producer_acquire();
  cuda::memcpy_async(&s[0][4 * threadIdx.x], src, cuda::aligned_size_t<16>(16), pipe);
  pipe.producer_commit();
  for (int t = 0; t < n; ++t) {
    pipe.producer_acquire();
    if (t + 1 < n)
      cuda::memcpy_async(&s[(t + 1) & 1][4 * threadIdx.x], src + (t + 1) * Tile, cuda::aligned_size_t<16>(16), pipe);
    pipe.producer_commit();
    cuda::pipeline_consumer_wait_prior<1>(pipe);
    __syncthreads();
    acc += use(s[t & 1]);
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}

#ifdef SLOW_PATH_MAIN
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main() {
  const int Blocks = 4096, N = 64, Rounds = 21; // 1 GiB of input: from DRAM, not L2
  std::vector<float> HA(size_t(Blocks) * N * Tile);
  std::mt19937 Gen(20261206);
  std::uniform_real_distribution<float> Dist(-1.0f, 1.0f);
  for (float &V : HA)
    V = Dist(Gen);
  float *A, *C1, *C2;
  CHECK(cudaMalloc(&A, HA.size() * sizeof(float)));
  CHECK(cudaMalloc(&C1, size_t(Blocks) * 256 * sizeof(float)));
  CHECK(cudaMalloc(&C2, size_t(Blocks) * 256 * sizeof(float)));
  CHECK(cudaMemcpy(A, HA.data(), HA.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(C1, 0xff, size_t(Blocks) * 256 * sizeof(float)));
  CHECK(cudaMemset(C2, 0xff, size_t(Blocks) * 256 * sizeof(float)));
  cudaEvent_t E0, E1;
  CHECK(cudaEventCreate(&E0));
  CHECK(cudaEventCreate(&E1));
  std::vector<float> Plain, Aligned;
  for (int R = 0; R < Rounds; ++R) // interleaved, so that drift in clocks hits both alike
    for (int V = 0; V < 2; ++V) {
      CHECK(cudaEventRecord(E0));
      if (V == 0)
        stream_plain<<<Blocks, 256>>>(A, C1, N);
      else
        stream_aligned<<<Blocks, 256>>>(A, C2, N);
      CHECK(cudaEventRecord(E1));
      CHECK(cudaEventSynchronize(E1));
      CHECK(cudaGetLastError());
      float Ms;
      CHECK(cudaEventElapsedTime(&Ms, E0, E1));
      (V == 0 ? Plain : Aligned).push_back(Ms);
    }
  std::vector<float> O1(size_t(Blocks) * 256), O2(O1.size());
  CHECK(cudaMemcpy(O1.data(), C1, O1.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(O2.data(), C2, O2.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const bool Equal = std::memcmp(O1.data(), O2.data(), O1.size() * sizeof(float)) == 0;
  std::sort(Plain.begin(), Plain.end());
  std::sort(Aligned.begin(), Aligned.end());
  const float P = Plain[Rounds / 2], Q = Aligned[Rounds / 2];
  const double Bytes = double(HA.size()) * sizeof(float);
  std::printf("| kernel | median ms (%d rounds) | GB/s |\n|---|---:|---:|\n", Rounds);
  std::printf("| stream_plain (4-byte cp.async, the finding) | %.3f | %.0f |\n", P, Bytes / P / 1e6);
  std::printf("| stream_aligned (aligned_size_t<16>) | %.3f | %.0f |\n", Q, Bytes / Q / 1e6);
  std::printf("\nplain / aligned: %.2fx; outputs bitwise equal: %s\n", P / Q, Equal ? "yes" : "NO");
  return Equal ? 0 : 3;
}
#endif
