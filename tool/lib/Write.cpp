// Write (Write.h): everything a run hands its users, from the FileResults alone: outputs written
// atomically (temp file, then rename), unified diffs, the JSON report and --stats-json, clang-tidy's
// --export-fixes YAML and SARIF 2.1.0 (whose regions count UTF-16 code units, SourceTexts). About
// 730 lines: the formats share the path and offset helpers, and each is short.
#include "tilepipe/Write.h"
#include "tilepipe/Audit.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/YAMLTraits.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace tilepipe {

namespace {
llvm::Error cannotWrite(const llvm::Twine &Path, const llvm::Twine &Why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 Path + ": error: cannot write: " + Why);
}

/// Writes to an open stream (stdout, stderr, a device or a fifo) and reports what failed, so that
/// the stream's own error never ends the program later.
llvm::Error writeStream(llvm::raw_fd_ostream &OS, llvm::StringRef Path, llvm::StringRef Content,
                        bool Close) {
  OS << Content;
  if (Close)
    OS.close();
  else
    OS.flush();
  if (std::error_code EC = OS.error()) {
    OS.clear_error();
    return cannotWrite(Path, EC.message());
  }
  return llvm::Error::success();
}

/// Whether S is the file behind descriptor FD.
bool isOpenAs(const llvm::sys::fs::file_status &S, int FD) {
  llvm::sys::fs::file_status Open;
  return !llvm::sys::fs::status(FD, Open) && llvm::sys::fs::equivalent(S, Open);
}
} // namespace

llvm::Error writeOutput(llvm::StringRef Path, llvm::StringRef Content, bool InPlace) {
  namespace fs = llvm::sys::fs;
  if (Path == "-")
    return writeStream(llvm::outs(), "<stdout>", Content, false);
  fs::file_status Status;
  if (std::error_code EC = fs::status(Path, Status, /*Follow=*/true)) {
    if (EC != std::errc::no_such_file_or_directory)
      return cannotWrite(Path, EC.message());
    fs::file_status Link;
    // Not there yet; or a symbolic link to a file not there yet, written through the link.
    Status = fs::file_status(fs::status(Path, Link, /*Follow=*/false) ? fs::file_type::file_not_found
                                                                      : fs::file_type::symlink_file);
  }
  // Our own stdout or stderr under another name (/dev/stdout, /proc/self/fd/1, the file stdout is
  // redirected to): written through the stream, after what it already holds.
  if (fs::exists(Status) && isOpenAs(Status, 1))
    return writeStream(llvm::outs(), Path, Content, false);
  if (fs::exists(Status) && isOpenAs(Status, 2))
    return writeStream(llvm::errs(), Path, Content, false);
  switch (Status.type()) {
  case fs::file_type::directory_file:
    return cannotWrite(Path, "it is a directory");
  case fs::file_type::regular_file:
  case fs::file_type::file_not_found:
    break;
  default: {
    // A device, a fifo, a socket, or a link to a file yet to be made: written where it is. A
    // rename would put a regular file in the place of the device.
    if (InPlace)
      return cannotWrite(Path, "not a regular file");
    std::error_code EC;
    llvm::raw_fd_ostream OS(Path, EC, fs::OF_None);
    if (EC)
      return cannotWrite(Path, EC.message());
    return writeStream(OS, Path, Content, true);
  }
  }
  // A regular file, or one that does not exist yet: written to a temporary file beside the file
  // itself (a symbolic link is followed, and stays a link) and renamed over it, so a failure
  // leaves the old file or the new one, never a mix.
  llvm::SmallString<256> Target(Path);
  if (fs::exists(Status)) {
    if (std::error_code EC = fs::real_path(Path, Target))
      return cannotWrite(Path, EC.message());
    if (InPlace) {
      // Root may write any file: the mode bits say whether the user meant it to change.
      if ((Status.permissions() & fs::all_write) == 0 ||
          fs::access(Target, fs::AccessMode::Write))
        return cannotWrite(Path, "the file is read-only; make it writable to rewrite it in place");
    }
  }
  auto Temp = fs::TempFile::create(Target + ".tilepipe-%%%%%%");
  if (!Temp) {
    std::string Why = llvm::errorToErrorCode(Temp.takeError()).message();
    llvm::StringRef Parent = llvm::sys::path::parent_path(Target);
    if (!Parent.empty() && !fs::is_directory(Parent))
      Why = "there is no folder " + Parent.str();
    return cannotWrite(Path, Why);
  }
  llvm::Error Written = [&] {
    llvm::raw_fd_ostream OS(Temp->FD, /*shouldClose=*/false);
    return writeStream(OS, Path, Content, false);
  }();
  if (Written) {
    // A temporary file that cannot be removed stays beside the target: that is worth saying too.
    if (llvm::Error Left = Temp->discard())
      return llvm::joinErrors(std::move(Written),
                              cannotWrite(Path, "the temporary file " + Temp->TmpName +
                                                    " is left behind: " + llvm::toString(std::move(Left))));
    return Written;
  }
  if (fs::exists(Status))
    (void)fs::setPermissions(Temp->FD, Status.permissions());
  if (llvm::Error E = Temp->keep(Target))
    return cannotWrite(Path, llvm::toString(std::move(E)));
  return llvm::Error::success();
}

