/* import.c - other tools' results (JSON lines or CSV) mapped into fabench
 * cases and results, and stored (fabench import). The readers of the two
 * formats are import_json.c and import_csv.c.
 *
 * Both formats are first turned into the same thing: per row, a list of
 * named values with their file:line:col (struct ival). Case parameters are
 * then checked exactly as a suite's are: each value becomes a YAML scalar or
 * sequence node carrying its location, goes through fa_param_value, and the
 * row's bindings through fa_expand, which applies the suite defaults and
 * validates the combination. Everything is parsed and checked before the
 * database is touched.
 */
#include "import_int.h"

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
#include "../base/text.h"
#include "../suite/expand.h"
#include "../suite/models.h"
#include "../base/util.h"

/* fa_result.rule is char[16]. */
#define IMPORT_RULE_MAX 15
/* Kernel names appear in table headers and file names: keep them short. */
#define IMPORT_KERNEL_MAX 100

/* ---- the fields a row may have besides the case parameters ---- */

enum rfield {
	RF_KERNEL, RF_PARAMS, RF_BACKEND, RF_STATUS, RF_REASON, RF_TIMING,
	RF_MEDIAN, RF_MEAN, RF_MIN, RF_MAX, RF_STDEV, RF_N_SAMPLES, RF_SAMPLES,
	RF_MAX_ABS, RF_MAX_REL, RF_MEAN_ABS, RF_REL_L2, RF_NMSE,
	RF_NAN_COUNT, RF_INF_COUNT, RF_UNWRITTEN, RF_ROWS_CHECKED, RF_ELEMS_CHECKED, RF_RULE,
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
	[RF_UNWRITTEN] = {"unwritten", RT_INT},
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

static const char *const timing_names[] = {"cpu", "cold", "cold-clean", "hot", "graph",
						     "graph-cold"};


/* The statistics and counts a gradient may have (dq_max_abs ...
 * dv_elems_checked): the result fields from RF_MAX_ABS to RF_ELEMS_CHECKED,
 * named after the tensor. */
#define GRAD_FIRST RF_MAX_ABS
#define GRAD_LAST RF_ELEMS_CHECKED

/* The tensor (enum fa_grad) of a gradient field's name ("dq_max_abs"), and
 * *rest what follows its "dq_"; -1 when name starts with no tensor. */
static int grad_tensor_of(const char *name, const char **rest)
{
	for (int g = 0; g < FA_GRAD_COUNT; g++) {
		const char *t = fa_grad_name(g);
		size_t n = strlen(t);
		if (strncmp(name, t, n) == 0 && name[n] == '_') {
			*rest = name + n + 1;
			return g;
		}
	}
	return -1;
}

/* 1 and *g, *f (the tensor and the result field) for a gradient field. */
static int grad_field(const char *name, int *g, int *f)
{
	const char *rest;
	if ((*g = grad_tensor_of(name, &rest)) < 0)
		return 0;
	for (int i = GRAD_FIRST; i <= GRAD_LAST; i++)
		if (strcmp(rest, rfields[i].name) == 0) {
			*f = i;
			return 1;
		}
	return 0;
}

/* 1 when name is a column a row may have: a case parameter, a result field
 * or a gradient's (dq_max_abs). */
int fa_import_row_field_known(const char *name)
{
	int known = fa_param_lookup(name ? name : "") >= 0, g, f;
	for (int i = 0; i < RF_COUNT && !known; i++)
		known = strcmp(rfields[i].name, name) == 0;
	/* a report's labels of the case (CSV models and label_layers, JSON tags) */
	known = known || strcmp(name, "models") == 0 || strcmp(name, "tags") == 0 ||
		strcmp(name, "label_layers") == 0;
	return known || grad_field(name, &g, &f);
}

/* 1 when name is a run header field or within edit distance 2 of one (a
 * misspelt field is an error, not a comment). */
int fa_import_header_field_near(const char *name)
{
	int known = 0, near = 0;
	for (int i = 0; i < HF_COUNT; i++) {
		known |= strcmp(hfields[i], name) == 0;
		near |= fa_edit_distance(hfields[i], name) <= 2;
	}
	return known || near;
}

/* ---- parse state ---- */

enum fa_rc fa_import_nomem(struct ctx *cx)
{
	return fa_err_set(cx->err, FA_ERR_NOMEM, "out of memory reading '%s'", cx->file);
}

char *fa_import_strndup(struct fa_arena *a, const char *s, size_t n)
{
	char *d = fa_arena_alloc(a, n + 1);
	if (d)
		memcpy(d, s, n); /* zeroed: already terminated */
	return d;
}

/* A walk along a value's source text (fa_import_loc_in), resumable: the
 * items of a long list cell cost its length once. */
struct iwalk {
	const struct ival *v;
	const char *p;   /* in v->src */
	size_t d;        /* the bytes of v->s walked */
	struct fa_loc l; /* where p is */
};

static void iwalk_init(struct iwalk *w, const struct ival *v)
{
	w->v = v;
	w->p = v->src;
	w->d = 0;
	w->l = v->loc;
	if (v->src && v->esc == IE_JSON)
		w->l.col++; /* past the opening quote */
}

/* The place of byte off of v->s, off at least as far as the last call's. */
static struct fa_loc iwalk_to(struct iwalk *w, size_t off)
{
	const int esc = w->v->esc;
	if (!w->p)
		return w->v->loc;
	/* the reader checked the text: escapes are whole and UTF-8 is valid */
	while (w->d < off) {
		const char *p = w->p;
		if (esc == IE_JSON && *p == '\\' && p[1] == 'u') {
			long cp = 0;
			for (int i = 2; i < 6; i++)
				cp = cp * 16 + fa_hex_digit((unsigned char)p[i]); /* checked by the reader */
			if (cp >= 0xd800 && cp <= 0xdbff) { /* and its low half: 4 bytes */
				w->p += 12;
				w->l.col += 12;
				w->d += 4;
			} else {
				w->p += 6;
				w->l.col += 6;
				w->d += cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3;
			}
		} else if ((esc == IE_JSON && *p == '\\') || (esc == IE_CSV && *p == '"')) {
			w->p += 2; /* \n, \", ... or "" */
			w->l.col += 2;
			w->d++;
		} else if (*p == '\n') { /* inside a quoted CSV cell */
			w->p++;
			w->d++;
			w->l.line++;
			w->l.col = 1;
		} else {
			unsigned char c = (unsigned char)*p;
			int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
			w->p += n;
			w->d += (size_t)n;
			w->l.col++;
		}
	}
	return w->l;
}

struct fa_loc fa_import_loc_in(const struct ival *v, size_t off)
{
	struct iwalk w;
	iwalk_init(&w, v);
	return iwalk_to(&w, off);
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
const char *fa_import_ival_words(const struct ival *v, char *buf, size_t size)
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

/* The closest field name to name within edit distance 2, or NULL; for a
 * gradient's field (dq_max_abz) the closest of that gradient's (in a static
 * buffer). */
static const char *suggest(const char *name, int header)
{
	static char grad_best[40];
	const char *best = NULL, *rest;
	int bd = 3, d, g;
	if (!header && (g = grad_tensor_of(name, &rest)) >= 0) {
		for (int i = GRAD_FIRST; i <= GRAD_LAST; i++)
			if ((d = fa_edit_distance(rest, rfields[i].name)) < bd) {
				bd = d;
				snprintf(grad_best, sizeof grad_best, "%s_%s", fa_grad_name(g),
					 rfields[i].name);
				best = grad_best;
			}
		if (best)
			return best;
	}
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

enum fa_rc fa_import_unknown_field(struct ctx *cx, const struct fa_loc *l, const char *what,
				   const char *name, int header)
{
	const char *s = suggest(name, header);
	if (s)
		return fa_err_at(cx->err, l, "unknown %s '%s' (did you mean '%s'?)", what, name, s);
	return fa_err_at(cx->err, l, "unknown %s '%s'", what, name);
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
	case FA_P_MODEL:
	case FA_P_TAG:
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
	       p == FA_P_MODEL || p == FA_P_TAG || p == FA_P_PASS;
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
	struct iwalk w;
	iwalk_init(&w, v);
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
		return fa_import_nomem(cx);
	while (*p) {
		size_t len;
		p += strspn(p, seps);
		if (!*p)
			break;
		len = strcspn(p, seps);
		(*items)[k].kind = IK_RAW;
		(*items)[k].loc = iwalk_to(&w, (size_t)(p - v->s));
		if (!((*items)[k].s = fa_import_strndup(&cx->m->arena, p, len)))
			return fa_import_nomem(cx);
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
				  fa_import_ival_words(v, buf, sizeof buf));
			return 0;
		}
		if (!(seq = yaml_document_add_sequence(&cx->m->doc, NULL, YAML_FLOW_SEQUENCE_STYLE))) {
			fa_import_nomem(cx);
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
					  name, fa_import_ival_words(&items[k], buf, sizeof buf));
				return 0;
			}
			if (!(id = add_scalar(cx, items[k].s, strlen(items[k].s), &items[k].loc)) ||
			    !yaml_document_append_sequence_item(&cx->m->doc, seq, id)) {
				fa_import_nomem(cx);
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
			fa_import_nomem(cx);
		return id;
	}
	fa_err_at(cx->err, &v->loc, "expected %s for '%s', got %s", param_expected(p), name,
		  fa_import_ival_words(v, buf, sizeof buf));
	return 0;
}

/* A number field: finite, > 0 (RT_MS) or >= 0 (RT_STAT); name is how
 * messages call it (rfields[f].name, or a gradient's dq_max_abs). */
static enum fa_rc get_number_as(struct ctx *cx, int f, const char *name, const struct ival *v,
				double *out)
{
	char buf[80];
	if (!kind_is_number(v->kind) || fa_parse_num(v->s, out) != 0)
		return fa_err_at(cx->err, &v->loc, "expected a number for '%s', got %s", name,
				 fa_import_ival_words(v, buf, sizeof buf));
	if (rfields[f].type == RT_MS && !(*out > 0))
		return fa_err_at(cx->err, &v->loc, "%s %s must be positive", name, v->s);
	if (!(*out >= 0))
		return fa_err_at(cx->err, &v->loc, "%s %s must not be negative", name, v->s);
	return FA_OK;
}

static enum fa_rc get_number(struct ctx *cx, int f, const struct ival *v, double *out)
{
	return get_number_as(cx, f, rfields[f].name, v, out);
}

static enum fa_rc get_count_as(struct ctx *cx, int f, const char *name, const struct ival *v,
			       int64_t *out)
{
	char buf[80];
	int r = kind_is_number(v->kind) ? fa_parse_int(v->s, out) : -1;
	if (r == -2)
		return fa_err_at(cx->err, &v->loc, "%s %s is too large", name, v->s);
	if (r != 0)
		return fa_err_at(cx->err, &v->loc, "expected an integer for '%s', got %s", name,
				 fa_import_ival_words(v, buf, sizeof buf));
	if (*out < 0)
		return fa_err_at(cx->err, &v->loc, "%s %s must not be negative", name, v->s);
	if (f == RF_N_SAMPLES && (*out < 1 || *out > INT32_MAX))
		return fa_err_at(cx->err, &v->loc, "n_samples %s must be 1 to %d", v->s, INT32_MAX);
	return FA_OK;
}

static enum fa_rc get_count(struct ctx *cx, int f, const struct ival *v, int64_t *out)
{
	return get_count_as(cx, f, rfields[f].name, v, out);
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
			 fa_import_ival_words(v, buf, sizeof buf));
}

