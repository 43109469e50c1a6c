// Audit (Audit.h): the review of hand-written asynchronous copies. One walk over the device
// functions of the file (templates as instantiated) collects every cuda::memcpy_async call; the
// slow-path check reads each call alone, the stage-count check reads the calls that complete on
// one pipeline state or one array of barriers together.
#include "tilepipe/Audit.h"
#include "AuditOps.h"
#include "AuditSchedule.h"
#include "AuditTma.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Effects.h"
#include "tilepipe/Find.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include <map>
#include <set>

using namespace clang;

namespace tilepipe {

namespace {

/// The integral template argument I of S, or 0.
uint64_t integralArg(const ClassTemplateSpecializationDecl *S, unsigned I) {
  const TemplateArgumentList &A = S->getTemplateArgs();
  return I < A.size() && A[I].getKind() == TemplateArgument::Integral ? A[I].getAsIntegral().getZExtValue() : 0;
}

/// A copy's destination as the audit reads it: the __shared__ array it lies in, and whether its
/// outermost subscript moves (a stage index) in an array of at least two dimensions, with that
/// dimension's extent.
struct Buffer {
  const VarDecl *Array = nullptr;
  uint64_t Stages = 0; ///< the outermost extent, where the outermost subscript is not a constant
};

Buffer bufferOf(const ASTContext &Ctx, const Expr *Dst) {
  StageRef R = stageRef(Ctx, Dst);
  bool Moves = R.Array && !R.Stage->isValueDependent() && !R.Stage->isIntegerConstantExpr(Ctx);
  return {R.Shared, Moves ? R.Buffers : 0};
}

class Auditor : public RecursiveASTVisitor<Auditor> {
public:
  Auditor(ASTContext &Ctx, StringRef MainName) : Ctx(Ctx), SM(Ctx.getSourceManager()), MainName(MainName) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool shouldVisitLambdaBody() const { return true; }

  // The user's device functions, templates as instantiated (their patterns are not read).
  bool TraverseFunctionDecl(FunctionDecl *F) { return !wanted(F) || RecursiveASTVisitor::TraverseFunctionDecl(F); }
  bool TraverseCXXMethodDecl(CXXMethodDecl *F) { return !wanted(F) || RecursiveASTVisitor::TraverseCXXMethodDecl(F); }

  bool VisitCallExpr(CallExpr *CE) {
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (!Callee || Callee->getName() != "memcpy_async" || !inCuda(Callee) || !inUserFile(SM, CE->getBeginLoc()))
      return true;
    unsigned N = Callee->getNumParams();
    if ((N == 4 || N == 5) && CE->getNumArgs() == N)
      Copies.push_back(Copy{CE});
    return true;
  }

  std::vector<AuditFinding> run() {
    TraverseDecl(Ctx.getTranslationUnitDecl());
    for (const Copy &C : Copies)
      slowPath(C);
    stageCount();
    for (AuditFinding &F : scheduleFindings(Ctx, MainName))
      report(std::move(F));
    for (AuditFinding &F : tmaFindings(Ctx, MainName))
      report(std::move(F));
    std::sort(Out.begin(), Out.end(), [](const AuditFinding &A, const AuditFinding &B) {
      return std::tie(A.At.File, A.At.Line, A.At.Column, A.Code) < std::tie(B.At.File, B.At.Line, B.At.Column, B.Code);
    });
    return std::move(Out);
  }

private:
  /// A call of one of cuda::memcpy_async's overloads of 4 or 5 parameters.
  struct Copy {
    const CallExpr *Call = nullptr;
    const FunctionDecl *callee() const { return Call->getDirectCallee(); }
    /// The destination's argument: the group comes first where there is one.
    unsigned off() const { return Call->getNumArgs() - 4; }
    const Expr *dst() const { return Call->getArg(off()); }
    const Expr *shape() const { return Call->getArg(off() + 2); }
    const Expr *sync() const { return Call->getArg(off() + 3); }
  };

  bool wanted(const FunctionDecl *F) const {
    return !F->isDependentContext() && F->hasBody() && isDeviceCode(F) && inUserFile(SM, F->getLocation());
  }

  Place place(SourceLocation L) const { return placeOf(SM, MainName, L); }

  /// V holds its initializer's value wherever it is read: const, or a local of a function that
  /// never writes it or lets its address escape (LocalFacts, as the rewrite's check reads them).
  bool unchanged(const VarDecl *V) {
    if (V->getType()->isReferenceType() || V->getType().isVolatileQualified())
      return false;
    if (V->getType().isConstQualified())
      return true;
    const auto *F = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
    if (!V->hasLocalStorage() || !F || !F->getBody())
      return false;
    auto [It, New] = Locals.try_emplace(F);
    if (New)
      It->second.scan(F->getBody());
    return !It->second.changes(V);
  }

