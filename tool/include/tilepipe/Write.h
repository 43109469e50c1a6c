// Write: files (atomically), unified diffs, and the JSON report.
#pragma once
#include "tilepipe/Driver.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace tilepipe {

/// Writes Content to Path through a temporary file in the same folder and a rename, so a failure
/// leaves either the old file or the new one, never a mix. An existing file keeps its permissions.
llvm::Error writeAtomically(llvm::StringRef Path, llvm::StringRef Content);

/// A unified diff (3 lines of context) of the edits of one file, with a/ and b/ path prefixes.
std::string unifiedDiff(const FileResult &R);

/// Per loop: file, line, column, kernel, transformed, reason, message, stages.
llvm::json::Value reportJson(llvm::ArrayRef<FileResult> Results);

} // namespace tilepipe
