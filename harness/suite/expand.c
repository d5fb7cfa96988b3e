/* expand.c - case parameters and the expansion of one suite file or group
 * into cases: parsing parameter values (with the k suffix and range
 * mappings), axes, zip and exclude; the product of the dimensions; building
 * and validating each case's struct fa_problem; and the where/exclude filters.
 *
 * Errors point at the value that caused them. Combinations that need other
 * parameters to be judged (a prefix longer than the keys) keep their error
 * pending, so a where or exclude can still drop them (see struct fa_work).
 */
#include "expand.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../base/text.h"
#include "../run/data.h"
#include "models.h"

/* ---- nodes and scalars */

struct fa_loc fa_src_loc(const struct fa_src *src, const yaml_node_t *n)
{
	struct fa_loc l = {src->file, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
	return l;
}

/* A walk through a scalar's source: byte offset and its line and column
 * (columns in characters, as libyaml's marks count them). */
struct walk {
	const char *b;
	size_t len, i;
	int line, col;
};

static void walk_step(struct walk *w)
{
	if (w->i >= w->len)
		return;
	if (w->b[w->i] == '\n') {
		w->line++;
		w->col = 1;
		w->i++;
		return;
	}
	w->i++;
	while (w->i < w->len && ((unsigned char)w->b[w->i] & 0xc0) == 0x80)
		w->i++; /* the rest of a UTF-8 character */
	w->col++;
}

static int hex_value(const char *s, int n, unsigned long *out)
{
	unsigned long v = 0;
	for (int k = 0; k < n; k++) {
		const int d = fa_hex_digit((unsigned char)s[k]);
		if (d < 0)
			return -1;
		v = v * 16 + (unsigned long)d;
	}
	*out = v;
	return 0;
}

/* A double-quoted scalar's escape at w (a backslash): its source length and
 * the bytes it makes in the text; -1 when it is not one libyaml takes. */
static int escape_size(const struct walk *w, int *made)
{
	const char *s = w->b + w->i;
	size_t left = w->len - w->i;
	unsigned long cp;
	int n = 0;
	if (left < 2)
		return -1;
	switch (s[1]) {
	case 'x': n = 2; break;
	case 'u': n = 4; break;
	case 'U': n = 8; break;
	case 'N': case '_': *made = 2; return 2;
	case 'L': case 'P': *made = 3; return 2;
	default: *made = 1; return 2;
	}
	if (left < (size_t)n + 2 || hex_value(s + 2, n, &cp) != 0)
		return -1;
	*made = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	return n + 2;
}

const struct fa_loc *fa_scalar_map(const struct fa_src *src, const yaml_node_t *n)
{
	if (!src->buf || n->type != YAML_SCALAR_NODE)
		return NULL;
	const int style = n->data.scalar.style;
	const unsigned char *v = n->data.scalar.value;
	const size_t vlen = n->data.scalar.length;
	struct walk w = {src->buf, src->len, 0, 1, 1};
	if (w.len >= 3 && memcmp(w.b, "\xef\xbb\xbf", 3) == 0)
		w.i = 3; /* libyaml's marks start after a byte order mark */
	/* the node's start mark, by lines and characters */
	while (w.line <= (int)n->start_mark.line) {
		const char *nl = memchr(w.b + w.i, '\n', w.len - w.i);
		if (!nl)
			return NULL;
		w.i = (size_t)(nl - w.b) + 1;
		w.line++;
	}
	w.line = (int)n->start_mark.line + 1;
	while (w.col <= (int)n->start_mark.column && w.i < w.len && w.b[w.i] != '\n')
		walk_step(&w);
	if (style == YAML_SINGLE_QUOTED_SCALAR_STYLE || style == YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
		walk_step(&w); /* the opening quote */
	} else if (style == YAML_LITERAL_SCALAR_STYLE || style == YAML_FOLDED_SCALAR_STYLE) {
		while (w.i < w.len && w.b[w.i] != '\n') /* the indicator's line */
			walk_step(&w);
		walk_step(&w);
	}
	struct fa_loc *map = fa_arena_alloc(src->arena, (vlen + 1) * sizeof *map);
	if (!map)
		return NULL;
	for (size_t k = 0; k < vlen;) {
		if (w.i >= w.len) { /* a block's last line break, past the file's end */
			for (; k < vlen; k++)
				map[k] = (struct fa_loc){src->file, w.line, w.col};
			break;
		}
		const char c = w.b[w.i];
		const struct fa_loc here = {src->file, w.line, w.col};
		if (style == YAML_DOUBLE_QUOTED_SCALAR_STYLE && c == '\\') {
			if (w.i + 1 < w.len && (w.b[w.i + 1] == '\n' || w.b[w.i + 1] == '\r')) {
				walk_step(&w); /* an escaped line break makes nothing */
				continue;
			}
			int made, size = escape_size(&w, &made);
			if (size < 0)
				return NULL;
			for (int m = 0; m < made && k < vlen; m++)
				map[k++] = here;
			for (int m = 0; m < size; m++)
				walk_step(&w);
			continue;
		}
		if (style == YAML_SINGLE_QUOTED_SCALAR_STYLE && c == '\'' && w.i + 1 < w.len &&
		    w.b[w.i + 1] == '\'' && v[k] == '\'') {
			map[k++] = here;
			walk_step(&w);
			walk_step(&w);
			continue;
		}
		if ((unsigned char)c == v[k]) { /* the same character, byte by byte */
			size_t i0 = w.i;
			walk_step(&w);
			for (size_t m = i0; m < w.i && k < vlen; m++)
				map[k++] = here;
			continue;
		}
		if ((v[k] == ' ' || v[k] == '\n') && (c == '\n' || c == '\r')) {
			map[k++] = here; /* a folded line break */
			walk_step(&w);
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			walk_step(&w); /* indentation, or spaces folding drops */
			continue;
		}
		return NULL;
	}
	map[vlen] = (struct fa_loc){src->file, w.line, w.col};
	return map;
}

yaml_node_t *fa_src_node(const struct fa_src *src, int i)
{
	return yaml_document_get_node(src->doc, i);
}

const char *fa_node_words(const yaml_node_t *n, char *buf, size_t size)
{
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a sequence";
	if (n->data.scalar.length == 0)
		return "nothing";
	if (n->data.scalar.length > 60) /* keep messages on one screen line */
		snprintf(buf, size, "'%.57s...'", (const char *)n->data.scalar.value);
	else
		snprintf(buf, size, "'%s'", (const char *)n->data.scalar.value);
	return buf;
}

int fa_parse_int(const char *s, int64_t *out)
{
	const char *p = s;
	int neg = 0;
	uint64_t v = 0;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (uint64_t)INT64_MAX / 10)
			return -2;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > (uint64_t)INT64_MAX)
			return -2;
	}
	if (*p == 'k' || *p == 'K') {
		if (v > (uint64_t)INT64_MAX / 1024)
			return -2;
		v *= 1024; /* 8k = 8192: sequence lengths are powers of two */
		p++;
	}
	if (*p)
		return -1;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

int fa_parse_num(const char *s, double *out)
{
	int64_t i;
	char *end;
	int r = fa_parse_int(s, &i);
	if (r == 0) {
		*out = (double)i;
		return 0;
	}
	if (!*s || *s == ' ' || *s == '\t')
		return -1;
	double d = strtod(s, &end);
	if (*end || !isfinite(d))
		return -1;
	/* strtod also reads hex floats and "infinity"; accept decimal forms only */
	for (const char *p = s; *p; p++)
		if (!strchr("0123456789+-.eE", *p))
			return -1;
	*out = d;
	return 0;
}

/* ---- the parameter table */

enum pkind {
	PK_SIZE,   /* integer >= 1 */
	PK_DIM,    /* integer 1..FA_MAX_HEAD_DIM */
	PK_NONNEG, /* integer >= 0 */
	PK_ENUM,   /* a word */
	PK_NUM,    /* a number > 0 */
	PK_LIST,   /* a list of integers >= 0 */
	PK_MODEL,  /* a model preset's name (models.c) */
	PK_TEXT,   /* a free label */
};

/* The largest head size any kernel or the reference is asked to handle; it
 * bounds per-row scratch buffers, and real models stop at 256. */
#define FA_MAX_HEAD_DIM 1024
#define FA_STR_(x) #x
#define FA_STR(x) FA_STR_(x)

