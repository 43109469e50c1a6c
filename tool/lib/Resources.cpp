// Resources (Resources.h): what the launches of a rewritten kernel need, in one file because one
// question runs through all of it: may a launch that ran before the rewrite still run after it?
//  - the kernels that run a loop and how they are launched (DynamicSharedFinder, KernelUses,
//    launchProblems): dynamic shared memory, launches the analysis cannot see;
//  - nvcc's answer (compileForUsage, parseResourceUsage, splitDemangled): registers and shared
//    memory per kernel of the original and the rewrite, through the build cache (UsageCache.h);
//  - the comparison and its fix (checkLaunchResources): __launch_bounds__ where the rewrite
//    would allow fewer threads, or the loop kept.
// Split by those three parts, each would export the types the next reads (KernelKey, the usage
// tables); about 1,050 lines kept together read in the order a launch is checked.
#include "tilepipe/Resources.h"
#include "DriverSteps.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Driver.h"
#include "tilepipe/Result.h"
#include "tilepipe/Runtime.h"
#include "clang/AST/Mangle.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Tooling/Core/Replacement.h"
#include "EffectsUtil.h"
#include "KernelReferences.h"
#include "tilepipe/Find.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include <optional>
#include <set>
#include <thread>

using namespace clang;

namespace tilepipe {

namespace {

/// Walks a kernel and everything it calls for a use of dynamic shared memory, or for code it
/// cannot see.
class DynamicSharedFinder : public RecursiveASTVisitor<DynamicSharedFinder> {
public:
  explicit DynamicSharedFinder(ASTContext &Ctx) : Ctx(Ctx) {}
  bool shouldVisitLambdaBody() const { return true; }

  void function(const FunctionDecl *F) {
    const FunctionDecl *Def = nullptr;
    if (!going() || !F)
      return;
    if (isToolkitRuntime(Ctx.getSourceManager(), F))
      return; // the toolkit's runtime functions and the builtins use no dynamic shared memory of the user's
    if (F->isTrivial())
      return; // a trivial constructor, destructor or assignment (`Mul()`) runs no code
    if (!F->hasBody(Def) || !Def->getBody()) {
      hidden("it calls " + quotedName(F) + ", whose body is not in this file");
      return;
    }
    if (!Seen.insert(Def).second)
      return;
    if (!Root)
      Root = Def;
    TraverseStmt(Def->getBody());
    if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(Def))
      for (const CXXCtorInitializer *Init : Ctor->inits())
        TraverseStmt(Init->getInit());
  }

  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (const auto *V = dyn_cast<VarDecl>(E->getDecl()))
      if (isSharedVar(V) && V->hasExternalStorage() && Found.empty())
        Found = "it uses dynamic shared memory ('extern __shared__ " + V->getNameAsString() +
                "'), whose size each launch sets next to the static shared memory";
    return going();
  }
  /// Whether to walk on: until the first problem, or with Unseen, until code it cannot see.
  bool going() const { return Unseen ? Hidden.empty() : Found.empty(); }
  void hidden(std::string Why) {
    if (Found.empty())
      Found = Why;
    if (Hidden.empty())
      Hidden = std::move(Why);
  }
  /// A static __shared__ variable of a function the root calls (or of a lambda in it): the root's
  /// own are planned with its loops, these are not.
  bool VisitVarDecl(VarDecl *V) {
    if (isSharedVar(V) && !V->hasExternalStorage() && CalleeShared.empty() &&
        V->getDeclContext() != static_cast<const DeclContext *>(Root))
      CalleeShared = "'" + V->getNameAsString() + "' is a __shared__ variable of a function it calls, "
                     "which is not counted beside the stages";
    return true;
  }
  bool VisitCallExpr(CallExpr *E) {
    if (const FunctionDecl *F = E->getDirectCallee())
      function(F);
    else if (Found.empty() || (Unseen && Hidden.empty()))
      if (!isa<CXXPseudoDestructorExpr>(E->getCallee()->IgnoreParenImpCasts()))
        hidden("it calls a function through a pointer");
    return going();
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *E) {
    function(E->getConstructor());
    return going();
  }

  static std::string quotedName(const FunctionDecl *F) { return "'" + F->getNameAsString() + "'"; }

  ASTContext &Ctx;
  llvm::DenseSet<const FunctionDecl *> Seen;
  const FunctionDecl *Root = nullptr;
  /// Found: the first problem in the walk's order. Hidden: the first code the walk cannot see (a
  /// body elsewhere, a call through a pointer), which Unseen walks on past dynamic shared memory to find.
  std::string Found, CalleeShared, Hidden;
  bool Unseen = false;
};

/// The kernels whose code runs F (F itself when it is one), or Why they cannot all be named.
void kernelsRunning(ASTContext &Ctx, const TranslationUnitIndex &Index, const FunctionDecl *F,
                    llvm::DenseSet<const FunctionDecl *> &Seen,
                    std::vector<const FunctionDecl *> &Kernels, std::string &Why) {
  if (!Why.empty() || !Seen.insert(F->getCanonicalDecl()).second)
    return;
  if (F->hasAttr<CUDAGlobalAttr>()) {
    Kernels.push_back(F);
    return;
  }
  bool Called = false;
  for (const CallExpr *CE : Index.callersOf(F)) {
    // A caller is the function whose body holds the call.
    const FunctionDecl *Caller = enclosingFunction(Ctx, CE);
    if (!Caller) {
      Why = "a call of '" + F->getNameAsString() + "' is outside every function";
      return;
    }
    if (!isDeviceCode(Caller))
      continue; // host code: it runs in no kernel
    Called = true;
    kernelsRunning(Ctx, Index, Caller, Seen, Kernels, Why);
  }
  if (!Called && Why.empty())
    Why = "no kernel of this file calls '" + F->getNameAsString() +
          "': a kernel elsewhere may use dynamic shared memory";
}

} // namespace

