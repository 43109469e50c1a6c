// Emit, for a loop whose stages lie in dynamic shared memory (LoopPlan::DynamicStages): the tiles'
// declarations as references into the region, and the launcher that asks for it
// (templates/dynamic_launcher.cu.in). The legality is docs/legality.md's L3.
#include "EmitPipeline.h"
#include "tilepipe/AstUtil.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace tilepipe::emit {

static const char DynamicLauncherTemplate[] =
#include "DynamicLauncherTemplate.inc"
    ;

/// Each statement that declares tiles, `__shared__ T t[N]...;`, becomes references into dynamic
/// shared memory, `auto &t_stages = *reinterpret_cast<T (*)[S][N]...>(&dynamic_smem[offset]);`,
/// each tile's stages after the last's, on 128 bytes (dynamicStageBytes); the first is preceded by
/// the region's declaration, the stages that live (one below compute capability 8.0, where the
/// loop runs as it was), and the check of the kernel's flag. The element type and extents are the
/// declaration's own text, where it stood.
llvm::Error PipelineEmitter::dynamicTileDecls(std::vector<Replacement> &Out) const {
  ASTContext &Ctx = M.Function->getASTContext();
  // The region's block-scope `extern` declaration names an entity of the namespace around the
  // kernel: a variable of that name there (of another type, or the user's own) would be it.
  for (const DeclContext *DC = M.Function->getEnclosingNamespaceContext(); DC; DC = DC->getParent())
    if (!DC->lookup(DeclarationName(&Ctx.Idents.get(DynamicSmem))).empty())
      return llvm::make_error<EmitError>(Reason::NameBinding,
                                         "'" + DynamicSmem + "', the name the stages' region takes, is declared "
                                         "in a namespace around the kernel, whose entity the region's extern "
                                         "declaration would be");
  std::vector<std::pair<unsigned, const Tile *>> Order;
  for (const Tile &T : M.Tiles)
    Order.push_back({F.offset(T.Var->getLocation()), &T});
  llvm::sort(Order);
  std::map<const DeclStmt *, Lines> ByStmt;
  std::vector<const DeclStmt *> Stmts;
  std::string Offset = "0";
  const std::string Live = Plan.ArchGuard ? LiveStages : std::to_string(Stages);
  for (const auto &[Off, T] : Order) {
    const DeclStmt *DS = declarationOf(Ctx, T->Var);
    if (!DS || T->DeclaredInBody)
      return fail("the declaration of '" + T->Var->getNameAsString() + "' cannot become stages in dynamic shared memory");
    TypeLoc TL = T->Var->getTypeSourceInfo()->getTypeLoc();
    const unsigned NameEnd = Off + T->Var->getName().size();
    const unsigned TypeEnd = F.SM.getFileOffset(
        Lexer::getLocForEndOfToken(F.SM.getExpansionLoc(TL.getEndLoc()), 0, F.SM, F.LO));
    std::string Elem = F.text(elementTypeLoc(T->Var).getSourceRange());
    StringRef Dims = TypeEnd > NameEnd ? F.slice(NameEnd, TypeEnd) : StringRef();
    if (Elem.empty() || !Dims.starts_with("[") || !Dims.ends_with("]"))
      return fail("the declaration of '" + T->Var->getNameAsString() + "' is not `T name[...]` as plain text");
    const std::string Stages = StageArray.at(T->Var);
    if (!ByStmt.count(DS))
      Stmts.push_back(DS);
    ByStmt[DS].push_back("auto &" + Stages + " = *reinterpret_cast<" + Elem + " (*)[" + std::to_string(this->Stages) +
                         "]" + Dims.str() + ">(&" + DynamicSmem + "[" + Offset + "]);");
    Offset = (Offset == "0" ? "" : Offset + " + ") + "(sizeof(" + Stages + "[0]) * " + Live + " + 127) / 128 * 128";
  }
  for (size_t I = 0; I < Stmts.size(); ++I) {
    const DeclStmt *DS = Stmts[I];
    Lines L;
    if (I == 0) {
      L.push_back("// tilepipe: the " + std::to_string(Stages) + " stages lie in dynamic shared memory, which the "
                  "kernel's launcher asks for");
      if (Plan.ArchGuard && Order.size() > 1) // (the offsets after the first tile's stages)
        L.insert(L.end(), {"#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800",
                           "constexpr unsigned " + LiveStages + " = 1; // the loop as it was, on stage 0",
                           "#else", "constexpr unsigned " + LiveStages + " = " + std::to_string(Stages) + ";",
                           "#endif"});
      L.push_back("alignas(16) extern __shared__ unsigned char " + DynamicSmem + "[];");
      L.push_back("if (!" + Plan.DynamicFlag + ") // launched without its launcher, so without room for the stages");
      L.push_back(Cut.Unit + "__trap();");
    }
    L.insert(L.end(), ByStmt[DS].begin(), ByStmt[DS].end());
    const std::string Ind = F.indentOf(F.begin(DS));
    std::string Text;
    for (size_t J = 0; J < L.size(); ++J)
      Text += (J ? "\n" + (StringRef(L[J]).starts_with("#") ? std::string() : Ind) : std::string()) + L[J];
    Out.emplace_back(F.SM, CharSourceRange::getCharRange(F.SM.getComposedLoc(F.FID, F.begin(DS)),
                                                         F.SM.getComposedLoc(F.FID, F.end(DS))),
                     Text);
  }
  return llvm::Error::success();
}

/// The launcher of a kernel whose stages lie in dynamic shared memory
/// (templates/dynamic_launcher.cu.in).
std::string emitDynamicLauncher(const LauncherParts &P) {
  std::vector<std::string> Args = P.Args;
  Args.push_back("true");
  std::map<std::string, std::string> Inline = {
      {"kernel_name", P.KernelName}, {"kernel", P.Kernel}, {"launcher", P.Launcher}, {"qualifier", P.Qualifier},
      {"params", P.Params},        {"args", llvm::join(Args, ", ")},
      {"grid", P.Grid},            {"block", P.Block},       {"shared_bytes", P.SharedBytes},
      {"stream", P.Stream},        {"device", P.Device},     {"major", P.Major},
      {"bytes_var", P.Bytes},      {"bytes", std::to_string(P.DynamicBytes)},
      {"bytes_one", std::to_string(P.DynamicBytesOne)}};
  std::map<std::string, Lines> Blocks = {{"template_header", single(P.TemplateHeader)}};
  auto Text = render(DynamicLauncherTemplate, "templates/dynamic_launcher.cu.in", Inline, Blocks, "", "  ",
                     /*Mark=*/false);
  if (!Text)
    llvm::reportFatalInternalError(llvm::Twine("tilepipe: ") + llvm::toString(Text.takeError()));
  return std::move(*Text);
}

} // namespace tilepipe::emit
