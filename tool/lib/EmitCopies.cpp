// Emit, the cp.async copies of the pipeline's copy phase: each store of a tile becomes its
// per-element copy (one ::cuda::memcpy_async of one element), a store that fills a whole tile the
// block-wide 16-byte copy of templates/wide_copy.cu.in, and `t = c ? x : y` a copy or a fill.
#include "EmitPipeline.h"
#include "tilepipe/AstUtil.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace tilepipe::emit {

static const char WideCopyTemplate[] =
#include "WideCopyTemplate.inc"
    ;

namespace {

/// `[0]` K times: the tile's element K dimensions in.
std::string zeros(size_t K) {
  std::string Z;
  for (size_t I = 0; I < K; ++I)
    Z += "[0]";
  return Z;
}

/// `sizeof(V[0]...)`: the size of the tile V, K dimensions in.
std::string sizeIn(const std::string &V, size_t K) { return "sizeof(" + V + zeros(K) + ")"; }

} // namespace

/// The per-element copy of store S: `::cuda::memcpy_async(&dst, &src, size, pipe)`. Extra is the
/// indentation the call gets beyond its statement's.
std::string PipelineEmitter::copyCall(const TileStore &S, const std::string &Extra) const {
  const Expr *Dst = S.Dst->IgnoreParens();
  const Expr *Src = stripNoOps(S.Src);
  std::string D = F.text(Dst->getSourceRange()), R = F.text(Src->getSourceRange());
  if (!isa<ArraySubscriptExpr>(Dst) || Dst->getBeginLoc().isMacroID())
    D = "(" + D + ")";
  if (S.Via) {
    // `v.x` after `float4 v = A4[i];` copies `(A4[i]).x`: the local's read, then the members the
    // store took of it.
    const Expr *Base = Src;
    while (const auto *ME = dyn_cast<MemberExpr>(Base))
      Base = ME->getBase()->IgnoreParens();
    R = "(" + F.text(S.Read->getSourceRange()) + ")" + F.slice(F.end(Base), F.end(Src)).str();
  } else if (S.SrcAddress) {
    // `ld_vec(g + i)` reads at its argument: the copy reads there.
    R = "(" + F.text(S.SrcAddress->getSourceRange()) + ")";
  } else if (!isa<ArraySubscriptExpr>(Src) || Src->getBeginLoc().isMacroID()) {
    R = "(" + R + ")";
  }
  // The element's size through the tile's own name, which the copy phase binds to the tile (its
  // view): the element type as written could name another type where the copy stands.
  const Tile &Tl = M.Tiles[S.TileIdx];
  size_t Rank = 0;
  for (QualType Ty = Tl.Var->getType(); const ArrayType *A = Ty->getAsArrayTypeUnsafe(); Ty = A->getElementType())
    ++Rank;
  // A vector store copies the vector, sized by its type as the view's cast writes it (which the
  // copy phase's text names where the copy stands).
  // A helper's view is written in the helper, whose names may mean something else here: its size
  // as a number.
  const ASTContext &Ctx = M.Function->getASTContext();
  std::string T = sizeIn(Tl.Var->getName().str(), Rank);
  if (S.View && S.Helper)
    T = std::to_string(Ctx.getTypeSizeInChars(S.View->getType()->getPointeeType()).getQuantity());
  else if (S.View)
    T = "sizeof(" + F.text(viewTypeLoc(S.View).getSourceRange()) + ")";
  // An element of another size than its alignment (`float3`) travels as copies of its alignment.
  const bool Odd = !S.View && Ctx.getTypeSizeInChars(Tl.ElementType) != Ctx.getTypeAlignInChars(Tl.ElementType);
  const std::string A = Odd ? "alignof(decltype(" + Tl.Var->getName().str() + zeros(Rank) + "))" : T;
  std::string Head = "::cuda::memcpy_async(&" + D + ", " + (S.SrcAddress ? "" : "&") + R + ",";
  std::string Tail = "::cuda::aligned_size_t<" + A + ">(" + T + "), " + Pipe + ")";
  // Long calls continue under their first argument.
  std::string Ind = F.indentOf(F.begin(S.Statement)) + Extra;
  if (Ind.size() + Cut.Unit.size() + Head.size() + Tail.size() + 2 <= 100)
    return Head + " " + Tail;
  return Head + "\n" + Ind + std::string(21, ' ') + Tail;
}

