// Parse facts: which text of a translation unit depends on the compute capability it is compiled
// for. tilepipe parses a file once, for one GPU architecture (--gpu-arch), but the rewrite runs on
// several: the cp.async path on compute capability 8.x, tensor copies on 9.0 and newer. Text that a
// `#if __CUDA_ARCH__ ...` selects, or a macro defined under one, may hold stores or exits the
// analysis never saw. Loops whose code (or code they call, or that calls them) has such text are
// refused with `arch-dependent` (docs/legality.md, obligation P1).
#pragma once
#include "clang/AST/ASTContext.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/Error.h"
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace tilepipe {

class TranslationUnitIndex;

struct ArchDependence {
  /// A place in a file, by the file's name as the parse saw it and a byte offset.
  struct Place {
    std::string File;
    unsigned Offset = 0;
  };
  /// A conditional (#if ... #endif) whose outcome depends on the architecture: its condition
  /// reads __CUDA_ARCH__ (or a macro that does, or one defined under such a conditional).
  struct Region {
    std::string File;
    unsigned Begin = 0, End = 0; ///< the #if and the #endif
    unsigned Line = 0;           ///< of the #if
  };
  std::vector<Region> Regions;
  /// Expansions, outside directives, of the macros in Names (file locations).
  std::vector<std::pair<std::string, Place>> Expansions;
  /// Macros whose meaning depends on the architecture: the __CUDA_ARCH__ family, and every macro
  /// defined or undefined inside a Region (where the parse took it or skipped it).
  std::set<std::string> Names;
  /// Expansions of __COUNTER__ and __LINE__, directly or inside a macro, by the file place of the
  /// outermost expansion: their values change where the rewrite moves or repeats the text.
  std::vector<std::pair<std::string, Place>> Counting;
  /// The collector saw the whole translation unit.
  bool Complete = false;

  /// The errors of the device parse, which Clang recovered from (a file nvcc builds can hold
  /// text Clang rejects): where each is (its file place, outside macros) and what it says. The
  /// loops whose analysis could read the text they are in are refused (parseErrorReach).
  struct ParseError {
    Place At;
    unsigned Line = 0, Column = 0;
    std::string Message;
  };
  std::vector<ParseError> ParseErrors;

  /// What nvcc's host pass reads that the device parse did not (the file preprocessed again with
  /// --cuda-host-only). The host pass launches the kernels, with its own text and its own macros.
  /// Every macro it defines: the rewrite's names must avoid them too.
  std::set<std::string> HostMacros;
  /// The identifiers of the user's text that only the host pass reads: text the device parse
  /// skipped (`#ifndef __CUDA_ARCH__`) or files it never opened, by name, each at its first place;
  /// and places where a macro expands to another definition than in the device parse.
  std::map<std::string, Place> HostOnlyNames;
  std::vector<Place> HostRedefined;
  /// Every launch `f<<<...>>>` of user text as the host pass reads it (after its macros): the
  /// name before `<<<` (template arguments skipped), and whether its configuration asks for
  /// dynamic shared memory other than a literal 0. The values the device parse computes for a
  /// launch (a constexpr, a type's size, the overload or namespace it names) may differ there.
  struct Launch {
    std::string Callee;
    bool Dynamic = false;
    std::string Smem; ///< the dynamic shared memory argument's tokens
    Place At;
  };
  std::vector<Launch> HostLaunches;
  /// A `#line` directive (or line marker) that the passes do not all read: in text one of them
  /// skips, or under a conditional on the architecture. Where the rewrite writes `#line`, the
  /// numbers could not be right in every pass. "file:line", or "".
  std::string PassDependentLine;
  std::vector<Region> HostSkipped;
  /// Whether the host pass read the user's text as the device parse did: the same text skipped,
  /// no macro expanding to another definition. Then a name in a launch means in the host pass
  /// what the parse resolved it to; else only its spelling is known.
  bool SameUserText = false;
  /// Filled by the collectors of the device parse (files and skipped text, user files only, and
  /// which definition each expansion took, by file, offset and macro: a macro's body expands
  /// others at the same place), for the host pass to compare with.
  std::set<std::string> DeviceFiles;
  std::vector<Region> DeviceSkipped;
  std::map<std::tuple<std::string, unsigned, std::string>, std::string> DeviceExpansions;
};

/// Callbacks that fill Out with the device pass's facts while PP preprocesses, during the parse
/// itself (processFile's, clang-tidy's); Out must outlive the preprocessor.
std::unique_ptr<clang::PPCallbacks> archDependenceCollector(clang::Preprocessor &PP,
                                                            ArchDependence &Out);

/// nvcc's host pass: Path preprocessed again as the host compiler reads it (its compile command
/// in DB, adjusted as the parse is, --cuda-host-only), on a thread of its own that starts here, so
/// that it runs beside the device parse. DB must outlive it.
class HostPass {
public:
  HostPass(const clang::tooling::CompilationDatabase &DB, std::string Path, std::vector<std::string> ParseArgs);
  ~HostPass(); ///< waits for the thread
  /// Waits for the host pass and compares it with the device facts in Out, which the parse
  /// collected to the end of the file (an error otherwise: a fact not collected is not "no
  /// problem"); the host pass's facts go into Out. Once.
  llvm::Error finish(ArchDependence &Out);

private:
  struct State;
  std::unique_ptr<State> S;
};

/// Why the loop's text cannot be moved or repeated as it is: it expands __COUNTER__ or __LINE__.
std::string movedTextCounts(clang::ASTContext &Ctx, const ArchDependence &Arch, const clang::Stmt *Loop);

/// The functions the analysis of a loop in Start may read: Start, its callers (transitively), and
/// everything any of them calls (transitively), templates' patterns too; system headers' apart.
/// A caller in host code (a function that launches the kernel) adds its own text only, not the
/// other kernels and functions it calls: they run apart from Start's kernel.
std::vector<const clang::FunctionDecl *> functionsReadWith(clang::ASTContext &Ctx, const TranslationUnitIndex &Index,
                                                           const clang::FunctionDecl *Start);

/// What parseErrorReach reads of the whole translation unit (every function's range of text, what
/// Clang made of each name), gathered on first use and kept for the other loops of one parse.
class ParseErrorFacts {
public:
  ParseErrorFacts();
  ~ParseErrorFacts();
  struct Impl;
  std::unique_ptr<Impl> P;
};

/// Why a parse error (Arch.ParseErrors) could change what the analysis of a loop in FD reads:
/// it is in one of functionsReadWith(FD), outside every function, or in a function whose text
/// names one of them; empty when none can. Facts: of this parse (Ctx), for every loop of it.
std::string parseErrorReach(clang::ASTContext &Ctx, const TranslationUnitIndex &Index,
                            const ArchDependence &Arch, const clang::FunctionDecl *FD, ParseErrorFacts &Facts);

/// Why the text of FD, of the functions it calls, or of those that call it, can differ between
/// architectures; empty when it cannot. Functions in system headers (the toolkit's) are taken to
/// mean the same on every architecture.
std::string archDependentText(clang::ASTContext &Ctx, const TranslationUnitIndex &Index,
                              const ArchDependence &Arch, const clang::FunctionDecl *FD);

} // namespace tilepipe
