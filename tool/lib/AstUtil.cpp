#include "tilepipe/AstUtil.h"
#include "tilepipe/Runtime.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/FileManager.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Path.h"

using namespace clang;

namespace tilepipe {

QualType innermostType(QualType T) {
  for (unsigned Guard = 0; Guard < 16 && !T.isNull(); ++Guard) {
    T = T.getNonReferenceType().getCanonicalType();
    if (const auto *P = dyn_cast<PointerType>(T.getTypePtr()))
      T = P->getPointeeType();
    else if (const auto *A = dyn_cast<ArrayType>(T.getTypePtr()))
      T = A->getElementType();
    else
      break;
  }
  return T;
}

const VarDecl *varOf(const Expr *E) {
  E = E->IgnoreParenImpCasts();
  if (const auto *OVE = dyn_cast<OpaqueValueExpr>(E))
    E = OVE->getSourceExpr()->IgnoreParenImpCasts();
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    return dyn_cast<VarDecl>(DRE->getDecl());
  return nullptr;
}

bool isSharedVar(const VarDecl *V) { return V && V->hasAttr<CUDASharedAttr>(); }

bool isCudaBuiltinVar(const VarDecl *V) {
  if (const auto *RD = V->getType()->getAsCXXRecordDecl())
    return RD->getName().starts_with("__cuda_builtin_");
  return false;
}

const FunctionDecl *patternOf(const FunctionDecl *FD) {
  const FunctionDecl *P = FD->getTemplateInstantiationPattern();
  return P ? P : FD;
}

bool hasVolatilePart(const ASTContext &Ctx, QualType T) {
  if (T.isVolatileQualified())
    return true;
  if (const ArrayType *AT = Ctx.getAsArrayType(T))
    return hasVolatilePart(Ctx, AT->getElementType());
  const auto *RD = T->getAsCXXRecordDecl();
  if (!RD || !RD->hasDefinition())
    return T->isRecordType(); // a C struct, or one not defined: take it as having one
  RD = RD->getDefinition();
  for (const FieldDecl *FD : RD->fields())
    if (hasVolatilePart(Ctx, FD->getType()))
      return true;
  for (const CXXBaseSpecifier &B : RD->bases())
    if (hasVolatilePart(Ctx, B.getType()))
      return true;
  return false;
}

std::vector<const FunctionDecl *> nonMemberAddressOfs(const ASTContext &Ctx) {
  struct Finder : RecursiveASTVisitor<Finder> {
    std::vector<const FunctionDecl *> Found;
    bool VisitFunctionDecl(FunctionDecl *FD) {
      if (FD->getOverloadedOperator() == OO_Amp && !isa<CXXMethodDecl>(FD) && FD->getNumParams() == 1)
        Found.push_back(FD);
      return true;
    }
  } F;
  F.TraverseDecl(const_cast<ASTContext &>(Ctx).getTranslationUnitDecl());
  return std::move(F.Found);
}

bool overloadsAddressOf(QualType T, llvm::ArrayRef<const FunctionDecl *> NonMember) {
  const auto *RD = T->getAsCXXRecordDecl();
  if (!RD)
    return T->isRecordType();
  if (!RD->hasDefinition())
    return true;
  auto Declares = [](const CXXRecordDecl *R) {
    for (const Decl *D : R->decls()) {
      const auto *ND = dyn_cast<NamedDecl>(D);
      if (ND && ND->getDeclName().getCXXOverloadedOperator() == OO_Amp)
        return true;
    }
    return false;
  };
  bool Found = Declares(RD->getDefinition());
  RD->getDefinition()->forallBases([&](const CXXRecordDecl *B) { return !(Found |= Declares(B)); });
  if (Found)
    return true;
  // A non-member operator& with one parameter, anywhere in the translation unit (found by
  // argument-dependent lookup from any namespace, so a search by scope would miss some), that an
  // object of T may be passed to: a template's, T's or a base's, a class's that T converts to
  // (a converting constructor), or any other where T has a conversion function.
  const CXXRecordDecl *Def = RD->getDefinition();
  const bool Converts = !Def->getVisibleConversionFunctions().empty();
  auto Applies = [&](QualType P) {
    P = P.getNonReferenceType().getUnqualifiedType();
    if (P->isDependentType())
      return true;
    const CXXRecordDecl *PD = P->getAsCXXRecordDecl();
    if (!PD)
      return Converts;
    PD = PD->getDefinition();
    if (!PD || PD->getCanonicalDecl() == Def->getCanonicalDecl() || Def->isDerivedFrom(PD))
      return true;
    for (const CXXConstructorDecl *C : PD->ctors())
      if (C->isConvertingConstructor(/*AllowExplicit=*/false) && !C->isCopyOrMoveConstructor())
        return true;
    return Converts;
  };
  return llvm::any_of(NonMember, [&](const FunctionDecl *FD) { return Applies(FD->getParamDecl(0)->getType()); });
}

bool addressTaken(ASTContext &Ctx, const FunctionDecl *FD) {
  struct Finder : RecursiveASTVisitor<Finder> {
    const FunctionDecl *F;
    llvm::DenseSet<const Expr *> Callees;
    bool Found = false;
    bool shouldVisitTemplateInstantiations() const { return true; }
    bool shouldVisitImplicitCode() const { return true; }
    bool VisitCallExpr(CallExpr *CE) {
      if (const Expr *C = CE->getCallee())
        Callees.insert(C->IgnoreParenImpCasts());
      return true;
    }
    bool VisitDeclRefExpr(DeclRefExpr *E) {
      if (const auto *D = dyn_cast<FunctionDecl>(E->getDecl());
          D && D->getCanonicalDecl() == F->getCanonicalDecl() && !Callees.contains(E))
        Found = true;
      return !Found;
    }
    bool VisitMemberExpr(MemberExpr *E) {
      if (const auto *D = dyn_cast<FunctionDecl>(E->getMemberDecl());
          D && D->getCanonicalDecl() == F->getCanonicalDecl() && !Callees.contains(E))
        Found = true;
      return !Found;
    }
  } Fi;
  Fi.F = FD;
  Fi.TraverseAST(Ctx);
  return Fi.Found;
}

bool inUserFile(const SourceManager &SM, SourceLocation L) {
  L = SM.getExpansionLoc(L);
  return L.isValid() && !SM.isInSystemHeader(L) && SM.getFileEntryRefForID(SM.getFileID(L));
}

Place placeOf(const SourceManager &SM, llvm::StringRef MainName, SourceLocation L) {
  L = SM.getExpansionLoc(L);
  PresumedLoc P = SM.getPresumedLoc(L);
  return {SM.getFileID(L) == SM.getMainFileID() ? MainName.str() : std::string(P.getFilename()), P.getLine(),
          P.getColumn()};
}

bool isToolkitRuntime(const SourceManager &SM, const FunctionDecl *FD) {
  if (!FD)
    return false;
  if (FD->getBuiltinID())
    return true;
  SourceLocation L = SM.getExpansionLoc(FD->getLocation());
  if (!SM.isInSystemHeader(L))
    return false;
  OptionalFileEntryRef File = SM.getFileEntryRefForID(SM.getFileID(L));
  if (!File)
    return false;
  llvm::StringRef Path = File->getName();
  llvm::StringRef Base = llvm::sys::path::filename(Path);
  if (Base.starts_with("__clang_cuda_"))
    return true;
  // What nvcc declares that Clang's headers lack, declared for the parse alone (Driver.cpp's
  // nvccPrelude: host min/max, the cache-operator intrinsics): the toolkit's as much.
  if (Path == (virtualRuntimeDir() + "/" + nvccPreludeName()).str())
    return true;
  // CUDA's include directory (the one that holds cuda_runtime_api.h), its crt/ and
  // cooperative_groups/: sm_*_intrinsics, sm_*_atomic_functions, the device and math function
  // headers, the half, bfloat and fp8 types, cooperative groups.
  llvm::StringRef Dir = llvm::sys::path::parent_path(Path);
  llvm::StringRef DirName = llvm::sys::path::filename(Dir);
  if (DirName == "crt" || DirName == "cooperative_groups" || DirName == "details")
    Dir = llvm::sys::path::parent_path(DirName == "details" ? llvm::sys::path::parent_path(Dir) : Dir);
  if (SM.getFileManager().getOptionalFileRef((Dir + "/cuda_runtime_api.h").str()) &&
      (DirName == "crt" || DirName == "cooperative_groups" || DirName == "details" ||
       Base == "cooperative_groups.h" || Base.starts_with("sm_") || Base.starts_with("device_") ||
       Base.starts_with("cuda_fp") || Base.starts_with("cuda_bf16") ||
       Base.starts_with("math_functions") || Base.starts_with("vector_functions") ||
       Base.starts_with("texture_") || Base.starts_with("surface_")))
    return true;
  return Base == "cmath" || Base == "math.h" || Base == "std_abs.h" || Base == "mathcalls.h" ||
         Base == "cstdlib" || Base == "stdlib.h";
}

bool isBuiltinIndexRead(const Expr *E, std::string *Name) {
  E = E->IgnoreParenImpCasts();
  if (const auto *POE = dyn_cast<PseudoObjectExpr>(E))
    E = POE->getSyntacticForm()->IgnoreParenImpCasts();
  const Expr *Base = nullptr;
  StringRef Member;
  if (const auto *MP = dyn_cast<MSPropertyRefExpr>(E)) {
    Base = MP->getBaseExpr();
    Member = MP->getPropertyDecl()->getName();
  } else if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    Base = ME->getBase();
    Member = ME->getMemberDecl()->getName();
  }
  if (Base)
    if (const VarDecl *V = varOf(Base); V && isCudaBuiltinVar(V)) {
      if (Name)
        *Name = V->getName().str() + "." + Member.str();
      return true;
    }
  if (const auto *CE = dyn_cast<CallExpr>(E))
    if (const FunctionDecl *FD = CE->getDirectCallee();
        FD && FD->getIdentifier() && FD->getName().starts_with("__fetch_builtin_")) {
      if (Name)
        *Name = FD->getName().str();
      return true;
    }
  return false;
}

