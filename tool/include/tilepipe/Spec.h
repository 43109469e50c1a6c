// Launch specs for `tilepipe verify`: which kernels to launch, how, and on which sizes.
#pragma once
#include "llvm/Support/Error.h"
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilepipe {

struct ParamSpec {
  std::string Buffer; ///< label of a device buffer, or empty for a scalar
  std::string Type;   ///< element type of a buffer
  std::string Count;  ///< element count of a buffer (C++ over the size variables)
  std::string Dir;    ///< in, out or inout
  std::string Scalar; ///< by-value argument (C++ over the size variables)
  /// The arithmetic type a buffer's element is made of (`double` for a struct of four doubles):
  /// its random values are drawn as such; empty: the element's own, or random bytes for a class.
  std::string Components;
  /// An input's values, where random ones would not do (indices into another buffer): C++ over the
  /// size variables and `i`, the element's index (long long); empty: random values.
  std::string Fill;
  bool isBuffer() const { return !Buffer.empty(); }
};

struct CaseSpec {
  std::string Name;
  std::map<std::string, int64_t> Sizes;
  bool Timed = false;
  bool Sanitize = true;
  int Misalign = 0; ///< elements by which every buffer pointer is moved off its allocation
};

struct KernelSpec {
  std::string Kernel, Grid, Block, Setup;
  /// Bytes of dynamic shared memory each launch asks for (C++ over the size variables; empty: none).
  std::string Shared;
  std::vector<ParamSpec> Params;
  std::vector<CaseSpec> Cases;
};

struct LaunchSpec {
  std::string Path;
  /// Relative tolerance used when the command line gives none: for kernels whose arithmetic nvcc
  /// may contract differently once the code around it changes (0: bitwise).
  double Tolerance = 0;
  std::vector<KernelSpec> Kernels;
  /// Other source files the program needs to link (functions the file calls that another file
  /// defines), as written: relative to the spec's folder, or absolute. Built into every variant.
  std::vector<std::string> Sources;
  /// nvcc arguments for the command that builds and links each variant (`-lcublas`, `-rdc=true`).
  std::vector<std::string> Link;
};

/// Reads a spec; errors come as `file:line:col: error: ...`.
llvm::Expected<LaunchSpec> readSpec(const std::string &Path);
/// Parses spec text (Name is used in messages).
llvm::Expected<LaunchSpec> parseSpec(llvm::StringRef Text, const std::string &Name);
/// `kernels.cu` -> `kernels.tilepipe.yaml` beside it.
std::string defaultSpecPath(llvm::StringRef Source);

} // namespace tilepipe
