// Emit: cut the loop's own text into pieces (header, copy phase, compute phase) and place them in
// the pipeline skeleton of templates/pipeline.cu.in. Nothing is pretty-printed: every piece of user
// code is the user's text, so comments, macros and formatting inside the loop survive.
#include "tilepipe/Emit.h"
#include "EmitPipeline.h"
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

namespace emit {

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

llvm::Error fail(const Twine &Why) { return llvm::make_error<EmitError>(Reason::Unsupported, Why.str()); }

namespace {

/// The loop's text cannot be cut safely: the loop is left alone with reason source-text.
llvm::Error cannotCut(const std::string &Why) { return llvm::make_error<EmitError>(Reason::SourceText, Why); }

/// The plan chooses among what the model allows, and Emit trusts nothing else.
llvm::Error checkPlan(const LoopModel &M, const LoopPlan &Plan, bool TmaLoop) {
  for (const Tile &T : M.Tiles) {
    const TilePlan &TP = Plan.Tiles[&T - M.Tiles.data()];
    if ((TP.CpAsync == CopyKind::Chunks16 && !T.Box.wide()) ||
        (TmaLoop && !(TP.Kind == CopyKind::Bulk ? T.Box.Valid && T.Box.Bulk
                                                : TP.Kind == CopyKind::Tensor && T.Box.Valid && T.Box.Tma &&
                                                      !TP.MapName.empty())))
      return fail("internal: the plan copies '" + T.Var->getName() + "' in a way its box does not allow");
  }
  return llvm::Error::success();
}

/// After the loop, a block barrier where the original's last one ordered something: what the
/// compute phase wrote to shared or global memory (another thread may read it after the loop),
/// and, where the block may run the loop again, its reads of the buffers before the next refill.
Lines trailingBarrier(const LoopModel &M) {
  if (M.ComputeWritesMemory && M.NestedInLoop)
    return {"__syncthreads(); // the loop's writes are seen after it; the buffers may be refilled when this "
            "block runs again"};
  if (M.ComputeWritesMemory)
    return {"__syncthreads(); // the loop's writes to memory are seen by every thread after it"};
  if (M.NestedInLoop)
    return {"__syncthreads(); // the buffers may be refilled when this block runs again"};
  return {};
}

/// Before the first copies: the leading barrier of a loop of the rotated form, so that every
/// thread's writes before the loop (to the copies' sources) are done before any thread copies.
/// Whole-tile copies need one in either form: they spread each tile over the block's threads, so
/// a thread copies elements that other threads (not itself, as in the original) may have just
/// written.
Lines leadingBarrier(const LoopModel &M, bool Wide) {
  if (M.Form == LoopForm::Rotated)
    return {"__syncthreads(); // as the loop's leading barrier: what the block wrote before it is seen by the "
            "copies"};
  if (Wide)
    return {"__syncthreads(); // each thread copies chunks that other threads may have written before the loop"};
  return {};
}

/// The declarations of the loop's index variables that the compute phase still reads, and those
/// they read (indexDeclsRead): only those stay in the loop body.
Lines indexDecls(const FileText &F, const LoopModel &M, const std::string &BodyIndent) {
  Lines Out;
  for (const DeclStmt *DS : indexDeclsRead(M))
    for (const std::string &L : chunk(F.slice(F.begin(DS), F.end(DS)), BodyIndent))
      Out.push_back(L);
  return Out;
}

} // namespace

PipelineEmitter::PipelineEmitter(const FileText &F, const LoopCut &Cut, const LoopModel &M, const LoopPlan &Plan,
                                 bool Pipelined)
    : F(F), Cut(Cut), M(M), Plan(Plan), Pipelined(Pipelined), TmaLoop(Pipelined && Plan.Engine && !M.Tiles.empty()),
      Stages(Plan.Stages), Names(F, M.Function) {
  // The names are taken in this order: a second name of one base gets the next number.
  Pipe = Names.get("pipe");
  FetchStage = Names.get("fetch_stage");
  Stage = Names.get("stage");
  Issue = Names.get("issue_tile");
  Prologue = Names.get("prologue");
  for (const Tile &T : M.Tiles)
    StageArray[T.Var] = Names.get(T.Var->getName().str() + "_stages");
  for (const VarDecl *V : M.Inductions)
    Cursor[V] = Names.get(V->getName().str() + "_fetch");
  Rank = Names.get("rank");
  Threads = Names.get("threads");
  if (Pipelined && Plan.DynamicStages) {
    DynamicSmem = Names.get("dynamic_smem");
    LiveStages = Names.get("live_stages");
  }
  if (TmaLoop) {
    Bars = Names.get("stage_barriers");
    Leader = Names.get("leader");
    TensorCopies = Names.get("tensor_copies");
    AlignedVar = Names.get("tiles_aligned");
    Probe = Names.get("probe");
    Parities = Names.get("parities");
    StageVar = Names.get("s");
  }
}

/// Every slice of the user's text that moves begins and ends between tokens and carries its
/// comments and conditionals whole; else the loop is left alone.
llvm::Error PipelineEmitter::checkCuts(const SourceTokens &Toks) const {
  std::vector<unsigned> Cuts;
  for (const auto *E : {&Edits, &TmaEdits, &ProbeEdits})
    for (const auto &[Off, Len, New] : *E)
      Cuts.insert(Cuts.end(), {Off, Off + Len});
  if (std::string Why = Cut.problem(F, M, Toks, Cuts, keepsOriginal()); !Why.empty())
    return cannotCut(Why);
  // Every name the moved text looks up keeps its declaration (EmitNames.cpp).
  std::vector<MovedText> Pieces = loopPieces(M, indexDeclsRead(M));
  MovedText Hoisted{"the declaration of a tile in the loop body, which the rewrite writes before the loop", {}, {}, {}, {}};
  for (const Tile &T : M.Tiles)
    if (T.DeclaredInBody && !llvm::is_contained(Hoisted.Stmts, T.DeclaredInBody))
      Hoisted.Stmts.push_back(T.DeclaredInBody);
  Pieces.push_back(Hoisted);
  if (std::string Why = movedNamesProblem(F, M, Pieces); !Why.empty())
    return llvm::make_error<EmitError>(Reason::NameBinding, Why);
  return llvm::Error::success();
}

/// The declarations of the tiles declared in the body, hoisted before the loop as stage arrays.
Lines PipelineEmitter::hoistedTiles() const {
  Lines Hoisted;
  std::string Dims = "[" + std::to_string(Stages) + "]";
  for (const Tile &T : M.Tiles) {
    if (!T.DeclaredInBody)
      continue;
    std::vector<Edit> Renames;
    for (const Decl *D : T.DeclaredInBody->decls()) {
      const auto *V = cast<VarDecl>(D);
      if (Pipelined)
        Renames.emplace_back(F.offset(V->getLocation()), V->getName().size(), stageArrayOf(V) + Dims);
    }
    std::string Decl = editSpan(F, F.begin(T.DeclaredInBody), F.end(T.DeclaredInBody), Renames);
    if (Pipelined && llvm::any_of(M.Tiles, [&](const Tile &U) {
          return U.DeclaredInBody == T.DeclaredInBody && (planOf(U).CpAsync == CopyKind::Chunks16 || TmaLoop ||
                                                          storesVectors(U));
        }))
      Decl = (TmaLoop ? "alignas(128) " : "alignas(16) ") + Decl;
    if (!llvm::is_contained(Hoisted, Decl))
      Hoisted.push_back(Decl);
  }
  return Hoisted;
}

/// Each tile as a view of its stage array's buffer StageIndex: `auto &tile = tile_stages[i];`.
Lines PipelineEmitter::views(const std::string &StageIndex) const {
  Lines Out;
  for (const Tile &T : M.Tiles)
    Out.push_back(mark("auto &" + T.Var->getName().str() + " = " + StageArray.at(T.Var) + "[" + StageIndex + "];"));
  return Out;
}

/// The template's inline values: the stage counts and the names.
std::map<std::string, std::string> PipelineEmitter::inlineValues() const {
  // What one trip of the loop copies into shared memory, for the benchmark's L2 floor (the
  // compute-only variant built with -DTPV_CENSUS counts it): every tile, per instantiation.
  std::string CensusBytes;
  for (const Tile &T : M.Tiles)
    CensusBytes += (CensusBytes.empty() ? "" : " + ") + ("sizeof(" + T.Var->getName().str() + ")");
  return {{"stages", std::to_string(Stages)},
          {"census_bytes", CensusBytes},
          {"ahead", std::to_string(Stages - 1)},
          {"pending", std::to_string(Stages - 2)},
          {"pipe", Pipe},
          {"fetch_stage", FetchStage},
          {"stage", Stage},
          {"issue", Issue},
          {"prologue", Prologue},
          {"cond", Cut.CondText},
          {"loop_header", Cut.Header},
          {"bars", Bars},
          {"leader", Leader},
          {"tile_bytes", TileBytes},
          {"parities", Parities},
          {"s", StageVar},
          {"tensor_copies", TensorCopies},
          {"aligned", AlignedVar},
          {"probe", Probe}};
}

/// The template's blocks: the user's text, cut and edited, and the declarations Emit adds.
std::map<std::string, Lines> PipelineEmitter::blocks() const {
  std::vector<std::pair<std::string, std::string>> VarAndCursor;
  for (const VarDecl *V : M.Inductions)
    VarAndCursor.emplace_back(V->getName().str(), Cursor.at(V));
  CursorLines C = cursorLines(VarAndCursor);
  Lines TmaCopyLines, ProbeLines, WideSetup;
  if (TmaLoop) {
    TmaCopyLines = copyPhase(TmaEdits);
    ProbeLines = copyPhase(ProbeEdits);
  }
  if (AnyWide)
    WideSetup = mark(Lines{"const unsigned " + Rank +
                               " = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
                           "const unsigned " + Threads + " = blockDim.x * blockDim.y * blockDim.z;"});
  return {{"hoisted_tiles", hoistedTiles()},
          {"init", single(Cut.InitText)},
          {"cursors", C.Declare},
          {"shadow_inductions", C.Shadow},
          {"fetch_views", views(FetchStage)},
          {"copy_phase", copyPhase(Edits)},
          {"tma_copy_phase", TmaCopyLines},
          {"probe_phase", ProbeLines},
          {"probe_state", ProbeState},
          {"increment", single(Cut.Increment)},
          {"store_cursors", C.Store},
          {"views", views(Stage)},
          {"index_decls", indexDecls(F, M, Cut.BodyIndent)},
          {"compute_phase", chunk(F.slice(Cut.ComputeBegin, Cut.ComputeEnd), Cut.BodyIndent)},
          {"tail_increments", Cut.TailLines},
          {"loop_pragmas", Cut.Pragmas},
          {"wide_setup", WideSetup},
          {"trailing_barrier", mark(trailingBarrier(M))},
          {"leading_barrier", mark(leadingBarrier(M, AnyWide))}};
}

/// The name of templates/pipeline.cu.in's section Name, for render's errors.
static std::string sectionName(StringRef Name) { return ("templates/pipeline.cu.in (@" + Name + ")").str(); }

/// A rendered section of templates/pipeline.cu.in as lines of a block, its directives kept in column 0.
llvm::Expected<Lines> PipelineEmitter::renderSection(StringRef Name, const std::map<std::string, std::string> &Inline,
                                                     const std::map<std::string, Lines> &Blocks) const {
  auto Text = render(section(Name), sectionName(Name), Inline, Blocks, "", Cut.Unit);
  if (!Text)
    return Text.takeError();
  Lines Out;
  for (const std::string &L : chunk(*Text, ""))
    Out.push_back(bare(L).starts_with("#") ? Verbatim + L : L);
  return Out;
}

/// The new loop: the compute-only variant, the cp.async pipeline, or that and the copy-engine
/// pipeline with the dispatch between them.
llvm::Expected<std::string> PipelineEmitter::renderLoop() const {
  std::map<std::string, std::string> Inline = inlineValues();
  std::map<std::string, Lines> Blocks = blocks();
  if (!Pipelined)
    return render(ComputeOnlyTemplate, "templates/compute_only.cu.in", Inline, Blocks, Cut.Base, Cut.Unit);
  auto CpAsyncLoop = renderSection("cp_async_loop", Inline, Blocks);
  if (!CpAsyncLoop)
    return CpAsyncLoop.takeError();
  Blocks["cp_async_loop"] = std::move(*CpAsyncLoop);
  if (TmaLoop)
    if (llvm::Error E = addEngineLoop(Inline, Blocks))
      return E;
  StringRef Outer = TmaLoop ? "dispatch" : "cp_async";
  return render(section(Outer), sectionName(Outer), Inline, Blocks, Cut.Base, Cut.Unit);
}

/// The tiles declared before the loop become stage arrays, aligned for the copies that need it.
void PipelineEmitter::tileDeclEdits(std::vector<Replacement> &Out) const {
  std::set<unsigned> Aligned;
  for (const Tile &T : M.Tiles)
    if (!T.DeclaredInBody && Pipelined) {
      // Instantiations the analysis did not see keep the loop, on one buffer.
      const std::string Count = Plan.TemplateGuard.empty()
                                    ? std::to_string(Stages)
                                    : "(" + Plan.TemplateGuard + ") ? " + std::to_string(Stages) + " : 1";
      Out.emplace_back(F.SM, CharSourceRange::getTokenRange(T.Var->getLocation()),
                       StageArray.at(T.Var) + "[" + Count + "]");
      // Chunks start on 16 bytes of the shared tile only if the array does.
      SourceLocation Begin = F.SM.getExpansionLoc(T.Var->getBeginLoc());
      // Tensor copies need 128 bytes; the first tile of a declaration decides for all of it.
      if ((planOf(T).CpAsync == CopyKind::Chunks16 || TmaLoop || storesVectors(T)) &&
          Aligned.insert(F.offset(Begin)).second) {
        Out.emplace_back(F.SM, Begin, 0, TmaLoop ? "alignas(128) " : "alignas(16) ");
      }
    }
}

llvm::Expected<std::vector<Replacement>> PipelineEmitter::emit() {
  for (const Tile &T : M.Tiles)
    if (T.DeclaredInBody)
      Edits.push_back(dropStatement(F, T.DeclaredInBody));
  TmaEdits = ProbeEdits = Edits;
  if (TmaLoop)
    if (llvm::Error E = engineEdits())
      return E;
  if (llvm::Error E = copyEdits())
    return E;
  SourceTokens Toks(F, Cut.LoopOff, Cut.LoopEnd);
  if (llvm::Error E = checkCuts(Toks))
    return E;
  auto NewText = renderLoop();
  if (!NewText)
    return NewText.takeError();
  unsigned ReplaceFrom = Cut.LoopOff, ReplaceTo = Cut.LoopEnd;
  if (keepsOriginal()) {
    if (llvm::Error E = keepOriginal(*NewText, ReplaceFrom, ReplaceTo, Toks))
      return E;
  } else if (Cut.PragmaOff < Cut.LoopOff) {
    // The loop's pragma lines go with it, onto the mainloop.
    ReplaceFrom = Cut.PragmaOff;
    *NewText = Cut.Base + *NewText;
  }
  // The last line of defence: every line Emit wrote begins with a token of its own.
  if (std::string Why = unmark(*NewText, F.LO); !Why.empty())
    return cannotCut(Why);
  std::vector<Replacement> Out;
  Out.emplace_back(F.SM, CharSourceRange::getCharRange(F.SM.getComposedLoc(F.FID, ReplaceFrom),
                                                       F.SM.getComposedLoc(F.FID, ReplaceTo)),
                   *NewText);
  if (Pipelined && Plan.DynamicStages) {
    if (llvm::Error E = dynamicTileDecls(Out))
      return E;
  } else {
    tileDeclEdits(Out);
  }
  return Out;
}

} // namespace emit

