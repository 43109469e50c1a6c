// One tile store of the copy phase: the tile element it writes, and the value: a fill, or a plain
// read of one element of global memory whose address the iteration alone moves.
#include "LoopChecker.h"
#include "clang/AST/Attr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include <set>

using namespace clang;

namespace tilepipe::check {

Verdict LoopChecker::checkStore(const Stmt *S, const Expr *LHS, const Expr *RHS) {
  size_t Before = M.Stores.size();
  Verdict V = checkStoreValue(S, LHS, RHS);
  for (size_t I = Before; I < M.Stores.size(); ++I)
    M.Stores[I].InInnerLoop = !InnerStack.empty();
  return V;
}

Verdict LoopChecker::checkStoreValue(const Stmt *S, const Expr *LHS, const Expr *RHS) {
  TileTarget To;
  if (Verdict V = targetOf(LHS, To); !V.ok())
    return V;
  return checkStoreTo(S, LHS, RHS, To);
}

/// The store S of RHS into the tile element (or vector) To, which LHS writes.
Verdict LoopChecker::checkStoreTo(const Stmt *S, const Expr *LHS, const Expr *RHS, TileTarget &To) {
  const VarDecl *TileVar = To.Tile;
  if (Verdict V = addTile(TileVar, nullptr); !V.ok())
    return V;
  size_t T = TileIndex[TileVar];
  // A vector may start at a row or at the tile itself; a plain store writes one whole element.
  unsigned Rank = tileRank(TileVar);
  if (To.View ? To.Indices.size() > Rank : To.Indices.size() != Rank)
    return Verdict::refuse(Reason::LoadPhase, "'" + text(LHS) + "' is not one tile element");
  std::vector<const Expr *> Subscripts = To.Indices;
  if (To.VectorIndex)
    Subscripts.push_back(To.VectorIndex);
  for (const Expr *I : Subscripts) {
    DepResult D = classify(I);
    if (D.D == Dep::Bad)
      return Verdict::refuse(Reason::AddressNotInvariant,
                             "the tile index '" + text(I) + "' " + D.Why);
    if (D.ReadsUnchanged) // the element it writes must be known from the index's form
      return Verdict::refuse(Reason::AddressNotInvariant,
                             "the tile index '" + text(I) + "' reads memory");
    if (D.D == Dep::Iteration)
      return Verdict::refuse(Reason::TileIndex,
                             "the tile index '" + text(I) + "' depends on the induction variables");
  }
  if (To.View)
    if (Verdict V = checkView(To); !V.ok())
      return V;
  if (!editable(S))
    return Verdict::refuse(Reason::Macro, "the copy '" + text(S) + "' is written in a macro");
  Sites.push_back({LHS, static_cast<unsigned>(TileIndex[TileVar]), InnerStack, To, BranchStack});
  const Expr *R = skipCleanups(RHS)->IgnoreParens();
  if (const auto *CO = dyn_cast<ConditionalOperator>(R);
      CO && !isa<ArraySubscriptExpr>(stripNoOps(RHS))) {
    DepResult D = classify(CO->getCond());
    if (D.D == Dep::Bad)
      return Verdict::refuse(Reason::AddressNotInvariant, "the guard '" + text(CO->getCond()) + "' " + D.Why);
    for (bool Holds : {true, false}) {
      if (Verdict V = checkValue(S, LHS, Holds ? CO->getTrueExpr() : CO->getFalseExpr(), T, To); !V.ok())
        return V;
      TileStore &Added = M.Stores.back();
      Added.Guard = CO->getCond();
      Added.WhenGuardHolds = Holds;
      Added.Guards = 1;
    }
    return {};
  }
  return checkValue(S, LHS, RHS, T, To);
}


/// Where a store's left side writes: one tile element `t[i]...[k]`, or a vector that views the
/// tile from an element on: `reinterpret_cast<V *>(&t[i]...[k])[j]`, `*(V *)&t[i]`, `((V *)t)[j]`.
Verdict LoopChecker::targetOf(const Expr *LHS, TileTarget &To) {
  const Expr *E = LHS->IgnoreParens(), *Ptr = nullptr;
  // A pointer local that views a tile (checkViewLocal) stands for its cast.
  auto ViewOf = [&](const Expr *P) -> const ExplicitCastExpr * {
    const VarDecl *V = varOf(P);
    auto It = V ? ViewLocals.find(V) : ViewLocals.end();
    return It == ViewLocals.end() ? nullptr : It->second;
  };
  if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E);
      ASE && (isa<ExplicitCastExpr>(ASE->getBase()->IgnoreParens()) || ViewOf(ASE->getBase()))) {
    Ptr = ASE->getBase()->IgnoreParens();
    To.VectorIndex = ASE->getIdx();
  } else if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->getOpcode() == UO_Deref) {
    Ptr = UO->getSubExpr()->IgnoreParens();
  }
  if (!Ptr)
    return tileOfLValue(LHS, To.Tile, To.Indices);
  if (const ExplicitCastExpr *View = ViewOf(Ptr))
    Ptr = View;
  const Expr *Viewed = viewedLValue(Ptr);
  if (!Viewed)
    return storeThroughPointer(Ptr, text(Ptr));
  To.View = cast<ExplicitCastExpr>(Ptr);
  return tileOfLValue(Viewed, To.Tile, To.Indices);
}

