/* expand.h - internal interface between suite.c (YAML files, includes, the
 * suite's own keys) and expand.c (case parameters: their values, axes, zip,
 * exclude, and the expansion of one file or group into validated cases).
 *
 * Other modules see struct fa_suite (suite.h), with one exception that must
 * build cases exactly as suites do: import.c (fa_param_value, fa_expand, so
 * imported rows get the same defaults, checks and keys).
 */
#ifndef FA_EXPAND_H
#define FA_EXPAND_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "../base/arena.h"
#include "../base/err.h"
#include "expr.h"
#include "suite.h"

/* A suite may expand to at most this many cases: beyond it a typo in a range
 * (step 1 instead of mul 2) is far likelier than intent, and each case costs a
 * reference computation. */
#define FA_SUITE_MAX_CASES 100000
/* Combinations one file or group may enumerate before where/exclude filter
 * them: bounds the time spent on a product that filters throw away. */
#define FA_EXPAND_MAX_COMBOS 1000000

/* The most bytes one case may hold: each of its tensors (Q, K, V, O; a
 * backward's dO, dQ, dK, dV), and all of them together with a backward's LSE
 * and the reference's buffers (its fp64 and fp32 answers, 12 bytes an output
 * element, and 8 bytes a row of its row lists). 2^50 (1 PiB) is far past any
 * machine, and keeps every size computed from them (a byte count times 8, a
 * sum of a dozen) inside int64 and exact in a double. Checked with
 * overflow-checked arithmetic when a case is built. */
#define FA_CASE_MAX_BYTES ((int64_t)1 << 50)

/* Case parameters, in the order of docs/suites.md. */
enum fa_param {
	FA_P_BATCH, FA_P_HEADS, FA_P_KV_HEADS, FA_P_GQA, FA_P_Q_LEN, FA_P_KV_LEN, FA_P_SEQ_LEN,
	FA_P_HEAD_DIM, FA_P_HEAD_DIM_V, FA_P_DTYPE, FA_P_MASK, FA_P_PREFIX_LEN, FA_P_WINDOW,
	FA_P_LAYOUT, FA_P_SEQLENS, FA_P_KV_SEQLENS, FA_P_PREFIX_LENS, FA_P_SCALE, FA_P_INPUT,
	FA_P_DEPTH, FA_P_MODEL, FA_P_TAG, FA_P_LAYERS, FA_P_PASS,
	FA_P_COUNT
};

/* One YAML document being read: node lookups and locations. */
/* The longest `tag:` text: a label in a table column, not a description. */
#define FA_TAG_MAX 64

/* What is wrong with the text of a label (a suite's tag:, an imported
 * report's), of len bytes: NULL when nothing, else the words after "label
 * 'NAME' " ("is empty", "holds a comma, ';' or a control character", ...).
 * A report's CSV joins labels with ';' and a key with ','. */
const char *fa_tag_text_why(const char *s, size_t len);

struct fa_src {
	yaml_document_t *doc;
	const char *file; /* the name as built; owned by the suite */
	struct fa_arena *arena;
	struct fa_err *err;
	const char *buf; /* the file's bytes (NULL when not kept), for fa_scalar_map */
	size_t len;
};

/* The 1-based location of node n. */
struct fa_loc fa_src_loc(const struct fa_src *src, const yaml_node_t *n);
/* Where each byte of scalar n's text sits in the file: an array of
 * n->data.scalar.length + 1 locations (the last one just past the text),
 * allocated in src's arena, found by walking the scalar's source (its
 * quotes, escapes, line folding and block indentation); NULL when the file's
 * bytes are not at hand or the walk loses its way (the caller then counts
 * from the node's start). */
const struct fa_loc *fa_scalar_map(const struct fa_src *src, const yaml_node_t *n);
/* The node of index i (from a mapping pair or sequence item). */
yaml_node_t *fa_src_node(const struct fa_src *src, int i);
/* "a mapping", "a sequence" or the scalar quoted ('sixteen'), for messages. */
const char *fa_node_words(const yaml_node_t *n, char *buf, size_t size);

/* Scalar parsing. Integers: optional sign, digits, optional k suffix (x1024).
 * Return 0 on success, -1 when s is not of that form, -2 on overflow. */
int fa_parse_int(const char *s, int64_t *out);
/* Numbers: an integer as above or a finite decimal/exponent number. */
int fa_parse_num(const char *s, double *out);

