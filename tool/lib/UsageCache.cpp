#include "tilepipe/UsageCache.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/CachePruning.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <set>

namespace tilepipe {

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;
using llvm::StringRef;

/// The entry format; a change of it makes every older entry a miss.
static constexpr StringRef Format = "tilepipe-usage-cache 2";
static constexpr StringRef EntryPrefix = "llvmcache-tilepipe-"; // pruneCache keeps to "llvmcache-"

std::string defaultCacheDir() {
  if (std::optional<std::string> Env = llvm::sys::Process::GetEnv("TILEPIPE_CACHE_DIR"))
    return *Env;
  llvm::SmallString<256> Dir;
  if (!path::cache_directory(Dir))
    return "";
  path::append(Dir, "tilepipe", "launch-check");
  return Dir.str().str();
}

std::vector<std::string> parseDepFile(StringRef Text) {
  std::vector<std::string> Tokens;
  std::string Cur;
  auto Flush = [&] {
    if (!Cur.empty())
      Tokens.push_back(std::move(Cur));
    Cur.clear();
  };
  for (size_t I = 0; I < Text.size(); ++I) {
    char C = Text[I];
    if (C == '\\' && I + 1 < Text.size() && (Text[I + 1] == '\n' || Text[I + 1] == '\r')) {
      Flush();
      ++I;
    } else if (C == '\\' && I + 1 < Text.size() && Text[I + 1] == ' ') {
      Cur += ' ';
      ++I;
    } else if (C == '$' && I + 1 < Text.size() && Text[I + 1] == '$') {
      Cur += '$';
      ++I;
    } else if (C == ' ' || C == '\t' || C == '\n' || C == '\r') {
      Flush();
    } else {
      Cur += C;
    }
  }
  Flush();
  // The target: every token up to the one that is or ends in ':'.
  std::vector<std::string> Deps;
  bool InDeps = false;
  for (std::string &T : Tokens) {
    if (InDeps) {
      Deps.push_back(std::move(T));
    } else if (StringRef(T).ends_with(":")) {
      InDeps = true;
    }
  }
  return Deps;
}

namespace {

std::string hexOf(llvm::ArrayRef<uint8_t> Bytes) { return llvm::toHex(Bytes, /*LowerCase=*/true); }

/// The hash of a file's content; nothing where it cannot be read.
std::optional<std::string> contentHash(StringRef File) {
  auto Buf = llvm::MemoryBuffer::getFile(File, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return std::nullopt;
  llvm::BLAKE3 H;
  H.update((*Buf)->getBuffer());
  auto Out = H.final();
  return hexOf(Out);
}

/// A tool as nvcc finds it: its real path, size and time of change ("" where it is not there).
std::string toolIdentity(StringRef Program) {
  llvm::SmallString<256> Real;
  if (fs::real_path(Program, Real))
    return "missing " + Program.str();
  fs::file_status St;
  if (fs::status(Real, St))
    return "missing " + Real.str().str();
  return (Real + " " + std::to_string(St.getSize()) + " " +
          std::to_string(St.getLastModificationTime().time_since_epoch().count()))
      .str();
}

std::string absolute(StringRef P) {
  llvm::SmallString<256> A(P);
  fs::make_absolute(A);
  path::remove_dots(A, /*remove_dot_dot=*/true);
  return A.str().str();
}

/// P as the preprocessor spells it: absolute, its ".." kept (through a symbolic link "a/.."
/// is not the folder "a" is in).
std::string spelled(StringRef P) {
  llvm::SmallString<256> A(P);
  fs::make_absolute(A);
  return A.str().str();
}

/// Whether P names something inside the folder Dir, as spelled.
bool under(StringRef P, StringRef Dir) {
  Dir = Dir.rtrim('/');
  return P.size() > Dir.size() && P.starts_with(Dir) && path::is_separator(P[Dir.size()]);
}

bool isIdentChar(char C) { return llvm::isAlnum(C) || C == '_'; }

/// The start of every occurrence of Name in Text as a whole identifier.
std::vector<size_t> identifierAt(StringRef Text, StringRef Name) {
  std::vector<size_t> Out;
  for (size_t Pos = Text.find(Name); Pos != StringRef::npos; Pos = Text.find(Name, Pos + 1)) {
    size_t End = Pos + Name.size();
    if ((Pos == 0 || !isIdentChar(Text[Pos - 1])) && (End == Text.size() || !isIdentChar(Text[End])))
      Out.push_back(Pos);
  }
  return Out;
}

/// The logical line (continuations joined) around Pos: [begin, end).
std::pair<size_t, size_t> logicalLine(StringRef Text, size_t Pos) {
  auto Continues = [&](size_t LineEnd) { return Text.take_front(LineEnd).rtrim('\r').ends_with("\\"); };
  size_t Nl = Text.rfind('\n', Pos);
  size_t B = Nl == StringRef::npos ? 0 : Nl + 1;
  while (B > 0 && Continues(B - 1)) {
    size_t Prev = B >= 2 ? Text.rfind('\n', B - 2) : StringRef::npos;
    B = Prev == StringRef::npos ? 0 : Prev + 1;
  }
  size_t E = Text.find('\n', Pos);
  while (E != StringRef::npos && Continues(E))
    E = Text.find('\n', E + 1);
  return {B, E == StringRef::npos ? Text.size() : E};
}

/// The macro a #define line defines, or "" where the line is not a #define.
StringRef definedName(StringRef Line) {
  Line = Line.ltrim();
  if (!Line.consume_front("#"))
    return "";
  Line = Line.ltrim();
  if (!Line.consume_front("define"))
    return "";
  if (Line.empty() || !llvm::isSpace(Line.front()))
    return "";
  Line = Line.ltrim();
  size_t N = 0;
  while (N < Line.size() && isIdentChar(Line[N]))
    ++N;
  return Line.take_front(N);
}

} // namespace

std::optional<std::set<std::string>> includeProbes(llvm::ArrayRef<StringRef> Texts) {
  // The probes and the macros that stand for one, to a fixed point: a #define whose line names
  // a probe is a probe itself (_CCCL_HAS_INCLUDE(x) is __has_include(x)).
  std::set<std::string> Probes{"__has_include", "__has_include_next"};
  for (bool Grew = true; Grew;) {
    Grew = false;
    for (StringRef Text : Texts)
      for (const std::string &P : std::set<std::string>(Probes))
        for (size_t Pos : identifierAt(Text, P)) {
          auto [B, E] = logicalLine(Text, Pos);
          StringRef Name = definedName(Text.slice(B, E));
          if (!Name.empty() && Probes.insert(Name.str()).second)
            Grew = true;
        }
  }
  std::set<std::string> Targets;
  for (StringRef Text : Texts)
    for (const std::string &P : Probes)
      for (size_t Pos : identifierAt(Text, P)) {
        StringRef Rest = Text.drop_front(Pos + P.size()).ltrim(" \t");
        if (!Rest.consume_front("("))
          continue; // `#ifdef __has_include`, an object-like stand-in used in #if, a comment
        Rest = Rest.ltrim(" \t");
        char Close = Rest.starts_with("<") ? '>' : Rest.starts_with("\"") ? '"' : 0;
        size_t End = Close ? Rest.find_first_of(StringRef(&Close, 1), 1) : StringRef::npos;
        if (Close && End != StringRef::npos && !Rest.slice(1, End).contains('\n')) {
          Targets.insert(Rest.slice(1, End).str());
          continue;
        }
        // A name the macro's parameter holds: its uses are probes of their own. Anything else
        // probes a name this reading cannot know.
        auto [B, E] = logicalLine(Text, Pos);
        if (definedName(Text.slice(B, E)).empty())
          return std::nullopt;
      }
  return Targets;
}

namespace {

/// Whether Dir/Rel names something, read from listings of folders kept for one check.
class Listings {
public:
  bool exists(StringRef Dir, llvm::ArrayRef<StringRef> Rel) {
    std::string Cur = Dir.str();
    for (size_t I = 0; I < Rel.size(); ++I) {
      const llvm::StringSet<> *L = listing(Cur);
      if (!L || !L->contains(Rel[I]))
        return false;
      llvm::SmallString<256> Next(Cur);
      path::append(Next, Rel[I]);
      Cur = Next.str().str();
    }
    return true;
  }

private:
  std::map<std::string, std::optional<llvm::StringSet<>>> Cache;
  const llvm::StringSet<> *listing(const std::string &Dir) {
    auto [It, New] = Cache.try_emplace(Dir);
    if (New) {
      std::error_code EC;
      fs::directory_iterator DI(Dir, EC), End;
      if (!EC) {
        It->second.emplace();
        for (; DI != End && !EC; DI.increment(EC))
          It->second->insert(path::filename(DI->path()));
      }
    }
    return It->second ? &*It->second : nullptr;
  }
};

/// Every path other than a dependency itself that names an existing file where an #include of
/// the dependency, or a probe of one of Targets (__has_include), could look: each folder of
/// SearchDirs and of the dependencies, joined with each tail of the dependency's path (an
/// #include names a tail: "crt/host_config.h") and with each target. Paths are normalized.
std::set<std::string> shadows(const std::vector<std::string> &Deps,
                              llvm::ArrayRef<std::string> SearchDirs,
                              const std::set<std::string> &Targets) {
  std::vector<std::string> Norm;
  for (const std::string &D : Deps)
    Norm.push_back(absolute(D));
  std::set<std::string> Dirs;
  for (const std::string &D : SearchDirs)
    Dirs.insert(absolute(D));
  for (const std::string &D : Norm)
    Dirs.insert(path::parent_path(D).str());
  std::set<std::string> Depset(Norm.begin(), Norm.end());
  Listings L;
  std::set<std::string> Out;
  auto Look = [&](llvm::ArrayRef<StringRef> Tail) {
    for (const std::string &D : Dirs) {
      llvm::SmallString<256> C(D);
      for (StringRef T : Tail)
        path::append(C, T);
      // A tail that climbs out of its folder is looked up where it leads.
      bool Climbs = llvm::is_contained(Tail, "..") || llvm::is_contained(Tail, ".");
      if (Climbs ? !fs::exists(C) : !L.exists(D, Tail))
        continue;
      std::string N = absolute(C);
      if (!Depset.count(N))
        Out.insert(N);
    }
  };
  auto Components = [](StringRef P) {
    llvm::SmallVector<StringRef, 16> Comps;
    for (auto It = path::begin(P), E = path::end(P); It != E; ++It)
      if (!path::is_separator((*It)[0]) && !It->empty())
        Comps.push_back(*It);
    return Comps;
  };
  for (const std::string &Dep : Norm) {
    llvm::SmallVector<StringRef, 16> Comps = Components(Dep);
    for (size_t K = 1; K < Comps.size(); ++K)
      Look(llvm::ArrayRef(Comps).drop_front(K));
  }
  for (const std::string &T : Targets) {
    if (path::is_absolute(T)) {
      if (fs::exists(T) && !Depset.count(absolute(T)))
        Out.insert(absolute(T));
      continue;
    }
    Look(Components(T));
  }
  return Out;
}

std::string entryPath(StringRef Dir, StringRef Key) {
  llvm::SmallString<256> P(Dir);
  path::append(P, EntryPrefix + Key);
  return P.str().str();
}

} // namespace

std::string UsageCache::key(llvm::ArrayRef<std::string> Command, StringRef TmpDir,
                            llvm::ArrayRef<std::pair<std::string, std::string>> Files,
                            llvm::ArrayRef<std::string> SearchDirs) const {
  llvm::BLAKE3 H;
  auto Add = [&](StringRef S) {
    std::string Len = std::to_string(S.size()) + ":";
    H.update(Len);
    H.update(S);
  };
  Add(Format);
  // The include folders are placeholders, in their places: the entry says which of them the
  // build read from, and only those must be where they were (lookup).
  auto IsSearchDir = [&](StringRef A) { return llvm::is_contained(SearchDirs, A); };
  for (size_t I = 0; I < Command.size(); ++I) {
    std::string Arg = Command[I];
    StringRef Prev = I ? StringRef(Command[I - 1]) : StringRef();
    if (StringRef(Arg).starts_with("-I") && IsSearchDir(StringRef(Arg).drop_front(2)))
      Arg = "-I<dir>";
    else if ((Prev == "-I" || Prev == "-isystem") && IsSearchDir(Arg))
      Arg = "<dir>";
    for (size_t Pos; !TmpDir.empty() && (Pos = Arg.find(TmpDir.str())) != std::string::npos;)
      Arg.replace(Pos, TmpDir.size(), "<tmp>");
    Add(Arg);
  }
  Add("files");
  for (const auto &[Rel, Text] : Files) {
    Add(Rel);
    Add(Text);
  }
  // The tools: nvcc, the programs and the profile beside it, the host compiler it would run.
  Add("tools");
  StringRef Nvcc = Command.empty() ? StringRef() : StringRef(Command.front());
  llvm::SmallString<256> Bin(path::parent_path(Nvcc));
  for (StringRef Beside : {"nvcc", "nvcc.profile", "ptxas", "cudafe++", "fatbinary", "../nvvm/bin/cicc"}) {
    llvm::SmallString<256> P(Bin);
    path::append(P, Beside);
    Add(toolIdentity(P));
  }
  for (StringRef Host : {"gcc", "g++", "cc", "c++"})
    if (auto P = llvm::sys::findProgramByName(Host))
      Add(toolIdentity(*P));
  Add("environment");
  for (StringRef Var : {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CPATH",
                        "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "PATH"}) {
    Add(Var);
    Add(llvm::sys::Process::GetEnv(Var).value_or("<unset>"));
  }
  auto Out = H.final();
  return hexOf(Out);
}

std::optional<std::string> UsageCache::lookup(StringRef Key,
                                              llvm::ArrayRef<std::string> SearchDirs) const {
  if (!enabled())
    return std::nullopt;
  std::string P = entryPath(Dir, Key);
  auto Buf = llvm::MemoryBuffer::getFile(P, /*IsText=*/true);
  if (!Buf)
    return std::nullopt;
  auto V = llvm::json::parse((*Buf)->getBuffer());
  if (!V) {
    llvm::consumeError(V.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *O = V->getAsObject();
  if (!O || O->getString("format") != Format)
    return std::nullopt;
  const llvm::json::Array *Deps = O->getArray("deps");
  const llvm::json::Array *Present = O->getArray("shadows");
  const llvm::json::Array *Probed = O->getArray("probes");
  const llvm::json::Array *Dirs = O->getArray("dirs");
  std::optional<StringRef> Report = O->getString("report");
  if (!Deps || !Present || !Probed || !Dirs || !Report || Dirs->size() != SearchDirs.size())
    return std::nullopt;
  // The folders the build read from are where they were; the others may be anywhere.
  for (size_t I = 0; I < SearchDirs.size(); ++I) {
    const llvm::json::Value &D = (*Dirs)[I];
    if (D.kind() == llvm::json::Value::Null)
      continue;
    std::optional<StringRef> Was = D.getAsString();
    if (!Was || *Was != SearchDirs[I])
      return std::nullopt;
  }
  std::vector<std::string> Paths;
  for (const llvm::json::Value &D : *Deps) {
    const llvm::json::Array *Pair = D.getAsArray();
    if (!Pair || Pair->size() != 2)
      return std::nullopt;
    std::optional<StringRef> File = (*Pair)[0].getAsString(), Hash = (*Pair)[1].getAsString();
    if (!File || !Hash || contentHash(*File) != Hash->str())
      return std::nullopt;
    Paths.push_back(File->str());
  }
  std::set<std::string> Targets, Kept;
  for (const llvm::json::Value &T : *Probed)
    if (std::optional<StringRef> Str = T.getAsString())
      Targets.insert(Str->str());
    else
      return std::nullopt;
  for (const llvm::json::Value &S : *Present)
    if (std::optional<StringRef> Str = S.getAsString())
      Kept.insert(Str->str());
    else
      return std::nullopt;
  // Nothing appeared where an #include or a probe could look, and nothing a probe found went.
  if (shadows(Paths, SearchDirs, Targets) != Kept)
    return std::nullopt;
  // Used: younger than the entries the pruning removes first.
  int FD;
  if (!fs::openFileForWrite(P, FD, fs::CD_OpenExisting, fs::OF_Append)) {
    fs::setLastAccessAndModificationTime(FD, std::chrono::system_clock::now());
    llvm::sys::Process::SafelyCloseFileDescriptor(FD);
  }
  return Report->str();
}

bool UsageCache::store(StringRef Key, StringRef DepFile, StringRef TmpDir,
                       llvm::ArrayRef<std::string> SearchDirs, StringRef Report) const {
  if (!enabled())
    return false;
  std::string Tmp = spelled(TmpDir);
  std::vector<std::string> Paths;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> Texts;
  llvm::json::Array Deps;
  for (const std::string &D : parseDepFile(DepFile)) {
    std::string A = spelled(D);
    auto Buf = llvm::MemoryBuffer::getFile(A, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!Buf)
      return false;
    Texts.push_back(std::move(*Buf));
    // The files of the temporary folder are in the key; they are read only for their probes.
    if (under(A, Tmp))
      continue;
    llvm::BLAKE3 H;
    H.update(Texts.back()->getBuffer());
    auto Hash = H.final();
    Deps.push_back(llvm::json::Array{A, hexOf(Hash)});
    Paths.push_back(A);
  }
  std::vector<StringRef> TextRefs;
  for (const auto &B : Texts)
    TextRefs.push_back(B->getBuffer());
  std::optional<std::set<std::string>> Targets = includeProbes(TextRefs);
  if (!Targets)
    return false; // a probe of a name known only to the preprocessor: its answer cannot be kept
  std::set<std::string> Shadows = shadows(Paths, SearchDirs, *Targets);
  // An include folder is pinned when the build read from it or something could be found in it.
  llvm::json::Array Dirs;
  for (const std::string &S : SearchDirs) {
    std::string Norm = absolute(S);
    bool Used = llvm::any_of(Paths, [&](const std::string &P) {
      return under(P, S) || under(absolute(P), Norm);
    }) || llvm::any_of(Shadows, [&](const std::string &P) { return under(P, Norm); });
    Dirs.push_back(Used ? llvm::json::Value(S) : llvm::json::Value(nullptr));
  }
  llvm::json::Array Probes, Present;
  for (const std::string &T : *Targets)
    Probes.push_back(T);
  for (const std::string &S : Shadows)
    Present.push_back(S);
  llvm::json::Object Entry{{"format", Format},
                           {"report", Report},
                           {"dirs", std::move(Dirs)},
                           {"deps", std::move(Deps)},
                           {"probes", std::move(Probes)},
                           {"shadows", std::move(Present)}};
  if (fs::create_directories(Dir))
    return false;
  // Written whole under another name, then renamed: a reader sees the old entry or the new one.
  llvm::SmallString<256> Temp;
  int FD;
  if (fs::createUniqueFile(entryPath(Dir, "tmp-%%%%%%%%"), FD, Temp))
    return false;
  {
    llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << llvm::json::Value(std::move(Entry));
    OS.close();
    if (OS.has_error()) {
      OS.clear_error();
      fs::remove(Temp);
      return false;
    }
  }
  if (fs::rename(Temp, entryPath(Dir, Key))) {
    fs::remove(Temp);
    return false;
  }
  // Entries unused for 30 days go, and the oldest while the folder holds more than 512 MiB.
  if (auto Policy = llvm::parseCachePruningPolicy(
          "prune_interval=1h:prune_after=720h:cache_size_bytes=536870912"))
    llvm::pruneCache(Dir, *Policy);
  else
    llvm::consumeError(Policy.takeError());
  return true;
}

} // namespace tilepipe
