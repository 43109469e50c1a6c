// The command line of the tilepipe program: its options, read and checked. (The clang-tidy module
// has options of its own; these are the program's alone.)
#pragma once
#include "tilepipe/Driver.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "llvm/ADT/Twine.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tilepipe {

/// The options of `tilepipe verify`.
struct VerifyRequest {
  std::string SpecPath;  ///< the launch spec; empty: <file>.tilepipe.yaml beside the source
  std::string BundleDir; ///< write the bundle here and stop; empty: a new folder, and run it
  std::optional<double> Tolerance; ///< when given; otherwise the spec's
  bool Sanitize = false;
  unsigned Runs = 3;
};

/// What the command line asks for, checked: the files, how to rewrite them, where outputs go.
struct CommandLine {
  bool Verify = false; ///< `tilepipe verify ...`
  bool Audit = false;  ///< `tilepipe audit ...`
  VerifyRequest VerifyOpts;
  std::vector<std::string> Sources;
  ToolOptions Tool;
  unsigned Jobs = 1;
  std::string Output; ///< -o
  bool InPlace = false, Diff = false, Quiet = false, RequireAll = false;
  std::string Report, StatsJson, ExportFixes, Sarif, Depfile; ///< empty: not written

  /// The compile commands: the project's (-p without sources), or the parser's.
  const clang::tooling::CompilationDatabase &db() const {
    return ProjectDB ? *ProjectDB : Parser->getCompilations();
  }
  std::unique_ptr<clang::tooling::CommonOptionsParser> Parser;
  std::unique_ptr<clang::tooling::CompilationDatabase> ProjectDB;
};

/// Reads and checks the command line; on an error prints it and returns nothing (exit status 1).
/// --help and --version print and exit here.
std::optional<CommandLine> parseCommandLine(int argc, const char **argv);

/// Prints "tilepipe: error: <Message>"; returns 1, the exit status.
int fail(const llvm::Twine &Message);

} // namespace tilepipe
