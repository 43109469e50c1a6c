// Emit: cut the loop's own text into pieces (header, copy phase, compute phase) and place them in
// the pipeline skeleton of templates/pipeline.cu.in. Nothing is pretty-printed: every piece of user
// code is the user's text, so comments, macros and formatting inside the loop survive.
#include "tilepipe/Emit.h"
#include "EmitLoop.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Runtime.h"
#include "clang/AST/Decl.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/Stmt.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Regex.h"
#include <map>
#include <set>

using namespace clang;
using tooling::Replacement;

namespace tilepipe {

using namespace emit;

char EmitError::ID = 0;

static const char PipelineTemplate[] =
#include "PipelineTemplate.inc"
    ;
static const char ComputeOnlyTemplate[] =
#include "ComputeOnlyTemplate.inc"
    ;
static const char WideCopyTemplate[] =
#include "WideCopyTemplate.inc"
    ;
static const char TmaLauncherTemplate[] =
#include "TmaLauncherTemplate.inc"
    ;

std::string templateSection(StringRef All, StringRef TemplateName, StringRef Name) {
  size_t B = All.starts_with("@" + Name.str() + "\n") ? 0 : All.find("\n@" + Name.str() + "\n");
  // A template and the code that renders it disagree: a defect of this build of tilepipe, fatal in
  // every build type (an assert would let a Release build emit a loop without it).
  if (B == StringRef::npos)
    llvm::reportFatalInternalError(llvm::Twine("tilepipe: the template ") + TemplateName + " has no section '@" +
                                   Name + "'");
  B = All.find('\n', B + 1) + 1;
  size_t E = All.find("\n@", B);
  return All.slice(B, E == StringRef::npos ? All.size() : E + 1).str();
}

/// One '@name' section of templates/pipeline.cu.in.
static std::string section(StringRef Name) {
  return templateSection(PipelineTemplate, "templates/pipeline.cu.in", Name);
}

namespace {

/// The block has the shape of the tile V (an expression of its array type) whose dimensions the
/// thread indices ThreadDims select: `blockDim.y == sizeof(V) / sizeof(V[0])`, ...
std::vector<std::string> blockHasShape(const std::string &V, const std::vector<char> &ThreadDims) {
  std::vector<std::string> Out;
  std::string Outer = "sizeof(" + V;
  for (char Dim : ThreadDims) {
    std::string Inner = Outer + "[0]";
    Out.push_back(std::string("blockDim.") + Dim + " == " + Outer + ") / " + Inner + ")");
    Outer = Inner;
  }
  return Out;
}

} // namespace

llvm::Expected<std::vector<Replacement>> emitPipeline(ASTContext &Ctx, const LoopModel &M,
                                                      const LoopPlan &Plan, EmitKind Kind) {
  const bool Pipelined = Kind == EmitKind::Pipeline;
  const unsigned Stages = Plan.Stages;
  // How the plan copies a tile of M.
  auto PlanOf = [&](const Tile &T) -> const TilePlan & { return Plan.Tiles[&T - M.Tiles.data()]; };
  // The loop's copy-engine path: every tile one bulk copy, or one tensor copy through its map.
  const bool TmaLoop = Pipelined && Plan.Engine && !M.Tiles.empty();
  FileText F(Ctx, Ctx.getSourceManager().getFileID(
                      Ctx.getSourceManager().getExpansionLoc(M.Loop->getBeginLoc())));
  auto Fail = [](const Twine &Why) { return llvm::make_error<EmitError>(Reason::Unsupported, Why.str()); };
  if (Plan.Tiles.size() != M.Tiles.size() || (Pipelined && !Plan.Registers && Stages < 2))
    return Fail("internal: the plan does not fit the loop");
  if (Pipelined && Plan.Registers)
    return emitRegisters(Ctx, M);
  // The plan chooses among what the model allows, and Emit trusts nothing else.
  for (const Tile &T : M.Tiles) {
    const TilePlan &TP = PlanOf(T);
    if ((TP.CpAsync == CopyKind::Chunks16 && !T.Box.wide()) ||
        (TmaLoop && !(TP.Kind == CopyKind::Bulk ? T.Box.Valid && T.Box.Bulk
                                                : TP.Kind == CopyKind::Tensor && T.Box.Valid && T.Box.Tma &&
                                                      !TP.MapName.empty())))
      return Fail("internal: the plan copies '" + T.Var->getName() + "' in a way its box does not allow");
  }
  // The loop's text cannot be cut safely: the loop is left alone with reason source-text.
  auto CannotCut = [](const std::string &Why) { return llvm::make_error<EmitError>(Reason::SourceText, Why); };
  auto CutOr = cutLoop(F, M);
  if (!CutOr)
    return CutOr.takeError();
  const LoopCut &Cut = *CutOr;
  Namer Names(F, M.Function);
  std::string Pipe = Names.get("pipe"), FetchStage = Names.get("fetch_stage"),
              Stage = Names.get("stage"), Issue = Names.get("issue_tile"),
              Prologue = Names.get("prologue");
  std::map<const VarDecl *, std::string> StageArray, Cursor;
  for (const Tile &T : M.Tiles)
    StageArray[T.Var] = Names.get(T.Var->getName().str() + "_stages");
  for (const VarDecl *V : M.Inductions)
    Cursor[V] = Names.get(V->getName().str() + "_fetch");

  const unsigned LoopOff = Cut.LoopOff, LoopEnd = Cut.LoopEnd, CopyBegin = Cut.CopyBegin,
                 CopyEnd = Cut.CopyEnd;
  const std::string &Base = Cut.Base, &BodyIndent = Cut.BodyIndent, &Unit = Cut.Unit;
  std::vector<std::tuple<unsigned, unsigned, std::string>> Edits;
  for (const Tile &T : M.Tiles)
    if (T.DeclaredInBody)
      Edits.push_back(dropStatement(F, T.DeclaredInBody));
  auto CopyCall = [&](const TileStore &S, const std::string &Extra = "") {
    const Expr *Dst = S.Dst->IgnoreParens();
    const Expr *Src = stripNoOps(S.Src);
    std::string D = F.text(Dst->getSourceRange()), R = F.text(Src->getSourceRange());
    if (!isa<ArraySubscriptExpr>(Dst) || Dst->getBeginLoc().isMacroID())
      D = "(" + D + ")";
    if (!isa<ArraySubscriptExpr>(Src) || Src->getBeginLoc().isMacroID())
      R = "(" + R + ")";
    const std::string &T = M.Tiles[S.TileIdx].ElementTypeText;
    std::string Head = "::cuda::memcpy_async(&" + D + ", &" + R + ",";
    std::string Tail = "::cuda::aligned_size_t<sizeof(" + T + ")>(sizeof(" + T + ")), " + Pipe + ")";
    // Long calls continue under their first argument.
    std::string Ind = F.indentOf(F.begin(S.Statement)) + Extra;
    if (Ind.size() + Unit.size() + Head.size() + Tail.size() + 2 <= 100)
      return Head + " " + Tail;
    return Head + "\n" + Ind + std::string(21, ' ') + Tail;
  };
  // A store that fills a whole tile (its box is known) gets the block-wide 16-byte copy, with the
  // per-element copy kept for blocks of another shape and unaligned addresses.
  std::string Rank = Names.get("rank"), Threads = Names.get("threads");
  // Tensor copies replace the whole cp.async loop, and only where every tile takes them.
  std::string Bars, Leader, TileBytes, Parities, StageVar, TensorCopies, AlignedVar, Probe;
  if (TmaLoop) {
    Bars = Names.get("stage_barriers");
    Leader = Names.get("leader");
    TensorCopies = Names.get("tensor_copies");
    AlignedVar = Names.get("tiles_aligned");
    Probe = Names.get("probe");
    Parities = Names.get("parities");
    StageVar = Names.get("s");
  }
  bool AnyWide = false;
  auto WideCall = [&](const Tile &T, const TileStore &S) {
    const TileBox &B = T.Box;
    const std::string V = T.Var->getName().str();
    const size_t N = B.ThreadDims.size();
    std::string Chunk = Names.get("chunk");
    auto Zeros = [](size_t K) {
      std::string Z;
      for (size_t I = 0; I < K; ++I)
        Z += "[0]";
      return Z;
    };
    auto Size = [&](size_t K) { return "sizeof(" + V + Zeros(K) + ")"; };
    // The index of the tile's first element, the same in every thread: this thread's own index
    // less its own thread terms.
    // The index type as the source has it, in every instantiation.
    std::string IT = Names.get(V + "_index");
    std::string Base = Names.get(V + "_base");
    Lines BaseDecl{"using " + IT + " = decltype(+(" + B.Index + "));",
                   "const " + IT + " " + Base + " = (" + IT + ")(" + B.Index + ")"};
    for (size_t D = 0; D < N; ++D)
      BaseDecl.push_back(std::string("    - (") + IT + ")threadIdx." + B.ThreadDims[D] +
                         (D + 1 < N ? " * (" + IT + ")(" + B.Coefficients[D] + ")" : ""));
    BaseDecl.back() += ";";
    size_t Width = F.indentOf(F.begin(S.Statement)).size() + Unit.size();
    for (size_t I = 1; I < BaseDecl.size(); ++I)
      Width += BaseDecl[I].size() - (I == 1 ? 0 : 3);
    if (Width <= 100) {
      for (size_t I = 2; I < BaseDecl.size(); ++I)
        BaseDecl[1] += BaseDecl[I].substr(3);
      BaseDecl.resize(2);
    }
    // The chunk's coordinates: rows r0..r(n-2), and the first column c of its 16 bytes.
    Lines Coords;
    std::string Dst, Src = Base;
    for (size_t D = 0; D + 1 < N; ++D) {
      std::string R = Names.get("row" + std::to_string(D));
      std::string E = Chunk + " / (" + Size(D + 1) + " / 16)";
      if (D > 0)
        E += " % (" + Size(D) + " / " + Size(D + 1) + ")";
      Coords.push_back("const unsigned " + R + " = " + E + ";");
      Dst += "[" + R + "]";
      Src += " + (" + IT + ")" + R + " * (" + IT + ")(" + B.Coefficients[D] + ")";
    }
    std::string C = Names.get("col");
    Coords.push_back("const unsigned " + C + " = " + Chunk + " % (" + Size(N - 1) + " / 16) * (16 / " +
                     Size(N) + ");");
    Dst += "[" + C + "]";
    Src += " + (" + IT + ")" + C;
    // The block has the tile's shape: the condition of both whole-tile paths.
    std::vector<std::string> Shape = blockHasShape(V, B.ThreadDims);
    // Block-uniform: the tile's rows are whole chunks, the block has the tile's shape, and the
    // source rows and the shared tile start on 16 bytes.
    std::vector<std::string> Fits{Size(N - 1) + " % 16 == 0"};
    Fits.insert(Fits.end(), Shape.begin(), Shape.end());
    for (size_t D = 0; D + 1 < N; ++D)
      Fits.push_back("(" + B.Coefficients[D] + ") % (16 / " + Size(N) + ") == 0");
    Fits.push_back("reinterpret_cast<unsigned long long>(&" + B.Pointer + "[" + Base + "]) % 16 == 0");
    Fits.push_back("__cvta_generic_to_shared(&" + V + Zeros(N) + ") % 16 == 0");
    std::string Ind = F.indentOf(F.begin(S.Statement));
    std::string FitsText = llvm::join(Fits, " && ");
    if (Ind.size() + FitsText.size() + 8 > 100)
      FitsText = llvm::join(Fits, " &&\n    ");
    std::map<std::string, std::string> In = {{"fits", FitsText}, {"chunk", Chunk},
                                             {"rank", Rank},     {"threads", Threads},
                                             {"tile", V},
                                             {"pipe", Pipe}};
    std::string Ind2 = Ind + Unit + Unit;
    std::string Head = "::cuda::memcpy_async(&" + V + Dst + ",";
    std::string Mid = "&" + B.Pointer + "[" + Src + "],";
    std::string Tail = "::cuda::aligned_size_t<16>(16), " + Pipe + ");";
    Lines Call{Head + " " + Mid + " " + Tail};
    if (Ind2.size() + Call[0].size() > 100)
      Call = {Head, std::string(21, ' ') + Mid, std::string(21, ' ') + Tail};
    // Per element, the threads that differ only in an index the tile does not span copy the same
    // elements to the same places: the first of them copies, the others would only race with it.
    std::vector<std::string> Others;
    for (char Dim : {'x', 'y', 'z'})
      if (!llvm::is_contained(B.ThreadDims, Dim))
        Others.push_back(std::string("threadIdx.") + Dim + " == 0");
    Lines PerElement{CopyCall(S, Unit) + ";"};
    if (!Others.empty())
      PerElement = {"if (" + llvm::join(Others, " && ") + ") // the others copy the same elements",
                    Unit + CopyCall(S, Unit + Unit) + ";"};
    std::map<std::string, Lines> Bl = {{"base", mark(BaseDecl)},
                                       {"coordinates", mark(Coords)},
                                       {"copy", mark(Call)},
                                       {"per_element", mark(PerElement)}};
    AnyWide = true;
    return render(WideCopyTemplate, In, Bl, Ind, Unit);
  };
  // The copy phase of the tensor-copy loop, run by the leader: each tile's copy (its one store, or
  // the guarded pair of read and zero fill) becomes one call that issues the tile's copy. In the
  // probe of the first tiles, it becomes a test: that the tile starts on 16 bytes; for a guarded
  // copy, that its index is its coordinates' place in the map, which are not negative.
  auto TmaEdits = Edits, ProbeEdits = Edits;
  Lines ProbeState;
  if (TmaLoop) {
    for (size_t I = 0; I < M.Stores.size(); ++I) {
      const TileStore &S = M.Stores[I];
      const TileBox &B = M.Tiles[S.TileIdx].Box;
      if (B.Store != I && !(B.Guarded && (S.Statement == B.Replaced || S.GuardIf == B.Replaced)))
        return Fail("a tile with a tensor copy has a second store");
    }
    // Head(Arg, ..., Last); in the issue lambda, two levels deeper than the loop body: on one line,
    // or Last under the first argument.
    auto Call = [&](const std::string &Head, const std::vector<std::string> &Args, const std::string &Ind) {
      std::string Init = Head + "(" + llvm::join(ArrayRef(Args).drop_back(), ", ") + ",";
      std::string Text = Init + " " + Args.back() + ");";
      if (Ind.size() + 2 * Unit.size() + Text.size() > 100)
        Text = Init + "\n" + Ind + std::string(Head.size() + 1, ' ') + Args.back() + ");";
      return Text;
    };
    for (const Tile &T : M.Tiles) {
      const TileBox &Box = T.Box;
      const std::string V = T.Var->getName().str();
      unsigned B = F.begin(Box.Replaced), Len = F.afterSemi(Box.Replaced) - B;
      std::string First = "(long long)(" + Box.Index + ")";
      std::string Ind = F.indentOf(B);
      std::string Bar = Bars + "[" + FetchStage + "]";
      // The probe sits one level deeper than the loop body.
      auto Test = [&](const std::string &Call) {
        std::string T = AlignedVar + " = " + AlignedVar + " &&";
        return Ind.size() + Unit.size() + T.size() + Call.size() + 1 > 100
                   ? T + "\n" + Ind + std::string(AlignedVar.size() + 3, ' ') + Call
                   : T + " " + Call;
      };
      if (Box.Guarded) {
        std::string Row = Box.Coordinates.size() == 2 ? Box.Coordinates[0] : "0";
        TmaEdits.emplace_back(
            B, Len, mark(Call("::tilepipe_rt::copy_box", {PlanOf(T).MapName, V, Row, Box.Coordinates.back(), Bar}, Ind)));
        std::string Tracker = Names.get(V + "_probe");
        ProbeState.push_back(mark("::tilepipe_rt::BoxProbe " + Tracker + ";"));
        ProbeEdits.emplace_back(B, Len,
                                mark(Test(Tracker + ".fits(" + PlanOf(T).MapName + ", " + Box.Pointer + ", " + First +
                                          ", " + Row + ", " + Box.Coordinates.back() + ");")));
      } else {
        TmaEdits.emplace_back(B, Len,
                              mark(PlanOf(T).Kind == CopyKind::Bulk
                                       ? Call("::tilepipe_rt::bulk_copy", {V, Box.Pointer, First, Bar}, Ind)
                                       : Call("::tilepipe_rt::copy_tile", {PlanOf(T).MapName, V, Box.Pointer, First, Bar},
                                              Ind)));
        ProbeEdits.emplace_back(B, Len,
                                mark(Test("::tilepipe_rt::starts_on_16(" + Box.Pointer + ", " + First + ");")));
      }
      // Every tile of the loop comes whole, once per tile: the barrier expects all their bytes.
      TileBytes += (TileBytes.empty() ? "" : " + ") + ("sizeof(" + V + ")");
    }
  }
  for (size_t I = 0; I < M.Stores.size(); ++I) {
    const TileStore &S = M.Stores[I];
    const Tile &T = M.Tiles[S.TileIdx];
    if (Pipelined && PlanOf(T).CpAsync == CopyKind::Chunks16 && T.Box.Store == I) {
      unsigned B = F.begin(S.Statement);
      Edits.emplace_back(B, F.afterSemi(S.Statement) - B, WideCall(T, S));
      continue;
    }
    bool Pair = I + 1 < M.Stores.size() && M.Stores[I + 1].Statement == S.Statement;
    unsigned B = F.begin(S.Statement), E = F.end(S.Statement);
    if (Pair && Pipelined) {
      // `t = c ? x : y` becomes `if (c) <x> else <y>`: a copy where the value is read, a store where it is filled.
      const TileStore &S2 = M.Stores[I + 1];
      const Expr *L, *R;
      splitAssignment(S.Statement, L, R);
      const auto *CO = cast<ConditionalOperator>(R->IgnoreParens());
      std::string DstText = F.text(S.Dst->getSourceRange());
      auto Branch = [&](const TileStore &X) {
        return X.Src ? CopyCall(X, Unit) : DstText + " = " + F.text(X.Fill->getSourceRange());
      };
      std::string Ind = F.indentOf(B);
      Edits.emplace_back(B, F.afterSemi(S.Statement) - B,
                         mark("if (" + F.text(CO->getCond()->IgnoreParens()->getSourceRange()) + ")") + "\n" +
                             Ind + Unit + mark(Branch(S) + ";") + "\n" + Ind + mark("else") + "\n" + Ind + Unit +
                             mark(Branch(S2) + ";"));
      ++I;
      continue;
    }
    if (S.Src && Pipelined)
      Edits.emplace_back(B, E - B, mark(CopyCall(S)));
  }
  std::string CopyText = editSpan(F, CopyBegin, CopyEnd, Edits);
  Lines CopyLines = chunk(CopyText, BodyIndent);
  Lines TmaCopyLines, ProbeLines;
  if (TmaLoop) {
    TmaCopyLines = chunk(editSpan(F, CopyBegin, CopyEnd, TmaEdits), BodyIndent);
    ProbeLines = chunk(editSpan(F, CopyBegin, CopyEnd, ProbeEdits), BodyIndent);
  }
  Lines ComputeLines = chunk(F.slice(Cut.ComputeBegin, Cut.ComputeEnd), BodyIndent);
  const std::string &CondText = Cut.CondText, &InitText = Cut.InitText, &Increment = Cut.Increment,
                    &Header = Cut.Header;
  const Lines &TailLines = Cut.TailLines;

  // Every slice of the user's text that moves begins and ends between tokens and carries its
  // comments and conditionals whole; else the loop is left alone.
  SourceTokens Toks(F, LoopOff, LoopEnd);
  {
    std::vector<unsigned> Cuts;
    for (const auto *E : {&Edits, &TmaEdits, &ProbeEdits})
      for (const auto &[Off, Len, New] : *E)
        Cuts.insert(Cuts.end(), {Off, Off + Len});
    if (std::string Why = Cut.problem(F, M, Toks, Cuts, Pipelined && Plan.ArchGuard); !Why.empty())
      return CannotCut(Why);
  }

  Lines Hoisted, Cursors, Shadows, Stores, FetchViews, Views, IndexDecls;
  for (const Tile &T : M.Tiles) {
    std::string Dims = "[" + std::to_string(Stages) + "]";
    if (T.DeclaredInBody) {
      std::vector<std::tuple<unsigned, unsigned, std::string>> Renames;
      for (const Decl *D : T.DeclaredInBody->decls()) {
        const auto *V = cast<VarDecl>(D);
        if (Pipelined)
          Renames.emplace_back(F.offset(V->getLocation()), V->getName().size(),
                               StageArray[V] + Dims);
      }
      std::string Decl = editSpan(F, F.begin(T.DeclaredInBody), F.end(T.DeclaredInBody), Renames);
      if (Pipelined && llvm::any_of(M.Tiles, [&](const Tile &U) {
            return U.DeclaredInBody == T.DeclaredInBody && (PlanOf(U).CpAsync == CopyKind::Chunks16 || TmaLoop);
          }))
        Decl = (TmaLoop ? "alignas(128) " : "alignas(16) ") + Decl;
      if (!llvm::is_contained(Hoisted, Decl))
        Hoisted.push_back(Decl);
    }
    FetchViews.push_back(mark("auto &" + T.Var->getName().str() + " = " + StageArray[T.Var] + "[" +
                              FetchStage + "];"));
    Views.push_back(mark("auto &" + T.Var->getName().str() + " = " + StageArray[T.Var] + "[" + Stage +
                         "];"));
  }
  for (const VarDecl *V : M.Inductions) {
    Cursors.push_back(mark("auto " + Cursor[V] + " = " + V->getName().str() + ";"));
    Shadows.push_back(mark("auto " + V->getName().str() + " = " + Cursor[V] + ";"));
    Stores.push_back(mark(Cursor[V] + " = " + V->getName().str() + ";"));
  }
  // Index variables stay in the loop body only where the compute phase still reads them.
  llvm::SmallPtrSet<const Decl *, 8> ReadByCompute;
  {
    struct Reads : RecursiveASTVisitor<Reads> {
      llvm::SmallPtrSet<const Decl *, 8> *Out;
      bool VisitDeclRefExpr(DeclRefExpr *DRE) {
        Out->insert(DRE->getDecl());
        return true;
      }
    } R;
    R.Out = &ReadByCompute;
    for (const Stmt *S : M.ComputePhase)
      R.TraverseStmt(const_cast<Stmt *>(S));
    for (const Stmt *S : M.TailIncs)
      R.TraverseStmt(const_cast<Stmt *>(S));
  }
  for (const DeclStmt *DS : M.IndexDecls)
    if (llvm::any_of(DS->decls(), [&](const Decl *D) { return ReadByCompute.contains(D); }))
      for (const std::string &L : chunk(F.slice(F.begin(DS), F.end(DS)), BodyIndent))
      IndexDecls.push_back(L);

  Lines WideSetup;
  if (AnyWide)
    WideSetup = mark(Lines{"const unsigned " + Rank +
                               " = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
                           "const unsigned " + Threads + " = blockDim.x * blockDim.y * blockDim.z;"});
  std::map<std::string, std::string> Inline = {
      {"stages", std::to_string(Stages)}, {"ahead", std::to_string(Stages - 1)},
      {"pending", std::to_string(Stages - 2)},
      {"pipe", Pipe},         {"fetch_stage", FetchStage},
      {"stage", Stage},       {"issue", Issue},
      {"prologue", Prologue}, {"cond", CondText},
      {"loop_header", Header}, {"bars", Bars},
      {"leader", Leader},     {"tile_bytes", TileBytes},
      {"parities", Parities}, {"s", StageVar},
      {"tensor_copies", TensorCopies}, {"aligned", AlignedVar},
      {"probe", Probe}};
  // After the loop, a block barrier where the original's last one ordered something: what the
  // compute phase wrote to shared or global memory (another thread may read it after the loop),
  // and, where the block may run the loop again, its reads of the buffers before the next refill.
  Lines Trailing;
  if (M.ComputeWritesMemory && M.NestedInLoop)
    Trailing = {"__syncthreads(); // the loop's writes are seen after it; the buffers may be refilled when this "
                "block runs again"};
  else if (M.ComputeWritesMemory)
    Trailing = {"__syncthreads(); // the loop's writes to memory are seen by every thread after it"};
  else if (M.NestedInLoop)
    Trailing = {"__syncthreads(); // the buffers may be refilled when this block runs again"};
  // Before the first copies of a loop of the rotated form, its leading barrier: every thread's
  // writes before the loop (to the copies' sources) are done before any thread copies.
  Lines Leading;
  if (M.Form == LoopForm::Rotated)
    Leading = {"__syncthreads(); // as the loop's leading barrier: what the block wrote before it is seen by the "
               "copies"};
  std::map<std::string, Lines> Blocks = {
      {"hoisted_tiles", Hoisted},
      {"init", single(InitText)},
      {"cursors", Cursors},
      {"shadow_inductions", Shadows},
      {"fetch_views", FetchViews},
      {"copy_phase", CopyLines},
      {"tma_copy_phase", TmaCopyLines},
      {"probe_phase", ProbeLines},
      {"probe_state", ProbeState},
      {"increment", single(Increment)},
      {"store_cursors", Stores},
      {"views", Views},
      {"index_decls", IndexDecls},
      {"compute_phase", ComputeLines},
      {"tail_increments", TailLines},
      {"wide_setup", WideSetup},
      {"trailing_barrier", mark(Trailing)},
      {"leading_barrier", mark(Leading)}};
  // A rendered section as lines of a block, its directives kept in column 0.
  auto Section = [&](StringRef Name) {
    Lines Out;
    for (const std::string &L : chunk(render(section(Name), Inline, Blocks, "", Unit), ""))
      Out.push_back(bare(L).starts_with("#") ? Verbatim + L : L);
    return Out;
  };
  std::string NewText;
  if (!Pipelined) {
    NewText = render(ComputeOnlyTemplate, Inline, Blocks, Base, Unit);
  } else {
    Blocks["cp_async_loop"] = Section("cp_async_loop");
    if (TmaLoop) {
      // Launch-uniform: the kernel got maps for this loop's tiles, and the block has their shape.
      // Bulk copies need neither: only the block's shape.
      std::vector<std::string> Launch;
      if (!Plan.TmaFlag.empty())
        Launch.push_back(Plan.TmaFlag);
      std::vector<std::string> Shapes;
      bool AnyBulk = false, AnyTensor = false;
      for (const Tile &T : M.Tiles) {
        std::string V = StageArray[T.Var] + "[0]";
        bool IsBulk = PlanOf(T).Kind == CopyKind::Bulk;
        AnyBulk |= IsBulk;
        AnyTensor |= !IsBulk;
        if (!IsBulk)
          Launch.push_back("::tilepipe_rt::takes(" + PlanOf(T).MapName + ", " + V + (T.Box.Guarded ? ", true)" : ")"));
        for (const std::string &Cond : blockHasShape(V, T.Box.ThreadDims))
          if (!llvm::is_contained(Shapes, Cond))
            Shapes.push_back(Cond);
      }
      Launch.insert(Launch.end(), Shapes.begin(), Shapes.end());
      Inline["tma_launch"] = llvm::join(Launch, " &&\n    ");
      if (AnyTensor && Plan.TmaFlag.empty())
        return Fail("a tile with a tensor copy in a loop without the launch flag");
      // What the leader's probe of the first two tiles decides; the guarded clause only where a tile is.
      std::string Engine = AnyBulk ? AnyTensor ? "Tensor and bulk copies" : "Bulk copies" : "Tensor copies";
      Blocks["probe_comment"] =
          llvm::any_of(M.Tiles, [](const Tile &T) { return T.Box.Guarded; })
              ? Lines{"// " + Engine + " where the first two tiles start on 16 bytes and, for a guarded copy,",
                      "// where the index is the place of its coordinates in the map (so do all, where the indices step",
                      "// evenly); else this block copies by cp.async."}
              : Lines{"// " + Engine + " where the first two tiles start on 16 bytes (so do all, where the indices",
                      "// step evenly); else this block copies by cp.async."};
      Inline["how"] = !AnyBulk ? "launched with tensor maps: one tensor copy (TMA) per tile"
                      : AnyTensor ? "launched with tensor maps: one tensor copy (TMA) or bulk copy\n// "
                                    "(cp.async.bulk) per tile"
                                  : "however launched: one bulk copy (cp.async.bulk) per tile";
      Blocks["invalidate"] =
          M.NestedInLoop ? mark(Lines{"if (" + Leader + ") // set up again when this block runs again",
                                      Unit + "for (int " + StageVar + " = 0; " + StageVar + " < " +
                                          std::to_string(Stages) + "; ++" + StageVar + ")",
                                      Unit + Unit + "::tilepipe_rt::drop_barrier(" + Bars + "[" + StageVar + "]);"})
                         : Lines{};
      Blocks["tma_loop"] = Section("tma_loop");
    }
    NewText = render(section(TmaLoop ? "dispatch" : "cp_async"), Inline, Blocks, Base, Unit);
  }

  std::vector<Replacement> Out;
  unsigned ReplaceFrom = LoopOff, ReplaceTo = LoopEnd;
  if (Pipelined && Plan.ArchGuard) {
    // Below compute capability 8.0 the loop stays as it was, reading stage 0 of each tile.
    if (!F.firstOnLine(LoopOff))
      return Fail("the loop does not begin its line, so it cannot be put under #if");
    ReplaceFrom = F.lineStart(LoopOff);
    Lines Original;
    for (const Tile &T : M.Tiles)
      if (!T.DeclaredInBody)
        Original.push_back(mark("auto &" + T.Var->getName().str() + " = " + StageArray[T.Var] + "[0];"));
    for (const std::string &L : chunk(F.slice(LoopOff, LoopEnd), Base))
      Original.push_back(L);
    std::string Text = mark("#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800") + "\n" + Base + NewText + "\n" +
                       mark("#else") + "\n" + Base +
                       mark("{ // tilepipe: below compute capability 8.0, the loop as it was") + "\n";
    for (const std::string &L : Original)
      Text += L.empty() ? "\n" : L.front() == Verbatim ? L.substr(1) + "\n" : Base + Unit + L + "\n";
    NewText = Text + Base + mark("}") + "\n" + mark("#endif");
    // Code after the loop on its last line would otherwise become part of the #endif line: it
    // goes to a line of its own.
    if (Toks.codeFollowsOnLine(LoopEnd)) {
      NewText += "\n" + Base;
      while (ReplaceTo < F.Buffer.size() && (F.Buffer[ReplaceTo] == ' ' || F.Buffer[ReplaceTo] == '\t'))
        ++ReplaceTo;
    }
  }
  // The last line of defence: every line Emit wrote begins with a token of its own.
  if (std::string Why = unmark(NewText, F.LO); !Why.empty())
    return CannotCut(Why);
  Out.emplace_back(F.SM, CharSourceRange::getCharRange(F.SM.getComposedLoc(F.FID, ReplaceFrom),
                                                       F.SM.getComposedLoc(F.FID, ReplaceTo)),
                   NewText);
  std::set<unsigned> Aligned;
  for (const Tile &T : M.Tiles)
    if (!T.DeclaredInBody && Pipelined) {
      Out.emplace_back(F.SM, CharSourceRange::getTokenRange(T.Var->getLocation()),
                       StageArray[T.Var] + "[" + std::to_string(Stages) + "]");
      // Chunks start on 16 bytes of the shared tile only if the array does.
      SourceLocation Begin = F.SM.getExpansionLoc(T.Var->getBeginLoc());
      // Tensor copies need 128 bytes; the first tile of a declaration decides for all of it.
      if ((PlanOf(T).CpAsync == CopyKind::Chunks16 || TmaLoop) && Aligned.insert(F.offset(Begin)).second) {
        Out.emplace_back(F.SM, Begin, 0, TmaLoop ? "alignas(128) " : "alignas(16) ");
      }
    }
  return Out;
}

std::string emitLauncher(const LauncherParts &P) {
  // A map per tile, encoded from the tile's pointer, element size, row stride and extents.
  Lines Maps, Encodes;
  std::vector<std::string> Args = P.Args;
  for (const auto &[T, MapName] : P.Tiles) {
    const TileBox &B = T->Box;
    Maps.push_back("::tilepipe_rt::TileMap " + MapName + " = {};");
    // Rows and planes: the tile's next-to-innermost and outermost dimensions, with their strides.
    const size_t N = B.ExtentText.size();
    auto Long = [](const std::string &E) { return "(long long)(" + E + ")"; };
    std::string Stride = N == 1 ? "0" : Long(B.Coefficients[N - 2]);
    std::string Rows = N == 1 ? "0" : Long(B.ExtentText[N - 2]);
    // A guarded copy's map ends where its guard's bounds do (Check gives those one or two
    // dimensions); the planes of a tile of three follow the bounds.
    std::string Bounds;
    if (B.Guarded)
      Bounds = std::string(", ") + (B.Bounds.size() == 1 ? "0" : Long(B.Bounds[0])) + ", " + Long(B.Bounds.back());
    else if (N == 3)
      Bounds = ", 0, 0, " + Long(B.Coefficients[0]) + ", " + Long(B.ExtentText[0]);
    Encodes.push_back(P.Ok + " = " + P.Ok + " && ::tilepipe_rt::encode(&" + MapName + ", " +
                      B.PointerParam + ", sizeof(" + T->ElementTypeText + "), " + Stride + ", " + Rows + ", " +
                      Long(B.ExtentText.back()) + Bounds + ");");
    Args.push_back(MapName);
  }
  Args.push_back(P.Ok);
  std::map<std::string, std::string> Inline = {
      {"kernel_name", P.KernelName}, {"kernel", P.Kernel},   {"launcher", P.Launcher},
      {"qualifier", P.Qualifier},
      {"params", P.Params},          {"args", llvm::join(Args, ", ")}, {"grid", P.Grid},
      {"block", P.Block},            {"shared_bytes", P.SharedBytes},
      {"stream", P.Stream},          {"ok", P.Ok},           {"traced", P.Traced}};
  std::map<std::string, Lines> Blocks = {
      {"template_header", single(P.TemplateHeader)}, {"maps", Maps}, {"encodes", Encodes}};
  return render(TmaLauncherTemplate, Inline, Blocks, "", "  ", /*Mark=*/false);
}

struct FreshNames::Impl {
  Impl(ASTContext &Ctx, const FunctionDecl *FD)
      : F(Ctx, Ctx.getSourceManager().getFileID(
                   Ctx.getSourceManager().getExpansionLoc(FD->getBeginLoc()))),
        N(F, FD) {}
  FileText F;
  Namer N;
};

FreshNames::FreshNames(ASTContext &Ctx, const FunctionDecl *FD)
    : P(std::make_unique<Impl>(Ctx, FD)) {}
FreshNames::~FreshNames() = default;
std::string FreshNames::get(StringRef Base) { return P->N.get(Base); }

std::optional<Replacement> pipelineInclude(const SourceManager &SM, FileID FID,
                                           std::optional<RuntimeMode> Runtime) {
  StringRef Buffer = SM.getBufferData(FID);
  auto Has = [&](StringRef Header) {
    return llvm::Regex(("^[ \t]*#[ \t]*include[ \t]*<" + Header + ">").str(), llvm::Regex::Newline)
        .match(Buffer);
  };
  std::string Text;
  for (StringRef H : {"cuda/pipeline", "cuda/barrier", "cuda/ptx", "cuda.h"})
    if ((H == "cuda/pipeline" || Runtime) && !Has(H))
      Text += "#include <" + H.str() + ">\n";
  // Once: a file that has the runtime (included, or pasted with its guard) gets no second copy.
  if (Runtime && !Has(runtimeHeaderName()) &&
      !llvm::Regex("^#define TILEPIPE_RUNTIME_CUH$", llvm::Regex::Newline).match(Buffer))
    Text += runtimeUse(*Runtime);
  if (Text.empty())
    return std::nullopt;
  llvm::Regex First("^[ \t]*#[ \t]*include", llvm::Regex::Newline);
  SmallVector<StringRef, 1> Match;
  unsigned Off = 0;
  if (First.match(Buffer, &Match))
    Off = Match[0].data() - Buffer.data();
  StringRef Path = SM.getFileEntryRefForID(FID)->getName();
  return Replacement(Path, Off, 0, Text);
}

} // namespace tilepipe