/// A vector store is copied whole, as one 8- or 16-byte copy: its type must be a whole number of
/// the tile's elements, trivially copyable and aligned to its size. The original dereferences a
/// pointer to it, so its address is aligned in the original's tile; the stage arrays start on
/// 16 bytes and hold whole vectors, so where its offset in the tile is a multiple of its size,
/// as the index shows, it is aligned there too.
Verdict LoopChecker::checkView(TileTarget &To) {
  const Tile &T = M.Tiles[TileIndex[To.Tile]];
  QualType V = To.View->getType()->getPointeeType();
  std::string Name = "the vector store into " + quoted(To.Tile);
  if (V->isDependentType() || V->isIncompleteType())
    return Verdict::refuse(Reason::ElementType, Name + " stores a type that is unknown");
  if (hasVolatilePart(Ctx, V) || overloadsAddressOf(V, Index.nonMemberAddressOf()) ||
      !V.isTriviallyCopyableType(Ctx))
    return Verdict::refuse(Reason::ElementType, Name + " stores '" + V.getAsString() +
                                                    "', which is volatile, not trivially copyable or has a "
                                                    "user's operator&");
  uint64_t Size = Ctx.getTypeSizeInChars(V).getQuantity(), Align = Ctx.getTypeAlignInChars(V).getQuantity();
  uint64_t Elem = Ctx.getTypeSizeInChars(T.ElementType).getQuantity();
  if ((Size != 8 && Size != 16) || Align != Size || Size % Elem != 0 || Size == Elem)
    return Verdict::refuse(Reason::ElementType,
                           Name + " stores '" + V.getAsString() + "' (" + std::to_string(Size) + " bytes, aligned to " +
                               std::to_string(Align) + ") into elements of " + std::to_string(Elem) +
                               " bytes; a vector is copied whole only as 8 or 16 bytes aligned to its size, "
                               "several elements");
  To.Width = static_cast<unsigned>(Size / Elem);
  if (T.Bytes % Size != 0)
    return Verdict::refuse(Reason::ElementType, Name + ": " + quoted(To.Tile) + " (" + std::to_string(T.Bytes) +
                                                    " bytes) is no whole number of '" + V.getAsString() +
                                                    "', so its next stage would not start on one");
  Affine Lin;
  // A term the algebra cannot expand is some integer: times a multiple of the width, it is one.
  OpaqueAtoms = true;
  bool Known = linearIndex(To, Lin);
  OpaqueAtoms = false;
  bool Whole = Known && Lin.Constant % To.Width == 0 &&
               llvm::all_of(Lin.Terms, [&](const auto &KV) { return KV.second % To.Width == 0; });
  if (!Whole)
    return Verdict::refuse(Reason::ElementType, Name + " starts at an element whose index is not provably a "
                                                       "multiple of " + std::to_string(To.Width) +
                                                       ": the copy could not be proven aligned");
  if (!editable(To.View))
    return Verdict::refuse(Reason::Macro, Name + " is written in a macro");
  // The register-staged prefetch declares a register of the vector's type as the cast writes it.
  TypeLoc Written = viewTypeLoc(To.View);
  if (Written.isNull() || fileRange(Ctx, Written.getSourceRange()).isInvalid())
    return Verdict::refuse(Reason::ElementType, Name + " names its pointer type other than as 'V *' in plain text");
  return {};
}