std::string kernelSignatureProblem(ASTContext &Ctx, const TranslationUnitIndex &Index, const FunctionDecl *P) {
  if (P->isExternC())
    return "the kernel has C linkage, so a launch in another file would not pass the parameters tilepipe adds";
  auto PatternOf = [](const FunctionDecl *F) -> const FunctionDecl * {
    if (const FunctionDecl *Q = F->getTemplateInstantiationPattern())
      return Q;
    if (const FunctionTemplateDecl *T = F->getPrimaryTemplate())
      return T->getTemplatedDecl();
    return F;
  };
  // Each name of P: fine as the callee of a launch or in the runtime's questions about it.
  auto Fine = [&](const Expr *E) {
    DynTypedNode N = DynTypedNode::create(*E);
    for (unsigned Guard = 0; Guard < 16; ++Guard) {
      auto Parents = Ctx.getParents(N);
      if (Parents.empty())
        break;
      const DynTypedNode &Up = Parents[0];
      if (Up.get<ImplicitCastExpr>() || Up.get<ParenExpr>() || Up.get<CStyleCastExpr>() ||
          Up.get<CXXStaticCastExpr>() || Up.get<CXXReinterpretCastExpr>() ||
          (Up.get<UnaryOperator>() && Up.get<UnaryOperator>()->getOpcode() == UO_AddrOf)) {
        N = Up;
        continue;
      }
      if (const auto *K = Up.get<CUDAKernelCallExpr>(); K && K->getCallee() == N.get<Expr>())
        return true; // kernel<<<...>>>(...): default arguments fill the new parameters
      if (const auto *C = Up.get<CallExpr>())
        if (const FunctionDecl *Callee = C->getDirectCallee()) {
          StringRef Name = Callee->getName();
          // The runtime's questions about the kernel, which never launch it.
          if (Name.starts_with("cudaFuncGetAttributes") || Name.starts_with("cudaFuncSet") ||
              Name.starts_with("cudaOccupancy") || Name == "cudaFuncGetName")
            return true;
        }
      break;
    }
    return false;
  };
  for (const KernelReferences::Event &Ev : Index.kernelReferences().Events)
    if (!Ev.Launch && PatternOf(Ev.F)->getCanonicalDecl() == P->getCanonicalDecl() && !Fine(Ev.E))
      return "the kernel's address is taken (line " + lineOf(Ctx, Ev.E) +
             "), and a launch through it (cudaLaunchKernel) would not pass the parameters tilepipe adds";
  return "";
}

namespace {
/// Where the translation unit names a kernel: each launch `k<<<g, b, smem>>>` that asks for
/// dynamic shared memory, and each other use of its name. A use that only initializes a local
/// function pointer (a harness's table of kernels) is followed as far as the file lets: it is
/// fine while no launch through a pointer asks for dynamic shared memory and no function pointer
/// is handed to a call (cudaLaunchKernel, cudaLaunchCooperativeKernel, cudaFuncSetAttribute, a
/// function of another file); any other use is a launch the text does not show. The launches and
/// names of K are the translation unit's (KernelReferences), replayed in their order.
struct KernelUses {
  const FunctionDecl *K;
  ASTContext &Ctx;
  const KernelReferences &Refs;
  std::string Found, StoredAt, Queried;
  llvm::DenseSet<const Expr *> Callees; ///< the names that K's launches call
  std::vector<const Expr *> Launches;     ///< K's launches `K<<<...>>>(...)`
  KernelUses(const FunctionDecl *K, ASTContext &Ctx, const TranslationUnitIndex &Index)
      : K(K), Ctx(Ctx), Refs(Index.kernelReferences()) {
    for (const KernelReferences::Event &Ev : Refs.Events) {
      if (!Ev.F || !same(Ev.F))
        continue;
      if (Ev.Launch)
        launch(cast<CUDAKernelCallExpr>(Ev.E));
      else if (!Callees.contains(Ev.E))
        name(Ev.E); // after the first problem too: a question about the kernel counts on its own
    }
  }
  bool same(const FunctionDecl *F) const {
    return patternOf(F)->getCanonicalDecl() == patternOf(K)->getCanonicalDecl();
  }
  void launch(const CUDAKernelCallExpr *E) {
    Callees.insert(E->getCallee()->IgnoreParenImpCasts());
    Launches.push_back(E);
    if (const Expr *Smem = dynamicSharedArgument(Ctx, E); Smem && Found.empty())
      Found = "its launch at line " + lineOf(Ctx, E) + " asks for dynamic shared memory ('" +
              sourceText(Ctx, Smem->getSourceRange()) + "'), which more static shared memory may leave without room";
  }
  /// `cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, c)`: a preference
  /// for the split of L1 and shared memory, as cudaFuncSetCacheConfig is. It launches nothing and
  /// sets no limit a launch is checked against (the maximum dynamic shared memory is one).
  static bool carveoutPreference(const CallExpr *Call) {
    if (Call->getDirectCallee()->getName() != "cudaFuncSetAttribute" || Call->getNumArgs() < 2)
      return false;
    const auto *Attr = dyn_cast<DeclRefExpr>(Call->getArg(1)->IgnoreParenImpCasts());
    const auto *C = Attr ? dyn_cast<EnumConstantDecl>(Attr->getDecl()) : nullptr;
    return C && C->getName() == "cudaFuncAttributePreferredSharedMemoryCarveout";
  }
  /// A name of K other than a launch's callee.
  void name(const Expr *E) {
    // Up through conversions and braces to what the name initializes.
    DynTypedNode N = DynTypedNode::create(*E);
    for (unsigned Guard = 0; Guard < 8; ++Guard) {
      auto Parents = Ctx.getParents(N);
      if (Parents.empty())
        break;
      N = Parents[0];
      if (N.get<CastExpr>() || N.get<ParenExpr>() || N.get<InitListExpr>() || N.get<UnaryOperator>() ||
          N.get<CXXStdInitializerListExpr>() || N.get<MaterializeTemporaryExpr>() || N.get<ExprWithCleanups>())
        continue; // (`for (auto k : {k1, k2})` binds a local initializer_list)
      if (const auto *V = N.get<VarDecl>(); V && V->hasLocalStorage() && !V->isStaticLocal()) {
        if (StoredAt.empty())
          StoredAt = lineOf(Ctx, E);
        return;
      }
      // The runtime asked about the kernel (its attributes, its occupancy, which the runtime
      // computes for the rewritten kernel), or launching it with no dynamic shared memory.
      if (const auto *Call = N.get<CallExpr>(); Call && Call->getDirectCallee() &&
                                                Call->getDirectCallee()->getIdentifier()) {
        StringRef Callee = Call->getDirectCallee()->getName();
        if (Callee == "cudaFuncSetCacheConfig" || carveoutPreference(Call))
          return;
        // A question whose answer the rewrite changes: the kernel's registers, its shared memory,
        // and the blocks per SM or the block size they allow. A program that sizes its grid or
        // its blocks from it (a persistent kernel) runs another decomposition after the rewrite,
        // and sums its floats in another order.
        if (Callee.starts_with("cudaFuncGetAttribute") || Callee.starts_with("cudaOccupancy")) {
          if (Queried.empty())
            Queried = "the program asks the runtime about it ('" + Callee.str() + "' at line " + lineOf(Ctx, E) +
                      "), whose answer the rewrite's registers and shared memory change";
          return;
        }
        Expr::EvalResult R;
        if (Callee == "cudaLaunchKernel" && Call->getNumArgs() > 4 &&
            !Call->getArg(4)->isValueDependent() && Call->getArg(4)->EvaluateAsInt(R, Ctx) &&
            R.Val.getInt() == 0)
          return;
      }
      break;
    }
    if (Found.empty())
      Found = "its name is used at line " + lineOf(Ctx, E) +
              " other than in a launch `<<<...>>>`, so a launch's dynamic shared memory cannot be seen";
  }
  std::string problem() const {
    if (!Found.empty())
      return Found;
    if (!Queried.empty())
      return Queried;
    if (!Refs.GraphCall.empty())
      return "the program calls '" + Refs.GraphCall +
             ", which may launch it with other arguments or dynamic shared memory than its launches show";
    if (StoredAt.empty())
      return "";
    if (!Refs.IndirectDynamic.empty())
      return "its name is stored at line " + StoredAt + " and a launch through a pointer at line " +
             Refs.IndirectDynamic + " asks for dynamic shared memory";
    if (!Refs.HandedOff.empty())
      return "its name is stored at line " + StoredAt + " and a function pointer is handed to a call at line " +
             Refs.HandedOff + ", which may launch it with dynamic shared memory";
    return "";
  }
};
} // namespace

