/* buildreport.c - the build-matrix grid (kernel x target) in markdown, CSV
 * and JSON, and the regression gate of --fail-on (see buildreport.h). */
#include "buildreport.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "table.h"
#include "../base/util.h"

#define MAX_ARCHS 32

/* The targets the run has, in the list's order, then any other. */
static int run_archs(const struct fa_build_table *t, const char **archs)
{
	int n = 0;
	for (int i = 0; i < fa_bm_n_targets; i++)
		for (int r = 0; r < t->n; r++)
			if (strcmp(t->rows[r].arch, fa_bm_targets[i].arch) == 0) {
				archs[n++] = fa_bm_targets[i].arch;
				break;
			}
	for (int r = 0; r < t->n && n < MAX_ARCHS; r++) {
		int seen = 0;
		for (int a = 0; a < n && !seen; a++)
			seen = strcmp(archs[a], t->rows[r].arch) == 0;
		if (!seen)
			archs[n++] = t->rows[r].arch;
	}
	return n;
}

static const char *row_name(const struct fa_build_row *r)
{
	return r->name ? r->name : r->symbol;
}

/* The unit row of (source, arch), or NULL. */
static const struct fa_build_row *unit_row(const struct fa_build_table *t, const char *source,
					   const char *arch)
{
	for (int i = 0; i < t->n; i++)
		if (!t->rows[i].symbol && strcmp(t->rows[i].source, source) == 0 &&
		    strcmp(t->rows[i].arch, arch) == 0)
			return &t->rows[i];
	return NULL;
}

/* The kernel k of another run in t on arch: by symbol, else by name (nvcc
 * puts a hash of the unit into the symbols of an anonymous namespace). */
static const struct fa_build_row *kernel_row(const struct fa_build_table *t,
					     const struct fa_build_row *k, const char *arch)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < t->n; i++) {
			const struct fa_build_row *r = &t->rows[i];
			if (!r->symbol || strcmp(r->source, k->source) != 0 ||
			    strcmp(r->arch, arch) != 0)
				continue;
			if (pass == 0 ? strcmp(r->symbol, k->symbol) == 0
				      : strcmp(row_name(r), row_name(k)) == 0)
				return r;
		}
	return NULL;
}

static void fmt_kib(long long b, char *buf, size_t size)
{
	if (b >= 1024 && b % 1024 == 0)
		snprintf(buf, size, "%lldK", b / 1024);
	else if (b >= 1024)
		snprintf(buf, size, "%.1fK", (double)b / 1024);
	else
		snprintf(buf, size, "%lldB", b);
}

