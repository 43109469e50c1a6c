// The plain description of one tiled loop: the contract between find, check, plan and emit.
#pragma once
#include "tilepipe/Reasons.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/Stmt.h"
#include <string>
#include <vector>

namespace tilepipe {

/// Where the two barriers sit: 'copy; barrier; compute; barrier' or 'barrier; copy; barrier; compute'.
enum class LoopForm { Trailing, Rotated };

/// How one copy fills a whole tile, seen from the block: tile element (r0, ..., rn-1) is read from
/// Pointer[Base + r0 * Coefficients[0] + ... + rn-1 * Coefficients[n-1]] (the last is 1) by the
/// thread whose index in dimension ThreadDims[d] ('x', 'y' or 'z') is r_d. Base is the same in all threads:
/// each computes it as its own Index minus its own thread terms. Known when a single unguarded store at the top
/// of the copy phase fills the tile with thread indices as its subscripts; then, when the block has
/// the tile's shape and the addresses are 16-byte aligned, the block may copy the tile in 16-byte
/// chunks spread over all its threads instead of one element per thread.
struct TileBox {
  bool Valid = false;
  std::string WhyNot;                    ///< when !Valid: why the tile is copied one element per thread
  size_t Store = 0;                      ///< index into LoopModel::Stores
  std::string Pointer;                   ///< text of the pointer the store reads through
  std::string Index;                     ///< text of the source index as written
  std::vector<char> ThreadDims;          ///< thread index that selects each tile dimension
  std::vector<std::string> Coefficients; ///< text: the source index per step of ThreadDims[d]

  /// Hopper tensor copies (TMA): the host can describe the source as a tensor when the pointer is
  /// a kernel parameter and the row stride and the tile's extents are written in terms of kernel
  /// parameters and compile-time constants only.
  bool Tma = false;
  std::string TmaWhyNot;
  std::string PointerParam;            ///< the kernel parameter the copy reads through
  std::vector<std::string> ExtentText; ///< the tile's extents as written, outermost first

  /// Hopper bulk copies (cp.async.bulk, no tensor map, no host change): a tile of one dimension,
  /// unguarded, a whole number of 16-byte units, read through a pointer that stays the same from
  /// tile to tile at an index that moves by a fixed step, is one contiguous piece of memory that
  /// one instruction moves.
  bool Bulk = false;
  std::string BulkWhyNot;

  /// A guarded copy, `G ? Pointer[Index] : 0` or its if/else form: the box is known, but the
  /// block-wide 16-byte copy does not fill zeros, so only a tensor copy may move it whole. G bounds
  /// each box dimension d from above, Coordinates[d] < Bounds[d], where Coordinates[d] is the
  /// element's column (innermost) or row, one step per thread index of that dimension; the tensor
  /// map's extents are the bounds, so that it zero-fills what G excludes.
  const clang::Stmt *Replaced = nullptr; ///< the statement a tile copy replaces (the store, or the if)
  bool Guarded = false;                  ///< the copy is guarded (whether or not a tensor copy may move it)
  std::vector<std::string> Coordinates;  ///< guarded, with a tensor copy: text, outermost dimension first
  std::vector<std::string> Bounds;       ///< guarded, with a tensor copy: kernel parameters and constants only
  /// Whether the block may copy the tile in 16-byte chunks.
  bool wide() const { return Valid && !Guarded; }
};

/// A __shared__ array the copy phase fills.
/// A static __shared__ variable as the layout sees it: its size and alignment, in bytes.
struct SharedVar {
  const clang::VarDecl *Var = nullptr; ///< null for what the rewrite adds
  uint64_t Bytes = 0, Align = 1;
};

struct Tile {
  const clang::VarDecl *Var = nullptr;
  const clang::DeclStmt *DeclaredInBody = nullptr; ///< set when the array is declared inside the loop body
  clang::QualType ElementType;                     ///< innermost element type (this instantiation)
  std::string ElementTypeText;                     ///< the element type as written in the source
  uint64_t Bytes = 0;                              ///< size of one stage
  TileBox Box;                                     ///< the block-wide copy, when one is known
  /// Why cp.async cannot move an element (`uint8_t`, `__half`: cp.async moves 4, 8 or 16 bytes),
  /// or "": such a tile takes the register-staged prefetch alone, which moves it by plain loads
  /// and stores of its own type.
  std::string AsyncProblem;
  /// The tile lies in dynamic shared memory: Var is a one-dimensional `extern __shared__` array,
  /// or a local pointer that views one (check's dynamicView). Its size is each launch's, so it has
  /// no stages: AsyncProblem says so, and the loop takes the register-staged prefetch alone, which
  /// keeps the one buffer where it was. Bytes is 0.
  bool Dynamic = false;
};

/// One store into a tile inside the copy phase.
struct TileStore {
  const clang::Stmt *Statement = nullptr; ///< the assignment (BinaryOperator or CXXOperatorCallExpr)
  const clang::Expr *Guard = nullptr;     ///< the condition of `Guard ? x : y`, or of the if whose branch this is
  const clang::IfStmt *GuardIf = nullptr; ///< that if, when the guard is one
  bool WhenGuardHolds = true;             ///< this store is the guard's true branch
  unsigned Guards = 0;                    ///< conditions around the store (1: Guard alone)
  const clang::Expr *Dst = nullptr;       ///< the tile element written
  const clang::Expr *Src = nullptr;       ///< plain read of global memory, or null for a fill
  const clang::Expr *Fill = nullptr;      ///< value stored when this is a fill
  size_t TileIdx = 0;                     ///< index into LoopModel::Tiles
  bool InInnerLoop = false;               ///< inside an inner copy loop: it may run several times a tile
  /// A store that reads through a local of the copy phase (`s[..] = v.x` after `float4 v = A4[i];`):
  /// the local, and its initializer's read of global memory (`A4[i]`). Src is then the store's
  /// value as written (`v.x`); the element copied is that part of Read.
  const clang::VarDecl *Via = nullptr;
  const clang::Expr *Read = nullptr;
  /// A vector store, `reinterpret_cast<float4 *>(&t[i])[0] = ...`: the cast that views the tile
  /// as vectors, and how many tile elements the one vector writes (1 where there is no view). Dst
  /// is then the vector as written, and the value a whole vector of the same type.
  const clang::ExplicitCastExpr *View = nullptr;
  unsigned Width = 1;
  /// A store or read through a copy helper (check/CopyHelpers.cpp). Helper: the call that stores,
  /// `st_vec(&t[i], v)`, which Statement is; Dst is then the element its argument addresses, and
  /// View (if any) the cast in the helper's body. SrcAddress: where Src is a call that reads,
  /// `ld_vec(g + i)`, its argument, the address the copy reads.
  const clang::CallExpr *Helper = nullptr;
  const clang::Expr *SrcAddress = nullptr;
};

struct LoopModel {
  const clang::Stmt *Loop = nullptr; ///< ForStmt or WhileStmt
  const clang::FunctionDecl *Function = nullptr;
  LoopForm Form = LoopForm::Trailing;