/// Whether P lies in the text of launch E (from its callee to its closing parenthesis, as the
/// file spells them; a launch inside a macro is the macro's invocation).
static bool spans(const SourceManager &SM, const Expr *E, const ArchDependence::Place &P) {
  SourceLocation B = SM.getExpansionLoc(E->getBeginLoc()), End = SM.getExpansionLoc(E->getEndLoc());
  auto FE = SM.getFileEntryRefForID(SM.getFileID(B));
  return FE && FE->getName() == P.File && SM.getFileOffset(B) <= P.Offset &&
         P.Offset <= SM.getFileOffset(End);
}

/// Why the host pass launches K where the parse cannot see: K's name, or a call of the runtime
/// that launches kernels unseen, in text only the host pass reads; or a launch of K whose text a
/// macro spells otherwise in the host pass (its dynamic shared memory, say).
static std::string hostOnlyLaunch(ASTContext &Ctx, const ArchDependence &Arch, const FunctionDecl *K,
                                  const KernelUses &Uses) {
  auto Where = [](const ArchDependence::Place &P) {
    return llvm::sys::path::filename(P.File).str() + " (offset " + std::to_string(P.Offset) + ")";
  };
  if (const IdentifierInfo *II = K->getIdentifier())
    if (auto It = Arch.HostOnlyNames.find(II->getName().str()); It != Arch.HostOnlyNames.end())
      return "its name appears in text that only nvcc's host pass reads (" + Where(It->second) +
             ", under `#ifndef __CUDA_ARCH__` or in a header only the host includes), where a launch cannot be seen";
  for (const auto &[Name, P] : Arch.HostOnlyNames)
    if (launchesUnseen(Name))
      return "the host pass alone calls '" + Name + "' (" + Where(P) +
             "), which may launch it with other arguments or dynamic shared memory than its launches show";
  // Launches as the host pass reads them, with the dynamic shared memory they spell (a constant
  // the parse computed as 0 may be another in the host pass). Which kernel one launches: where
  // both passes read the same user text, the one the parse resolved at that place; else any of
  // the name before `<<<` (an overload or namespace alias may resolve otherwise there).
  const SourceManager &SM = Ctx.getSourceManager();
  auto LaunchesK = [&](const ArchDependence::Launch &L) {
    if (!Arch.SameUserText)
      return K->getIdentifier() && L.Callee == K->getName();
    return llvm::any_of(Uses.Launches, [&](const Expr *E) { return spans(SM, E, L.At); });
  };
  for (const ArchDependence::Launch &L : Arch.HostLaunches)
    if (L.Dynamic && (LaunchesK(L) || (!Uses.Refs.KernelNames.contains(L.Callee) && !Uses.StoredAt.empty())))
      return "a launch of '" + (L.Callee.empty() ? std::string("?") : L.Callee) + "' at " +
             Where(L.At) + " asks nvcc's host pass for dynamic shared memory ('" + L.Smem +
             "'), which more static shared memory may leave without room";
  for (const Expr *Launch : Uses.Launches)
    for (const ArchDependence::Place &P : Arch.HostRedefined)
      if (spans(SM, Launch, P))
        return "its launch at line " + std::to_string(SM.getExpansionLineNumber(Launch->getBeginLoc())) +
               " expands a macro that nvcc's host pass, which launches it, defines otherwise";
  return "";
}

LaunchProblems launchProblems(ASTContext &Ctx, const TranslationUnitIndex &Index, const ArchDependence &Arch,
                              const FunctionDecl *F) {
  LaunchProblems Out;
  llvm::DenseSet<const FunctionDecl *> Seen;
  std::vector<const FunctionDecl *> Kernels;
  std::string Why;
  kernelsRunning(Ctx, Index, F, Seen, Kernels, Why);
  if (!Why.empty()) {
    Out.Shared = Out.Registers = Why;
    return Out;
  }
  auto Set = [](std::string &To, const FunctionDecl *K, const std::string &Why) {
    if (To.empty() && !Why.empty())
      To = "kernel '" + K->getNameAsString() + "' runs this loop and " + Why;
  };
  for (const FunctionDecl *K : Kernels) {
    DynamicSharedFinder Finder(Ctx);
    Finder.Unseen = true;
    Finder.function(K);
    Set(Out.Shared, K, Finder.Found);
    Set(Out.Registers, K, Finder.Hidden);
    KernelUses Uses(K, Ctx, Index);
    Set(Out.Shared, K, Uses.problem());
    Set(Out.Registers, K, Uses.Queried);
    Set(Out.Shared, K, hostOnlyLaunch(Ctx, Arch, K, Uses));
  }
  return Out;
}

std::string calleeSharedProblem(ASTContext &Ctx, const FunctionDecl *Kernel) {
  DynamicSharedFinder Finder(Ctx);
  Finder.function(Kernel);
  return !Finder.Found.empty() ? Finder.Found : Finder.CalleeShared;
}

