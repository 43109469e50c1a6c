// The legality analysis against adversarial but legal programs: for every rule, the program that
// would break it (a reference, a lambda, a device function, a pointer copy, an aliasing argument,
// an early return) is refused or narrowed with its reason, beside a close safe form that is still
// rewritten. docs/legality.md lists the proof obligations these cases exercise.
#include "TestSupport.h"
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

struct Case {
  const char *Name;
  const char *Expected; ///< reason ID
  const char *Code;     ///< a whole translation unit
  bool AssumeNoAlias = false;
};

std::ostream &operator<<(std::ostream &OS, const Case &C) { return OS << C.Name; }

class LegalityTest : public ::testing::TestWithParam<Case> {};

TEST_P(LegalityTest, Outcome) {
  const Case &C = GetParam();
  ToolOptions Opts = defaultOptions();
  Opts.AssumeNoAlias = C.AssumeNoAlias;
  FileResult R = runOnCode(C.Code, Opts);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size()) << R.Rewritten;
  EXPECT_EQ(C.Expected, reasonInfo(R.Loops[0].Code).Id.str()) << R.Loops[0].message();
  if (std::string(C.Expected) != "pipelined")
    EXPECT_EQ(R.Original, R.Rewritten) << "a refused loop must stay byte-identical";
}

// The shape every case shares: a 64-element tile copied from A, a compute phase given by the case.
#define LOOP(COPY_INDEX, COMPUTE)                                                                  \
  "  __shared__ float s[64];\n"                                                                    \
  "  float acc = 0;\n"                                                                             \
  "  for (int t = 0; t < nt; ++t) {\n"                                                             \
  "    s[threadIdx.x] = A[" COPY_INDEX "];\n"                                                      \
  "    __syncthreads();\n"                                                                         \
  "    " COMPUTE "\n"                                                                              \
  "    __syncthreads();\n"                                                                         \
  "  }\n"                                                                                          \
  "  C[blockIdx.x * 64 + threadIdx.x] = acc;\n"

#define IDX "(blockIdx.x * nt + t) * 64 + threadIdx.x"
#define NEXT "(blockIdx.x * nt + t + 1) * 64 + threadIdx.x"

