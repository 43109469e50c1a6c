// AuditOps (AuditOps.h): the audit's reading of what a statement does with the asynchronous copy
// units, in each spelling it knows.
#include "AuditOps.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Find.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <cstring>

using namespace clang;

namespace tilepipe {

namespace {

/// What inline assembly does with cp.async: a copy (its destination's input operand, its bytes),
/// a commit, a wait (its count, or the input operand holding it), another use of the async units
/// (bulk copies, mbarriers, fences, barriers: read as unknown), or nothing of theirs.
struct AsmFact {
  enum Kind { None, Copy, Commit, Wait, Other } K = None;
  std::optional<unsigned> Operand; ///< Copy: the destination; Wait: the count, where not literal
  std::optional<uint64_t> Value;   ///< Copy: the bytes; Wait: the count, where literal
};

AsmFact asmFact(const AsmStmt *A) {
  const auto *G = dyn_cast<GCCAsmStmt>(A);
  if (!G)
    return {AsmFact::Other};
  std::string Text = G->getAsmString();
  StringRef T = Text;
  // "%N" as an input operand's index (outputs are numbered first), or a literal number.
  auto Operand = [&](StringRef Tok, AsmFact &F, bool IsOperand) -> bool {
    Tok = Tok.trim(" \t[]");
    unsigned V;
    if (Tok.consume_front("%")) {
      if (Tok.getAsInteger(10, V) || V < G->getNumOutputs())
        return false;
      F.Operand = V - G->getNumOutputs();
      return true;
    }
    if (IsOperand || Tok.getAsInteger(10, V))
      return false;
    F.Value = V;
    return true;
  };
  size_t Pos;
  if ((Pos = T.find("cp.async.c")) != StringRef::npos && (T.substr(Pos).starts_with("cp.async.ca.shared.global") ||
                                                          T.substr(Pos).starts_with("cp.async.cg.shared.global"))) {
    if (T.find("cp.async", Pos + 1) != StringRef::npos || T.contains("commit_group") || T.contains("wait"))
      return {AsmFact::Other};
    StringRef Args = T.substr(Pos).split(' ').second.split(';').first;
    llvm::SmallVector<StringRef, 4> Parts;
    Args.split(Parts, ',');
    AsmFact F{AsmFact::Copy};
    if (Parts.size() < 3 || !Operand(Parts[0], F, /*IsOperand=*/true))
      return {AsmFact::Other};
    AsmFact Bytes;
    if (Operand(Parts[2], Bytes, /*IsOperand=*/false) && Bytes.Value)
      F.Value = Bytes.Value;
    return F;
  }
  if (T.contains("cp.async.commit_group") && !T.contains("wait") && T.count("cp.async") == 1)
    return {AsmFact::Commit};
  if (T.contains("cp.async.wait_all") && T.count("cp.async") == 1)
    return {AsmFact::Wait, std::nullopt, 0};
  if ((Pos = T.find("cp.async.wait_group")) != StringRef::npos && T.count("cp.async") == 1) {
    AsmFact F{AsmFact::Wait};
    if (!Operand(T.substr(Pos + strlen("cp.async.wait_group")).split(';').first, F, /*IsOperand=*/false))
      return {AsmFact::Other};
    return F;
  }
  for (StringRef Word : {"cp.async", "mbarrier", "bar.", "barrier", "fence", "wait", "membar"})
    if (T.contains(Word))
      return {AsmFact::Other};
  return {};
}

/// The shared pointer a shared address is made from: P in `(uint32_t)__cvta_generic_to_shared(P)`,
/// read through the unchanged locals that hold it and the helpers that return it.
const Expr *sharedPointerOf(const Expr *E, unsigned Depth = 0) {
  if (!E || Depth > 6)
    return nullptr;
  E = E->IgnoreParenCasts();
  if (const auto *DR = dyn_cast<DeclRefExpr>(E)) {
    const auto *V = dyn_cast<VarDecl>(DR->getDecl());
    return V && V->hasLocalStorage() && !isa<ParmVarDecl>(V) && V->getType().isConstQualified() && V->getInit()
               ? sharedPointerOf(V->getInit(), Depth + 1)
               : nullptr;
  }
  const auto *CE = dyn_cast<CallExpr>(E);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier())
    return nullptr;
  if ((F->getName() == "__cvta_generic_to_shared" || F->getName() == "__nvvm_get_smem_pointer") && CE->getNumArgs() == 1)
    return CE->getArg(0)->IgnoreParenImpCasts();
  // A helper `return (uint32_t)__cvta_generic_to_shared(p);` of its parameter p.
  const auto *Body = dyn_cast_or_null<CompoundStmt>(F->getBody());
  const auto *Ret = Body && Body->size() == 1 ? dyn_cast<ReturnStmt>(Body->body_front()) : nullptr;
  const Expr *P = Ret ? sharedPointerOf(Ret->getRetValue(), Depth + 1) : nullptr;
  const auto *PD = P ? dyn_cast<DeclRefExpr>(P->IgnoreParenImpCasts()) : nullptr;
  const auto *Parm = PD ? dyn_cast<ParmVarDecl>(PD->getDecl()) : nullptr;
  if (!Parm || Parm->getFunctionScopeIndex() >= CE->getNumArgs())
    return nullptr;
  return CE->getArg(Parm->getFunctionScopeIndex())->IgnoreParenImpCasts();
}

/// What a helper of the user's does, read from its body: one statement of inline assembly (with
/// locals before it, and __syncwarp() beside it) that copies into a shared pointer parameter,
/// commits, or waits.
struct Helper {
  AsmFact Fact;
  const GCCAsmStmt *Asm = nullptr;
  std::optional<unsigned> DstParam; ///< Copy: the parameter the destination is made from
};

std::optional<Helper> helperOf(const FunctionDecl *F) {
  if (!F || !F->hasBody())
    return std::nullopt;
  const auto *Body = dyn_cast_or_null<CompoundStmt>(F->getBody());
  if (!Body)
    return std::nullopt;
  Helper H;
  for (const Stmt *S : Body->body()) {
    if (isa<DeclStmt>(S) || isa<NullStmt>(S))
      continue;
    if (const auto *CE = dyn_cast<CallExpr>(S); CE && CE->getDirectCallee() && CE->getDirectCallee()->getIdentifier() &&
                                                 CE->getDirectCallee()->getName() == "__syncwarp")
      continue;
    const auto *A = dyn_cast<GCCAsmStmt>(S);
    if (!A || H.Asm)
      return std::nullopt;
    H.Asm = A;
  }
  if (!H.Asm)
    return std::nullopt;
  H.Fact = asmFact(H.Asm);
  if (H.Fact.K == AsmFact::Copy) {
    const Expr *P = H.Fact.Operand && *H.Fact.Operand < H.Asm->getNumInputs()
                        ? sharedPointerOf(H.Asm->getInputExpr(*H.Fact.Operand))
                        : nullptr;
    const auto *DR = P ? dyn_cast<DeclRefExpr>(P->IgnoreParenImpCasts()) : nullptr;
    const auto *Parm = DR ? dyn_cast<ParmVarDecl>(DR->getDecl()) : nullptr;
    if (!Parm)
      return std::nullopt;
    H.DstParam = Parm->getFunctionScopeIndex();
  }
  return H;
}

/// The helper a call runs, where the callee is a function of the user's read as one.
std::optional<Helper> helperCalled(const CallExpr *CE, const SourceManager &SM) {
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || SM.isInSystemHeader(SM.getExpansionLoc(F->getLocation())))
    return std::nullopt;
  const FunctionDecl *Def = nullptr;
  return F->hasBody(Def) ? helperOf(Def) : std::nullopt;
}




