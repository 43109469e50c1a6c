// AuditTmaOps (AuditTma.h): what a statement does with the bulk copy engine (TMA) and the
// mbarriers its copies complete on, in each spelling the audit knows: CCCL's cuda::device
// (memcpy_async_tx, barrier_arrive_tx, barrier_expect_tx, init) and cuda::ptx wrappers
// (cp_async_bulk, cp_async_bulk_tensor, mbarrier_*, fence_proxy_async, fence_mbarrier_init), the
// experimental CTK 12 names (cp_async_bulk_global_to_shared, ..._tensor_2d_shared_to_global,
// fence_proxy_async_shared_cta), the instructions in inline assembly, and the helpers of the
// user's whose body is one such asm statement (tma_load_2d(dst, &map, bar, x, y)).
#include "AuditOps.h"
#include "AuditTma.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Effects.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Analysis/CFG.h"
#include "tilepipe/Find.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;

namespace tilepipe {

namespace {

/// The space a cuda::ptx tag argument names (space_global, space_shared, space_cluster), or "".
StringRef spaceOf(const Expr *E) {
  std::string T = E->getType().getCanonicalType().getAsString();
  if (T.find("space_t<") == std::string::npos && T.find("dot_space") == std::string::npos)
    return "";
  for (StringRef S : {"global", "shared", "cluster"})
    if (T.find("dot_space::" + S.str()) != std::string::npos)
      return S;
  return "";
}

/// The operands of one instruction's text, split at the commas outside brackets and braces.
llvm::SmallVector<StringRef, 6> operandsOf(StringRef Args) {
  llvm::SmallVector<StringRef, 6> Out;
  int Depth = 0;
  size_t Start = 0;
  for (size_t I = 0; I < Args.size(); ++I) {
    char C = Args[I];
    Depth += (C == '[' || C == '{') - (C == ']' || C == '}');
    if (C == ',' && Depth == 0) {
      Out.push_back(Args.slice(Start, I).trim());
      Start = I + 1;
    }
  }
  if (!Args.trim().empty())
    Out.push_back(Args.substr(Start).trim());
  return Out;
}

/// One instruction of inline assembly read as an op, with its operands as text ("%2", "[%0]").
struct AsmInsn {
  TmaOp::Kind K = TmaOp::None;
  bool Tensor = false;
  StringRef Shared, Size, Barrier;
};

AsmInsn readInsn(StringRef Insn) {
  Insn = Insn.trim();
  // A predicate guard or a label before the instruction.
  auto Word = [](StringRef S) {
    size_t End = S.find_first_of(" \t");
    return End == StringRef::npos ? std::make_pair(S, StringRef()) : std::make_pair(S.take_front(End), S.drop_front(End).trim());
  };
  if (Insn.starts_with("@"))
    Insn = Word(Insn).second;
  auto [Op, Args] = Word(Insn);
  auto Parts = operandsOf(Args.split(';').first);
  auto Bracketed = [&](size_t From) -> std::pair<size_t, StringRef> {
    for (size_t I = From; I < Parts.size(); ++I)
      if (Parts[I].starts_with("["))
        return {I, Parts[I]};
    return {Parts.size(), ""};
  };
  AsmInsn R;
  if (Op.consume_front("cp.async.bulk.")) {
    if (Op.starts_with("commit_group") || Op.starts_with("wait_group") || Op.starts_with("prefetch"))
      return R;
    R.Tensor = Op.consume_front("tensor.");
    if (R.Tensor)
      Op = Op.split('.').second; // the dimensions ("2d")
    bool Load = Op.starts_with("shared::cluster.global") || Op.starts_with("shared::cta.global");
    bool Store = Op.starts_with("global.shared::cta");
    if ((!Load && !Store) || Parts.size() < 2) {
      R.K = TmaOp::Unknown;
      return R;
    }
    R.K = Load ? TmaOp::Load : TmaOp::Store;
    if (Load) {
      R.Shared = Parts[0];
      R.Barrier = Parts.back();
      if (!R.Tensor && Parts.size() >= 4)
        R.Size = Parts[2];
    } else {
      R.Shared = R.Tensor ? Parts.back() : Parts[1];
      if (!R.Tensor && Parts.size() >= 3)
        R.Size = Parts[2];
    }
    return R;
  }
  if (Op.starts_with("mbarrier.init")) {
    R.K = TmaOp::Init;
    R.Barrier = Bracketed(0).second;
  } else if (Op.starts_with("mbarrier.arrive.expect_tx") || Op.starts_with("mbarrier.expect_tx")) {
    R.K = TmaOp::Expect;
    auto [I, B] = Bracketed(0);
    R.Barrier = B;
    R.Size = I + 1 < Parts.size() ? Parts[I + 1] : StringRef();
  } else if (Op.starts_with("mbarrier.try_wait") || Op.starts_with("mbarrier.test_wait")) {
    R.K = TmaOp::Wait;
    R.Barrier = Bracketed(0).second;
  } else if (Op.starts_with("fence.proxy.async")) {
    StringRef Space = Op.drop_front(strlen("fence.proxy.async"));
    if (Space.empty() || Space.starts_with(".shared"))
      R.K = TmaOp::Fence;
  } else if (Op.starts_with("fence.mbarrier_init")) {
    R.K = TmaOp::InitFence;
  } else if (Op.starts_with("bar.sync") || Op.starts_with("barrier.sync") || Op.starts_with("bar.red") ||
             Op.starts_with("barrier.red") || Op.starts_with("barrier.cluster")) {
    R.K = TmaOp::BlockSync;
  } else if (Op.starts_with("st.shared") || Op.starts_with("stmatrix")) {
    R.K = TmaOp::SharedStore;
    R.Shared = Parts.empty() ? StringRef() : Parts[0];
  } else if (Op.starts_with("bar.") || Op.starts_with("barrier.") || Op.starts_with("mbarrier.") ||
             Op.starts_with("fence") || Op.starts_with("membar")) {
    R.K = TmaOp::Unknown; // an order of its own, read as one that may wait or fence
  }
  return R;
}

/// The input expression an operand's text names ("%2", "[%0]"), or null (a literal, an output).
const Expr *inputOf(const GCCAsmStmt *A, StringRef Tok) {
  Tok = Tok.trim(" \t[]{}");
  unsigned N;
  if (!Tok.consume_front("%") || Tok.getAsInteger(10, N) || N < A->getNumOutputs() ||
      N - A->getNumOutputs() >= A->getNumInputs())
    return nullptr;
  return A->getInputExpr(N - A->getNumOutputs());
}

/// The one op of interest an asm statement performs (None where it has none, Unknown where it has
/// several or one the audit cannot read), its operands as the statement's input expressions.
TmaOp asmOp(const GCCAsmStmt *A) {
  std::string Text = A->getAsmString();
  TmaOp Found;
  Found.At = A;
  llvm::SmallVector<StringRef, 8> Lines;
  StringRef(Text).split(Lines, ';');
  for (StringRef Piece : Lines) {
    // Braces, ".reg" declarations and labels that stand before the instruction in its piece.
    llvm::SmallVector<StringRef, 4> Sub;
    Piece.split(Sub, '\n');
    StringRef Insn;
    for (StringRef S : Sub) {
      S = S.trim(" \t{}");
      while (!S.empty() && S.contains(':') && !S.contains("::") && S.split(':').first.trim().find(' ') == StringRef::npos)
        S = S.split(':').second.trim(" \t{}"); // a label
      if (!S.empty() && !S.starts_with(".reg") && !S.starts_with("//"))
        Insn = S;
    }
    AsmInsn I = readInsn(Insn);
    if (I.K == TmaOp::None)
      continue;
    if (Found.K != TmaOp::None)
      return TmaOp{TmaOp::Unknown, A};
    Found.K = I.K;
    Found.Tensor = I.Tensor;
    Found.Shared = I.Shared.empty() ? nullptr : inputOf(A, I.Shared);
    Found.Barrier = I.Barrier.empty() ? nullptr : inputOf(A, I.Barrier);
    if (!I.Size.empty()) {
      Found.Size = inputOf(A, I.Size);
      uint64_t V;
      if (!Found.Size && !I.Size.trim().getAsInteger(0, V))
        Found.Bytes = V;
    }
    Found.Spelled = false;
  }
  // An operand is often a local of the helper made from the pointer (`uint32_t d =
  // __cvta_generic_to_shared(dst);`): read through it.
  auto Resolve = [](const Expr *E) -> const Expr * {
    if (!E)
      return nullptr;
    const Expr *Held = heldValue(E);
    if (const Expr *P = sharedOperand(Held))
      return P;
    return Held;
  };
  Found.Shared = Resolve(Found.Shared);
  Found.Barrier = Resolve(Found.Barrier);
  if (Found.Size && !Found.Bytes)
    Found.Size = heldValue(Found.Size);
  return Found;
}

/// The argument of call CE that the expression E of its callee's body stands for: a parameter read
/// directly (through implicit conversions), or, for a constant, E itself; else null.
const Expr *throughParameter(const Expr *E, const CallExpr *CE) {
  if (!E)
    return nullptr;
  const auto *DR = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
  if (const auto *P = DR ? dyn_cast<ParmVarDecl>(DR->getDecl()) : nullptr) {
    if (P->getFunctionScopeIndex() >= CE->getNumArgs())
      return nullptr;
    const Expr *Arg = CE->getArg(P->getFunctionScopeIndex())->IgnoreParenImpCasts();
    const Expr *Ptr = sharedOperand(Arg); // an address the caller made: `smem_u32(&bar)`
    return Ptr ? Ptr : Arg;
  }
  return E->isValueDependent() || !E->isEvaluatable(CE->getDirectCallee()->getASTContext()) ? nullptr : E;
}

/// A helper of the user's whose body is one asm statement of one op (with locals before it), that
/// op with its operands read as the call's arguments.
TmaOp helperOp(const CallExpr *CE, const SourceManager &SM) {
  const FunctionDecl *F = CE->getDirectCallee();
  const FunctionDecl *Def = nullptr;
  if (!F || SM.isInSystemHeader(SM.getExpansionLoc(F->getLocation())) || !F->hasBody(Def))
    return {};
  const auto *Body = dyn_cast_or_null<CompoundStmt>(Def->getBody());
  const GCCAsmStmt *Asm = nullptr;
  for (const Stmt *S : Body ? Body->body() : llvm::iterator_range<Stmt *const *>(nullptr, nullptr)) {
    if (isa<DeclStmt>(S) || isa<NullStmt>(S))
      continue;
    if (Asm || !isa<GCCAsmStmt>(S))
      return {};
    Asm = cast<GCCAsmStmt>(S);
  }
  if (!Asm)
    return {};
  TmaOp Op = asmOp(Asm);
  if (Op.K == TmaOp::None || Op.K == TmaOp::Unknown)
    return Op.K == TmaOp::Unknown ? TmaOp{TmaOp::Unknown, CE} : TmaOp{};
  Op.At = CE;
  Op.Shared = throughParameter(Op.Shared, CE);
  Op.Barrier = throughParameter(Op.Barrier, CE);
  if (Op.Size)
    Op.Size = throughParameter(Op.Size, CE);
  return Op;
}

/// The bytes a cuda::aligned_size_t argument holds: the expression it is made from, where visible.
const Expr *bytesIn(const Expr *E) {
  for (unsigned Depth = 0; Depth < 4 && E; ++Depth) {
    E = E->IgnoreImplicit();
    if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E))
      E = FC->getSubExpr();
    else if (const auto *CC = dyn_cast<CXXConstructExpr>(E); CC && CC->getNumArgs() == 1)
      E = CC->getArg(0);
    else
      break;
  }
  return E;
}

} // namespace