namespace {
/// The text split into lines, each keeping its '\n'.
std::vector<llvm::StringRef> splitLines(llvm::StringRef Text) {
  std::vector<llvm::StringRef> Lines;
  while (!Text.empty()) {
    size_t NL = Text.find('\n');
    size_t Len = NL == llvm::StringRef::npos ? Text.size() : NL + 1;
    Lines.push_back(Text.take_front(Len));
    Text = Text.drop_front(Len);
  }
  return Lines;
}

unsigned lineOf(llvm::StringRef Text, unsigned Offset) {
  return Text.take_front(Offset).count('\n');
}
} // namespace

std::string unifiedDiff(const FileResult &R) {
  return unifiedDiff(R.Path, R.Original, R.Edits);
}

std::string unifiedDiff(llvm::StringRef Path, llvm::StringRef Original,
                        const clang::tooling::Replacements &Replacements) {
  // Each edit covers whole old lines [First, Last]; edits on touching lines merge into one change.
  struct Change {
    unsigned First, Last; // old lines, inclusive
    std::string NewText;  // replacement for those lines
  };
  llvm::StringRef Old = Original;
  std::vector<llvm::StringRef> OldLines = splitLines(Old);
  std::vector<unsigned> LineStart;
  for (unsigned I = 0, Off = 0; I < OldLines.size(); Off += OldLines[I].size(), ++I)
    LineStart.push_back(Off);
  auto StartOf = [&](unsigned L) { return L < LineStart.size() ? LineStart[L] : Old.size(); };
  std::vector<Change> Changes;
  std::vector<std::pair<unsigned, const clang::tooling::Replacement *>> Edits;
  for (const clang::tooling::Replacement &E : Replacements)
    Edits.push_back({E.getOffset(), &E});
  for (size_t I = 0; I < Edits.size();) {
    const auto *E = Edits[I].second;
    unsigned First = lineOf(Old, E->getOffset());
    unsigned EndOff = E->getOffset() + E->getLength();
    unsigned Last = E->getLength() ? lineOf(Old, EndOff - 1) : First;
    std::vector<const clang::tooling::Replacement *> Group{E};
    size_t J = I + 1;
    for (; J < Edits.size(); ++J) {
      unsigned F = lineOf(Old, Edits[J].second->getOffset());
      if (F > Last)
        break;
      const auto *N = Edits[J].second;
      Last = std::max(Last, N->getLength() ? lineOf(Old, N->getOffset() + N->getLength() - 1) : F);
      Group.push_back(N);
    }
    std::string New;
    unsigned Pos = StartOf(First);
    for (const auto *G : Group) {
      New += Old.slice(Pos, G->getOffset()).str();
      New += G->getReplacementText().str();
      Pos = G->getOffset() + G->getLength();
    }
    New += Old.slice(Pos, StartOf(Last + 1)).str();
    Changes.push_back({First, Last, New});
    I = J;
  }
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  if (Changes.empty())
    return Out;
  // Paths relative to the working folder where they lie under it, as patch -p1 and git apply expect.
  llvm::SmallString<256> Shown(Path), Cwd;
  if (!llvm::sys::fs::current_path(Cwd) && llvm::sys::path::is_absolute(Shown)) {
    Cwd += "/";
    llvm::sys::path::replace_path_prefix(Shown, Cwd, "");
  }
  std::string Name = llvm::sys::path::convert_to_slash(Shown);
  if (llvm::StringRef(Name).starts_with("/"))
    Name = Name.substr(1);
  // As git writes a name with a space: a tab after it, where patch stops reading the name.
  const char *End = llvm::StringRef(Name).contains(' ') ? "\t\n" : "\n";
  OS << "--- a/" << Name << End << "+++ b/" << Name << End;
  const unsigned Context = 3;
  int Delta = 0; // new line number minus old line number before the current change
  for (size_t I = 0; I < Changes.size();) {
    // A hunk: changes whose context windows touch.
    size_t J = I + 1;
    while (J < Changes.size() && Changes[J].First <= Changes[J - 1].Last + 1 + 2 * Context)
      ++J;
    unsigned From = Changes[I].First >= Context ? Changes[I].First - Context : 0;
    unsigned To = std::min<unsigned>(Changes[J - 1].Last + Context, OldLines.size() - 1);
    std::string Body;
    // One line of the hunk. The last line of a side that has no final newline gets its own line
    // and the marker after it, as GNU diff writes it: without them the next line of the hunk would
    // run on into it, and git apply and patch reject the whole diff.
    auto Add = [&](char Prefix, llvm::StringRef Line) {
      Body += Prefix;
      Body += Line.str();
      if (!Line.ends_with("\n"))
        Body += "\n\\ No newline at end of file\n";
    };
    unsigned OldCount = 0, NewCount = 0;
    int HunkDelta = Delta;
    unsigned L = From;
    for (size_t K = I; K < J; ++K) {
      for (; L < Changes[K].First; ++L, ++OldCount, ++NewCount)
        Add(' ', OldLines[L]);
      for (; L <= Changes[K].Last; ++L, ++OldCount)
        Add('-', OldLines[L]);
      std::vector<llvm::StringRef> NewLines = splitLines(Changes[K].NewText);
      for (llvm::StringRef N : NewLines)
        Add('+', N);
      NewCount += NewLines.size();
      Delta += static_cast<int>(NewLines.size()) - static_cast<int>(Changes[K].Last - Changes[K].First + 1);
    }
    for (; L <= To; ++L, ++OldCount, ++NewCount)
      Add(' ', OldLines[L]);
    OS << "@@ -" << From + 1 << "," << OldCount << " +" << static_cast<int>(From) + HunkDelta + 1
       << "," << NewCount << " @@\n"
       << Body;
    I = J;
  }
  return Out;
}

