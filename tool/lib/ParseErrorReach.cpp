// parseErrorReach (ArchDependence.h): whether text Clang could not parse, which nvcc may, can change
// what the analysis of a loop reads. Clang recovers from most errors and keeps the rest of the AST;
// what it lost is unknown, so the rule reads the text around the error, and the AST only where it
// proves what a name in that text means.
#include "tilepipe/ArchDependence.h"
#include "tilepipe/AstUtil.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/Path.h"
#include <map>
#include <set>
#include <tuple>

using namespace clang;

namespace tilepipe {

namespace {

/// Every function definition of the translation unit with its file range (lambdas' bodies, class
/// members and templates' patterns too).
struct FunctionRanges : RecursiveASTVisitor<FunctionRanges> {
  const SourceManager &SM;
  struct Range {
    const FunctionDecl *F;
    FileID File;
    unsigned Begin, End;
  };
  std::vector<Range> Out;
  explicit FunctionRanges(const SourceManager &SM) : SM(SM) {}
  bool shouldVisitTemplateInstantiations() const { return false; }
  bool shouldVisitLambdaBody() const { return true; }
  bool VisitFunctionDecl(FunctionDecl *F) {
    if (!F->doesThisDeclarationHaveABody())
      return true;
    CharSourceRange R = SM.getExpansionRange(F->getSourceRange());
    SourceLocation B = R.getBegin(), E = R.getEnd();
    if (B.isValid() && E.isValid() && SM.getFileID(B) == SM.getFileID(E))
      Out.push_back({F, SM.getFileID(B), SM.getFileOffset(B), SM.getFileOffset(E)});
    return true;
  }
};

/// The namespace D is declared in, seen through inline and anonymous namespaces (whose names
/// lookup in the parent finds as its own).
const DeclContext *namespaceOf(const Decl *D) {
  const DeclContext *DC = D->getDeclContext()->getEnclosingNamespaceContext();
  for (const auto *N = dyn_cast<NamespaceDecl>(DC); N && (N->isInline() || N->isAnonymousNamespace());
       N = dyn_cast<NamespaceDecl>(DC))
    DC = N->getParent()->getEnclosingNamespaceContext();
  return DC->getPrimaryContext();
}

/// The namespaces argument-dependent lookup on a value of type T looks in (the classes' and
/// enumerations' namespaces, of bases and template arguments too), into Out; false when T is
/// dependent, so that the instantiation alone can tell.
bool adlNamespaces(QualType T, std::set<const DeclContext *> &Out, unsigned Depth = 0) {
  if (T.isNull() || Depth > 8)
    return false;
  T = innermostType(T);
  if (isa<BuiltinType>(T.getTypePtr()))
    return true;
  if (T->isDependentType())
    return false;
  if (const auto *E = T->getAs<EnumType>())
    return Out.insert(namespaceOf(E->getDecl())), true;
  const auto *R = T->getAsCXXRecordDecl();
  if (!R || !R->hasDefinition())
    return false; // functions, member pointers, incomplete classes: not worth the rules
  Out.insert(namespaceOf(R));
  for (const CXXBaseSpecifier &B : R->bases())
    if (!adlNamespaces(B.getType(), Out, Depth + 1))
      return false;
  if (const auto *S = dyn_cast<ClassTemplateSpecializationDecl>(R))
    for (const TemplateArgument &A : S->getTemplateArgs().asArray())
      if (A.getKind() == TemplateArgument::Type && !adlNamespaces(A.getAsType(), Out, Depth + 1))
        return false;
      else if (A.getKind() != TemplateArgument::Type && A.getKind() != TemplateArgument::Integral &&
               A.getKind() != TemplateArgument::NullPtr)
        return false;
  return true;
}

/// One declaration for a function and all that stand for it: its template, its instantiations,
/// its redeclarations.
const Decl *key(const Decl *D) {
  if (const auto *F = dyn_cast<FunctionDecl>(D)) {
    if (const FunctionDecl *P = F->getTemplateInstantiationPattern())
      F = P;
    if (const FunctionTemplateDecl *T = F->getPrimaryTemplate())
      return T->getCanonicalDecl();
    if (const FunctionTemplateDecl *T = F->getDescribedFunctionTemplate())
      return T->getCanonicalDecl();
    return F->getCanonicalDecl();
  }
  return D->getCanonicalDecl();
}

/// What Clang made of each name it parsed at a place of a file, outside macros: the declarations
/// it may mean, or Open when it may mean one that only the program's instantiation (or nvcc's
/// parse of text Clang lost) can tell.
struct NameMeanings : RecursiveASTVisitor<NameMeanings> {
  struct Meaning {
    std::set<const Decl *> Decls;
    /// The namespaces the name may find a function in: those of the declarations it names, and
    /// those argument-dependent lookup at the program's instantiation may look in besides.
    std::set<const DeclContext *> Adl;
    bool Open = false;
  };
  const SourceManager &SM;
  std::map<SourceLocation, Meaning> At;
  std::map<const UnresolvedLookupExpr *, std::set<const DeclContext *>> KnownAdl;
  std::vector<const UnresolvedLookupExpr *> Lookups;
  explicit NameMeanings(const SourceManager &SM) : SM(SM) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool shouldVisitLambdaBody() const { return true; }

