// libFuzzer target over tilepipe's analysis: each input is the text of a CUDA file, parsed in
// memory with the options the program uses by default, then found, checked, planned and emitted
// (analyzeAST). Built only with -DTILEPIPE_FUZZER=ON and clang (see tests/fuzz/README.md); not in CI.
//
// Beyond crashes and sanitizer reports, it stops (__builtin_trap) when
//  - a file where no loop was rewritten comes out different from what went in;
//  - a rewritten file does not parse again with the same options;
//  - the analysis of a rewritten file changes it again (not idempotent).
// The copy mode follows the input's length (auto, pipeline, tma in turn), so a corpus covers all three.
#include "tilepipe/Driver.h"
#include "tilepipe/Parse.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Frontend/ASTUnit.h"
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

/// Parses Code as a virtual file and runs the analysis; false when it does not parse.
bool analyze(const std::string &Code, const ToolOptions &Opts, FileResult &R) {
  static const std::string Path = "/tilepipe-fuzz/input.cu";
  clang::tooling::FixedCompilationDatabase DB(".", {});
  clang::tooling::ClangTool Tool(DB, {Path});
  Tool.mapVirtualFile(Path, Code);
  Tool.appendArgumentsAdjuster(cudaArgumentsAdjuster(Opts.ParseArgs));
  clang::IgnoringDiagConsumer Quiet;
  Tool.setDiagnosticConsumer(&Quiet);
  std::vector<std::unique_ptr<clang::ASTUnit>> ASTs;
  if (Tool.buildASTs(ASTs) != 0 || ASTs.size() != 1 ||
      ASTs[0]->getDiagnostics().hasErrorOccurred())
    return false;
  R = FileResult();
  R.Path = Path;
  R.Original = Code;
  analyzeAST(ASTs[0]->getASTContext(), Opts, R);
  return true;
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
  if (!analyze(Code, Opts, R) || !R.Ok)
    return 0;
  bool Any = false;
  for (const LoopRecord &L : R.Loops)
    Any |= L.transformed();
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
