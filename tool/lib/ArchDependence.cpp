// ArchDependence (ArchDependence.h): which text the analysis of a loop read that another of nvcc's
// passes reads differently. Three parts that share the preprocessor's view of the file:
//  - Collector, the device parse's PPCallbacks: conditionals on the architecture's macros, macros
//    that depend on them, compiler tests, #line;
//  - HostCollector and HostScanAction, the host pass (--cuda-host-only): its macros, skipped
//    ranges and launches, compared with the device pass's;
//  - the questions the check asks of those facts (archDependentText, movedTextCounts,
//    functionsReadWith).
// The facts are one type (ArchDependence) filled by the first two and read by the third; kept in
// one file, about 800 lines, so that the rule and what collects its facts are read together.
#include "tilepipe/ArchDependence.h"
#include "tilepipe/Check.h"
#include "tilepipe/Find.h"
#include "tilepipe/Parse.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Lex/Lexer.h"
#include "clang/Lex/MacroInfo.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <cassert>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <optional>
#include <thread>

using namespace clang;

namespace tilepipe {

namespace {

/// The identifiers of a stretch of text, in order, as Clang's raw lexer reads them: none in
/// comments, string or character literals or numbers; `skipDirectives` drops preprocessor lines
/// (with their backslash continuations).
std::vector<StringRef> identifiers(StringRef Text, bool SkipDirectives) {
  LangOptions LO;
  LO.CPlusPlus = LO.CPlusPlus11 = LO.CPlusPlus14 = LO.CPlusPlus17 = true;
  LO.LineComment = true;
  LO.Digraphs = true;
  // The lexer reads up to a terminating null: lex a copy, and name the slices of Text.
  const std::string Copy = Text.str();
  Lexer L(SourceLocation(), LO, Copy.data(), Copy.data(), Copy.data() + Copy.size());
  std::vector<StringRef> Out;
  Token T;
  bool InDirective = false;
  while (!L.LexFromRawLexer(T) || T.isNot(tok::eof)) {
    if (T.isAtStartOfLine())
      InDirective = SkipDirectives && T.is(tok::hash);
    if (!InDirective && T.is(tok::raw_identifier))
      Out.push_back(Text.substr(T.getRawIdentifier().data() - Copy.data(), T.getLength()));
  }
  return Out;
}

/// The macros the compiler itself defines per architecture.
bool archMacro(StringRef N) {
  return N == "__CUDA_ARCH__" || N == "__CUDA_ARCH_LIST__" || N == "__CUDA_ARCH_SPECIFIC__" ||
         N == "__CUDA_ARCH_FAMILY_SPECIFIC__" || N.starts_with("__CUDA_ARCH_FEAT_");
}

/// The macros that tell the compilers apart. tilepipe parses with Clang; nvcc builds the rewrite.
/// Text that a user's `#ifdef __NVCC__` (or a version, or `__has_builtin`) selects differs
/// between the two as it does between architectures. `__CUDACC__` itself both define, as 1, in
/// every pass (nvcc's device and host passes, Clang's): `#ifdef __CUDACC__` is no such test.
bool compilerMacro(StringRef N) {
  return N.starts_with("__NVCC") || (N.starts_with("__CUDACC_") && N != "__CUDACC__") || N.starts_with("__clang") ||
         N == "__llvm__" || N == "__CUDA__" || N.starts_with("__NVCOMPILER") ||
         N.starts_with("__GNUC") || N == "__has_builtin" || N == "__has_feature" ||
         N == "__has_extension" || N == "__has_attribute" || N == "__has_cpp_attribute" ||
         N == "__has_declspec_attribute" || N == "__is_identifier";
}

/// L's place: the file and offset of its expansion, or no file.
ArchDependence::Place placeOf(const SourceManager &SM, SourceLocation L) {
  L = SM.getExpansionLoc(L);
  auto FE = SM.getFileEntryRefForID(SM.getFileID(L));
  if (!FE)
    return {};
  return {FE->getName().str(), SM.getFileOffset(L)};
}

/// Where a macro was defined, as "file:offset" (or its text, for one the compiler defines).
std::string definitionOf(const SourceManager &SM, const MacroInfo *MI) {
  SourceLocation L = MI->getDefinitionLoc();
  if (L.isValid() && L.isFileID())
    if (auto FE = SM.getFileEntryRefForID(SM.getFileID(L)))
      return FE->getName().str() + ":" + std::to_string(SM.getFileOffset(L));
  std::string Text;
  for (const Token &T : MI->tokens())
    Text += (T.getIdentifierInfo() ? T.getIdentifierInfo()->getName().str()
                                   : T.isLiteral() ? std::string(T.getLiteralData(), T.getLength())
                                                   : std::string(tok::getTokenName(T.getKind()))) + " ";
  return Text;
}

class Collector : public PPCallbacks {
public:
  Collector(Preprocessor &PP, ArchDependence &Out) : SM(PP.getSourceManager()), Out(Out) {}