void splitDemangled(StringRef Demangled, std::string &Name, std::vector<std::string> &Params) {
  static const llvm::Regex NvccAnonymous("_GLOBAL__N__[A-Za-z0-9_]*");
  std::string Text = Demangled.str();
  for (std::string Prev; Prev != Text;) {
    Prev = Text;
    Text = NvccAnonymous.sub("(anonymous namespace)", Text);
  }
  Params.clear();
  size_t Close = Text.rfind(')');
  int Depth = 0;
  size_t Open = std::string::npos;
  for (size_t I = Close; Close != std::string::npos && I-- > 0;) {
    if (Text[I] == ')')
      ++Depth;
    else if (Text[I] == '(' && Depth-- == 0) {
      Open = I;
      break;
    }
  }
  if (Open == std::string::npos) {
    Name = Text;
    return;
  }
  Name = StringRef(Text).substr(0, Open).trim().str();
  StringRef Inner = StringRef(Text).slice(Open + 1, Close);
  Depth = 0;
  size_t Start = 0;
  for (size_t I = 0; I <= Inner.size(); ++I) {
    char C = I < Inner.size() ? Inner[I] : ',';
    if (C == '(' || C == '<' || C == '[')
      ++Depth;
    else if (C == ')' || C == '>' || C == ']')
      --Depth;
    else if (C == ',' && Depth == 0) {
      StringRef P = Inner.slice(Start, I).trim();
      if (!P.empty())
        Params.push_back(P.str());
      Start = I + 1;
    }
  }
}

std::vector<KernelUsage> parseResourceUsage(StringRef Report) {
  static const llvm::Regex Entry("Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)'");
  static const llvm::Regex Used("Used ([0-9]+) registers");
  static const llvm::Regex Smem("([0-9]+) bytes smem");
  static const llvm::Regex Spill("([0-9]+) bytes spill stores");
  std::vector<KernelUsage> Out;
  llvm::SmallVector<StringRef, 4> Lines;
  Report.split(Lines, '\n');
  KernelUsage *Open = nullptr;
  for (StringRef L : Lines) {
    llvm::SmallVector<StringRef, 3> M;
    if (Entry.match(L, &M)) {
      KernelUsage K;
      splitDemangled(llvm::demangle(M[1].str()), K.Name, K.Params);
      K.Arch = M[2].str();
      Out.push_back(std::move(K));
      Open = &Out.back();
    } else if (Open && Spill.match(L, &M)) {
      M[1].getAsInteger(10, Open->SpillBytes);
    } else if (Open && Used.match(L, &M)) {
      M[1].getAsInteger(10, Open->Registers);
      if (Smem.match(L, &M))
        M[1].getAsInteger(10, Open->SharedBytes);
      Open = nullptr;
    }
  }
  return Out;
}

/// The registers a warp of a kernel takes, at Registers a thread: allocated in units of 256.
static unsigned registersPerWarp(unsigned Registers) { return (Registers * 32 + 255) / 256 * 256; }

unsigned maxThreadsPerBlock(unsigned Registers) {
  unsigned PerWarp = registersPerWarp(Registers);
  if (PerWarp == 0)
    return 1024;
  return std::min(1024u, 65536u / PerWarp * 32);
}

unsigned warpsByRegisters(unsigned Registers) {
  return std::min(64u, 65536u / std::max(registersPerWarp(Registers), 1u));
}

/// The arguments of a Clang parse that matter to nvcc: include paths, macros, forced includes,
/// the language standard.
static std::vector<std::string> nvccArgs(ArrayRef<std::string> Args) {
  std::vector<std::string> Out;
  for (size_t I = 0; I < Args.size(); ++I) {
    StringRef A = Args[I];
    bool HasNext = I + 1 < Args.size();
    if ((A == "-I" || A == "-iquote" || A == "-idirafter") && HasNext) {
      Out.push_back("-I" + Args[++I]);
    } else if ((A == "-isystem" || A == "-include" || A == "-D" || A == "-U") && HasNext) {
      Out.push_back(A.str());
      Out.push_back(Args[++I]);
    } else if (A.starts_with("-I") || A.starts_with("-D") || A.starts_with("-U") ||
               A.starts_with("-std=")) {
      Out.push_back(A.str());
    } else if (A.starts_with("-isystem")) {
      Out.push_back("-isystem");
      Out.push_back(A.drop_front(8).str());
    }
  }
  return Out;
}

