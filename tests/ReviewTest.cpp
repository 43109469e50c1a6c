// Where users meet tilepipe: review outputs (clang-tidy fixes YAML, SARIF), whole-project runs,
// annotations in the source, kernel filters and build depfiles.
#include "TestSupport.h"
#include "tilepipe/Project.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"
#include <gtest/gtest.h>
#include <set>
#include <sstream>
#include <map>
#include <unistd.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

std::string copyInto(const std::string &Dir, const std::string &Name) {
  std::string P = Dir + "/" + Name;
  writeFile(P, readFile(sourceDir() + "/testdata/" + Name));
  return P;
}

TEST(Review, ExportFixesApplyLikeOutput) {
  std::string Apply = llvmTool("clang-apply-replacements");
  if (Apply.empty())
    GTEST_SKIP() << "clang-apply-replacements-22 not installed";
  for (const char *Name : {"matmul_classic.cu", "complex_float2.cu", "proxy_fence.cu", "neg_store_alias.cu"}) {
    std::string Dir = tempDir();
    std::string Src = copyInto(Dir, Name);
    llvm::sys::fs::create_directories(Dir + "/fixes");
    ProcessResult R = runTilepipe({"--quiet", "--export-fixes=" + Dir + "/fixes/f.yaml", "-o",
                                   Dir + "/expected.cu", Src});
    ASSERT_EQ(0, R.ExitCode) << R.Err;
    EXPECT_NE(readFile(Dir + "/fixes/f.yaml").find("DiagnosticName:  tilepipe-"), std::string::npos);
    ProcessResult A = runProgram(Apply, {Dir + "/fixes"});
    ASSERT_EQ(0, A.ExitCode) << A.Out << A.Err;
    EXPECT_TRUE(readFile(Dir + "/expected.cu") == readFile(Src)) << Name;
  }
}

/// Text as UTF-16 code units, the unit the SARIF log declares (columnKind utf16CodeUnits).
std::vector<llvm::UTF16> utf16(const std::string &Text) {
  llvm::SmallVector<llvm::UTF16, 0> Units;
  EXPECT_TRUE(llvm::convertUTF8ToUTF16String(Text, Units));
  return std::vector<llvm::UTF16>(Units.begin(), Units.end());
}

std::string utf8(const std::vector<llvm::UTF16> &Units) {
  std::string Out;
  EXPECT_TRUE(llvm::convertUTF16ToUTF8String(Units, Out));
  return Out;
}

/// Every replacement of every fix: deletedRegion and insertedContent.
std::vector<std::pair<const llvm::json::Object *, std::string>>
sarifReplacements(const llvm::json::Array &Results) {
  std::vector<std::pair<const llvm::json::Object *, std::string>> Out;
  for (const llvm::json::Value &V : Results)
    if (const llvm::json::Array *Fixes = V.getAsObject()->getArray("fixes"))
      for (const llvm::json::Value &Fix : *Fixes)
        for (const llvm::json::Value &Change : *Fix.getAsObject()->getArray("artifactChanges"))
          for (const llvm::json::Value &Rep : *Change.getAsObject()->getArray("replacements"))
            Out.emplace_back(Rep.getAsObject()->getObject("deletedRegion"),
                             Rep.getAsObject()->getObject("insertedContent")->getString("text")->str());
  return Out;
}

/// Applies a SARIF result's fixes to Text, by charOffset and charLength in UTF-16 code units.
std::string applySarifFixes(const std::string &Text, const llvm::json::Array &Results) {
  std::vector<std::tuple<int64_t, int64_t, std::string>> Edits;
  for (auto &[Del, New] : sarifReplacements(Results))
    Edits.emplace_back(*Del->getInteger("charOffset"), *Del->getInteger("charLength"), New);
  std::sort(Edits.rbegin(), Edits.rend());
  std::vector<llvm::UTF16> Units = utf16(Text);
  for (auto &[Off, Len, New] : Edits) {
    if (Off < 0 || Len < 0 || Off + Len > int64_t(Units.size())) {
      ADD_FAILURE() << "a deleted region past the end of the file: " << Off << " + " << Len;
      return "";
    }
    std::vector<llvm::UTF16> Ins = utf16(New);
    Units.erase(Units.begin() + Off, Units.begin() + Off + Len);
    Units.insert(Units.begin() + Off, Ins.begin(), Ins.end());
  }
  return utf8(Units);
}

