/* ref_rows.h - the reference values of selected rows, as the reference
 * (ref.h, and the GPU reference of a backend) fills them and the check
 * (harness/run/check.h) reads them. A header of its own so that neither
 * of the two includes the other.
 */
#ifndef FA_REF_ROWS_H
#define FA_REF_ROWS_H

#include <stdint.h>

/* The reference for selected rows. A row is (packed query token T, head h),
 * row id T * heads + h. out holds n_rows * head_dim_v values in row order;
 * same (or NULL) the same rows computed in the input precision. */
struct fa_ref {
	int64_t n_rows;
	int64_t *rows;
	double *out;
	float *same;
};

/* Frees what r holds and zeroes it; r may be NULL. */
void fa_ref_free(struct fa_ref *r);

/* The reference gradients of the backward: dQ of query rows q_rows (row id
 * T * heads + h, n_q * head_dim values), dK and dV of key rows k_rows (row
 * id T * kv_heads + kvh over the packed key tokens, n_k * head_dim and
 * n_k * head_dim_v values); the *_same arrays (or NULL) the same rows in the
 * input precision. Freed by fa_ref_grad_free (ref.h). */
struct fa_ref_grad {
	int64_t n_q, n_k;
	int64_t *q_rows, *k_rows;
	double *dq, *dk, *dv;
	float *dq_same, *dk_same, *dv_same;
};


#endif /* FA_REF_ROWS_H */