const Expr *heldValue(const Expr *E) {
  for (unsigned Depth = 0; E && Depth < 4; ++Depth) {
    const auto *DR = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
    const auto *V = DR ? dyn_cast<VarDecl>(DR->getDecl()) : nullptr;
    const auto *F = V ? dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod()) : nullptr;
    if (!V || !F || !F->getBody() || isa<ParmVarDecl>(V) || !V->hasLocalStorage() || !V->getInit() ||
        V->getType()->isReferenceType() || V->getType().isVolatileQualified())
      return E;
    LocalFacts Facts;
    Facts.scan(F->getBody());
    if (Facts.changes(V))
      return E;
    E = V->getInit();
  }
  return E;
}

TmaOp tmaOp(const Stmt *S, const SourceManager &SM) {
  if (const auto *A = dyn_cast_or_null<GCCAsmStmt>(S))
    return asmOp(A);
  const auto *CE = dyn_cast_or_null<CallExpr>(S);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier())
    return {};
  StringRef Name = F->getName();
  unsigned N = CE->getNumArgs();
  auto Arg = [&](unsigned I) { return CE->getArg(I)->IgnoreParenImpCasts(); };
  TmaOp Op;
  Op.At = CE;
  if (!inCuda(F)) {
    if (F->isVirtualAsWritten())
      return {};
    return helperOp(CE, SM);
  }
  if (Name == "memcpy_async_tx" && N == 4) {
    Op = {TmaOp::Load, CE, false, Arg(0), bytesIn(CE->getArg(2)), std::nullopt, Arg(3)};
  } else if (Name == "cp_async_bulk_global_to_shared" && N == 4) {
    Op = {TmaOp::Load, CE, false, Arg(0), Arg(2), std::nullopt, Arg(3)};
  } else if (Name == "cp_async_bulk_shared_to_global" && N == 3) {
    Op = {TmaOp::Store, CE, false, Arg(1), Arg(2)};
  } else if (Name.starts_with("cp_async_bulk_tensor_") && Name.ends_with("d_global_to_shared") && N >= 4) {
    Op = {TmaOp::Load, CE, true, Arg(0), nullptr, std::nullopt, Arg(N - 1)};
  } else if (Name.starts_with("cp_async_bulk_tensor_") && Name.ends_with("d_shared_to_global") && N >= 3) {
    Op = {TmaOp::Store, CE, true, Arg(N - 1)};
  } else if ((Name == "cp_async_bulk" || Name == "cp_async_bulk_tensor") && N >= 5) {
    bool Tensor = Name == "cp_async_bulk_tensor";
    StringRef Dst = spaceOf(Arg(0)), Src = spaceOf(Arg(1));
    if ((Dst == "shared" || Dst == "cluster") && Src == "global" && N >= 6)
      Op = {TmaOp::Load, CE, Tensor, Arg(2), Tensor ? nullptr : Arg(4), std::nullopt, Arg(5)};
    else if (Dst == "global" && Src == "shared")
      Op = {TmaOp::Store, CE, Tensor, Arg(Tensor ? 4 : 3), Tensor ? nullptr : Arg(4)};
    else
      Op.K = TmaOp::Unknown;
  } else if (Name == "barrier_arrive_tx" && N == 3) {
    Op = {TmaOp::Expect, CE, false, nullptr, Arg(2), std::nullopt, Arg(0)};
  } else if (Name == "barrier_expect_tx" && N == 2) {
    Op = {TmaOp::Expect, CE, false, nullptr, Arg(1), std::nullopt, Arg(0)};
  } else if ((Name == "mbarrier_arrive_expect_tx" || Name == "mbarrier_expect_tx") && N >= 2) {
    Op = {TmaOp::Expect, CE, false, nullptr, Arg(N - 1), std::nullopt, Arg(N - 2)};
  } else if ((Name == "init" || Name == "mbarrier_init") && N >= 2) {
    Op = {TmaOp::Init, CE, false, nullptr, nullptr, std::nullopt, Arg(0)};
  } else if (Name == "fence_proxy_async") {
    StringRef Space = N == 1 ? spaceOf(Arg(0)) : "";
    Op.K = N == 0 || Space == "shared" || Space == "cluster" ? TmaOp::Fence : TmaOp::None;
  } else if (Name == "fence_proxy_async_shared_cta") {
    Op.K = TmaOp::Fence;
  } else if (Name == "fence_mbarrier_init") {
    Op.K = TmaOp::InitFence;
  } else if (Name.starts_with("mbarrier_try_wait") || Name.starts_with("mbarrier_test_wait")) {
    Op.K = TmaOp::Wait;
    for (unsigned I = 0; I < N && !Op.Barrier; ++I)
      if (CE->getArg(I)->getType()->isPointerType())
        Op.Barrier = Arg(I);
  } else if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
             MC && cudaSpecialization(MC->getImplicitObjectArgument()->getType().getNonReferenceType(), "barrier") &&
             (Name == "wait" || Name == "wait_parity" || Name == "arrive_and_wait" || Name == "try_wait" ||
              Name == "try_wait_parity" || Name == "try_wait_for" || Name == "try_wait_until")) {
    Op = {TmaOp::Wait, CE, false, nullptr, nullptr, std::nullopt, MC->getImplicitObjectArgument()->IgnoreParenImpCasts()};
  } else {
    return {};
  }
  return Op;
}

