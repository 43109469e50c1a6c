// Plan and emit, for the driver: per loop, the plan its instantiations share and the edits they
// agree on, with the compute-only floor; per kernel with tensor copies, its map parameters.
#include "DriverSteps.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Find.h"
#include "tilepipe/Resources.h"
#include "clang/AST/Attr.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace tilepipe {

llvm::Error internalError(llvm::StringRef Path, const llvm::Twine &Why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 Path + ": error: internal: " + Why);
}

LoopRecord loopRecord(const SourceManager &SM, const std::string &Path, const Stmt *Loop,
                      const FunctionDecl *FD) {
  LoopRecord Rec;
  Place P = placeOf(SM, Path, Loop->getBeginLoc());
  Rec.File = P.File;
  Rec.Line = P.Line;
  Rec.Column = P.Column;
  Rec.Kernel = FD->getNameAsString();
  Rec.Offset = SM.getFileOffset(SM.getExpansionLoc(Loop->getBeginLoc()));
  return Rec;
}


std::string launcherProblem(ASTContext &Ctx, const TranslationUnitIndex &Index, const FunctionDecl *FD) {
  const SourceManager &SM = Ctx.getSourceManager();
  const FunctionDecl *P = patternOf(FD);
  if (!P->hasAttr<CUDAGlobalAttr>())
    return "not in a kernel";
  if (SM.getFileID(SM.getExpansionLoc(P->getLocation())) != SM.getMainFileID())
    return "the kernel is not in the main file";
  if (std::distance(P->redecls_begin(), P->redecls_end()) != 1)
    return "the kernel is declared more than once";
  if (sourceText(Ctx, P->getSourceRange()).empty())
    return "the kernel is written in a macro";
  for (const ParmVarDecl *Parm : P->parameters())
    if (Parm->getName().empty() || sourceText(Ctx, Parm->getSourceRange()).empty() ||
        Parm->isParameterPack())
      return "a kernel parameter has no name or is a pack";
  if (P->isVariadic())
    return "the kernel is variadic";
  return kernelSignatureProblem(Ctx, Index, P);
}

/// The kernel's entry, with the names its text leaves free.
static TmaKernel &kernelNames(ASTContext &Ctx, std::map<const FunctionDecl *, TmaKernel> &Kernels,
                              const FunctionDecl *Kernel) {
  TmaKernel &K = Kernels[Kernel];
  K.Pattern = Kernel;
  if (!K.Names) {
    K.Names = std::make_unique<FreshNames>(Ctx, Kernel);
    // The launcher's name: no other name of the translation unit and no other kernel's launcher
    // (kernels of one name in several namespaces, or overloads, get launchers of several names),
    // so that a launch site that calls it by its qualified name reaches this kernel's alone.
    std::string Base = "tilepipe_launch_" + Kernel->getNameAsString();
    K.Launcher = Base;
    for (unsigned I = 1; Ctx.Idents.find(K.Launcher) != Ctx.Idents.end() ||
                         llvm::any_of(Kernels, [&](const auto &KV) {
                           return KV.first != Kernel && KV.second.Launcher == K.Launcher;
                         });
         ++I)
      K.Launcher = Base + "_" + std::to_string(I);
  }
  return K;
}

/// What Plan reads about the loop: the options, its annotation, the stages its function shares
/// out, and whether its kernel can take tensor maps.
static PlanInputs planInputs(ASTContext &Ctx, const TranslationUnitIndex &Index, const ToolOptions &Opts,
                             const Annotation &A, bool InMainFile, unsigned Stages,
                             const std::string &StageNote, const FunctionDecl *FD) {
  PlanInputs In;
  In.Mode = Opts.Mode;
  In.Policy = A.Plan.value_or(Opts.Plan);
  In.Stages = Stages;
  In.StageNote = StageNote;
  In.TmaMinStageBytes = Opts.TmaMinStageBytes;
  In.TmaThreeDimensions = Opts.TmaThreeDimensions;
  In.ModelMinStageBytes = Opts.ModelMinStageBytes;
  In.InMainFile = InMainFile;
  if (Opts.Mode != CopyMode::Pipeline)
    In.KernelProblem = isProbe(FD) ? "the template is instantiated by tilepipe alone, so no launch in this file "
                                     "could pass its tensor maps"
                                   : launcherProblem(Ctx, Index, FD);
  return In;
}

