/* report.c - one run's results as a markdown report, a CSV file (one row per
 * result), a JSON document or an HTML page, read back from the database.
 *
 * Output is deterministic, so reports can be compared byte for byte against
 * golden files: nothing depends on the clock, rows follow the suite order
 * and kernels a fixed order, and numbers have fixed formats.
 *
 * Markdown: a run header, the failures (fail / error / timeout) with their
 * reasons, then one table for the run's suite. Rows are cases in suite
 * order; case columns are only the parameters that differ between cases
 * (the others are listed once above the table). A parameter that equals its
 * partner in every case (kv_heads = heads, kv_len = q_len, head_dim_v =
 * head_dim, kv_seqlens = seqlens) gets no column of its own. Per kernel
 * (the baseline first, then by name): median time in ms, throughput,
 * speedup against the baseline (`x`, not for the baseline itself), max_abs
 * and, when any of its results did not pass, a status column. Throughput is
 * TFLOP/s for a case with q_len > 16 and GB/s for a decode-like case (a
 * forward with q_len <= 16, memory bound); when a table holds both kinds, the column is named
 * `throughput` and every cell carries its unit.
 *
 * CSV (RFC 4180 quoting, LF line ends) and JSON hold the full-precision
 * values: the shortest of %.15g..%.17g that reads back as the same double.
 * Both list results by case index, then kernel name, then row id.
 *
 * HTML: the markdown report's content as one self-contained page (see
 * "HTML" below), with the compare and plots the options ask for.
 */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "../store/reader.h"
#include "plot.h"
#include "table.h"
#include "../base/text.h"
#include "../base/util.h"

/* Cases with at most this many queries per sequence are decode-like (one
 * token, or a few for speculative decoding): memory bound, so their
 * throughput is reported in GB/s rather than TFLOP/s. */
#define REPORT_DECODE_Q_LEN 16

