// Emit's cut of one loop (EmitLoop.h).
#include "EmitLoop.h"
#include "clang/AST/Attr.h"

using namespace clang;

namespace tilepipe::emit {

std::tuple<unsigned, unsigned, std::string> dropStatement(const FileText &F, const Stmt *S) {
  // An expression statement ends at its semicolon, which is no part of the expression.
  unsigned B = F.begin(S), E = isa<Expr>(S) ? F.afterSemi(S) : F.end(S);
  if (F.firstOnLine(B) && F.slice(E, F.Buffer.find('\n', E)).trim().empty()) {
    B = F.lineStart(B);
    E = F.Buffer.find('\n', E) + 1;
  }
  return {B, E - B, ""};
}

llvm::Expected<LoopCut> cutLoop(const FileText &F, const LoopModel &M) {
  auto Fail = [](const Twine &Why) { return llvm::make_error<EmitError>(Reason::Unsupported, Why.str()); };
  LoopCut C;
  C.Body = [&]() -> const CompoundStmt * {
    if (const auto *For = dyn_cast<ForStmt>(M.Loop))
      return cast<CompoundStmt>(For->getBody());
    return cast<CompoundStmt>(cast<WhileStmt>(M.Loop)->getBody());
  }();
  C.LoopOff = F.begin(M.Loop);
  C.LoopEnd = F.end(M.Loop);
  C.PragmaOff = C.LoopOff;
  if (M.Hints) {
    // Each hint is a `#pragma` line of its own between the statement before and the loop: the
    // replacement takes those lines, and the mainloop gets them again.
    for (const Attr *A : M.Hints->getAttrs()) {
      if (A->getLocation().isMacroID() || F.SM.getFileID(A->getLocation()) != F.FID)
        return Fail("the loop's #pragma is not a line of its own right above it");
      C.PragmaOff = std::min(C.PragmaOff, F.lineStart(F.offset(A->getLocation())));
    }
    for (StringRef Rest = F.slice(C.PragmaOff, F.lineStart(C.LoopOff)); !Rest.empty();) {
      auto [Line, Tail] = Rest.split('\n');
      if (!Line.trim().starts_with("#") || !Line.trim().drop_front().ltrim().starts_with("pragma"))
        return Fail("the loop's #pragma is not a line of its own right above it");
      C.Pragmas.push_back(Line.trim().str());
      Rest = Tail;
    }
    if (C.Pragmas.empty() || !F.firstOnLine(C.LoopOff))
      return Fail("the loop's #pragma is not a line of its own right above it");
  }
  C.Base = F.indentOf(C.LoopOff);
  C.BodyIndent = C.Body->body_empty() ? C.Base + "  " : F.indentOf(F.begin(C.Body->body_front()));
  C.Unit = C.BodyIndent.size() > C.Base.size() && StringRef(C.BodyIndent).starts_with(C.Base)
               ? C.BodyIndent.substr(C.Base.size())
               : std::string("  ");
  C.CopyBegin = M.Form == LoopForm::Rotated ? F.afterSemi(M.FirstBarrier) : F.offset(C.Body->getLBracLoc()) + 1;
  C.CopyEnd = F.cutBefore(F.begin(M.CopyBarrier));
  C.ComputeBegin = F.afterSemi(M.CopyBarrier);
  C.ComputeEnd = F.cutBefore(F.offset(C.Body->getRBracLoc()));
  if (M.TrailingBarrier)
    C.ComputeEnd = std::min(C.ComputeEnd, F.cutBefore(F.begin(M.TrailingBarrier)));
  if (!M.TailIncs.empty())
    C.ComputeEnd = std::min(C.ComputeEnd, F.cutBefore(F.begin(M.TailIncs.front())));
  if (C.ComputeEnd < C.ComputeBegin)
    return Fail("the compute phase could not be cut out of the loop body");
  C.CondText = F.text(M.Cond->getSourceRange());
  if (C.CondText.empty())
    return Fail("the loop condition is not plain text");
  if (M.Init) {
    C.InitText = F.slice(F.begin(M.Init), F.afterSemi(M.Init)).str();
    if (!isa<DeclStmt>(M.Init) && !StringRef(C.InitText).rtrim().ends_with(";"))
      C.InitText += ";";
  }
  if (M.Inc) {
    std::string IncText = F.text(M.Inc->getSourceRange());
    C.Increment = C.ForIncrement = IncText + ";";
    C.Header = "for (; " + C.CondText + "; " + IncText + ")";
  } else {
    C.Header = "while (" + C.CondText + ")";
  }
  for (const Stmt *S : M.TailIncs) {
    std::string T = F.slice(F.begin(S), F.afterSemi(S)).str();
    C.TailLines.push_back(T);
    C.Increment += (C.Increment.empty() ? "" : " ") + T;
  }
  // The compute phase's increments stay in it (the loop's own variables advance there, as
  // before); the fetch cursor takes them with the others.
  for (const Stmt *S : M.BodyIncs)
    C.Increment += (C.Increment.empty() ? "" : " ") + F.slice(F.begin(S), F.afterSemi(S)).str();
  return C;
}

std::string LoopCut::problem(const FileText &F, const LoopModel &M, const SourceTokens &Toks,
                             llvm::ArrayRef<unsigned> Cuts, bool WholeLoop) const {
  StringRef LoopText = F.slice(LoopOff, LoopEnd);
  if (LoopText.contains(Verbatim) || LoopText.contains(Own))
    return "the loop's text holds a control character (\\x01 or \\x02) that tilepipe uses to mark lines";
  if (std::string Why = Toks.directiveProblem(LoopOff, LoopEnd); !Why.empty())
    return Why;
  // The rewrite spells a tile's element type and extents, as its declaration does, inside the
  // loop: a directive between the two (`#undef ELEM` / `#define ELEM long long`) changes them.
  for (const Tile &T : M.Tiles) {
    if (T.DeclaredInBody)
      continue;
    auto [FID, Off] = F.SM.getDecomposedExpansionLoc(T.Var->getBeginLoc());
    if (FID != F.FID)
      return "the declaration of '" + T.Var->getName().str() + "' is in another file than the loop";
    if (Off >= LoopOff)
      continue;
    SourceTokens Between(F, Off, LoopOff);
    if (std::string Why = Between.directiveProblem(
            Off, LoopOff, "the text from the declaration of '" + T.Var->getName().str() + "' to the loop",
            "the rewrite spells the tile's element type and extents inside the loop");
        !Why.empty())
      return Why;
  }
  std::vector<std::tuple<unsigned, unsigned, std::string>> Slices = {
      {CopyBegin, CopyEnd, "the copy phase"},
      {ComputeBegin, ComputeEnd, "the compute phase"},
      {F.begin(M.Cond), F.end(M.Cond), "the loop condition"}};
  if (M.Init)
    Slices.emplace_back(F.begin(M.Init), F.afterSemi(M.Init), "the loop's initialization");
  if (M.Inc)
    Slices.emplace_back(F.begin(M.Inc), F.end(M.Inc), "the loop's increment");
  for (const Stmt *S : M.TailIncs)
    Slices.emplace_back(F.begin(S), F.afterSemi(S), "an increment at the end of the body");
  for (const Stmt *S : M.BodyIncs)
    Slices.emplace_back(F.begin(S), F.afterSemi(S), "an increment in the compute phase");
  for (const DeclStmt *DS : M.IndexDecls)
    Slices.emplace_back(F.begin(DS), F.end(DS), "an index declaration");
  for (const Tile &T : M.Tiles)
    if (T.DeclaredInBody)
      Slices.emplace_back(F.begin(T.DeclaredInBody), F.end(T.DeclaredInBody), "a tile declaration");
  // A local's read, which the copies write where the stores that read the local stand.
  for (const TileStore &S : M.Stores)
    if (S.Read)
      Slices.emplace_back(F.begin(S.Read), F.end(S.Read), "the read of a local the copies take");
  // Where the copies replace the user's statements: only the cut points matter (what they
  // replace is dropped).
  for (unsigned Cut : Cuts)
    Slices.emplace_back(Cut, Cut, "a tile copy");
  if (WholeLoop)
    Slices.emplace_back(LoopOff, LoopEnd, "the loop kept below compute capability 8.0");
  for (const auto &[B, E, What] : Slices)
    if (std::string Why = Toks.problem(B, E, What); !Why.empty())
      return Why;
  return "";
}

CursorLines cursorLines(llvm::ArrayRef<std::pair<std::string, std::string>> VarAndCursor) {
  CursorLines Out;
  for (const auto &[V, C] : VarAndCursor) {
    Out.Declare.push_back(mark("auto " + C + " = " + V + ";"));
    Out.Shadow.push_back(mark("auto " + V + " = " + C + ";"));
    Out.Store.push_back(mark(C + " = " + V + ";"));
  }
  return Out;
}

} // namespace tilepipe::emit
