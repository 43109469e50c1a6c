// Emit, beside the pipeline: the loop as it was, where the pipeline does not run (below compute
// capability 8.0, in launches that fill the GPU, in instantiations of a template the analysis did
// not see: docs/legality.md's L4), each under its condition.
#include "EmitPipeline.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace tilepipe::emit {

/// The launch leaves most of each SM idle (LoopPlan::SmallLaunches): the grid's warps, at most
/// SmallLaunchWarpsPerSM for each SM the device reports (%nsmid, which counts at least the SMs).
/// The same in every thread of the block, so the barriers of either path are reached by all.
static std::string smallLaunchCondition() {
  return "if ((unsigned long long)gridDim.x * gridDim.y * gridDim.z * ((blockDim.x * blockDim.y * blockDim.z + 31) / 32) <= " +
         std::to_string(SmallLaunchWarpsPerSM) +
         "ull * [] { unsigned sms; asm(\"mov.u32 %0, %%nsmid;\" : \"=r\"(sms)); return sms; }())";
}

/// The loop as it was, reading buffer 0 of each stage array, where the pipeline does not run: below
/// compute capability 8.0 (NewText under `#if __CUDA_ARCH__ >= 800`), in launches that fill the GPU
/// (NewText under `if (small launch)`), and in instantiations of a template the analysis did not see
/// (NewText under `if constexpr (LoopPlan::TemplateGuard)`); the original under the `else` of each,
/// or `#else`. Replaces [ReplaceFrom, ReplaceTo); one statement in every configuration, as the loop was.
llvm::Error PipelineEmitter::keepOriginal(std::string &NewText, unsigned &ReplaceFrom, unsigned &ReplaceTo,
                                          const SourceTokens &Toks) const {
  const std::string &Base = Cut.Base, &Unit = Cut.Unit;
  if (!F.firstOnLine(Cut.LoopOff))
    return fail("the loop does not begin its line, so it cannot stand beside the pipeline as it was");
  ReplaceFrom = std::min(Cut.PragmaOff, F.lineStart(Cut.LoopOff));
  Lines Original;
  for (const Tile &T : M.Tiles)
    if (!T.DeclaredInBody)
      Original.push_back(mark("auto &" + T.Var->getName().str() + " = " + StageArray.at(T.Var) + "[0];"));
  Original.insert(Original.end(), Cut.Pragmas.begin(), Cut.Pragmas.end());
  for (const std::string &L : chunk(F.slice(Cut.LoopOff, Cut.LoopEnd), Base))
    Original.push_back(L);
  const bool A = Plan.ArchGuard, S = Plan.SmallLaunches, T = !Plan.TemplateGuard.empty();
  std::vector<std::string> Where;
  if (A)
    Where.push_back("below compute capability 8.0");
  if (S)
    Where.push_back("in launches that fill the GPU");
  if (T)
    Where.push_back("in instantiations tilepipe did not analyse");
  auto KeptFor = [&](llvm::ArrayRef<std::string> Where) {
    std::string Cases = Where.back();
    if (Where.size() > 1)
      Cases = llvm::join(Where.drop_back(), ", ") + " and " + Cases;
    std::string Kept = Base + mark("{ // tilepipe: " + Cases + ", the loop as it was") + "\n";
    for (const std::string &L : Original)
      Kept += L.empty() ? "\n" : L.front() == Verbatim ? L.substr(1) + "\n" : Base + Unit + L + "\n";
    return Kept + Base + mark("}");
  };
  const std::string Kept = KeptFor(Where);
  // In braces, so that the else binds where it is meant to whatever encloses the loop (an if without
  // braces would draw -Wdangling-else).
  std::string Text;
  if (S)
    Text += Base + mark("{ // tilepipe: the pipeline where the launch leaves the SMs mostly idle (at most " +
                        std::to_string(SmallLaunchWarpsPerSM) + " warps per SM)") + "\n";
  if (A)
    Text += mark("#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800") + "\n";
  if (T)
    Text += Base + mark("if constexpr (" + Plan.TemplateGuard + ") { // the instantiations tilepipe analysed") + "\n";
  if (S)
    Text += Base + mark(smallLaunchCondition()) + "\n";
  Text += Base + NewText + "\n";
  if (S)
    Text += Base + mark("else") + "\n";
  if (S && T)
    Text += KeptFor({"in launches that fill the GPU"}) + "\n";
  if (T)
    Text += Base + mark("} else") + "\n";
  if (A)
    Text += mark(S || T ? "#endif" : "#else") + "\n";
  NewText = Text + Kept;
  if (A && !S && !T)
    NewText += "\n" + mark("#endif");
  if (S)
    NewText += "\n" + Base + mark("}");
  // Code after the loop on its last line would otherwise become part of the #endif line: it
  // goes to a line of its own.
  if (Toks.codeFollowsOnLine(Cut.LoopEnd)) {
    NewText += "\n" + Base;
    while (ReplaceTo < F.Buffer.size() && (F.Buffer[ReplaceTo] == ' ' || F.Buffer[ReplaceTo] == '\t'))
      ++ReplaceTo;
  }
  return llvm::Error::success();
}

} // namespace tilepipe::emit
