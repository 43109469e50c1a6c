// Templates: one text for every instantiation. Instantiations whose rewrites differ leave the
// template alone (instantiations-disagree): here one instantiation's compute phase writes another
// __shared__ array (through a specialized helper, or a branch of `if constexpr` only it keeps), so
// its rewrite needs a barrier after the loop and the other's does not. One bad instantiation
// refuses the whole template; one never instantiated cannot be sized.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+10]]:3: remark: [instantiations-disagree]
namespace InstantiationsDisagree {
template <int N> struct Sink { __device__ static void put(float *, float) {} };
template <> struct Sink<64> { __device__ static void put(float *d, float v) { d[threadIdx.x] += v; } };
template <int N>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[N];
  __shared__ float red[N];
  red[threadIdx.x] = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    Sink<N>::put(red, acc);
    __syncthreads();
  }
  C[threadIdx.x] = acc + red[(threadIdx.x + 1) % N];
}
template __global__ void k<64>(const float *, float *, int);
template __global__ void k<128>(const float *, float *, int);
} // namespace InstantiationsDisagree

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace RewrittenOnceForAllInstantiations {
template <typename E, int TS>
__global__ void k(const E *A, E *C, int nt) {
  __shared__ E s[TS];
  E acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * TS + threadIdx.x];
    __syncthreads();
    acc += s[TS - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
template __global__ void k<float, 64>(const float *, float *, int);
template __global__ void k<double, 128>(const double *, double *, int);
} // namespace RewrittenOnceForAllInstantiations
// The rewrite runs in the instantiations analysed; any other (a file that includes this one, one
// added later) keeps the loop as it was, on one buffer.
// CHECK-FIXES: __shared__ E s_stages[((::cuda::std::is_same_v<E, float> && TS == 64) || (::cuda::std::is_same_v<E, double> && TS == 128)) ? 3 : 1][TS];
// CHECK-FIXES: if constexpr ((::cuda::std::is_same_v<E, float> && TS == 64) || (::cuda::std::is_same_v<E, double> && TS == 128)) { // the instantiations tilepipe analysed
// CHECK-FIXES: cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0]))
// CHECK-FIXES: {{^ *}}} else{{$}}
// CHECK-FIXES-NEXT: #endif
// CHECK-FIXES-NEXT: { // tilepipe: below compute capability 8.0 and in instantiations tilepipe did not analyse, the loop as it was

// k<short>'s tile cp.async cannot move, and its inner copy loop the register prefetch cannot take.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [element-type] {{.*}}k<short>
namespace OneBadInstantiation {
template <typename E>
__global__ void k(const E *A, E *C, int nt) {
  __shared__ E s[64];
  E acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 64; i += blockDim.x) s[i] = A[t * 64 + i];
    __syncthreads();
    acc += s[63 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
template __global__ void k<float>(const float *, float *, int);
template __global__ void k<short>(const short *, short *, int);
} // namespace OneBadInstantiation

// Nothing instantiates it: tilepipe tries 8, 16, 32 and 64 itself, and the rewrite runs in those.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined] {{.*}}in the instantiations analysed (TS = 8; TS = 16; TS = 32; TS = 64), the others keeping the loop as it was
namespace NotInstantiated {
template <int TS>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[TS];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * TS + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace NotInstantiated
// CHECK-FIXES: if constexpr (TS == 8 || TS == 16 || TS == 32 || TS == 64) { // the instantiations tilepipe analysed

// The same through `if constexpr`: only k<64> keeps the store into 'red', so only its rewrite
// needs the barrier after the loop.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [instantiations-disagree]
namespace InstantiationsDisagreeThroughIfConstexpr {
template <int N>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[N];
  __shared__ float red[N];
  red[threadIdx.x] = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    if constexpr (N == 64) red[threadIdx.x] += acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc + red[(threadIdx.x + 1) % N];
}
template __global__ void k<64>(const float *, float *, int);
template __global__ void k<128>(const float *, float *, int);
} // namespace InstantiationsDisagreeThroughIfConstexpr

// Every instantiation keeps the branch: one text for both, rewritten.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined]
namespace IfConstexprEveryInstantiationKeeps {
template <int N>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[N];
  __shared__ float red[N];
  red[threadIdx.x] = 0;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    if constexpr (N >= 64) red[threadIdx.x] += acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc + red[(threadIdx.x + 1) % N];
}
template __global__ void k<64>(const float *, float *, int);
template __global__ void k<128>(const float *, float *, int);
} // namespace IfConstexprEveryInstantiationKeeps

// Tried sizes the template rejects (a static_assert) are dropped without a word, those the
// analysis refuses (64: two stages of 32 KiB do not fit) left out of the condition.
// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined] {{.*}}in the instantiations analysed (BS = 16; BS = 32), the others
namespace ProbesDropped {
template <int BS>
__global__ void k(const float *A, float *C, int nt) {
  static_assert(BS >= 16, "16 or more");
  __shared__ float s[BS][BS];
  __shared__ float r[BS][BS];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[t * BS * BS + threadIdx.y * BS + threadIdx.x];
    r[threadIdx.y][threadIdx.x] = A[t * BS * BS + threadIdx.x * BS + threadIdx.y];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y] * r[threadIdx.y][threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.y * BS + threadIdx.x] = acc;
}
} // namespace ProbesDropped