const Case Stores[] = {
    // 1. Another pointer that may be the copied one: nothing in the source says it is not.
    {"StoreThroughOtherParameter", "store-may-alias",
     "__global__ void k(const float *A, float *C, float *D, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; D[" NEXT "] = acc;") "}\n"},
    {"StoreThroughOtherParameterUnderAssumeNoAlias", "pipelined",
     "__global__ void k(const float *A, float *C, float *D, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; D[" NEXT "] = acc;") "}\n",
     true},
    {"StoreThroughRestrictParameters", "pipelined",
     "__global__ void k(const float *__restrict__ A, float *C, float *__restrict__ D, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; D[" NEXT "] = acc;") "}\n"},
    // 2. Stores the analysis must see through: a lambda, a pointer copy, a device function, a
    // reference, an atomic, a global pointer, a function defined elsewhere.
    {"LambdaStoresIntoSource", "store-aliases-load",
     "__global__ void k(float *A, float *C, int nt) {\n"
     "  auto put = [&](int i, float x) { A[i] = x; };\n" LOOP(
         IDX, "acc += s[threadIdx.x]; put(" NEXT ", acc);") "}\n"},
    {"LambdaStoresIntoRestrictOutput", "pipelined",
     "__global__ void k(const float *__restrict__ A, float *C, float *__restrict__ D, int nt) {\n"
     "  auto put = [&](int i, float x) { D[i] = x; };\n" LOOP(
         IDX, "acc += s[threadIdx.x]; put(" NEXT ", acc);") "}\n"},
    {"PointerCopyOfSource", "store-aliases-load",
     "__global__ void k(float *A, float *C, int nt) {\n"
     "  float *w;\n"
     "  w = A;\n" LOOP(IDX, "acc += s[threadIdx.x]; w[" NEXT "] = acc;") "}\n"},
    {"PointerArithmeticCopyOfSource", "store-aliases-load",
     "__global__ void k(float *A, float *C, int nt) {\n"
     "  float *w = C;\n"
     "  if (nt > 3) w = A + 64;\n" LOOP(IDX, "acc += s[threadIdx.x]; w[" IDX "] = acc;") "}\n"},
    {"DeviceFunctionStoresThroughItsParameter", "store-aliases-load",
     "__device__ void put(float *p, int i, float v) { p[i] = v; }\n"
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; put(A, " NEXT ", acc);") "}\n"},
    {"DeviceFunctionStoresThroughGlobalPointer", "unknown-effects",
     "__device__ float *gp;\n"
     "__device__ void keep(int i, float v) { gp[i] = v; }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; keep(" NEXT ", acc);") "}\n"},
    {"FunctionDefinedElsewhere", "unknown-effects",
     "__device__ void record(float v);\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; record(acc);") "}\n"},
    {"ReferenceIntoSource", "store-aliases-load",
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; float &r = A[" NEXT "]; r = acc;") "}\n"},
    {"AtomicIntoSource", "store-aliases-load",
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; atomicAdd(&A[" NEXT "], acc);") "}\n"},
    {"LambdaHandedToToolkitFunction", "unknown-effects",
     "#include <cuda/std/functional>\n"
     "__global__ void k(float *A, float *C, int nt) {\n"
     "  auto put = [&](int i) { A[i] = 1.0f; return 0; };\n" LOOP(
         IDX, "acc += s[threadIdx.x]; ::cuda::std::invoke(put, (int)(" NEXT "));") "}\n"},
    {"DeviceFunctionWithPureBody", "pipelined",
     "__device__ float twice(float v) { return 2.0f * v; }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += twice(s[threadIdx.x]);") "}\n"},
    {"MemberFunctionOnLocalObject", "pipelined",
     "struct Sum { float v; __device__ void add(float x) { v += x; } };\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  Sum total{0.0f};\n"
     "  Sum *p = &total;\n" LOOP(IDX, "p->add(s[threadIdx.x]); acc = total.v;") "}\n"},
    {"MemberFunctionStoringThroughMember", "unknown-effects",
     "struct Out { float *p; __device__ void put(int i, float x) { p[i] = x; } };\n"
     "__global__ void k(float *A, float *C, int nt) {\n"
     "  Out o{A};\n" LOOP(IDX, "acc += s[threadIdx.x]; o.put(" NEXT ", acc);") "}\n"},
    {"VirtualCall", "unknown-effects",
     "struct Sink { __device__ virtual void put(int i, float x) {} };\n"
     "__global__ void k(const float *A, float *C, int nt, Sink *sink) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; sink->put(threadIdx.x, acc);") "}\n"},
    // A struct's reference member is not the struct's storage: a store through it goes where the
    // reference was bound (here, the next tile of A), so it cannot be taken for a local's.
    {"StoreThroughReferenceMember", "unknown-effects",
     "struct Ref { float &x; };\n"
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; if (t + 1 < nt) { Ref r{A[" NEXT "]}; r.x = acc; }") "}\n"},
    {"StoreIntoMemberOfLocalStructIsSafe", "pipelined",
     "struct Val { float x; };\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "Val v{0.0f}; v.x = s[threadIdx.x]; acc += v.x;") "}\n"},
    {"StoreIntoOtherSharedArray", "pipelined",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  __shared__ float red[64];\n"
     "  red[threadIdx.x] = 0;\n" LOOP(IDX, "red[threadIdx.x] += s[(threadIdx.x + 1) % 64];") "}\n"},
};
INSTANTIATE_TEST_SUITE_P(Stores, LegalityTest, ::testing::ValuesIn(Stores),
                         [](const auto &I) { return std::string(I.param.Name); });

