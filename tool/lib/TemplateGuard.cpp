// Plan, for a loop in a function template: the compile-time condition that holds for exactly the
// instantiations the analysis saw, written in the template's own terms, under which the rewrite
// runs (`if constexpr`); every other instantiation, one a file that includes this one makes or one
// added later, runs the loop as it was. The legality is docs/legality.md's L4.
#include "DriverSteps.h"
#include "tilepipe/AstUtil.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/QualTypeNames.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace tilepipe {

namespace {

/// Why T cannot be named by its fully qualified name at Where, the template's beginning (a type
/// declared after the template, in a function, in an anonymous namespace, an instantiation of a
/// class template), or "".
std::string unnameable(const ASTContext &Ctx, QualType T, SourceLocation Where) {
  const SourceManager &SM = Ctx.getSourceManager();
  T = innermostType(T).getUnqualifiedType();
  if (isa<BuiltinType>(T.getTypePtr()))
    return "";
  const TagDecl *D = T->getAsTagDecl();
  if (!D)
    return "'" + T.getAsString() + "' is not a class, enumeration or fundamental type";
  if (isa<ClassTemplateSpecializationDecl>(D))
    return "'" + T.getAsString() + "' is an instantiation of a class template";
  if (!D->getIdentifier() || D->isInAnonymousNamespace() || D->getParentFunctionOrMethod())
    return "'" + T.getAsString() + "' has no name that reaches the template";
  if (!SM.isBeforeInTranslationUnit(D->getLocation(), Where))
    return "'" + T.getAsString() + "' is declared after the template";
  return "";
}

/// `Name == V` for a parameter of type T, in the literal of T's own type (`BLOCK == 16`,
/// `N == 64u`, `ON`, `!ON`; an enumeration's through its value), or "" where T is none of those.
std::string equalsText(const std::string &Name, QualType T, const llvm::APSInt &V) {
  T = T.getCanonicalType();
  if (T->isBooleanType())
    return V.isZero() ? "!" + Name : Name;
  if (V.isSigned() && V.isMinSignedValue())
    return ""; // (no literal spells it)
  std::string Digits = llvm::toString(V, 10);
  if (T->isEnumeralType())
    return "static_cast<" + std::string(V.isSigned() ? "long long" : "unsigned long long") + ">(" + Name +
           ") == " + Digits + (V.isSigned() ? "ll" : "ull");
  const auto *B = T->getAs<BuiltinType>();
  if (!B)
    return "";
  switch (B->getKind()) {
  case BuiltinType::Int:
    return Name + " == " + Digits;
  case BuiltinType::UInt:
    return Name + " == " + Digits + "u";
  case BuiltinType::Long:
    return Name + " == " + Digits + "l";
  case BuiltinType::ULong:
    return Name + " == " + Digits + "ul";
  case BuiltinType::LongLong:
    return Name + " == " + Digits + "ll";
  case BuiltinType::ULongLong:
    return Name + " == " + Digits + "ull";
  default: // (char and short: every value is an int)
    return B->isInteger() && V.getBitWidth() <= 16 ? Name + " == " + Digits : "";
  }
}

} // namespace

llvm::Expected<TemplateGuard> templateGuard(ASTContext &Ctx, llvm::ArrayRef<const FunctionDecl *> Instances) {
  TemplateGuard G;
  auto Refuse = [](const Twine &Why) { return llvm::make_error<EmitError>(Reason::TemplateArguments, Why.str()); };
  PrintingPolicy Policy = Ctx.getPrintingPolicy();
  Policy.SuppressUnwrittenScope = true; // (no `(anonymous namespace)::`; such types are refused anyway)
  std::vector<std::string> Terms, Described;
  for (const FunctionDecl *FD : Instances) {
    const FunctionDecl *Pattern = FD->getTemplateInstantiationPattern();
    if (!Pattern)
      continue; // no template: its text is this function's alone
    const FunctionTemplateDecl *FTD = Pattern->getDescribedFunctionTemplate();
    const TemplateArgumentList *Args = FD->getTemplateSpecializationArgs();
    if (!FTD || !Args)
      return Refuse("the loop's function is instantiated from a class template or a lambda, whose "
                    "instantiations its text cannot tell apart");
    for (const DeclContext *DC = FD->getDeclContext(); DC; DC = DC->getParent())
      if (const auto *RD = dyn_cast<CXXRecordDecl>(DC); (RD && RD->getTemplateInstantiationPattern()) ||
                                                       isa<FunctionDecl>(DC))
        return Refuse("the function template is a member of a class template or of a function, whose "
                      "instantiations its text cannot tell apart");
    const TemplateParameterList *Params = FTD->getTemplateParameters();
    if (Params->size() != Args->size())
      return Refuse("the template's parameters and an instantiation's arguments do not pair up");
    std::vector<std::string> Conj, Named;
    for (unsigned I = 0; I < Params->size(); ++I) {
      const NamedDecl *P = Params->getParam(I);
      const TemplateArgument &A = Args->get(I);
      const std::string Name = P->getName().str();
      if (Name.empty() || P->isTemplateParameterPack())
        return Refuse("template parameter " + Twine(I + 1) + " is unnamed or a pack, which the condition "
                      "that tells the analysed instantiations apart cannot name");
      if (isa<TemplateTypeParmDecl>(P) && A.getKind() == TemplateArgument::Type) {
        if (std::string Why = unnameable(Ctx, A.getAsType(), FTD->getBeginLoc()); !Why.empty())
          return Refuse("the argument of '" + Name + "': " + Why);
        std::string T = TypeName::getFullyQualifiedName(A.getAsType(), Ctx, Policy, /*WithGlobalNsPrefix=*/true);
        Conj.push_back("::cuda::std::is_same_v<" + Name + ", " + T + ">");
        Named.push_back(Name + " = " + T);
        G.UsesTypes = true;
      } else if (isa<NonTypeTemplateParmDecl>(P) && A.getKind() == TemplateArgument::Integral) {
        const auto *NP = cast<NonTypeTemplateParmDecl>(P);
        if (NP->getType()->getContainedAutoType())
          return Refuse("'" + Name + "' is an 'auto' template parameter, whose type differs between instantiations");
        const llvm::APSInt V = A.getAsIntegral();
        std::string Equals = equalsText(Name, NP->getType(), V);
        if (Equals.empty())
          return Refuse("the argument of '" + Name + "' has no literal the condition that tells the analysed "
                        "instantiations apart could compare it with");
        Conj.push_back(Equals);
        Named.push_back(Name + " = " + llvm::toString(V, 10));
      } else {
        return Refuse("the argument of '" + Name + "' is neither a type nor an integer, which the condition "
                      "that tells the analysed instantiations apart cannot compare");
      }
    }
    std::string Term = llvm::join(Conj, " && ");
    if (!llvm::is_contained(Terms, Term)) {
      Terms.push_back(Term);
      Described.push_back(llvm::join(Named, ", "));
    }
  }
  for (std::string &Term : Terms)
    if (Terms.size() > 1 && llvm::StringRef(Term).contains(" && "))
      Term = "(" + Term + ")";
  G.Condition = llvm::join(Terms, " || ");
  G.Described = llvm::join(Described, "; ");
  return G;
}

} // namespace tilepipe