  void If(SourceLocation Loc, SourceRange Cond, ConditionValueKind) override {
    Stack.push_back({Loc, conditionTainted(Cond)});
  }
  void Elif(SourceLocation, SourceRange Cond, ConditionValueKind V, SourceLocation) override {
    // Not evaluated: an earlier branch was taken, and (the chain being untainted so far) is taken
    // on every architecture.
    if (!Stack.empty() && V != CVK_NotEvaluated)
      Stack.back().Tainted |= conditionTainted(Cond);
  }
  void Ifdef(SourceLocation Loc, const Token &Name, const MacroDefinition &) override {
    Stack.push_back({Loc, definedTainted(Name) || userCompilerTest(Loc, Name)});
  }
  void Ifndef(SourceLocation Loc, const Token &Name, const MacroDefinition &) override {
    Stack.push_back({Loc, definedTainted(Name) || userCompilerTest(Loc, Name)});
  }
  void Elifdef(SourceLocation Loc, const Token &Name, const MacroDefinition &) override {
    if (!Stack.empty())
      Stack.back().Tainted |= definedTainted(Name) || userCompilerTest(Loc, Name);
  }
  void Elifndef(SourceLocation Loc, const Token &Name, const MacroDefinition &) override {
    if (!Stack.empty())
      Stack.back().Tainted |= definedTainted(Name) || userCompilerTest(Loc, Name);
  }
  void Endif(SourceLocation Loc, SourceLocation) override {
    if (Stack.empty())
      return;
    Open O = Stack.back();
    Stack.pop_back();
    Last = {O.If, Loc, O.Tainted};
    if (!O.Tainted)
      return;
    auto B = place(O.If), E = place(Loc);
    if (B.File.empty() || B.File != E.File)
      return;
    Out.Regions.push_back({B.File, B.Offset, E.Offset, SM.getExpansionLineNumber(O.If)});
  }
  void SourceRangeSkipped(SourceRange Range, SourceLocation EndifLoc) override {
    if (!SM.isInSystemHeader(Range.getBegin())) {
      auto B = place(Range.getBegin()), E = place(Range.getEnd());
      if (!B.File.empty() && B.File == E.File)
        Out.DeviceSkipped.push_back({B.File, B.Offset, E.Offset, 0});
    }
    skipped(Range, EndifLoc);
  }
  void skipped(SourceRange Range, SourceLocation) {
    // Called after the #endif that ends the skip, if one does: then Last is that conditional.
    bool Tainted = inTainted() ||
                   (Last.Tainted && Last.If.isValid() &&
                    !SM.isBeforeInTranslationUnit(Range.getEnd(), Last.If) &&
                    !SM.isBeforeInTranslationUnit(Last.Endif, Range.getBegin()));
    // The toolkit's headers play their own games with __CUDA_ARCH__ (Clang's wrapper undefines it
    // around host declarations); what they define where the parse went is caught by MacroDefined.
    if (!Tainted || SM.isInSystemHeader(Range.getBegin()))
      return;
    // Macros defined or undefined in text the parse skipped: another architecture takes it.
    bool Invalid = false;
    StringRef Text = Lexer::getSourceText(CharSourceRange::getCharRange(Range), SM, LangOptions(),
                                          &Invalid);
    if (Invalid)
      return;
    llvm::SmallVector<StringRef, 64> Lines;
    Text.split(Lines, '\n');
    for (StringRef L : Lines) {
      L = L.ltrim();
      if (!L.consume_front("#"))
        continue;
      L = L.ltrim();
      if (!L.consume_front("define") && !L.consume_front("undef"))
        continue;
      auto Ids = identifiers(L, false);
      if (!Ids.empty())
        Out.Names.insert(Ids.front().str());
    }
  }
  void MacroDefined(const Token &Name, const MacroDirective *MD) override {
    StringRef N = Name.getIdentifierInfo()->getName();
    if (libraryAssert(Name))
      return;
    bool Tainted = inTainted();
    // A user's macro that names one of these depends on the architecture too. (The toolkit's
    // headers are taken at their word: their macros that merely mention the architecture's, as
    // __global__ does through its helpers, mean the same everywhere; those they define under an
    // architecture's #if, they define differently, and are caught above.)
    if (const MacroInfo *MI = MD ? MD->getMacroInfo() : nullptr;
        MI && !SM.isInSystemHeader(Name.getLocation()))
      for (const Token &T : MI->tokens())
        if (const IdentifierInfo *II = T.getIdentifierInfo())
          Tainted |= tainted(II->getName());
    if (!Tainted)
      return;
    // A toolkit header's helper macro, defined under an architecture's #if where nothing named it
    // before (`#define warpSize 32` in sm_30_intrinsics.h), and undefined again in the same header
    // (undefineScoped) is no macro of the user's text in any pass.
    const bool Scoped = SM.isInSystemHeader(Name.getLocation()) && !Out.Names.count(N.str());
    Out.Names.insert(N.str());
    if (Scoped)
      HeaderScoped[N.str()] = SM.getFileID(SM.getExpansionLoc(Name.getLocation()));
    else
      HeaderScoped.erase(N.str());
  }
  void MacroUndefined(const Token &Name, const MacroDefinition &MD, const MacroDirective *) override {
    StringRef N = Name.getIdentifierInfo()->getName();
    if (SM.isInSystemHeader(Name.getLocation())) {
      // `#undef memset` in <cstring>, where no memset is a macro, changes nothing in this pass;
      // the toolkit's headers are taken at their word for the others.
      if (!MD.getMacroInfo())
        return;
      if (auto It = HeaderScoped.find(N.str());
          It != HeaderScoped.end() && It->second == SM.getFileID(SM.getExpansionLoc(Name.getLocation()))) {
        HeaderScoped.erase(It);
        Out.Names.erase(N.str());
        return;
      }
    }
    if (inTainted() && !libraryAssert(Name)) {
      Out.Names.insert(N.str());
      HeaderScoped.erase(N.str());
    }
  }
  void MacroExpands(const Token &Name, const MacroDefinition &MD, SourceRange Range,
                    const MacroArgs *) override {
    StringRef N = Name.getIdentifierInfo()->getName();
    if (const MacroInfo *MI = MD.getMacroInfo(); MI && !SM.isInSystemHeader(SM.getExpansionLoc(Range.getBegin()))) {
      ArchDependence::Place P = place(Range.getBegin());
      if (!P.File.empty())
        Out.DeviceExpansions[{P.File, P.Offset, N.str()}] = definitionOf(SM, MI);
    }
    if (N == "__COUNTER__" || N == "__LINE__") {
      SourceLocation L = SM.getExpansionLoc(Range.getBegin());
      ArchDependence::Place P = place(L);
      if (!P.File.empty() && !SM.isInSystemHeader(L))
        Out.Counting.push_back({N.str(), P});
      return;
    }
    if (!tainted(N))
      return;
    SourceLocation L = SM.getExpansionLoc(Range.getBegin());
    Hits.push_back(L);
    ArchDependence::Place P = place(L);
    if (!P.File.empty() && !SM.isInSystemHeader(L))
      Out.Expansions.push_back({N.str(), P});
  }
  void EndOfMainFile() override { Out.Complete = true; }
  void FileChanged(SourceLocation Loc, FileChangeReason Reason, SrcMgr::CharacteristicKind,
                   FileID) override {
    if (Reason != EnterFile || SM.isInSystemHeader(Loc))
      return;
    // The user's text may name what a toolkit header defined: those macros are no longer scoped.
    HeaderScoped.clear();
    if (auto FE = SM.getFileEntryRefForID(SM.getFileID(Loc)))
      Out.DeviceFiles.insert(FE->getName().str());
  }

private:
  struct Open {
    SourceLocation If;
    bool Tainted;
  };
  struct Closed {
    SourceLocation If, Endif;
    bool Tainted = false;
  };

