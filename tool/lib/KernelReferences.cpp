// KernelReferences.h: one traversal of the translation unit for the launch questions of all its
// kernels.
#include "KernelReferences.h"
#include "tilepipe/Check.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/Support/Regex.h"

using namespace clang;

namespace tilepipe {

std::string lineOf(const ASTContext &Ctx, const Stmt *S) {
  const SourceManager &SM = Ctx.getSourceManager();
  return std::to_string(SM.getPresumedLineNumber(SM.getExpansionLoc(S->getBeginLoc())));
}

const Expr *dynamicSharedArgument(const ASTContext &Ctx, const CUDAKernelCallExpr *E) {
  const CallExpr *Config = E->getConfig();
  const Expr *Smem = Config && Config->getNumArgs() > 2 && !isa<CXXDefaultArgExpr>(Config->getArg(2))
                         ? Config->getArg(2)
                         : nullptr;
  Expr::EvalResult R;
  if (!Smem || (!Smem->isValueDependent() && Smem->EvaluateAsInt(R, Ctx) && R.Val.getInt() == 0))
    return nullptr;
  return Smem;
}

bool launchesUnseen(StringRef Name) {
  static const llvm::Regex Api("^cu(da)?(Graph(Exec)?(Kernel)?Node(Get|Set)Params|"
                               "Graph(Add|Exec)(Kernel)?Node|GraphExecUpdate|GraphKernelNode|"
                               "GraphInstantiateWithParams|LibraryGetKernel|ModuleGetFunction|"
                               "KernelGetFunction|GetFuncBySymbol|GetKernel)");
  return Api.match(Name);
}

namespace {
/// A type that holds a function pointer: itself, an array's elements, a class's members.
bool functionPointer(QualType T) {
  T = T.getNonReferenceType();
  if (T->isFunctionPointerType() || T->isFunctionType() || T->isMemberFunctionPointerType())
    return true;
  if (const auto *AT = T->getAsArrayTypeUnsafe())
    return functionPointer(AT->getElementType());
  if (const CXXRecordDecl *RD = T->getAsCXXRecordDecl(); RD && RD->hasDefinition())
    return llvm::any_of(RD->fields(), [](const FieldDecl *F) { return functionPointer(F->getType()); });
  return false;
}

struct Gather : RecursiveASTVisitor<Gather> {
  ASTContext &Ctx;
  KernelReferences &Out;
  Gather(ASTContext &Ctx, KernelReferences &Out) : Ctx(Ctx), Out(Out) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (FD->hasAttr<CUDAGlobalAttr>() && FD->getIdentifier())
      Out.KernelNames.insert(FD->getName());
    return true;
  }
  bool TraverseCUDAKernelCallExpr(CUDAKernelCallExpr *E) {
    const FunctionDecl *F = E->getDirectCallee();
    Out.Events.push_back({E, F, true});
    if (!F && Out.IndirectDynamic.empty() && dynamicSharedArgument(Ctx, E))
      Out.IndirectDynamic = lineOf(Ctx, E);
    return RecursiveASTVisitor::TraverseCUDAKernelCallExpr(E);
  }
  bool VisitCallExpr(CallExpr *E) {
    if (Ctx.getSourceManager().isInSystemHeader(Ctx.getSourceManager().getExpansionLoc(E->getBeginLoc())))
      return true; // (a library's own calls pass its own function pointers around)
    if (const FunctionDecl *C = E->getDirectCallee();
        Out.GraphCall.empty() && C && C->getIdentifier() && launchesUnseen(C->getName()))
      Out.GraphCall = C->getName().str() + "' at line " + lineOf(Ctx, E);
    if (isa<CUDAKernelCallExpr>(E) || !Out.HandedOff.empty())
      return true;
    for (const Expr *A : E->arguments())
      if (functionPointer(A->getType()) || functionPointer(A->IgnoreParenCasts()->getType())) {
        Out.HandedOff = lineOf(Ctx, E);
        break;
      }
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (const auto *F = dyn_cast<FunctionDecl>(E->getDecl()))
      Out.Events.push_back({E, F, false});
    return true;
  }
};
} // namespace

const KernelReferences &TranslationUnitIndex::kernelReferences() const {
  if (!References) {
    auto R = std::make_shared<KernelReferences>();
    Gather(Ctx, *R).TraverseAST(Ctx);
    References = std::move(R);
  }
  return *References;
}

} // namespace tilepipe
