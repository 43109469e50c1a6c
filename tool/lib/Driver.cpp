#include "tilepipe/Driver.h"
#include "tilepipe/Check.h"
#include "tilepipe/Emit.h"
#include "tilepipe/Find.h"
#include "tilepipe/Parse.h"
#include "tilepipe/Plan.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Frontend/ASTUnit.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <map>

using namespace clang;

namespace tilepipe {

std::string LoopRecord::message() const {
  if (!transformed())
    return reasonInfo(Code).Message.str() + (Detail.empty() ? "" : ": " + Detail);
  return "rewritten into a " + std::to_string(Stages) + "-stage cp.async pipeline" +
         (Detail.empty() ? "" : "; " + Detail);
}

namespace {

/// Device functions of the main file and of the user's headers (not system headers):
/// instantiations of templates too, and patterns apart.
class FunctionCollector : public RecursiveASTVisitor<FunctionCollector> {
public:
  explicit FunctionCollector(const SourceManager &SM) : SM(SM) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool VisitFunctionDecl(FunctionDecl *FD) {
    SourceLocation L = SM.getExpansionLoc(FD->getLocation());
    if (!isDeviceCode(FD) || SM.isInSystemHeader(L) || !SM.getFileEntryRefForID(SM.getFileID(L)))
      return true;
    (FD->isDependentContext() ? Patterns : Instances).push_back(FD);
    return true;
  }
  const SourceManager &SM;
  std::vector<const FunctionDecl *> Instances, Patterns;
};

struct LoopResult {
  const FunctionDecl *Function;
  LoopModel Model;
  Verdict V;
  std::optional<unsigned> Stages;
  std::string StageNote;
  unsigned Requested = 0;
};

} // namespace

FileResult processFile(const tooling::CompilationDatabase &DB, const std::string &Path,
                       const ToolOptions &Opts) {
  FileResult R;
  R.Path = Path;
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/true);
  if (!Buf) {
    R.Error = Path + ": error: cannot read the file: " + Buf.getError().message();
    return R;
  }
  StringRef Ext = llvm::sys::path::extension(Path);
  if (Ext != ".cu" && Ext != ".cuh") {
    R.Error = Path + ": error: not a CUDA source (expected a .cu or .cuh file)";
    return R;
  }
  R.Original = (*Buf)->getBuffer().str();

  tooling::ClangTool Tool(DB, {Path});
  Tool.appendArgumentsAdjuster(cudaArgumentsAdjuster(Opts.ParseArgs));
  std::vector<std::unique_ptr<ASTUnit>> ASTs;
  int Status = Tool.buildASTs(ASTs);
  if (Status != 0 || ASTs.size() != 1 || ASTs[0]->getDiagnostics().hasErrorOccurred()) {
    R.Error = Path + ": error: the file could not be parsed as CUDA; nothing was written";
    return R;
  }
  analyzeAST(ASTs[0]->getASTContext(), Opts, R);
  if (R.Ok)
    R.Dependencies = dependencies(ASTs[0]->getSourceManager());
  return R;
}

std::vector<std::string> dependencies(const SourceManager &SM) {
  std::vector<std::string> Out;
  for (auto It = SM.fileinfo_begin(); It != SM.fileinfo_end(); ++It) {
    // Real paths: the driver spells some system headers through '..' from a guessed install
    // folder, which build tools would collapse into paths that do not exist.
    llvm::SmallString<256> Real;
    if (!llvm::sys::fs::real_path(It->first.getName(), Real))
      Out.push_back(Real.str().str());
  }
  llvm::sort(Out);
  Out.erase(std::unique(Out.begin(), Out.end()), Out.end());
  return Out;
}

/// `// tilepipe: skip` and `// tilepipe: stages=N` in the comment lines right above a loop.
struct Annotation {
  bool Skip = false;
  unsigned Stages = 0;
  std::optional<bool> AssumeNoAlias;
};