int fa_report_metric_parse(const char *s)
{
	static const char *const names[] = {[FA_METRIC_MS] = "ms", [FA_METRIC_TFLOPS] = "tflops",
					    [FA_METRIC_GBPS] = "gbps"};
	for (int i = 1; s && i < (int)(sizeof names / sizeof names[0]); i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

int fa_report_layout_parse(const char *s)
{
	if (s && strcmp(s, "wide") == 0)
		return FA_LAYOUT_WIDE;
	if (s && strcmp(s, "long") == 0)
		return FA_LAYOUT_LONG;
	return -1;
}

int fa_report_format_parse(const char *s)
{
	static const char *const names[] = {[FA_FMT_MD] = "md", [FA_FMT_CSV] = "csv",
					    [FA_FMT_JSON] = "json", [FA_FMT_HTML] = "html"};
	for (int i = 0; s && i < (int)(sizeof names / sizeof names[0]); i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- The run in memory (rows from the reader, store/reader.h) ------------- */

struct report {
	struct fa_rows run, cases, res;
	struct fa_rows grads; /* grad_stats rows of the run's results, by result id */
	int *res_case;    /* case row of each result row */
	char **res_label; /* column label of each result row */
	const char **labels; /* kernel columns (pointing into res_label) */
	int nk;
	int *res_k;       /* kernel column of each result row */
	int baseline;     /* kernel column of the forward cases' baseline (else the
	                     first pass's that has one), -1 none */
	int base_pass[3]; /* the baseline column of each pass (fwd, bwd, fwd_bwd),
	                     -1 none: a backward is measured against a backward */
	int *case_pass;   /* per case row: 0 fwd, 1 bwd, 2 fwd_bwd */
	unsigned *col_passes; /* per kernel column: bit p when it ran pass p */
	int *grid;        /* result row of (case row, kernel column), -1 none */
	int *order;       /* result rows by case, kernel name, id (CSV, JSON) */
	int have_cal;     /* the run's device has a calibration: % of peak is shown */
	struct fa_calibration cal;
	const char **res_shown; /* the column label each result row is shown
	                           under: its own, or its family's */
	int metric, layout;     /* enum fa_report_metric, fa_report_layout */
	int n_fam_rows;         /* results shown in a family's column */
	struct fa_case_tag **tags; /* per case row: its labels (models), NULL none */
	int32_t *n_tags;
	int32_t *depth; /* per case row: the suite's depth:, 0 when not given */
	int any_tags;
	int any_depth;  /* a case with the suite's depth: (a CSV column) */
	int any_layers; /* a case's model has layers: tokens/s columns */
	int any_device; /* a result with a device index (run --devices) */
};

static void report_free(struct report *r)
{
	for (int c = 0; r->tags && c < r->cases.nrows; c++) /* before the cases' table */
		fa_store_tags_free(r->tags[c], r->n_tags[c]);
	free(r->tags);
	free(r->n_tags);
	free(r->depth);
	for (int i = 0; r->res_label && i < r->res.nrows; i++)
		free(r->res_label[i]);
	free(r->res_label);
	fa_rows_free(&r->run);
	fa_rows_free(&r->cases);
	fa_rows_free(&r->res);
	fa_rows_free(&r->grads);
	free(r->labels);
	free(r->res_shown);
	free(r->res_case);
	free(r->res_k);
	free(r->grid);
	free(r->case_pass);
	free(r->col_passes);
	free(r->order);
}


static const char *res_text(const struct report *r, int row, const char *name)
{
	return fa_rows_text(&r->res, row, name);
}

static int res_real(const struct report *r, int row, const char *name, double *v)
{
	return fa_rows_real(&r->res, row, name, v);
}

/* Column name (max_abs, rel_l2, same_max_abs) of gradient tensor ("dq",
 * "dk", "dv") of result row: 1 and *v when stored. */
static int grad_real(const struct report *r, int row, const char *tensor, const char *name,
		     double *v)
{
	int64_t id = fa_rows_int(&r->res, row, "id");
	for (int i = 0; i < r->grads.nrows; i++) {
		const char *t = fa_rows_text(&r->grads, i, "tensor");
		if (fa_rows_int(&r->grads, i, "result_id") == id && t && strcmp(t, tensor) == 0)
			return fa_rows_real(&r->grads, i, name, v);
	}
	return 0;
}

/* The status shown: the stored one, but unchecked for a pass nobody
 * checked (fa_status_effective). */
static int res_status(const struct report *r, int row)
{
	return fa_status_effective(fa_status_parse(res_text(r, row, "status")),
				   (int)fa_rows_int(&r->res, row, "checked"));
}

/* 1 when result row's time may be set against another's: it passed, or
 * nobody checked it (imported). A failed result's time is of a wrong
 * answer, which can be fast because it skipped work. */
static int timing_counts(const struct report *r, int row)
{
	const int st = res_status(r, row);
	return st == FA_STATUS_PASS || st == FA_STATUS_UNCHECKED;
}

/* baseline median / this result's median; 0 when there is none (no
 * baseline, the baseline itself, either untimed, or either failed). */
static double speedup_of(const struct report *r, int row)
{
	int c = r->res_case[row], b, k = r->res_k[row], base = r->base_pass[r->case_pass[c]];
	double mb, mk;
	if (base < 0 || k == base)
		return 0;
	b = r->grid[(size_t)c * r->nk + base];
	if (b < 0 || !timing_counts(r, b) || !timing_counts(r, row) ||
	    !res_real(r, b, "median_ms", &mb) || !res_real(r, row, "median_ms", &mk) ||
	    !(mb > 0) || !(mk > 0))
		return 0;
	return mb / mk;
}

/* 1 when kernel column k ran a pass whose baseline is another column: its
 * speedup column is shown. */
static int has_x(const struct report *r, int k)
{
	for (int p = 0; p < 3; p++)
		if (r->base_pass[p] >= 0 && r->base_pass[p] != k && (r->col_passes[k] >> p & 1u))
			return 1;
	return 0;
}

/* Column labels "kernel" or "kernel[params]": by kernel name, then by
 * params with numbers as numbers (splits=2 before splits=16). */
static int cmp_label(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t nx = strcspn(x, "["), ny = strcspn(y, "[");
	int c = strncmp(x, y, nx < ny ? nx : ny);
	char px[512], py[512];
	if (c || nx != ny)
		return c ? c : (nx > ny) - (nx < ny);
	if (!x[nx] || !y[ny])
		return (x[nx] != 0) - (y[ny] != 0);
	snprintf(px, sizeof px, "%.*s", (int)strcspn(x + nx + 1, "]"), x + nx + 1);
	snprintf(py, sizeof py, "%.*s", (int)strcspn(y + ny + 1, "]"), y + ny + 1);
	return fa_table_params_cmp(px, py);
}

static const struct report *sort_ctx; /* qsort has no context argument */

static int cmp_order(const void *a, const void *b)
{
	const struct report *r = sort_ctx;
	int x = *(const int *)a, y = *(const int *)b, c;
	int64_t ix = fa_rows_int(&r->cases, r->res_case[x], "idx");
	int64_t iy = fa_rows_int(&r->cases, r->res_case[y], "idx");
	if (ix != iy)
		return ix < iy ? -1 : 1;
	c = strcmp(r->labels[r->res_k[x]], r->labels[r->res_k[y]]);
	if (c)
		return c;
	return fa_rows_int(&r->res, x, "id") < fa_rows_int(&r->res, y, "id") ? -1 : 1;
}

/* 1 when the item params[0..n) ("name=value") appears in the params of
 * every result of kernel k. */
static int param_item_common(const struct report *r, const char *k, const char *item, size_t n)
{
	for (int i = 0; i < r->res.nrows; i++)
		if (strcmp(res_text(r, i, "kernel"), k) == 0 &&
		    !fa_table_params_has(res_text(r, i, "params"), item, n))
			return 0;
	return 1;
}

/* The column label of every result row into r->res_label: its kernel, or
 * kernel[params] when that kernel ran with more than one set of params in
 * this run (a tuning run), naming only the params that differ between its
 * sets ("cuda_flash_mma[splits=4]" when every set has order=1). */
static enum fa_rc label_results(struct report *r, struct fa_err *err)
{
	int n = r->res.nrows, nd = 0;
	const char **kname = calloc((size_t)n + 1, sizeof *kname);
	const char **kparams = calloc((size_t)n + 1, sizeof *kparams);
	int *several = calloc((size_t)n + 1, sizeof *several);
	enum fa_rc rc = FA_OK;

	r->res_label = calloc((size_t)n + 1, sizeof *r->res_label);
	if (!kname || !kparams || !several || !r->res_label)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	/* distinct kernels (a handful), and whether each ran with several params */
	for (int i = 0; rc == FA_OK && i < n; i++) {
		const char *k = res_text(r, i, "kernel"), *p = res_text(r, i, "params");
		int d;
		for (d = 0; d < nd && strcmp(kname[d], k) != 0; d++)
			;
		if (d == nd) {
			kname[nd] = k;
			kparams[nd++] = p ? p : "";
		} else if (strcmp(kparams[d], p ? p : "") != 0) {
			several[d] = 1;
		}
	}
	for (int i = 0; rc == FA_OK && i < n; i++) {
		const char *k = res_text(r, i, "kernel"), *p = res_text(r, i, "params");
		int d;
		size_t len;
		for (d = 0; strcmp(kname[d], k) != 0; d++)
			;
		len = strlen(k) + (p ? strlen(p) : 0) + 3;
		if (!(r->res_label[i] = malloc(len))) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
			break;
		}
		if (several[d] && p && p[0]) {
			size_t at = (size_t)snprintf(r->res_label[i], len, "%s[", k);
			int first = 1;
			for (const char *q = p; *q;) {
				size_t m = strcspn(q, ",");
				if (!param_item_common(r, k, q, m)) {
					at += (size_t)snprintf(r->res_label[i] + at, len - at, "%s%.*s",
							       first ? "" : ",", (int)m, q);
					first = 0;
				}
				q += m + (q[m] == ',');
			}
			snprintf(r->res_label[i] + at, len - at, "]");
		} else {
			snprintf(r->res_label[i], len, "%s", k);
		}
	}
	free(kname);
	free(kparams);
	free(several);
	return rc;
}

/* Kernel families. A kernel named "<family>_<instance>" whose family is a
 * kernel of the run too (cuda_flash_mma_d72_pad80 of cuda_flash_mma: an
 * instance for a head size the main one lacks) is shown in the family's
 * column when it ran no case that the family, or an instance already in
 * that column, also ran (skips do not count): each case then shows the
 * result of the instance that ran it. An instance that overlaps them
 * (d72_masked beside d72_pad80, both for head_dim 72) keeps a column of its
 * own, so the one registered first (its results have the lower row ids) is
 * the family's pick. Labels with params ("k[p]", a tuning run) are never
 * folded, nor is a kernel that ran a pass (fwd, bwd, fwd_bwd) the family
 * ran on no case: cpu_dense_bwd is cpu_dense's backward, not an instance
 * of it. The rule reads names and the cases' passes, so old databases fold
 * the same way.
 * Fills r->res_shown and leaves only the columns shown in r->labels. */
static enum fa_rc fold_families(struct report *r, struct fa_err *err)
{
	int n = r->res.nrows, nk = r->nk, nc = r->cases.nrows, nkeep = 0;
	int *lab = malloc(((size_t)n + 1) * sizeof *lab);
	int64_t *first = malloc(((size_t)nk + 1) * sizeof *first);
	int *ord = malloc(((size_t)nk + 1) * sizeof *ord);
	int *fam = malloc(((size_t)nk + 1) * sizeof *fam);
	char *ran = calloc((size_t)nc * nk + 1, 1);
	unsigned *passes = calloc((size_t)nk + 1, sizeof *passes); /* bit per pass run */
	enum fa_rc rc = FA_OK;

	r->res_shown = calloc((size_t)n + 1, sizeof *r->res_shown);
	if (!lab || !first || !ord || !fam || !ran || !passes || !r->res_shown) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
		goto out;
	}
	for (int k = 0; k < nk; k++) {
		first[k] = INT64_MAX;
		fam[k] = -1;
		ord[k] = k;
	}
	for (int i = 0; i < n; i++) {
		int k = 0;
		int64_t id = fa_rows_int(&r->res, i, "id");
		while (strcmp(r->labels[k], r->res_label[i]) != 0)
			k++;
		lab[i] = k;
		first[k] = id < first[k] ? id : first[k];
		if (res_status(r, i) != FA_STATUS_SKIP) {
			const char *pass = fa_rows_text(&r->cases, r->res_case[i], "pass");
			ran[(size_t)r->res_case[i] * nk + k] = 1;
			passes[k] |= !pass || strcmp(pass, "fwd") == 0 ? 1u
				     : strcmp(pass, "bwd") == 0       ? 2u
								      : 4u;
		}
	}
	/* in the order kernels ran (a handful: insertion sort) */
	for (int a = 1; a < nk; a++)
		for (int b = a; b > 0 && first[ord[b]] < first[ord[b - 1]]; b--) {
			int t = ord[b];
			ord[b] = ord[b - 1];
			ord[b - 1] = t;
		}
	for (int a = 0; a < nk; a++) {
		int k = ord[a], f = -1, clash = 0;
		const char *name = r->labels[k];
		if (strchr(name, '['))
			continue;
		for (int g = 0; g < nk; g++) {
			size_t len = strlen(r->labels[g]);
			if (g == k || fam[g] >= 0 || strchr(r->labels[g], '[') ||
			    strncmp(name, r->labels[g], len) != 0 || name[len] != '_')
				continue;
			if (f < 0 || len < strlen(r->labels[f]))
				f = g;
		}
		if (f < 0 || (passes[k] & ~passes[f]))
			continue;
		for (int c = 0; c < nc && !clash; c++) {
			const char *row = ran + (size_t)c * nk;
			if (!row[k])
				continue;
			clash = row[f];
			for (int m = 0; m < nk && !clash; m++)
				clash = fam[m] == f && row[m];
		}
		if (!clash)
			fam[k] = f;
	}
	for (int i = 0; i < n; i++) {
		r->res_shown[i] = r->labels[fam[lab[i]] >= 0 ? fam[lab[i]] : lab[i]];
		r->n_fam_rows += fam[lab[i]] >= 0 && res_status(r, i) != FA_STATUS_SKIP;
	}
	for (int k = 0; k < nk; k++)
		if (fam[k] < 0)
			r->labels[nkeep++] = r->labels[k];
	r->nk = nkeep;
out:
	free(lab);
	free(first);
	free(ord);
	free(fam);
	free(ran);
	free(passes);
	return rc;
}

/* The family shown for result row i when it is an instance (its column is
 * its family's), else NULL. */
static const char *family_of(const struct report *r, int i)
{
	return strcmp(r->res_shown[i], r->res_label[i]) != 0 ? r->res_shown[i] : NULL;
}

struct case_id {
	int64_t id;
	int row;
};

static int cmp_case_id(const void *a, const void *b)
{
	int64_t x = ((const struct case_id *)a)->id, y = ((const struct case_id *)b)->id;
	return (x > y) - (x < y);
}

static enum fa_rc report_load(struct fa_store *s, int64_t run_id, const char *baseline,
			      struct report *r, struct fa_err *err)
{
	struct case_id *ids;
	enum fa_rc rc;

	memset(r, 0, sizeof *r);
	r->baseline = -1;
	r->base_pass[0] = r->base_pass[1] = r->base_pass[2] = -1;
	rc = fa_reader_rows(s, FA_ROWS_RUN, run_id, &r->run, err);
	if (rc == FA_OK && r->run.nrows == 0)
		return fa_err_set(err, FA_ERR_NOT_FOUND, "no run %" PRId64 " in '%s'", run_id,
				  fa_store_path(s));
	if (rc == FA_OK) {
		/* the device's latest calibration, when there is one, for % of peak */
		const char *dev = fa_rows_text(&r->run, 0, "device_name");
		struct fa_err cerr;
		fa_err_clear(&cerr);
		r->have_cal = dev && fa_store_calibration_get(s, dev, &r->cal, &cerr) == FA_OK &&
			      (r->cal.matmul_tflops > 0 || r->cal.copy_gbps > 0);
	}
	if (rc == FA_OK)
		rc = fa_reader_rows(s, FA_ROWS_CASES, run_id, &r->cases, err);
	if (rc == FA_OK)
		rc = fa_reader_rows(s, FA_ROWS_RESULTS, run_id, &r->res, err);
	if (rc == FA_OK)
		rc = fa_reader_rows(s, FA_ROWS_GRADS, run_id, &r->grads, err);
	if (rc != FA_OK)
		return rc;

	r->res_case = calloc((size_t)r->res.nrows + 1, sizeof *r->res_case);
	r->res_k = calloc((size_t)r->res.nrows + 1, sizeof *r->res_k);
	r->order = calloc((size_t)r->res.nrows + 1, sizeof *r->order);
	r->labels = calloc((size_t)r->res.nrows + 1, sizeof *r->labels);
	if (!r->res_case || !r->res_k || !r->order || !r->labels)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");

	/* case row of each result, through the case ids sorted */
	ids = malloc(((size_t)r->cases.nrows + 1) * sizeof *ids);
	if (!ids)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	for (int c = 0; c < r->cases.nrows; c++)
		ids[c] = (struct case_id){fa_rows_int(&r->cases, c, "id"), c};
	qsort(ids, (size_t)r->cases.nrows, sizeof *ids, cmp_case_id);
	for (int i = 0; i < r->res.nrows; i++) {
		struct case_id key = {fa_rows_int(&r->res, i, "case_id"), 0}, *hit;
		hit = bsearch(&key, ids, (size_t)r->cases.nrows, sizeof *ids, cmp_case_id);
		if (!hit) {
			free(ids);
			return fa_err_set(err, FA_ERR_DB,
					  "result %" PRId64 " of run %" PRId64 " has no case",
					  fa_rows_int(&r->res, i, "id"), run_id);
		}
		r->res_case[i] = hit->row;
	}
	free(ids);

	/* the labels of each case (the models that share its shape) */
	r->tags = calloc((size_t)r->cases.nrows + 1, sizeof *r->tags);
	r->n_tags = calloc((size_t)r->cases.nrows + 1, sizeof *r->n_tags);
	r->depth = calloc((size_t)r->cases.nrows + 1, sizeof *r->depth);
	if (!r->tags || !r->n_tags || !r->depth)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	for (int c = 0; c < r->cases.nrows; c++) {
		if ((rc = fa_store_case_tags(s, fa_rows_int(&r->cases, c, "id"), &r->tags[c], &r->n_tags[c],
					     err)) != FA_OK)
			return rc;
		if ((rc = fa_store_case_depth(s, fa_rows_int(&r->cases, c, "id"), &r->depth[c], err)) !=
		    FA_OK)
			return rc;
		r->any_depth |= r->depth[c] > 0;
		r->any_tags |= r->n_tags[c] > 0;
		for (int g = 0; g < r->n_tags[c]; g++)
			r->any_layers |= r->tags[c][g].layers > 0;
	}
	for (int i = 0; i < r->res.nrows; i++) {
		const struct fa_cell *d = fa_rows_cell(&r->res, i, "device");
		r->any_device |= d && d->type == FA_CELL_INT;
	}

	rc = label_results(r, err);
	if (rc != FA_OK)
		return rc;
	/* kernel columns, sorted by label (labels point into res_label) */
	for (int i = 0; i < r->res.nrows; i++) {
		int k;
		for (k = 0; k < r->nk && strcmp(r->labels[k], r->res_label[i]) != 0; k++)
			;
		if (k == r->nk)
			r->labels[r->nk++] = r->res_label[i];
	}
	qsort(r->labels, (size_t)r->nk, sizeof *r->labels, cmp_label);
	rc = fold_families(r, err);
	if (rc != FA_OK)
		return rc;

	/* each case's pass */
	if (!(r->case_pass = calloc((size_t)r->cases.nrows + 1, sizeof *r->case_pass)) ||
	    !(r->col_passes = calloc((size_t)r->nk + 1, sizeof *r->col_passes)))
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	for (int c = 0; c < r->cases.nrows; c++) {
		const char *pass = fa_rows_text(&r->cases, c, "pass");
		r->case_pass[c] = !pass || strcmp(pass, "fwd") == 0 ? 0 : strcmp(pass, "bwd") == 0 ? 1 : 2;
	}
	/* the baselines: asked for by label or kernel name (the baseline of
	 * every pass it ran; a forward kernel has no backward to measure one
	 * against), else per pass the first kernel (by row id) with "dense" in
	 * its name that ran a case of the pass (cpu_dense for the forward,
	 * cpu_dense_bwd for the backward); they move to the first columns */
	for (int k = 0; baseline && k < r->nk; k++)
		if (strcmp(r->labels[k], baseline) == 0)
			r->base_pass[0] = r->base_pass[1] = r->base_pass[2] = k;
	for (int i = 0; baseline && r->base_pass[0] < 0 && i < r->res.nrows; i++) {
		if (strcmp(res_text(r, i, "kernel"), baseline) != 0)
			continue;
		for (int k = 0; k < r->nk; k++)
			if (strcmp(r->labels[k], r->res_shown[i]) == 0)
				r->base_pass[0] = r->base_pass[1] = r->base_pass[2] = k;
	}
	if (baseline && r->base_pass[0] < 0)
		return fa_err_set(err, FA_ERR_NOT_FOUND,
				  "baseline kernel '%s' has no results in run %" PRId64, baseline,
				  run_id);
	if (baseline) {
		unsigned ran = 0; /* the passes the named baseline has a result of */
		for (int i = 0; i < r->res.nrows; i++)
			if (strcmp(r->res_shown[i], r->labels[r->base_pass[0]]) == 0)
				ran |= 1u << r->case_pass[r->res_case[i]];
		for (int p = 0; p < 3; p++)
			if (!(ran >> p & 1u))
				r->base_pass[p] = -1;
	}
	for (int skips = 0; skips < 2; skips++) /* results that ran first */
		for (int i = 0; i < r->res.nrows; i++) {
			int p = r->case_pass[r->res_case[i]];
			if (r->base_pass[p] >= 0 || !strstr(res_text(r, i, "kernel"), "dense") ||
			    (!skips && res_status(r, i) == FA_STATUS_SKIP))
				continue;
			for (int k = 0; k < r->nk; k++)
				if (strcmp(r->labels[k], r->res_shown[i]) == 0)
					r->base_pass[p] = k;
		}
	{
		const char **front = malloc(((size_t)r->nk + 1) * sizeof *front);
		int n = 0, moved[3];
		if (!front)
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
		for (int p = 0; p < 3; p++) {
			int b = r->base_pass[p], q;
			for (q = 0; q < p && r->base_pass[q] != b; q++)
				;
			moved[p] = b < 0 ? -1 : q < p ? moved[q] : n;
			if (b >= 0 && q == p)
				front[n++] = r->labels[b];
		}
		for (int k = 0; k < r->nk; k++)
			if (k != r->base_pass[0] && k != r->base_pass[1] && k != r->base_pass[2])
				front[n++] = r->labels[k];
		memcpy(r->labels, front, (size_t)r->nk * sizeof *front);
		free(front);
		for (int p = 0; p < 3; p++)
			r->base_pass[p] = moved[p];
		for (int p = 0; p < 3 && r->baseline < 0; p++)
			r->baseline = r->base_pass[p];
	}

	r->grid = malloc(((size_t)r->cases.nrows * r->nk + 1) * sizeof *r->grid);
	if (!r->grid)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	for (int i = 0; i < r->cases.nrows * r->nk; i++)
		r->grid[i] = -1;
	for (int i = 0; i < r->res.nrows; i++) {
		int *g;
		for (int k = 0; k < r->nk; k++)
			if (strcmp(r->labels[k], r->res_shown[i]) == 0)
				r->res_k[i] = k;
		g = &r->grid[(size_t)r->res_case[i] * r->nk + r->res_k[i]];
		/* a kernel run twice on one case: the first counts; in a family's
		 * column, the instance that ran it rather than one that skipped */
		if (*g < 0 || (res_status(r, *g) == FA_STATUS_SKIP &&
			       res_status(r, i) != FA_STATUS_SKIP))
			*g = i;
		r->order[i] = i;
		if (res_status(r, i) != FA_STATUS_SKIP)
			r->col_passes[r->res_k[i]] |= 1u << r->case_pass[r->res_case[i]];
	}
	/* CSV/JSON order must not depend on the baseline: sort by label name */
	sort_ctx = r;
	qsort(r->order, (size_t)r->res.nrows, sizeof *r->order, cmp_order);
	sort_ctx = NULL;
	return FA_OK;
}

/* ---- The results table (markdown and HTML) ------------------------------- */

/* Errors span many decades: 2.38e-07. (The other formats are table.h's.) */
static void fmt_err(double x, char *buf, size_t size)
{
	if (x == 0)
		snprintf(buf, size, "0");
	else
		snprintf(buf, size, "%.2e", x);
}

/* A case parameter shown in the table when it varies. */
struct md_param {
	const char *name;
	const char *same_as; /* no column when equal to this one in every case */
};

static const struct md_param md_params[] = {
	{"batch", NULL},        {"heads", NULL},       {"kv_heads", "heads"},
	{"q_len", NULL},        {"kv_len", "q_len"},   {"head_dim", NULL},
	{"head_dim_v", "head_dim"}, {"dtype", NULL},   {"mask", NULL},
	{"prefix_len", NULL},   {"window", NULL},      {"layout", NULL},
	{"input", NULL},        {"seqlens", NULL},     {"kv_seqlens", "seqlens"},
	{"prefix_lens", NULL},  {"scale", NULL},       {"pass", NULL},
};

static int cell_equal(const struct fa_cell *a, const struct fa_cell *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case FA_CELL_INT: return a->i == b->i;
	case FA_CELL_REAL: return a->d == b->d;
	case FA_CELL_TEXT: return strcmp(a->s, b->s) == 0;
	default: return 1;
	}
}

/* A parameter's value as the markdown report shows it ("" for NULL). */
static void param_text(const struct fa_cell *c, char *buf, size_t size)
{
	switch (c->type) {
	case FA_CELL_INT: snprintf(buf, size, "%" PRId64, c->i); break;
	case FA_CELL_REAL: fa_format_float(c->d, buf, size); break;
	case FA_CELL_TEXT: snprintf(buf, size, "%s", c->s); break;
	default: buf[0] = '\0'; break;
	}
}

static int param_varies(const struct fa_rows *cases, const char *name)
{
	for (int i = 1; i < cases->nrows; i++)
		if (!cell_equal(fa_rows_cell(cases, 0, name), fa_rows_cell(cases, i, name)))
			return 1;
	return 0;
}

static int param_same_everywhere(const struct fa_rows *cases, const char *a, const char *b)
{
	for (int i = 0; i < cases->nrows; i++)
		if (!cell_equal(fa_rows_cell(cases, i, a), fa_rows_cell(cases, i, b)))
			return 0;
	return 1;
}

/* How a parameter appears: 1 a column, 0 listed as common (or hidden). */
static int param_is_column(const struct fa_rows *cases, const struct md_param *mp)
{
	if (strcmp(mp->name, "scale") == 0) {
		int set = 0;
		for (int i = 0; i < cases->nrows; i++)
			set |= fa_rows_int(cases, i, "scale_set") != 0;
		if (!set) /* the default 1/sqrt(head_dim) follows head_dim */
			return 0;
	}
	if (mp->same_as && param_same_everywhere(cases, mp->name, mp->same_as))
		return 0;
	return param_varies(cases, mp->name);
}

enum md_col_kind {
	MC_IDX, MC_PARAM,
	/* a kernel column's cells (>= MC_MS) */
	MC_MS, MC_TPUT, MC_TOKS, MC_PEAK, MC_X, MC_ERR, MC_SAME,
	MC_DQ, MC_DK, MC_DV, /* a backward's max_abs of dQ, dK, dV */
	MC_STATUS,
	MC_DEVICE, /* --devices: the GPU that measured it */
	MC_METRIC, /* --metric: the value, its noise and a mark */
};

struct md_col {
	int kind;
	const char *param; /* MC_PARAM */
	int k;             /* kernel column */
	int right;         /* right-aligned (numbers) */
};

/* The results table: what each column shows, and the text of its cells
 * (the header, then one row per case). */
struct md_table {
	struct md_col *cols;   /* cells.ncols */
	struct fa_table cells;
};

static void md_table_free(struct md_table *t)
{
	fa_table_free(&t->cells);
	free(t->cols);
}

/* A table cell: strdup'd, with '|' escaped unless raw (html escapes its
 * own way) and line feeds as spaces. NULL when out of memory. Unlike
 * fa_table_add_md it keeps a carriage return, as the report always has. */
static char *md_cell(const char *s, int raw)
{
	size_t n = 0;
	char *out, *p;
	for (const char *q = s; *q; q++)
		n += *q == '|' && !raw ? 2 : 1;
	out = malloc(n + 1);
	if (!out)
		return NULL;
	p = out;
	for (const char *q = s; *q; q++) {
		if (*q == '|' && !raw)
			*p++ = '\\';
		*p++ = *q == '\n' ? ' ' : *q;
	}
	*p = '\0';
	return out;
}

/* A backward of few queries is no decode: it moves dO, dQ, dK and dV besides
 * the forward's Q, K, V and O that GB/s counts, so it stays in TFLOP/s. */
static int is_decode(const struct report *r, int case_row)
{
	const char *pass = fa_rows_text(&r->cases, case_row, "pass");
	return fa_rows_int(&r->cases, case_row, "q_len") <= REPORT_DECODE_Q_LEN &&
	       (!pass || strcmp(pass, "fwd") == 0);
}

/* The noise of result row's samples: "±0.4%" (their relative standard
 * deviation), then "*" when sampling stopped before the stopping rule
 * reached its noise target (max_time, max_samples, timeout); "" when it has
 * fewer than 2 samples and stopped as asked, or its timing came from
 * another tool (no stop reason). */
static void noise_text(const struct report *r, int row, char *buf, size_t size)
{
	const char *stop = res_text(r, row, "stop_reason");
	double sd, mean;
	size_t n = 0;
	buf[0] = '\0';
	if (fa_rows_int(&r->res, row, "n_samples") >= 2 && res_real(r, row, "stdev_ms", &sd) &&
	    res_real(r, row, "mean_ms", &mean) && mean > 0) {
		double pct = 100.0 * sd / mean;
		n = (size_t)snprintf(buf, size, pct < 9.95 ? "±%.1f%%" : "±%.0f%%", pct);
	}
	if (stop && strcmp(stop, "converged") != 0 && n < size)
		snprintf(buf + n, size - n, "*");
}

/* 1 when result row stopped sampling before its noise target. */
static int noise_short(const struct report *r, int row)
{
	const char *stop = res_text(r, row, "stop_reason");
	return stop && strcmp(stop, "converged") != 0;
}

/* The word that marks a status in a metric cell: "" for pass. */
static const char *status_mark(int st)
{
	return st == FA_STATUS_PASS ? "" : st == FA_STATUS_FAIL ? "FAIL" : fa_status_name(st);
}

/* The value of --metric for result row (1 and *v when it has one). */
static int metric_value(const struct report *r, int metric, int row, double *v)
{
	const char *name = metric == FA_METRIC_MS ? "median_ms"
			   : metric == FA_METRIC_TFLOPS ? "tflops" : "gbps";
	return res_real(r, row, name, v) && *v > 0;
}

static double tokens_per_s(const struct report *r, int row, int case_row, int layers);

/* The tokens/s of result row (case row c) through each model of the case
 * that has layers, in the order of its tags, into buf: "62.5", or "62.5 /
 * 55.6" when models of different layers share the case; "" for none. sep
 * joins the values. */
static void tokens_text(const struct report *r, int row, int c, const char *sep, char *buf,
			size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int g = 0; g < r->n_tags[c] && n < size; g++) {
		double v = tokens_per_s(r, row, c, r->tags[c][g].layers);
		char one[64];
		if (!isfinite(v))
			continue;
		fa_table_fmt_sig3(v, one, sizeof one);
		n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? sep : "", one);
	}
}

