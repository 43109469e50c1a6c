// UsageCache: the launch check's nvcc builds, kept so that a build whose inputs did not change is
// not run again (the way ccache's direct mode keeps compiles).
//
// A build is named by everything it reads that is not a file on disk: the nvcc command (its
// temporary folder and its include folders written as placeholders; its paths are absolute, so
// the working folder is not read), the texts written into that folder (the source, the runtime
// header, rewritten headers), the tools (nvcc and the programs beside it, the host compiler, by
// path, size and time of change), and the environment nvcc and the host compiler read. The entry
// under that name holds ptxas's report and what the build read from disk, as nvcc's own
// dependency list (-MD) gives it: every file, with a hash of its content. An entry is used only
// while
//  - every one of those files has the same content;
//  - every include folder the build read from, or in which a file an #include or a probe could
//    find exists, is the same folder (the others may be anywhere: the same sources copied to
//    another folder, whose own files they do not include, are answered);
//  - the files an #include or a __has_include probe could find are those that were there: for
//    each file read, each target of a probe (__has_include, and the macros whose definitions
//    name one, as _CCCL_HAS_INCLUDE), and each folder an #include may search (the include
//    folders and the folders of every file read), the paths that would name the same file
//    there. A new one, or one gone, makes the entry stale.
// A build that probes a name only its preprocessor knows (__has_include(MACRO)) is not kept.
// Anything unreadable is a miss, never a hit. The host compiler's own system folders are not
// searched for new files: they change with the tools (docs/legality.md, "The launch check").
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <atomic>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tilepipe {

class UsageCache {
public:
  /// Dir: the folder of the entries, made when first written; empty: nothing is kept.
  explicit UsageCache(std::string Dir = "") : Dir(std::move(Dir)) {}
  bool enabled() const { return !Dir.empty(); }
  const std::string &dir() const { return Dir; }

  /// The name of one build. Command is nvcc's command line, with absolute paths, the temporary
  /// folder TmpDir in it; Files are the (relative path, text) pairs written into TmpDir;
  /// SearchDirs are the include folders of the command outside TmpDir, as the command spells them.
  std::string key(llvm::ArrayRef<std::string> Command, llvm::StringRef TmpDir,
                  llvm::ArrayRef<std::pair<std::string, std::string>> Files,
                  llvm::ArrayRef<std::string> SearchDirs = {}) const;

  /// ptxas's report of the build named Key, if an entry is there and still valid. SearchDirs are
  /// the include folders of the command, outside its temporary folder.
  std::optional<std::string> lookup(llvm::StringRef Key,
                                    llvm::ArrayRef<std::string> SearchDirs) const;

  /// Keeps Report under Key. DepFile is the text of nvcc's -MF output; files in TmpDir are
  /// already in the key and are left out. Returns false (and keeps nothing) where a file of the
  /// list cannot be read or the entry cannot be written.
  bool store(llvm::StringRef Key, llvm::StringRef DepFile, llvm::StringRef TmpDir,
             llvm::ArrayRef<std::string> SearchDirs, llvm::StringRef Report) const;

  /// Builds run and builds answered from the cache, in this process.
  unsigned builds() const { return Builds; }
  unsigned hits() const { return Hits; }
  void countBuild() const { ++Builds; }
  void countHit() const { ++Hits; }

private:
  std::string Dir;
  mutable std::atomic<unsigned> Builds{0}, Hits{0};
};

/// The paths of a make-style dependency file's prerequisites (the target dropped), with "\ "
/// read as a space and line continuations as separators.
std::vector<std::string> parseDepFile(llvm::StringRef Text);

/// The names a translation unit's texts may probe with __has_include: the literal arguments of
/// __has_include, __has_include_next and of every macro whose #define names one of them (to a
/// fixed point). Nothing where a probe's argument is not a literal header name outside a #define.
std::optional<std::set<std::string>> includeProbes(llvm::ArrayRef<llvm::StringRef> Texts);

/// The default folder: $TILEPIPE_CACHE_DIR, else tilepipe/launch-check under the user's cache
/// folder ($XDG_CACHE_HOME or ~/.cache); empty where there is none.
std::string defaultCacheDir();

} // namespace tilepipe