/// Line and column (1-based, in UTF-16 code units) of a UTF-16 offset of Text.
std::pair<int64_t, int64_t> lineColumn(const std::vector<llvm::UTF16> &Text, int64_t Offset) {
  int64_t Line = 1, Start = 0;
  for (int64_t I = 0; I < Offset; ++I)
    if (Text[I] == '\n')
      ++Line, Start = I + 1;
  return {Line, Offset - Start + 1};
}

/// A region's startLine/startColumn/endLine/endColumn name the same text as its charOffset and
/// charLength.
void expectRegionConsistent(const std::vector<llvm::UTF16> &Text, const llvm::json::Object &Region,
                            const std::string &What) {
  std::optional<int64_t> Off = Region.getInteger("charOffset"), Len = Region.getInteger("charLength");
  ASSERT_TRUE(Off && Len) << What;
  ASSERT_LE(*Off + *Len, int64_t(Text.size())) << What;
  auto [SL, SC] = lineColumn(Text, *Off);
  auto [EL, EC] = lineColumn(Text, *Off + *Len);
  EXPECT_EQ(SL, Region.getInteger("startLine").value_or(-1)) << What;
  EXPECT_EQ(SC, Region.getInteger("startColumn").value_or(-1)) << What;
  EXPECT_EQ(EL, Region.getInteger("endLine").value_or(-1)) << What;
  EXPECT_EQ(EC, Region.getInteger("endColumn").value_or(-1)) << What;
}

void expectRegionsConsistent(const std::string &Source, const llvm::json::Object &Run,
                             const std::string &Name) {
  EXPECT_EQ("utf16CodeUnits", Run.getString("columnKind").value_or("").str()) << Name;
  std::vector<llvm::UTF16> Text = utf16(Source);
  for (const llvm::json::Value &V : *Run.getArray("results"))
    expectRegionConsistent(Text,
                           *(*V.getAsObject()->getArray("locations"))[0]
                                .getAsObject()
                                ->getObject("physicalLocation")
                                ->getObject("region"),
                           Name + ": a result's location");
  for (auto &[Del, New] : sarifReplacements(*Run.getArray("results")))
    expectRegionConsistent(Text, *Del, Name + ": a deleted region");
}

bool haveSchemaValidator() {
  return runProgram("/usr/bin/python3", {"-c", "import jsonschema"}).ExitCode == 0;
}

void expectSchemaValid(const std::string &Sarif, const std::string &Name) {
  ProcessResult V = runProgram(
      "/usr/bin/python3",
      {"-c", "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
             "json.load(open(sys.argv[2])))",
       Sarif, sourceDir() + "/tests/data/sarif-schema-2.1.0.json"});
  EXPECT_EQ(0, V.ExitCode) << Name << ": " << V.Err;
}

// Every testdata file in one run, as a review bot runs a project: one SARIF log, whose fixes,
// file by file, turn each source into what --in-place wrote; one schema check of the whole log.
TEST(Review, SarifValidatesAndItsFixesReproduceOutput) {
  std::string Dir = tempDir();
  std::vector<std::string> Args = {"--quiet", "-j", "0", "--in-place", "--sarif=" + Dir + "/r.sarif"};
  std::map<std::string, std::string> Original;
  for (const std::string &Name : testdataNames()) {
    Original[Name] = readFile(copyInto(Dir, Name));
    Args.push_back(Name);
  }
  ProcessResult R = runTilepipe(Args, Dir);
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  auto Json = llvm::json::parse(readFile(Dir + "/r.sarif"));
  ASSERT_TRUE(bool(Json)) << llvm::toString(Json.takeError());
  const llvm::json::Object &Run = *(*Json->getAsObject()->getArray("runs"))[0].getAsObject();
  std::map<std::string, llvm::json::Array> ByFile;
  for (const llvm::json::Value &V : *Run.getArray("results")) {
    std::string Uri = (*(*V.getAsObject()->getArray("locations"))[0]
                            .getAsObject()
                            ->getObject("physicalLocation")
                            ->getObject("artifactLocation")
                            ->getString("uri"))
                          .str();
    EXPECT_TRUE(Original.count(Uri)) << "a result names '" << Uri << "', no input";
    ByFile[Uri].push_back(V);
  }
  for (auto &[Name, Text] : Original) {
    const llvm::json::Array &Results = ByFile[Name];
    EXPECT_FALSE(Results.empty()) << Name;
    EXPECT_TRUE(readFile(Dir + "/" + Name) == applySarifFixes(Text, Results)) << Name;
    llvm::json::Object One{{"columnKind", Run.getString("columnKind").value_or("").str()},
                           {"results", llvm::json::Array(Results)}};
    expectRegionsConsistent(Text, One, Name);
  }
  if (!haveSchemaValidator())
    GTEST_SKIP() << "python3-jsonschema not installed: fixes checked, schema not";
  expectSchemaValid(Dir + "/r.sarif", "the log of every testdata file");
}

