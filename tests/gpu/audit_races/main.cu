// The harness of tests/gpu/audit_races: runs every kernel of the included source (racy.cu, or
// fixed.cu, the same after the audit's fix-its) on random input, many times, and counts the runs
// whose output differs from the reference in any bit. Output is poisoned before each run. The
// blocks read 1024 slices of the input, 64 MiB in all at 64 tiles: more than L2 holds.
//   nvcc -arch=sm_90 -std=c++17 -DTPV_SOURCE='"racy.cu"' main.cu -o racy
//   ./racy BLOCKS RUNS [KERNEL]   prints: kernel n K wrong_runs runs worst_wrong_elements elements
//                                 (KERNEL: run that kernel only)
#include TPV_SOURCE
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));              \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

using Kernel = void (*)(const float *, float *, int, int, int);
struct Named {
  const char *Name;
  Kernel Fn;
};
#define TPV_NAMED(k) {#k, k},
static const Named Kernels[] = {TPV_AUDIT_KERNELS(TPV_NAMED)};

int main(int argc, char **argv) {
  const int Blocks = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int Runs = argc > 2 ? std::atoi(argv[2]) : 20;
  const char *Only = argc > 3 ? argv[3] : nullptr;
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // a line per case, kept if a later case fails
  const int Tiles[] = {1, 2, 3, 5, 64};
  const int Ks[] = {4, 256};
  const int MaxN = 64, Slices = 1024;
  std::mt19937 Gen(20261205);
  std::uniform_real_distribution<float> Dist(-1.0f, 1.0f);
  std::vector<float> HA(size_t(Slices) * MaxN * 256);
  for (float &V : HA)
    V = Dist(Gen);
  float *A, *C;
  CHECK(cudaMalloc(&A, HA.size() * sizeof(float)));
  CHECK(cudaMalloc(&C, size_t(Blocks) * 256 * sizeof(float)));
  CHECK(cudaMemcpy(A, HA.data(), HA.size() * sizeof(float), cudaMemcpyHostToDevice));
  std::vector<float> Out(size_t(Blocks) * 256), Ref(size_t(Slices) * 256);
  int Failed = 0;
  for (const Named &Kn : Kernels)
    for (int K : Ks)
      for (int n : Tiles) {
        if (Only && std::strcmp(Only, Kn.Name) != 0)
          continue;
        for (int S = 0; S < Slices; ++S) // the reference, in the kernels' order of additions
          for (int I = 0; I < 256; ++I) {
            const float *Slice = &HA[size_t(S) * n * 256];
            float Acc = 0;
            for (int T = 0; T < n; ++T) {
              float Part = 0;
              for (int k = 0; k < K; ++k)
                Part += Slice[T * 256 + ((I + k) & 255)] * static_cast<float>(k + 1);
              Acc += Part;
            }
            Ref[size_t(S) * 256 + I] = Acc;
          }
        int WrongRuns = 0;
        size_t Worst = 0;
        for (int R = 0; R < Runs; ++R) {
          CHECK(cudaMemset(C, 0xff, Out.size() * sizeof(float)));
          Kn.Fn<<<Blocks, 256>>>(A, C, n, K, Slices);
          CHECK(cudaGetLastError());
          CHECK(cudaDeviceSynchronize());
          CHECK(cudaMemcpy(Out.data(), C, Out.size() * sizeof(float), cudaMemcpyDeviceToHost));
          size_t Wrong = 0;
          for (size_t E = 0; E < Out.size(); ++E)
            Wrong += std::memcmp(&Out[E], &Ref[(E / 256 % Slices) * 256 + E % 256], sizeof(float)) != 0;
          WrongRuns += Wrong > 0;
          Worst = Wrong > Worst ? Wrong : Worst;
        }
        Failed += WrongRuns > 0;
        std::printf("%s %d %d %d %d %zu %zu\n", Kn.Name, n, K, WrongRuns, Runs, Worst, Out.size());
      }
  return Failed > 0 ? 3 : 0;
}