const Case Variables[] = {
    // 3. Loop variables, offsets and bounds changed behind the analysis's back.
    {"InductionThroughReference", "induction-step",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int t = 0;\n"
     "  int &tr = t;\n"
     "  __shared__ float s[64];\n"
     "  float acc = 0;\n"
     "  for (; t < nt; ++t) {\n"
     "    s[threadIdx.x] = A[" IDX "];\n"
     "    __syncthreads();\n"
     "    acc += s[threadIdx.x];\n"
     "    if (acc > 100.0f) tr += 1;\n"
     "    __syncthreads();\n"
     "  }\n"
     "  C[threadIdx.x] = acc;\n"
     "}\n"},
    {"BoundThroughReference", "loop-condition",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int lim = nt;\n"
     "  int &lr = lim;\n"
     "  __shared__ float s[64];\n"
     "  float acc = 0;\n"
     "  for (int t = 0; t < lim; ++t) {\n"
     "    s[threadIdx.x] = A[" IDX "];\n"
     "    __syncthreads();\n"
     "    acc += s[threadIdx.x];\n"
     "    if (acc > 100.0f) lr -= 1;\n"
     "    __syncthreads();\n"
     "  }\n"
     "  C[threadIdx.x] = acc;\n"
     "}\n"},
    {"OffsetThroughPointer", "address-not-invariant",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int off = 0;\n"
     "  int *po = &off;\n" LOOP("(blockIdx.x * nt + t) * 64 + off + threadIdx.x",
                               "acc += s[threadIdx.x]; *po = acc > 1.0f;") "}\n"},
    {"InductionThroughLambda", "induction-step",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int t = 0;\n"
     "  auto bump = [&] { ++t; };\n"
     "  __shared__ float s[64];\n"
     "  float acc = 0;\n"
     "  for (; t < nt; ++t) {\n"
     "    s[threadIdx.x] = A[" IDX "];\n"
     "    __syncthreads();\n"
     "    acc += s[threadIdx.x];\n"
     "    if (acc > 100.0f) bump();\n"
     "    __syncthreads();\n"
     "  }\n"
     "  C[threadIdx.x] = acc;\n"
     "}\n"},
    {"BoundThroughLambda", "loop-condition",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  auto shrink = [&] { --nt; };\n" LOOP(IDX, "acc += s[threadIdx.x]; if (acc > 9.0f) shrink();") "}\n"},
    {"InductionThroughDeviceFunctionReference", "induction-step",
     "__device__ void inc(int &x) { x += 1; }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int t = 0;\n"
     "  int &tr = t;\n"
     "  __shared__ float s[64];\n"
     "  float acc = 0;\n"
     "  for (; t < nt; ++t) {\n"
     "    s[threadIdx.x] = A[" IDX "];\n"
     "    __syncthreads();\n"
     "    acc += s[threadIdx.x];\n"
     "    if (acc > 100.0f) inc(tr);\n"
     "    __syncthreads();\n"
     "  }\n"
     "  C[threadIdx.x] = acc;\n"
     "}\n"},
    {"OffsetKeptByDeviceFunction", "address-not-invariant",
     "__device__ int *kept;\n"
     "__device__ void keep(int &x) { kept = &x; }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int off = 0;\n"
     "  keep(off);\n" LOOP("(blockIdx.x * nt + t) * 64 + off + threadIdx.x",
                           "acc += s[threadIdx.x];") "}\n"},
    // The same through a struct's reference member: reading r.x reads off, which the loop changes.
    {"OffsetReadThroughReferenceMember", "address-not-invariant",
     "struct Ref { int &x; };\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int off = 0;\n"
     "  Ref r{off};\n" LOOP("(blockIdx.x * nt + t) * 64 + r.x + threadIdx.x",
                           "acc += s[threadIdx.x]; if (s[0] > 0.5f) off++;") "}\n"},
    {"BoundReadThroughReferenceMember", "loop-condition",
     "struct Ref { int &x; };\n"
     "__global__ void k(const float *A, float *C, int n) {\n"
     "  int lim = n;\n"
     "  Ref r{lim};\n"
     "  __shared__ float s[64];\n"
     "  float acc = 0;\n"
     "  for (int t = 0; t < r.x; ++t) {\n"
     "    s[threadIdx.x] = A[(blockIdx.x * n + t) * 64 + threadIdx.x];\n"
     "    __syncthreads();\n"
     "    acc += s[threadIdx.x];\n"
     "    if (s[0] > 0.9f && lim > t + 1) lim--;\n"
     "    __syncthreads();\n"
     "  }\n"
     "  C[blockIdx.x * 64 + threadIdx.x] = acc;\n"
     "}\n"},
    {"OffsetInMemberOfLocalStructIsSafe", "pipelined",
     "struct Val { int x; };\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  Val v{3};\n" LOOP("(blockIdx.x * nt + t) * 64 + v.x + threadIdx.x",
                         "acc += s[threadIdx.x];") "}\n"},
    // const does not keep an object as it was: a const member function may change a mutable
    // member or cast const away, and so may a function taking a reference to const.
    {"OffsetChangedByConstMemberCastingAwayConst", "address-not-invariant",
     "struct N { int v; __device__ void bump() const { if (v < 64) const_cast<N *>(this)->v++; } };\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  N m{0};\n" LOOP("(blockIdx.x * nt + t) * 64 + m.v + threadIdx.x",
                       "acc += s[threadIdx.x]; if (s[0] > 0.5f) m.bump();") "}\n"},
    {"OffsetChangedByConstMemberThroughMutable", "address-not-invariant",
     "struct M { mutable int v; __device__ void bump() const { if (v < 64) ++v; } };\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  const M m{0};\n" LOOP("(blockIdx.x * nt + t) * 64 + m.v + threadIdx.x",
                             "acc += s[threadIdx.x]; if (s[0] > 0.5f) m.bump();") "}\n"},
    {"OffsetChangedThroughConstReferenceToMutable", "address-not-invariant",
     "struct M { mutable int v; };\n"
     "__device__ void bump(const M &m) { if (m.v < 64) m.v++; }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  M m{0};\n" LOOP("(blockIdx.x * nt + t) * 64 + m.v + threadIdx.x",
                       "acc += s[threadIdx.x]; if (s[0] > 0.5f) bump(m);") "}\n"},
    {"OffsetReadByConstMemberIsSafe", "pipelined",
     "struct G { int v; __device__ int get() const { return v; } };\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  G g{3};\n" LOOP("(blockIdx.x * nt + t) * 64 + g.v + threadIdx.x",
                       "acc += s[threadIdx.x] * g.get();") "}\n"},
    {"OffsetReadThroughConstReferenceIsSafe", "pipelined",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int off = 3;\n"
     "  const int &co = off;\n"
     "  float bias = co;\n" LOOP("(blockIdx.x * nt + t) * 64 + off + threadIdx.x",
                                "acc += s[threadIdx.x] + bias;") "}\n"},
    {"LambdaCapturingByValueIsSafe", "pipelined",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  int off = 3;\n"
     "  auto scale = [=](float v) { return v * off; };\n" LOOP(
         "(blockIdx.x * nt + t) * 64 + off + threadIdx.x", "acc += scale(s[threadIdx.x]);") "}\n"},
    // Purity is decided from the body, not the name: a constexpr function or one named like a
    // builtin that reads memory is not a pure index.
    {"ConstexprFunctionThatReadsMemory", "address-not-invariant",
     "__device__ constexpr int get(const int *p, int i) { return p[i]; }\n"
     "__global__ void k(const float *A, float *C, const int *idx, int nt) {\n" LOOP(
         "get(idx, t) * 64 + threadIdx.x", "acc += s[threadIdx.x];") "}\n"},
    {"FunctionNamedMaxThatReadsMemory", "address-not-invariant",
     "__device__ int *table;\n"
     "__device__ int max(int a, long b) { return a > table[b] ? a : table[b]; }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         "max(t, 2L) * 64 + threadIdx.x", "acc += s[threadIdx.x];") "}\n"},
    {"PureFunctionInIndex", "pipelined",
     "__device__ int twice(int i) { return 2 * i; }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         "(blockIdx.x * nt + twice(t) / 2) * 64 + threadIdx.x", "acc += s[threadIdx.x];") "}\n"},
    {"ToolkitMinInIndex", "pipelined",
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         "(blockIdx.x * nt + min(t, nt - 1)) * 64 + threadIdx.x", "acc += s[threadIdx.x];") "}\n"},
};
// The rewrite's own code reads threadIdx and blockDim by name: a declaration of the user's of
// such a name, in the function or an enclosing namespace, would be what it reads.
const Case BuiltinNames[] = {
    {"LocalNamedBlockDim", "unsupported",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  const dim3 blockDim(64, 1, 1);\n" LOOP(IDX, "acc += s[threadIdx.x] * blockDim.x;") "}\n"},
    {"NamespaceVariableNamedThreadIdx", "unsupported",
     "namespace app {\n"
     "__device__ uint3 threadIdx;\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(IDX, "acc += s[threadIdx.x];") "}\n"
     "}\n"},
    {"MacroNamedBlockDim", "unsupported",
     "__device__ uint3 myDim;\n"
     "#define blockDim myDim\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(IDX, "acc += s[threadIdx.x] * blockDim.x;") "}\n"},
    {"OtherNamesAreFine", "pipelined",
     "namespace app {\n"
     "__device__ int blockDimension;\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  const int threads = blockDim.x;\n" LOOP(IDX, "acc += s[threadIdx.x] * threads;") "}\n"
     "}\n"},
};
INSTANTIATE_TEST_SUITE_P(BuiltinNames, LegalityTest, ::testing::ValuesIn(BuiltinNames),
                         [](const auto &I) { return std::string(I.param.Name); });

