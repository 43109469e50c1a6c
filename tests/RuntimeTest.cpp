// tilepipe/runtime.cuh: the header that rewritten files with tensor or bulk copies call, its
// version, the two ways a file gets it (--runtime=header, --runtime=inline), the check that the
// file and the header agree, and where the program finds the header (--print-runtime-dir).
#include "TestSupport.h"
#include "tilepipe/Emit.h"
#include "tilepipe/Runtime.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"
#include <gtest/gtest.h>
#include <map>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

constexpr size_t npos = std::string::npos;

std::string sourceHeader() { return readFile(sourceDir() + "/runtime/include/tilepipe/runtime.cuh"); }

/// The header's text with another version number (macro, string and inline namespace).
std::string headerOfVersion(unsigned V) {
  std::string Old = std::to_string(runtimeVersion()), New = std::to_string(V);
  std::string H = runtimeHeaderText().str();
  for (std::string From : {"#define TILEPIPE_RUNTIME_VERSION " + Old + "\n",
                           "#define TILEPIPE_RUNTIME_VERSION_STRING \"" + Old + "\"\n",
                           "inline namespace v" + Old + " {\n", "} // inline namespace v" + Old + "\n"}) {
    std::string To = From;
    To.replace(To.rfind(Old), Old.size(), New);
    size_t At = H.find(From);
    EXPECT_NE(At, npos) << From;
    if (At != npos)
      H.replace(At, From.size(), To);
  }
  return H;
}

/// An include folder holding Text as tilepipe/runtime.cuh.
std::string includeDirWith(const std::string &Text) {
  std::string Dir = tempDir();
  llvm::sys::fs::create_directories(Dir + "/tilepipe");
  writeFile(Dir + "/tilepipe/runtime.cuh", Text);
  return Dir;
}

TEST(Runtime, CompiledInIsTheSourceHeaderOfOneVersion) {
  EXPECT_EQ(sourceHeader(), runtimeHeaderText().str()) << "tilepipe was built from another runtime.cuh";
  std::string H = runtimeHeaderText().str(), V = std::to_string(runtimeVersion());
  EXPECT_NE(H.find("\n#define TILEPIPE_RUNTIME_VERSION " + V + "\n"), npos);
  EXPECT_NE(H.find("\n#define TILEPIPE_RUNTIME_VERSION_STRING \"" + V + "\"\n"), npos);
  EXPECT_NE(H.find("\nnamespace tilepipe_rt {\ninline namespace v" + V + " {\n"), npos);
  // Guarded, so that a file that has it pasted (inline) and also includes it gets it once.
  EXPECT_EQ(0u, H.find("//"));
  EXPECT_NE(H.find("\n#ifndef TILEPIPE_RUNTIME_CUH\n#define TILEPIPE_RUNTIME_CUH\n"), npos);
  EXPECT_TRUE(llvm::StringRef(H).ends_with("#endif // TILEPIPE_RUNTIME_CUH\n"));
}

// The comments say what the code does; measurements are in docs/ (verify-record.md, gpu-record.md).
TEST(Runtime, CommentsHoldNoMeasurements) {
  std::string H = runtimeHeaderText().str();
  for (const char *Note : {"docs/", "registers more", "instead of", "measured", "H200", "matmul"})
    EXPECT_EQ(H.find(Note), npos) << "runtime.cuh says '" << Note << "'";
}

/// The code of Text as the one-definition rule sees it: comments dropped, each run of whitespace one
/// space (string and character literals kept as they are).
std::string codeOf(llvm::StringRef Text) {
  std::string Out;
  bool Space = false;
  for (size_t I = 0; I < Text.size(); ++I) {
    char C = Text[I];
    if (Text.substr(I).starts_with("//")) {
      I = std::min(Text.find('\n', I), Text.size()) - 1;
      Space = true;
      continue;
    }
    if (Text.substr(I).starts_with("/*")) {
      I = std::min(Text.find("*/", I + 2), Text.size() - 2) + 1;
      Space = true;
      continue;
    }
    if (C == ' ' || C == '\t' || C == '\n' || C == '\r') {
      Space = true;
      continue;
    }
    if (Space && !Out.empty())
      Out += ' ';
    Space = false;
    if (C == '"' || C == '\'') {
      size_t E = I + 1;
      while (E < Text.size() && Text[E] != C)
        E += Text[E] == '\\' ? 2 : 1;
      Out += Text.slice(I, E + 1).str();
      I = E;
      continue;
    }
    Out += C;
  }
  return Out;
}

