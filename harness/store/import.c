/* import.c - reading other tools' results (JSON lines or CSV) into fabench
 * cases and results, and storing them (fabench import).
 *
 * Both formats are first turned into the same thing: per row, a list of
 * named values with their file:line:col (struct ival). Case parameters are
 * then checked exactly as a suite's are: each value becomes a YAML scalar or
 * sequence node carrying its location, goes through fa_param_value, and the
 * row's bindings through fa_expand, which applies the suite defaults and
 * validates the combination. Everything is parsed and checked before the
 * database is touched.
 */
#include "import.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "../../kernels/common/fa_rng.h"
#include "../run/data.h"
#include "../suite/expand.h"
#include "../base/util.h"

/* JSON nesting a result row may have: an object holding lists of numbers is
 * depth 2; anything much deeper is not a result row. */
#define IMPORT_MAX_DEPTH 8
/* fa_result.rule is char[16]. */
#define IMPORT_RULE_MAX 15
/* Kernel names appear in table headers and file names: keep them short. */
#define IMPORT_KERNEL_MAX 100

/* ---- values of a row, from either format ---- */

enum ikind {
	IK_NULL,  /* JSON null, or an empty CSV cell: absent */
	IK_RAW,   /* a CSV cell: text that may be a number, a word or a list */
	IK_STR,   /* a JSON string */
	IK_NUM,   /* a JSON number (its literal text) */
	IK_BOOL,  /* JSON true / false */
	IK_LIST,  /* a JSON array */
	IK_OBJ,   /* a JSON object */
};

struct ifield;

struct ival {
	int kind;
	const char *s; /* RAW, STR, NUM, BOOL: the text (decoded for STR) */
	struct fa_loc loc;
	struct ival *items; /* LIST */
	struct ifield *fields; /* OBJ */
	int32_t n;          /* items or fields */
};

struct ifield {
	const char *name;
	struct fa_loc loc;
	struct ival v;
};

/* ---- the fields a row may have besides the case parameters ---- */

enum rfield {
	RF_KERNEL, RF_PARAMS, RF_BACKEND, RF_STATUS, RF_REASON, RF_TIMING,
	RF_MEDIAN, RF_MEAN, RF_MIN, RF_MAX, RF_STDEV, RF_N_SAMPLES, RF_SAMPLES,
	RF_MAX_ABS, RF_MAX_REL, RF_MEAN_ABS, RF_REL_L2, RF_NMSE,
	RF_NAN_COUNT, RF_INF_COUNT, RF_ROWS_CHECKED, RF_ELEMS_CHECKED, RF_RULE,
	RF_KEY, RF_SEED, RF_COUNT
};

enum rtype {
	RT_TEXT,    /* a string */
	RT_MS,      /* a time: a number > 0 */
	RT_STAT,    /* an error statistic: a number >= 0 */
	RT_INT,     /* an integer >= 0 */
	RT_SAMPLES, /* a list of times */
	RT_U64,     /* an integer 0 .. 2^64 - 1 */
};

static const struct {
	const char *name;
	int type;
} rfields[RF_COUNT] = {
	[RF_KERNEL] = {"kernel", RT_TEXT},        [RF_PARAMS] = {"params", RT_TEXT},
	[RF_BACKEND] = {"backend", RT_TEXT},      [RF_STATUS] = {"status", RT_TEXT},
	[RF_REASON] = {"reason", RT_TEXT},        [RF_TIMING] = {"timing", RT_TEXT},
	[RF_MEDIAN] = {"median_ms", RT_MS},       [RF_MEAN] = {"mean_ms", RT_MS},
	[RF_MIN] = {"min_ms", RT_MS},             [RF_MAX] = {"max_ms", RT_MS},
	[RF_STDEV] = {"stdev_ms", RT_STAT},       [RF_N_SAMPLES] = {"n_samples", RT_INT},
	[RF_SAMPLES] = {"samples", RT_SAMPLES},   [RF_MAX_ABS] = {"max_abs", RT_STAT},
	[RF_MAX_REL] = {"max_rel", RT_STAT},      [RF_MEAN_ABS] = {"mean_abs", RT_STAT},
	[RF_REL_L2] = {"rel_l2", RT_STAT},        [RF_NMSE] = {"nmse", RT_STAT},
	[RF_NAN_COUNT] = {"nan_count", RT_INT},   [RF_INF_COUNT] = {"inf_count", RT_INT},
	[RF_ROWS_CHECKED] = {"rows_checked", RT_INT},
	[RF_ELEMS_CHECKED] = {"elems_checked", RT_INT},
	[RF_RULE] = {"rule", RT_TEXT},            [RF_KEY] = {"key", RT_TEXT},
	[RF_SEED] = {"seed", RT_U64},
};

/* The fields of the run header. */
enum hfield {
	HF_SOURCE, HF_BACKEND, HF_DEVICE_NAME, HF_DEVICE_ARCH, HF_DRIVER, HF_RUNTIME, HF_HOST,
	HF_STARTED_AT, HF_SUITE_NAME, HF_SUITE_PATH, HF_SUITE_HASH, HF_LABEL, HF_COMMAND_LINE,
	HF_SEED, HF_COUNT
};

static const char *const hfields[HF_COUNT] = {
	"source",     "backend",    "device_name", "device_arch", "driver",
	"runtime",    "host",       "started_at",  "suite_name",  "suite_path",
	"suite_hash", "label",      "command_line", "seed",
};

static const char *const timing_names[] = {"cpu", "cold", "hot", "graph"};

/* ---- parse state ---- */

/* A string -> index map (open addressing, power-of-two size). */
struct smap {
	const char **keys;
	int32_t *vals;
	size_t cap, n;
};

struct mem {
	struct fa_arena arena;
	yaml_document_t doc; /* the current row's parameter nodes */
	int doc_live;
	struct smap cases;   /* key -> case index */
	struct smap results; /* key \x1f kernel \x1f params -> row index */
	int32_t cap_cases, cap_rows;
};

struct ctx {
	struct fa_import *im;
	struct mem *m;
	const char *file;
	struct fa_err *err;
	int header_done;     /* JSON lines: a row was seen, so no header may follow */
};

static enum fa_rc nomem(struct ctx *cx)
{
	return fa_err_set(cx->err, FA_ERR_NOMEM, "out of memory reading '%s'", cx->file);
}

static char *astrndup(struct fa_arena *a, const char *s, size_t n)
{
	char *d = fa_arena_alloc(a, n + 1);
	if (d)
		memcpy(d, s, n); /* zeroed: already terminated */
	return d;
}