static const struct param_info {
	const char *name;
	int kind;
	int (*parse)(const char *); /* PK_ENUM */
	const char *expected;       /* PK_ENUM: the words, for messages */
} params[FA_P_COUNT] = {
	[FA_P_BATCH] = {"batch", PK_SIZE, NULL, NULL},
	[FA_P_HEADS] = {"heads", PK_SIZE, NULL, NULL},
	[FA_P_KV_HEADS] = {"kv_heads", PK_SIZE, NULL, NULL},
	[FA_P_GQA] = {"gqa", PK_SIZE, NULL, NULL},
	[FA_P_Q_LEN] = {"q_len", PK_SIZE, NULL, NULL},
	[FA_P_KV_LEN] = {"kv_len", PK_SIZE, NULL, NULL},
	[FA_P_SEQ_LEN] = {"seq_len", PK_SIZE, NULL, NULL},
	[FA_P_HEAD_DIM] = {"head_dim", PK_DIM, NULL, NULL},
	[FA_P_HEAD_DIM_V] = {"head_dim_v", PK_DIM, NULL, NULL},
	[FA_P_DTYPE] = {"dtype", PK_ENUM, fa_dtype_parse, "fp32, fp16 or bf16"},
	[FA_P_MASK] = {"mask", PK_ENUM, fa_mask_parse, "none, causal, prefix_lm or sliding_window"},
	[FA_P_PREFIX_LEN] = {"prefix_len", PK_NONNEG, NULL, NULL},
	[FA_P_WINDOW] = {"window", PK_SIZE, NULL, NULL},
	[FA_P_LAYOUT] = {"layout", PK_ENUM, fa_layout_parse, "bshd or bhsd"},
	[FA_P_SEQLENS] = {"seqlens", PK_LIST, NULL, NULL},
	[FA_P_KV_SEQLENS] = {"kv_seqlens", PK_LIST, NULL, NULL},
	[FA_P_PREFIX_LENS] = {"prefix_lens", PK_LIST, NULL, NULL},
	[FA_P_SCALE] = {"scale", PK_NUM, NULL, NULL},
	[FA_P_INPUT] = {"input", PK_ENUM, fa_dist_parse, "normal, uniform or outliers"},
	[FA_P_DEPTH] = {"depth", PK_NONNEG, NULL, NULL},
	[FA_P_MODEL] = {"model", PK_MODEL, NULL, NULL},
	[FA_P_TAG] = {"tag", PK_TEXT, NULL, NULL},
	[FA_P_LAYERS] = {"layers", PK_SIZE, NULL, NULL},
	[FA_P_PASS] = {"pass", PK_ENUM, fa_pass_parse, "fwd, bwd or fwd_bwd"},
};

const char *fa_tag_text_why(const char *s, size_t len)
{
	if (len == 0)
		return "is empty";
	if (len > FA_TAG_MAX)
		return "is longer than 64 characters";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == ',' || s[i] == ';')
			return "holds a comma, ';' or a control character";
	return NULL;
}

int fa_param_lookup(const char *key)
{
	for (int i = 0; i < FA_P_COUNT; i++)
		if (strcmp(params[i].name, key) == 0)
			return i;
	return -1;
}

const char *fa_param_name(int param)
{
	return params[param].name;
}

const char *fa_param_suggest(const char *key)
{
	const char *best = NULL;
	int bd = 3;
	for (int i = 0; i < FA_P_COUNT; i++) {
		int d = fa_edit_distance(key, params[i].name);
		if (d < bd) {
			bd = d;
			best = params[i].name;
		}
	}
	return bd <= 2 ? best : NULL;
}

static int is_int_kind(int kind)
{
	return kind == PK_SIZE || kind == PK_DIM || kind == PK_NONNEG;
}

static const char *expected_words(int param)
{
	switch (params[param].kind) {
	case PK_ENUM:
	case PK_MODEL:
	case PK_TEXT: return "a word";
	case PK_NUM: return "a number";
	case PK_LIST: return "a list of integers";
	default: return "an integer";
	}
}

static enum fa_rc type_error(const struct fa_src *src, int param, const yaml_node_t *n)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(src, n);
	return fa_err_at(src->err, &l, "expected %s for '%s', got %s", expected_words(param),
			 params[param].name, fa_node_words(n, buf, sizeof buf));
}

/* Checks an integer value of param against its kind's range. */
static enum fa_rc check_int(const struct fa_src *src, int param, int64_t v, const struct fa_loc *l)
{
	const char *name = params[param].name;
	int kind = params[param].kind;
	if (kind == PK_NONNEG && v < 0)
		return fa_err_at(src->err, l, "%s %lld must not be negative", name, (long long)v);
	if (kind != PK_NONNEG && v < 1)
		return fa_err_at(src->err, l, "%s %lld must be positive", name, (long long)v);
	if (kind == PK_DIM && v > FA_MAX_HEAD_DIM)
		return fa_err_at(src->err, l, "%s %lld is too large (at most %d)", name, (long long)v,
				 FA_MAX_HEAD_DIM);
	if (v > INT32_MAX)
		return fa_err_at(src->err, l, "%s %lld is too large (at most %d)", name, (long long)v,
				 INT32_MAX);
	return FA_OK;
}

static enum fa_rc derived_value(const struct fa_src *src, int param, const yaml_node_t *n,
				struct fa_pval *out);

/* A scalar value of a non-list parameter. */
static enum fa_rc scalar_value(const struct fa_src *src, int param, const yaml_node_t *n,
			       struct fa_pval *out)
{
	const struct param_info *pi = &params[param];
	const char *text = (const char *)n->data.scalar.value;
	struct fa_loc l = fa_src_loc(src, n);
	memset(out, 0, sizeof *out);
	out->loc = l;
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.length == 0)
		return type_error(src, param, n);
	if (is_int_kind(pi->kind)) {
		int r = fa_parse_int(text, &out->i);
		if (r == -2)
			return fa_err_at(src->err, &l, "%s %s is too large (at most %d)", pi->name, text,
					 pi->kind == PK_DIM ? FA_MAX_HEAD_DIM : INT32_MAX);
		if (r != 0 && strpbrk(text, " +-*/%()?<>="))
			return derived_value(src, param, n, out);
		if (r != 0) {
			/* a bare name (kv_len: q_len) is not read as an expression,
			 * so that a misspelt number says what it is; say how to
			 * derive the value when the word is a name that could */
			struct fa_expr *e = NULL;
			struct fa_err scratch;
			fa_err_clear(&scratch);
			if (((text[0] >= 'a' && text[0] <= 'z') || text[0] == '_') &&
			    fa_expr_parse_number(text, &l, &e, &scratch) == FA_OK) {
				fa_expr_free(e);
				return fa_err_at(src->err, &l, "expected an integer for '%s', got '%s' (to "
						 "derive it from %s, write an expression: '%s * 1')",
						 pi->name, text, text, text);
			}
			return type_error(src, param, n);
		}
		return check_int(src, param, out->i, &l);
	}
	if (pi->kind == PK_MODEL) {
		int m = fa_model_lookup(text);
		if (m < 0) {
			const char *hint = fa_model_suggest(text);
			char known[512];
			size_t used = 0;
			known[0] = '\0';
			for (int k = 0; fa_models[k].name && used < sizeof known; k++)
				used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
							 k ? ", " : "", fa_models[k].name);
			if (hint)
				return fa_err_at(src->err, &l, "unknown model '%s' (did you mean '%s'?)", text,
						 hint);
			return fa_err_at(src->err, &l, "unknown model '%s' (known: %s; a free label is "
					 "tag:)", text, known);
		}
		out->i = m;
		out->text = fa_models[m].name;
		return FA_OK;
	}
	if (pi->kind == PK_TEXT) {
		const char *why = fa_tag_text_why(text, n->data.scalar.length);
		if (why)
			return fa_err_at(src->err, &l, "tag '%.*s%s' %s",
					 n->data.scalar.length > FA_TAG_MAX ? 20 : FA_TAG_MAX, text,
					 n->data.scalar.length > FA_TAG_MAX ? "..." : "", why);
		/* a preset's name as a free label would read as that model on a
		 * shape that is not its own */
		for (int k = 0; fa_models[k].name; k++)
			if (strcasecmp(text, fa_models[k].name) == 0)
				return fa_err_at(src->err, &l,
						 "tag '%s' is the name of a model preset: use model: %s "
						 "for its shape, or another name for a free label",
						 text, fa_models[k].name);
		char *copy = fa_arena_alloc(src->arena, n->data.scalar.length + 1);
		if (!copy)
			return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory reading '%s'", src->file);
		memcpy(copy, text, n->data.scalar.length);
		out->text = copy;
		return FA_OK;
	}
	if (pi->kind == PK_ENUM) {
		int v = pi->parse(text);
		if (v < 0)
			return fa_err_at(src->err, &l, "unknown %s '%s' (expected %s)", pi->name, text,
					 pi->expected);
		out->i = v;
		return FA_OK;
	}
	/* PK_NUM */
	if (fa_parse_num(text, &out->d) != 0)
		return type_error(src, param, n);
	if (!(out->d > 0))
		return fa_err_at(src->err, &l, "%s %s must be positive", pi->name, text);
	/* The kernels get it as a float: one that rounds to inf, to zero or to a
	 * denormal computes nothing meaningful. 0x1.ffffffp+127 is FLT_MAX plus
	 * half its ulp, the first double that rounds to inf (checked before the
	 * conversion, which is undefined out of range). */
	if (out->d >= 0x1.ffffffp+127)
		return fa_err_at(src->err, &l, "%s %s is out of range for the kernels' fp32 (max 3.4e38)",
				 pi->name, text);
	if ((float)out->d < FLT_MIN)
		return fa_err_at(src->err, &l,
				 "%s %s is out of range for the kernels' fp32 (min normal 1.2e-38)",
				 pi->name, text);
	return FA_OK;
}

