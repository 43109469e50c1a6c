// Plan, for the driver: what decides a legal loop's plan beside the loop itself, per function.
// The launch check's keep (an input to this run: the driver runs the whole chain again with it),
// the measured choices, and the function's static shared memory shared out among its loops.
#include "DriverSteps.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Tuning.h"
#include "tilepipe/Emit.h"
#include "tilepipe/Resources.h"
#include "clang/AST/Attr.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Basic/SourceManager.h"
#include <cstdio>

using namespace clang;

namespace tilepipe {

/// The measured choice for a legal loop, if any: --plan-choice, or the tuning file's entry for the
/// loop (by file, function, line and architecture) where the loop's text is the one measured. A
/// choice to keep the loop refuses it here (plan-kept), before stages are shared out.
static void measuredChoice(ASTContext &Ctx, const ToolOptions &Opts, const Stmt *Loop,
                           const FunctionDecl *FD, LoopResult &LR) {
  const SourceManager &SM = Ctx.getSourceManager();
  LR.Fingerprint = loopFingerprint(sourceText(Ctx, Loop->getSourceRange()));
  if (Opts.Choice) {
    LR.Forced = Opts.Choice;
    LR.Measured = "the plan --plan-choice=" + Opts.Choice->str() + " asks for";
  } else if (!Opts.Tuning.empty()) {
    PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(Loop->getBeginLoc()));
    const TuningEntry *T = findTuning(Opts.Tuning, P.getFilename(), FD->getNameAsString(),
                                      P.getLine(), Opts.GpuArch);
    if (T && T->Fingerprint != LR.Fingerprint) {
      LR.TuningNote = "the tuning file's entry for this loop was ignored: the loop's text changed "
                      "since it was measured";
    } else if (T) {
      LR.Forced = T->Choice;
      char Speed[32];
      std::snprintf(Speed, sizeof Speed, "%.2fx", T->Speedup);
      LR.Measured = "the tuning file's plan " + T->Choice.str() + " (measured " +
                    (T->Choice.Keep ? std::string("no plan faster") : std::string(Speed)) +
                    (T->Gpu.empty() ? "" : " on " + T->Gpu) + ")";
    }
  }
  if (LR.Forced && LR.Forced->Keep)
    LR.V = Verdict::refuse(Reason::PlanKept, LR.Measured);
}

/// Why the tiles of M cannot become stage arrays in dynamic shared memory (Emit's
/// dynamicTileDecls), or "": each is declared before the loop, `__shared__ T name[...]...;` in
/// statements that declare only the loop's tiles, all in one block, with elements aligned to at
/// most 16 bytes (the stages start on 128 bytes of a region that starts on 16).
static std::string dynamicTilesProblem(ASTContext &Ctx, const LoopModel &M) {
  const SourceManager &SM = Ctx.getSourceManager();
  const Stmt *Block = nullptr;
  for (const Tile &T : M.Tiles) {
    const std::string Name = quoted(T.Var);
    if (T.DeclaredInBody)
      return Name + " is declared in the loop body";
    const DeclStmt *DS = declarationOf(Ctx, T.Var);
    if (!DS)
      return Name + " is not declared by a statement of the function";
    for (const Decl *D : DS->decls())
      if (llvm::none_of(M.Tiles, [&](const Tile &U) { return U.Var == D; }))
        return "the statement that declares " + Name + " declares more than the loop's tiles";
    const Stmt *Parent = nullptr;
    for (const DynTypedNode &P : Ctx.getParents(*DS))
      Parent = P.get<CompoundStmt>();
    if (!Parent || (Block && Parent != Block))
      return "the loop's tiles are not all declared in one block";
    Block = Parent;
    CharSourceRange Whole = fileRange(Ctx, DS->getSourceRange());
    if (Whole.isInvalid() || SM.getFileID(Whole.getBegin()) != SM.getMainFileID())
      return "the declaration of " + Name + " is written in a macro or in another file";
    if (Ctx.getTypeAlignInChars(T.ElementType).getQuantity() > 16)
      return Name + "'s elements are aligned to more than 16 bytes";
    // The element type is written again from its text, which holds no qualifier (Check refuses
    // volatile elements; none other can be stored to).
    if (T.ElementType.hasQualifiers())
      return Name + "'s element type is qualified";
    TypeLoc TL = T.Var->getTypeSourceInfo()->getTypeLoc();
    if (!TL.getAs<ArrayTypeLoc>() || fileRange(Ctx, elementTypeLoc(T.Var).getSourceRange()).isInvalid() ||
        T.Var->getLocation().isMacroID() || fileRange(Ctx, TL.getSourceRange()).isInvalid())
      return "the declaration of " + Name + " is not `T name[...]` as plain text";
  }
  return "";
}