Expected<std::vector<KernelUsage>>
compileForUsage(const std::string &Nvcc, StringRef Source, StringRef IncludeDir,
                ArrayRef<std::string> Args, ArrayRef<std::string> Archs,
                ArrayRef<std::pair<std::string, std::string>> Beside, const UsageCache *Cache) {
  auto Fail = [](const Twine &Msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
  };
  llvm::SmallString<128> Dir;
  if (std::error_code EC = llvm::sys::fs::createUniqueDirectory("tilepipe-usage", Dir))
    return Fail("cannot create a temporary folder: " + EC.message());
  llvm::SmallString<128> Src(Dir), Bin(Dir), Log(Dir);
  llvm::sys::path::append(Src, "source.cu");
  llvm::sys::path::append(Bin, "device.fatbin");
  llvm::sys::path::append(Log, "ptxas.txt");
  llvm::scope_exit Cleanup([&] { llvm::sys::fs::remove_directories(Dir); });
  std::vector<std::pair<std::string, std::string>> Files(Beside.begin(), Beside.end());
  Files.push_back({"source.cu", Source.str()});
  // The runtime header that a rewrite with tensor or bulk copies includes: the text it was written
  // for, ahead of any other copy on the user's include paths.
  Files.push_back({"runtime/" + runtimeHeaderName().str(), runtimeHeaderText().str()});
  llvm::SmallString<128> RuntimeDir(Dir);
  llvm::sys::path::append(RuntimeDir, "runtime");
  for (const auto &[Rel, Text] : Files) {
    llvm::SmallString<128> P(Dir);
    llvm::sys::path::append(P, Rel);
    std::error_code EC = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(P));
    llvm::raw_fd_ostream OS(P, EC);
    if (EC)
      return Fail("cannot write " + P + ": " + EC.message());
    OS << Text;
  }
  // --threads 0: the architectures compile at once, on as many threads as the machine has.
  std::vector<std::string> Cmd{Nvcc, "-fatbin", "--resource-usage", "-w", "--threads", "0", "-o", Bin.str().str()};
  for (const std::string &Arch : Archs) {
    StringRef Num = StringRef(Arch).drop_front(3);
    Cmd.push_back("-gencode=arch=compute_" + Num.str() + ",code=" + Arch);
  }
  Cmd.push_back("-I" + RuntimeDir.str().str());
  Cmd.push_back("-I" + IncludeDir.str());
  for (std::string &A : nvccArgs(Args))
    Cmd.push_back(std::move(A));
  Cmd.push_back(Src.str().str());
  // Every path absolute, as nvcc would read it from here: the cache's key then needs no working
  // folder. The folders an #include may search, for the cache's check that none holds a new file.
  auto Absolute = [](std::string P) {
    llvm::SmallString<256> A(P);
    llvm::sys::fs::make_absolute(A);
    return A.str().str();
  };
  std::vector<std::string> SearchDirs;
  for (size_t I = 0; I < Cmd.size(); ++I) {
    StringRef A = Cmd[I];
    std::string D;
    if ((A == "-isystem" || A == "-I" || A == "-include") && I + 1 < Cmd.size()) {
      Cmd[I + 1] = Absolute(Cmd[I + 1]);
      if (A != "-include")
        D = Cmd[I + 1];
      ++I;
    } else if (A.starts_with("-I")) {
      Cmd[I] = "-I" + Absolute(A.drop_front(2).str());
      D = Cmd[I].substr(2);
    }
    if (!D.empty() && !StringRef(D).starts_with(Dir))
      SearchDirs.push_back(D);
  }
  std::string Key;
  if (Cache && Cache->enabled()) {
    Key = Cache->key(Cmd, Dir, Files, SearchDirs);
    if (std::optional<std::string> Report = Cache->lookup(Key, SearchDirs)) {
      Cache->countHit();
      return parseResourceUsage(*Report);
    }
  }
  llvm::SmallString<128> Deps(Dir);
  llvm::sys::path::append(Deps, "deps.d");
  if (!Key.empty())
    Cmd.insert(Cmd.end() - 1, {"-MD", "-MF", Deps.str().str()});
  if (Cache)
    Cache->countBuild();
  std::vector<StringRef> Argv(Cmd.begin(), Cmd.end());
  std::optional<StringRef> Redirects[] = {StringRef(""), Log.str(), Log.str()};
  std::string ErrMsg;
  int RC = llvm::sys::ExecuteAndWait(Nvcc, Argv, std::nullopt, Redirects, /*SecondsToWait=*/300,
                                     /*MemoryLimit=*/0, &ErrMsg);
  auto Buf = llvm::MemoryBuffer::getFile(Log);
  std::string Report = Buf ? (*Buf)->getBuffer().str() : "";
  if (RC != 0) {
    // The first error line says most.
    StringRef First;
    for (StringRef L : llvm::split(Report, '\n'))
      if (L.contains("error")) {
        First = L.trim();
        break;
      }
    return Fail("nvcc failed (" + (ErrMsg.empty() ? "exit " + std::to_string(RC) : ErrMsg) + ")" +
                (First.empty() ? "" : ": " + First.str()));
  }
  if (!Key.empty())
    if (auto DepText = llvm::MemoryBuffer::getFile(Deps, /*IsText=*/true))
      Cache->store(Key, (*DepText)->getBuffer(), Dir, SearchDirs, Report);
  return parseResourceUsage(Report);
}

namespace {

/// Every kernel defined in the translation unit (template instantiations, not their patterns).
class KernelCollector : public RecursiveASTVisitor<KernelCollector> {
public:
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (FD->hasAttr<CUDAGlobalAttr>() && FD->doesThisDeclarationHaveABody() &&
        !FD->isDependentContext())
      Kernels.push_back(FD);
    return true;
  }
  std::vector<const FunctionDecl *> Kernels;
};

struct KernelKey {
  std::string Name;
  std::vector<std::string> Params;
  bool operator<(const KernelKey &O) const {
    return std::tie(Name, Params) < std::tie(O.Name, O.Params);
  }
};

bool boundedByUser(const FunctionDecl *FD) {
  const FunctionDecl *P = FD->getTemplateInstantiationPattern();
  for (const FunctionDecl *D : {FD, P})
    if (D)
      for (const FunctionDecl *R : D->redecls())
        if (R->hasAttr<CUDALaunchBoundsAttr>() || R->hasAttr<CUDAClusterDimsAttr>())
          return true;
  return false;
}

bool startsWith(const std::vector<std::string> &Long, const std::vector<std::string> &Short) {
  return Long.size() >= Short.size() && std::equal(Short.begin(), Short.end(), Long.begin());
}

/// W, of the rewrite's build, is kernel O of the original's on the same architecture (a tensor-copy
/// rewrite adds parameters at the end).
bool sameKernel(const KernelUsage &O, const KernelUsage &W) {
  return W.Arch == O.Arch && W.Name == O.Name && startsWith(W.Params, O.Params);
}

/// A reason to keep every loop of the file as it was (LaunchCheck::KeepWhy).
llvm::Error keep(const llvm::Twine &Why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Why);
}

using HeaderTexts = std::vector<std::pair<std::string, std::string>>; ///< relative path, text

/// Path (a real path) relative to the folder Dir, where it lies inside it; the name a header has
/// in HeaderTexts.
static std::optional<std::string> relativeIn(StringRef Dir, StringRef Path) {
  llvm::SmallString<256> RealDir;
  if (llvm::sys::fs::real_path(Dir, RealDir))
    RealDir = Dir;
  StringRef Rel(Path);
  if (!Rel.consume_front(RealDir) || !Rel.consume_front("/") || llvm::sys::path::is_absolute(Rel) ||
      Rel.contains(".."))
    return std::nullopt;
  return Rel.str();
}

/// The user's headers of R that lie in the source's folder Dir, each with its path relative to
/// that folder and its text in the rewrite (where the rewrite is compiled, they go at their places
/// beside it). Every one, not only the rewritten: a quoted include is looked for beside the file
/// that includes it first, so an unchanged header taken from the original folder would include the
/// original of a rewritten one next to it. Fails for a rewritten header outside that folder, and
/// for a header outside it that names a rewritten one (it would include the original).
llvm::Expected<HeaderTexts> headersBeside(const FileResult &R, StringRef Dir, const std::string &Hint) {
  auto Relative = [&](StringRef Path) { return relativeIn(Dir, Path); };
  HeaderTexts Out;
  std::set<std::string> Rewritten, Names;
  for (const HeaderRewrite &H : R.Headers) {
    if (H.Rewritten == H.Original)
      continue;
    auto Rel = Relative(H.Path); // H.Path is a real path: compared with the folder's
    if (!Rel)
      return keep("its rewritten header " + H.Path +
                  " is outside the source's folder, so nvcc cannot count the rewrite's registers" + Hint);
    Out.push_back({*Rel, H.Rewritten});
    Rewritten.insert(H.Path);
    Names.insert(llvm::sys::path::filename(H.Path).str());
  }
  if (Out.empty())
    return Out;
  for (const std::string &U : R.UserFiles) {
    if (Rewritten.count(U))
      continue;
    auto Text = llvm::MemoryBuffer::getFile(U);
    if (!Text)
      return keep("cannot read " + U + " to compile the rewrite beside it" + Hint);
    if (auto Rel = Relative(U)) {
      Out.push_back({*Rel, (*Text)->getBuffer().str()});
      continue;
    }
    for (const std::string &N : Names)
      if ((*Text)->getBuffer().contains(N))
        return keep(U + ", outside the source's folder, names the rewritten header " + N +
                    ", so nvcc cannot be shown the rewrite to count its registers" + Hint);
  }
  return Out;
}