/// A loop's plan: kept or not, its stages, whether the original stays below compute capability
/// 8.0, and per tile the copy kind of the fastest path and of the cp.async loop.
static llvm::json::Object planJson(const LoopPlan &P, llvm::ArrayRef<std::string> Names) {
  llvm::json::Array Tiles;
  for (size_t I = 0; I < P.Tiles.size(); ++I) {
    const TilePlan &T = P.Tiles[I];
    llvm::json::Object O{{"tile", I < Names.size() ? Names[I] : std::string()},
                         {"copy_kind", copyKindName(T.Kind)},
                         {"cp_async", copyKindName(T.CpAsync)}};
    if (!T.MapName.empty())
      O["map"] = T.MapName;
    if (T.VectorBytes)
      O["vector_bytes"] = T.VectorBytes;
    Tiles.push_back(std::move(O));
  }
  return llvm::json::Object{{"choice", P.choice().str()},
                            {"source", P.Source},
                            {"keep", P.Keep.has_value()},
                            {"stages", P.Stages},
                            {"engine", P.Engine},
                            {"original_below_sm80", P.ArchGuard},
                            {"original_in_full_launches", P.SmallLaunches},
                            {"tiles", std::move(Tiles)}};
}

llvm::json::Value reportJson(llvm::ArrayRef<FileResult> Results) {
  llvm::json::Array Loops;
  for (const FileResult &R : Results)
    for (const LoopRecord &L : R.Loops) {
      llvm::json::Object O{{"file", L.File},           {"line", L.Line},
                           {"column", L.Column},       {"kernel", L.Kernel},
                           {"transformed", L.transformed()}, {"message", L.message()}};
      if (L.transformed()) {
        O["stages"] = L.Stages;
      } else {
        O["reason"] = reasonInfo(L.Code).Id;
        // Every blocker found, the first (reason, message) first: how far the loop is from a
        // rewrite.
        llvm::json::Array Blockers;
        for (const auto &[R, D] : L.blockers())
          Blockers.push_back(llvm::json::Object{{"reason", reasonInfo(R).Id}, {"detail", D}});
        O["blockers"] = std::move(Blockers);
      }
      if (L.Plan)
        O["plan"] = planJson(*L.Plan, L.Tiles);
      if (!L.Fingerprint.empty())
        O["fingerprint"] = L.Fingerprint;
      if (!L.Choices.empty()) {
        llvm::json::Array Choices;
        for (const PlanChoice &C : L.Choices)
          Choices.push_back(C.str());
        O["choices"] = std::move(Choices);
      }
      Loops.push_back(std::move(O));
    }
  // Every file, with its error where it failed (then it has no loops above).
  llvm::json::Array Files;
  for (const FileResult &R : Results) {
    llvm::json::Object F{{"file", R.Path}, {"ok", R.Ok}};
    if (!R.Ok)
      F["error"] = R.Error;
    Files.push_back(std::move(F));
  }
  return llvm::json::Object{{"tool", "tilepipe"}, {"version", 1}, {"files", std::move(Files)}, {"loops", std::move(Loops)}};
}