/* "168r smem 48K spill 64B HMMA" / "84v 32s lds 32K v_mfma". */
static void kernel_cell(const struct fa_build_row *r, char *buf, size_t size)
{
	char part[64];
	size_t n = 0;
	int amd = r->sgprs >= 0 || (r->isa_from && strcmp(r->isa_from, "amdgcn") == 0);
	buf[0] = '\0';
#define ADD(...)                                                                         \
	do {                                                                             \
		snprintf(part, sizeof part, __VA_ARGS__);                                \
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s", n ? " " : "", part); \
	} while (0)
	if (r->regs >= 0)
		ADD(amd ? "%lldv" : "%lldr", r->regs);
	if (r->sgprs >= 0)
		ADD("%llds", r->sgprs);
	if (r->shared_bytes > 0) {
		char k[32];
		fmt_kib(r->shared_bytes, k, sizeof k);
		ADD("%s %s", amd ? "lds" : "smem", k);
	}
	if (r->spill_bytes > 0)
		ADD("spill %lldB", r->spill_bytes);
	if (r->spill_regs > 0)
		ADD("spill %lld", r->spill_regs);
	if (r->scratch_bytes > 0)
		ADD("scratch %lldB", r->scratch_bytes);
	if (r->matrix_count > 0 && r->matrix) {
		/* the first mnemonic's root: HMMA, HGMMA, mma.sync, v_mfma, v_wmma */
		const char *m = r->matrix;
		size_t len = strcspn(m, " ");
		if (strncmp(m, "v_", 2) == 0) {
			const char *u = memchr(m + 2, '_', len - 2);
			len = u ? (size_t)(u - m) : len;
		} else if (strncmp(m, "mma.", 4) == 0 || strncmp(m, "wgmma.", 6) == 0) {
			const char *d = memchr(m + 4, '.', len - 4);
			len = d ? (size_t)(d - m) : len;
		} else {
			len = strcspn(m, ". ");
		}
		ADD("%.*s", (int)len, m);
	}
#undef ADD
	if (n >= size && size > 0)
		buf[size - 1] = '\0';
}

/* The grid cell of a kernel (source, name) on arch. */
static void grid_cell(const struct fa_build_table *t, const struct fa_build_row *k,
		      const char *arch, char *buf, size_t size)
{
	const struct fa_build_row *u = unit_row(t, k->source, arch);
	buf[0] = '\0';
	if (!u)
		return;
	if (u->status == FA_BM_FAILED) {
		snprintf(buf, size, "FAILED");
		return;
	}
	if (u->status == FA_BM_SKIPPED) {
		snprintf(buf, size, "skipped");
		return;
	}
	if (!k->symbol) {
		snprintf(buf, size, "ok");
		return;
	}
	const struct fa_build_row *r = kernel_row(t, k, arch);
	if (!r) {
		snprintf(buf, size, "-");
		return;
	}
	kernel_cell(r, buf, size);
	if (!buf[0])
		snprintf(buf, size, "ok");
}

static enum fa_rc write_md(const struct fa_build_table *t, FILE *out, struct fa_err *err)
{
	const char *archs[MAX_ARCHS];
	int na = run_archs(t, archs), n_failed = 0, n_skipped = 0, n_units = 0, n_kernels = 0;
	struct fa_table g;
	enum fa_rc rc;
	char cell[256];

	fprintf(out, "# build-matrix run %lld", (long long)t->id);
	if (t->label) {
		fprintf(out, " (");
		fa_table_md_text(out, t->label);
		fprintf(out, ")");
	}
	fprintf(out, "\n\n");
	fprintf(out, "- started: %s, %s\n", t->started_at ? t->started_at : "?",
		t->status ? t->status : "?");
	if (t->git_commit)
		fprintf(out, "- commit: %.*s\n", FA_TABLE_SHORT_COMMIT, t->git_commit);
	if (t->tools) {
		fprintf(out, "- tools: ");
		fa_table_md_text(out, t->tools);
		fprintf(out, "\n");
	}
	for (int i = 0; i < t->n; i++) {
		if (t->rows[i].symbol) {
			n_kernels++;
			continue;
		}
		n_units++;
		n_failed += t->rows[i].status == FA_BM_FAILED;
		n_skipped += t->rows[i].status == FA_BM_SKIPPED;
	}
	fprintf(out, "- compiles: %d (%d ok, %d failed, %d skipped), kernel builds: %d\n\n",
		n_units, n_units - n_failed - n_skipped, n_failed, n_skipped, n_kernels);
	fprintf(out, "Cells: registers per thread (`r`; AMD: VGPRs `v`, SGPRs `s`), static "
		     "shared memory or LDS, spills and scratch when there are any, and the "
		     "matrix instructions found in the ISA.\n\n");

	if ((rc = fa_table_init(&g, na + 2, err)) != FA_OK)
		return rc;
	rc = fa_table_add(&g, "kernel", err);
	if (rc == FA_OK)
		rc = fa_table_add(&g, "source", err);
	for (int a = 0; a < na && rc == FA_OK; a++)
		rc = fa_table_add(&g, archs[a], err);
	/* one row per (source, kernel name), in the table's order; a unit
	 * without kernels gets one row "(no kernels)" */
	for (int i = 0; i < t->n && rc == FA_OK; i++) {
		const struct fa_build_row *k = &t->rows[i];
		int first = 1, has_kernels = 0;
		if (k->symbol) {
			for (int j = 0; j < i && first; j++)
				if (t->rows[j].symbol && strcmp(t->rows[j].source, k->source) == 0 &&
				    strcmp(row_name(&t->rows[j]), row_name(k)) == 0)
					first = 0;
		} else {
			for (int j = 0; j < t->n && !has_kernels; j++)
				has_kernels = t->rows[j].symbol &&
					      strcmp(t->rows[j].source, k->source) == 0;
			for (int j = 0; j < i && first; j++)
				if (!t->rows[j].symbol && strcmp(t->rows[j].source, k->source) == 0)
					first = 0;
			if (has_kernels)
				first = 0;
		}
		if (!first)
			continue;
		const char *slash = strrchr(k->source, '/');
		rc = fa_table_add_md(&g, k->symbol ? row_name(k) : "(no kernels)", err);
		if (rc == FA_OK)
			rc = fa_table_add_md(&g, slash ? slash + 1 : k->source, err);
		for (int a = 0; a < na && rc == FA_OK; a++) {
			grid_cell(t, k, archs[a], cell, sizeof cell);
			rc = fa_table_add_md(&g, cell, err);
		}
	}
	if (rc == FA_OK)
		rc = fa_table_print_md(out, &g, err);
	fa_table_free(&g);
	if (rc != FA_OK)
		return rc;
	if (n_failed) {
		fprintf(out, "\nFailed:\n\n");
		for (int i = 0; i < t->n; i++) {
			const struct fa_build_row *r = &t->rows[i];
			if (r->symbol || r->status != FA_BM_FAILED)
				continue;
			fprintf(out, "- ");
			fa_table_md_code(out, r->source);
			fprintf(out, " for %s: ", r->arch);
			fa_table_md_code(out, r->error ? r->error : "");
			fprintf(out, "\n");
		}
	}
	if (n_skipped) {
		/* one line per reason and family: "skipped (cuda, 24): nvcc not found" */
		fprintf(out, "\nSkipped:\n\n");
		for (int i = 0; i < t->n; i++) {
			const struct fa_build_row *r = &t->rows[i];
			int count = 0, seen = 0;
			if (r->symbol || r->status != FA_BM_SKIPPED)
				continue;
			for (int j = 0; j < i && !seen; j++)
				seen = !t->rows[j].symbol && t->rows[j].status == FA_BM_SKIPPED &&
				       strcmp(t->rows[j].family, r->family) == 0 &&
				       strcmp(t->rows[j].error ? t->rows[j].error : "",
					      r->error ? r->error : "") == 0;
			if (seen)
				continue;
			for (int j = i; j < t->n; j++)
				count += !t->rows[j].symbol && t->rows[j].status == FA_BM_SKIPPED &&
					 strcmp(t->rows[j].family, r->family) == 0 &&
					 strcmp(t->rows[j].error ? t->rows[j].error : "",
						r->error ? r->error : "") == 0;
			fprintf(out, "- %s, %d compile%s: ", r->family, count, count == 1 ? "" : "s");
			fa_table_md_text(out, r->error);
			fprintf(out, "\n");
		}
	}
	return FA_OK;
}

static const char *const csv_cols[] = {
	"build_id", "source", "arch", "family", "status", "error", "compile_s", "symbol",
	"name", "regs", "sgprs", "shared_bytes", "scratch_bytes", "spill_bytes", "spill_regs",
	"matrix_count", "matrix", "isa_from"};

static void csv_num(FILE *out, long long v)
{
	if (v >= 0)
		fprintf(out, "%lld", v);
}

static void write_csv(const struct fa_build_table *t, FILE *out)
{
	for (size_t c = 0; c < sizeof csv_cols / sizeof csv_cols[0]; c++)
		fprintf(out, "%s%s", c ? "," : "", csv_cols[c]);
	fprintf(out, "\n");
	for (int i = 0; i < t->n; i++) {
		const struct fa_build_row *r = &t->rows[i];
		fprintf(out, "%lld,", (long long)t->id);
		fa_table_csv_text(out, r->source);
		fputc(',', out);
		fa_table_csv_text(out, r->arch);
		fputc(',', out);
		fa_table_csv_text(out, r->family);
		fputc(',', out);
		fa_table_csv_text(out, fa_bm_status_name(r->status));
		fputc(',', out);
		fa_table_csv_text(out, r->error);
		fputc(',', out);
		fa_table_csv_real(out, r->compile_s);
		fputc(',', out);
		fa_table_csv_text(out, r->symbol);
		fputc(',', out);
		fa_table_csv_text(out, r->name);
		long long nums[] = {r->regs, r->sgprs, r->shared_bytes, r->scratch_bytes,
				    r->spill_bytes, r->spill_regs, r->matrix_count};
		for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
			fputc(',', out);
			csv_num(out, nums[k]);
		}
		fputc(',', out);
		fa_table_csv_text(out, r->matrix);
		fputc(',', out);
		fa_table_csv_text(out, r->isa_from);
		fputc('\n', out);
	}
}

