// Emit, for a kernel whose loops take tensor copies: the parameters that carry their maps, the
// launcher written beside the kernel, and the kernel's launches in the file rewritten to call it.
#include "tilepipe/Emit.h"
#include "tilepipe/AstUtil.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringExtras.h"
#include <optional>
#include <set>

using namespace clang;

namespace tilepipe {


/// The kernel launches (`k<<<...>>>(...)`) of the translation unit's host code, or of its device
/// code (dynamic parallelism, whose launches cannot call a host launcher).
static std::vector<const CUDAKernelCallExpr *> launchesFrom(ASTContext &Ctx, bool Device) {
  struct LaunchSites : RecursiveASTVisitor<LaunchSites> {
    bool Device = false;
    bool shouldVisitTemplateInstantiations() const { return true; }
    std::vector<const CUDAKernelCallExpr *> Calls;
    std::vector<const FunctionDecl *> In;
    bool TraverseFunctionDecl(FunctionDecl *FD) {
      In.push_back(FD);
      bool R = RecursiveASTVisitor::TraverseFunctionDecl(FD);
      In.pop_back();
      return R;
    }
    bool VisitCUDAKernelCallExpr(CUDAKernelCallExpr *E) {
      bool InDevice = !In.empty() && (In.back()->hasAttr<CUDAGlobalAttr>() || In.back()->hasAttr<CUDADeviceAttr>());
      if (InDevice == Device)
        Calls.push_back(E);
      return true;
    }
  } Found;
  Found.Device = Device;
  Found.TraverseDecl(Ctx.getTranslationUnitDecl());
  return Found.Calls;
}

std::vector<const CUDAKernelCallExpr *> hostLaunches(ASTContext &Ctx) { return launchesFrom(Ctx, false); }

/// The end of the token at L, in the file.
static SourceLocation endOfToken(ASTContext &Ctx, SourceLocation L) {
  const SourceManager &SM = Ctx.getSourceManager();
  return Lexer::getLocForEndOfToken(SM.getExpansionRange(L).getEnd(), 0, SM, Ctx.getLangOpts());
}

/// The kernel's new parameters, each map and the flag, defaulted so that launches tilepipe does
/// not see still compile: the text and where it goes (after the last parameter).
static std::pair<SourceLocation, std::string> mapParameters(ASTContext &Ctx, const KernelMaps &K) {
  const FunctionDecl *P = K.Pattern;
  std::vector<std::string> NewParams;
  for (const auto &[T, MapName] : K.Tiles)
    NewParams.push_back("const __grid_constant__ ::tilepipe_rt::TileMap " + MapName +
                        " = ::tilepipe_rt::TileMap{}");
  if (!K.Tiles.empty())
    NewParams.push_back("bool " + K.Flag + " = false");
  if (!K.DynamicFlag.empty())
    NewParams.push_back("bool " + K.DynamicFlag + " = false");
  SourceLocation At;
  std::string Lead = ", ";
  if (P->getNumParams())
    At = endOfToken(Ctx, P->getParamDecl(P->getNumParams() - 1)->getEndLoc());
  else if (auto FTL = P->getFunctionTypeLoc())
    At = Ctx.getSourceManager().getExpansionLoc(FTL.getRParenLoc()), Lead = "";
  return {At, Lead + llvm::join(NewParams, ", ")};
}

/// What the launcher repeats of the kernel (its name, template header, parameters) and the names
/// it takes.
static LauncherParts launcherParts(ASTContext &Ctx, const KernelMaps &K, FreshNames &Names) {
  const FunctionDecl *P = K.Pattern;
  std::string Name = P->getNameAsString();
  std::string Header, TemplateArgs;
  if (const FunctionTemplateDecl *FTD = P->getDescribedFunctionTemplate()) {
    Header = sourceText(Ctx, FTD->getTemplateParameters()->getSourceRange());
    std::vector<std::string> Args;
    for (const NamedDecl *TP : *FTD->getTemplateParameters())
      Args.push_back(TP->getNameAsString() + (TP->isParameterPack() ? "..." : ""));
    TemplateArgs = "<" + llvm::join(Args, ", ") + ">";
  }
  // The launcher names the kernel from the global namespace, so that none of the kernel's
  // parameters, which the launcher repeats, can hide it (`void scale(float *x, float scale)`);
  // in an unnamed namespace it cannot, and names it as declared.
  std::string Qualifier = "::";
  for (const DeclContext *DC = P->getDeclContext(); DC && !DC->isTranslationUnit(); DC = DC->getParent()) {
    const auto *NS = dyn_cast<NamespaceDecl>(DC);
    if (NS && !NS->isAnonymousNamespace())
      Qualifier = "::" + NS->getName().str() + Qualifier;
    else if (!isa<LinkageSpecDecl>(DC)) {
      Qualifier.clear();
      break;
    }
  }
  LauncherParts LP;
  LP.KernelName = Name;
  LP.Kernel = Name + TemplateArgs;
  LP.Qualifier = Qualifier;
  LP.TemplateHeader = Header;
  LP.Launcher = K.Launcher;
  auto Fresh = [&](const char *Base) { return Names.get(Base); };
  LP.Grid = Fresh("grid");
  LP.Block = Fresh("block");
  LP.SharedBytes = Fresh("shared_bytes");
  LP.Stream = Fresh("stream");
  if (!K.Tiles.empty()) {
    LP.Ok = Fresh("tma");
    LP.Traced = Fresh("traced");
  }
  if (!K.DynamicFlag.empty()) {
    LP.DynamicBytes = K.DynamicBytes;
    LP.DynamicBytesOne = K.DynamicBytesOne;
    LP.DynamicFlag = K.DynamicFlag;
    LP.Device = Fresh("device");
    LP.Major = Fresh("major");
    LP.Bytes = Fresh("dynamic_bytes");
  }
  for (const ParmVarDecl *Parm : P->parameters()) {
    std::string Text = sourceText(Ctx, Parm->getSourceRange());
    // The launcher is a host function: __grid_constant__ belongs to a kernel's parameters only.
    const StringRef Attr = "__grid_constant__";
    auto Ident = [&](size_t I) { return I < Text.size() && (isalnum((unsigned char)Text[I]) || Text[I] == '_'); };
    for (size_t At = Text.find(Attr); At != std::string::npos; At = Text.find(Attr, At)) {
      if ((At == 0 || !Ident(At - 1)) && !Ident(At + Attr.size()))
        Text.erase(At, Attr.size());
      else
        At += Attr.size();
    }
    LP.Params += ", " + Text;
    LP.Args.push_back(Parm->getNameAsString());
  }
  LP.Tiles = K.Tiles;
  return LP;
}

/// A launch site `kernel<<<grid, block[, shared[, stream]]>>>(args)` rewritten to call Launcher
/// (grid, block, shared, stream, args), or nullopt where its text cannot be taken (a macro).
/// Whether evaluating E may change something or call code that may: an assignment, an
/// increment, a call of a function that is not constexpr, new, delete, a throw.
static bool mayHaveEffects(const Expr *E) {
  struct Effects : RecursiveASTVisitor<Effects> {
    bool Found = false;
    bool shouldVisitImplicitCode() const { return true; }
    bool VisitBinaryOperator(BinaryOperator *BO) { return !(Found |= BO->isAssignmentOp()); }
    bool VisitUnaryOperator(UnaryOperator *UO) { return !(Found |= UO->isIncrementDecrementOp()); }
    bool VisitCallExpr(CallExpr *CE) {
      const FunctionDecl *FD = CE->getDirectCallee();
      return !(Found |= !FD || !(FD->isConstexpr() || FD->getBuiltinID()));
    }
    bool VisitCXXConstructExpr(CXXConstructExpr *CE) {
      const CXXConstructorDecl *C = CE->getConstructor();
      return !(Found |= !(C->isTrivial() || C->isConstexpr()));
    }
    bool VisitCXXNewExpr(CXXNewExpr *) { return !(Found = true); }
    bool VisitCXXDeleteExpr(CXXDeleteExpr *) { return !(Found = true); }
    bool VisitCXXThrowExpr(CXXThrowExpr *) { return !(Found = true); }
    bool VisitStmtExpr(StmtExpr *) { return !(Found = true); }
    bool VisitLambdaExpr(LambdaExpr *) { return !(Found = true); }
  } V;
  V.TraverseStmt(const_cast<Expr *>(E));
  return V.Found;
}

/// The launcher's name from the global namespace (`::ns::tilepipe_launch_k`), which no
/// declaration at a launch site can hide and no using-directive, alias or argument-dependent
/// lookup can turn to another; an unnamed namespace is left out, as the launcher's name is no
/// other in the translation unit. None where the kernel is not declared in namespaces alone.
static std::optional<std::string> qualifiedLauncher(const FunctionDecl *P, const std::string &Launcher) {
  std::string Q;
  for (const DeclContext *DC = P->getDeclContext(); !DC->isTranslationUnit(); DC = DC->getParent()) {
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC)) {
      if (!NS->isAnonymousNamespace())
        Q = NS->getName().str() + "::" + Q;
    } else if (!isa<LinkageSpecDecl, ExportDecl>(DC)) {
      return std::nullopt;
    }
  }
  return "::" + Q + Launcher;
}

