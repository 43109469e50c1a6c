#include "tilepipe/Find.h"
#include "tilepipe/AstUtil.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "llvm/Support/Regex.h"

using namespace clang;

namespace tilepipe {

/// Whether D is declared in CUDA's `cooperative_groups` namespace (or one nested in it, such as
/// its versioned inline namespace). A user's own `thread_block` or `sync` elsewhere is no barrier,
/// however it is named: a no-op `sync()` would let threads diverge where the rewrite puts a real
/// `__syncthreads()`.
static bool inCooperativeGroups(const Decl *D) {
  for (const DeclContext *DC = D->getDeclContext(); DC; DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC))
      if (NS->getName() == "cooperative_groups" &&
          NS->getParent()->getRedeclContext()->isTranslationUnit())
        return true;
  return false;
}

static bool isThreadBlock(QualType T) {
  const auto *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && RD->getName() == "thread_block" && inCooperativeGroups(RD);
}

static StringRef calleeName(const CallExpr *CE) {
  if (const FunctionDecl *FD = CE->getDirectCallee())
    if (FD->getIdentifier())
      return FD->getName();
  return {};
}

bool isBlockBarrier(const Stmt *S) {
  const auto *CE = dyn_cast_or_null<CallExpr>(bareExpr(S));
  if (!CE)
    return false;
  // block.sync(): a member call, or in recent CUDA a call of the static member through the object.
  if (const auto *ME = dyn_cast<MemberExpr>(CE->getCallee()->IgnoreParenImpCasts()))
    return ME->getMemberDecl()->getName() == "sync" && inCooperativeGroups(ME->getMemberDecl()) &&
           isThreadBlock(ME->getBase()->IgnoreParenImpCasts()->getType());
  StringRef Name = calleeName(CE);
  if (Name == "__syncthreads" && CE->getNumArgs() == 0)
    return true;
  return Name == "sync" && CE->getNumArgs() == 1 && inCooperativeGroups(CE->getDirectCallee()) &&
         isThreadBlock(CE->getArg(0)->getType());
}

bool isAnyBarrier(const Stmt *S) {
  if (isBlockBarrier(S))
    return true;
  const auto *CE = dyn_cast_or_null<CallExpr>(bareExpr(S));
  if (!CE)
    return false;
  StringRef Name = calleeName(CE);
  return Name.starts_with("__syncthreads") || Name == "__barrier_sync" || Name == "sync" ||
         Name == "barrier_wait" || Name == "arrive_and_wait" || Name == "__nvvm_bar_sync" ||
         Name.starts_with("__nvvm_barrier");
}

namespace {
class BarrierFinder : public RecursiveASTVisitor<BarrierFinder> {
public:
  explicit BarrierFinder(unsigned Depth) : Depth(Depth) {}
  bool Found = false;
  unsigned Depth;
  bool VisitStmt(Stmt *S) {
    if (isa<AsmStmt>(S) && cast<AsmStmt>(S)->isVolatile()) {
      // Inline PTX may hold bar.sync; treat volatile asm as a possible barrier.
      if (const auto *G = dyn_cast<GCCAsmStmt>(S))
        if (llvm::Regex("(^|[^a-z_.])bar(rier)?\\.").match(G->getAsmString()))
          Found = true;
    }
    if (isAnyBarrier(S))
      Found = true;
    if (const auto *CE = dyn_cast<CallExpr>(S))
      if (const FunctionDecl *FD = CE->getDirectCallee())
        if (Depth < 4 && FD->hasBody() && !StringRef(FD->getNameAsString()).starts_with("__") &&
            containsBarrier(FD->getBody(), Depth + 1))
          Found = true;
    return !Found;
  }
  bool shouldVisitLambdaBody() const { return true; }
};

class LoopCollector : public RecursiveASTVisitor<LoopCollector> {
public:
  explicit LoopCollector(const FunctionDecl *FD) : FD(FD) {}
  std::vector<Candidate> Found;
  const FunctionDecl *FD;
  bool hasTopLevelBarrier(const Stmt *Body) {
    const auto *CS = dyn_cast_or_null<CompoundStmt>(Body);
    if (!CS)
      return false;
    for (const Stmt *S : CS->body())
      if (isBlockBarrier(S))
        return true;
    return false;
  }
  bool VisitForStmt(ForStmt *S) { return add(S, S->getBody()); }
  bool VisitWhileStmt(WhileStmt *S) { return add(S, S->getBody()); }
  bool VisitDoStmt(DoStmt *S) { return add(S, S->getBody()); }
  bool add(Stmt *Loop, const Stmt *Body) {
    if (hasTopLevelBarrier(Body))
      Found.push_back({Loop, FD});
    return true;
  }
};
} // namespace

bool containsBarrier(const Stmt *S, unsigned Depth) {
  if (!S)
    return false;
  BarrierFinder F(Depth);
  F.TraverseStmt(const_cast<Stmt *>(S));
  return F.Found;
}

bool isDeviceCode(const FunctionDecl *FD) {
  if (!FD || !FD->doesThisDeclarationHaveABody())
    return false;
  return FD->hasAttr<CUDAGlobalAttr>() || FD->hasAttr<CUDADeviceAttr>();
}

std::vector<Candidate> findCandidateLoops(const FunctionDecl *FD) {
  LoopCollector C(FD);
  C.TraverseStmt(FD->getBody());
  return C.Found;
}

} // namespace tilepipe