static enum fa_rc get_text(struct ctx *cx, const char *name, const struct ival *v, const char **out)
{
	char buf[80];
	if (!kind_is_text(v->kind))
		return fa_err_at(cx->err, &v->loc, "expected a string for '%s', got %s", name,
				 fa_import_ival_words(v, buf, sizeof buf));
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
				 fa_import_ival_words(v, buf, sizeof buf));
	}
	if (count == 0)
		return fa_err_at(cx->err, &v->loc, "empty list for 'samples'");
	if (!(x = fa_arena_alloc(&cx->m->arena, (size_t)count * sizeof *x)))
		return fa_import_nomem(cx);
	for (int32_t k = 0; k < count; k++) {
		const struct ival *it = &items[k];
		if (!kind_is_number(it->kind) || fa_parse_num(it->s, &x[k]) != 0)
			return fa_err_at(cx->err, &it->loc, "expected a number in 'samples', got %s",
					 fa_import_ival_words(it, buf, sizeof buf));
		if (!(x[k] > 0))
			return fa_err_at(cx->err, &it->loc, "samples entry %s must be positive", it->s);
	}
	*out = x;
	*n = count;
	return FA_OK;
}

/* params as fabench writes them (fa_case_kernel_text): "" or NAME=VALUE
 * items joined by single commas, each NAME once, made of letters, digits
 * and '_', a letter or '_' first, at most FA_KERNEL_PARAM_NAME_MAX of them
 * (what fa_kernel_validate lets a kernel's param be called),
 * each VALUE a 32-bit integer in the form %d prints (-8, 0, 64: no '+', no
 * leading zeros). Compare, report and tune split them on ',' and '=', and
 * tune reads the values as integers; results match by the text, so 64 and
 * 064 must not be two params. At most FA_KERNEL_MAX_PARAMS items, as a
 * kernel has. The error at the item (a control character: at the
 * character). */