/* A derived integer: an expression over the case's other parameters
 * (`kv_len: depth + q_len`), checked here and evaluated per case. */
static enum fa_rc derived_value(const struct fa_src *src, int param, const yaml_node_t *n,
				struct fa_pval *out)
{
	const char *text = (const char *)n->data.scalar.value;
	struct fa_loc l = fa_src_loc(src, n);
	struct fa_expr *e = NULL;
	enum fa_rc rc;
	if (n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
	    n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE)
		l.col++; /* the quote */
	const struct fa_loc *map = fa_scalar_map(src, n);
	if ((rc = map ? fa_expr_parse_mapped(text, map, 1, &e, src->err)
		      : fa_expr_parse_number(text, &l, &e, src->err)) != FA_OK)
		return rc;
	int self = fa_expr_uses(e, params[param].name);
	fa_expr_free(e);
	if (self)
		return fa_err_at(src->err, &l, "%s '%s' uses %s itself", params[param].name, text,
				 params[param].name);
	char *copy = fa_arena_alloc(src->arena, n->data.scalar.length + 1);
	if (!copy)
		return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory reading '%s'", src->file);
	memcpy(copy, text, n->data.scalar.length);
	out->expr = copy;
	out->loc = l;
	return FA_OK;
}

/* A sequence of integers: the value of a list parameter. */
static enum fa_rc list_value(const struct fa_src *src, int param, const yaml_node_t *n,
			     struct fa_pval *out)
{
	const struct param_info *pi = &params[param];
	struct fa_loc l = fa_src_loc(src, n);
	int32_t count;
	memset(out, 0, sizeof *out);
	out->loc = l;
	if (n->type != YAML_SEQUENCE_NODE)
		return type_error(src, param, n);
	count = (int32_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count == 0)
		return fa_err_at(src->err, &l, "empty list for '%s'", pi->name);
	out->list = fa_arena_alloc(src->arena, (size_t)count * sizeof *out->list);
	out->item_loc = fa_arena_alloc(src->arena, (size_t)count * sizeof *out->item_loc);
	if (!out->list || !out->item_loc)
		return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory reading '%s'", src->file);
	out->n = count;
	for (int32_t k = 0; k < count; k++) {
		const yaml_node_t *it = fa_src_node(src, n->data.sequence.items.start[k]);
		struct fa_loc il = fa_src_loc(src, it);
		char buf[80];
		int64_t v;
		out->item_loc[k] = il;
		if (it->type != YAML_SCALAR_NODE ||
		    fa_parse_int((const char *)it->data.scalar.value, &v) == -1)
			return fa_err_at(src->err, &il, "expected an integer in '%s', got %s", pi->name,
					 fa_node_words(it, buf, sizeof buf));
		if (fa_parse_int((const char *)it->data.scalar.value, &v) == -2 || v > INT32_MAX)
			return fa_err_at(src->err, &il, "%s entry %s is too large (at most %d)",
					 pi->name, (const char *)it->data.scalar.value, INT32_MAX);
		if (v < 0)
			return fa_err_at(src->err, &il, "%s entry %lld must not be negative", pi->name,
					 (long long)v);
		out->list[k] = (int32_t)v;
	}
	return FA_OK;
}

enum fa_rc fa_param_value(const struct fa_src *src, int param, const yaml_node_t *n,
			  struct fa_pval *out)
{
	if (params[param].kind == PK_LIST)
		return list_value(src, param, n, out);
	return scalar_value(src, param, n, out);
}

/* ---- ranges */

static enum fa_rc range_int(const struct fa_src *src, const yaml_node_t *n, const char *what,
			    int64_t *v)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(src, n);
	int r = n->type == YAML_SCALAR_NODE ? fa_parse_int((const char *)n->data.scalar.value, v) : -1;
	if (r == -1)
		return fa_err_at(src->err, &l, "expected an integer for range '%s', got %s", what,
				 fa_node_words(n, buf, sizeof buf));
	if (r == -2 || *v > INT32_MAX || *v < -(int64_t)INT32_MAX)
		return fa_err_at(src->err, &l, "range %s %s is too large (at most %d)", what,
				 (const char *)n->data.scalar.value, INT32_MAX);
	return FA_OK;
}

/* Counts (vals == NULL) or writes the values of a range mapping. */
static enum fa_rc range_values(const struct fa_src *src, int param, const yaml_node_t *n,
			       struct fa_pval *vals, int32_t *count)
{
	static const char *const keys[] = {"start", "stop", "mul", "step"};
	const yaml_node_t *kn[4] = {NULL, NULL, NULL, NULL};
	int64_t v[4] = {0, 0, 0, 0};
	struct fa_loc l = fa_src_loc(src, n);
	enum fa_rc rc;
	if (!is_int_kind(params[param].kind))
		return fa_err_at(src->err, &l, "'%s' cannot take a range (ranges are for integer "
				 "parameters)", params[param].name);
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
		const yaml_node_t *k = fa_src_node(src, pr->key);
		const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
		struct fa_loc kl = fa_src_loc(src, k);
		int which = -1;
		for (int i = 0; i < 4; i++)
			if (strcmp(key, keys[i]) == 0)
				which = i;
		if (which < 0) {
			const char *best = NULL;
			int bd = 3;
			for (int i = 0; i < 4; i++) {
				int d = fa_edit_distance(key, keys[i]);
				if (d < bd) {
					bd = d;
					best = keys[i];
				}
			}
			if (best && bd <= 2)
				return fa_err_at(src->err, &kl, "unknown key '%s' (did you mean '%s'?)", key,
						 best);
			return fa_err_at(src->err, &kl, "unknown key '%s' (a range takes start, stop and "
					 "mul or step)", key);
		}
		if (kn[which])
			return fa_err_at(src->err, &kl, "duplicate key '%s'", key);
		kn[which] = fa_src_node(src, pr->value);
		if ((rc = range_int(src, kn[which], key, &v[which])) != FA_OK)
			return rc;
	}
	if (!kn[0] || !kn[1])
		return fa_err_at(src->err, &l, "range needs '%s'", kn[0] ? "stop" : "start");
	if (!kn[2] && !kn[3])
		return fa_err_at(src->err, &l, "range needs 'mul' or 'step'");
	if (kn[2] && kn[3]) {
		struct fa_loc sl = fa_src_loc(src, kn[3]);
		return fa_err_at(src->err, &sl, "range takes 'mul' or 'step', not both");
	}
	struct fa_loc start_l = fa_src_loc(src, kn[0]), stop_l = fa_src_loc(src, kn[1]);
	if (kn[2] && v[2] < 2) {
		struct fa_loc ml = fa_src_loc(src, kn[2]);
		return fa_err_at(src->err, &ml, "range mul %lld must be at least 2", (long long)v[2]);
	}
	if (kn[3] && v[3] < 1) {
		struct fa_loc sl = fa_src_loc(src, kn[3]);
		return fa_err_at(src->err, &sl, "range step %lld must be positive", (long long)v[3]);
	}
	if ((rc = check_int(src, param, v[0], &start_l)) != FA_OK)
		return rc;
	if (kn[2] && v[0] < 1)
		return fa_err_at(src->err, &start_l, "range start %lld must be positive with 'mul'",
				 (long long)v[0]);
	if (v[1] < v[0])
		return fa_err_at(src->err, &stop_l, "range stop %lld is less than start %lld",
				 (long long)v[1], (long long)v[0]);
	int32_t c = 0;
	for (int64_t x = v[0]; x <= v[1]; x = kn[2] ? x * v[2] : x + v[3]) {
		if (c >= FA_SUITE_MAX_CASES)
			return fa_err_at(src->err, &l, "range makes more than %d values",
					 FA_SUITE_MAX_CASES);
		if (vals) {
			if (x != v[0] && (rc = check_int(src, param, x, &stop_l)) != FA_OK)
				return rc;
			vals[c].i = x;
			vals[c].loc = l;
		}
		c++;
	}
	*count = c;
	return FA_OK;
}

