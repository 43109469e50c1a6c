// Effects: what a piece of a kernel may write and read, with memory named by where its pointers
// come from, through lambdas and the __device__ functions of the translation unit.
//
// The rewrite issues the copies of future tiles before the compute phase of this one, and keeps no
// barrier after the loop unless told to. Both are sound only when the analysis knows every store
// the loop makes and every memory access of its compute phase; this file is where that is decided.
// Whatever it cannot follow is Unknown, and Unknown refuses.
#pragma once
#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include <map>
#include <string>
#include <vector>

namespace tilepipe {

class TranslationUnitIndex;

/// Where a pointer may point: into the memory of these declarations (kernel parameters, global,
/// __shared__ or local variables), or somewhere the analysis cannot name.
struct RootSet {
  llvm::SmallVector<const clang::VarDecl *, 2> Roots;
  bool Unknown = false;
  std::string Why; ///< when Unknown: what could not be followed
  void add(const clang::VarDecl *V);
  void join(const RootSet &O);
  void unknown(std::string W);
};

/// One store into memory (not into a local variable of the function).
struct MemoryWrite {
  const clang::Stmt *Where = nullptr; ///< the store, or the call that makes it
  RootSet Target;
};

/// What statements may do, seen from the function that holds them.
struct RegionEffects {
  std::vector<MemoryWrite> Writes;
  /// Memory read or written that is not a local variable: roots of every access.
  RootSet Touched;
  bool TouchesMemory = false;
  /// Something whose effects cannot be known: a call without a body, inline assembly, a store
  /// through a pointer to pointer. First one found.
  const clang::Stmt *UnknownAt = nullptr;
  std::string UnknownWhy;
  /// An operation through which other threads' writes (other blocks', the host's) may become
  /// visible: a volatile access to memory, a fence, an atomic whose result is used, a grid or
  /// cluster barrier, a PTX instruction. A copy may not be issued before it. First one found.
  const clang::Stmt *SyncAt = nullptr;
  std::string SyncWhy;
};

/// Variables of one function that may change, and those whose storage escapes: their address is
/// taken, they are bound to a non-const reference, captured by reference, or passed to a
/// non-const reference. An escaped variable is memory: any call or store may change it.
class LocalFacts {
public:
  void scan(const clang::Stmt *S);
  llvm::SmallPtrSet<const clang::VarDecl *, 16> Mutated;
  llvm::SmallPtrSet<const clang::VarDecl *, 16> Escaped;
  llvm::SmallPtrSet<const clang::VarDecl *, 16> Declared;
  bool HasLambda = false;
  bool changes(const clang::VarDecl *V) const { return Mutated.contains(V) || Escaped.contains(V); }
};

class EffectsAnalyzer {
public:
  EffectsAnalyzer(clang::ASTContext &Ctx, const TranslationUnitIndex &Index)
      : Ctx(Ctx), Index(Index) {}

  /// Effects of these statements of function F, with the calls they make.
  RegionEffects effectsOf(const clang::FunctionDecl *F,
                          llvm::ArrayRef<const clang::Stmt *> Stmts);
  /// Where the pointer value E (in function F) may point.
  RootSet rootsOf(const clang::FunctionDecl *F, const clang::Expr *E);
  /// A function whose result depends only on its arguments' values: no memory read or written,
  /// decided from its body, or for a declaration without one from the toolkit's own math
  /// functions (declared in a system header, arithmetic parameters only).
  bool isPure(const clang::FunctionDecl *FD);
  /// Variables of F that may change, and those that escape (cached per function).
  const LocalFacts &localFacts(const clang::FunctionDecl *F);

private:
  struct Frame;
  class Walker;
  clang::ASTContext &Ctx;
  const TranslationUnitIndex &Index;
  std::map<const clang::FunctionDecl *, LocalFacts> Facts; ///< node-based: references stay valid
  llvm::DenseMap<const clang::FunctionDecl *, bool> PureCache;

  RootSet roots(const Frame &Fr, const clang::Expr *E, unsigned Depth);
  RootSet rootsOfVar(const Frame &Fr, const clang::VarDecl *V, unsigned Depth);
  /// Where the lvalue E lives: a local variable (Local set), or memory behind roots.
  bool location(const Frame &Fr, const clang::Expr *E, const clang::VarDecl *&Local,
                RootSet &Mem, unsigned Depth);
  void walk(const Frame &Fr, const clang::Stmt *S, RegionEffects &Out, unsigned Depth);
  bool pureBody(const clang::FunctionDecl *FD, unsigned Depth);
};

/// Whether every thread of a block that runs F reaches statement S of F: nothing before it can
/// leave the kernel (return, goto, inline assembly) or skip it (break, continue), and every
/// condition around it is the same in all threads of a block. For a __device__ function, every
/// call of it in the translation unit must be reached so. When false, Why says what stands in the
/// way.
bool allThreadsReach(clang::ASTContext &Ctx, const TranslationUnitIndex &Index,
                     EffectsAnalyzer &Effects, const clang::FunctionDecl *F,
                     const clang::Stmt *S, std::string &Why, unsigned Depth = 0);

/// Whether E may differ between the threads of one block: it names threadIdx (or a local that
/// may hold a thread-dependent value), reads memory, or calls a function that is not pure.
bool mayDifferAcrossThreads(clang::ASTContext &Ctx, EffectsAnalyzer &Effects,
                            const clang::FunctionDecl *F, const clang::Expr *E);

} // namespace tilepipe
