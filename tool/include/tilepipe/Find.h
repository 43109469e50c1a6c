// Find: block barriers, CUDA device functions, and the loops worth a look.
#pragma once
#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Stmt.h"
#include <string>
#include <vector>

namespace clang {
class Sema;
}

namespace tilepipe {

/// __syncthreads(), cg::sync(block), block.sync(), this_thread_block().sync().
bool isBlockBarrier(const clang::Stmt *S);
/// Any barrier-like call, including the counting variants, grid syncs and inline barrier asm.
bool isAnyBarrier(const clang::Stmt *S);
/// True when S, or a function it calls (transitively, bodies in this file), holds a barrier.
bool containsBarrier(const clang::Stmt *S, unsigned Depth = 0);

/// __global__ or __device__ (not host-only) function with a body.
bool isDeviceCode(const clang::FunctionDecl *FD);

/// A loop whose body has a block barrier among its own statements.
struct Candidate {
  const clang::Stmt *Loop;
  const clang::FunctionDecl *Function;
};
std::vector<Candidate> findCandidateLoops(const clang::FunctionDecl *FD);

/// Instantiates each device function template of the main file that holds a candidate loop and
/// that nothing in the translation unit instantiates, with common tile sizes (Probes.cpp), so that
/// the analysis sees it; the rewrite then runs in those instantiations alone. The arguments a
/// template rejects are dropped, silently. Returns how many probes it made.
unsigned probeTemplates(clang::Sema &S);
/// Whether FD is one of probeTemplates' instantiations.
bool isProbe(const clang::FunctionDecl *FD);
/// Text to append to the file so that a build instantiates the probes among Kernels, as the
/// launch check's nvcc builds must: nothing else names them there. "" where there are none.
std::string probeReferences(clang::ASTContext &Ctx, llvm::ArrayRef<const clang::FunctionDecl *> Kernels);

} // namespace tilepipe