bool isReferenceMember(const MemberExpr *ME) {
  const auto *FD = dyn_cast<FieldDecl>(ME->getMemberDecl());
  return FD && FD->getType()->isReferenceType();
}

const Expr *skipCleanups(const Expr *E) {
  if (const auto *EWC = dyn_cast_or_null<ExprWithCleanups>(E))
    return EWC->getSubExpr();
  return E;
}

const Expr *stripNoOps(const Expr *E) {
  while (true) {
    E = skipCleanups(E)->IgnoreParens();
    if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E);
        ICE && (ICE->getCastKind() == CK_LValueToRValue || ICE->getCastKind() == CK_NoOp)) {
      E = ICE->getSubExpr();
      continue;
    }
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E)) {
      E = MTE->getSubExpr();
      continue;
    }
    return E;
  }
}

const Expr *bareExpr(const Stmt *S) {
  const auto *E = dyn_cast_or_null<Expr>(S);
  return E ? skipCleanups(E)->IgnoreParenImpCasts() : nullptr;
}

bool splitAssignment(const Stmt *S, const Expr *&LHS, const Expr *&RHS) {
  const auto *E = dyn_cast_or_null<Expr>(S);
  if (!E)
    return false;
  E = skipCleanups(E)->IgnoreParens();
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Assign) {
    LHS = BO->getLHS();
    RHS = BO->getRHS();
    return true;
  }
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E);
      OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2) {
    const auto *MD = dyn_cast_or_null<CXXMethodDecl>(OC->getDirectCallee());
    if (!MD || !MD->isTrivial())
      return false;
    LHS = OC->getArg(0);
    RHS = OC->getArg(1);
    return true;
  }
  return false;
}

