// tilepipe's runtime: what code rewritten by tilepipe calls for tensor copies (TMA) and bulk copies
// (cp.async.bulk). The host encodes tensor maps through the driver entry point that the runtime
// hands out (no link to libcuda); on the device, one thread issues each tile's copy.
//
// Versioned: TILEPIPE_RUNTIME_VERSION names this code, and all of it lies in an inline namespace of
// that version, so that files rewritten against two versions link into one program without sharing
// a definition. A rewritten file checks that it includes the version it was rewritten for. Any
// change to this file's code comes with a new version (macro, string and namespace alike).
#ifndef TILEPIPE_RUNTIME_CUH
#define TILEPIPE_RUNTIME_CUH
#define TILEPIPE_RUNTIME_VERSION 1
#define TILEPIPE_RUNTIME_VERSION_STRING "1"
#include <cuda.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <cstdint>
#include <type_traits>
namespace tilepipe_rt {
inline namespace v1 {
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
/// in hardware until the phase completes or a time limit passes; unlike cuda::barrier::wait_parity,
/// it reads no timer and does not back off by sleeping.
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
      // Not unrolled: this path is rare, and unrolled, a brick's copies would hold registers
      // that the whole kernel pays for.
#pragma unroll 1
      for (unsigned P = 0; P < Planes; ++P)
#pragma unroll 1
        for (unsigned R = 0; R < Rows; ++R)
          ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, D + (P * Rows + R) * Cols,
                                     Src + First + P * M.Plane + R * M.Stride, (uint32_t)(Cols * sizeof(E)),
                                     ::cuda::device::barrier_native_handle(Bar));
    } else {
      // Left to the compiler to unroll: a loop kept rolled holds more registers here.
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
} // inline namespace v1
} // namespace tilepipe_rt
#endif // TILEPIPE_RUNTIME_CUH
