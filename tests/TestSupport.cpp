#include "TestSupport.h"
#include <sstream>
#include "tilepipe/Parse.h"
#include "tilepipe/Write.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace tilepipe::test {

std::string sourceDir() { return TILEPIPE_SOURCE_DIR; }

ToolOptions defaultOptions() {
  static ToolOptions Opts = [] {
    ToolOptions O;
    auto Cuda = findCudaToolkit("");
    if (!Cuda) {
      ADD_FAILURE() << llvm::toString(Cuda.takeError());
      return O;
    }
    O.ParseArgs = cudaParseArgs(*Cuda, O.GpuArch);
    // The analysis tests look at one snippet's analysis; the nvcc register comparison has tests
    // of its own (TestdataTest, Resources*), which turn it on.
    O.CheckLaunchResources = false;
    // Likewise every legal loop is rewritten: these tests look at the analysis and the emission;
    // the cost model's choices are TestdataTest's expectations and Analysis.CostModel*.
    O.Plan = PlanPolicy::Always;
    return O;
  }();
  return Opts;
}

FileResult runOnFile(const std::string &Path, const ToolOptions &Opts) {
  clang::tooling::FixedCompilationDatabase DB(".", {});
  return processFile(DB, Path, Opts);
}

namespace {
/// The folders tempDir made, removed when the test program ends.
struct TempDirs {
  std::vector<std::string> Dirs;
  ~TempDirs() {
    // std::filesystem, since llvm::sys::fs::remove refuses fifos and devices (tests make both).
    std::error_code EC;
    for (const std::string &D : Dirs)
      std::filesystem::remove_all(D, EC);
  }
};
TempDirs &tempDirs() {
  static TempDirs All;
  return All;
}
} // namespace

std::string tempDir() {
  llvm::SmallString<128> Dir;
  if (llvm::sys::fs::createUniqueDirectory("tilepipe-test", Dir))
    ADD_FAILURE() << "cannot create a temporary folder";
  tempDirs().Dirs.push_back(Dir.str().str());
  return Dir.str().str();
}

FileResult runOnCode(const std::string &Code, const ToolOptions &Opts) {
  std::string Path = tempDir() + "/snippet.cu";
  writeFile(Path, Code);
  return runOnFile(Path, Opts);
}

std::string readFile(const std::string &Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/true);
  if (!Buf)
    return "<unreadable: " + Path + ">";
  return (*Buf)->getBuffer().str();
}

void writeFile(const std::string &Path, const std::string &Text) {
  std::ofstream(Path, std::ios::binary) << Text;
}

ProcessResult runProgram(const std::string &Program, const std::vector<std::string> &Args,
                         const std::string &Dir) {
  ProcessResult R;
  std::string Exe = Program;
  if (Program.find('/') == std::string::npos)
    Exe = findTool(Program);
  if (Exe.empty()) {
    R.Err = Program + " not found";
    return R;
  }
  std::string Tmp = tempDir();
  std::string OutPath = Tmp + "/stdout", ErrPath = Tmp + "/stderr";
  // ExecuteAndWait has no working-directory argument: go through the shell for that.
  std::vector<std::string> Full;
  std::string Shell = "/bin/sh";
  std::string Script = "cd \"$0\" && exec \"$@\"";
  Full = {Shell, "-c", Script, Dir.empty() ? "." : Dir, Exe};
  Full.insert(Full.end(), Args.begin(), Args.end());
  std::vector<llvm::StringRef> Refs(Full.begin(), Full.end());
  std::optional<llvm::StringRef> Redirects[] = {llvm::StringRef("/dev/null"),
                                               llvm::StringRef(OutPath),
                                               llvm::StringRef(ErrPath)};
  R.ExitCode = llvm::sys::ExecuteAndWait(Shell, Refs, std::nullopt, Redirects);
  R.Out = readFile(OutPath);
  R.Err = readFile(ErrPath);
  return R;
}

ProcessResult runTilepipe(const std::vector<std::string> &Args, const std::string &Dir) {
  return runProgram(TILEPIPE_BINARY, Args, Dir);
}

std::string findTool(const std::string &Name) {
  if (auto P = llvm::sys::findProgramByName(Name))
    return *P;
  if (auto Cuda = findCudaToolkit("")) {
    std::string P = Cuda->Path + "/bin/" + Name;
    if (llvm::sys::fs::can_execute(P))
      return P;
  }
  return "";
}

std::string llvmTool(const std::string &Name) {
  std::string P = findTool(Name + "-22");
  if (P.empty() && llvm::sys::fs::can_execute("/usr/lib/llvm-22/bin/" + Name))
    P = "/usr/lib/llvm-22/bin/" + Name;
  return P;
}

std::set<std::pair<unsigned, std::string>> auditExpectations(const std::string &Text) {
  std::set<std::pair<unsigned, std::string>> Out;
  std::istringstream In(Text);
  std::string Line;
  for (unsigned N = 1; std::getline(In, Line); ++N)
    if (size_t P = Line.find("// EXPECT-AUDIT: "); P != std::string::npos)
      Out.insert({N + 1, Line.substr(P + 17)});
  return Out;
}

std::map<std::string, std::string> reportedCopyKinds(const FileResult &R, size_t I, bool CpAsync) {
  std::map<std::string, std::string> Kinds;
  llvm::json::Value Report = reportJson(llvm::ArrayRef<FileResult>(R));
  const llvm::json::Array *Loops = Report.getAsObject()->getArray("loops");
  if (!Loops || I >= Loops->size())
    return Kinds;
  const llvm::json::Object *Plan = (*Loops)[I].getAsObject()->getObject("plan");
  if (!Plan)
    return Kinds;
  for (const llvm::json::Value &T : *Plan->getArray("tiles")) {
    const llvm::json::Object &O = *T.getAsObject();
    Kinds[O.getString("tile")->str()] = O.getString(CpAsync ? "cp_async" : "copy_kind")->str();
  }
  return Kinds;
}

bool reportsCopyKind(const FileResult &R, const std::string &Kind, bool CpAsync) {
  for (size_t I = 0; I < R.Loops.size(); ++I)
    for (const auto &[Tile, K] : R.Loops[I].transformed() ? reportedCopyKinds(R, I, CpAsync)
                                                           : std::map<std::string, std::string>())
      if (K == Kind)
        return true;
  return false;
}

std::string squeezed(const std::string &Text) {
  std::string Out;
  for (char C : Text) {
    bool Space = C == ' ' || C == '\t' || C == '\n' || C == '\r';
    if (!Space)
      Out += C;
    else if (Out.empty() || Out.back() != ' ')
      Out += ' ';
  }
  return Out;
}

std::vector<std::string> cudaFilesIn(const std::string &Folder) {
  std::vector<std::string> Names;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(sourceDir() + "/" + Folder, EC), End; It != End && !EC;
       It.increment(EC))
    if (llvm::sys::path::extension(It->path()) == ".cu")
      Names.push_back(llvm::sys::path::filename(It->path()).str());
  std::sort(Names.begin(), Names.end());
  return Names;
}

std::vector<std::string> testdataNames() { return cudaFilesIn("testdata"); }

} // namespace tilepipe::test