INSTANTIATE_TEST_SUITE_P(Variables, LegalityTest, ::testing::ValuesIn(Variables),
                         [](const auto &I) { return std::string(I.param.Name); });

// 6. Launches: more static shared memory must not crowd out a launch's dynamic shared memory.
const Case Launches[] = {
    {"KernelUsesDynamicSharedMemory", "launch-resources",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  extern __shared__ float scratch[];\n"
     "  scratch[threadIdx.x] = 0;\n" LOOP(IDX, "acc += s[threadIdx.x];") "}\n"},
    {"DynamicSharedMemoryInACallee", "launch-resources",
     "extern __shared__ float scratch[];\n"
     "__device__ void note(float v) { scratch[threadIdx.x] = v; }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];") "  note(acc);\n}\n"},
    {"DynamicSharedMemoryInACalleesLambda", "launch-resources",
     "extern __shared__ float scratch[];\n"
     "__device__ void note(float v) { auto put = [&] { scratch[threadIdx.x] = v; }; put(); }\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];") "  note(acc);\n}\n"},
    {"CalleeWithoutBody", "launch-resources",
     "__device__ void elsewhere(float *p);\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];") "  elsewhere(C);\n}\n"},
    {"CallThroughPointer", "launch-resources",
     "__device__ void twice(float *p) { *p *= 2; }\n"
     "__global__ void k(const float *A, float *C, int nt, int which) {\n"
     "  void (*f)(float *) = twice;\n" LOOP(IDX, "acc += s[threadIdx.x];") "  f(C);\n}\n"},
    {"LoopInDeviceFunctionOfKernelWithDynamicSharedMemory", "launch-resources",
     "__device__ float sum(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];") "  return acc;\n}\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  extern __shared__ float scratch[];\n"
     "  scratch[threadIdx.x] = sum(A, C, nt);\n}\n"},
    {"LoopInDeviceFunctionOfPlainKernels", "pipelined",
     "__device__ void sum(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];") "}\n"
     "__global__ void k1(const float *A, float *C, int nt) { sum(A, C, nt); }\n"
     "__global__ void k2(const float *A, float *C, int nt) { sum(A, C, nt + 1); }\n"},
    {"ToolkitCallsAndStaticSharedMemoryAreFine", "pipelined",
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "  __shared__ float other[32];\n"
     "  other[threadIdx.x % 32] = __expf(1.0f);\n" LOOP(IDX, "acc += s[threadIdx.x];") "}\n"},
};
INSTANTIATE_TEST_SUITE_P(Launches, LegalityTest, ::testing::ValuesIn(Launches),
                         [](const auto &I) { return std::string(I.param.Name); });