/// The count an inline wait_group waits for: a literal, or the input operand's value (a helper's
/// template parameter, as instantiated).
std::optional<int64_t> asmCount(const GCCAsmStmt *A, const AsmFact &F, const ASTContext &Ctx) {
  if (F.Value)
    return int64_t(*F.Value);
  const Expr *E = F.Operand && *F.Operand < A->getNumInputs() ? A->getInputExpr(*F.Operand) : nullptr;
  Expr::EvalResult R;
  if (!E || E->isValueDependent() || !E->EvaluateAsInt(R, Ctx) || !R.Val.getInt().isRepresentableByInt64())
    return std::nullopt;
  return R.Val.getInt().getExtValue();
}

/// Whether T is the CCCL class template Template whose first argument, a cuda::thread_scope, is
/// Scope (through references and typedefs).
bool ofScope(QualType T, StringRef Template, StringRef Scope) {
  const auto *S = cudaSpecialization(T.getNonReferenceType(), Template);
  if (!S || S->getTemplateArgs().size() < 1)
    return false;
  const TemplateArgument &A = S->getTemplateArgs()[0];
  const auto *ET = A.getKind() == TemplateArgument::Integral ? A.getIntegralType()->getAs<EnumType>() : nullptr;
  if (!ET)
    return false;
  for (const EnumConstantDecl *E : ET->getDecl()->enumerators())
    if (E->getInitVal() == A.getAsIntegral())
      return E->getName() == Scope;
  return false;
}

