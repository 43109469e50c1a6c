// The user's text moves in slices cut between tokens: a slice that a cut would split inside a
// comment, a line comment continued by a backslash, a token spanning lines, or half of a
// preprocessor conditional leaves the loop alone (source-text), byte for byte. Comments of several
// lines, line comments that end their line and whole conditionals move with their slices.
//
// RUN: %check_tilepipe "%s" "%t"

#define T 64

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [source-text] {{.*}}in the compute phase, the line comment at line [[@LINE+7]] continues onto the next line
namespace ContinuedCommentEndsTheCompute {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x]; // the mirrored element \

    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ContinuedCommentEndsTheCompute

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [source-text] {{.*}}in the copy phase, the line comment
namespace ContinuedCommentEndsTheCopy {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x]; // one element \

    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace ContinuedCommentEndsTheCopy

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [source-text] {{.*}}a preprocessor conditional opens and does not close
namespace ConditionalAcrossTheTrailingBarrier {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
#if T > 0
    __syncthreads();
#endif
  }
  C[threadIdx.x] = acc;
}
} // namespace ConditionalAcrossTheTrailingBarrier

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [source-text] {{.*}}spans lines (a string or a backslash-newline inside a token)
namespace StringSpanningLines {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    if (s[0] != s[0]) printf("a NaN in block \
%d\n", (int)blockIdx.x);
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace StringSpanningLines

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [pipelined]
namespace WholeCommentsAndConditionals {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) { /* the copy
    of one tile */ s[threadIdx.x] = A[t * T + threadIdx.x]; // one element
    __syncthreads(); // published
    acc += s[T - 1 - threadIdx.x]; /* a comment that
    ends on the barrier's line */ __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace WholeCommentsAndConditionals
// CHECK-FIXES: /* the copy
// CHECK-FIXES: of one tile */
// CHECK-FIXES: // one element
// CHECK-FIXES: /* a comment that
// CHECK-FIXES: ends on the barrier's line */
// CHECK-FIXES: pipe.consumer_release();

// CHECK-MESSAGES: :[[@LINE+4]]:3: remark: [pipelined]
namespace WholeConditionalInTheCompute {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
#if T > 32
    acc += s[T - 1 - threadIdx.x];
#else
    acc += s[threadIdx.x];
#endif
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
} // namespace WholeConditionalInTheCompute
// CHECK-FIXES: #if T > 32
// CHECK-FIXES: #else
// CHECK-FIXES: #endif
// CHECK-FIXES: pipe.consumer_release();
