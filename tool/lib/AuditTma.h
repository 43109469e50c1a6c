// AuditTma: the checks of tilepipe audit on bulk and tensor copies (TMA) and the mbarriers they
// complete on (AuditTma.cpp says how), and the reading of the ops they rest on (AuditTmaOps.cpp).
//  - async-tma-alignment: a shared address of a bulk copy not provably 16-byte aligned, or of a
//    tensor copy 128; a bulk copy's size not a multiple of 16;
//  - async-tx-bytes: the bytes an mbarrier's phase expects differ from what the copies that
//    complete on it in the same statements move;
//  - async-proxy-fence: a bulk copy out of shared memory reached from the threads' writes to it,
//    or a copy completing on an mbarrier reached from its init, with no fence.proxy.async between;
//  - async-barrier-reinit: an mbarrier initialised again where a copy completing on it may still
//    be in flight (no wait on it between).
#ifndef TILEPIPE_AUDIT_TMA_H
#define TILEPIPE_AUDIT_TMA_H

#include "tilepipe/Audit.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <map>
#include <memory>
#include <optional>

namespace clang {
class CFG;
class CFGBlock;
} // namespace clang

namespace tilepipe {

/// What one statement does with the bulk copy engine or an mbarrier.
struct TmaOp {
  enum Kind {
    None,
    Load,      ///< a bulk or tensor copy global -> shared, completing on Barrier
    Store,     ///< a bulk or tensor copy shared -> global (reads Shared through the async proxy)
    Expect,    ///< Size more bytes expected on Barrier's phase (arrive.expect_tx, expect_tx)
    Init,      ///< Barrier initialised
    Fence,     ///< fence.proxy.async on shared memory (or all spaces)
    InitFence, ///< fence.mbarrier_init
    Wait,      ///< a wait on Barrier's phase
    BlockSync, ///< bar.sync, barrier.sync, barrier.cluster.wait in inline assembly: orders, fences nothing
    SharedStore, ///< a store of the thread into Shared in inline assembly (st.shared, stmatrix)
    Unknown    ///< inline assembly of the async units the audit cannot read as one of the above
  } K = None;
  const clang::Stmt *At = nullptr;
  bool Tensor = false;
  const clang::Expr *Shared = nullptr; ///< Load: the destination; Store: the source
  const clang::Expr *Size = nullptr;   ///< Load/Store of a bulk copy, Expect: the bytes
  std::optional<uint64_t> Bytes;       ///< the bytes, where the instruction spells them
  const clang::Expr *Barrier = nullptr;
  bool Spelled = true; ///< Size is an argument of the call at At, as the user wrote it
};

/// The op S performs: a call of CCCL's or of a helper of the user's, or an asm statement.
TmaOp tmaOp(const clang::Stmt *S, const clang::SourceManager &SM);

/// The barrier variable an mbarrier expression names (`bar`, `&bar[s]`,
/// `barrier_native_handle(bar[s])`, `(uint64_t *)&bar`), and where Key is given, the expression's
/// text without blanks (`bar[s]`), which tells two uses in one region apart.
const clang::VarDecl *barrierVar(const clang::Expr *E, std::string *Key, const clang::ASTContext &Ctx);

/// The value E holds where it names a local of a function (not a parameter) with an initializer
/// that nothing changes (no write, no address taken): that initializer; else E.
const clang::Expr *heldValue(const clang::Expr *E);

/// The paths of one function's CFG (clang::CFG): whether control can run from just after one
/// statement to another with no statement on the way that Stop holds for.
class Paths {
public:
  Paths(const clang::FunctionDecl *F, clang::ASTContext &Ctx);
  ~Paths();
  bool reaches(const clang::Stmt *From, const clang::Stmt *To,
               llvm::function_ref<bool(const clang::Stmt *)> Stop) const;

private:
  std::unique_ptr<clang::CFG> Graph;
  llvm::DenseMap<const clang::Stmt *, std::pair<const clang::CFGBlock *, unsigned>> Where;
};

/// What a statement may do out of sight: a call of a function of the user's, asked of its body.
enum class Question { MovesBytes, Fences, FencesInit, Waits };

/// Whether calls may do a Question's deed: a function of the user's whose body (or a body it calls)
/// does, or one whose body cannot be read (a call through a pointer, a declaration only). Library
/// functions (the toolkit's, CCCL's) do only what tmaOp reads of them.
class Callees {
public:
  explicit Callees(const clang::SourceManager &SM) : SM(SM) {}
  bool may(const clang::CallExpr *CE, Question Q);
  /// Whether the statement S itself (an op, or a call) may do Q.
  bool does(const clang::Stmt *S, Question Q);

private:
  bool body(const clang::Stmt *S, Question Q);
  const clang::SourceManager &SM;
  std::map<std::pair<const clang::FunctionDecl *, int>, bool> Memo;
};

/// Every finding of the four checks above in the user's device code.
std::vector<AuditFinding> tmaFindings(clang::ASTContext &Ctx, llvm::StringRef MainName);

} // namespace tilepipe

#endif