/// The names a plan with tensor copies adds to its kernel, which the kernel's text leaves free: the
/// kernel's flag (one per kernel, the same for each of its loops), then a map per tensor tile.
static void nameEngineCopies(ASTContext &Ctx, std::map<const FunctionDecl *, TmaKernel> &Kernels,
                             const FunctionDecl *FD, llvm::ArrayRef<const LoopModel *> Is, LoopPlan &P) {
  if (!P.Engine || llvm::none_of(P.Tiles, [](const TilePlan &T) { return T.Kind == CopyKind::Tensor; }))
    return;
  TmaKernel &K = kernelNames(Ctx, Kernels, patternOf(FD));
  if (K.Flag.empty())
    K.Flag = K.Names->get("tilepipe_tma");
  P.TmaFlag = K.Flag;
  for (size_t T = 0; T < P.Tiles.size(); ++T)
    if (P.Tiles[T].Kind == CopyKind::Tensor)
      P.Tiles[T].MapName = K.Names->get(Is.front()->Tiles[T].Var->getNameAsString() + "_tmap");
}

/// The first instantiation refused, if any; else the fewest stages any instantiation got, with
/// the note that says why they are fewer than asked.
static const LoopResult *refusedOrStages(const std::vector<LoopResult> &Results, unsigned &Stages,
                                         std::string &Note) {
  Stages = Results.front().Requested;
  for (const LoopResult &LR : Results) {
    if (!LR.V.ok())
      return &LR;
    if (*LR.Stages < Stages) {
      Stages = *LR.Stages;
      Note = LR.StageNote;
    }
  }
  return nullptr;
}

/// The function of one instantiation, with its template arguments (`matmul<32>`).
static std::string instantiationName(ASTContext &Ctx, const LoopResult &LR) {
  std::string Name;
  llvm::raw_string_ostream OS(Name);
  LR.Function->getNameForDiagnostic(OS, Ctx.getPrintingPolicy(), true);
  return Name;
}

/// Rec refused for the reason its instantiation Refused was, named where the loop has several.
static void refuseAsInstantiation(ASTContext &Ctx, const std::vector<LoopResult> &Results,
                                  const LoopResult &Refused, LoopRecord &Rec) {
  Rec.Code = Refused.V.Code;
  Rec.Detail = Refused.V.Detail;
  Rec.OtherBlockers = Refused.V.Others;
  if (Results.size() > 1 && Refused.Function->getTemplateSpecializationArgs())
    Rec.Detail += " (in " + instantiationName(Ctx, Refused) + ")";
}

/// Emit: the edits of Plan, which every instantiation must ask for alike; an EmitError where they
/// do not (InstantiationsDisagree), or Emit's own. Plan is read, never changed.
static llvm::Expected<std::vector<tooling::Replacement>>
emitAgreed(ASTContext &Ctx, const std::vector<LoopResult> &Results, const LoopPlan &Plan) {
  std::optional<std::vector<tooling::Replacement>> First;
  for (const LoopResult &LR : Results) {
    auto Edits = emitPipeline(Ctx, LR.Model, Plan);
    if (!Edits)
      return Edits.takeError();
    if (!First)
      First = std::move(*Edits);
    else if (*First != *Edits)
      return llvm::make_error<EmitError>(Reason::InstantiationsDisagree, "");
  }
  return std::move(*First);
}

/// Whether E is Emit's answer that the instantiations disagree (consumed then; otherwise E is
/// given back).
static bool disagree(llvm::Error &E) {
  bool Disagree = false;
  E = llvm::handleErrors(std::move(E), [&](std::unique_ptr<EmitError> EE) -> llvm::Error {
    if (EE->Code == Reason::InstantiationsDisagree) {
      Disagree = true;
      return llvm::Error::success();
    }
    return llvm::Error(std::move(EE));
  });
  return Disagree;
}

/// The compute-only variant of the loop, which verify times as the floor of perfect overlap, into
/// F.FloorEdits; where it cannot be had, a warning in F.FloorProblems says why.
static void emitFloor(ASTContext &Ctx, const LoopModel &M, const LoopPlan &Plan,
                      const LoopRecord &Rec, FileRewrite &F) {
  auto Why = [&](llvm::Error E) {
    F.FloorProblems.push_back(location(Rec) + ": warning: no compute-only floor for this loop, so "
                              "none for the file (verify times the memory floor only): " +
                              llvm::toString(std::move(E)));
  };
  auto Floor = emitPipeline(Ctx, M, Plan, EmitKind::ComputeOnly);
  if (!Floor)
    return Why(Floor.takeError());
  for (const tooling::Replacement &E : *Floor)
    if (llvm::Error Err = F.FloorEdits.add(E))
      return Why(std::move(Err));
}