static enum fa_rc params_check(struct ctx *cx, const struct ival *v, const char *s)
{
	const char *p = s;
	if (!*s)
		return FA_OK; /* no params */
	for (int n = 1;; n++) {
		const char *item = p, *end = p + strcspn(p, ","), *eq, *d, *q;
		struct fa_loc l;
		int len = (int)(end - item);
		if (n > FA_KERNEL_MAX_PARAMS) { /* and the check for names given twice stays short */
			l = fa_import_loc_in(v, (size_t)(item - s));
			return fa_err_at(cx->err, &l,
					 "params has more than %d items (a kernel has at most %d "
					 "params)",
					 FA_KERNEL_MAX_PARAMS, FA_KERNEL_MAX_PARAMS);
		}
		for (q = item; q < end; q++)
			if ((unsigned char)*q < 0x20) {
				l = fa_import_loc_in(v, (size_t)(q - s));
				return fa_err_at(cx->err, &l, "control character 0x%02x in params",
						 (unsigned char)*q);
			}
		l = fa_import_loc_in(v, (size_t)(item - s));
		if (!len)
			return fa_err_at(cx->err, &l,
					 "empty item in params '%s' (params are NAME=VALUE items "
					 "separated by single commas)",
					 s);
		eq = memchr(item, '=', (size_t)len);
		if (!eq || eq == item)
			return fa_err_at(cx->err, &l, "params item '%.*s' is not NAME=VALUE", len, item);
		for (q = item; q < eq; q++)
			if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
			      (*q >= '0' && *q <= '9') || *q == '_'))
				return fa_err_at(cx->err, &l,
						 "params name '%.*s' must be letters, digits and '_'",
						 (int)(eq - item), item);
		if (*item >= '0' && *item <= '9')
			return fa_err_at(cx->err, &l,
					 "params name '%.*s' starts with a digit (a kernel's param "
					 "begins with a letter or '_')",
					 (int)(eq - item), item);
		if (eq - item > FA_KERNEL_PARAM_NAME_MAX)
			return fa_err_at(cx->err, &l,
					 "params name '%.64s...' is longer than %d characters (as a "
					 "kernel's param may be)",
					 item, FA_KERNEL_PARAM_NAME_MAX);
		d = eq + 1 + (eq[1] == '-');
		q = d;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q != end || q == d || (*d == '0' && (q - d > 1 || d > eq + 1)))
			return fa_err_at(cx->err, &l,
					 "params item '%.*s' must have an integer value as fabench "
					 "writes it (-8, 0, 64)",
					 len, item);
		if (q - d > 10 || strtoll(eq + 1, NULL, 10) < INT32_MIN ||
		    strtoll(eq + 1, NULL, 10) > INT32_MAX)
			return fa_err_at(cx->err, &l,
					 "params item '%.*s' has a value outside 32-bit integers", len,
					 item);
		for (q = s; q < item; q += strcspn(q, ",") + 1)
			if (strncmp(q, item, (size_t)(eq - item + 1)) == 0)
				return fa_err_at(cx->err, &l, "params name '%.*s' given twice",
						 (int)(eq - item), item);
		if (!*end)
			break;
		p = end + 1;
	}
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
		enum fa_rc rc;
		*idx = found;
		/* a repeat may add to the case (a depth, a tag's layers), not
		 * contradict it, as in a suite; rows of one case for several
		 * models keep every model */
		if ((rc = fa_case_merge_repeat(&im->cases[found], &w->c, 1, cx->err)) != FA_OK)
			return rc;
		return fa_case_merge_tags(&im->cases[found], &w->c) == 0 ? FA_OK : fa_import_nomem(cx);
	}
	if (im->n_cases == m->cap_cases) {
		int32_t nc = m->cap_cases ? m->cap_cases * 2 : 64;
		struct fa_case *cs = realloc(im->cases, (size_t)nc * sizeof *cs);
		if (!cs)
			return fa_import_nomem(cx);
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
		return fa_import_nomem(cx);
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
	struct fa_src src = {&m->doc, cx->file, &m->arena, cx->err, NULL, 0};
	struct fa_worklist wl = {NULL, 0, 0};
	const char *text = NULL;
	uint64_t seed = 0;
	enum fa_rc rc;

	/* one YAML document per row holds its values' nodes */
	if (m->doc_live)
		yaml_document_delete(&m->doc);
	m->doc_live = 0;
	if (!yaml_document_initialize(&m->doc, NULL, NULL, NULL, 1, 1))
		return fa_import_nomem(cx);
	m->doc_live = 1;
	if (!(vals = fa_arena_alloc(&m->arena, FA_P_COUNT * sizeof *vals)))
		return fa_import_nomem(cx);
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
		rc = fa_import_nomem(cx);
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
	int64_t *cdst[] = {&r->st.nan_count, &r->st.inf_count, &r->st.unwritten,
			   &r->st.rows_checked, &r->st.elems_checked};
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
	/* elements checked with no statistic: none of them was finite (fabench
	 * writes the statistics of such an output as null), still a check */
	if (rv[RF_ELEMS_CHECKED]) {
		if ((rc = get_count(cx, RF_ELEMS_CHECKED, rv[RF_ELEMS_CHECKED], &r->st.elems_checked)) !=
		    FA_OK)
			return rc;
		r->checked |= r->st.elems_checked > 0;
	}
	for (int f = RF_NAN_COUNT; f <= RF_ELEMS_CHECKED; f++)
		if (rv[f]) {
			if ((rc = get_count(cx, f, rv[f], cdst[f - RF_NAN_COUNT])) != FA_OK)
				return rc;
			if (!r->checked)
				return fa_err_at(cx->err, &rv[f]->loc,
						 "%s needs an error statistic (max_abs, rel_l2, ...) or "
						 "elements checked (elems_checked)",
						 rfields[f].name);
		}
	return FA_OK;
}