/// The index of the tile's first element, the same in every thread: this thread's own index less
/// its own thread terms, in the index type as the source has it (IT), in every instantiation.
Lines PipelineEmitter::wideBaseDecl(const TileBox &B, const std::string &IT, const std::string &Base,
                                    const TileStore &S) const {
  const size_t N = B.ThreadDims.size();
  Lines BaseDecl{"using " + IT + " = decltype(+(" + B.Index + "));",
                 "const " + IT + " " + Base + " = (" + IT + ")(" + B.Index + ")"};
  for (size_t D = 0; D < N; ++D)
    BaseDecl.push_back(std::string("    - (") + IT + ")threadIdx." + B.ThreadDims[D] +
                       (D + 1 < N ? " * (" + IT + ")(" + B.Coefficients[D] + ")" : ""));
  BaseDecl.back() += ";";
  size_t Width = F.indentOf(F.begin(S.Statement)).size() + Cut.Unit.size();
  for (size_t I = 1; I < BaseDecl.size(); ++I)
    Width += BaseDecl[I].size() - (I == 1 ? 0 : 3);
  if (Width <= 100) {
    for (size_t I = 2; I < BaseDecl.size(); ++I)
      BaseDecl[1] += BaseDecl[I].substr(3);
    BaseDecl.resize(2);
  }
  return BaseDecl;
}

/// Block-uniform: the tile's rows are whole chunks, the block has the tile's shape, and the source
/// rows and the shared tile start on 16 bytes.
std::string PipelineEmitter::wideFits(const Tile &T, const std::string &Base, const std::string &Ind) const {
  const TileBox &B = T.Box;
  const std::string V = T.Var->getName().str();
  const size_t N = B.ThreadDims.size();
  // The block has the tile's shape: the condition of both whole-tile paths.
  std::vector<std::string> Shape = blockHasShape(V, B.ThreadDims);
  std::vector<std::string> Fits{sizeIn(V, N - 1) + " % 16 == 0"};
  Fits.insert(Fits.end(), Shape.begin(), Shape.end());
  for (size_t D = 0; D + 1 < N; ++D)
    Fits.push_back("(" + B.Coefficients[D] + ") % (16 / " + sizeIn(V, N) + ") == 0");
  Fits.push_back("reinterpret_cast<unsigned long long>(&" + B.Pointer + "[" + Base + "]) % 16 == 0");
  Fits.push_back("__cvta_generic_to_shared(&" + V + zeros(N) + ") % 16 == 0");
  std::string FitsText = llvm::join(Fits, " && ");
  if (Ind.size() + FitsText.size() + 8 > 100)
    FitsText = llvm::join(Fits, " &&\n    ");
  return FitsText;
}

/// The wide copy's fallback, the per-element copy of S. Per element, the threads that differ only
/// in an index the tile does not span copy the same elements to the same places: the first of
/// them copies, the others would only race with it.
Lines PipelineEmitter::perElementCopy(const TileBox &B, const TileStore &S) const {
  const std::string &Unit = Cut.Unit;
  std::vector<std::string> Others;
  for (char Dim : {'x', 'y', 'z'})
    if (!llvm::is_contained(B.ThreadDims, Dim))
      Others.push_back(std::string("threadIdx.") + Dim + " == 0");
  if (Others.empty())
    return {copyCall(S, Unit) + ";"};
  return {"if (" + llvm::join(Others, " && ") + ") // the others copy the same elements",
          Unit + copyCall(S, Unit + Unit) + ";"};
}