  /// Names in Out.Names only for a define in a toolkit header (under an architecture's #if), with
  /// the header, while no user text has been read since.
  std::map<std::string, FileID> HeaderScoped;

  bool tainted(StringRef N) const { return archMacro(N) || Out.Names.count(N.str()); }
  /// The macros of the C library's assert.h, which the toolkit's wrappers include (and which
  /// defines and undefines them) under an architecture's conditional: on every architecture
  /// assert evaluates its argument and traps where it is false, which a rewrite keeps in place.
  /// Where NDEBUG differs between architectures, so does assert.
  bool libraryAssert(const Token &Name) const {
    SourceLocation L = Name.getLocation();
    return SM.isInSystemHeader(L) && llvm::sys::path::filename(SM.getFilename(SM.getSpellingLoc(L))) == "assert.h" &&
           !Out.Names.count("NDEBUG");
  }
  bool inTainted() const {
    return llvm::any_of(Stack, [](const Open &O) { return O.Tainted; });
  }
  /// `#ifdef __CUDA_ARCH__` is the same on every architecture (device code always defines it);
  /// the others of its family, and macros defined under an architecture's conditional, are not.
  bool definedTainted(const Token &Name) const {
    StringRef N = Name.getIdentifierInfo()->getName();
    return N != "__CUDA_ARCH__" && tainted(N);
  }
  bool userCompilerTest(SourceLocation Loc, const Token &Name) const {
    return !SM.isInSystemHeader(Loc) && compilerMacro(Name.getIdentifierInfo()->getName());
  }
  bool conditionTainted(SourceRange Cond) {
    SourceLocation B = SM.getExpansionLoc(Cond.getBegin()), E = SM.getExpansionLoc(Cond.getEnd());
    bool Tainted = llvm::any_of(Hits, [&](SourceLocation L) {
      return !SM.isBeforeInTranslationUnit(L, B) && !SM.isBeforeInTranslationUnit(E, L);
    });
    Hits.clear();
    bool Invalid = false;
    StringRef Text =
        Lexer::getSourceText(CharSourceRange::getTokenRange(B, E), SM, LangOptions(), &Invalid);
    if (Invalid)
      return true; // cannot read it: assume the worst
    auto Ids = identifiers(Text, false);
    // The toolkit's headers are taken at their word here too: they tell the compilers apart
    // to mean the same on each.
    bool User = !SM.isInSystemHeader(B);
    for (size_t I = 0; I < Ids.size(); ++I) {
      Tainted |= User && compilerMacro(Ids[I]);
      if (Ids[I] == "defined" && I + 1 < Ids.size() && Ids[I + 1] == "__CUDA_ARCH__") {
        ++I; // defined(__CUDA_ARCH__) holds in all device code
        continue;
      }
      Tainted |= tainted(Ids[I]);
    }
    return Tainted;
  }
  ArchDependence::Place place(SourceLocation L) const { return placeOf(SM, L); }