// Every size tried is refused: the reason says which and why.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [template-not-instantiated] {{.*}}tried ProbesAllRefused::k<8>, ProbesAllRefused::k<16>, ProbesAllRefused::k<32>, ProbesAllRefused::k<64>; ProbesAllRefused::k<8> was refused as compute-writes-tile
namespace ProbesAllRefused {
template <int N>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[N];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    s[threadIdx.x] = acc;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ProbesAllRefused

// Parameters tilepipe tries nothing for: four integers, a default.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [template-not-instantiated] {{.*}}nor one of tilepipe's own to analyse it in
namespace NotProbed {
template <int BM, int BN, int BK, int TM>
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[BM * BK];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * BM * BK + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + BN) % (BM * BK)] * TM;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [template-not-instantiated] {{.*}}nor one of tilepipe's own to analyse it in
template <int N = 64>
__global__ void d(const float *A, float *C, int nt) {
  __shared__ float s[N];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace NotProbed

// Arguments of every kind the condition compares: a bool, an enumerator (scoped), a class type
// declared before the template (8 bytes aligned to 4: copied as two 4-byte pieces, which only the
// instantiations analysed run), an unsigned value.
// CHECK-MESSAGES: :[[@LINE+10]]:3: remark: [pipelined]
namespace GuardKinds {
enum class Mode { Sum, Max };
struct Pair { float a, b; };
__device__ float sumOf(Pair p) { return p.a + p.b; }
__device__ float firstOf(Pair p) { return p.a; }
template <bool ON, Mode M, typename E, unsigned N>
__global__ void k(const E *A, float *C, int nt) {
  __shared__ E s[N];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    if (ON) acc += M == Mode::Sum ? sumOf(s[(threadIdx.x + 1) % N]) : firstOf(s[threadIdx.x]);
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
template __global__ void k<true, Mode::Max, Pair, 64>(const Pair *, float *, int);
} // namespace GuardKinds
// CHECK-FIXES: if constexpr (ON && static_cast<long long>(M) == 1ll && ::cuda::std::is_same_v<E, ::GuardKinds::Pair> && N == 64u) { // the instantiations tilepipe analysed

// A class type declared after the template: the template's text cannot name it.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [template-arguments] {{.*}}the argument of 'E': {{.*}}Late' is declared after the template
namespace TypeDeclaredAfter {
template <typename E>
__global__ void k(const E *A, E *C, int nt) {
  __shared__ E s[64];
  E acc{};
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc.v += s[63 - threadIdx.x].v;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
struct Late { float v; };
template __global__ void k<Late>(const Late *, Late *, int);
} // namespace TypeDeclaredAfter

// A member of a class template, and a pack: their instantiations cannot be told apart in the text.
namespace Unnameable {
template <int N> struct Tiler {
  // CHECK-MESSAGES: :[[@LINE+4]]:5: remark: [template-arguments] {{.*}}instantiated from a class template
  __device__ static float run(const float *A, int nt) {
    __shared__ float s[N];
    float acc = 0;
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[t * N + threadIdx.x];
      __syncthreads();
      acc += s[(threadIdx.x + 1) % N];
      __syncthreads();
    }
    return acc;
  }
};
__global__ void member(const float *A, float *C, int nt) { C[threadIdx.x] = Tiler<64>::run(A, nt); }
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [template-arguments] {{.*}}unnamed or a pack
template <int... Ns>
__global__ void pack(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
template __global__ void pack<1, 2>(const float *, float *, int);
} // namespace Unnameable

// Sizes the template rejects (helper<32> and helper<64> fail its static_assert) are not tried:
// the rest are, and the reason names what they were refused for (here the helper alone cannot
// show where its pointer comes from).
// CHECK-MESSAGES: :[[@LINE+11]]:3: remark: [template-not-instantiated] {{.*}}tried ProbeFailureTakesItsHelpers::helper<8>, ProbeFailureTakesItsHelpers::helper<16>; {{.*}}refused as load-source
namespace ProbeFailureTakesItsHelpers {
template <int N> __device__ float helper(const float *__restrict__ A, int nt);
template <int N>
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  C[threadIdx.x] = helper<N>(A, nt);
}
template <int N> __device__ float helper(const float *__restrict__ A, int nt) {
  static_assert(N <= 16, "small");
  __shared__ float s[N];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * N + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % N];
    __syncthreads();
  }
  return acc;
}
} // namespace ProbeFailureTakesItsHelpers