  /// Reports F once per place and ID (a template's instantiations share their text).
  void report(AuditFinding F) {
    if (Reported.insert({F.At.File, F.At.Line, F.At.Column, static_cast<int>(F.Code)}).second)
      Out.push_back(std::move(F));
  }

  std::string text(const Expr *E) const {
    return sourceText(Ctx, SM.getExpansionRange(E->getSourceRange()).getAsRange());
  }

  /// Whether the shape E is written `cuda::aligned_size_t<alignof(...)>(...)`.
  static bool statesAlignOf(const Expr *E) {
    const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E);
    TypeLoc TL = FC ? FC->getTypeInfoAsWritten()->getTypeLoc() : TypeLoc();
    while (TL) {
      if (auto TS = TL.getAs<TemplateSpecializationTypeLoc>()) {
        if (TS.getNumArgs() != 1 || TS.getArgLoc(0).getArgument().getKind() != TemplateArgument::Expression)
          return false;
        const Expr *Arg = TS.getArgLoc(0).getSourceExpression();
        const auto *A = Arg ? dyn_cast<UnaryExprOrTypeTraitExpr>(Arg->IgnoreImplicit()->IgnoreParens()) : nullptr;
        return A && (A->getKind() == UETT_AlignOf || A->getKind() == UETT_PreferredAlignOf);
      }
      TL = TL.getNextTypeLoc();
    }
    return false;
  }

  void slowPath(const Copy &C) {
    // CCCL's dispatch: the alignment is the larger of the pointers' element type's (the typed
    // overloads) and the shape's (cuda::aligned_size_t<A>); cp.async needs 4 and uses 16-byte
    // instructions only at 16; below 4 the copy is an ordinary synchronous loop.
    QualType DstT = C.callee()->getParamDecl(C.off())->getType();
    if (!DstT->isPointerType())
      return;
    QualType Elem = DstT->getPointeeType();
    uint64_t TypeAlign = Elem->isVoidType() || Elem->isIncompleteType()
                             ? 1
                             : Ctx.getTypeAlignInChars(Elem).getQuantity();
    uint64_t ShapeAlign = 1;
    const Expr *SizeE = C.shape()->IgnoreImplicit();
    if (const auto *S = cudaSpecialization(C.callee()->getParamDecl(C.off() + 2)->getType(), "aligned_size_t")) {
      ShapeAlign = integralArg(S, 0);
      // The byte count inside the shape: through its construction, its copies, and the locals
      // that hold it (`const auto shape = cuda::aligned_size_t<4>(sizeof(float));`, as NVIDIA's
      // samples write it) where nothing changes them after their initializer.
      for (unsigned Depth = 0; Depth < 8; ++Depth) {
        SizeE = SizeE->IgnoreImplicit();
        // `cuda::aligned_size_t<alignof(E)>(...)`: the author states the element's own alignment
        // as all they know of the addresses (a struct of four doubles, whose global source is
        // aligned as the kernel's pointer is): wider instructions would need a run-time fact.
        if (statesAlignOf(SizeE))
          return;
        const VarDecl *Held = varOf(SizeE);
        if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(SizeE))
          SizeE = FC->getSubExpr();
        else if (const auto *CC = dyn_cast<CXXConstructExpr>(SizeE); CC && CC->getNumArgs() == 1)
          SizeE = CC->getArg(0);
        else if (Held && Held->getInit() && unchanged(Held))
          SizeE = Held->getInit();
        else
          break;
      }
    }
    uint64_t Align = std::max(TypeAlign, ShapeAlign);
    std::optional<uint64_t> Size;
    Expr::EvalResult R;
    if (!SizeE->isValueDependent() && SizeE->getType()->isIntegerType() && SizeE->EvaluateAsInt(R, Ctx))
      Size = R.Val.getInt().getZExtValue();
    uint64_t Best = !Size ? 16 : *Size % 16 == 0 ? 16 : *Size % 8 == 0 ? 8 : *Size % 4 == 0 ? 4 : 0;
    if (Best == 0 || Align >= Best)
      return;
    AuditFinding F;
    F.Code = Reason::AsyncSlowPath;
    F.At = place(C.Call->getBeginLoc());
    std::string Proven = "the call's types prove " + std::to_string(Align) + "-byte alignment (" +
                         (Elem->isVoidType() ? "untyped pointers" : "pointers to '" + Elem.getAsString() + "'") +
                         ", " + (ShapeAlign > 1 ? "cuda::aligned_size_t<" + std::to_string(ShapeAlign) + ">" : "a plain byte count") + ")";
    std::string SizeText = Size ? std::to_string(*Size) + " bytes" : "a size that is not a constant";
    if (Align < 4)
      F.Detail = "this cuda::memcpy_async runs synchronously, without cp.async: CCCL issues cp.async only "
                 "where it can prove 4-byte alignment, and " + Proven;
    else
      F.Detail = "this cuda::memcpy_async moves " + SizeText + " in " + std::to_string(Align) +
                 "-byte cp.async instructions where " + std::to_string(Best) + "-byte ones would do: " + Proven;
    F.Detail += "; the shape cuda::aligned_size_t<" + std::to_string(Best) + ">(" + text(SizeE) +
                ") promises that both addresses" + (Size ? "" : " and the size") + " are multiples of " +
                std::to_string(Best) + ", which ";
    Buffer B = bufferOf(Ctx, C.dst());
    const Expr *Src = C.Call->getArg(C.off() + 1);
    Buffer SB = bufferOf(Ctx, Src);
    bool RunTime = !SB.Array; // a source outside shared memory: its alignment comes from outside
    F.Detail += RunTime ? "tilepipe cannot prove here: the source '" + text(Src) +
                              "' is aligned as the pointer the kernel was given and its offset allow, a run-time fact"
                        : "holds if the offsets are multiples of " + std::to_string(Best);
    if (B.Array) {
      uint64_t Declared = Ctx.getDeclAlign(B.Array).getQuantity();
      if (Declared < Best) {
        F.Notes.push_back({place(B.Array->getLocation()),
                           "'" + B.Array->getName().str() + "' is aligned to " + std::to_string(Declared) +
                               " bytes: alignas(" + std::to_string(Best) + ") on its declaration makes its start a multiple of " +
                               std::to_string(Best)});
        if (auto Fix = alignasFix(Ctx, B.Array, Best))
          F.Fixes.push_back(*Fix);
      }
    }
    report(std::move(F));
  }