Paths::Paths(const FunctionDecl *F, ASTContext &Ctx) {
  CFG::BuildOptions Opts;
  Opts.setAllAlwaysAdd();
  Graph = CFG::buildCFG(F, F->getBody(), &Ctx, Opts);
  if (!Graph)
    return;
  for (const CFGBlock *B : *Graph)
    for (unsigned I = 0; I < B->size(); ++I)
      if (std::optional<CFGStmt> S = (*B)[I].getAs<CFGStmt>())
        Where.try_emplace(S->getStmt(), B, I);
}

Paths::~Paths() = default;

bool Paths::reaches(const Stmt *From, const Stmt *To, llvm::function_ref<bool(const Stmt *)> Stop) const {
  auto F = Where.find(From), T = Where.find(To);
  if (F == Where.end() || T == Where.end())
    return false;
  llvm::SmallPtrSet<const CFGBlock *, 32> Entered;
  std::vector<std::pair<const CFGBlock *, unsigned>> Work{{F->second.first, F->second.second + 1}};
  while (!Work.empty()) {
    auto [B, Start] = Work.back();
    Work.pop_back();
    bool Blocked = false;
    for (unsigned I = Start; I < B->size() && !Blocked; ++I) {
      std::optional<CFGStmt> S = (*B)[I].getAs<CFGStmt>();
      if (!S)
        continue;
      if (S->getStmt() == To)
        return true;
      Blocked = Stop(S->getStmt());
    }
    if (Blocked)
      continue;
    for (const CFGBlock::AdjacentBlock &Next : B->succs())
      if (const CFGBlock *N = Next.getReachableBlock(); N && Entered.insert(N).second)
        Work.push_back({N, 0});
  }
  return false;
}