CharSourceRange fileRange(const ASTContext &Ctx, SourceRange R) {
  return Lexer::makeFileCharRange(CharSourceRange::getTokenRange(R), Ctx.getSourceManager(),
                                  Ctx.getLangOpts());
}

std::string sourceText(const ASTContext &Ctx, SourceRange R) {
  CharSourceRange CR = fileRange(Ctx, R);
  if (CR.isInvalid())
    return "";
  return Lexer::getSourceText(CR, Ctx.getSourceManager(), Ctx.getLangOpts()).str();
}

namespace {
struct PlaceDependentWalker : RecursiveASTVisitor<PlaceDependentWalker> {
  const ASTContext &Ctx;
  std::string Found, Via;
  llvm::SmallPtrSet<const Decl *, 8> Seen; // default arguments and initializers entered
  explicit PlaceDependentWalker(const ASTContext &Ctx) : Ctx(Ctx) {}
  // An aggregate's `{}` holds its default member initializers in the semantic form only.
  bool shouldVisitImplicitCode() const { return true; }
  bool VisitPredefinedExpr(PredefinedExpr *E) {
    Found = "'" + PredefinedExpr::getIdentKindName(E->getIdentKind()).str() +
            "', which names the function its text is in";
    return false;
  }
  bool VisitSourceLocExpr(SourceLocExpr *E) {
    Found = "'" + std::string(E->getBuiltinStr()) + "()', which takes the place of its text";
    return false;
  }
  // A default argument and a default member initializer are evaluated at the call or the
  // initialization, and a source location in them takes that place.
  bool VisitCXXDefaultArgExpr(CXXDefaultArgExpr *E) {
    return enter(E->getParam(), E->getExpr(), "the default argument of " + quoted(E->getParam()));
  }
  bool VisitCXXDefaultInitExpr(CXXDefaultInitExpr *E) {
    return enter(E->getField(), E->getExpr(), "the default initializer of " + quoted(E->getField()));
  }
  // A constructor the compiler defines runs the default member initializers as if at its first
  // use (Clang defines it there): those of the class, its bases and its members of class type.
  bool VisitCXXConstructExpr(CXXConstructExpr *E) {
    const CXXConstructorDecl *Ctor = E->getConstructor();
    return !Ctor || Ctor->isUserProvided() || initializers(Ctor->getParent());
  }
  bool initializers(const CXXRecordDecl *RD) {
    if (!RD || !RD->hasDefinition() || !Seen.insert(RD).second)
      return true;
    RD = RD->getDefinition();
    for (const CXXBaseSpecifier &B : RD->bases())
      if (!initializers(B.getType()->getAsCXXRecordDecl()))
        return false;
    for (const FieldDecl *FD : RD->fields()) {
      if (FD->hasInClassInitializer() &&
          !enter(FD, FD->getInClassInitializer(), "the default initializer of " + quoted(FD)))
        return false;
      if (!initializers(Ctx.getBaseElementType(FD->getType())->getAsCXXRecordDecl()))
        return false;
    }
    return true;
  }
  bool enter(const Decl *D, Expr *E, const std::string &What) {
    if (!E || !Seen.insert(D).second)
      return true;
    if (!TraverseStmt(E)) {
      if (Via.empty())
        Via = What;
      return false;
    }
    return true;
  }
};
} // namespace

