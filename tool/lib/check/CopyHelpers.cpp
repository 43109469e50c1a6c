// Copy helpers: a call of a function whose whole body is one store through its pointer parameter
// (`st_vec(&t[y][x], v)`, `__device__ void st_vec(float *p, float4 v) { *reinterpret_cast<float4
// *>(p) = v; }`) stores into the tile element its argument addresses, as `*(float4 *)&t[y][x] = v`
// would; one whose body returns one read through its pointer parameter (`ld_vec(g + i)`, `return
// *reinterpret_cast<const float4 *>(p);`) reads global memory at its argument, as `*(const float4
// *)(g + i)` would. The parameters stand for the arguments' values, each read once, so the call is
// that store or read with the arguments in place of the parameters: the checks of TileStores.cpp
// then judge it as they judge the store or read written out. Nothing else is a helper: a body of
// two statements, a conversion between the argument and the element, a reference parameter, a
// member function, a default argument.
#include "LoopChecker.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include <numeric>

using namespace clang;

namespace tilepipe::check {

namespace {

/// The one statement of the body of the function Call calls, or null: a direct call of a free
/// function defined in the file, with an argument for each parameter.
const Stmt *onlyStatement(const CallExpr *Call, const FunctionDecl *&Def) {
  if (isa<CXXMemberCallExpr>(Call) || isa<CXXOperatorCallExpr>(Call) || isa<CUDAKernelCallExpr>(Call))
    return nullptr;
  const FunctionDecl *F = Call->getDirectCallee();
  if (!F || isa<CXXMethodDecl>(F) || F->isVariadic() || !F->hasBody(Def) || !Def)
    return nullptr;
  if (Def->getNumParams() != Call->getNumArgs() ||
      llvm::any_of(Call->arguments(), [](const Expr *A) { return isa<CXXDefaultArgExpr>(A); }))
    return nullptr;
  for (const ParmVarDecl *P : Def->parameters())
    if (P->getType()->isReferenceType() && !P->getType()->getPointeeType().isConstQualified())
      return nullptr;
  const auto *Body = dyn_cast_or_null<CompoundStmt>(Def->getBody());
  return Body && Body->size() == 1 ? Body->body_front() : nullptr;
}

/// Whether E is the parameter P as it is: through parentheses, lvalue-to-rvalue and no-op casts,
/// and a class's trivial copy (`float4 v` copied).
bool isParam(const Expr *E, const ParmVarDecl *P) {
  for (E = stripNoOps(E); const Expr *Copied = trivialCopySource(E);)
    E = stripNoOps(Copied);
  const auto *DRE = dyn_cast<DeclRefExpr>(E);
  return DRE && DRE->getDecl() == P;
}

/// `*X` or `X[0]`: X, or null.
const Expr *dereferenced(const Expr *E) {
  E = stripNoOps(E);
  if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->getOpcode() == UO_Deref)
    return UO->getSubExpr()->IgnoreParens();
  if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E); ASE && ASE->getBase()->getType()->isPointerType())
    if (const auto *IL = dyn_cast<IntegerLiteral>(ASE->getIdx()->IgnoreParenImpCasts()); IL && IL->getValue() == 0)
      return ASE->getBase()->IgnoreParens();
  return nullptr;
}

/// Whether X is the pointer parameter P, or a bit cast of it to another pointer type (View).
bool pointerParam(const Expr *X, const ParmVarDecl *P, const ExplicitCastExpr *&View) {
  View = nullptr;
  if (!P->getType()->isPointerType())
    return false;
  if (const auto *C = dyn_cast<ExplicitCastExpr>(X)) {
    if (C->getCastKind() != CK_BitCast || !C->getType()->isPointerType())
      return false;
    View = C;
    X = C->getSubExpr();
  }
  return isParam(X, P);
}

/// Whether T and U are one type, qualifiers aside.
bool sameType(QualType T, QualType U) {
  return T.getCanonicalType().getUnqualifiedType() == U.getCanonicalType().getUnqualifiedType();
}

} // namespace