/* One parsed parameter value. */
struct fa_pval {
	int64_t i;     /* integer parameters and enum indices */
	double d;      /* scale */
	int32_t *list; /* seqlens, kv_seqlens, prefix_lens (arena) */
	int32_t n;
	struct fa_loc loc; /* the scalar, list or range that gave it */
	struct fa_loc *item_loc; /* a list's: where each entry is (arena), else NULL */
	const char *text;  /* model, tag: the word (arena) */
	const char *expr;  /* a derived integer (`kv_len: depth + q_len`): the
	                      expression, evaluated per case (arena); NULL otherwise */
};

/* The parameter named key, or -1. */
int fa_param_lookup(const char *key);
const char *fa_param_name(int param);
/* The closest parameter name within edit distance 2, or NULL. */
const char *fa_param_suggest(const char *key);

/* One value of param at node n (defaults). Fills *out; on error fills src->err. */
enum fa_rc fa_param_value(const struct fa_src *src, int param, const yaml_node_t *n,
			  struct fa_pval *out);
/* The list of values of param at node n (axes, zip, exclude): a scalar is a
 * one-value list, range mappings expand, and for list-valued parameters a
 * flat list of integers is one value. Sets *vals (arena) and *count >= 1. */
enum fa_rc fa_param_values(const struct fa_src *src, int param, const yaml_node_t *n,
			   struct fa_pval **vals, int32_t *count);

/* Parameters given one value each: NULL where not given. */
typedef const struct fa_pval *fa_bindings[FA_P_COUNT];

/* Overlays the mapping node n (parameter -> value) onto b. */
enum fa_rc fa_parse_defaults(const struct fa_src *src, const yaml_node_t *n, fa_bindings b);

/* One dimension of the product: one axis, or one zip mapping whose lists
 * move together. */
struct fa_dim {
	int32_t n_params;
	int32_t param[FA_P_COUNT];
	struct fa_pval *vals[FA_P_COUNT]; /* vals[k][0..len) */
	struct fa_loc key_loc[FA_P_COUNT];
	int32_t len;
	const char *origin; /* "the file's axes", "the group's zip", ... for messages */
};

/* The dimensions of an `axes` mapping (one per key, in order) or a `zip`
 * list (one per mapping). Sets *dims (arena) and *n. owner is "file" or "group". */
enum fa_rc fa_parse_axes(const struct fa_src *src, const yaml_node_t *n, const char *owner,
			 struct fa_dim **dims, int32_t *count);
enum fa_rc fa_parse_zip(const struct fa_src *src, const yaml_node_t *n, const char *owner,
			struct fa_dim **dims, int32_t *count);

/* One `exclude` entry: a case matches when every parameter matches one of its values. */
struct fa_exclude {
	int32_t n_params;
	int32_t param[FA_P_COUNT];
	struct fa_pval *vals[FA_P_COUNT];
	int32_t n_vals[FA_P_COUNT];
};

enum fa_rc fa_parse_exclude(const struct fa_src *src, const yaml_node_t *n,
			    struct fa_exclude **ex, int32_t *count);

/* The where expressions (all must hold) and exclude entries of one level. */
struct fa_filters {
	struct fa_expr **where;
	int32_t n_where;
	struct fa_exclude *exclude;
	int32_t n_exclude;
};

/* 1 when c passes every where and no exclude entry of f. */
int fa_filters_keep(const struct fa_filters *f, const struct fa_case *c);

/* A case under construction. A combination the suite may still filter away
 * is allowed to be invalid in ways that need other parameters (a prefix longer
 * than the keys, heads not divisible): that error waits in `pending` and is
 * reported only if the case survives every filter. */
struct fa_work {
	struct fa_case c; /* key, seed, kernels, measure and check are set at the end */
	int32_t set;      /* index of the file's settings in the suite */
	char *pending;    /* malloc'd message, or NULL */
	struct fa_loc pending_loc;
};

struct fa_worklist {
	struct fa_work *v;
	int32_t n, cap;
};

/* Frees what w owns (not w itself). */
void fa_work_free(struct fa_work *w);

/* Expands one file or group: the product of dims (the first varies slowest)
 * over the bindings `defaults`, each combination built into a case, checked,
 * and kept when every filter set keeps it. Appends to out (loc = made_by,
 * set = set). Fails at made_by when a required parameter is missing or out
 * grows past FA_SUITE_MAX_CASES; at the value for conflicts. */
enum fa_rc fa_expand(const fa_bindings defaults, const struct fa_dim *const *dims, int32_t n_dims,
		     const struct fa_filters *const *filters, int32_t n_filters,
		     const struct fa_loc *made_by, int32_t set, struct fa_worklist *out,
		     struct fa_err *err);

#endif /* FA_EXPAND_H */