// Files rewritten against two versions of the runtime link into one program, each with its own
// definitions (the inline namespace v<N>); files of one version share them, which is sound only
// while a version's code never changes. So a change to the code is a new version:
// TILEPIPE_RUNTIME_VERSION, TILEPIPE_RUNTIME_VERSION_STRING and the inline namespace one higher,
// and the new version's hash recorded here. (Comments and layout may change freely.)
TEST(Runtime, ChangedCodeIsANewVersion) {
  const std::map<unsigned, uint64_t> Recorded = {{1, 0xc5f6578318d628a4ull}};
  uint64_t Hash = llvm::xxh3_64bits(codeOf(runtimeHeaderText()));
  auto It = Recorded.find(runtimeVersion());
  ASSERT_NE(It, Recorded.end()) << "record version " << runtimeVersion() << ": {" << runtimeVersion() << ", 0x"
                                << llvm::utohexstr(Hash, /*LowerCase=*/true) << "ull}";
  EXPECT_EQ(It->second, Hash) << "the code of runtime.cuh version " << runtimeVersion()
                              << " changed: make it version " << runtimeVersion() + 1 << " and record {"
                              << runtimeVersion() + 1 << ", 0x" << llvm::utohexstr(Hash, true) << "ull}";
}

TEST(Runtime, CodeOfDropsCommentsAndLayoutOnly) {
  EXPECT_EQ(codeOf("int a; // one\n/* two */  int  b = '/'; char *s = \"//x\";\n"),
            "int a; int b = '/'; char *s = \"//x\";");
}

// The runtime rewritten for tensor copies and bulk copies: the include, or the header's text, and
// in both the check of the version.
TEST(Runtime, HeaderModeIncludesItInlineModeCarriesIt) {
  ToolOptions O = defaultOptions();
  O.Runtime = RuntimeMode::Header;
  FileResult H = runOnFile(sourceDir() + "/testdata/matmul_classic.cu", O);
  ASSERT_TRUE(H.Ok) << H.Error;
  O.Runtime = RuntimeMode::Inline;
  FileResult I = runOnFile(sourceDir() + "/testdata/matmul_classic.cu", O);
  ASSERT_TRUE(I.Ok) << I.Error;
  const std::string V = std::to_string(runtimeVersion());
  const std::string Check = "static_assert(TILEPIPE_RUNTIME_VERSION == " + V +
                            ",\n              \"rewritten by tilepipe " + toolVersion().str() +
                            " for tilepipe/runtime.cuh version " + V +
                            ", but the one included is \"\n              \"version \" "
                            "TILEPIPE_RUNTIME_VERSION_STRING);\n";
  EXPECT_NE(H.Rewritten.find("\n#include <tilepipe/runtime.cuh>\n" + Check), npos) << H.Rewritten;
  EXPECT_EQ(H.Rewritten.find("namespace tilepipe_rt"), npos);
  EXPECT_NE(I.Rewritten.find(runtimeHeaderText().str() + Check), npos);
  EXPECT_EQ(I.Rewritten.find("#include <tilepipe/runtime.cuh>"), npos);
  // Nothing else differs.
  std::string Swapped = H.Rewritten;
  std::string Use = runtimeUse(RuntimeMode::Header);
  ASSERT_NE(Swapped.find(Use), npos);
  Swapped.replace(Swapped.find(Use), Use.size(), runtimeUse(RuntimeMode::Inline));
  EXPECT_EQ(I.Rewritten, Swapped);
  // A file with cp.async copies alone calls no runtime.
  O.Mode = CopyMode::Pipeline;
  FileResult P = runOnFile(sourceDir() + "/testdata/matmul_classic.cu", O);
  ASSERT_TRUE(P.Ok) << P.Error;
  EXPECT_EQ(P.Rewritten.find("tilepipe_rt"), npos);
  EXPECT_EQ(P.Rewritten.find("tilepipe/runtime.cuh"), npos);
  EXPECT_EQ(P.Rewritten.find("TILEPIPE_RUNTIME"), npos);
}

// The kernel's flag and the runtime's namespace have different names: `tilepipe_tma &&
// ::tilepipe_rt::takes(...)`, not one name for both.
TEST(Runtime, NoEmittedNameIsTheRuntimesNamespace) {
  FileResult R = runOnFile(sourceDir() + "/testdata/matmul_classic.cu");
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_NE(R.Rewritten.find(", bool tilepipe_tma = false)"), npos);
  EXPECT_NE(R.Rewritten.find("if (tilepipe_tma &&\n"), npos);
  for (const char *Decl : {"bool tilepipe_rt", "auto tilepipe_rt", "int tilepipe_rt", " tilepipe_rt =", " tilepipe_rt;"})
    EXPECT_EQ(R.Rewritten.find(Decl), npos) << Decl;
  for (size_t P = R.Rewritten.find("tilepipe_rt"); P != npos; P = R.Rewritten.find("tilepipe_rt", P + 1))
    EXPECT_TRUE(R.Rewritten.compare(P - 2, 2, "::") == 0 || R.Rewritten.compare(P + 11, 1, "/") == 0)
        << R.Rewritten.substr(P - 40, 80);
}