enum fa_rc fa_param_values(const struct fa_src *src, int param, const yaml_node_t *n,
			   struct fa_pval **vals, int32_t *count)
{
	const struct param_info *pi = &params[param];
	struct fa_loc l = fa_src_loc(src, n);
	int32_t total = 0, items;
	enum fa_rc rc;
	*vals = NULL;
	*count = 0;
	/* A list parameter given one flat list, or any parameter given one scalar:
	 * a single value. */
	if ((pi->kind == PK_LIST && n->type == YAML_SEQUENCE_NODE &&
	     n->data.sequence.items.top > n->data.sequence.items.start &&
	     fa_src_node(src, n->data.sequence.items.start[0])->type == YAML_SCALAR_NODE) ||
	    n->type == YAML_SCALAR_NODE) {
		if (!(*vals = fa_arena_alloc(src->arena, sizeof **vals)))
			return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory");
		*count = 1;
		return fa_param_value(src, param, n, *vals);
	}
	if (n->type == YAML_MAPPING_NODE) {
		if ((rc = range_values(src, param, n, NULL, &total)) != FA_OK)
			return rc;
		if (!(*vals = fa_arena_alloc(src->arena, (size_t)total * sizeof **vals)))
			return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory");
		*count = total;
		return range_values(src, param, n, *vals, &total);
	}
	items = (int32_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (items == 0)
		return fa_err_at(src->err, &l, "empty list of values for '%s'", pi->name);
	for (int32_t k = 0; k < items; k++) {
		const yaml_node_t *it = fa_src_node(src, n->data.sequence.items.start[k]);
		int32_t c = 1;
		if (it->type == YAML_MAPPING_NODE && pi->kind != PK_LIST &&
		    (rc = range_values(src, param, it, NULL, &c)) != FA_OK)
			return rc;
		if (total > FA_SUITE_MAX_CASES - c)
			return fa_err_at(src->err, &l, "more than %d values for '%s'",
					 FA_SUITE_MAX_CASES, pi->name);
		total += c;
	}
	if (!(*vals = fa_arena_alloc(src->arena, (size_t)total * sizeof **vals)))
		return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory");
	total = 0;
	for (int32_t k = 0; k < items; k++) {
		const yaml_node_t *it = fa_src_node(src, n->data.sequence.items.start[k]);
		int32_t c = 1;
		if (it->type == YAML_MAPPING_NODE && pi->kind != PK_LIST)
			rc = range_values(src, param, it, *vals + total, &c);
		else if (pi->kind == PK_LIST)
			rc = list_value(src, param, it, *vals + total);
		else if (it->type != YAML_SCALAR_NODE)
			rc = type_error(src, param, it);
		else
			rc = scalar_value(src, param, it, *vals + total);
		if (rc != FA_OK)
			return rc;
		total += c;
	}
	*count = total;
	return FA_OK;
}

/* ---- parameter mappings */

/* The parameter at key node k, checking it is known and not repeated. */
static enum fa_rc param_key(const struct fa_src *src, const yaml_node_t *k, int seen[FA_P_COUNT],
			    int *param)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(src, k);
	if (k->type != YAML_SCALAR_NODE)
		return fa_err_at(src->err, &l, "expected a parameter name, got %s",
				 fa_node_words(k, buf, sizeof buf));
	const char *key = (const char *)k->data.scalar.value;
	*param = fa_param_lookup(key);
	if (*param < 0) {
		const char *hint = fa_param_suggest(key);
		if (hint)
			return fa_err_at(src->err, &l, "unknown key '%s' (did you mean '%s'?)", key, hint);
		return fa_err_at(src->err, &l, "unknown key '%s'", key);
	}
	if (seen[*param])
		return fa_err_at(src->err, &l, "duplicate key '%s'", key);
	seen[*param] = 1;
	return FA_OK;
}

static enum fa_rc expect_mapping(const struct fa_src *src, const yaml_node_t *n, const char *what)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(src, n);
	if (n->type == YAML_MAPPING_NODE)
		return FA_OK;
	return fa_err_at(src->err, &l, "expected a mapping for '%s', got %s", what,
			 fa_node_words(n, buf, sizeof buf));
}

static int32_t mapping_size(const yaml_node_t *n)
{
	return (int32_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

enum fa_rc fa_parse_defaults(const struct fa_src *src, const yaml_node_t *n, fa_bindings b)
{
	int seen[FA_P_COUNT] = {0};
	enum fa_rc rc;
	if ((rc = expect_mapping(src, n, "defaults")) != FA_OK)
		return rc;
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
		int param;
		struct fa_pval *v;
		if ((rc = param_key(src, fa_src_node(src, pr->key), seen, &param)) != FA_OK)
			return rc;
		if (!(v = fa_arena_alloc(src->arena, sizeof *v)))
			return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory");
		if ((rc = fa_param_value(src, param, fa_src_node(src, pr->value), v)) != FA_OK)
			return rc;
		b[param] = v;
	}
	return FA_OK;
}

static const char *origin_text(const char *owner, const char *what)
{
	if (strcmp(owner, "group") == 0)
		return strcmp(what, "axes") == 0 ? "the group's axes" : "the group's zip";
	return strcmp(what, "axes") == 0 ? "the file's axes" : "the file's zip";
}

enum fa_rc fa_parse_axes(const struct fa_src *src, const yaml_node_t *n, const char *owner,
			 struct fa_dim **dims, int32_t *count)
{
	int seen[FA_P_COUNT] = {0};
	enum fa_rc rc;
	int32_t k = 0;
	*dims = NULL;
	*count = 0;
	if ((rc = expect_mapping(src, n, "axes")) != FA_OK)
		return rc;
	if (mapping_size(n) == 0)
		return FA_OK;
	if (!(*dims = fa_arena_alloc(src->arena, (size_t)mapping_size(n) * sizeof **dims)))
		return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory");
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
	     pr++, k++) {
		struct fa_dim *d = &(*dims)[k];
		const yaml_node_t *kn = fa_src_node(src, pr->key);
		int param;
		if ((rc = param_key(src, kn, seen, &param)) != FA_OK)
			return rc;
		d->n_params = 1;
		d->param[0] = param;
		d->key_loc[0] = fa_src_loc(src, kn);
		d->origin = origin_text(owner, "axes");
		if ((rc = fa_param_values(src, param, fa_src_node(src, pr->value), &d->vals[0],
					  &d->len)) != FA_OK)
			return rc;
	}
	*count = k;
	return FA_OK;
}

/* The number of items of n, the value of key: a list of mappings, or a
 * single mapping, which counts as a one-entry list. FA_OK, or an error at n
 * when it is a scalar. */
static enum fa_rc mapping_list_size(const struct fa_src *src, const yaml_node_t *n,
				    const char *key, int32_t *items)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(src, n);
	*items = 0;
	if (n->type == YAML_SCALAR_NODE)
		return fa_err_at(src->err, &l, "expected a list of mappings for '%s', got %s", key,
				 fa_node_words(n, buf, sizeof buf));
	*items = n->type == YAML_MAPPING_NODE
			 ? 1
			 : (int32_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	return FA_OK;
}

/* Item k of n (as mapping_list_size counts them) into *m. FA_OK, or an error
 * at the item when it is not a mapping or is an empty one. */
static enum fa_rc mapping_list_item(const struct fa_src *src, const yaml_node_t *n, int32_t k,
				    const char *key, const yaml_node_t **m)
{
	char buf[80];
	struct fa_loc ml;
	*m = n->type == YAML_MAPPING_NODE ? n : fa_src_node(src, n->data.sequence.items.start[k]);
	ml = fa_src_loc(src, *m);
	if ((*m)->type != YAML_MAPPING_NODE)
		return fa_err_at(src->err, &ml, "expected a mapping in '%s', got %s", key,
				 fa_node_words(*m, buf, sizeof buf));
	if (mapping_size(*m) == 0)
		return fa_err_at(src->err, &ml, "empty mapping in '%s'", key);
	return FA_OK;
}

enum fa_rc fa_parse_zip(const struct fa_src *src, const yaml_node_t *n, const char *owner,
			struct fa_dim **dims, int32_t *count)
{
	enum fa_rc rc;
	int32_t items;
	*dims = NULL;
	*count = 0;
	if ((rc = mapping_list_size(src, n, "zip", &items)) != FA_OK || items == 0)
		return rc;
	if (!(*dims = fa_arena_alloc(src->arena, (size_t)items * sizeof **dims)))
		return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory");
	for (int32_t k = 0; k < items; k++) {
		const yaml_node_t *m;
		struct fa_dim *d = &(*dims)[k];
		int seen[FA_P_COUNT] = {0};
		if ((rc = mapping_list_item(src, n, k, "zip", &m)) != FA_OK)
			return rc;
		d->origin = origin_text(owner, "zip");
		for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top;
		     pr++) {
			const yaml_node_t *kn = fa_src_node(src, pr->key), *vn = fa_src_node(src, pr->value);
			int param, j = d->n_params;
			int32_t len;
			if ((rc = param_key(src, kn, seen, &param)) != FA_OK)
				return rc;
			d->param[j] = param;
			d->key_loc[j] = fa_src_loc(src, kn);
			if ((rc = fa_param_values(src, param, vn, &d->vals[j], &len)) != FA_OK)
				return rc;
			if (j > 0 && len != d->len) {
				struct fa_loc vl = fa_src_loc(src, vn);
				return fa_err_at(src->err, &vl,
						 "zip lists differ in length: '%s' has %d values, '%s' has %d",
						 params[param].name, len, params[d->param[0]].name, d->len);
			}
			d->len = len;
			d->n_params++;
		}
	}
	*count = items;
	return FA_OK;
}