llvm::Expected<std::vector<Replacement>> emitPipeline(ASTContext &Ctx, const LoopModel &M,
                                                      const LoopPlan &Plan, EmitKind Kind) {
  const bool Pipelined = Kind == EmitKind::Pipeline;
  FileText F(Ctx, Ctx.getSourceManager().getFileID(
                      Ctx.getSourceManager().getExpansionLoc(M.Loop->getBeginLoc())));
  if (Plan.Tiles.size() != M.Tiles.size() || (Pipelined && !Plan.Registers && Plan.Stages < 2))
    return fail("internal: the plan does not fit the loop");
  if (Pipelined && Plan.Registers)
    return emitRegisters(Ctx, M, Plan.Stages, Plan.TemplateGuard);
  if (llvm::Error E = checkPlan(M, Plan, Pipelined && Plan.Engine && !M.Tiles.empty()))
    return E;
  auto CutOr = cutLoop(F, M);
  if (!CutOr)
    return CutOr.takeError();
  return PipelineEmitter(F, *CutOr, M, Plan, Pipelined).emit();
}


std::string emitLauncher(const LauncherParts &P) {
  if (P.Tiles.empty() && !P.DynamicFlag.empty())
    return emitDynamicLauncher(P);
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
  auto Text = render(TmaLauncherTemplate, "templates/tma_launcher.cu.in", Inline, Blocks, "", "  ",
                     /*Mark=*/false);
  // Its holes are filled from the same names for every kernel: one left unfilled is a defect of
  // this build that no input avoids, fatal in every build type, as a missing section is.
  if (!Text)
    llvm::reportFatalInternalError(llvm::Twine("tilepipe: ") + llvm::toString(Text.takeError()));
  return std::move(*Text);
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

/// The file's #include directives that every compilation of it sees: outside comments, outside
/// every preprocessor conditional and outside braces (`extern "C" {`, a namespace), each with its
/// offset and the header it names as written (`<cuda/pipeline>`, `"x.h"`).
static std::vector<std::pair<unsigned, std::string>> topLevelIncludes(const SourceManager &SM, FileID FID) {
  std::vector<std::pair<unsigned, std::string>> Out;
  StringRef Buffer = SM.getBufferData(FID);
  LangOptions LO;
  LO.CPlusPlus = LO.CPlusPlus11 = LO.CPlusPlus14 = LO.CPlusPlus17 = true;
  LO.Digraphs = true; // `%:if 0` is a conditional, `<%` a brace
  Lexer Raw(SM.getLocForStartOfFile(FID), LO, Buffer.begin(), Buffer.begin(), Buffer.end());
  Raw.SetCommentRetentionState(false);
  Token Tok;
  int Cond = 0, Braces = 0;
  Raw.LexFromRawLexer(Tok);
  while (Tok.isNot(tok::eof)) {
    if (Tok.is(tok::hash) && Tok.isAtStartOfLine()) {
      unsigned Off = SM.getFileOffset(Tok.getLocation());
      Raw.LexFromRawLexer(Tok);
      StringRef D = Tok.is(tok::raw_identifier) ? Tok.getRawIdentifier() : "";
      if (D == "if" || D == "ifdef" || D == "ifndef")
        ++Cond;
      else if (D == "endif")
        --Cond;
      std::string Rest;
      // The rest of the directive's line.
      while (!Raw.LexFromRawLexer(Tok) && !Tok.isAtStartOfLine())
        Rest += Lexer::getSpelling(Tok, SM, LO);
      if (Tok.isNot(tok::eof) && !Tok.isAtStartOfLine())
        Rest += Lexer::getSpelling(Tok, SM, LO);
      if (D == "include" && Cond == 0 && Braces == 0)
        Out.push_back({Off, Rest});
      continue; // Tok is the first token of the next line
    }
    if (Tok.is(tok::l_brace))
      ++Braces;
    else if (Tok.is(tok::r_brace))
      --Braces;
    Raw.LexFromRawLexer(Tok);
  }
  return Out;
}

std::optional<Replacement> pipelineInclude(const SourceManager &SM, FileID FID,
                                           std::optional<RuntimeMode> Runtime, unsigned FirstEdit, bool Pipeline,
                                           bool Traits) {
  StringRef Buffer = SM.getBufferData(FID);
  auto Includes = topLevelIncludes(SM, FID);
  auto Has = [&](StringRef Header) {
    return llvm::any_of(Includes, [&](const auto &I) { return I.second == "<" + Header.str() + ">"; });
  };
  std::string Text;
  for (StringRef H : {"cuda/pipeline", "cuda/barrier", "cuda/ptx", "cuda.h", "cuda/std/type_traits"})
    if (((H == "cuda/pipeline" && Pipeline) || (H == "cuda/std/type_traits" && Traits) ||
         (Runtime && H != "cuda/std/type_traits")) &&
        !Has(H))
      Text += "#include <" + H.str() + ">\n";
  // Once: a file that has the runtime (included, or pasted with its guard) gets no second copy.
  if (Runtime && !Has(runtimeHeaderName()) &&
      !llvm::Regex("^#define TILEPIPE_RUNTIME_CUH$", llvm::Regex::Newline).match(Buffer))
    Text += runtimeUse(*Runtime);
  if (Text.empty())
    return std::nullopt;
  // Before the first include that every compilation sees (so that macros the file defines for
  // the headers before it still come first), else at the top, after a byte order mark; never
  // inside a conditional, a comment or braces.
  unsigned Off = Buffer.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  if (!Includes.empty() && Includes.front().first <= FirstEdit)
    Off = Includes.front().first;
  StringRef Path = SM.getFileEntryRefForID(FID)->getName();
  return Replacement(Path, Off, 0, Text);
}

} // namespace tilepipe