/// The block-wide 16-byte copy of the store S that fills the whole tile T (templates/wide_copy.cu.in).
llvm::Expected<std::string> PipelineEmitter::wideCall(const Tile &T, const TileStore &S) {
  const TileBox &B = T.Box;
  const std::string &Unit = Cut.Unit;
  const std::string V = T.Var->getName().str();
  const size_t N = B.ThreadDims.size();
  std::string Chunk = Names.get("chunk");
  std::string IT = Names.get(V + "_index");
  std::string Base = Names.get(V + "_base");
  Lines BaseDecl = wideBaseDecl(B, IT, Base, S);
  // The chunk's coordinates: rows r0..r(n-2), and the first column c of its 16 bytes.
  Lines Coords;
  std::string Dst, Src = Base;
  for (size_t D = 0; D + 1 < N; ++D) {
    std::string R = Names.get("row" + std::to_string(D));
    std::string E = Chunk + " / (" + sizeIn(V, D + 1) + " / 16)";
    if (D > 0)
      E += " % (" + sizeIn(V, D) + " / " + sizeIn(V, D + 1) + ")";
    Coords.push_back("const unsigned " + R + " = " + E + ";");
    Dst += "[" + R + "]";
    Src += " + (" + IT + ")" + R + " * (" + IT + ")(" + B.Coefficients[D] + ")";
  }
  std::string C = Names.get("col");
  Coords.push_back("const unsigned " + C + " = " + Chunk + " % (" + sizeIn(V, N - 1) + " / 16) * (16 / " +
                   sizeIn(V, N) + ");");
  Dst += "[" + C + "]";
  Src += " + (" + IT + ")" + C;
  std::string Ind = F.indentOf(F.begin(S.Statement));
  std::map<std::string, std::string> In = {{"fits", wideFits(T, Base, Ind)},
                                           {"chunk", Chunk},
                                           {"rank", Rank},
                                           {"threads", Threads},
                                           {"tile", V},
                                           {"pipe", Pipe}};
  std::string Ind2 = Ind + Unit + Unit;
  std::string Head = "::cuda::memcpy_async(&" + V + Dst + ",";
  std::string Mid = "&" + B.Pointer + "[" + Src + "],";
  std::string Tail = "::cuda::aligned_size_t<16>(16), " + Pipe + ");";
  Lines Call{Head + " " + Mid + " " + Tail};
  if (Ind2.size() + Call[0].size() > 100)
    Call = {Head, std::string(21, ' ') + Mid, std::string(21, ' ') + Tail};
  std::map<std::string, Lines> Bl = {{"base", mark(BaseDecl)},
                                     {"coordinates", mark(Coords)},
                                     {"copy", mark(Call)},
                                     {"per_element", mark(perElementCopy(B, S))}};
  AnyWide = true;
  return render(WideCopyTemplate, "templates/wide_copy.cu.in", In, Bl, Ind, Unit);
}

/// `t = c ? x : y` (the stores S and S2 of one statement) becomes `if (c) <x> else <y>`: a copy
/// where the value is read, a store where it is filled.
std::string PipelineEmitter::pairCopy(const TileStore &S, const TileStore &S2) const {
  const std::string &Unit = Cut.Unit;
  const Expr *L, *R;
  splitAssignment(S.Statement, L, R);
  const auto *CO = cast<ConditionalOperator>(R->IgnoreParens());
  std::string DstText = F.text(S.Dst->getSourceRange());
  auto Branch = [&](const TileStore &X) {
    return X.Src ? copyCall(X, Unit) : DstText + " = " + F.text(X.Fill->getSourceRange());
  };
  std::string Ind = F.indentOf(F.begin(S.Statement));
  return mark("if (" + F.text(CO->getCond()->IgnoreParens()->getSourceRange()) + ")") + "\n" + Ind + Unit +
         mark(Branch(S) + ";") + "\n" + Ind + mark("else") + "\n" + Ind + Unit + mark(Branch(S2) + ";");
}

/// The cp.async copy phase's edits: each store that reads becomes its copy, whole tiles the wide
/// copy where the plan says so.
llvm::Error PipelineEmitter::copyEdits() {
  // The locals the copies read through: each copy takes its part of the read itself.
  if (Pipelined)
    for (const Stmt *DS : M.ValueDefs)
      Edits.push_back(dropStatement(F, DS));
  for (size_t I = 0; I < M.Stores.size(); ++I) {
    const TileStore &S = M.Stores[I];
    const Tile &T = M.Tiles[S.TileIdx];
    unsigned B = F.begin(S.Statement);
    if (Pipelined && planOf(T).CpAsync == CopyKind::Chunks16 && T.Box.Store == I) {
      auto Wide = wideCall(T, S);
      if (!Wide)
        return Wide.takeError();
      Edits.emplace_back(B, F.afterSemi(S.Statement) - B, std::move(*Wide));
      continue;
    }
    bool Pair = I + 1 < M.Stores.size() && M.Stores[I + 1].Statement == S.Statement;
    if (Pair && Pipelined) {
      Edits.emplace_back(B, F.afterSemi(S.Statement) - B, pairCopy(S, M.Stores[I + 1]));
      ++I;
      continue;
    }
    if (S.Src && Pipelined)
      Edits.emplace_back(B, F.end(S.Statement) - B, mark(copyCall(S)));
  }
  return llvm::Error::success();
}

/// The copy phase with the edits Phase, as lines of the loop body.
Lines PipelineEmitter::copyPhase(const std::vector<Edit> &Phase) const {
  return chunk(editSpan(F, Cut.CopyBegin, Cut.CopyEnd, Phase), Cut.BodyIndent);
}

} // namespace tilepipe::emit