static void json_str(FILE *out, const char *key, const char *v, int comma)
{
	fprintf(out, "%s\"%s\": ", comma ? ", " : "", key);
	if (v)
		fa_json_string(out, v);
	else
		fputs("null", out);
}

static void json_num(FILE *out, const char *key, long long v)
{
	fprintf(out, ", \"%s\": ", key);
	if (v >= 0)
		fprintf(out, "%lld", v);
	else
		fputs("null", out);
}

static void write_json(const struct fa_build_table *t, FILE *out)
{
	fprintf(out, "{\"schema_version\": %d, \"build\": {\"id\": %lld", FA_JSON_SCHEMA_VERSION,
		(long long)t->id);
	json_str(out, "started_at", t->started_at, 1);
	json_str(out, "finished_at", t->finished_at, 1);
	json_str(out, "git_commit", t->git_commit, 1);
	json_str(out, "host", t->host, 1);
	json_str(out, "label", t->label, 1);
	json_str(out, "status", t->status, 1);
	json_str(out, "tools", t->tools, 1);
	fprintf(out, "},\n\"results\": [");
	for (int i = 0; i < t->n; i++) {
		const struct fa_build_row *r = &t->rows[i];
		fprintf(out, "%s\n  {", i ? "," : "");
		json_str(out, "source", r->source, 0);
		json_str(out, "arch", r->arch, 1);
		json_str(out, "family", r->family, 1);
		json_str(out, "status", fa_bm_status_name(r->status), 1);
		json_str(out, "error", r->error, 1);
		fprintf(out, ", \"compile_s\": ");
		fa_table_json_real(out, r->compile_s);
		json_str(out, "symbol", r->symbol, 1);
		json_str(out, "name", r->name, 1);
		json_num(out, "regs", r->regs);
		json_num(out, "sgprs", r->sgprs);
		json_num(out, "shared_bytes", r->shared_bytes);
		json_num(out, "scratch_bytes", r->scratch_bytes);
		json_num(out, "spill_bytes", r->spill_bytes);
		json_num(out, "spill_regs", r->spill_regs);
		json_num(out, "matrix_count", r->matrix_count);
		json_str(out, "matrix", r->matrix, 1);
		json_str(out, "isa_from", r->isa_from, 1);
		fputc('}', out);
	}
	fprintf(out, "\n]}\n");
}

