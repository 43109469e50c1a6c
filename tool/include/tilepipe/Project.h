// Project: many files through the driver in one run, and what their results share. A user header
// included by several files is rewritten once, its loops are reported once, and so are the
// warnings its files find in it.
#pragma once
#include "tilepipe/Result.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tilepipe {

struct ToolOptions; // Driver.h: processFiles runs the driver, the rest reads its results

/// processFile for every source, Jobs files at a time on LLVM's thread pool (a Jobs of 0: one
/// per core); the results in the order of Sources. A file that fails has its error printed to
/// Log when it is done; with Progress, Log shows the line "[done/total] file", redrawn as each
/// file is done (for a terminal).
std::vector<FileResult> processFiles(const clang::tooling::CompilationDatabase &DB,
                                     const std::vector<std::string> &Sources,
                                     const ToolOptions &Opts, unsigned Jobs, bool Progress,
                                     llvm::raw_ostream &Log);

/// The user headers of a run, each once.
struct MergedHeaders {
  /// By real path: the first rewrite asked for (pointing into the results merged).
  std::map<std::string, const HeaderRewrite *> Headers;
  /// Headers that the files including them would rewrite differently: left alone.
  std::set<std::string> Conflicts;
  /// One "<path>: error: ..." line per conflict.
  std::vector<std::string> Errors;
};

/// A header included by several files is rewritten once: every file that rewrites it must ask for
/// the same text, or it is left alone. Each header loop stays in the first result that reports it;
/// a loop of a header left alone is reported as left alone.
MergedHeaders mergeHeaders(std::vector<FileResult> &Results);

/// Every warning of the run once, in order: a header's are found by every file that includes it.
std::vector<std::string> distinctWarnings(const std::vector<FileResult> &Results);

/// The names of Kernels (ToolOptions::Kernels) that no file of the run found, each once.
std::vector<std::string> unmatchedKernels(const std::vector<FileResult> &Results,
                                          const std::vector<std::string> &Kernels);

} // namespace tilepipe