enum fa_rc fa_parse_exclude(const struct fa_src *src, const yaml_node_t *n,
			    struct fa_exclude **ex, int32_t *count)
{
	enum fa_rc rc;
	int32_t items;
	*ex = NULL;
	*count = 0;
	if ((rc = mapping_list_size(src, n, "exclude", &items)) != FA_OK || items == 0)
		return rc;
	if (!(*ex = fa_arena_alloc(src->arena, (size_t)items * sizeof **ex)))
		return fa_err_set(src->err, FA_ERR_NOMEM, "out of memory");
	for (int32_t k = 0; k < items; k++) {
		const yaml_node_t *m;
		struct fa_exclude *e = &(*ex)[k];
		int seen[FA_P_COUNT] = {0};
		/* an empty mapping is refused: it would match, and drop, every case */
		if ((rc = mapping_list_item(src, n, k, "exclude", &m)) != FA_OK)
			return rc;
		for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top;
		     pr++) {
			int param, j = e->n_params;
			if ((rc = param_key(src, fa_src_node(src, pr->key), seen, &param)) != FA_OK)
				return rc;
			e->param[j] = param;
			if ((rc = fa_param_values(src, param, fa_src_node(src, pr->value), &e->vals[j],
						  &e->n_vals[j])) != FA_OK)
				return rc;
			/* an exclude compares values; an expression would match no case */
			for (int32_t i = 0; i < e->n_vals[j]; i++)
				if (e->vals[j][i].expr)
					return fa_err_at(src->err, &e->vals[j][i].loc,
							 "exclude takes values, not an expression: '%s' (a "
							 "condition over parameters goes in where)",
							 e->vals[j][i].expr);
			e->n_params++;
		}
	}
	*count = items;
	return FA_OK;
}

/* ---- filters */

static int list_equals(const int32_t *list, int32_t n, const int32_t *cu, const int32_t *plain)
{
	for (int32_t b = 0; b < n; b++) {
		int32_t x = cu ? cu[b + 1] - cu[b] : plain[b];
		if (x != list[b])
			return 0;
	}
	return 1;
}

static int pval_matches(int param, const struct fa_pval *v, const struct fa_case *c)
{
	const struct fa_problem *p = &c->p;
	switch (param) {
	case FA_P_BATCH: return p->batch == v->i;
	case FA_P_HEADS: return p->heads == v->i;
	case FA_P_KV_HEADS: return p->kv_heads == v->i;
	case FA_P_GQA:
		return p->kv_heads > 0 && p->heads % p->kv_heads == 0 && p->heads / p->kv_heads == v->i;
	case FA_P_Q_LEN: return p->q_len == v->i;
	case FA_P_KV_LEN: return p->kv_len == v->i;
	case FA_P_SEQ_LEN: return !p->varlen && p->q_len == v->i && p->kv_len == v->i;
	case FA_P_HEAD_DIM: return p->head_dim == v->i;
	case FA_P_HEAD_DIM_V: return p->head_dim_v == v->i;
	case FA_P_DTYPE: return p->dtype == v->i;
	case FA_P_MASK: return p->mask == v->i;
	case FA_P_LAYOUT: return p->layout == v->i;
	case FA_P_INPUT: return c->dist == v->i;
	case FA_P_PASS: return c->pass == v->i;
	case FA_P_PREFIX_LEN:
		return p->mask == FA_MASK_PREFIX_LM && !c->prefix_lens && p->prefix_len == v->i;
	case FA_P_WINDOW: return p->mask == FA_MASK_SLIDING_WINDOW && p->window == v->i;
	case FA_P_SEQLENS:
		return p->varlen && p->batch == v->n && list_equals(v->list, v->n, c->cu_seqlens_q, NULL);
	case FA_P_KV_SEQLENS:
		return p->varlen && p->batch == v->n && list_equals(v->list, v->n, c->cu_seqlens_k, NULL);
	case FA_P_PREFIX_LENS:
		return c->prefix_lens && p->batch == v->n &&
		       list_equals(v->list, v->n, NULL, c->prefix_lens);
	case FA_P_DEPTH: return c->depth == v->i;
	case FA_P_MODEL:
	case FA_P_TAG:
		for (int32_t k = 0; k < c->n_tags; k++)
			if (c->tags[k].model == (param == FA_P_MODEL) && strcmp(c->tags[k].name, v->text) == 0)
				return 1;
		return 0;
	case FA_P_LAYERS:
		for (int32_t k = 0; k < c->n_tags; k++)
			if (c->tags[k].layers == v->i)
				return 1;
		return 0;
	default: /* FA_P_SCALE: the value as the problem holds it */
		return p->scale == (float)v->d;
	}
}

static int exclude_matches(const struct fa_exclude *e, const struct fa_case *c)
{
	for (int32_t k = 0; k < e->n_params; k++) {
		int any = 0;
		for (int32_t j = 0; j < e->n_vals[k] && !any; j++)
			any = pval_matches(e->param[k], &e->vals[k][j], c);
		if (!any)
			return 0;
	}
	return 1;
}

int fa_filters_keep(const struct fa_filters *f, const struct fa_case *c)
{
	for (int32_t k = 0; k < f->n_where; k++)
		if (!fa_expr_eval(f->where[k], c))
			return 0;
	for (int32_t k = 0; k < f->n_exclude; k++)
		if (exclude_matches(&f->exclude[k], c))
			return 0;
	return 1;
}

/* ---- building a case */

void fa_work_free(struct fa_work *w)
{
	free(w->c.cu_seqlens_q);
	free(w->c.cu_seqlens_k);
	free(w->c.prefix_lens);
	free(w->c.key);
	fa_case_free_tags(&w->c);
	free(w->pending);
	memset(w, 0, sizeof *w);
}

/* Records a pending error (the first one only). */
__attribute__((format(printf, 3, 4))) static void pend(struct fa_work *w, const struct fa_loc *loc,
						       const char *fmt, ...)
{
	va_list ap;
	if (w->pending)
		return;
	va_start(ap, fmt);
	if (vasprintf(&w->pending, fmt, ap) < 0)
		w->pending = NULL;
	va_end(ap);
	if (!w->pending)
		w->pending = strdup("out of memory"); /* still fails the load, if kept */
	w->pending_loc = *loc;
}

static enum fa_rc missing(struct fa_err *err, const struct fa_loc *made_by, const char *name,
			  const char *why)
{
	return fa_err_at(err, made_by, "missing required parameter '%s'%s", name, why);
}

static int32_t *prefix_sums(const int32_t *list, int32_t n, int64_t *total)
{
	int32_t *cu = malloc((size_t)(n + 1) * sizeof *cu);
	int64_t s = 0;
	if (!cu)
		return NULL;
	cu[0] = 0;
	for (int32_t b = 0; b < n; b++) {
		s += list[b];
		cu[b + 1] = s > INT32_MAX ? INT32_MAX : (int32_t)s;
	}
	*total = s;
	return cu;
}

static int32_t list_max(const int32_t *list, int32_t n)
{
	int32_t m = 0;
	for (int32_t b = 0; b < n; b++)
		if (list[b] > m)
			m = list[b];
	return m;
}