/// The kernels of the translation unit, by the demangled name and parameters ptxas reports.
std::map<KernelKey, const FunctionDecl *> kernelsByName(ASTContext &Ctx) {
  KernelCollector Collector;
  Collector.TraverseDecl(Ctx.getTranslationUnitDecl());
  std::unique_ptr<MangleContext> Mangler(Ctx.createMangleContext());
  std::map<KernelKey, const FunctionDecl *> Kernels;
  for (const FunctionDecl *FD : Collector.Kernels) {
    std::string Mangled;
    if (Mangler->shouldMangleDeclName(FD)) {
      llvm::raw_string_ostream OS(Mangled);
      Mangler->mangleName(GlobalDecl(FD), OS);
    } else {
      Mangled = FD->getNameAsString();
    }
    KernelKey K;
    splitDemangled(llvm::demangle(Mangled), K.Name, K.Params);
    Kernels[K] = FD;
  }
  return Kernels;
}

/// Per kernel pattern: the most threads the original allows on any arch, and the findings.
struct Need {
  unsigned Threads = 0;
  bool Bound = false;
  std::string Note;
  std::vector<const FunctionDecl *> Instances; ///< of a template: those the builds made
};
struct Needs {
  std::map<const FunctionDecl *, Need> ByKernel;
  std::vector<const FunctionDecl *> Order; ///< kernels in the order the original's report names them
};

/// What each kernel of the original needs after the rewrite, from both builds' reports; fails
/// where a kernel's need cannot be met by bounding it.
llvm::Expected<Needs> registerNeeds(ASTContext &Ctx, ArrayRef<KernelUsage> Original,
                                    ArrayRef<KernelUsage> Rewrite,
                                    const std::map<KernelKey, const FunctionDecl *> &Kernels) {
  Needs Out;
  for (const KernelUsage &O : Original) {
    auto It = Kernels.find({O.Name, O.Params});
    const FunctionDecl *FD = It == Kernels.end() ? nullptr : It->second;
    if (FD && boundedByUser(FD))
      continue; // ptxas fits both builds to the user's bounds
    unsigned Before = maxThreadsPerBlock(O.Registers);
    unsigned After = 1024;
    unsigned Registers = 0;
    bool Found = false, MoreShared = false;
    for (const KernelUsage &W : Rewrite)
      if (sameKernel(O, W)) {
        Found = true;
        if (maxThreadsPerBlock(W.Registers) <= After) {
          After = maxThreadsPerBlock(W.Registers);
          Registers = std::max(Registers, W.Registers);
        }
        MoreShared |= W.SharedBytes > O.SharedBytes;
      }
    if (!Found)
      return keep("kernel '" + O.Name + "' is missing from the rewrite's ptxas report");
    if (MoreShared && FD) {
      // The loops' own check ruled out dynamic shared memory; a kernel that reaches them in a way
      // that check did not follow still must not.
      DynamicSharedFinder Finder(Ctx);
      Finder.function(FD);
      if (!Finder.Found.empty())
        return keep("the rewrite adds static shared memory to kernel '" + O.Name + "', and " +
                    Finder.Found);
    }
    if (!FD) {
      if (After < Before || MoreShared)
        return keep("kernel '" + O.Name + "' needs more of the GPU after the rewrite, and tilepipe "
                    "cannot find its declaration to bound it");
      continue;
    }
    const FunctionDecl *P = patternOf(FD);
    if (!Out.ByKernel.count(P))
      Out.Order.push_back(P);
    Need &N = Out.ByKernel[P];
    N.Threads = std::max(N.Threads, Before);
    if (P != FD && !llvm::is_contained(N.Instances, FD))
      N.Instances.push_back(FD);
    if (After < Before && !N.Bound) {
      N.Bound = true;
      N.Note = "on " + O.Arch + " the rewrite needs " + std::to_string(Registers) +
               " registers per thread against the original's " + std::to_string(O.Registers) +
               ", which would allow blocks of " + std::to_string(After) + " threads instead of " +
               std::to_string(Before);
    }
  }
  return Out;
}