/* fa_table_write_text's writers of the md and the csv */
static enum fa_rc md_text(FILE *m, const void *t, struct fa_err *err)
{
	return write_md(t, m, err);
}

static enum fa_rc csv_text(FILE *m, const void *t, struct fa_err *err)
{
	(void)err;
	write_csv(t, m);
	return FA_OK;
}

enum fa_rc fa_build_report_write(const struct fa_build_table *t, int format, FILE *out,
				 struct fa_err *err)
{
	switch (format) {
	case FA_FMT_MD:
	case FA_FMT_CSV:
		/* through memory, every byte then valid UTF-8 (json escapes its own) */
		return fa_table_write_text(out, format == FA_FMT_MD ? md_text : csv_text, t,
					   "the build report", err);
	case FA_FMT_JSON: write_json(t, out); return FA_OK;
	}
	return fa_err_set(err, FA_ERR_USAGE, "build-matrix reports are md, csv or json");
}

/* ---- The gate ---------------------------------------------------------------- */

static int grew(long long ref, long long head)
{
	return head > (ref > 0 ? ref : 0);
}

int fa_build_gate(const struct fa_build_table *ref, const struct fa_build_table *head, FILE *out)
{
	int n = 0;
	for (int i = 0; i < ref->n; i++) {
		const struct fa_build_row *r = &ref->rows[i], *h;
		if (r->status != FA_BM_OK)
			continue;
		if (!r->symbol) {
			h = unit_row(head, r->source, r->arch);
			if (!h)
				fprintf(out, "note: %s for %s: not in build-matrix run %lld\n", r->source,
					r->arch, (long long)head->id);
			else if (h->status == FA_BM_SKIPPED)
				fprintf(out, "note: %s for %s: not compiled (skipped: %s)\n", r->source,
					r->arch, h->error ? h->error : "");
			else if (h->status == FA_BM_FAILED) {
				fprintf(out, "regression: %s for %s: stopped compiling: %s\n", r->source,
					r->arch, h->error ? h->error : "");
				n++;
			}
			continue;
		}
		h = unit_row(head, r->source, r->arch);
		if (!h || h->status != FA_BM_OK)
			continue; /* said above, for its unit */
		h = kernel_row(head, r, r->arch);
		if (!h) {
			fprintf(out, "note: %s for %s: kernel %s is gone\n", r->source, r->arch,
				row_name(r));
			continue;
		}
		if (grew(r->spill_bytes, h->spill_bytes)) {
			fprintf(out, "regression: %s for %s: %s: spill stores %lld -> %lld bytes\n",
				r->source, r->arch, row_name(r), r->spill_bytes > 0 ? r->spill_bytes : 0,
				h->spill_bytes);
			n++;
		}
		if (grew(r->spill_regs, h->spill_regs)) {
			fprintf(out, "regression: %s for %s: %s: spilled registers %lld -> %lld\n",
				r->source, r->arch, row_name(r), r->spill_regs > 0 ? r->spill_regs : 0,
				h->spill_regs);
			n++;
		}
		if (grew(r->scratch_bytes, h->scratch_bytes)) {
			fprintf(out, "regression: %s for %s: %s: scratch %lld -> %lld bytes\n",
				r->source, r->arch, row_name(r),
				r->scratch_bytes > 0 ? r->scratch_bytes : 0, h->scratch_bytes);
			n++;
		}
		if (r->matrix_count > 0 && h->matrix_count == 0) {
			fprintf(out, "regression: %s for %s: %s: matrix instructions gone (%lld %s -> none)\n",
				r->source, r->arch, row_name(r), r->matrix_count,
				r->matrix ? r->matrix : "");
			n++;
		}
	}
	return n;
}