/// The sizes of a tile's dimensions, outermost first.
std::vector<uint64_t> LoopChecker::tileExtents(const VarDecl *Tile) const {
  std::vector<uint64_t> Extents;
  for (QualType Ty = Tile->getType(); const ConstantArrayType *A = Ctx.getAsConstantArrayType(Ty);
       Ty = A->getElementType())
    Extents.push_back(A->getSize().getZExtValue());
  return Extents;
}

/// The element index a target starts at, counted in elements from the tile's first: its
/// subscripts times the sizes of the dimensions inside them, and the vector's times its width.
bool LoopChecker::linearIndex(const TileTarget &To, Affine &Lin) {
  const std::vector<uint64_t> Extents = tileExtents(To.Tile);
  Lin = Affine();
  for (size_t D = 0; D < To.Indices.size(); ++D) {
    Affine A;
    if (!affine(To.Indices[D], A))
      return false;
    int64_t Stride = 1;
    for (size_t K = D + 1; K < Extents.size(); ++K)
      Stride *= static_cast<int64_t>(Extents[K]);
    Lin.add(A, Stride);
  }
  if (To.VectorIndex) {
    Affine A;
    if (!affine(To.VectorIndex, A))
      return false;
    Lin.add(A, To.Width);
  }
  return true;
}

Verdict LoopChecker::tileOfLValue(const Expr *E, const VarDecl *&TileVar,
                                  std::vector<const Expr *> &Indices) {
  E = E->IgnoreParens();
  while (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E)) {
    Indices.insert(Indices.begin(), ASE->getIdx());
    const auto *ICE = dyn_cast<ImplicitCastExpr>(ASE->getBase()->IgnoreParens());
    // `p[i]` of a pointer that views dynamic shared memory: an element of that tile.
    if (ICE && ICE->getCastKind() == CK_LValueToRValue && Indices.size() == 1 &&
        isa<DeclRefExpr>(ICE->getSubExpr()->IgnoreParens()))
      if (const VarDecl *View = varOf(ICE->getSubExpr()); View && dynamicView(View)) {
        TileVar = View;
        return {};
      }
    if (!ICE || ICE->getCastKind() != CK_ArrayToPointerDecay)
      return storeThroughPointer(ASE->getBase(), text(ASE->getBase()));
    E = ICE->getSubExpr()->IgnoreParens();
  }
  const VarDecl *V = varOf(E);
  if (!V || !isSharedVar(V))
    return Verdict::refuse(Reason::LoadPhase, "stores into '" + text(E) + "', which is not a tile");
  TileVar = V;
  return {};
}