/* The gradients' statistics of a row (gf[tensor][field]: the fields
 * dq_max_abs ... dv_elems_checked given), for a bwd or fwd_bwd case c: none
 * at all, or at least one statistic for each of dq, dk and dv. A result
 * with them is checked (on its gradients, whether or not O was). */
static enum fa_rc take_grads(struct ctx *cx, const struct ifield *const (*gf)[RF_COUNT],
			     const struct fa_case *c, struct fa_result *r)
{
	const struct ifield *first = NULL;
	int first_g = 0;
	enum fa_rc rc;
	for (int g = 0; g < FA_GRAD_COUNT && !first; g++)
		for (int f = GRAD_FIRST; f <= GRAD_LAST && !first; f++)
			if ((first = gf[g][f]))
				first_g = g;
	if (!first)
		return FA_OK;
	if (c->pass == FA_PASS_FWD)
		return fa_err_at(cx->err, &first->loc,
				 "'%s' is for backward results: the row's case has pass fwd "
				 "(give pass bwd or fwd_bwd)",
				 first->name);
	for (int g = 0; g < FA_GRAD_COUNT; g++) {
		struct fa_err_stats *e = &r->st_grad[g];
		double *dst[] = {&e->max_abs, &e->max_rel, &e->mean_abs, &e->rel_l2, &e->nmse};
		int64_t *cdst[] = {&e->nan_count, &e->inf_count, &e->unwritten,
				   &e->rows_checked, &e->elems_checked};
		int have = 0;
		memset(e, 0, sizeof *e);
		e->max_abs = e->max_rel = e->mean_abs = e->rel_l2 = e->nmse = NAN;
		e->same_max_abs = e->same_rel_l2 = -1;
		e->nan_count = e->inf_count = e->unwritten = -1;
		e->worst_index = -1;
		e->rows_checked = e->elems_checked = -1;
		for (int f = RF_MAX_ABS; f <= RF_NMSE; f++)
			if (gf[g][f]) {
				if ((rc = get_number_as(cx, f, gf[g][f]->name, &gf[g][f]->v,
							dst[f - RF_MAX_ABS])) != FA_OK)
					return rc;
				have = 1;
			}
		if (gf[g][RF_ELEMS_CHECKED]) { /* as take_stats: checked, none finite */
			if ((rc = get_count_as(cx, RF_ELEMS_CHECKED, gf[g][RF_ELEMS_CHECKED]->name,
					       &gf[g][RF_ELEMS_CHECKED]->v, &e->elems_checked)) != FA_OK)
				return rc;
			have |= e->elems_checked > 0;
		}
		for (int f = RF_NAN_COUNT; f <= RF_ELEMS_CHECKED; f++)
			if (gf[g][f]) {
				if ((rc = get_count_as(cx, f, gf[g][f]->name, &gf[g][f]->v,
						       cdst[f - RF_NAN_COUNT])) != FA_OK)
					return rc;
				if (!have)
					return fa_err_at(cx->err, &gf[g][f]->loc,
							 "'%s' needs a statistic of %s (%s_max_abs, "
							 "%s_rel_l2, ...) or %s_elems_checked",
							 gf[g][f]->name, fa_grad_name(g), fa_grad_name(g),
							 fa_grad_name(g), fa_grad_name(g));
			}
		if (!have)
			return fa_err_at(cx->err, &first->loc,
					 "gradient statistics for %s but none for %s (each of dq, dk "
					 "and dv needs one)",
					 fa_grad_name(first_g), fa_grad_name(g));
	}
	r->grad_checked = 1;
	r->checked = 1;
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
					 "unknown timing '%s' (expected cpu, cold, cold-clean, hot, graph or graph-cold)",
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
/* Columns and fields of fabench's own reports (report --format csv|json)
 * that import recomputes (FLOPs, rates, totals) or does not store: a report
 * imports as it was written. */
static const char *const report_only[] = {
	"run_id", "case_idx", "idx", "family", "discarded", "stop_reason", "flops", "tflops",
	"bytes", "gbps", "speedup", "checked", "same_max_abs", "worst_index",
	"worst_out", "worst_ref", "mem_bytes", "sm_clock_mhz", "sm_clock_max_mhz", "temp_c",
	"power_w", "throttle_reasons", "total_q", "total_k", "varlen", "scale_set", "device",
	"tokens_per_s",
};

int fa_import_report_only(const char *name)
{
	const char *rest;
	/* a gradient's same_max_abs (dq_same_max_abs), as O's */
	if (grad_tensor_of(name, &rest) >= 0)
		return strcmp(rest, "same_max_abs") == 0;
	for (size_t i = 0; i < sizeof report_only / sizeof report_only[0]; i++)
		if (strcmp(report_only[i], name) == 0)
			return 1;
	return 0;
}

/* A row whose "grads" object (a report's: {"dq": {"max_abs": ..}, ..})
 * becomes the flat fields dq_max_abs, ... in *flat (arena), each with its
 * place in the file; *flat is obj itself when there is none. */
static enum fa_rc flatten_grads(struct ctx *cx, const struct ival *obj, struct ival *flat)
{
	const struct ival *gr = NULL;
	struct ifield *f;
	char buf[80];
	int32_t n = 0, cap = obj->n;
	*flat = *obj;
	for (int32_t k = 0; k < obj->n; k++)
		if (strcmp(obj->fields[k].name, "grads") == 0)
			gr = &obj->fields[k].v;
	if (!gr)
		return FA_OK;
	if (gr->kind != IK_OBJ && gr->kind != IK_NULL) /* null: none; the field is dropped */
		return fa_err_at(cx->err, &gr->loc, "expected an object for 'grads', got %s",
				 fa_import_ival_words(gr, buf, sizeof buf));
	for (int32_t t = 0; gr->kind == IK_OBJ && t < gr->n; t++)
		if (gr->fields[t].v.kind == IK_OBJ)
			cap += gr->fields[t].v.n;
	if (!(f = fa_arena_alloc(&cx->m->arena, (size_t)(cap ? cap : 1) * sizeof *f)))
		return fa_import_nomem(cx);
	for (int32_t k = 0; k < obj->n; k++)
		if (strcmp(obj->fields[k].name, "grads") != 0)
			f[n++] = obj->fields[k];
	for (int32_t t = 0; gr->kind == IK_OBJ && t < gr->n; t++) {
		const struct ifield *tf = &gr->fields[t];
		int g = -1;
		for (int i = 0; i < FA_GRAD_COUNT; i++)
			if (strcmp(tf->name, fa_grad_name(i)) == 0)
				g = i;
		if (g < 0)
			return fa_err_at(cx->err, &tf->loc,
					 "unknown gradient '%s' in 'grads' (expected dq, dk or dv)",
					 tf->name);
		if (tf->v.kind == IK_NULL)
			continue;
		if (tf->v.kind != IK_OBJ)
			return fa_err_at(cx->err, &tf->v.loc, "expected an object for '%s' in 'grads', got %s",
					 tf->name, fa_import_ival_words(&tf->v, buf, sizeof buf));
		for (int32_t k = 0; k < tf->v.n; k++) {
			const struct ifield *sf = &tf->v.fields[k];
			size_t ln = strlen(tf->name), ls = strlen(sf->name);
			char *name = fa_arena_alloc(&cx->m->arena, ln + ls + 2);
			if (!name)
				return fa_import_nomem(cx);
			memcpy(name, tf->name, ln);
			name[ln] = '_';
			memcpy(name + ln + 1, sf->name, ls); /* zeroed: terminated */
			f[n] = *sf;
			f[n].name = name;
			n++;
		}
	}
	flat->fields = f;
	flat->n = n;
	return FA_OK;
}

int fa_import_header_field_is(const char *name)
{
	for (int i = 0; i < HF_COUNT; i++)
		if (strcmp(hfields[i], name) == 0)
			return 1;
	return 0;
}

int fa_import_param_is_list(const char *name)
{
	return param_is_list(fa_param_lookup(name));
}

/* 1 when obj has field name with value word (a report's scale_set 0: the
 * scale written out is the default and must not become an explicit one;
 * varlen 1: batch, q_len and kv_len written out follow from the seqlens). */
static int field_is(const struct ival *obj, const char *name, const char *word)
{
	for (int32_t k = 0; k < obj->n; k++)
		if (strcmp(obj->fields[k].name, name) == 0) {
			const struct ival *v = &obj->fields[k].v;
			return v->s && strcmp(v->s, word) == 0;
		}
	return 0;
}

/* A label's layer count from its text: 1 when s is a whole number from 1
 * that fits an int32 (then *out), else 0. */
static int layers_of(const char *s, int32_t *out)
{
	char *end;
	long long v;
	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v < 1 || v > INT32_MAX)
		return 0;
	*out = (int32_t)v;
	return 1;
}

