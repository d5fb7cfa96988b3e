/* import_json.c - the JSON lines reader of import: one JSON value per line
 * (RFC 8259 strings with escapes and UTF-8 checked, numbers kept as their
 * literal text), each value with its file:line:col, a line at a time:
 * {"run": {...}} first, then a result object per line.
 */
#include "import_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"
#include "../base/util.h"

/* JSON nesting a result row may have: an object holding lists of numbers is
 * depth 2; anything much deeper is not a result row. */
#define IMPORT_MAX_DEPTH 8

/* ---- JSON: one value per line ---- */

struct jp {
	struct ctx *cx;
	const char *line_start, *p, *end; /* the line, without its newline */
	int line;
	int depth;
	struct fa_utf8_cols cols; /* jloc's count along the line */
};

static struct fa_loc jloc(struct jp *j, const char *at)
{
	struct fa_loc l = {j->cx->file, j->line, fa_utf8_col_next(&j->cols, j->line_start, at)};
	return l;
}

static void jskip(struct jp *j)
{
	/* a newline only occurs inside a whole-file document (a report's JSON):
	 * JSON lines hand the parser one line at a time */
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n')) {
		if (*j->p == '\n') {
			j->line++;
			j->line_start = j->p + 1;
		}
		j->p++;
	}
}

static enum fa_rc jerr_char(struct jp *j, const char *expected)
{
	struct fa_loc l = jloc(j, j->p);
	unsigned char c;
	if (j->p >= j->end)
		return fa_err_at(j->cx->err, &l, "%s, got the end of the line", expected);
	c = (unsigned char)*j->p;
	if (c >= 0x20 && c < 0x7f)
		return fa_err_at(j->cx->err, &l, "%s, got '%c'", expected, c);
	return fa_err_at(j->cx->err, &l, "%s, got byte 0x%02x", expected, c);
}

/* Four hex digits at p, or -1. */
static long hex4(const char *p, const char *end)
{
	long v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int h = fa_hex_digit((unsigned char)p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static char *put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | (cp >> 12 & 0x3f));
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* A string at j->p (on its opening quote): *out is the decoded text. */
static enum fa_rc jstring(struct jp *j, const char **out)
{
	const char *start = j->p++, *q;
	char *buf, *o;
	struct fa_loc l;
	/* find the closing quote first: the decoded text is never longer */
	for (q = j->p; q < j->end && *q != '"'; q++)
		if (*q == '\\' && q + 1 < j->end)
			q++;
	if (q >= j->end) {
		l = jloc(j, start);
		return fa_err_at(j->cx->err, &l, "unterminated string");
	}
	if (!(buf = fa_arena_alloc(&j->cx->m->arena, (size_t)(q - j->p) + 1)))
		return fa_import_nomem(j->cx);
	o = buf;
	while (*j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		if (c < 0x20) {
			l = jloc(j, j->p);
			return fa_err_at(j->cx->err, &l, "control character 0x%02x in a string", c);
		}
		if (c != '\\') {
			int n = fa_utf8_len((const unsigned char *)j->p, (const unsigned char *)j->end);
			if (!n) {
				l = jloc(j, j->p);
				return fa_err_at(j->cx->err, &l, "invalid UTF-8 in a string");
			}
			memcpy(o, j->p, (size_t)n);
			o += n;
			j->p += n;
			continue;
		}
		l = jloc(j, j->p);
		switch (j->p[1]) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b':
		case 'f': /* stored and printed: as CSV, text holds no control characters but
			     tabs and line breaks */
			return fa_err_at(j->cx->err, &l,
					 "control character 0x%02x (escaped '\\%c') in a string: only "
					 "tabs and line breaks are kept",
					 j->p[1] == 'b' ? 0x08 : 0x0c, j->p[1]);
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			long cp = hex4(j->p + 2, j->end), lo;
			if (cp < 0)
				return fa_err_at(j->cx->err, &l, "\\u needs four hex digits");
			if (cp == 0)
				return fa_err_at(j->cx->err, &l, "\\u0000 (NUL) is not allowed in a string");
			if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7f)
				return fa_err_at(j->cx->err, &l,
						 "control character 0x%02lx (escaped) in a string: only "
						 "tabs and line breaks are kept",
						 cp);
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fa_err_at(j->cx->err, &l, "lone low surrogate \\u%04lx", cp);
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (j->p + 12 > j->end || j->p[6] != '\\' || j->p[7] != 'u' ||
				    (lo = hex4(j->p + 8, j->end)) < 0xdc00 || lo > 0xdfff)
					return fa_err_at(j->cx->err, &l,
							 "high surrogate \\u%04lx without its low half", cp);
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				j->p += 6;
			}
			o = put_utf8(o, (uint32_t)cp);
			j->p += 4;
			break;
		}
		default:
			if ((unsigned char)j->p[1] >= 0x20 && (unsigned char)j->p[1] < 0x7f)
				return fa_err_at(j->cx->err, &l, "invalid escape '\\%c'", j->p[1]);
			return fa_err_at(j->cx->err, &l, "invalid escape");
		}
		j->p += 2;
	}
	j->p++;
	*o = '\0';
	*out = buf;
	return FA_OK;
}

