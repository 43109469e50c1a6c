// Emit's cut of one loop: where the pieces of the user's text that every emission moves lie (the
// copy phase, the compute phase, the header's parts), and whether they can be moved. Internal to
// Emit: the cp.async and copy-engine pipeline (Emit.cpp) and the register-staged prefetch
// (EmitRegisters.cpp) place these pieces in their own skeletons.
#pragma once
#include "EmitText.h"
#include "tilepipe/Emit.h"
#include "tilepipe/Model.h"
#include "llvm/Support/Error.h"

namespace tilepipe::emit {

struct LoopCut {
  const CompoundStmt *Body = nullptr;
  unsigned LoopOff = 0, LoopEnd = 0; ///< the loop statement, [LoopOff, LoopEnd)
  /// Indentation: the loop's own, the body's, and one step of it.
  std::string Base, BodyIndent, Unit;
  /// The copy phase: from just after the body's '{' (or the leading barrier) to the copy barrier.
  unsigned CopyBegin = 0, CopyEnd = 0;
  /// The compute phase: from after the copy barrier to the trailing barrier, the increments at
  /// the end of the body, or its '}'.
  unsigned ComputeBegin = 0, ComputeEnd = 0;
  std::string CondText;  ///< the loop's condition
  std::string InitText;  ///< the for-init as a statement, or ""
  std::string Increment; ///< the for-increment and the body's tail increments, as statements
  std::string ForIncrement; ///< the for-increment alone, as a statement, or ""
  std::string Header;    ///< `for (; cond; inc)` or `while (cond)`
  /// The loop's `#pragma unroll` lines, as written, for the mainloop; the first begins the line at
  /// PragmaOff, where the loop's replacement then begins (LoopOff where there are none).
  Lines Pragmas;
  unsigned PragmaOff = 0;
  Lines TailLines;       ///< the increments at the end of a while loop's body

  /// Why the pieces cannot be moved, or "": each slice that moves must begin and end between
  /// tokens and carry its comments and conditionals whole (SourceTokens). Cuts are the offsets
  /// where an emission replaces the user's statements inside a slice; WholeLoop, that the whole
  /// loop moves too (kept below compute capability 8.0, or for launches that fill the GPU).
  std::string problem(const FileText &F, const LoopModel &M, const SourceTokens &Toks,
                      llvm::ArrayRef<unsigned> Cuts, bool WholeLoop) const;
};

/// A piece of the user's text that an emission writes elsewhere, in the block that replaces the
/// loop: the AST of that text (statements, or types as written), and the user's names that the
/// emission declares before it there, each meant to bind its name to that declaration (a tile's
/// view, an induction's shadow, the for-init's variables, an index variable declared again).
struct MovedText {
  std::string What;
  std::vector<const clang::Stmt *> Stmts;
  std::vector<clang::TypeLoc> Types;
  std::vector<const clang::NamedDecl *> Provided;
  /// Parts of Stmts the emission does not write (a store's destination, where the register-staged
  /// prefetch writes a register instead): their names are not looked up.
  std::vector<const clang::Stmt *> Dropped;
};

/// Why a name in one of the pieces Moved would bind, where the emission writes it, to another
/// declaration than where the user wrote it, or to none; "" when every name keeps its meaning
/// (EmitNames.cpp). The loop is then left alone with reason name-binding.
std::string movedNamesProblem(const FileText &F, const LoopModel &M, llvm::ArrayRef<MovedText> Moved);

/// What the loop's emissions move of the loop's own text, wherever they write it: the copy phase
/// (where the tiles are views and the inductions shadows), the loop's condition and increments,
/// the index declarations Kept (written again in that order before the compute phase) and the
/// compute phase, and the tiles declared in the body (before the loop).
std::vector<MovedText> loopPieces(const LoopModel &M, llvm::ArrayRef<const clang::DeclStmt *> Kept);


/// The copy phase's index declarations that the compute phase or the increments at the end of the
/// body read, and those that these read in turn, in their order: the compute phase gets them
/// again, so that it reads the index variables, and every one they name, as the loop body did.
std::vector<const clang::DeclStmt *> indexDeclsRead(const LoopModel &M);

/// The fetch cursors of a loop's induction variables, as lines of the emitted code: for each
/// (variable V, cursor C), `auto C = V;` (Declare, before the prologue), `auto V = C;` (Shadow,
/// where a tile is fetched) and `C = V;` (Store, after the fetch has stepped V).
struct CursorLines {
  Lines Declare, Shadow, Store;
};
CursorLines cursorLines(llvm::ArrayRef<std::pair<std::string, std::string>> VarAndCursor);

/// The edit that removes statement S (a tile declared in the body), with its line where S is all
/// of it.
std::tuple<unsigned, unsigned, std::string> dropStatement(const FileText &F, const Stmt *S);

/// The loop's cut, or an EmitError (Reason::Unsupported) where a piece is not plain text.
llvm::Expected<LoopCut> cutLoop(const FileText &F, const LoopModel &M);

/// The register-staged prefetch of a plan with LoopPlan::Registers, Depth tiles ahead, under
/// `if constexpr (TemplateGuard)` where that is not empty (EmitRegisters.cpp).
llvm::Expected<std::vector<clang::tooling::Replacement>> emitRegisters(clang::ASTContext &Ctx,
                                                                       const LoopModel &M, unsigned Depth,
                                                                       const std::string &TemplateGuard);

/// The block barrier Emit writes where the original's barrier stood.
inline constexpr const char *BlockBarrier = "__syncthreads();";

} // namespace tilepipe::emit
