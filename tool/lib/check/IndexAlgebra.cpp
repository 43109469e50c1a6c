// Index expressions as affine forms: over any names (to tell tile elements apart), and over the
// thread indices with uniform coefficients (to see the box a block's copies fill), with the names
// a coefficient uses checked to mean the same at the loop and beside the kernel.
#include "LoopChecker.h"
#include "../EffectsUtil.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include <functional>

using namespace clang;

namespace tilepipe::check {

/// An implicit conversion that keeps an index: an lvalue read, a qualification change, or an
/// integral conversion to a type at least as wide. A narrowing one (`unsigned short c = t * T +
/// tx`) wraps where the arithmetic it came from does not.
static bool keepsValue(const ImplicitCastExpr *ICE, const ASTContext &Ctx) {
  switch (ICE->getCastKind()) {
  case CK_LValueToRValue:
  case CK_NoOp:
    return true;
  case CK_IntegralCast: {
    QualType From = ICE->getSubExpr()->getType(), To = ICE->getType();
    if (!From->isIntegerType() || !To->isIntegerType())
      return false;
    // Narrower wraps within the index range; as wide or wider keeps the value, or (a sign
    // change) gives one that indexes the same as 32- or 64-bit address arithmetic does.
    return Ctx.getIntWidth(To) >= Ctx.getIntWidth(From);
  }
  default:
    return false;
  }
}

/// Whether E's value is computed by arithmetic (or a call or a conversion), directly or as a local
/// set from such a value, through any chain of locals: a value whose form in its operands may hold
/// modulo its type's width only.
static bool computedValue(const Expr *E, const ASTContext &Ctx, unsigned Depth = 0) {
  E = E->IgnoreParenImpCasts();
  if (!E->isValueDependent() && !E->isTypeDependent() && E->isIntegerConstantExpr(Ctx))
    return false;
  if (isa<BinaryOperator, UnaryOperator, ConditionalOperator, CallExpr, CastExpr>(E))
    return true;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
        V && V->hasLocalStorage() && !isa<ParmVarDecl>(V) && V->getInit())
      return Depth > 8 || computedValue(V->getInit(), Ctx, Depth + 1);
  return false;
}

/// Whether E, under parentheses and the conversions that keep every value, widens the result of
/// unsigned arithmetic (`(size_t)((h - 1 - y) * w)` of unsigned h, y, w, or an unsigned local set
/// from such arithmetic, through any chain of locals): that value is the arithmetic's modulo 2^32,
/// so an affine form of its operands holds modulo 2^32 only, not in the wider type that the index
/// is computed in. A read of a parameter, a thread index, or a constant, widens exactly.
static bool widensWrappedArithmetic(const Expr *E, const ASTContext &Ctx) {
  bool Widened = false;
  while (true) {
    E = E->IgnoreParens();
    const auto *ICE = dyn_cast<ImplicitCastExpr>(E);
    if (!ICE || !keepsValue(ICE, Ctx))
      break;
    QualType From = ICE->getSubExpr()->getType();
    if (ICE->getCastKind() == CK_IntegralCast && From->isUnsignedIntegerType() &&
        Ctx.getIntWidth(ICE->getType()) > Ctx.getIntWidth(From))
      Widened = true;
    E = ICE->getSubExpr();
  }
  return Widened && computedValue(E, Ctx);
}

/// E without parentheses and the implicit conversions that keep every value.
static const Expr *valueOf(const Expr *E, const ASTContext &Ctx) {
  while (true) {
    E = E->IgnoreParens();
    const auto *ICE = dyn_cast<ImplicitCastExpr>(E);
    if (!ICE || !keepsValue(ICE, Ctx))
      return E;
    E = ICE->getSubExpr();
  }
}

