/* import_csv.c - the CSV reader of import (RFC 4180 quoting): "# key:
 * value" run header lines, a header row of column names, then a result per
 * row, each cell with its file:line:col.
 */
#include "import_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"

/* ---- CSV ---- */

struct csv {
	struct ctx *cx;
	const char *p, *end;
	const char *line_start;
	int line;
	struct fa_utf8_cols cols; /* the columns counted along the line */
	/* the run fields the "# key: value" lines gave, and their lines */
	struct {
		const char *name;
		int line;
	} given[32];
	int n_given;
};

/* The file:line:col of at, on the current line. */
static struct fa_loc cloc(struct csv *c, const char *at)
{
	struct fa_loc l = {c->cx->file, c->line, fa_utf8_col_next(&c->cols, c->line_start, at)};
	return l;
}

/* 1 when the byte at p (before end) is a control character a cell may not
 * hold, as a JSON string may not: below 0x20, except a tab, a line break
 * (inside quotes) and the CR of a CRLF. */
static int csv_control(const char *p, const char *end)
{
	unsigned char ch = (unsigned char)*p;
	return ch < 0x20 && ch != '\t' && ch != '\n' &&
	       !(ch == '\r' && (p + 1 == end || p[1] == '\n'));
}

static enum fa_rc csv_control_err(struct csv *c, const char *at, const char *where)
{
	struct fa_loc l = cloc(c, at);
	return fa_err_at(c->cx->err, &l, "control character 0x%02x in %s", (unsigned char)*at,
			 where);
}

/* One cell at c->p: *v is its text (IK_RAW) or IK_NULL when empty. Leaves
 * c->p on the ',' or newline (or the end) after it. */
static enum fa_rc csv_cell(struct csv *c, struct ival *v)
{
	struct fa_loc l;
	memset(v, 0, sizeof *v);
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
	l = cloc(c, c->p);
	if (c->p < c->end && *c->p == '"') {
		const char *q = ++c->p, *text = c->p;
		size_t n = 0;
		char *buf, *o;
		struct fa_loc start = l;
		/* the length first (a quoted cell may span lines) */
		for (; q < c->end; q++) {
			if (*q == '"') {
				if (q + 1 < c->end && q[1] == '"') {
					q++;
					n++;
					continue;
				}
				break;
			}
			n++;
		}
		if (q >= c->end)
			return fa_err_at(c->cx->err, &start, "unterminated quoted cell");
		if (!(buf = fa_arena_alloc(&c->cx->m->arena, n + 1)))
			return fa_import_nomem(c->cx);
		for (o = buf; c->p < q; c->p++) {
			if (csv_control(c->p, c->end))
				return csv_control_err(c, c->p, "a cell");
			if (*c->p == '\n') {
				c->line++;
				c->line_start = c->p + 1;
			}
			*o++ = *c->p;
			if (*c->p == '"')
				c->p++; /* "" is one quote */
		}
		c->p++; /* the closing quote */
		while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
			c->p++;
		if (c->p < c->end && *c->p != ',' && *c->p != '\n') {
			l = cloc(c, c->p);
			return fa_err_at(c->cx->err, &l, "expected ',' after a quoted cell");
		}
		start.col++; /* point at the text, past the quote */
		v->kind = buf[0] ? IK_RAW : IK_NULL;
		v->s = buf;
		v->loc = start;
		v->src = text;
		v->esc = IE_CSV;
		return FA_OK;
	}
	{
		const char *s = c->p, *e;
		while (c->p < c->end && *c->p != ',' && *c->p != '\n') {
			if (*c->p == '"') {
				l = cloc(c, c->p);
				return fa_err_at(c->cx->err, &l,
						 "quote inside an unquoted cell (quote the whole cell)");
			}
			if (csv_control(c->p, c->end))
				return csv_control_err(c, c->p, "a cell");
			c->p++;
		}
		for (e = c->p; e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'); e--)
			;
		v->loc = l;
		v->src = s;
		v->kind = e > s ? IK_RAW : IK_NULL;
		if (!(v->s = fa_import_strndup(&c->cx->m->arena, s, (size_t)(e - s))))
			return fa_import_nomem(c->cx);
		return FA_OK;
	}
}

/* One record: its cells (arena) up to and past its newline. */
static enum fa_rc csv_record(struct csv *c, struct ival **cells, int32_t *n)
{
	int32_t cap = 16, k = 0;
	struct ival *v = fa_arena_alloc(&c->cx->m->arena, (size_t)cap * sizeof *v);
	enum fa_rc rc;
	if (!v)
		return fa_import_nomem(c->cx);
	for (;;) {
		if (k == cap) {
			struct ival *nv = fa_arena_alloc(&c->cx->m->arena, (size_t)cap * 2 * sizeof *nv);
			if (!nv)
				return fa_import_nomem(c->cx);
			memcpy(nv, v, (size_t)k * sizeof *nv);
			v = nv;
			cap *= 2;
		}
		if ((rc = csv_cell(c, &v[k])) != FA_OK)
			return rc;
		for (const char *q = v[k].s, *e = q + strlen(q); q < e;) {
			int len = fa_utf8_len((const unsigned char *)q, (const unsigned char *)e);
			if (!len)
				return fa_err_at(c->cx->err, &v[k].loc, "invalid UTF-8 in a cell");
			q += len;
		}
		k++;
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			continue;
		}
		break;
	}
	if (c->p < c->end) { /* the newline */
		c->p++;
		c->line++;
		c->line_start = c->p;
	}
	*cells = v;
	*n = k;
	return FA_OK;
}

