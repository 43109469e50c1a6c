// Tiles in dynamic shared memory, whose size each launch sets (docs/legality.md, T9): the
// `extern __shared__` array of one dimension itself, or a local pointer that views it for the whole
// function (set once where it is declared, to dynamic shared memory alone). Such a tile has no
// stages; the register-staged prefetch, which keeps its one buffer, takes it. Any other store into
// dynamic shared memory refuses, with what a fixed view is.
#include "LoopChecker.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"

using namespace clang;

namespace tilepipe::check {

/// Why a store into the dynamic shared memory V is refused: what the user would change.
std::string LoopChecker::dynamicSharedWhy(const VarDecl *V) {
  return quoted(V) + " is dynamic shared memory (extern __shared__), whose size each launch sets, and the copy "
         "does not store into a fixed view of it: the array itself (of one dimension), or a local pointer set "
         "once where it is declared (`float *s = " + V->getNameAsString() + " + offset;`, or the CUDA samples' "
         "`SharedMemory<T>()`) and never changed or its address taken, is rewritten with the register-staged "
         "prefetch, which needs no more shared memory; stages of it would need several times its size from "
         "every launch, which tilepipe does not arrange";
}

/// The dynamic shared memory (`extern __shared__ T s[];`) the pointer P may point into, or null;
/// also through a local set from a call whose callee names such memory (the CUDA samples'
/// `SharedMemory<T>().get()`). It only words a refusal: the loop is refused either way.
static const VarDecl *dynamicSharedRoot(EffectsAnalyzer &Effects, const FunctionDecl *F, const Expr *P,
                                        unsigned Depth = 0) {
  if (!P->getType()->isPointerType() || Depth > 4)
    return nullptr;
  for (const VarDecl *V : Effects.rootsOf(F, P).Roots)
    if (isSharedVar(V) && V->hasExternalStorage())
      return V;
  const Expr *E = P->IgnoreParenCasts();
  if (const VarDecl *V = varOf(E); V && V->hasLocalStorage() && V->getInit())
    return dynamicSharedRoot(Effects, F, V->getInit(), Depth + 1);
  const auto *Call = dyn_cast<CallExpr>(E);
  const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
  const FunctionDecl *Def = nullptr;
  if (!Callee || !Callee->hasBody(Def))
    return nullptr;
  for (const NameUse &U : namesIn(Def->getBody()))
    if (const auto *V = dyn_cast_or_null<VarDecl>(U.Decl); V && isSharedVar(V) && V->hasExternalStorage())
      return V;
  return nullptr;
}

/// Why a tile in dynamic shared memory that the rewrite accepts has no stages, and what it gets.
std::string LoopChecker::dynamicStagesWhy(const VarDecl *V) {
  return quoted(V) + " is dynamic shared memory (extern __shared__" +
         (V->getType()->isPointerType() ? std::string(", through a pointer that views it") : std::string()) +
         "), whose size each launch sets: stages of it would need several times that size from every "
         "launch, which tilepipe does not arrange, and the register-staged prefetch needs no more shared memory";
}

/// A store through the pointer Ptr (Text), which no tile is: into dynamic shared memory, a tile
/// the rewrite cannot stage (tile-declaration, with what to change); anything else, load-phase.
Verdict LoopChecker::storeThroughPointer(const Expr *Ptr, const std::string &Text) {
  if (const VarDecl *Dyn = dynamicSharedRoot(Effects, M.Function, Ptr))
    return Verdict::refuse(Reason::TileDeclaration,
                           "the copy stores through the pointer '" + Text + "': " + dynamicSharedWhy(Dyn));
  return Verdict::refuse(Reason::LoadPhase, "stores through the pointer '" + Text + "', not into a tile");
}

/// Whether the pointer value E of function F points into dynamic shared memory alone: where the
/// effects analysis follows it (casts, arithmetic, locals), every root is an `extern __shared__`
/// array; a call (`SharedMemory<T>()`, through its conversion operator) is followed into its body,
/// every return of which must be such a value.
static bool dynamicSharedValue(EffectsAnalyzer &Effects, const FunctionDecl *F, const Expr *E,
                               unsigned Depth = 0) {
  const Expr *X = skipCleanups(E)->IgnoreParenCasts();
  if (const auto *Call = dyn_cast<CallExpr>(X)) {
    const FunctionDecl *Callee = Call->getDirectCallee(), *Def = nullptr;
    if (Depth > 3 || !Callee || !Callee->hasBody(Def) || !Def->getBody())
      return false;
    struct Returns : RecursiveASTVisitor<Returns> {
      std::vector<const ReturnStmt *> Found;
      bool VisitReturnStmt(ReturnStmt *R) { return Found.push_back(R), true; }
      bool TraverseLambdaExpr(LambdaExpr *) { return true; } // a lambda's returns are its own
    } R;
    R.TraverseStmt(const_cast<Stmt *>(Def->getBody()));
    return !R.Found.empty() && llvm::all_of(R.Found, [&](const ReturnStmt *RS) {
      return RS->getRetValue() && dynamicSharedValue(Effects, Def, RS->getRetValue(), Depth + 1);
    });
  }
  RootSet Roots = Effects.rootsOf(F, E);
  return !Roots.Unknown && !Roots.Roots.empty() && llvm::all_of(Roots.Roots, [](const VarDecl *Root) {
    return isSharedVar(Root) && Root->hasExternalStorage();
  });
}

bool LoopChecker::dynamicView(const VarDecl *V) {
  if (!V || !V->hasLocalStorage() || isa<ParmVarDecl>(V) || V->isStaticLocal() || !V->getInit() ||
      V->getDeclContext() != M.Function || !V->getType()->isPointerType() ||
      V->getType()->getPointeeType()->isArrayType() || V->getType()->getPointeeType()->isFunctionType())
    return false;
  const LocalFacts &L = Effects.localFacts(M.Function);
  if (L.Mutated.contains(V) || L.Escaped.contains(V))
    return false;
  return dynamicSharedValue(Effects, M.Function, V->getInit());
}

bool LoopChecker::isDynamicTile(const VarDecl *V) {
  if (V->getType()->isPointerType())
    return dynamicView(V);
  const auto *A = dyn_cast_or_null<IncompleteArrayType>(Ctx.getAsArrayType(V->getType()));
  return A && isSharedVar(V) && V->hasExternalStorage() && !Ctx.getAsArrayType(A->getElementType());
}

unsigned LoopChecker::tileRank(const VarDecl *V) {
  return V->getType()->isPointerType() ? 1 : arrayRank(Ctx, V->getType());
}

} // namespace tilepipe::check
