// Emit's hygiene for the user's text it moves: every name in a piece of the loop's text (or of a
// tile's declaration) that an emission writes elsewhere must bind there to the declaration it
// binds to where the user wrote it (EmitLoop.h, MovedText).
//
// Every destination lies in the block that replaces the loop, so lookup there walks the scopes
// that enclose the loop, as it stood, after the declarations the emission writes before the
// piece (MovedText::Provided). A name therefore keeps its meaning when:
//  - it is declared inside the piece itself (the piece moves whole, with its own scopes);
//  - the emission declares it before the piece, as the declaration it meant (a tile's view, an
//    induction's shadow, the for-init's variables, an index variable declared again);
//  - no such declaration of the emission takes the name, and of the function's own declarations
//    visible at the loop the innermost of that name is the one it meant, or, where none is
//    visible there, it means no declaration of the function at all (lookup then goes on, as it
//    did, to the namespaces around).
// A qualified name (`ns::x`, `::x`) is found by no local declaration, and a using-directive,
// using-declaration or namespace alias inside the loop changes lookup in ways this does not
// follow: a loop with one moves nothing.
#include "EmitLoop.h"
#include "tilepipe/AstUtil.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;

namespace tilepipe::emit {

namespace {

/// The function's own declarations, each with where it is declared and the scope it is visible
/// in, in the offsets of the loop's file.
class LocalScopes : public RecursiveASTVisitor<LocalScopes> {
public:
  struct Entry {
    const NamedDecl *D;
    unsigned At, ScopeBegin, ScopeEnd;
  };
  LocalScopes(const FileText &F, const FunctionDecl *FD) : F(F) {
    if (!FD->getBody())
      return;
    Scopes.push_back({F.begin(FD->getBody()), F.end(FD->getBody())});
    for (const ParmVarDecl *P : FD->parameters())
      record(P);
    TraverseStmt(FD->getBody());
  }
  bool shouldVisitLambdaBody() const { return true; }
  bool shouldVisitImplicitCode() const { return false; }
  bool TraverseStmt(Stmt *S) {
    if (!S)
      return true;
    // The statements that open a scope: what they declare ends with them.
    bool Opens = isa<CompoundStmt, ForStmt, IfStmt, WhileStmt, DoStmt, SwitchStmt, CXXForRangeStmt, CXXCatchStmt,
                     LambdaExpr, CXXTryStmt>(S);
    if (Opens)
      Scopes.push_back({F.begin(S), F.end(S)});
    bool R = RecursiveASTVisitor::TraverseStmt(S);
    if (Opens)
      Scopes.pop_back();
    return R;
  }
  bool VisitNamedDecl(NamedDecl *D) {
    // A local class's members are found through the class, not in the function's scopes.
    if (D->getLexicalDeclContext()->isFunctionOrMethod() || isa<UsingDirectiveDecl>(D))
      record(D);
    return true;
  }
  std::vector<Entry> Entries;

private:
  void record(const NamedDecl *D) {
    if (!Scopes.empty())
      Entries.push_back({D, F.offset(D->getLocation()), Scopes.back().first, Scopes.back().second});
  }
  const FileText &F;
  std::vector<std::pair<unsigned, unsigned>> Scopes;
};

bool sameDecl(const Decl *A, const Decl *B) { return A && B && A->getCanonicalDecl() == B->getCanonicalDecl(); }

/// Whether lookup that finds Innermost finds the declaration U binds to.
bool bindsTo(const NamedDecl *Innermost, const NameUse &U) {
  if (sameDecl(Innermost, U.Decl) || sameDecl(Innermost, U.Found))
    return true;
  // A local using-declaration: its shadow is what lookup found.
  if (const auto *Shadow = dyn_cast_or_null<UsingShadowDecl>(U.Found))
    return sameDecl(Innermost, Shadow->getIntroducer());
  return false;
}

std::string lineOf(const FileText &F, const Decl *D) {
  return std::to_string(F.SM.getPresumedLineNumber(F.SM.getExpansionLoc(D->getLocation())));
}

} // namespace

std::string movedNamesProblem(const FileText &F, const LoopModel &M, llvm::ArrayRef<MovedText> Moved) {
  const unsigned LoopOff = F.begin(M.Loop), LoopEnd = F.end(M.Loop);
  LocalScopes Locals(F, M.Function);
  auto InFile = [&](const Decl *D) { return F.SM.getFileID(F.SM.getExpansionLoc(D->getLocation())) == F.FID; };
  for (const LocalScopes::Entry &E : Locals.Entries)
    if (isa<UsingDirectiveDecl, UsingDecl, NamespaceAliasDecl, UsingEnumDecl>(E.D) && InFile(E.D) &&
        E.At >= LoopOff && E.At < LoopEnd)
      return "the loop holds a using-directive, using-declaration or namespace alias (line " + lineOf(F, E.D) +
             "), which changes how the names of the text the rewrite moves are found";
  for (const MovedText &P : Moved) {
    std::vector<std::pair<unsigned, unsigned>> Own;
    std::vector<NameUse> Uses;
    for (const Stmt *S : P.Stmts) {
      Own.push_back({F.begin(S), F.end(S)});
      for (const NameUse &U : namesIn(S))
        Uses.push_back(U);
    }
    for (TypeLoc TL : P.Types) {
      Own.push_back({F.offset(TL.getBeginLoc()), F.offset(TL.getEndLoc()) + 1});
      for (const NameUse &U : namesIn(TL))
        Uses.push_back(U);
    }
    for (const NameUse &U : Uses) {
      const NamedDecl *D = U.Decl;
      if (llvm::any_of(P.Dropped, [&](const Stmt *S) {
            unsigned L = F.offset(U.Loc);
            return F.begin(S) <= L && L < F.end(S);
          }))
        continue;
      const bool Local = D->getLexicalDeclContext()->isFunctionOrMethod() || isa<ParmVarDecl>(D);
      const unsigned At = F.offset(D->getLocation());
      // Declared in the piece itself: it moves with it.
      if (Local && InFile(D) &&
          llvm::any_of(Own, [&](const auto &R) { return R.first <= At && At < R.second; }))
        continue;
      const std::string Name = D->getNameAsString();
      const std::string Where = "'" + Name + "' in " + P.What + " (line " +
                                std::to_string(F.SM.getPresumedLineNumber(F.SM.getExpansionLoc(U.Loc))) + ")";
      // Declared again by the emission before the piece.
      const NamedDecl *Taken = nullptr;
      for (const NamedDecl *Q : P.Provided)
        if (Q->getDeclName() == D->getDeclName())
          Taken = Q;
      if (Taken) {
        if (bindsTo(Taken, U))
          continue;
        return Where + " names the declaration at line " + lineOf(F, D) +
               ", but where the rewrite writes it, the name is the one declared at line " + lineOf(F, Taken);
      }
      if (U.Qualified)
        continue;
      // The innermost of the function's own declarations of the name that is visible at the loop.
      const LocalScopes::Entry *Innermost = nullptr;
      for (const LocalScopes::Entry &E : Locals.Entries)
        if (E.D->getDeclName() == D->getDeclName() && InFile(E.D) && E.ScopeBegin <= LoopOff &&
            LoopOff < E.ScopeEnd && E.At < LoopOff &&
            (!Innermost || std::make_pair(E.ScopeBegin, E.At) > std::make_pair(Innermost->ScopeBegin, Innermost->At)))
          Innermost = &E;
      if (Innermost ? bindsTo(Innermost->D, U) : !Local)
        continue;
      if (Innermost)
        return Where + " names the declaration at line " + lineOf(F, D) +
               ", but where the rewrite writes it, the name is the one declared at line " + lineOf(F, Innermost->D);
      return Where + " names the declaration at line " + lineOf(F, D) +
             ", which is not in scope where the rewrite writes it (a name declared in the loop, outside " +
             P.What + ")";
    }
  }
  return "";
}

std::vector<const DeclStmt *> indexDeclsRead(const LoopModel &M) {
  llvm::SmallPtrSet<const Decl *, 16> Read;
  auto Reads = [&](const Stmt *S) {
    for (const NameUse &U : namesIn(S))
      Read.insert(U.Decl->getCanonicalDecl());
  };
  for (const Stmt *S : M.ComputePhase)
    Reads(S);
  for (const Stmt *S : M.TailIncs)
    Reads(S);
  // Backwards: a declaration kept reads only the ones before it.
  std::vector<const DeclStmt *> Kept;
  for (const DeclStmt *DS : llvm::reverse(M.IndexDecls))
    if (llvm::any_of(DS->decls(), [&](const Decl *D) { return Read.contains(D->getCanonicalDecl()); })) {
      Kept.insert(Kept.begin(), DS);
      Reads(DS);
    }
  return Kept;
}

std::vector<MovedText> loopPieces(const LoopModel &M, llvm::ArrayRef<const DeclStmt *> Kept) {
  std::vector<const NamedDecl *> Tiles, Inductions(M.Inductions.begin(), M.Inductions.end()), Init;
  for (const Tile &T : M.Tiles)
    Tiles.push_back(T.Var);
  if (const auto *DS = dyn_cast_or_null<DeclStmt>(M.Init))
    for (const Decl *D : DS->decls())
      if (const auto *ND = dyn_cast<NamedDecl>(D))
        Init.push_back(ND);
  auto Join = [](std::initializer_list<const std::vector<const NamedDecl *> *> Lists) {
    std::vector<const NamedDecl *> Out;
    for (const auto *L : Lists)
      Out.insert(Out.end(), L->begin(), L->end());
    return Out;
  };
  std::vector<MovedText> Out;
  MovedText Copy{"the copy phase", {}, {}, Join({&Tiles, &Inductions, &Init}), {}};
  for (const Stmt *S : M.CopyPhase)
    if (llvm::none_of(M.Tiles, [&](const Tile &T) { return T.DeclaredInBody == S; }))
      Copy.Stmts.push_back(S);
  Out.push_back(Copy);
  Out.push_back({"the loop's condition", {M.Cond}, {}, Join({&Inductions, &Init}), {}});
  MovedText Incs{"the loop's increment", {}, {}, Join({&Inductions, &Init}), {}};
  if (M.Inc)
    Incs.Stmts.push_back(M.Inc);
  Incs.Stmts.insert(Incs.Stmts.end(), M.TailIncs.begin(), M.TailIncs.end());
  Incs.Stmts.insert(Incs.Stmts.end(), M.BodyIncs.begin(), M.BodyIncs.end());
  Out.push_back(Incs);
  std::vector<const NamedDecl *> Indices;
  for (const DeclStmt *DS : Kept) {
    Out.push_back({"an index declaration", {DS}, {}, Join({&Tiles, &Init, &Indices}), {}});
    for (const Decl *D : DS->decls())
      Indices.push_back(cast<NamedDecl>(D));
  }
  Out.push_back({"the compute phase", M.ComputePhase, {}, Join({&Tiles, &Init, &Indices}), {}});
  return Out;
}

} // namespace tilepipe::emit
