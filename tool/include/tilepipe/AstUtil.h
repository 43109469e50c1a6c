// Small AST and source helpers shared by check and emit.
#pragma once
#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "clang/AST/TypeLoc.h"
#include <string>
#include <vector>

namespace tilepipe {

// The wrappers Clang puts around an expression, dropped in three widths; each is built on the one
// before it, so that what counts as a wrapper is decided here once.

/// Drops the ExprWithCleanups around a full expression (null stays null).
const clang::Expr *skipCleanups(const clang::Expr *E);

/// T without its references, pointers and arrays, canonical (`const float *const (&)[4]` ->
/// `const float`): the type that names the entity.
clang::QualType innermostType(clang::QualType T);

/// Drops ExprWithCleanups, parentheses and the implicit casts that neither convert nor compute.
const clang::Expr *stripNoOps(const clang::Expr *E);

/// S as an expression without cleanups, parentheses or any implicit cast; null when S is not one.
const clang::Expr *bareExpr(const clang::Stmt *S);

/// Splits `a = b` (built-in, or a trivial copy assignment of a vector type) into its sides.
bool splitAssignment(const clang::Stmt *S, const clang::Expr *&LHS, const clang::Expr *&RHS);

/// The variable E names (through parentheses, implicit casts and opaque values), or null.
const clang::VarDecl *varOf(const clang::Expr *E);

/// `obj.field` where the field is a reference: the member names whatever the reference was bound
/// to, not storage of obj, so it must be followed as a pointer read from memory would be.
bool isReferenceMember(const clang::MemberExpr *ME);

/// A `__shared__` variable.
bool isSharedVar(const clang::VarDecl *V);

/// One of CUDA's builtin variables (threadIdx, blockIdx, blockDim, gridDim).
bool isCudaBuiltinVar(const clang::VarDecl *V);

/// `threadIdx.x` and friends: property reads on the builtin variables (Name: "threadIdx.x"), or the
/// `__fetch_builtin_` calls behind them (Name: the function's name).
bool isBuiltinIndexRead(const clang::Expr *E, std::string *Name = nullptr);

/// The range of the file that a node's tokens cover; invalid when they are not one range of the
/// file (a macro expansion, say), so the text cannot be cut or replaced there.
clang::CharSourceRange fileRange(const clang::ASTContext &Ctx, clang::SourceRange R);

/// The file text of a node, or "" when it cannot be expressed as one range of the file.
std::string sourceText(const clang::ASTContext &Ctx, clang::SourceRange R);

/// A function of the CUDA toolkit's own device runtime: the math functions, intrinsics, atomics
/// and vector helpers of CUDA's headers and of Clang's CUDA wrapper headers, cooperative groups,
/// the C and C++ math headers. Their effects are modelled by their signatures and names (they
/// reach memory only through their arguments, and the ones that synchronize or leave are known by
/// name). Every other function, in a system header or not (libcu++, CUB, Thrust, a library added
/// with -isystem), is judged by its body like the user's own code, or not at all without one.
bool isToolkitRuntime(const clang::SourceManager &SM, const clang::FunctionDecl *FD);

/// L is in a file of the user's: where it expands is a real file, not a system header.
bool inUserFile(const clang::SourceManager &SM, clang::SourceLocation L);

/// Where L is, as remarks and findings name it: the presumed line and column of where it expands
/// (`#line` respected), in the main file by MainName, in another file by its presumed name.
struct Place {
  std::string File;
  unsigned Line = 0, Column = 0;
};
Place placeOf(const clang::SourceManager &SM, llvm::StringRef MainName, clang::SourceLocation L);

/// Whether an object of type T has a volatile part: T itself, an array's elements, or a member
/// or base of a class (`struct Flag { volatile int v; }`: copying one reads the volatile member).
bool hasVolatilePart(const clang::ASTContext &Ctx, clang::QualType T);

/// Every non-member operator& with one parameter in the translation unit (templates as written),
/// in the order a traversal meets them.
std::vector<const clang::FunctionDecl *> nonMemberAddressOfs(const clang::ASTContext &Ctx);

/// Whether `&x` on an object of class type T may call a user's operator& rather than take the
/// address: T or a base declares one, or one of NonMember (nonMemberAddressOfs of T's translation
/// unit) may apply.
bool overloadsAddressOf(clang::QualType T, llvm::ArrayRef<const clang::FunctionDecl *> NonMember);

/// Whether FD is named anywhere but as the callee of a direct call (its address taken: calls
/// through a pointer that no list of its calls holds).
bool addressTaken(clang::ASTContext &Ctx, const clang::FunctionDecl *FD);

/// Why S (a loop) holds an expression whose value depends on where it is written, or "": the
/// rewrite moves and repeats the loop's text, into lambdas of its own and onto other lines and
/// columns. '__func__' and its kin name the enclosing function (a lambda's is 'operator()');
/// __builtin_LINE(), __builtin_COLUMN(), __builtin_FUNCTION() and std::source_location take the
/// place of their text, or, in a default argument or a default member initializer, the place of
/// the call or the initialization in S.
std::string placeDependentExpr(const clang::ASTContext &Ctx, const clang::Stmt *S);

/// The template a function was instantiated from, or the function itself.
const clang::FunctionDecl *patternOf(const clang::FunctionDecl *FD);

/// A declaration's name in quotes, for messages: 'name'.
std::string quoted(const clang::NamedDecl *D);

/// A name that the text of a statement or a type looks up: the declaration it binds to, what
/// lookup found (a using-declaration's shadow, or the declaration itself), and whether it was
/// written with a qualifier (`ns::x`, `::x`), which no local declaration can hide.
struct NameUse {
  const clang::NamedDecl *Decl = nullptr;
  const clang::NamedDecl *Found = nullptr;
  bool Qualified = false;
  clang::SourceLocation Loc;
};

/// Every name S (or the type TL) looks up: variables, functions, enumerators, typedefs and type
/// aliases, classes and enums, templates; through macros too, since it reads the AST. Members
/// (found through their object) and template parameters (which nothing in their scope may
/// declare again) are left out.
std::vector<NameUse> namesIn(const clang::Stmt *S);
std::vector<NameUse> namesIn(clang::TypeLoc TL);

/// Whether every attribute of S is a `#pragma unroll` or `#pragma nounroll` hint (the only ones the
/// rewrite carries along with the loop they stand on).
bool onlyUnrollHints(const clang::AttributedStmt *S);

/// One variable's step as an increment writes it: `v += s`, `v -= s`, `v = v + s`, `v = s + v`,
/// `v = v - s`, and of a pointer `v = &v[s]` (By is s), `++v`, `v--` (By is null); Down for the
/// ones that subtract. Var is null for anything else.
struct VarStep {
  const clang::VarDecl *Var = nullptr;
  const clang::Expr *By = nullptr;
  bool Down = false;
};
VarStep stepOf(const clang::Expr *E);

/// Whether the assignment E steps V by an integer (`v = v + n`, `v = &v[n]`, stepOf), which keeps
/// a pointer inside what it points into.
bool stepsByInteger(const clang::Expr *E, const clang::VarDecl *V);

/// Whether A and B are the same expression by Clang's canonical profile: the same tokens' meaning,
/// each name by its declaration.
bool sameProfile(const clang::ASTContext &Ctx, const clang::Expr *A, const clang::Expr *B);

/// Whether every write of the pointer V in Body steps it by an integer (`p += n`, `p -= n`,
/// `++p`, `p--`, `p = p + n`, `p = n + p`, `p = p - n`): then V points into the object it pointed
/// to before (arithmetic that leaves the object is undefined). Writes through its address or a
/// reference bound to it are not seen here: the caller rules those out (LocalFacts::Escaped).
bool changedOnlyBySteps(const clang::Stmt *Body, const clang::VarDecl *V);

/// The element type of an array variable as its declaration writes it (`float` of
/// `float As[32][32]`), the pointee of a pointer (`float` of `float *As`); the variable's whole
/// type where it is neither.
clang::TypeLoc elementTypeLoc(const clang::VarDecl *V);

/// The declaration statement that declares the local V, or null (a parameter, a global).
const clang::DeclStmt *declarationOf(clang::ASTContext &Ctx, const clang::VarDecl *V);

/// The type a pointer cast points to, as the cast writes it, less its qualifiers (`float4` of
/// `reinterpret_cast<float4 *>(p)`); a null TypeLoc where the cast names no pointer type itself.
clang::TypeLoc viewTypeLoc(const clang::ExplicitCastExpr *Cast);

} // namespace tilepipe
