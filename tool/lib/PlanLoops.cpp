// Plan, for the driver: what decides a legal loop's plan beside the loop itself, per function.
// The launch check's keep (an input to this run: the driver runs the whole chain again with it),
// the measured choices, and the function's static shared memory shared out among its loops.
#include "DriverSteps.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Tuning.h"
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

/// Plan, for one function: its pipelined loops share its static shared memory, so their stages
/// are planned together (planStages), each loop as many as it asked for where they fit; a loop
/// for which none fits is refused (shared-memory).
static void shareStages(std::vector<LoopResult> &Local, const ToolOptions &Opts) {
  std::vector<std::vector<uint64_t>> Bytes;
  std::vector<SharedVar> Other;
  llvm::SmallPtrSet<const VarDecl *, 8> Staged; // the tiles of the legal loops
  for (LoopResult &LR : Local)
    if (LR.V.ok()) {
      Bytes.emplace_back();
      for (const Tile &T : LR.Model.Tiles) {
        Bytes.back().push_back(T.Bytes);
        Staged.insert(T.Var);
      }
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
      if (!LR.Stages)
        LR.V = Verdict::refuse(Reason::SharedMemory,
                               std::to_string(Tiles) + " bytes of tiles per stage next to " +
                                   std::to_string(Beside) + " other bytes");
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
    shareStages(Local, Opts);
    for (LoopResult &LR : Local)
      Loops.ByLoop[loopKey(SM, LR.Model.Loop)].push_back(std::move(LR));
  }
  Loops.ByFunction.clear();
}

} // namespace tilepipe