/* The text of column col in case row c into buf (size >= 64). */
static void md_value(const struct report *r, const struct md_col *col, int c, int mixed,
		     char *buf, size_t size)
{
	int row = col->kind >= MC_MS ? r->grid[(size_t)c * r->nk + col->k] : -1;
	int status = row >= 0 ? res_status(r, row) : -1;
	double v;
	buf[0] = '\0';
	switch (col->kind) {
	case MC_IDX:
		/* counted from 1 as `run` and `list` do (idx is stored from 0) */
		snprintf(buf, size, "%" PRId64, fa_rows_int(&r->cases, c, "idx") + 1);
		return;
	case MC_PARAM:
		/* like the key: a scale only where the suite gave one */
		if (strcmp(col->param, "scale") != 0 || fa_rows_int(&r->cases, c, "scale_set"))
			param_text(fa_rows_cell(&r->cases, c, col->param), buf, size);
		return;
	default:
		break;
	}
	if (row < 0)
		return;
	if (status == FA_STATUS_SKIP) {
		if (col->kind == MC_MS || col->kind == MC_STATUS || col->kind == MC_METRIC)
			snprintf(buf, size, "skip");
		return;
	}
	switch (col->kind) {
	case MC_MS:
	case MC_METRIC: {
		char noise[32];
		const char *mark = col->kind == MC_METRIC ? status_mark(status) : "";
		size_t n;
		if (col->kind == MC_MS ? res_real(r, row, "median_ms", &v)
				       : metric_value(r, r->metric, row, &v))
			fa_table_fmt_sig3(v, buf, size);
		noise_text(r, row, noise, sizeof noise);
		n = strlen(buf);
		if (noise[0] && n)
			n += (size_t)snprintf(buf + n, size - n, " %s", noise);
		if (mark[0])
			snprintf(buf + n, size - n, "%s%s", n ? " " : "", mark);
		break;
	}
	case MC_SAME:
		if (res_real(r, row, "same_max_abs", &v) &&
		    strcmp(res_text(r, row, "rule") ? res_text(r, row, "rule") : "", "fa") == 0)
			fmt_err(v, buf, size);
		break;
	case MC_TPUT: {
		int decode = is_decode(r, c);
		if (res_real(r, row, decode ? "gbps" : "tflops", &v) && v > 0) {
			size_t n;
			fa_table_fmt_sig3(v, buf, size);
			n = strlen(buf);
			if (mixed)
				snprintf(buf + n, size - n, " %s", decode ? "GB/s" : "TFLOP/s");
		}
		break;
	}
	case MC_TOKS:
		tokens_text(r, row, c, " / ", buf, size);
		break;
	case MC_PEAK: {
		/* decode-like rows against the copy bandwidth, the rest against the
		 * matrix rate of their precision */
		int decode = is_decode(r, c);
		const char *dt = fa_rows_text(&r->cases, c, "dtype");
		double ceil = decode ? r->cal.copy_gbps
			      : dt && strcmp(dt, "fp32") == 0 && r->cal.matmul_fp32_tflops > 0
				      ? r->cal.matmul_fp32_tflops
				      : r->cal.matmul_tflops;
		if (ceil > 0 && res_real(r, row, decode ? "gbps" : "tflops", &v) && v > 0)
			snprintf(buf, size, "%.0f%%", 100.0 * v / ceil);
		break;
	}
	case MC_X:
		v = speedup_of(r, row);
		if (v > 0) {
			fa_table_fmt_sig3(v, buf, size);
			strncat(buf, "x", size - strlen(buf) - 1);
		}
		break;
	case MC_ERR:
		if (res_real(r, row, "max_abs", &v))
			fmt_err(v, buf, size);
		break;
	case MC_DQ:
	case MC_DK:
	case MC_DV:
		if (grad_real(r, row, col->kind == MC_DQ ? "dq" : col->kind == MC_DK ? "dk" : "dv",
			      "max_abs", &v))
			fmt_err(v, buf, size);
		break;
	case MC_DEVICE: {
		const struct fa_cell *d = row >= 0 ? fa_rows_cell(&r->res, row, "device") : NULL;
		if (d && d->type == FA_CELL_INT)
			snprintf(buf, size, "%" PRId64, d->i);
		break;
	}
	case MC_STATUS:
		if (status == FA_STATUS_FAIL)
			snprintf(buf, size, "FAIL");
		else if (status > FA_STATUS_SKIP)
			snprintf(buf, size, "%s", fa_status_name(status));
		break;
	}
}

/* Appends the cell text s to table t as md_cell makes it. Returns FA_OK or
 * FA_ERR_NOMEM. */
static enum fa_rc md_add_cell(struct fa_table *t, const char *s, int raw)
{
	char *cell = md_cell(s, raw);
	enum fa_rc rc = cell ? fa_table_add(t, cell, NULL) : FA_ERR_NOMEM;
	free(cell);
	return rc;
}

/* Appends the cell text s to t (as md_cell makes it). */
static enum fa_rc md_add(struct md_table *t, const char *s, int raw, struct fa_err *err)
{
	char *cell = md_cell(s, raw);
	enum fa_rc rc = cell ? fa_table_add(&t->cells, cell, NULL) : FA_ERR_NOMEM;
	free(cell);
	if (rc != FA_OK)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	return FA_OK;
}

/* Builds the results table; *mixed is 1 when it holds both TFLOP/s and GB/s
 * rows. raw: cells as they are (for html), else '|' escaped (markdown). */
static enum fa_rc md_build(const struct report *r, struct md_table *t, int *mixed, int raw,
			   struct fa_err *err)
{
	int n_decode = 0, ncols = 0, max_cols = 1 + N_OF(md_params) + 12 * r->nk;
	char buf[4096];
	enum fa_rc rc;

	memset(t, 0, sizeof *t);
	for (int c = 0; c < r->cases.nrows; c++)
		n_decode += is_decode(r, c);
	*mixed = n_decode > 0 && n_decode < r->cases.nrows;

	t->cols = calloc((size_t)max_cols, sizeof *t->cols);
	if (!t->cols)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	t->cols[ncols++] = (struct md_col){MC_IDX, NULL, 0, 1};
	for (int i = 0; i < N_OF(md_params); i++)
		if (param_is_column(&r->cases, &md_params[i])) {
			int numeric = 1;
			for (int c = 0; c < r->cases.nrows; c++)
				numeric &= fa_rows_cell(&r->cases, c, md_params[i].name)->type != FA_CELL_TEXT;
			t->cols[ncols++] = (struct md_col){MC_PARAM, md_params[i].name, 0, numeric};
		}
	for (int k = 0; k < r->nk; k++) {
		int not_pass = 0, fa_rule = 0, grads = 0;
		for (int c = 0; c < r->cases.nrows; c++) {
			int row = r->grid[(size_t)c * r->nk + k];
			const char *rule = row >= 0 ? res_text(r, row, "rule") : NULL;
			double v;
			grads |= row >= 0 && grad_real(r, row, "dq", "max_abs", &v);
			not_pass |= row >= 0 && res_status(r, row) != FA_STATUS_PASS;
			fa_rule |= rule && strcmp(rule, "fa") == 0;
		}
		if (r->metric != FA_METRIC_ALL) {
			t->cols[ncols++] = (struct md_col){MC_METRIC, NULL, k, 1};
			continue;
		}
		t->cols[ncols++] = (struct md_col){MC_MS, NULL, k, 1};
		t->cols[ncols++] = (struct md_col){MC_TPUT, NULL, k, 1};
		if (r->any_layers)
			t->cols[ncols++] = (struct md_col){MC_TOKS, NULL, k, 1};
		if (r->have_cal)
			t->cols[ncols++] = (struct md_col){MC_PEAK, NULL, k, 1};
		if (has_x(r, k))
			t->cols[ncols++] = (struct md_col){MC_X, NULL, k, 1};
		t->cols[ncols++] = (struct md_col){MC_ERR, NULL, k, 1};
		if (fa_rule)
			t->cols[ncols++] = (struct md_col){MC_SAME, NULL, k, 1};
		if (grads) { /* a backward kernel: max_abs is its forward's O */
			t->cols[ncols++] = (struct md_col){MC_DQ, NULL, k, 1};
			t->cols[ncols++] = (struct md_col){MC_DK, NULL, k, 1};
			t->cols[ncols++] = (struct md_col){MC_DV, NULL, k, 1};
		}
		if (not_pass)
			t->cols[ncols++] = (struct md_col){MC_STATUS, NULL, k, 0};
		if (r->any_device)
			t->cols[ncols++] = (struct md_col){MC_DEVICE, NULL, k, 1};
	}