llvm::json::Value statsJson(llvm::ArrayRef<FileResult> Results) {
  int64_t Files = 0, Failed = 0, Loops = 0, Rewritten = 0, Builds = 0, Cached = 0;
  llvm::json::Object ByReason;
  std::map<std::string, int64_t> Counts, Blocked;
  std::map<size_t, int64_t> ByBlockerCount;
  for (const FileResult &R : Results) {
    ++Files;
    Failed += !R.Ok;
    Builds += R.LaunchBuilds;
    Cached += R.LaunchBuildsCached;
    for (const LoopRecord &L : R.Loops) {
      ++Loops;
      Rewritten += L.transformed();
      ++Counts[reasonInfo(L.Code).Id.str()];
      if (L.transformed())
        continue;
      // A loop counts once under each reason among its blockers.
      std::set<std::string> Ids;
      for (const auto &B : L.blockers())
        Ids.insert(reasonInfo(B.first).Id.str());
      for (const std::string &Id : Ids)
        ++Blocked[Id];
      ++ByBlockerCount[Ids.size()];
    }
  }
  for (auto &[Id, N] : Counts)
    ByReason[Id] = N;
  llvm::json::Object BlockedBy, BlockerCounts;
  for (auto &[Id, N] : Blocked)
    BlockedBy[Id] = N;
  for (auto &[K, N] : ByBlockerCount)
    BlockerCounts[std::to_string(K)] = N;
  return llvm::json::Object{{"files", Files},         {"failed", Failed},
                            {"loops", Loops},         {"rewritten", Rewritten},
                            {"refused", Loops - Rewritten}, {"by_reason", std::move(ByReason)},
                            {"blocked_by", std::move(BlockedBy)},
                            {"refused_by_blocker_count", std::move(BlockerCounts)},
                            {"launch_check", llvm::json::Object{{"builds", Builds},
                                                                {"cached", Cached}}}};
}

static std::string absolute(llvm::StringRef Path) {
  llvm::SmallString<256> P(Path);
  llvm::sys::fs::make_absolute(P);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
  return P.str().str();
}

/// The file a path names, whichever way it is spelled (relative, through '..' or a link).
static std::string identity(llvm::StringRef Path) {
  llvm::SmallString<256> Real;
  if (!llvm::sys::fs::real_path(Path, Real))
    return Real.str().str();
  return absolute(Path);
}