// 8. Other blocks' writes that the compute phase waits for (C7): a copy may not pass an acquire.
const Case Synchronization[] = {
    {"SpinOnVolatileFlag", "synchronizes",
     "__global__ void k(const float *A, float *C, volatile int *f, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; while (f[t] == 0) {}") "}\n"},
    {"SpinInADeviceFunction", "synchronizes",
     "__device__ void wait_for(volatile int *f, int v) { while (*f < v) {} }\n"
     "__global__ void k(const float *A, float *C, int *f, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; wait_for(f, t + 1);") "}\n"},
    {"FenceAfterARelaxedRead", "synchronizes",
     "__global__ void k(const float *A, float *C, const int *f, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x] * f[t]; __threadfence();") "}\n"},
    {"AtomicWhoseResultIsUsed", "synchronizes",
     "__global__ void k(const float *A, float *__restrict__ C, int *__restrict__ f, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; while (atomicAdd(&f[t], 0) == 0) {}") "}\n",
     true},
    {"CacheBypassingLoad", "synchronizes",
     "__global__ void k(const float *A, float *C, const int *f, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; while (__ldcv(&f[t]) == 0) {}") "}\n"},
    {"SemaphoreAcquire", "synchronizes",
     "#include <cuda/semaphore>\n"
     "__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt,\n"
     "                  cuda::binary_semaphore<cuda::thread_scope_device> *__restrict__ sem) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; if (t == 0 && threadIdx.x == 0) { sem->acquire(); sem->release(); }") "}\n"},
    {"OrderedAtomicWhoseResultIsIgnored", "synchronizes",
     "#include <cuda/atomic>\n"
     "__global__ void k(const float *__restrict__ A, float *__restrict__ C, int *__restrict__ h, "
     "int nt) {\n" LOOP(IDX, "acc += s[threadIdx.x]; "
                            "cuda::atomic_ref<int, cuda::thread_scope_device>(h[t % 16]).fetch_add(1);") "}\n"},
    {"VolatileSource", "load-source",
     "__global__ void k(volatile float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];") "}\n"},
    {"AtomicWhoseResultIsIgnored", "pipelined",
     "__global__ void k(const float *__restrict__ A, float *__restrict__ C, int *__restrict__ h, "
     "int nt) {\n" LOOP(IDX, "acc += s[threadIdx.x]; atomicAdd(&h[t % 16], 1);") "}\n"},
    {"VolatileLocalIsNotMemory", "pipelined",
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "volatile float v = s[threadIdx.x]; acc += v;") "}\n"},
};
INSTANTIATE_TEST_SUITE_P(Synchronization, LegalityTest, ::testing::ValuesIn(Synchronization),
                         [](const auto &I) { return std::string(I.param.Name); });