  SourceManager &SM;
  ArchDependence &Out;
  std::vector<Open> Stack;
  Closed Last;
  std::vector<SourceLocation> Hits; ///< tainted expansions since the last condition
};

/// What the host pass reads, filled on its thread (HostPass) and moved into ArchDependence's Host*
/// fields once both passes are done.
struct HostSide {
  std::set<std::string> Macros;
  std::vector<ArchDependence::Region> Skipped;
  std::vector<ArchDependence::Launch> Launches;
  /// The identifiers of user text (Definition "") and the macro expansions in it, with the
  /// definition each took ("file:offset"), for the comparison with the device parse.
  struct Read {
    ArchDependence::Place At;
    std::string Name, Definition;
  };
  std::vector<Read> Reads;
};

/// The host pass: every macro it defines, every identifier of user text it reads and which
/// definition each macro expansion takes, for the comparison with what the device parse recorded.
class HostCollector : public PPCallbacks {
public:
  HostCollector(Preprocessor &PP, HostSide &Out) : SM(PP.getSourceManager()), Out(Out) {
    PP.setTokenWatcher([this](const Token &T) { token(T); });
  }
  void MacroDefined(const Token &Name, const MacroDirective *) override {
    Out.Macros.insert(Name.getIdentifierInfo()->getName().str());
  }
  void MacroExpands(const Token &Name, const MacroDefinition &MD, SourceRange Range,
                    const MacroArgs *) override {
    const MacroInfo *MI = MD.getMacroInfo();
    SourceLocation L = SM.getExpansionLoc(Range.getBegin());
    if (!MI || SM.isInSystemHeader(L))
      return;
    ArchDependence::Place P = place(L);
    if (!P.File.empty())
      Out.Reads.push_back({P, Name.getIdentifierInfo()->getName().str(), definitionOf(SM, MI)});
  }
  void EndOfMainFile() override { Complete = true; }
  bool Complete = false;
  void SourceRangeSkipped(SourceRange Range, SourceLocation) override {
    if (SM.isInSystemHeader(Range.getBegin()))
      return;
    auto B = place(Range.getBegin()), E = place(Range.getEnd());
    if (!B.File.empty() && B.File == E.File)
      Out.Skipped.push_back({B.File, B.Offset, E.Offset, 0});
  }

private:
  struct Tok {
    tok::TokenKind K;
    std::string Text;
  };
  std::vector<Tok> Recent;                 ///< the user text's tokens since the last `;` or `}`
  std::optional<ArchDependence::Launch> Open; ///< a launch whose configuration is being read
  std::vector<std::vector<Tok>> Args;
  int Depth = 0;