	if (fa_table_init(&t->cells, ncols, NULL) != FA_OK)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	for (int j = 0; j < ncols; j++) {
		const struct md_col *col = &t->cols[j];
		const char *label = r->labels[col->k];
		t->cells.right[j] = col->right;
		switch (col->kind) {
		case MC_IDX: snprintf(buf, sizeof buf, "#"); break;
		case MC_PARAM: snprintf(buf, sizeof buf, "%s", col->param); break;
		case MC_MS: snprintf(buf, sizeof buf, "%s ms", label); break;
		case MC_TPUT:
			snprintf(buf, sizeof buf, "%s %s", label,
				 *mixed ? "throughput" : n_decode ? "GB/s" : "TFLOP/s");
			break;
		case MC_TOKS: snprintf(buf, sizeof buf, "%s tokens/s", label); break;
		case MC_PEAK: snprintf(buf, sizeof buf, "%s %% peak", label); break;
		case MC_X: snprintf(buf, sizeof buf, "%s x", label); break;
		case MC_ERR: snprintf(buf, sizeof buf, "%s max_abs", label); break;
		case MC_SAME: snprintf(buf, sizeof buf, "%s same_max_abs", label); break;
		case MC_DQ: snprintf(buf, sizeof buf, "%s dQ max_abs", label); break;
		case MC_DK: snprintf(buf, sizeof buf, "%s dK max_abs", label); break;
		case MC_DV: snprintf(buf, sizeof buf, "%s dV max_abs", label); break;
		case MC_DEVICE: snprintf(buf, sizeof buf, "%s device", label); break;
		case MC_METRIC:
			snprintf(buf, sizeof buf, "%s %s", label,
				 r->metric == FA_METRIC_MS ? "ms"
				 : r->metric == FA_METRIC_TFLOPS ? "TFLOP/s" : "GB/s");
			break;
		default: snprintf(buf, sizeof buf, "%s status", label); break;
		}
		if ((rc = md_add(t, buf, raw, err)) != FA_OK)
			return rc;
	}
	for (int c = 0; c < r->cases.nrows; c++)
		for (int j = 0; j < ncols; j++) {
			md_value(r, &t->cols[j], c, *mixed, buf, sizeof buf);
			if ((rc = md_add(t, buf, raw, err)) != FA_OK)
				return rc;
		}
	return FA_OK;
}

/* ---- The long layout: a row per case and kernel --------------------------- */

static const char *status_word(int st);

/* The long table (--layout long): the case index and the parameters that
 * vary, then per (case, kernel column) with a result: the column's kernel,
 * the instance that ran it when it is a family's, the status, the metric
 * (ms and throughput, or the one --metric names), the noise, the stop
 * reason and max_abs. Cells are text, as in the markdown table. */
static enum fa_rc long_build(const struct report *r, struct fa_table *t, int raw,
			     struct fa_err *err)
{
	static const char *const tail_all[] = {"kernel", "instance", "status", "ms", "throughput",
					       "noise", "stop", "max_abs"};
	static const char *const tail_metric[] = {"kernel", "instance", "status", "metric",
						  "noise", "stop", "max_abs"};
	const char *const *tail = r->metric == FA_METRIC_ALL ? tail_all : tail_metric;
	int ntail = r->metric == FA_METRIC_ALL ? N_OF(tail_all) : N_OF(tail_metric);
	int nparam = 0, pcol[N_OF(md_params)];
	char buf[4096];
	enum fa_rc rc = FA_OK;

	for (int i = 0; i < N_OF(md_params); i++)
		if (param_is_column(&r->cases, &md_params[i]))
			pcol[nparam++] = i;
	if (fa_table_init(t, 1 + nparam + ntail, NULL) != FA_OK)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	t->right[0] = 1;
	rc = fa_table_add(t, "#", NULL);
	for (int j = 0; rc == FA_OK && j < nparam; j++) {
		int numeric = 1;
		for (int c = 0; c < r->cases.nrows; c++)
			numeric &= fa_rows_cell(&r->cases, c, md_params[pcol[j]].name)->type != FA_CELL_TEXT;
		t->right[1 + j] = numeric;
		rc = fa_table_add(t, md_params[pcol[j]].name, NULL);
	}
	for (int j = 0; rc == FA_OK && j < ntail; j++) {
		const char *h = tail[j];
		if (strcmp(h, "metric") == 0)
			h = r->metric == FA_METRIC_MS ? "ms" : r->metric == FA_METRIC_TFLOPS ? "TFLOP/s"
											: "GB/s";
		t->right[1 + nparam + j] = strcmp(h, "kernel") && strcmp(h, "instance") &&
					   strcmp(h, "status") && strcmp(h, "stop");
		rc = fa_table_add(t, h, NULL);
	}
	for (int c = 0; rc == FA_OK && c < r->cases.nrows; c++)
		for (int k = 0; rc == FA_OK && k < r->nk; k++) {
			int row = r->grid[(size_t)c * r->nk + k], st;
			double v;
			if (row < 0)
				continue;
			st = res_status(r, row);
			snprintf(buf, sizeof buf, "%" PRId64, fa_rows_int(&r->cases, c, "idx") + 1);
			rc = fa_table_add(t, buf, NULL);
			for (int j = 0; rc == FA_OK && j < nparam; j++) {
				const char *name = md_params[pcol[j]].name;
				buf[0] = '\0';
				if (strcmp(name, "scale") != 0 || fa_rows_int(&r->cases, c, "scale_set"))
					param_text(fa_rows_cell(&r->cases, c, name), buf, sizeof buf);
				rc = md_add_cell(t, buf, raw);
			}
			for (int j = 0; rc == FA_OK && j < ntail; j++) {
				const char *h = tail[j];
				buf[0] = '\0';
				if (strcmp(h, "kernel") == 0) {
					snprintf(buf, sizeof buf, "%s", r->labels[k]);
				} else if (strcmp(h, "instance") == 0) {
					if (family_of(r, row))
						snprintf(buf, sizeof buf, "%s", r->res_label[row]);
				} else if (strcmp(h, "status") == 0) {
					snprintf(buf, sizeof buf, "%s", status_word(st));
				} else if (st == FA_STATUS_SKIP) {
					/* nothing timed or checked */
				} else if (strcmp(h, "ms") == 0) {
					if (res_real(r, row, "median_ms", &v))
						fa_table_fmt_sig3(v, buf, sizeof buf);
				} else if (strcmp(h, "throughput") == 0) {
					int decode = is_decode(r, c);
					if (res_real(r, row, decode ? "gbps" : "tflops", &v) && v > 0) {
						fa_table_fmt_sig3(v, buf, sizeof buf);
						strncat(buf, decode ? " GB/s" : " TFLOP/s",
							sizeof buf - strlen(buf) - 1);
					}
				} else if (strcmp(h, "metric") == 0) {
					if (metric_value(r, r->metric, row, &v))
						fa_table_fmt_sig3(v, buf, sizeof buf);
				} else if (strcmp(h, "noise") == 0) {
					noise_text(r, row, buf, sizeof buf);
				} else if (strcmp(h, "stop") == 0) {
					const char *stop = res_text(r, row, "stop_reason");
					snprintf(buf, sizeof buf, "%s", stop ? stop : "");
				} else if (res_real(r, row, "max_abs", &v)) {
					fmt_err(v, buf, sizeof buf);
				}
				rc = md_add_cell(t, buf, raw);
			}
		}
	if (rc != FA_OK)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	return FA_OK;
}

/* ---- Around the table: markdown and HTML --------------------------------- */

/* How the report's parts other than the results table are marked up. The
 * markdown report and the HTML page say the same things in the same order
 * (the run header, the failures, the parameters common to every case, the
 * legend, the skips); only these differ. */
struct markup {
	void (*text)(FILE *out, const char *s); /* text, escaped */
	void (*code)(FILE *out, const char *s); /* a code span */
	void (*word)(FILE *out, const char *s); /* a value fabench wrote (hash,
	                                           status, seed, version):
	                                           markdown prints it as it is */
	void (*tag)(FILE *out, const char *cls); /* opens a span of class cls */
	const char *tag_end;
	/* the results table (md_build's with raw cells when raw) */
	int raw;
	enum fa_rc (*table)(FILE *out, const struct report *r, const struct md_table *t,
			    struct fa_err *err);
	const char *title, *title_end;       /* around "fabench report: run N" */
	const char *dt, *dt_end, *dd_end;    /* a line of the run header:
	                                        dt NAME dt_end VALUE dd_end */
	const char *by;                      /* the name of the "fabench 0.1.0 on
	                                        host" line (NULL: none) */
	const char *finished;                /* between the start and end times */
	const char *commit, *commit_end;     /* around the commit's digits */
	const char *header_end;              /* after the run header */
	const char *h2, *h2_end, *h3, *h3_end; /* headings */
	const char *p, *p_end;               /* a paragraph */
	const char *before_table;            /* after the paragraph before the table */
	const char *note, *note_end;         /* the legend */
	const char *failures, *list, *li, *li_end, *list_end; /* lists: the
	                                        failures', the others' */
	const char *lt, *gt;                 /* "<", ">" */
};

/* A line of the run header up to its value (name NULL: no name). */
static void field(FILE *out, const struct markup *m, const char *name)
{
	fputs(m->dt, out);
	if (name) {
		fputs(name, out);
		fputs(m->dt_end, out);
	}
}


/* How the results were timed (results.timing): each way and its count,
 * "cold-clean (12), graph-cold (12)"; nothing when none says. */
static void write_timings(FILE *out, const struct report *r, const struct markup *m)
{
	const char *names[8];
	int counts[8] = {0}, n = 0;
	for (int i = 0; i < r->res.nrows; i++) {
		const char *t = fa_rows_text(&r->res, i, "timing");
		int j = 0;
		if (!t || !*t)
			continue;
		while (j < n && strcmp(names[j], t) != 0)
			j++;
		if (j == n) {
			if (n == 8)
				continue;
			names[n++] = t;
		}
		counts[j]++;
	}
	if (n == 0)
		return;
	field(out, m, "timing");
	for (int j = 0; j < n; j++) {
		if (j)
			fputs(", ", out);
		m->text(out, names[j]);
		fprintf(out, " (%d)", counts[j]);
	}
	fputs(m->dd_end, out);
}
static void write_header(FILE *out, const struct report *r, const struct markup *m)
{
	const struct fa_rows *run = &r->run;
	const char *s, *commit = fa_rows_text(run, 0, "git_commit");
	const struct fa_cell *dirty = fa_rows_cell(run, 0, "git_dirty");
	int counts[FA_STATUS_UNCHECKED + 1] = {0}, first = 1;

	fprintf(out, "%sfabench report: run %" PRId64 "%s", m->title, fa_rows_int(run, 0, "id"),
		m->title_end);
	field(out, m, "suite");
	m->text(out, (s = fa_rows_text(run, 0, "suite_name")) ? s : "(unnamed)");
	if ((s = fa_rows_text(run, 0, "suite_path"))) {
		fputs(" (", out);
		m->code(out, s);
		if ((s = fa_rows_text(run, 0, "suite_hash"))) {
			fputs(", hash ", out);
			m->word(out, s);
		}
		fputs(")", out);
	}
	fputs(m->dd_end, out);
	field(out, m, "backend");
	m->text(out, (s = fa_rows_text(run, 0, "backend")) ? s : "unknown");
	if ((s = fa_rows_text(run, 0, "device_name"))) {
		fputs(" on ", out);
		m->text(out, s);
	}
	if ((s = fa_rows_text(run, 0, "device_arch"))) {
		fputs(", ", out);
		m->text(out, s);
	}
	if ((s = fa_rows_text(run, 0, "driver"))) {
		fputs(", driver ", out);
		m->text(out, s);
	}
	if ((s = fa_rows_text(run, 0, "runtime"))) {
		fputs(", runtime ", out);
		m->text(out, s);
	}
	fputs(m->dd_end, out);
	field(out, m, "started");
	m->text(out, fa_rows_text(run, 0, "started_at"));
	if ((s = fa_rows_text(run, 0, "finished_at"))) {
		fputs(m->finished, out);
		m->text(out, s);
	}
	fputs(m->dd_end, out);
	field(out, m, "git");
	if (commit) {
		fprintf(out, "%s%.*s%s", m->commit, FA_TABLE_SHORT_COMMIT, commit, m->commit_end);
		if (dirty->type == FA_CELL_INT)
			fputs(dirty->i ? " (dirty)" : " (clean)", out);
	} else {
		fputs("unknown", out);
	}
	fputs(m->dd_end, out);
	if ((s = fa_rows_text(run, 0, "label"))) {
		field(out, m, "label");
		m->text(out, s);
		fputs(m->dd_end, out);
	}
	field(out, m, "status");
	m->word(out, fa_rows_text(run, 0, "status"));
	if (strcmp(fa_rows_text(run, 0, "status"), "complete") != 0)
		fputs(" (the run did not finish; the cases below are those it stored)", out);
	if ((s = fa_rows_text(run, 0, "running"))) {
		/* set before each case and kernel, cleared when the run ends */
		fputs("; it stopped in ", out);
		m->text(out, s);
		fputs(": a crash, a kill or a kernel that did not return ended the process "
		      "there (`fabench run --isolate` stores a kernel that crashes as an error, "
		      "one that hangs as a timeout, and goes on)",
		      out);
	}
	fputs(m->dd_end, out);
	field(out, m, "seed");
	m->word(out, fa_rows_text(run, 0, "seed"));
	fputs(m->dd_end, out);
	if ((s = fa_rows_text(run, 0, "version")) || fa_rows_text(run, 0, "host")) {
		field(out, m, m->by);
		m->text(out, (s = fa_rows_text(run, 0, "source")) ? s : "fabench");
		if ((s = fa_rows_text(run, 0, "version"))) {
			fputc(' ', out);
			m->word(out, s);
		}
		if ((s = fa_rows_text(run, 0, "host"))) {
			fputs(" on ", out);
			m->text(out, s);
		}
		fputs(m->dd_end, out);
	}
	if ((s = fa_rows_text(run, 0, "command_line"))) {
		field(out, m, "command");
		m->code(out, s);
		fputs(m->dd_end, out);
	}
	for (int i = 0; i < r->res.nrows; i++) {
		int st = res_status(r, i);
		if (st >= 0)
			counts[st]++;
	}
	field(out, m, "cases");
	fprintf(out, "%d; results: %d", r->cases.nrows, r->res.nrows);
	for (int st = 0; st <= FA_STATUS_UNCHECKED; st++)
		if (counts[st]) {
			fputs(first ? " (" : ", ", out);
			m->tag(out, fa_status_name(st));
			fprintf(out, "%d %s%s", counts[st], fa_status_name(st), m->tag_end);
			first = 0;
		}
	fputs(first ? "" : ")", out);
	fputs(m->dd_end, out);
	write_timings(out, r, m);
	fputs(m->header_end, out);
}

