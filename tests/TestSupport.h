// Helpers shared by the tests: run the library on snippets and files, run the program, find tools.
#pragma once
#include "tilepipe/Driver.h"
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tilepipe::test {

/// The source tree (testdata/, generated/, README.md).
std::string sourceDir();
/// Options as the program would build them by default (CUDA found the usual way).
ToolOptions defaultOptions();
/// Runs the library on a file with no extra compiler arguments.
FileResult runOnFile(const std::string &Path, const ToolOptions &Opts = defaultOptions());
/// Writes Code to a fresh .cu file and runs the library on it.
FileResult runOnCode(const std::string &Code, const ToolOptions &Opts = defaultOptions());
/// A fresh temporary folder, removed with everything in it when the test program ends.
std::string tempDir();
std::string readFile(const std::string &Path);
void writeFile(const std::string &Path, const std::string &Text);

struct ProcessResult {
  int ExitCode = -1;
  std::string Out, Err;
};
/// Runs a program (searched on PATH when not a path) with arguments, in Dir when given.
ProcessResult runProgram(const std::string &Program, const std::vector<std::string> &Args,
                         const std::string &Dir = "");
ProcessResult runTilepipe(const std::vector<std::string> &Args, const std::string &Dir = "");
/// Path of a program on PATH (or under the CUDA toolkit for nvcc/cuobjdump), or "".
std::string findTool(const std::string &Name);
/// An LLVM 22 tool (`clang-tidy`, `clang-apply-replacements`): `<Name>-22` on PATH, else Debian's
/// /usr/lib/llvm-22/bin/<Name>, or "".
std::string llvmTool(const std::string &Name);
/// (line, id) of every `// EXPECT-AUDIT: id` comment of Text, for the line after it.
std::set<std::pair<unsigned, std::string>> auditExpectations(const std::string &Text);

/// Loop I's copy kinds by tile, read from the JSON report (`plan.tiles[]`): `copy_kind` (the
/// fastest path's: "tensor", "bulk", "16-byte", "per-element"), or with CpAsync the cp.async
/// loop's `cp_async`. Empty when the loop has no plan. Tests learn a copy kind here, never from a
/// remark's words.
std::map<std::string, std::string> reportedCopyKinds(const FileResult &R, size_t I = 0,
                                                     bool CpAsync = false);
/// Whether any tile of a rewritten loop of R is reported with copy kind Kind ("tensor", "bulk", ...).
bool reportsCopyKind(const FileResult &R, const std::string &Kind, bool CpAsync = false);

/// Text with every run of whitespace (newlines and indentation too) made one space: for finding
/// emitted code whatever its layout.
std::string squeezed(const std::string &Text);

/// The .cu files of a folder of the source tree ("testdata", "tests/lit"), by file name, sorted.
std::vector<std::string> cudaFilesIn(const std::string &Folder);
/// testdata/*.cu, by file name.
std::vector<std::string> testdataNames();

} // namespace tilepipe::test