  void token(const Token &T) {
    if (T.is(tok::eof))
      return;
    SourceLocation L = SM.getExpansionLoc(T.getLocation());
    if (L.isInvalid() || SM.isInSystemHeader(L))
      return;
    ArchDependence::Place P = place(L);
    if (T.getIdentifierInfo() && !P.File.empty())
      Out.Reads.push_back({P, T.getIdentifierInfo()->getName().str(), ""});
    launches(T, P);
  }
  /// Reads launches `f<<<a, b, smem, s>>>` from the token stream.
  void launches(const Token &T, const ArchDependence::Place &P) {
    std::string Text = T.getIdentifierInfo() ? T.getIdentifierInfo()->getName().str()
                       : T.isLiteral() ? std::string(T.getLiteralData(), T.getLength())
                                       : std::string(tok::getTokenName(T.getKind()));
    if (Open) {
      if (T.is(tok::greatergreatergreater) && Depth == 0) {
        if (Args.size() >= 3) {
          const std::vector<Tok> &S = Args[2];
          for (const Tok &X : S)
            Open->Smem += X.Text;
          Open->Dynamic = !(S.size() == 1 && S[0].K == tok::numeric_constant && zero(S[0].Text));
        }
        Out.Launches.push_back(*Open);
        Open.reset();
        return;
      }
      if (T.isOneOf(tok::l_paren, tok::l_square, tok::l_brace, tok::lesslessless))
        ++Depth;
      else if (T.isOneOf(tok::r_paren, tok::r_square, tok::r_brace, tok::greatergreatergreater))
        --Depth;
      if (T.is(tok::comma) && Depth == 0)
        Args.emplace_back();
      else
        Args.back().push_back({T.getKind(), Text});
      return;
    }
    if (T.is(tok::lesslessless)) {
      // The callee: the name before `<<<`, past a template argument list `<...>`.
      size_t I = Recent.size();
      if (I && Recent[I - 1].K == tok::greater) {
        int D = 0;
        while (I-- > 0) {
          D += Recent[I].K == tok::greater ? 1 : Recent[I].K == tok::less ? -1 : 0;
          if (D == 0)
            break;
        }
      }
      std::string Callee = I > 0 && I <= Recent.size() && Recent[I - 1].K == tok::identifier
                               ? Recent[I - 1].Text
                               : "";
      Open = ArchDependence::Launch{Callee, false, "", P};
      Args.assign(1, {});
      Depth = 0;
      return;
    }
    if (T.isOneOf(tok::semi, tok::r_brace, tok::l_brace))
      Recent.clear();
    else
      Recent.push_back({T.getKind(), Text});
  }
  static bool zero(StringRef Lit) {
    Lit = Lit.rtrim("uUlLzZ");
    unsigned long long V = 1;
    return !Lit.getAsInteger(0, V) && V == 0;
  }
  ArchDependence::Place place(SourceLocation L) const { return placeOf(SM, L); }
  SourceManager &SM;
  HostSide &Out;
};

/// Whether the device parse did not read P: in a file it never opened, or in text it skipped.
static bool deviceSkipped(const ArchDependence &A, const ArchDependence::Place &P) {
  if (!A.DeviceFiles.count(P.File))
    return true;
  return llvm::any_of(A.DeviceSkipped, [&](const ArchDependence::Region &R) {
    return R.File == P.File && R.Begin <= P.Offset && P.Offset <= R.End;
  });
}

/// The host pass's reads against the device parse's: the identifiers only the host pass read
/// (HostOnlyNames, each at its first place), and the expansions of a macro that took another
/// definition than in the device parse (HostRedefined).
static void compareReads(const std::vector<HostSide::Read> &Reads, ArchDependence &Out) {
  for (const HostSide::Read &R : Reads) {
    const bool Skipped = deviceSkipped(Out, R.At);
    if (R.Definition.empty()) {
      if (Skipped)
        Out.HostOnlyNames.insert({R.Name, R.At});
      continue;
    }
    if (Skipped)
      continue; // (the identifier itself is recorded as host-only)
    auto It = Out.DeviceExpansions.find({R.At.File, R.At.Offset, R.Name});
    if (It == Out.DeviceExpansions.end() || It->second != R.Definition)
      Out.HostRedefined.push_back(R.At);
  }
}

class HostScanAction : public PreprocessOnlyAction {
public:
  HostScanAction(HostSide &Out, bool &Complete) : Out(Out), Complete(Complete) {}
  bool BeginSourceFileAction(CompilerInstance &CI) override {
    auto C = std::make_unique<HostCollector>(CI.getPreprocessor(), Out);
    Collector = C.get();
    CI.getPreprocessor().addPPCallbacks(std::move(C));
    return true;
  }
  void EndSourceFileAction() override {
    Complete = Collector && Collector->Complete;
    PreprocessOnlyAction::EndSourceFileAction();
  }

private:
  HostSide &Out;
  bool &Complete;
  HostCollector *Collector = nullptr;
};

class HostScanFactory : public tooling::FrontendActionFactory {
public:
  HostScanFactory(HostSide &Out, bool &Complete) : Out(Out), Complete(Complete) {}
  std::unique_ptr<FrontendAction> create() override {
    return std::make_unique<HostScanAction>(Out, Complete);
  }

private:
  HostSide &Out;
  bool &Complete;
};

/// The function that holds S (a lambda's call operator counts as one).
const FunctionDecl *enclosingFunction(ASTContext &Ctx, const Stmt *S) {
  DynTypedNode N = DynTypedNode::create(*S);
  for (unsigned Guard = 0; Guard < 4096; ++Guard) {
    auto Parents = Ctx.getParents(N);
    if (Parents.empty())
      return nullptr;
    N = Parents[0];
    if (const auto *FD = N.get<FunctionDecl>())
      return FD;
    if (const auto *L = N.get<LambdaExpr>())
      return L->getCallOperator();
  }
  return nullptr;
}

struct Callees : RecursiveASTVisitor<Callees> {
  std::vector<const FunctionDecl *> Found;
  bool shouldVisitImplicitCode() const { return true; }
  bool VisitCallExpr(CallExpr *E) {
    if (const FunctionDecl *F = E->getDirectCallee())
      Found.push_back(F);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *E) {
    Found.push_back(E->getConstructor());
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (const auto *F = dyn_cast<FunctionDecl>(E->getDecl()))
      Found.push_back(F);
    return true;
  }
  bool VisitLambdaExpr(LambdaExpr *E) {
    Found.push_back(E->getCallOperator());
    return true;
  }
};

} // namespace

std::unique_ptr<PPCallbacks> archDependenceCollector(Preprocessor &PP, ArchDependence &Out) {
  return std::make_unique<Collector>(PP, Out);
}

static void finishPasses(const tooling::CompilationDatabase &DB, const std::string &Path,
                         ArchDependence &Out);

struct HostPass::State {
  const tooling::CompilationDatabase &DB;
  std::string Path;
  HostSide Host; ///< filled on the thread
  bool Ran = false, Complete = false, Finished = false;
  std::thread Thread;
};

HostPass::HostPass(const tooling::CompilationDatabase &DB, std::string Path, std::vector<std::string> ParseArgs)
    : S(new State{DB, std::move(Path), {}, false, false, false, {}}) {
  for (std::string &A : ParseArgs)
    if (A == "--cuda-device-only")
      A = "--cuda-host-only";
  S->Thread = std::thread([St = S.get(), HostArgs = std::move(ParseArgs)] {
    IgnoringDiagConsumer Quiet; // the device parse reports the file's diagnostics
    // A file system of its own, whose working directory the tool may move (see processFile).
    tooling::ClangTool Host(St->DB, {St->Path}, std::make_shared<PCHContainerOperations>(),
                            llvm::vfs::createPhysicalFileSystem());
    Host.appendArgumentsAdjuster(cudaArgumentsAdjuster(HostArgs));
    Host.setDiagnosticConsumer(&Quiet);
    HostScanFactory HF(St->Host, St->Complete);
    St->Ran = Host.run(&HF) == 0;
  });
}

HostPass::~HostPass() {
  if (S->Thread.joinable())
    S->Thread.join();
}

llvm::Error HostPass::finish(ArchDependence &Out) {
  if (S->Thread.joinable())
    S->Thread.join();
  assert(!S->Finished && "the host pass is compared once");
  S->Finished = true;
  if (!Out.Complete)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   S->Path + ": error: the parse did not read the file to its end, so "
                                             "its architecture-dependent text is not known");
  if (!S->Ran || !S->Complete)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   S->Path + ": error: the file could not be preprocessed as nvcc's "
                                             "host pass reads it (--cuda-host-only)");
  HostSide &H = S->Host;
  Out.HostMacros = std::move(H.Macros);
  Out.HostSkipped = std::move(H.Skipped);
  Out.HostLaunches = std::move(H.Launches);
  compareReads(H.Reads, Out);
  finishPasses(S->DB, S->Path, Out);
  return llvm::Error::success();
}