static const char *status_word(int st)
{
	return st == FA_STATUS_FAIL ? "FAIL" : fa_status_name(st);
}

static void write_failures(FILE *out, const struct report *r, const struct markup *m)
{
	char badge[64];
	int any = 0;
	for (int c = 0; c < r->cases.nrows; c++)
		for (int k = 0; k < r->nk; k++) {
			int row = r->grid[(size_t)c * r->nk + k], st;
			const char *reason;
			if (row < 0)
				continue;
			st = res_status(r, row);
			if (st != FA_STATUS_FAIL && st != FA_STATUS_ERROR && st != FA_STATUS_TIMEOUT)
				continue;
			if (!any)
				fprintf(out, "%sFailures%s%s", m->h2, m->h2_end, m->failures);
			any = 1;
			snprintf(badge, sizeof badge, "badge %s", fa_status_name(st));
			fputs(m->li, out);
			m->tag(out, badge);
			fprintf(out, "%s%s ", status_word(st), m->tag_end);
			m->text(out, r->res_label[row]); /* the instance, in a family's column */
			fprintf(out, " on case %" PRId64 " ", fa_rows_int(&r->cases, c, "idx") + 1);
			m->code(out, fa_rows_text(&r->cases, c, "key"));
			if ((reason = res_text(r, row, "reason"))) {
				fputs(": ", out);
				m->text(out, reason);
			}
			fputs(m->li_end, out);
		}
	if (any)
		fputs(m->list_end, out);
}

/* The parameters common to every case, and the pairs that are equal in
 * every case (so have no column of their own):
 *   Common to every case: heads=8, dtype=fp32; kv_len = q_len. */
static void write_common(FILE *out, const struct report *r, const struct markup *m)
{
	char buf[4096];
	int n = 0;
	for (int i = 0; i < N_OF(md_params); i++) {
		const struct md_param *mp = &md_params[i];
		const struct fa_cell *c = fa_rows_cell(&r->cases, 0, mp->name);
		if (param_varies(&r->cases, mp->name) || c->type == FA_CELL_NULL)
			continue;
		if (strcmp(mp->name, "scale") == 0 && !fa_rows_int(&r->cases, 0, "scale_set"))
			continue;
		if (strcmp(mp->name, "pass") == 0 && c->type == FA_CELL_TEXT && strcmp(c->s, "fwd") == 0)
			continue; /* the default, as before passes existed */
		param_text(c, buf, sizeof buf);
		if (!n++)
			fprintf(out, "%sCommon to every case: ", m->p);
		fprintf(out, "%s%s=", n > 1 ? ", " : "", mp->name);
		m->text(out, buf);
	}
	for (int i = 0, first = 1; i < N_OF(md_params); i++) {
		const struct md_param *mp = &md_params[i];
		if (!mp->same_as || !param_varies(&r->cases, mp->name) ||
		    !param_same_everywhere(&r->cases, mp->name, mp->same_as))
			continue;
		if (!n)
			fprintf(out, "%sCommon to every case: ", m->p);
		fprintf(out, "%s%s = %s", first ? (n ? "; " : "") : ", ", mp->name, mp->same_as);
		first = 0;
		n++;
	}
	if (n)
		fprintf(out, ".%s%s", m->p_end, m->before_table);
}

/* Counts per distinct (kernel, reason) of the skipped results, kernels in
 * column order, reasons in order of their first case. */
static enum fa_rc write_skips(FILE *out, const struct report *r, const struct markup *m,
			      struct fa_err *err)
{
	const char **reason = malloc(((size_t)r->cases.nrows + 1) * sizeof *reason);
	int *count = malloc(((size_t)r->cases.nrows + 1) * sizeof *count);
	int total = 0;
	if (!reason || !count) {
		free(reason);
		free(count);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	}
	/* the skips shown: not those of an instance whose family's column
	 * shows another instance's result */
	for (int c = 0; c < r->cases.nrows; c++)
		for (int k = 0; k < r->nk; k++) {
			int row = r->grid[(size_t)c * r->nk + k];
			total += row >= 0 && res_status(r, row) == FA_STATUS_SKIP;
		}
	if (total)
		fprintf(out, "%sSkipped (%d)%s%s", m->h3, total, m->h3_end, m->list);
	for (int k = 0; total && k < r->nk; k++) {
		int nd = 0; /* distinct reasons of kernel k (a few) */
		for (int c = 0; c < r->cases.nrows; c++) {
			int row = r->grid[(size_t)c * r->nk + k], d;
			const char *why;
			if (row < 0 || res_status(r, row) != FA_STATUS_SKIP)
				continue;
			why = res_text(r, row, "reason");
			why = why ? why : "no reason given";
			for (d = 0; d < nd && strcmp(reason[d], why) != 0; d++)
				;
			if (d == nd) {
				reason[nd] = why;
				count[nd++] = 0;
			}
			count[d]++;
		}
		for (int d = 0; d < nd; d++) {
			fputs(m->li, out);
			m->text(out, r->labels[k]);
			fprintf(out, ", %d case%s: ", count[d], count[d] == 1 ? "" : "s");
			m->text(out, reason[d]);
			fputs(m->li_end, out);
		}
	}
	if (total)
		fputs(m->list_end, out);
	free(reason);
	free(count);
	return FA_OK;
}

/* The kernel families of the table: which cases an instance ran. */
static void write_families(FILE *out, const struct report *r, const struct markup *m)
{
	for (int k = 0; k < r->nk; k++) {
		int any = 0;
		for (int c = 0; c < r->cases.nrows; c++) {
			int row = r->grid[(size_t)c * r->nk + k];
			if (row < 0 || !family_of(r, row) || res_status(r, row) == FA_STATUS_SKIP)
				continue;
			if (!any) {
				fputc(' ', out);
				m->text(out, r->labels[k]);
				fputs(" is a family of instances; cases run by an instance: ", out);
			}
			fprintf(out, "%s%" PRId64 " ", any ? ", " : "", fa_rows_int(&r->cases, c, "idx") + 1);
			m->code(out, r->res_label[row]);
			any = 1;
		}
		if (any)
			fputs(".", out);
	}
}

static void write_legend(FILE *out, const struct report *r, const struct markup *m, int mixed)
{
	int n_decode = 0, any_short = 0, any_same = 0, any_unchecked = 0;
	for (int c = 0; c < r->cases.nrows; c++)
		n_decode += is_decode(r, c);
	for (int c = 0; c < r->cases.nrows; c++)
		for (int k = 0; k < r->nk; k++) {
			int row = r->grid[(size_t)c * r->nk + k];
			const char *rule = row >= 0 ? res_text(r, row, "rule") : NULL;
			double v;
			if (row < 0)
				continue;
			any_short |= res_status(r, row) != FA_STATUS_SKIP && noise_short(r, row);
			any_same |= rule && strcmp(rule, "fa") == 0 && res_real(r, row, "same_max_abs", &v);
			any_unchecked |= res_status(r, row) == FA_STATUS_UNCHECKED;
		}
	fputs(m->note, out);
	if (r->metric == FA_METRIC_ALL)
		fputs("ms: median time of the samples, ± their relative standard deviation. ", out);
	else
		fprintf(out, "%s: %s per kernel, ± the relative standard deviation of the samples; "
			     "a word marks a result that did not pass (FAIL, error, timeout, skip, "
			     "unchecked).",
			r->metric == FA_METRIC_MS ? "ms" : r->metric == FA_METRIC_TFLOPS ? "TFLOP/s" : "GB/s",
			r->metric == FA_METRIC_MS ? "median time" : "throughput at the median time");
	if (any_short && r->metric != FA_METRIC_ALL)
		fputs(" *: sampling stopped before the noise target was reached (max_time, "
		      "max_samples or timeout).", out);
	else if (any_short)
		fputs("*: sampling stopped before the noise target was reached (max_time, "
		      "max_samples or timeout). ", out);
	if (r->metric != FA_METRIC_ALL) {
		if (any_unchecked)
			fputs(" unchecked: imported from another tool without error statistics: timed, "
			      "never compared against the reference.", out);
		write_families(out, r, m);
		fputs(m->note_end, out);
		return;
	}
	if (mixed)
		fprintf(out, "throughput: TFLOP/s for cases with q_len %s %d, GB/s (Q, K and V "
			     "read and O written once) for decode-like cases with q_len %s= %d. ",
			m->gt, REPORT_DECODE_Q_LEN, m->lt, REPORT_DECODE_Q_LEN);
	else if (n_decode)
		fputs("GB/s: Q, K and V read and O written once, per second. ", out);
	else
		fputs("TFLOP/s: attention FLOPs (masked pairs excluded) per second. ", out);
	if (r->any_layers && r->layout != FA_LAYOUT_LONG && r->metric == FA_METRIC_ALL)
		fputs("tokens/s: the case's query tokens over the median time times the layers of its "
		      "model (attention alone, every layer this shape); models of different layers "
		      "that share the case get one value each, in the order of the Models section. ",
		      out);
	if (r->have_cal && r->layout != FA_LAYOUT_LONG) {
		/* named by what calibrate measured: one fp32 rate for both where
		 * the device has no 16-bit matrix unit (the CPU), as it says */
		const int fp32_only = r->cal.matmul_tflops > 0 &&
				      r->cal.matmul_tflops == r->cal.matmul_fp32_tflops;
		if (fp32_only)
			fprintf(out, "%% peak: throughput over the device's latest calibration "
				     "(fabench calibrate: %.4g TFLOP/s fp32 matrix product, the rate of "
				     "every dtype: no 16-bit matrix unit used; %.4g GB/s copy). ",
				r->cal.matmul_tflops, r->cal.copy_gbps);
		else
			fprintf(out, "%% peak: throughput over the device's latest calibration "
				     "(fabench calibrate: %.4g TFLOP/s 16-bit matrix product%s, %.4g "
				     "GB/s copy). ",
				r->cal.matmul_tflops, r->cal.matmul_fp32_tflops > 0
							      ? ", fp32 cases against the fp32 rate"
							      : "",
				r->cal.copy_gbps);
	}
	if (r->baseline >= 0 && r->layout != FA_LAYOUT_LONG) {
		static const char *const pass_words[] = {"forward", "backward", "forward-and-backward"};
		int per_pass = 0;
		for (int p = 0; p < 3; p++)
			per_pass |= r->base_pass[p] >= 0 && r->base_pass[p] != r->baseline;
		fputs("x: speedup over ", out);
		if (!per_pass) {
			m->text(out, r->labels[r->baseline]);
		} else {
			for (int p = 0, n = 0; p < 3; p++) {
				if (r->base_pass[p] < 0)
					continue;
				fputs(n++ ? ", " : "", out);
				m->text(out, r->labels[r->base_pass[p]]);
				fprintf(out, " on %s cases", pass_words[p]);
			}
		}
		fputs(" (its median / this kernel's; none where either failed). ", out);
	}
	fputs("max_abs: largest absolute error against the fp64 reference.", out);
	if (any_same)
		fputs(" same_max_abs: under rule fa, the error of the same attention computed in the "
		      "input precision; a result passes when its max_abs is within the rule's "
		      "factor of it.", out);
	if (any_unchecked)
		fputs(" unchecked: imported from another tool without error statistics: timed, never "
		      "compared against the reference.", out);
	write_families(out, r, m);
	fputs(m->note_end, out);
}

/* The report without what html adds after it (plots, compare): the run
 * header, the failures and the results of the run's suite. */
/* Tokens per second of a model through every attention layer: the case's
 * query tokens over (one attention call's median time x layers); NaN when
 * the result was not timed or the layers are unknown. */
static double tokens_per_s(const struct report *r, int row, int case_row, int layers)
{
	double ms, tokens;
	if (layers <= 0 || !res_real(r, row, "median_ms", &ms) || !(ms > 0) ||
	    !fa_rows_real(&r->cases, case_row, "total_q", &tokens))
		return NAN;
	return tokens / (ms * 1e-3 * layers);
}

/* The models of the run's cases (markdown): per case and model, the
 * tokens/s of every kernel through the model's attention layers. */
