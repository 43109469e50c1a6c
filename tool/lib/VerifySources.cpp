// Verify, for the spec's `sources:` (files the program needs to link): where each lies, and the
// user's headers it includes as nvcc reads it, so that the bundle carries them and builds where the
// sources are not.
#include "tilepipe/Driver.h"
#include "tilepipe/Parse.h"
#include "tilepipe/Verify.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/FileManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <set>

using namespace clang;

namespace tilepipe {

namespace {

/// The user's files (headers, not the toolkit's or the system's) that the file it preprocesses
/// includes.
class UserIncludes : public PreprocessOnlyAction {
public:
  UserIncludes(std::vector<std::string> &Out, std::string Dir) : Out(Out), Dir(std::move(Dir)) {}
  void EndSourceFileAction() override {
    for (std::string &F : userFiles(getCompilerInstance().getSourceManager(), Dir))
      Out.push_back(std::move(F));
    PreprocessOnlyAction::EndSourceFileAction();
  }

private:
  std::vector<std::string> &Out;
  std::string Dir;
};

/// The first error of a run, as `file:line:col: message`.
class FirstError : public DiagnosticConsumer {
public:
  void HandleDiagnostic(DiagnosticsEngine::Level L, const Diagnostic &D) override {
    DiagnosticConsumer::HandleDiagnostic(L, D);
    if (L < DiagnosticsEngine::Error || !Text.empty())
      return;
    SmallString<128> Msg;
    D.FormatDiagnostic(Msg);
    Text = Msg.str().str();
    if (D.hasSourceManager() && D.getLocation().isValid()) {
      PresumedLoc P = D.getSourceManager().getPresumedLoc(D.getLocation());
      if (P.isValid())
        Text = std::string(P.getFilename()) + ":" + std::to_string(P.getLine()) + ":" +
               std::to_string(P.getColumn()) + ": " + Text;
    }
  }
  std::string Text;
};

/// The parse arguments for one of nvcc's passes over File: a CUDA source as the device pass and as
/// the host pass read it; any other (`.cpp`, `.c`) as the host compiler reads C++, with the
/// toolkit's headers.
std::vector<std::vector<std::string>> passArguments(StringRef File, const std::vector<std::string> &ParseArgs) {
  StringRef Ext = llvm::sys::path::extension(File);
  if (Ext == ".cu" || Ext == ".cuh") {
    std::vector<std::string> Host = ParseArgs;
    for (std::string &A : Host)
      if (A == "--cuda-device-only")
        A = "--cuda-host-only";
    return {ParseArgs, Host};
  }
  std::vector<std::string> Cxx{"-x", "c++"};
  for (const std::string &A : ParseArgs) {
    StringRef S = A;
    if (S.starts_with("--cuda-path="))
      Cxx.insert(Cxx.end(), {"-isystem", S.drop_front(12).str() + "/include"});
    else if (S.starts_with("-std=") || S.starts_with("-resource-dir="))
      Cxx.push_back(A);
  }
  for (size_t I = 0; I + 1 < ParseArgs.size(); ++I)
    if (ParseArgs[I] == "-isystem")
      Cxx.insert(Cxx.end(), {"-isystem", ParseArgs[I + 1]});
  return {Cxx};
}

} // namespace

llvm::Error addSpecSources(const LaunchSpec &Spec, const tooling::CompilationDatabase &DB,
                           const std::string &MainFile, const std::vector<std::string> &ParseArgs,
                           VerifyOptions &Opts) {
  llvm::SmallString<256> SpecDir(llvm::sys::path::parent_path(Spec.Path));
  if (SpecDir.empty())
    SpecDir = ".";
  llvm::sys::fs::make_absolute(SpecDir);
  std::set<std::string> Carried;
  for (const std::string &Given : Spec.Sources) {
    llvm::SmallString<256> Abs(Given);
    if (llvm::sys::path::is_relative(Abs))
      llvm::sys::path::make_absolute(SpecDir, Abs);
    llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
    if (!llvm::sys::fs::is_regular_file(Abs))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     Spec.Path + ": error: 'sources' names '" + Given +
                                         "', which is not a file (looked for at " + Abs.str() + ")");
    const std::string File = realPathIn("", Abs);
    if (File == realPathIn("", MainFile))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     Spec.Path + ": error: 'sources' names the file verified itself, '" + Given +
                                         "', which every variant builds already");
    // The user's flags of its own compile command, else of the verified file's.
    std::vector<tooling::CompileCommand> Commands = DB.getCompileCommands(File);
    if (Commands.empty())
      Commands = DB.getCompileCommands(MainFile);
    std::vector<std::string> UserArgs{"nvcc"};
    // Its relative paths (`-Iinc`) are the command's folder's, as the parse of the file reads them.
    FileSystemOptions Folder;
    Folder.WorkingDir = SpecDir.str().str();
    if (!Commands.empty()) {
      UserArgs = Commands.front().CommandLine;
      if (!Commands.front().Directory.empty())
        Folder.WorkingDir = Commands.front().Directory;
    }
    std::vector<std::string> Headers;
    for (const std::vector<std::string> &Pass : passArguments(File, ParseArgs)) {
      std::vector<std::string> Args = cudaArgumentsAdjuster(Pass)(UserArgs, File);
      Args.push_back("-fsyntax-only"); // (the adjuster ends the line with File)
      llvm::IntrusiveRefCntPtr<FileManager> Files(new FileManager(Folder));
      FirstError Diags;
      tooling::ToolInvocation Run(Args, std::make_unique<UserIncludes>(Headers, Folder.WorkingDir), Files.get());
      Run.setDiagnosticConsumer(&Diags);
      if (!Run.run() || !Diags.Text.empty())
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       Spec.Path + ": error: '" + Given +
                                           "' of 'sources' cannot be preprocessed to find the headers the bundle "
                                           "must carry: " +
                                           (Diags.Text.empty() ? "the preprocessor failed" : Diags.Text));
    }
    Opts.ExtraSources.push_back(File);
    for (std::string &H : Headers)
      if (Carried.insert(H).second)
        Opts.ExtraUserFiles.push_back(std::move(H));
  }
  Opts.Link = Spec.Link;
  return llvm::Error::success();
}

} // namespace tilepipe