// 7. The text the analysis read must be the text every architecture compiles (P1): the parse is
// for sm_90, the rewrite's cp.async path runs from sm_80.
const Case Architectures[] = {
    {"StoreOnlyBelowSm90", "arch-dependent",
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];\n#if __CUDA_ARCH__ < 900\n    A[" NEXT "] = acc;\n#endif") "}\n"},
    {"StoreUnderArchMacroOfTheUser", "arch-dependent",
     "#define OLD_GPU (__CUDA_ARCH__ < 900)\n"
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];\n#if OLD_GPU\n    A[" NEXT "] = acc;\n#endif") "}\n"},
    {"FunctionDefinedPerArchitecture", "arch-dependent",
     "#if __CUDA_ARCH__ >= 900\n__device__ void put(float *p, int i, float v) {}\n"
     "#else\n__device__ void put(float *p, int i, float v) { p[i] = v; }\n#endif\n"
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; put(A, " NEXT ", acc);") "}\n"},
    {"MacroOnlyInTheSkippedBranch", "arch-dependent",
     "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n"
     "#define put(p, i, v) ((p)[i] = (v))\n#endif\n"
     "__device__ void(put)(float *p, int i, float v) {}\n"
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; put(A, " NEXT ", acc);") "}\n"},
    {"NvIfTarget", "arch-dependent",
     "#include <nv/target>\n"
     "__global__ void k(float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x]; NV_IF_TARGET(NV_PROVIDES_SM_90, (acc += 1;), (A[" NEXT
              "] = acc;));") "}\n"},
    {"CallerExitsOnlyBelowSm90", "arch-dependent",
     "__device__ float sum(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];") "  return acc;\n}\n"
     "__global__ void k(const float *A, float *C, int nt) {\n"
     "#if __CUDA_ARCH__ < 900\n  if (threadIdx.x >= 32) return;\n#endif\n"
     "  C[threadIdx.x] = sum(A, C, nt);\n}\n"},
    {"HostOrDeviceIsTheSameOnEveryGpu", "pipelined",
     "__host__ __device__ inline float twice(float x) {\n"
     "#ifdef __CUDA_ARCH__\n  return 2 * x;\n#else\n  return x + x;\n#endif\n}\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += twice(s[threadIdx.x]);") "}\n"},
    {"ArchCodeInAnUnrelatedKernel", "pipelined",
     "__global__ void other(float *C) {\n#if __CUDA_ARCH__ >= 800\n  C[0] = 1;\n#endif\n}\n"
     "__global__ void k(const float *A, float *C, int nt) {\n" LOOP(
         IDX, "acc += s[threadIdx.x];") "}\n"},
};
INSTANTIATE_TEST_SUITE_P(Architectures, LegalityTest, ::testing::ValuesIn(Architectures),
                         [](const auto &I) { return std::string(I.param.Name); });