/* The lengths: varlen lists or q_len / kv_len / seq_len, and the batch. */
static enum fa_rc build_lengths(const fa_bindings b, const struct fa_loc *made_by,
				struct fa_work *w, struct fa_err *err)
{
	struct fa_problem *p = &w->c.p;
	static const int len_params[] = {FA_P_Q_LEN, FA_P_KV_LEN, FA_P_SEQ_LEN};
	if (b[FA_P_SEQLENS]) {
		const struct fa_pval *sl = b[FA_P_SEQLENS];
		const struct fa_pval *kl = b[FA_P_KV_SEQLENS] ? b[FA_P_KV_SEQLENS] : sl;
		int64_t tq, tk;
		if (kl->n != sl->n)
			return fa_err_at(err, &kl->loc, "kv_seqlens has %d entries, seqlens has %d",
					 kl->n, sl->n);
		if (b[FA_P_PREFIX_LENS] && b[FA_P_PREFIX_LENS]->n != sl->n)
			return fa_err_at(err, &b[FA_P_PREFIX_LENS]->loc,
					 "prefix_lens has %d entries, seqlens has %d",
					 b[FA_P_PREFIX_LENS]->n, sl->n);
		for (int k = 0; k < 3; k++)
			if (b[len_params[k]])
				pend(w, &b[len_params[k]]->loc,
				     "%s conflicts with seqlens (seqlens gives the lengths)",
				     params[len_params[k]].name);
		if (b[FA_P_BATCH] && b[FA_P_BATCH]->i != sl->n)
			pend(w, &b[FA_P_BATCH]->loc, "batch %lld does not match the %d entries of seqlens",
			     (long long)b[FA_P_BATCH]->i, sl->n);
		p->varlen = 1;
		p->batch = sl->n;
		w->c.cu_seqlens_q = prefix_sums(sl->list, sl->n, &tq);
		w->c.cu_seqlens_k = prefix_sums(kl->list, kl->n, &tk);
		if (!w->c.cu_seqlens_q || !w->c.cu_seqlens_k)
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		if (tq > INT32_MAX || tk > INT32_MAX)
			pend(w, tq > INT32_MAX ? &sl->loc : &kl->loc,
			     "%s add up to %lld tokens, more than %d", tq > INT32_MAX ? "seqlens" : "kv_seqlens",
			     (long long)(tq > INT32_MAX ? tq : tk), INT32_MAX);
		/* A sequence may be empty (no queries, or no keys: its rows are
		 * zeros), but not the whole batch: a problem with no query or no
		 * key has no attention to time or check, and its Q or K and V
		 * buffers would hold nothing. */
		if (tq == 0)
			pend(w, &sl->loc, "seqlens add up to 0 tokens: every sequence is empty");
		else if (tk == 0)
			pend(w, &kl->loc, "kv_seqlens add up to 0 tokens: no sequence has a key");
		p->q_len = list_max(sl->list, sl->n);
		p->kv_len = list_max(kl->list, kl->n);
		p->total_q = tq > INT32_MAX ? INT32_MAX : (int32_t)tq;
		p->total_k = tk > INT32_MAX ? INT32_MAX : (int32_t)tk;
		return FA_OK;
	}
	if (b[FA_P_KV_SEQLENS])
		return fa_err_at(err, &b[FA_P_KV_SEQLENS]->loc, "kv_seqlens needs seqlens");
	if (b[FA_P_PREFIX_LENS])
		return fa_err_at(err, &b[FA_P_PREFIX_LENS]->loc, "prefix_lens needs seqlens");
	if (b[FA_P_SEQ_LEN]) {
		for (int k = 0; k < 2; k++)
			if (b[len_params[k]])
				pend(w, &b[len_params[k]]->loc,
				     "%s conflicts with seq_len (seq_len sets both q_len and kv_len)",
				     params[len_params[k]].name);
		p->q_len = p->kv_len = (int32_t)b[FA_P_SEQ_LEN]->i;
	} else {
		if (!b[FA_P_Q_LEN])
			return missing(err, made_by, "q_len", " (or seq_len, or seqlens)");
		p->q_len = (int32_t)b[FA_P_Q_LEN]->i;
		p->kv_len = b[FA_P_KV_LEN] ? (int32_t)b[FA_P_KV_LEN]->i : p->q_len;
	}
	p->batch = b[FA_P_BATCH] ? (int32_t)b[FA_P_BATCH]->i : 1;
	int64_t tq = (int64_t)p->batch * p->q_len, tk = (int64_t)p->batch * p->kv_len;
	if (tq > INT32_MAX || tk > INT32_MAX) {
		const struct fa_pval *at = b[FA_P_BATCH] ? b[FA_P_BATCH] : NULL;
		pend(w, at ? &at->loc : made_by, "batch %d x %s %d is %lld tokens, more than %d",
		     p->batch, tq >= tk ? "q_len" : "kv_len", tq >= tk ? p->q_len : p->kv_len,
		     (long long)(tq >= tk ? tq : tk), INT32_MAX);
	}
	p->total_q = tq > INT32_MAX ? INT32_MAX : (int32_t)tq;
	p->total_k = tk > INT32_MAX ? INT32_MAX : (int32_t)tk;
	return FA_OK;
}

/* The shortest key length of the batch, and which sequence has it. */
static int32_t min_kv_len(const struct fa_case *c, int32_t *which)
{
	int32_t m = c->p.kv_len;
	*which = 0;
	if (!c->p.varlen)
		return m;
	for (int32_t b = 0; b < c->p.batch; b++) {
		int32_t lk = c->cu_seqlens_k[b + 1] - c->cu_seqlens_k[b];
		if (lk < m) {
			m = lk;
			*which = b;
		}
	}
	return m;
}

/* The mask's own parameters: prefix_len / prefix_lens and window. */
static enum fa_rc build_mask(const fa_bindings b, const struct fa_loc *made_by, struct fa_work *w,
			     struct fa_err *err)
{
	struct fa_problem *p = &w->c.p;
	const struct fa_pval *pl = b[FA_P_PREFIX_LEN], *pls = b[FA_P_PREFIX_LENS], *win = b[FA_P_WINDOW];
	const char *mask_name = fa_mask_name(p->mask);
	int32_t which, lk;
	if (p->mask == FA_MASK_PREFIX_LM) {
		if (pl && pls)
			pend(w, &pls->loc, "prefix_lens conflicts with prefix_len");
		if (!pl && !pls)
			return missing(err, made_by, "prefix_len",
				       p->varlen ? " (mask prefix_lm; a varlen batch may give "
						   "prefix_lens instead, one per sequence)"
						 : " (mask prefix_lm)");
		if (pls) {
			w->c.prefix_lens = malloc((size_t)pls->n * sizeof *w->c.prefix_lens);
			if (!w->c.prefix_lens)
				return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
			memcpy(w->c.prefix_lens, pls->list, (size_t)pls->n * sizeof *pls->list);
			for (int32_t k = 0; k < pls->n; k++) {
				lk = w->c.cu_seqlens_k[k + 1] - w->c.cu_seqlens_k[k];
				if (pls->list[k] > lk)
					pend(w, pls->item_loc ? &pls->item_loc[k] : &pls->loc,
					     "prefix_lens entry %d exceeds the kv length %d of sequence %d",
					     pls->list[k], lk, k);
			}
			p->prefix_len = list_max(pls->list, pls->n);
		} else {
			p->prefix_len = (int32_t)pl->i;
			lk = min_kv_len(&w->c, &which);
			if (p->prefix_len > lk) {
				if (p->varlen && lk == 0)
					pend(w, &pl->loc,
					     "prefix_len %d exceeds the kv length 0 of sequence %d (a batch "
					     "with a sequence of no keys gives prefix_lens, 0 for it)",
					     p->prefix_len, which);
				else if (p->varlen)
					pend(w, &pl->loc, "prefix_len %d exceeds the kv length %d of sequence %d",
					     p->prefix_len, lk, which);
				else
					pend(w, &pl->loc, "prefix_len %d exceeds kv_len %d", p->prefix_len, lk);
			}
		}
	} else {
		if (pl)
			pend(w, &pl->loc, "prefix_len needs mask prefix_lm (mask is %s)", mask_name);
		if (pls)
			pend(w, &pls->loc, "prefix_lens needs mask prefix_lm (mask is %s)", mask_name);
	}
	if (p->mask == FA_MASK_SLIDING_WINDOW) {
		if (!win)
			return missing(err, made_by, "window", " (mask sliding_window)");
		p->window = (int32_t)win->i;
		if (p->window > p->kv_len)
			pend(w, &win->loc, "window %d exceeds kv_len %d", p->window, p->kv_len);
	} else if (win) {
		pend(w, &win->loc, "window needs mask sliding_window (mask is %s)", mask_name);
	}
	return FA_OK;
}

/* Where a tensor's size comes from, for messages: its token count's value
 * (the lengths a suite sweeps), else the mapping that made the case. */
static const struct fa_loc *tokens_loc(const fa_bindings b, const struct fa_loc *made_by, int qlike)
{
	static const int q_order[] = {FA_P_SEQLENS, FA_P_SEQ_LEN, FA_P_Q_LEN, FA_P_BATCH};
	static const int k_order[] = {FA_P_KV_SEQLENS, FA_P_SEQLENS, FA_P_SEQ_LEN, FA_P_KV_LEN,
				      FA_P_Q_LEN, FA_P_BATCH};
	const int *order = qlike ? q_order : k_order;
	const int n = qlike ? 4 : 6;
	for (int k = 0; k < n; k++)
		if (b[order[k]])
			return &b[order[k]]->loc;
	return made_by;
}

/* The case's buffers against FA_CASE_MAX_BYTES, in overflow-checked int64:
 * a tensor of tokens x heads x head size elements past int64 would wrap to a
 * small or negative size, and the run would allocate that and write past it.
 * The first tensor too large, else a total too large, waits in w->pending. */