namespace {
/// The text of the files that results name (sources and headers as they were read, else as they
/// are on disk), with the lines and UTF-16 code units that SARIF counts in.
class SourceTexts {
public:
  struct Position {
    int64_t Line, Column, Offset; ///< 1-based line and column; Offset from the start of the file
  };
  class Text {
  public:
    explicit Text(std::string Content) : Content(std::move(Content)) {
      llvm::StringRef C = this->Content;
      Units.resize(C.size() + 1);
      LineStarts.push_back(0);
      unsigned U = 0;
      for (size_t I = 0; I < C.size();) {
        // One code point of UTF-8: 2 code units of UTF-16 when it takes 4 bytes, else 1. A byte
        // that starts no valid sequence counts as one (as its replacement character would).
        unsigned char B = C[I];
        size_t Len = B < 0x80 ? 1 : (B >> 5) == 6 ? 2 : (B >> 4) == 14 ? 3 : (B >> 3) == 30 ? 4 : 1;
        for (size_t K = 1; K < Len; ++K)
          if (I + K >= C.size() || (static_cast<unsigned char>(C[I + K]) >> 6) != 2)
            Len = 1;
        for (size_t K = 0; K < Len; ++K)
          Units[I + K] = U;
        U += Len == 4 ? 2 : 1;
        // Lines end in LF, CR LF or a lone CR, as Clang counts them.
        if (B == '\n' || (B == '\r' && (I + 1 == C.size() || C[I + 1] != '\n')))
          LineStarts.push_back(I + 1);
        I += Len;
      }
      Units[C.size()] = U;
    }
    /// The position of a byte offset, in UTF-16 code units.
    Position at(unsigned Byte) const {
      Byte = std::min<size_t>(Byte, Content.size());
      size_t Line = std::upper_bound(LineStarts.begin(), LineStarts.end(), Byte) - LineStarts.begin();
      return {int64_t(Line), int64_t(Units[Byte] - Units[LineStarts[Line - 1]]) + 1, int64_t(Units[Byte])};
    }
    /// The byte offset of a 1-based line and byte column (as Clang's presumed locations give them).
    unsigned offsetOf(unsigned Line, unsigned Column) const {
      if (Line == 0 || Line > LineStarts.size())
        return Content.size();
      return std::min<size_t>(LineStarts[Line - 1] + (Column ? Column - 1 : 0), Content.size());
    }
    /// A SARIF region of the bytes [Offset, Offset + Length): lines, columns, charOffset and
    /// charLength, all in UTF-16 code units.
    llvm::json::Object region(unsigned Offset, unsigned Length) const {
      Position B = at(Offset), E = at(Offset + Length);
      return llvm::json::Object{{"startLine", B.Line},      {"startColumn", B.Column},
                                {"endLine", E.Line},        {"endColumn", E.Column},
                                {"charOffset", B.Offset}, {"charLength", E.Offset - B.Offset}};
    }
    std::string Content;

  private:
    std::vector<unsigned> Units;      ///< by byte offset: the UTF-16 offset of its code point
    std::vector<size_t> LineStarts;   ///< byte offsets
  };

  explicit SourceTexts(llvm::ArrayRef<FileResult> Results) {
    for (const FileResult &R : Results) {
      Known.try_emplace(identity(R.Path), &R.Original);
      for (const HeaderRewrite &H : R.Headers)
        Known.try_emplace(identity(H.Path), &H.Original);
    }
  }
  /// The text of Path as tilepipe read it, or null when it cannot be had.
  const Text *get(llvm::StringRef Path) {
    std::string Id = identity(Path);
    auto [It, New] = Cache.try_emplace(Id);
    if (!New)
      return It->second.get();
    if (auto K = Known.find(Id); K != Known.end())
      It->second = std::make_unique<Text>(*K->second);
    else if (auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/true))
      It->second = std::make_unique<Text>((*Buf)->getBuffer().str());
    return It->second.get();
  }

private:
  std::map<std::string, const std::string *> Known;
  std::map<std::string, std::unique_ptr<Text>> Cache;
};

} // namespace

/// clang-tidy's export format of TU, as clang-apply-replacements reads it.
static std::string diagnosticsYaml(clang::tooling::TranslationUnitDiagnostics &TU) {
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  llvm::yaml::Output Y(OS);
  Y << TU;
  return Out;
}

