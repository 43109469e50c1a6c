// Emit's text tools: the file's text and offsets, the raw tokens that say where it may be cut,
// the marks that check what Emit writes, the template renderer and fresh names. Internal to Emit.
#pragma once
#include "tilepipe/AstUtil.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Stmt.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace tilepipe::emit {

using namespace clang;
using llvm::StringRef;
using Lines = std::vector<std::string>;

/// Marks a line of a block that keeps its own indentation.
inline constexpr char Verbatim = '\x01';

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
    StringRef Directive = {}; ///< the name after a line's `#` (`define`, `pragma`, ...), or `_Pragma`
    StringRef Argument = {};  ///< the directive's first word (`unroll` of `#pragma unroll`)
  };
  /// Lexes from From (a token boundary) up to the first token at or past To that starts a line.
  SourceTokens(const FileText &F, unsigned From, unsigned To) : F(F) {
    Lexer Raw(F.SM.getLocForStartOfFile(F.FID), F.LO, F.Buffer.begin(), F.Buffer.begin() + From,
              F.Buffer.end());
    Raw.SetCommentRetentionState(true);
    bool AfterHash = false;
    size_t Directive = 0; // 1 + the index of the directive whose first argument comes next
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
      const bool NamesDirective = AfterHash && T.is(tok::raw_identifier);
      int Cond = 2;
      if (NamesDirective) {
        StringRef D = T.getRawIdentifier();
        if (D == "if" || D == "ifdef" || D == "ifndef")
          Cond = 1;
        else if (D == "endif")
          Cond = -1;
        else if (D == "else" || D == "elif" || D == "elifdef" || D == "elifndef")
          Cond = 0;
      }
      AfterHash = T.is(tok::hash) && T.isAtStartOfLine();
      if (Directive && !T.isAtStartOfLine()) {
        // `#pragma unroll`'s word, or `_Pragma ( "unroll" )`'s string.
        if (T.is(tok::raw_identifier) || tok::isStringLiteral(T.getKind()))
          Tokens[Directive - 1].Argument = Text.trim("\"");
        if (!T.is(tok::l_paren))
          Directive = 0;
      } else {
        Directive = 0;
      }
      Tokens.push_back({B, E, K, Text.find_first_of("\n\r") != StringRef::npos, Cond});
      if (NamesDirective || (T.is(tok::raw_identifier) && T.getRawIdentifier() == "_Pragma")) {
        Tokens.back().Directive = T.getRawIdentifier();
        Directive = Tokens.size();
      }
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

  /// Why [B, E) holds a directive that changes what the text after it means (`#define`, `#undef`,
  /// `#include`, `#line`, `#pragma push_macro`, ...), or "". The rewrite reorders and repeats
  /// the loop's text, so each piece would be read with another state of the preprocessor. Only
  /// conditionals (checked by problem()) and `#pragma unroll` / `nounroll` leave it as it was.
  /// What names the text [B, E) in the answer; Why, what the rewrite does with it.
  std::string directiveProblem(unsigned B, unsigned E, StringRef What = "the loop's text",
                               StringRef Why = "the rewrite reorders and repeats the loop's text") const {
    for (const Token &T : Tokens) {
      if (T.B < B || T.E > E || T.Directive.empty() || T.Cond != 2)
        continue;
      StringRef Arg = T.Argument.ltrim();
      if ((T.Directive == "pragma" || T.Directive == "_Pragma") &&
          (Arg.starts_with("unroll") || Arg.starts_with("nounroll")))
        continue;
      return What.str() + " holds " +
             (T.Directive == "_Pragma" ? std::string("a _Pragma operator") : "a #" + T.Directive.str() + " directive") +
             " at line " + std::to_string(F.SM.getLineNumber(F.FID, T.B)) + ": " + Why.str() +
             ", and a directive changes what the text after it means";
    }
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
inline constexpr char Own = '\x02';

/// S marked as Emit's own.
std::string mark(std::string S);
Lines mark(Lines L);
/// L without its mark, for tests of how it begins.
StringRef bare(StringRef L);

/// Text with its marks removed, or why a piece of Emit's own in it does not begin with a token:
/// the last line of defence against a cut that let the user's comment take in emitted code.
std::string unmark(std::string &Text, const LangOptions &LO);

/// Splits raw source into lines relative to the indentation Base, dropping blank edges.
Lines chunk(StringRef Text, StringRef Base);

/// Applies in-range edits to the text [B, E).
std::string editSpan(const FileText &F, unsigned B, unsigned E,
                     std::vector<std::tuple<unsigned, unsigned, std::string>> Edits);

/// Adds to Out the name of every declaration FD declares or refers to, as the parser saw them:
/// names a macro pastes together (`CAT(sta, ge)`) are in no token of the text.
void namesInAst(const FunctionDecl *FD, std::set<std::string> &Out);

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
    namesInAst(FD, Used);
    // Every macro the file defines, in any branch: one defined only for the host pass (under
    // `#ifndef __CUDA_ARCH__`) was never defined in the device parse, but nvcc's host pass
    // would expand it in a declaration the rewrite writes.
    Lexer All(F.SM.getLocForStartOfFile(F.FID), F.LO, F.Buffer.begin(), F.Buffer.begin(), F.Buffer.end());
    Token Prev2, Prev1;
    Prev2.startToken();
    Prev1.startToken();
    while (!All.LexFromRawLexer(Tok)) {
      if (Tok.is(tok::raw_identifier) && Prev1.is(tok::raw_identifier) && Prev2.is(tok::hash) &&
          Prev2.isAtStartOfLine() && Prev1.getRawIdentifier() == "define")
        Used.insert(Tok.getRawIdentifier().str());
      Prev2 = Prev1;
      Prev1 = Tok;
    }
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
    return It != F.Ctx.Idents.end() && It->getValue()->hadMacroDefinition();
  }
};

/// Fills a template of templates/ (TemplateName): ${name} inline (fillHoles), or a line holding
/// only ${name} replaced by a block.
/// Each line of the template that is code is marked as Emit's own (mark), unless Mark is false.
/// A hole that neither map fills is an EmitError (unsupported) that names TemplateName and the hole.
llvm::Expected<std::string> render(StringRef Template, StringRef TemplateName,
                                   const std::map<std::string, std::string> &Inline,
                                   const std::map<std::string, Lines> &Blocks, StringRef Base,
                                   StringRef Unit, bool Mark = true);

/// S as one line, or no line when it is empty.
Lines single(std::string S);

} // namespace tilepipe::emit