/* A "# key: value" line above the header: a run field when key is one (or
 * close enough to be a typo of one); any other comment is skipped. */
static enum fa_rc csv_comment(struct csv *c, const char *hash, const char *le)
{
	const char *p = hash + 1, *ks, *ke, *vs, *ve;
	struct fa_loc kl, vl;
	struct ival v;
	char *name;
	while (p < le && (*p == ' ' || *p == '\t'))
		p++;
	ks = p;
	while (p < le && ((*p >= 'a' && *p <= 'z') || *p == '_'))
		p++;
	ke = p;
	if (ke == ks || p >= le || *p != ':')
		return FA_OK;
	if (!(name = fa_import_strndup(&c->cx->m->arena, ks, (size_t)(ke - ks))))
		return fa_import_nomem(c->cx);
	kl = cloc(c, ks);
	/* a comment that does not look like a header field stays a comment */
	if (!fa_import_header_field_near(name))
		return FA_OK;
	/* a field given twice is an error, as a duplicate JSON field is */
	for (int i = 0; i < c->n_given; i++)
		if (strcmp(c->given[i].name, name) == 0)
			return fa_err_at(c->cx->err, &kl, "duplicate run field '%s' (first on line %d)",
					 name, c->given[i].line);
	if (fa_import_header_field_is(name) &&
	    c->n_given < (int)(sizeof c->given / sizeof c->given[0])) {
		c->given[c->n_given].name = name;
		c->given[c->n_given++].line = c->line;
	}
	for (vs = p + 1; vs < le && (*vs == ' ' || *vs == '\t'); vs++)
		;
	for (ve = le; ve > vs && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r'); ve--)
		;
	for (const char *q = vs; q < ve; q++)
		if (csv_control(q, le))
			return csv_control_err(c, q, "a header line");
	vl = cloc(c, vs);
	memset(&v, 0, sizeof v);
	v.kind = ve > vs ? IK_RAW : IK_NULL;
	v.loc = vl;
	v.src = vs;
	if (!(v.s = fa_import_strndup(&c->cx->m->arena, vs, (size_t)(ve - vs))))
		return fa_import_nomem(c->cx);
	return fa_import_take_header_field(c->cx, name, &kl, &v);
}

enum fa_rc fa_import_parse_csv(struct ctx *cx, const char *text, size_t len)
{
	struct csv c = {cx, text, text + len, text, 1, {0}, {{0}}, 0};
	struct ival *head = NULL, *cells;
	int32_t n_head = 0, n;
	enum fa_rc rc;
	while (c.p < c.end) {
		const char *nl = memchr(c.p, '\n', (size_t)(c.end - c.p));
		const char *le = nl ? nl : c.end, *q = c.p;
		while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == le || (!head && *q == '#')) {
			if (q < le && (rc = csv_comment(&c, q, le)) != FA_OK)
				return rc;
			c.p = nl ? nl + 1 : c.end;
			c.line++;
			c.line_start = c.p;
			continue;
		}
		{
			int rec_line = c.line;
			if ((rc = csv_record(&c, &cells, &n)) != FA_OK)
				return rc;
			if (!head) {
				for (int32_t k = 0; k < n; k++) {
					const struct ival *h = &cells[k];
					if (h->kind == IK_NULL)
						return fa_err_at(cx->err, &h->loc, "empty column name");
					if (!fa_import_row_field_known(h->s) &&
					    !fa_import_report_only(h->s) && strcmp(h->s, "case_key") != 0)
						return fa_import_unknown_field(cx, &h->loc, "column", h->s, 0);
					for (int32_t i = 0; i < k; i++)
						if (strcmp(cells[i].s, h->s) == 0)
							return fa_err_at(cx->err, &h->loc,
									 "duplicate column '%s' (also column %d)",
									 h->s, i + 1);
				}
				head = cells;
				n_head = n;
				continue;
			}
			struct fa_loc rl = {cx->file, rec_line, 1};
			if (n != n_head)
				return fa_err_at(cx->err, &rl, "row has %d cells, the header has %d", n,
						 n_head);
			struct ival obj;
			struct ifield *f = fa_arena_alloc(&cx->m->arena, (size_t)n * sizeof *f);
			if (!f)
				return fa_import_nomem(cx);
			for (int32_t k = 0; k < n; k++) {
				f[k].name = head[k].s;
				f[k].loc = cells[k].loc;
				f[k].v = cells[k];
			}
			memset(&obj, 0, sizeof obj);
			obj.kind = IK_OBJ;
			obj.fields = f;
			obj.n = n;
			obj.loc = rl;
			if ((rc = fa_import_take_row(cx, &obj, &rl)) != FA_OK)
				return rc;
		}
	}
	if (!head)
		return fa_err_set(cx->err, FA_ERR_INPUT, "'%s' has no header row", cx->file);
	return FA_OK;
}

