// Emit: cut the loop's own text into pieces (header, copy phase, compute phase) and place them in
// the pipeline skeleton of templates/pipeline.cu.in. Nothing is pretty-printed: every piece of user
// code is the user's text, so comments, macros and formatting inside the loop survive.
#include "tilepipe/Emit.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Runtime.h"
#include "clang/AST/Decl.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/Stmt.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Regex.h"
#include <map>
#include <set>

using namespace clang;
using tooling::Replacement;

namespace tilepipe {

char EmitError::ID = 0;

static const char PipelineTemplate[] =
#include "PipelineTemplate.inc"
    ;
static const char ComputeOnlyTemplate[] =
#include "ComputeOnlyTemplate.inc"
    ;
static const char WideCopyTemplate[] =
#include "WideCopyTemplate.inc"
    ;
static const char TmaLauncherTemplate[] =
#include "TmaLauncherTemplate.inc"
    ;

std::string templateSection(StringRef All, StringRef TemplateName, StringRef Name) {
  size_t B = All.starts_with("@" + Name.str() + "\n") ? 0 : All.find("\n@" + Name.str() + "\n");
  // A template and the code that renders it disagree: a defect of this build of tilepipe, fatal in
  // every build type (an assert would let a Release build emit a loop without it).
  if (B == StringRef::npos)
    llvm::reportFatalInternalError(llvm::Twine("tilepipe: the template ") + TemplateName + " has no section '@" +
                                   Name + "'");
  B = All.find('\n', B + 1) + 1;
  size_t E = All.find("\n@", B);
  return All.slice(B, E == StringRef::npos ? All.size() : E + 1).str();
}

/// One '@name' section of templates/pipeline.cu.in.
static std::string section(StringRef Name) {
  return templateSection(PipelineTemplate, "templates/pipeline.cu.in", Name);
}

namespace {

using Lines = std::vector<std::string>;

/// Marks a line of a block that keeps its own indentation.
const char Verbatim = '\x01';

/// Offsets and text of the main file.
class FileText {
public:
  FileText(ASTContext &Ctx, FileID FID)
      : Ctx(Ctx), SM(Ctx.getSourceManager()), LO(Ctx.getLangOpts()), FID(FID) {
    Buffer = SM.getBufferData(FID);
  }
  ASTContext &Ctx;
  const SourceManager &SM;
  const LangOptions &LO;
  FileID FID; ///< the file that holds the loop: the main file or a header
  StringRef Buffer;

  unsigned offset(SourceLocation L) const { return SM.getFileOffset(SM.getExpansionLoc(L)); }
  unsigned begin(const Stmt *S) const { return offset(S->getBeginLoc()); }
  /// Just past the last token of S.
  unsigned end(const Stmt *S) const {
    SourceLocation E = SM.getExpansionRange(S->getEndLoc()).getEnd();
    return SM.getFileOffset(Lexer::getLocForEndOfToken(E, 0, SM, LO));
  }
  /// Just past S's terminating semicolon, if one follows.
  unsigned afterSemi(const Stmt *S) const {
    SourceLocation E = SM.getExpansionRange(S->getEndLoc()).getEnd();
    SourceLocation After = Lexer::findLocationAfterToken(E, tok::semi, SM, LO, false);
    return After.isValid() ? SM.getFileOffset(After) : end(S);
  }
  StringRef slice(unsigned B, unsigned E) const { return Buffer.slice(B, E); }
  std::string text(SourceRange R) const { return sourceText(Ctx, R); }
  unsigned lineStart(unsigned Off) const {
    size_t NL = Buffer.rfind('\n', Off == 0 ? 0 : Off - 1);
    return NL == StringRef::npos ? 0 : NL + 1;
  }
  bool firstOnLine(unsigned Off) const {
    return Buffer.slice(lineStart(Off), Off).find_first_not_of(" \t") == StringRef::npos;
  }
  /// Where a piece of text ends that runs up to the statement at Off: the start of Off's line when
  /// the statement begins it, so that the piece keeps its own last line whole.
  unsigned cutBefore(unsigned Off) const { return firstOnLine(Off) ? lineStart(Off) : Off; }
  std::string indentOf(unsigned Off) const {
    StringRef Line = Buffer.slice(lineStart(Off), Off);
    return Line.take_while([](char C) { return C == ' ' || C == '\t'; }).str();
  }
};

/// The loop's text as Clang's raw lexer sees it, comments kept as tokens: where each token,
/// comment and preprocessor conditional lies. Emit moves slices of this text into the template
/// and re-indents their lines; that keeps their meaning only when each slice begins and ends
/// between tokens, holds no line comment continued by a backslash-newline (the line after it,
/// inside the comment, would be whatever Emit puts there), no other token that spans lines (a
/// string or a token spliced by a backslash-newline: re-indenting would change it), and no
/// preprocessor conditional that opens or closes outside it.
class SourceTokens {
public:
  enum Kind { Code, LineComment, BlockComment };
  struct Token {
    unsigned B, E; ///< [B, E) in the file
    Kind K;
    bool Lines;    ///< the token spans a newline
    int Cond;      ///< a conditional directive: +1 #if*, -1 #endif, 0 #else/#elif (2: none)
  };
  /// Lexes from From (a token boundary) up to the first token at or past To that starts a line.
  SourceTokens(const FileText &F, unsigned From, unsigned To) : F(F) {
    Lexer Raw(F.SM.getLocForStartOfFile(F.FID), F.LO, F.Buffer.begin(), F.Buffer.begin() + From,
              F.Buffer.end());
    Raw.SetCommentRetentionState(true);
    bool AfterHash = false;
    for (;;) {
      clang::Token T;
      bool End = Raw.LexFromRawLexer(T);
      if (T.is(tok::eof))
        break;
      unsigned B = F.SM.getFileOffset(T.getLocation()), E = B + T.getLength();
      if (B >= To && T.isAtStartOfLine())
        break;
      StringRef Text = F.Buffer.slice(B, E);
      Kind K = !T.is(tok::comment) ? Code : Text.starts_with("//") ? LineComment : BlockComment;
      int Cond = 2;
      if (AfterHash && T.is(tok::raw_identifier)) {
        StringRef D = T.getRawIdentifier();
        if (D == "if" || D == "ifdef" || D == "ifndef")
          Cond = 1;
        else if (D == "endif")
          Cond = -1;
        else if (D == "else" || D == "elif" || D == "elifdef" || D == "elifndef")
          Cond = 0;
      }
      AfterHash = T.is(tok::hash) && T.isAtStartOfLine();
      Tokens.push_back({B, E, K, Text.find_first_of("\n\r") != StringRef::npos, Cond});
      if (End)
        break;
    }
  }