bool LoopChecker::affine(const Expr *E, Affine &A) {
  if (widensWrappedArithmetic(E, Ctx))
    return false; // affine modulo 2^32 only
  E = valueOf(E, Ctx);
  if (!E->isValueDependent() && !E->isTypeDependent()) {
    Expr::EvalResult R;
    if (E->EvaluateAsInt(R, Ctx)) {
      A.Constant += R.Val.getInt().getExtValue();
      return true;
    }
  }
  if (isa<CastExpr>(E) && !isa<ExplicitCastExpr>(E))
    return false; // a conversion that may change the value
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    Affine L, R;
    if ((BO->getOpcode() == BO_Add || BO->getOpcode() == BO_Sub) && affine(BO->getLHS(), L) &&
        affine(BO->getRHS(), R)) {
      A.add(L, 1);
      A.add(R, BO->getOpcode() == BO_Add ? 1 : -1);
      return true;
    }
    if (BO->getOpcode() == BO_Mul && affine(BO->getLHS(), L) && affine(BO->getRHS(), R)) {
      if (L.Terms.empty()) {
        A.add(R, L.Constant);
        return true;
      }
      if (R.Terms.empty()) {
        A.add(L, R.Constant);
        return true;
      }
    }
    // By a constant: `x << s` is x * 2^s; `x / c` and `x >> s` are exact, and affine, where c (or
    // 2^s) divides every coefficient and the constant, so that every value the form takes is a
    // multiple of it (`j * 128 / 4` is 32 * j). Integers only, and a shift by less than the width;
    // a division only of signed values, which never wrap: an unsigned form holds modulo 2^N only,
    // and a division of the wrapped value is no division of the form.
    Expr::EvalResult C;
    const BinaryOperatorKind Op = BO->getOpcode();
    if ((Op == BO_Shl ? BO->getType()->isIntegerType()
                      : (Op == BO_Div || Op == BO_Shr) && BO->getType()->isSignedIntegerType()) &&
        !BO->getRHS()->isValueDependent() && BO->getRHS()->EvaluateAsInt(C, Ctx) &&
        affine(BO->getLHS(), L)) {
      const int64_t K = C.Val.getInt().getSExtValue();
      const unsigned Width = Ctx.getIntWidth(BO->getType());
      if (Op != BO_Div && (K < 0 || K >= (int64_t)Width - 1 || K > 30))
        return false;
      const int64_t D = Op == BO_Div ? K : int64_t(1) << K;
      if (Op == BO_Shl) {
        A.add(L, D);
        return true;
      }
      if (D <= 0 || L.Constant % D != 0 || llvm::any_of(L.Terms, [&](const auto &T) { return T.second % D != 0; }))
        return false;
      Affine Q;
      Q.Constant = L.Constant / D;
      for (const auto &[Key, V] : L.Terms)
        Q.Terms[Key] = V / D;
      A.add(Q, 1);
      return true;
    }
  }
  if (const auto *UO = dyn_cast<UnaryOperator>(E))
    if (UO->getOpcode() == UO_Minus) {
      Affine S;
      if (!affine(UO->getSubExpr(), S))
        return false;
      A.add(S, -1);
      return true;
    }
  std::string Key;
  if (isBuiltinIndexRead(E, &Key)) {
    A.Terms[Key] += 1;
    return true;
  }
  if (const VarDecl *V = varOf(E)) {
    // An index variable of the copy phase is its start, which nothing changes before the copy
    // phase's uses of it: `int xo = i * 4; s[xo] = ...` selects by i. So is a local set once
    // before the loop from variables that never change after their own declarations
    // (`int t4x = threadIdx.x * 4;`), wherever the loop reads it. Where the start is no affine
    // form, the variable stands for itself.
    const bool IndexVar = IndexDeclDeps.count(V) && V->getInit() && !InLoop.Mutated.contains(V);
    const bool Stable = !IndexDeclDeps.count(V) && setOnceLocal(V) && !InLoop.Declared.contains(V) &&
                        llvm::all_of(namesIn(V->getInit()), [&](const NameUse &U) {
                          const auto *X = dyn_cast<VarDecl>(U.Decl);
                          return X && (setOnceLocal(X) || unchangedParam(X) || isCudaBuiltinVar(X));
                        });
    if ((IndexVar || Stable) && AffineDepth < 8) {
      Affine Start;
      ++AffineDepth;
      bool Ok = affine(V->getInit(), Start);
      --AffineDepth;
      if (Ok) {
        A.add(Start, 1);
        return true;
      }
    }
    A.Terms[affineAtom(V)] += 1;
    return true;
  }
  if (std::string Opaque; OpaqueAtoms && opaqueAtom(E, Opaque)) {
    A.Terms[Opaque] += 1;
    return true;
  }
  return false;
}