std::optional<HelperCopy> helperStore(const Stmt *S) {
  const auto *E = dyn_cast_or_null<Expr>(S);
  const auto *Call = E ? dyn_cast<CallExpr>(skipCleanups(E)->IgnoreParens()) : nullptr;
  const FunctionDecl *Def = nullptr;
  const Stmt *Only = Call && Call->getNumArgs() == 2 ? onlyStatement(Call, Def) : nullptr;
  const Expr *L, *R;
  if (!Only || !Def->getReturnType()->isVoidType() || !splitAssignment(Only, L, R))
    return std::nullopt;
  HelperCopy H{Call, nullptr, L->getType()};
  const Expr *X = dereferenced(L);
  const ParmVarDecl *Value = Def->getParamDecl(1);
  if (!X || !pointerParam(X, Def->getParamDecl(0), H.View) || !isParam(R, Value) ||
      !sameType(Value->getType().getNonReferenceType(), H.Type))
    return std::nullopt;
  return H;
}

std::optional<HelperCopy> helperLoad(const Expr *E) {
  const auto *Call = dyn_cast<CallExpr>(stripNoOps(E));
  const FunctionDecl *Def = nullptr;
  const Stmt *Only = Call && Call->getNumArgs() == 1 ? onlyStatement(Call, Def) : nullptr;
  const auto *Ret = dyn_cast_or_null<ReturnStmt>(Only);
  if (!Ret || !Ret->getRetValue() || Def->getReturnType()->isReferenceType())
    return std::nullopt;
  // `return *p;` copies the element out: through a trivial copy where it is a class.
  const Expr *V = stripNoOps(Ret->getRetValue());
  if (const Expr *Copied = trivialCopySource(V))
    V = Copied;
  const Expr *X = dereferenced(V);
  HelperCopy H{Call, nullptr, V->getType()};
  if (!X || !pointerParam(X, Def->getParamDecl(0), H.View) || !sameType(Def->getReturnType(), H.Type))
    return std::nullopt;
  return H;
}

/// A helper's address argument as the helper's pointer receives it, past the conversions that
/// keep the address (to a const or void pointer).
static const Expr *addressArgument(const Expr *A) {
  while (true) {
    A = A->IgnoreParens();
    const auto *ICE = dyn_cast<ImplicitCastExpr>(A);
    if (!ICE || (ICE->getCastKind() != CK_NoOp && ICE->getCastKind() != CK_BitCast &&
                 ICE->getCastKind() != CK_LValueToRValue))
      return A;
    A = ICE->getSubExpr();
  }
}

/// `st_vec(&t[i]...[k], v)` (helperStore): the tile element its first argument addresses (or the
/// row or tile it passes), stored as the helper's body stores, with the value its second argument
/// is.
Verdict LoopChecker::checkHelperStore(const Stmt *S, const HelperCopy &H) {
  const Expr *Address = addressArgument(H.Call->getArg(0)), *Value = H.Call->getArg(1);
  const Expr *Target = nullptr;
  if (const auto *UO = dyn_cast<UnaryOperator>(Address); UO && UO->getOpcode() == UO_AddrOf)
    Target = UO->getSubExpr();
  else if (const auto *ICE = dyn_cast<ImplicitCastExpr>(Address); ICE && ICE->getCastKind() == CK_ArrayToPointerDecay)
    Target = ICE->getSubExpr();
  if (!Target)
    return Verdict::refuse(Reason::LoadPhase, "'" + text(S).substr(0, 60) + "' stores through '" + text(Address) +
                                                  "', which takes the address of no tile element");
  // A conditional value would make two stores of one call, which the rewrite writes only for
  // assignments.
  if (isa<ConditionalOperator>(stripNoOps(Value)))
    return Verdict::refuse(Reason::LoadPhase, "'" + text(S).substr(0, 60) + "' stores a conditional value");
  TileTarget To;
  if (Verdict V = tileOfLValue(Target, To.Tile, To.Indices); !V.ok())
    return V;
  To.View = H.View;
  if (Verdict V = addTile(To.Tile, nullptr); !V.ok())
    return V;
  if (!H.View && !sameType(H.Type, M.Tiles[TileIndex[To.Tile]].ElementType))
    return Verdict::refuse(Reason::ElementType, "'" + text(S).substr(0, 60) + "' stores '" + H.Type.getAsString() +
                                                    "' into a tile of '" +
                                                    M.Tiles[TileIndex[To.Tile]].ElementType.getAsString() + "'");
  size_t Before = M.Stores.size();
  Verdict V = checkStoreTo(S, Target, Value, To);
  for (size_t I = Before; I < M.Stores.size(); ++I) {
    M.Stores[I].Helper = H.Call;
    M.Stores[I].InInnerLoop = !InnerStack.empty();
  }
  return V;
}

