#include "tilepipe/Parse.h"
#include "clang/Basic/LangOptions.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include <cstdlib>
#include <map>
#include <mutex>

namespace tilepipe {

static bool isToolkit(llvm::StringRef Dir) {
  llvm::SmallString<256> P(Dir);
  llvm::sys::path::append(P, "include", "cuda.h");
  return llvm::sys::fs::exists(P);
}

static std::string toolkitVersion(llvm::StringRef Dir) {
  llvm::SmallString<256> P(Dir);
  llvm::sys::path::append(P, "include", "cuda.h");
  auto Buf = llvm::MemoryBuffer::getFile(P);
  if (!Buf)
    return "unknown";
  llvm::Regex Def("#define[ \t]+CUDA_VERSION[ \t]+([0-9]+)");
  llvm::SmallVector<llvm::StringRef, 2> M;
  unsigned V = 0;
  if (!Def.match((*Buf)->getBuffer(), &M) || M[1].getAsInteger(10, V))
    return "unknown";
  return std::to_string(V / 1000) + "." + std::to_string(V % 1000 / 10);
}

llvm::Expected<CudaToolkit> findCudaToolkit(llvm::StringRef Explicit) {
  std::vector<std::string> Tried;
  auto Accept = [&](llvm::StringRef Dir) -> std::optional<CudaToolkit> {
    if (Dir.empty())
      return std::nullopt;
    Tried.push_back(Dir.str());
    if (!isToolkit(Dir))
      return std::nullopt;
    return CudaToolkit{Dir.str(), toolkitVersion(Dir)};
  };
  if (!Explicit.empty()) {
    if (auto T = Accept(Explicit))
      return *T;
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--cuda-path=" + Explicit + " holds no include/cuda.h");
  }
  if (const char *Env = std::getenv("CUDA_PATH"))
    if (auto T = Accept(Env))
      return *T;
  if (auto Nvcc = llvm::sys::findProgramByName("nvcc")) {
    llvm::SmallString<256> Real;
    if (!llvm::sys::fs::real_path(*Nvcc, Real))
      if (auto T = Accept(llvm::sys::path::parent_path(llvm::sys::path::parent_path(Real))))
        return *T;
  }
  if (auto T = Accept("/usr/local/cuda"))
    return *T;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "no CUDA toolkit found (tried " + llvm::join(Tried, ", ") +
                                     "); pass --cuda-path=<dir>");
}

/// Text with the body of every destructor of class Name blanked: each character but line breaks a
/// space, read as tokens (braces in its comments and asm strings are not its own); "" where there
/// is none.
static std::string blankDestructors(llvm::StringRef Text, llvm::StringRef Name) {
  clang::LangOptions LO;
  LO.CPlusPlus = LO.CPlusPlus11 = LO.CPlusPlus14 = LO.CPlusPlus17 = true;
  clang::Lexer L(clang::SourceLocation(), LO, Text.begin(), Text.begin(), Text.end());
  std::string Out = Text.str();
  bool Changed = false;
  clang::Token T;
  // The last four tokens' kinds and texts: `~ Name ( )` before the `{` of a body.
  std::vector<std::pair<clang::tok::TokenKind, llvm::StringRef>> Last;
  auto Offset = [&] { return size_t(L.getBufferLocation() - Text.begin()); }; // after the token
  // LexFromRawLexer says when it reached the buffer's end; the token it gives then still counts.
  auto Next = [&] { return !L.LexFromRawLexer(T) || T.isNot(clang::tok::eof); };
  while (Next()) {
    llvm::StringRef Spelled = T.is(clang::tok::raw_identifier) ? T.getRawIdentifier() : llvm::StringRef();
    bool Body = T.is(clang::tok::l_brace) && Last.size() == 4 && Last[0].first == clang::tok::tilde &&
                Last[1].second == Name && Last[2].first == clang::tok::l_paren && Last[3].first == clang::tok::r_paren;
    Last.push_back({T.getKind(), Spelled});
    if (Last.size() > 4)
      Last.erase(Last.begin());
    if (!Body)
      continue;
    size_t Begin = Offset();
    int Depth = 1;
    while (Depth && Next())
      Depth += T.is(clang::tok::l_brace) ? 1 : T.is(clang::tok::r_brace) ? -1 : 0;
    if (Depth) // an unbalanced body: leave the header as it is
      return "";
    for (size_t I = Begin; I + 1 < Offset(); ++I)
      if (Out[I] != '\n')
        Out[I] = ' ';
    Changed = true;
  }
  return Changed ? Out : "";
}

const std::vector<std::pair<std::string, std::string>> &cudaHeaderOverlays(const std::vector<std::string> &ParseArgs) {
  static std::mutex Lock;
  static std::map<std::string, std::vector<std::pair<std::string, std::string>>> ByToolkit;
  std::string Cuda;
  for (llvm::StringRef A : ParseArgs)
    if (A.consume_front("--cuda-path="))
      Cuda = A.str();
  std::lock_guard<std::mutex> G(Lock);
  auto [It, New] = ByToolkit.try_emplace(Cuda);
  if (!New || Cuda.empty())
    return It->second;
  // Spelled as the parse reaches it: cudaParseArgs' -isystem, then the header's include.
  std::string P = Cuda + "/include/cccl/cuda/__barrier/barrier_block_scope.h";
  if (auto Buf = llvm::MemoryBuffer::getFile(P, /*IsText=*/true))
    if (std::string Text = blankDestructors((*Buf)->getBuffer(), "barrier"); !Text.empty())
      It->second.push_back({P, std::move(Text)});
  return It->second;
}