/// An integer expression whose value only variables and thread indices decide, by arithmetic
/// that reads no memory and calls nothing (`c % 2`, `c / 2` of an unsigned c): its atom is its
/// canonical profile, which names each variable by its declaration, so two spellings of one
/// computation are one atom and no two computations are.
bool LoopChecker::opaqueAtom(const Expr *E, std::string &Key) {
  // Side effects are looked for node by node: a read of threadIdx is a call of its getter, which
  // Clang counts as one, and is no more than a read.
  if (!E->getType()->isIntegerType() || E->isValueDependent())
    return false;
  std::function<bool(const Stmt *)> Pure = [&](const Stmt *S) {
    if (const auto *X = dyn_cast<Expr>(S); X && (isBuiltinIndexRead(X) || varOf(X))) {
      const VarDecl *V = varOf(X);
      if (V && OpaqueFixedOnly && (InnerVars.contains(V) || llvm::is_contained(NestedIndexVars, V)))
        return false; // it may differ from one inner iteration to the next
      return !V || !V->getType().isVolatileQualified();
    }
    if (const auto *B = dyn_cast<BinaryOperator>(S); B && (B->isAssignmentOp() || B->isCommaOp()))
      return false;
    if (const auto *U = dyn_cast<UnaryOperator>(S); U && U->isIncrementDecrementOp())
      return false;
    if (!isa<BinaryOperator>(S) && !isa<UnaryOperator>(S) && !isa<ParenExpr>(S) && !isa<CastExpr>(S) &&
        !isa<IntegerLiteral>(S) && !isa<ConditionalOperator>(S))
      return false;
    if (const auto *U = dyn_cast<UnaryOperator>(S); U && (U->getOpcode() == UO_Deref || U->getOpcode() == UO_AddrOf))
      return false;
    if (const auto *C = dyn_cast<CastExpr>(S); C && C->getCastKind() == CK_LValueToRValue &&
                                              !varOf(C->getSubExpr()) && !isBuiltinIndexRead(C->getSubExpr()))
      return false; // a read of memory
    return llvm::all_of(S->children(), [&](const Stmt *C) { return C && Pure(C); });
  };
  if (!Pure(E))
    return false;
  llvm::FoldingSetNodeID ID;
  E->IgnoreParenImpCasts()->Profile(ID, Ctx, /*Canonical=*/true);
  llvm::BumpPtrAllocator Alloc;
  llvm::FoldingSetNodeIDRef Ref = ID.Intern(Alloc);
  Key = "o";
  for (size_t I = 0; I < Ref.getSize(); ++I)
    Key += std::to_string(Ref.getData()[I]) + ",";
  return true;
}

/// 'x', 'y' or 'z' when E is threadIdx.x/y/z, or a local set once from it; 0 otherwise.
char LoopChecker::threadDim(const Expr *E) {
  std::string Key;
  E = E->IgnoreParenImpCasts();
  if (isBuiltinIndexRead(E, &Key))
    return StringRef(Key).starts_with("threadIdx.") && Key.size() == 11 ? Key.back() : 0;
  const VarDecl *V = varOf(E);
  if (!V || !setOnceLocal(V))
    return 0;
  if (isBuiltinIndexRead(V->getInit(), &Key) && StringRef(Key).starts_with("threadIdx.") &&
      Key.size() == 11)
    return Key.back();
  return 0;
}

