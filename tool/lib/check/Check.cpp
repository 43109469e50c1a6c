// Check: the facts about the translation unit that single loops need, and the order of the
// steps that check one loop (LoopChecker.h says which file takes each step).
#include "LoopChecker.h"
#include <functional>
#include "clang/AST/Attr.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"

using namespace clang;

namespace tilepipe {

// Translation-unit facts: every direct call, by callee.

namespace {
class CallIndexer : public RecursiveASTVisitor<CallIndexer> {
public:
  llvm::DenseMap<const FunctionDecl *, std::vector<const CallExpr *>> &Calls;
  explicit CallIndexer(llvm::DenseMap<const FunctionDecl *, std::vector<const CallExpr *>> &C)
      : Calls(C) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  // Calls in default arguments, member initializers and a range-for's header are calls too.
  bool shouldVisitImplicitCode() const { return true; }
  bool VisitCallExpr(CallExpr *CE) {
    if (const FunctionDecl *FD = CE->getDirectCallee())
      Calls[FD->getCanonicalDecl()].push_back(CE);
    return true;
  }
};
} // namespace

TranslationUnitIndex::TranslationUnitIndex(ASTContext &Ctx) : Ctx(Ctx) {
  CallIndexer I(Calls);
  I.TraverseDecl(Ctx.getTranslationUnitDecl());
}

llvm::ArrayRef<const FunctionDecl *> TranslationUnitIndex::nonMemberAddressOf() const {
  if (!AddressOfs)
    AddressOfs = nonMemberAddressOfs(Ctx);
  return *AddressOfs;
}

llvm::ArrayRef<const CallExpr *> TranslationUnitIndex::callersOf(const FunctionDecl *FD) const {
  auto It = Calls.find(FD->getCanonicalDecl());
  if (It == Calls.end())
    return {};
  return It->second;
}

} // namespace tilepipe

namespace tilepipe::check {

static std::vector<SharedVar> sharedOutside(ASTContext &Ctx, const FunctionDecl *FD,
                                            const std::vector<Tile> &Tiles) {
  struct Decls : RecursiveASTVisitor<Decls> {
    std::vector<const VarDecl *> Shared;
    bool VisitVarDecl(VarDecl *V) {
      if (isSharedVar(V) && !V->hasExternalStorage())
        Shared.push_back(V);
      return true;
    }
  } D;
  D.TraverseStmt(FD->getBody());
  std::vector<SharedVar> Out;
  for (const VarDecl *V : D.Shared)
    if (llvm::none_of(Tiles, [&](const Tile &T) { return T.Var == V; }) &&
        !V->getType()->isDependentType() && !V->getType()->isIncompleteType())
      Out.push_back({V, static_cast<uint64_t>(Ctx.getTypeSizeInChars(V->getType()).getQuantity()),
                     static_cast<uint64_t>(Ctx.getDeclAlign(V).getQuantity())});
  return Out;
}

/// The steps in order. A step that refuses the loop does not end the check where the steps after
/// it can still be read truly (Verdict::Others lists what they find, for a user who wants to know
/// how far the loop is from a rewrite): a loop whose shape or inductions are not known ends there,
/// since everything after reads them.
Verdict LoopChecker::run() {
  Verdict Out;
  if (Verdict V = checkLoopStatement(); !V.ok())
    return V;
  Out.block(checkBuiltinNames());
  InFunction = &Effects.localFacts(M.Function);
  InLoop.scan(M.Loop);
  if (Verdict V = checkShape(); !V.ok()) {
    Out.block(V);
    return Out;
  }
  if (InLoop.HasLambda)
    Out.block(Verdict::refuse(Reason::Unsupported, "the loop holds a lambda"));
  if (Verdict V = collectInductions(); !V.ok()) {
    Out.block(V);
    return Out;
  }
  Out.block(checkCondition());
  Out.block(checkCopyPhase());
  if (!M.Tiles.empty()) {
    Out.block(checkTiles());
    Out.block(checkStores());
    Out.block(checkOverlap());
  }
  if (!Out.ok())
    return Out;
  // The loop is safe to rewrite; what follows only chooses how.
  describeSurroundings();
  analyzeBoxes();
  requireAllThreadsForWholeTiles();
  return {};
}

/// The emitted code reads threadIdx, blockDim and the other builtins by their plain names, as CUDA
/// code does. That means CUDA's variables only where no declaration of the user's of that name is
/// in scope: a local (`dim3 blockDim(64)`, which nvcc accepts), a parameter, a member of an
/// enclosing class or a variable of an enclosing namespace. The user's code would then read the
/// user's variable and the emitted code too, and the emitted code's thread ranks and shape checks
/// would be the user's numbers, not the block's. So would a macro of such a name.
Verdict LoopChecker::checkBuiltinNames() {
  static const char *const Names[] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};
  auto shadow = [&](const NamedDecl *D) -> Verdict {
    return Verdict::refuse(Reason::Unsupported,
                           "'" + D->getNameAsString() + "' here names a declaration at line " +
                               std::to_string(SM.getPresumedLineNumber(D->getLocation())) +
                               ", not CUDA's builtin, which the rewrite's own code reads");
  };
  auto named = [&](const NamedDecl *D) {
    return D->getIdentifier() && llvm::is_contained(Names, D->getName()) &&
           !(isa<VarDecl>(D) && isCudaBuiltinVar(cast<VarDecl>(D))) &&
           !SM.isInSystemHeader(D->getLocation());
  };
  // A macro of that name (the toolkit defines none of these) would rename both alike.
  for (const char *N : Names)
    if (Ctx.Idents.get(N).hadMacroDefinition())
      return Verdict::refuse(Reason::Unsupported,
                             "'" + std::string(N) +
                                 "' is defined as a macro, so the rewrite's own code would not "
                                 "read CUDA's builtin");
  for (const DeclContext *DC = M.Function; DC && !DC->isTranslationUnit(); DC = DC->getParent()) {
    if (DC->isTransparentContext())
      continue; // extern "C" { ... }: its names are the enclosing context's
    if (const auto *FD = dyn_cast<FunctionDecl>(DC)) {
      struct Locals : RecursiveASTVisitor<Locals> {
        std::function<bool(const NamedDecl *)> Named;
        const NamedDecl *Found = nullptr;
        bool VisitVarDecl(VarDecl *V) {
          if (!Found && Named(V))
            Found = V;
          return !Found;
        }
      } L;
      L.Named = named;
      for (const ParmVarDecl *P : FD->parameters())
        if (named(P))
          return shadow(P);
      L.TraverseStmt(FD->getBody());
      if (L.Found)
        return shadow(L.Found);
      continue;
    }
    for (const char *N : Names)
      for (const NamedDecl *D : DC->lookup(&Ctx.Idents.get(N)))
        if (named(D))
          return shadow(D);
  }
  return {};
}