static bool annotationsAbove(StringRef Buffer, unsigned Line, const std::string &Path,
                             Annotation &A, std::string &Error) {
  SmallVector<StringRef, 0> Lines;
  Buffer.split(Lines, '\n');
  for (unsigned L = Line - 1; L >= 1 && L <= Lines.size(); --L) {
    StringRef Text = Lines[L - 1].trim();
    if (!Text.starts_with("//"))
      break;
    Text = Text.drop_front(2).trim();
    if (!Text.consume_front("tilepipe:"))
      continue;
    Text = Text.trim();
    if (Text.empty() || !llvm::isAlpha(Text[0]))
      continue; // tilepipe's own notes ("// tilepipe: 3-stage ..."), not an annotation
    SmallVector<StringRef, 4> Words;
    Text.split(Words, ' ', -1, false);
    for (StringRef W : Words) {
      W = W.trim(", ");
      unsigned N = 0;
      if (W == "skip")
        A.Skip = true;
      else if (W.consume_front("stages=") && !W.getAsInteger(10, N) && N >= 2 && N <= 8)
        A.Stages = N;
      else if (W == "assume-noalias=false" || W == "assume-noalias=true")
        A.AssumeNoAlias = W.ends_with("true");
      else {
        Error = Path + ":" + std::to_string(L) + ":1: error: malformed tilepipe annotation '" +
                Lines[L - 1].trim().str() + "' (expected 'skip', 'stages=N' with N in 2..8, or 'assume-noalias=true|false')";
        return false;
      }
    }
  }
  return true;
}