static void check_size(const fa_bindings b, const struct fa_loc *made_by, struct fa_work *w)
{
	static const char *const names[] = {"Q", "K", "V", "O", "dO", "dQ", "dK", "dV"};
	static const char *const dims[] = {"head_dim", "head_dim", "head_dim_v", "head_dim_v",
					   "head_dim_v", "head_dim", "head_dim", "head_dim_v"};
	const struct fa_problem *p = &w->c.p;
	const int bwd = w->c.pass != FA_PASS_FWD;
	const int64_t elt = fa_dtype_size(p->dtype);
	int64_t total = 0, rows;
	for (int t = FA_TENSOR_Q; t <= (bwd ? FA_TENSOR_DV : FA_TENSOR_O); t++) {
		int64_t tokens, elems, bytes;
		int32_t heads, dim;
		const int qlike = t == FA_TENSOR_Q || t == FA_TENSOR_O || t == FA_TENSOR_DO ||
				  t == FA_TENSOR_DQ;
		fa_tensor_shape(p, t, &tokens, &heads, &dim);
		if (__builtin_mul_overflow(tokens, (int64_t)heads, &elems) ||
		    __builtin_mul_overflow(elems, (int64_t)dim, &elems) ||
		    __builtin_mul_overflow(elems, elt, &bytes) || bytes > FA_CASE_MAX_BYTES) {
			pend(w, tokens_loc(b, made_by, qlike),
			     "%s is too large: %lld tokens x %d heads x %d (%s) in %s is %.3g bytes, "
			     "more than the 2^50 (1 PiB) a tensor may hold",
			     names[t], (long long)tokens, heads, dim, dims[t], fa_dtype_name(p->dtype),
			     (double)tokens * heads * dim * (double)elt);
			return;
		}
		total += bytes; /* each at most 2^50: no sum of these overflows */
		if (t == FA_TENSOR_O || t >= FA_TENSOR_DQ)
			total += elems * 12; /* the reference's fp64 and fp32 answers */
	}
	/* the reference's row lists (query rows x heads, and a backward's key
	 * rows x kv_heads), a backward's LSE: at most the elements of Q and K */
	rows = (int64_t)p->total_q * p->heads;
	total += rows * 8;
	if (bwd)
		total += rows * 4 + (int64_t)p->total_k * p->kv_heads * 8;
	if (total > FA_CASE_MAX_BYTES)
		pend(w, tokens_loc(b, made_by, 1),
		     "the case is too large: its tensors%s and the reference's buffers add up to %.3g "
		     "bytes, more than the 2^50 (1 PiB) a case may hold",
		     bwd ? ", the LSE" : "", (double)total);
}

/* Builds the problem of bindings b into w (zeroed first). Returns an error
 * for what leaves the problem undefined; other mistakes wait in w->pending. */
static enum fa_rc build_problem(const fa_bindings b, const struct fa_loc *made_by,
				struct fa_work *w, struct fa_err *err)
{
	struct fa_problem *p = &w->c.p;
	enum fa_rc rc;
	memset(w, 0, sizeof *w);
	w->c.loc = *made_by;
	if (!b[FA_P_HEADS])
		return missing(err, made_by, "heads", "");
	if (!b[FA_P_HEAD_DIM])
		return missing(err, made_by, "head_dim", "");
	if ((rc = build_lengths(b, made_by, w, err)) != FA_OK)
		return rc;
	p->heads = (int32_t)b[FA_P_HEADS]->i;
	if (b[FA_P_GQA] && b[FA_P_KV_HEADS])
		pend(w, &b[FA_P_GQA]->loc, "gqa conflicts with kv_heads");
	if (b[FA_P_KV_HEADS]) {
		p->kv_heads = (int32_t)b[FA_P_KV_HEADS]->i;
		if (p->heads % p->kv_heads != 0)
			pend(w, &b[FA_P_KV_HEADS]->loc, "heads %d not divisible by kv_heads %d", p->heads,
			     p->kv_heads);
	} else if (b[FA_P_GQA]) {
		int32_t g = (int32_t)b[FA_P_GQA]->i;
		p->kv_heads = p->heads / g > 0 ? p->heads / g : 1;
		if (p->heads % g != 0)
			pend(w, &b[FA_P_GQA]->loc, "heads %d not divisible by gqa %d", p->heads, g);
	} else {
		p->kv_heads = p->heads;
	}
	p->head_dim = (int32_t)b[FA_P_HEAD_DIM]->i;
	p->head_dim_v = b[FA_P_HEAD_DIM_V] ? (int32_t)b[FA_P_HEAD_DIM_V]->i : p->head_dim;
	p->dtype = b[FA_P_DTYPE] ? (int32_t)b[FA_P_DTYPE]->i : FA_DTYPE_FP16;
	p->mask = b[FA_P_MASK] ? (int32_t)b[FA_P_MASK]->i : FA_MASK_NONE;
	p->layout = b[FA_P_LAYOUT] ? (int32_t)b[FA_P_LAYOUT]->i : FA_LAYOUT_BSHD;
	w->c.dist = b[FA_P_INPUT] ? (int32_t)b[FA_P_INPUT]->i : FA_DIST_NORMAL;
	w->c.pass = b[FA_P_PASS] ? (int32_t)b[FA_P_PASS]->i : FA_PASS_FWD;
	if (b[FA_P_SCALE]) {
		p->scale = (float)b[FA_P_SCALE]->d;
		w->c.scale_set = 1;
	} else {
		p->scale = (float)(1.0 / sqrt((double)p->head_dim));
	}
	if ((rc = build_mask(b, made_by, w, err)) != FA_OK)
		return rc;
	fa_problem_set_strides(p);
	check_size(b, made_by, w);
	return FA_OK;
}

int fa_case_merge_tags(struct fa_case *dst, const struct fa_case *src)
{
	int32_t add = 0;
	for (int32_t k = 0; k < src->n_tags; k++) {
		int have = 0;
		for (int32_t j = 0; j < dst->n_tags && !have; j++)
			have = strcmp(dst->tags[j].name, src->tags[k].name) == 0;
		add += !have;
	}
	if (!add)
		return 0;
	struct fa_case_tag *t = realloc(dst->tags, (size_t)(dst->n_tags + add) * sizeof *t);
	if (!t)
		return -1;
	dst->tags = t;
	for (int32_t k = 0; k < src->n_tags; k++) {
		int have = 0;
		for (int32_t j = 0; j < dst->n_tags && !have; j++)
			have = strcmp(dst->tags[j].name, src->tags[k].name) == 0;
		if (have)
			continue;
		struct fa_case_tag *d = &dst->tags[dst->n_tags];
		*d = src->tags[k];
		if (!(d->name = strdup(src->tags[k].name)))
			return -1;
		dst->n_tags++;
	}
	return 0;
}

void fa_case_free_tags(struct fa_case *c)
{
	for (int32_t k = 0; k < c->n_tags; k++)
		free(c->tags[k].name);
	free(c->tags);
	c->tags = NULL;
	c->n_tags = 0;
}

/* One derived value of nb (`kv_len: depth + q_len`) evaluated on the case
 * the other parameters make: into *out (loc kept). Hard errors for what no
 * filter could excuse (an undefined or fractional value, a derived value
 * read by another); a value out of range waits in w->pending. */
static enum fa_rc derive(const fa_bindings nb, int param, const struct fa_loc *made_by,
			 int32_t depth, struct fa_work *w, struct fa_pval *out, struct fa_err *err)
{
	const struct fa_pval *v = nb[param];
	fa_bindings pb;
	struct fa_work pw;
	struct fa_expr *e = NULL;
	struct fa_pval one;
	enum fa_rc rc;
	/* the other derived values stand at 1 here: no expression reads one */
	memset(&one, 0, sizeof one);
	one.i = 1;
	one.d = 1;
	memcpy(pb, nb, sizeof pb);
	for (int k = 0; k < FA_P_COUNT; k++)
		if (pb[k] && pb[k]->expr) {
			one.loc = pb[k]->loc;
			pb[k] = &one;
		}
	if ((rc = fa_expr_parse_number(v->expr, &v->loc, &e, err)) != FA_OK)
		return rc;
	for (int k = 0; k < FA_P_COUNT; k++)
		if (k != param && nb[k] && nb[k]->expr && fa_expr_uses(e, params[k].name)) {
			fa_expr_free(e);
			return fa_err_at(err, &v->loc, "%s '%s' uses %s, itself derived ('%s'); derive "
					 "from given parameters only",
					 params[param].name, v->expr, params[k].name, nb[k]->expr);
		}
	/* the case the given values make */
	if ((rc = build_problem(pb, made_by, &pw, err)) != FA_OK) {
		fa_work_free(&pw);
		fa_expr_free(e);
		return rc;
	}
	pw.c.depth = depth;
	const char *why = NULL;
	double x = fa_expr_number_why(e, &pw.c, &why);
	fa_work_free(&pw);
	fa_expr_free(e);
	memset(out, 0, sizeof *out);
	out->loc = v->loc;
	if (why)
		return fa_err_at(err, &v->loc, "%s '%s' is undefined for this case (%s)",
				 params[param].name, v->expr, why);
	if (x != floor(x))
		return fa_err_at(err, &v->loc, "%s '%s' is %g, not an integer", params[param].name,
				 v->expr, x);
	int kind = params[param].kind;
	if (x > INT32_MAX || (kind == PK_NONNEG ? x < 0 : x < 1) ||
	    (kind == PK_DIM && x > FA_MAX_HEAD_DIM)) {
		pend(w, &v->loc, "%s '%s' is %.0f; %s must be %s", params[param].name, v->expr, x,
		     params[param].name,
		     kind == PK_NONNEG ? "0 or more"
		     : kind == PK_DIM ? "1 to " FA_STR(FA_MAX_HEAD_DIM)
				      : "positive and at most 2147483647");
		x = kind == PK_NONNEG ? 0 : 1;
	}
	out->i = (int64_t)x;
	return FA_OK;
}

/* Builds the case of bindings b into w: a model preset's shape where the
 * case does not give it, depth (kv_len = depth + q_len when kv_len is not
 * given), derived values, then the problem and the case's labels. */