static std::optional<tooling::Replacement> launchThrough(ASTContext &Ctx, const CUDAKernelCallExpr *Call,
                                                         const std::string &Launcher) {
  const SourceManager &SM = Ctx.getSourceManager();
  // `k<<<cfg>>>(args)` evaluates its configuration before its arguments; a call of the launcher
  // evaluates them in no set order. Where any of them may have effects, the launch stays.
  auto Effects = [](const Expr *A) { return mayHaveEffects(A); };
  if (!Call->getConfig() || llvm::any_of(Call->getConfig()->arguments(), Effects) ||
      llvm::any_of(Call->arguments(), Effects))
    return std::nullopt;
  const auto *Ref = dyn_cast<DeclRefExpr>(Call->getCallee()->IgnoreParenImpCasts());
  const CallExpr *Config = Call->getConfig();
  std::vector<std::string> Cfg;
  bool Ok2 = Ref && Config && Config->getNumArgs() >= 2;
  for (unsigned I = 0; Ok2 && I < 4; ++I) {
    const Expr *A = I < Config->getNumArgs() ? Config->getArg(I) : nullptr;
    if (!A || isa<CXXDefaultArgExpr>(A)) {
      Cfg.push_back("0");
      continue;
    }
    std::string T = sourceText(Ctx, A->getSourceRange());
    Ok2 &= !T.empty();
    Cfg.push_back(T);
  }
  std::vector<std::string> Args;
  for (const Expr *A : Call->arguments()) {
    if (!Ok2 || isa<CXXDefaultArgExpr>(A))
      break;
    std::string T = sourceText(Ctx, A->getSourceRange());
    Ok2 &= !T.empty();
    Args.push_back(T);
  }
  std::string TArgs;
  if (Ok2 && Ref->hasExplicitTemplateArgs()) {
    TArgs = sourceText(Ctx, SourceRange(Ref->getLAngleLoc(), Ref->getRAngleLoc()));
    Ok2 &= !TArgs.empty();
  }
  CharSourceRange Whole = Lexer::makeFileCharRange(
      CharSourceRange::getTokenRange(Call->getSourceRange()), SM, Ctx.getLangOpts());
  if (!Ok2 || Whole.isInvalid())
    return std::nullopt;
  std::string New = Launcher + TArgs + "(" + llvm::join(Cfg, ", ");
  for (const std::string &A : Args)
    New += ", " + A;
  return tooling::Replacement(SM, Whole, New + ")", Ctx.getLangOpts());
}