/// Why the loop of LR, the only legal loop of its function, cannot keep its stages in dynamic
/// shared memory, or "": its function is the kernel, which can take a flag parameter and a
/// launcher, every launch of which can call the launcher (launchSitesProblem), and its tiles can
/// become stage arrays there. Check refused the loop already where the kernel, or a function it
/// calls, uses dynamic shared memory, or a launch asks for some (launchProblems, Shared).
static std::string dynamicStagesProblem(ASTContext &Ctx, const TranslationUnitIndex &Index, const LoopResult &LR) {
  const FunctionDecl *FD = LR.Function;
  if (!FD->hasAttr<CUDAGlobalAttr>())
    return "the loop is not in the kernel itself, whose launches would size it";
  if (std::string Why = launcherProblem(Ctx, Index, FD); !Why.empty())
    return Why;
  if (std::string Why = launchSitesProblem(Ctx, patternOf(FD)); !Why.empty())
    return Why;
  if (std::string Why = calleeSharedProblem(Ctx, FD); !Why.empty())
    return Why;
  return dynamicTilesProblem(Ctx, LR.Model);
}

/// The function's one legal loop, whose two stages do not fit in static shared memory: stages in
/// dynamic shared memory, as many as asked for that fit DynamicSharedLimit beside the other shared
/// variables, where the kernel allows; else the refusal, with why.
static void dynamicStages(ASTContext &Ctx, const TranslationUnitIndex &Index, LoopResult &LR,
                          llvm::ArrayRef<uint64_t> Bytes, uint64_t Beside, unsigned Requested,
                          const std::string &Refusal) {
  std::string Why = dynamicStagesProblem(Ctx, Index, LR);
  unsigned Fit = 0;
  for (unsigned S = 2; S <= 6; ++S)
    if (Beside + dynamicStageBytes(Bytes, S) <= DynamicSharedLimit)
      Fit = S;
  if (Why.empty() && Fit < 2)
    Why = "two stages take " + std::to_string(dynamicStageBytes(Bytes, 2)) + " bytes, more than " +
          std::to_string(DynamicSharedLimit) + " beside the other shared variables";
  if (!Why.empty()) {
    LR.V = Verdict::refuse(Reason::SharedMemory, Refusal + "; nor can they lie in dynamic shared memory: " + Why);
    return;
  }
  LR.DynamicStages = true;
  LR.MaxStages = Fit;
  if (LR.Forced && LR.Forced->Stages > Fit) {
    LR.TuningNote = "the measured plan " + LR.Forced->str() + " does not fit the function's shared memory";
    LR.Forced.reset();
  }
  LR.Stages = std::min(Requested, Fit);
  LR.StageNote = "two stages do not fit in 48 KiB of static shared memory: the stages lie in dynamic "
                 "shared memory, " + std::to_string(dynamicStageBytes(Bytes, *LR.Stages)) + " bytes";
  if (*LR.Stages < Requested)
    LR.StageNote += " (" + std::to_string(Requested) + " stages requested, " + std::to_string(Fit) +
                    " fit in " + std::to_string(DynamicSharedLimit) + ")";
}