  /// D and every declaration its name finds where D is declared: an overload that Clang did not
  /// choose may be the one nvcc's parse chooses.
  void mean(SourceLocation L, const NamedDecl *D) {
    if (L.isInvalid() || !L.isFileID())
      return;
    Meaning &M = At[L];
    if (!D || isa<UsingShadowDecl>(D)) {
      M.Open = true;
      return;
    }
    M.Decls.insert(key(D));
    // Lookup of the name where D stands also finds what its namespace's inline namespaces declare,
    // and what a reopening of the namespace declares after this point: the namespace counts whole.
    M.Adl.insert(namespaceOf(D));
    const DeclContext *DC = D->getDeclContext()->getRedeclContext();
    if (!DC->isFunctionOrMethod())
      for (const NamedDecl *O : DC->lookup(D->getDeclName())) {
        if (isa<UsingShadowDecl>(O))
          M.Open = true;
        else
          M.Decls.insert(key(O));
      }
  }
  void open(SourceLocation L) {
    if (L.isValid() && L.isFileID())
      At[L].Open = true;
  }
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    mean(E->getLocation(), E->getFoundDecl());
    return true;
  }
  bool VisitMemberExpr(MemberExpr *E) {
    mean(E->getMemberLoc(), E->getFoundDecl().getDecl());
    return true;
  }
  bool VisitUnresolvedLookupExpr(UnresolvedLookupExpr *E) {
    for (const NamedDecl *D : E->decls())
      mean(E->getNameLoc(), D);
    Lookups.push_back(E);
    return true;
  }
  bool VisitCallExpr(CallExpr *E) {
    if (const auto *U = dyn_cast<UnresolvedLookupExpr>(E->getCallee()->IgnoreParenImpCasts())) {
      std::set<const DeclContext *> Adl;
      bool Known = true;
      for (const Expr *A : E->arguments())
        Known = Known && adlNamespaces(A->getType(), Adl);
      if (Known)
        KnownAdl[U].insert(Adl.begin(), Adl.end());
    }
    return true;
  }
  bool VisitUnresolvedMemberExpr(UnresolvedMemberExpr *E) { return open(E->getMemberLoc()), true; }
  bool VisitCXXDependentScopeMemberExpr(CXXDependentScopeMemberExpr *E) {
    return open(E->getMemberLoc()), true;
  }
  bool VisitDependentScopeDeclRefExpr(DependentScopeDeclRefExpr *E) { return open(E->getLocation()), true; }