// The program and its header: `--print-runtime-dir` names the folder beside it (here the build
// tree's), holding the header it writes code for.
TEST(RuntimeCli, PrintRuntimeDir) {
  ProcessResult R = runTilepipe({"--print-runtime-dir"});
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  std::string Dir = llvm::StringRef(R.Out).trim().str();
  EXPECT_EQ(R.Out, Dir + "\n");
  EXPECT_TRUE(llvm::sys::path::is_absolute(Dir)) << Dir;
  EXPECT_EQ(sourceHeader(), readFile(Dir + "/tilepipe/runtime.cuh"));
}

TEST(RuntimeCli, PrintRuntimeDirRefusesAMissingOrOtherHeader) {
  std::string Top = tempDir();
  llvm::sys::fs::create_directories(Top + "/bin");
  ASSERT_FALSE(llvm::sys::fs::copy_file(TILEPIPE_BINARY, Top + "/bin/tilepipe"));
  llvm::sys::fs::setPermissions(Top + "/bin/tilepipe", llvm::sys::fs::perms(0755));
  ProcessResult Missing = runProgram(Top + "/bin/tilepipe", {"--print-runtime-dir"});
  EXPECT_EQ(1, Missing.ExitCode) << Missing.Out << Missing.Err;
  EXPECT_EQ("", Missing.Out);
  EXPECT_NE(Missing.Err.find("no tilepipe/runtime.cuh beside the program (looked in " + Top + "/include)"), npos)
      << Missing.Err;
  EXPECT_NE(Missing.Err.find("--runtime=inline"), npos) << Missing.Err;
  llvm::sys::fs::create_directories(Top + "/include/tilepipe");
  writeFile(Top + "/include/tilepipe/runtime.cuh", headerOfVersion(runtimeVersion() + 1));
  ProcessResult Other = runProgram(Top + "/bin/tilepipe", {"--print-runtime-dir"});
  EXPECT_EQ(1, Other.ExitCode) << Other.Out << Other.Err;
  EXPECT_NE(Other.Err.find(Top + "/include/tilepipe/runtime.cuh is not the runtime this tilepipe writes code for"),
            npos)
      << Other.Err;
  writeFile(Top + "/include/tilepipe/runtime.cuh", runtimeHeaderText().str());
  ProcessResult Found = runProgram(Top + "/bin/tilepipe", {"--print-runtime-dir"});
  EXPECT_EQ(0, Found.ExitCode) << Found.Err;
  EXPECT_EQ(Top + "/include\n", Found.Out);
}

TEST(RuntimeCli, RuntimeOption) {
  std::string Dir = tempDir();
  std::vector<std::string> Common = {"--quiet", "--check-launch-resources=false",
                                     sourceDir() + "/testdata/matmul_classic.cu", "-o"};
  auto Run = [&](const std::string &Opt, const std::string &Out) {
    std::vector<std::string> Args = Common;
    Args.push_back(Dir + "/" + Out);
    if (!Opt.empty())
      Args.insert(Args.begin(), Opt);
    return runTilepipe(Args);
  };
  ASSERT_EQ(0, Run("", "default.cu").ExitCode);
  ASSERT_EQ(0, Run("--runtime=header", "header.cu").ExitCode);
  ASSERT_EQ(0, Run("--runtime=inline", "inline.cu").ExitCode);
  std::string Default = readFile(Dir + "/default.cu");
  EXPECT_EQ(Default, readFile(Dir + "/header.cu")) << "the default is --runtime=header";
  EXPECT_NE(Default.find("#include <tilepipe/runtime.cuh>\n"), npos);
  EXPECT_NE(readFile(Dir + "/inline.cu").find(runtimeHeaderText().str()), npos);
  ProcessResult Bad = Run("--runtime=elsewhere", "bad.cu");
  EXPECT_EQ(1, Bad.ExitCode);
  EXPECT_NE(Bad.Err.find("elsewhere"), npos) << Bad.Err;
  ProcessResult Version = runTilepipe({"--version"});
  EXPECT_NE(Version.Out.find("runtime: tilepipe/runtime.cuh version " + std::to_string(runtimeVersion())), npos)
      << Version.Out;
}

// The rewrites build with nvcc, both ways, for both targets, without a warning (the diagnostic the
// barriers need is suppressed around them), and their runtime functions carry the version in their
// names (tilepipe_rt::v<N>::...), so that another version's are other functions.
struct BuildCase {
  RuntimeMode Mode;
  std::string Arch;
};
void PrintTo(const BuildCase &C, std::ostream *OS) {
  *OS << (C.Mode == RuntimeMode::Header ? "header" : "inline") << " for " << C.Arch;
}
class RuntimeNvcc : public ::testing::TestWithParam<BuildCase> {};