/// `__launch_bounds__` before every declaration of each kernel that needs it, into Bounds (and the
/// main file's into All): in the main file, or in a header the rewrite changes (one with a
/// rewritten loop, written anyway). A kernel declared elsewhere (in a macro, in a header the
/// rewrite leaves as it is) cannot get them, and goes to Unbounded with why it needs them.
llvm::Error boundsEdits(ASTContext &Ctx, const FileResult &R, const Needs &N,
                        std::vector<LaunchCheck::Bound> &Bounds, std::map<std::string, std::string> &Unbounded,
                        clang::tooling::Replacements &All) {
  const SourceManager &SM = Ctx.getSourceManager();
  for (const FunctionDecl *P : N.Order) {
    const Need &K = N.ByKernel.at(P);
    if (!K.Bound)
      continue;
    LaunchCheck::Bound B;
    B.Kernel = P->getNameAsString();
    std::string Value = std::to_string(K.Threads);
    // A template's bounds hold in every instantiation, those other files make included: fewer
    // threads than 1024 only in the instantiations built here (their condition, as a loop's
    // LoopPlan::TemplateGuard), where the bound keeps what the original allowed.
    if (P->getDescribedFunctionTemplate() && K.Threads < 1024) {
      auto Guard = templateGuard(Ctx, K.Instances);
      std::string Why = Guard ? "" : llvm::toString(Guard.takeError());
      if (Guard && Guard->UsesTypes)
        Why = "its instantiations differ by a type, which a bound's condition does not compare";
      else if (Guard && std::next(P->redecls_begin()) != P->redecls_end())
        Why = "the template is declared more than once, where its parameters' names may differ";
      if (!Why.empty()) {
        Unbounded[B.Kernel] = "kernel '" + B.Kernel + "' needs __launch_bounds__ to launch as before (" + K.Note +
                              ") in the instantiations built here alone, and " + Why;
        continue;
      }
      Value = "(" + Guard->Condition + ") ? " + Value + " : 1024";
    }
    B.Note = "__launch_bounds__(" + Value + ") added to '" + B.Kernel + "': " + K.Note;
    const std::string Text = "__launch_bounds__(" + Value + ") ";
    bool Placed = true;
    for (const FunctionDecl *D : P->redecls()) {
      SourceLocation L = D->getLocation();
      if (!L.isFileID()) {
        Placed = false;
        break;
      }
      clang::tooling::Replacement E(SM, L, 0, Text);
      if (SM.getFileID(L) == SM.getMainFileID()) {
        B.Edits.push_back(E);
        continue;
      }
      OptionalFileEntryRef FE = SM.getFileEntryRefForID(SM.getFileID(L));
      std::string Real = FE ? realPathIn(R.Directory, FE->getName()) : "";
      auto H = llvm::find_if(R.Headers, [&](const HeaderRewrite &H) { return H.Path == Real; });
      if (Real.empty() || H == R.Headers.end() || H->Rewritten == H->Original) {
        Placed = false;
        break;
      }
      B.HeaderEdits.push_back({Real, E});
    }
    if (!Placed) {
      Unbounded[B.Kernel] = "kernel '" + B.Kernel + "' needs __launch_bounds__ to launch as before (" +
                            K.Note + "), and its name is in a macro or in a header the rewrite does not change";
      continue;
    }
    for (const clang::tooling::Replacement &E : B.Edits)
      if (llvm::Error Err = All.add(E))
        return keep("internal: " + llvm::toString(std::move(Err)));
    Bounds.push_back(std::move(B));
  }
  return llvm::Error::success();
}

/// The name of kernel O's pattern, as LoopRecord::Kernel spells it (ptxas's name where the
/// translation unit has no such kernel).
std::string patternName(const std::map<KernelKey, const FunctionDecl *> &Kernels, const KernelUsage &O) {
  auto It = Kernels.find({O.Name, O.Params});
  return It == Kernels.end() ? O.Name : patternOf(It->second)->getNameAsString();
}

/// Where ptxas spills more of a kernel's registers to local memory in Rewrite than in Original, on
/// some architecture: the kernel's name (as LoopRecord::Kernel spells it) and what was measured,
/// into Out. Bounded: the kernels Rewrite carries __launch_bounds__ for.
void compareSpills(ArrayRef<KernelUsage> Original, ArrayRef<KernelUsage> Rewrite,
                   const std::map<KernelKey, const FunctionDecl *> &Kernels,
                   ArrayRef<LaunchCheck::Bound> Bounded, std::map<std::string, std::string> &Out) {
  for (const KernelUsage &O : Original)
    for (const KernelUsage &W : Rewrite) {
      if (!sameKernel(O, W) || W.SpillBytes <= O.SpillBytes)
        continue;
      std::string Name = patternName(Kernels, O);
      if (Out.count(Name))
        continue;
      bool WithBounds = llvm::any_of(Bounded, [&](const LaunchCheck::Bound &B) { return B.Kernel == Name; });
      Out[Name] = "on " + O.Arch + " ptxas spills " + std::to_string(W.SpillBytes) +
                  " bytes per thread to local memory in the rewrite" +
                  (WithBounds ? " with the __launch_bounds__ that keep every block size the original allowed"
                              : "") +
                  ", against " + std::to_string(O.SpillBytes) + " in the original";
    }
}

/// Where the rewrite needs so many more registers a thread than the original, on some
/// architecture, that an SM holds fewer of its warps: the kernel's name and what was measured,
/// into Out.
void compareWarps(ArrayRef<KernelUsage> Original, ArrayRef<KernelUsage> Rewrite,
                  const std::map<KernelKey, const FunctionDecl *> &Kernels, std::map<std::string, std::string> &Out) {
  for (const KernelUsage &O : Original)
    for (const KernelUsage &W : Rewrite) {
      if (!sameKernel(O, W) || warpsByRegisters(W.Registers) >= warpsByRegisters(O.Registers))
        continue;
      std::string Name = patternName(Kernels, O);
      if (!Out.count(Name))
        Out[Name] = "on " + O.Arch + " the rewrite needs " + std::to_string(W.Registers) +
                    " registers a thread against the original's " + std::to_string(O.Registers) +
                    ", so an SM holds " + std::to_string(warpsByRegisters(W.Registers)) + " of its warps instead of " +
                    std::to_string(warpsByRegisters(O.Registers));
    }
}

/// How the rewrite is compiled: nvcc, its arguments and architectures, the source's folder, and
/// the rewritten headers beside it.
struct Build {
  const std::string &Nvcc;
  StringRef Dir;
  ArrayRef<std::string> Args, Archs;
  const HeaderTexts &Headers;
  const UsageCache &Cache;
  const std::string &Probes; ///< probeReferences, after the text
};

/// The rewrite's edits and the bounds (All), which are both offsets into the original, applied
/// together and compiled: ptxas must have honoured the bounds.
llvm::Error confirmBounds(const FileResult &R, const clang::tooling::Replacements &All,
                          const std::string &FirstKernel, const Build &B, ArrayRef<KernelUsage> Original,
                          const std::map<KernelKey, const FunctionDecl *> &Kernels,
                          LaunchCheck &Out) {
  clang::tooling::Replacements Combined = R.Edits;
  for (const clang::tooling::Replacement &E : All)
    if (llvm::Error Err = Combined.add(E))
      return keep("the __launch_bounds__ of kernel '" + FirstKernel +
                  "' collide with the rewrite: " + llvm::toString(std::move(Err)));
  auto Text = clang::tooling::applyAllReplacements(R.Original, Combined);
  if (!Text)
    return keep("internal: " + llvm::toString(Text.takeError()));
  // The headers beside it, with the bounds placed in them.
  std::vector<HeaderRewrite> Bounded = R.Headers;
  if (llvm::Error Err = boundHeaders(Out.Bounds, Bounded))
    return keep(llvm::toString(std::move(Err)));
  HeaderTexts Headers = B.Headers;
  for (const HeaderRewrite &H : Bounded) {
    if (llvm::none_of(Out.Bounds, [&](const LaunchCheck::Bound &K) {
          return llvm::any_of(K.HeaderEdits, [&](const auto &E) { return E.first == H.Path; });
        }))
      continue;
    // By its whole name beside the rewrite: a suffix would also match `k.cuh` for `sub/k.cuh`.
    std::optional<std::string> Name = relativeIn(B.Dir, H.Path);
    for (auto &[Rel, T] : Headers)
      if (Name && Rel == *Name)
        T = H.Rewritten;
  }
  auto Again = compileForUsage(B.Nvcc, *Text + B.Probes, B.Dir, B.Args, B.Archs, Headers, &B.Cache);
  if (!Again)
    return keep("the rewrite with __launch_bounds__ does not compile: " +
                llvm::toString(Again.takeError()));
  for (const KernelUsage &O : Original)
    for (const KernelUsage &W : *Again)
      if (sameKernel(O, W) &&
          maxThreadsPerBlock(W.Registers) < maxThreadsPerBlock(O.Registers)) {
        auto It = Kernels.find({O.Name, O.Params});
        if (It != Kernels.end() && boundedByUser(It->second))
          continue;
        return keep("kernel '" + O.Name + "' still needs " + std::to_string(W.Registers) +
                    " registers on " + O.Arch + " with __launch_bounds__, against the original's " +
                    std::to_string(O.Registers));
      }
  compareSpills(Original, *Again, Kernels, Out.Bounds, Out.Spills);
  compareWarps(Original, *Again, Kernels, Out.FewerWarps);
  return llvm::Error::success();
}

