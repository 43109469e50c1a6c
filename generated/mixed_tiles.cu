// mixed_tiles.cu: a row block times a vector, tiled: each trip copies a 32 x 32 tile of A (a tensor
// copy on Hopper, through a map) and 32 elements of x (a bulk copy, no map) into __shared__, and
// each thread mixes elements of other threads' rows and columns.
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


#define T 32

// out[row * T + tx] for row = blockIdx.x * T + ty: over numTiles tiles of A's row block (lda apart)
// and of x, sums products of the tile's elements that other threads loaded.
__global__ void rows_times_vector(float* out, const float* A, const float* x, int lda, int numTiles, const __grid_constant__ ::tilepipe_tma::TileMap As_tmap = ::tilepipe_tma::TileMap{}, bool tilepipe_tma = false) {
  alignas(128) __shared__ float As_stages[3][T][T];
  alignas(128) __shared__ float xs_stages[3][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.x * T + ty;
  float acc = 0.0f;
  // EXPECT: pipelined
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // tilepipe: 3-stage pipeline; the copies of the next 2 tiles overlap the compute on this one. On compute
  // capability 9.0, launched with tensor maps: one tensor copy (TMA) or bulk copy
  // (cp.async.bulk) per tile, issued by one thread; else cp.async copies.
  {
    int t = 0;
#if __CUDA_ARCH__ >= 900
    bool tensor_copies = false;
    if (tilepipe_tma &&
        ::tilepipe_tma::takes(As_tmap, As_stages[0]) &&
        blockDim.y == sizeof(As_stages[0]) / sizeof(As_stages[0][0]) &&
        blockDim.x == sizeof(As_stages[0][0]) / sizeof(As_stages[0][0][0]) &&
        blockDim.x == sizeof(xs_stages[0]) / sizeof(xs_stages[0][0])) {
      // The leader (thread 0, 0, 0) issues the copies; each stage's copies land on its barrier. Its thread
      // indices are 0: each index it computes is that of its tile's first element.
#pragma nv_diagnostic push
      // The stage barriers are shared variables with constructors, set up by the leader.
#pragma nv_diag_suppress static_var_with_dynamic_init
      __shared__ ::cuda::barrier<::cuda::thread_scope_block> stage_barriers[3];
#pragma nv_diagnostic pop
      const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
      auto t_fetch = t;
      // Tensor and bulk copies where the first two tiles start on 16 bytes (so do all, where the indices
      // step evenly); else this block copies by cp.async.
      bool tiles_aligned = true;
      if (leader) {
        auto t = t_fetch;
        for (int probe = 0; probe < 2 && (t < numTiles); ++probe) {
          tiles_aligned = tiles_aligned &&
                          ::tilepipe_tma::starts_on_16(A, (long long)(row * lda + t * T + tx));
          tiles_aligned = tiles_aligned && ::tilepipe_tma::starts_on_16(x, (long long)(t * T + tx));
          ++t;
        }
        if (tiles_aligned) {
          for (int s = 0; s < 3; ++s)
            ::tilepipe_tma::init_barrier(stage_barriers[s], 1);
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
            auto &As = As_stages[fetch_stage];
            auto &xs = xs_stages[fetch_stage];
            ::tilepipe_tma::copy_tile(As_tmap, As, A, (long long)(row * lda + t * T + tx),
                                      stage_barriers[fetch_stage]);
            ::tilepipe_tma::bulk_copy(xs, x, (long long)(t * T + tx), stage_barriers[fetch_stage]);
            (void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, // all the copies' bytes
                                                    sizeof(As) + sizeof(xs));
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
          auto &As = As_stages[stage];
          auto &xs = xs_stages[stage];
          for (int k = 0; k < T; ++k)
            acc += As[ty][(k + tx) % T] * xs[(3 * k + tx) % T];
          acc *= 0.75f;
          stage = stage + 1 == 3 ? 0 : stage + 1;
        }
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
          auto &As = As_stages[fetch_stage];
          auto &xs = xs_stages[fetch_stage];
          const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
          const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
          using As_index = decltype(+(row * lda + t * T + tx));
          const As_index As_base = (As_index)(row * lda + t * T + tx)
              - (As_index)threadIdx.y * (As_index)(lda)
              - (As_index)threadIdx.x;
          if (sizeof(As[0]) % 16 == 0 &&
              blockDim.y == sizeof(As) / sizeof(As[0]) &&
              blockDim.x == sizeof(As[0]) / sizeof(As[0][0]) &&
              (lda) % (16 / sizeof(As[0][0])) == 0 &&
              reinterpret_cast<unsigned long long>(&A[As_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&As[0][0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk = rank; chunk < sizeof(As) / 16; chunk += threads) {
              const unsigned row0 = chunk / (sizeof(As[0]) / 16);
              const unsigned col = chunk % (sizeof(As[0]) / 16) * (16 / sizeof(As[0][0]));
              ::cuda::memcpy_async(&As[row0][col],
                                   &A[As_base + (As_index)row0 * (As_index)(lda) + (As_index)col],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&As[ty][tx], &A[row * lda + t * T + tx],
                                   ::cuda::aligned_size_t<sizeof(float)>(sizeof(float)), pipe);
          }
          using xs_index = decltype(+(t * T + tx));
          const xs_index xs_base = (xs_index)(t * T + tx) - (xs_index)threadIdx.x;
          if (sizeof(xs) % 16 == 0 &&
              blockDim.x == sizeof(xs) / sizeof(xs[0]) &&
              reinterpret_cast<unsigned long long>(&x[xs_base]) % 16 == 0 &&
              __cvta_generic_to_shared(&xs[0]) % 16 == 0) {
            // tilepipe: the whole tile in 16-byte chunks spread over the block (the block has its shape)
            for (unsigned chunk_1 = rank; chunk_1 < sizeof(xs) / 16; chunk_1 += threads) {
              const unsigned col_1 = chunk_1 % (sizeof(xs) / 16) * (16 / sizeof(xs[0]));
              ::cuda::memcpy_async(&xs[col_1],
                                   &x[xs_base + (xs_index)col_1],
                                   ::cuda::aligned_size_t<16>(16), pipe);
            }
          } else {
            if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements
              ::cuda::memcpy_async(&xs[tx], &x[t * T + tx],
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
        auto &As = As_stages[stage];
        auto &xs = xs_stages[stage];
        for (int k = 0; k < T; ++k)
          acc += As[ty][(k + tx) % T] * xs[(3 * k + tx) % T];
        acc *= 0.75f;
        pipe.consumer_release();
        stage = stage + 1 == 3 ? 0 : stage + 1;
      }
      ::cuda::pipeline_consumer_wait_prior<0>(pipe); // only empty groups remain; wait for them anyway
    }
  }
#else
  { // tilepipe: below compute capability 8.0, the loop as it was
    auto &As = As_stages[0];
    auto &xs = xs_stages[0];
    for (int t = 0; t < numTiles; ++t) {
      As[ty][tx] = A[row * lda + t * T + tx];
      xs[tx] = x[t * T + tx];
      __syncthreads();
      for (int k = 0; k < T; ++k)
        acc += As[ty][(k + tx) % T] * xs[(3 * k + tx) % T];
      acc *= 0.75f;
      __syncthreads();
    }
  }
#endif
  out[row * T + tx] = acc;
}

// tilepipe: launches rows_times_vector with a tensor map for each tile it copies by TMA (compute capability
// 9.0 and later). Elsewhere, or where a map cannot describe the data (a pointer or a row stride not
// on 16 bytes), it launches without, and the kernel copies with cp.async as it does when launched directly.
#define TILEPIPE_LAUNCHER_rows_times_vector 1
static void tilepipe_launch_rows_times_vector(::dim3 grid, ::dim3 block, ::size_t shared_bytes, ::cudaStream_t stream, float* out, const float* A, const float* x, int lda, int numTiles) {
  ::tilepipe_tma::TileMap As_tmap = {};
  bool tma = ::tilepipe_tma::available();
  tma = tma && ::tilepipe_tma::encode(&As_tmap, A, sizeof(float), (long long)(lda), (long long)(T), (long long)(T));
  static ::std::atomic<unsigned> traced{0};
  ::tilepipe_tma::trace("tilepipe_launch_rows_times_vector", tma, traced);
  ::rows_times_vector<<<grid, block, shared_bytes, stream>>>(out, A, x, lda, numTiles, As_tmap, tma);
}

static void run(FILE* f, uint64_t seed, int caseNo, int blocks, int lda, int numTiles, bool timeIt) {
  Rng rng(seed, caseNo);
  const size_t rows = (size_t)blocks * T;
  std::vector<float> hA = randomFloats(rows * lda, rng);
  std::vector<float> hx = randomFloats((size_t)numTiles * T, rng);
  float* dA = toDevice(hA);
  float* dx = toDevice(hx);
  const size_t nOut = rows * T;
  float* dOut = poisonedOutput<float>(nOut);
  const dim3 block(T, T);
  tilepipe_launch_rows_times_vector(blocks, block, 0, 0, dOut, dA, dx, lda, numTiles);
  checkLaunch();
  writeOutput(f, dOut, nOut);
  printf("case %d: rows_times_vector blocks=%d lda=%d tiles=%d\n", caseNo, blocks, lda, numTiles);
  if (timeIt) timeKernel([&] { tilepipe_launch_rows_times_vector(blocks, block, 0, 0, dOut, dA, dx, lda, numTiles); });
  CK(cudaFree(dA));
  CK(cudaFree(dx));
  CK(cudaFree(dOut));
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  FILE* f = openOutput(argc, argv, &seed);
  run(f, seed, 0, 3, 32, 0, false);        // 0 tiles
  run(f, seed, 1, 5, 32, 1, false);        // 1 tile
  run(f, seed, 2, 7, 96, 2, false);        // 2 tiles
  run(f, seed, 3, 9, 100, 3, false);       // 3 tiles
  run(f, seed, 4, 40, 163, 5, false);      // rows off 16 bytes: cp.async
  run(f, seed, 5, 4096, 2048, 64, true);   // 64 tiles x 4096 blocks
  closeOutput(f);
  return 0;
}