/// What the comparison of the passes finds: whether they read the user's text alike, and a #line
/// that one of them skips or that sits under a conditional on the architecture.
static void finishPasses(const tooling::CompilationDatabase &DB, const std::string &Path,
                         ArchDependence &Out) {
  // A #line (or line marker) in text one pass skips, or under a conditional on the architecture.
  std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> Files;
  // The passes name files as the compile command does: relative ones from its directory.
  auto Commands = DB.getCompileCommands(Path);
  std::string CommandDir = Commands.empty() ? "" : Commands.front().Directory;
  auto LineDirectiveIn = [&](const ArchDependence::Region &R) -> std::string {
    auto &Buf = Files[R.File];
    if (!Buf) {
      llvm::SmallString<256> Name(R.File);
      if (llvm::sys::path::is_relative(Name) && !CommandDir.empty())
        llvm::sys::path::make_absolute(CommandDir, Name);
      auto B = llvm::MemoryBuffer::getFile(Name);
      if (!B)
        return R.File; // cannot read it: assume the worst
      Buf = std::move(*B);
    }
    StringRef Text = Buf->getBuffer();
    if (R.Begin > Text.size())
      return "";
    StringRef In = Text.slice(R.Begin, std::min<size_t>(R.End + 1, Text.size()));
    size_t Off = R.Begin;
    for (StringRef Rest = In; !Rest.empty();) {
      auto [Line, Next] = Rest.split('\n');
      StringRef D = Line.ltrim();
      if (D.consume_front("#")) {
        D = D.ltrim();
        if (D.starts_with("line") || (!D.empty() && llvm::isDigit(D[0])))
          return llvm::sys::path::filename(R.File).str() + ":" +
                 std::to_string(1 + Text.take_front(Off).count('\n'));
      }
      Off += Line.size() + 1;
      Rest = Next;
    }
    return "";
  };
  auto Key = [](const ArchDependence::Region &R) { return std::make_tuple(R.File, R.Begin, R.End); };
  std::set<std::tuple<std::string, unsigned, unsigned>> DevSkip, HostSkip;
  for (const auto &R : Out.DeviceSkipped)
    DevSkip.insert(Key(R));
  for (const auto &R : Out.HostSkipped)
    HostSkip.insert(Key(R));
  Out.SameUserText = DevSkip == HostSkip && Out.HostOnlyNames.empty() && Out.HostRedefined.empty();
  for (const auto *Ranges : {&Out.DeviceSkipped, &Out.HostSkipped, &Out.Regions})
    for (const ArchDependence::Region &R : *Ranges)
      if (Out.PassDependentLine.empty())
        Out.PassDependentLine = LineDirectiveIn(R);
}