std::string exportFixesYaml(llvm::ArrayRef<FileResult> Results, std::vector<std::string> &Errors) {
  clang::tooling::TranslationUnitDiagnostics TU;
  // Every edit written so far, by the file it changes (however its path is spelled): an edit asked
  // for again (a file given twice, a header two sources share) is written once, and one that
  // overlaps another differently (one file rewritten two ways) is an error, not a silent loss.
  struct Written {
    clang::tooling::Replacements All;
    std::set<std::tuple<unsigned, unsigned, std::string>> Seen;
    std::vector<std::pair<clang::tooling::Replacement, const LoopRecord *>> By;
  };
  std::map<std::string, Written> ByFile;
  for (const FileResult &R : Results) {
    if (!R.Ok)
      continue;
    if (TU.MainSourceFile.empty())
      TU.MainSourceFile = absolute(R.Path);
    for (const LoopRecord &L : R.Loops) {
      std::map<std::string, clang::tooling::Replacements> Trial; // by identity
      std::vector<std::pair<std::string, clang::tooling::Replacement>> Fresh;
      std::string Conflict;
      for (const clang::tooling::Replacement &E : L.Edits) {
        clang::tooling::Replacement Abs(absolute(E.getFilePath()), E.getOffset(), E.getLength(),
                                        E.getReplacementText());
        std::string Id = identity(E.getFilePath());
        Written &W = ByFile[Id];
        if (W.Seen.count({E.getOffset(), E.getLength(), E.getReplacementText().str()}))
          continue;
        auto It = Trial.try_emplace(Id, W.All).first;
        if (llvm::Error Err = It->second.add(Abs)) {
          // Replacements::add fails only on an overlap (a ReplacementError); the loop it overlaps,
          // where there is one, says more than the offsets the error names.
          std::string Overlap;
          llvm::handleAllErrors(std::move(Err), [&](const clang::tooling::ReplacementError &RE) {
            Overlap = RE.message();
          });
          const LoopRecord *Other = nullptr;
          for (auto &[Prev, Owner] : W.By)
            if (Prev.getOffset() <= E.getOffset() + E.getLength() &&
                E.getOffset() <= Prev.getOffset() + Prev.getLength())
              Other = Owner;
          Conflict = Other ? "this loop's rewrite conflicts with the one for " + location(*Other) +
                                 " (one file rewritten two ways: given twice with different "
                                 "compile commands, or through two paths)"
                           : "this loop's edits overlap each other (" + Overlap + ")";
          break;
        }
        Fresh.push_back({Id, Abs});
      }
      llvm::StringMap<clang::tooling::Replacements> Fixes;
      if (!Conflict.empty()) {
        Errors.push_back(location(L) + ": error: --export-fixes: " + Conflict + "; its fixes are left out");
      } else {
        for (auto &[Id, E] : Fresh) {
          Written &W = ByFile[Id];
          W.Seen.insert({E.getOffset(), E.getLength(), E.getReplacementText().str()});
          W.By.push_back({E, &L});
          llvm::cantFail(Fixes[E.getFilePath()].add(E));
        }
        for (auto &[Id, All] : Trial)
          ByFile[Id].All = std::move(All);
      }
      clang::tooling::DiagnosticMessage Msg(remarkText(L));
      Msg.FilePath = absolute(L.File);
      Msg.FileOffset = L.Offset;
      Msg.Fix = std::move(Fixes);
      TU.Diagnostics.emplace_back(("tilepipe-" + reasonInfo(L.Code).Id).str(), Msg,
                                  llvm::SmallVector<clang::tooling::DiagnosticMessage, 1>(),
                                  L.transformed() ? clang::tooling::Diagnostic::Warning
                                                  : clang::tooling::Diagnostic::Remark,
                                  "");
    }
  }
  return diagnosticsYaml(TU);
}

/// A SARIF artifact URI: the path as given, with forward slashes.
static std::string uriOf(llvm::StringRef Path) {
  std::string U = llvm::sys::path::convert_to_slash(Path);
  if (llvm::StringRef(U).starts_with("./"))
    U = U.substr(2);
  return U;
}

/// A result's property bag: a refused loop's blockers, every reason ID, the first first.
static llvm::json::Object sarifProperties(const LoopRecord &L) {
  llvm::json::Array Ids;
  for (const auto &B : L.blockers())
    Ids.push_back(reasonInfo(B.first).Id);
  return llvm::json::Object{{"blockers", std::move(Ids)}};
}

/// One rule per reason ID, the one table the rewrite and the audit share, and each ID's index.
static llvm::json::Array sarifRules(std::map<std::string, size_t> &RuleIndex) {
  llvm::json::Array Rules;
  for (const ReasonInfo &I : allReasons()) {
    RuleIndex[I.Id.str()] = Rules.size();
    bool Warning = I.Code == Reason::Pipelined || I.Id.starts_with("async-");
    Rules.push_back(llvm::json::Object{
        {"id", I.Id},
        {"shortDescription", llvm::json::Object{{"text", I.Message}}},
        {"defaultConfiguration", llvm::json::Object{{"level", Warning ? "warning" : "note"}}}});
  }
  return Rules;
}