/// Whether T is cuda::barrier<cuda::thread_scope_block> (through references and typedefs).
bool blockBarrierType(QualType T) { return ofScope(T, "barrier", "thread_scope_block"); }

} // namespace

const Expr *arriveAndWaitBarrier(const Stmt *S) {
  const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(S ? bareExpr(S) : nullptr);
  const FunctionDecl *F = MC ? MC->getDirectCallee() : nullptr;
  return F && F->getIdentifier() && F->getName() == "arrive_and_wait" &&
                 blockBarrierType(MC->getImplicitObjectArgument()->getType())
             ? MC->getImplicitObjectArgument()->IgnoreParenImpCasts()
             : nullptr;
}

bool isBlockArriveAndWait(const Stmt *S) { return arriveAndWaitBarrier(S) != nullptr; }

const Expr *sharedOperand(const Expr *E) { return sharedPointerOf(E); }

std::optional<tooling::Replacement> alignasFix(ASTContext &Ctx, const VarDecl *V, uint64_t A) {
  const SourceManager &SM = Ctx.getSourceManager();
  const DeclStmt *DS = nullptr;
  for (const DynTypedNode &P : Ctx.getParents(*V))
    DS = P.get<DeclStmt>();
  if (!DS || !DS->isSingleDecl())
    return std::nullopt;
  SourceLocation L = DS->getBeginLoc(), Start;
  if (L.isMacroID()) {
    // `__shared__` is itself a macro of the toolkit's (of macros): the fix goes where the
    // outermost expansion starts, in the user's text.
    if (!Lexer::isAtStartOfMacroExpansion(L, SM, Ctx.getLangOpts(), &Start) || Start.isMacroID())
      return std::nullopt;
    L = Start;
  }
  if (!inUserFile(SM, L))
    return std::nullopt;
  return tooling::Replacement(SM, L, 0, "alignas(" + std::to_string(A) + ") ");
}

/// D is declared in namespace `cuda` (CCCL's), directly or through inline namespaces.
bool inCuda(const Decl *D) {
  const NamespaceDecl *Outer = nullptr; // the outermost namespace that is not inline
  for (const DeclContext *C = D->getDeclContext(); C; C = C->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(C); NS && !NS->isInline())
      Outer = NS;
  return Outer && Outer->getName() == "cuda";
}

/// The specialization of CCCL class template Name that T is (through typedefs), or null.
const ClassTemplateSpecializationDecl *cudaSpecialization(QualType T, StringRef Name) {
  const auto *RD = T.getCanonicalType()->getAsCXXRecordDecl();
  const auto *S = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RD);
  return S && S->getName() == Name && inCuda(S) ? S : nullptr;
}

bool threadScope(QualType T) { return ofScope(T, "pipeline", "thread_scope_thread"); }

