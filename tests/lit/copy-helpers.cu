// Copy helpers and vector reads: a call of a function whose body is one store through its pointer
// parameter stores into the tile element its argument addresses; one whose body returns one read
// through its pointer parameter reads global memory at its argument; the compute phase may read a
// tile as vectors, through such a helper or a cast, from elements whose offsets are provably
// multiples of the vector's width. Each close form that is not such a call or read is refused
// with its reason.
//
// RUN: %check_tilepipe "%s" "%t"

__device__ float4 ld_vec(const float *address) { return *reinterpret_cast<const float4 *>(address); }
__device__ void st_vec(float *address, float4 val) { *reinterpret_cast<float4 *>(address) = val; }
__device__ void st1(float *p, float v) { *p = v; }
__device__ float ld1(const float *p) { return *p; }
__device__ void stref(float *&p, float v) { *p = v; }
__device__ void stconv(float *p, double v) { *p = v; }
__device__ void sttwice(float *p, float v) {
  *p = v;
  *p = v;
}
namespace h {
using vec = float2;
__device__ void st(float *p, vec v) { *reinterpret_cast<vec *>(p) = v; }
__device__ vec ld(const float *p) { return *reinterpret_cast<const vec *>(p); }
} // namespace h
struct vec {
  int a;
};

// llm.c's copy: each helper call is one 16-byte copy from its argument's address; the compute
// phase reads the tiles as float4 at si % 32, si a multiple of 4 by its start and its step.
// CHECK-MESSAGES: :[[@LINE+13]]:3: remark: [pipelined] {{.*}}lhs_s in copies of 16 bytes, one per vector the copy phase stores
// CHECK-FIXES: ::cuda::memcpy_async(&lhs_s[y][xo], (inp + y * K + so + xo),
// CHECK-FIXES-NEXT: ::cuda::aligned_size_t<16>(16), pipe);
// CHECK-FIXES-NEXT: ::cuda::memcpy_async(&rhs_s[y][xo], (weight + y * K + so + xo),
// CHECK-FIXES-NEXT: ::cuda::aligned_size_t<16>(16), pipe);
namespace VectorHelpers {
__global__ void k(float *out, const float *inp, const float *weight, int K) {
  __shared__ float lhs_s[64][32];
  __shared__ float rhs_s[64][32];
  inp += 64 * blockIdx.x * K;
  weight += 64 * blockIdx.y * K;
  float acc = 0;
  int si_start = 4 * (16 * threadIdx.y + threadIdx.x);
  for (int so = 0; so < K; so += 32) {
    __syncthreads();
    int xo = 4 * (threadIdx.x % 8);
    for (int y = 2 * threadIdx.y + threadIdx.x / 8; y < 64; y += 32) {
      st_vec(&lhs_s[y][xo], ld_vec(inp + y * K + so + xo));
      st_vec(&rhs_s[y][xo], ld_vec(weight + y * K + so + xo));
    }
    __syncthreads();
    for (int si = si_start; si < si_start + 32; si += 4) {
      float4 a = ld_vec(&lhs_s[threadIdx.x][si % 32]);
      float4 b = reinterpret_cast<const float4 *>(&rhs_s[threadIdx.y][si % 32])[0];
      acc += a.x * b.x + a.w * b.w;
    }
  }
  out[blockIdx.x * 256 + threadIdx.y * 16 + threadIdx.x] = acc;
}
} // namespace VectorHelpers