/// The rewrite spells the element type (Text, as TL writes it) where it declares registers and
/// sizes copies, inside the function: a name of it that the function also declares (`const double
/// real` beside `typedef float real`) may mean something else there.
Verdict LoopChecker::elementTypeNames(const VarDecl *V, TypeLoc TL, const std::string &Text) {
  struct Referenced : RecursiveASTVisitor<Referenced> {
    std::set<const NamedDecl *> Decls;
    bool VisitTypedefTypeLoc(TypedefTypeLoc L) { return Decls.insert(L.getDecl()), true; }
    bool VisitTagTypeLoc(TagTypeLoc L) { return Decls.insert(L.getDecl()), true; }
    bool VisitTemplateTypeParmTypeLoc(TemplateTypeParmTypeLoc L) { return Decls.insert(L.getDecl()), true; }
  } R;
  R.TraverseTypeLoc(TL);
  struct Declared : RecursiveASTVisitor<Declared> {
    const FunctionDecl *F;
    const std::set<const NamedDecl *> *Keep;
    std::set<std::string> Names; ///< declared in the function, other than what the type names
    bool shouldVisitLambdaBody() const { return true; }
    bool VisitNamedDecl(NamedDecl *D) {
      if (D != F && D->getIdentifier() && !Keep->count(D) &&
          !Keep->count(dyn_cast<NamedDecl>(D->getCanonicalDecl())))
        Names.insert(D->getName().str());
      return true;
    }
  } D;
  D.F = M.Function;
  D.Keep = &R.Decls;
  D.TraverseDecl(const_cast<FunctionDecl *>(M.Function));
  Lexer Raw(SourceLocation(), Ctx.getLangOpts(), Text.data(), Text.data(),
            Text.data() + Text.size());
  Token Tok;
  while (!Raw.LexFromRawLexer(Tok) || Tok.isNot(tok::eof)) {
    if (Tok.is(tok::raw_identifier) && D.Names.count(Tok.getRawIdentifier().str()) &&
        Tok.getRawIdentifier() != V->getName())
      return Verdict::refuse(Reason::Unsupported,
                             "the element type of " + quoted(V) + " ('" + Text +
                                 "') names '" + Tok.getRawIdentifier().str() +
                                 "', which the function also declares");
    if (Tok.is(tok::eof))
      break;
  }
  return {};
}

