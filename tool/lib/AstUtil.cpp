#include "tilepipe/AstUtil.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Lex/Lexer.h"

using namespace clang;

namespace tilepipe {

const Expr *stripNoOps(const Expr *E) {
  while (true) {
    if (const auto *EWC = dyn_cast<ExprWithCleanups>(E))
      E = EWC->getSubExpr();
    E = E->IgnoreParens();
    if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E);
        ICE && (ICE->getCastKind() == CK_LValueToRValue || ICE->getCastKind() == CK_NoOp)) {
      E = ICE->getSubExpr();
      continue;
    }
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E)) {
      E = MTE->getSubExpr();
      continue;
    }
    return E;
  }
}

bool splitAssignment(const Stmt *S, const Expr *&LHS, const Expr *&RHS) {
  const auto *E = dyn_cast_or_null<Expr>(S);
  if (!E)
    return false;
  if (const auto *EWC = dyn_cast<ExprWithCleanups>(E))
    E = EWC->getSubExpr();
  E = E->IgnoreParens();
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Assign) {
    LHS = BO->getLHS();
    RHS = BO->getRHS();
    return true;
  }
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E);
      OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2) {
    const auto *MD = dyn_cast_or_null<CXXMethodDecl>(OC->getDirectCallee());
    if (!MD || !MD->isTrivial())
      return false;
    LHS = OC->getArg(0);
    RHS = OC->getArg(1);
    return true;
  }
  return false;
}

std::string sourceText(const ASTContext &Ctx, SourceRange R) {
  CharSourceRange CR = Lexer::makeFileCharRange(CharSourceRange::getTokenRange(R),
                                                Ctx.getSourceManager(), Ctx.getLangOpts());
  if (CR.isInvalid())
    return "";
  return Lexer::getSourceText(CR, Ctx.getSourceManager(), Ctx.getLangOpts()).str();
}

} // namespace tilepipe