// 5. Whole-tile copies stand in for every thread's copy: they need every thread at the loop.
struct Reach {
  const char *Name;
  const char *Before; ///< statements before the loop
  bool Whole;         ///< whole-tile copies expected
};

class ReachTest : public ::testing::TestWithParam<Reach> {};

TEST_P(ReachTest, WholeTileCopiesOnlyWhenEveryThreadArrives) {
  const Reach &C = GetParam();
  std::string Code = std::string("__global__ void k(const float *A, float *C, int nt, int nb) {\n") +
                     C.Before +
                     "  __shared__ float s[16][16];\n"
                     "  float acc = 0;\n"
                     "  for (int t = 0; t < nt; ++t) {\n"
                     "    s[threadIdx.y][threadIdx.x] = A[((blockIdx.x * nt + t) * 16 + "
                     "threadIdx.y) * 16 + threadIdx.x];\n"
                     "    __syncthreads();\n"
                     "    acc += s[threadIdx.y][(threadIdx.x + 1) % 16];\n"
                     "    __syncthreads();\n"
                     "  }\n"
                     "  C[(blockIdx.x * 16 + threadIdx.y) * 16 + threadIdx.x] = acc;\n"
                     "}\n"
                     "void launch(const float *A, float *C, int nt, int nb) {\n"
                     "  k<<<nb, dim3(16, 16)>>>(A, C, nt, nb);\n"
                     "}\n";
  FileResult R = runOnCode(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const std::string M = R.Loops[0].message();
  bool Wide = M.find("in 16-byte chunks over the block") != std::string::npos;
  EXPECT_EQ(C.Whole, Wide) << M;
  if (!C.Whole) {
    EXPECT_NE(M.find("not every thread of the block provably reaches the loop"), std::string::npos)
        << M;
    EXPECT_EQ(R.Rewritten.find("cp.async.bulk"), std::string::npos);
    EXPECT_EQ(R.Rewritten.find("tilepipe_launch_k"), std::string::npos) << "no tensor copies";
  }
}

const Reach Reaches[] = {
    {"NothingBefore", "", true},
    {"ThreadsReturnBefore", "  if (threadIdx.y < 8) return;\n", false},
    {"ThreadsReturnThroughLocal", "  int row = threadIdx.y;\n  if (row < 8) { return; }\n", false},
    {"ThreadsReturnInsideLoopBefore",
     "  for (int i = 0; i < 4; ++i)\n    if (threadIdx.x == i) return;\n", false},
    {"BlockReturnsTogether", "  if (blockIdx.x >= nb) return;\n", true},
    {"InlineAssemblyBefore", "  asm volatile(\"\");\n", false},
};
INSTANTIATE_TEST_SUITE_P(Reach, ReachTest, ::testing::ValuesIn(Reaches),
                         [](const auto &I) { return std::string(I.param.Name); });

TEST(Reach, LoopUnderThreadDependentIfOrInDeviceFunction) {
  const char *Body = "  __shared__ float s[16][16];\n"
                     "  float acc = 0;\n"
                     "  for (int t = 0; t < nt; ++t) {\n"
                     "    s[threadIdx.y][threadIdx.x] = A[(t * 16 + threadIdx.y) * 16 + threadIdx.x];\n"
                     "    __syncthreads();\n"
                     "    acc += s[threadIdx.y][(threadIdx.x + 1) % 16];\n"
                     "    __syncthreads();\n"
                     "  }\n"
                     "  C[threadIdx.y * 16 + threadIdx.x] = acc;\n";
  // A device function called from a kernel by every thread: whole tiles.
  FileResult All = runOnCode(std::string("__device__ void body(const float *A, float *C, int nt) {\n") +
                             Body + "}\n__global__ void k(const float *A, float *C, int nt) {\n"
                                    "  body(A, C, nt);\n}\n");
  ASSERT_EQ(1u, All.Loops.size());
  EXPECT_NE(All.Loops[0].message().find("in 16-byte chunks over the block"), std::string::npos)
      << All.Loops[0].message();
  // Called only by some threads: per element.
  FileResult Some = runOnCode(std::string("__device__ void body(const float *A, float *C, int nt) {\n") +
                              Body + "}\n__global__ void k(const float *A, float *C, int nt) {\n"
                                     "  if (threadIdx.y >= 4) body(A, C, nt);\n}\n");
  ASSERT_EQ(1u, Some.Loops.size());
  ASSERT_TRUE(Some.Loops[0].transformed()) << Some.Loops[0].message();
  EXPECT_NE(Some.Loops[0].message().find("not every thread of the block provably reaches"),
            std::string::npos)
      << Some.Loops[0].message();
  // A device function that executes `exit` before the call.
  FileResult Exit = runOnCode(std::string("__device__ void leave() { asm volatile(\"exit;\"); }\n"
                                          "__global__ void k(const float *A, float *C, int nt) {\n"
                                          "  if (threadIdx.x == 3) leave();\n") +
                              Body + "}\n");
  ASSERT_EQ(1u, Exit.Loops.size());
  EXPECT_NE(Exit.Loops[0].message().find("not every thread of the block provably reaches"),
            std::string::npos)
      << Exit.Loops[0].message();
}

} // namespace

