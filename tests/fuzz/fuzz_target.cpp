// libFuzzer target over tilepipe's analysis: each input is the text of a CUDA file, parsed in
// memory the way tilepipe parses a file (default options, the runtime header visible as in
// processFile), with the architecture-dependent text collected during that parse, then found,
// checked, planned and emitted (analyzeAST). The launch check (nvcc) is not run. Built only with
// -DTILEPIPE_FUZZER=ON and clang (see tests/fuzz/README.md); not in CI.
//
// Beyond crashes and sanitizer reports, it stops (__builtin_trap) when
//  - a file where no loop was rewritten comes out different from what went in;
//  - a rewritten file does not parse again with the same options;
//  - the analysis of a rewritten file changes it again (not idempotent).
// The copy mode follows the input's length (auto, pipeline, tma in turn), so a corpus covers all three.
#include "tilepipe/ArchDependence.h"
#include "tilepipe/Driver.h"
#include "tilepipe/Parse.h"
#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace tilepipe;

namespace {

const ToolOptions &baseOptions() {
  static ToolOptions Opts = [] {
    ToolOptions O;
    auto Cuda = findCudaToolkit("");
    if (!Cuda) {
      llvm::errs() << "tilepipe-fuzz: " << llvm::toString(Cuda.takeError()) << "\n";
      std::abort();
    }
    O.ParseArgs = cudaParseArgs(*Cuda, O.GpuArch);
    return O;
  }();
  return Opts;
}

/// TILEPIPE_FUZZ_VERBOSE=1: Clang's diagnostics (why an input does not parse) and what the analysis
/// made of each input, on stderr.
bool verbose() {
  static const bool V = std::getenv("TILEPIPE_FUZZ_VERBOSE") != nullptr;
  return V;
}

/// Runs the analysis at the end of the parse, with what the preprocessor saw of __CUDA_ARCH__.
class AnalyzeConsumer : public clang::ASTConsumer {
public:
  AnalyzeConsumer(const ToolOptions &Opts, const ArchDependence &Arch, FileResult &R, bool &Done)
      : Opts(Opts), Arch(Arch), R(R), Done(Done) {}
  void HandleTranslationUnit(clang::ASTContext &Ctx) override {
    // Arch.Complete is set at EndOfMainFile, which the preprocessor reports only after this
    // (FrontendAction::EndSourceFile): the parse has read the whole file by now all the same.
    if (Ctx.getDiagnostics().hasErrorOccurred())
      return;
    analyzeAST(Ctx, Opts, Arch, R);
    Done = true;
  }

private:
  const ToolOptions &Opts;
  const ArchDependence &Arch;
  FileResult &R;
  bool &Done;
};

class AnalyzeAction : public clang::ASTFrontendAction {
public:
  AnalyzeAction(const ToolOptions &Opts, FileResult &R, bool &Done) : Opts(Opts), R(R), Done(Done) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance &CI,
                                                        llvm::StringRef) override {
    clang::Preprocessor &PP = CI.getPreprocessor();
    PP.addPPCallbacks(archDependenceCollector(PP, Arch));
    return std::make_unique<AnalyzeConsumer>(Opts, Arch, R, Done);
  }

private:
  const ToolOptions &Opts;
  FileResult &R;
  bool &Done;
  ArchDependence Arch; ///< filled while the file is preprocessed
};

class AnalyzeFactory : public clang::tooling::FrontendActionFactory {
public:
  AnalyzeFactory(const ToolOptions &Opts, FileResult &R, bool &Done) : Opts(Opts), R(R), Done(Done) {}
  std::unique_ptr<clang::FrontendAction> create() override {
    return std::make_unique<AnalyzeAction>(Opts, R, Done);
  }

private:
  const ToolOptions &Opts;
  FileResult &R;
  bool &Done;
};

/// Parses Code as a virtual file and runs the analysis; false when it does not parse.
bool analyze(const std::string &Code, const ToolOptions &Opts, FileResult &R) {
  static const std::string Path = "/tilepipe-fuzz/input.cu";
  clang::tooling::FixedCompilationDatabase DB(".", {});
  clang::tooling::ClangTool Tool(DB, {Path});
  Tool.mapVirtualFile(Path, Code);
  prepareParse(Tool, Opts);
  clang::IgnoringDiagConsumer Quiet;
  if (!verbose())
    Tool.setDiagnosticConsumer(&Quiet);
  R = FileResult();
  R.Path = Path;
  R.Original = Code;
  bool Done = false;
  AnalyzeFactory F(Opts, R, Done);
  return Tool.run(&F) == 0 && Done;
}

[[noreturn]] void fail(const char *What) {
  llvm::errs() << "tilepipe-fuzz: " << What << "\n";
  __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size > 64 * 1024)
    return 0;
  std::string Code(reinterpret_cast<const char *>(Data), Size);
  ToolOptions Opts = baseOptions();
  static const CopyMode Modes[] = {CopyMode::Auto, CopyMode::Pipeline, CopyMode::Tma};
  Opts.Mode = Modes[Size % 3];
  FileResult R;
  bool Parsed = analyze(Code, Opts, R);
  bool Any = false;
  for (const LoopRecord &L : R.Loops)
    Any |= L.transformed();
  if (verbose())
    llvm::errs() << "tilepipe-fuzz: " << (Parsed ? "parsed" : "does not parse") << ", "
                 << (R.Ok ? "analyzed" : "not analyzed: " + R.Error) << ", " << R.Loops.size()
                 << " candidate loop(s), " << (Any ? "some" : "none") << " rewritten\n";
  if (!Parsed || !R.Ok)
    return 0;
  if (!Any) {
    if (R.Rewritten != R.Original)
      fail("no loop was rewritten, yet the file changed");
    return 0;
  }
  FileResult Again;
  if (!analyze(R.Rewritten, Opts, Again))
    fail("the rewritten file does not parse");
  if (Again.Ok && Again.Rewritten != R.Rewritten)
    fail("a second run changed the rewritten file (not idempotent)");
  return 0;
}