/* A report's labels of a case into *lbl (at most max; names in the arena):
 * JSON's "tags" (objects of name, model, layers) or CSV's "models" (names
 * joined by ';'); a name that is a model preset's is that model, with its
 * layers unless the row gives them. */
static enum fa_rc take_labels(struct ctx *cx, const struct ifield *f, struct fa_case_tag *lbl,
			      int32_t max, int32_t *n)
{
	const int is_list = f->v.kind == IK_LIST;
	if (!is_list && f->v.kind != IK_RAW && f->v.kind != IK_STR)
		return fa_err_at(cx->err, &f->loc, "'%s' is %s", f->name,
				 is_list ? "a list of labels" : "labels joined by ';'");
	const char *s = is_list ? NULL : f->v.s;
	for (int32_t k = 0; is_list ? k < f->v.n : *s != '\0'; k++) {
		const char *name = NULL;
		char buf[FA_TAG_MAX + 1];
		int32_t layers = -1, model = -1;
		struct fa_loc l = is_list ? f->v.items[k].loc : f->v.loc;
		struct fa_loc at = l; /* where its layers come from: layers, else its name */
		if (is_list) {
			const struct ival *o = &f->v.items[k];
			if (o->kind != IK_OBJ)
				return fa_err_at(cx->err, &o->loc,
						 "a label of 'tags' is an object (name, model, layers)");
			for (int32_t j = 0; j < o->n; j++) {
				const struct ifield *g = &o->fields[j];
				if (strcmp(g->name, "name") == 0 && g->v.kind == IK_STR) {
					name = g->v.s;
					if (layers < 0)
						at = g->v.loc;
				} else if (strcmp(g->name, "model") == 0 && g->v.kind == IK_BOOL)
					model = strcmp(g->v.s, "true") == 0;
				else if (strcmp(g->name, "layers") == 0 && g->v.kind == IK_NUM) {
					if (!layers_of(g->v.s, &layers))
						return fa_err_at(cx->err, &g->v.loc,
								 "a label's layers '%s' is not a layer "
								 "count (a whole number from 1)",
								 g->v.s);
					at = g->v.loc;
				}
				else if (!(strcmp(g->name, "layers") == 0 && g->v.kind == IK_NULL) &&
					 strcmp(g->name, "tokens_per_s") != 0)
					return fa_err_at(cx->err, &g->loc,
							 "unknown field '%s' of a label (name, model, "
							 "layers, tokens_per_s)",
							 g->name);
			}
		} else {
			size_t len = strcspn(s, ";");
			if (len == 0 || len > FA_TAG_MAX)
				return fa_err_at(cx->err, &l, "'%s': label %d %s", f->name, k + 1,
						 fa_tag_text_why(s, len));
			memcpy(buf, s, len);
			buf[len] = '\0';
			name = buf;
			at = fa_import_loc_in(&f->v, (size_t)(s - f->v.s));
			s += len + (s[len] == ';');
		}
		if (!name || !*name)
			return fa_err_at(cx->err, &l, "a label of '%s' has no name", f->name);
		const char *why = fa_tag_text_why(name, strlen(name));
		if (why)
			return fa_err_at(cx->err, &l, "label '%.*s%s' %s",
					 strlen(name) > FA_TAG_MAX ? 20 : FA_TAG_MAX, name,
					 strlen(name) > FA_TAG_MAX ? "..." : "", why);
		if (*n == max)
			return fa_err_at(cx->err, &l, "more than %d labels on one case", max);
		const int m = fa_model_lookup(name);
		struct fa_case_tag *t = &lbl[(*n)++];
		t->model = model >= 0 ? model : m >= 0;
		t->layers = layers >= 0 ? layers : m >= 0 ? fa_models[m].layers : 0;
		t->loc = at;
		if (!(t->name = fa_arena_alloc(&cx->m->arena, strlen(name) + 1)))
			return fa_import_nomem(cx);
		strcpy(t->name, name);
	}
	return FA_OK;
}

