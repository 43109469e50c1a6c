// drain_barrier.cu: tiled loops whose compute phase writes memory that other threads read after
// the loop. In block_totals each thread adds into its own element of another __shared__ array,
// red[], and after the loop thread 0 sums red[]; in neighbour_means each thread writes its own
// element of a global row, and after the loop reads its neighbour's. In the original the trailing
// barrier of the last iteration orders those writes before the reads; the rewrite must keep a
// barrier after the loop. own_totals is the close safe form: each thread reads back only what it
// wrote itself. block_totals has tiles of 2 KiB (bulk copies on sm_90), the others cp.async.
// Its loops carry `// tilepipe: plan=always`: they exist to hold emission to its barrier
// obligation; the cost model alone would keep the loop with 512-byte stages as it is.
#include <cuda/pipeline>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda.h>
// tilepipe: tensor and bulk copies. The host encodes tensor maps through the driver entry point that
// the runtime hands out (no link to libcuda); on the device, one thread issues each tile's copy.
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <cstdint>
#include <type_traits>
namespace tilepipe_tma {
using EncodeTiled = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                 const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
inline EncodeTiled encoder() {
  static EncodeTiled Fn = [] {
    void *P = nullptr;
    cudaDriverEntryPointQueryResult Q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &P, 12000, cudaEnableDefault, &Q) !=
            cudaSuccess ||
        Q != cudaDriverEntryPointSuccess)
      return EncodeTiled(nullptr);
    return reinterpret_cast<EncodeTiled>(P);
  }();
  return Fn;
}
/// The current device copies tensors (compute capability 9.0 and later) and the driver can encode maps.
inline bool available() {
  int Device = 0, Major = 0;
  return cudaGetDevice(&Device) == cudaSuccess &&
         cudaDeviceGetAttribute(&Major, cudaDevAttrComputeCapabilityMajor, Device) == cudaSuccess &&
         Major >= 9 && encoder() != nullptr;
}
/// A kernel parameter per tile: the tensor map, and what the issuing thread needs to find a tile's
/// place in it without dividing: Q = X / Stride is (X * Mul) >> (32 + Shift) for 0 <= X < 2^31.
struct TileMap {
  CUtensorMap Map;
  long long Stride;    // elements from one row of the source to the next (2-D and 3-D maps)
  long long Plane;     // elements from one plane of the source to the next (3-D maps)
  unsigned Planes;     // the box: Planes x Rows x Cols elements (Planes == 0: a tile of one or two
  unsigned Rows;       // dimensions; Rows == 0 too: a 1-D tile of Cols elements)
  unsigned Cols;
  unsigned Mul;        // 0 when Stride is 1
  unsigned Shift;
  unsigned PlaneRows;  // 3-D maps: the whole rows in a plane (the map's second extent)
  unsigned PlaneMul;   // 3-D maps: the divider for Plane
  unsigned PlaneShift;
  unsigned Bounded;    // 1: the map's extents are a guarded copy's bounds (outside them it reads zeros)
};
/// X / D for 0 <= X < 2^31, given D's divider (make_divider): the round-up method of Granlund and
/// Montgomery, Mul = ceil(2^(31 + L) / D) with L = ceil(log2(D)), and Mul == 0 for D == 1.
__host__ __device__ inline unsigned divide(unsigned X, unsigned Mul, unsigned Shift) {
  return Mul ? (unsigned)((unsigned long long)X * Mul >> 32) >> Shift : X;
}
/// X / Map.Stride, for 0 <= X < 2^31 and 1 <= Stride < 2^31.
__host__ __device__ inline unsigned quotient(const TileMap &M, unsigned X) { return divide(X, M.Mul, M.Shift); }
/// The divider for D (divide); false outside 1 <= D < 2^31.
inline bool make_divider(long long D, unsigned *Mul, unsigned *Shift) {
  if (D < 1 || D >= 0x80000000LL)
    return false;
  *Mul = *Shift = 0;
  if (D > 1) {
    unsigned L = 0;
    while ((1ull << L) < (unsigned long long)D)
      ++L;
    *Mul = (unsigned)(((1ull << (31 + L)) + (unsigned long long)D - 1) / (unsigned long long)D);
    *Shift = L - 1;
  }
  return true;
}
/// Sets M's divider for Stride; false outside 1 <= Stride < 2^31.
inline bool set_divider(TileMap *M, long long Stride) {
  if (!make_divider(Stride, &M->Mul, &M->Shift))
    return false;
  M->Stride = Stride;
  return true;
}
/// A map of Rows x Cols boxes (Rows == 0: a 1-D tile of Cols elements) over the elements of Elem
/// bytes at Base, Stride elements apart from row to row. Unguarded (BoundRows == BoundCols == 0),
/// the map runs on far past any tile. For a guarded copy it has the guard's bounds as extents:
/// BoundCols columns, within a row (at most Stride), and BoundRows rows, and reads zeros outside.
/// With Planes > 0 (unguarded only), boxes of Planes x Rows x Cols over planes Plane elements
/// apart: the map's rows run on to the last whole row of a plane, its planes far past any tile.
/// False where TMA cannot describe them.
inline bool encode(TileMap *M, const void *Base, size_t Elem, long long Stride, long long Rows,
                   long long Cols, long long BoundRows = 0, long long BoundCols = 0, long long Plane = 0,
                   long long Planes = 0) {
  const long long Words = Elem == 16 ? 2 : 1; // 16-byte elements travel as two 8-byte ones
  if (!Base || reinterpret_cast<unsigned long long>(Base) % 16 != 0 || (Elem != 4 && Elem != 8 && Elem != 16) ||
      Cols < 1 || Cols * Words > 256 || Cols * (long long)Elem % 16 != 0 || Rows < 0 || Rows > 256 ||
      Planes < 0 || Planes > 256 || (Planes != 0 && (Rows < 1 || BoundRows != 0 || BoundCols != 0)))
    return false;
  const CUtensorMapDataType Type = Elem == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32 : CU_TENSOR_MAP_DATA_TYPE_UINT64;
  const cuuint64_t Far = 0x7fffffffull; // the kernel keeps every box below this many rows or elements
  const bool Bounded = BoundRows != 0 || BoundCols != 0;
  if (Bounded && (BoundCols < 1 || BoundCols * Words > 0x7fffffffLL || (Rows != 0 && BoundRows < 1) ||
                  BoundRows > 0x7fffffffLL))
    return false;
  cuuint64_t Dims[3], Strides[2];
  cuuint32_t Box[3], ElementStrides[3] = {1, 1, 1};
  cuuint32_t Rank = Rows == 0 ? 1 : Planes == 0 ? 2 : 3;
  M->Planes = (unsigned)Planes;
  M->Rows = (unsigned)Rows;
  M->Cols = (unsigned)Cols;
  M->Bounded = Bounded;
  M->Plane = 0;
  M->PlaneRows = M->PlaneMul = M->PlaneShift = 0;
  if (Rank == 1) {
    M->Stride = 0;
    M->Mul = M->Shift = 0;
    Dims[0] = Bounded ? (cuuint64_t)(BoundCols * Words) : Far * Words;
    Box[0] = (cuuint32_t)(Cols * Words);
  } else {
    if (Stride < Cols || Stride * Words > 0x7fffffffLL || Stride * (long long)Elem % 16 != 0 ||
        !set_divider(M, Stride) || (Bounded && BoundCols > Stride))
      return false;
    Dims[0] = (cuuint64_t)((Bounded ? BoundCols : Stride) * Words);
    Dims[1] = Bounded ? (cuuint64_t)BoundRows : Far;
    Strides[0] = (cuuint64_t)(Stride * (long long)Elem);
    Box[0] = (cuuint32_t)(Cols * Words);
    Box[1] = (cuuint32_t)Rows;
    if (Rank == 3) {
      // A box must lie within the rows of one plane: the kernel checks that it does, and else
      // copies the tile row by row.
      const long long PlaneRows = Plane / Stride;
      if (PlaneRows < Rows || Plane * (long long)Elem % 16 != 0 ||
          !make_divider(Plane, &M->PlaneMul, &M->PlaneShift))
        return false;
      M->Plane = Plane;
      M->PlaneRows = (unsigned)PlaneRows;
      Dims[1] = (cuuint64_t)PlaneRows;
      Dims[2] = Far;
      Strides[1] = (cuuint64_t)(Plane * (long long)Elem);
      Box[2] = (cuuint32_t)Planes;
    }
  }
  return encoder()(&M->Map, Type, Rank, const_cast<void *>(Base), Dims, Strides, Box, ElementStrides,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// Once per launch, in every thread: M was made for tiles of Tile's shape, bounded where the copy is
/// Guarded, and each stage of Tile (the first one is Stage0) starts on 128 bytes, as tensor copies need.
template <class Tile>
__device__ inline bool takes(const TileMap &M, const Tile &Stage0, bool Guarded = false) {
  constexpr unsigned Rank = ::std::rank<Tile>::value;
  static_assert(Rank >= 1 && Rank <= 3, "tensor copies take tiles of one to three dimensions");
  constexpr unsigned Planes = Rank == 3 ? ::std::extent<Tile, 0>::value : 0;
  constexpr unsigned Rows = Rank == 1 ? 0 : ::std::extent<Tile, Rank - 2>::value;
  return M.Bounded == (unsigned)Guarded && M.Planes == Planes && M.Rows == Rows &&
         M.Cols == (unsigned)::std::extent<Tile, Rank - 1>::value && sizeof(Tile) % 128 == 0 &&
         __cvta_generic_to_shared(&Stage0) % 128 == 0;
}
/// In the leader: sets up a stage barrier for Count arrivals. The kernel calls this, not `init`:
/// libcu++'s `init` is found only by argument-dependent lookup, which a name `init` in the
/// kernel's scope (a parameter `float init`) switches off; here no name of the user's is visible.
__device__ inline void init_barrier(::cuda::barrier<::cuda::thread_scope_block> &Bar, int Count) {
  init(&Bar, Count);
}
/// In the leader, when no thread waits on Bar any more: tears it down, so that it may be set up
/// again when the block runs the loop again.
__device__ inline void drop_barrier(::cuda::barrier<::cuda::thread_scope_block> &Bar) {
  using Barrier = ::cuda::barrier<::cuda::thread_scope_block>;
  Bar.~Barrier();
}
/// In every thread: waits until the phase of Bar with parity Parity has completed (acquiring, at
/// block scope, what the copies wrote). A bare loop on mbarrier.try_wait, which suspends the thread
/// in hardware until the phase completes or a time limit passes: cuda::barrier::wait_parity also
/// reads the global timer on each call and backs off by sleeping, which cost a 4096-cube matmul
/// 1.5 % at 32 x 32 tiles (docs/verify-record.md).
__device__ inline void wait_phase(::cuda::barrier<::cuda::thread_scope_block> &Bar, unsigned Parity) {
  while (!::cuda::ptx::mbarrier_try_wait_parity(::cuda::device::barrier_native_handle(Bar), Parity)) {
  }
}
/// In the leader: whether the element Src[First] starts on 16 bytes, as the first element of a
/// tensor copy must.
template <class Elem>
__device__ inline bool starts_on_16(const Elem *Src, long long First) {
  return reinterpret_cast<uintptr_t>(Src + First) % 16 == 0;
}
/// In the leader (thread 0, 0, 0) alone: copies into Dst the tile whose first element is Src[First]
/// and whose rows lie M.Stride elements apart, completing on Bar (sizeof(Tile) bytes): one tensor
/// copy where the box lies within a row of the map, else one bulk copy per tile row. The tile starts
/// on 16 bytes, unchecked here: the block takes tensor copies only where the loop's first two tiles
/// do, and the tool only where the index moves by a fixed step, so that the first two decide for all.
template <class Tile, class Elem>
__device__ inline void copy_tile(const TileMap &M, Tile &Dst, const Elem *Src, long long First,
                                 ::cuda::barrier<::cuda::thread_scope_block> &Bar) {
  using E = typename ::std::remove_all_extents<Tile>::type;
  static_assert(sizeof(E) == sizeof(Elem), "the tile holds the source's elements");
  constexpr unsigned Rank = ::std::rank<Tile>::value;
  constexpr unsigned Planes = Rank == 3 ? ::std::extent<Tile, 0>::value : 1;
  constexpr unsigned Rows = Rank == 1 ? 1 : ::std::extent<Tile, Rank - 2>::value;
  constexpr unsigned Cols = ::std::extent<Tile, Rank - 1>::value;
  constexpr long long Words = sizeof(E) == 16 ? 2 : 1;
  E *D = reinterpret_cast<E *>(&Dst);
  if (Rank == 3) {
    if (First >= 0 && First < 0x80000000LL) {
      // In 32 bits: the map keeps Plane and Stride * Words below 2^31 (encode).
      const unsigned Plane = (unsigned)M.Plane, Stride = (unsigned)M.Stride;
      const unsigned Z = divide((unsigned)First, M.PlaneMul, M.PlaneShift), InPlane = (unsigned)First - Z * Plane;
      const unsigned Row = quotient(M, InPlane), Col = InPlane - Row * Stride;
      if (Col + Cols <= Stride && Row + Rows <= M.PlaneRows && Z + Planes <= 0x7fffffffu) {
        const int32_t Coords[3] = {(int32_t)(Col * Words), (int32_t)Row, (int32_t)Z};
        ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, D, &M.Map, Coords,
                                          ::cuda::device::barrier_native_handle(Bar));
        return;
      }
    }
  } else if (Rank == 1) {
    if (First >= 0 && (First + Cols) * Words <= 0x7fffffffLL) {
      const int32_t Coords[1] = {(int32_t)(First * Words)};
      ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, D, &M.Map, Coords,
                                        ::cuda::device::barrier_native_handle(Bar));
      return;
    }
  } else if (First >= 0 && First < 0x80000000LL) {
    // In 32 bits: the map keeps Stride * Words below 2^31 (encode).
    const unsigned Stride = (unsigned)M.Stride, Row = quotient(M, (unsigned)First);
    const unsigned Col = (unsigned)First - Row * Stride;
    if (Col + Cols <= Stride && Row + Rows <= 0x7fffffffu) {
      const int32_t Coords[2] = {(int32_t)(Col * Words), (int32_t)Row};
      ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, D, &M.Map, Coords,
                                        ::cuda::device::barrier_native_handle(Bar));
      return;
    }
  }
  // The box would run past the end of a row of the map (or of a plane's rows): one bulk copy per
  // tile row (encode made sure that a tile row is a multiple of 16 bytes, and so are the row and
  // plane pitches).
  if (Cols * sizeof(E) % 16 == 0) {
    if (Rank == 3) {
      // Not unrolled: this path is rare, and a brick's copies unrolled would hold registers that
      // the whole kernel pays for (39 instead of 29 in brick_tiles).
#pragma unroll 1
      for (unsigned P = 0; P < Planes; ++P)
#pragma unroll 1
        for (unsigned R = 0; R < Rows; ++R)
          ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, D + (P * Rows + R) * Cols,
                                     Src + First + P * M.Plane + R * M.Stride, (uint32_t)(Cols * sizeof(E)),
                                     ::cuda::device::barrier_native_handle(Bar));
    } else {
      // Unrolled: kept in a loop, it costs the 2-D matmul 7 registers more (39 instead of 32).
      for (unsigned R = 0; R < Rows; ++R)
        ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, D + R * Cols,
                                   Src + First + R * M.Stride, (uint32_t)(Cols * sizeof(E)),
                                   ::cuda::device::barrier_native_handle(Bar));
    }
  } else {
    __trap(); // unreachable: takes() refuses a map made for tiles of another shape
  }
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// In the leader alone: copies into Dst, a tile of one dimension, the sizeof(Tile) contiguous bytes
/// that start at Src[First], with one bulk copy completing on Bar. No tensor map: the tile starts
/// on 16 bytes, unchecked here, as in copy_tile (the probe of the first two tiles and the fixed step
/// of the index), and the stage on 128.
template <class Tile, class Elem>
__device__ inline void bulk_copy(Tile &Dst, const Elem *Src, long long First,
                                 ::cuda::barrier<::cuda::thread_scope_block> &Bar) {
  static_assert(::std::rank<Tile>::value == 1, "bulk copies take tiles of one dimension");
  static_assert(sizeof(typename ::std::remove_all_extents<Tile>::type) == sizeof(Elem),
                "the tile holds the source's elements");
  static_assert(sizeof(Tile) % 16 == 0, "a bulk copy moves whole 16-byte units");
  ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, &Dst[0], Src + First,
                             (uint32_t)sizeof(Tile), ::cuda::device::barrier_native_handle(Bar));
}
/// In the leader, over a guarded copy's first two tiles: the element Src[First] is the one at
/// (Row, Col) in the bounded map M (Row 0 for a 1-D tile), it starts on 16 bytes (as the first
/// element of a tensor copy must: a box off them faults), and the coordinates are not negative and
/// do not go down. The tool gives tensor copies only where the index and the coordinates move by
/// fixed steps, so then this holds of every tile, and the map zero-fills exactly what the guard
/// excludes.
struct BoxProbe {
  int Last[2] = {0, 0};
  template <class Elem>
  __device__ bool fits(const TileMap &M, const Elem *Src, long long First, int Row, int Col) {
    const bool Ok = First == (long long)Row * M.Stride + Col && Row >= Last[0] && Col >= Last[1] &&
                    starts_on_16(Src, First);
    Last[0] = Row;
    Last[1] = Col;
    return Ok;
  }
};
/// In the leader alone: copies into Dst the box of a guarded copy whose first element is at (Row,
/// Col) of the bounded map M (Row 0 for a 1-D tile) and starts on 16 bytes (BoxProbe), completing
/// on Bar (sizeof(Tile) bytes). The copy engine fills zeros where the box leaves the map: where the
/// guard fails.
template <class Tile>
__device__ inline void copy_box(const TileMap &M, Tile &Dst, int Row, int Col,
                                ::cuda::barrier<::cuda::thread_scope_block> &Bar) {
  using E = typename ::std::remove_all_extents<Tile>::type;
  static_assert(::std::rank<Tile>::value <= 2, "guarded tensor copies take tiles of one or two dimensions");
  constexpr unsigned Words = sizeof(E) == 16 ? 2 : 1;
  // Past 2^31 the coordinate wraps to a negative one: outside the map all the same.
  const int32_t C = (int32_t)((unsigned)Col * Words);
  if (::std::rank<Tile>::value == 1) {
    const int32_t Coords[1] = {C};
    ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, &Dst, &M.Map, Coords,
                                      ::cuda::device::barrier_native_handle(Bar));
  } else {
    const int32_t Coords[2] = {C, Row};
    ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, &Dst, &M.Map, Coords,
                                      ::cuda::device::barrier_native_handle(Bar));
  }
}
#endif
/// With TILEPIPE_TRACE set in the environment, says on stderr which copies a launcher chose, the
/// first time it chooses each (Said: the launcher's own record of what it has said).
inline void trace(const char *Launcher, bool Tma, ::std::atomic<unsigned> &Said) {
  static const bool On = ::std::getenv("TILEPIPE_TRACE") != nullptr;
  const unsigned Bit = Tma ? 2u : 1u;
  if (On && !(Said.fetch_or(Bit) & Bit))
    ::std::fprintf(stderr, "tilepipe: %s: %s\n", Launcher, Tma ? "tensor copies (TMA)" : "cp.async copies");
}
} // namespace tilepipe_tma

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cstdint>
#include <algorithm>

