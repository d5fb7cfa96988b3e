/* table.c - markdown, CSV and JSON text, number formats and markdown tables
 * for the report, compare and history writers (table.h).
 */
#include "table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"
#include "../base/util.h"
#include "../suite/suite.h"

/* ---- Text ------------------------------------------------------------------- */

/* What markdown text escapes with a backslash. */
#define MD_SPECIAL "\\`*[]<|"

void fa_table_md_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (strchr(MD_SPECIAL, *s))
			fputc('\\', f);
		fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
	}
}

void fa_table_md_code(FILE *f, const char *s)
{
	int run = 0, longest = 0;
	for (const char *p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	for (int i = 0; i <= longest; i++)
		fputc('`', f);
	fputs(longest ? " " : "", f);
	for (const char *p = s; *p; p++)
		fputc((unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p, f);
	fputs(longest ? " " : "", f);
	for (int i = 0; i <= longest; i++)
		fputc('`', f);
}

void fa_table_write_utf8(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len, *run = p;
	while (p < end) {
		int n = *p < 0x80 ? 1 : fa_utf8_len(p, end);
		if (n > 0) {
			p += n;
			continue;
		}
		fwrite(run, 1, (size_t)(p - run), f);
		fputs("\xef\xbf\xbd", f);
		run = ++p;
	}
	fwrite(run, 1, (size_t)(p - run), f);
}

enum fa_rc fa_table_write_text(FILE *f, fa_table_text_fn fn, const void *ctx,
			       const char *what, struct fa_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	enum fa_rc rc;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing %s", what);
	rc = fn(m, ctx, err);
	if (fclose(m) != 0 && rc == FA_OK)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory writing the text");
	if (rc == FA_OK)
		fa_table_write_utf8(f, buf, len);
	free(buf);
	return rc;
}

void fa_table_csv_text(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void fa_table_csv_real(FILE *f, double x)
{
	char buf[64];
	if (isfinite(x)) {
		fa_table_fmt_real(x, buf, sizeof buf);
		fputs(buf, f);
	}
}

void fa_table_json_real(FILE *f, double x)
{
	char buf[64];
	if (!isfinite(x)) { /* JSON has no NaN or Inf */
		fputs("null", f);
		return;
	}
	fa_table_fmt_real(x, buf, sizeof buf);
	fputs(buf, f);
}

void fa_table_json_tag_open(FILE *f, const struct fa_case_tag *t)
{
	fputs("{\"name\": ", f);
	fa_json_string(f, t->name);
	fprintf(f, ", \"model\": %s, \"layers\": ", t->model ? "true" : "false");
	if (t->layers > 0)
		fprintf(f, "%d", t->layers);
	else
		fputs("null", f);
}

/* ---- Numbers ---------------------------------------------------------------- */

void fa_table_fmt_sig3(double x, char *buf, size_t size)
{
	char e[32];
	int exp10, decimals;
	if (isnan(x)) {
		buf[0] = '\0';
		return;
	}
	if (x == 0 || !isfinite(x)) {
		snprintf(buf, size, "%g", x);
		return;
	}
	/* the exponent after rounding to 3 digits (9.996 -> 1.00e+01) */
	snprintf(e, sizeof e, "%.2e", x);
	exp10 = atoi(strchr(e, 'e') + 1);
	decimals = exp10 >= 2 ? 0 : 2 - exp10;
	snprintf(buf, size, "%.*f", decimals, x);
}

void fa_table_fmt_real(double x, char *buf, size_t size)
{
	if (isnan(x)) {
		buf[0] = '\0';
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

/* ---- Tables ------------------------------------------------------------------ */

enum fa_rc fa_table_init(struct fa_table *t, int ncols, struct fa_err *err)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->right = calloc((size_t)ncols + 1, sizeof *t->right);
	if (!t->right)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a table");
	return FA_OK;
}

/* Appends owned (a malloc'd cell, or NULL when that allocation failed). */
static enum fa_rc table_put(struct fa_table *t, char *owned, struct fa_err *err)
{
	size_t at = (size_t)t->nrows * t->ncols + t->col;
	if (owned && t->col == 0 && (t->nrows + 1) * t->ncols > t->cap) {
		int32_t cap = t->cap ? t->cap * 2 : 16 * t->ncols;
		char **nc = realloc(t->cell, (size_t)cap * sizeof *nc);
		if (!nc) {
			free(owned);
			owned = NULL;
		} else {
			memset(nc + t->cap, 0, (size_t)(cap - t->cap) * sizeof *nc);
			t->cell = nc;
			t->cap = cap;
		}
	}
	if (!owned)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a table");
	t->cell[at] = owned;
	if (++t->col == t->ncols) {
		t->col = 0;
		t->nrows++;
	}
	return FA_OK;
}

enum fa_rc fa_table_add(struct fa_table *t, const char *text, struct fa_err *err)
{
	return table_put(t, strdup(text ? text : ""), err);
}

/* Whether the character at q needs a backslash in a table cell: what ends
 * the cell or starts markup ('|', '<', '`', '*', '\\'), and a ']' that
 * would close a link's text ("](" ); brackets alone stay readable, as in a
 * kernel's label cpu_flash[block_q=32]. */
static int cell_special(const char *q)
{
	return strchr("\\`*<|", *q) || (*q == ']' && q[1] == '(');
}

enum fa_rc fa_table_add_md(struct fa_table *t, const char *text, struct fa_err *err)
{
	const char *s = text ? text : "";
	size_t n = 0;
	char *out, *p;
	for (const char *q = s; *q; q++)
		n += cell_special(q) ? 2 : 1;
	if ((out = malloc(n + 1))) {
		p = out;
		for (const char *q = s; *q; q++) {
			if (cell_special(q))
				*p++ = '\\';
			*p++ = (unsigned char)*q < 0x20 ? ' ' : *q;
		}
		*p = '\0';
	}
	return table_put(t, out, err);
}

enum fa_rc fa_table_add_code(struct fa_table *t, const char *text, struct fa_err *err)
{
	const char *s = text ? text : "";
	int run = 0, longest = 0;
	size_t n = 0;
	for (const char *q = s; *q; q++) {
		run = *q == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
		n += *q == '|' ? 2 : 1;
	}
	char *out = malloc(n + 2 * (size_t)longest + 7), *p = out;
	if (out) {
		for (int i = 0; i <= longest; i++)
			*p++ = '`';
		if (longest)
			*p++ = ' ';
		for (const char *q = s; *q; q++) {
			if (*q == '|')
				*p++ = '\\'; /* a table cell ends at '|' even inside a code span */
			*p++ = (unsigned char)*q < 0x20 ? ' ' : *q;
		}
		if (longest)
			*p++ = ' ';
		for (int i = 0; i <= longest; i++)
			*p++ = '`';
		*p = '\0';
	}
	return table_put(t, out, err);
}

const char *fa_table_cell(const struct fa_table *t, int row, int col)
{
	return t->cell[(size_t)row * t->ncols + col];
}

/* The width of s on a terminal: its UTF-8 characters ("±" is one), not its
 * bytes. */
static int text_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
	int n = 0;
	for (; p < end; n++) {
		int len = fa_utf8_len(p, end);
		p += len > 0 ? len : 1; /* a byte of no sequence: one U+FFFD */
	}
	return n;
}

/* Prints s padded with spaces to w characters, on the left when right. */
static void print_padded(FILE *f, const char *s, int w, int right)
{
	int pad = w - text_width(s);
	if (right)
		for (int i = 0; i < pad; i++)
			fputc(' ', f);
	fputs(s, f);
	if (!right)
		for (int i = 0; i < pad; i++)
			fputc(' ', f);
}

enum fa_rc fa_table_print_md(FILE *f, const struct fa_table *t, struct fa_err *err)
{
	int *w = calloc((size_t)t->ncols + 1, sizeof *w);
	if (!w)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory writing a table");
	for (int j = 0; j < t->ncols; j++) {
		w[j] = 3; /* the shortest separator, "---" */
		for (int i = 0; i < t->nrows; i++) {
			int n = text_width(fa_table_cell(t, i, j));
			w[j] = n > w[j] ? n : w[j];
		}
	}
	for (int row = 0; row < t->nrows; row++) {
		for (int j = 0; j < t->ncols; j++) {
			fputs(j ? " | " : "| ", f);
			print_padded(f, fa_table_cell(t, row, j), w[j], t->right[j] && row);
		}
		fputs(" |\n", f);
		if (row > 0)
			continue;
		for (int j = 0; j < t->ncols; j++) {
			fputs(j ? " | " : "| ", f);
			for (int i = 0; i < w[j] - 1; i++)
				fputc('-', f);
			fputc(t->right[j] ? ':' : '-', f);
		}
		fputs(" |\n", f);
	}
	free(w);
	return FA_OK;
}

void fa_table_free(struct fa_table *t)
{
	for (int i = 0; t->cell && i < t->cap; i++)
		free(t->cell[i]);
	free(t->cell);
	free(t->right);
	memset(t, 0, sizeof *t);
}

/* ---- Params ---- */

int fa_table_params_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		size_t na = strcspn(a, ","), nb = strcspn(b, ",");
		const char *va = memchr(a, '=', na), *vb = memchr(b, '=', nb);
		int c = strncmp(a, b, na < nb ? na : nb);
		if (va && vb && va - a == vb - b && strncmp(a, b, (size_t)(va - a)) == 0) {
			char *ea, *eb;
			double x = strtod(va + 1, &ea), y = strtod(vb + 1, &eb);
			if (ea == a + na && eb == b + nb && ea != va + 1 && eb != vb + 1) {
				c = (x > y) - (x < y);
			}
		} else if (c == 0) {
			c = (na > nb) - (na < nb);
		}
		if (c)
			return c;
		if (na != nb)
			return (na > nb) - (na < nb);
		a += na + (a[na] == ',');
		b += nb + (b[nb] == ',');
	}
	return (*a != 0) - (*b != 0);
}

int fa_table_params_has(const char *params, const char *item, size_t n)
{
	while (params && *params) {
		size_t m = strcspn(params, ",");
		if (m == n && strncmp(params, item, n) == 0)
			return 1;
		params += m + (params[m] == ',');
	}
	return 0;
}