std::string clangResourceDir() {
  if (const char *Env = std::getenv("TILEPIPE_RESOURCE_DIR"))
    return Env;
  return TILEPIPE_CLANG_RESOURCE_DIR;
}

std::vector<std::string> cudaParseArgs(const CudaToolkit &Cuda, llvm::StringRef GpuArch) {
  return {"-x",
          "cuda",
          "--cuda-device-only",
          ("--cuda-gpu-arch=" + GpuArch).str(),
          "--cuda-path=" + Cuda.Path,
          "-isystem",
          Cuda.Path + "/include/cccl",
          "-std=c++17",
          "-resource-dir=" + clangResourceDir(),
          "-Wno-unknown-cuda-version"};
}

clang::tooling::ArgumentsAdjuster cudaArgumentsAdjuster(std::vector<std::string> ParseArgs) {
  return [ParseArgs](const clang::tooling::CommandLineArguments &Args, llvm::StringRef File) {
    clang::tooling::CommandLineArguments Out{"clang++"};
    Out.insert(Out.end(), ParseArgs.begin(), ParseArgs.end());
    for (size_t I = 1; I < Args.size(); ++I) {
      llvm::StringRef A = Args[I];
      auto TakeNext = [&](llvm::StringRef Flag) {
        if (I + 1 < Args.size()) {
          Out.push_back(Flag.str());
          Out.push_back(Args[++I]);
        }
      };
      // nvcc's long forms, with '=' or a separate value, mean what the short ones do.
      static const std::pair<const char *, const char *> Long[] = {
          {"--include-path", "-I"},     {"--system-include", "-isystem"},
          {"--define-macro", "-D"},     {"--undefine-macro", "-U"},
          {"--pre-include", "-include"}};
      const char *Short = nullptr;
      for (const auto &[L, S] : Long)
        if (A == L || A.starts_with(std::string(L) + "="))
          Short = S;
      if (Short && A.contains('=')) {
        Out.push_back(Short);
        Out.push_back(A.split('=').second.str());
      } else if (Short) {
        TakeNext(Short);
      } else if (A == "-I" || A == "-isystem" || A == "-include" || A == "-iquote" ||
                 A == "-idirafter" || A == "-D" || A == "-U" || A == "-imacros")
        TakeNext(A);
      else if (A.starts_with("-imacros") || A.starts_with("-iquote") || A.starts_with("-idirafter") ||
               A.starts_with("-include"))
        Out.push_back(A.str());
      // (Options tilepipe cannot follow are refused before the parse: unfollowedOption.)
      else if (A == "-Xcompiler" || A == "--compiler-options" || A == "--options-file" || A == "-optf")
        ++I;
      else if (A == "--std" || A == "-std")
        I + 1 < Args.size() ? (void)Out.push_back("-std=" + Args[++I]) : (void)0;
      else if (A.starts_with("--std="))
        Out.push_back("-std=" + A.drop_front(6).str());
      else if (A.starts_with("-I") || A.starts_with("-D") || A.starts_with("-U") ||
               A.starts_with("-isystem") || A.starts_with("-std=") || A == "-fsyntax-only" ||
               A.starts_with("-Wno-"))
        Out.push_back(A.str());
      else if (A == File || (!A.starts_with("-") && llvm::sys::path::filename(A) ==
                                                        llvm::sys::path::filename(File) &&
                              A.ends_with(File)))
        Out.push_back(A.str());
    }
    if (llvm::find(Out, File) == Out.end())
      Out.push_back(File.str());
    return Out;
  };
}

std::string unfollowedOption(const std::vector<std::string> &Args) {
  for (size_t I = 1; I < Args.size(); ++I) {
    llvm::StringRef A = Args[I];
    if (A == "--options-file" || A == "-optf" || A.starts_with("--options-file=") ||
        A.starts_with("@"))
      return A.str();
    if (A == "-Xcompiler" || A == "--compiler-options" || A.starts_with("-Xcompiler=") ||
        A.starts_with("--compiler-options=")) {
      // The host compiler's options: nvcc preprocesses with the host compiler, so a macro or an
      // include given there reaches the device code too.
      std::string V = A.contains('=') ? A.split('=').second.str()
                                      : (I + 1 < Args.size() ? Args[++I] : std::string());
      llvm::SmallVector<llvm::StringRef, 4> Items;
      llvm::StringRef(V).split(Items, ',');
      for (llvm::StringRef X : Items) {
        X = X.trim();
        if (X.starts_with("-D") || X.starts_with("-U") || X.starts_with("-I") ||
            X.starts_with("-include") || X.starts_with("-imacros") || X.starts_with("-isystem"))
          return A.contains('=') ? A.str() : A.str() + " " + V;
      }
    }
  }
  return "";
}

} // namespace tilepipe