std::string movedTextCounts(ASTContext &Ctx, const ArchDependence &Arch, const Stmt *Loop) {
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation B = SM.getExpansionLoc(Loop->getBeginLoc()), E = SM.getExpansionLoc(Loop->getEndLoc());
  auto FE = SM.getFileEntryRefForID(SM.getFileID(B));
  if (!FE)
    return "";
  unsigned Bo = SM.getFileOffset(B), Eo = SM.getFileOffset(E);
  for (const auto &[Macro, P] : Arch.Counting)
    if (P.File == FE->getName() && Bo <= P.Offset && P.Offset <= Eo)
      return "the loop's text expands '" + Macro + "' at line " +
             std::to_string(SM.getLineNumber(SM.getFileID(B), P.Offset)) +
             " (directly or inside a macro, as assert() does): its value changes where the rewrite moves or repeats the text";
  return "";
}

std::vector<const FunctionDecl *> functionsReadWith(ASTContext &Ctx, const TranslationUnitIndex &Index,
                                                   const FunctionDecl *Start) {
  const SourceManager &SM = Ctx.getSourceManager();
  std::set<const FunctionDecl *> Seen;
  std::deque<std::pair<const FunctionDecl *, bool>> Work{{Start, true}};
  std::vector<const FunctionDecl *> Order;
  while (!Work.empty()) {
    auto [F, Up] = Work.front();
    Work.pop_front();
    if (!F)
      continue;
    const FunctionDecl *Def = F->getDefinition();
    if (!Def)
      Def = F;
    if (!Seen.insert(Def).second)
      continue;
    if (SM.isInSystemHeader(SM.getExpansionLoc(Def->getLocation())))
      continue;
    Order.push_back(Def);
    if (Def->hasBody() && !(Up && Def != Start && !isDeviceCode(Def))) {
      Callees C;
      C.TraverseStmt(Def->getBody());
      for (const FunctionDecl *G : C.Found)
        Work.push_back({G, false});
      // A template's instantiation reads its pattern's text: follow the pattern's calls too.
      if (const FunctionDecl *P = Def->getTemplateInstantiationPattern())
        Work.push_back({P, false});
    }
    if (Up)
      for (const CallExpr *Call : Index.callersOf(Def))
        Work.push_back({enclosingFunction(Ctx, Call), true});
  }
  return Order;
}