/// The probes (Probes.cpp) of a template nothing instantiates that the analysis accepted: the
/// rewrite runs in those alone. Where it accepted none, Rec says so and the result is empty.
static std::vector<LoopResult> acceptedProbes(ASTContext &Ctx, const std::vector<LoopResult> &Probes,
                                              LoopRecord &Rec) {
  std::vector<LoopResult> Accepted;
  std::vector<std::string> Tried;
  const LoopResult *FirstRefused = nullptr;
  for (const LoopResult &LR : Probes) {
    Tried.push_back(instantiationName(Ctx, LR));
    if (LR.V.ok())
      Accepted.push_back(LR);
    else if (!FirstRefused)
      FirstRefused = &LR;
  }
  if (Accepted.empty()) {
    Rec.Code = Reason::TemplateNotInstantiated;
    Rec.Detail = "tried " + llvm::join(Tried, ", ") + "; " + instantiationName(Ctx, *FirstRefused) + " was refused as " +
                 reasonInfo(FirstRefused->V.Code).Id.str() + ", " + reasonInfo(FirstRefused->V.Code).Message.str() +
                 (FirstRefused->V.Detail.empty() ? "" : ": " + FirstRefused->V.Detail);
  }
  return Accepted;
}

/// Whether Rec is refused because a tile cp.async cannot move (1- or 2-byte elements) sits in a loop
/// the register-staged prefetch, the one plan that moves it, cannot take either.
static bool narrowElementsRefused(ASTContext &Ctx, const std::vector<LoopResult> &Results,
                                  llvm::ArrayRef<const LoopModel *> Models, LoopRecord &Rec) {
  for (const LoopResult &LR : Results)
    if (std::string Why = asyncProblem({&LR.Model}); !Why.empty())
      if (std::string NoRegisters = registersProblem(Models); !NoRegisters.empty()) {
        // A tile in dynamic shared memory has no stages for its declaration's sake.
        Rec.Code = llvm::any_of(LR.Model.Tiles, [](const Tile &T) { return T.Dynamic; }) ? Reason::TileDeclaration
                                                                                          : Reason::ElementType;
        Rec.Detail = Why + "; nor can the register-staged prefetch, which moves any element, take the loop: " +
                     NoRegisters;
        if (Results.size() > 1)
          Rec.Detail += " (in " + instantiationName(Ctx, LR) + ")";
        return true;
      }
  return false;
}

/// In a template, the condition the rewrite runs under (the instantiations analysed; the others
/// keep the loop as it was); none, with Rec refused, where it cannot be written.
static std::optional<TemplateGuard> guardOf(ASTContext &Ctx, const std::vector<LoopResult> &Results,
                                            LoopRecord &Rec) {
  std::vector<const FunctionDecl *> Instances;
  for (const LoopResult &LR : Results)
    Instances.push_back(LR.Function);
  auto Guard = templateGuard(Ctx, Instances);
  if (Guard)
    return *Guard;
  llvm::handleAllErrors(Guard.takeError(), [&](const EmitError &E) {
    Rec.Code = E.Code;
    Rec.Detail = E.Detail;
  });
  return std::nullopt;
}

