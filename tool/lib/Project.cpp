#include "tilepipe/Project.h"
#include "tilepipe/Driver.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include <mutex>
#include <tuple>

using namespace llvm;

namespace tilepipe {

std::vector<FileResult> processFiles(const clang::tooling::CompilationDatabase &DB,
                                     const std::vector<std::string> &Sources,
                                     const ToolOptions &Opts, unsigned Jobs, bool Progress,
                                     raw_ostream &Log) {
  std::vector<FileResult> Results(Sources.size());
  // -j 0: one thread per core.
  DefaultThreadPool Pool(Jobs ? hardware_concurrency(Jobs) : hardware_concurrency());
  std::mutex Lock;
  unsigned Done = 0;
  for (size_t I = 0; I < Sources.size(); ++I)
    Pool.async([&, I] {
      FileResult R = processFile(DB, Sources[I], Opts);
      std::lock_guard<std::mutex> Guard(Lock);
      if (Progress)
        Log << "\r\x1b[K[" << ++Done << "/" << Sources.size() << "] " << Sources[I];
      if (!R.Ok)
        Log << (Progress ? "\n" : "") << R.Error << "\n";
      Results[I] = std::move(R);
    });
  Pool.wait();
  if (Progress)
    Log << "\n";
  return Results;
}

MergedHeaders mergeHeaders(std::vector<FileResult> &Results) {
  MergedHeaders Out;
  for (const FileResult &R : Results)
    for (const HeaderRewrite &H : R.Headers) {
      auto [It, New] = Out.Headers.try_emplace(H.Path, &H);
      if (!New && It->second->Rewritten != H.Rewritten && Out.Conflicts.insert(H.Path).second)
        Out.Errors.push_back(H.Path + ": error: the files that include it would rewrite it "
                                      "differently (a loop is rewritten for one and refused for "
                                      "another); the header is left alone");
    }
  // Each header loop once; a header left alone reports its loops as such.
  std::set<std::tuple<std::string, unsigned, unsigned>> Seen;
  for (FileResult &R : Results) {
    std::vector<LoopRecord> Kept;
    for (LoopRecord &L : R.Loops) {
      SmallString<256> Real(realPathIn(R.Directory, L.File));
      if (L.File != R.Path && !Seen.insert({Real.str().str(), L.Line, L.Column}).second)
        continue;
      if (Out.Conflicts.count(Real.str().str()) && L.transformed()) {
        L.Code = Reason::Unsupported;
        L.Detail = "the files that include this header disagree on its rewrite";
        L.Edits.clear();
      }
      Kept.push_back(std::move(L));
    }
    R.Loops = std::move(Kept);
  }
  return Out;
}

std::vector<std::string> distinctWarnings(const std::vector<FileResult> &Results) {
  std::set<std::string> Shown;
  std::vector<std::string> Out;
  for (const FileResult &R : Results)
    for (const std::string &W : R.Warnings)
      if (Shown.insert(W).second)
        Out.push_back(W);
  return Out;
}

std::vector<std::string> unmatchedKernels(const std::vector<FileResult> &Results,
                                          const std::vector<std::string> &Kernels) {
  std::set<std::string> Found, Named;
  for (const FileResult &R : Results)
    Found.insert(R.KernelsFound.begin(), R.KernelsFound.end());
  std::vector<std::string> Out;
  for (const std::string &K : Kernels)
    if (!Found.count(K) && Named.insert(K).second)
      Out.push_back(K);
  return Out;
}

} // namespace tilepipe