void analyzeAST(ASTContext &Ctx, const ToolOptions &Opts, FileResult &R) {
  const std::string &Path = R.Path;
  const SourceManager &SM = Ctx.getSourceManager();
  R.Ok = false;
  if (R.Original.empty())
    R.Original = SM.getBufferData(SM.getMainFileID()).str();
  TranslationUnitIndex Index(Ctx);
  FunctionCollector Functions(SM);
  Functions.TraverseDecl(Ctx.getTranslationUnitDecl());

  CheckOptions COpts;
  COpts.AssumeNoAlias = Opts.AssumeNoAlias;
  // Results by loop (the location of the loop keyword: file, then offset), one per instantiation.
  std::map<std::pair<FileID, unsigned>, std::vector<LoopResult>> ByLoop;
  auto OffsetOf = [&](const Stmt *S) {
    SourceLocation L = SM.getExpansionLoc(S->getBeginLoc());
    return std::make_pair(SM.getFileID(L), SM.getFileOffset(L));
  };
  auto Wanted = [&](const FunctionDecl *FD) {
    return Opts.Kernels.empty() || llvm::is_contained(Opts.Kernels, FD->getNameAsString());
  };
  std::map<std::pair<FileID, unsigned>, Annotation> Annotations; // by loop
  for (const FunctionDecl *FD : Functions.Instances) {
    if (!Wanted(FD))
      continue;
    std::vector<LoopResult> Local;
    for (const Candidate &C : findCandidateLoops(FD)) {
      LoopResult LR{FD, {}, {}, std::nullopt, "", Opts.Stages};
      unsigned Line = SM.getExpansionLineNumber(C.Loop->getBeginLoc());
      Annotation A;
      std::string Error;
      FileID LoopFile = OffsetOf(C.Loop).first;
      if (!annotationsAbove(SM.getBufferData(LoopFile), Line,
                            SM.getFileEntryRefForID(LoopFile)->getName().str(), A, Error)) {
        R.Error = Error;
        return;
      }
      Annotations[OffsetOf(C.Loop)] = A;
      if (A.Skip) {
        LR.Model.Loop = C.Loop;
        LR.Model.Function = FD;
        LR.V = Verdict::refuse(Reason::Skipped, "");
      } else {
        CheckOptions LoopOpts = COpts;
        if (A.AssumeNoAlias)
          LoopOpts.AssumeNoAlias = *A.AssumeNoAlias;
        LR.V = checkLoop(Ctx, Index, C, LoopOpts, LR.Model);
      }
      Local.push_back(std::move(LR));
    }
    // Plan the stages of the function's pipelined loops together: they share its shared memory.
    std::vector<uint64_t> Bytes;
    uint64_t FunctionShared = 0;
    for (LoopResult &LR : Local)
      if (LR.V.ok()) {
        uint64_t B = 0;
        for (const Tile &T : LR.Model.Tiles)
          B += T.Bytes;
        Bytes.push_back(B);
        FunctionShared = LR.Model.OtherSharedBytes + B;
      }
    uint64_t Other = FunctionShared;
    for (uint64_t B : Bytes)
      Other -= B;
    std::vector<unsigned> Requested;
    for (LoopResult &LR : Local)
      if (LR.V.ok()) {
        unsigned S = Annotations[OffsetOf(LR.Model.Loop)].Stages;
        Requested.push_back(S ? S : Opts.Stages);
      }
    auto Plan = planStages(Bytes, Other, Requested);
    size_t K = 0;
    for (LoopResult &LR : Local) {
      if (LR.V.ok()) {
        LR.Stages = Plan[K];
        LR.Requested = Requested[K];
        if (!LR.Stages)
          LR.V = Verdict::refuse(Reason::SharedMemory,
                                 std::to_string(Bytes[K]) + " bytes of tiles per stage next to " +
                                     std::to_string(Other) + " other bytes");
        else if (*LR.Stages < Requested[K])
          LR.StageNote = std::to_string(Requested[K]) + " stages requested, " +
                         std::to_string(*LR.Stages) + " fit in 48 KiB of static shared memory";
        ++K;
      }
      ByLoop[OffsetOf(LR.Model.Loop)].push_back(std::move(LR));
    }
  }
  std::map<std::pair<FileID, unsigned>, std::pair<const Stmt *, const FunctionDecl *>> Uninstantiated;
  for (const FunctionDecl *FD : Functions.Patterns)
    for (const Candidate &C : Wanted(FD) ? findCandidateLoops(FD) : std::vector<Candidate>())
      if (!ByLoop.count(OffsetOf(C.Loop)))
        Uninstantiated[OffsetOf(C.Loop)] = {C.Loop, FD};

  // Edits by file: the main file's, and those of headers that hold rewritten loops.
  std::map<FileID, tooling::Replacements> All;
  tooling::Replacements FloorEdits;
  const FileID Main = SM.getMainFileID();
  auto Record = [&](const Stmt *Loop, const FunctionDecl *FD) {
    LoopRecord Rec;
    PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(Loop->getBeginLoc()));
    Rec.File = SM.getFileID(SM.getExpansionLoc(Loop->getBeginLoc())) == SM.getMainFileID()
                   ? Path
                   : std::string(P.getFilename());
    Rec.Line = P.getLine();
    Rec.Column = P.getColumn();
    Rec.Kernel = FD->getNameAsString();
    Rec.Offset = SM.getFileOffset(SM.getExpansionLoc(Loop->getBeginLoc()));
    return Rec;
  };
  for (auto &[Off, Results] : ByLoop) {
    LoopRecord Rec = Record(Results.front().Model.Loop, Results.front().Function);
    const LoopResult *Refused = nullptr;
    unsigned Stages = Results.front().Requested;
    std::string Note;
    for (const LoopResult &LR : Results) {
      if (!LR.V.ok()) {
        Refused = &LR;
        break;
      }
      if (*LR.Stages < Stages) {
        Stages = *LR.Stages;
        Note = LR.StageNote;
      }
    }
    if (Refused) {
      Rec.Code = Refused->V.Code;
      Rec.Detail = Refused->V.Detail;
      if (Results.size() > 1 && Refused->Function->getTemplateSpecializationArgs()) {
        std::string Args;
        llvm::raw_string_ostream OS(Args);
        Refused->Function->getNameForDiagnostic(OS, Ctx.getPrintingPolicy(), true);
        Rec.Detail += " (in " + Args + ")";
      }
      R.Loops.push_back(Rec);
      continue;
    }
    // Every instantiation must ask for the same text.
    std::optional<std::vector<tooling::Replacement>> First;
    std::string Failure;
    for (const LoopResult &LR : Results) {
      auto Edits = emitPipeline(Ctx, LR.Model, Stages);
      if (!Edits) {
        Failure = llvm::toString(Edits.takeError());
        break;
      }
      if (!First)
        First = *Edits;
      else if (*First != *Edits) {
        Rec.Code = Reason::InstantiationsDisagree;
        break;
      }
    }
    if (!Failure.empty()) {
      Rec.Code = Reason::Unsupported;
      Rec.Detail = Failure;
    }
    if (Rec.Code == Reason::Pipelined) {
      for (const tooling::Replacement &E : *First)
        if (llvm::Error Err = All[Off.first].add(E)) {
          Rec.Code = Reason::Unsupported;
          Rec.Detail = "its edits overlap another rewrite: " + llvm::toString(std::move(Err));
        }
    }
    if (Rec.Code == Reason::Pipelined && Off.first == Main) {
      // The compute-only variant that verify times as the floor of perfect overlap.
      auto Floor = emitPipeline(Ctx, Results.front().Model, Stages, EmitKind::ComputeOnly);
      if (!Floor)
        llvm::consumeError(Floor.takeError());
      else
        for (const tooling::Replacement &E : *Floor)
          llvm::consumeError(FloorEdits.add(E));
    }
    if (Rec.Code == Reason::Pipelined) {
      Rec.Edits = *First;
      Rec.Stages = Stages;
      const LoopModel &M = Results.front().Model;
      std::vector<std::string> TileNames;
      for (const Tile &T : M.Tiles)
        TileNames.push_back(T.Var->getNameAsString());
      std::vector<std::string> Parts{"tiles " + llvm::join(TileNames, ", ") + " copied from " +
                                     llvm::join(M.SourcePointers, ", ")};
      if (!Note.empty())
        Parts.push_back(Note);
      if (!M.NoAliasAssumed.empty())
        Parts.push_back("assumes " + llvm::join(M.NoAliasAssumed, ", ") + " does not overlap " +
                        llvm::join(M.SourcePointers, ", ") +
                        " (--assume-noalias=false refuses such loops)");
      Rec.Detail = llvm::join(Parts, "; ");
    }
    R.Loops.push_back(Rec);
  }
  for (auto &[Off, LoopAndFn] : Uninstantiated) {
    LoopRecord Rec = Record(LoopAndFn.first, LoopAndFn.second);
    Rec.Code = Reason::TemplateNotInstantiated;
    R.Loops.push_back(Rec);
  }
  llvm::sort(R.Loops, [&](const LoopRecord &A, const LoopRecord &B) {
    return std::make_tuple(A.File != Path, A.File, A.Line, A.Column) <
           std::make_tuple(B.File != Path, B.File, B.Line, B.Column);
  });
  for (auto &[FID, Edits] : All) {
    if (Edits.empty())
      continue;
    if (auto Inc = pipelineInclude(SM, FID)) {
      if (llvm::Error Err = Edits.add(*Inc)) {
        R.Error = Path + ": error: internal: " + llvm::toString(std::move(Err));
        return;
      }
      // The include travels with the file's first rewrite, so that each loop's fix stands alone.
      for (LoopRecord &L : R.Loops)
        if (L.transformed() && !L.Edits.empty() && L.Edits.front().getFilePath() == Inc->getFilePath()) {
          L.Edits.insert(L.Edits.begin(), *Inc);
          break;
        }
    }
  }
  auto New = tooling::applyAllReplacements(R.Original, All[Main]);
  if (!New) {
    R.Error = Path + ": error: internal: " + llvm::toString(New.takeError());
    return;
  }
  R.Rewritten = *New;
  // Every header with candidate loops is listed, rewritten or not, so that the files including it
  // can be compared: one that leaves a loop alone must not see another rewrite it.
  for (auto &[Key, Results] : ByLoop)
    All[Key.first];
  for (auto &[FID, Edits] : All) {
    if (FID == Main)
      continue;
    HeaderRewrite H;
    llvm::SmallString<256> Real;
    StringRef Name = SM.getFileEntryRefForID(FID)->getName();
    H.Path = llvm::sys::fs::real_path(Name, Real) ? Name.str() : Real.str().str();
    H.Original = SM.getBufferData(FID).str();
    auto Text = tooling::applyAllReplacements(H.Original, Edits);
    if (!Text) {
      R.Error = H.Path + ": error: internal: " + llvm::toString(Text.takeError());
      return;
    }
    H.Rewritten = *Text;
    H.Edits = Edits;
    R.Headers.push_back(std::move(H));
  }
  auto Floor = tooling::applyAllReplacements(R.Original, FloorEdits);
  R.ComputeOnly = Floor ? *Floor : R.Original;
  if (!Floor)
    llvm::consumeError(Floor.takeError());
  R.Edits = All[Main];
  R.Ok = true;
}

} // namespace tilepipe
