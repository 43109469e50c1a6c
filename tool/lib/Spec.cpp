#include "tilepipe/Spec.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"
#include <set>

using namespace tilepipe;

LLVM_YAML_IS_SEQUENCE_VECTOR(ParamSpec)
LLVM_YAML_IS_SEQUENCE_VECTOR(CaseSpec)
LLVM_YAML_IS_SEQUENCE_VECTOR(KernelSpec)

namespace llvm::yaml {

template <> struct MappingTraits<ParamSpec> {
  static void mapping(IO &IO, ParamSpec &P) {
    IO.mapOptional("buffer", P.Buffer);
    IO.mapOptional("type", P.Type);
    IO.mapOptional("count", P.Count);
    IO.mapOptional("dir", P.Dir);
    IO.mapOptional("scalar", P.Scalar);
    IO.mapOptional("components", P.Components);
    IO.mapOptional("fill", P.Fill);
  }
  static std::string validate(IO &, ParamSpec &P) {
    if (P.Buffer.empty() == P.Scalar.empty())
      return "a parameter is either 'buffer: <label>' or 'scalar: <expression>'";
    if (!P.isBuffer()) {
      if (!P.Type.empty() || !P.Count.empty() || !P.Dir.empty() || !P.Components.empty() || !P.Fill.empty())
        return "a scalar takes no type, count, dir, components or fill";
      return "";
    }
    if (P.Type.empty() || P.Count.empty())
      return "buffer '" + P.Buffer + "' needs 'type' and 'count'";
    if (P.Dir != "in" && P.Dir != "out" && P.Dir != "inout")
      return "buffer '" + P.Buffer + "' needs 'dir: in', 'dir: out' or 'dir: inout'";
    if (!P.Fill.empty() && P.Dir == "out")
      return "buffer '" + P.Buffer + "' is an output: its values come from the kernel, not from 'fill'";
    if (!P.Fill.empty() && !P.Components.empty())
      return "buffer '" + P.Buffer + "' has both 'fill' and 'components': its values come from one of them";
    return "";
  }
};

template <> struct CustomMappingTraits<std::map<std::string, int64_t>> {
  static void inputOne(IO &IO, StringRef Key, std::map<std::string, int64_t> &M) {
    IO.mapRequired(Key.str().c_str(), M[Key.str()]);
  }
  static void output(IO &IO, std::map<std::string, int64_t> &M) {
    for (auto &[K, V] : M)
      IO.mapRequired(K.c_str(), V);
  }
};

template <> struct MappingTraits<CaseSpec> {
  static void mapping(IO &IO, CaseSpec &C) {
    IO.mapRequired("name", C.Name);
    IO.mapRequired("sizes", C.Sizes);
    IO.mapOptional("timed", C.Timed, false);
    IO.mapOptional("sanitize", C.Sanitize, true);
    IO.mapOptional("misalign", C.Misalign, 0);
  }
  static std::string validate(IO &, CaseSpec &C) {
    if (C.Misalign < 0 || C.Misalign > 64)
      return "misalign must be between 0 and 64 elements";
    for (auto &[K, V] : C.Sizes) {
      if (K.empty() || !(isAlpha(K[0]) || K[0] == '_') ||
          !llvm::all_of(K, [](char Ch) { return isAlnum(Ch) || Ch == '_'; }))
        return "size variable '" + K + "' is not a C++ identifier";
    }
    return "";
  }
};

template <> struct MappingTraits<KernelSpec> {
  static void mapping(IO &IO, KernelSpec &K) {
    IO.mapRequired("kernel", K.Kernel);
    IO.mapRequired("grid", K.Grid);
    IO.mapRequired("block", K.Block);
    IO.mapOptional("shared", K.Shared);
    IO.mapRequired("params", K.Params);
    IO.mapOptional("setup", K.Setup);
    IO.mapRequired("cases", K.Cases);
  }
  static std::string validate(IO &, KernelSpec &K) {
    if (K.Cases.empty())
      return "kernel '" + K.Kernel + "' has no cases";
    unsigned Timed = 0;
    for (const CaseSpec &C : K.Cases) {
      Timed += C.Timed;
      std::set<std::string> A, B;
      for (auto &[N, V] : C.Sizes)
        A.insert(N);
      for (auto &[N, V] : K.Cases.front().Sizes)
        B.insert(N);
      if (A != B)
        return "case '" + C.Name + "' of kernel '" + K.Kernel +
               "' sets other size variables than case '" + K.Cases.front().Name + "'";
    }
    if (Timed > 1)
      return "kernel '" + K.Kernel + "' has more than one 'timed: true' case";
    return "";
  }
};

template <> struct MappingTraits<LaunchSpec> {
  static void mapping(IO &IO, LaunchSpec &S) {
    IO.mapOptional("tolerance", S.Tolerance, 0.0);
    IO.mapRequired("kernels", S.Kernels);
    IO.mapOptional("sources", S.Sources);
    IO.mapOptional("link", S.Link);
  }
  static std::string validate(IO &, LaunchSpec &S) {
    if (S.Tolerance < 0 || S.Tolerance > 0.1)
      return "tolerance must be between 0 and 0.1";
    for (const std::string &F : S.Sources)
      if (F.empty())
        return "'sources' names an empty path";
    for (const std::string &A : S.Link)
      if (A.empty() || A.find_first_of("\n\r") != std::string::npos)
        return "'link' holds an empty argument or one with a line break";
    return S.Kernels.empty() ? "the spec lists no kernels" : "";
  }
};

} // namespace llvm::yaml

namespace tilepipe {

llvm::Expected<LaunchSpec> parseSpec(llvm::StringRef Text, const std::string &Name) {
  std::string Errors;
  auto Handler = [](const llvm::SMDiagnostic &D, void *Ctx) {
    llvm::raw_string_ostream OS(*static_cast<std::string *>(Ctx));
    D.print(nullptr, OS, /*ShowColors=*/false);
  };
  auto Buffer = llvm::MemoryBuffer::getMemBuffer(Text, Name);
  llvm::yaml::Input In(Buffer->getMemBufferRef(), nullptr, Handler, &Errors);
  LaunchSpec Spec;
  In >> Spec;
  if (In.error() || !Errors.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   Errors.empty() ? Name + ": error: invalid spec" : llvm::StringRef(Errors).rtrim().str());
  Spec.Path = Name;
  return Spec;
}

llvm::Expected<LaunchSpec> readSpec(const std::string &Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/true);
  if (!Buf)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   Path + ": error: cannot read the spec: " + Buf.getError().message());
  return parseSpec((*Buf)->getBuffer(), Path);
}

std::string defaultSpecPath(llvm::StringRef Source) {
  llvm::SmallString<256> P(Source);
  llvm::sys::path::replace_extension(P, "");
  return (P + ".tilepipe.yaml").str();
}

} // namespace tilepipe
