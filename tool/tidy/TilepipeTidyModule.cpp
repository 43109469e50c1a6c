// tilepipe as a clang-tidy check, for review bots that already run clang-tidy:
//   clang-tidy-22 -load=<libTilepipeTidy.so> -checks=-*,tilepipe-* file.cu -- <CUDA flags>
// One diagnostic per candidate loop (a warning with fix-its where tilepipe rewrites it, a remark
// naming the reason where it does not), from the same analysis as the tilepipe program.
// Options: tilepipe-pipeline.Stages (default 3), tilepipe-pipeline.AssumeNoAlias (default false),
// tilepipe-pipeline.Runtime (header or inline, default header, as the program's --runtime).
#include "tilepipe/Driver.h"
#include "clang-tidy/ClangTidyCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Preprocessor.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace tilepipe::tidy {

class PipelineCheck : public clang::tidy::ClangTidyCheck {
public:
  PipelineCheck(StringRef Name, clang::tidy::ClangTidyContext *Context)
      : ClangTidyCheck(Name, Context) {
    // The string forms only: the templated option readers live in clang-tidy and are not all
    // exported to modules.
    StringRef S = Options.get("Stages", "3");
    if (S.getAsInteger(10, Stages) || Stages < 2 || Stages > 8)
      Stages = 3;
    StringRef A = Options.get("AssumeNoAlias", "false");
    AssumeNoAlias = A == "true" || A == "1";
    Runtime = Options.get("Runtime", "header") == "inline" ? RuntimeMode::Inline : RuntimeMode::Header;
  }

  void storeOptions(clang::tidy::ClangTidyOptions::OptionMap &Opts) override {
    Options.store(Opts, "Stages", std::to_string(Stages));
    Options.store(Opts, "AssumeNoAlias", AssumeNoAlias ? "true" : "false");
    Options.store(Opts, "Runtime", Runtime == RuntimeMode::Inline ? "inline" : "header");
  }

  void registerPPCallbacks(const SourceManager &, Preprocessor *PP, Preprocessor *) override {
    Arch = std::make_unique<ArchDependence>();
    PP->addPPCallbacks(archDependenceCollector(*PP, *Arch));
  }

  void registerMatchers(MatchFinder *Finder) override {
    Finder->addMatcher(translationUnitDecl().bind("tu"), this);
  }

  void check(const MatchFinder::MatchResult &Result) override {
    ASTContext &Ctx = *Result.Context;
    const SourceManager &SM = Ctx.getSourceManager();
    ToolOptions Opts;
    Opts.Stages = Stages;
    Opts.AssumeNoAlias = AssumeNoAlias;
    Opts.Runtime = Runtime;
    FileResult R;
    R.Path = SM.getFileEntryRefForID(SM.getMainFileID())->getName().str();
    if (!Arch) {
      diag(SM.getLocForStartOfFile(SM.getMainFileID()),
           "tilepipe could not analyze this file: the preprocessor was not watched");
      return;
    }
    analyzeAST(Ctx, Opts, *Arch, R);
    SourceLocation Start = SM.getLocForStartOfFile(SM.getMainFileID());
    if (!R.Ok) {
      diag(Start, "tilepipe could not analyze this file: %0") << R.Error;
      return;
    }
    // Records and edits name their file: the main file or a header it includes.
    auto At = [&](StringRef File, unsigned Offset) {
      if (File == R.Path)
        return Start.getLocWithOffset(Offset);
      auto FE = SM.getFileManager().getOptionalFileRef(File);
      if (!FE)
        return SourceLocation();
      return SM.getLocForStartOfFile(SM.translateFile(*FE)).getLocWithOffset(Offset);
    };
    for (const LoopRecord &L : R.Loops) {
      SourceLocation Loc = At(L.File, L.Offset);
      if (Loc.isInvalid())
        continue;
      auto D = diag(Loc, "%0", L.transformed() ? DiagnosticIDs::Warning : DiagnosticIDs::Remark)
               << remarkText(L);
      for (const tooling::Replacement &E : L.Edits) {
        SourceLocation B = At(E.getFilePath(), E.getOffset());
        if (B.isValid())
          D << FixItHint::CreateReplacement(
              CharSourceRange::getCharRange(B, B.getLocWithOffset(E.getLength())),
              E.getReplacementText());
      }
    }
  }

private:
  std::unique_ptr<ArchDependence> Arch; ///< filled while the file is preprocessed
  unsigned Stages = 3;
  bool AssumeNoAlias = true;
  RuntimeMode Runtime = RuntimeMode::Header;
};

class TilepipeModule : public clang::tidy::ClangTidyModule {
public:
  void addCheckFactories(clang::tidy::ClangTidyCheckFactories &Factories) override {
    Factories.registerCheck<PipelineCheck>("tilepipe-pipeline");
  }
};

} // namespace tilepipe::tidy

static clang::tidy::ClangTidyModuleRegistry::Add<tilepipe::tidy::TilepipeModule>
    Registration("tilepipe-module", "Rewrites tiled CUDA loops into cp.async pipelines.");