#define CK(call)                                                            \
  do {                                                                      \
    cudaError_t ck_err_ = (call);                                           \
    if (ck_err_ != cudaSuccess) {                                           \
      fprintf(stderr, "%s:%d: CUDA error: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(ck_err_), #call);                          \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

// Deterministic xorshift64* generator, seeded from (seed, case number).
struct Rng {
  uint64_t s;
  Rng(uint64_t seed, uint64_t caseNo) {
    s = ((seed + 0x9E3779B97F4A7C15ULL) * 0xBF58476D1CE4E5B9ULL) ^
        ((caseNo + 1) * 0x94D049BB133111EBULL);
    if (s == 0) s = 0x2545F4914F6CDD1DULL;
    for (int i = 0; i < 4; ++i) next();
  }
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  // Uniform in [-1, 1).
  float uniform() { return (float)(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }
  double uniformd() { return (double)(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0; }
  // Uniform integer in [lo, hi].
  int range(int lo, int hi) { return lo + (int)(next() % (uint64_t)(hi - lo + 1)); }
};

template <typename F = float>
static std::vector<F> randomFloats(size_t n, Rng& r) {
  std::vector<F> v(n);
  size_t i = 0;
  for (; i + 1 < n; i += 2) {  // two 24-bit values per draw
    const uint64_t x = r.next();
    v[i] = (F)(x >> 40) * (F)(2.0f / 16777216.0f) - (F)1.0f;
    v[i + 1] = (F)((x >> 16) & 0xFFFFFFu) * (F)(2.0f / 16777216.0f) - (F)1.0f;
  }
  if (i < n) v[i] = (F)r.uniform();
  return v;
}

template <typename T>
static T* toDevice(const std::vector<T>& h) {
  T* d = nullptr;
  CK(cudaMalloc(&d, std::max<size_t>(h.size(), 1) * sizeof(T)));
  if (!h.empty()) CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// Allocates an output buffer of n elements and poisons it with 0xFF bytes.
template <typename T>
static T* poisonedOutput(size_t n) {
  T* d = nullptr;
  const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
  CK(cudaMalloc(&d, bytes));
  CK(cudaMemset(d, 0xFF, bytes));
  return d;
}

template <typename T>
static void writeOutput(FILE* f, const T* d, size_t n) {
  if (n == 0) return;
  std::vector<T> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  if (fwrite(h.data(), sizeof(T), n, f) != n) {
    fprintf(stderr, "%s:%d: short write to output file\n", __FILE__, __LINE__);
    exit(1);
  }
}

static void checkLaunch() {
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}

// 3 warm-up launches, then 20 individually timed launches; prints the median.
template <typename F>
static void timeKernel(F launch) {
  for (int i = 0; i < 3; ++i) launch();
  checkLaunch();
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < 20; ++i) {
    CK(cudaEventRecord(start));
    launch();
    CK(cudaEventRecord(stop));
    CK(cudaEventSynchronize(stop));
    CK(cudaGetLastError());
    float t = 0.0f;
    CK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  printf("time_ms=%.4f\n", 0.5 * (ms[9] + ms[10]));
  CK(cudaEventDestroy(start));
  CK(cudaEventDestroy(stop));
}

static FILE* openOutput(int argc, char** argv, uint64_t* seed) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <output.bin> [seed]\n", argv[0]);
    exit(2);
  }
  FILE* f = fopen(argv[1], "wb");
  if (!f) {
    perror(argv[1]);
    exit(1);
  }
  *seed = argc > 2 ? strtoull(argv[2], nullptr, 10) : 1;
  return f;
}

static void closeOutput(FILE* f) {
  if (fclose(f) != 0) {
    perror("fclose");
    exit(1);
  }
}

#define T 512  // block_totals, own_totals: == blockDim.x
#define T2 128 // neighbour_means: == blockDim.x

__global__ void block_totals(float* out, const float* in, int numTiles) {
  alignas(128) __shared__ float s_stages[3][T];
  __shared__ float red[T];
  red[threadIdx.x] = 0.0f;
  __syncthreads();
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, however launched: one bulk copy (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (blockDim.x == sizeof(s_stages[0]) / sizeof(s_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < numTiles); ++probe) {
          tiles_aligned = tiles_aligned &&
                          ::tilepipe_tma::starts_on_16(in, (long long)((blockIdx.x * numTiles + t) * T + threadIdx.x));
          ++t;
        }
        if (tiles_aligned) {
          for (int s_1 = 0; s_1 < 3; ++s_1)
            ::tilepipe_tma::init_barrier(stage_barriers[s_1], 1);
          ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared); // the copy engine sees the barriers
        }
      }
      // Each thread orders its earlier stores to global memory (generic proxy) before the reads of the
      // copy engine (async proxy) that the leader issues after this barrier, so that the copies see what
      // the block wrote before the loop: one fence.proxy.async.global per thread, once per entry. The
      // barrier also stands for the leading barrier of a loop of the rotated form.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_global);
      tensor_copies = __syncthreads_or(leader && tiles_aligned);
      if (tensor_copies) {
        int fetch_stage = 0;
        // In the leader: copies the tile under the fetch cursor into buffer fetch_stage (nothing past the end).
        auto issue_tile = [&]() {
          auto t = t_fetch;
          if (t < numTiles) {
            auto &s = s_stages[fetch_stage];
            ::tilepipe_tma::bulk_copy(s, in, (long long)((blockIdx.x * numTiles + t) * T + threadIdx.x),
                                      stage_barriers[fetch_stage]);
            (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                    sizeof(s));
            ++t;
            t_fetch = t;
          }
          fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
        };
        if (leader)
          for (int prologue = 0; prologue < 2; ++prologue)
            issue_tile();
        unsigned parities = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage = 0;
        for (; t < numTiles; ++t) {
          ::tilepipe_tma::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &s = s_stages[stage];
          red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
        __syncthreads(); // the loop's writes to memory are seen by every thread after it
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
      auto t_fetch = t;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe.producer_acquire();
        auto t = t_fetch;
        if (t < numTiles) {
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+((blockIdx.x * numTiles + t) * T + threadIdx.x));
          const s_index s_base = (s_index)((blockIdx.x * numTiles + t) * T + threadIdx.x)
              - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&in[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &in[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[threadIdx.x], &in[(blockIdx.x * numTiles + t) * T + threadIdx.x],
                                   ::cuda::aligned_size_t<sizeof(float)>(sizeof(float)), pipe);
          }
          ++t;
          t_fetch = t;
        }
        pipe.producer_commit();
        fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
      };
      for (int prologue = 0; prologue < 2; ++prologue)
        issue_tile();
      int stage = 0;
      for (; t < numTiles; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &s = s_stages[stage];
        red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      ::cuda::pipeline_consumer_wait_prior<0>(pipe); // only empty groups remain; wait for them anyway
      __syncthreads(); // the loop's writes to memory are seen by every thread after it
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      s[threadIdx.x] = in[(blockIdx.x * numTiles + t) * T + threadIdx.x];
      __syncthreads();
      red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
      __syncthreads();
    }
  }
#endif
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int i = 0; i < T; ++i) sum += red[i];
    out[blockIdx.x] = sum;
  }
}

