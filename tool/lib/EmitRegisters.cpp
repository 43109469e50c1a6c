// Emit, the register-staged prefetch: the loop keeps its one buffer per tile and its two barriers;
// each thread loads its elements of the next tile into registers right after the copy barrier,
// so that those loads are in flight while the block computes, and stores them into the tile where
// the original's copy phase did. Plain loads and stores: every device takes it, and it needs no
// more shared memory than the original.
//
// It moves what the cp.async pipeline moves, no more: the loads of tile t+1 run before the compute
// on tile t (Check proves the compute phase writes nothing the copies read, and that the copy
// phase reads the same under the fetch cursor), and every access to the tile stays where it was
// between the same barriers, so what the threads read from shared memory, in the loop or after
// it, is what the original's threads read.
#include "EmitLoop.h"
#include "tilepipe/AstUtil.h"
#include "clang/AST/Decl.h"
#include "clang/AST/QualTypeNames.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;
using tooling::Replacement;

namespace tilepipe::emit {

static const char RegistersTemplate[] =
#include "RegistersTemplate.inc"
    ;
// Depth 2 and more: a set of registers per tile ahead, and the mainloop unrolled by the depth, so
// that each set's index is a constant (a set chosen at run time would be read, and waited for, as
// a whole, or go to local memory). The trip is a lambda, so the user's text stands once.
static const char RegistersDeepTemplate[] =
#include "RegistersDeepTemplate.inc"
    ;

llvm::Expected<std::vector<Replacement>> emitRegisters(ASTContext &Ctx, const LoopModel &M, unsigned Depth,
                                                       const std::string &TemplateGuard) {
  FileText F(Ctx, Ctx.getSourceManager().getFileID(Ctx.getSourceManager().getExpansionLoc(M.Loop->getBeginLoc())));
  auto Fail = [](const Twine &Why) { return llvm::make_error<EmitError>(Reason::Unsupported, Why.str()); };
  auto CutOr = cutLoop(F, M);
  if (!CutOr)
    return CutOr.takeError();
  const LoopCut &Cut = *CutOr;
  Namer Names(F, M.Function);
  std::string Load = Names.get("load_next_tile");
  const bool Deep = Depth > 1;
  std::string Slot = Deep ? Names.get("slot") : "", Step = Deep ? Names.get("trip") : "";
  if (Depth < 1 || Depth > MaxRegisterDepth)
    return Fail("internal: a register-staged prefetch of " + Twine(Depth) + " tiles");

  // The load phase is the copy phase with each store `tile[...] = value` become `reg = value`
  // (a fill stores nothing there); the store phase, the copy phase with it become
  // `tile[...] = reg`. Tiles declared in the body stay in the store phase alone.
  using Edit = std::tuple<unsigned, unsigned, std::string>;
  std::vector<Edit> LoadEdits, StoreEdits;
  for (const Tile &T : M.Tiles)
    if (T.DeclaredInBody && !llvm::is_contained(LoadEdits, dropStatement(F, T.DeclaredInBody)))
      LoadEdits.push_back(dropStatement(F, T.DeclaredInBody));
  // A local a store reads through (`float4 v = A4[i];`) is read where the tile is loaded; the
  // store phase stores the registers and needs it no more.
  for (const Stmt *DS : M.ValueDefs)
    StoreEdits.push_back(dropStatement(F, DS));
  Lines Registers;
  for (size_t I = 0; I < M.Stores.size(); ++I) {
    const TileStore &S = M.Stores[I];
    if (S.InInnerLoop)
      return Fail("internal: a store in an inner copy loop cannot be staged in one register");
    // `t = c ? x : y` is two stores of one statement: one register holds what it stores.
    bool Pair = I + 1 < M.Stores.size() && M.Stores[I + 1].Statement == S.Statement;
    unsigned B = F.begin(S.Statement), E = F.end(S.Statement);
    if (!S.Src && !Pair) {
      LoadEdits.emplace_back(B, E - B, mark("(void)0"));
      continue;
    }
    const Expr *L = nullptr, *R = S.Helper ? S.Helper->getArg(1) : nullptr;
    if (!R && !splitAssignment(S.Statement, L, R))
      return Fail("internal: a tile store is not an assignment");
    const Tile &T = M.Tiles[S.TileIdx];
    std::string Reg = Names.get(T.Var->getName().str() + "_next");
    std::string Value = F.text(R->getSourceRange()), Dst = F.text(S.Dst->getSourceRange());
    if (Value.empty() || Dst.empty())
      return Fail("a tile store is not plain text");
    // A vector store's register holds the vector, in its type as the view's cast writes it.
    std::string Type = T.ElementTypeText;
    if (S.View && S.Helper) {
      // A helper's view is written in the helper, whose names may mean something else here: the
      // type by its full name from the global namespace.
      const ASTContext &Ctx = M.Function->getASTContext();
      QualType VT = S.View->getType()->getPointeeType().getCanonicalType().getUnqualifiedType();
      if (const TagDecl *TD = VT->getAsTagDecl(); TD && TD->getDeclContext()->isFunctionOrMethod())
        return Fail("the type of a vector a helper stores is local to a function");
      Type = TypeName::getFullyQualifiedName(VT, Ctx, PrintingPolicy(Ctx.getLangOpts()), /*WithGlobalNsPrefix=*/true);
    } else if (S.View) {
      Type = F.text(viewTypeLoc(S.View).getSourceRange());
      if (Type.empty())
        return Fail("the type of a vector store is not plain text");
    }
    Registers.push_back(mark(Type + " " + Reg + (Deep ? "[" + std::to_string(Depth) + "]" : "") + ";"));
    if (Deep)
      Reg += "[" + Slot + "]";
    LoadEdits.emplace_back(B, E - B, mark(Reg + " = " + Value));
    // A helper stores the register as it stored its value: `st_vec(&t[i], r)`.
    StoreEdits.emplace_back(B, E - B,
                            mark(S.Helper ? F.slice(B, F.begin(R)).str() + Reg + F.slice(F.end(R), E).str()
                                          : Dst + " = " + Reg));
    if (Pair)
      ++I;
  }
  SourceTokens Toks(F, Cut.LoopOff, Cut.LoopEnd);
  std::vector<unsigned> Cuts;
  for (const auto *Phase : {&LoadEdits, &StoreEdits})
    for (const auto &[Off, Len, New] : *Phase)
      Cuts.insert(Cuts.end(), {Off, Off + Len});
  if (std::string Why = Cut.problem(F, M, Toks, Cuts, /*WholeLoop=*/false); !Why.empty())
    return llvm::make_error<EmitError>(Reason::SourceText, Why);
  // Every name the moved text looks up keeps its declaration (EmitNames.cpp). The compute phase
  // follows the store phase, which is the copy phase with all its declarations, and the load
  // phase writes registers where the copy phase wrote the tiles. The registers are declared
  // before the loop, after its for-init, in the element types of the tiles they stand for.
  std::vector<MovedText> Pieces = loopPieces(M, M.IndexDecls);
  for (const TileStore &S : M.Stores)
    Pieces.front().Dropped.push_back(S.Dst);
  llvm::erase_if(Pieces.front().Provided, [&](const NamedDecl *D) {
    return llvm::any_of(M.Tiles, [&](const Tile &T) { return T.Var == D && T.DeclaredInBody; });
  });
  MovedText Types{"the element type of a tile, in which the rewrite declares its registers before the loop",
                  {}, {}, {}, {}};
  if (const auto *DS = dyn_cast_or_null<DeclStmt>(M.Init))
    for (const Decl *D : DS->decls())
      Types.Provided.push_back(cast<NamedDecl>(D));
  for (const Tile &T : M.Tiles)
    Types.Types.push_back(elementTypeLoc(T.Var));
  for (const TileStore &S : M.Stores)
    if (S.View && !S.Helper)
      Types.Types.push_back(viewTypeLoc(S.View));
  Pieces.push_back(Types);
  if (std::string Why = movedNamesProblem(F, M, Pieces); !Why.empty())
    return llvm::make_error<EmitError>(Reason::NameBinding, Why);

  std::vector<std::pair<std::string, std::string>> VarAndCursor;
  for (const VarDecl *V : M.Inductions)
    VarAndCursor.emplace_back(V->getName().str(), Names.get(V->getName().str() + "_fetch"));
  CursorLines Cur = cursorLines(VarAndCursor);
  // The original's barriers, where they were: a loop of the rotated form begins its body with one
  // (and the first loads, before the loop, come after one too, as the first copies did); a loop
  // of the trailing form ends its compute phase with one.
  Lines Leading, First, Last;
  if (M.Form == LoopForm::Rotated) {
    Leading = {mark(std::string(BlockBarrier) + " // as the loop's leading barrier: what the block wrote "
                                                "before it is seen by the first loads")};
    First = {mark(BlockBarrier)};
  }
  if (M.TrailingBarrier)
    Last = {mark(std::string(BlockBarrier) + " // no thread still reads the tile when it is stored again")};
  std::map<std::string, std::string> Inline = {
      {"load", Load}, {"cond", Cut.CondText}, {"loop_header", Cut.Header},
      {"slot", Slot}, {"step", Step}, {"depth", std::to_string(Depth)}};
  std::map<std::string, Lines> Blocks = {
      {"init", single(Cut.InitText)},
      {"registers", Registers},
      {"cursors", Cur.Declare},
      {"shadow_inductions", Cur.Shadow},
      {"load_phase", chunk(editSpan(F, Cut.CopyBegin, Cut.CopyEnd, LoadEdits), Cut.BodyIndent)},
      {"increment", single(Cut.Increment)},
      {"store_cursors", Cur.Store},
      {"leading_barrier", Leading},
      {"first_barrier", First},
      {"store_phase", chunk(editSpan(F, Cut.CopyBegin, Cut.CopyEnd, StoreEdits), Cut.BodyIndent)},
      {"compute_phase", chunk(F.slice(Cut.ComputeBegin, Cut.ComputeEnd), Cut.BodyIndent)},
      {"last_barrier", Last},
      {"tail_increments", Cut.TailLines},
      {"loop_pragmas", Cut.Pragmas},
      {"for_increment", single(Cut.ForIncrement)}};
  auto Rendered = render(Deep ? RegistersDeepTemplate : RegistersTemplate,
                         Deep ? "templates/registers_deep.cu.in" : "templates/registers.cu.in", Inline, Blocks,
                         Cut.Base, Cut.Unit);
  if (!Rendered)
    return Rendered.takeError();
  std::string NewText = std::move(*Rendered);
  unsigned From = Cut.PragmaOff;
  if (!TemplateGuard.empty()) {
    // Instantiations the analysis did not see run the loop as it was (the tiles are the same).
    if (!F.firstOnLine(Cut.LoopOff))
      return Fail("the loop does not begin its line, so it cannot stand beside the prefetch as it was");
    From = std::min(Cut.PragmaOff, F.lineStart(Cut.LoopOff));
    Lines Original = Cut.Pragmas;
    for (const std::string &L : chunk(F.slice(Cut.LoopOff, Cut.LoopEnd), Cut.Base))
      Original.push_back(L);
    std::string Text = Cut.Base + mark("if constexpr (" + TemplateGuard + ") { // the instantiations tilepipe analysed") +
                       "\n" + Cut.Base + NewText + "\n" + Cut.Base +
                       mark("} else { // tilepipe: in instantiations tilepipe did not analyse, the loop as it was") + "\n";
    for (const std::string &L : Original)
      Text += L.empty() ? "\n" : L.front() == Verbatim ? L.substr(1) + "\n" : Cut.Base + Cut.Unit + L + "\n";
    NewText = Text + Cut.Base + mark("}");
  } else if (Cut.PragmaOff < Cut.LoopOff) {
    // The loop's pragma lines go with it, onto the mainloop.
    NewText = Cut.Base + NewText;
  }
  // The last line of defence: every line Emit wrote begins with a token of its own.
  if (std::string Why = unmark(NewText, F.LO); !Why.empty())
    return llvm::make_error<EmitError>(Reason::SourceText, Why);
  return std::vector<Replacement>{
      Replacement(F.SM,
                  CharSourceRange::getCharRange(F.SM.getComposedLoc(F.FID, From),
                                                F.SM.getComposedLoc(F.FID, Cut.LoopEnd)),
                  NewText)};
}

} // namespace tilepipe::emit
