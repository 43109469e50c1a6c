#include "tilepipe/Runtime.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace tilepipe {

static const char RuntimeHeader[] =
#include "RuntimeHeader.inc"
    ;

llvm::StringRef toolVersion() { return TILEPIPE_VERSION_STRING; }
unsigned runtimeVersion() { return TILEPIPE_RUNTIME_VERSION_NUMBER; }
llvm::StringRef runtimeHeaderText() { return RuntimeHeader; }
llvm::StringRef runtimeHeaderName() { return "tilepipe/runtime.cuh"; }
llvm::StringRef virtualRuntimeDir() { return "/tilepipe-runtime-of-the-parse/include"; }
llvm::StringRef nvccPreludeName() { return "tilepipe_nvcc_prelude.h"; }

std::string runtimeUse(RuntimeMode Mode) {
  const std::string V = std::to_string(runtimeVersion());
  std::string Out;
  if (Mode == RuntimeMode::Header)
    Out = "// tilepipe's runtime for tensor and bulk copies: compile with -I<the folder that\n"
          "// `tilepipe --print-runtime-dir` prints>, or rewrite with --runtime=inline.\n"
          "#include <" + runtimeHeaderName().str() + ">\n";
  else
    Out = runtimeHeaderText().str();
  // The version the calls below were written for (a static_assert, not #if/#error, so that the
  // message can say which version was included); a blank line apart from the user's text.
  return Out + "static_assert(TILEPIPE_RUNTIME_VERSION == " + V + ",\n"
               "              \"rewritten by tilepipe " + toolVersion().str() + " for tilepipe/runtime.cuh version " + V +
         ", but the one included is \"\n"
         "              \"version \" TILEPIPE_RUNTIME_VERSION_STRING);\n\n";
}

llvm::Expected<std::string> findRuntimeDir(llvm::StringRef ExePath) {
  llvm::SmallString<256> Bin(ExePath);
  llvm::sys::path::remove_filename(Bin);
  std::vector<std::string> Tried, Other;
  for (llvm::StringRef Rel : {llvm::StringRef(TILEPIPE_RUNTIME_DIR_FROM_BIN), llvm::StringRef("../include")}) {
    llvm::SmallString<256> Dir(Bin);
    llvm::sys::path::append(Dir, Rel);
    llvm::sys::path::remove_dots(Dir, /*remove_dot_dot=*/true);
    if (llvm::is_contained(Tried, Dir.str()))
      continue;
    Tried.push_back(Dir.str().str());
    llvm::SmallString<256> File(Dir);
    llvm::sys::path::append(File, runtimeHeaderName());
    auto Buf = llvm::MemoryBuffer::getFile(File, /*IsText=*/true);
    if (!Buf)
      continue;
    if ((*Buf)->getBuffer() == runtimeHeaderText())
      return Dir.str().str();
    Other.push_back(File.str().str());
  }
  if (!Other.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   Other.front() + " is not the runtime this tilepipe writes code for (version " +
                                       std::to_string(runtimeVersion()) +
                                       "): install tilepipe again (cmake --install), or rewrite with "
                                       "--runtime=inline");
  std::string List;
  for (const std::string &T : Tried)
    List += (List.empty() ? "" : ", ") + T;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "no " + runtimeHeaderName().str() + " beside the program (looked in " + List +
                                     "): install tilepipe (cmake --install), or rewrite with --runtime=inline");
}

} // namespace tilepipe