/// Plan, for one function: its pipelined loops share its static shared memory, so their stages
/// are planned together (planStages), each loop as many as it asked for where they fit; a loop
/// for which none fits is refused (shared-memory).
static void shareStages(ASTContext &Ctx, const TranslationUnitIndex &Index, std::vector<LoopResult> &Local,
                        const ToolOptions &Opts) {
  std::vector<std::vector<uint64_t>> Bytes;
  std::vector<SharedVar> Other;
  llvm::SmallPtrSet<const VarDecl *, 8> Staged; // the tiles of the legal loops
  for (LoopResult &LR : Local)
    if (LR.V.ok()) {
      Bytes.push_back(tileBytes(LR.Model));
      for (const Tile &T : LR.Model.Tiles)
        Staged.insert(T.Var);
    }
  // Every loop's model lists the function's shared variables beside its own tiles.
  for (LoopResult &LR : Local)
    if (LR.V.ok()) {
      for (const SharedVar &V : LR.Model.OtherShared)
        if (!Staged.contains(V.Var))
          Other.push_back(V);
      break;
    }
  std::vector<unsigned> Requested;
  for (LoopResult &LR : Local)
    if (LR.V.ok()) {
      unsigned S = LR.AnnotatedStages;
      // The register-staged prefetch keeps the loop's one buffer, however deep.
      bool OneBuffer = LR.Forced && !LR.Forced->Keep && LR.Forced->Copy == PlanChoice::Registers;
      Requested.push_back(OneBuffer ? 1 : LR.Forced ? LR.Forced->Stages : S ? S : Opts.Stages);
    }
  auto Plan = planStages(Bytes, Other, Requested);
  size_t K = 0;
  for (LoopResult &LR : Local) {
    if (LR.V.ok()) {
      LR.Stages = Plan[K];
      LR.Requested = Requested[K];
      // The most stages the loop could have, the others as planned: what tuning may try.
      for (unsigned S = 6; S >= 2 && !LR.MaxStages; --S) {
        std::vector<unsigned> Try = Requested;
        Try[K] = S;
        if (planStages(Bytes, Other, Try)[K] == S)
          LR.MaxStages = S;
      }
      if (LR.Forced && LR.Stages && *LR.Stages < Requested[K]) {
        LR.TuningNote = "the measured plan " + LR.Forced->str() + " does not fit the function's shared memory";
        LR.Forced.reset();
      }
      LR.SharedBeside = Other;
      for (size_t J = 0; J < Bytes.size(); ++J)
        if (J != K)
          LR.SharedBeside = withStages(LR.SharedBeside, Bytes[J], Plan[J].value_or(1));
      uint64_t Tiles = 0, Beside = 0;
      for (uint64_t B : Bytes[K])
        Tiles += B;
      for (const SharedVar &V : Other)
        Beside += V.Bytes;
      std::string Refusal = std::to_string(Tiles) + " bytes of tiles per stage next to " +
                            std::to_string(Beside) + " other bytes";
      if (!LR.Stages && Bytes.size() == 1 && !(LR.Forced && LR.Forced->Copy == PlanChoice::Registers))
        dynamicStages(Ctx, Index, LR, Bytes[K], sharedBytesBound(Other), Requested[K], Refusal);
      else if (!LR.Stages)
        LR.V = Verdict::refuse(Reason::SharedMemory, Refusal);
      else if (*LR.Stages < Requested[K])
        LR.StageNote = std::to_string(Requested[K]) + " stages requested, " +
                       std::to_string(*LR.Stages) + " fit in 48 KiB of static shared memory";
      ++K;
    }
  }
}

void planLoops(ASTContext &Ctx, const ToolOptions &Opts, const std::string &Path, CheckedLoops &Loops) {
  const SourceManager &SM = Ctx.getSourceManager();
  for (std::vector<CheckedLoop> &Checked : Loops.ByFunction) {
    std::vector<LoopResult> Local;
    for (CheckedLoop &C : Checked) {
      LoopResult LR{std::move(C)};
      LR.Requested = Opts.Stages;
      SourceLocation At = SM.getExpansionLoc(LR.Model.Loop->getBeginLoc());
      auto Kept = Opts.KeepLoops.find(
          {SM.getFileID(At) == SM.getMainFileID() ? Path
                                                  : std::string(SM.getPresumedLoc(At).getFilename()),
           SM.getFileOffset(At)});
      if (LR.V.ok() && Kept != Opts.KeepLoops.end())
        LR.V = Kept->second;
      if (LR.V.ok())
        measuredChoice(Ctx, Opts, LR.Model.Loop, LR.Function, LR);
      Local.push_back(std::move(LR));
    }
    shareStages(Ctx, *Loops.Index, Local, Opts);
    for (LoopResult &LR : Local)
      Loops.ByLoop[loopKey(SM, LR.Model.Loop)].push_back(std::move(LR));
  }
  Loops.ByFunction.clear();
}

} // namespace tilepipe