Verdict LoopChecker::addTile(const VarDecl *V, const DeclStmt *InBody) {
  if (TileIndex.count(V))
    return {};
  Tile T;
  T.Var = V;
  T.DeclaredInBody = InBody;
  // A tile in dynamic shared memory: `extern __shared__ float s[];`, or a pointer that views it.
  // Its size is each launch's: no stages (Tile::Dynamic), the register-staged prefetch alone.
  T.Dynamic = isDynamicTile(V);
  if (T.Dynamic && InBody)
    return Verdict::refuse(Reason::TileDeclaration, quoted(V) + ", dynamic shared memory, is declared in the loop");
  if (!T.Dynamic && isSharedVar(V) && V->hasExternalStorage())
    return Verdict::refuse(Reason::TileDeclaration, dynamicSharedWhy(V));
  if (!T.Dynamic && !V->isLocalVarDeclOrParm() && !V->isStaticLocal())
    return Verdict::refuse(Reason::TileDeclaration, quoted(V) + " is declared outside the function");
  if (!T.Dynamic && (V->hasExternalStorage() || !Ctx.getAsConstantArrayType(V->getType())))
    return Verdict::refuse(Reason::TileDeclaration,
                           V->hasExternalStorage() ? dynamicSharedWhy(V)
                                                   : quoted(V) + " is not a statically sized array");
  if (V->getLocation().isMacroID())
    return Verdict::refuse(Reason::Macro, quoted(V) + " is declared inside a macro");
  QualType Elem = V->getType()->isPointerType() ? V->getType()->getPointeeType() : V->getType();
  while (const auto *AT = Ctx.getAsArrayType(Elem))
    Elem = AT->getElementType();
  T.ElementType = Elem;
  if (Elem->isDependentType() || Elem->isIncompleteType())
    return Verdict::refuse(Reason::ElementType, "the element type of " + quoted(V) + " is unknown");
  uint64_t Size = Ctx.getTypeSizeInChars(Elem).getQuantity();
  uint64_t Align = Ctx.getTypeAlignInChars(Elem).getQuantity();
  if (hasVolatilePart(Ctx, Elem))
    return Verdict::refuse(Reason::ElementType, quoted(V) + " holds '" + Elem.getAsString() +
                                                    "', which has a volatile part");
  if (overloadsAddressOf(Elem, Index.nonMemberAddressOf()))
    return Verdict::refuse(Reason::ElementType,
                           quoted(V) + " holds '" + Elem.getAsString() +
                               "', whose operator& may be the user's (the copies take addresses)");
  if (!Elem.isTriviallyCopyableType(Ctx))
    return Verdict::refuse(Reason::ElementType,
                           quoted(V) + " holds '" + Elem.getAsString() + "' (" + std::to_string(Size) +
                               " bytes, aligned to " + std::to_string(Align) + "), not trivially copyable");
  // An element cp.async cannot move (1 or 2 bytes: `uint8_t`, `__half`) leaves the loop the
  // register-staged prefetch, which loads and stores it as the original did (Plan decides).
  if (T.Dynamic)
    T.AsyncProblem = dynamicStagesWhy(V);
  else if ((Align != 4 && Align != 8 && Align != 16) || Size % Align != 0)
    T.AsyncProblem = quoted(V) + " holds '" + Elem.getAsString() + "' (" + std::to_string(Size) +
                     " bytes, aligned to " + std::to_string(Align) + ")";
  // An element of another size than its alignment (`float3`, a struct of four doubles) moves as
  // copies of its alignment: the copy says so by alignof. In a function template the rewrite runs
  // only in the instantiations analysed (LoopPlan::TemplateGuard), each of which passed here; a
  // member of a class template has no such condition, and its text serves instantiations unseen.
  const auto *Class = dyn_cast<CXXRecordDecl>(M.Function->getDeclContext());
  if (Size != Align && T.AsyncProblem.empty() &&
      (M.Function->isDependentContext() || (Class && Class->getTemplateInstantiationPattern())))
    return Verdict::refuse(Reason::ElementType,
                           quoted(V) + " holds '" + Elem.getAsString() + "' (" + std::to_string(Size) +
                               " bytes, aligned to " + std::to_string(Align) +
                               ") in a template, whose other instantiations may hold another type");
  T.Bytes = T.Dynamic ? 0 : Ctx.getTypeSizeInChars(V->getType()).getQuantity();
  // The element type as written, so templated tiles keep their parameter names.
  TypeLoc TL = elementTypeLoc(V);
  if (fileRange(Ctx, TL.getSourceRange()).isInvalid())
    return Verdict::refuse(Reason::Macro, "the element type of " + quoted(V) + " is in a macro");
  // The rewrite spells the element type as written and sizes each copy by it: a name that is
  // itself an array (`typedef float Quad[4]; __shared__ Quad s[N]`) would size it as four.
  // A pointer that views a tile must write its element type where it is declared (not `auto *p`,
  // not a typedef of the pointer): the registers are declared in it.
  if (!Ctx.hasSameUnqualifiedType(TL.getType(), Elem))
    return Verdict::refuse(Reason::ElementType,
                           "the element type of " + quoted(V) + " is written as '" + TL.getType().getAsString() +
                               (V->getType()->isPointerType() ? "', not as the type it points to, '"
                                                              : "', an array of '") +
                               Elem.getAsString() + "'");
  T.ElementTypeText = sourceText(Ctx, TL.getSourceRange());
  if (Verdict N = elementTypeNames(V, TL, T.ElementTypeText); !N.ok())
    return N;
  TileIndex[V] = M.Tiles.size();
  M.Tiles.push_back(T);
  return {};
}

/// What stands between a store's value V and the element Plain it copies: "" where only
/// parentheses, lvalue-to-rvalue and no-op casts do (and, with Temporaries, a materialized
/// temporary), else what the store does to the element.
static std::string conversionBetween(const Expr *V, const Expr *Plain, bool Temporaries) {
  for (const Expr *E = skipCleanups(V); E != Plain;) {
    if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E)) {
      if (ICE->getCastKind() != CK_LValueToRValue && ICE->getCastKind() != CK_NoOp)
        return "converts its value";
      E = ICE->getSubExpr();
    } else if (const auto *PE = dyn_cast<ParenExpr>(E)) {
      E = PE->getSubExpr();
    } else if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E); MTE && Temporaries) {
      E = MTE->getSubExpr();
    } else {
      return "is not a plain read";
    }
  }
  return "";
}

