// A 1-D stencil whose blocks walk many tiles; RADIUS comes from the build (target_compile_definitions).
// Beside it, tile_products, whose tiles take bulk copies on compute capability 9.0.
#include "tile.h"
#include <cstdio>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

// __restrict__: out and in never overlap, which is what lets tilepipe copy the next tiles of in while
// this one is computed (without it, a store to out might change a tile not yet copied).
__global__ void stencil(float *__restrict__ out, const float *__restrict__ in, const float *w, int n) {
  __shared__ float s[TILE + 2 * RADIUS];
  // The cost model would keep this loop (its halo makes the copies per element, which measured
  // slower than plain loads); the example opts in, to show the build step rewriting it.
  // tilepipe: plan=always
  for (int base = blockIdx.x * TILE; base + TILE + 2 * RADIUS <= n; base += gridDim.x * TILE) {
    s[threadIdx.x] = in[base + threadIdx.x];
    if (threadIdx.x < 2 * RADIUS)
      s[TILE + threadIdx.x] = in[base + TILE + threadIdx.x];
    __syncthreads();
    float acc = 0.0f;
    for (int j = 0; j <= 2 * RADIUS; ++j)
      acc += w[j] * s[threadIdx.x + j];
    out[base + threadIdx.x] = acc;
    __syncthreads();
  }
}

// Each block walks tiles of x that are one contiguous piece of memory each: on compute capability
// 9.0 tilepipe copies each with one bulk copy (cp.async.bulk), through its runtime header
// tilepipe/runtime.cuh, which tilepipe_rewrite() puts on the include path.
__global__ void tile_products(float *__restrict__ out, const float *__restrict__ x, int tiles) {
  __shared__ float s[WIDE];
  float acc = 0.0f;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    s[threadIdx.x] = x[t * WIDE + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x] * s[WIDE - 1 - threadIdx.x];
    __syncthreads();
  }
  out[blockIdx.x * WIDE + threadIdx.x] = acc;
}

/// tile_products on the host, in the same order; the number of outputs that differ.
static int checkTileProducts(const std::vector<float> &x, const std::vector<float> &out, int tiles, int blocks) {
  int bad = 0;
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < WIDE; ++i) {
      float acc = 0.0f;
      for (int t = b; t < tiles; t += blocks)
        acc += x[t * WIDE + i] * x[t * WIDE + WIDE - 1 - i];
      if (std::abs(acc - out[b * WIDE + i]) > 1e-4f * std::max(1.0f, std::abs(acc)) && bad++ == 0)
        std::printf("tile_products: mismatch at block %d, %d: %g != %g\n", b, i, out[b * WIDE + i], acc);
    }
  return bad;
}

int main() {
  const int tiles = 1 << 12, n = tiles * TILE + 2 * RADIUS;
  std::vector<float> in(n), w(2 * RADIUS + 1), out(tiles * TILE);
  for (int i = 0; i < n; ++i)
    in[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
  for (auto &x : w)
    x = 1.0f / w.size();
  float *dIn, *dW, *dOut;
  if (cudaMalloc(&dIn, n * sizeof(float)) != cudaSuccess) {
    std::printf("no usable CUDA device\n");
    return 77;
  }
  cudaMalloc(&dW, w.size() * sizeof(float));
  cudaMalloc(&dOut, out.size() * sizeof(float));
  cudaMemcpy(dIn, in.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dW, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice);
  stencil<<<64, TILE>>>(dOut, dIn, dW, n);
  cudaMemcpy(out.data(), dOut, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
  if (cudaGetLastError() != cudaSuccess)
    return 1;
  // Check against the host.
  for (int i = 0; i < tiles * TILE; ++i) {
    float acc = 0.0f;
    for (int j = 0; j <= 2 * RADIUS; ++j)
      acc += w[j] * in[i + j];
    if (std::abs(acc - out[i]) > 1e-5f) {
      std::printf("mismatch at %d: %g != %g\n", i, out[i], acc);
      return 1;
    }
  }
  std::printf("stencil: %d outputs match the host\n", tiles * TILE);

  const int ptiles = 1024, blocks = 64;
  std::vector<float> x(ptiles * WIDE), prod(blocks * WIDE);
  for (int i = 0; i < ptiles * WIDE; ++i)
    x[i] = static_cast<float>((i * 104729) % 997) / 997.0f;
  float *dX, *dProd;
  cudaMalloc(&dX, x.size() * sizeof(float));
  cudaMalloc(&dProd, prod.size() * sizeof(float));
  cudaMemcpy(dX, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
  tile_products<<<blocks, WIDE>>>(dProd, dX, ptiles);
  cudaMemcpy(prod.data(), dProd, prod.size() * sizeof(float), cudaMemcpyDeviceToHost);
  if (cudaGetLastError() != cudaSuccess || checkTileProducts(x, prod, ptiles, blocks) != 0)
    return 1;
  std::printf("tile_products: %d outputs match the host\n", blocks * WIDE);
  return 0;
}