// tilepipe audit speaks the review formats too: a SARIF log of its findings (their notes as related
// locations, valid against the schema), whose fixes (alignas where the array is the user's) make of
// the source what clang-apply-replacements makes of --export-fixes.
TEST(Review, AuditSarifAndExportFixesAgree) {
  std::string Dir = tempDir();
  const std::string Original = readFile(sourceDir() + "/testdata/audit/slow_path.cu");
  writeFile(Dir + "/slow_path.cu", Original);
  llvm::sys::fs::create_directories(Dir + "/fixes");
  ProcessResult R = runTilepipe({"audit", "--quiet", "--sarif=" + Dir + "/a.sarif",
                                 "--export-fixes=" + Dir + "/fixes/f.yaml", "slow_path.cu"},
                                Dir);
  EXPECT_EQ(1, R.ExitCode) << "findings fail the run: " << R.Err;
  auto Json = llvm::json::parse(readFile(Dir + "/a.sarif"));
  ASSERT_TRUE(bool(Json)) << llvm::toString(Json.takeError());
  const llvm::json::Object &Run = *(*Json->getAsObject()->getArray("runs"))[0].getAsObject();
  // One result per `// EXPECT-AUDIT:` comment, on the line after it.
  std::multiset<int64_t> Expected, Got;
  for (const auto &[Line, Id] : auditExpectations(Original)) {
    EXPECT_EQ("async-slow-path", Id);
    Expected.insert(Line);
  }
  size_t Related = 0;
  for (const llvm::json::Value &V : *Run.getArray("results")) {
    const llvm::json::Object &O = *V.getAsObject();
    EXPECT_EQ("async-slow-path", O.getString("ruleId").value_or("").str());
    EXPECT_EQ("warning", O.getString("level").value_or("").str());
    const llvm::json::Object &Loc = *(*O.getArray("locations"))[0].getAsObject();
    EXPECT_EQ("slow_path.cu", Loc.getObject("physicalLocation")->getObject("artifactLocation")->getString("uri")->str());
    Got.insert(Loc.getObject("physicalLocation")->getObject("region")->getInteger("startLine").value_or(-1));
    if (const llvm::json::Array *Rel = O.getArray("relatedLocations"))
      Related += Rel->size();
  }
  EXPECT_EQ(Expected, Got);
  EXPECT_GE(Related, 2u) << "the arrays to align are named";
  expectRegionsConsistent(Original, Run, "the audit's log");
  const std::string Fixed = applySarifFixes(Original, *Run.getArray("results"));
  auto Count = [](const std::string &T, const std::string &What) {
    size_t N = 0;
    for (size_t P = T.find(What); P != std::string::npos; P = T.find(What, P + 1))
      ++N;
    return N;
  };
  EXPECT_EQ(Count(Original, "alignas(16) __shared__") + 3, Count(Fixed, "alignas(16) __shared__"));
  EXPECT_NE(readFile(Dir + "/fixes/f.yaml").find("DiagnosticName:  tilepipe-async-slow-path"), std::string::npos);
  if (haveSchemaValidator())
    expectSchemaValid(Dir + "/a.sarif", "the audit's log");
  std::string Apply = llvmTool("clang-apply-replacements");
  if (Apply.empty())
    GTEST_SKIP() << "clang-apply-replacements-22 not installed: the SARIF fixes checked, the YAML's not applied";
  ProcessResult A = runProgram(Apply, {Dir + "/fixes"});
  ASSERT_EQ(0, A.ExitCode) << A.Out << A.Err;
  EXPECT_TRUE(Fixed == readFile(Dir + "/slow_path.cu")) << readFile(Dir + "/slow_path.cu");
}