/// The end of the kernel's definition (of its template, for a template): where its launcher goes.
static SourceLocation afterKernel(ASTContext &Ctx, const FunctionDecl *P) {
  const Decl *Outer = P->getDescribedFunctionTemplate() ? static_cast<const Decl *>(P->getDescribedFunctionTemplate()) : P;
  return endOfToken(Ctx, Outer->getEndLoc());
}

namespace {
/// The launch sites of kernel P in the main file: the edits that make them call Launcher, and how
/// many stay as written.
struct LaunchSiteEdits {
  std::vector<tooling::Replacement> Edits;
  unsigned Left = 0;
  unsigned InMacros = 0; ///< written in a macro or in another file (the tensor copies' remark leaves them out)
};
} // namespace

/// One site's text serves every instantiation of a template around it, and each may call another
/// kernel (another overload, another template): a site is rewritten only when all of them launch
/// P, in the main file, outside a macro, after the launcher, with a configuration and arguments
/// whose order of evaluation a call keeps.
static LaunchSiteEdits launchSiteEdits(ASTContext &Ctx, const FunctionDecl *P,
                                       llvm::ArrayRef<const CUDAKernelCallExpr *> Launches,
                                       const std::string &Launcher) {
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation After = afterKernel(Ctx, P);
  std::set<unsigned> Done, DoneMacros, OtherKernels;
  for (const CUDAKernelCallExpr *Call : Launches) {
    if (Call->isTypeDependent() || Call->isValueDependent() || Call->getCallee()->isTypeDependent())
      continue; // the template's own text: its instantiations say what it launches
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee || patternOf(Callee) != P)
      OtherKernels.insert(SM.getFileOffset(SM.getExpansionLoc(Call->getBeginLoc())));
  }
  LaunchSiteEdits Out;
  std::optional<std::string> Qualified = qualifiedLauncher(P, Launcher);
  for (const CUDAKernelCallExpr *Call : Launches) {
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee || patternOf(Callee) != P)
      continue;
    SourceLocation B = Call->getBeginLoc();
    if (B.isMacroID() || SM.getFileID(B) != SM.getMainFileID()) {
      SourceLocation E = SM.getExpansionLoc(B);
      if (SM.getFileID(E) != SM.getMainFileID() || DoneMacros.insert(SM.getFileOffset(E)).second)
        ++Out.InMacros;
      continue;
    }
    if (!Done.insert(SM.getFileOffset(B)).second)
      continue;
    // A launch before the launcher (of a kernel declared ahead of its definition) could not call it.
    if (OtherKernels.count(SM.getFileOffset(B)) || !Qualified || After.isInvalid() ||
        SM.getFileOffset(SM.getExpansionLoc(B)) < SM.getFileOffset(After)) {
      ++Out.Left;
      continue;
    }
    if (std::optional<tooling::Replacement> R = launchThrough(Ctx, Call, *Qualified))
      Out.Edits.push_back(*R);
    else
      ++Out.Left;
  }
  return Out;
}