static enum fa_rc write_models(FILE *out, const struct report *r, struct fa_err *err)
{
	struct fa_table t;
	char buf[128];
	enum fa_rc rc;
	if (fa_table_init(&t, 3 + r->nk, NULL) != FA_OK)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	rc = fa_table_add(&t, "#", NULL);
	if (rc == FA_OK)
		rc = fa_table_add(&t, "model", NULL);
	if (rc == FA_OK)
		rc = fa_table_add(&t, "layers", NULL);
	for (int k = 0; rc == FA_OK && k < r->nk; k++) {
		snprintf(buf, sizeof buf, "%s tokens/s", r->labels[k]);
		rc = fa_table_add_md(&t, buf, NULL);
	}
	t.right[0] = t.right[2] = 1;
	for (int k = 0; k < r->nk; k++)
		t.right[3 + k] = 1;
	for (int c = 0; rc == FA_OK && c < r->cases.nrows; c++)
		for (int g = 0; rc == FA_OK && g < r->n_tags[c]; g++) {
			const struct fa_case_tag *tg = &r->tags[c][g];
			snprintf(buf, sizeof buf, "%" PRId64, fa_rows_int(&r->cases, c, "idx") + 1);
			rc = fa_table_add(&t, buf, NULL);
			if (rc == FA_OK)
				rc = fa_table_add_md(&t, tg->name, NULL);
			snprintf(buf, sizeof buf, tg->layers > 0 ? "%d" : "-", tg->layers);
			if (rc == FA_OK)
				rc = fa_table_add(&t, buf, NULL);
			for (int k = 0; rc == FA_OK && k < r->nk; k++) {
				int row = r->grid[(size_t)c * r->nk + k];
				double v = row >= 0 ? tokens_per_s(r, row, c, tg->layers) : NAN;
				if (isfinite(v))
					fa_table_fmt_sig3(v, buf, sizeof buf);
				else
					snprintf(buf, sizeof buf, "-");
				rc = fa_table_add(&t, buf, NULL);
			}
		}
	if (rc == FA_OK) {
		fputs("\n## Models\n\n", out);
		rc = fa_table_print_md(out, &t, NULL);
	}
	if (rc == FA_OK)
		fputs("\ntokens/s: the case's query tokens (batch x q_len) over the median time of one "
		      "attention call times the model's layers: what attention alone allows a model "
		      "that runs this shape in every layer. Cases that several models share list each "
		      "model.\n",
		      out);
	fa_table_free(&t);
	if (rc != FA_OK)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	return FA_OK;
}

static enum fa_rc write_body(FILE *out, const struct report *r, const struct markup *m,
			     struct fa_err *err)
{
	const char *suite = fa_rows_text(&r->run, 0, "suite_name");
	struct md_table t;
	int mixed;
	enum fa_rc rc;

	write_header(out, r, m);
	write_failures(out, r, m);
	fprintf(out, "%sResults", m->h2);
	if (suite) {
		fputs(": ", out);
		m->text(out, suite);
	}
	fputs(m->h2_end, out);
	if (r->cases.nrows == 0) {
		fprintf(out, "%sNo cases were stored.%s", m->p, m->p_end);
		return FA_OK;
	}
	write_common(out, r, m);
	if (r->nk == 0) {
		fprintf(out, "%sNo kernel ran.%s", m->p, m->p_end);
		return FA_OK;
	}
	if (r->layout == FA_LAYOUT_LONG) {
		/* markdown only (report_write refuses html) */
		struct fa_table lt;
		rc = long_build(r, &lt, 0, err);
		if (rc == FA_OK && fa_table_print_md(out, &lt, NULL) != FA_OK)
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
		fa_table_free(&lt);
		mixed = 0;
		for (int c = 1; c < r->cases.nrows; c++)
			mixed |= is_decode(r, c) != is_decode(r, 0);
		if (rc == FA_OK) {
			write_legend(out, r, m, mixed);
			rc = write_skips(out, r, m, err);
		}
		return rc;
	}
	rc = md_build(r, &t, &mixed, m->raw, err);
	if (rc == FA_OK)
		rc = m->table(out, r, &t, err);
	if (rc == FA_OK) {
		write_legend(out, r, m, mixed);
		rc = write_skips(out, r, m, err);
	}
	md_table_free(&t);
	if (rc == FA_OK && r->any_tags && m->raw == 0)
		rc = write_models(out, r, err);
	return rc;
}

/* ---- Markdown ------------------------------------------------------------- */

static void md_word(FILE *out, const char *s)
{
	fprintf(out, "%s", s);
}

static void md_tag(FILE *out, const char *cls)
{
	(void)out; /* markdown has no classes */
	(void)cls;
}

/* The results table with every column padded to its widest cell. */
static enum fa_rc md_results_table(FILE *out, const struct report *r, const struct md_table *t,
				   struct fa_err *err)
{
	(void)r;
	if (fa_table_print_md(out, &t->cells, NULL) != FA_OK)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a report");
	return FA_OK;
}

static const struct markup md_markup = {
	.text = fa_table_md_text,
	.code = fa_table_md_code,
	.word = md_word,
	.tag = md_tag,
	.tag_end = "",
	.raw = 0,
	.table = md_results_table,
	.title = "# ",
	.title_end = "\n\n",
	.dt = "- ",
	.dt_end = ": ",
	.dd_end = "\n",
	.by = NULL,
	.finished = ", finished: ",
	.commit = "",
	.commit_end = "",
	.header_end = "",
	.h2 = "\n## ",
	.h2_end = "\n\n",
	.h3 = "\n",
	.h3_end = ":\n\n",
	.p = "",
	.p_end = "\n",
	.before_table = "\n",
	.note = "\n",
	.note_end = "\n",
	.failures = "",
	.list = "",
	.li = "- ",
	.li_end = "\n",
	.list_end = "",
	.lt = "<",
	.gt = ">",
};

static enum fa_rc write_md(FILE *out, const struct report *r, struct fa_err *err)
{
	return write_body(out, r, &md_markup, err);
}

/* ---- CSV ------------------------------------------------------------------ */

static void csv_cell(FILE *out, const struct fa_cell *c)
{
	char buf[64];
	switch (c->type) {
	case FA_CELL_INT: fprintf(out, "%" PRId64, c->i); break;
	case FA_CELL_REAL:
		fa_table_fmt_real(c->d, buf, sizeof buf);
		fputs(buf, out);
		break;
	case FA_CELL_TEXT: fa_table_csv_text(out, c->s); break;
	default: break;
	}
}

static const char *const csv_result_cols[] = {
	"kernel", "params", "status", "reason", "median_ms", "mean_ms", "min_ms",
	"max_ms", "stdev_ms", "n_samples", "tflops", "gbps", "speedup", "max_abs",
	"rel_l2", "nmse", "unwritten", "rule",
};

/* After them, one group per gradient (dq_max_abs, ..., dv_unwritten): a
 * backward result's grad_stats, empty for a forward one. Every run has the
 * columns, so CSV files of forward and backward runs stack. */
static const char *const csv_grad_tensors[] = {"dq", "dk", "dv"};
static const char *const csv_grad_cols[] = {"max_abs", "rel_l2", "nmse", "unwritten"};

/* Column name of the grad_stats row of tensor ("dq", "dk", "dv") of result
 * row, or NULL when the result has none (a forward result). */
static const struct fa_cell *grad_cell(const struct report *r, int row, const char *tensor,
				       const char *name)
{
	int64_t id = fa_rows_int(&r->res, row, "id");
	for (int i = 0; i < r->grads.nrows; i++) {
		const char *t = fa_rows_text(&r->grads, i, "tensor");
		if (fa_rows_int(&r->grads, i, "result_id") == id && t && strcmp(t, tensor) == 0)
			return fa_rows_cell(&r->grads, i, name);
	}
	return NULL;
}

/* The long table as CSV: its text cells, quoted where needed. */
static enum fa_rc write_csv_long(FILE *out, const struct report *r, struct fa_err *err)
{
	struct fa_table t;
	enum fa_rc rc = long_build(r, &t, 1, err);
	for (int i = 0; rc == FA_OK && i < t.nrows; i++)
		for (int j = 0; j < t.ncols; j++) {
			fa_table_csv_text(out, fa_table_cell(&t, i, j));
			fputs(j + 1 < t.ncols ? "," : "\n", out);
		}
	fa_table_free(&t);
	return rc;
}

static void write_csv(FILE *out, const struct report *r);

/* fa_table_write_text's writers of the md and the csv (wide or long) */
static enum fa_rc md_text(FILE *m, const void *r, struct fa_err *err)
{
	return write_md(m, r, err);
}

static enum fa_rc csv_text(FILE *m, const void *ctx, struct fa_err *err)
{
	const struct report *r = ctx;
	if (r->layout == FA_LAYOUT_LONG)
		return write_csv_long(m, r, err);
	write_csv(m, r);
	return FA_OK;
}

static void write_csv(FILE *out, const struct report *r)
{
	char buf[64];
	fputs("run_id,case_idx,case_key", out);
	for (int j = FA_ROWS_CASE_FIRST_PARAM; j < FA_ROWS_CASE_END_PARAM; j++)
		fprintf(out, ",%s", r->cases.cols[j]);
	fputs(",pass", out); /* fwd, bwd or fwd_bwd: part of the case key */
	for (int j = 0; j < N_OF(csv_result_cols); j++)
		fprintf(out, ",%s", csv_result_cols[j]);
	for (int g = 0; g < N_OF(csv_grad_tensors); g++)
		for (int j = 0; j < N_OF(csv_grad_cols); j++)
			fprintf(out, ",%s_%s", csv_grad_tensors[g], csv_grad_cols[j]);
	if (r->any_tags) /* appended: the columns before keep their places */
		fputs(",models,tokens_per_s", out);
	if (r->any_depth)
		fputs(",depth", out);
	if (r->any_tags) /* after depth, which was there first */
		fputs(",label_layers", out);
	fputs("\n", out);
	for (int o = 0; o < r->res.nrows; o++) {
		int i = r->order[o], c = r->res_case[i];
		fprintf(out, "%" PRId64 ",%" PRId64 ",", fa_rows_int(&r->run, 0, "id"),
			fa_rows_int(&r->cases, c, "idx"));
		fa_table_csv_text(out, fa_rows_text(&r->cases, c, "key"));
		for (int j = FA_ROWS_CASE_FIRST_PARAM; j < FA_ROWS_CASE_END_PARAM; j++) {
			fputc(',', out);
			csv_cell(out, fa_rows_cell(&r->cases, c, r->cases.cols[j]));
		}
		fputc(',', out);
		csv_cell(out, fa_rows_cell(&r->cases, c, "pass"));
		for (int j = 0; j < N_OF(csv_result_cols); j++) {
			fputc(',', out);
			if (strcmp(csv_result_cols[j], "speedup") == 0) {
				double x = speedup_of(r, i);
				if (x > 0) {
					fa_table_fmt_real(x, buf, sizeof buf);
					fputs(buf, out);
				}
			} else if (strcmp(csv_result_cols[j], "status") == 0) {
				fputs(fa_status_name(res_status(r, i)), out);
			} else {
				csv_cell(out, fa_rows_cell(&r->res, i, csv_result_cols[j]));
			}
		}
		for (int g = 0; g < N_OF(csv_grad_tensors); g++)
			for (int j = 0; j < N_OF(csv_grad_cols); j++) {
				const struct fa_cell *gc =
					grad_cell(r, i, csv_grad_tensors[g], csv_grad_cols[j]);
				fputc(',', out);
				if (gc)
					csv_cell(out, gc);
			}
		if (r->any_tags) {
			/* the case's labels and the tokens/s through each, ';'-separated
			 * in the same order (empty for a label without layers) */
			char names[1024], toks[1024];
			size_t n = 0, nt = 0;
			names[0] = toks[0] = '\0';
			for (int g = 0; g < r->n_tags[c] && n < sizeof names && nt < sizeof toks; g++) {
				double v = tokens_per_s(r, i, c, r->tags[c][g].layers);
				n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", g ? ";" : "",
						      r->tags[c][g].name);
				nt += (size_t)snprintf(toks + nt, sizeof toks - nt, "%s", g ? ";" : "");
				if (isfinite(v) && nt < sizeof toks) {
					fa_table_fmt_real(v, toks + nt, sizeof toks - nt);
					nt += strlen(toks + nt);
				}
			}
			fputc(',', out);
			fa_table_csv_text(out, names);
			fputc(',', out);
			fa_table_csv_text(out, toks);
		}
		if (r->any_depth) { /* empty where the case gave none */
			fputc(',', out);
			if (r->depth[c] > 0)
				fprintf(out, "%d", r->depth[c]);
		}
		if (r->any_tags) { /* each label's layers, as models has them; empty none */
			fputc(',', out);
			for (int g = 0; g < r->n_tags[c]; g++) {
				if (g)
					fputc(';', out);
				if (r->tags[c][g].layers > 0)
					fprintf(out, "%d", r->tags[c][g].layers);
			}
		}
		fputs("\n", out);
	}
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_cell(FILE *out, const struct fa_cell *c)
{
	switch (c->type) {
	case FA_CELL_INT: fprintf(out, "%" PRId64, c->i); break;
	case FA_CELL_REAL: fa_table_json_real(out, c->d); break;
	case FA_CELL_TEXT: fa_json_string(out, c->s); break;
	default: fputs("null", out); break;
	}
}

/* A backward's result: "grads": {"dq": {"max_abs": .., "max_rel": .., ...,
 * "elems_checked": ..}, "dk": .., "dv": ..} (every grad_stats column the
 * reader gives) after its other members; nothing for a forward result (the
 * format of forward runs is unchanged). */