std::string archDependentText(ASTContext &Ctx, const TranslationUnitIndex &Index,
                              const ArchDependence &Arch, const FunctionDecl *Start) {
  const SourceManager &SM = Ctx.getSourceManager();
  // The functions the analysis of a loop in Start may read; of a host function that launches the
  // kernel, its own text (the other kernels it launches run apart).
  std::vector<const FunctionDecl *> Order = functionsReadWith(Ctx, Index, Start);

  auto Name = [](const FunctionDecl *F) {
    if (const auto *M = dyn_cast<CXXMethodDecl>(F); M && M->getParent()->isLambda())
      return std::string("a lambda");
    return "'" + F->getNameAsString() + "'";
  };
  for (const FunctionDecl *F : Order) {
    CharSourceRange R = SM.getExpansionRange(F->getSourceRange());
    SourceLocation B = R.getBegin(), E = R.getEnd();
    if (B.isInvalid() || E.isInvalid() || SM.getFileID(B) != SM.getFileID(E))
      continue;
    FileID FID = SM.getFileID(B);
    auto FE = SM.getFileEntryRefForID(FID);
    if (!FE)
      continue;
    std::string File = FE->getName().str();
    unsigned Bo = SM.getFileOffset(B), Eo = SM.getFileOffset(E);
    auto Where = [&](const std::string &File, unsigned Line) {
      return llvm::sys::path::filename(File).str() + ":" + std::to_string(Line);
    };
    // Defined inside an architecture's conditional, directly or through #include.
    for (SourceLocation L = B; L.isValid();) {
      FileID Fi = SM.getFileID(L);
      auto FEi = SM.getFileEntryRefForID(Fi);
      unsigned Off = SM.getFileOffset(L);
      if (FEi)
        for (const ArchDependence::Region &G : Arch.Regions)
          if (G.File == FEi->getName() && G.Begin <= Off && Off <= G.End)
            return Name(F) + " is defined inside an '#if' on the compute capability (" +
                   Where(G.File, G.Line) + ")";
      L = SM.getIncludeLoc(Fi);
    }
    for (const ArchDependence::Region &G : Arch.Regions)
      if (G.File == File && G.Begin <= Eo && Bo <= G.End)
        return Name(F) + " has text that an '#if' on the compute capability or the compiler selects (" +
               Where(G.File, G.Line) + ")";
    for (const auto &[Macro, P] : Arch.Expansions)
      if (P.File == File && Bo <= P.Offset && P.Offset <= Eo)
        return Name(F) + " expands '" + Macro + "', which depends on the compute capability (" +
               Where(File, SM.getLineNumber(FID, P.Offset)) + ")";
    StringRef Text = SM.getBufferData(FID).slice(Bo, Eo + 1);
    for (StringRef Id : identifiers(Text, true))
      if (archMacro(Id) || Arch.Names.count(Id.str()))
        return Name(F) + " uses '" + Id.str() +
               "', a macro that other compute capabilities define differently";
      else if (compilerMacro(Id))
        return Name(F) + " uses '" + Id.str() +
               "', a macro that nvcc, which builds the rewrite, defines differently from the parse's compiler";
  }
  return "";
}

} // namespace tilepipe