  /// Why [B, E) cannot be moved, or "" when it can. What names the slice for the message.
  std::string problem(unsigned B, unsigned E, StringRef What) const {
    auto Where = [&](unsigned Off) { return "line " + std::to_string(F.SM.getLineNumber(F.FID, Off)); };
    for (unsigned Cut : {B, E})
      if (const Token *T = straddling(Cut))
        return What.str() + " would be cut inside " +
               (T->K == Code ? "a token" : T->K == LineComment ? "a line comment" : "a block comment") +
               " at " + Where(T->B);
    int Depth = 0;
    for (const Token &T : Tokens) {
      if (T.B < B || T.E > E)
        continue;
      if (T.K == LineComment && T.Lines)
        return "in " + What.str() + ", the line comment at " + Where(T.B) +
               " continues onto the next line (its line ends in a backslash)";
      if (T.K == Code && T.Lines)
        return "in " + What.str() + ", a token at " + Where(T.B) +
               " spans lines (a string or a backslash-newline inside a token)";
      if (T.Cond != 2) {
        Depth += T.Cond;
        if (Depth < 0 || (T.Cond == 0 && Depth == 0))
          return "in " + What.str() + ", the preprocessor conditional at " + Where(T.B) +
                 " belongs to one that opens outside it";
      }
    }
    if (Depth != 0)
      return "in " + What.str() + ", a preprocessor conditional opens and does not close";
    return "";
  }