LoopRecord rewriteLoop(ASTContext &Ctx, const TranslationUnitIndex &Index, const ToolOptions &Opts,
                       const std::string &Path, LoopKey Key, const std::vector<LoopResult> &AllResults,
                       const Annotation &A, FileRewrite &F) {
  const SourceManager &SM = Ctx.getSourceManager();
  LoopRecord Rec = loopRecord(SM, Path, AllResults.front().Model.Loop, AllResults.front().Function);
  // A template nothing instantiates, probed: rewritten for the probes the analysis accepts.
  const bool Probed = llvm::all_of(AllResults, [](const LoopResult &LR) { return isProbe(LR.Function); });
  std::vector<LoopResult> Accepted;
  if (Probed && (Accepted = acceptedProbes(Ctx, AllResults, Rec)).empty())
    return Rec;
  const std::vector<LoopResult> &Results = Probed ? Accepted : AllResults;
  const LoopResult &Front = Results.front();
  unsigned Stages;
  std::string Note;
  if (const LoopResult *Refused = refusedOrStages(Results, Stages, Note)) {
    refuseAsInstantiation(Ctx, Results, *Refused, Rec);
    return Rec;
  }
  // The stages lie in static shared memory in every instantiation, or in dynamic in every one.
  for (const LoopResult &LR : Results)
    if (LR.DynamicStages != Front.DynamicStages) {
      const LoopResult &Dyn = LR.DynamicStages ? LR : Front;
      Rec.Code = Reason::SharedMemory;
      Rec.Detail = "the stages of " + instantiationName(Ctx, Dyn) +
                   " fit only in dynamic shared memory, those of another instantiation in static: "
                   "one text cannot place both";
      return Rec;
    }
  // Plan: the stages, how each tile is copied, or keep the loop; then the names tensor copies add.
  const bool InMain = Key.first == SM.getMainFileID();
  PlanInputs In = planInputs(Ctx, Index, Opts, A, InMain, Stages, Note, Front.Function);
  In.DynamicStages = Front.DynamicStages;
  for (const LoopResult &LR : Results)
    In.SharedBeside.push_back(LR.SharedBeside);
  std::vector<const LoopModel *> Models;
  for (const LoopResult &LR : Results)
    Models.push_back(&LR.Model);
  Rec.Fingerprint = Front.Fingerprint;
  if (narrowElementsRefused(Ctx, Results, Models, Rec))
    return Rec;
  // The plans every instantiation can take: as many stages as the one with the largest tiles fits.
  unsigned MaxStages = Front.MaxStages;
  for (const LoopResult &LR : Results)
    MaxStages = std::min(MaxStages, LR.MaxStages);
  Rec.Choices = enumeratePlans(Models, In, MaxStages);
  for (const Tile &T : Front.Model.Tiles)
    Rec.Tiles.push_back(T.Var->getNameAsString());
  std::string TuningNote = Front.TuningNote;
  // A measured or chosen plan holds for the loop only where every instantiation fits it
  // (shareStages, PlanLoops.cpp, drops it from one whose shared memory it would overflow).
  const LoopResult *Unfit = nullptr;
  for (const LoopResult &LR : Results)
    if (Front.Forced && !LR.Forced && !Unfit)
      Unfit = &LR;
  if (Unfit) {
    std::string Why = "it does not fit the shared memory of " + instantiationName(Ctx, *Unfit);
    if (Opts.Choice) {
      Rec.Code = Reason::PlanKept;
      Rec.Detail = "--plan-choice=" + Opts.Choice->str() + " is not legal here: " + Why;
      return Rec;
    }
    TuningNote = "the tuning file's plan " + Front.Forced->str() + " is not legal here (" + Why +
                 "): planned by the cost model";
  } else if (Front.Forced) {
    if (std::string Why = choiceProblem(Models, In, *Front.Forced); Why.empty())
      In.Forced = Front.Forced;
    else if (Opts.Choice) {
      Rec.Code = Reason::PlanKept;
      Rec.Detail = "--plan-choice=" + Opts.Choice->str() + " is not legal here: " + Why;
      return Rec;
    } else {
      TuningNote = "the tuning file's plan " + Front.Forced->str() + " is not legal here (" + Why +
                   "): planned by the cost model";
    }
  }
  LoopPlan Plan = planLoop(Models, In);
  if (!Plan.Keep)
    nameEngineCopies(Ctx, F.TmaKernels, Front.Function, Models, Plan);
  if (Plan.DynamicStages) {
    TmaKernel &K = kernelNames(Ctx, F.TmaKernels, patternOf(Front.Function));
    if (K.DynamicFlag.empty())
      K.DynamicFlag = K.Names->get("tilepipe_staged");
    Plan.DynamicFlag = K.DynamicFlag;
  }
  auto WithNotes = [&](std::string Detail) {
    if (In.Forced && !Front.Measured.empty())
      Detail += (Detail.empty() ? "" : "; ") + Front.Measured;
    if (!TuningNote.empty())
      Detail += (Detail.empty() ? "" : "; ") + TuningNote;
    return Detail;
  };
  if (Plan.Keep) {
    Rec.Code = Reason::NoGain;
    Rec.Detail = WithNotes(*Plan.Keep);
    Rec.Plan = Plan;
    return Rec;
  }
  std::optional<TemplateGuard> Guard = guardOf(Ctx, Results, Rec);
  if (!Guard)
    return Rec;
  Plan.TemplateGuard = Guard->Condition;
  auto Edits = emitAgreed(Ctx, Results, Plan);
  if (!Edits) {
    // The block-wide copies may be what the instantiations disagree on: the plan's fallback,
    // per-element copies only, emitted once more.
    llvm::Error E = Edits.takeError();
    if (disagree(E)) {
      Plan = Plan.perElementOnly();
      Edits = emitAgreed(Ctx, Results, Plan);
    } else {
      Edits = std::move(E);
    }
  }
  if (!Edits) {
    // Emit says why: its text cannot be cut safely (source-text), or another reason.
    llvm::handleAllErrors(
        Edits.takeError(),
        [&](const EmitError &E) {
          Rec.Code = E.Code;
          Rec.Detail = E.Detail;
        },
        [&](const llvm::ErrorInfoBase &E) {
          Rec.Code = Reason::Unsupported;
          Rec.Detail = E.message();
        });
    return Rec;
  }
  for (const tooling::Replacement &E : *Edits)
    if (llvm::Error Err = F.Edits[Key.first].add(E)) {
      Rec.Code = Reason::Unsupported;
      Rec.Detail = "its edits overlap another rewrite: " + llvm::toString(std::move(Err));
    }
  if (!Rec.transformed())
    return Rec;
  if (InMain)
    emitFloor(Ctx, Front.Model, Plan, Rec, F);
  Rec.Edits = *Edits;
  Rec.Stages = Plan.Stages; // the depth, for the register-staged prefetch
  Rec.Plan = Plan;
  const LoopModel &M = Front.Model;
  auto KIt = F.TmaKernels.find(patternOf(Front.Function));
  Rec.Detail = WithNotes(describePlan(M, Plan, Opts.Mode,
                                      KIt != F.TmaKernels.end() && !KIt->second.Launcher.empty()
                                          ? KIt->second.Launcher
                                          : "tilepipe_launch_" + Rec.Kernel));
  if (!Guard->Described.empty())
    Rec.Detail += "; in the instantiations analysed (" + Guard->Described +
                  "), the others keeping the loop as it was";
  F.EngineUsed |= Plan.Engine;
  if (!Plan.Registers)
    F.CpAsyncUsed.insert(Key.first);
  if (Guard->UsesTypes)
    F.TraitsUsed.insert(Key.first);
  TmaKernel &K = F.TmaKernels[patternOf(Front.Function)];
  K.Loops.insert({Rec.File, Rec.Offset});
  for (size_t T = 0; T < M.Tiles.size(); ++T)
    if (Plan.Engine && Plan.Tiles[T].Kind == CopyKind::Tensor)
      K.Tiles.push_back({&M.Tiles[T], Plan.Tiles[T].MapName});
  // Its launches give every instantiation's stages their room: the largest.
  if (Plan.DynamicStages)
    for (const LoopModel *Mi : Models) {
      K.DynamicBytes = std::max(K.DynamicBytes, dynamicStageBytes(tileBytes(*Mi), Plan.Stages));
      K.DynamicBytesOne =
          std::max(K.DynamicBytesOne, dynamicStageBytes(tileBytes(*Mi), Plan.ArchGuard ? 1 : Plan.Stages));
    }
  return Rec;
}