/// checkLaunchResources, with its finding: Out.Bounds, or the error that says why every loop stays.
llvm::Error compareLaunchResources(ASTContext &Ctx, const FileResult &R, const std::string &Nvcc,
                                   ArrayRef<std::string> Args, ArrayRef<std::string> Archs,
                                   const UsageCache &Cache, LaunchCheck &Out) {
  const std::string Hint = " (--check-launch-resources=false rewrites without this check)";
  llvm::SmallString<256> Dir(R.Path);
  llvm::sys::fs::make_absolute(Dir);
  llvm::sys::path::remove_filename(Dir);
  // Rewritten headers go next to the rewrite, at their place relative to the source.
  auto Headers = headersBeside(R, Dir, Hint);
  if (!Headers)
    return Headers.takeError();
  // Templates instantiated by tilepipe alone (Probes.cpp) are built too, in both texts: their
  // rewrite runs wherever another file instantiates them with those arguments.
  std::map<KernelKey, const FunctionDecl *> Kernels = kernelsByName(Ctx);
  std::vector<const FunctionDecl *> KernelDecls;
  for (const auto &[Key, FD] : Kernels)
    KernelDecls.push_back(FD);
  const std::string Probes = probeReferences(Ctx, KernelDecls);
  // Both builds at once: each is one nvcc process.
  std::optional<Expected<std::vector<KernelUsage>>> RewriteBuild;
  std::thread Second([&] {
    RewriteBuild.emplace(compileForUsage(Nvcc, R.Rewritten + Probes, Dir, Args, Archs, *Headers, &Cache));
  });
  auto Original = compileForUsage(Nvcc, R.Original + Probes, Dir, Args, Archs, {}, &Cache);
  Second.join();
  auto &Rewrite = *RewriteBuild;
  if (!Original) {
    // Dropped on purpose: without the original's count the rewrite's has nothing to be compared
    // with, and both builds run the same nvcc with the same arguments, so a failure of the
    // rewrite's build repeats the original's (the reason given below) or comes after it.
    llvm::consumeError(Rewrite.takeError());
    return keep("cannot count the original's registers: " + llvm::toString(Original.takeError()) + Hint);
  }
  if (!Rewrite)
    return keep("cannot count the rewrite's registers: " + llvm::toString(Rewrite.takeError()) + Hint);

  std::set<KernelKey> Built;
  for (const KernelUsage &O : *Original)
    Built.insert({O.Name, O.Params});
  for (const auto &[Key, FD] : Kernels)
    if (isProbe(FD) && !FD->isInvalidDecl() && !Built.count(Key))
      return keep("kernel '" + Key.Name + "', which tilepipe instantiated to analyse it, is missing from the "
                  "original's ptxas report");
  auto N = registerNeeds(Ctx, *Original, *Rewrite, Kernels);
  if (!N)
    return N.takeError();
  clang::tooling::Replacements All;
  for (const auto &[Key, FD] : Kernels)
    Out.KernelNames.insert(patternOf(FD)->getNameAsString());
  if (llvm::Error E = boundsEdits(Ctx, R, *N, Out.Bounds, Out.Unbounded, All))
    return E;
  if (Out.Bounds.empty()) {
    compareSpills(*Original, *Rewrite, Kernels, {}, Out.Spills);
    compareWarps(*Original, *Rewrite, Kernels, Out.FewerWarps);
    return llvm::Error::success();
  }
  return confirmBounds(R, All, Out.Bounds.front().Kernel, Build{Nvcc, Dir, Args, Archs, *Headers, Cache, Probes},
                       *Original, Kernels, Out);
}

} // namespace

llvm::Error boundHeaders(ArrayRef<LaunchCheck::Bound> Bounds, std::vector<HeaderRewrite> &Headers) {
  // Each header's edits at once, over its own.
  std::map<std::string, std::vector<clang::tooling::Replacement>> ByHeader;
  for (const LaunchCheck::Bound &K : Bounds)
    for (const auto &[Path, E] : K.HeaderEdits)
      ByHeader[Path].push_back(E);
  for (HeaderRewrite &H : Headers) {
    auto It = ByHeader.find(H.Path);
    if (It == ByHeader.end())
      continue;
    for (const clang::tooling::Replacement &E : It->second)
      if (llvm::Error Err = H.Edits.add(E))
        return llvm::createStringError("the __launch_bounds__ collide with the rewrite of " + H.Path + ": " +
                                       llvm::toString(std::move(Err)));
    auto New = clang::tooling::applyAllReplacements(H.Original, H.Edits);
    if (!New)
      return llvm::createStringError("the __launch_bounds__ in " + H.Path + ": " + llvm::toString(New.takeError()));
    H.Rewritten = *New;
  }
  return llvm::Error::success();
}

LaunchCheck checkLaunchResources(ASTContext &Ctx, const FileResult &R, const std::string &Nvcc,
                                 ArrayRef<std::string> Args, ArrayRef<std::string> Archs,
                                 const UsageCache &Cache) {
  LaunchCheck Out;
  if (llvm::Error E = compareLaunchResources(Ctx, R, Nvcc, Args, Archs, Cache, Out))
    Out.KeepWhy = llvm::toString(std::move(E));
  return Out;
}

} // namespace tilepipe