std::string launchSitesProblem(ASTContext &Ctx, const FunctionDecl *P) {
  for (const CUDAKernelCallExpr *E : launchesFrom(Ctx, /*Device=*/true))
    if (!E->getDirectCallee() || patternOf(E->getDirectCallee()) == P)
      return "device code launches it (or a kernel it cannot name), which a host launcher cannot serve";
  std::vector<const CUDAKernelCallExpr *> Launches = hostLaunches(Ctx);
  LaunchSiteEdits Sites = launchSiteEdits(Ctx, P, Launches, "tilepipe_launch");
  if (Sites.Left + Sites.InMacros)
    return std::to_string(Sites.Left + Sites.InMacros) +
           " of its launch sites cannot call a launcher (written in a macro or in another file, with a "
           "configuration or arguments that may have effects, in a template whose instantiations launch "
           "other kernels there, or before the kernel's definition)";
  if (Sites.Edits.empty())
    return "this file does not launch it, so no launch would give the stages their room";
  return "";
}

llvm::Expected<KernelMapEdits> emitKernelMaps(ASTContext &Ctx, const KernelMaps &K, FreshNames &Names,
                                              llvm::ArrayRef<const CUDAKernelCallExpr *> Launches) {
  const SourceManager &SM = Ctx.getSourceManager();
  const FunctionDecl *P = K.Pattern;
  std::string Name = P->getNameAsString();
  // 1. The parameters; 2. the launcher, after the kernel (after the template, for a template).
  auto [At, Params] = mapParameters(Ctx, K);
  LauncherParts LP = launcherParts(Ctx, K, Names);
  const std::string Launcher = LP.Launcher;
  std::string LauncherText = emitLauncher(LP);
  SourceLocation After = afterKernel(Ctx, P);
  std::string LauncherProblem;
  tooling::Replacements KEdits;
  auto AddEdit = [&](const tooling::Replacement &R) {
    if (llvm::Error E = KEdits.add(R))
      LauncherProblem = llvm::toString(std::move(E));
  };
  if (At.isInvalid() || After.isInvalid())
    LauncherProblem = "the end of the kernel's parameters or body is not in the file";
  else {
    AddEdit(tooling::Replacement(SM, At, 0, Params));
    AddEdit(tooling::Replacement(SM, After, 0, "\n" + StringRef(LauncherText).rtrim('\n').str()));
  }
  // 3. Launch sites in this file.
  LaunchSiteEdits Sites = launchSiteEdits(Ctx, P, Launches, Launcher);
  for (const tooling::Replacement &R : Sites.Edits)
    AddEdit(R);
  const size_t Rewritten = Sites.Edits.size();
  const unsigned Left = Sites.Left;
  std::string SitesText = Rewritten
                          ? std::to_string(Rewritten) + " launch site(s) in this file now call " +
                                Launcher
                          : "no launch of " + Name + " in this file was rewritten: call " +
                                Launcher + "(grid, block, shared_bytes, stream, <kernel arguments>)"
                                " to use them";
  if (Left)
    SitesText += "; " + std::to_string(Left) +
             " launch site(s) left as they are (written in a macro, with a configuration or"
             " arguments that may have effects, whose order a call would not keep, in a template"
             " whose instantiations launch other kernels there, or before the kernel's definition)";
  if (!LauncherProblem.empty())
    return llvm::createStringError(LauncherProblem);
  return KernelMapEdits{std::move(KEdits), std::move(SitesText)};
}

} // namespace tilepipe