llvm::Error emitKernelMapsOfFile(ASTContext &Ctx, const std::string &Path, FileRewrite &F,
                                 std::vector<LoopRecord> &Loops) {
  const SourceManager &SM = Ctx.getSourceManager();
  std::vector<const CUDAKernelCallExpr *> Launches;
  // A kernel gets a launcher for the loops that were rewritten (the bytes of dynamic stages are
  // counted once the loop's edits stand): a loop left alone after its flag was named leaves the
  // kernel and its launches as they were.
  auto Launcher = [](const TmaKernel &K) { return !K.Tiles.empty() || K.DynamicBytes; };
  if (llvm::any_of(F.TmaKernels, [&](const auto &KV) { return Launcher(KV.second); }))
    Launches = hostLaunches(Ctx);
  for (auto &[Key, K] : F.TmaKernels) {
    if (!Launcher(K))
      continue;
    std::string Name = K.Pattern->getNameAsString();
    KernelMaps Maps{K.Pattern, K.Flag, K.Launcher, K.Tiles, K.DynamicBytes, K.DynamicBytesOne,
                    K.DynamicBytes ? K.DynamicFlag : std::string()};
    F.Launchers.push_back({K.Pattern->getQualifiedNameAsString(), K.Launcher});
    auto Edits = emitKernelMaps(Ctx, Maps, *K.Names, Launches);
    if (!Edits)
      return internalError(Path, "cannot give " + Name + " its tensor maps: " +
                                     llvm::toString(Edits.takeError()));
    for (const tooling::Replacement &E : Edits->Edits)
      if (llvm::Error Err = F.Edits[SM.getMainFileID()].add(E))
        return internalError(Path, "cannot give " + Name + " its tensor maps: " +
                                       llvm::toString(std::move(Err)));
    // Every record of the kernel names its launch sites; the first carries the kernel's edits, so
    // that each fix stands alone.
    bool First = true;
    for (LoopRecord &L : Loops)
      if (L.transformed() && K.Loops.count({L.File, L.Offset}) && L.File == Path) {
        L.Detail += "; " + Edits->Sites;
        if (First)
          for (const tooling::Replacement &E : Edits->Edits)
            L.Edits.push_back(E);
        First = false;
      }
  }
  return llvm::Error::success();
}

} // namespace tilepipe