/* A number at j->p, checked against JSON's grammar; its literal text. */
static enum fa_rc jnumber(struct jp *j, const char **out)
{
	const char *s = j->p, *p = j->p;
	struct fa_loc l = jloc(j, s);
	if (p < j->end && *p == '-')
		p++;
	if (p < j->end && *p == '0') {
		p++;
	} else if (p < j->end && *p >= '1' && *p <= '9') {
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	} else {
		return fa_err_at(j->cx->err, &l, "invalid number");
	}
	if (p < j->end && *p == '.') {
		p++;
		if (p >= j->end || *p < '0' || *p > '9')
			return fa_err_at(j->cx->err, &l, "invalid number: digits must follow '.'");
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || *p < '0' || *p > '9')
			return fa_err_at(j->cx->err, &l, "invalid number: digits must follow the exponent");
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && ((*p >= '0' && *p <= '9') || *p == '.' || (*p >= 'a' && *p <= 'z') ||
			   (*p >= 'A' && *p <= 'Z')))
		return fa_err_at(j->cx->err, &l, "invalid number '%.*s'", (int)(p - s + 1), s);
	j->p = p;
	if (!(*out = fa_import_strndup(&j->cx->m->arena, s, (size_t)(p - s))))
		return fa_import_nomem(j->cx);
	return FA_OK;
}

static enum fa_rc jvalue(struct jp *j, struct ival *v);

static enum fa_rc jarray(struct jp *j, struct ival *v)
{
	struct ival *items = NULL;
	int32_t n = 0, cap = 0;
	enum fa_rc rc;
	j->p++;
	jskip(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		v->items = NULL;
		v->n = 0;
		return FA_OK;
	}
	for (;;) {
		if (n == cap) {
			int32_t nc = cap ? cap * 2 : 8;
			struct ival *ni = fa_arena_alloc(&j->cx->m->arena, (size_t)nc * sizeof *ni);
			if (!ni)
				return fa_import_nomem(j->cx);
			if (n)
				memcpy(ni, items, (size_t)n * sizeof *ni);
			items = ni;
			cap = nc;
		}
		jskip(j);
		if ((rc = jvalue(j, &items[n])) != FA_OK)
			return rc;
		n++;
		jskip(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			break;
		}
		return jerr_char(j, "expected ',' or ']' in a list");
	}
	v->items = items;
	v->n = n;
	return FA_OK;
}

/* The names seen in an object of many fields: an open-addressing table of
 * field indices + 1 (arena), so that finding a duplicate stays linear in a
 * line of half a million fields (a plain scan took minutes). */
struct seen {
	int32_t *slot;
	size_t cap;
};

