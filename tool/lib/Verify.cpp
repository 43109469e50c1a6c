#include "tilepipe/Verify.h"
#include "tilepipe/Driver.h"
#include "tilepipe/Emit.h"
#include "tilepipe/Runtime.h"
#include "tilepipe/Write.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include <optional>
#include <set>

namespace tilepipe {

/// S as one word of bash, whatever it holds (a folder with spaces or quotes in its name).
static std::string shellQuoted(llvm::StringRef S) {
  std::string Out = "'";
  for (char C : S)
    Out += C == '\'' ? std::string("'\\''") : std::string(1, C);
  return Out + "'";
}

VerifyOptions::Flags commandFlags(llvm::ArrayRef<std::string> CommandLine, llvm::StringRef Directory) {
  VerifyOptions::Flags F;
  auto Absolute = [&](llvm::StringRef P) {
    llvm::SmallString<256> A(P);
    if (llvm::sys::path::is_relative(A) && !Directory.empty())
      llvm::sys::path::make_absolute(Directory, A);
    llvm::sys::path::remove_dots(A, /*remove_dot_dot=*/true);
    return A.str().str();
  };
  for (size_t I = 1; I < CommandLine.size(); ++I) {
    llvm::StringRef A = CommandLine[I];
    // `-Xvalue`, `-X value` and `--long=value` / `--long value` of each option read.
    auto Value = [&](llvm::StringRef Short, llvm::StringRef Long) -> std::optional<std::string> {
      if (!Long.empty() && A.starts_with((Long + "=").str()))
        return A.drop_front(Long.size() + 1).str();
      if ((A == Short || (!Long.empty() && A == Long)) && I + 1 < CommandLine.size())
        return CommandLine[++I];
      if (Short.size() == 2 && A.starts_with(Short) && A.size() > 2)
        return A.drop_front(2).str();
      return std::nullopt;
    };
    if (auto V = Value("-D", "--define-macro"))
      F.Macros.push_back("-D" + *V);
    else if (auto V = Value("-U", "--undefine-macro"))
      F.Macros.push_back("-U" + *V);
    else if (auto V = Value("-I", "--include-path"))
      F.IncludeDirs.push_back({"-I", Absolute(*V)});
    else if (auto V = Value("-isystem", "--system-include"))
      F.IncludeDirs.push_back({"-isystem", Absolute(*V)});
    else if (auto V = Value("-iquote", ""))
      F.IncludeDirs.push_back({"-iquote", Absolute(*V)});
    else if (auto V = Value("-idirafter", ""))
      F.IncludeDirs.push_back({"-idirafter", Absolute(*V)});
    else if (auto V = Value("-include", "--pre-include"))
      F.ForcedIncludes.push_back(Absolute(*V));
  }
  return F;
}

/// Where a file of the machine that wrote the bundle lies in its copy of the sources (Tree is src
/// or rsrc): at its absolute path below the tree.
static std::string inTree(llvm::StringRef Tree, llvm::StringRef AbsPath) {
  llvm::StringRef Rel = AbsPath;
  Rel = Rel.ltrim('/');
  return Tree.str() + "/" + Rel.str();
}

static const char DriverTemplate[] =
#include "VerifyDriverTemplate.inc"
    ;

static std::string literal(llvm::StringRef S) {
  std::string Out = "\"";
  for (char C : S) {
    if (C == '"' || C == '\\')
      Out += '\\';
    Out += C;
  }
  return Out + "\"";
}

/// The launcher the rewrite wrote for the kernel that Path (`::ns::name`) names: the one whose
/// kernel's qualified name, unnamed namespaces aside, is Path's; by its name alone where none or
/// several are.
static std::string launcherOf(llvm::StringRef Path, llvm::ArrayRef<std::pair<std::string, std::string>> Launchers) {
  Path.consume_front("::");
  std::string Found;
  unsigned Matches = 0;
  for (const auto &[Kernel, Launcher] : Launchers) {
    std::string Q = Kernel;
    for (size_t At; (At = Q.find("(anonymous namespace)::")) != std::string::npos;)
      Q.erase(At, strlen("(anonymous namespace)::"));
    if (Q == Path) {
      Found = Launcher;
      ++Matches;
    }
  }
  if (Matches == 1)
    return Found;
  size_t Colons = Path.rfind("::");
  return "tilepipe_launch_" + (Colons == llvm::StringRef::npos ? Path : Path.drop_front(Colons + 2)).str();
}

std::string generateCases(const LaunchSpec &Spec, llvm::ArrayRef<std::pair<std::string, std::string>> Launchers) {
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  std::vector<std::string> Table;
  unsigned N = 0;
  // An element made of components the spec names (`components: double`) is filled as an array
  // of them; the sizes must divide.
  std::set<std::pair<std::string, std::string>> Made;
  for (const KernelSpec &K : Spec.Kernels)
    for (const ParamSpec &P : K.Params)
      if (P.isBuffer() && !P.Components.empty() && Made.insert({P.Type, P.Components}).second)
        OS << "namespace tpv {\ntemplate <> struct Components<" << P.Type << "> {\n  using C = " << P.Components
           << ";\n  static_assert(sizeof(" << P.Type << ") % sizeof(" << P.Components
           << ") == 0, \"the spec's components do not divide the element '" << P.Type
           << "'\");\n  static constexpr int N = sizeof(" << P.Type << ") / sizeof(" << P.Components
           << ");\n};\n} // namespace tpv\n";
  OS << "namespace tpv_spec {\n";
  for (const KernelSpec &K : Spec.Kernels) {
    bool AnyTimed = llvm::any_of(K.Cases, [](const CaseSpec &C) { return C.Timed; });
    std::string Callee = llvm::StringRef(K.Kernel).starts_with("::") ? K.Kernel : "::" + K.Kernel;
    const std::string Shared = K.Shared.empty() ? "0" : "(" + K.Shared + ")";
    for (size_t CI = 0; CI < K.Cases.size(); ++CI, ++N) {
      const CaseSpec &C = K.Cases[CI];
      std::string Sizes;
      for (auto &[Name, Value] : C.Sizes)
        Sizes += "  const long long " + Name + " = " + std::to_string(Value) + "LL;\n  (void)" +
                 Name + ";\n";
      OS << "\n// " << K.Kernel << ": " << C.Name << "\n";
      OS << "static size_t bytes_" << N << "() {\n" << Sizes << "  size_t tpv_bytes = 0;\n";
      for (const ParamSpec &P : K.Params)
        if (P.isBuffer())
          OS << "  tpv_bytes += static_cast<size_t>(std::max<long long>(0, (" << P.Count
             << "))) * sizeof(" << P.Type << ");\n";
      OS << "  return tpv_bytes;\n}\n";
      // What a launch must move at the least (the memory floor): every input read once, every
      // output written once, so an inout buffer twice.
      OS << "static size_t moved_" << N << "() {\n" << Sizes << "  size_t tpv_bytes = 0;\n";
      for (const ParamSpec &P : K.Params)
        if (P.isBuffer())
          OS << "  tpv_bytes += " << (P.Dir == "inout" ? "2 * " : "")
             << "static_cast<size_t>(std::max<long long>(0, (" << P.Count << "))) * sizeof(" << P.Type
             << ");\n";
      OS << "  return tpv_bytes;\n}\n";
      // The kernel and block of the launch, for its resources; naming the kernel is left to
      // builds that ask for it (-DTPV_RESOURCES), since an overloaded name would not compile.
      OS << "static void launch_" << N << "(tpv::Resources &tpv_r) {\n" << Sizes;
      OS << "  const dim3 tpv_block = (" << K.Block << ");\n";
      OS << "  tpv_r.Threads = static_cast<long long>(tpv_block.x) * tpv_block.y * tpv_block.z;\n";
      OS << "  tpv_r.Shared = static_cast<size_t>(" << Shared << ");\n";
      OS << "#if defined(TPV_RESOURCES)\n  tpv_r.Kernel = tpv::kernelAddress(&" << Callee << ");\n#endif\n}\n";
      OS << "static void case_" << N << "(tpv::Run &tpv_run, bool tpv_launch, int tpv_set) {\n" << Sizes;
      OS << "  if (!tpv_launch) {\n";
      std::vector<std::string> Args, Buffers;
      for (size_t PI = 0; PI < K.Params.size(); ++PI) {
        const ParamSpec &P = K.Params[PI];
        if (!P.isBuffer()) {
          Args.push_back("(" + P.Scalar + ")");
          continue;
        }
        std::string Dir = P.Dir == "in" ? "In" : P.Dir == "out" ? "Out" : "InOut";
        OS << "    tpv_run.buffer<" << P.Type << ">(" << PI << ", (" << P.Count << "), tpv::" << Dir
           << ", tpv_set, " << C.Misalign;
        if (!P.Fill.empty())
          OS << ", [&](long long i) { (void)i; return static_cast<" << P.Type << ">(" << P.Fill << "); }";
        OS << ");\n";
        Args.push_back("tpv_run.get<" + P.Type + ">(tpv_set, " + std::to_string(PI) + ")");
        if (P.Dir != "in")
          Buffers.push_back("{" + literal(P.Buffer) + ", " + literal(P.Type) + ", sizeof(" +
                            P.Type + "), tpv::" + Dir + ", &tpv::compareElements<" + P.Type + ">}");
      }
      OS << "    return;\n  }\n";
      if (!K.Setup.empty())
        OS << "  {\n" << K.Setup << "\n  }\n";
      // A rewrite with tensor copies defines TILEPIPE_LAUNCHER_<name> and a launcher that hands
      // the kernel its tensor maps; the other variants are launched directly.
      llvm::StringRef Path = llvm::StringRef(Callee).take_until([](char C) { return C == '<'; });
      llvm::StringRef TArgs = llvm::StringRef(Callee).drop_front(Path.size());
      size_t Colons = Path.rfind("::");
      llvm::StringRef Scope = Path.take_front(Colons + 2), Base = Path.drop_front(Colons + 2);
      OS << "#if defined(TILEPIPE_LAUNCHER_" << Base << ")\n";
      OS << "  " << Scope << launcherOf(Path, Launchers) << TArgs << "((" << K.Grid << "), (" << K.Block
         << "), " << Shared << ", 0" << (Args.empty() ? "" : ", ") << llvm::join(Args, ", ") << ");\n#else\n";
      OS << "  " << Callee << "<<<(" << K.Grid << "), (" << K.Block << ")"
         << (K.Shared.empty() ? "" : ", " + Shared) << ">>>(" << llvm::join(Args, ", ") << ");\n#endif\n}\n";
      bool Timed = C.Timed || (!AnyTimed && CI + 1 == K.Cases.size());
      Table.push_back("  {" + literal(K.Kernel) + ", " + literal(C.Name) + ", " +
                      (Timed ? "true" : "false") + ", " + (C.Sanitize ? "true" : "false") +
                      ", &tpv_spec::case_" + std::to_string(N) + ", {" + llvm::join(Buffers, ", ") +
                      "}, &tpv_spec::bytes_" + std::to_string(N) + ", &tpv_spec::moved_" +
                      std::to_string(N) + ", &tpv_spec::launch_" + std::to_string(N) + "}");
    }
  }
  OS << "} // namespace tpv_spec\n\n";
  OS << "const std::vector<tpv::CaseInfo> &tpv::cases() {\n  static const std::vector<CaseInfo> All = {\n"
     << llvm::join(Table, ",\n") << "};\n  return All;\n}\n";
  return Out;
}

static std::string formatTolerance(double T) {
  char Buf[32];
  std::snprintf(Buf, sizeof Buf, "%g", T);
  return Buf;
}

// Long on purpose (over 100 lines): most of it is the text of build.sh and run.sh,
// which reads best whole, as the script it becomes.
llvm::Error writeBundle(const std::string &Dir, const FileResult &R, const LaunchSpec &Spec,
                        const VerifyOptions &Opts) {
  if (std::error_code EC = llvm::sys::fs::create_directories(Dir))
    return llvm::createStringError(EC, Dir + ": error: cannot create the bundle: " + EC.message());
  std::string Arch = llvm::StringRef(Opts.GpuArch).starts_with("sm_") ? Opts.GpuArch : "sm_90";
  std::string Source = llvm::sys::path::filename(R.Path).str();
  std::string SourceDir = llvm::sys::path::parent_path(R.Path).str();
  llvm::SmallString<256> AbsSourceDir(SourceDir.empty() ? "." : SourceDir);
  llvm::sys::fs::make_absolute(AbsSourceDir);
  bool HasFloor = R.ComputeOnly != R.Original;
  // The source's folder and the command's include folders, as copied into a tree of the bundle;
  // a folder that holds none of the user's files (a library's) stays where it is.
  // Real paths, as the user's files are named: a folder reached through a link is where they are.
  auto Real = [](llvm::StringRef P) { return realPathIn("", P); };
  const std::string SourceFolder = Real(AbsSourceDir);
  // The user's files the bundle carries: those the source includes, the spec's other sources and
  // the headers those include.
  std::vector<std::string> UserFiles = R.UserFiles;
  for (const std::vector<std::string> *More : {&Opts.ExtraSources, &Opts.ExtraUserFiles})
    for (const std::string &U : *More)
      if (!llvm::is_contained(UserFiles, U))
        UserFiles.push_back(U);
  auto Carried = [&](llvm::StringRef Folder) {
    return Folder == SourceFolder || llvm::any_of(UserFiles, [&](const std::string &U) {
             return llvm::StringRef(U).starts_with((Folder + "/").str());
           });
  };
  auto Includes = [&](llvm::StringRef Tree) {
    std::vector<std::string> Words{"-I" + shellQuoted(inTree(Tree, SourceFolder))};
    for (const auto &[Option, Given] : Opts.Command.IncludeDirs) {
      std::string Folder = Real(Given);
      Words.push_back(Option + " " + shellQuoted(Carried(Folder) ? inTree(Tree, Folder) : Given));
    }
    return llvm::join(Words, " ");
  };
  std::vector<std::string> CommandWords;
  for (const std::string &M : Opts.Command.Macros)
    CommandWords.push_back(shellQuoted(M));
  for (const std::string &F : Opts.Command.ForcedIncludes)
    CommandWords.push_back("-include " +
                           shellQuoted(llvm::is_contained(UserFiles, Real(F)) ? inTree("src", Real(F)) : F));
  // The spec's other sources, from the variant's tree (the rewritten variant's headers are
  // rewritten there too), and its link arguments.
  std::vector<std::string> ExtraSrc, ExtraRsrc, LinkWords;
  for (const std::string &S : Opts.ExtraSources) {
    ExtraSrc.push_back(shellQuoted(inTree("src", S)));
    ExtraRsrc.push_back(shellQuoted(inTree("rsrc", S)));
  }
  for (const std::string &A : Opts.Link)
    LinkWords.push_back(shellQuoted(A));

  auto Driver = fillHoles(DriverTemplate, "templates/verify_driver.cu.in",
                          {{"spec", llvm::sys::path::filename(Spec.Path).str()},
                           {"source", Source},
                           {"cases", generateCases(Spec, R.Launchers)}});
  if (!Driver)
    return Driver.takeError();
  std::string Build = llvm::formatv(R"sh(#!/usr/bin/env bash
# Builds the variants of {0} with nvcc (only the CUDA toolkit is needed).
#   build.sh [original] [rewritten] [compute_only] [census]    (default: the first three)
# TP_ARCH overrides the GPU architecture ({1}); NVCC the compiler; TP_NVCC_FLAGS adds flags (the
# benchmark adds -DTPV_RESOURCES). The compute-only variant is only a floor: where it does not
# build, the build still succeeds and the memory floor stands. The census is the compute-only
# source built with -DTPV_CENSUS: its `info` counts the bytes the loops copy into shared memory.
set -eu
cd "$(dirname "$0")"
arch=${{TP_ARCH:-{1}}
nvcc=${{NVCC:-nvcc}
command -v "$nvcc" >/dev/null || nvcc=/usr/local/cuda/bin/nvcc
# include/: tilepipe's runtime (tilepipe/runtime.cuh), which a rewrite with tensor or bulk copies
# includes; then the original's own folder, for headers it includes by relative path, and the
# compile command's include folders and macros: the folders as copied into src/ (the rewritten
# variant: rsrc/, with its rewritten headers), at their absolute paths where they were written.
cmd=({3})
inc_src=(-Iinclude {2})
inc_rsrc=(-Iinclude {4})
# The spec's other sources (as copied: src/, rsrc/ for the rewritten variant) and link arguments.
more_src=({5})
more_rsrc=({6})
link=({7})
build() {{
  local inc=("${{inc_src[@]}") more=("${{more_src[@]}") src=$1 extra=()
  [ "$1" = rewritten ] && {{ inc=("${{inc_rsrc[@]}"); more=("${{more_rsrc[@]}"); }
  [ "$1" = census ] && {{ src=compute_only; extra=(-DTPV_CENSUS); }
  "$nvcc" -O3 -std=c++17 -arch="$arch" "${{inc[@]}" "${{cmd[@]}" -w ${{TP_NVCC_FLAGS:-} "${{extra[@]}" \
    -DTP_SOURCE="\"$src.cu\"" -o "$1" driver.cu "${{more[@]}" "${{link[@]}"
}
variants=("$@")
[ $# -gt 0 ] || variants=(original rewritten compute_only)
pids=()
built=()
for v in "${{variants[@]}"; do
  case "$v" in
    original|rewritten|compute_only|census) ;;
    *) echo "build.sh: no variant '$v' (original, rewritten, compute_only, census)" >&2; exit 2 ;;
  esac
  rm -f "$v"
  src=$v
  [ "$v" = census ] && src=compute_only
  if [ ! -f "$src.cu" ]; then
    [ "$src" = compute_only ] && continue # no loop rewritten: no compute-only variant nor census
    echo "build.sh: $src.cu is missing" >&2
    exit 1
  fi
  build "$v" &
  pids+=("$!")
  built+=("$v")
done
status=0
for i in "${{!pids[@]}"; do
  wait "${{pids[$i]}" && continue
  if [ "${{built[$i]}" = compute_only ]; then
    echo "the compute-only variant did not build: no compute-only floor (the memory floor stands)" >&2
  elif [ "${{built[$i]}" = census ]; then
    echo "the census did not build: no L2 floor (the memory floor stands)" >&2
  else
    echo "the ${{built[$i]} variant did not build" >&2
    status=1
  fi
done
exit $status
)sh",
                                    Source, Arch, Includes("src"), llvm::join(CommandWords, " "), Includes("rsrc"),
                                    llvm::join(ExtraSrc, " "), llvm::join(ExtraRsrc, " "), llvm::join(LinkWords, " "));
  std::string Run = llvm::formatv(R"sh(#!/usr/bin/env bash
# Runs the original and the rewritten {0} on the spec's cases, {1} times each, and compares
# every output; times both, and the floors: the compute-only variant's time and the bytes the case
# must move over the device-to-device copy bandwidth measured in the same runs (the larger is the
# floor; the table says which). Exit: 0 all ran and matched, 1 a mismatch,
# nondeterminism, sanitizer report or error, 77 built but no GPU to run on.
#   run.sh [--sanitize] [--tolerance=T]
set -u
cd "$(dirname "$0")"
sanitize=0
tol={2}
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --tolerance=*) tol=${{a#*=} ;;
  esac
done
./build.sh || {{ echo "build failed"; exit 1; }
mkdir -p out
if ! gpu=$(./original probe 2>/dev/null); then
  echo "no usable CUDA device: the variants were built, nothing ran"
  echo '{{"ran": false, "passed": false}' > result.json
  exit 77
fi
echo "device: $gpu"
./original run out/original.bin --runs {1} --time || {{ echo "the original failed"; exit 1; }
./rewritten run out/rewritten.bin --runs {1} --time || {{ echo "the rewritten variant failed"; exit 1; }
floor=""
if [ -x compute_only ]; then
  if ./compute_only run out/compute_only.bin --runs 1 --time >/dev/null 2>out/compute_only.log; then
    floor=out/compute_only.bin
  else
    echo "the compute-only variant did not run, no compute-only floor (the memory floor stands): $(tail -n 1 out/compute_only.log)"
  fi
fi
./rewritten compare out/original.bin out/rewritten.bin $floor --tolerance "$tol" --json result.json
rc=$?
if [ $sanitize = 1 ]; then
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ ! -x "$san" ]; then
    echo "compute-sanitizer not found: the sanitizer runs did not happen"
    [ $rc = 0 ] && rc=77
  else
    for tool in memcheck racecheck synccheck initcheck; do
      for v in original rewritten; do
        if "$san" --tool $tool --error-exitcode 99 ./$v run out/sanitize.bin --runs 1 --sanitize-cases \
             > out/sanitize-$tool-$v.log 2>&1; then
          echo "compute-sanitizer $tool on $v: clean"
        else
          echo "compute-sanitizer $tool on $v: REPORTED (out/sanitize-$tool-$v.log)"
          tail -n 20 out/sanitize-$tool-$v.log
          rc=1
        fi
      done
    done
  fi
fi
exit $rc
)sh",
                                  Source, Opts.Runs, formatTolerance(Opts.Tolerance));
  struct File {
    std::string Name, Text;
    bool Exec;
  };
  std::vector<File> Files = {{"original.cu", R.Original, false},
                             {"rewritten.cu", R.Rewritten, false},
                             {"driver.cu", *Driver, false},
                             {"build.sh", Build, true},
                             {"run.sh", Run, true}};
  if (HasFloor)
    Files.push_back({"compute_only.cu", R.ComputeOnly, false});
  // The user's headers, as they were (src/) and with the rewritten ones rewritten (rsrc/).
  for (const std::string &U : UserFiles) {
    auto Buf = llvm::MemoryBuffer::getFile(U, /*IsText=*/false);
    if (!Buf)
      return llvm::createStringError(Buf.getError(), U + ": error: cannot read it for the bundle: " +
                                                         Buf.getError().message());
    std::string Text = (*Buf)->getBuffer().str(), Rewritten = Text;
    for (const HeaderRewrite &H : R.Headers)
      if (H.Path == U)
        Rewritten = H.Rewritten;
    Files.push_back({inTree("src", U), Text, false});
    Files.push_back({inTree("rsrc", U), Rewritten, false});
  }
  // The runtime the rewrite was written for, so that the bundle needs only nvcc and bash.
  Files.push_back({"include/" + runtimeHeaderName().str(), runtimeHeaderText().str(), false});
  if (std::error_code EC = llvm::sys::fs::create_directories(Dir + "/include/tilepipe"))
    return llvm::createStringError(EC, Dir + ": error: cannot create the bundle: " + EC.message());
  for (const File &F : Files) {
    std::string P = Dir + "/" + F.Name;
    if (std::error_code EC = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(P)))
      return llvm::createStringError(EC, Dir + ": error: cannot create the bundle: " + EC.message());
    if (llvm::Error E = writeOutput(P, F.Text))
      return E;
    if (F.Exec)
      llvm::sys::fs::setPermissions(P, llvm::sys::fs::perms(0755));
  }
  return llvm::Error::success();
}

int runBundle(const std::string &Dir, const VerifyOptions &Opts) {
  auto Bash = llvm::sys::findProgramByName("bash");
  if (!Bash)
    return 1;
  std::vector<std::string> Args = {*Bash, Dir + "/run.sh"};
  if (Opts.Sanitize)
    Args.push_back("--sanitize");
  std::vector<llvm::StringRef> Refs(Args.begin(), Args.end());
  return llvm::sys::ExecuteAndWait(*Bash, Refs);
}

} // namespace tilepipe