static void write_json_grads(FILE *out, const struct report *r, int row)
{
	double v;
	if (!grad_real(r, row, "dq", "max_abs", &v))
		return;
	fputs("      \"grads\": {", out);
	for (int g = 0; g < N_OF(csv_grad_tensors); g++) {
		fprintf(out, "%s\"%s\": {", g ? ", " : "", csv_grad_tensors[g]);
		for (int j = 2; j < r->grads.ncols; j++) {
			const struct fa_cell *gc = grad_cell(r, row, csv_grad_tensors[g], r->grads.cols[j]);
			fprintf(out, "%s\"%s\": ", j > 2 ? ", " : "", r->grads.cols[j]);
			if (gc)
				json_cell(out, gc);
			else
				fputs("null", out);
		}
		fputs("}", out);
	}
	fputs("}\n", out);
}

static void write_json(FILE *out, const struct report *r)
{
	fprintf(out, "{\n  \"schema_version\": %d,\n  \"run\": {\n", FA_JSON_SCHEMA_VERSION);
	for (int j = 0; j < r->run.ncols; j++) {
		fprintf(out, "    \"%s\": ", r->run.cols[j]);
		json_cell(out, &r->run.c[j]);
		fputs(j + 1 < r->run.ncols ? ",\n" : "\n", out);
	}
	fputs("  },\n  \"baseline\": ", out);
	if (r->baseline >= 0)
		fa_json_string(out, r->labels[r->baseline]);
	else
		fputs("null", out);
	/* each pass's, which a result's speedup is over */
	fputs(",\n  \"baselines\": {", out);
	for (int p = 0; p < 3; p++) {
		fprintf(out, "%s\"%s\": ", p ? ", " : "", p == 0 ? "fwd" : p == 1 ? "bwd" : "fwd_bwd");
		if (r->base_pass[p] >= 0)
			fa_json_string(out, r->labels[r->base_pass[p]]);
		else
			fputs("null", out);
	}
	fputs("}", out);
	fputs(",\n  \"results\": [", out);
	for (int o = 0; o < r->res.nrows; o++) {
		int i = r->order[o], c = r->res_case[i];
		double x = speedup_of(r, i), gv;
		int has_grads = grad_real(r, i, "dq", "max_abs", &gv);
		fputs(o ? ",\n    {\n" : "\n    {\n", out);
		/* the case on one line: it repeats for every kernel */
		fputs("      \"case\": {", out);
		for (int j = 1; j < r->cases.ncols; j++) {
			const char *pass = fa_rows_text(&r->cases, c, "pass");
			if (strcmp(r->cases.cols[j], "pass") == 0 && (!pass || strcmp(pass, "fwd") == 0))
				continue; /* forward cases as before passes existed */
			fprintf(out, "%s\"%s\": ", j > 1 ? ", " : "", r->cases.cols[j]);
			json_cell(out, fa_rows_cell(&r->cases, c, r->cases.cols[j]));
		}
		if (r->depth[c]) /* the suite's depth:, as list --format json has it */
			fprintf(out, ", \"depth\": %d", r->depth[c]);
		fputs("},\n", out);
		if (r->any_tags) {
			/* the models of the case, each with its tokens/s through this kernel */
			fputs("      \"tags\": [", out);
			for (int k = 0; k < r->n_tags[c]; k++) {
				const struct fa_case_tag *tg = &r->tags[c][k];
				if (k)
					fputs(", ", out);
				fa_table_json_tag_open(out, tg);
				fputs(", \"tokens_per_s\": ", out);
				fa_table_json_real(out, tokens_per_s(r, i, c, tg->layers));
				fputc('}', out);
			}
			fputs("],\n", out);
		}
		for (int j = FA_ROWS_RESULT_FIRST_FIELD; j < r->res.ncols; j++) {
			fprintf(out, "      \"%s\": ", r->res.cols[j]);
			if (strcmp(r->res.cols[j], "status") == 0)
				fa_json_string(out, fa_status_name(res_status(r, i)));
			else
				json_cell(out, fa_rows_cell(&r->res, i, r->res.cols[j]));
			if (strcmp(r->res.cols[j], "kernel") == 0) {
				fputs(",\n      \"family\": ", out);
				if (family_of(r, i))
					fa_json_string(out, family_of(r, i));
				else
					fputs("null", out);
			}
			if (strcmp(r->res.cols[j], "gbps") == 0) {
				fputs(",\n      \"speedup\": ", out);
				if (x > 0)
					fa_table_json_real(out, x);
				else
					fputs("null", out);
			}
			fputs(j + 1 < r->res.ncols || has_grads ? ",\n" : "\n", out);
		}
		write_json_grads(out, r, i);
		fputs("    }", out);
	}
	fputs(r->res.nrows ? "\n  ]\n}\n" : "]\n}\n", out);
}

/* ---- HTML ----------------------------------------------------------------- */

/* One self-contained page: the markdown report's content as HTML (run
 * header, failures, the results table with a two-row header: kernels over
 * their columns), then the compare when one is given, and the plots as
 * inline SVG. A little CSS makes tables readable: a sticky header,
 * right-aligned numbers, statuses and verdicts coloured. Nothing is loaded
 * from elsewhere: no scripts, no fonts, no links. */

static const char html_css[] =
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',"
	"Arial,sans-serif;margin:24px;color:#1f2328;background:#fff}\n"
	"h1{font-size:22px;margin:0 0 12px}\n"
	"h2{font-size:18px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid #d0d7de}\n"
	"h3{font-size:15px;margin:18px 0 6px}\n"
	"code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
	"background:#f6f8fa;padding:1px 4px;border-radius:4px;overflow-wrap:anywhere}\n"
	"dl.run{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}\n"
	"dl.run dt{font-weight:600;color:#57606a}\n"
	"dl.run dd{margin:0}\n"
	".wrap{max-height:80vh;overflow:auto;border:1px solid #d0d7de;border-radius:6px;"
	"margin:8px 0;display:inline-block;max-width:100%}\n"
	"table{border-collapse:separate;border-spacing:0;font-variant-numeric:tabular-nums}\n"
	"th,td{padding:3px 10px;border-bottom:1px solid #eaeef2;white-space:nowrap}\n"
	"thead{position:sticky;top:0;z-index:1}\n"
	"thead th{background:#f6f8fa;text-align:left;border-bottom:1px solid #d0d7de}\n"
	"thead th.k{text-align:center;border-left:1px solid #d0d7de}\n"
	"td.k,th.k1{border-left:1px solid #d0d7de}\n"
	".n{text-align:right}\n"
	"tbody tr:hover td{background:#f6f8fa}\n"
	".pass{color:#1a7f37}\n"
	".fail{background:#ffebe9;color:#a40e26;font-weight:600}\n"
	".error,.timeout,.broken,.failing{background:#fff1e5;color:#953800;font-weight:600}\n"
	".skip,.added,.removed,.untimed{color:#6e7781}\n"
	".bad{color:#a40e26}\n"
	".faster,.fixed{background:#dafbe1;color:#116329;font-weight:600}\n"
	".slower{background:#ffebe9;color:#a40e26;font-weight:600}\n"
	".same{color:#57606a}\n"
	".noisy{background:#fff8c5;color:#7d4e00}\n"
	"ul.failures li{margin:2px 0}\n"
	"span.badge{display:inline-block;min-width:52px;padding:0 6px;border-radius:4px;"
	"text-align:center}\n"
	"figure{margin:16px 0}\n"
	"figure svg{max-width:100%;height:auto;display:block;border:1px solid #d0d7de;"
	"border-radius:6px}\n"
	"figcaption{color:#57606a;font-size:13px;margin-top:4px}\n"
	"p.note{color:#57606a}\n";

/* Text with &, <, >, " and ' escaped (safe in elements and attributes),
 * each control character but tab and line breaks as '?' (text from a
 * plugin or a merged database may hold an escape sequence) and each byte
 * that starts no valid UTF-8 sequence as U+FFFD, as the page declares
 * UTF-8; NULL writes nothing. */
static void html_text(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : ""),
			    *end = p + strlen((const char *)p);
	for (; *p; p++) {
		if (*p >= 0x80) {
			const int n = fa_utf8_len(p, end);
			if (n == 0)
				fputs("\xef\xbf\xbd", out);
			else
				fwrite(p, 1, (size_t)n, out);
			p += n ? n - 1 : 0;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			fputc((*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') || *p == 0x7f ? '?'
													: *p,
			      out);
			break;
		}
	}
}

static void html_code(FILE *out, const char *s)
{
	fputs("<code>", out);
	html_text(out, s);
	fputs("</code>", out);
}

static void html_tag(FILE *out, const char *cls)
{
	fprintf(out, "<span class=\"%s\">", cls);
}

/* The class of a results cell: its alignment, the left border of a kernel's
 * first column, and the status colours. */
static void html_cell_class(const struct report *r, const struct md_table *t, int j, int c,
			    char *buf, size_t size)
{
	const struct md_col *col = &t->cols[j];
	int row = col->kind >= MC_MS ? r->grid[(size_t)c * r->nk + col->k] : -1;
	int st = row >= 0 ? res_status(r, row) : -1;
	const char *cell = fa_table_cell(&t->cells, c + 1, j);
	size_t n = 0;
	buf[0] = '\0';
	if (col->right)
		n += (size_t)snprintf(buf + n, size - n, "n");
	if (col->kind == MC_MS)
		n += (size_t)snprintf(buf + n, size - n, "%sk", n ? " " : "");
	if (col->kind == MC_STATUS && st >= 0)
		snprintf(buf + n, size - n, "%s%s", n ? " " : "", fa_status_name(st));
	else if (col->kind == MC_MS && st == FA_STATUS_SKIP && cell[0])
		snprintf(buf + n, size - n, "%sskip", n ? " " : "");
	else if (col->kind == MC_ERR && st == FA_STATUS_FAIL)
		snprintf(buf + n, size - n, "%sbad", n ? " " : "");
}

