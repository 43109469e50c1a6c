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
static constexpr StringRef Format = "tilepipe-usage-cache 1";
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
/// the dependency could look first: each folder of SearchDirs and of the dependencies, joined
/// with each tail of the dependency's path (an #include names a tail: "crt/host_config.h").
std::set<std::string> shadows(const std::vector<std::string> &Deps,
                              llvm::ArrayRef<std::string> SearchDirs) {
  std::set<std::string> Dirs;
  for (const std::string &D : SearchDirs)
    Dirs.insert(absolute(D));
  for (const std::string &D : Deps)
    Dirs.insert(path::parent_path(D).str());
  std::set<std::string> Depset(Deps.begin(), Deps.end());
  Listings L;
  std::set<std::string> Out;
  for (const std::string &Dep : Deps) {
    llvm::SmallVector<StringRef, 16> Comps;
    for (auto It = path::begin(Dep), E = path::end(Dep); It != E; ++It)
      if (*It != "/")
        Comps.push_back(*It);
    for (size_t K = 1; K < Comps.size(); ++K) {
      llvm::ArrayRef<StringRef> Tail = llvm::ArrayRef(Comps).drop_front(K);
      for (const std::string &D : Dirs) {
        if (!L.exists(D, Tail))
          continue;
        llvm::SmallString<256> C(D);
        for (StringRef T : Tail)
          path::append(C, T);
        if (!Depset.count(C.str().str()))
          Out.insert(C.str().str());
      }
    }
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
                            llvm::ArrayRef<std::pair<std::string, std::string>> Files) const {
  llvm::BLAKE3 H;
  auto Add = [&](StringRef S) {
    std::string Len = std::to_string(S.size()) + ":";
    H.update(Len);
    H.update(S);
  };
  Add(Format);
  for (const std::string &A : Command) {
    std::string Arg = A;
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
  llvm::SmallString<256> Cwd;
  fs::current_path(Cwd);
  Add(Cwd);
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
  std::optional<StringRef> Report = O->getString("report");
  if (!Deps || !Present || !Report)
    return std::nullopt;
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
  std::set<std::string> Kept;
  for (const llvm::json::Value &S : *Present)
    if (std::optional<StringRef> Str = S.getAsString())
      Kept.insert(Str->str());
  for (const std::string &S : shadows(Paths, SearchDirs))
    if (!Kept.count(S))
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
  std::string Tmp = absolute(TmpDir);
  std::vector<std::string> Paths;
  llvm::json::Array Deps;
  for (const std::string &D : parseDepFile(DepFile)) {
    std::string A = absolute(D);
    if (StringRef(A).starts_with(Tmp + "/") || A == Tmp)
      continue;
    std::optional<std::string> Hash = contentHash(A);
    if (!Hash)
      return false;
    Deps.push_back(llvm::json::Array{A, *Hash});
    Paths.push_back(A);
  }
  llvm::json::Array Present;
  for (const std::string &S : shadows(Paths, SearchDirs))
    Present.push_back(S);
  llvm::json::Object Entry{{"format", Format},
                           {"report", Report},
                           {"deps", std::move(Deps)},
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