  /// After the traversal: a lookup that argument-dependent lookup may widen at instantiation is open.
  void finish() {
    for (const UnresolvedLookupExpr *E : Lookups) {
      if (!E->requiresADL())
        continue;
      auto It = KnownAdl.find(E);
      if (It == KnownAdl.end())
        open(E->getNameLoc());
      else if (E->getNameLoc().isFileID())
        At[E->getNameLoc()].Adl.insert(It->second.begin(), It->second.end());
    }
  }
};

/// Texts the function with an error consists of: its own range, then the text of every macro it
/// expands (from the macro's text to the end of its definition's logical line).
std::vector<std::pair<FileID, std::pair<unsigned, unsigned>>>
textsOf(const SourceManager &SM, FileID File, unsigned Begin, unsigned End) {
  std::vector<std::pair<FileID, std::pair<unsigned, unsigned>>> Texts{{File, {Begin, End + 1}}};
  for (unsigned I = 0, N = SM.local_sloc_entry_size(); I < N; ++I) {
    const SrcMgr::SLocEntry &S = SM.getLocalSLocEntry(I);
    if (!S.isExpansion() || S.getExpansion().isMacroArgExpansion())
      continue;
    SourceLocation At = SM.getExpansionLoc(S.getExpansion().getExpansionLocStart());
    if (SM.getFileID(At) != File || SM.getFileOffset(At) < Begin || SM.getFileOffset(At) > End)
      continue;
    SourceLocation Sp = SM.getSpellingLoc(S.getExpansion().getSpellingLoc());
    if (Sp.isInvalid() || !SM.getFileEntryRefForID(SM.getFileID(Sp)))
      continue;
    StringRef Buf = SM.getBufferData(SM.getFileID(Sp));
    unsigned B = SM.getFileOffset(Sp), E = B;
    while (E < Buf.size() && (Buf[E] != '\n' || (E > 0 && Buf[E - 1] == '\\')))
      ++E;
    Texts.push_back({SM.getFileID(Sp), {B, E}});
  }
  return Texts;
}

/// Raw tokens of a piece of a file, each with its file place.
template <typename Fn>
void forEachIdentifier(ASTContext &Ctx, FileID File, std::pair<unsigned, unsigned> Span, Fn F) {
  const SourceManager &SM = Ctx.getSourceManager();
  // (A copy: the lexer reads up to a terminating NUL, which a slice of the file has not.)
  std::string Text = SM.getBufferData(File).slice(Span.first, Span.second).str();
  Lexer L(SM.getLocForStartOfFile(File).getLocWithOffset(Span.first), Ctx.getLangOpts(), Text.data(),
          Text.data(), Text.data() + Text.size());
  Token Tok;
  for (L.LexFromRawLexer(Tok); Tok.isNot(tok::eof); L.LexFromRawLexer(Tok))
    if (Tok.is(tok::raw_identifier))
      F(Tok.getRawIdentifier(), Tok.getLocation());
}

} // namespace

struct ParseErrorFacts::Impl {
  std::optional<FunctionRanges> All;
  std::optional<NameMeanings> Meanings;
};
ParseErrorFacts::ParseErrorFacts() : P(std::make_unique<Impl>()) {}
ParseErrorFacts::~ParseErrorFacts() = default;