  /// The pipeline_shared_state a pipeline variable was made from (`auto pipe =
  /// cuda::make_pipeline(group, &state)`), or null.
  const VarDecl *sharedStateOf(const VarDecl *Pipe) const {
    const Expr *Init = Pipe ? Pipe->getInit() : nullptr;
    if (!Init)
      return nullptr;
    struct Find : RecursiveASTVisitor<Find> {
      const VarDecl *State = nullptr;
      bool VisitCallExpr(CallExpr *CE) {
        const FunctionDecl *F = CE->getDirectCallee();
        if (!F || F->getName() != "make_pipeline" || !inCuda(F))
          return true;
        for (const Expr *A : CE->arguments())
          if (const auto *U = dyn_cast<UnaryOperator>(A->IgnoreParenImpCasts()); U && U->getOpcode() == UO_AddrOf)
            if (const VarDecl *V = varOf(U->getSubExpr()); V && cudaSpecialization(V->getType(), "pipeline_shared_state"))
              State = V;
        return true;
      }
    } F;
    F.TraverseStmt(const_cast<Expr *>(Init));
    return F.State;
  }

  void stageCount() {
    // Each sync object (a pipeline's shared state, an array of barriers) with its depth, and the
    // buffers of the copies that complete on it.
    struct Sync {
      uint64_t Depth = 0;
      std::string What;
      std::map<const VarDecl *, uint64_t> Buffers;
      bool Unknown = false; ///< a copy whose buffer has no stage index
      bool Pipeline = false; ///< a pipeline's shared state, not an array of barriers
    };
    std::map<const VarDecl *, Sync> Syncs;
    for (const Copy &C : Copies) {
      const Expr *S = C.sync()->IgnoreParenImpCasts();
      const VarDecl *Key = nullptr;
      Sync Found;
      if (const VarDecl *State = sharedStateOf(varOf(S))) {
        const auto *Spec = cudaSpecialization(State->getType(), "pipeline_shared_state");
        Key = State;
        Found.Pipeline = true;
        Found.Depth = integralArg(Spec, 1);
        Found.What = "cuda::pipeline_shared_state '" + State->getName().str() + "' holds " +
                     std::to_string(Found.Depth) + " stages";
      } else if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(S)) {
        const VarDecl *Bars = varOf(ASE->getBase());
        const auto *CAT = Bars ? Ctx.getAsConstantArrayType(Bars->getType()) : nullptr;
        if (CAT && cudaSpecialization(CAT->getElementType(), "barrier")) {
          Key = Bars;
          Found.Depth = CAT->getSize().getZExtValue();
          Found.What = "'" + Bars->getName().str() + "' holds " + std::to_string(Found.Depth) + " barriers, one per stage";
        }
      }
      if (!Key || Found.Depth == 0)
        continue;
      Sync &Y = Syncs.try_emplace(Key, Found).first->second;
      Buffer B = bufferOf(Ctx, C.dst());
      if (B.Array && B.Stages)
        Y.Buffers[B.Array] = B.Stages;
      else
        Y.Unknown = true;
    }
    for (const auto &[Key, Y] : Syncs) {
      std::set<uint64_t> Counts;
      for (const auto &[V, N] : Y.Buffers)
        Counts.insert(N);
      if (Y.Unknown || Counts.size() != 1 || *Counts.begin() == Y.Depth)
        continue;
      uint64_t N = *Counts.begin();
      AuditFinding F;
      F.Code = Reason::AsyncStageCount;
      F.At = place(Key->getLocation());
      F.Detail = Y.What + ", but the copies that complete on it rotate through " + std::to_string(N) + " buffers: " +
                 (!Y.Pipeline ? "stages and buffers go out of step, so the wait on a stage's barrier does not cover "
                                "the copies into the buffer that stage reads"
                  : Y.Depth < N ? "a thread that acquires more stages than the depth before it releases one waits "
                                  "for itself, and the block hangs"
                                : "the depth lets more stages be in flight than there are buffers, so only the "
                                  "code's own barriers keep a refill off a buffer still being read") +
                 "; make the two agree";
      for (const auto &[V, Count] : Y.Buffers)
        F.Notes.push_back({place(V->getLocation()), "'" + V->getName().str() + "' has " + std::to_string(Count) + " buffers"});
      report(std::move(F));
    }
  }

  ASTContext &Ctx;
  const SourceManager &SM;
  StringRef MainName;
  std::vector<Copy> Copies;
  std::map<const FunctionDecl *, LocalFacts> Locals; ///< by function, as unchanged reads them
  std::vector<AuditFinding> Out;
  std::set<std::tuple<std::string, unsigned, unsigned, int>> Reported;
};