// Scalar helpers: one element from the argument's address, sized by the tile's own name.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
// CHECK-FIXES: ::cuda::memcpy_async(&t[threadIdx.x], (in + b + threadIdx.x),
// CHECK-FIXES-NEXT: ::cuda::aligned_size_t<sizeof(t[0])>(sizeof(t[0])), pipe);
namespace ScalarHelpers {
__global__ void k(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    st1(&t[threadIdx.x], ld1(in + b + threadIdx.x));
    __syncthreads();
    acc += t[255 - threadIdx.x];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
} // namespace ScalarHelpers

// The register-staged prefetch declares its registers in the helper's vector type by its full
// name: `vec` here is another type.
// CHECK-MESSAGES: :[[@LINE+9]]:3: remark: [pipelined] rewritten with a register-staged prefetch
// CHECK-FIXES: ::float2 t_next[4];
//
namespace HelperTypeElsewhere {
__global__ void k(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  vec unused{0};
  // tilepipe: plan=model
  for (int b = 0; b < n; b += 256) {
    if (threadIdx.x < 128)
      h::st(&t[2 * threadIdx.x], h::ld(in + b + 2 * threadIdx.x));
    __syncthreads();
    for (int k = 0; k < 256; ++k)
      acc += t[k];
    __syncthreads();
  }
  out[threadIdx.x] = acc + unused.a;
}
} // namespace HelperTypeElsewhere

// A helper of two statements, one whose pointer is a reference, one that converts its value:
// no one store each.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [load-phase] the copy phase holds a statement that is not a tile copy: 'sttwice(&t[threadIdx.x], in[b + threadIdx.x])'
// CHECK-MESSAGES: :[[@LINE+17]]:3: remark: [address-not-invariant] {{.*}}the index variable 'p' takes an address
// CHECK-MESSAGES: :[[@LINE+28]]:3: remark: [load-phase] {{.*}}'stconv(&t[threadIdx.x], in[b + threadIdx.x])'
namespace NotHelpers {
__global__ void twice(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    sttwice(&t[threadIdx.x], in[b + threadIdx.x]);
    __syncthreads();
    acc += t[255 - threadIdx.x];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void ref(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    float *p = &t[threadIdx.x];
    stref(p, in[b + threadIdx.x]);
    __syncthreads();
    acc += t[255 - threadIdx.x];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void conv(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    stconv(&t[threadIdx.x], in[b + threadIdx.x]);
    __syncthreads();
    acc += t[255 - threadIdx.x];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
} // namespace NotHelpers

// A helper store into global memory, a load helper reading shared memory, a conditional value.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [load-phase] {{.*}}stores through the pointer 'out', not into a tile
// CHECK-MESSAGES: :[[@LINE+18]]:3: remark: [address-not-invariant] {{.*}}'ld1(&u[threadIdx.x])'
// CHECK-MESSAGES: :[[@LINE+28]]:3: remark: [load-phase] {{.*}}stores a conditional value
namespace HelperMisuse {
__global__ void toGlobal(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    st1(&out[threadIdx.x], ld1(in + b + threadIdx.x));
    t[threadIdx.x] = in[b + threadIdx.x];
    __syncthreads();
    acc += t[255 - threadIdx.x];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void fromShared(float *out, const float *in, int n) {
  __shared__ float t[256], u[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    t[threadIdx.x] = ld1(&u[threadIdx.x]);
    __syncthreads();
    acc += t[255 - threadIdx.x];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void conditional(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    st1(&t[threadIdx.x], b + threadIdx.x < n ? in[b + threadIdx.x] : 0.f);
    __syncthreads();
    acc += t[255 - threadIdx.x];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
} // namespace HelperMisuse

// Vector reads that are refused: from an element whose index steps by one, or by a variable a
// lambda bumps by one; a store through the cast; the cast kept in a pointer.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [tile-escapes] {{.*}}read as vectors of 4 elements from an element not provably a multiple of 4 ('k')
// CHECK-MESSAGES: :[[@LINE+23]]:3: remark: [tile-escapes] {{.*}}not provably a multiple of 4 ('k')
// CHECK-MESSAGES: :[[@LINE+35]]:3: remark: [tile-escapes] {{.*}}through 'reinterpret_cast<float4 *>(&t[0])', not read as one vector
// CHECK-MESSAGES: :[[@LINE+47]]:3: remark: [tile-escapes] {{.*}}through 'reinterpret_cast<const float4 *>(&t[0])', not read as one vector
namespace VectorReads {
__global__ void stepOne(float *out, const float *in, int n) {
  __shared__ float t[260];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    t[threadIdx.x] = in[b + threadIdx.x];
    __syncthreads();
    for (int k = 0; k < 64; k++) {
      float4 v = *reinterpret_cast<const float4 *>(&t[k]);
      acc += v.x + v.w;
    }
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void lambdaBump(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  int k = 0;
  auto bump = [&] { k += 1; };
  for (int b = 0; b < n; b += 256) {
    t[threadIdx.x] = in[b + threadIdx.x];
    __syncthreads();
    float4 v = *reinterpret_cast<const float4 *>(&t[k % 64 * 4]), w = *reinterpret_cast<const float4 *>(&t[k]);
    bump();
    acc += v.x + w.y;
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void writeThrough(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    t[threadIdx.x] = in[b + threadIdx.x];
    __syncthreads();
    acc += t[threadIdx.x];
    if (threadIdx.x == 0)
      *reinterpret_cast<float4 *>(&t[0]) = make_float4(0, 0, 0, 0);
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void pointerKept(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    t[threadIdx.x] = in[b + threadIdx.x];
    __syncthreads();
    const float4 *p = reinterpret_cast<const float4 *>(&t[0]);
    acc += p[1].x;
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
} // namespace VectorReads

// Offsets the proof of whole vectors takes: a mask that clears the low bits, a conversion of a
// multiple, a local every assignment keeps a multiple; and ones it does not: a mask that keeps
// them, a local one branch bumps by one.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
// CHECK-MESSAGES: :[[@LINE+22]]:3: remark: [tile-escapes] {{.*}}not provably a multiple of 4 ('threadIdx.x & 7')
// CHECK-MESSAGES: :[[@LINE+33]]:3: remark: [tile-escapes] {{.*}}not provably a multiple of 4 ('o')
namespace Multiples {
__global__ void masks(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    t[threadIdx.x] = in[b + threadIdx.x];
    __syncthreads();
    int o = 8 * (threadIdx.x % 16);
    o += 4;
    float4 v = *reinterpret_cast<const float4 *>(&t[threadIdx.x & ~3u]);
    float4 w = *reinterpret_cast<const float4 *>(&t[(unsigned)(threadIdx.x * 4) % 256]);
    float4 x = *reinterpret_cast<const float4 *>(&t[o]);
    acc += v.x + w.y + x.z;
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void keptBits(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    t[threadIdx.x] = in[b + threadIdx.x];
    __syncthreads();
    float4 v = *reinterpret_cast<const float4 *>(&t[threadIdx.x & 7]);
    acc += v.x;
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void branchBump(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    t[threadIdx.x] = in[b + threadIdx.x];
    __syncthreads();
    int o = 4 * (threadIdx.x % 32);
    if (threadIdx.x == 5)
      o = o + 1;
    float4 v = *reinterpret_cast<const float4 *>(&t[o]);
    acc += v.x;
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
} // namespace Multiples

// A helper call written by a macro, and a load helper reading what the compute phase stores.
// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [macro] {{.*}}the copy 'COPY1(&t[threadIdx.x], in + b + threadIdx.x)' is written in a macro
// CHECK-MESSAGES: :[[@LINE+16]]:3: remark: [store-aliases-load] {{.*}}writes through 'buf', which the copies read
#define COPY1(d, s) st1(d, ld1(s))
namespace HelperEdges {
__global__ void viaMacro(float *out, const float *in, int n) {
  __shared__ float t[256];
  float acc = 0;
  for (int b = 0; b < n; b += 256) {
    COPY1(&t[threadIdx.x], in + b + threadIdx.x);
    __syncthreads();
    acc += t[255 - threadIdx.x];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}
__global__ void aliasing(float *buf, int n) {
  __shared__ float t[256];
  for (int b = 0; b < n; b += 256) {
    st1(&t[threadIdx.x], ld1(buf + b + threadIdx.x));
    __syncthreads();
    buf[b + 256 + threadIdx.x] = t[255 - threadIdx.x];
    __syncthreads();
  }
}
} // namespace HelperEdges
