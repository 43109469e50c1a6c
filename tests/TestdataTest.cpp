// Every testdata kernel: the tool's output equals generated/, every candidate loop has the outcome
// its `// EXPECT:` line names, refused files stay byte-identical, and a second run changes nothing.
#include "TestSupport.h"
#include "llvm/ADT/StringRef.h"
#include <gtest/gtest.h>
#include <map>
#include <sstream>
#include <vector>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

/// Each loop's `// EXPECT: <id>` comment, keyed by the loop's line: the next line, or the first
/// after the loop's own `#pragma` lines.
std::map<unsigned, std::string> expectations(const std::string &Text) {
  std::map<unsigned, std::string> Out;
  std::istringstream In(Text);
  std::vector<std::string> Lines;
  for (std::string Line; std::getline(In, Line);)
    Lines.push_back(Line);
  for (unsigned N = 1; N <= Lines.size(); ++N) {
    llvm::StringRef L(Lines[N - 1]);
    size_t P = L.find("// EXPECT:");
    if (P == llvm::StringRef::npos)
      continue;
    unsigned Loop = N + 1;
    while (Loop <= Lines.size() && llvm::StringRef(Lines[Loop - 1]).trim().starts_with("#pragma"))
      ++Loop;
    Out[Loop] = L.drop_front(P + 10).trim().str();
  }
  return Out;
}

class Testdata : public ::testing::TestWithParam<std::string> {};

TEST_P(Testdata, MatchesExpectationsAndGenerated) {
  std::string Name = GetParam();
  std::string In = sourceDir() + "/testdata/" + Name;
  // As users run it: with the nvcc register comparison, which generated/ was made with.
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found: generated/ is made with the register comparison it runs";
  ToolOptions Opts = defaultOptions();
  Opts.CheckLaunchResources = true;
  Opts.Plan = PlanPolicy::Model;
  FileResult R = runOnFile(In, Opts);
  ASSERT_TRUE(R.Ok) << R.Error;

  auto Expect = expectations(R.Original);
  ASSERT_FALSE(Expect.empty()) << Name << " has no EXPECT lines";
  std::map<unsigned, std::string> Got;
  for (const LoopRecord &L : R.Loops)
    Got[L.Line] = reasonInfo(L.Code).Id.str();
  EXPECT_EQ(Expect, Got) << "expected outcome per loop line differs; remarks were:\n" << [&] {
    std::string S;
    for (const LoopRecord &L : R.Loops)
      S += std::to_string(L.Line) + ": [" + reasonInfo(L.Code).Id.str() + "] " + L.message() + "\n";
    return S;
  }();

  bool AnyPipelined = false;
  for (auto &[Line, Id] : Expect)
    AnyPipelined |= Id == "pipelined";
  if (!AnyPipelined)
    EXPECT_EQ(R.Original, R.Rewritten) << "a refused file must stay byte-identical";

  std::string Generated = readFile(sourceDir() + "/generated/" + Name);
  EXPECT_EQ(Generated, R.Rewritten)
      << "generated/" << Name << " is not what the current tool produces; regenerate it";
}

TEST_P(Testdata, RunningOnOwnOutputChangesNothing) {
  std::string Generated = readFile(sourceDir() + "/generated/" + GetParam());
  // As generated/ was made: the model's plans, and the launch check, whose spill rule keeps loops
  // the model alone would rewrite. Where nothing is rewritten again the check does not run.
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found: generated/ is made with the register comparison it runs";
  ToolOptions Opts = defaultOptions();
  Opts.Plan = PlanPolicy::Model;
  Opts.CheckLaunchResources = true;
  FileResult R = runOnCode(Generated, Opts);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(Generated, R.Rewritten);
  for (const LoopRecord &L : R.Loops)
    EXPECT_FALSE(L.transformed()) << "line " << L.Line << " was rewritten twice";
}

INSTANTIATE_TEST_SUITE_P(All, Testdata, ::testing::ValuesIn(testdataNames()),
                         [](const ::testing::TestParamInfo<std::string> &I) {
                           std::string S = I.param.substr(0, I.param.size() - 3);
                           for (char &C : S)
                             if (!isalnum(static_cast<unsigned char>(C)))
                               C = '_';
                           return S;
                         });

TEST(Testdata, CoversEnoughCases) {
  unsigned Positive = 0, Negative = 0;
  for (const std::string &N : testdataNames()) {
    bool Pos = false;
    for (auto &[Line, Id] : expectations(readFile(sourceDir() + "/testdata/" + N)))
      Pos |= Id == "pipelined";
    (Pos ? Positive : Negative)++;
  }
  EXPECT_GE(Positive, 12u);
  EXPECT_GE(Negative, 8u);
}

} // namespace