static enum fa_rc build_case(const fa_bindings b, const struct fa_loc *made_by, struct fa_work *w,
			     struct fa_err *err)
{
	fa_bindings nb;
	struct fa_pval extra[FA_P_COUNT];
	char conflict[256] = "";
	struct fa_loc conflict_loc = *made_by;
	int32_t depth = b[FA_P_DEPTH] ? (int32_t)b[FA_P_DEPTH]->i : 0;
	const struct fa_model *m = b[FA_P_MODEL] ? &fa_models[b[FA_P_MODEL]->i] : NULL;
	enum fa_rc rc;
	memcpy(nb, b, sizeof nb);
	memset(extra, 0, sizeof extra);
	if (m) {
		static const int shape[3] = {FA_P_HEADS, FA_P_KV_HEADS, FA_P_HEAD_DIM};
		const int32_t val[3] = {m->heads, m->kv_heads, m->head_dim};
		for (int k = 0; k < 3; k++) {
			int prm = shape[k];
			if (!nb[prm] && !(prm == FA_P_KV_HEADS && nb[FA_P_GQA])) {
				extra[prm].i = val[k];
				extra[prm].loc = b[FA_P_MODEL]->loc;
				nb[prm] = &extra[prm];
			}
		}
	}
	if (b[FA_P_DEPTH] && !nb[FA_P_KV_LEN] && !nb[FA_P_SEQ_LEN] && !nb[FA_P_SEQLENS] &&
	    nb[FA_P_Q_LEN]) {
		/* the KV cache holds depth positions, then the queries' own */
		static char depth_expr[] = "depth + q_len";
		extra[FA_P_KV_LEN].expr = depth_expr;
		extra[FA_P_KV_LEN].loc = b[FA_P_DEPTH]->loc;
		nb[FA_P_KV_LEN] = &extra[FA_P_KV_LEN];
	}
	memset(w, 0, sizeof *w);
	for (int k = 0; k < FA_P_COUNT; k++) {
		struct fa_pval got;
		if (!nb[k] || !nb[k]->expr)
			continue;
		if ((rc = derive(nb, k, made_by, depth, w, &got, err)) != FA_OK)
			return rc;
		extra[k] = got;
	}
	for (int k = 0; k < FA_P_COUNT; k++)
		if (nb[k] && nb[k]->expr)
			nb[k] = &extra[k];
	if (m) {
		/* the model's shape against what the case gives, derived values
		 * included; gqa stands for kv_heads = heads / gqa */
		static const int shape[4] = {FA_P_HEADS, FA_P_KV_HEADS, FA_P_HEAD_DIM, FA_P_GQA};
		const int32_t val[4] = {m->heads, m->kv_heads, m->head_dim, m->heads / m->kv_heads};
		for (int k = 0; k < 4 && !conflict[0]; k++) {
			int prm = shape[k];
			if (nb[prm] && nb[prm]->i != val[k]) {
				snprintf(conflict, sizeof conflict, "%s %lld conflicts with model '%s' (%s %d)",
					 params[prm].name, (long long)nb[prm]->i, m->name,
					 params[prm].name, val[k]);
				conflict_loc = nb[prm]->loc;
			}
		}
	}
	char *pending = w->pending;
	struct fa_loc pending_loc = w->pending_loc;
	w->pending = NULL;
	if ((rc = build_problem(nb, made_by, w, err)) != FA_OK) {
		free(pending);
		return rc;
	}
	if (!pending && conflict[0]) {
		if (!(pending = strdup(conflict)))
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		pending_loc = conflict_loc;
	}
	if (pending) {
		/* a derived value out of range comes first, then a conflict with
		 * the model: the problem's own checks (heads 2 not divisible by
		 * the model's kv_heads 8) would blame the preset's value */
		free(w->pending);
		w->pending = pending;
		w->pending_loc = pending_loc;
	}
	/* depth makes kv_len = depth + q_len; where the lengths come whole from
	 * seq_len (kv_len = q_len) or seqlens (kv_seqlens = seqlens) it could
	 * only be a label that the problem contradicts */
	if (depth > 0 && nb[FA_P_SEQ_LEN])
		pend(w, &b[FA_P_DEPTH]->loc,
		     "depth %d needs q_len: seq_len makes kv_len = q_len, with no cache before the "
		     "queries",
		     depth);
	else if (depth > 0 && nb[FA_P_SEQLENS] && !nb[FA_P_KV_SEQLENS])
		pend(w, &b[FA_P_DEPTH]->loc,
		     "depth %d needs kv_seqlens with seqlens (each sequence's keys, the cache "
		     "included)",
		     depth);
	w->c.depth = depth;
	if (b[FA_P_DEPTH])
		w->c.depth_loc = b[FA_P_DEPTH]->loc;
	if (b[FA_P_LAYERS] && !b[FA_P_MODEL] && !b[FA_P_TAG])
		pend(w, &b[FA_P_LAYERS]->loc, "layers needs a model or a tag to belong to");
	if (b[FA_P_MODEL] || b[FA_P_TAG]) {
		int n = (b[FA_P_MODEL] != NULL) + (b[FA_P_TAG] != NULL), k = 0;
		w->c.tags = calloc((size_t)n, sizeof *w->c.tags);
		if (!w->c.tags)
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		if (m) {
			w->c.tags[k].name = strdup(m->name);
			w->c.tags[k].model = 1;
			w->c.tags[k].loc = b[FA_P_LAYERS] ? b[FA_P_LAYERS]->loc : b[FA_P_MODEL]->loc;
			w->c.tags[k++].layers = b[FA_P_LAYERS] ? (int32_t)b[FA_P_LAYERS]->i : m->layers;
		}
		if (b[FA_P_TAG]) {
			w->c.tags[k].name = strdup(b[FA_P_TAG]->text);
			w->c.tags[k].loc = b[FA_P_LAYERS] && !m ? b[FA_P_LAYERS]->loc : b[FA_P_TAG]->loc;
			w->c.tags[k++].layers = b[FA_P_LAYERS] && !m ? (int32_t)b[FA_P_LAYERS]->i : 0;
		}
		w->c.n_tags = k;
		for (int j = 0; j < k; j++)
			if (!w->c.tags[j].name)
				return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
	}
	return FA_OK;
}

enum fa_rc fa_expand(const fa_bindings defaults, const struct fa_dim *const *dims, int32_t n_dims,
		     const struct fa_filters *const *filters, int32_t n_filters,
		     const struct fa_loc *made_by, int32_t set, struct fa_worklist *out,
		     struct fa_err *err)
{
	int32_t seen[FA_P_COUNT];
	int64_t total = 1;
	enum fa_rc rc;
	for (int k = 0; k < FA_P_COUNT; k++)
		seen[k] = -1;
	for (int32_t d = 0; d < n_dims; d++)
		for (int32_t k = 0; k < dims[d]->n_params; k++) {
			int param = dims[d]->param[k];
			if (seen[param] >= 0)
				return fa_err_at(err, &dims[d]->key_loc[k], "'%s' is already varied in %s",
						 params[param].name, dims[seen[param]]->origin);
			seen[param] = d;
		}
	/* every parameter varies in at most one dimension, so n_dims <= FA_P_COUNT */
	for (int32_t d = 0; d < n_dims; d++) {
		if (total > FA_EXPAND_MAX_COMBOS / dims[d]->len)
			return fa_err_at(err, made_by, "the axes make more than %d combinations",
					 FA_EXPAND_MAX_COMBOS);
		total *= dims[d]->len;
	}
	for (int64_t c = 0; c < total; c++) {
		fa_bindings b;
		struct fa_work w;
		int64_t rem = c;
		int keep = 1;
		memcpy(b, defaults, sizeof b);
		for (int32_t d = n_dims - 1; d >= 0; d--) {
			int32_t i = (int32_t)(rem % dims[d]->len);
			rem /= dims[d]->len;
			for (int32_t k = 0; k < dims[d]->n_params; k++)
				b[dims[d]->param[k]] = &dims[d]->vals[k][i];
		}
		if ((rc = build_case(b, made_by, &w, err)) != FA_OK) {
			fa_work_free(&w);
			return rc;
		}
		w.set = set;
		for (int32_t f = 0; f < n_filters && keep; f++)
			keep = fa_filters_keep(filters[f], &w.c);
		if (!keep) {
			fa_work_free(&w);
			continue;
		}
		if (out->n >= FA_SUITE_MAX_CASES) {
			fa_work_free(&w);
			return fa_err_at(err, made_by, "the suite expands to more than %d cases",
					 FA_SUITE_MAX_CASES);
		}
		if (out->n == out->cap) {
			int32_t cap = out->cap ? out->cap * 2 : 64;
			struct fa_work *nv = realloc(out->v, (size_t)cap * sizeof *nv);
			if (!nv) {
				fa_work_free(&w);
				return fa_err_set(err, FA_ERR_NOMEM, "out of memory expanding cases");
			}
			out->v = nv;
			out->cap = cap;
		}
		out->v[out->n++] = w;
	}
	return FA_OK;
}