/// What the plan needs to know of the loop's surroundings: whether the emitted block may run again
/// while threads still read the last stage, and the __shared__ memory the tiles share the block with.
void LoopChecker::describeSurroundings() {
  M.NestedInLoop = !M.Function->hasAttr<CUDAGlobalAttr>();
  for (DynTypedNodeList P = Ctx.getParents(*M.Loop); !P.empty(); P = Ctx.getParents(P[0])) {
    // A loop statement around it, or a lambda (which may be called more than once).
    if (const Stmt *S = P[0].get<Stmt>();
        S && isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt, LambdaExpr>(S))
      M.NestedInLoop = true;
    if (const auto *FD = P[0].get<FunctionDecl>()) {
      if (const auto *MD = dyn_cast<CXXMethodDecl>(FD); MD && MD->getParent()->isLambda())
        M.NestedInLoop = true;
      break;
    }
  }
  // A label anywhere in the function: a goto may run the loop again without a loop statement.
  struct Labels : RecursiveASTVisitor<Labels> {
    bool Found = false;
    bool shouldVisitLambdaBody() const { return true; }
    bool VisitLabelStmt(LabelStmt *) { return !(Found = true); }
    bool VisitIndirectGotoStmt(IndirectGotoStmt *) { return !(Found = true); }
  } L;
  L.TraverseStmt(M.Function->getBody());
  M.NestedInLoop |= L.Found;
  M.OtherShared = sharedOutside(Ctx, M.Function, M.Tiles);
}

} // namespace tilepipe::check

namespace tilepipe {

Verdict checkLoop(ASTContext &Ctx, const TranslationUnitIndex &Index, const Candidate &C,
                  const CheckOptions &Opts, LoopModel &Out) {
  Out.Loop = C.Loop;
  Out.Function = C.Function;
  // A loop that already issues asynchronous copies is left alone.
  struct Async : RecursiveASTVisitor<Async> {
    bool Found = false;
    bool VisitCallExpr(CallExpr *CE) {
      if (const FunctionDecl *FD = CE->getDirectCallee())
        if (FD->getIdentifier()) {
          StringRef N = FD->getName();
          if (N.contains("memcpy_async") || N == "consumer_wait" || N == "producer_commit" ||
              N.starts_with("__pipeline_") || N.starts_with("pipeline_consumer_wait"))
            Found = true;
        }
      return true;
    }
  } A;
  A.TraverseStmt(const_cast<Stmt *>(C.Loop));
  if (A.Found)
    return Verdict::refuse(Reason::AlreadyPipelined, "");
  check::LoopChecker Checker(Ctx, Index, C, Opts, Out);
  return Checker.run();
}

} // namespace tilepipe