/// The least and greatest value E may take in any thread, where E is built from thread indices
/// (threadIdx.x and .y below 1024, .z below 64), integer constants and locals set once from such
/// values, and inner copy loop variables over their ranges, by +, -, * and by / and % of a
/// positive constant, every step within 31 bits and, in an unsigned type, never below zero (so no
/// step wraps): `threadIdx.x`, `tid * 4 + 1`, `tid % 32`, `x` of `for (x = threadIdx.x; x < 36;
/// x += blockDim.x)`.
std::optional<std::pair<int64_t, int64_t>> LoopChecker::threadRange(const Expr *E, unsigned Depth) {
  using Range = std::pair<int64_t, int64_t>;
  const int64_t Big = int64_t(1) << 31;
  if (Depth > 8 || !E->getType()->isIntegerType() || E->isValueDependent())
    return std::nullopt;
  auto Checked = [&](Range R, QualType T) -> std::optional<Range> {
    if (R.first > R.second || R.first <= -Big || R.second >= Big ||
        (T->isUnsignedIntegerType() && R.first < 0) || Ctx.getIntWidth(T) < 32)
      return std::nullopt;
    return R;
  };
  E = E->IgnoreParens();
  // A conversion, implicit or written (`(int)threadIdx.x - 1`), keeps a value its type holds.
  if (const auto *CE = dyn_cast<CastExpr>(E)) {
    const CastKind K = CE->getCastKind();
    if (K != CK_LValueToRValue && K != CK_IntegralCast && K != CK_NoOp)
      return std::nullopt;
    auto R = threadRange(CE->getSubExpr(), Depth + 1);
    return R ? Checked(*R, CE->getType()) : std::nullopt;
  }
  Expr::EvalResult C;
  if (E->EvaluateAsInt(C, Ctx)) {
    const int64_t V = C.Val.getInt().getExtValue();
    return Checked({V, V}, E->getType());
  }
  std::string Key;
  if (isBuiltinIndexRead(E, &Key)) {
    if (Key == "threadIdx.x" || Key == "threadIdx.y")
      return Range{0, 1023};
    if (Key == "threadIdx.z")
      return Range{0, 63};
    return std::nullopt;
  }
  if (const VarDecl *V = varOf(E)) {
    if (auto It = InnerRanges.find(V); It != InnerRanges.end())
      return Range{It->second.Lo, It->second.Hi}; // an inner copy loop's variable, in its loop
    return setOnceLocal(V) ? threadRange(V->getInit(), Depth + 1) : std::nullopt;
  }
  const auto *BO = dyn_cast<BinaryOperator>(E);
  if (!BO)
    return std::nullopt;
  auto L = threadRange(BO->getLHS(), Depth + 1), R = threadRange(BO->getRHS(), Depth + 1);
  if (!L || !R)
    return std::nullopt;
  switch (BO->getOpcode()) {
  case BO_Add:
    return Checked({L->first + R->first, L->second + R->second}, BO->getType());
  case BO_Sub:
    return Checked({L->first - R->second, L->second - R->first}, BO->getType());
  case BO_Mul: {
    const int64_t P[] = {L->first * R->first, L->first * R->second, L->second * R->first, L->second * R->second};
    return Checked({*std::min_element(P, P + 4), *std::max_element(P, P + 4)}, BO->getType());
  }
  case BO_Div:
  case BO_Rem:
    if (R->first != R->second || R->first <= 0 || L->first < 0)
      return std::nullopt;
    return Checked(BO->getOpcode() == BO_Div ? Range{L->first / R->first, L->second / R->first}
                                             : Range{0, std::min(L->second, R->first - 1)},
                   BO->getType());
  default:
    return std::nullopt;
  }
}

/// Whether FD, or a function it calls, reads something that differs between the threads of a
/// block: threadIdx, a special register other than the block's and grid's, inline assembly, or a
/// call that cannot be followed.
static bool readsThreadState(const ASTContext &Ctx, const FunctionDecl *FD, unsigned Depth) {
  if (unsigned ID = FD->getBuiltinID()) {
    StringRef N = Ctx.BuiltinInfo.getName(ID);
    if (!N.starts_with("__nvvm_read_ptx_sreg_"))
      return !Ctx.BuiltinInfo.isConst(ID);
    N = N.drop_front(strlen("__nvvm_read_ptx_sreg_"));
    return !(N.starts_with("ctaid") || N.starts_with("nctaid") || N.starts_with("ntid"));
  }
  const FunctionDecl *Def = nullptr;
  if (Depth > 6 || !FD->hasBody(Def) || !Def->getBody())
    return !(FD->getIdentifier() && FD->getName().starts_with("__nv_")); // libdevice's math
  struct Finder : RecursiveASTVisitor<Finder> {
    const ASTContext &Ctx;
    unsigned Depth;
    bool Found = false;
    Finder(const ASTContext &Ctx, unsigned Depth) : Ctx(Ctx), Depth(Depth) {}
    bool shouldVisitImplicitCode() const { return true; }
    bool VisitAsmStmt(AsmStmt *) { return !(Found = true); }
    bool VisitCallExpr(CallExpr *CE) {
      const FunctionDecl *C = CE->getDirectCallee();
      Found = !C || readsThreadState(Ctx, C, Depth + 1);
      return !Found;
    }
    bool VisitCXXConstructExpr(CXXConstructExpr *CE) {
      Found = !CE->getConstructor()->isTrivial() && readsThreadState(Ctx, CE->getConstructor(), Depth + 1);
      return !Found;
    }
  } F(Ctx, Depth);
  F.TraverseStmt(Def->getBody());
  return F.Found;
}