__global__ void own_totals(float* out, const float* in, int numTiles) {
  alignas(128) __shared__ float s_stages[3][T];
  __shared__ float red[T];
  red[threadIdx.x] = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, however launched: one bulk copy (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (blockDim.x == sizeof(s_stages[0]) / sizeof(s_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < numTiles); ++probe) {
          tiles_aligned = tiles_aligned &&
                          ::tilepipe_tma::starts_on_16(in, (long long)((blockIdx.x * numTiles + t) * T + threadIdx.x));
          ++t;
        }
        if (tiles_aligned) {
          for (int s_1 = 0; s_1 < 3; ++s_1)
            ::tilepipe_tma::init_barrier(stage_barriers[s_1], 1);
          ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared); // the copy engine sees the barriers
        }
      }
      // Each thread orders its earlier stores to global memory (generic proxy) before the reads of the
      // copy engine (async proxy) that the leader issues after this barrier, so that the copies see what
      // the block wrote before the loop: one fence.proxy.async.global per thread, once per entry. The
      // barrier also stands for the leading barrier of a loop of the rotated form.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_global);
      tensor_copies = __syncthreads_or(leader && tiles_aligned);
      if (tensor_copies) {
        int fetch_stage = 0;
        // In the leader: copies the tile under the fetch cursor into buffer fetch_stage (nothing past the end).
        auto issue_tile = [&]() {
          auto t = t_fetch;
          if (t < numTiles) {
            auto &s = s_stages[fetch_stage];
            ::tilepipe_tma::bulk_copy(s, in, (long long)((blockIdx.x * numTiles + t) * T + threadIdx.x),
                                      stage_barriers[fetch_stage]);
            (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                    sizeof(s));
            ++t;
            t_fetch = t;
          }
          fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
        };
        if (leader)
          for (int prologue = 0; prologue < 2; ++prologue)
            issue_tile();
        unsigned parities = 0; // bit s: the parity of the next phase of stage s's barrier
        int stage = 0;
        for (; t < numTiles; ++t) {
          ::tilepipe_tma::wait_phase(stage_barriers[stage], parities >> stage & 1u); // the current tile has landed
          parities ^= 1u << stage;
          __syncthreads(); // no thread still reads the buffer refilled next
          if (leader)
            issue_tile();
          auto &s = s_stages[stage];
          red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
        __syncthreads(); // the loop's writes to memory are seen by every thread after it
      }
    }
    if (!tensor_copies)