/* A report CSV's label_layers (f): the layers of each label of models,
 * joined by ';' in the same order, empty where a label has none; sets them
 * on lbl[0..n). */
static enum fa_rc take_label_layers(struct ctx *cx, const struct ifield *f,
				    struct fa_case_tag *lbl, int32_t n)
{
	const char *s = f->v.s ? f->v.s : "";
	int32_t entries = 1;
	if (f->v.kind != IK_RAW && f->v.kind != IK_STR && f->v.kind != IK_NUM)
		return fa_err_at(cx->err, &f->v.loc, "'label_layers' is layers joined by ';'");
	if (n == 0)
		return fa_err_at(cx->err, &f->v.loc, "'label_layers' without the labels of 'models'");
	for (const char *p = s; *p; p++)
		entries += *p == ';';
	if (entries != n)
		return fa_err_at(cx->err, &f->v.loc,
				 "'label_layers' has %d entr%s for the %d label%s of 'models'", entries,
				 entries == 1 ? "y" : "ies", n, n == 1 ? "" : "s");
	for (int32_t k = 0; k < n; k++) {
		size_t len = strcspn(s, ";");
		if (len) {
			char buf[16];
			if (len >= sizeof buf)
				len = sizeof buf - 1;
			memcpy(buf, s, len);
			buf[len] = '\0';
			if (!layers_of(buf, &lbl[k].layers))
				return fa_err_at(cx->err, &f->v.loc,
						 "'label_layers' entry %d '%s' is not a layer count "
						 "(a whole number from 1)",
						 k + 1, buf);
			lbl[k].loc = fa_import_loc_in(&f->v, (size_t)(s - f->v.s));
		}
		s += strcspn(s, ";");
		s += *s == ';';
	}
	return FA_OK;
}

