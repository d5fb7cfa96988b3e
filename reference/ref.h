/* ref.h - the dense attention reference on the CPU.
 *
 * Inputs are read in their dtype and converted exactly to fp32; scores,
 * softmax and the output are accumulated in fp64. Every mask, GQA by index
 * mapping (no copies), varlen and prefix-LM. Only the requested rows are
 * computed, each exactly, on all threads.
 *
 * The input-precision pass (for the flash-attention rule) is what a flash
 * kernel computing in the input dtype gives: scores accumulated in fp32 (not
 * rounded), P = exp(S - max) in fp32 and its row sum l in fp32, P rounded to
 * the dtype for P V accumulated in fp32, O = acc * (1 / l) in fp32 rounded to
 * the dtype. For fp32 inputs it is plain fp32 arithmetic.
 */
#ifndef FA_REF_H
#define FA_REF_H

#include <stdint.h>

#include "../harness/base/err.h"
#include "../kernels/common/fa_problem.h"
#include "ref_rows.h"

/* Computes the reference for rows[0..n_rows) (row id T * heads + h, see
 * struct fa_ref) into ref, which takes ownership of a copy of the row list.
 * q, k, v are host buffers laid out as p describes. same_precision != 0 also
 * fills ref->same. nthreads <= 0 uses all CPUs. *cancel (may be NULL) stops
 * early with FA_ERR_CANCELLED. On error ref is left empty. */
enum fa_rc fa_ref_compute(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			  const int32_t *cu_seqlens_k, const int32_t *prefix_lens, const void *q,
			  const void *k, const void *v, const int64_t *rows, int64_t n_rows,
			  int same_precision, int nthreads, volatile int *cancel, struct fa_ref *ref,
			  struct fa_err *err);

/* The backward's reference (reference/ref_bwd.c): dQ of query rows
 * q_rows[0..n_q) and dK, dV of key rows k_rows[0..n_k) (struct
 * fa_ref_grad) from the host inputs q, k, v and d_o (dO, laid out as O),
 * each row exact in fp64 over every query and key the mask allows, GQA
 * summed over the query heads of a group; with same_precision also the
 * input-precision pass. g takes copies of the row lists. *cancel (may be
 * NULL) stops early with FA_ERR_CANCELLED. On error g is left empty. */
enum fa_rc fa_ref_bwd_compute(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			      const int32_t *cu_seqlens_k, const int32_t *prefix_lens, const void *q,
			      const void *k, const void *v, const void *d_o, const int64_t *q_rows,
			      int64_t n_q, const int64_t *k_rows, int64_t n_k, int same_precision,
			      int nthreads, volatile int *cancel, struct fa_ref_grad *g,
			      struct fa_err *err);

void fa_ref_grad_free(struct fa_ref_grad *g);

/* Sequence index and position within it of packed query token T. */
void fa_ref_locate(const struct fa_problem *p, const int32_t *cu_seqlens_q, int64_t T, int *b,
		   int32_t *t);

/* The same for packed key token T (cu_seqlens_k, kv_len). */
void fa_ref_locate_key(const struct fa_problem *p, const int32_t *cu_seqlens_k, int64_t T, int *b,
		       int32_t *t);

#endif /* FA_REF_H */