std::string placeDependentExpr(const ASTContext &Ctx, const Stmt *S) {
  PlaceDependentWalker W(Ctx);
  W.TraverseStmt(const_cast<Stmt *>(S));
  if (W.Found.empty())
    return "";
  return "the loop uses " + W.Found + (W.Via.empty() ? "" : " (in " + W.Via + ")") +
         ": its value changes where the rewrite moves the text into a lambda or onto other lines";
}

std::string quoted(const NamedDecl *D) { return "'" + D->getNameAsString() + "'"; }

namespace {
struct NameUses : RecursiveASTVisitor<NameUses> {
  std::vector<NameUse> Out;
  bool shouldVisitLambdaBody() const { return true; }
  void add(const NamedDecl *D, const NamedDecl *Found, bool Qualified, SourceLocation Loc) {
    if (!D || isa<TemplateTypeParmDecl, NonTypeTemplateParmDecl, TemplateTemplateParmDecl>(D))
      return;
    Out.push_back({D, Found ? Found : D, Qualified, Loc});
  }
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    add(E->getDecl(), E->getFoundDecl(), E->hasQualifier(), E->getLocation());
    return true;
  }
  bool VisitTypedefTypeLoc(TypedefTypeLoc TL) {
    add(TL.getDecl(), nullptr, bool(TL.getQualifierLoc()), TL.getNameLoc());
    return true;
  }
  bool VisitUsingTypeLoc(UsingTypeLoc TL) {
    const UsingShadowDecl *Shadow = TL.getDecl();
    add(Shadow->getTargetDecl(), Shadow, bool(TL.getQualifierLoc()), TL.getNameLoc());
    return true;
  }
  bool VisitTagTypeLoc(TagTypeLoc TL) {
    // A definition in the type (`struct S { ... } x`) declares the name rather than looks it up.
    if (!TL.isDefinition())
      add(TL.getDecl(), nullptr, bool(TL.getQualifierLoc()), TL.getNameLoc());
    return true;
  }
  bool VisitTemplateSpecializationTypeLoc(TemplateSpecializationTypeLoc TL) {
    TemplateName N = TL.getTypePtr()->getTemplateName();
    add(N.getAsTemplateDecl(), N.getAsUsingShadowDecl(), bool(TL.getQualifierLoc()), TL.getTemplateNameLoc());
    return true;
  }
};
} // namespace

std::vector<NameUse> namesIn(const Stmt *S) {
  NameUses V;
  V.TraverseStmt(const_cast<Stmt *>(S));
  return V.Out;
}

