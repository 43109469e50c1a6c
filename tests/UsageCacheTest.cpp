// The launch check's cache (UsageCache.h): an entry answers only while everything its build read
// is as it was. These tests need no nvcc: they store and look up entries as the check does, with
// dependency lists written here. ResourcesTest runs the cache through nvcc and the program.
#include "TestSupport.h"
#include "tilepipe/UsageCache.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

std::string join(const std::string &A, const std::string &B) {
  llvm::SmallString<256> P(A);
  llvm::sys::path::append(P, B);
  return P.str().str();
}

/// A project with a header on an include path, a build's temporary folder, and a cache.
struct Project {
  std::string Root = tempDir();
  std::string Inc = join(Root, "inc"), Other = join(Root, "other"), Tmp = join(Root, "tmp");
  std::string Header = join(Inc, "kernel.h"), Nested = join(join(Inc, "sub"), "tile.h");
  UsageCache Cache{join(Root, "cache")};
  std::vector<std::string> Command{"/no/such/nvcc", "-fatbin", "-I" + Other, "-I" + Inc,
                                   "-o", join(Tmp, "device.fatbin"), join(Tmp, "source.cu")};
  std::vector<std::string> SearchDirs{Other, Inc};
  Project() {
    llvm::sys::fs::create_directories(join(Inc, "sub"));
    llvm::sys::fs::create_directories(Other);
    llvm::sys::fs::create_directories(Tmp);
    writeFile(Header, "#define N 4\n");
    writeFile(Nested, "#define T 8\n");
    writeFile(join(Tmp, "source.cu"), "k();");
  }
  std::string depFile() const {
    return join(Tmp, "device.fatbin") + " : " + join(Tmp, "source.cu") + " \\\n    " + Header +
           " \\\n    " + Nested + "\n";
  }
  std::string key(const std::string &Source = "k();") const {
    return Cache.key(Command, Tmp, {{"source.cu", Source}}, SearchDirs);
  }
  bool stored() const { return Cache.store(key(), depFile(), Tmp, SearchDirs, "report"); }
  bool hits() const { return Cache.lookup(key(), SearchDirs).has_value(); }
};

} // namespace

TEST(UsageCache, ReadsMakeStyleDependencies) {
  EXPECT_EQ((std::vector<std::string>{"/a/b c.h", "rel/d.h", "/x$y.h"}),
            parseDepFile("out.o : /a/b\\ c.h \\\n  rel/d.h /x$$y.h\n"));
  EXPECT_EQ((std::vector<std::string>{"/s.cu"}), parseDepFile("my\\ out.fatbin: /s.cu"));
  EXPECT_TRUE(parseDepFile("").empty());
}

TEST(UsageCache, AnUnchangedBuildIsAnswered) {
  Project P;
  EXPECT_FALSE(P.hits());
  ASSERT_TRUE(P.stored());
  auto Report = P.Cache.lookup(P.key(), P.SearchDirs);
  ASSERT_TRUE(Report.has_value());
  EXPECT_EQ("report", *Report);
}

TEST(UsageCache, TheKeyIsWhatTheBuildIsGiven) {
  Project P;
  // The temporary folder's own name is not part of it ...
  std::vector<std::string> Elsewhere = P.Command;
  for (std::string &A : Elsewhere)
    if (llvm::StringRef(A).starts_with(P.Tmp))
      A = "/tmp/another" + A.substr(P.Tmp.size());
  EXPECT_EQ(P.key(), P.Cache.key(Elsewhere, "/tmp/another", {{"source.cu", "k();"}}, P.SearchDirs));
  // ... the texts written there, the arguments and their order are.
  EXPECT_NE(P.key(), P.key("k(); "));
  EXPECT_NE(P.key(), P.Cache.key(P.Command, P.Tmp, {{"other.cu", "k();"}}, P.SearchDirs));
  // The include folders are placeholders: which of them the build read from is in the entry.
  std::vector<std::string> Swapped = P.Command;
  std::swap(Swapped[2], Swapped[3]);
  std::vector<std::string> SwappedDirs{P.Inc, P.Other};
  EXPECT_EQ(P.key(), P.Cache.key(Swapped, P.Tmp, {{"source.cu", "k();"}}, SwappedDirs));
  ASSERT_TRUE(P.stored());
  EXPECT_FALSE(P.Cache.lookup(P.key(), SwappedDirs).has_value());
  EXPECT_TRUE(P.hits());
  std::vector<std::string> System = P.Command;
  System[2] = "-isystem";
  System.insert(System.begin() + 3, P.Other);
  EXPECT_NE(P.key(), P.Cache.key(System, P.Tmp, {{"source.cu", "k();"}}, P.SearchDirs));
  std::vector<std::string> Defined = P.Command;
  Defined.insert(Defined.begin() + 1, "-DX=1");
  EXPECT_NE(P.key(), P.Cache.key(Defined, P.Tmp, {{"source.cu", "k();"}}, P.SearchDirs));
}