#define SEEN_SCAN_MAX 32 /* fewer fields than this: a plain scan */

/* The index in f[0..n) of a field called name, -1 if none, -2 when out of
 * memory; s grows with f (which holds n fields). */
static int32_t field_seen(struct jp *j, struct seen *s, const struct ifield *f, int32_t n,
			  const char *name)
{
	size_t i;
	if (n < SEEN_SCAN_MAX) {
		for (int32_t k = 0; k < n; k++)
			if (strcmp(f[k].name, name) == 0)
				return k;
		return -1;
	}
	if ((size_t)n * 2 >= s->cap) { /* (re)build with room for twice as many */
		size_t cap = 256;
		while (cap <= (size_t)n * 4)
			cap *= 2;
		if (!(s->slot = fa_arena_alloc(&j->cx->m->arena, cap * sizeof *s->slot)))
			return -2;
		s->cap = cap;
		for (int32_t k = 0; k < n; k++) {
			for (i = fa_fnv1a64(FA_FNV_OFFSET, f[k].name, strlen(f[k].name)) & (cap - 1);
			     s->slot[i]; i = (i + 1) & (cap - 1))
				;
			s->slot[i] = k + 1;
		}
	} else { /* add the field before this one, the last not yet in */
		const char *last = f[n - 1].name;
		for (i = fa_fnv1a64(FA_FNV_OFFSET, last, strlen(last)) & (s->cap - 1); s->slot[i];
		     i = (i + 1) & (s->cap - 1))
			;
		s->slot[i] = n;
	}
	for (i = fa_fnv1a64(FA_FNV_OFFSET, name, strlen(name)) & (s->cap - 1); s->slot[i];
	     i = (i + 1) & (s->cap - 1))
		if (strcmp(f[s->slot[i] - 1].name, name) == 0)
			return s->slot[i] - 1;
	return -1;
}

static enum fa_rc jobject(struct jp *j, struct ival *v)
{
	struct ifield *f = NULL;
	struct seen seen = {NULL, 0};
	int32_t n = 0, cap = 0, k;
	enum fa_rc rc;
	j->p++;
	jskip(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		v->fields = NULL;
		v->n = 0;
		return FA_OK;
	}
	for (;;) {
		struct fa_loc kl;
		const char *name;
		jskip(j);
		if (j->p >= j->end || *j->p != '"')
			return jerr_char(j, "expected a field name in double quotes");
		kl = jloc(j, j->p);
		if ((rc = jstring(j, &name)) != FA_OK)
			return rc;
		if ((k = field_seen(j, &seen, f, n, name)) == -2)
			return fa_import_nomem(j->cx);
		if (k >= 0)
			return fa_err_at(j->cx->err, &kl, "duplicate field '%s' (first at column %d)",
					 name, f[k].loc.col);
		jskip(j);
		if (j->p >= j->end || *j->p != ':')
			return jerr_char(j, "expected ':' after the field name");
		j->p++;
		jskip(j);
		if (n == cap) {
			int32_t nc = cap ? cap * 2 : 16;
			struct ifield *nf = fa_arena_alloc(&j->cx->m->arena, (size_t)nc * sizeof *nf);
			if (!nf)
				return fa_import_nomem(j->cx);
			if (n)
				memcpy(nf, f, (size_t)n * sizeof *nf);
			f = nf;
			cap = nc;
		}
		f[n].name = name;
		f[n].loc = kl;
		if ((rc = jvalue(j, &f[n].v)) != FA_OK)
			return rc;
		n++;
		jskip(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			break;
		}
		return jerr_char(j, "expected ',' or '}' after a field");
	}
	v->fields = f;
	v->n = n;
	return FA_OK;
}