/// A tile store whose value V is a call of a load helper (`ld_vec(g + i)`, helperLoad): a read of
/// one H.Type at the argument's address, of the type the store writes, with no conversion between.
Verdict LoopChecker::checkHelperRead(const Stmt *S, const Expr *Dst, const Expr *V, const HelperCopy &H,
                                     QualType Stored, TileStore &Store) {
  const std::string Read = "'" + text(V) + "'";
  if (hasVolatilePart(Ctx, H.Type))
    return Verdict::refuse(Reason::LoadSource, Read + " is a volatile read");
  if (!sameType(H.Type, Stored))
    return Verdict::refuse(Reason::LoadComputes, Read + " reads '" + H.Type.getAsString() + "' into " +
                                                     (Store.View ? "a vector" : "a tile") + " of '" +
                                                     Stored.getAsString() + "'");
  const Expr *Address = addressArgument(H.Call->getArg(0));
  if (!Address->getType()->isPointerType())
    return Verdict::refuse(Reason::LoadSource, Read + " does not read through a pointer");
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(Address); ICE && ICE->getCastKind() == CK_ArrayToPointerDecay)
    return Verdict::refuse(Reason::LoadSource, Read + " reads an array, not global memory");
  if (Verdict R = checkGlobalAddress(S, H.Call, Address, nullptr); !R.ok())
    return R;
  if (!editable(Dst))
    return Verdict::refuse(Reason::Macro, "the copy '" + text(S) + "' is written in a macro");
  Store.Src = V;
  Store.SrcAddress = H.Call->getArg(0);
  M.Stores.push_back(Store);
  return {};
}

const Expr *LoopChecker::parentExpr(const Expr *E) {
  DynTypedNodeList P = Ctx.getParents(*E);
  return P.size() == 1 ? P[0].get<Expr>() : nullptr;
}

/// Whether the lvalue LV is only read: its value taken, whole or by members, or copied.
bool LoopChecker::onlyRead(const Expr *LV) {
  for (const Expr *Cur = LV, *P; (P = parentExpr(Cur)); Cur = P) {
    if (isa<ParenExpr>(P) || isa<MaterializeTemporaryExpr>(P))
      continue;
    if (const auto *ME = dyn_cast<MemberExpr>(P); ME && !ME->isArrow())
      continue;
    if (const auto *ICE = dyn_cast<ImplicitCastExpr>(P)) {
      if (ICE->getCastKind() == CK_LValueToRValue)
        return true;
      if (ICE->getCastKind() == CK_NoOp && ICE->getType().isConstQualified())
        continue;
      return false;
    }
    if (isa<CXXConstructExpr>(P))
      return trivialCopySource(P) != nullptr;
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(P))
      return OC->getOperator() == OO_Equal && OC->getNumArgs() == 2 && OC->getArg(1) == Cur;
    return false;
  }
  return false;
}

