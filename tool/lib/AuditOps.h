// AuditOps: what a statement does with the asynchronous copy units, as the audit's schedule
// checks read it (AuditSchedule.cpp): a copy that orders nothing across threads, the commit of a
// copy group, a wait for all but the newest K groups, or something else that may wait. Each is
// read in every spelling the checks know: CCCL's cuda::pipeline of thread scope, the
// __pipeline_* primitives, cp.async in inline assembly, and the helpers of the user's whose body
// is one such asm statement (cp_async16(dst, src), commit(), wait<K>()).
#ifndef TILEPIPE_AUDIT_OPS_H
#define TILEPIPE_AUDIT_OPS_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"
#include "clang/AST/Stmt.h"
#include "clang/Tooling/Core/Replacement.h"
#include <optional>

namespace tilepipe {

/// A copy that orders nothing across threads: the statement or call that issues it, its
/// destination, and its byte count (an expression, or a constant where the instruction spells it).
struct ThreadCopy {
  const clang::Stmt *At;
  const clang::Expr *Dst;
  const clang::Expr *Size = nullptr;
  std::optional<uint64_t> Bytes;
  const clang::Expr *Barrier = nullptr; ///< the block-scope cuda::barrier it completes on, if it does
};

/// A wait for all but the newest K groups, where it is, and K as the user spelled it where it can
/// be rewritten in place (null where it is not: a default, or inside a helper's body).
struct WaitPrior {
  int64_t K;
  const clang::Stmt *At;
  const clang::Expr *Spelled;
};

/// The shared pointer a shared address operand is made from: P in
/// `(uint32_t)__cvta_generic_to_shared(P)`, through the const locals that hold it and the helpers
/// that return it (`smem_u32(p)`); or null.
const clang::Expr *sharedOperand(const clang::Expr *E);

/// `alignas(A) ` before the declaration statement of a local __shared__ variable V, where the
/// statement declares V alone and starts in the user's file, not in a macro of the user's.
std::optional<clang::tooling::Replacement> alignasFix(clang::ASTContext &Ctx, const clang::VarDecl *V, uint64_t A);

/// D is declared in namespace `cuda` (CCCL's), directly or through inline namespaces.
bool inCuda(const clang::Decl *D);

/// The specialization of CCCL class template Name that T is (through typedefs), or null.
const clang::ClassTemplateSpecializationDecl *cudaSpecialization(clang::QualType T, llvm::StringRef Name);

/// Whether T is cuda::pipeline<cuda::thread_scope_thread> (through references and typedefs).
bool threadScope(clang::QualType T);

/// Whether S issues a copy that orders nothing across threads: cuda::memcpy_async on a pipeline of
/// thread scope or completing on a block-scope cuda::barrier, __pipeline_memcpy_async, inline cp.async into a shared address, or a helper of
/// the user's that is one of these into its pointer parameter.
std::optional<ThreadCopy> threadCopy(const clang::Stmt *S, const clang::SourceManager &SM);

/// The commit of a copy group: `pipe.producer_commit()` on a pipeline of thread scope,
/// __pipeline_commit(), cp.async.commit_group in inline assembly or a helper of the user's.
bool isCommit(const clang::Stmt *S, const clang::SourceManager &SM);

/// A wait for all but the newest K groups: cuda::pipeline_consumer_wait_prior<K>(pipe),
/// __pipeline_wait_prior(K), cp.async.wait_group K (or wait_all) in inline assembly or in a helper
/// of the user's (`wait<K>()`).
std::optional<WaitPrior> waitPrior(const clang::Stmt *S, const clang::ASTContext &Ctx);

/// `bar.arrive_and_wait()` on a cuda::barrier of block scope: every thread of the block has
/// arrived, so what each did before it is done (initialized for the block, as per-stage barriers
/// are; a barrier counted for fewer threads is read as one all the same, which can only hide a
/// finding, never make one).
bool isBlockArriveAndWait(const clang::Stmt *S);

/// The barrier of `bar.arrive_and_wait()` on a cuda::barrier of block scope (isBlockArriveAndWait),
/// as written (`bar[(t + 1) % 2]`), or null.
const clang::Expr *arriveAndWaitBarrier(const clang::Stmt *S);

/// Whether S calls something that may wait for copies other than a wait waitPrior reads: a
/// pipeline's consumer_wait or wait, a barrier's wait (any library function named so), inline
/// assembly of the async units that is none of the above, or a function of the user's that is
/// not a helper read as one (its body may wait).
bool mayWaitOtherwise(const clang::Stmt *S, const clang::ASTContext &Ctx);

/// What a statement does with one local cuda::pipeline of thread scope, P: the commits on it and
/// its consumer_waits (each call), and whether it does anything else that moves P's head or tail
/// or hides them: P handed to a function or bound to a reference, P used in a lambda, a
/// pipeline_consumer_wait_prior on it, or a commit of another kind (__pipeline_commit, inline
/// assembly, another pipeline, a helper), which counts in the same hardware groups.
struct PipelineOps {
  std::vector<const clang::Stmt *> Commits, Waits;
  bool Other = false;
};
PipelineOps pipelineOps(const clang::Stmt *S, const clang::VarDecl *P, const clang::SourceManager &SM);

/// The pipeline of `P.consumer_wait()`, a statement of its own, where P is a local
/// cuda::pipeline of thread scope; or null.
const clang::VarDecl *consumerWaitOn(const clang::Stmt *S);

/// The __shared__ variable a destination or a read lies in (Shared, whatever its shape) and, where
/// it is an array of two or more dimensions, that array again (Array), its outermost subscript
/// (Stage) and extent (Buffers): the stage a pipeline's buffer is picked by.
struct StageRef {
  const clang::VarDecl *Shared = nullptr;
  const clang::VarDecl *Array = nullptr;
  const clang::Expr *Stage = nullptr;
  uint64_t Buffers = 0;
  const clang::ArraySubscriptExpr *Outer = nullptr; ///< the whole subscript chain
};
StageRef stageRef(const clang::ASTContext &Ctx, const clang::Expr *E);

} // namespace tilepipe

#endif
