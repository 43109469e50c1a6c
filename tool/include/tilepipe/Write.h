// Write: files (atomically), unified diffs, and the JSON report.
#pragma once
#include "tilepipe/Result.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace tilepipe {

/// Writes Content to Path; every file the tool writes goes through here. A regular file (or a
/// path where nothing is yet) is written to a temporary file beside it and renamed over it, so a
/// failure leaves either the old file or the new one, never a mix; a symbolic link is followed
/// (the file it names is replaced, the link stays), and an existing file keeps its permissions.
/// Anything else (a device such as /dev/full or /dev/null, a fifo) is written directly, and
/// stdout or stderr under any name ("-", /dev/stdout, the file stdout is redirected to) through
/// the program's own stream. Every failure (ENOSPC included) is an error "<path>: error: cannot
/// write: <why>". InPlace: Path is a source being rewritten, which must be a regular file and,
/// by its mode bits, writable (checked even for root).
llvm::Error writeOutput(llvm::StringRef Path, llvm::StringRef Content, bool InPlace = false);

/// A unified diff (3 lines of context) of the edits of one file, with a/ and b/ path prefixes.
std::string unifiedDiff(const FileResult &R);
std::string unifiedDiff(llvm::StringRef Path, llvm::StringRef Original,
                        const clang::tooling::Replacements &Edits);

/// Per loop: file, line, column, kernel, transformed, reason, message, stages.
llvm::json::Value reportJson(llvm::ArrayRef<FileResult> Results);

/// files, failed, loops, rewritten, refused, by_reason.
llvm::json::Value statsJson(llvm::ArrayRef<FileResult> Results);

/// clang-tidy's export format (TranslationUnitDiagnostics): one diagnostic per candidate loop,
/// the rewrites as replacements, for clang-apply-replacements and review bots. An edit asked for
/// twice (one file given twice) is written once; a loop whose edits overlap edits written before
/// differently (one file rewritten two ways) keeps its diagnostic without fixes, and Errors gets
/// "file:line:col: error: ..." for it.
std::string exportFixesYaml(llvm::ArrayRef<FileResult> Results, std::vector<std::string> &Errors);

/// SARIF 2.1.0: one rule per reason ID, one result per candidate loop (its region the loop
/// keyword), rewrites as fixes. Every region has startLine, startColumn, endLine, endColumn,
/// charOffset and charLength in UTF-16 code units (columnKind utf16CodeUnits).
llvm::json::Value sarifLog(llvm::ArrayRef<FileResult> Results, llvm::StringRef Version);

/// `tilepipe audit --sarif`: one result per finding (a warning), its notes as related locations, its
/// fix where it has one; the rules are the one reason table's.
llvm::json::Value auditSarifLog(llvm::ArrayRef<FileResult> Results, llvm::StringRef Version);

/// `tilepipe audit --export-fixes`: clang-tidy's YAML, one diagnostic per finding
/// (`tilepipe-<id>`), with its fix where it has one (each fix once).
std::string auditExportFixesYaml(llvm::ArrayRef<FileResult> Results);

} // namespace tilepipe