/// A read of the tile as vectors in the compute phase: Address, the address of the element the
/// subscripts select (or of the first element of the row or tile they leave), is read as one V by
/// a load helper (`ld_vec(&t[i][k])`) or through a cast (`*(float4 *)&t[i][k]`,
/// `reinterpret_cast<const float4 *>(&t[i][k])[0]`). The stages start on 16 bytes and hold whole
/// Vs, so the read stays in its stage and is aligned there where the element's offset in the tile
/// is a multiple of V's elements (multipleOf); the original's read was aligned, so it read the
/// same bytes of its tile.
Verdict LoopChecker::checkVectorRead(const VarDecl *Tile, const std::vector<const Expr *> &Subscripts,
                                     const Expr *Address) {
  const std::string Use = quoted(Tile) + " is used as '" + text(Address).substr(0, 50) + "'";
  const Expr *Cur = Address, *P = parentExpr(Cur);
  for (; P && (isa<ParenExpr>(P) || (isa<ImplicitCastExpr>(P) && (cast<CastExpr>(P)->getCastKind() == CK_NoOp ||
                                                                 cast<CastExpr>(P)->getCastKind() == CK_BitCast)));
       P = parentExpr(Cur))
    Cur = P;
  QualType VT;
  if (const auto *Call = dyn_cast_or_null<CallExpr>(P)) {
    std::optional<HelperCopy> H = helperLoad(Call);
    if (!H || Call->getArg(0) != Cur)
      return Verdict::refuse(Reason::TileEscapes, Use + ", passed to a function that does not only return "
                                                        "one read through it");
    VT = H->Type;
  } else if (const auto *C = dyn_cast_or_null<ExplicitCastExpr>(P);
             C && C->getCastKind() == CK_BitCast && C->getType()->isPointerType()) {
    VT = C->getType()->getPointeeType();
    // `*C` or `C[0]`, as a helper's body reads (dereferenced).
    const Expr *X = C, *Read = parentExpr(X);
    for (; Read && isa<ParenExpr>(Read); Read = parentExpr(X))
      X = Read;
    if (!Read || dereferenced(Read) != C || !onlyRead(Read))
      return Verdict::refuse(Reason::TileEscapes, Use + " through '" + text(C).substr(0, 50) +
                                                        "', not read as one vector");
  } else {
    return Verdict::refuse(Reason::TileEscapes, Use + ", not read element by element");
  }
  const QualType Elem = M.Tiles[TileIndex[Tile]].ElementType;
  const uint64_t Size = VT->isIncompleteType() || VT->isDependentType() ? 0 : Ctx.getTypeSizeInChars(VT).getQuantity();
  const uint64_t ElemSize = Ctx.getTypeSizeInChars(Elem).getQuantity();
  if (hasVolatilePart(Ctx, VT) || !VT.isTriviallyCopyableType(Ctx) || Size == 0 || Size % ElemSize != 0 ||
      (Size != ElemSize && ((Size != 8 && Size != 16) || Ctx.getTypeAlignInChars(VT).getQuantity() != (int64_t)Size)) ||
      M.Tiles[TileIndex[Tile]].Bytes % Size != 0)
    return Verdict::refuse(Reason::TileEscapes, Use + ", read as '" + VT.getAsString() +
                                                    "', which is no whole number of its elements of 8 or 16 "
                                                    "bytes aligned to its size, or does not divide the tile");
  // The element's offset, the sum of each subscript times its dimension's stride, is a multiple of
  // the width where each term is.
  const int64_t Width = static_cast<int64_t>(Size / ElemSize);
  const std::vector<uint64_t> Extents = tileExtents(Tile);
  for (size_t D = 0; D < Subscripts.size(); ++D) {
    int64_t Stride = 1;
    for (size_t K = D + 1; K < Extents.size(); ++K)
      Stride *= static_cast<int64_t>(Extents[K]);
    std::set<const VarDecl *> Assumed;
    if (!multipleOf(Subscripts[D], Width / std::gcd(Stride, Width), Assumed))
      return Verdict::refuse(Reason::TileEscapes, Use + ", read as vectors of " + std::to_string(Width) +
                                                      " elements from an element not provably a multiple of " +
                                                      std::to_string(Width) + " ('" + text(Subscripts[D]) + "')");
  }
  return {};
}