  /// `#pragma unroll` / `#pragma nounroll` lines on the loop (the statement that holds it and them),
  /// which the rewrite writes on its mainloop, or null.
  const clang::AttributedStmt *Hints = nullptr;
  const clang::Stmt *Init = nullptr;             ///< for-init, hoisted in front of the pipelined loop
  const clang::Expr *Cond = nullptr;             ///< evaluated ahead on the fetch cursor
  const clang::Expr *Inc = nullptr;              ///< for-increment
  /// Increments at the end of the body: a while loop's, and a for loop's after its trailing
  /// barrier; the mainloop runs them after the compute phase, the fetch cursor with the increment.
  std::vector<const clang::Stmt *> TailIncs;
  /// Increments at the top level of the compute phase of variables the copy phase or the
  /// condition reads (`A += BK;` after the barrier): they stay where they are, and the fetch
  /// cursor takes them too, as it takes the for-increment.
  std::vector<const clang::Stmt *> BodyIncs;
  std::vector<const clang::VarDecl *> Inductions;

  const clang::Stmt *FirstBarrier = nullptr;      ///< rotated form only: the leading barrier
  const clang::Stmt *CopyBarrier = nullptr;       ///< the barrier that publishes the tiles
  const clang::Stmt *TrailingBarrier = nullptr;   ///< trailing form only
  std::vector<const clang::Stmt *> CopyPhase;     ///< statements of the copy phase, in order
  std::vector<const clang::Stmt *> ComputePhase;  ///< statements of the compute phase, in order
  std::vector<const clang::DeclStmt *> IndexDecls; ///< pure local declarations in the copy phase
  /// The statements that set locals tile stores read through (TileStore::Via): their declarations,
  /// anywhere in the copy phase, and `v = P[j];` at its top level. The pipeline copies from their
  /// reads and drops them; the register-staged prefetch keeps them where it loads.
  std::vector<const clang::Stmt *> ValueDefs;

  std::vector<Tile> Tiles;
  std::vector<TileStore> Stores;

  std::vector<std::string> NoAliasAssumed; ///< pointers stored to that are assumed not to overlap sources
  /// Pointers the loop reads as unchanged while the kernel runs (an index, a trip count) where only
  /// --assume-noalias says that no other pointer writes their memory.
  std::vector<std::string> UnchangedAssumed;
  std::vector<std::string> SourcePointers;  ///< the pointers the copies read, for messages
  bool NestedInLoop = false;                ///< the loop may run again (an outer loop, a __device__ function, a lambda, a label for a goto)
  /// The compute phase may write memory that another thread can read after the loop (shared or
  /// global memory, or a local whose address escapes). The original's last trailing barrier
  /// ordered those writes before the code after the loop; the rewrite then keeps a barrier there.
  bool ComputeWritesMemory = true;
  /// Every thread of the block provably reaches the loop (no thread left the kernel before it),
  /// so copies spread over the whole block, or issued by one thread for all, copy what the
  /// original's threads did. When false, each thread copies its own elements.
  bool AllThreadsReachLoop = false;
  /// The function's static __shared__ variables other than these tiles.
  std::vector<SharedVar> OtherShared;
};

} // namespace tilepipe