std::string placeText(const Place &P) {
  return P.File + ":" + std::to_string(P.Line) + ":" + std::to_string(P.Column);
}

} // namespace

std::vector<AuditFinding> auditAST(ASTContext &Ctx, StringRef MainName) {
  return Auditor(Ctx, MainName).run();
}

std::string auditText(const AuditFinding &F) {
  const ReasonInfo &I = reasonInfo(F.Code);
  std::string Out = placeText(F.At) + (F.Remark ? ": remark: [" : ": warning: [") + I.Id.str() + "] " + F.Detail;
  for (const auto &[P, Note] : F.Notes)
    Out += "\n" + placeText(P) + ": note: " + Note;
  for (const tooling::Replacement &R : F.Fixes)
    Out += "\n" + placeText(F.FixAt ? *F.FixAt : F.Notes.empty() ? F.At : F.Notes.front().first) + ": note: fix: " +
           (R.getLength() ? "replace " + std::to_string(R.getLength()) + " byte(s) with '" : "insert '") +
           R.getReplacementText().str() + "' at offset " + std::to_string(R.getOffset()) + " of " +
           R.getFilePath().str();
  return Out;
}

llvm::json::Value auditJson(const AuditFinding &F) {
  const ReasonInfo &I = reasonInfo(F.Code);
  llvm::json::Array Notes, Fixes;
  for (const auto &[P, Note] : F.Notes)
    Notes.push_back(llvm::json::Object{{"file", P.File}, {"line", P.Line}, {"column", P.Column}, {"message", Note}});
  for (const tooling::Replacement &R : F.Fixes)
    Fixes.push_back(llvm::json::Object{{"file", R.getFilePath()},
                                       {"offset", R.getOffset()},
                                       {"length", R.getLength()},
                                       {"replacement", R.getReplacementText()}});
  return llvm::json::Object{{"id", I.Id},         {"message", I.Message}, {"detail", F.Detail},
                            {"file", F.At.File},  {"line", F.At.Line},    {"column", F.At.Column},
                            {"level", F.Remark ? "remark" : "warning"},
                            {"notes", std::move(Notes)}, {"fixes", std::move(Fixes)}};
}

} // namespace tilepipe