static bool answers(const TmaOp &Op, const Stmt *S, Question Q) {
  switch (Q) {
  case Question::MovesBytes:
    return Op.K == TmaOp::Load || Op.K == TmaOp::Expect || Op.K == TmaOp::Unknown;
  case Question::Fences:
    return Op.K == TmaOp::Fence || Op.K == TmaOp::Unknown;
  case Question::FencesInit:
    return Op.K == TmaOp::Fence || Op.K == TmaOp::InitFence || Op.K == TmaOp::Unknown;
  case Question::Waits:
    return Op.K == TmaOp::Wait || Op.K == TmaOp::BlockSync || Op.K == TmaOp::Unknown || isBlockBarrier(S);
  }
  return true;
}

bool Callees::may(const CallExpr *CE, Question Q) {
  const FunctionDecl *F = CE->getDirectCallee();
  if (!F)
    return true;
  if (F->getBuiltinID() || SM.isInSystemHeader(SM.getExpansionLoc(F->getLocation())) || inCuda(F))
    return false;
  const FunctionDecl *Def = nullptr;
  if (!F->hasBody(Def))
    return true;
  auto [It, New] = Memo.try_emplace({Def, static_cast<int>(Q)}, true); // a cycle: may
  if (New)
    It->second = body(Def->getBody(), Q);
  return It->second;
}