TEST(UsageCache, AChangedFileTheBuildReadIsAMiss) {
  Project P;
  ASSERT_TRUE(P.stored());
  writeFile(P.Header, "#define N 5\n"); // same size, other content
  EXPECT_FALSE(P.hits());
  writeFile(P.Header, "#define N 4\n");
  EXPECT_TRUE(P.hits());
  llvm::sys::fs::remove(P.Nested);
  EXPECT_FALSE(P.hits());
}

TEST(UsageCache, ANewFileAnIncludeWouldFindFirstIsAMiss) {
  // -I other comes first: a kernel.h there would be the one #include "kernel.h" reads.
  Project P;
  ASSERT_TRUE(P.stored());
  writeFile(join(P.Other, "kernel.h"), "#define N 64\n");
  EXPECT_FALSE(P.hits());
  llvm::sys::fs::remove(join(P.Other, "kernel.h"));
  EXPECT_TRUE(P.hits());
  // An #include "sub/tile.h" too, and a quoted include looks beside its includer first.
  llvm::sys::fs::create_directories(join(P.Other, "sub"));
  EXPECT_TRUE(P.hits());
  writeFile(join(join(P.Other, "sub"), "tile.h"), "#define T 16\n");
  EXPECT_FALSE(P.hits());
  llvm::sys::fs::remove(join(join(P.Other, "sub"), "tile.h"));
  EXPECT_TRUE(P.hits());
  writeFile(join(join(P.Inc, "sub"), "kernel.h"), "#define N 2\n");
  EXPECT_FALSE(P.hits());
}

TEST(UsageCache, AFileThatWasThereBeforeIsNoNewShadow) {
  // Two headers of one name on the path when the entry was written: the build read the first,
  // and the entry stays good while nothing new appears.
  Project P;
  writeFile(join(P.Other, "tile.h"), "#define T 2\n");
  ASSERT_TRUE(P.stored());
  EXPECT_TRUE(P.hits());
}

TEST(UsageCache, ABrokenEntryIsAMiss) {
  Project P;
  ASSERT_TRUE(P.stored());
  std::error_code EC;
  llvm::sys::fs::directory_iterator It(join(P.Root, "cache"), EC);
  std::string Entry;
  for (; It != llvm::sys::fs::directory_iterator() && !EC; It.increment(EC))
    if (llvm::StringRef(llvm::sys::path::filename(It->path())).starts_with("llvmcache-tilepipe-"))
      Entry = It->path();
  ASSERT_FALSE(Entry.empty());
  writeFile(Entry, "{\"format\": \"tilepipe-usage-cache 2\", \"report\": \"x\"");
  EXPECT_FALSE(P.hits());
  writeFile(Entry, "{\"format\": \"tilepipe-usage-cache 0\", \"report\": \"x\", \"deps\": [], "
                   "\"shadows\": []}");
  EXPECT_FALSE(P.hits());
}

TEST(UsageCache, ADependencyThatCannotBeReadKeepsNothing) {
  Project P;
  std::string Deps = P.depFile() + "  " + join(P.Inc, "missing.h") + "\n";
  EXPECT_FALSE(P.Cache.store(P.key(), Deps, P.Tmp, P.SearchDirs, "report"));
  EXPECT_FALSE(P.hits());
}

TEST(UsageCache, NoFolderKeepsNothing) {
  UsageCache Off;
  EXPECT_FALSE(Off.enabled());
  EXPECT_FALSE(Off.store("k", "", "/tmp", {}, "report"));
  EXPECT_FALSE(Off.lookup("k", {}).has_value());
}

/// Sources copied to another folder (a test's, a second checkout's) that read nothing from it:
/// the build is the same, and so is its answer.
TEST(UsageCache, AFolderTheBuildDidNotReadFromMayMove) {
  Project P;
  std::string Lib = join(P.Root, "lib"), Header = join(Lib, "lib.h");
  llvm::sys::fs::create_directories(Lib);
  writeFile(Header, "#define L 1\n");
  std::string Deps = join(P.Tmp, "device.fatbin") + " : " + join(P.Tmp, "source.cu") + " " + Header;
  writeFile(join(P.Tmp, "source.cu"), "k();");
  ASSERT_TRUE(P.Cache.store(P.key(), Deps, P.Tmp, P.SearchDirs, "report"));
  std::string Moved = join(P.Root, "moved");
  llvm::sys::fs::create_directories(Moved);
  std::vector<std::string> Command = P.Command, Dirs{P.Other, Moved};
  Command[3] = "-I" + Moved;
  std::string Key = P.Cache.key(Command, P.Tmp, {{"source.cu", "k();"}}, Dirs);
  EXPECT_EQ(P.key(), Key);
  EXPECT_TRUE(P.Cache.lookup(Key, Dirs).has_value());
  // ... while nothing there could be found in place of what it read.
  writeFile(join(Moved, "lib.h"), "#define L 2\n");
  EXPECT_FALSE(P.Cache.lookup(Key, Dirs).has_value());
}