/// The SARIF log around a run's results.
static llvm::json::Value sarifRun(llvm::json::Array Rules, llvm::json::Array Results, llvm::StringRef Version) {
  return llvm::json::Object{
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs", llvm::json::Array{llvm::json::Object{
                   {"tool", llvm::json::Object{{"driver", llvm::json::Object{{"name", "tilepipe"},
                                                                             {"version", Version},
                                                                             {"rules", std::move(Rules)}}}}},
                   {"columnKind", "utf16CodeUnits"},
                   {"results", std::move(Results)}}}}};
}

/// A fix of Edits, described by Description: one change per file they touch.
static llvm::json::Array sarifFixes(llvm::ArrayRef<clang::tooling::Replacement> Edits, llvm::StringRef Description,
                                    llvm::StringRef MainFile, SourceTexts &Texts) {
  std::vector<std::pair<std::string, llvm::json::Array>> Changes;
  for (const clang::tooling::Replacement &E : Edits) {
    std::string Uri = identity(E.getFilePath()) == identity(MainFile) ? uriOf(MainFile) : uriOf(E.getFilePath());
    auto It = llvm::find_if(Changes, [&](const auto &C) { return C.first == Uri; });
    if (It == Changes.end())
      It = Changes.insert(Changes.end(), {Uri, llvm::json::Array()});
    const SourceTexts::Text *T = Texts.get(E.getFilePath());
    It->second.push_back(llvm::json::Object{
        {"deletedRegion",
         T ? T->region(E.getOffset(), E.getLength())
           : llvm::json::Object{{"byteOffset", static_cast<int64_t>(E.getOffset())},
                                {"byteLength", static_cast<int64_t>(E.getLength())}}},
        {"insertedContent", llvm::json::Object{{"text", E.getReplacementText()}}}});
  }
  llvm::json::Array ArtifactChanges;
  for (auto &[Uri, Replacements] : Changes)
    ArtifactChanges.push_back(llvm::json::Object{{"artifactLocation", llvm::json::Object{{"uri", Uri}}},
                                                 {"replacements", std::move(Replacements)}});
  return llvm::json::Array{llvm::json::Object{{"description", llvm::json::Object{{"text", Description.str()}}},
                                              {"artifactChanges", std::move(ArtifactChanges)}}};
}

llvm::json::Value sarifLog(llvm::ArrayRef<FileResult> Results, llvm::StringRef Version) {
  llvm::json::Array Out;
  std::map<std::string, size_t> RuleIndex;
  llvm::json::Array Rules = sarifRules(RuleIndex);
  // Regions count in UTF-16 code units (columnKind utf16CodeUnits, which GitHub code scanning
  // reads), lines, columns and character offsets alike; tilepipe's own are bytes.
  SourceTexts Texts(Results);
  for (const FileResult &R : Results)
    for (const LoopRecord &L : R.Loops) {
      std::string Id = reasonInfo(L.Code).Id.str();
      llvm::json::Object Region;
      if (const SourceTexts::Text *T = Texts.get(L.File)) {
        // The loop keyword.
        llvm::StringRef Keyword = llvm::StringRef(T->Content).drop_front(L.Offset).take_while(
            [](char C) { return llvm::isAlnum(C) || C == '_'; });
        Region = T->region(L.Offset, Keyword.size());
      } else {
        Region = llvm::json::Object{{"startLine", static_cast<int64_t>(L.Line)}};
      }
      llvm::json::Object Result{
          {"ruleId", Id},
          {"ruleIndex", static_cast<int64_t>(RuleIndex[Id])},
          {"level", L.transformed() ? "warning" : "note"},
          {"message", llvm::json::Object{{"text", L.message() + " (kernel " + L.Kernel + ")"}}},
          {"locations",
           llvm::json::Array{llvm::json::Object{
               {"physicalLocation",
                llvm::json::Object{
                    {"artifactLocation", llvm::json::Object{{"uri", uriOf(L.File)}}},
                    {"region", std::move(Region)}}}}}}};
      if (!L.transformed())
        Result["properties"] = sarifProperties(L);
      // One change per file the edits touch (the loop's own, as a rule), named as the loop's
      // location names it where it is the same file; what the fix does is what the remark says.
      if (!L.Edits.empty())
        Result["fixes"] = sarifFixes(L.Edits, L.message(), L.File, Texts);
      Out.push_back(std::move(Result));
    }
  return sarifRun(std::move(Rules), std::move(Out), Version);
}

