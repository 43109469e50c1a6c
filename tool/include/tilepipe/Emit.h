// Emit: the text edits that turn one checked loop into a multi-stage cp.async pipeline.
#pragma once
#include "tilepipe/Model.h"
#include "tilepipe/Plan.h"
#include "tilepipe/Runtime.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/Error.h"
#include <map>
#include <memory>
#include <optional>

namespace tilepipe {

enum class EmitKind {
  Pipeline,    ///< the rewrite
  ComputeOnly, ///< the timing floor: tiles copied once before the loop, the loop only computes
};

/// Why a loop cannot be emitted: the reason the Driver records for it (Reason::SourceText when
/// its text cannot be cut safely, Reason::Unsupported for the rest) and a detail that says where.
class EmitError : public llvm::ErrorInfo<EmitError> {
public:
  static char ID;
  EmitError(Reason Code, std::string Detail) : Code(Code), Detail(std::move(Detail)) {}
  Reason Code;
  std::string Detail;
  void log(llvm::raw_ostream &OS) const override { OS << Detail; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }
};

/// The loop statement replaced by the pipelined block, and each tile declared before the loop
/// renamed to its stage array. Fails with an EmitError when the source cannot be cut as planned:
/// every piece of the user's text that moves is cut between tokens (checked with the raw lexer)
/// and carries its comments and preprocessor conditionals whole, and every statement the
/// template emits is, in the result, a token of its own and not inside a comment.
llvm::Expected<std::vector<clang::tooling::Replacement>>
emitPipeline(clang::ASTContext &Ctx, const LoopModel &M, const LoopPlan &Plan,
             EmitKind Kind = EmitKind::Pipeline);

/// What goes into the launcher tilepipe writes beside a kernel with tensor copies
/// (templates/tma_launcher.cu.in); every name is one the kernel's text leaves free.
struct LauncherParts {
  std::string KernelName;     ///< the kernel's name
  std::string Kernel;         ///< the kernel as the launch names it (with its template arguments)
  std::string Qualifier;      ///< `::` and its namespaces, for the launch (empty in an unnamed namespace)
  std::string TemplateHeader; ///< `template <...>` for a kernel template, else empty
  std::string Launcher;       ///< the launcher's name
  std::string Params;         ///< ", <each kernel parameter as written>"
  std::vector<std::string> Args;  ///< the kernel's own parameters, by name
  /// The tiles that take tensor copies, each with the parameter that carries its map.
  std::vector<std::pair<const Tile *, std::string>> Tiles;
  std::string Grid, Block, SharedBytes, Stream, Ok, Traced; ///< the launcher's own names
  /// Stages in dynamic shared memory (no tiles with tensor copies then): the bytes a launch asks
  /// for on compute capability 8.0 and later and below, the kernel's flag that says it was
  /// launched so, and the launcher's own names.
  uint64_t DynamicBytes = 0, DynamicBytesOne = 0;
  std::string DynamicFlag, Device, Major, Bytes;
};
std::string emitLauncher(const LauncherParts &P);

/// Names for what tilepipe adds to one function (the tensor maps a kernel takes): each unused in
/// the function's text and by any macro, and different from every name handed out before.
class FreshNames {
public:
  FreshNames(clang::ASTContext &Ctx, const clang::FunctionDecl *FD);
  ~FreshNames();
  std::string get(llvm::StringRef Base);

private:
  struct Impl;
  std::unique_ptr<Impl> P;
};

/// A kernel whose loops take tensor copies, as Plan left it: the tiles with the names of the
/// parameters that carry their maps, and its flag's name.
struct KernelMaps {
  const clang::FunctionDecl *Pattern = nullptr;
  std::string Flag;
  /// The launcher's name: no other name of the translation unit, nor another kernel's launcher,
  /// so that a launch site that calls it by its qualified name reaches this kernel's alone.
  std::string Launcher;
  std::vector<std::pair<const Tile *, std::string>> Tiles;
  /// A loop of the kernel keeps its stages in dynamic shared memory: the bytes every launch gives
  /// them (compute capability 8.0 and later, and below), and the kernel's flag parameter, set only
  /// by the launcher, without which the kernel stops (__trap) rather than overrun its memory.
  uint64_t DynamicBytes = 0, DynamicBytesOne = 0;
  std::string DynamicFlag;
};
/// The kernel's edits: its new parameters (defaulted, so that launches tilepipe does not see still
/// build), the launcher after it, and each launch site of the main file rewritten to call the
/// launcher; Sites says what became of the launch sites, for the remark.
struct KernelMapEdits {
  clang::tooling::Replacements Edits;
  std::string Sites;
};
/// Fails when an edit cannot be placed (the kernel's parameters or end are not in the file).
llvm::Expected<KernelMapEdits> emitKernelMaps(clang::ASTContext &Ctx, const KernelMaps &K, FreshNames &Names,
                                              llvm::ArrayRef<const clang::CUDAKernelCallExpr *> Launches);
/// Why not every launch of kernel P can call a launcher, or "": it has at least one launch in the
/// file, each in host code of the main file, outside macros, after the kernel's definition, with a
/// configuration and arguments free of effects (launchThrough), and device code launches it nowhere.
/// Stages in dynamic shared memory need every launch to ask for their room.
std::string launchSitesProblem(clang::ASTContext &Ctx, const clang::FunctionDecl *P);
/// The kernel launches (`k<<<...>>>(...)`) of host code in the translation unit.
std::vector<const clang::CUDAKernelCallExpr *> hostLaunches(clang::ASTContext &Ctx);

/// `#include <cuda/pipeline>` in front of the file's first include that every compilation sees
/// (outside conditionals, comments and braces) and that comes before FirstEdit, else at the top
/// of the file, unless it is there. With Runtime (a file with tensor or bulk copies), also the
/// headers they use and the runtime (runtimeUse: its include or its text, and the check of its
/// version), unless the file has them. Pipeline says whether the file needs <cuda/pipeline>
/// (the register-staged prefetch does not), Traits whether it needs <cuda/std/type_traits> (a
/// template's guard compares types).
std::optional<clang::tooling::Replacement> pipelineInclude(const clang::SourceManager &SM,
                                                           clang::FileID FID,
                                                           std::optional<RuntimeMode> Runtime = std::nullopt,
                                                           unsigned FirstEdit = ~0u, bool Pipeline = true,
                                                           bool Traits = false);

/// The section '@Name' of a template of several (templates/pipeline.cu.in): its lines up to the
/// next '@' line. A section that is missing is a fatal error that names TemplateName and Name.
std::string templateSection(llvm::StringRef Template, llvm::StringRef TemplateName, llvm::StringRef Name);

/// Template's text with each `${name}` hole replaced by Values[name], read once from left to
/// right (a value is never searched for holes of its own); a value of several lines continues
/// at Indent. A hole without a value is an error that names TemplateName and the hole, in every
/// build type: the template and the code that fills it disagree. A value no hole asks for is fine.
llvm::Expected<std::string> fillHoles(llvm::StringRef Template, llvm::StringRef TemplateName,
                                      const std::map<std::string, std::string> &Values,
                                      llvm::StringRef Indent = "");

} // namespace tilepipe