  /// Whether code follows Off on its line (before a newline that is not inside a comment): text
  /// put before Off that ends a line (a directive) would then take that code into its line.
  bool codeFollowsOnLine(unsigned Off) const {
    unsigned P = Off;
    for (const Token &T : Tokens) {
      if (T.B < Off)
        continue;
      if (F.Buffer.slice(P, T.B).contains('\n') || T.K == LineComment)
        return false;
      if (T.K == Code)
        return true;
      P = T.E;
    }
    return false;
  }

private:
  const FileText &F;
  std::vector<Token> Tokens;
  /// The token that Off falls strictly inside, if any.
  const Token *straddling(unsigned Off) const {
    auto It = llvm::upper_bound(Tokens, Off, [](unsigned O, const Token &T) { return O < T.B; });
    if (It == Tokens.begin())
      return nullptr;
    --It;
    return It->B < Off && Off < It->E ? &*It : nullptr;
  }
};

/// Marks where text that Emit writes itself begins (a template line, a statement it makes), so
/// that the final text can be checked: each such piece must begin with a token of its own, not
/// inside a comment that the user's text opened. Removed before the text leaves Emit.
const char Own = '\x02';

/// S marked as Emit's own.
std::string mark(std::string S) { return Own + S; }
Lines mark(Lines L) {
  for (std::string &S : L)
    S = mark(std::move(S));
  return L;
}
/// L without its mark, for tests of how it begins.
StringRef bare(StringRef L) { return L.starts_with(StringRef(&Own, 1)) ? L.drop_front() : L; }

/// Text with its marks removed, or why a piece of Emit's own in it does not begin with a token:
/// the last line of defence against a cut that let the user's comment take in emitted code.
std::string unmark(std::string &Text, const LangOptions &LO) {
  std::vector<unsigned> Starts;
  std::string Out;
  Out.reserve(Text.size());
  for (char C : Text)
    if (C == Own)
      Starts.push_back(Out.size());
    else
      Out += C;
  for (unsigned &Start : Starts)
    while (Start < Out.size() && (Out[Start] == ' ' || Out[Start] == '\t'))
      ++Start;
  Text = std::move(Out);
  // Lexed on its own, from a location whose raw encoding is 0, so that a token's raw encoding is
  // its offset in Text. The text replaces the loop from the start of a line or from the loop's
  // first token, outside any comment, so it lexes here as it does in the file.
  std::set<unsigned> CodeStarts;
  Lexer Raw(SourceLocation(), LO, Text.data(), Text.data(), Text.data() + Text.size());
  Raw.SetCommentRetentionState(true);
  int Depth = 0; // of preprocessor conditionals: the text must hold whole ones
  bool AfterHash = false;
  for (;;) {
    clang::Token T;
    bool End = Raw.LexFromRawLexer(T);
    if (T.is(tok::eof))
      break;
    if (!T.is(tok::comment))
      CodeStarts.insert(T.getLocation().getRawEncoding());
    if (AfterHash && T.is(tok::raw_identifier)) {
      StringRef D = T.getRawIdentifier();
      Depth += D == "if" || D == "ifdef" || D == "ifndef" ? 1 : D == "endif" ? -1 : 0;
      if (Depth < 0 || (Depth == 0 && D.starts_with("el")))
        return "the emitted text has a '#" + D.str() + "' without its '#if'";
    }
    AfterHash = T.is(tok::hash) && T.isAtStartOfLine();
    if (End)
      break;
  }
  if (Depth != 0)
    return "the emitted text has an '#if' without its '#endif'";
  for (unsigned Start : Starts)
    if (!CodeStarts.count(Start)) {
      size_t End = Text.find('\n', Start);
      return "the emitted code '" + Text.substr(Start, End == std::string::npos ? End : End - Start) +
             "' would not be code (a comment of the loop's text would take it in)";
    }
  return "";
}

/// Splits raw source into lines relative to the indentation Base, dropping blank edges.
Lines chunk(StringRef Text, StringRef Base) {
  Lines Out;
  SmallVector<StringRef, 32> Raw;
  Text.split(Raw, '\n');
  bool First = true;
  for (StringRef L : Raw) {
    L = L.rtrim(" \t\r");
    if (First) {
      First = false;
      // A piece that starts in mid-line carries no indentation of its own.
      if (!L.empty() && L.front() != ' ' && L.front() != '\t') {
        Out.push_back(L.str());
        continue;
      }
    }
    if (L.starts_with(Base))
      Out.push_back(L.drop_front(Base.size()).str());
    else if (L.starts_with("#"))
      Out.push_back(Verbatim + L.str()); // a directive in column 0 stays there
    else
      Out.push_back(L.ltrim(" \t").str());
  }
  while (!Out.empty() && Out.front().empty())
    Out.erase(Out.begin());
  while (!Out.empty() && Out.back().empty())
    Out.pop_back();
  return Out;
}

/// Applies in-range edits to the text [B, E).
std::string editSpan(const FileText &F, unsigned B, unsigned E,
                     std::vector<std::tuple<unsigned, unsigned, std::string>> Edits) {
  llvm::sort(Edits);
  std::string Out;
  unsigned Pos = B;
  for (auto &[Off, Len, New] : Edits) {
    if (Off < Pos || Off + Len > E)
      continue;
    Out += F.slice(Pos, Off).str();
    Out += New;
    Pos = Off + Len;
  }
  Out += F.slice(Pos, E).str();
  return Out;
}

/// Picks names for the generated variables that nothing in the function or any macro uses.
class Namer {
public:
  Namer(const FileText &F, const FunctionDecl *FD) : F(F) {
    unsigned B = F.offset(FD->getBeginLoc());
    unsigned E = F.end(FD->getBody());
    Lexer Raw(F.SM.getLocForStartOfFile(F.FID), F.LO, F.Buffer.begin(),
              F.Buffer.begin() + B, F.Buffer.end());
    Token Tok;
    while (!Raw.LexFromRawLexer(Tok) && F.SM.getFileOffset(Tok.getLocation()) < E)
      if (Tok.is(tok::raw_identifier))
        Used.insert(Tok.getRawIdentifier().str());
  }
  std::string get(StringRef Base) {
    std::string Name = Base.str();
    for (unsigned I = 1; Used.count(Name) || isMacro(Name); ++I)
      Name = (Base + "_" + Twine(I)).str();
    Used.insert(Name);
    return Name;
  }

private:
  const FileText &F;
  std::set<std::string> Used;
  bool isMacro(const std::string &Name) const {
    auto It = F.Ctx.Idents.find(Name);
    return It != F.Ctx.Idents.end() && It->getValue()->hasMacroDefinition();
  }
};

/// Fills templates/pipeline.cu.in: ${name} inline, or a line holding only ${name} replaced by a block.
/// Each line of the template that is code is marked as Emit's own (mark), unless Mark is false.
std::string render(StringRef Template, const std::map<std::string, std::string> &Inline,
                   const std::map<std::string, Lines> &Blocks, StringRef Base, StringRef Unit,
                   bool Mark = true) {
  SmallVector<StringRef, 64> TemplateLines;
  Template.rtrim('\n').split(TemplateLines, '\n');
  std::string Out;
  bool First = true;
  auto Emit = [&](const std::string &Indent, StringRef Line) {
    if (!First)
      Out += "\n";
    if (!Line.empty())
      Out += (First ? "" : Indent) + Line.str();
    First = false;
  };
  for (StringRef T : TemplateLines) {
    size_t Spaces = T.find_first_not_of(' ');
    if (Spaces == StringRef::npos)
      Spaces = T.size();
    std::string Indent = Base.str();
    for (size_t I = 0; I < Spaces / 2; ++I)
      Indent += Unit.str();
    StringRef Body = T.drop_front(Spaces);
    if (Body.starts_with("${") && Body.ends_with("}") && Body.count("${") == 1) {
      auto It = Blocks.find(Body.drop_front(2).drop_back().str());
      if (It != Blocks.end()) {
        for (const std::string &L : It->second)
          if (!L.empty() && L.front() == Verbatim)
            Emit("", StringRef(L).drop_front());
          else
            Emit(Indent, L);
        continue;
      }
    }
    std::string Line = Body.str();
    for (auto &[Key, V] : Inline) {
      // A value of several lines continues at the indentation of the line it is put in.
      std::string Value;
      for (char C : V)
        Value += C == '\n' ? "\n" + Indent : std::string(1, C);
      std::string Pattern = "${" + Key + "}";
      for (size_t P = Line.find(Pattern); P != std::string::npos; P = Line.find(Pattern, P + Value.size()))
        Line.replace(P, Pattern.size(), Value);
    }
    if (Mark && !Line.empty() && !StringRef(Line).starts_with("//"))
      Line = mark(std::move(Line));
    Emit(Body.starts_with("#") ? "" : Indent, Line); // a directive of the template stays in column 0
  }
  return Out;
}

Lines single(std::string S) { return S.empty() ? Lines{} : Lines{std::move(S)}; }

/// The block has the shape of the tile V (an expression of its array type) whose dimensions the
/// thread indices ThreadDims select: `blockDim.y == sizeof(V) / sizeof(V[0])`, ...
std::vector<std::string> blockHasShape(const std::string &V, const std::vector<char> &ThreadDims) {
  std::vector<std::string> Out;
  std::string Outer = "sizeof(" + V;
  for (char Dim : ThreadDims) {
    std::string Inner = Outer + "[0]";
    Out.push_back(std::string("blockDim.") + Dim + " == " + Outer + ") / " + Inner + ")");
    Outer = Inner;
  }
  return Out;
}

} // namespace

llvm::Expected<std::vector<Replacement>> emitPipeline(ASTContext &Ctx, const LoopModel &M,
                                                      const LoopPlan &Plan, EmitKind Kind) {
  const bool Pipelined = Kind == EmitKind::Pipeline;
  const unsigned Stages = Plan.Stages;
  // How the plan copies a tile of M.
  auto PlanOf = [&](const Tile &T) -> const TilePlan & { return Plan.Tiles[&T - M.Tiles.data()]; };
  // The loop's copy-engine path: every tile one bulk copy, or one tensor copy through its map.
  const bool TmaLoop = Pipelined && Plan.Engine && !M.Tiles.empty();
  FileText F(Ctx, Ctx.getSourceManager().getFileID(
                      Ctx.getSourceManager().getExpansionLoc(M.Loop->getBeginLoc())));
  auto Fail = [](const Twine &Why) { return llvm::make_error<EmitError>(Reason::Unsupported, Why.str()); };
  if (Plan.Tiles.size() != M.Tiles.size() || Stages < 2)
    return Fail("internal: the plan does not fit the loop");
  // The plan chooses among what the model allows, and Emit trusts nothing else.
  for (const Tile &T : M.Tiles) {
    const TilePlan &TP = PlanOf(T);
    if ((TP.CpAsync == CopyKind::Chunks16 && !T.Box.wide()) ||
        (TmaLoop && !(TP.Kind == CopyKind::Bulk ? T.Box.Valid && T.Box.Bulk
                                                : TP.Kind == CopyKind::Tensor && T.Box.Valid && T.Box.Tma &&
                                                      !TP.MapName.empty())))
      return Fail("internal: the plan copies '" + T.Var->getName() + "' in a way its box does not allow");
  }
  // The loop's text cannot be cut safely: the loop is left alone with reason source-text.
  auto CannotCut = [](const std::string &Why) { return llvm::make_error<EmitError>(Reason::SourceText, Why); };
  const auto *Body = [&]() -> const CompoundStmt * {
    if (const auto *For = dyn_cast<ForStmt>(M.Loop))
      return cast<CompoundStmt>(For->getBody());
    return cast<CompoundStmt>(cast<WhileStmt>(M.Loop)->getBody());
  }();
  Namer Names(F, M.Function);
  std::string Pipe = Names.get("pipe"), FetchStage = Names.get("fetch_stage"),
              Stage = Names.get("stage"), Issue = Names.get("issue_tile"),
              Prologue = Names.get("prologue");
  std::map<const VarDecl *, std::string> StageArray, Cursor;
  for (const Tile &T : M.Tiles)
    StageArray[T.Var] = Names.get(T.Var->getName().str() + "_stages");
  for (const VarDecl *V : M.Inductions)
    Cursor[V] = Names.get(V->getName().str() + "_fetch");

  // Indentation: the loop's own, and one step of the body below it.
  unsigned LoopOff = F.begin(M.Loop);
  std::string Base = F.indentOf(LoopOff);
  std::string BodyIndent = Body->body_empty() ? Base + "  " : F.indentOf(F.begin(Body->body_front()));
  std::string Unit = BodyIndent.size() > Base.size() && StringRef(BodyIndent).starts_with(Base)
                         ? BodyIndent.substr(Base.size())
                         : std::string("  ");

  // Copy phase: from just after the body's '{' (or the leading barrier) to the copy barrier.
  unsigned CopyBegin = M.Form == LoopForm::Rotated ? F.afterSemi(M.FirstBarrier)
                                                   : F.offset(Body->getLBracLoc()) + 1;
  unsigned CopyEnd = F.cutBefore(F.begin(M.CopyBarrier));
  std::vector<std::tuple<unsigned, unsigned, std::string>> Edits;
  for (const Tile &T : M.Tiles)
    if (T.DeclaredInBody) {
      unsigned B = F.begin(T.DeclaredInBody), E = F.end(T.DeclaredInBody);
      if (F.firstOnLine(B) && F.slice(E, F.Buffer.find('\n', E)).trim().empty()) {
        B = F.lineStart(B);
        E = F.Buffer.find('\n', E) + 1;
      }
      Edits.emplace_back(B, E - B, "");
    }
  auto CopyCall = [&](const TileStore &S, const std::string &Extra = "") {
    const Expr *Dst = S.Dst->IgnoreParens();
    const Expr *Src = stripNoOps(S.Src);
    std::string D = F.text(Dst->getSourceRange()), R = F.text(Src->getSourceRange());
    if (!isa<ArraySubscriptExpr>(Dst) || Dst->getBeginLoc().isMacroID())
      D = "(" + D + ")";
    if (!isa<ArraySubscriptExpr>(Src) || Src->getBeginLoc().isMacroID())
      R = "(" + R + ")";
    const std::string &T = M.Tiles[S.TileIdx].ElementTypeText;
    std::string Head = "::cuda::memcpy_async(&" + D + ", &" + R + ",";
    std::string Tail = "::cuda::aligned_size_t<sizeof(" + T + ")>(sizeof(" + T + ")), " + Pipe + ")";
    // Long calls continue under their first argument.
    std::string Ind = F.indentOf(F.begin(S.Statement)) + Extra;
    if (Ind.size() + Unit.size() + Head.size() + Tail.size() + 2 <= 100)
      return Head + " " + Tail;
    return Head + "\n" + Ind + std::string(21, ' ') + Tail;
  };
  // A store that fills a whole tile (its box is known) gets the block-wide 16-byte copy, with the
  // per-element copy kept for blocks of another shape and unaligned addresses.
  std::string Rank = Names.get("rank"), Threads = Names.get("threads");
  // Tensor copies replace the whole cp.async loop, and only where every tile takes them.
  std::string Bars, Leader, TileBytes, Parities, StageVar, TensorCopies, AlignedVar, Probe;
  if (TmaLoop) {
    Bars = Names.get("stage_barriers");
    Leader = Names.get("leader");
    TensorCopies = Names.get("tensor_copies");
    AlignedVar = Names.get("tiles_aligned");
    Probe = Names.get("probe");
    Parities = Names.get("parities");
    StageVar = Names.get("s");
  }
  bool AnyWide = false;
  auto WideCall = [&](const Tile &T, const TileStore &S) {
    const TileBox &B = T.Box;
    const std::string V = T.Var->getName().str();
    const size_t N = B.ThreadDims.size();
    std::string Chunk = Names.get("chunk");
    auto Zeros = [](size_t K) {
      std::string Z;
      for (size_t I = 0; I < K; ++I)
        Z += "[0]";
      return Z;
    };
    auto Size = [&](size_t K) { return "sizeof(" + V + Zeros(K) + ")"; };
    // The index of the tile's first element, the same in every thread: this thread's own index
    // less its own thread terms.
    // The index type as the source has it, in every instantiation.
    std::string IT = Names.get(V + "_index");
    std::string Base = Names.get(V + "_base");
    Lines BaseDecl{"using " + IT + " = decltype(+(" + B.Index + "));",
                   "const " + IT + " " + Base + " = (" + IT + ")(" + B.Index + ")"};
    for (size_t D = 0; D < N; ++D)
      BaseDecl.push_back(std::string("    - (") + IT + ")threadIdx." + B.ThreadDims[D] +
                         (D + 1 < N ? " * (" + IT + ")(" + B.Coefficients[D] + ")" : ""));
    BaseDecl.back() += ";";
    size_t Width = F.indentOf(F.begin(S.Statement)).size() + Unit.size();
    for (size_t I = 1; I < BaseDecl.size(); ++I)
      Width += BaseDecl[I].size() - (I == 1 ? 0 : 3);
    if (Width <= 100) {
      for (size_t I = 2; I < BaseDecl.size(); ++I)
        BaseDecl[1] += BaseDecl[I].substr(3);
      BaseDecl.resize(2);
    }
    // The chunk's coordinates: rows r0..r(n-2), and the first column c of its 16 bytes.
    Lines Coords;
    std::string Dst, Src = Base;
    for (size_t D = 0; D + 1 < N; ++D) {
      std::string R = Names.get("row" + std::to_string(D));
      std::string E = Chunk + " / (" + Size(D + 1) + " / 16)";
      if (D > 0)
        E += " % (" + Size(D) + " / " + Size(D + 1) + ")";
      Coords.push_back("const unsigned " + R + " = " + E + ";");
      Dst += "[" + R + "]";
      Src += " + (" + IT + ")" + R + " * (" + IT + ")(" + B.Coefficients[D] + ")";
    }
    std::string C = Names.get("col");
    Coords.push_back("const unsigned " + C + " = " + Chunk + " % (" + Size(N - 1) + " / 16) * (16 / " +
                     Size(N) + ");");
    Dst += "[" + C + "]";
    Src += " + (" + IT + ")" + C;
    // The block has the tile's shape: the condition of both whole-tile paths.
    std::vector<std::string> Shape = blockHasShape(V, B.ThreadDims);
    // Block-uniform: the tile's rows are whole chunks, the block has the tile's shape, and the
    // source rows and the shared tile start on 16 bytes.
    std::vector<std::string> Fits{Size(N - 1) + " % 16 == 0"};
    Fits.insert(Fits.end(), Shape.begin(), Shape.end());
    for (size_t D = 0; D + 1 < N; ++D)
      Fits.push_back("(" + B.Coefficients[D] + ") % (16 / " + Size(N) + ") == 0");
    Fits.push_back("reinterpret_cast<unsigned long long>(&" + B.Pointer + "[" + Base + "]) % 16 == 0");
    Fits.push_back("__cvta_generic_to_shared(&" + V + Zeros(N) + ") % 16 == 0");
    std::string Ind = F.indentOf(F.begin(S.Statement));
    std::string FitsText = llvm::join(Fits, " && ");
    if (Ind.size() + FitsText.size() + 8 > 100)
      FitsText = llvm::join(Fits, " &&\n    ");
    std::map<std::string, std::string> In = {{"fits", FitsText}, {"chunk", Chunk},
                                             {"rank", Rank},     {"threads", Threads},
                                             {"tile", V},
                                             {"pipe", Pipe}};
    std::string Ind2 = Ind + Unit + Unit;
    std::string Head = "::cuda::memcpy_async(&" + V + Dst + ",";
    std::string Mid = "&" + B.Pointer + "[" + Src + "],";
    std::string Tail = "::cuda::aligned_size_t<16>(16), " + Pipe + ");";
    Lines Call{Head + " " + Mid + " " + Tail};
    if (Ind2.size() + Call[0].size() > 100)
      Call = {Head, std::string(21, ' ') + Mid, std::string(21, ' ') + Tail};
    // Per element, the threads that differ only in an index the tile does not span copy the same
    // elements to the same places: the first of them copies, the others would only race with it.
    std::vector<std::string> Others;
    for (char Dim : {'x', 'y', 'z'})
      if (!llvm::is_contained(B.ThreadDims, Dim))
        Others.push_back(std::string("threadIdx.") + Dim + " == 0");
    Lines PerElement{CopyCall(S, Unit) + ";"};
    if (!Others.empty())
      PerElement = {"if (" + llvm::join(Others, " && ") + ") // the others copy the same elements",
                    Unit + CopyCall(S, Unit + Unit) + ";"};
    std::map<std::string, Lines> Bl = {{"base", mark(BaseDecl)},
                                       {"coordinates", mark(Coords)},
                                       {"copy", mark(Call)},
                                       {"per_element", mark(PerElement)}};
    AnyWide = true;
    return render(WideCopyTemplate, In, Bl, Ind, Unit);
  };
  // The copy phase of the tensor-copy loop, run by the leader: each tile's copy (its one store, or
  // the guarded pair of read and zero fill) becomes one call that issues the tile's copy. In the
  // probe of the first tiles, it becomes a test: that the tile starts on 16 bytes; for a guarded
  // copy, that its index is its coordinates' place in the map, which are not negative.
  auto TmaEdits = Edits, ProbeEdits = Edits;
  Lines ProbeState;
  if (TmaLoop) {
    for (size_t I = 0; I < M.Stores.size(); ++I) {
      const TileStore &S = M.Stores[I];
      const TileBox &B = M.Tiles[S.TileIdx].Box;
      if (B.Store != I && !(B.Guarded && (S.Statement == B.Replaced || S.GuardIf == B.Replaced)))
        return Fail("a tile with a tensor copy has a second store");
    }
    // Head(Arg, ..., Last); in the issue lambda, two levels deeper than the loop body: on one line,
    // or Last under the first argument.
    auto Call = [&](const std::string &Head, const std::vector<std::string> &Args, const std::string &Ind) {
      std::string Init = Head + "(" + llvm::join(ArrayRef(Args).drop_back(), ", ") + ",";
      std::string Text = Init + " " + Args.back() + ");";
      if (Ind.size() + 2 * Unit.size() + Text.size() > 100)
        Text = Init + "\n" + Ind + std::string(Head.size() + 1, ' ') + Args.back() + ");";
      return Text;
    };
    for (const Tile &T : M.Tiles) {
      const TileBox &Box = T.Box;
      const std::string V = T.Var->getName().str();
      unsigned B = F.begin(Box.Replaced), Len = F.afterSemi(Box.Replaced) - B;
      std::string First = "(long long)(" + Box.Index + ")";
      std::string Ind = F.indentOf(B);
      std::string Bar = Bars + "[" + FetchStage + "]";
      // The probe sits one level deeper than the loop body.
      auto Test = [&](const std::string &Call) {
        std::string T = AlignedVar + " = " + AlignedVar + " &&";
        return Ind.size() + Unit.size() + T.size() + Call.size() + 1 > 100
                   ? T + "\n" + Ind + std::string(AlignedVar.size() + 3, ' ') + Call
                   : T + " " + Call;
      };
      if (Box.Guarded) {
        std::string Row = Box.Coordinates.size() == 2 ? Box.Coordinates[0] : "0";
        TmaEdits.emplace_back(
            B, Len, mark(Call("::tilepipe_rt::copy_box", {PlanOf(T).MapName, V, Row, Box.Coordinates.back(), Bar}, Ind)));
        std::string Tracker = Names.get(V + "_probe");
        ProbeState.push_back(mark("::tilepipe_rt::BoxProbe " + Tracker + ";"));
        ProbeEdits.emplace_back(B, Len,
                                mark(Test(Tracker + ".fits(" + PlanOf(T).MapName + ", " + Box.Pointer + ", " + First +
                                          ", " + Row + ", " + Box.Coordinates.back() + ");")));
      } else {
        TmaEdits.emplace_back(B, Len,
                              mark(PlanOf(T).Kind == CopyKind::Bulk
                                       ? Call("::tilepipe_rt::bulk_copy", {V, Box.Pointer, First, Bar}, Ind)
                                       : Call("::tilepipe_rt::copy_tile", {PlanOf(T).MapName, V, Box.Pointer, First, Bar},
                                              Ind)));
        ProbeEdits.emplace_back(B, Len,
                                mark(Test("::tilepipe_rt::starts_on_16(" + Box.Pointer + ", " + First + ");")));
      }
      // Every tile of the loop comes whole, once per tile: the barrier expects all their bytes.
      TileBytes += (TileBytes.empty() ? "" : " + ") + ("sizeof(" + V + ")");
    }
  }
  for (size_t I = 0; I < M.Stores.size(); ++I) {
    const TileStore &S = M.Stores[I];
    const Tile &T = M.Tiles[S.TileIdx];
    if (Pipelined && PlanOf(T).CpAsync == CopyKind::Chunks16 && T.Box.Store == I) {
      unsigned B = F.begin(S.Statement);
      Edits.emplace_back(B, F.afterSemi(S.Statement) - B, WideCall(T, S));
      continue;
    }
    bool Pair = I + 1 < M.Stores.size() && M.Stores[I + 1].Statement == S.Statement;
    unsigned B = F.begin(S.Statement), E = F.end(S.Statement);
    if (Pair && Pipelined) {
      // `t = c ? x : y` becomes `if (c) <x> else <y>`: a copy where the value is read, a store where it is filled.
      const TileStore &S2 = M.Stores[I + 1];
      const Expr *L, *R;
      splitAssignment(S.Statement, L, R);
      const auto *CO = cast<ConditionalOperator>(R->IgnoreParens());
      std::string DstText = F.text(S.Dst->getSourceRange());
      auto Branch = [&](const TileStore &X) {
        return X.Src ? CopyCall(X, Unit) : DstText + " = " + F.text(X.Fill->getSourceRange());
      };
      std::string Ind = F.indentOf(B);
      Edits.emplace_back(B, F.afterSemi(S.Statement) - B,
                         mark("if (" + F.text(CO->getCond()->IgnoreParens()->getSourceRange()) + ")") + "\n" +
                             Ind + Unit + mark(Branch(S) + ";") + "\n" + Ind + mark("else") + "\n" + Ind + Unit +
                             mark(Branch(S2) + ";"));
      ++I;
      continue;
    }
    if (S.Src && Pipelined)
      Edits.emplace_back(B, E - B, mark(CopyCall(S)));
  }
  std::string CopyText = editSpan(F, CopyBegin, CopyEnd, Edits);
  Lines CopyLines = chunk(CopyText, BodyIndent);
  Lines TmaCopyLines, ProbeLines;
  if (TmaLoop) {
    TmaCopyLines = chunk(editSpan(F, CopyBegin, CopyEnd, TmaEdits), BodyIndent);
    ProbeLines = chunk(editSpan(F, CopyBegin, CopyEnd, ProbeEdits), BodyIndent);
  }
  // Compute phase: from after the copy barrier to the trailing barrier, increments or the '}'.
  unsigned ComputeBegin = F.afterSemi(M.CopyBarrier);
  unsigned ComputeEnd = F.cutBefore(F.offset(Body->getRBracLoc()));
  if (M.TrailingBarrier)
    ComputeEnd = std::min(ComputeEnd, F.cutBefore(F.begin(M.TrailingBarrier)));
  if (!M.TailIncs.empty())
    ComputeEnd = std::min(ComputeEnd, F.cutBefore(F.begin(M.TailIncs.front())));
  if (ComputeEnd < ComputeBegin)
    return Fail("the compute phase could not be cut out of the loop body");
  Lines ComputeLines = chunk(F.slice(ComputeBegin, ComputeEnd), BodyIndent);

  // Header pieces.
  std::string CondText = F.text(M.Cond->getSourceRange());
  if (CondText.empty())
    return Fail("the loop condition is not plain text");
  std::string InitText;
  if (M.Init) {
    InitText = F.slice(F.begin(M.Init), F.afterSemi(M.Init)).str();
    if (!isa<DeclStmt>(M.Init) && !StringRef(InitText).rtrim().ends_with(";"))
      InitText += ";";
  }
  std::string Increment, Header;
  if (M.Inc) {
    std::string IncText = F.text(M.Inc->getSourceRange());
    Increment = IncText + ";";
    Header = "for (; " + CondText + "; " + IncText + ")";
  } else {
    Header = "while (" + CondText + ")";
  }
  Lines TailLines;
  for (const Stmt *S : M.TailIncs) {
    std::string T = F.slice(F.begin(S), F.afterSemi(S)).str();
    TailLines.push_back(T);
    Increment += (Increment.empty() ? "" : " ") + T;
  }

  // Every slice of the user's text that moves begins and ends between tokens and carries its
  // comments and conditionals whole (SourceTokens); else the loop is left alone.
  unsigned LoopEnd = F.end(M.Loop);
  SourceTokens Toks(F, LoopOff, LoopEnd);
  {
    StringRef LoopText = F.slice(LoopOff, LoopEnd);
    if (LoopText.contains(Verbatim) || LoopText.contains(Own))
      return CannotCut("the loop's text holds a control character (\\x01 or \\x02) that tilepipe uses to mark lines");
    std::vector<std::tuple<unsigned, unsigned, std::string>> Slices = {
        {CopyBegin, CopyEnd, "the copy phase"},
        {ComputeBegin, ComputeEnd, "the compute phase"},
        {F.begin(M.Cond), F.end(M.Cond), "the loop condition"}};
    if (M.Init)
      Slices.emplace_back(F.begin(M.Init), F.afterSemi(M.Init), "the loop's initialization");
    if (M.Inc)
      Slices.emplace_back(F.begin(M.Inc), F.end(M.Inc), "the loop's increment");
    for (const Stmt *S : M.TailIncs)
      Slices.emplace_back(F.begin(S), F.afterSemi(S), "an increment at the end of the body");
    for (const DeclStmt *DS : M.IndexDecls)
      Slices.emplace_back(F.begin(DS), F.end(DS), "an index declaration");
    for (const Tile &T : M.Tiles)
      if (T.DeclaredInBody)
        Slices.emplace_back(F.begin(T.DeclaredInBody), F.end(T.DeclaredInBody), "a tile declaration");
    // Where the copies replace the user's statements: only the cut points matter (what they
    // replace is dropped).
    for (const auto *E : {&Edits, &TmaEdits, &ProbeEdits})
      for (const auto &[Off, Len, New] : *E)
        for (unsigned Cut : {Off, Off + Len})
          Slices.emplace_back(Cut, Cut, "a tile copy");
    // Below compute capability 8.0 the whole loop stays, re-indented inside a block.
    if (Pipelined && Plan.ArchGuard)
      Slices.emplace_back(LoopOff, LoopEnd, "the loop kept below compute capability 8.0");
    for (const auto &[B, E, What] : Slices)
      if (std::string Why = Toks.problem(B, E, What); !Why.empty())
        return CannotCut(Why);
  }

  Lines Hoisted, Cursors, Shadows, Stores, FetchViews, Views, IndexDecls;
  for (const Tile &T : M.Tiles) {
    std::string Dims = "[" + std::to_string(Stages) + "]";
    if (T.DeclaredInBody) {
      std::vector<std::tuple<unsigned, unsigned, std::string>> Renames;
      for (const Decl *D : T.DeclaredInBody->decls()) {
        const auto *V = cast<VarDecl>(D);
        if (Pipelined)
          Renames.emplace_back(F.offset(V->getLocation()), V->getName().size(),
                               StageArray[V] + Dims);
      }
      std::string Decl = editSpan(F, F.begin(T.DeclaredInBody), F.end(T.DeclaredInBody), Renames);
      if (Pipelined && llvm::any_of(M.Tiles, [&](const Tile &U) {
            return U.DeclaredInBody == T.DeclaredInBody && (PlanOf(U).CpAsync == CopyKind::Chunks16 || TmaLoop);
          }))
        Decl = (TmaLoop ? "alignas(128) " : "alignas(16) ") + Decl;
      if (!llvm::is_contained(Hoisted, Decl))
        Hoisted.push_back(Decl);
    }
    FetchViews.push_back(mark("auto &" + T.Var->getName().str() + " = " + StageArray[T.Var] + "[" +
                              FetchStage + "];"));
    Views.push_back(mark("auto &" + T.Var->getName().str() + " = " + StageArray[T.Var] + "[" + Stage +
                         "];"));
  }
  for (const VarDecl *V : M.Inductions) {
    Cursors.push_back(mark("auto " + Cursor[V] + " = " + V->getName().str() + ";"));
    Shadows.push_back(mark("auto " + V->getName().str() + " = " + Cursor[V] + ";"));
    Stores.push_back(mark(Cursor[V] + " = " + V->getName().str() + ";"));
  }
  // Index variables stay in the loop body only where the compute phase still reads them.
  llvm::SmallPtrSet<const Decl *, 8> ReadByCompute;
  {
    struct Reads : RecursiveASTVisitor<Reads> {
      llvm::SmallPtrSet<const Decl *, 8> *Out;
      bool VisitDeclRefExpr(DeclRefExpr *DRE) {
        Out->insert(DRE->getDecl());
        return true;
      }
    } R;
    R.Out = &ReadByCompute;
    for (const Stmt *S : M.ComputePhase)
      R.TraverseStmt(const_cast<Stmt *>(S));
    for (const Stmt *S : M.TailIncs)
      R.TraverseStmt(const_cast<Stmt *>(S));
  }
  for (const DeclStmt *DS : M.IndexDecls)
    if (llvm::any_of(DS->decls(), [&](const Decl *D) { return ReadByCompute.contains(D); }))
      for (const std::string &L : chunk(F.slice(F.begin(DS), F.end(DS)), BodyIndent))
      IndexDecls.push_back(L);

  Lines WideSetup;
  if (AnyWide)
    WideSetup = mark(Lines{"const unsigned " + Rank +
                               " = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
                           "const unsigned " + Threads + " = blockDim.x * blockDim.y * blockDim.z;"});
  std::map<std::string, std::string> Inline = {
      {"stages", std::to_string(Stages)}, {"ahead", std::to_string(Stages - 1)},
      {"pending", std::to_string(Stages - 2)},
      {"pipe", Pipe},         {"fetch_stage", FetchStage},
      {"stage", Stage},       {"issue", Issue},
      {"prologue", Prologue}, {"cond", CondText},
      {"loop_header", Header}, {"bars", Bars},
      {"leader", Leader},     {"tile_bytes", TileBytes},
      {"parities", Parities}, {"s", StageVar},
      {"tensor_copies", TensorCopies}, {"aligned", AlignedVar},
      {"probe", Probe}};
  // After the loop, a block barrier where the original's last one ordered something: what the
  // compute phase wrote to shared or global memory (another thread may read it after the loop),
  // and, where the block may run the loop again, its reads of the buffers before the next refill.
  Lines Trailing;
  if (M.ComputeWritesMemory && M.NestedInLoop)
    Trailing = {"__syncthreads(); // the loop's writes are seen after it; the buffers may be refilled when this "
                "block runs again"};
  else if (M.ComputeWritesMemory)
    Trailing = {"__syncthreads(); // the loop's writes to memory are seen by every thread after it"};
  else if (M.NestedInLoop)
    Trailing = {"__syncthreads(); // the buffers may be refilled when this block runs again"};
  // Before the first copies of a loop of the rotated form, its leading barrier: every thread's
  // writes before the loop (to the copies' sources) are done before any thread copies.
  Lines Leading;
  if (M.Form == LoopForm::Rotated)
    Leading = {"__syncthreads(); // as the loop's leading barrier: what the block wrote before it is seen by the "
               "copies"};
  std::map<std::string, Lines> Blocks = {
      {"hoisted_tiles", Hoisted},
      {"init", single(InitText)},
      {"cursors", Cursors},
      {"shadow_inductions", Shadows},
      {"fetch_views", FetchViews},
      {"copy_phase", CopyLines},
      {"tma_copy_phase", TmaCopyLines},
      {"probe_phase", ProbeLines},
      {"probe_state", ProbeState},
      {"increment", single(Increment)},
      {"store_cursors", Stores},
      {"views", Views},
      {"index_decls", IndexDecls},
      {"compute_phase", ComputeLines},
      {"tail_increments", TailLines},
      {"wide_setup", WideSetup},
      {"trailing_barrier", mark(Trailing)},
      {"leading_barrier", mark(Leading)}};
  // A rendered section as lines of a block, its directives kept in column 0.
  auto Section = [&](StringRef Name) {
    Lines Out;
    for (const std::string &L : chunk(render(section(Name), Inline, Blocks, "", Unit), ""))
      Out.push_back(bare(L).starts_with("#") ? Verbatim + L : L);
    return Out;
  };
  std::string NewText;
  if (!Pipelined) {
    NewText = render(ComputeOnlyTemplate, Inline, Blocks, Base, Unit);
  } else {
    Blocks["cp_async_loop"] = Section("cp_async_loop");
    if (TmaLoop) {
      // Launch-uniform: the kernel got maps for this loop's tiles, and the block has their shape.
      // Bulk copies need neither: only the block's shape.
      std::vector<std::string> Launch;
      if (!Plan.TmaFlag.empty())
        Launch.push_back(Plan.TmaFlag);
      std::vector<std::string> Shapes;
      bool AnyBulk = false, AnyTensor = false;
      for (const Tile &T : M.Tiles) {
        std::string V = StageArray[T.Var] + "[0]";
        bool IsBulk = PlanOf(T).Kind == CopyKind::Bulk;
        AnyBulk |= IsBulk;
        AnyTensor |= !IsBulk;
        if (!IsBulk)
          Launch.push_back("::tilepipe_rt::takes(" + PlanOf(T).MapName + ", " + V + (T.Box.Guarded ? ", true)" : ")"));
        for (const std::string &Cond : blockHasShape(V, T.Box.ThreadDims))
          if (!llvm::is_contained(Shapes, Cond))
            Shapes.push_back(Cond);
      }
      Launch.insert(Launch.end(), Shapes.begin(), Shapes.end());
      Inline["tma_launch"] = llvm::join(Launch, " &&\n    ");
      if (AnyTensor && Plan.TmaFlag.empty())
        return Fail("a tile with a tensor copy in a loop without the launch flag");
      // What the leader's probe of the first two tiles decides; the guarded clause only where a tile is.
      std::string Engine = AnyBulk ? AnyTensor ? "Tensor and bulk copies" : "Bulk copies" : "Tensor copies";
      Blocks["probe_comment"] =
          llvm::any_of(M.Tiles, [](const Tile &T) { return T.Box.Guarded; })
              ? Lines{"// " + Engine + " where the first two tiles start on 16 bytes and, for a guarded copy,",
                      "// where the index is the place of its coordinates in the map (so do all, where the indices step",
                      "// evenly); else this block copies by cp.async."}
              : Lines{"// " + Engine + " where the first two tiles start on 16 bytes (so do all, where the indices",
                      "// step evenly); else this block copies by cp.async."};
      Inline["how"] = !AnyBulk ? "launched with tensor maps: one tensor copy (TMA) per tile"
                      : AnyTensor ? "launched with tensor maps: one tensor copy (TMA) or bulk copy\n// "
                                    "(cp.async.bulk) per tile"
                                  : "however launched: one bulk copy (cp.async.bulk) per tile";
      Blocks["invalidate"] =
          M.NestedInLoop ? mark(Lines{"if (" + Leader + ") // set up again when this block runs again",
                                      Unit + "for (int " + StageVar + " = 0; " + StageVar + " < " +
                                          std::to_string(Stages) + "; ++" + StageVar + ")",
                                      Unit + Unit + "::tilepipe_rt::drop_barrier(" + Bars + "[" + StageVar + "]);"})
                         : Lines{};
      Blocks["tma_loop"] = Section("tma_loop");
    }
    NewText = render(section(TmaLoop ? "dispatch" : "cp_async"), Inline, Blocks, Base, Unit);
  }

  std::vector<Replacement> Out;
  unsigned ReplaceFrom = LoopOff, ReplaceTo = LoopEnd;
  if (Pipelined && Plan.ArchGuard) {
    // Below compute capability 8.0 the loop stays as it was, reading stage 0 of each tile.
    if (!F.firstOnLine(LoopOff))
      return Fail("the loop does not begin its line, so it cannot be put under #if");
    ReplaceFrom = F.lineStart(LoopOff);
    Lines Original;
    for (const Tile &T : M.Tiles)
      if (!T.DeclaredInBody)
        Original.push_back(mark("auto &" + T.Var->getName().str() + " = " + StageArray[T.Var] + "[0];"));
    for (const std::string &L : chunk(F.slice(LoopOff, LoopEnd), Base))
      Original.push_back(L);
    std::string Text = mark("#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800") + "\n" + Base + NewText + "\n" +
                       mark("#else") + "\n" + Base +
                       mark("{ // tilepipe: below compute capability 8.0, the loop as it was") + "\n";
    for (const std::string &L : Original)
      Text += L.empty() ? "\n" : L.front() == Verbatim ? L.substr(1) + "\n" : Base + Unit + L + "\n";
    NewText = Text + Base + mark("}") + "\n" + mark("#endif");
    // Code after the loop on its last line would otherwise become part of the #endif line: it
    // goes to a line of its own.
    if (Toks.codeFollowsOnLine(LoopEnd)) {
      NewText += "\n" + Base;
      while (ReplaceTo < F.Buffer.size() && (F.Buffer[ReplaceTo] == ' ' || F.Buffer[ReplaceTo] == '\t'))
        ++ReplaceTo;
    }
  }
  // The last line of defence: every line Emit wrote begins with a token of its own.
  if (std::string Why = unmark(NewText, F.LO); !Why.empty())
    return CannotCut(Why);
  Out.emplace_back(F.SM, CharSourceRange::getCharRange(F.SM.getComposedLoc(F.FID, ReplaceFrom),
                                                       F.SM.getComposedLoc(F.FID, ReplaceTo)),
                   NewText);
  std::set<unsigned> Aligned;
  for (const Tile &T : M.Tiles)
    if (!T.DeclaredInBody && Pipelined) {
      Out.emplace_back(F.SM, CharSourceRange::getTokenRange(T.Var->getLocation()),
                       StageArray[T.Var] + "[" + std::to_string(Stages) + "]");
      // Chunks start on 16 bytes of the shared tile only if the array does.
      SourceLocation Begin = F.SM.getExpansionLoc(T.Var->getBeginLoc());
      // Tensor copies need 128 bytes; the first tile of a declaration decides for all of it.
      if ((PlanOf(T).CpAsync == CopyKind::Chunks16 || TmaLoop) && Aligned.insert(F.offset(Begin)).second) {
        Out.emplace_back(F.SM, Begin, 0, TmaLoop ? "alignas(128) " : "alignas(16) ");
      }
    }
  return Out;
}

std::string emitLauncher(const LauncherParts &P) {
  // A map per tile, encoded from the tile's pointer, element size, row stride and extents.
  Lines Maps, Encodes;
  std::vector<std::string> Args = P.Args;
  for (const auto &[T, MapName] : P.Tiles) {
    const TileBox &B = T->Box;
    Maps.push_back("::tilepipe_rt::TileMap " + MapName + " = {};");
    // Rows and planes: the tile's next-to-innermost and outermost dimensions, with their strides.
    const size_t N = B.ExtentText.size();
    auto Long = [](const std::string &E) { return "(long long)(" + E + ")"; };
    std::string Stride = N == 1 ? "0" : Long(B.Coefficients[N - 2]);
    std::string Rows = N == 1 ? "0" : Long(B.ExtentText[N - 2]);
    // A guarded copy's map ends where its guard's bounds do (Check gives those one or two
    // dimensions); the planes of a tile of three follow the bounds.
    std::string Bounds;
    if (B.Guarded)
      Bounds = std::string(", ") + (B.Bounds.size() == 1 ? "0" : Long(B.Bounds[0])) + ", " + Long(B.Bounds.back());
    else if (N == 3)
      Bounds = ", 0, 0, " + Long(B.Coefficients[0]) + ", " + Long(B.ExtentText[0]);
    Encodes.push_back(P.Ok + " = " + P.Ok + " && ::tilepipe_rt::encode(&" + MapName + ", " +
                      B.PointerParam + ", sizeof(" + T->ElementTypeText + "), " + Stride + ", " + Rows + ", " +
                      Long(B.ExtentText.back()) + Bounds + ");");
    Args.push_back(MapName);
  }
  Args.push_back(P.Ok);
  std::map<std::string, std::string> Inline = {
      {"kernel_name", P.KernelName}, {"kernel", P.Kernel},   {"launcher", P.Launcher},
      {"qualifier", P.Qualifier},
      {"params", P.Params},          {"args", llvm::join(Args, ", ")}, {"grid", P.Grid},
      {"block", P.Block},            {"shared_bytes", P.SharedBytes},
      {"stream", P.Stream},          {"ok", P.Ok},           {"traced", P.Traced}};
  std::map<std::string, Lines> Blocks = {
      {"template_header", single(P.TemplateHeader)}, {"maps", Maps}, {"encodes", Encodes}};
  return render(TmaLauncherTemplate, Inline, Blocks, "", "  ", /*Mark=*/false);
}

struct FreshNames::Impl {
  Impl(ASTContext &Ctx, const FunctionDecl *FD)
      : F(Ctx, Ctx.getSourceManager().getFileID(
                   Ctx.getSourceManager().getExpansionLoc(FD->getBeginLoc()))),
        N(F, FD) {}
  FileText F;
  Namer N;
};

FreshNames::FreshNames(ASTContext &Ctx, const FunctionDecl *FD)
    : P(std::make_unique<Impl>(Ctx, FD)) {}
FreshNames::~FreshNames() = default;
std::string FreshNames::get(StringRef Base) { return P->N.get(Base); }

std::optional<Replacement> pipelineInclude(const SourceManager &SM, FileID FID,
                                           std::optional<RuntimeMode> Runtime) {
  StringRef Buffer = SM.getBufferData(FID);
  auto Has = [&](StringRef Header) {
    return llvm::Regex(("^[ \t]*#[ \t]*include[ \t]*<" + Header + ">").str(), llvm::Regex::Newline)
        .match(Buffer);
  };
  std::string Text;
  for (StringRef H : {"cuda/pipeline", "cuda/barrier", "cuda/ptx", "cuda.h"})
    if ((H == "cuda/pipeline" || Runtime) && !Has(H))
      Text += "#include <" + H.str() + ">\n";
  // Once: a file that has the runtime (included, or pasted with its guard) gets no second copy.
  if (Runtime && !Has(runtimeHeaderName()) &&
      !llvm::Regex("^#define TILEPIPE_RUNTIME_CUH$", llvm::Regex::Newline).match(Buffer))
    Text += runtimeUse(*Runtime);
  if (Text.empty())
    return std::nullopt;
  llvm::Regex First("^[ \t]*#[ \t]*include", llvm::Regex::Newline);
  SmallVector<StringRef, 1> Match;
  unsigned Off = 0;
  if (First.match(Buffer, &Match))
    Off = Match[0].data() - Buffer.data();
  StringRef Path = SM.getFileEntryRefForID(FID)->getName();
  return Replacement(Path, Off, 0, Text);
}

} // namespace tilepipe