TEST_P(RuntimeNvcc, RewriteBuildsWithoutWarnings) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  const BuildCase &C = GetParam();
  ToolOptions O = defaultOptions();
  O.Plan = PlanPolicy::Model;
  O.Runtime = C.Mode;
  FileResult R = runOnFile(sourceDir() + "/testdata/mixed_tiles.cu", O);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_NE(R.Rewritten.find("::tilepipe_rt::copy_tile("), npos);
  ASSERT_NE(R.Rewritten.find("::tilepipe_rt::bulk_copy("), npos);
  std::string Dir = tempDir();
  writeFile(Dir + "/rewritten.cu", R.Rewritten);
  std::vector<std::string> Args = {"-std=c++17", "-arch=" + C.Arch, "-c", "-o", "rewritten.o", "rewritten.cu"};
  if (C.Mode == RuntimeMode::Header) {
    // Without the folder, the include is what fails.
    ProcessResult Without = runProgram(Nvcc, Args, Dir);
    EXPECT_NE(0, Without.ExitCode);
    EXPECT_NE((Without.Out + Without.Err).find("tilepipe/runtime.cuh"), npos) << Without.Out << Without.Err;
    Args.insert(Args.begin(), "-I" + sourceDir() + "/runtime/include");
  }
  ProcessResult B = runProgram(Nvcc, Args, Dir);
  ASSERT_EQ(0, B.ExitCode) << B.Out << B.Err;
  EXPECT_EQ((B.Out + B.Err).find("warning"), npos) << B.Out << B.Err;
  std::string Nm = findTool("nm");
  if (Nm.empty())
    GTEST_SKIP() << "nm not found: built without warnings, but the runtime's symbol names are unchecked";
  ProcessResult Symbols = runProgram(Nm, {"-C", "rewritten.o"}, Dir);
  ASSERT_EQ(0, Symbols.ExitCode) << Symbols.Err;
  EXPECT_NE(Symbols.Out.find("tilepipe_rt::v" + std::to_string(runtimeVersion()) + "::encode("), npos)
      << Symbols.Out;
}

INSTANTIATE_TEST_SUITE_P(Modes, RuntimeNvcc,
                         ::testing::Values(BuildCase{RuntimeMode::Header, "sm_80"},
                                           BuildCase{RuntimeMode::Header, "sm_90"},
                                           BuildCase{RuntimeMode::Inline, "sm_80"},
                                           BuildCase{RuntimeMode::Inline, "sm_90"}),
                         [](const ::testing::TestParamInfo<BuildCase> &I) {
                           return std::string(I.param.Mode == RuntimeMode::Header ? "Header_" : "Inline_") +
                                  I.param.Arch;
                         });

// A file rewritten for one version does not build against another: the static_assert says which
// tilepipe rewrote it, for which version, and which version it got. Inline, the file's own copy is
// skipped where another version's header came first (the guard), and the check fires all the same.
TEST(RuntimeNvccVersion, MismatchIsACompileError) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  const unsigned Other = runtimeVersion() + 1;
  std::string OtherDir = includeDirWith(headerOfVersion(Other));
  const std::string Message = "rewritten by tilepipe " + toolVersion().str() + " for tilepipe/runtime.cuh version " +
                              std::to_string(runtimeVersion()) + ", but the one included is version " +
                              std::to_string(Other);
  ToolOptions O = defaultOptions();
  std::string Dir = tempDir();
  for (RuntimeMode Mode : {RuntimeMode::Header, RuntimeMode::Inline}) {
    O.Runtime = Mode;
    FileResult R = runOnFile(sourceDir() + "/testdata/nbody_float4.cu", O);
    ASSERT_TRUE(R.Ok) << R.Error;
    ASSERT_NE(R.Rewritten.find("::tilepipe_rt::bulk_copy("), npos);
    writeFile(Dir + "/rewritten.cu", R.Rewritten);
    std::vector<std::string> Args = {"-std=c++17", "-arch=sm_90", "-I" + OtherDir, "-c", "-o", "r.o", "rewritten.cu"};
    if (Mode == RuntimeMode::Inline)
      Args.insert(Args.begin(), {"-include", "tilepipe/runtime.cuh"});
    ProcessResult B = runProgram(Nvcc, Args, Dir);
    EXPECT_NE(0, B.ExitCode) << (Mode == RuntimeMode::Header ? "header" : "inline");
    EXPECT_NE((B.Out + B.Err).find(Message), npos) << B.Out << B.Err;
  }
}

} // namespace