/// Whether S may take a different value in different threads of a block.
bool LoopChecker::mentionsThread(const Stmt *S, unsigned Depth) {
  if (!S || Depth > 8)
    return S != nullptr;
  if (const auto *E = dyn_cast<Expr>(S)) {
    std::string Key;
    if (isBuiltinIndexRead(E, &Key))
      return !StringRef(Key).starts_with("blockIdx.") && !StringRef(Key).starts_with("blockDim.") &&
             !StringRef(Key).starts_with("gridDim.");
    if (threadDim(E))
      return true;
    // A call may read the thread's index (or a special register) in its body: it is uniform on
    // uniform arguments only when it reads no memory and nothing of the thread's own.
    if (const auto *CE = dyn_cast<CallExpr>(E)) {
      const FunctionDecl *FD = CE->getDirectCallee();
      if (!FD || !Effects.isPure(FD) || readsThreadState(Ctx, FD, 0))
        return true;
    }
    if (const auto *CE = dyn_cast<CXXConstructExpr>(E); CE && !CE->getConstructor()->isTrivial())
      return true;
    if (const VarDecl *V = varOf(E)) {
      if (IndexDeclDeps.count(V))
        return mentionsThread(V->getInit(), Depth + 1);
      // A local the copy phase sets before its reads: the same in all threads where what it is
      // set to, and what chooses that, are.
      if (auto It = SliceLocalSets.find(V); It != SliceLocalSets.end())
        return (It->second.Cond && mentionsThread(It->second.Cond, Depth + 1)) ||
               llvm::any_of(It->second.Values, [&](const Expr *E) { return mentionsThread(E, Depth + 1); });
      if (isInduction(V)) {
        // Uniform when it starts uniform and steps uniformly (assumed of itself while looking).
        if (!UniformVisiting.insert(V).second)
          return false;
        if (!startSetJustBefore(V) && !paramStartUniform(V, Depth)) {
          UniformVisiting.erase(V);
          return true;
        }
        bool R = mentionsThread(V->getInit(), Depth + 1) || mentionsThread(M.Init, Depth + 1) ||
                 mentionsThread(M.Inc, Depth + 1);
        for (const Stmt *T : M.TailIncs)
          R = R || mentionsThread(T, Depth + 1);
        for (const Stmt *T : M.BodyIncs)
          R = R || mentionsThread(T, Depth + 1);
        UniformVisiting.erase(V);
        return R;
      }
      if (const auto *P = dyn_cast<ParmVarDecl>(V)) {
        // A kernel's parameters are the same in every thread until a thread changes one; a
        // __device__ function's are what each thread passed (`tile(A, 4 * threadIdx.x)`): the
        // same only where every call in the file passes a value the same in all threads.
        const auto *Owner = dyn_cast<FunctionDecl>(V->getDeclContext());
        if (Owner && !unchangedParam(V)) {
          // Stepped before the loop (`A += blockIdx.y * BM * K;`), not in it.
          if (InLoop.Mutated.contains(V) || InLoop.Escaped.contains(V) || !UniformVisiting.insert(V).second)
            return true;
          bool Uniform = paramStartUniform(V, Depth);
          UniformVisiting.erase(V);
          return !Uniform;
        }
        if (!Owner)
          return true;
        if (Owner->hasAttr<CUDAGlobalAttr>())
          return false;
        auto Calls = Index.callersOf(Owner);
        auto [Known, New] = AddressTakenOf.try_emplace(Owner, false);
        if (New)
          Known->second = addressTaken(Ctx, Owner);
        if (Calls.empty() || Known->second)
          return true;
        for (const CallExpr *CE : Calls) {
          if (isa<CXXOperatorCallExpr>(CE) || P->getFunctionScopeIndex() >= CE->getNumArgs())
            return true;
          const Expr *Arg = CE->getArg(P->getFunctionScopeIndex());
          const FunctionDecl *Caller = enclosingFunction(Ctx, CE);
          if (!Caller || isa<CXXDefaultArgExpr>(Arg) ||
              mayDifferAcrossThreads(Ctx, Effects, Caller, Arg))
            return true;
        }
        return false;
      }
      if (V->hasLocalStorage()) {
        // A local of the function: uniform only when set once from uniform values.
        if (!V->getInit() || changes(V))
          return true;
        return mentionsThread(V->getInit(), Depth + 1);
      }
      return false;
    }
  }
  for (const Stmt *C : S->children())
    if (mentionsThread(C, Depth))
      return true;
  return false;
}