/// Whether the integer E is a multiple of W, a power of two, in every thread and whenever it is
/// evaluated: by its constants and operators, and for a local, by every value it is given (its
/// initializer and each assignment, assuming the locals in Assumed are multiples, as every value
/// given them is then too). Conversions between integer types keep a multiple of a power of two.
bool LoopChecker::multipleOf(const Expr *E, int64_t W, std::set<const VarDecl *> &Assumed, unsigned Depth) {
  if (W <= 1)
    return true;
  if (Depth > 12 || !E->getType()->isIntegerType())
    return false;
  E = E->IgnoreParens();
  if (const auto *CE = dyn_cast<CastExpr>(E);
      CE && (CE->getCastKind() == CK_IntegralCast || CE->getCastKind() == CK_LValueToRValue ||
             CE->getCastKind() == CK_NoOp))
    return multipleOf(CE->getSubExpr(), W, Assumed, Depth + 1);
  Expr::EvalResult R;
  if (!E->isValueDependent() && E->EvaluateAsInt(R, Ctx))
    return R.Val.getInt().getExtValue() % W == 0;
  auto Const = [&](const Expr *X, int64_t &C) {
    Expr::EvalResult V;
    if (X->isValueDependent() || !X->EvaluateAsInt(V, Ctx))
      return false;
    C = V.Val.getInt().getExtValue();
    return true;
  };
  auto Mult = [&](const Expr *X, int64_t K) { return multipleOf(X, K, Assumed, Depth + 1); };
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    const Expr *L = BO->getLHS(), *Rt = BO->getRHS();
    int64_t C = 0;
    switch (BO->getOpcode()) {
    case BO_Add:
    case BO_Sub:
      return Mult(L, W) && Mult(Rt, W);
    case BO_Mul:
      if (Const(Rt, C))
        return Mult(L, W / std::gcd(std::abs(C), W));
      if (Const(L, C))
        return Mult(Rt, W / std::gcd(std::abs(C), W));
      return Mult(L, W) || Mult(Rt, W);
    case BO_Rem: // a % c is a - c * (a / c)
      return Const(Rt, C) && C % W == 0 && Mult(L, W);
    case BO_Shl:
      return Const(Rt, C) && C >= 0 && C < 31 && Mult(L, W >> std::min<int64_t>(C, 30));
    case BO_And:
      return (Const(Rt, C) && (C & (W - 1)) == 0) || (Const(L, C) && (C & (W - 1)) == 0) || Mult(L, W) ||
             Mult(Rt, W);
    default:
      return false;
    }
  }
  if (const auto *CO = dyn_cast<ConditionalOperator>(E))
    return Mult(CO->getTrueExpr(), W) && Mult(CO->getFalseExpr(), W);
  const VarDecl *V = varOf(E);
  if (!V || !V->hasLocalStorage() || isa<ParmVarDecl>(V) || V->getType()->isReferenceType() ||
      V->getType().isVolatileQualified() || !V->getInit())
    return false;
  if (!Assumed.insert(V).second)
    return true; // each value given it keeps it a multiple, as is being shown
  if (!Mult(V->getInit(), W))
    return false;
  for (const DeclRefExpr *Ref : usesOf(M.Function, V)) {
    const Expr *Use = Ref, *P = parentExpr(Use);
    for (; P && isa<ParenExpr>(P); P = parentExpr(Use))
      Use = P;
    if (const auto *ICE = dyn_cast_or_null<ImplicitCastExpr>(P); ICE && ICE->getCastKind() == CK_LValueToRValue)
      continue; // a read
    const auto *BO = dyn_cast_or_null<BinaryOperator>(P);
    if (!BO || BO->getLHS() != Use)
      return false; // its address taken, incremented, bound to a reference
    switch (BO->getOpcode()) {
    case BO_Assign:
    case BO_AddAssign:
    case BO_SubAssign:
      if (!Mult(BO->getRHS(), W))
        return false;
      break;
    case BO_MulAssign:
    case BO_ShlAssign:
      break;
    default:
      return false;
    }
  }
  return true;
}

} // namespace tilepipe::check