/// A folder the build read a header from is pinned: the same name elsewhere may hold another text.
TEST(UsageCache, AFolderTheBuildReadFromIsPinned) {
  Project P;
  writeFile(join(P.Tmp, "source.cu"), "k();");
  ASSERT_TRUE(P.stored());
  std::string Copy = join(P.Root, "copy");
  llvm::sys::fs::create_directories(join(Copy, "sub"));
  writeFile(join(Copy, "kernel.h"), "#define N 4\n");
  writeFile(join(join(Copy, "sub"), "tile.h"), "#define T 8\n");
  std::vector<std::string> Command = P.Command, Dirs{P.Other, Copy};
  Command[3] = "-I" + Copy;
  std::string Key = P.Cache.key(Command, P.Tmp, {{"source.cu", "k();"}}, Dirs);
  EXPECT_EQ(P.key(), Key);
  EXPECT_FALSE(P.Cache.lookup(Key, Dirs).has_value());
}

TEST(UsageCache, ProbesAreReadThroughTheMacrosThatNameThem) {
  auto Probes = [](std::vector<llvm::StringRef> Texts) { return includeProbes(Texts); };
  using Set = std::set<std::string>;
  EXPECT_EQ(Set({"a.h", "b/c.h"}),
            *Probes({"#if __has_include(\"a.h\")\n#endif\n#if __has_include_next( <b/c.h> )\n#endif"}));
  // A macro that stands for a probe, over two lines, defined in one file and used in another.
  EXPECT_EQ(Set({"cfg.h", "tbb/tbb.h"}),
            *Probes({"#define HAS_INC(x) \\\n  __has_include(x)\n#define TBB __has_include(<tbb/tbb.h>)\n",
                     "#if HAS_INC(<cfg.h>) && TBB\n#endif\n"}));
  // A stand-in for the stand-in.
  EXPECT_EQ(Set({"d.h"}), *Probes({"#define A(x) __has_include(x)\n#define B(y) A(y)\n#if B(\"d.h\")\n#endif"}));
  // Tests of the probe itself probe nothing.
  EXPECT_EQ(Set(), *Probes({"#ifdef __has_include\n#endif\n#if defined(__has_include)\n#endif"}));
  // A probe of a name only the preprocessor knows cannot be followed.
  EXPECT_FALSE(Probes({"#define H <cfg.h>\n#if __has_include(H)\n#endif"}).has_value());
  EXPECT_FALSE(Probes({"#define A(x) __has_include(x)\n#define H \"x.h\"\n#if A(H)\n#endif"}).has_value());
  // An identifier that only contains the name is not a probe.
  EXPECT_EQ(Set(), *Probes({"int my__has_include(int); int x = my__has_include(3);"}));
}

/// A probe's answer is part of the build: a file that appears where __has_include looks, or one
/// it found that goes, makes the entry stale; a probe of an unknowable name keeps nothing.
TEST(UsageCache, WhatAProbeCouldFindIsWatched) {
  Project P;
  writeFile(join(P.Tmp, "source.cu"), "#include \"kernel.h\"\n");
  writeFile(P.Header, "#if __has_include(\"cfg.h\")\n#include \"cfg.h\"\n#endif\n"
                      "#if __has_include(<opt/extra.h>)\n#endif\n");
  writeFile(join(P.Inc, "cfg.h"), "#define C 1\n");
  std::string Deps = P.depFile() + "  " + join(P.Inc, "cfg.h") + "\n";
  ASSERT_TRUE(P.Cache.store(P.key(), Deps, P.Tmp, P.SearchDirs, "report"));
  EXPECT_TRUE(P.hits());
  llvm::sys::fs::create_directories(join(P.Other, "opt"));
  writeFile(join(join(P.Other, "opt"), "extra.h"), "\n");
  EXPECT_FALSE(P.hits());
  llvm::sys::fs::remove(join(join(P.Other, "opt"), "extra.h"));
  EXPECT_TRUE(P.hits());
  writeFile(join(P.Other, "cfg.h"), "#define C 2\n");
  EXPECT_FALSE(P.hits());
  llvm::sys::fs::remove(join(P.Other, "cfg.h"));
  EXPECT_TRUE(P.hits());
  // A file a probe found, though the build did not read it, is as much a part of it.
  llvm::sys::fs::create_directories(join(P.Inc, "opt"));
  writeFile(join(join(P.Inc, "opt"), "extra.h"), "\n");
  ASSERT_TRUE(P.Cache.store(P.key(), Deps, P.Tmp, P.SearchDirs, "report"));
  EXPECT_TRUE(P.hits());
  llvm::sys::fs::remove(join(join(P.Inc, "opt"), "extra.h"));
  EXPECT_FALSE(P.hits());
  // The source itself probes with a name from a macro: nothing is kept.
  writeFile(join(P.Tmp, "source.cu"), "#define CFG \"cfg.h\"\n#if __has_include(CFG)\n#endif\n");
  EXPECT_FALSE(P.Cache.store(P.key("other"), Deps, P.Tmp, P.SearchDirs, "report"));
}