/// E as uniform + sum over thread dimensions of Out[d] * threadIdx.d, with the coefficients as
/// text valid at the loop; false when E is not of that form.
bool LoopChecker::threadAffine(const Expr *E, std::map<char, Coef> &Out, unsigned Depth) {
  if (Depth > 8)
    return false;
  if (mentionsThread(E) && widensWrappedArithmetic(E, Ctx))
    return false; // affine modulo 2^32 only: a box computed in the wider index type is not
  E = valueOf(E, Ctx);
  if (!mentionsThread(E))
    return true;
  if (isa<CastExpr>(E))
    return false; // a conversion that may change the value
  auto Add = [&](char D, const Coef &C, int Sign) {
    std::string T = Sign < 0 ? "-(" + C.Text + ")" : C.Text;
    std::optional<int64_t> K;
    if (C.Const)
      K = Sign * *C.Const;
    auto It = Out.find(D);
    if (It == Out.end()) {
      Out[D] = {T, K};
      return;
    }
    It->second.Text = "(" + It->second.Text + ") + (" + T + ")";
    It->second.Const = It->second.Const && K ? std::optional<int64_t>(*It->second.Const + *K)
                                             : std::nullopt;
  };
  if (char D = threadDim(E)) {
    Add(D, {"1", 1}, 1);
    return true;
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->getOpcode() == BO_Add || BO->getOpcode() == BO_Sub) {
      std::map<char, Coef> L, R;
      if (!threadAffine(BO->getLHS(), L, Depth + 1) || !threadAffine(BO->getRHS(), R, Depth + 1))
        return false;
      for (auto &[D, C] : L)
        Add(D, C, 1);
      for (auto &[D, C] : R)
        Add(D, C, BO->getOpcode() == BO_Add ? 1 : -1);
      return true;
    }
    if (BO->getOpcode() == BO_Mul) {
      const Expr *U = BO->getLHS(), *X = BO->getRHS();
      if (mentionsThread(U))
        std::swap(U, X);
      if (mentionsThread(U))
        return false;
      std::string UText = sourceText(Ctx, U->getSourceRange());
      if (UText.empty() || !visibleAtLoop(U) || classify(U).D == Dep::Bad)
        return false;
      CoefExprs.push_back(U);
      std::optional<int64_t> UConst;
      Expr::EvalResult ER;
      if (!U->isValueDependent() && U->EvaluateAsInt(ER, Ctx))
        UConst = ER.Val.getInt().getExtValue();
      std::map<char, Coef> Sub;
      if (!threadAffine(X, Sub, Depth + 1))
        return false;
      for (auto &[D, C] : Sub) {
        Coef Scaled{C.Const == 1 ? UText : "(" + C.Text + ") * (" + UText + ")",
                    std::nullopt};
        if (C.Const && UConst)
          Scaled.Const = *C.Const * *UConst;
        Add(D, Scaled, 1);
      }
      return true;
    }
    return false;
  }
  // A local set once from thread indices: follow its start.
  if (const VarDecl *V = varOf(E); V && setOnceLocal(V))
    return threadAffine(V->getInit(), Out, Depth + 1);
  return false;
}