/// Whether S issues a copy that orders nothing across threads: cuda::memcpy_async on a pipeline of
/// thread scope, __pipeline_memcpy_async, inline cp.async into a shared address, or a helper of
/// the user's that is one of these into its pointer parameter.
std::optional<ThreadCopy> threadCopy(const Stmt *S, const SourceManager &SM) {
  if (const auto *A = dyn_cast_or_null<GCCAsmStmt>(S)) {
    AsmFact F = asmFact(A);
    const Expr *P = F.K == AsmFact::Copy && F.Operand && *F.Operand < A->getNumInputs()
                        ? sharedPointerOf(A->getInputExpr(*F.Operand))
                        : nullptr;
    if (!P)
      return std::nullopt;
    return ThreadCopy{A, P, nullptr, F.Value};
  }
  const auto *CE = dyn_cast_or_null<CallExpr>(S);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier())
    return std::nullopt;
  if (F->getName() == "__pipeline_memcpy_async" && CE->getNumArgs() >= 3)
    return ThreadCopy{CE, CE->getArg(0), CE->getArg(2)};
  if (F->getName() == "memcpy_async" && (CE->getNumArgs() == 4 || CE->getNumArgs() == 5)) {
    // On a barrier the copy's completion is counted, not its issue: it orders nothing either.
    QualType Sync = CE->getArg(CE->getNumArgs() - 1)->getType();
    if (!threadScope(Sync) && !blockBarrierType(Sync))
      return std::nullopt;
    return ThreadCopy{CE, CE->getArg(CE->getNumArgs() - 4), CE->getArg(CE->getNumArgs() - 2), std::nullopt,
                      blockBarrierType(Sync) ? CE->getArg(CE->getNumArgs() - 1)->IgnoreParenImpCasts() : nullptr};
  }
  if (auto H = helperCalled(CE, SM); H && H->Fact.K == AsmFact::Copy && *H->DstParam < CE->getNumArgs())
    return ThreadCopy{CE, CE->getArg(*H->DstParam)->IgnoreParenImpCasts(), nullptr, H->Fact.Value};
  return std::nullopt;
}

/// The commit of a copy group: `pipe.producer_commit()` on a pipeline of thread scope,
/// __pipeline_commit(), cp.async.commit_group in inline assembly or a helper of the user's.
bool isCommit(const Stmt *S, const SourceManager &SM) {
  if (const auto *A = dyn_cast_or_null<GCCAsmStmt>(S))
    return asmFact(A).K == AsmFact::Commit;
  const auto *CE = dyn_cast_or_null<CallExpr>(S ? bareExpr(S) : nullptr);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier())
    return false;
  if (F->getName() == "__pipeline_commit")
    return true;
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE))
    return F->getName() == "producer_commit" && threadScope(MC->getImplicitObjectArgument()->getType());
  auto H = helperCalled(CE, SM);
  return H && H->Fact.K == AsmFact::Commit;
}

/// A wait for all but the newest K groups: cuda::pipeline_consumer_wait_prior<K>(pipe),
/// __pipeline_wait_prior(K), cp.async.wait_group K (or wait_all) in inline assembly or in a helper
/// of the user's (`wait<K>()`).
std::optional<WaitPrior> waitPrior(const Stmt *S, const ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  if (const auto *A = dyn_cast_or_null<GCCAsmStmt>(S)) {
    AsmFact F = asmFact(A);
    std::optional<int64_t> K = F.K == AsmFact::Wait ? asmCount(A, F, Ctx) : std::nullopt;
    return K ? std::optional<WaitPrior>(WaitPrior{*K, A, nullptr}) : std::nullopt;
  }
  const auto *CE = dyn_cast_or_null<CallExpr>(S ? bareExpr(S) : nullptr);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier())
    return std::nullopt;
  // The count as written at the call: its one explicit template argument.
  auto TemplateArg = [&]() -> const Expr * {
    const auto *DR = dyn_cast<DeclRefExpr>(CE->getCallee()->IgnoreParenImpCasts());
    if (!DR || DR->getNumTemplateArgs() != 1)
      return nullptr;
    const TemplateArgumentLoc &A = DR->getTemplateArgs()[0];
    return A.getArgument().getKind() == TemplateArgument::Expression ? A.getSourceExpression() : nullptr;
  };
  const Expr *K = nullptr;
  if (F->getName() == "__pipeline_wait_prior" && CE->getNumArgs() == 1) {
    K = CE->getArg(0);
  } else if (F->getName() == "pipeline_consumer_wait_prior" && CE->getNumArgs() == 1 &&
             threadScope(CE->getArg(0)->getType())) {
    K = TemplateArg();
  } else if (auto H = helperCalled(CE, SM); H && H->Fact.K == AsmFact::Wait) {
    std::optional<int64_t> N = asmCount(H->Asm, H->Fact, Ctx);
    if (!N)
      return std::nullopt;
    // Rewritable where the helper's count is its one template parameter, given at the call.
    const Expr *Spelled = nullptr;
    const FunctionTemplateSpecializationInfo *TI = F->getTemplateSpecializationInfo();
    const Expr *Op = H->Fact.Operand && *H->Fact.Operand < H->Asm->getNumInputs()
                         ? H->Asm->getInputExpr(*H->Fact.Operand)->IgnoreImplicit()->IgnoreParens()
                         : nullptr;
    if (TI && TI->TemplateArguments->size() == 1 && Op && isa<SubstNonTypeTemplateParmExpr>(Op))
      Spelled = TemplateArg();
    return WaitPrior{*N, CE, Spelled};
  }
  Expr::EvalResult R;
  if (!K || K->isValueDependent() || !K->EvaluateAsInt(R, Ctx) || !R.Val.getInt().isRepresentableByInt64())
    return std::nullopt;
  return WaitPrior{R.Val.getInt().getExtValue(), CE, K};
}