static uint64_t hash_str(const char *s)
{
	return fa_fnv1a64(FA_FNV_OFFSET, s, strlen(s));
}

/* The index stored for key, or -1. */
static int32_t smap_get(const struct smap *m, const char *key)
{
	if (!m->cap)
		return -1;
	for (size_t i = hash_str(key) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (strcmp(m->keys[i], key) == 0)
			return m->vals[i];
	return -1;
}

/* Adds key (which must outlive the map) -> val. 0, or -1 when out of memory. */
static int smap_put(struct smap *m, const char *key, int32_t val)
{
	size_t i;
	if ((m->n + 1) * 2 > m->cap) {
		struct smap g = {NULL, NULL, m->cap ? m->cap * 2 : 64, 0};
		g.keys = calloc(g.cap, sizeof *g.keys);
		g.vals = calloc(g.cap, sizeof *g.vals);
		if (!g.keys || !g.vals) {
			free(g.keys);
			free(g.vals);
			return -1;
		}
		for (size_t k = 0; k < m->cap; k++)
			if (m->keys[k]) {
				for (i = hash_str(m->keys[k]) & (g.cap - 1); g.keys[i]; i = (i + 1) & (g.cap - 1))
					;
				g.keys[i] = m->keys[k];
				g.vals[i] = m->vals[k];
				g.n++;
			}
		free(m->keys);
		free(m->vals);
		*m = g;
	}
	for (i = hash_str(key) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1))
		;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

static void smap_free(struct smap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

/* How a value reads in a message: 16, "16" (a JSON string), 'abc' (a CSV
 * cell), a list, an object, null, nothing. */
static const char *ival_words(const struct ival *v, char *buf, size_t size)
{
	switch (v->kind) {
	case IK_NULL: return "null";
	case IK_LIST: return "a list";
	case IK_OBJ: return "an object";
	case IK_STR:
		if (strlen(v->s) > 60)
			snprintf(buf, size, "\"%.57s...\"", v->s);
		else
			snprintf(buf, size, "\"%s\"", v->s);
		return buf;
	case IK_RAW:
		if (!v->s[0])
			return "nothing";
		if (strlen(v->s) > 60)
			snprintf(buf, size, "'%.57s...'", v->s);
		else
			snprintf(buf, size, "'%s'", v->s);
		return buf;
	default: return v->s; /* a number or true/false, as written */
	}
}

/* The closest field name to name within edit distance 2, or NULL. */
static const char *suggest(const char *name, int header)
{
	const char *best = NULL;
	int bd = 3, d;
	if (header) {
		for (int i = 0; i < HF_COUNT; i++)
			if ((d = fa_edit_distance(name, hfields[i])) < bd) {
				bd = d;
				best = hfields[i];
			}
	} else {
		for (int i = 0; i < FA_P_COUNT; i++)
			if ((d = fa_edit_distance(name, fa_param_name(i))) < bd) {
				bd = d;
				best = fa_param_name(i);
			}
		for (int i = 0; i < RF_COUNT; i++)
			if ((d = fa_edit_distance(name, rfields[i].name)) < bd) {
				bd = d;
				best = rfields[i].name;
			}
	}
	return bd <= 2 ? best : NULL;
}

static enum fa_rc unknown_field(struct ctx *cx, const struct fa_loc *l, const char *what,
				const char *name, int header)
{
	const char *s = suggest(name, header);
	if (s)
		return fa_err_at(cx->err, l, "unknown %s '%s' (did you mean '%s'?)", what, name, s);
	return fa_err_at(cx->err, l, "unknown %s '%s'", what, name);
}

/* ---- JSON: one value per line ---- */

struct jp {
	struct ctx *cx;
	const char *line_start, *p, *end; /* the line, without its newline */
	int line;
	int depth;
};

static struct fa_loc jloc(const struct jp *j, const char *at)
{
	struct fa_loc l = {j->cx->file, j->line, (int)(at - j->line_start) + 1};
	return l;
}

static void jskip(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r'))
		j->p++;
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

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at p, or -1. */
static long hex4(const char *p, const char *end)
{
	long v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
	int n;
	uint32_t cp;
	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if (end - p < n)
		return 0;
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
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
		return nomem(j->cx);
	o = buf;
	while (*j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		if (c < 0x20) {
			l = jloc(j, j->p);
			return fa_err_at(j->cx->err, &l, "control character 0x%02x in a string", c);
		}
		if (c != '\\') {
			int n = utf8_len((const unsigned char *)j->p, (const unsigned char *)j->end);
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
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			long cp = hex4(j->p + 2, j->end), lo;
			if (cp < 0)
				return fa_err_at(j->cx->err, &l, "\\u needs four hex digits");
			if (cp == 0)
				return fa_err_at(j->cx->err, &l, "\\u0000 (NUL) is not allowed in a string");
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
	if (!(*out = astrndup(&j->cx->m->arena, s, (size_t)(p - s))))
		return nomem(j->cx);
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
				return nomem(j->cx);
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

static enum fa_rc jobject(struct jp *j, struct ival *v)
{
	struct ifield *f = NULL;
	int32_t n = 0, cap = 0;
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
		for (int32_t k = 0; k < n; k++)
			if (strcmp(f[k].name, name) == 0)
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
				return nomem(j->cx);
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

/* ---- turning rows into cases and results ---- */

static int kind_is_text(int k)
{
	return k == IK_STR || k == IK_RAW;
}

static int kind_is_number(int k)
{
	return k == IK_NUM || k == IK_RAW;
}

/* The words a value of parameter p must be, for messages. */
static const char *param_expected(int p)
{
	switch (p) {
	case FA_P_DTYPE:
	case FA_P_MASK:
	case FA_P_LAYOUT:
	case FA_P_INPUT:
	case FA_P_PASS: return "a string";
	case FA_P_SCALE: return "a number";
	case FA_P_SEQLENS:
	case FA_P_KV_SEQLENS:
	case FA_P_PREFIX_LENS: return "a list of integers";
	default: return "an integer";
	}
}

static int param_is_list(int p)
{
	return p == FA_P_SEQLENS || p == FA_P_KV_SEQLENS || p == FA_P_PREFIX_LENS;
}

static int param_is_word(int p)
{
	return p == FA_P_DTYPE || p == FA_P_MASK || p == FA_P_LAYOUT || p == FA_P_INPUT ||
	       p == FA_P_PASS;
}

/* A YAML scalar node holding text, marked at l; its id, 0 when out of memory. */
static int add_scalar(struct ctx *cx, const char *text, size_t len, const struct fa_loc *l)
{
	yaml_document_t *doc = &cx->m->doc;
	int id = yaml_document_add_scalar(doc, NULL, (const yaml_char_t *)text, (int)len,
					  YAML_PLAIN_SCALAR_STYLE);
	yaml_node_t *n;
	if (!id || !(n = yaml_document_get_node(doc, id)))
		return 0;
	n->start_mark.line = (size_t)(l->line - 1);
	n->start_mark.column = (size_t)(l->col - 1);
	return id;
}

/* Splits a CSV cell into list items: values separated by '/', ';' or
 * blanks. Sets *items (arena) and *n (0 for a cell of separators only). */
static enum fa_rc split_cell(struct ctx *cx, const struct ival *v, struct ival **items, int32_t *n)
{
	static const char seps[] = "/; \t";
	const char *p = v->s;
	int32_t count = 0, k = 0;
	for (const char *q = p; *q;) {
		q += strspn(q, seps);
		if (*q) {
			count++;
			q += strcspn(q, seps);
		}
	}
	*n = count;
	*items = NULL;
	if (!count)
		return FA_OK;
	if (!(*items = fa_arena_alloc(&cx->m->arena, (size_t)count * sizeof **items)))
		return nomem(cx);
	while (*p) {
		size_t len;
		p += strspn(p, seps);
		if (!*p)
			break;
		len = strcspn(p, seps);
		(*items)[k].kind = IK_RAW;
		(*items)[k].loc = v->loc;
		(*items)[k].loc.col += (int)(p - v->s);
		if (!((*items)[k].s = astrndup(&cx->m->arena, p, len)))
			return nomem(cx);
		k++;
		p += len;
	}
	return FA_OK;
}

/* The YAML node of parameter p's value v, checked for its JSON type first;
 * its id, or 0 with err filled. */
static int param_node(struct ctx *cx, int p, const struct ival *v)
{
	const char *name = fa_param_name(p);
	char buf[80];
	if (param_is_list(p)) {
		struct ival *items = v->items;
		int32_t n = v->n;
		int seq;
		if (v->kind == IK_RAW) {
			if (split_cell(cx, v, &items, &n) != FA_OK)
				return 0;
		} else if (v->kind != IK_LIST) {
			fa_err_at(cx->err, &v->loc, "expected a list of integers for '%s', got %s", name,
				  ival_words(v, buf, sizeof buf));
			return 0;
		}
		if (!(seq = yaml_document_add_sequence(&cx->m->doc, NULL, YAML_FLOW_SEQUENCE_STYLE))) {
			nomem(cx);
			return 0;
		}
		yaml_node_t *sn = yaml_document_get_node(&cx->m->doc, seq);
		sn->start_mark.line = (size_t)(v->loc.line - 1);
		sn->start_mark.column = (size_t)(v->loc.col - 1);
		for (int32_t k = 0; k < n; k++) {
			int id;
			int bad = 0;
			for (const char *q = items[k].s; q && *q; q++)
				bad |= (unsigned char)*q < 0x20 || (unsigned char)*q >= 0x7f;
			if (!kind_is_number(items[k].kind) || bad) {
				fa_err_at(cx->err, &items[k].loc, "expected an integer in '%s', got %s",
					  name, ival_words(&items[k], buf, sizeof buf));
				return 0;
			}
			if (!(id = add_scalar(cx, items[k].s, strlen(items[k].s), &items[k].loc)) ||
			    !yaml_document_append_sequence_item(&cx->m->doc, seq, id)) {
				nomem(cx);
				return 0;
			}
		}
		return seq;
	}
	if (v->kind == IK_RAW || (param_is_word(p) ? v->kind == IK_STR : v->kind == IK_NUM)) {
		int id;
		for (const char *q = v->s; *q; q++)
			if ((unsigned char)*q < 0x20 || (unsigned char)*q >= 0x7f) {
				fa_err_at(cx->err, &v->loc, "expected %s for '%s', got text with byte 0x%02x",
					  param_expected(p), name, (unsigned char)*q);
				return 0;
			}
		id = add_scalar(cx, v->s, strlen(v->s), &v->loc);
		if (!id)
			nomem(cx);
		return id;
	}
	fa_err_at(cx->err, &v->loc, "expected %s for '%s', got %s", param_expected(p), name,
		  ival_words(v, buf, sizeof buf));
	return 0;
}

/* A number field: finite, > 0 (RT_MS) or >= 0 (RT_STAT). */
static enum fa_rc get_number(struct ctx *cx, int f, const struct ival *v, double *out)
{
	char buf[80];
	const char *name = rfields[f].name;
	if (!kind_is_number(v->kind) || fa_parse_num(v->s, out) != 0)
		return fa_err_at(cx->err, &v->loc, "expected a number for '%s', got %s", name,
				 ival_words(v, buf, sizeof buf));
	if (rfields[f].type == RT_MS && !(*out > 0))
		return fa_err_at(cx->err, &v->loc, "%s %s must be positive", name, v->s);
	if (!(*out >= 0))
		return fa_err_at(cx->err, &v->loc, "%s %s must not be negative", name, v->s);
	return FA_OK;
}

static enum fa_rc get_count(struct ctx *cx, int f, const struct ival *v, int64_t *out)
{
	char buf[80];
	const char *name = rfields[f].name;
	int r = kind_is_number(v->kind) ? fa_parse_int(v->s, out) : -1;
	if (r == -2)
		return fa_err_at(cx->err, &v->loc, "%s %s is too large", name, v->s);
	if (r != 0)
		return fa_err_at(cx->err, &v->loc, "expected an integer for '%s', got %s", name,
				 ival_words(v, buf, sizeof buf));
	if (*out < 0)
		return fa_err_at(cx->err, &v->loc, "%s %s must not be negative", name, v->s);
	if (f == RF_N_SAMPLES && (*out < 1 || *out > INT32_MAX))
		return fa_err_at(cx->err, &v->loc, "n_samples %s must be 1 to %d", v->s, INT32_MAX);
	return FA_OK;
}

/* A uint64 in decimal (a seed). */
static enum fa_rc get_u64(struct ctx *cx, const char *name, const struct ival *v, uint64_t *out)
{
	char buf[80];
	const char *p = v->s;
	uint64_t x = 0;
	/* a number, or its decimal digits as a string (fabench's JSON writes
	 * seeds so: they do not fit a double) */
	if (!(kind_is_number(v->kind) || kind_is_text(v->kind)) || !*p)
		goto bad;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return fa_err_at(cx->err, &v->loc, "%s %s is too large (at most %" PRIu64 ")",
					 name, v->s, UINT64_MAX);
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*out = x;
	return FA_OK;
bad:
	return fa_err_at(cx->err, &v->loc, "expected an integer from 0 for '%s', got %s", name,
			 ival_words(v, buf, sizeof buf));
}

static enum fa_rc get_text(struct ctx *cx, const char *name, const struct ival *v, const char **out)
{
	char buf[80];
	if (!kind_is_text(v->kind))
		return fa_err_at(cx->err, &v->loc, "expected a string for '%s', got %s", name,
				 ival_words(v, buf, sizeof buf));
	*out = v->s;
	return FA_OK;
}

/* The samples: a non-empty list of times > 0 (arena). */
static enum fa_rc get_samples(struct ctx *cx, const struct ival *v, double **out, int32_t *n)
{
	struct ival *items = v->items;
	int32_t count = v->n;
	char buf[80];
	double *x;
	if (v->kind == IK_RAW) {
		if (split_cell(cx, v, &items, &count) != FA_OK)
			return cx->err->rc;
	} else if (v->kind != IK_LIST) {
		return fa_err_at(cx->err, &v->loc, "expected a list of times for 'samples', got %s",
				 ival_words(v, buf, sizeof buf));
	}
	if (count == 0)
		return fa_err_at(cx->err, &v->loc, "empty list for 'samples'");
	if (!(x = fa_arena_alloc(&cx->m->arena, (size_t)count * sizeof *x)))
		return nomem(cx);
	for (int32_t k = 0; k < count; k++) {
		const struct ival *it = &items[k];
		if (!kind_is_number(it->kind) || fa_parse_num(it->s, &x[k]) != 0)
			return fa_err_at(cx->err, &it->loc, "expected a number in 'samples', got %s",
					 ival_words(it, buf, sizeof buf));
		if (!(x[k] > 0))
			return fa_err_at(cx->err, &it->loc, "samples entry %s must be positive", it->s);
	}
	*out = x;
	*n = count;
	return FA_OK;
}

static int kernel_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > IMPORT_KERNEL_MAX)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("_.+-:/@", *s)))
			return 0;
	return 1;
}

/* Copies s into dst[size], cut at a UTF-8 character boundary when too long. */
static void copy_text(char *dst, size_t size, const char *s)
{
	size_t n = strlen(s);
	if (n >= size) {
		n = size - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* Adds the case of work w (moved out of w) unless its key is known; sets
 * *idx. seed_given/seed: the row's own seed. */
static enum fa_rc add_case(struct ctx *cx, struct fa_work *w, int seed_given, uint64_t seed,
			   int32_t *idx)
{
	struct fa_import *im = cx->im;
	struct mem *m = cx->m;
	struct fa_case *c;
	int32_t found = smap_get(&m->cases, w->c.key);
	if (found >= 0) {
		*idx = found;
		return FA_OK;
	}
	if (im->n_cases == m->cap_cases) {
		int32_t nc = m->cap_cases ? m->cap_cases * 2 : 64;
		struct fa_case *cs = realloc(im->cases, (size_t)nc * sizeof *cs);
		if (!cs)
			return nomem(cx);
		im->cases = cs;
		m->cap_cases = nc;
	}
	c = &im->cases[im->n_cases];
	*c = w->c;
	memset(&w->c, 0, sizeof w->c); /* ownership moves to the import */
	c->index = im->n_cases;
	/* as a suite does: the suite seed mixed with the key (suite default 1) */
	c->seed = seed_given ? seed
			     : fa_rng_mix64((im->run.seed_set ? im->run.seed : 1) ^ hash_str(c->key));
	if (smap_put(&m->cases, c->key, im->n_cases) != 0)
		return nomem(cx);
	*idx = im->n_cases++;
	return FA_OK;
}

/* The case of a row: its parameters pv checked as a suite's (the same
 * values, defaults and rules), its key checked against a given key, its
 * seed; *case_idx is its index in im->cases (an earlier row's case when the
 * key was seen before). */
static enum fa_rc take_case(struct ctx *cx, const struct ival *const *pv,
			    const struct ival *key, const struct ival *seed_v,
			    const struct fa_loc *row_loc, int32_t *case_idx)
{
	struct mem *m = cx->m;
	struct fa_pval *vals;
	fa_bindings b = {0};
	struct fa_src src = {&m->doc, cx->file, &m->arena, cx->err};
	struct fa_worklist wl = {NULL, 0, 0};
	const char *text = NULL;
	uint64_t seed = 0;
	enum fa_rc rc;

	/* one YAML document per row holds its values' nodes */
	if (m->doc_live)
		yaml_document_delete(&m->doc);
	m->doc_live = 0;
	if (!yaml_document_initialize(&m->doc, NULL, NULL, NULL, 1, 1))
		return nomem(cx);
	m->doc_live = 1;
	if (!(vals = fa_arena_alloc(&m->arena, FA_P_COUNT * sizeof *vals)))
		return nomem(cx);
	for (int p = 0; p < FA_P_COUNT; p++) {
		int id;
		if (!pv[p])
			continue;
		if (!(id = param_node(cx, p, pv[p])))
			return cx->err->rc;
		if ((rc = fa_param_value(&src, p, yaml_document_get_node(&m->doc, id), &vals[p])) !=
		    FA_OK)
			return rc;
		b[p] = &vals[p];
	}
	rc = fa_expand(b, NULL, 0, NULL, 0, row_loc, 0, &wl, cx->err);
	if (rc == FA_OK && wl.n != 1) /* no axes and no filters: one combination */
		rc = fa_err_set(cx->err, FA_ERR_INTERNAL, "a row made %d cases", wl.n);
	if (rc == FA_OK && wl.v[0].pending)
		rc = fa_err_at(cx->err, &wl.v[0].pending_loc, "%s", wl.v[0].pending);
	if (rc == FA_OK && !(wl.v[0].c.key = fa_case_key(&wl.v[0].c)))
		rc = nomem(cx);
	if (rc == FA_OK && key && (rc = get_text(cx, "key", key, &text)) == FA_OK &&
	    strcmp(text, wl.v[0].c.key) != 0)
		rc = fa_err_at(cx->err, &key->loc,
			       "key does not match the row's parameters, which make '%s'",
			       wl.v[0].c.key);
	if (rc == FA_OK && seed_v)
		rc = get_u64(cx, "seed", seed_v, &seed);
	if (rc == FA_OK)
		rc = add_case(cx, &wl.v[0], seed_v != NULL, seed, case_idx);
	for (int32_t k = 0; k < wl.n; k++)
		fa_work_free(&wl.v[k]);
	free(wl.v);
	return rc;
}

/* The times of a row into r->t and r->samples: the samples decide when
 * present (a median beside them is checked, then recomputed); else what the
 * row says, with one sample standing for the tool's unless n_samples says. */
static enum fa_rc take_times(struct ctx *cx, const struct ival *const *rv, struct fa_result *r)
{
	enum fa_rc rc;
	double x;
	int64_t cnt;
	r->t.median_ms = r->t.mean_ms = r->t.min_ms = r->t.max_ms = r->t.stdev_ms = NAN;
	if (rv[RF_SAMPLES]) {
		double *x_ms = NULL;
		int32_t n = 0;
		if ((rc = get_samples(cx, rv[RF_SAMPLES], &x_ms, &n)) != FA_OK)
			return rc;
		if (rv[RF_N_SAMPLES] &&
		    ((rc = get_count(cx, RF_N_SAMPLES, rv[RF_N_SAMPLES], &cnt)) != FA_OK || cnt != n))
			return rc != FA_OK ? rc
					   : fa_err_at(cx->err, &rv[RF_N_SAMPLES]->loc,
						       "n_samples %s does not match the %d samples",
						       rv[RF_N_SAMPLES]->s, n);
		for (int f = RF_MEDIAN; f <= RF_STDEV; f++)
			if (rv[f] && (rc = get_number(cx, f, rv[f], &x)) != FA_OK)
				return rc;
		fa_stats_compute(x_ms, n, &r->t);
		r->samples = x_ms;
	} else {
		double *dst[] = {&r->t.median_ms, &r->t.mean_ms, &r->t.min_ms, &r->t.max_ms,
				 &r->t.stdev_ms};
		for (int f = RF_MEDIAN; f <= RF_STDEV; f++)
			if (rv[f] && (rc = get_number(cx, f, rv[f], dst[f - RF_MEDIAN])) != FA_OK)
				return rc;
		for (int f = RF_MEAN; f <= RF_N_SAMPLES; f++)
			if (rv[f] && !rv[RF_MEDIAN])
				return fa_err_at(cx->err, &rv[f]->loc,
						 "%s needs median_ms or samples", rfields[f].name);
		if (rv[RF_MEDIAN]) {
			r->t.n = 1;
			if (rv[RF_N_SAMPLES]) {
				if ((rc = get_count(cx, RF_N_SAMPLES, rv[RF_N_SAMPLES], &cnt)) != FA_OK)
					return rc;
				r->t.n = (int32_t)cnt;
			}
		}
	}
	r->t.stop = -1; /* sampled by the tool: no stop reason of ours */
	return FA_OK;
}

/* The error statistics of a row: checked when any is given; the others stay
 * unknown (NaN, -1: stored as NULL). */
static enum fa_rc take_stats(struct ctx *cx, const struct ival *const *rv, struct fa_result *r)
{
	double *dst[] = {&r->st.max_abs, &r->st.max_rel, &r->st.mean_abs, &r->st.rel_l2,
			 &r->st.nmse};
	int64_t *cdst[] = {&r->st.nan_count, &r->st.inf_count, &r->st.rows_checked,
			   &r->st.elems_checked};
	enum fa_rc rc;
	r->st.max_abs = r->st.max_rel = r->st.mean_abs = r->st.rel_l2 = r->st.nmse = NAN;
	r->st.same_max_abs = -1;
	r->st.nan_count = r->st.inf_count = r->st.unwritten = -1;
	r->st.worst_index = -1;
	r->st.rows_checked = r->st.elems_checked = -1;
	for (int f = RF_MAX_ABS; f <= RF_NMSE; f++)
		if (rv[f]) {
			if ((rc = get_number(cx, f, rv[f], dst[f - RF_MAX_ABS])) != FA_OK)
				return rc;
			r->checked = 1;
		}
	for (int f = RF_NAN_COUNT; f <= RF_ELEMS_CHECKED; f++)
		if (rv[f]) {
			if ((rc = get_count(cx, f, rv[f], cdst[f - RF_NAN_COUNT])) != FA_OK)
				return rc;
			if (!r->checked)
				return fa_err_at(cx->err, &rv[f]->loc,
						 "%s needs an error statistic (max_abs, rel_l2, ...)",
						 rfields[f].name);
		}
	return FA_OK;
}

/* The text fields of a row's result: status, reason, timing, rule. */
static enum fa_rc take_words(struct ctx *cx, const struct ival *const *rv, struct fa_result *r)
{
	const char *text = NULL;
	enum fa_rc rc;
	r->status = FA_STATUS_PASS;
	if (rv[RF_STATUS]) {
		if ((rc = get_text(cx, "status", rv[RF_STATUS], &text)) != FA_OK)
			return rc;
		if ((r->status = fa_status_parse(text)) < 0)
			return fa_err_at(cx->err, &rv[RF_STATUS]->loc,
					 "unknown status '%s' (expected pass, fail, skip, error or "
					 "timeout)",
					 text);
		/* a pass without error statistics is stored as a pass and read
		 * as unchecked: the name may be given for it */
		if (r->status == FA_STATUS_UNCHECKED)
			r->status = FA_STATUS_PASS;
	}
	if (rv[RF_REASON]) {
		if ((rc = get_text(cx, "reason", rv[RF_REASON], &text)) != FA_OK)
			return rc;
		copy_text(r->reason, sizeof r->reason, text);
	}
	if (rv[RF_TIMING]) {
		int ok = 0;
		if ((rc = get_text(cx, "timing", rv[RF_TIMING], &r->timing)) != FA_OK)
			return rc;
		for (size_t i = 0; i < sizeof timing_names / sizeof timing_names[0]; i++)
			ok |= strcmp(r->timing, timing_names[i]) == 0;
		if (!ok)
			return fa_err_at(cx->err, &rv[RF_TIMING]->loc,
					 "unknown timing '%s' (expected cpu, cold, hot or graph)",
					 r->timing);
	}
	if (rv[RF_RULE]) {
		if ((rc = get_text(cx, "rule", rv[RF_RULE], &text)) != FA_OK)
			return rc;
		if (strlen(text) > IMPORT_RULE_MAX)
			return fa_err_at(cx->err, &rv[RF_RULE]->loc,
					 "rule '%s' is longer than %d characters", text,
					 IMPORT_RULE_MAX);
		copy_text(r->rule, sizeof r->rule, text);
	}
	return FA_OK;
}

/* One row: the object obj (fields with locations), starting at row_loc. */
static enum fa_rc take_row(struct ctx *cx, const struct ival *obj, const struct fa_loc *row_loc)
{
	struct fa_import *im = cx->im;
	struct mem *m = cx->m;
	const struct ival *pv[FA_P_COUNT] = {0}, *rv[RF_COUNT] = {0};
	struct fa_import_row *row;
	struct fa_result *r;
	const struct fa_case *c;
	const char *kernel = NULL, *params = "", *dkey;
	int32_t case_idx = -1, prev;
	enum fa_rc rc;

	/* sort the fields into case parameters and result fields; null is absent */
	for (int32_t k = 0; k < obj->n; k++) {
		const struct ifield *f = &obj->fields[k];
		int p = fa_param_lookup(f->name), q = -1;
		for (int i = 0; i < RF_COUNT && q < 0 && p < 0; i++)
			if (strcmp(rfields[i].name, f->name) == 0)
				q = i;
		if (p < 0 && q < 0) {
			if (strcmp(f->name, "run") == 0)
				return fa_err_at(cx->err, &f->loc,
						 "a run header must be the first line, alone in its "
						 "object");
			return unknown_field(cx, &f->loc,
					     im->format == FA_IMPORT_CSV ? "column" : "field", f->name,
					     0);
		}
		if (f->v.kind == IK_NULL)
			continue;
		if (p >= 0)
			pv[p] = &f->v;
		else
			rv[q] = &f->v;
	}
	if ((rc = take_case(cx, pv, rv[RF_KEY], rv[RF_SEED], row_loc, &case_idx)) != FA_OK)
		return rc;
	c = &im->cases[case_idx];

	if (!rv[RF_KERNEL])
		return fa_err_at(cx->err, row_loc, "missing field 'kernel'");
	if ((rc = get_text(cx, "kernel", rv[RF_KERNEL], &kernel)) != FA_OK)
		return rc;
	if (!kernel_name_ok(kernel))
		return fa_err_at(cx->err, &rv[RF_KERNEL]->loc,
				 "kernel name '%s' must be 1 to %d letters, digits or _ . + - : / @",
				 kernel, IMPORT_KERNEL_MAX);
	if (rv[RF_PARAMS] && (rc = get_text(cx, "params", rv[RF_PARAMS], &params)) != FA_OK)
		return rc;
	/* one result per case, kernel and params, as in a fabench run */
	{
		size_t lk = strlen(c->key), lq = strlen(kernel), lp = strlen(params);
		char *d = fa_arena_alloc(&m->arena, lk + lq + lp + 3);
		if (!d)
			return nomem(cx);
		memcpy(d, c->key, lk);
		d[lk] = '\x1f';
		memcpy(d + lk + 1, kernel, lq);
		d[lk + 1 + lq] = '\x1f';
		memcpy(d + lk + 2 + lq, params, lp);
		dkey = d;
	}
	if ((prev = smap_get(&m->results, dkey)) >= 0)
		return fa_err_at(cx->err, row_loc,
				 "kernel '%s'%s%s%s already has a result for this case on line %d",
				 kernel, params[0] ? " (" : "", params, params[0] ? ")" : "",
				 im->rows[prev].loc.line);
	if (im->n_rows == m->cap_rows) {
		int32_t nc = m->cap_rows ? m->cap_rows * 2 : 64;
		struct fa_import_row *nr = realloc(im->rows, (size_t)nc * sizeof *nr);
		if (!nr)
			return nomem(cx);
		im->rows = nr;
		m->cap_rows = nc;
	}
	row = &im->rows[im->n_rows];
	memset(row, 0, sizeof *row);
	row->case_idx = case_idx;
	row->loc = *row_loc;
	r = &row->r;
	r->kernel = kernel;
	r->params = params;
	r->backend = im->run.backend ? im->run.backend : "import";
	if (rv[RF_BACKEND] && (rc = get_text(cx, "backend", rv[RF_BACKEND], &r->backend)) != FA_OK)
		return rc;
	if ((rc = take_words(cx, rv, r)) != FA_OK || (rc = take_times(cx, rv, r)) != FA_OK ||
	    (rc = take_stats(cx, rv, r)) != FA_OK)
		return rc;

	/* what fabench computes itself */
	r->flops = fa_problem_flops(&c->p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens) *
			fa_pass_flops_factor(c->pass);
	r->bytes = fa_problem_bytes(&c->p);
	r->tflops = r->gbps = NAN;
	if (r->t.n > 0 && r->t.median_ms > 0) {
		r->tflops = r->flops / (r->t.median_ms * 1e-3) / 1e12;
		r->gbps = r->bytes / (r->t.median_ms * 1e-3) / 1e9;
	}
	r->mem_bytes = NAN;
	r->tel.sm_clock_mhz = r->tel.sm_clock_max_mhz = r->tel.temp_c = r->tel.power_w = NAN;
	r->tel.throttle_reasons = -1;
	if (smap_put(&m->results, dkey, im->n_rows) != 0)
		return nomem(cx);
	im->n_rows++;
	return FA_OK;
}

/* started_at must read "YYYY-MM-DDTHH:MM:SSZ", as fabench stores times. */
static int iso_time_ok(const char *s)
{
	static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
	if (strlen(s) != sizeof pattern - 1)
		return 0;
	for (size_t i = 0; pattern[i]; i++)
		if (pattern[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pattern[i])
			return 0;
	return 1;
}

/* One field of the run header. */
static enum fa_rc take_header_field(struct ctx *cx, const char *name, const struct fa_loc *nl,
				    const struct ival *v)
{
	struct fa_import_run *h = &cx->im->run;
	const char **dst[HF_COUNT] = {
		[HF_SOURCE] = &h->source,           [HF_BACKEND] = &h->backend,
		[HF_DEVICE_NAME] = &h->device_name, [HF_DEVICE_ARCH] = &h->device_arch,
		[HF_DRIVER] = &h->driver,           [HF_RUNTIME] = &h->runtime,
		[HF_HOST] = &h->host,               [HF_STARTED_AT] = &h->started_at,
		[HF_SUITE_NAME] = &h->suite_name,   [HF_SUITE_PATH] = &h->suite_path,
		[HF_SUITE_HASH] = &h->suite_hash,   [HF_LABEL] = &h->label,
		[HF_COMMAND_LINE] = &h->command_line,
	};
	enum fa_rc rc;
	int f = -1;
	for (int i = 0; i < HF_COUNT && f < 0; i++)
		if (strcmp(hfields[i], name) == 0)
			f = i;
	if (f < 0)
		return unknown_field(cx, nl, "run field", name, 1);
	if (v->kind == IK_NULL)
		return FA_OK;
	if (f == HF_SEED) {
		if ((rc = get_u64(cx, "seed", v, &h->seed)) != FA_OK)
			return rc;
		h->seed_set = 1;
		return FA_OK;
	}
	if ((rc = get_text(cx, name, v, dst[f])) != FA_OK)
		return rc;
	if (f == HF_STARTED_AT && !iso_time_ok(*dst[f]))
		return fa_err_at(cx->err, &v->loc,
				 "started_at '%s' must be UTC like 2026-11-25T21:40:00Z", *dst[f]);
	if (f == HF_BACKEND && !kernel_name_ok(*dst[f]))
		return fa_err_at(cx->err, &v->loc, "backend '%s' must be a word like cuda", *dst[f]);
	return FA_OK;
}

/* ---- JSON lines ---- */

static enum fa_rc parse_jsonl(struct ctx *cx, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int line = 0;
	enum fa_rc rc;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct jp j = {cx, p, p, le, ++line, 0};
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
						 ival_words(h, buf, sizeof buf));
			for (int32_t k = 0; k < h->n; k++)
				if ((rc = take_header_field(cx, h->fields[k].name, &h->fields[k].loc,
							    &h->fields[k].v)) != FA_OK)
					return rc;
		} else {
			struct fa_loc rl = v.loc;
			if ((rc = take_row(cx, &v, &rl)) != FA_OK)
				return rc;
		}
		cx->header_done = 1;
		p = nl ? nl + 1 : end;
	}
	return FA_OK;
}

/* ---- CSV ---- */

struct csv {
	struct ctx *cx;
	const char *p, *end;
	const char *line_start;
	int line;
};

/* One cell at c->p: *v is its text (IK_RAW) or IK_NULL when empty. Leaves
 * c->p on the ',' or newline (or the end) after it. */
static enum fa_rc csv_cell(struct csv *c, struct ival *v)
{
	struct fa_loc l;
	memset(v, 0, sizeof *v);
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
	l = (struct fa_loc){c->cx->file, c->line, (int)(c->p - c->line_start) + 1};
	if (c->p < c->end && *c->p == '"') {
		const char *q = ++c->p;
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
			return nomem(c->cx);
		for (o = buf; c->p < q; c->p++) {
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
			l = (struct fa_loc){c->cx->file, c->line, (int)(c->p - c->line_start) + 1};
			return fa_err_at(c->cx->err, &l, "expected ',' after a quoted cell");
		}
		start.col++; /* point at the text, past the quote */
		v->kind = buf[0] ? IK_RAW : IK_NULL;
		v->s = buf;
		v->loc = start;
		return FA_OK;
	}
	{
		const char *s = c->p, *e;
		while (c->p < c->end && *c->p != ',' && *c->p != '\n') {
			if (*c->p == '"') {
				l = (struct fa_loc){c->cx->file, c->line,
						    (int)(c->p - c->line_start) + 1};
				return fa_err_at(c->cx->err, &l,
						 "quote inside an unquoted cell (quote the whole cell)");
			}
			c->p++;
		}
		for (e = c->p; e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'); e--)
			;
		v->loc = l;
		v->kind = e > s ? IK_RAW : IK_NULL;
		if (!(v->s = astrndup(&c->cx->m->arena, s, (size_t)(e - s))))
			return nomem(c->cx);
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
		return nomem(c->cx);
	for (;;) {
		if (k == cap) {
			struct ival *nv = fa_arena_alloc(&c->cx->m->arena, (size_t)cap * 2 * sizeof *nv);
			if (!nv)
				return nomem(c->cx);
			memcpy(nv, v, (size_t)k * sizeof *nv);
			v = nv;
			cap *= 2;
		}
		if ((rc = csv_cell(c, &v[k])) != FA_OK)
			return rc;
		for (const char *q = v[k].s, *e = q + strlen(q); q < e;) {
			int len = utf8_len((const unsigned char *)q, (const unsigned char *)e);
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
	if (!(name = astrndup(&c->cx->m->arena, ks, (size_t)(ke - ks))))
		return nomem(c->cx);
	kl = (struct fa_loc){c->cx->file, c->line, (int)(ks - c->line_start) + 1};
	{
		int known = 0, near = 0;
		for (int i = 0; i < HF_COUNT; i++) {
			known |= strcmp(hfields[i], name) == 0;
			near |= fa_edit_distance(hfields[i], name) <= 2;
		}
		if (!known && !near)
			return FA_OK;
	}
	for (vs = p + 1; vs < le && (*vs == ' ' || *vs == '\t'); vs++)
		;
	for (ve = le; ve > vs && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r'); ve--)
		;
	vl = (struct fa_loc){c->cx->file, c->line, (int)(vs - c->line_start) + 1};
	memset(&v, 0, sizeof v);
	v.kind = ve > vs ? IK_RAW : IK_NULL;
	v.loc = vl;
	if (!(v.s = astrndup(&c->cx->m->arena, vs, (size_t)(ve - vs))))
		return nomem(c->cx);
	return take_header_field(c->cx, name, &kl, &v);
}

static enum fa_rc parse_csv(struct ctx *cx, const char *text, size_t len)
{
	struct csv c = {cx, text, text + len, text, 1};
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
					int known = fa_param_lookup(h->s ? h->s : "") >= 0;
					if (h->kind == IK_NULL)
						return fa_err_at(cx->err, &h->loc, "empty column name");
					for (int i = 0; i < RF_COUNT && !known; i++)
						known = strcmp(rfields[i].name, h->s) == 0;
					if (!known)
						return unknown_field(cx, &h->loc, "column", h->s, 0);
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
				return nomem(cx);
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
			if ((rc = take_row(cx, &obj, &rl)) != FA_OK)
				return rc;
		}
	}
	if (!head)
		return fa_err_set(cx->err, FA_ERR_INPUT, "'%s' has no header row", cx->file);
	return FA_OK;
}

/* ---- entry points ---- */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

void fa_import_free(struct fa_import *im)
{
	struct mem *m = im->mem;
	for (int32_t k = 0; k < im->n_cases; k++) {
		free(im->cases[k].cu_seqlens_q);
		free(im->cases[k].cu_seqlens_k);
		free(im->cases[k].prefix_lens);
		free(im->cases[k].key);
	}
	free(im->cases);
	free(im->rows);
	if (m) {
		if (m->doc_live)
			yaml_document_delete(&m->doc);
		smap_free(&m->cases);
		smap_free(&m->results);
		fa_arena_free(&m->arena);
		free(m);
	}
	memset(im, 0, sizeof *im);
}

enum fa_rc fa_import_parse(const char *name, const char *text, size_t len, int format,
			   struct fa_import *im, struct fa_err *err)
{
	struct ctx cx;
	struct mem *m;
	const char *nul;
	enum fa_rc rc;
	memset(im, 0, sizeof *im);
	if (!(m = calloc(1, sizeof *m)))
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading '%s'", name);
	im->mem = m;
	if (!(im->path = astrndup(&m->arena, name, strlen(name)))) {
		fa_import_free(im);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading '%s'", name);
	}
	cx = (struct ctx){im, m, im->path, err, 0};
	if (format == FA_IMPORT_AUTO) {
		const char *p = text;
		while (p < text + len && strchr(" \t\r\n", *p))
			p++;
		if (ends_with(name, ".jsonl") || ends_with(name, ".ndjson") || ends_with(name, ".json"))
			format = FA_IMPORT_JSONL;
		else if (ends_with(name, ".csv"))
			format = FA_IMPORT_CSV;
		else
			format = p < text + len && *p == '{' ? FA_IMPORT_JSONL : FA_IMPORT_CSV;
	}
	im->format = format;
	if ((nul = memchr(text, '\0', len))) {
		int line = 1;
		const char *ls = text;
		for (const char *q = text; q < nul; q++)
			if (*q == '\n') {
				line++;
				ls = q + 1;
			}
		struct fa_loc l = {im->path, line, (int)(nul - ls) + 1};
		rc = fa_err_at(err, &l, "NUL byte in the file");
	} else {
		rc = format == FA_IMPORT_CSV ? parse_csv(&cx, text, len) : parse_jsonl(&cx, text, len);
	}
	if (rc == FA_OK && im->n_rows == 0)
		rc = fa_err_set(err, FA_ERR_INPUT, "'%s' holds no results", name);
	if (m->doc_live) {
		yaml_document_delete(&m->doc);
		m->doc_live = 0;
	}
	if (rc != FA_OK) {
		fa_import_free(im);
		return rc;
	}
	return FA_OK;
}

enum fa_rc fa_import_read(const char *path, int format, struct fa_import *im, struct fa_err *err)
{
	char *buf, why[160];
	size_t len;
	enum fa_rc rc;
	memset(im, 0, sizeof *im);
	rc = fa_read_file(path, FA_IMPORT_FILE_MAX, &buf, &len, NULL, why, sizeof why);
	if (rc == FA_ERR_NOMEM)
		return fa_err_set(err, rc, "out of memory reading '%s'", path);
	if (rc == FA_ERR_INPUT)
		return fa_err_set(err, rc, "import file '%s' %s", path, why);
	if (rc != FA_OK)
		return fa_err_set(err, rc, "cannot read import file '%s': %s", path, why);
	rc = fa_import_parse(path, buf, len, format, im, err);
	free(buf);
	return rc;
}

/* The text that sql (one column, run_id bound) returns: malloc'd, "" when
 * NULL or no row; NULL when out of memory. */
static char *run_text(struct fa_store *s, int64_t run_id, const char *sql)
{
	sqlite3_stmt *st = NULL;
	char *v = NULL;
	if (sqlite3_prepare_v2(fa_store_db(s), sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, run_id);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			v = strdup((const char *)sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
	return v ? v : strdup("");
}

enum fa_rc fa_import_store(struct fa_store *s, const struct fa_import *im,
			   const struct fa_import_opts *o, struct fa_import_summary *sum,
			   struct fa_err *err)
{
	const struct fa_import_run *h = &im->run;
	struct fa_run_info ri;
	struct fa_store_import_out out;
	struct fa_result *results;
	int32_t *result_case;
	int64_t into = 0;
	struct fa_err serr;
	enum fa_rc rc;

	memset(sum, 0, sizeof *sum);
	if (o->run_into) {
		if ((rc = fa_store_find_run(s, o->run_into, &into, err)) != FA_OK)
			return rc;
		char *dev = run_text(s, into, "SELECT device_name FROM runs WHERE id = ?");
		char *hash = run_text(s, into, "SELECT suite_hash FROM runs WHERE id = ?");
		if (!dev || !hash) {
			free(dev);
			free(hash);
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		}
		if (h->device_name && dev[0] && strcmp(dev, h->device_name) != 0)
			snprintf(sum->note, sizeof sum->note,
				 "'%s' was measured on '%s', run %" PRId64 " on '%s'", im->path,
				 h->device_name, into, dev);
		else if (h->suite_hash && hash[0] && strcmp(hash, h->suite_hash) != 0)
			snprintf(sum->note, sizeof sum->note,
				 "'%s' comes from suite hash %s, run %" PRId64
				 " from %s: cases were matched by key",
				 im->path, h->suite_hash, into, hash);
		free(dev);
		free(hash);
	}
	memset(&ri, 0, sizeof ri);
	ri.started_at = h->started_at;
	ri.git_dirty = -1;
	ri.host = h->host;
	ri.backend = h->backend ? h->backend : "import";
	ri.device_name = h->device_name;
	ri.device_arch = h->device_arch;
	ri.driver = h->driver;
	ri.runtime = h->runtime;
	ri.suite_path = h->suite_path;
	ri.suite_name = h->suite_name;
	ri.suite_hash = h->suite_hash;
	ri.command_line = h->command_line ? h->command_line : o->command_line;
	ri.label = o->label ? o->label : h->label;
	ri.seed = h->seed_set ? h->seed : 1;
	ri.version = o->version;
	ri.source = h->source ? h->source : "import";

	results = calloc((size_t)im->n_rows + 1, sizeof *results);
	result_case = calloc((size_t)im->n_rows + 1, sizeof *result_case);
	if (!results || !result_case) {
		free(results);
		free(result_case);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory importing '%s'", im->path);
	}
	for (int32_t k = 0; k < im->n_rows; k++) {
		results[k] = im->rows[k].r;
		result_case[k] = im->rows[k].case_idx;
	}
	fa_err_clear(&serr);
	rc = fa_store_import(s, &ri, into, ri.source, im->cases, im->n_cases, results, result_case,
			     im->n_rows, &out, &serr);
	free(results);
	free(result_case);
	if (rc != FA_OK) {
		if (rc == FA_ERR_INPUT && out.conflict >= 0)
			return fa_err_at(err, &im->rows[out.conflict].loc, "%s", serr.msg);
		if (err && err->rc == FA_OK)
			*err = serr;
		return rc;
	}
	sum->run_id = out.run_id;
	sum->into = into > 0;
	sum->cases_added = out.cases_added;
	sum->cases_matched = out.cases_matched;
	sum->results = im->n_rows;
	for (int32_t k = 0; k < im->n_rows; k++)
		if (im->rows[k].r.status >= 0 && im->rows[k].r.status < 5)
			sum->by_status[fa_status_effective(im->rows[k].r.status,
							   im->rows[k].r.checked)]++;
	return FA_OK;
}