Verdict LoopChecker::checkValue(const Stmt *S, const Expr *Dst, const Expr *V, size_t TileIdx,
                                const TileTarget &To) {
  const Tile *T = &M.Tiles[TileIdx];
  TileStore Store;
  Store.Statement = S;
  Store.Dst = Dst;
  Store.TileIdx = TileIdx;
  Store.View = To.View;
  Store.Width = To.Width;
  // What one store writes: an element of the tile, or the vector that views it.
  const QualType Stored = To.View ? To.View->getType()->getPointeeType() : T->ElementType;
  const Expr *Plain = stripNoOps(V);
  if (const Expr *Read = readOnlyLoadOf(SM, Plain))
    V = Plain = Read; // the copy reads A[i] itself
  if (std::optional<HelperCopy> H = helperLoad(Plain))
    return checkHelperRead(S, Dst, V, *H, Stored, Store);
  if (Verdict R = checkValueLocalRead(S, V, Plain, Store); !R.ok() || Store.Via)
    return R;
  bool IsRead = isa<ArraySubscriptExpr>(Plain) ||
                (isa<UnaryOperator>(Plain) && cast<UnaryOperator>(Plain)->getOpcode() == UO_Deref);
  if (!IsRead) {
    // Anything else must be a fill value: no memory read, nothing that changes.
    DepResult D = classify(V);
    if (D.ReadsUnchanged) // a value the pipeline would compute where it copies
      return Verdict::refuse(Reason::LoadComputes, "'" + text(V) + "' is not one plain read of global memory "
                                                   "but a value taken from memory before the store");
    if (D.D == Dep::Bad) {
      if (D.ReadsMemory)
        return Verdict::refuse(Reason::LoadComputes,
                               "'" + text(V) + "' computes on what it reads before storing it");
      return Verdict::refuse(Reason::AddressNotInvariant, "the value stored " + D.Why);
    }
    Store.Fill = V;
    M.Stores.push_back(Store);
    return {};
  }
  // A read: it must be exactly one element of the tile's type, with no conversion on the way.
  QualType ReadT = Plain->getType().getUnqualifiedType().getCanonicalType();
  if (ReadT != Stored.getUnqualifiedType().getCanonicalType())
    return Verdict::refuse(Reason::LoadComputes, "'" + text(V) + "' reads '" +
                                                     Plain->getType().getAsString() + "' into " +
                                                     (To.View ? "a vector" : "a tile") + " of '" +
                                                     Stored.getAsString() + "'");
  if (std::string Why = conversionBetween(V, Plain, /*Temporaries=*/true); !Why.empty())
    return Verdict::refuse(Reason::LoadComputes, "'" + text(V) + "' " + Why);
  if (Verdict R = checkGlobalRead(S, Plain); !R.ok())
    return R;
  if (!editable(Dst))
    return Verdict::refuse(Reason::Macro, "the copy '" + text(S) + "' is written in a macro");
  Store.Src = V;
  M.Stores.push_back(Store);
  return {};
}

/// A store whose value is a local of the copy phase set from one read of global memory, or a
/// member of one (`s[..] = v.x`, after `float4 v = A4[i];`), is a copy of that element of the
/// read: the pipeline copies `(A4[i]).x` where the store stands. Sets Store.Via when V is one;
/// refuses when V reads such a local in any other way.
Verdict LoopChecker::checkValueLocalRead(const Stmt *S, const Expr *V, const Expr *Plain,
                                         TileStore &Store) {
  const Expr *Base = Plain;
  while (const auto *ME = dyn_cast<MemberExpr>(Base)) {
    const auto *FD = dyn_cast<FieldDecl>(ME->getMemberDecl());
    if (ME->isArrow() || !FD || FD->isBitField())
      return {};
    Base = ME->getBase()->IgnoreParens();
  }
  const auto *DRE = dyn_cast<DeclRefExpr>(Base);
  const auto *Local = DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
  auto It = Local ? ValueLocals.find(Local) : ValueLocals.end();
  if (It == ValueLocals.end())
    return {};
  const Tile &T = M.Tiles[Store.TileIdx];
  const QualType Stored = Store.View ? Store.View->getType()->getPointeeType() : T.ElementType;
  if (Plain->getType().getUnqualifiedType().getCanonicalType() != Stored.getUnqualifiedType().getCanonicalType())
    return Verdict::refuse(Reason::LoadComputes, "'" + text(V) + "' reads '" + Plain->getType().getAsString() +
                                                     "' into " + (Store.View ? "a vector" : "a tile") + " of '" +
                                                     Stored.getAsString() + "'");
  if (std::string Why = conversionBetween(V, Plain, /*Temporaries=*/false); !Why.empty())
    return Verdict::refuse(Reason::LoadComputes, "'" + text(V) + "' " + Why);
  if (!editable(Store.Dst) || !editable(Plain))
    return Verdict::refuse(Reason::Macro, "the copy '" + text(S) + "' is written in a macro");
  // The read's text moves to the store: every name it looks up must find there what it found at
  // the local's declaration. A declaration of one of its names in between could take it.
  unsigned From = SM.getFileOffset(SM.getExpansionLoc(ValueDefAt.lookup(Local)->getEndLoc())),
           To = SM.getFileOffset(SM.getExpansionLoc(S->getBeginLoc()));
  for (const NameUse &U : namesIn(It->second))
    for (const auto &[Name, At] : CopyPhaseDecls)
      if (Name == U.Decl->getDeclName().getAsString() && From < At && At < To)
        return Verdict::refuse(Reason::NameBinding,
                               "the copy reads '" + text(It->second) + "' where '" + text(S) +
                                   "' stands, where '" + Name + "' is another declaration");
  ValueUses.insert(DRE);
  Store.Via = Local;
  Store.Read = It->second;
  Store.Src = V;
  M.Stores.push_back(Store);
  return {};
}