/// Whether S calls something that may wait for copies other than a wait waitPrior reads: a
/// pipeline's consumer_wait or wait, a barrier's wait (any library function named so), inline
/// assembly of the async units that is none of the above, or a function of the user's whose body
/// may (read through, calls within it too; one without a body, or called indirectly, may).
static bool mayWaitOtherwise(const Stmt *S, const ASTContext &Ctx, llvm::SmallPtrSetImpl<const FunctionDecl *> &Seen) {
  if (!S)
    return false;
  const SourceManager &SM = Ctx.getSourceManager();
  if (const auto *A = dyn_cast<AsmStmt>(S)) {
    const auto *G = dyn_cast<GCCAsmStmt>(A);
    AsmFact::Kind K = G ? asmFact(G).K : AsmFact::Other;
    return K == AsmFact::Other || (K == AsmFact::Wait && !waitPrior(G, Ctx));
  }
  if (const auto *CE = dyn_cast<CallExpr>(S)) {
    const FunctionDecl *F = CE->getDirectCallee();
    if (!F)
      return true;
    StringRef Name = F->getIdentifier() ? F->getName() : "";
    bool Known = waitPrior(CE, Ctx) || isCommit(CE, SM) || threadCopy(CE, SM);
    bool Library = F->getBuiltinID() || SM.isInSystemHeader(SM.getExpansionLoc(F->getLocation()));
    if (auto H = helperCalled(CE, SM); H && H->Fact.K == AsmFact::None)
      Library = true; // inline assembly of its own that touches no async unit
    if (!Known && !Library && !Name.contains_insensitive("wait")) {
      // The user's function: what its body does (a call already being read waits for nothing more).
      const FunctionDecl *Def = nullptr;
      const Stmt *FBody = F->getBody(Def);
      if (!FBody || F->isVirtualAsWritten())
        return true;
      if (Seen.insert(Def).second && mayWaitOtherwise(FBody, Ctx, Seen))
        return true;
      Library = true;
    }
    if (!Known && (Name.contains_insensitive("wait") || !Library))
      if (!(Name == "__syncthreads" || isBlockBarrier(CE)))
        return true;
  }
  for (const Stmt *C : S->children())
    if (mayWaitOtherwise(C, Ctx, Seen))
      return true;
  return false;
}

bool mayWaitOtherwise(const Stmt *S, const ASTContext &Ctx) {
  llvm::SmallPtrSet<const FunctionDecl *, 8> Seen;
  return mayWaitOtherwise(S, Ctx, Seen);
}

