// Parse: find the CUDA toolkit and turn compile commands into ones Clang can parse device code with.
#pragma once
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace tilepipe {

struct CudaToolkit {
  std::string Path;    ///< the toolkit root, holding include/cuda.h
  std::string Version; ///< "13.0", from CUDA_VERSION in cuda.h
};

/// The toolkit from, in order: Explicit (--cuda-path), $CUDA_PATH, nvcc on PATH, /usr/local/cuda.
llvm::Expected<CudaToolkit> findCudaToolkit(llvm::StringRef Explicit);

/// What every parse gets: CUDA device compilation for one arch, CCCL headers, C++17.
std::vector<std::string> cudaParseArgs(const CudaToolkit &Cuda, llvm::StringRef GpuArch);

/// Keeps what matters for parsing from a compile command (include paths, macros, the language
/// standard; nvcc's spellings too), drops the rest, and puts cudaParseArgs in front.
clang::tooling::ArgumentsAdjuster cudaArgumentsAdjuster(std::vector<std::string> ParseArgs);

/// The first option of a compile command (nvcc's or a compiler's) that changes what the
/// preprocessor reads in a way tilepipe cannot follow (`--options-file`, a response file `@f`,
/// `-Xcompiler -DX`: nvcc preprocesses with the host compiler), or "".
std::string unfollowedOption(const std::vector<std::string> &Args);

/// The toolkit headers tilepipe's parse reads otherwise than they are on disk (path, text), where
/// Clang rejects what nvcc accepts and a change that no analysis reads makes Clang accept it: the
/// destructor of CCCL's block-scope cuda::barrier, which invalidates its mbarrier, with its body
/// blanked (its lines kept). Clang requires a __shared__ variable's destructor to be empty, nvcc
/// does not, so `__shared__ cuda::barrier<cuda::thread_scope_block> bar;` and a __shared__
/// cuda::pipeline_shared_state (whose stages hold such barriers), which every TMA kernel and CCCL's
/// own examples declare, would each make an error of its function, its uses recovery
/// expressions. A __shared__ variable's destructor never runs in device code, and the rewrite
/// and the audit read none. The toolkit from ParseArgs' --cuda-path; none where its header has no
/// such destructor. The texts live as long as the program (ClangTool maps them by reference).
const std::vector<std::pair<std::string, std::string>> &cudaHeaderOverlays(const std::vector<std::string> &ParseArgs);

/// The Clang resource directory this tool was built against (overridable by $TILEPIPE_RESOURCE_DIR).
std::string clangResourceDir();

} // namespace tilepipe
