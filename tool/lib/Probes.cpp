// Parse: instantiations of the function templates nothing in the file instantiates, so that their
// loops can be analysed at all. A template whose arguments the file never names (a header of
// kernels that other files instantiate, a kernel kept for later) gets instantiated here with
// common tile sizes; the analysis treats each as an instantiation, and the rewrite runs only in
// those it proved (LoopPlan::TemplateGuard): every other instantiation, the user's included,
// keeps the loop as it was. So the probe values decide where the pipeline runs, never whether a
// result changes.
#include "tilepipe/Find.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Sema/Sema.h"
#include "clang/Sema/Template.h"
#include "clang/Sema/TemplateDeduction.h"
#include <set>

using namespace clang;

namespace tilepipe {

namespace {

constexpr llvm::StringLiteral ProbeMark = "tilepipe-probe";

class Templates : public RecursiveASTVisitor<Templates> {
public:
  explicit Templates(const SourceManager &SM) : SM(SM) {}
  bool VisitFunctionTemplateDecl(FunctionTemplateDecl *FTD) {
    const FunctionDecl *FD = FTD->getTemplatedDecl();
    // The main file's alone: a header's template is instantiated by the sources that use it, and
    // a source that includes it without would otherwise ask for another rewrite of it than they do.
    if (FD->isThisDeclarationADefinition() && isDeviceCode(FD) && SM.isInMainFile(SM.getExpansionLoc(FD->getLocation())) &&
        !FD->getDeclContext()->isDependentContext() && !isa<CXXMethodDecl>(FD))
      Found.push_back(FTD);
    return true;
  }
  const SourceManager &SM;
  std::vector<FunctionTemplateDecl *> Found;
};

/// The argument lists to probe a template with: each integer parameter 8, 16, 32 or 64 (one such
/// parameter) or 16 or 32 (two or three), a type parameter float; none where a parameter is a
/// pack, a template, a bool, or of another kind, or where there would be more than 8 lists.
/// A parameter with a default takes it.
std::vector<std::vector<TemplateArgument>> probeArguments(ASTContext &Ctx, const TemplateParameterList &Params) {
  unsigned Ints = 0;
  for (const NamedDecl *P : Params) {
    if (P->isTemplateParameterPack())
      return {};
    if (const auto *N = dyn_cast<NonTypeTemplateParmDecl>(P)) {
      if (N->hasDefaultArgument())
        return {}; // (its value would have to be evaluated here: left to a real instantiation)
      if (!N->getType()->isIntegerType() || N->getType()->isBooleanType() || N->getType()->getContainedAutoType())
        return {};
      ++Ints;
    } else if (const auto *T = dyn_cast<TemplateTypeParmDecl>(P)) {
      if (T->hasDefaultArgument())
        return {};
    } else {
      return {};
    }
  }
  if (Ints > 3)
    return {};
  const std::vector<uint64_t> Values = Ints == 1 ? std::vector<uint64_t>{8, 16, 32, 64} : std::vector<uint64_t>{16, 32};
  std::vector<std::vector<TemplateArgument>> Lists = {{}};
  for (const NamedDecl *P : Params) {
    std::vector<std::vector<TemplateArgument>> Next;
    for (const std::vector<TemplateArgument> &L : Lists) {
      if (const auto *N = dyn_cast<NonTypeTemplateParmDecl>(P)) {
        QualType T = N->getType();
        for (uint64_t V : Values) {
          llvm::APSInt I(llvm::APInt(Ctx.getIntWidth(T), V), T->isUnsignedIntegerOrEnumerationType());
          Next.push_back(L);
          Next.back().push_back(TemplateArgument(Ctx, I, T));
        }
      } else {
        Next.push_back(L);
        Next.back().push_back(TemplateArgument(Ctx.FloatTy));
      }
    }
    Lists = std::move(Next);
  }
  return Lists;
}

/// One probe: the specialization of FTD for Args, its definition instantiated; null where the
/// template rejects them.
FunctionDecl *instantiate(Sema &S, FunctionTemplateDecl *FTD, llvm::ArrayRef<TemplateArgument> Args, DiagnosticConsumer &Said) {
  ASTContext &Ctx = S.getASTContext();
  const SourceLocation Loc = FTD->getTemplatedDecl()->getEndLoc();
  TemplateArgumentListInfo Explicit(Loc, Loc);
  for (const TemplateArgument &A : Args) {
    if (A.getKind() == TemplateArgument::Type) {
      Explicit.addArgument(TemplateArgumentLoc(A, Ctx.getTrivialTypeSourceInfo(A.getAsType(), Loc)));
    } else {
      Expr *E = IntegerLiteral::Create(Ctx, A.getAsIntegral(), A.getIntegralType(), Loc);
      Explicit.addArgument(TemplateArgumentLoc(TemplateArgument(E, /*IsCanonical=*/false), E));
    }
  }
  const unsigned Before = Said.getNumErrors();
  FunctionDecl *Spec = nullptr;
  sema::TemplateDeductionInfo Info(Loc);
  if (S.DeduceTemplateArguments(FTD, &Explicit, Spec, Info) != TemplateDeductionResult::Success || !Spec)
    return nullptr;
  if (Spec->isDefined())
    return nullptr; // (the file has it after all)
  if (Spec->getTemplateSpecializationKind() == TSK_Undeclared)
    Spec->setTemplateSpecializationKind(TSK_ImplicitInstantiation, Loc);
  S.InstantiateFunctionDefinition(Loc, Spec, /*Recursive=*/true, /*DefinitionRequired=*/false, /*AtEndOfTU=*/true);
  S.PerformPendingInstantiations();
  if (Said.getNumErrors() != Before || !Spec->isDefined() || Spec->isInvalidDecl()) {
    Spec->setInvalidDecl();
    return nullptr;
  }
  Spec->addAttr(AnnotateAttr::CreateImplicit(Ctx, ProbeMark, nullptr, 0));
  return Spec;
}

} // namespace

bool isProbe(const FunctionDecl *FD) {
  for (const AnnotateAttr *A : FD->specific_attrs<AnnotateAttr>())
    if (A->getAnnotation() == ProbeMark)
      return true;
  return false;
}

std::string probeReferences(ASTContext &Ctx, llvm::ArrayRef<const FunctionDecl *> Kernels) {
  PrintingPolicy Policy = Ctx.getPrintingPolicy();
  Policy.SuppressUnwrittenScope = true; // (an anonymous namespace's names are found from around it)
  std::string Out;
  unsigned N = 0;
  for (const FunctionDecl *FD : Kernels) {
    const TemplateArgumentList *Args = FD->getTemplateSpecializationArgs();
    if (!isProbe(FD) || FD->isInvalidDecl() || !Args)
      continue;
    // The probes' arguments are integers and `float`, which print as written.
    std::string Name;
    llvm::raw_string_ostream OS(Name);
    OS << "::";
    FD->printQualifiedName(OS, Policy);
    printTemplateArgumentList(OS, Args->asArray(), Policy);
    Out += "[[maybe_unused]] static auto *const tilepipe_probe_" + std::to_string(N++) + "_ = &" + Name + ";\n";
  }
  return Out.empty() ? "" : "\n// tilepipe: the instantiations it analysed, for the launch check's build\n" + Out;
}

unsigned probeTemplates(Sema &S) {
  ASTContext &Ctx = S.getASTContext();
  Templates T(Ctx.getSourceManager());
  T.TraverseDecl(Ctx.getTranslationUnitDecl());
  DiagnosticsEngine &D = S.getDiagnostics();
  if (D.hasFatalErrorOccurred())
    return 0;
  unsigned Made = 0;
  // Counts what Clang says while a probe is instantiated, and says nothing: a probe whose
  // arguments the template rejects (a static_assert, an array of negative size) is dropped.
  DiagnosticConsumer Said;
  const bool HadErrors = D.hasErrorOccurred();
  DiagnosticConsumer *Old = D.getClient();
  const bool Owned = D.ownsClient();
  std::unique_ptr<DiagnosticConsumer> Keep = Owned ? D.takeClient() : nullptr;
  D.setClient(&Said, /*ShouldOwnClient=*/false);
  for (FunctionTemplateDecl *FTD : T.Found) {
    if (!FTD->specializations().empty() || findCandidateLoops(FTD->getTemplatedDecl()).empty())
      continue;
    for (const std::vector<TemplateArgument> &Args : probeArguments(Ctx, *FTD->getTemplateParameters())) {
      if (D.hasFatalErrorOccurred())
        break;
      // A probe the template rejects may have instantiated other templates on the way (a helper
      // it calls) whose bodies hold the error Clang recovered from, which nobody would see: they
      // go with it.
      std::set<const FunctionDecl *> Before;
      for (FunctionTemplateDecl *F : T.Found)
        Before.insert(F->specializations().begin(), F->specializations().end());
      const unsigned Errors = Said.getNumErrors();
      Made += instantiate(S, FTD, Args, Said) != nullptr;
      if (Said.getNumErrors() != Errors)
        for (FunctionTemplateDecl *F : T.Found)
          for (FunctionDecl *Spec : F->specializations())
            if (!Before.count(Spec))
              Spec->setInvalidDecl();
    }
  }
  D.setClient(Owned ? Keep.release() : Old, Owned);
  // The probes' errors are theirs: the file's parse had none (its own, if any, stay counted).
  if (!HadErrors)
    D.Reset(/*soft=*/true);
  return Made;
}

} // namespace tilepipe