bool onlyUnrollHints(const AttributedStmt *S) {
  return llvm::all_of(S->getAttrs(), [](const Attr *A) {
    const auto *H = dyn_cast<LoopHintAttr>(A);
    return H && (H->getSemanticSpelling() == LoopHintAttr::Pragma_unroll ||
                 H->getSemanticSpelling() == LoopHintAttr::Pragma_nounroll);
  });
}

TypeLoc elementTypeLoc(const VarDecl *V) {
  TypeLoc TL = V->getTypeSourceInfo()->getTypeLoc().IgnoreParens(); // `float (As)[T]`
  if (auto PTL = TL.getUnqualifiedLoc().getAs<PointerTypeLoc>()) // a pointer that views a tile: `float *const As`
    return PTL.getPointeeLoc().IgnoreParens();
  while (auto ATL = TL.getAs<ArrayTypeLoc>())
    TL = ATL.getElementLoc().IgnoreParens();
  return TL;
}

const DeclStmt *declarationOf(ASTContext &Ctx, const VarDecl *V) {
  for (const DynTypedNode &P : Ctx.getParents(*V))
    if (const auto *DS = P.get<DeclStmt>())
      return DS;
  return nullptr;
}

TypeLoc viewTypeLoc(const ExplicitCastExpr *Cast) {
  const TypeSourceInfo *TSI = Cast->getTypeInfoAsWritten();
  if (!TSI)
    return {};
  auto PTL = TSI->getTypeLoc().IgnoreParens().getAs<PointerTypeLoc>();
  if (!PTL)
    return {};
  return PTL.getPointeeLoc().IgnoreParens().getUnqualifiedLoc();
}

std::vector<NameUse> namesIn(TypeLoc TL) {
  NameUses V;
  V.TraverseTypeLoc(TL);
  return V.Out;
}

VarStep stepOf(const clang::Expr *E) {
  using namespace clang;
  if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->isIncrementDecrementOp())
    return {varOf(UO->getSubExpr()), nullptr, UO->isDecrementOp()};
  if (const auto *CAO = dyn_cast<CompoundAssignOperator>(E);
      CAO && (CAO->getOpcode() == BO_AddAssign || CAO->getOpcode() == BO_SubAssign))
    return {varOf(CAO->getLHS()), CAO->getRHS(), CAO->getOpcode() == BO_SubAssign};
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Assign) {
    const VarDecl *V = varOf(BO->getLHS());
    const auto *Sum = dyn_cast<BinaryOperator>(BO->getRHS()->IgnoreParenImpCasts());
    if (V && Sum && (Sum->getOpcode() == BO_Add || Sum->getOpcode() == BO_Sub)) {
      if (varOf(Sum->getLHS()) == V)
        return {V, Sum->getRHS(), Sum->getOpcode() == BO_Sub};
      if (Sum->getOpcode() == BO_Add && varOf(Sum->getRHS()) == V)
        return {V, Sum->getLHS()};
    }
    // `p = &p[s]` is `p = p + s` of a pointer.
    if (const auto *Addr = dyn_cast<UnaryOperator>(BO->getRHS()->IgnoreParenImpCasts());
        V && V->getType()->isPointerType() && Addr && Addr->getOpcode() == UO_AddrOf)
      if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(Addr->getSubExpr()->IgnoreParens());
          ASE && varOf(ASE->getBase()) == V)
        return {V, ASE->getIdx()};
  }
  return {};
}

bool sameProfile(const clang::ASTContext &Ctx, const clang::Expr *A, const clang::Expr *B) {
  llvm::FoldingSetNodeID X, Y;
  A->Profile(X, Ctx, /*Canonical=*/true);
  B->Profile(Y, Ctx, /*Canonical=*/true);
  return X == Y;
}

bool stepsByInteger(const clang::Expr *E, const clang::VarDecl *V) {
  VarStep S = stepOf(E);
  return S.Var == V && S.By && S.By->IgnoreParenImpCasts()->getType()->isIntegerType();
}

bool changedOnlyBySteps(const clang::Stmt *Body, const clang::VarDecl *V) {
  using namespace clang;
  if (!Body)
    return true;
  if (const auto *BO = dyn_cast<BinaryOperator>(Body); BO && BO->isAssignmentOp() && varOf(BO->getLHS()) == V &&
                                                         !stepsByInteger(BO, V))
    return false;
  for (const Stmt *C : Body->children())
    if (C && !changedOnlyBySteps(C, V))
      return false;
  return true;
}

} // namespace tilepipe