/// Plain, one element read through a pointer (`P[i]` or `*P`) for the copy S: a read the copies
/// may issue ahead, of global memory, at an address the iteration alone moves. Its pointers join
/// the sources that the loop's stores are checked against.
Verdict LoopChecker::checkGlobalRead(const Stmt *S, const Expr *Plain) {
  const Expr *Ptr = nullptr, *Idx = nullptr;
  if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(Plain)) {
    Ptr = ASE->getBase();
    Idx = ASE->getIdx();
    if (!Ptr->getType()->isPointerType())
      return Verdict::refuse(Reason::LoadSource, "'" + text(Plain) + "' is not read through a pointer");
  } else {
    Ptr = cast<UnaryOperator>(Plain)->getSubExpr();
  }
  return checkGlobalAddress(S, Plain, Ptr, Idx);
}

/// The read Plain of global memory at Ptr, or at Ptr[Idx] where Idx is given.
Verdict LoopChecker::checkGlobalAddress(const Stmt *S, const Expr *Plain, const Expr *Ptr, const Expr *Idx) {
  // A volatile source is memory someone else changes, read where and when the code says: an
  // asynchronous copy issued early reads it at another time.
  if (hasVolatilePart(Ctx, Plain->getType()))
    return Verdict::refuse(Reason::LoadSource, "'" + text(Plain) + "' is a volatile read");
  // The copies take the source's address (`&A[j]`): a user's operator& would be called instead.
  if (overloadsAddressOf(Plain->getType(), Index.nonMemberAddressOf()))
    return Verdict::refuse(Reason::LoadSource, "'" + text(Plain) + "' has a type whose operator& may be the user's");
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(Ptr->IgnoreParens());
      ICE && ICE->getCastKind() == CK_ArrayToPointerDecay)
    return Verdict::refuse(Reason::LoadSource,
                           "'" + text(Plain) + "' reads an array, not global memory");
  DepResult D = classify(Ptr);
  if (Idx)
    D.join(classify(Idx));
  if (D.D == Dep::Bad)
    return Verdict::refuse(Reason::AddressNotInvariant, "the address of '" + text(Plain) + "' " + D.Why);
  const VarDecl *Base = pointerBase(Ptr);
  if (!Base || !isGlobalPointer(Base, 0))
    return Verdict::refuse(Reason::LoadSource,
                           "cannot prove that '" + text(Ptr) + "' points to global memory");
  if (!editable(Plain))
    return Verdict::refuse(Reason::Macro, "the copy '" + text(S) + "' is written in a macro");
  RootSet Roots = Effects.rootsOf(M.Function, Ptr);
  for (const VarDecl *Root : Roots.Roots)
    if (!llvm::is_contained(SourceRoots.Roots, Root) && !llvm::is_contained(M.SourcePointers, Root->getNameAsString()))
      M.SourcePointers.push_back(Root->getNameAsString());
  if (Roots.Unknown && !SourceRoots.Unknown)
    M.SourcePointers.push_back(text(Ptr));
  SourceRoots.join(Roots);
  return {};
}