#endif
    {
      ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
      auto t_fetch = t;
      int fetch_stage = 0;
      // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
      auto issue_tile = [&]() {
        pipe.producer_acquire();
        auto t = t_fetch;
        if (t < numTiles) {
          auto &s = s_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using s_index = decltype(+((blockIdx.x * numTiles + t) * T + threadIdx.x));
          const s_index s_base = (s_index)((blockIdx.x * numTiles + t) * T + threadIdx.x)
              - (s_index)threadIdx.x;
          if (sizeof(s) % 16 == 0 &&
              blockDim.x == sizeof(s) / sizeof(s[0]) &&
              reinterpret_cast<unsigned long long>(&in[s_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&s[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
              const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
              ::cuda::memcpy_async(&s[col],
                                   &in[s_base + (s_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&s[threadIdx.x], &in[(blockIdx.x * numTiles + t) * T + threadIdx.x],
                                   ::cuda::aligned_size_t<sizeof(float)>(sizeof(float)), pipe);
          }
          ++t;
          t_fetch = t;
        }
        pipe.producer_commit();
        fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
      };
      for (int prologue = 0; prologue < 2; ++prologue)
        issue_tile();
      int stage = 0;
      for (; t < numTiles; ++t) {
        // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
        ::cuda::pipeline_consumer_wait_prior<1>(pipe);
        __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
        issue_tile();
        auto &s = s_stages[stage];
        red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      ::cuda::pipeline_consumer_wait_prior<0>(pipe); // only empty groups remain; wait for them anyway
      __syncthreads(); // the loop's writes to memory are seen by every thread after it
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      s[threadIdx.x] = in[(blockIdx.x * numTiles + t) * T + threadIdx.x];
      __syncthreads();
      red[threadIdx.x] += s[threadIdx.x] * s[T - 1 - threadIdx.x];
      __syncthreads();
    }
  }
#endif
  out[blockIdx.x * T + threadIdx.x] = red[threadIdx.x];
}

__global__ void neighbour_means(float* out, float* row, const float* in, int numTiles) {
  alignas(16) __shared__ float s_stages[3][T2];
  row[blockIdx.x * T2 + threadIdx.x] = 0.0f;
  __syncthreads();
  // row is not in: the launches below pass separate buffers. (Not __restrict__: row is written and
  // read by other threads, which __restrict__ would let the compiler ignore.)
  // tilepipe: assume-noalias=true
  // tilepipe: plan=always
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline of cp.async copies; the copies of the next 2 tiles overlap the compute on this one.
  {
    int t = 0;
    ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
    auto t_fetch = t;
    int fetch_stage = 0;
    // Copies the tile under the fetch cursor into buffer fetch_stage (an empty group past the end).
    auto issue_tile = [&]() {
      pipe.producer_acquire();
      auto t = t_fetch;
      if (t < numTiles) {
        auto &s = s_stages[fetch_stage];
        const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
        using s_index = decltype(+((blockIdx.x * numTiles + t) * T2 + threadIdx.x));
        const s_index s_base = (s_index)((blockIdx.x * numTiles + t) * T2 + threadIdx.x)
            - (s_index)threadIdx.x;
        if (sizeof(s) % 16 == 0 &&
            blockDim.x == sizeof(s) / sizeof(s[0]) &&
            reinterpret_cast<unsigned long long>(&in[s_base]) % 16 == 0 &&
            __cvta_generic_to_shared(&s[0]) % 16 == 0) {
          // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
          for (unsigned chunk = rank; chunk < sizeof(s) / 16; chunk += threads) {
            const unsigned col = chunk % (sizeof(s) / 16) * (16 / sizeof(s[0]));
            ::cuda::memcpy_async(&s[col],
                                 &in[s_base + (s_index)col],
                                 ::cuda::aligned_size_t<16>(16), pipe);
          }
        } else {
          if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
            ::cuda::memcpy_async(&s[threadIdx.x], &in[(blockIdx.x * numTiles + t) * T2 + threadIdx.x],
                                 ::cuda::aligned_size_t<sizeof(float)>(sizeof(float)), pipe);
        }
        ++t;
        t_fetch = t;
      }
      pipe.producer_commit();
      fetch_stage = fetch_stage + 1 == 3 ? 0 : fetch_stage + 1;
    };
    for (int prologue = 0; prologue < 2; ++prologue)
      issue_tile();
    int stage = 0;
    for (; t < numTiles; ++t) {
      // This thread's copies of this tile have landed (one group per tile; 1 newer may be in flight).
      ::cuda::pipeline_consumer_wait_prior<1>(pipe);
      __syncthreads(); // every thread's have, and no thread still reads the buffer refilled next
      issue_tile();
      auto &s = s_stages[stage];
      row[blockIdx.x * T2 + threadIdx.x] += 0.5f * (s[threadIdx.x] + s[(threadIdx.x + 1) % T2]);
      pipe.consumer_release();
      stage = stage + 1 == 3 ? 0 : stage + 1;
    }
    ::cuda::pipeline_consumer_wait_prior<0>(pipe); // only empty groups remain; wait for them anyway
    __syncthreads(); // the loop's writes to memory are seen by every thread after it
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &s = s_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      s[threadIdx.x] = in[(blockIdx.x * numTiles + t) * T2 + threadIdx.x];
      __syncthreads();
      row[blockIdx.x * T2 + threadIdx.x] += 0.5f * (s[threadIdx.x] + s[(threadIdx.x + 1) % T2]);
      __syncthreads();
    }
  }
#endif
  out[blockIdx.x * T2 + threadIdx.x] = row[blockIdx.x * T2 + (threadIdx.x + 1) % T2];
}

static void runCase(FILE* f, uint64_t seed, int caseNo, int blocks, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  std::vector<float> h = randomFloats((size_t)blocks * numTiles * T, rng);
  std::vector<float> h2 = randomFloats((size_t)blocks * numTiles * T2, rng);
  float* d = toDevice(h);
  float* d2 = toDevice(h2);
  float* dTotals = poisonedOutput<float>(blocks);
  float* dOwn = poisonedOutput<float>((size_t)blocks * T);
  float* dMeans = poisonedOutput<float>((size_t)blocks * T2);
  float* dRow = poisonedOutput<float>((size_t)blocks * T2);
  block_totals<<<blocks, T>>>(dTotals, d, numTiles);
  checkLaunch();
  own_totals<<<blocks, T>>>(dOwn, d, numTiles);
  checkLaunch();
  neighbour_means<<<blocks, T2>>>(dMeans, dRow, d2, numTiles);
  checkLaunch();
  writeOutput(f, dTotals, blocks);
  writeOutput(f, dOwn, (size_t)blocks * T);
  writeOutput(f, dMeans, (size_t)blocks * T2);
  printf("case %d: block_totals, own_totals, neighbour_means blocks=%d tiles=%d\n", caseNo, blocks, numTiles);
  if (timeIt) {
    timeKernel([&] { block_totals<<<blocks, T>>>(dTotals, d, numTiles); });
    timeKernel([&] { neighbour_means<<<blocks, T2>>>(dMeans, dRow, d2, numTiles); });
  }
  CK(cudaFree(d));
  CK(cudaFree(d2));
  CK(cudaFree(dTotals));
  CK(cudaFree(dOwn));
  CK(cudaFree(dMeans));
  CK(cudaFree(dRow));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  runCase(f, seed, 0, 3, 0, false);     // 0 tiles
  runCase(f, seed, 1, 5, 1, false);     // 1 tile
  runCase(f, seed, 2, 7, 2, false);     // 2 tiles
  runCase(f, seed, 3, 9, 3, false);     // 3 tiles
  runCase(f, seed, 4, 2048, 64, true);  // 2048 blocks x 64 tiles (timed)
  closeOutput(f);
  return 0;
}