namespace {

/// The local pipeline a member call is made on, and the method's name.
std::pair<const VarDecl *, StringRef> memberCallOn(const CXXMemberCallExpr *MC) {
  const auto *DR = dyn_cast_or_null<DeclRefExpr>(MC->getImplicitObjectArgument()
                                                     ? MC->getImplicitObjectArgument()->IgnoreParenImpCasts()
                                                     : nullptr);
  const auto *V = DR ? dyn_cast<VarDecl>(DR->getDecl()) : nullptr;
  const CXXMethodDecl *M = MC->getMethodDecl();
  if (!V || !M || !M->getIdentifier() || !V->hasLocalStorage() || V->getType()->isReferenceType() ||
      !threadScope(V->getType()))
    return {nullptr, {}};
  return {V, M->getName()};
}

class PipelineUses : public RecursiveASTVisitor<PipelineUses> {
public:
  PipelineUses(const VarDecl *P, const SourceManager &SM) : P(P), SM(SM) {}
  bool shouldVisitLambdaBody() const { return true; }
  bool TraverseLambdaExpr(LambdaExpr *L) {
    ++InLambda;
    bool Go = RecursiveASTVisitor::TraverseLambdaExpr(L);
    --InLambda;
    return Go;
  }
  bool VisitGCCAsmStmt(GCCAsmStmt *A) {
    Ops.Other |= isCommit(A, SM);
    return true;
  }
  bool VisitCallExpr(CallExpr *CE) {
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
      auto [V, Name] = memberCallOn(MC);
      if (V == P && (Name == "producer_acquire" || Name == "consumer_release" || Name == "producer_commit" ||
                     Name == "consumer_wait")) {
        Accounted.insert(MC->getImplicitObjectArgument()->IgnoreParenImpCasts());
        // In a lambda, a call runs as often as the lambda is called: not once where it stands.
        Ops.Other |= InLambda != 0;
        if (Name == "producer_commit")
          Ops.Commits.push_back(CE);
        else if (Name == "consumer_wait")
          Ops.Waits.push_back(CE);
        return true;
      }
    }
    if (isCommit(CE, SM)) {
      Ops.Other = true; // a commit of another kind, or on another pipeline: the same hardware groups
      return true;
    }
    // A copy on P: it adds to the group P's next commit closes, and moves neither head nor tail.
    if (auto C = threadCopy(CE, SM); C && CE->getNumArgs() >= 1)
      if (const auto *DR = dyn_cast<DeclRefExpr>(CE->getArg(CE->getNumArgs() - 1)->IgnoreParenImpCasts());
          DR && DR->getDecl() == P)
        Accounted.insert(DR);
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr *DR) {
    if (DR->getDecl() == P && (InLambda || !Accounted.count(DR)))
      Ops.Other = true;
    return true;
  }
  PipelineOps Ops;

private:
  const VarDecl *P;
  const SourceManager &SM;
  unsigned InLambda = 0;
  llvm::SmallPtrSet<const Expr *, 8> Accounted;
};

} // namespace

PipelineOps pipelineOps(const Stmt *S, const VarDecl *P, const SourceManager &SM) {
  PipelineUses U(P, SM);
  U.TraverseStmt(const_cast<Stmt *>(S));
  return U.Ops;
}

const VarDecl *consumerWaitOn(const Stmt *S) {
  const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(S ? bareExpr(S) : nullptr);
  if (!MC || MC->getNumArgs() != 0)
    return nullptr;
  auto [V, Name] = memberCallOn(MC);
  return Name == "consumer_wait" ? V : nullptr;
}

StageRef stageRef(const ASTContext &Ctx, const Expr *E) {
  E = E->IgnoreParenCasts();
  if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_AddrOf)
    E = U->getSubExpr()->IgnoreParenImpCasts();
  StageRef R;
  const ArraySubscriptExpr *Inner = nullptr;
  if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E))
    R.Outer = ASE;
  while (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E)) {
    Inner = ASE;
    E = ASE->getBase()->IgnoreParenImpCasts();
  }
  const VarDecl *V = varOf(E);
  if (!V || !isSharedVar(V))
    return R;
  R.Shared = V;
  const auto *CAT = Ctx.getAsConstantArrayType(V->getType());
  if (!Inner || !CAT || !isa<ConstantArrayType>(CAT->getElementType().getCanonicalType()))
    return R;
  R.Array = V;
  R.Stage = Inner->getIdx();
  R.Buffers = CAT->getSize().getZExtValue();
  return R;
}

} // namespace tilepipe