bool Callees::does(const Stmt *S, Question Q) {
  TmaOp Op = tmaOp(S, SM);
  if (answers(Op, S, Q))
    return true;
  const auto *CE = dyn_cast<CallExpr>(S);
  return Op.K == TmaOp::None && CE && may(CE, Q);
}

bool Callees::body(const Stmt *S, Question Q) {
  if (!S || isa<LambdaExpr>(S))
    return false;
  if (does(S, Q))
    return true;
  for (const Stmt *C : S->children())
    if (body(C, Q))
      return true;
  return false;
}

const VarDecl *barrierVar(const Expr *E, std::string *Key, const ASTContext &Ctx) {
  for (unsigned Depth = 0; E && Depth < 8; ++Depth) {
    E = E->IgnoreParenCasts();
    if (const auto *U = dyn_cast<UnaryOperator>(E); U && (U->getOpcode() == UO_AddrOf || U->getOpcode() == UO_Deref)) {
      E = U->getSubExpr();
      continue;
    }
    const auto *CE = dyn_cast<CallExpr>(E);
    const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
    if (F && F->getIdentifier() && F->getName() == "barrier_native_handle" && CE->getNumArgs() == 1) {
      E = CE->getArg(0);
      continue;
    }
    break;
  }
  const Expr *Base = E;
  while (const auto *ASE = dyn_cast_or_null<ArraySubscriptExpr>(Base))
    Base = ASE->getBase()->IgnoreParenImpCasts();
  const VarDecl *V = Base ? varOf(Base) : nullptr;
  if (V && Key) {
    std::string T = sourceText(Ctx, Ctx.getSourceManager().getExpansionRange(E->getSourceRange()).getAsRange());
    Key->clear();
    for (char C : T)
      if (!isspace(static_cast<unsigned char>(C)))
        Key->push_back(C);
  }
  return V;
}

} // namespace tilepipe