// Arguments the condition cannot tell apart from others: an `auto` parameter (k<64> and k<64u>
// differ in N's type, so in `N - 65`), a parameter whose type is another parameter, a pointer, a
// template, and types no name reaches from the template (in an anonymous namespace, in a function).
namespace MoreUnnameable {
namespace {
struct Hidden { float v; __device__ static float scale() { return 3.0f; } };
}
__device__ float table[4] = {1, 2, 3, 4};
template <int N> struct W { static constexpr float f = N; };

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [template-arguments] {{.*}}'N' is an 'auto' template parameter
template <auto N>
__global__ void by_auto(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * ((N - 65) / 2 > 0 ? 1.0f : 2.0f);
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
template __global__ void by_auto<64>(const float *__restrict__, float *__restrict__, int);

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [template-arguments] {{.*}}the argument of 'N' has no literal
template <typename T, T N>
__global__ void typed(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * ((N - 65) / 2 > 0 ? 1.0f : 2.0f);
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
template __global__ void typed<int, 64>(const float *__restrict__, float *__restrict__, int);

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [template-arguments] {{.*}}the argument of 'T' is neither a type nor an integer
template <const float *T>
__device__ float by_pointer(const float *__restrict__ A, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * T[threadIdx.x % 4];
    __syncthreads();
  }
  return acc;
}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [template-arguments] {{.*}}the argument of 'C' is neither a type nor an integer
template <template <int> class C, int N>
__device__ float by_template(const float *__restrict__ A, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64] * C<N>::f;
    __syncthreads();
  }
  return acc;
}

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [template-arguments] {{.*}}has no name that reaches the template
template <typename E>
__device__ float by_type(const E *__restrict__ A, int nt) {
  __shared__ E s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[63 - threadIdx.x].v * E::scale();
    __syncthreads();
  }
  return acc;
}
struct Named { float v; __device__ static float scale() { return 1.0f; } };

__global__ void users(const float *__restrict__ A, const Hidden *__restrict__ H, const Named *__restrict__ N,
                      float *__restrict__ C, int nt) {
  struct Local { float v; __device__ static float scale() { return 2.0f; } };
  C[threadIdx.x] = by_pointer<table>(A, nt) + by_template<W, 2>(A, nt) +
                   by_type(reinterpret_cast<const Local *>(N), nt) + by_type(H, nt) + by_type(N, nt);
}
} // namespace MoreUnnameable