const VarDecl *LoopChecker::pointerBase(const Expr *E) {
  E = skipCleanups(E)->IgnoreParens();
  if (const auto *CE = dyn_cast<CastExpr>(E))
    if (CE->getCastKind() != CK_ArrayToPointerDecay && CE->getCastKind() != CK_LValueToRValue)
      return pointerBase(CE->getSubExpr());
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E); ICE && ICE->getCastKind() == CK_LValueToRValue)
    return pointerBase(ICE->getSubExpr());
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->getOpcode() == BO_Add || BO->getOpcode() == BO_Sub) {
      if (BO->getLHS()->getType()->isPointerType())
        return pointerBase(BO->getLHS());
      if (BO->getRHS()->getType()->isPointerType())
        return pointerBase(BO->getRHS());
    }
    return nullptr;
  }
  if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->getOpcode() == UO_AddrOf) {
    const Expr *Sub = UO->getSubExpr()->IgnoreParens();
    if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(Sub))
      return pointerBase(ASE->getBase());
    return nullptr;
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()); V && V->getType()->isPointerType())
      return V;
  return nullptr;
}

bool LoopChecker::isGlobalPointer(const VarDecl *V, unsigned Depth) {
  if (!V || Depth > 6 || !V->getType()->isPointerType() || isSharedVar(V))
    return false;
  if (const auto *P = dyn_cast<ParmVarDecl>(V)) {
    const auto *F = dyn_cast<FunctionDecl>(P->getDeclContext());
    if (!F)
      return false;
    // A parameter the function assigns, or whose storage escapes, may point anywhere by the loop;
    // one it only steps points into the object it was given.
    if (Effects.localFacts(F).Escaped.contains(P) ||
        (Effects.localFacts(F).Mutated.contains(P) && !changedOnlyBySteps(F->getBody(), P)))
      return false;
    if (F->hasAttr<CUDAGlobalAttr>())
      return true;
    // A __device__ function: every caller in this file must pass global memory.
    auto Calls = Index.callersOf(F);
    if (Calls.empty())
      return false;
    unsigned Pos = P->getFunctionScopeIndex();
    // `obj(a, b)` and `obj + a` call a member with the object as their first argument.
    if (const auto *MD = dyn_cast<CXXMethodDecl>(F); MD && MD->isInstance())
      for (const CallExpr *CE : Calls)
        if (isa<CXXOperatorCallExpr>(CE))
          return llvm::all_of(Calls, [&](const CallExpr *C) {
            unsigned At = Pos + (isa<CXXOperatorCallExpr>(C) ? 1 : 0);
            return At < C->getNumArgs() && isGlobalPointer(pointerBase(C->getArg(At)), Depth + 1);
          });
    for (const CallExpr *CE : Calls) {
      if (Pos >= CE->getNumArgs())
        return false;
      if (!isGlobalPointer(pointerBase(CE->getArg(Pos)), Depth + 1))
        return false;
    }
    return true;
  }
  // A local the copy phase sets (checkSliceAssignment): global memory if every value it is set to is.
  if (auto It = SliceLocalSets.find(V); It != SliceLocalSets.end())
    return llvm::all_of(It->second.Values, [&](const Expr *E) { return isGlobalPointer(pointerBase(E), Depth + 1); });
  if (!V->hasLocalStorage() || !V->getInit())
    return false;
  // A local pointer set once from global memory.
  const auto *F = dyn_cast<FunctionDecl>(V->getDeclContext());
  if (!F)
    return false;
  if (Effects.localFacts(F).Escaped.contains(V) ||
      (Effects.localFacts(F).Mutated.contains(V) && !changedOnlyBySteps(F->getBody(), V)))
    return false;
  return isGlobalPointer(pointerBase(V->getInit()), Depth + 1);
}

} // namespace tilepipe::check