std::string parseErrorReach(ASTContext &Ctx, const TranslationUnitIndex &Index, const ArchDependence &Arch,
                            const FunctionDecl *FD, ParseErrorFacts &Facts) {
  if (Arch.ParseErrors.empty())
    return "";
  const SourceManager &SM = Ctx.getSourceManager();
  if (!Facts.P->All) {
    Facts.P->All.emplace(SM);
    Facts.P->All->TraverseDecl(Ctx.getTranslationUnitDecl());
  }
  const FunctionRanges &All = *Facts.P->All;
  // A host function that launches the kernel is read for its own text: the other kernels it
  // launches run apart (an error there reaches this loop only by naming one of these).
  std::vector<const FunctionDecl *> Read = functionsReadWith(Ctx, Index, FD);
  std::set<const FunctionDecl *> ReadSet;
  std::set<const Decl *> ReadCanonical;
  std::map<std::string, std::set<const DeclContext *>> ReadNamespaces; // by name
  std::set<std::string> Names;
  for (const FunctionDecl *F : Read) {
    // A builtin (__builtin_inff, from INFINITY) has no text of its own to hold an error, and its
    // name in a function with an error is no call of a user function.
    if (F->getBuiltinID())
      continue;
    ReadSet.insert(F);
    ReadCanonical.insert(key(F));
    if (const FunctionDecl *P = F->getTemplateInstantiationPattern())
      ReadSet.insert(P);
    if (const IdentifierInfo *II = F->getIdentifier()) {
      Names.insert(II->getName().str());
      ReadNamespaces[II->getName().str()].insert(namespaceOf(F));
    }
  }
  std::optional<NameMeanings> &Meanings = Facts.P->Meanings;
  for (const ArchDependence::ParseError &E : Arch.ParseErrors) {
    std::string Where = llvm::sys::path::filename(E.At.File).str() + ":" + std::to_string(E.Line) + ":" +
                        std::to_string(E.Column) + " ('" + E.Message + "')";
    const FunctionRanges::Range *Outer = nullptr;
    for (const FunctionRanges::Range &R : All.Out) {
      auto FE = SM.getFileEntryRefForID(R.File);
      if (!FE || FE->getName() != E.At.File || E.At.Offset < R.Begin || E.At.Offset > R.End)
        continue;
      if (ReadSet.count(R.F) || (R.F->getDefinition() && ReadSet.count(R.F->getDefinition())))
        return "the error at " + Where + " is in '" + R.F->getNameAsString() +
               "', whose code the analysis of this loop reads";
      if (!Outer || R.End - R.Begin > Outer->End - Outer->Begin)
        Outer = &R;
    }
    if (!Outer)
      return "the error at " + Where + " is outside every function, where it may change what any of them means";
    // A function with an error may call or name the loop's (a call lost to the error): its text,
    // and the text of every macro it expands, must not name any function the analysis reads.
    // A name in its own text (not a macro's) that Clang parsed into a reference of declarations
    // the analysis does not read, with every overload of that name, means the same to nvcc, unless
    // the text declares names (`using`, a namespace alias) that the error may have lost.
    // The identifiers of those texts, lexed once: which text (0, the function's own), the name, its place.
    std::vector<std::tuple<size_t, std::string, SourceLocation>> Ids;
    auto Texts = textsOf(SM, Outer->File, Outer->Begin, Outer->End);
    for (size_t T = 0; T < Texts.size(); ++T)
      forEachIdentifier(Ctx, Texts[T].first, Texts[T].second,
                        [&](StringRef Id, SourceLocation L) { Ids.emplace_back(T, Id.str(), L); });
    bool Declares = llvm::any_of(Ids, [](const auto &I) {
      return std::get<1>(I) == "using" || std::get<1>(I) == "namespace";
    });
    for (const auto &[T, Id, L] : Ids) {
      if (!Names.count(Id))
        continue;
      if (T == 0 && !Declares) {
        if (!Meanings) {
          Meanings.emplace(SM);
          Meanings->TraverseDecl(Ctx.getTranslationUnitDecl());
          Meanings->finish();
        }
        auto It = Meanings->At.find(L);
        if (It != Meanings->At.end() && !It->second.Open && !It->second.Decls.empty() &&
            llvm::none_of(It->second.Decls, [&](const Decl *D) { return ReadCanonical.count(D); }) &&
            llvm::none_of(ReadNamespaces[Id], [&](const DeclContext *N) { return It->second.Adl.count(N); }))
          continue;
      }
      return "the error at " + Where + " is in '" + Outer->F->getNameAsString() + "', which names '" + Id + "'" +
             (T == 0 ? "" : " through a macro");
    }
  }
  return "";
}

} // namespace tilepipe
