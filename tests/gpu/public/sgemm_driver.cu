// The driver of sgemm_tutorial.sh: runs kernels of a public SGEMM tutorial through its own runner
// (run_kernel) on random matrices and writes every result, so that a build of the original
// sources and one of tilepipe's rewrite can be compared bit for bit, and times each kernel.
//
//   sgemm_driver OUT.bin SEED [kernel ...]    (default: 3 to 10, the tiled ones)
//
// The tutorial's kernels assume square sizes that are multiples of their tiles, so the sizes vary
// the tiles per block (K) and the blocks (M = N) in those steps: 0 tiles, fewer tiles than stages, as
// many, and far more, on grids of a few blocks and of thousands.
#include "runner.cuh"
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CK(call)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s (%s)\n", __FILE__, __LINE__, cudaGetErrorString(e_), #call); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

static uint64_t Rng = 1;
static float uniform() { // xorshift64*, 24 bits, in [-1, 1)
  Rng ^= Rng >> 12, Rng ^= Rng << 25, Rng ^= Rng >> 27;
  return float((Rng * 0x2545F4914F6CDD1DULL) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.bin SEED [kernel ...]\n", argv[0]);
    return 2;
  }
  FILE *Out = std::fopen(argv[1], "wb");
  if (!Out)
    return std::perror(argv[1]), 1;
  Rng = std::strtoull(argv[2], nullptr, 10) * 0x9E3779B97F4A7C15ULL + 1;
  std::vector<int> Kernels;
  for (int I = 3; I < argc; ++I)
    Kernels.push_back(std::atoi(argv[I]));
  if (Kernels.empty()) // 11 and 12 need two tiles at least, and read past A and B at K = 0
    for (int K = 3; K <= 10; ++K)
      Kernels.push_back(K);
  struct Size { int M, N, K; bool Time; };
  // Square: the tutorial's kernels take M for N in places (it benchmarks square sizes only).
  const Size Sizes[] = {{128, 128, 0, false},  {256, 256, 32, false},  {128, 128, 64, false},
                        {512, 512, 96, false}, {256, 256, 2048, false}, {8192, 8192, 512, true}};
  cublasHandle_t Handle;
  if (cublasCreate(&Handle) != CUBLAS_STATUS_SUCCESS)
    return std::fprintf(stderr, "cublasCreate failed\n"), 1;
  for (const Size &S : Sizes) {
    size_t NA = size_t(S.M) * S.K, NB = size_t(S.K) * S.N, NC = size_t(S.M) * S.N;
    std::vector<float> HA(NA), HB(NB), HC(NC), Res(NC);
    for (float &V : HA) V = uniform();
    for (float &V : HB) V = uniform();
    for (float &V : HC) V = uniform();
    float *A, *B, *C;
    CK(cudaMalloc(&A, std::max<size_t>(NA, 1) * 4));
    CK(cudaMalloc(&B, std::max<size_t>(NB, 1) * 4));
    CK(cudaMalloc(&C, NC * 4));
    if (NA) CK(cudaMemcpy(A, HA.data(), NA * 4, cudaMemcpyHostToDevice));
    if (NB) CK(cudaMemcpy(B, HB.data(), NB * 4, cudaMemcpyHostToDevice));
    for (int Kn : Kernels) {
      CK(cudaMemcpy(C, HC.data(), NC * 4, cudaMemcpyHostToDevice)); // beta reads it: fresh each time
      run_kernel(Kn, S.M, S.N, S.K, 0.5f, A, B, 0.25f, C, Handle);
      if (cudaError_t E = cudaDeviceSynchronize(); E != cudaSuccess || (E = cudaGetLastError()) != cudaSuccess)
        return std::fprintf(stderr, "kernel %d, M = N = %d, K = %d: %s\n", Kn, S.M, S.K, cudaGetErrorString(E)), 1;
      CK(cudaMemcpy(Res.data(), C, NC * 4, cudaMemcpyDeviceToHost));
      if (std::fwrite(Res.data(), 4, NC, Out) != NC)
        return std::fprintf(stderr, "short write\n"), 1;
      if (!S.Time)
        continue;
      cudaEvent_t E0, E1;
      CK(cudaEventCreate(&E0));
      CK(cudaEventCreate(&E1));
      std::vector<float> Ms;
      for (int R = 0; R < 13; ++R) {
        CK(cudaEventRecord(E0));
        run_kernel(Kn, S.M, S.N, S.K, 0.5f, A, B, 0.25f, C, Handle);
        CK(cudaEventRecord(E1));
        CK(cudaEventSynchronize(E1));
        float T = 0;
        CK(cudaEventElapsedTime(&T, E0, E1));
        if (R >= 3)
          Ms.push_back(T);
      }
      std::sort(Ms.begin(), Ms.end());
      std::printf("time kernel=%d M=%d N=%d K=%d ms=%.4f\n", Kn, S.M, S.N, S.K, 0.5 * (Ms[4] + Ms[5]));
    }
    CK(cudaFree(A));
    CK(cudaFree(B));
    CK(cudaFree(C));
  }
  cublasDestroy(Handle);
  return std::fclose(Out) == 0 ? 0 : 1;
}