TEST(Review, SarifCountsInUtf16CodeUnits) {
  // Non-ASCII text (2-, 3- and 4-byte UTF-8; the emoji is 2 UTF-16 code units) on a line before
  // the loop, on the loop's own line before and after its keyword, and inside the loop.
  const std::string Code = "// Größe – 😀\n"
                           "#define T 64\n"
                           "__global__ void k(const float *A, float *C, int nt) {\n"
                           "  __shared__ float s[T]; // Größe – 😀\n"
                           "  float acc = 0;\n"
                           "  /* Größe – 😀 */ for (int t = 0; t < nt; ++t) { // Größe – 😀\n"
                           "    s[threadIdx.x] = A[t * T + threadIdx.x]; // Größe – 😀\n"
                           "    __syncthreads();\n"
                           "    acc += s[T - 1 - threadIdx.x]; // Größe – 😀\n"
                           "    __syncthreads();\n"
                           "  }\n"
                           "  C[threadIdx.x] = acc;\n"
                           "}\n";
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", Code);
  // --mode=pipeline: the default mode keeps the original loop under #if, for which the loop must
  // begin its line.
  ProcessResult R = runTilepipe(
      {"--quiet", "--mode=pipeline", "--plan=always", "--sarif=" + Dir + "/r.sarif", "-o", Dir + "/o.cu", "k.cu"}, Dir);
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  auto Json = llvm::json::parse(readFile(Dir + "/r.sarif"));
  ASSERT_TRUE(bool(Json)) << llvm::toString(Json.takeError());
  const llvm::json::Object &Run = *(*Json->getAsObject()->getArray("runs"))[0].getAsObject();
  const llvm::json::Array &Results = *Run.getArray("results");
  ASSERT_EQ(1u, Results.size());
  EXPECT_EQ("pipelined", Results[0].getAsObject()->getString("ruleId").value_or("").str());
  // The loop keyword: "  /* Größe – 😀 */ " before it is 19 code units (25 bytes).
  const llvm::json::Object &Region = *(*Results[0].getAsObject()->getArray("locations"))[0]
                                          .getAsObject()
                                          ->getObject("physicalLocation")
                                          ->getObject("region");
  size_t For = Code.find("for (");
  int64_t Before = utf16(Code.substr(0, For)).size();
  int64_t LineStart = utf16(Code.substr(0, Code.rfind('\n', For) + 1)).size();
  EXPECT_EQ(6, Region.getInteger("startLine").value_or(-1));
  EXPECT_EQ(Before - LineStart + 1, Region.getInteger("startColumn").value_or(-1));
  EXPECT_EQ(20, Before - LineStart + 1);
  EXPECT_EQ(Before, Region.getInteger("charOffset").value_or(-1));
  EXPECT_EQ(3, Region.getInteger("charLength").value_or(-1));
  expectRegionsConsistent(Code, Run, "k.cu");
  bool NonAsciiInserted = false;
  for (auto &[Del, New] : sarifReplacements(Results))
    NonAsciiInserted |= New.find("// Größe – 😀") != std::string::npos;
  EXPECT_TRUE(NonAsciiInserted) << "the loop's comments travel in the inserted text";
  std::string Expected = readFile(Dir + "/o.cu");
  EXPECT_TRUE(Expected == applySarifFixes(Code, Results)) << applySarifFixes(Code, Results);
  if (!haveSchemaValidator())
    GTEST_SKIP() << "python3-jsonschema not installed: offsets checked, schema not";
  expectSchemaValid(Dir + "/r.sarif", "k.cu");
}

/// The replacements in a clang-tidy fixes YAML, as text.
unsigned countReplacements(const std::string &Yaml) {
  unsigned N = 0;
  for (size_t P = Yaml.find("ReplacementText:"); P != std::string::npos;
       P = Yaml.find("ReplacementText:", P + 1))
    ++N;
  return N;
}

TEST(Review, ExportFixesOfAFileGivenTwiceApplyOnce) {
  std::string Dir = tempDir();
  copyInto(Dir, "dot_double_while.cu");
  llvm::sys::fs::create_directories(Dir + "/once");
  llvm::sys::fs::create_directories(Dir + "/twice");
  ProcessResult Once = runTilepipe({"--quiet", "--export-fixes=once/f.yaml", "-o", "o.cu", "dot_double_while.cu"}, Dir);
  ASSERT_EQ(0, Once.ExitCode) << Once.Err;
  ProcessResult Twice =
      runTilepipe({"--quiet", "--export-fixes=twice/f.yaml", "dot_double_while.cu", "./dot_double_while.cu"}, Dir);
  ASSERT_EQ(0, Twice.ExitCode) << Twice.Err;
  EXPECT_EQ("", Twice.Err);
  unsigned N = countReplacements(readFile(Dir + "/once/f.yaml"));
  EXPECT_GT(N, 0u);
  EXPECT_EQ(N, countReplacements(readFile(Dir + "/twice/f.yaml"))) << "the same edits twice";
  std::string Apply = llvmTool("clang-apply-replacements");
  if (Apply.empty())
    GTEST_SKIP() << "clang-apply-replacements-22 not installed: counted, not applied";
  ProcessResult A = runProgram(Apply, {Dir + "/twice"});
  ASSERT_EQ(0, A.ExitCode) << A.Out << A.Err;
  EXPECT_TRUE(readFile(Dir + "/o.cu") == readFile(Dir + "/dot_double_while.cu"));
}

