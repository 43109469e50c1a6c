// Emit's text tools (EmitText.h).
#include "EmitText.h"
#include "tilepipe/Emit.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "llvm/ADT/SmallVector.h"

namespace tilepipe::emit {

void namesInAst(const FunctionDecl *FD, std::set<std::string> &Out) {
  struct Names : RecursiveASTVisitor<Names> {
    std::set<std::string> &Out;
    explicit Names(std::set<std::string> &Out) : Out(Out) {}
    bool shouldVisitImplicitCode() const { return true; }
    bool shouldVisitLambdaBody() const { return true; }
    void add(const DeclarationName &N) {
      if (N.isIdentifier() && N.getAsIdentifierInfo())
        Out.insert(N.getAsIdentifierInfo()->getName().str());
    }
    void add(const NamedDecl *D) {
      if (D)
        add(D->getDeclName());
    }
    bool VisitNamedDecl(NamedDecl *D) { return add(D), true; }
    bool VisitDeclRefExpr(DeclRefExpr *E) { return add(E->getNameInfo().getName()), add(E->getDecl()), true; }
    bool VisitMemberExpr(MemberExpr *E) { return add(E->getMemberNameInfo().getName()), true; }
    bool VisitOverloadExpr(OverloadExpr *E) { return add(E->getName()), true; }
    bool VisitDependentScopeDeclRefExpr(DependentScopeDeclRefExpr *E) { return add(E->getDeclName()), true; }
    bool VisitCXXDependentScopeMemberExpr(CXXDependentScopeMemberExpr *E) { return add(E->getMember()), true; }
    bool VisitTypedefTypeLoc(TypedefTypeLoc TL) { return add(TL.getDecl()), true; }
    bool VisitTagTypeLoc(TagTypeLoc TL) { return add(TL.getDecl()), true; }
    bool VisitTemplateTypeParmTypeLoc(TemplateTypeParmTypeLoc TL) { return add(TL.getDecl()), true; }
    bool VisitTemplateSpecializationTypeLoc(TemplateSpecializationTypeLoc TL) {
      if (TemplateDecl *T = TL.getTypePtr()->getTemplateName().getAsTemplateDecl())
        add(T);
      return true;
    }
  } N(Out);
  N.TraverseDecl(const_cast<FunctionDecl *>(FD));
}

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

/// Fills a template of templates/ (TemplateName): ${name} inline (fillHoles), or a line holding
/// only ${name} replaced by a block.
/// Each line of the template that is code is marked as Emit's own (mark), unless Mark is false.
llvm::Expected<std::string> render(StringRef Template, StringRef TemplateName,
                                   const std::map<std::string, std::string> &Inline,
                                   const std::map<std::string, Lines> &Blocks, StringRef Base,
                                   StringRef Unit, bool Mark) {
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
    // A value of several lines continues at the indentation of the line it is put in. A hole
    // that nothing fills is the template and Emit disagreeing: the loop is left alone.
    llvm::Expected<std::string> Line = fillHoles(Body, TemplateName, Inline, Indent);
    if (!Line)
      return llvm::make_error<EmitError>(Reason::Unsupported, llvm::toString(Line.takeError()));
    if (Mark && !Line->empty() && !StringRef(*Line).starts_with("//"))
      *Line = mark(std::move(*Line));
    Emit(Body.starts_with("#") ? "" : Indent, *Line); // a directive of the template stays in column 0
  }
  return Out;
}

Lines single(std::string S) { return S.empty() ? Lines{} : Lines{std::move(S)}; }

} // namespace tilepipe::emit

namespace tilepipe {

using llvm::StringRef;

llvm::Expected<std::string> fillHoles(StringRef Text, StringRef TemplateName,
                                      const std::map<std::string, std::string> &Values,
                                      StringRef Indent) {
  std::string Out;
  for (size_t B = Text.find("${"); B != StringRef::npos; B = Text.find("${")) {
    Out += Text.take_front(B).str();
    size_t E = Text.find('}', B);
    StringRef Hole = Text.slice(B, E == StringRef::npos ? Text.size() : E + 1).take_until(
        [](char C) { return C == '\n'; });
    auto It = Values.find(Hole.drop_front(2).drop_back(Hole.ends_with("}")).str());
    if (!Hole.ends_with("}") || It == Values.end())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "internal: the template " + TemplateName + " has a hole " +
                                         Hole + " that tilepipe does not fill");
    for (char C : It->second)
      Out += C == '\n' ? "\n" + Indent.str() : std::string(1, C);
    Text = Text.drop_front(E + 1);
  }
  return Out + Text.str();
}

} // namespace tilepipe