static enum fa_rc jvalue(struct jp *j, struct ival *v)
{
	static const struct {
		const char *word;
		int kind;
	} words[] = {{"true", IK_BOOL}, {"false", IK_BOOL}, {"null", IK_NULL}};
	enum fa_rc rc;
	memset(v, 0, sizeof *v);
	jskip(j);
	v->loc = jloc(j, j->p);
	if (j->p >= j->end)
		return jerr_char(j, "expected a value");
	switch (*j->p) {
	case '{':
	case '[':
		if (j->depth >= IMPORT_MAX_DEPTH)
			return fa_err_at(j->cx->err, &v->loc, "values nested deeper than %d",
					 IMPORT_MAX_DEPTH);
		j->depth++;
		v->kind = *j->p == '{' ? IK_OBJ : IK_LIST;
		rc = v->kind == IK_OBJ ? jobject(j, v) : jarray(j, v);
		j->depth--;
		return rc;
	case '"':
		v->kind = IK_STR;
		v->src = j->p + 1;
		v->esc = IE_JSON;
		return jstring(j, &v->s);
	case '-':
		if ((size_t)(j->end - j->p) >= 4 && memcmp(j->p, "-Inf", 4) == 0)
			return fa_err_at(j->cx->err, &v->loc,
					 "NaN and Infinity are not JSON numbers (write null for unknown)");
		/* fall through */
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		v->kind = IK_NUM;
		return jnumber(j, &v->s);
	default:
		if ((size_t)(j->end - j->p) >= 3 &&
		    (memcmp(j->p, "NaN", 3) == 0 || memcmp(j->p, "Inf", 3) == 0))
			return fa_err_at(j->cx->err, &v->loc,
					 "NaN and Infinity are not JSON numbers (write null for unknown)");
		for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
			size_t n = strlen(words[i].word);
			if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i].word, n) == 0) {
				j->p += n;
				v->kind = words[i].kind;
				v->s = words[i].word;
				return FA_OK;
			}
		}
		return jerr_char(j, "expected a value");
	}
}

/* ---- JSON lines ---- */

enum fa_rc fa_import_parse_jsonl(struct ctx *cx, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int line = 0;
	enum fa_rc rc;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct jp j = {cx, p, p, le, ++line, 0, {0}};
		struct ival v;
		jskip(&j);
		if (j.p == le) { /* a blank line */
			p = nl ? nl + 1 : end;
			continue;
		}
		if (*j.p != '{')
			return jerr_char(&j, "expected a JSON object (one result per line)");
		if ((rc = jvalue(&j, &v)) != FA_OK)
			return rc;
		jskip(&j);
		if (j.p < le)
			return jerr_char(&j, "expected the end of the line after the object");
		if (v.n == 1 && strcmp(v.fields[0].name, "run") == 0 && !cx->header_done) {
			const struct ival *h = &v.fields[0].v;
			char buf[80];
			if (h->kind != IK_OBJ)
				return fa_err_at(cx->err, &h->loc, "expected an object for 'run', got %s",
						 fa_import_ival_words(h, buf, sizeof buf));
			for (int32_t k = 0; k < h->n; k++)
				if ((rc = fa_import_take_header_field(cx, h->fields[k].name, &h->fields[k].loc,
							    &h->fields[k].v)) != FA_OK)
					return rc;
		} else {
			struct fa_loc rl = v.loc;
			if ((rc = fa_import_take_row(cx, &v, &rl)) != FA_OK)
				return rc;
		}
		cx->header_done = 1;
		p = nl ? nl + 1 : end;
	}
	return FA_OK;
}


/* A report of fabench's own (report --format json): one document,
 * {"schema_version": 2, "run": {...}, "baseline": ..., "results": [{"case":
 * {...}, "kernel": ...}, ...]}. Each result with its case's fields becomes
 * a row; the run's fields that a header has make the header. */