TEST(Review, ExportFixesConflictIsAnError) {
  // One file reached through two paths (b.cu links to a.cu) whose compile commands differ: with
  // TILE=32 the loop keeps 3 stages, with TILE=48 its tiles fit only 2. The two rewrites overlap.
  std::string Dir = tempDir();
  writeFile(Dir + "/a.cu", R"(#ifndef TILE
#define TILE 32
#endif
__global__ void mm(const float *A, const float *B, float *C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0;
  for (int t = 0; t < n / TILE; ++t) {
    As[ty][tx] = A[row * n + t * TILE + tx];
    Bs[ty][tx] = B[(t * TILE + ty) * n + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * n + col] = acc;
}
)");
  ASSERT_EQ(0, symlink("a.cu", (Dir + "/b.cu").c_str()));
  writeFile(Dir + "/compile_commands.json",
            "[{\"directory\": \"" + Dir + "\", \"file\": \"" + Dir + "/a.cu\", \"command\": \"nvcc -c a.cu\"},"
            " {\"directory\": \"" + Dir + "\", \"file\": \"" + Dir + "/b.cu\", \"command\": \"nvcc -DTILE=48 -c b.cu\"}]");
  ProcessResult R = runTilepipe({"-p", Dir, "--export-fixes=" + Dir + "/f.yaml"}, Dir);
  EXPECT_NE(0, R.ExitCode);
  EXPECT_NE(R.Err.find("3-stage"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("2-stage"), std::string::npos) << R.Err;
  llvm::Regex Conflict("(a|b)\\.cu:10:3: error: --export-fixes: this loop's rewrite conflicts with "
                       "the one for [^ ]*(a|b)\\.cu:10:3",
                       llvm::Regex::Newline);
  EXPECT_TRUE(Conflict.match(R.Err)) << R.Err;
  // One rewrite is written, not a mix of both.
  std::string Yaml = readFile(Dir + "/f.yaml");
  EXPECT_NE(Yaml.find("As_stages"), std::string::npos) << Yaml;
  EXPECT_TRUE((Yaml.find("As_stages[3]") == std::string::npos) != (Yaml.find("As_stages[2]") == std::string::npos))
      << Yaml;
}

TEST(Review, SarifHasOneRulePerReason) {
  std::string Dir = tempDir();
  ProcessResult R = runTilepipe({"--quiet", "--sarif=" + Dir + "/r.sarif", "-o", Dir + "/o.cu",
                                 sourceDir() + "/testdata/neg_element_type.cu"});
  ASSERT_EQ(0, R.ExitCode);
  auto Json = llvm::json::parse(readFile(Dir + "/r.sarif"));
  ASSERT_TRUE(bool(Json));
  const llvm::json::Object &Run = *(*Json->getAsObject()->getArray("runs"))[0].getAsObject();
  const llvm::json::Array &Rules =
      *Run.getObject("tool")->getObject("driver")->getArray("rules");
  EXPECT_EQ(allReasons().size(), Rules.size());
  const llvm::json::Object &First = *(*Run.getArray("results"))[0].getAsObject();
  EXPECT_EQ("element-type", First.getString("ruleId")->str());
  EXPECT_EQ("note", First.getString("level")->str());
  EXPECT_EQ(nullptr, First.getArray("fixes"));
}

TEST(Annotations, SkipAndStages) {
  std::string Code = R"(#define T 64
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T];
  __shared__ float u[T];
  float acc = 0;
  // tilepipe: skip
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  // Second pass.
  // tilepipe: stages=5
  for (int t = 0; t < nt; ++t) {
    u[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += u[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
)";
  FileResult R = runOnCode(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(2u, R.Loops.size());
  EXPECT_EQ("skipped", reasonInfo(R.Loops[0].Code).Id.str());
  EXPECT_TRUE(R.Loops[1].transformed());
  EXPECT_EQ(5u, R.Loops[1].Stages);
  EXPECT_NE(R.Rewritten.find("u_stages[5][T]"), std::string::npos);
  EXPECT_NE(R.Rewritten.find("__shared__ float s[T];"), std::string::npos);
}

TEST(Annotations, AssumeNoAliasPerLoop) {
  std::string Code = R"(#define T 64
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T];
  // tilepipe: assume-noalias=true
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    C[t * T + threadIdx.x] = s[T - 1 - threadIdx.x];
    __syncthreads();
  }
}
)";
  FileResult R = runOnCode(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  // The run's option says true; the loop's annotation says false: the annotation wins.
  ToolOptions Assume = defaultOptions();
  Assume.AssumeNoAlias = true;
  std::string Strict = Code;
  Strict.replace(Strict.find("assume-noalias=true"), 19, "assume-noalias=false");
  FileResult S = runOnCode(Strict, Assume);
  ASSERT_EQ(1u, S.Loops.size());
  EXPECT_EQ("store-may-alias", reasonInfo(S.Loops[0].Code).Id.str());
}

TEST(Annotations, MalformedIsAnError) {
  std::string Code = R"(__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // tilepipe: stages=many
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
)";
  FileResult R = runOnCode(Code);
  EXPECT_FALSE(R.Ok);
  EXPECT_NE(R.Error.find("snippet.cu:4:1: error: malformed tilepipe annotation"), std::string::npos)
      << R.Error;
}