// A barrier is known by its declaration, not its spelling: cooperative groups' thread_block::sync
// and cg::sync(block) are block barriers; a user's own type or function of the same names is not
// (its sync() may do nothing, so threads may reach the loop's barriers unevenly, and the rewrite's
// __syncthreads() would then be one the original never had).
TEST(Barriers, KnownByDeclarationNotByName) {
  const std::string Loop = "  __shared__ float s[64];\n"
                           "  float acc = 0;\n"
                           "  for (int t = 0; t < nt; ++t) {\n"
                           "    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];\n"
                           "    SYNC;\n"
                           "    acc += s[threadIdx.x];\n"
                           "    SYNC;\n"
                           "  }\n"
                           "  C[blockIdx.x * 64 + threadIdx.x] = acc;\n}\n";
  auto run = [&](const std::string &Prelude, const std::string &Sync) {
    std::string Code = Prelude +
                       "__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {\n"
                       "  auto block = BLOCK;\n" + Loop;
    for (size_t P; (P = Code.find("SYNC")) != std::string::npos;)
      Code.replace(P, 4, Sync);
    return runOnCode(Code, defaultOptions());
  };
  const std::string Cg = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n";
  const std::string Fake = "namespace mylib {\n"
                           "struct thread_block { __device__ void sync() const {} };\n"
                           "__device__ void sync(const thread_block &) {}\n"
                           "}\n";
  for (const char *Sync : {"block.sync()", "cg::sync(block)"}) {
    std::string Prelude = Cg + "#define BLOCK cg::this_thread_block()\n";
    FileResult R = run(Prelude, Sync);
    ASSERT_TRUE(R.Ok) << R.Error;
    ASSERT_EQ(1u, R.Loops.size()) << Sync;
    EXPECT_EQ("pipelined", reasonInfo(R.Loops[0].Code).Id.str()) << Sync << ": " << R.Loops[0].message();
  }
  for (const char *Sync : {"block.sync()", "sync(block)"}) {
    std::string Prelude = Fake + "#define BLOCK mylib::thread_block()\n";
    FileResult R = run(Prelude, Sync);
    ASSERT_TRUE(R.Ok) << R.Error;
    EXPECT_EQ(0u, R.Loops.size()) << Sync << " is not a block barrier";
    EXPECT_EQ(R.Original, R.Rewritten);
  }
}