enum fa_rc fa_import_take_row(struct ctx *cx, const struct ival *obj_in,
			      const struct fa_loc *row_loc)
{
	struct fa_case_tag labels[16];
	int32_t n_labels = 0;
	const struct ifield *label_layers = NULL;
	struct fa_import *im = cx->im;
	struct mem *m = cx->m;
	const struct ival *pv[FA_P_COUNT] = {0}, *rv[RF_COUNT] = {0}, *zero_n = NULL;
	const struct ifield *gf[FA_GRAD_COUNT][RF_COUNT] = {{0}};
	struct ival flat;
	const struct ival *obj = &flat;
	struct fa_import_row *row;
	struct fa_result *r;
	const struct fa_case *c;
	const char *kernel = NULL, *params = "", *dkey;
	int32_t case_idx = -1, prev;
	int default_scale = field_is(obj_in, "scale_set", "0") || field_is(obj_in, "scale_set", "false");
	int varlen = field_is(obj_in, "varlen", "1") || field_is(obj_in, "varlen", "true");
	enum fa_rc rc;

	if ((rc = flatten_grads(cx, obj_in, &flat)) != FA_OK)
		return rc;
	/* sort the fields into case parameters, result fields and the
	 * gradients' fields; null is absent */
	for (int32_t k = 0; k < obj->n; k++) {
		const struct ifield *f = &obj->fields[k];
		int p = fa_param_lookup(f->name), q = -1, gt, gq;
		if (p < 0 && grad_field(f->name, &gt, &gq)) {
			if (gf[gt][gq])
				return fa_err_at(cx->err, &f->loc, "'%s' given twice", f->name);
			if (f->v.kind != IK_NULL)
				gf[gt][gq] = f;
			continue;
		}
		for (int i = 0; i < RF_COUNT && q < 0 && p < 0; i++)
			if (strcmp(rfields[i].name, f->name) == 0)
				q = i;
		if (p < 0 && q < 0 && strcmp(f->name, "case_key") == 0)
			q = RF_KEY; /* a report's CSV */
		if (p < 0 && q < 0 &&
		    (strcmp(f->name, "tags") == 0 || strcmp(f->name, "models") == 0)) {
			/* a report's labels of the case: its models and tags */
			if (f->v.kind != IK_NULL &&
			    (rc = take_labels(cx, f, labels, 16, &n_labels)) != FA_OK)
				return rc;
			continue;
		}
		if (p < 0 && q < 0 && strcmp(f->name, "label_layers") == 0) {
			if (f->v.kind != IK_NULL)
				label_layers = f;
			continue;
		}
		if ((p < 0 && q < 0 && fa_import_report_only(f->name)) ||
		    (default_scale && strcmp(f->name, "scale") == 0) ||
		    (varlen && (strcmp(f->name, "batch") == 0 || strcmp(f->name, "q_len") == 0 ||
				strcmp(f->name, "kv_len") == 0)))
			continue;
		/* a report writes 0 samples for a result nothing timed (and no
		 * median: checked after the fields) */
		if (q == RF_N_SAMPLES && f->v.s && strcmp(f->v.s, "0") == 0) {
			zero_n = &f->v;
			continue;
		}
		if (p < 0 && q < 0) {
			if (strcmp(f->name, "run") == 0)
				return fa_err_at(cx->err, &f->loc,
						 "a run header must be the first line, alone in its "
						 "object");
			return fa_import_unknown_field(cx, &f->loc,
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
	if (zero_n && (rv[RF_MEDIAN] || rv[RF_SAMPLES]))
		return fa_err_at(cx->err, &zero_n->loc,
				 "n_samples 0 says nothing was timed, but the row has %s",
				 rv[RF_SAMPLES] ? "samples" : "median_ms");
	if (label_layers && (rc = take_label_layers(cx, label_layers, labels, n_labels)) != FA_OK)
		return rc;
	if ((rc = take_case(cx, pv, rv[RF_KEY], rv[RF_SEED], row_loc, &case_idx)) != FA_OK)
		return rc;
	if (n_labels) {
		struct fa_case from = {0};
		from.tags = labels;
		from.n_tags = n_labels;
		if ((rc = fa_case_merge_repeat(&im->cases[case_idx], &from, 1, cx->err)) != FA_OK)
			return rc;
		if (fa_case_merge_tags(&im->cases[case_idx], &from) != 0)
			return fa_import_nomem(cx);
	}
	c = &im->cases[case_idx];

	if (!rv[RF_KERNEL])
		return fa_err_at(cx->err, row_loc, "missing field 'kernel'");
	if ((rc = get_text(cx, "kernel", rv[RF_KERNEL], &kernel)) != FA_OK)
		return rc;
	if (!kernel_name_ok(kernel))
		return fa_err_at(cx->err, &rv[RF_KERNEL]->loc,
				 "kernel name '%s' must be 1 to %d letters, digits or _ . + - : / @",
				 kernel, IMPORT_KERNEL_MAX);
	if (rv[RF_PARAMS] && ((rc = get_text(cx, "params", rv[RF_PARAMS], &params)) != FA_OK ||
			      (rc = params_check(cx, rv[RF_PARAMS], params)) != FA_OK))
		return rc;
	/* one result per case, kernel and params, as in a fabench run */
	{
		size_t lk = strlen(c->key), lq = strlen(kernel), lp = strlen(params);
		char *d = fa_arena_alloc(&m->arena, lk + lq + lp + 3);
		if (!d)
			return fa_import_nomem(cx);
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
			return fa_import_nomem(cx);
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
	    (rc = take_stats(cx, rv, r)) != FA_OK ||
	    (rc = take_grads(cx, (const struct ifield *const (*)[RF_COUNT])gf, c, r)) != FA_OK)
		return rc;

	/* what fabench computes itself */
	r->flops = fa_problem_flops(&c->p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens) *
			fa_pass_flops_factor(c->pass);
	r->bytes = fa_problem_bytes(&c->p, c->cu_seqlens_q, c->cu_seqlens_k, c->pass);
	r->tflops = r->gbps = NAN;
	if (r->t.n > 0 && r->t.median_ms > 0) {
		r->tflops = r->flops / (r->t.median_ms * 1e-3) / 1e12;
		r->gbps = r->bytes / (r->t.median_ms * 1e-3) / 1e9;
	}
	r->mem_bytes = NAN;
	r->tel.sm_clock_mhz = r->tel.sm_clock_max_mhz = r->tel.temp_c = r->tel.power_w = NAN;
	r->tel.throttle_reasons = -1;
	if (smap_put(&m->results, dkey, im->n_rows) != 0)
		return fa_import_nomem(cx);
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

static int digits2(const char *s)
{
	return (s[0] - '0') * 10 + (s[1] - '0');
}

/* A started_at of iso_time_ok's form that names no real time (2026-02-30,
 * 25:00): the error at the field that is wrong. Leap seconds (:60) are
 * refused: fabench's own times (gmtime of the POSIX clock) never show one. */
static enum fa_rc iso_time_check(struct ctx *cx, const struct ival *v, const char *s)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y = digits2(s) * 100 + digits2(s + 2), mo = digits2(s + 5), d = digits2(s + 8);
	int leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0), dim;
	struct fa_loc l;
	if (mo < 1 || mo > 12) {
		l = fa_import_loc_in(v, 5);
		return fa_err_at(cx->err, &l, "started_at '%s' has month %02d (01 to 12)", s, mo);
	}
	dim = mdays[mo - 1] + (mo == 2 && leap);
	if (d < 1 || d > dim) {
		l = fa_import_loc_in(v, 8);
		return fa_err_at(cx->err, &l, "started_at '%s' has day %02d (%.7s has days 01 to %d)",
				 s, d, s, dim);
	}
	static const struct {
		int at, max;
		const char *what;
	} hms[] = {{11, 23, "hour"}, {14, 59, "minute"}, {17, 59, "second"}};
	for (size_t i = 0; i < sizeof hms / sizeof hms[0]; i++)
		if (digits2(s + hms[i].at) > hms[i].max) {
			l = fa_import_loc_in(v, (size_t)hms[i].at);
			return fa_err_at(cx->err, &l, "started_at '%s' has %s %.2s (00 to %d)", s,
					 hms[i].what, s + hms[i].at, hms[i].max);
		}
	return FA_OK;
}

/* One field of the run header. */
enum fa_rc fa_import_take_header_field(struct ctx *cx, const char *name, const struct fa_loc *nl,
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
		return fa_import_unknown_field(cx, nl, "run field", name, 1);
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
	if (f == HF_STARTED_AT && (rc = iso_time_check(cx, v, *dst[f])) != FA_OK)
		return rc;
	if (f == HF_BACKEND && !kernel_name_ok(*dst[f]))
		return fa_err_at(cx->err, &v->loc, "backend '%s' must be a word like cuda", *dst[f]);
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
		fa_case_free_tags(&im->cases[k]);
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
	if (!(im->path = fa_import_strndup(&m->arena, name, strlen(name)))) {
		fa_import_free(im);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory reading '%s'", name);
	}
	cx = (struct ctx){im, m, im->path, err, 0};
	/* a UTF-8 byte order mark (Windows editors and Excel write one) is
	 * skipped, as the suite loader skips it; columns count from after it,
	 * as libyaml's do */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		text += 3;
		len -= 3;
	}
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
		struct fa_loc l = {im->path, line, fa_utf8_col(ls, nul)};
		rc = fa_err_at(err, &l, "NUL byte in the file");
	} else {
		rc = format == FA_IMPORT_CSV		? fa_import_parse_csv(&cx, text, len)
		     : fa_import_is_document(text, len) ? fa_import_parse_report_json(&cx, text, len)
							: fa_import_parse_jsonl(&cx, text, len);
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