TEST(Annotations, BlockCommentIsNotReadAndSaysSo) {
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", R"(#define T 64
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T];
  float acc = 0;
  /* tilepipe: skip */
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  /* A note about tilepipe: not an annotation, no warning. */
  C[threadIdx.x] = acc;
}
)");
  ProcessResult R = runTilepipe({"--quiet", "k.cu", "-o", "o.cu"}, Dir);
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(0u, R.Err.find("k.cu:5:3: warning: a tilepipe annotation in a block comment is not read "
                           "('tilepipe: skip'): annotations are '// tilepipe: ...' line comments"))
      << R.Err;
  EXPECT_EQ(R.Err.find("warning", R.Err.find('\n')), std::string::npos) << "one warning: " << R.Err;
}

TEST(Project, KernelFilter) {
  ProcessResult R = runTilepipe({"--kernel=window_sums", "--report=-", "-o", tempDir() + "/o.cu",
                                 sourceDir() + "/testdata/multi_loops.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_NE(R.Out.find("\"window_sums\""), std::string::npos);
  EXPECT_EQ(R.Out.find("\"row_then_column\""), std::string::npos) << R.Out;
}

TEST(Project, KernelFilterThatMatchesNothingWarnsOnce) {
  ProcessResult R = runTilepipe({"--kernel=window_sums", "--kernel=no_such_kernel", "--diff",
                                 sourceDir() + "/testdata/multi_loops.cu",
                                 sourceDir() + "/testdata/stencil1d.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  std::string Warning = "tilepipe: warning: --kernel=no_such_kernel matches no kernel or __device__ "
                        "function in the input files\n";
  size_t At = R.Err.find(Warning);
  EXPECT_NE(At, std::string::npos) << R.Err;
  EXPECT_EQ(std::string::npos, R.Err.find(Warning, At + 1)) << "once: " << R.Err;
  EXPECT_EQ(std::string::npos, R.Err.find("--kernel=window_sums")) << R.Err;
}

TEST(Project, ParallelRunsGiveTheSameDiffEveryTime) {
  // Each parse moves into its compile command's folder; with threads that must not be a chdir
  // the others see mid-parse (diff paths once came out as a/<absolute dir>/x.cu, once as a/x.cu).
  std::string Dir = tempDir();
  std::vector<std::string> Args = {"--diff", "--quiet", "--check-launch-resources=false", "-j", "4"};
  for (const char *N : {"dot_double_while.cu", "brick_tiles.cu", "guarded_tiles.cu", "proxy_fence.cu",
                        "complex_float2.cu", "nbody_float4.cu"}) {
    copyInto(Dir, N);
    Args.push_back(N);
  }
  ProcessResult First = runTilepipe(Args, Dir);
  ASSERT_EQ(0, First.ExitCode) << First.Err;
  EXPECT_NE(First.Out.find("+++ b/proxy_fence.cu"), std::string::npos) << First.Out.substr(0, 400);
  EXPECT_EQ(First.Out.find(Dir), std::string::npos) << "paths relative to the run's folder";
  for (int I = 0; I < 3; ++I)
    EXPECT_EQ(First.Out, runTilepipe(Args, Dir).Out) << "run " << I + 2 << " differs";
}

TEST(Project, WholeCompileDatabaseInParallel) {
  std::string Dir = tempDir();
  std::vector<std::string> Names = {"dot_double_while.cu", "neg_break.cu", "brick_tiles.cu", "broken.cu"};
  std::string Db = "[";
  for (const std::string &N : Names) {
    if (N == "broken.cu")
      writeFile(Dir + "/" + N, "#include \"no_such_header.h\"\n__global__ void k() {}\n");
    else
      copyInto(Dir, N);
    Db += std::string(Db.size() > 1 ? "," : "") + "{\"directory\": \"" + Dir + "\", \"file\": \"" +
          Dir + "/" + N + "\", \"command\": \"nvcc -O3 -c " + N + "\"}";
  }
  writeFile(Dir + "/compile_commands.json", Db + "]");
  ProcessResult R = runTilepipe({"-p", Dir, "-j", "2", "--in-place", "--stats-json=" + Dir + "/stats.json"});
  EXPECT_NE(0, R.ExitCode) << "a file failed to parse";
  EXPECT_NE(R.Err.find("broken.cu"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("tilepipe: 4 file(s) (1 failed), 4 candidate loop(s): 2 rewritten, 2 left alone (control-flow 2)"),
            std::string::npos)
      << R.Err;
  EXPECT_TRUE(readFile(sourceDir() + "/generated/dot_double_while.cu") == readFile(Dir + "/dot_double_while.cu"));
  EXPECT_TRUE(readFile(sourceDir() + "/generated/brick_tiles.cu") == readFile(Dir + "/brick_tiles.cu"));
  EXPECT_TRUE(readFile(sourceDir() + "/testdata/neg_break.cu") == readFile(Dir + "/neg_break.cu"));
  auto Stats = llvm::json::parse(readFile(Dir + "/stats.json"));
  ASSERT_TRUE(bool(Stats)) << llvm::toString(Stats.takeError());
  EXPECT_EQ(4, Stats->getAsObject()->getInteger("files"));
  EXPECT_EQ(1, Stats->getAsObject()->getInteger("failed"));
  EXPECT_EQ(2, Stats->getAsObject()->getInteger("rewritten"));
  EXPECT_EQ(2, Stats->getAsObject()->getObject("by_reason")->getInteger("control-flow"));
}

const char *SharedHeader = R"(// Shared by several sources.
#pragma once
#include <cstdio>
#define T 64
__device__ float tile_sum(const float *A, int nt) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  return acc;
}
)";

std::string kernelUsing(const std::string &Name, const std::string &Arg) {
  return "#include \"shared.cuh\"\n__global__ void " + Name +
         "(const float *A, float *C, int nt) {\n  __shared__ float staging[T * 4];\n"
         "  staging[threadIdx.x] = A[threadIdx.x];\n  C[threadIdx.x] = tile_sum(" + Arg + ", nt);\n}\n";
}

TEST(Project, SharedHeaderIsRewrittenOnce) {
  std::string Dir = tempDir();
  writeFile(Dir + "/shared.cuh", SharedHeader);
  writeFile(Dir + "/a.cu", kernelUsing("ka", "A"));
  writeFile(Dir + "/b.cu", kernelUsing("kb", "A + 64"));
  ProcessResult R = runTilepipe({"-j", "2", "--in-place", "--plan=always", "--report=" + Dir + "/r.json",
                                 Dir + "/a.cu", Dir + "/b.cu", "--", "-I" + Dir});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  std::string H = readFile(Dir + "/shared.cuh");
  EXPECT_NE(H.find("#include <cuda/pipeline>"), std::string::npos) << H;
  EXPECT_NE(H.find("s_stages[3][T]"), std::string::npos);
  size_t Issue = H.find("auto issue_tile");
  EXPECT_NE(Issue, std::string::npos);
  EXPECT_EQ(std::string::npos, H.find("auto issue_tile", Issue + 1)) << "rewritten twice";
  EXPECT_EQ(kernelUsing("ka", "A"), readFile(Dir + "/a.cu"));
  // One remark for the header's loop, not one per file.
  size_t First = R.Err.find("shared.cuh:8:3: remark: [pipelined]");
  EXPECT_NE(First, std::string::npos) << R.Err;
  EXPECT_EQ(std::string::npos, R.Err.find("shared.cuh:8:3: remark", First + 1)) << R.Err;
  // Running again changes nothing.
  ProcessResult Again = runTilepipe({"--in-place", "--plan=always", Dir + "/a.cu", Dir + "/b.cu", "--", "-I" + Dir});
  EXPECT_EQ(0, Again.ExitCode) << Again.Err;
  EXPECT_EQ(H, readFile(Dir + "/shared.cuh"));
}

TEST(Project, SharedHeaderThatFilesDisagreeOnIsLeftAlone) {
  std::string Dir = tempDir();
  writeFile(Dir + "/shared.cuh", SharedHeader);
  writeFile(Dir + "/a.cu", kernelUsing("ka", "A"));
  writeFile(Dir + "/b.cu", kernelUsing("kb", "staging")); // shared memory: cp.async cannot read it
  ProcessResult R = runTilepipe({"--in-place", "--plan=always", Dir + "/a.cu", Dir + "/b.cu", "--", "-I" + Dir});
  EXPECT_NE(0, R.ExitCode);
  EXPECT_NE(R.Err.find("would rewrite it differently"), std::string::npos) << R.Err;
  EXPECT_EQ(SharedHeader, readFile(Dir + "/shared.cuh"));
}

// The merge of a run's results, called as a library: no parse, results made by hand.
TEST(Project, MergeHeadersKeepsEachHeaderLoopOnceAndRefusesADisagreement) {
  std::string Dir = tempDir();
  std::string Header = Dir + "/shared.cuh";
  writeFile(Header, "// a header\n");
  auto FileWith = [&](const std::string &Name, const std::string &HeaderText) {
    FileResult R;
    R.Path = Dir + "/" + Name;
    R.Ok = true;
    LoopRecord Own;
    Own.File = R.Path;
    Own.Line = 3;
    LoopRecord InHeader;
    InHeader.File = Header;
    InHeader.Line = 8;
    InHeader.Column = 3;
    R.Loops = {Own, InHeader};
    R.Headers.push_back({Header, "// a header\n", HeaderText, {}});
    R.Warnings = {Header + ":1:1: warning: the same in both files"};
    R.KernelsFound = {"ka"};
    return R;
  };
  std::vector<FileResult> Results = {FileWith("a.cu", "// rewritten one way\n"),
                                     FileWith("b.cu", "// rewritten another way\n")};
  MergedHeaders Merged = mergeHeaders(Results);
  ASSERT_EQ(1u, Merged.Headers.size());
  EXPECT_EQ(1u, Merged.Conflicts.count(Header));
  ASSERT_EQ(1u, Merged.Errors.size());
  EXPECT_NE(Merged.Errors[0].find(Header + ": error: the files that include it would rewrite it "
                                           "differently"),
            std::string::npos)
      << Merged.Errors[0];
  // The header's loop once, in the first file, and left alone; each file keeps its own loop.
  ASSERT_EQ(2u, Results[0].Loops.size());
  EXPECT_EQ(Reason::Unsupported, Results[0].Loops[1].Code);
  ASSERT_EQ(1u, Results[1].Loops.size());
  EXPECT_EQ(Results[1].Path, Results[1].Loops[0].File);
  EXPECT_EQ(1u, distinctWarnings(Results).size());
  EXPECT_EQ(std::vector<std::string>{"kb"}, unmatchedKernels(Results, {"ka", "kb", "kb"}));
}

TEST(Project, DepfileListsIncludedHeaders) {
  std::string Dir = tempDir();
  writeFile(Dir + "/tile.h", "#define TILE 64\n");
  writeFile(Dir + "/k.cu", R"(#include "tile.h"
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[TILE];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * TILE + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
)");
  ProcessResult R = runTilepipe({"--quiet", "-o", Dir + "/k.out.cu", "--depfile=" + Dir + "/k.d", Dir + "/k.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  std::string D = readFile(Dir + "/k.d");
  EXPECT_EQ(0u, D.find(Dir + "/k.out.cu:")) << D;
  EXPECT_NE(D.find(Dir + "/tile.h"), std::string::npos) << D;
  EXPECT_NE(D.find(Dir + "/k.cu"), std::string::npos) << D;
}

} // namespace