enum fa_rc fa_import_parse_report_json(struct ctx *cx, const char *text, size_t len)
{
	struct jp j = {cx, text, text, text + len, 1, 0, {0}};
	const struct ival *results = NULL, *run = NULL, *version = NULL;
	struct ival v;
	char buf[80];
	enum fa_rc rc;
	jskip(&j);
	if ((rc = jvalue(&j, &v)) != FA_OK)
		return rc;
	jskip(&j);
	if (j.p < j.end)
		return jerr_char(&j, "expected the end of the file after the report");
	for (int32_t k = 0; k < v.n; k++) {
		const struct ifield *f = &v.fields[k];
		if (strcmp(f->name, "schema_version") == 0)
			version = &f->v;
		else if (strcmp(f->name, "run") == 0)
			run = &f->v;
		else if (strcmp(f->name, "results") == 0)
			results = &f->v;
	}
	/* a report's members are the same in versions 1 and 2 (docs/json.md) */
	if (!version || !version->s || (strcmp(version->s, "1") != 0 && strcmp(version->s, "2") != 0))
		return fa_err_at(cx->err, version ? &version->loc : &v.loc,
				 "report schema_version '%s' is not 1 or 2, the versions this fabench "
				 "imports",
				 version && version->s ? version->s : "(missing)");
	if (!results || results->kind != IK_LIST)
		return fa_err_at(cx->err, results ? &results->loc : &v.loc,
				 "expected a list for 'results', got %s",
				 results ? fa_import_ival_words(results, buf, sizeof buf) : "nothing");
	for (int32_t k = 0; run && run->kind == IK_OBJ && k < run->n; k++) {
		const struct ifield *f = &run->fields[k];
		if (fa_import_header_field_is(f->name) &&
		    (rc = fa_import_take_header_field(cx, f->name, &f->loc, &f->v)) != FA_OK)
			return rc;
	}
	for (int32_t i = 0; i < results->n; i++) {
		const struct ival *r = &results->items[i];
		const struct ival *c = NULL;
		struct ifield *f;
		struct ival row;
		int32_t n = 0, cap;
		if (r->kind != IK_OBJ)
			return fa_err_at(cx->err, &r->loc, "expected an object for a result, got %s",
					 fa_import_ival_words(r, buf, sizeof buf));
		for (int32_t k = 0; k < r->n; k++)
			if (strcmp(r->fields[k].name, "case") == 0)
				c = &r->fields[k].v;
		if (!c || c->kind != IK_OBJ)
			return fa_err_at(cx->err, &r->loc, "missing object 'case' in a result");
		cap = r->n + c->n;
		if (!(f = fa_arena_alloc(&cx->m->arena, (size_t)cap * sizeof *f)))
			return fa_import_nomem(cx);
		for (int32_t k = 0; k < c->n; k++) {
			f[n] = c->fields[k];
			/* per-sequence lists are written "a/b/c", as in a CSV cell */
			if (f[n].v.kind == IK_STR && fa_import_param_is_list(f[n].name))
				f[n].v.kind = IK_RAW;
			n++;
		}
		for (int32_t k = 0; k < r->n; k++)
			if (strcmp(r->fields[k].name, "case") != 0)
				f[n++] = r->fields[k];
		row = *r;
		row.fields = f;
		row.n = n;
		if ((rc = fa_import_take_row(cx, &row, &r->loc)) != FA_OK)
			return rc;
	}
	return FA_OK;
}

/* 1 when text is one JSON document rather than JSON lines: its first line
 * holds only "{" (as fabench writes a report), or its object's first member
 * is "schema_version" (every document fabench writes opens with it,
 * docs/json.md), so that a report rewritten on one line (jq -c, Python's
 * json.dump) reads as the report it is. */
int fa_import_is_document(const char *text, size_t len)
{
	static const char first[] = "\"schema_version\"";
	const char *p = text, *end = text + len;
	while (p < end && strchr(" \t\r\n", *p))
		p++;
	if (p == end || *p != '{')
		return 0;
	for (p++; p < end && *p != '\n'; p++)
		if (!strchr(" \t\r", *p))
			return (size_t)(end - p) >= sizeof first - 1 &&
			       memcmp(p, first, sizeof first - 1) == 0;
	return 1;
}