/// Every name in E means at the loop what it means where E is written: parameters, constants, and
/// locals that never change, each whose name nothing else in the function declares; a name that
/// is not the function's own only where the function declares nothing of that name (which could
/// hide it where the text is written).
bool LoopChecker::visibleAtLoop(const Expr *E) {
  if (NameCounts.empty()) {
    struct AllNames : RecursiveASTVisitor<AllNames> {
      std::map<std::string, unsigned> *Count;
      bool VisitNamedDecl(NamedDecl *D) {
        if (D->getLexicalDeclContext()->isFunctionOrMethod() || isa<ParmVarDecl>(D))
          ++(*Count)[D->getNameAsString()];
        return true;
      }
    } All;
    All.Count = &NameCounts;
    for (const ParmVarDecl *P : M.Function->parameters())
      ++NameCounts[P->getNameAsString()];
    All.TraverseStmt(M.Function->getBody());
    NameCounts[""]; // read once, even for a function that declares nothing
  }
  for (const NameUse &U : namesIn(E)) {
    const NamedDecl *D = U.Decl;
    const auto *V = dyn_cast<VarDecl>(D);
    if (V && isCudaBuiltinVar(V))
      continue;
    if (!isa<VarDecl, EnumConstantDecl, FunctionDecl, TypeDecl>(D))
      return false;
    const bool Local = D->getLexicalDeclContext()->isFunctionOrMethod() || isa<ParmVarDecl>(D);
    unsigned Count = NameCounts[D->getNameAsString()];
    if (Local ? Count != 1 : !U.Qualified && Count != 0)
      return false;
    if (V && V->hasLocalStorage() && !isa<ParmVarDecl>(V) && changes(V))
      return false;
  }
  return true;
}

/// Whether E means the same in a host function beside the kernel that takes the kernel's
/// parameters: it names only unchanged parameters and compile-time constants.
bool LoopChecker::hostVisible(const Expr *E) {
  // The host function stands beside the kernel, at namespace scope: a constant it names by the
  // same text must be found there by the same lookup. One declared in the kernel (a local
  // `static constexpr`, a local enum), in a class around it, or named through a using-declaration
  // may be another one there, or none: `LD` of the kernel's `static constexpr int LD = 1024` is
  // the global `LD` in the launcher.
  if (!M.Function->getDeclContext()->getRedeclContext()->isFileContext())
    return false;
  // The launcher reads the text where the kernel ends: a directive between the expression and
  // there (`#undef LD`, `#pragma pop_macro("LD")`, an `#include`) may give a macro it names
  // another meaning (conditionals change no macro, and the loop itself holds no directive).
  {
    const SourceManager &SM = Ctx.getSourceManager();
    SourceLocation B = SM.getExpansionLoc(E->getBeginLoc());
    SourceLocation End = SM.getExpansionLoc(M.Function->getEndLoc());
    if (SM.getFileID(B) != SM.getFileID(End))
      return false;
    StringRef Between = SM.getBufferData(SM.getFileID(B))
                            .slice(SM.getFileOffset(B), SM.getFileOffset(End));
    llvm::SmallVector<StringRef, 64> Lines;
    Between.split(Lines, '\n');
    for (StringRef L : Lines) {
      L = L.ltrim();
      if (L.contains("_Pragma"))
        return false;
      if (!L.consume_front("#"))
        continue;
      L = L.ltrim();
      if (!(L.starts_with("if") || L.starts_with("el") || L.starts_with("endif") ||
            (L.starts_with("pragma") && L.drop_front(6).ltrim().starts_with("unroll")) ||
            (L.starts_with("pragma") && L.drop_front(6).ltrim().starts_with("nounroll"))))
        return false;
    }
  }
  // Parameters of the kernel (the launcher's own, by the same names), constants of namespace scope
  // found as themselves, and types declared there; template parameters, which the launcher
  // declares too.
  for (const NameUse &U : namesIn(E)) {
    const NamedDecl *D = U.Decl;
    if (const auto *P = dyn_cast<ParmVarDecl>(D)) {
      if (!unchangedParam(P))
        return false;
      continue;
    }
    if (U.Found != D || !D->getDeclContext()->getRedeclContext()->isFileContext())
      return false;
    if (isa<EnumConstantDecl, TypeDecl>(D))
      continue;
    const auto *V = dyn_cast<VarDecl>(D);
    if (!V || V->hasLocalStorage() || !V->isConstexpr())
      return false;
  }
  return true;
}

} // namespace tilepipe::check
