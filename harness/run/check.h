/* check.h - error statistics of a kernel's output against the reference, and
 * the tolerance verdict.
 *
 * Rules (chosen per suite in `check: rule:`; each result stores which one
 * decided it):
 *   tolerance  max_abs <= tol.max_abs and rel_l2 <= tol.rel_l2 (per dtype)
 *   fa         the flash-attention rule: max_abs <= k * max_abs of the
 *              same attention computed in the input precision + atol, and
 *              rel_l2 <= k_l2 * its rel_l2 + l2_floor; per dtype (fa[]),
 *              k and atol replaced by the suite's fa_k / fa_atol when set
 * and under every rule: no NaN or Inf, no unwritten element.
 */
#ifndef FA_CHECK_H
#define FA_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "../../kernels/common/fa_problem.h"
#include "../../reference/ref_rows.h"
#include "../base/err.h"

enum fa_check_rule { FA_RULE_TOLERANCE = 0, FA_RULE_FA = 1 };
enum fa_ref_where { FA_REF_AUTO = 0, FA_REF_CPU = 1, FA_REF_GPU = 2 };

struct fa_tol {
	double max_abs;
	double rel_l2;
};

/* The fa rule of one dtype: max_abs <= k * same_max_abs + atol and
 * rel_l2 <= k_l2 * same_rel_l2 + l2_floor. */
struct fa_fa_limit {
	double k;
	double atol;
	double k_l2;
	double l2_floor;
};

struct fa_check_cfg {
	int32_t rule;       /* enum fa_check_rule */
	int32_t reference;  /* enum fa_ref_where */
	int32_t rows;       /* query rows sampled in large cases (default 256) */
	/* Cases whose reference costs at most this many multiply-adds
	 * (total_q * heads * kv_len * (head_dim + head_dim_v)) are checked whole. */
	double full_limit;  /* default 2^28 */
	struct fa_tol tol[FA_DTYPE_COUNT];
	double fa_k;        /* > 0: k of every dtype (suite's fa_k); default 0: fa[dtype].k */
	double fa_atol;     /* >= 0: atol of every dtype (fa_atol); default -1: fa[dtype].atol */
	double rel_floor;   /* denominator floor of max_rel (default 1e-3) */
	struct fa_fa_limit fa[FA_DTYPE_COUNT]; /* the fa rule per dtype (docs/suites.md) */
};

/* The fa rule's k and atol for dtype under cfg (the suite's fa_k / fa_atol
 * when set, else the dtype's defaults). */
struct fa_fa_limit fa_check_fa_limit(const struct fa_check_cfg *cfg, int dtype);

/* Fills cfg with the documented defaults (docs/suites.md). */
void fa_check_defaults(struct fa_check_cfg *cfg);

struct fa_err_stats {
	double max_abs, max_rel, mean_abs;
	double rel_l2;        /* ||o - r|| / ||r|| over checked elements */
	double nmse;          /* sum (o - r)^2 / sum r^2 */
	double same_max_abs;  /* max_abs of the input-precision reference, -1 if not computed */
	int64_t nan_count, inf_count; /* over the whole output */
	int64_t unwritten;    /* elements still holding the poison pattern */
	int64_t worst_index;  /* element offset in the output buffer, -1 if none */
	double worst_out, worst_ref;
	int64_t rows_checked, elems_checked;
	double same_rel_l2;   /* rel_l2 of the input-precision reference, -1 if not computed */
};

/* The fa rule's k for gradients (flash-attention's tests use 3 for dQ, dK
 * and dV, 2 for O) unless the suite sets fa_k; also their k_l2. */
#define FA_CHECK_GRAD_K 3.0
/* The fa rule's floors for fp32 gradients (check.c says why): rel_l2 at
 * least 2^-14 (6.1e-5, about 2^10 units of fp32 roundoff) and max_abs atol
 * plus 2^-14 of the largest reference element. A TF32-like 10-bit kernel
 * (rel_l2 ~1e-3) and every bug of tests/mutants still fail by far. */
#define FA_CHECK_GRAD_FP32_L2_FLOOR 0x1p-14
#define FA_CHECK_GRAD_FP32_REL_ATOL 0x1p-14

/* Chooses the rows to check: all rows when the case's cost is within
 * cfg->full_limit, else cfg->rows rows drawn with the counter RNG from seed
 * (sorted, without repeats), always including row 0 and the last row.
 * Sets *rows (malloc'd, caller frees) and *n. Returns FA_OK or FA_ERR_NOMEM. */
enum fa_rc fa_check_select_rows(const struct fa_problem *p, const struct fa_check_cfg *cfg,
				uint64_t seed, int64_t **rows, int64_t *n, struct fa_err *err);

/* The key rows whose dK and dV are checked (row id T * kv_heads + kvh):
 * all of them when the whole backward costs at most cfg->full_limit
 * multiply-adds, else cfg->rows rows drawn from two (sequence, kv head)
 * pairs, one drawn with the counter RNG and the last sequence's last kv
 * head, including the first key of the one and the last key of the other
 * (each key row's gradient needs every query row of its sequence and
 * group). Sets *rows (malloc'd, sorted) and *n. FA_OK or FA_ERR_NOMEM. */
enum fa_rc fa_check_select_kv_rows(const struct fa_problem *p, const int32_t *cu_seqlens_k,
				   const struct fa_check_cfg *cfg, uint64_t seed, int64_t **rows,
				   int64_t *n, struct fa_err *err);

enum fa_verdict { FA_VERDICT_PASS = 0, FA_VERDICT_FAIL = 1 };

/* Compares a kernel's output o (host copy, dtype p->dtype, the full output
 * buffer) with ref. Fills st, returns FA_VERDICT_PASS or FA_VERDICT_FAIL with
 * the deciding rule name ("tolerance" or "fa") in rule and, on failure, a
 * reason in reason ("max_abs 0.031 > 0.01 at b=0 t=5 h=2 d=17"). Under the fa
 * rule without ref->same (a reference that has no same-precision pass) the
 * tolerance rule decides and rule is "tolerance (fa)". Statistics cover the
 * finite output elements of the reference rows; NaN, Inf and unwritten
 * elements are counted over the whole output. */
int fa_check_compare(const struct fa_problem *p, const int32_t *cu_seqlens_q, const void *o,
		     const struct fa_ref *ref, const struct fa_check_cfg *cfg,
		     struct fa_err_stats *st, char *rule, size_t rule_size, char *reason,
		     size_t reason_size);

/* The same for any tensor of the problem (enum fa_tensor): buf the whole
 * buffer, rows its reference rows (row id T * heads_of_tensor + h), ref_out
 * n_rows * dim values, ref_same (or NULL) the input-precision pass. For the
 * gradients dQ, dK, dV the fa rule's k is FA_CHECK_GRAD_K (unless the suite
 * sets fa_k) and the tolerance rule's max_abs scales with the largest
 * reference element when that exceeds 1, its rel_l2 by FA_CHECK_GRAD_K. cu_seqlens_k may be NULL for
 * query-side tensors. */
int fa_check_compare_tensor(const struct fa_problem *p, const int32_t *cu_seqlens_q,
			    const int32_t *cu_seqlens_k, int tensor, const void *buf,
			    const int64_t *rows, int64_t n_rows, const double *ref_out,
			    const float *ref_same, const struct fa_check_cfg *cfg,
			    struct fa_err_stats *st, char *rule, size_t rule_size, char *reason,
			    size_t reason_size);

#endif /* FA_CHECK_H */