/// A SARIF location of a place (a 1-based line and byte column) in a file, with a message.
static llvm::json::Object sarifPlace(const Place &P, SourceTexts &Texts, std::optional<std::string> Message) {
  llvm::json::Object Region;
  if (const SourceTexts::Text *T = Texts.get(P.File))
    Region = T->region(T->offsetOf(P.Line, P.Column), 0);
  else
    Region = llvm::json::Object{{"startLine", static_cast<int64_t>(P.Line)}};
  llvm::json::Object L{{"physicalLocation",
                        llvm::json::Object{{"artifactLocation", llvm::json::Object{{"uri", uriOf(P.File)}}},
                                           {"region", std::move(Region)}}}};
  if (Message)
    L["message"] = llvm::json::Object{{"text", *Message}};
  return L;
}

llvm::json::Value auditSarifLog(llvm::ArrayRef<FileResult> Results, llvm::StringRef Version) {
  std::map<std::string, size_t> RuleIndex;
  llvm::json::Array Rules = sarifRules(RuleIndex), Out;
  SourceTexts Texts(Results);
  for (const FileResult &R : Results)
    for (const AuditFinding &F : R.Findings) {
      std::string Id = reasonInfo(F.Code).Id.str();
      llvm::json::Array Related;
      for (const auto &[P, Note] : F.Notes)
        Related.push_back(sarifPlace(P, Texts, Note));
      llvm::json::Object Result{{"ruleId", Id},
                                {"ruleIndex", static_cast<int64_t>(RuleIndex[Id])},
                                {"level", F.Remark ? "note" : "warning"},
                                {"message", llvm::json::Object{{"text", std::string(F.Detail)}}},
                                {"locations", llvm::json::Array{sarifPlace(F.At, Texts, std::nullopt)}}};
      if (!Related.empty())
        Result["relatedLocations"] = std::move(Related);
      if (!F.Fixes.empty())
        Result["fixes"] = sarifFixes(F.Fixes, F.Detail, F.At.File, Texts);
      Out.push_back(std::move(Result));
    }
  return sarifRun(std::move(Rules), std::move(Out), Version);
}

std::string auditExportFixesYaml(llvm::ArrayRef<FileResult> Results) {
  clang::tooling::TranslationUnitDiagnostics TU;
  SourceTexts Texts(Results);
  // A fix asked for twice (a header two sources include) is written once.
  std::set<std::tuple<std::string, unsigned, unsigned, std::string>> Seen;
  for (const FileResult &R : Results) {
    if (!R.Ok)
      continue;
    if (TU.MainSourceFile.empty())
      TU.MainSourceFile = absolute(R.Path);
    for (const AuditFinding &F : R.Findings) {
      if (F.Remark)
        continue; // clang-tidy's YAML has warnings and errors only; a remark has no fix
      llvm::StringMap<clang::tooling::Replacements> Fixes;
      for (const clang::tooling::Replacement &E : F.Fixes)
        if (Seen.insert({identity(E.getFilePath()), E.getOffset(), E.getLength(), E.getReplacementText().str()}).second)
          llvm::consumeError(Fixes[absolute(E.getFilePath())].add(clang::tooling::Replacement(
              absolute(E.getFilePath()), E.getOffset(), E.getLength(), E.getReplacementText())));
      clang::tooling::DiagnosticMessage Msg(F.Detail);
      Msg.FilePath = absolute(F.At.File);
      const SourceTexts::Text *T = Texts.get(F.At.File);
      Msg.FileOffset = T ? T->offsetOf(F.At.Line, F.At.Column) : 0;
      Msg.Fix = std::move(Fixes);
      TU.Diagnostics.emplace_back(("tilepipe-" + reasonInfo(F.Code).Id).str(), Msg,
                                  llvm::SmallVector<clang::tooling::DiagnosticMessage, 1>(),
                                  clang::tooling::Diagnostic::Warning, "");
    }
  }
  return diagnosticsYaml(TU);
}

} // namespace tilepipe