static enum fa_rc html_results_table(FILE *out, const struct report *r, const struct md_table *t,
				     struct fa_err *err)
{
	int ncols = t->cells.ncols;
	char cls[64];
	(void)err; /* it allocates nothing */
	/* header row 1: case columns span both rows, kernels span their columns */
	fputs("<div class=\"wrap\"><table class=\"results\">\n<thead>\n<tr>", out);
	for (int j = 0; j < ncols;) {
		const struct md_col *col = &t->cols[j];
		int span = 1;
		if (col->kind < MC_MS) {
			fprintf(out, "<th rowspan=\"2\"%s>", col->right ? " class=\"n\"" : "");
			html_text(out, fa_table_cell(&t->cells, 0, j));
			fputs("</th>", out);
			j++;
			continue;
		}
		while (j + span < ncols && t->cols[j + span].kind >= MC_MS &&
		       t->cols[j + span].k == col->k)
			span++;
		fprintf(out, "<th class=\"k\" colspan=\"%d\">", span);
		html_text(out, r->labels[col->k]);
		fputs("</th>", out);
		j += span;
	}
	/* header row 2: what each kernel column holds (the markdown header
	 * without its kernel label) */
	fputs("</tr>\n<tr>", out);
	for (int j = 0; j < ncols; j++) {
		const struct md_col *col = &t->cols[j];
		const char *h = fa_table_cell(&t->cells, 0, j);
		size_t n = strlen(r->labels[col->k]);
		if (col->kind < MC_MS)
			continue;
		if (strncmp(h, r->labels[col->k], n) == 0 && h[n] == ' ')
			h += n + 1;
		fprintf(out, "<th class=\"%s%s\">", col->right ? "n" : "",
			col->kind == MC_MS ? (col->right ? " k1" : "k1") : "");
		html_text(out, h);
		fputs("</th>", out);
	}
	fputs("</tr>\n</thead>\n<tbody>\n", out);
	for (int c = 0; c < t->cells.nrows - 1; c++) {
		fputs("<tr>", out);
		for (int j = 0; j < ncols; j++) {
			const struct md_col *col = &t->cols[j];
			const char *cell = fa_table_cell(&t->cells, c + 1, j);
			int row = col->kind >= MC_MS ? r->grid[(size_t)c * r->nk + col->k] : -1;
			html_cell_class(r, t, j, c, cls, sizeof cls);
			fputs(cls[0] ? "<td class=\"" : "<td", out);
			if (cls[0])
				fprintf(out, "%s\"", cls);
			fputc('>', out);
			/* a status column shows "pass" where markdown leaves it empty */
			if (col->kind == MC_STATUS && !cell[0] && row >= 0 &&
			    res_status(r, row) == FA_STATUS_PASS)
				fputs("pass", out);
			else
				html_text(out, cell);
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody>\n</table></div>\n", out);
	return FA_OK;
}

static const struct markup html_markup = {
	.text = html_text,
	.code = html_code,
	.word = html_text,
	.tag = html_tag,
	.tag_end = "</span>",
	.raw = 1,
	.table = html_results_table,
	.title = "<h1>",
	.title_end = "</h1>\n<dl class=\"run\">\n",
	.dt = "<dt>",
	.dt_end = "</dt><dd>",
	.dd_end = "</dd>\n",
	.by = "by",
	.finished = ", finished ",
	.commit = "<code>",
	.commit_end = "</code>",
	.header_end = "</dl>\n",
	.h2 = "<h2>",
	.h2_end = "</h2>\n",
	.h3 = "<h3>",
	.h3_end = "</h3>\n",
	.p = "<p>",
	.p_end = "</p>\n",
	.before_table = "",
	.note = "<p class=\"note\">",
	.note_end = "</p>\n",
	.failures = "<ul class=\"failures\">\n",
	.list = "<ul>\n",
	.li = "<li>",
	.li_end = "</li>\n",
	.list_end = "</ul>\n",
	.lt = "&lt;",
	.gt = "&gt;",
};

/* One plot as a figure; gnuplot's SVG with its XML prologue dropped and
 * every id (and reference to one) prefixed with "f<fig>-", so that several
 * plots can share the page. */
static void html_svg(FILE *out, const char *svg, int fig, const char *caption)
{
	const char *p = strstr(svg, "<svg");
	char prefix[16];
	if (!p)
		return;
	snprintf(prefix, sizeof prefix, "f%d-", fig);
	fputs("<figure>\n", out);
	while (*p) {
		int at_word = p > svg && (p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n');
		if (at_word && (strncmp(p, "id=\"", 4) == 0 || strncmp(p, "id='", 4) == 0)) {
			fprintf(out, "id=%c%s", p[3], prefix);
			p += 4;
		} else if (strncmp(p, "href=\"#", 7) == 0 || strncmp(p, "href='#", 7) == 0) {
			fprintf(out, "href=%c#%s", p[5], prefix);
			p += 7;
		} else if (strncmp(p, "url(#", 5) == 0) {
			fprintf(out, "url(#%s", prefix);
			p += 5;
		} else {
			fputc(*p++, out);
		}
	}
	fputs("<figcaption>", out);
	html_text(out, caption);
	fputs("</figcaption>\n</figure>\n", out);
}

/* Draws one plot into the page. A plot with nothing to show is a note (or
 * nothing, when quiet), not an error; gnuplot failing is. */
static enum fa_rc html_plot(FILE *out, struct fa_store *s, const struct fa_plot_opts *po,
			    int *fig, const char *caption, int quiet, struct fa_err *err)
{
	struct fa_err perr;
	char *svg = NULL;
	enum fa_rc rc;
	fa_err_clear(&perr);
	rc = fa_plot_svg(s, po, &svg, NULL, &perr);
	if (rc == FA_OK) {
		html_svg(out, svg, ++*fig, caption);
	} else if (rc == FA_ERR_NOT_FOUND) {
		if (!quiet) {
			fprintf(out, "<p class=\"note\">No %s plot: ", fa_plot_kind_name(po->kind));
			html_text(out, perr.msg);
			fputs(".</p>\n", out);
		}
		rc = FA_OK;
	} else {
		fa_err_set(err, rc, "%s plot: %s", fa_plot_kind_name(po->kind), perr.msg);
	}
	free(svg);
	return rc;
}

/* "run 1 (label baseline, commit 3f9a1c2e7b5d, 2026-11-20T09:15:02Z)" for
 * each run of a side. */
static void html_cmp_side(FILE *out, const char *name, const struct fa_cmp_side *sd)
{
	fprintf(out, "<dt>%s</dt><dd>", name);
	html_code(out, sd->spec);
	fprintf(out, " (by %s): ", sd->matched_by ? sd->matched_by : "?");
	for (int i = 0; i < sd->n_runs; i++) {
		const struct fa_cmp_run *run = &sd->runs[i];
		fprintf(out, "%srun %" PRId64 " (", i ? "; " : "", run->id);
		if (run->label && run->label[0]) {
			fputs("label ", out);
			html_text(out, run->label);
			fputs(", ", out);
		}
		if (run->git_commit && run->git_commit[0]) {
			fprintf(out, "commit <code>%.*s</code>%s, ", FA_TABLE_SHORT_COMMIT,
				run->git_commit, run->git_dirty == 1 ? " dirty" : "");
		}
		html_text(out, run->started_at);
		if (run->status && strcmp(run->status, "complete") != 0) {
			fputs(", ", out);
			html_text(out, run->status);
		}
		fputs(")", out);
	}
	fputs("</dd>\n", out);
}

static void html_sig3(FILE *out, double x)
{
	char buf[64];
	if (!isfinite(x))
		return;
	fa_table_fmt_sig3(x, buf, sizeof buf);
	fputs(buf, out);
}

static void html_compare(FILE *out, const struct fa_compare *cmp)
{
	int any_reason = 0, any_pass = 0;
	fputs("<h2>Compare</h2>\n<dl class=\"run\">\n", out);
	html_cmp_side(out, "base", &cmp->base);
	html_cmp_side(out, "head", &cmp->head);
	fputs("</dl>\n<p>", out);
	fprintf(out, "%d result%s compared", cmp->n_rows, cmp->n_rows == 1 ? "" : "s");
	for (int v = 0; v < 4; v++)
		fprintf(out, "%s<span class=\"%s\">%d %s</span>", v ? ", " : ": ",
			fa_stats_verdict_name(v), cmp->verdicts[v], fa_stats_verdict_name(v));
	for (int ch = FA_CMP_BROKEN; ch < FA_CMP_CHANGE_COUNT; ch++)
		if (cmp->changes[ch])
			fprintf(out, ", <span class=\"%s\">%d %s</span>", fa_compare_change_name(ch),
				cmp->changes[ch], fa_compare_change_name(ch));
	if (isfinite(cmp->geomean_speedup))
		fprintf(out, "; geometric-mean speedup %.3fx", cmp->geomean_speedup);
	fputs(".</p>\n", out);

	if (cmp->n_kernels > 0) {
		fputs("<div class=\"wrap\"><table class=\"kernels\">\n<thead><tr><th>kernel</th>"
		      "<th class=\"n\">timed</th><th class=\"n\">geomean speedup</th>",
		      out);
		for (int v = 0; v < 4; v++)
			fprintf(out, "<th class=\"n\">%s</th>", fa_stats_verdict_name(v));
		fputs("</tr></thead>\n<tbody>\n", out);
		for (int k = 0; k < cmp->n_kernels; k++) {
			const struct fa_cmp_group *g = &cmp->kernels[k];
			fputs("<tr><td>", out);
			html_text(out, g->name);
			fprintf(out, "</td><td class=\"n\">%d</td><td class=\"n\">", g->n);
			if (isfinite(g->geomean_speedup))
				fprintf(out, "%.3fx", g->geomean_speedup);
			fputs("</td>", out);
			for (int v = 0; v < 4; v++)
				fprintf(out, "<td class=\"n\">%d</td>", g->verdicts[v]);
			fputs("</tr>\n", out);
		}
		fputs("</tbody>\n</table></div>\n", out);
	}

	for (int i = 0; i < cmp->n_rows; i++) {
		/* the pass where a backward is timed: a bwd and a fwd_bwd row of
		 * one shape differ in nothing else */
		any_pass |= cmp->rows[i].pass != FA_PASS_FWD;
		any_reason |= cmp->rows[i].change != FA_CMP_TIMED &&
			      ((cmp->rows[i].head_reason && cmp->rows[i].head_reason[0]) ||
			       (cmp->rows[i].base_reason && cmp->rows[i].base_reason[0]));
	}
	fputs("<div class=\"wrap\"><table class=\"compare\">\n<thead><tr>", out);
	if (cmp->n_suites > 1)
		fputs("<th>suite</th>", out);
	/* what was found first, then the case's parameters (a wide table
	 * scrolls sideways) */
	fputs("<th class=\"n\">#</th><th>kernel</th><th class=\"n\">base ms</th>"
	      "<th class=\"n\">head ms</th><th class=\"n\">speedup</th><th>verdict</th>",
	      out);
	for (int j = 0, first = 1; j < cmp->n_params; j++)
		if (cmp->shown[j]) {
			fputs(first ? "<th class=\"k1\">" : "<th>", out);
			html_text(out, cmp->param_names[j]);
			fputs("</th>", out);
			first = 0;
		}
	if (any_pass)
		fputs("<th>pass</th>", out);
	if (any_reason)
		fputs("<th>reason</th>", out);
	fputs("</tr></thead>\n<tbody>\n", out);
	for (int i = 0; i < cmp->n_rows; i++) {
		const struct fa_cmp_row *w = &cmp->rows[i];
		const char *word = w->change == FA_CMP_TIMED ? fa_stats_verdict_name(w->verdict)
							     : fa_compare_change_name(w->change);
		fputs("<tr>", out);
		if (cmp->n_suites > 1) {
			fputs("<td>", out);
			html_text(out, w->suite);
			fputs("</td>", out);
		}
		fprintf(out, "<td class=\"n\">%d</td><td>", (int)w->case_idx + 1);
		html_text(out, w->kernel);
		if (w->params && w->params[0]) {
			fputc('[', out);
			html_text(out, w->params);
			fputc(']', out);
		}
		fputs("</td><td class=\"n\">", out);
		html_sig3(out, w->base_ms);
		fputs("</td><td class=\"n\">", out);
		html_sig3(out, w->head_ms);
		fputs("</td><td class=\"n\">", out);
		if (isfinite(w->speedup))
			fprintf(out, "%.3fx", w->speedup);
		fprintf(out, "</td><td class=\"%s\">%s</td>", word, word);
		for (int j = 0, first = 1; j < cmp->n_params; j++)
			if (cmp->shown[j]) {
				fputs(first ? "<td class=\"k\">" : "<td>", out);
				html_text(out, w->values[j]);
				fputs("</td>", out);
				first = 0;
			}
		if (any_pass)
			fprintf(out, "<td>%s</td>", fa_pass_name(w->pass));
		if (any_reason) {
			const char *why = w->head_reason && w->head_reason[0] ? w->head_reason
									       : w->base_reason;
			fputs("<td>", out);
			if (w->change != FA_CMP_TIMED)
				html_text(out, why);
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody>\n</table></div>\n", out);
	fputs("<p class=\"note\">speedup: base median / head median (&gt; 1: head is faster). "
	      "faster / slower: the rank test and the bootstrap interval of the ratio both show a "
	      "change beyond the minimum effect; same: the interval lies within it; noisy: the "
	      "samples cannot tell.</p>\n",
	      out);
}

static enum fa_rc write_html(FILE *out, struct fa_store *s, int64_t run_id, const struct report *r,
			     const struct fa_report_html_opts *o, struct fa_err *err)
{
	int fig = 0, can_plot = o->plots && fa_plot_gnuplot_available();
	enum fa_rc rc;

	fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		     "<title>fabench report: run %" PRId64 "</title>\n<style>\n%s</style>\n"
		     "</head>\n<body>\n",
		fa_rows_int(&r->run, 0, "id"), html_css);
	rc = write_body(out, r, &html_markup, err);
	if (o->plots && !can_plot)
		fputs("<p class=\"note\">Plots are left out: gnuplot is not installed (install the "
		      "gnuplot-nox package).</p>\n",
		      out);
	if (rc == FA_OK && can_plot && r->nk > 0) {
		struct fa_plot_opts po;
		memset(&po, 0, sizeof po);
		po.kind = FA_PLOT_THROUGHPUT;
		po.format = FA_PLOT_SVG;
		po.run_id = run_id;
		rc = html_plot(out, s, &po, &fig,
			       "Throughput per kernel against sequence length, one panel per "
			       "head_dim (passed results only).",
			       0, err);
		po.kind = FA_PLOT_HEATMAP;
		if (rc == FA_OK)
			rc = html_plot(out, s, &po, &fig,
				       "Tuning: each case's time with each set of params, over the "
				       "case's best.",
				       1, err);
	}
	if (rc == FA_OK && o->compare) {
		html_compare(out, o->compare);
		if (can_plot) {
			struct fa_plot_opts po;
			memset(&po, 0, sizeof po);
			po.kind = FA_PLOT_SPEEDUP;
			po.format = FA_PLOT_SVG;
			po.compare = o->compare;
			rc = html_plot(out, s, &po, &fig,
				       "Speedup of head over base per result timed on both sides, "
				       "coloured by verdict.",
				       0, err);
		}
	}
	fputs("</body>\n</html>\n", out);
	return rc;
}

/* ---- Entry ---------------------------------------------------------------- */

static enum fa_rc report_write(struct fa_store *s, int64_t run_id, const struct fa_report_opts *o,
			       const struct fa_report_html_opts *h, FILE *out, struct fa_err *err)
{
	static const struct fa_report_html_opts no_extras = {NULL, 0};
	struct report r;
	enum fa_rc rc;

	if (o->format != FA_FMT_MD && o->format != FA_FMT_CSV && o->format != FA_FMT_JSON &&
	    o->format != FA_FMT_HTML)
		return fa_err_set(err, FA_ERR_USAGE, "unknown report format %d", (int)o->format);
	if (o->metric < FA_METRIC_ALL || o->metric > FA_METRIC_GBPS)
		return fa_err_set(err, FA_ERR_USAGE, "unknown report metric %d", (int)o->metric);
	if (o->layout != FA_LAYOUT_WIDE && o->layout != FA_LAYOUT_LONG)
		return fa_err_set(err, FA_ERR_USAGE, "unknown report layout %d", (int)o->layout);
	if (o->layout == FA_LAYOUT_LONG && o->format != FA_FMT_MD && o->format != FA_FMT_CSV)
		return fa_err_set(err, FA_ERR_USAGE,
				  "the long layout is for md and csv (json lists every result "
				  "already)");
	rc = report_load(s, run_id, o->baseline, &r, err);
	r.metric = o->metric;
	r.layout = o->layout;
	if (rc == FA_OK && (o->format == FA_FMT_MD || o->format == FA_FMT_CSV)) {
		/* through memory, every byte then valid UTF-8 (as json and html
		 * write theirs): a plugin's device name or reason may hold any */
		rc = fa_table_write_text(out, o->format == FA_FMT_MD ? md_text : csv_text, &r,
					 "the report", err);
	} else if (rc == FA_OK) {
		if (o->format == FA_FMT_HTML)
			rc = write_html(out, s, run_id, &r, h ? h : &no_extras, err);
		else
			write_json(out, &r);
	}
	report_free(&r);
	if (rc == FA_OK && (fflush(out) != 0 || ferror(out)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot write the report of run %" PRId64, run_id);
	return rc;
}

enum fa_rc fa_report_write(struct fa_store *s, int64_t run_id, const struct fa_report_opts *o,
			   FILE *out, struct fa_err *err)
{
	return report_write(s, run_id, o, NULL, out, err);
}

enum fa_rc fa_report_write_html(struct fa_store *s, int64_t run_id,
				const struct fa_report_opts *o,
				const struct fa_report_html_opts *h, FILE *out, struct fa_err *err)
{
	struct fa_report_opts ho = *o;
	ho.format = FA_FMT_HTML;
	return report_write(s, run_id, &ho, h, out, err);
}
