/* suite.c - loading a suite: reading YAML files with libyaml's document API,
 * the suite's own keys (name, seed, kernels, measure, check, groups,
 * include), include resolution with inheritance and cycle detection, and the
 * final pass that gives every case its key, its data seed and its settings.
 * Parameters and the expansion itself live in expand.c; the schema is
 * documented for users in docs/suites.md.
 */
#include "suite.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "../../kernels/common/fa_rng.h"
#include "../base/text.h"
#include "expand.h"
#include "../base/util.h"

/* Include depth beyond which a chain is certainly a mistake (cycles are
 * caught separately, by file identity). */
#define MAX_INCLUDE_DEPTH 32

/* Files read for one suite, every include counted (a file included twice
 * is read twice: it inherits from each includer). Without a bound, files
 * that each include the next twice make 2^depth reads. */
#define MAX_SUITE_FILES 1024

/* Limits on a file's YAML, checked on a streaming pass before libyaml builds
 * the document (check_yaml_shape). A real suite nests about 7 deep (file,
 * groups, a group, axes, a list of lists, a range) and uses a few anchors;
 * libyaml takes time quadratic in the depth of flow collections (400 KB of
 * '[' took minutes) and in the number of anchors, and an alias makes its
 * anchor's nodes count again wherever it is used (a list of aliases to a
 * long list is a quadratic "billion laughs"). */
#define MAX_YAML_DEPTH 64
#define MAX_YAML_ANCHORS 256
#define MAX_YAML_ALIAS_NODES 100000

/* What a file and a group both have. */
struct scope {
	fa_bindings defaults; /* file: inherited then own; group: own only */
	struct fa_dim *axes, *zip;
	int32_t n_axes, n_zip;
	int has_axes, has_zip;
	struct fa_loc axes_loc;
	struct fa_filters filters;
	const char *owner; /* "file" or "group" */
};

struct group {
	struct scope sc;
	struct fa_loc loc;
};

struct file_state {
	struct fa_src src;
	const struct file_state *parent; /* the includer, NULL for the top file */
	int32_t set;                     /* this file's index in s->files and the settings */
	struct scope sc;
	struct fa_measure_cfg measure;
	struct fa_check_cfg check;
	int has_kernels;
	const yaml_node_t *include;
	struct group *groups;
	int32_t n_groups;
	struct fa_loc root_loc;
	const char *buf; /* the file's bytes, for block scalars' positions */
	struct fa_loc tmp_loc; /* char_loc's answer when the scalar has no map */
};

struct chain_entry {
	dev_t dev;
	ino_t ino;
	const char *name;
};

struct load {
	struct fa_suite *s;
	struct fa_err *err;
	struct fa_arena arena;
	struct fa_worklist work;
	struct fa_expr **exprs; /* to free at the end */
	int32_t n_exprs, cap_exprs;
	int32_t cap_files;
	uint64_t hash;
	int name_set;
	struct chain_entry chain[MAX_INCLUDE_DEPTH];
	int depth;
};

typedef enum fa_rc (*key_fn)(struct load *ld, struct file_state *fs, struct scope *sc,
			     const yaml_node_t *v);

struct key_handler {
	const char *key;
	key_fn fn;
};

/* ---- small helpers */

static enum fa_rc nomem(struct load *ld)
{
	return fa_err_set(ld->err, FA_ERR_NOMEM, "out of memory loading a suite");
}

static const char *scalar_text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static int32_t seq_size(const yaml_node_t *n)
{
	return (int32_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

/* A string, or (when list_ok) a list of strings: counts the items and checks
 * their types. */
static enum fa_rc string_or_list(const struct fa_src *src, const yaml_node_t *v, const char *key,
				 int list_ok, int32_t *count)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(src, v);
	if (v->type == YAML_SCALAR_NODE) {
		*count = 1;
		return FA_OK;
	}
	if (v->type != YAML_SEQUENCE_NODE || !list_ok)
		return fa_err_at(src->err, &l, "expected a string%s for '%s', got %s",
				 list_ok ? " or a list of strings" : "", key,
				 fa_node_words(v, buf, sizeof buf));
	*count = seq_size(v);
	for (int32_t k = 0; k < *count; k++) {
		const yaml_node_t *it = fa_src_node(src, v->data.sequence.items.start[k]);
		struct fa_loc il = fa_src_loc(src, it);
		if (it->type != YAML_SCALAR_NODE)
			return fa_err_at(src->err, &il, "expected a string in '%s', got %s", key,
					 fa_node_words(it, buf, sizeof buf));
	}
	return FA_OK;
}

/* Item k of a string-or-list node. */
static const yaml_node_t *string_item(const struct fa_src *src, const yaml_node_t *v, int32_t k)
{
	return v->type == YAML_SCALAR_NODE ? v : fa_src_node(src, v->data.sequence.items.start[k]);
}

/* Reports an unknown key of a table with a suggestion within edit distance 2. */
static enum fa_rc unknown_key(const struct fa_src *src, const yaml_node_t *k,
			      const struct key_handler *table, size_t n, const char *extra)
{
	const char *key = scalar_text(k), *best = NULL;
	struct fa_loc l = fa_src_loc(src, k);
	int bd = 3;
	for (size_t i = 0; i < n; i++) {
		int d = fa_edit_distance(key, table[i].key);
		if (d < bd) {
			bd = d;
			best = table[i].key;
		}
	}
	if (best && bd <= 2)
		return fa_err_at(src->err, &l, "unknown key '%s' (did you mean '%s'?)", key, best);
	if (extra && fa_param_lookup(key) >= 0)
		return fa_err_at(src->err, &l, "unknown key '%s' (%s)", key, extra);
	return fa_err_at(src->err, &l, "unknown key '%s'", key);
}

/* Runs the handlers of table over mapping m, refusing unknown and repeated keys. */
static enum fa_rc walk_mapping(struct load *ld, struct file_state *fs, struct scope *sc,
			       const yaml_node_t *m, const struct key_handler *table, size_t n,
			       const char *param_hint)
{
	const struct fa_src *src = &fs->src;
	int seen[16] = {0};
	enum fa_rc rc;
	char buf[80];
	for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top; pr++) {
		const yaml_node_t *k = fa_src_node(src, pr->key);
		struct fa_loc kl = fa_src_loc(src, k);
		size_t i;
		if (k->type != YAML_SCALAR_NODE)
			return fa_err_at(ld->err, &kl, "expected a key, got %s",
					 fa_node_words(k, buf, sizeof buf));
		for (i = 0; i < n; i++)
			if (strcmp(scalar_text(k), table[i].key) == 0)
				break;
		if (i == n)
			return unknown_key(src, k, table, n, param_hint);
		if (seen[i])
			return fa_err_at(ld->err, &kl, "duplicate key '%s'", table[i].key);
		seen[i] = 1;
		if ((rc = table[i].fn(ld, fs, sc, fa_src_node(src, pr->value))) != FA_OK)
			return rc;
	}
	return FA_OK;
}

/* ---- settings: measure and check */

enum cfg_kind { CK_INT, CK_NUM, CK_WORD };

struct cfg_key {
	const char *key;
	int kind;
	size_t offset;
	int positive;              /* 1: > 0 (ints >= 1), 0: >= 0 */
	const char *const *words;  /* CK_WORD, NULL-terminated */
	const char *expected;      /* CK_WORD: for messages */
};

static const char *const cache_words[] = {"auto", "cold", "hot", "cold-clean", NULL};
static const char *const rule_words[] = {"tolerance", "fa", NULL};
static const char *const reference_words[] = {"auto", "cpu", "gpu", NULL};

static const struct cfg_key measure_keys[] = {
	{"warmup", CK_INT, offsetof(struct fa_measure_cfg, warmup), 0, NULL, NULL},
	{"min_samples", CK_INT, offsetof(struct fa_measure_cfg, min_samples), 1, NULL, NULL},
	{"max_samples", CK_INT, offsetof(struct fa_measure_cfg, max_samples), 1, NULL, NULL},
	{"max_noise", CK_NUM, offsetof(struct fa_measure_cfg, max_noise), 0, NULL, NULL},
	{"min_time_ms", CK_NUM, offsetof(struct fa_measure_cfg, min_time_ms), 0, NULL, NULL},
	{"max_time_ms", CK_NUM, offsetof(struct fa_measure_cfg, max_time_ms), 0, NULL, NULL},
	{"timeout_s", CK_NUM, offsetof(struct fa_measure_cfg, timeout_s), 1, NULL, NULL},
	{"cache", CK_WORD, offsetof(struct fa_measure_cfg, cache), 0, cache_words,
	 "auto, cold-clean, cold or hot"},
	{"graph_launches", CK_INT, offsetof(struct fa_measure_cfg, graph_launches), 0, NULL, NULL},
};

static const struct cfg_key check_keys[] = {
	{"rule", CK_WORD, offsetof(struct fa_check_cfg, rule), 0, rule_words, "tolerance or fa"},
	{"reference", CK_WORD, offsetof(struct fa_check_cfg, reference), 0, reference_words,
	 "auto, cpu or gpu"},
	{"rows", CK_INT, offsetof(struct fa_check_cfg, rows), 1, NULL, NULL},
	{"full_limit", CK_NUM, offsetof(struct fa_check_cfg, full_limit), 0, NULL, NULL},
	{"fa_k", CK_NUM, offsetof(struct fa_check_cfg, fa_k), 1, NULL, NULL},
	{"fa_atol", CK_NUM, offsetof(struct fa_check_cfg, fa_atol), 0, NULL, NULL},
	{"rel_floor", CK_NUM, offsetof(struct fa_check_cfg, rel_floor), 1, NULL, NULL},
	{"tolerances", -1, 0, 0, NULL, NULL}, /* handled by tolerances() */
};

static const struct cfg_key tol_keys[] = {
	{"max_abs", CK_NUM, offsetof(struct fa_tol, max_abs), 0, NULL, NULL},
	{"rel_l2", CK_NUM, offsetof(struct fa_tol, rel_l2), 0, NULL, NULL},
};

/* Sets one field of the struct at base from scalar node v. */
static enum fa_rc cfg_value(const struct fa_src *src, const struct cfg_key *ck, const yaml_node_t *v,
			    void *base)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(src, v);
	const char *text = v->type == YAML_SCALAR_NODE ? scalar_text(v) : "";
	if (ck->kind == CK_WORD) {
		for (int i = 0; v->type == YAML_SCALAR_NODE && ck->words[i]; i++)
			if (strcmp(text, ck->words[i]) == 0) {
				*(int32_t *)((char *)base + ck->offset) = i;
				return FA_OK;
			}
		if (v->type != YAML_SCALAR_NODE)
			return fa_err_at(src->err, &l, "expected a word for '%s', got %s", ck->key,
					 fa_node_words(v, buf, sizeof buf));
		return fa_err_at(src->err, &l, "unknown %s '%s' (expected %s)", ck->key, text,
				 ck->expected);
	}
	if (ck->kind == CK_INT) {
		int64_t i;
		int r = v->type == YAML_SCALAR_NODE ? fa_parse_int(text, &i) : -1;
		if (r == -1)
			return fa_err_at(src->err, &l, "expected an integer for '%s', got %s", ck->key,
					 fa_node_words(v, buf, sizeof buf));
		if (r == -2 || i > INT32_MAX)
			return fa_err_at(src->err, &l, "%s %s is too large (at most %d)", ck->key, text,
					 INT32_MAX);
		if (i < ck->positive)
			return fa_err_at(src->err, &l, ck->positive ? "%s %s must be positive"
								    : "%s %s must not be negative",
					 ck->key, text);
		*(int32_t *)((char *)base + ck->offset) = (int32_t)i;
		return FA_OK;
	}
	double d;
	if (v->type != YAML_SCALAR_NODE || fa_parse_num(text, &d) != 0)
		return fa_err_at(src->err, &l, "expected a number for '%s', got %s", ck->key,
				 fa_node_words(v, buf, sizeof buf));
	if (ck->positive ? !(d > 0) : !(d >= 0))
		return fa_err_at(src->err, &l, ck->positive ? "%s %s must be positive"
							    : "%s %s must not be negative",
				 ck->key, text);
	*(double *)((char *)base + ck->offset) = d;
	return FA_OK;
}

/* Walks mapping m against a cfg_key table; "tolerances" goes to tol_fn. */
static enum fa_rc cfg_mapping(const struct fa_src *src, const yaml_node_t *m, const char *what,
			      const struct cfg_key *table, size_t n, void *base,
			      enum fa_rc (*tol_fn)(const struct fa_src *, const yaml_node_t *, void *))
{
	int seen[16] = {0};
	char buf[80];
	struct fa_loc l = fa_src_loc(src, m);
	enum fa_rc rc;
	if (m->type != YAML_MAPPING_NODE)
		return fa_err_at(src->err, &l, "expected a mapping for '%s', got %s", what,
				 fa_node_words(m, buf, sizeof buf));
	for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top; pr++) {
		const yaml_node_t *k = fa_src_node(src, pr->key), *v = fa_src_node(src, pr->value);
		struct fa_loc kl = fa_src_loc(src, k);
		const char *key = k->type == YAML_SCALAR_NODE ? scalar_text(k) : "";
		size_t i;
		for (i = 0; i < n; i++)
			if (strcmp(key, table[i].key) == 0)
				break;
		if (i == n) {
			const char *best = NULL;
			int bd = 3;
			for (size_t j = 0; j < n; j++) {
				int d = fa_edit_distance(key, table[j].key);
				if (d < bd) {
					bd = d;
					best = table[j].key;
				}
			}
			if (best && bd <= 2)
				return fa_err_at(src->err, &kl, "unknown key '%s' (did you mean '%s'?)", key,
						 best);
			return fa_err_at(src->err, &kl, "unknown key '%s' in '%s'", key, what);
		}
		if (seen[i])
			return fa_err_at(src->err, &kl, "duplicate key '%s'", key);
		seen[i] = 1;
		if (table[i].kind < 0)
			rc = tol_fn(src, v, base);
		else
			rc = cfg_value(src, &table[i], v, base);
		if (rc != FA_OK)
			return rc;
	}
	return FA_OK;
}

static enum fa_rc tolerances(const struct fa_src *src, const yaml_node_t *m, void *base)
{
	struct fa_check_cfg *cfg = base;
	char buf[80];
	struct fa_loc l = fa_src_loc(src, m);
	int seen[FA_DTYPE_COUNT] = {0};
	enum fa_rc rc;
	if (m->type != YAML_MAPPING_NODE)
		return fa_err_at(src->err, &l, "expected a mapping for 'tolerances', got %s",
				 fa_node_words(m, buf, sizeof buf));
	for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top; pr++) {
		const yaml_node_t *k = fa_src_node(src, pr->key);
		struct fa_loc kl = fa_src_loc(src, k);
		const char *key = k->type == YAML_SCALAR_NODE ? scalar_text(k) : "";
		int dt = fa_dtype_parse(key);
		if (dt < 0)
			return fa_err_at(src->err, &kl, "unknown dtype '%s' (expected fp32, fp16 or bf16)",
					 key);
		if (seen[dt])
			return fa_err_at(src->err, &kl, "duplicate key '%s'", key);
		seen[dt] = 1;
		if ((rc = cfg_mapping(src, fa_src_node(src, pr->value), key, tol_keys,
				      sizeof tol_keys / sizeof tol_keys[0], &cfg->tol[dt], NULL)) != FA_OK)
			return rc;
	}
	return FA_OK;
}

static enum fa_rc key_measure(struct load *ld, struct file_state *fs, struct scope *sc,
			      const yaml_node_t *v)
{
	struct fa_measure_cfg *m = &fs->measure;
	struct fa_loc l = fa_src_loc(&fs->src, v);
	enum fa_rc rc;
	(void)sc;
	if ((rc = cfg_mapping(&fs->src, v, "measure", measure_keys,
			      sizeof measure_keys / sizeof measure_keys[0], m, NULL)) != FA_OK)
		return rc;
	if (m->min_samples > m->max_samples)
		return fa_err_at(ld->err, &l, "min_samples %d is more than max_samples %d",
				 m->min_samples, m->max_samples);
	if (m->min_time_ms > m->max_time_ms)
		return fa_err_at(ld->err, &l, "min_time_ms %g is more than max_time_ms %g",
				 m->min_time_ms, m->max_time_ms);
	return FA_OK;
}

static enum fa_rc key_check(struct load *ld, struct file_state *fs, struct scope *sc,
			    const yaml_node_t *v)
{
	(void)ld;
	(void)sc;
	return cfg_mapping(&fs->src, v, "check", check_keys, sizeof check_keys / sizeof check_keys[0],
			   &fs->check, tolerances);
}

/* ---- the suite's own keys */

/* Where byte i of scalar v's text sits: from fa_scalar_map, else the
 * scalar's start. */
static const struct fa_loc *char_loc(struct file_state *fs, const yaml_node_t *v, size_t i)
{
	const struct fa_loc *map = fa_scalar_map(&fs->src, v);
	if (map)
		return &map[i];
	fs->tmp_loc = fa_src_loc(&fs->src, v);
	return &fs->tmp_loc;
}

static enum fa_rc key_string(struct load *ld, struct file_state *fs, const yaml_node_t *v,
			     const char *key, char **out)
{
	int32_t n;
	enum fa_rc rc = string_or_list(&fs->src, v, key, 0, &n);
	if (rc != FA_OK)
		return rc;
	/* printed on terminals and in reports: no control character (a
	 * description may have line breaks and tabs), and no NUL, which would
	 * cut the text short */
	const unsigned char *t = v->data.scalar.value;
	for (size_t i = 0; i < v->data.scalar.length; i++) {
		const int multi_line = strcmp(key, "description") == 0;
		if (t[i] == 0x7f || (t[i] < 0x20 && !(multi_line && (t[i] == '\n' || t[i] == '\t'))))
			return fa_err_at(ld->err, char_loc(fs, v, i),
					 "%s holds a control character (0x%02x)%s", key, t[i],
					 multi_line ? "; a description may hold line breaks and tabs"
						    : "");
	}
	if (fs->parent)
		return FA_OK; /* included files' names and descriptions are not used */
	free(*out);
	if (!(*out = strdup(scalar_text(v))))
		return nomem(ld);
	return FA_OK;
}

static enum fa_rc key_suite(struct load *ld, struct file_state *fs, struct scope *sc,
			    const yaml_node_t *v)
{
	(void)sc;
	if (!fs->parent)
		ld->name_set = 1;
	return key_string(ld, fs, v, "suite", &ld->s->name);
}

static enum fa_rc key_description(struct load *ld, struct file_state *fs, struct scope *sc,
				  const yaml_node_t *v)
{
	(void)sc;
	return key_string(ld, fs, v, "description", &ld->s->description);
}

static enum fa_rc key_seed(struct load *ld, struct file_state *fs, struct scope *sc,
			   const yaml_node_t *v)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(&fs->src, v);
	int64_t seed;
	int r = v->type == YAML_SCALAR_NODE ? fa_parse_int(scalar_text(v), &seed) : -1;
	(void)sc;
	if (r == -1)
		return fa_err_at(ld->err, &l, "expected an integer for 'seed', got %s",
				 fa_node_words(v, buf, sizeof buf));
	if (r == -2)
		return fa_err_at(ld->err, &l, "seed %s is too large (at most %lld)", scalar_text(v),
				 (long long)INT64_MAX);
	if (seed < 0)
		return fa_err_at(ld->err, &l, "seed %s must be positive (1 or more; 0 is reserved)", scalar_text(v));
	if (seed == 0) /* as --seed 0: it stands for "not given" */
		return fa_err_at(ld->err, &l, "seed 0 is reserved; use 1 or more");
	if (!fs->parent) /* only the top file's seed counts */
		ld->s->seed = (uint64_t)seed;
	return FA_OK;
}

static enum fa_rc key_kernels(struct load *ld, struct file_state *fs, struct scope *sc,
			      const yaml_node_t *v)
{
	struct fa_kernel_set *ks = &ld->s->kernel_sets[fs->set];
	int32_t n;
	enum fa_rc rc;
	(void)sc;
	if ((rc = string_or_list(&fs->src, v, "kernels", 1, &n)) != FA_OK)
		return rc;
	fs->has_kernels = 1;
	if (n == 0)
		return FA_OK;
	ks->patterns = calloc((size_t)n, sizeof *ks->patterns);
	ks->locs = calloc((size_t)n, sizeof *ks->locs);
	if (!ks->patterns || !ks->locs)
		return nomem(ld);
	for (int32_t k = 0; k < n; k++) {
		const yaml_node_t *it = string_item(&fs->src, v, k);
		struct fa_loc il = fa_src_loc(&fs->src, it);
		if (it->data.scalar.length == 0)
			return fa_err_at(ld->err, &il, "empty kernel name in 'kernels'");
		if (!(ks->patterns[k] = strdup(scalar_text(it))))
			return nomem(ld);
		ks->locs[k] = il;
		ks->n = k + 1;
	}
	return FA_OK;
}

static enum fa_rc key_include(struct load *ld, struct file_state *fs, struct scope *sc,
			      const yaml_node_t *v)
{
	int32_t n;
	enum fa_rc rc;
	(void)ld;
	(void)sc;
	if ((rc = string_or_list(&fs->src, v, "include", 1, &n)) != FA_OK)
		return rc;
	for (int32_t k = 0; k < n; k++) {
		const yaml_node_t *it = string_item(&fs->src, v, k);
		struct fa_loc il = fa_src_loc(&fs->src, it);
		if (it->data.scalar.length == 0)
			return fa_err_at(ld->err, &il, "empty file name in 'include'");
		for (size_t i = 0; i < it->data.scalar.length; i++)
			if (it->data.scalar.value[i] < 0x20 || it->data.scalar.value[i] == 0x7f)
				return fa_err_at(ld->err, char_loc(fs, it, i),
						 "file name in 'include' holds a control character "
						 "(0x%02x)",
						 it->data.scalar.value[i]);
	}
	if (n == 0)
		return fa_err_at(ld->err, &(struct fa_loc){fs->src.file, (int)v->start_mark.line + 1,
							   (int)v->start_mark.column + 1},
				 "'include' names no file");
	fs->include = v;
	return FA_OK;
}

/* ---- keys shared by files and groups */

static enum fa_rc key_defaults(struct load *ld, struct file_state *fs, struct scope *sc,
			       const yaml_node_t *v)
{
	(void)ld;
	return fa_parse_defaults(&fs->src, v, sc->defaults);
}

static enum fa_rc key_axes(struct load *ld, struct file_state *fs, struct scope *sc,
			   const yaml_node_t *v)
{
	(void)ld;
	sc->has_axes = 1;
	sc->axes_loc = fa_src_loc(&fs->src, v);
	return fa_parse_axes(&fs->src, v, sc->owner, &sc->axes, &sc->n_axes);
}

static enum fa_rc key_zip(struct load *ld, struct file_state *fs, struct scope *sc,
			  const yaml_node_t *v)
{
	(void)ld;
	sc->has_zip = 1;
	return fa_parse_zip(&fs->src, v, sc->owner, &sc->zip, &sc->n_zip);
}

/* Where the text of block scalar n starts: the line after its indicator, at
 * the indentation of its first non-blank line. */
static struct fa_loc block_start(const struct file_state *fs, const yaml_node_t *n)
{
	struct fa_loc l = fa_src_loc(&fs->src, n);
	const char *p = fs->buf;
	/* by lines, not mark.index: libyaml counts that in characters, not bytes */
	for (size_t line = 0; line <= n->start_mark.line; line++) {
		const char *eol = strchr(p, '\n');
		if (!eol)
			return l;
		p = eol + 1;
	}
	/* the text starts on the next line (leading blank lines are part of it),
	 * indented as its first non-blank line */
	l.line = (int)n->start_mark.line + 2;
	while (*p) {
		const char *q = p;
		while (*q == ' ')
			q++;
		if (*q != '\n' && *q != '\r') {
			l.col = (int)(q - p) + 1;
			return l;
		}
		p = q + (*q == '\r' && q[1] == '\n' ? 2 : 1);
	}
	return fa_src_loc(&fs->src, n);
}

static enum fa_rc key_where(struct load *ld, struct file_state *fs, struct scope *sc,
			    const yaml_node_t *v)
{
	int32_t n;
	enum fa_rc rc;
	if ((rc = string_or_list(&fs->src, v, "where", 1, &n)) != FA_OK)
		return rc;
	if (n == 0)
		return FA_OK;
	sc->filters.where = fa_arena_alloc(&ld->arena, (size_t)n * sizeof *sc->filters.where);
	if (!sc->filters.where)
		return nomem(ld);
	for (int32_t k = 0; k < n; k++) {
		const yaml_node_t *it = string_item(&fs->src, v, k);
		struct fa_loc l = fa_src_loc(&fs->src, it);
		struct fa_expr *e;
		/* the expression starts after a quoted scalar's opening quote, or
		 * on the line after a block scalar's indicator, indented */
		if (it->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
		    it->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE)
			l.col++;
		if (it->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
		    it->data.scalar.style == YAML_FOLDED_SCALAR_STYLE)
			l = block_start(fs, it);
		const struct fa_loc *map = fa_scalar_map(&fs->src, it);
		if ((rc = map ? fa_expr_parse_mapped(scalar_text(it), map, 0, &e, ld->err)
			      : fa_expr_parse(scalar_text(it), &l, &e, ld->err)) != FA_OK)
			return rc;
		if (ld->n_exprs == ld->cap_exprs) {
			int32_t cap = ld->cap_exprs ? ld->cap_exprs * 2 : 16;
			struct fa_expr **ne = realloc(ld->exprs, (size_t)cap * sizeof *ne);
			if (!ne) {
				fa_expr_free(e);
				return nomem(ld);
			}
			ld->exprs = ne;
			ld->cap_exprs = cap;
		}
		ld->exprs[ld->n_exprs++] = e;
		sc->filters.where[sc->filters.n_where++] = e;
	}
	return FA_OK;
}

static enum fa_rc key_exclude(struct load *ld, struct file_state *fs, struct scope *sc,
			      const yaml_node_t *v)
{
	(void)ld;
	return fa_parse_exclude(&fs->src, v, &sc->filters.exclude, &sc->filters.n_exclude);
}

static enum fa_rc key_name(struct load *ld, struct file_state *fs, struct scope *sc,
			   const yaml_node_t *v)
{
	int32_t n;
	(void)ld;
	(void)sc;
	return string_or_list(&fs->src, v, "name", 0, &n); /* informational only */
}

static const struct key_handler group_keys[] = {
	{"name", key_name},	    {"defaults", key_defaults}, {"axes", key_axes},
	{"zip", key_zip},	    {"where", key_where},	{"exclude", key_exclude},
};

static enum fa_rc key_groups(struct load *ld, struct file_state *fs, struct scope *sc,
			     const yaml_node_t *v)
{
	char buf[80];
	struct fa_loc l = fa_src_loc(&fs->src, v);
	enum fa_rc rc;
	int32_t n;
	(void)sc;
	if (v->type != YAML_SEQUENCE_NODE)
		return fa_err_at(ld->err, &l, "expected a list of mappings for 'groups', got %s",
				 fa_node_words(v, buf, sizeof buf));
	n = seq_size(v);
	if (n == 0)
		return FA_OK;
	if (!(fs->groups = fa_arena_alloc(&ld->arena, (size_t)n * sizeof *fs->groups)))
		return nomem(ld);
	for (int32_t k = 0; k < n; k++) {
		const yaml_node_t *g = fa_src_node(&fs->src, v->data.sequence.items.start[k]);
		struct group *gr = &fs->groups[k];
		struct fa_loc gl = fa_src_loc(&fs->src, g);
		if (g->type != YAML_MAPPING_NODE)
			return fa_err_at(ld->err, &gl, "expected a mapping in 'groups', got %s",
					 fa_node_words(g, buf, sizeof buf));
		gr->loc = gl;
		gr->sc.owner = "group";
		if ((rc = walk_mapping(ld, fs, &gr->sc, g, group_keys,
				       sizeof group_keys / sizeof group_keys[0], NULL)) != FA_OK)
			return rc;
		fs->n_groups = k + 1;
	}
	return FA_OK;
}

static const struct key_handler file_keys[] = {
	{"suite", key_suite},	      {"description", key_description}, {"include", key_include},
	{"seed", key_seed},	      {"kernels", key_kernels},		{"defaults", key_defaults},
	{"axes", key_axes},	      {"zip", key_zip},			{"where", key_where},
	{"exclude", key_exclude},     {"groups", key_groups},		{"measure", key_measure},
	{"check", key_check},
};

/* ---- files */

/* Adds a file (its name as built) and its settings slot; returns the index or -1. */
static int32_t add_file(struct load *ld, const char *name)
{
	struct fa_suite *s = ld->s;
	if (s->n_files == ld->cap_files) {
		int32_t cap = ld->cap_files ? ld->cap_files * 2 : 8;
		char **nf = realloc(s->files, (size_t)cap * sizeof *nf);
		if (nf)
			s->files = nf;
		struct fa_kernel_set *nk = realloc(s->kernel_sets, (size_t)cap * sizeof *nk);
		if (nk)
			s->kernel_sets = nk;
		struct fa_measure_cfg *nm = realloc(s->measures, (size_t)cap * sizeof *nm);
		if (nm)
			s->measures = nm;
		struct fa_check_cfg *nc = realloc(s->checks, (size_t)cap * sizeof *nc);
		if (nc)
			s->checks = nc;
		if (!nf || !nk || !nm || !nc)
			return -1;
		ld->cap_files = cap;
	}
	int32_t i = s->n_files;
	if (!(s->files[i] = strdup(name)))
		return -1;
	memset(&s->kernel_sets[i], 0, sizeof s->kernel_sets[i]);
	fa_measure_defaults(&s->measures[i]);
	fa_check_defaults(&s->checks[i]);
	s->n_files = s->n_sets = i + 1;
	return i;
}

static enum fa_rc copy_kernels(struct load *ld, int32_t to, int32_t from)
{
	struct fa_kernel_set *d = &ld->s->kernel_sets[to];
	const struct fa_kernel_set *f = &ld->s->kernel_sets[from];
	if (f->n == 0)
		return FA_OK;
	d->patterns = calloc((size_t)f->n, sizeof *d->patterns);
	d->locs = calloc((size_t)f->n, sizeof *d->locs);
	if (!d->patterns || !d->locs)
		return nomem(ld);
	for (int32_t k = 0; k < f->n; k++) {
		if (!(d->patterns[k] = strdup(f->patterns[k])))
			return nomem(ld);
		d->locs[k] = f->locs[k];
		d->n = k + 1;
	}
	return FA_OK;
}

/* The 1-based line and column of byte offset off in buf. */
static struct fa_loc offset_loc(const char *file, const char *buf, size_t len, size_t off)
{
	struct fa_loc l = {file, 1, 1};
	for (size_t i = 0; i < off && i < len; i++) {
		if (buf[i] == '\n') {
			l.line++;
			l.col = 1;
		} else {
			l.col++;
		}
	}
	return l;
}

/* "dir-of-includer/name", or name itself when it is absolute. malloc'd. */
static char *include_path(const char *includer, const char *name)
{
	const char *slash = strrchr(includer, '/');
	char *out;
	if (name[0] == '/')
		return strdup(name);
	if (!slash)
		return asprintf(&out, "./%s", name) < 0 ? NULL : out;
	if (slash == includer)
		return asprintf(&out, "/%s", name) < 0 ? NULL : out;
	return asprintf(&out, "%.*s/%s", (int)(slash - includer), includer, name) < 0 ? NULL : out;
}

static enum fa_rc load_file(struct load *ld, const char *path, const char *as_written,
			    const struct file_state *parent, const struct fa_loc *entry);

/* Applies f to the cases from index `from` on, freeing those it drops. */
static void filter_from(struct fa_worklist *wl, int32_t from, const struct fa_filters *f)
{
	int32_t o = from;
	for (int32_t i = from; i < wl->n; i++) {
		if (fa_filters_keep(f, &wl->v[i].c))
			wl->v[o++] = wl->v[i];
		else
			fa_work_free(&wl->v[i]);
	}
	wl->n = o;
}

static enum fa_rc load_includes(struct load *ld, struct file_state *fs)
{
	const struct fa_src *src = &fs->src;
	int32_t n = fs->include->type == YAML_SCALAR_NODE ? 1 : seq_size(fs->include);
	enum fa_rc rc;
	for (int32_t k = 0; k < n; k++) {
		const yaml_node_t *it = string_item(src, fs->include, k);
		struct fa_loc l = fa_src_loc(src, it);
		char *path = include_path(src->file, scalar_text(it));
		if (!path)
			return nomem(ld);
		rc = load_file(ld, path, scalar_text(it), fs, &l);
		free(path);
		if (rc != FA_OK)
			return rc;
	}
	return FA_OK;
}

/* Expands the file's own axes, or each of its groups. */
static enum fa_rc expand_own(struct load *ld, struct file_state *fs)
{
	const struct fa_dim *dims[FA_P_COUNT * 2];
	const struct fa_filters *filters[2];
	int32_t nd = 0;
	enum fa_rc rc;
	/* More dimensions than parameters means a parameter repeats: fa_expand
	 * reports which; only pass it what fits. */
	for (int32_t k = 0; k < fs->sc.n_axes && nd < FA_P_COUNT * 2; k++)
		dims[nd++] = &fs->sc.axes[k];
	for (int32_t k = 0; k < fs->sc.n_zip && nd < FA_P_COUNT * 2; k++)
		dims[nd++] = &fs->sc.zip[k];
	if (fs->n_groups == 0) {
		struct fa_loc made_by = fs->sc.has_axes ? fs->sc.axes_loc : fs->root_loc;
		filters[0] = &fs->sc.filters;
		return fa_expand(fs->sc.defaults, dims, nd, filters, 1, &made_by, fs->set, &ld->work,
				 ld->err);
	}
	for (int32_t g = 0; g < fs->n_groups; g++) {
		const struct group *gr = &fs->groups[g];
		struct fa_loc made_by = gr->sc.has_axes ? gr->sc.axes_loc : gr->loc;
		fa_bindings b;
		int32_t ngd = nd;
		memcpy(b, fs->sc.defaults, sizeof b);
		for (int p = 0; p < FA_P_COUNT; p++)
			if (gr->sc.defaults[p])
				b[p] = gr->sc.defaults[p];
		/* a group's default that the file's axes or zip vary would never
		 * apply: the file's values replace it in every case */
		for (int32_t d = 0; d < nd; d++)
			for (int32_t k = 0; k < dims[d]->n_params; k++)
				if (gr->sc.defaults[dims[d]->param[k]])
					return fa_err_at(
						ld->err, &gr->sc.defaults[dims[d]->param[k]]->loc,
						"'%s' is a default of this group but is varied by %s, "
						"so the group's value would never apply (drop one of "
						"the two)",
						fa_param_name(dims[d]->param[k]), dims[d]->origin);
		for (int32_t k = 0; k < gr->sc.n_axes && ngd < FA_P_COUNT * 2; k++)
			dims[ngd++] = &gr->sc.axes[k];
		for (int32_t k = 0; k < gr->sc.n_zip && ngd < FA_P_COUNT * 2; k++)
			dims[ngd++] = &gr->sc.zip[k];
		filters[0] = &gr->sc.filters;
		filters[1] = &fs->sc.filters;
		if ((rc = fa_expand(b, dims, ngd, filters, 2, &made_by, fs->set, &ld->work, ld->err)) !=
		    FA_OK)
			return rc;
	}
	return FA_OK;
}

/* Runs a file's document: its keys, its includes, its expansion. */
static enum fa_rc run_document(struct load *ld, struct file_state *fs, yaml_document_t *doc)
{
	struct fa_suite *s = ld->s;
	const struct file_state *parent = fs->parent;
	yaml_node_t *root = yaml_document_get_root_node(doc);
	struct fa_loc file_loc = {fs->src.file, 0, 0};
	char buf[80];
	enum fa_rc rc;
	int32_t start = ld->work.n;
	if (!root)
		return fa_err_at(ld->err, &file_loc, "empty suite file");
	fs->root_loc = fa_src_loc(&fs->src, root);
	if (root->type != YAML_MAPPING_NODE)
		return fa_err_at(ld->err, &fs->root_loc, "expected a mapping at the top level, got %s",
				 fa_node_words(root, buf, sizeof buf));
	fs->sc.owner = "file";
	if (parent) {
		memcpy(fs->sc.defaults, parent->sc.defaults, sizeof fs->sc.defaults);
		fs->measure = parent->measure;
		fs->check = parent->check;
	} else {
		fa_measure_defaults(&fs->measure);
		fa_check_defaults(&fs->check);
	}
	if ((rc = walk_mapping(ld, fs, &fs->sc, root, file_keys, sizeof file_keys / sizeof file_keys[0],
			       "parameters go under 'defaults' or 'axes'")) != FA_OK)
		return rc;
	if (!fs->has_kernels && parent && (rc = copy_kernels(ld, fs->set, parent->set)) != FA_OK)
		return rc;
	s->measures[fs->set] = fs->measure;
	s->checks[fs->set] = fs->check;
	if (fs->include) {
		if ((rc = load_includes(ld, fs)) != FA_OK)
			return rc;
		filter_from(&ld->work, start, &fs->sc.filters);
	}
	/* A file that only includes others adds no case of its own. */
	if (!fs->include || fs->sc.has_axes || fs->sc.has_zip || fs->n_groups > 0)
		if ((rc = expand_own(ld, fs)) != FA_OK)
			return rc;
	if (ld->work.n == start)
		return fa_err_at(ld->err, &fs->root_loc,
				 "no cases: where and exclude drop every combination");
	return FA_OK;
}

static enum fa_rc yaml_error(struct load *ld, yaml_parser_t *parser, const char *file,
			     const char *buf, size_t len)
{
	struct fa_loc l = {file, (int)parser->problem_mark.line + 1,
			   (int)parser->problem_mark.column + 1};
	const char *problem = parser->problem ? parser->problem : "invalid yaml";
	if (parser->error == YAML_MEMORY_ERROR)
		return nomem(ld);
	if (parser->error == YAML_READER_ERROR)
		l = offset_loc(file, buf, len, parser->problem_offset);
	if (parser->context)
		return fa_err_at(ld->err, &l, "%s (%s)", problem, parser->context);
	return fa_err_at(ld->err, &l, "%s", problem);
}

/* An anchor seen by check_yaml_shape: its name and the nodes it stands for. */
struct anchor {
	char *name;
	int64_t nodes;
};

/* An open collection: the node count when it started, its anchor or NULL. */
struct open_node {
	int64_t start;
	char *anchor;
	int is_map;         /* a mapping: its children alternate key, value */
	int64_t n_children; /* the nodes begun directly inside it so far */
};

/* Records anchor a (ownership moves to the table) standing for n nodes; the
 * caller checked that the table has room. */
static void add_anchor(struct anchor *anchors, int *n_anchors, char *a, int64_t n)
{
	for (int i = 0; i < *n_anchors; i++)
		if (strcmp(anchors[i].name, a) == 0) { /* YAML lets an anchor be redefined */
			free(anchors[i].name);
			anchors[i] = (struct anchor){a, n};
			return;
		}
	anchors[(*n_anchors)++] = (struct anchor){a, n};
}

/* Streams the events of buf and refuses, at the offending node, nesting
 * deeper than MAX_YAML_DEPTH, more than MAX_YAML_ANCHORS anchors, and aliases
 * that together stand for more than MAX_YAML_ALIAS_NODES nodes. Stops
 * quietly at a syntax error: loading the document reports it, in the same
 * words. */
static enum fa_rc check_yaml_shape(struct load *ld, const char *file, const char *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	struct open_node open[MAX_YAML_DEPTH + 1];
	struct anchor anchors[MAX_YAML_ANCHORS];
	int depth = 0, n_anchors = 0;
	int64_t nodes = 0, alias_nodes = 0;
	enum fa_rc rc = FA_OK;
	if (!yaml_parser_initialize(&p))
		return nomem(ld);
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	while (rc == FA_OK && yaml_parser_parse(&p, &ev)) {
		struct fa_loc l = {file, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1};
		const yaml_char_t *anchor = NULL, *tag = NULL;
		int type = ev.type;
		if (type == YAML_SCALAR_EVENT) {
			anchor = ev.data.scalar.anchor;
			if (!ev.data.scalar.plain_implicit && !ev.data.scalar.quoted_implicit)
				tag = ev.data.scalar.tag;
		} else if (type == YAML_SEQUENCE_START_EVENT) {
			anchor = ev.data.sequence_start.anchor;
			if (!ev.data.sequence_start.implicit)
				tag = ev.data.sequence_start.tag;
		} else if (type == YAML_MAPPING_START_EVENT) {
			anchor = ev.data.mapping_start.anchor;
			if (!ev.data.mapping_start.implicit)
				tag = ev.data.mapping_start.tag;
		}
		/* a node that begins inside a mapping is its next key or value */
		int is_key = 0;
		if ((type == YAML_SCALAR_EVENT || type == YAML_ALIAS_EVENT ||
		     type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) &&
		    depth > 0 && open[depth - 1].is_map)
			is_key = open[depth - 1].n_children++ % 2 == 0;
		if (type == YAML_ALIAS_EVENT && is_key) {
			/* the key's node is the anchor's: every later message would
			 * point there, and a repeated key at the first one */
			rc = fa_err_at(ld->err, &l,
				       "an alias (*%.60s) as a mapping key: write the key itself",
				       (const char *)ev.data.alias.anchor);
		} else if (tag) {
			/* !!str 2 read as the number 2 would say one thing and do
			 * another: a suite's values are read by where they stand */
			static const char core[] = "tag:yaml.org,2002:";
			const char *t = (const char *)tag;
			const int is_core = strncmp(t, core, sizeof core - 1) == 0;
			rc = fa_err_at(ld->err, &l,
				       "a yaml tag (%s%.60s) is not taken: fabench reads a value by "
				       "the key it stands under; write the value plainly",
				       is_core ? "!!" : "", is_core ? t + sizeof core - 1 : t);
		} else if (anchor && n_anchors == MAX_YAML_ANCHORS) {
			rc = fa_err_at(ld->err, &l, "more than %d yaml anchors in one file",
				       MAX_YAML_ANCHORS);
		} else if (type == YAML_SCALAR_EVENT) {
			nodes++;
			if (anchor) {
				char *a = strdup((const char *)anchor);
				if (!a)
					rc = nomem(ld);
				else
					add_anchor(anchors, &n_anchors, a, 1);
			}
		} else if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
			if (depth == MAX_YAML_DEPTH) {
				rc = fa_err_at(ld->err, &l, "yaml nested more than %d levels deep",
					       MAX_YAML_DEPTH);
			} else {
				open[depth] = (struct open_node){nodes, NULL,
								 type == YAML_MAPPING_START_EVENT, 0};
				if (anchor && !(open[depth].anchor = strdup((const char *)anchor)))
					rc = nomem(ld);
				depth++;
				nodes++;
			}
		} else if ((type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) &&
			   depth > 0) {
			depth--;
			if (open[depth].anchor)
				add_anchor(anchors, &n_anchors, open[depth].anchor,
					   nodes - open[depth].start);
			open[depth].anchor = NULL;
		} else if (type == YAML_ALIAS_EVENT) {
			const char *a = (const char *)ev.data.alias.anchor;
			int64_t n = 0;
			for (int i = 0; i < n_anchors; i++)
				if (strcmp(anchors[i].name, a) == 0)
					n = anchors[i].nodes;
			/* an alias inside its own anchor counts what is open so far */
			for (int i = 0; i < depth; i++)
				if (open[i].anchor && strcmp(open[i].anchor, a) == 0)
					n = nodes - open[i].start;
			nodes += n;
			alias_nodes += n;
			if (alias_nodes > MAX_YAML_ALIAS_NODES)
				rc = fa_err_at(ld->err, &l,
					       "yaml aliases stand for more than %d nodes in one file",
					       MAX_YAML_ALIAS_NODES);
		}
		yaml_event_delete(&ev);
		if (type == YAML_STREAM_END_EVENT)
			break;
	}
	for (int i = 0; i < depth; i++)
		free(open[i].anchor);
	for (int i = 0; i < n_anchors; i++)
		free(anchors[i].name);
	yaml_parser_delete(&p);
	return rc;
}

static enum fa_rc load_file(struct load *ld, const char *path, const char *as_written,
			    const struct file_state *parent, const struct fa_loc *entry)
{
	struct stat st;
	struct file_state fs;
	yaml_parser_t parser;
	yaml_document_t doc, doc2;
	size_t len = 0;
	char *buf;
	int32_t set;
	enum fa_rc rc;
	char why[160];
	if ((rc = fa_read_file(path, FA_SUITE_FILE_MAX, &buf, &len, &st, why, sizeof why)) !=
	    FA_OK) {
		if (rc == FA_ERR_NOMEM)
			return nomem(ld);
		if (rc == FA_ERR_INPUT && parent)
			return fa_err_at(ld->err, entry, "include '%s' %s", as_written, why);
		if (rc == FA_ERR_INPUT)
			return fa_err_set(ld->err, rc, "suite file '%s' %s", path, why);
		if (parent)
			return fa_err_at(ld->err, entry, "cannot read included file '%s': %s", as_written,
					 why);
		return fa_err_set(ld->err, rc, "cannot read suite file '%s': %s", path, why);
	}
	for (int i = 0; i < ld->depth; i++)
		if (ld->chain[i].dev == st.st_dev && ld->chain[i].ino == st.st_ino) {
			char msg[FA_ERR_MSG_MAX];
			size_t n = (size_t)snprintf(msg, sizeof msg, "include cycle: ");
			for (int j = i; j < ld->depth && n < sizeof msg; j++)
				n += (size_t)snprintf(msg + n, sizeof msg - n, "%s -> ", ld->chain[j].name);
			if (n < sizeof msg)
				snprintf(msg + n, sizeof msg - n, "%s", path);
			free(buf);
			return fa_err_at(ld->err, entry, "%s", msg);
		}
	if (ld->depth == MAX_INCLUDE_DEPTH) {
		free(buf);
		return fa_err_at(ld->err, entry, "includes nested more than %d deep", MAX_INCLUDE_DEPTH);
	}
	if (ld->s->n_files == MAX_SUITE_FILES) {
		free(buf);
		return fa_err_at(ld->err, entry,
				 "more than %d files included in one suite (each include counts)",
				 MAX_SUITE_FILES);
	}
	if ((set = add_file(ld, path)) < 0) {
		free(buf);
		return nomem(ld);
	}
	ld->hash = fa_fnv1a64(ld->hash, buf, len);
	ld->chain[ld->depth++] = (struct chain_entry){st.st_dev, st.st_ino, ld->s->files[set]};

	memset(&fs, 0, sizeof fs);
	fs.src = (struct fa_src){&doc, ld->s->files[set], &ld->arena, ld->err, buf, len};
	fs.parent = parent;
	fs.set = set;
	fs.buf = buf;
	if (!yaml_parser_initialize(&parser)) {
		free(buf);
		ld->depth--;
		return nomem(ld);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if ((rc = check_yaml_shape(ld, fs.src.file, buf, len)) != FA_OK)
		goto out_parser;
	if (!yaml_parser_load(&parser, &doc)) {
		rc = yaml_error(ld, &parser, fs.src.file, buf, len);
		goto out_parser;
	}
	/* One document per file: a second is almost always a stray '---'. */
	if (yaml_document_get_root_node(&doc)) {
		if (!yaml_parser_load(&parser, &doc2)) {
			rc = yaml_error(ld, &parser, fs.src.file, buf, len);
			goto out_doc;
		}
		yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
		if (r2) {
			struct fa_loc l = {fs.src.file, (int)doc2.start_mark.line + 1,
					   (int)doc2.start_mark.column + 1};
			yaml_document_delete(&doc2);
			rc = fa_err_at(ld->err, &l, "more than one yaml document in a suite file");
			goto out_doc;
		}
		yaml_document_delete(&doc2);
	}
	rc = run_document(ld, &fs, &doc);
out_doc:
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	free(buf);
	ld->depth--;
	return rc;
}

/* ---- the final pass */

struct strbuf {
	char *s;
	size_t n, cap;
	int failed;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int need;
	if (b->failed)
		return;
	va_start(ap, fmt);
	need = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
	va_end(ap);
	if (need < 0) {
		b->failed = 1;
		return;
	}
	if (!b->s || b->n + (size_t)need + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + (size_t)need + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->failed = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
		va_start(ap, fmt);
		vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
	}
	b->n += (size_t)need;
}

static void sb_list(struct strbuf *b, const char *name, const int32_t *cu, const int32_t *plain,
		    int32_t n)
{
	sb_printf(b, ",%s=", name);
	for (int32_t i = 0; i < n; i++)
		sb_printf(b, "%s%d", i ? "/" : "", cu ? cu[i + 1] - cu[i] : plain[i]);
}

char *fa_case_key(const struct fa_case *c)
{
	const struct fa_problem *p = &c->p;
	struct strbuf b = {NULL, 0, 0, 0};
	const char *dt = fa_dtype_name(p->dtype), *mk = fa_mask_name(p->mask);
	const char *ly = fa_layout_name(p->layout), *in = fa_dist_name(c->dist);
	sb_printf(&b,
		  "batch=%d,heads=%d,kv_heads=%d,q_len=%d,kv_len=%d,head_dim=%d,head_dim_v=%d,"
		  "dtype=%s,mask=%s,layout=%s,input=%s",
		  p->batch, p->heads, p->kv_heads, p->q_len, p->kv_len, p->head_dim, p->head_dim_v,
		  dt ? dt : "?", mk ? mk : "?", ly ? ly : "?", in ? in : "?");
	if (p->mask == FA_MASK_PREFIX_LM) {
		if (c->prefix_lens)
			sb_list(&b, "prefix_lens", NULL, c->prefix_lens, p->batch);
		else
			sb_printf(&b, ",prefix_len=%d", p->prefix_len);
	}
	if (p->mask == FA_MASK_SLIDING_WINDOW)
		sb_printf(&b, ",window=%d", p->window);
	if (p->varlen && c->cu_seqlens_q && c->cu_seqlens_k) {
		sb_list(&b, "seqlens", c->cu_seqlens_q, NULL, p->batch);
		sb_list(&b, "kv_seqlens", c->cu_seqlens_k, NULL, p->batch);
	}
	if (c->scale_set) {
		/* the shortest decimal that reads back as the same float: 0.3, not 0.300000012 */
		char num[32];
		for (int prec = 6; prec <= 9; prec++) {
			snprintf(num, sizeof num, "%.*g", prec, (double)p->scale);
			if (strtof(num, NULL) == p->scale)
				break;
		}
		sb_printf(&b, ",scale=%s", num);
	}
	if (c->pass != FA_PASS_FWD) /* fwd keys stay as they were before passes existed */
		sb_printf(&b, ",pass=%s", fa_pass_name(c->pass));
	if (b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* Where a value of the case repeated was given, for a message: "at
 * FILE:LINE:COL" ("FILE:LINE:COL" when bare); for a case read back from a
 * database (line 0: fa_store_import's) "in " and what l->file says, "run 3". */
static const char *held_at(const struct fa_loc *l, int bare, char *buf, size_t size)
{
	const char *file = l->file ? l->file : "?";
	if (l->line > 0)
		snprintf(buf, size, "%s%s:%d:%d", bare ? "" : "at ", file, l->line, l->col);
	else
		snprintf(buf, size, "in %s", file);
	return buf;
}

enum fa_rc fa_case_merge_repeat(struct fa_case *c, const struct fa_case *d, int row,
				struct fa_err *err)
{
	char at[FA_ERR_PATH_MAX + 40];
	if (d->depth_loc.file && c->depth_loc.file && d->depth != c->depth)
		return fa_err_at(err, &d->depth_loc,
				 "depth %d makes the same case as depth %d (%s): %s", d->depth,
				 c->depth, held_at(&c->depth_loc, 1, at, sizeof at),
				 d->p.varlen ? "kv_seqlens are given, so depth does not change the "
					       "case; each sequence's keys, the cache included, are its "
					       "kv_seqlens entry"
				 : row ? "kv_len is given, so depth does not change the case; for "
					 "a cache of depth keys before the queries, a row's "
					 "kv_len is depth + q_len"
				       : "kv_len is given, so depth does not change the case; for "
					 "a cache of depth keys before the queries, write kv_len: "
					 "depth + q_len");
	for (int32_t k = 0; k < d->n_tags; k++)
		for (int32_t j = 0; j < c->n_tags; j++) {
			const struct fa_case_tag *dt = &d->tags[k];
			struct fa_case_tag *ct = &c->tags[j];
			if (strcmp(ct->name, dt->name) != 0 || dt->layers == 0 || ct->layers == dt->layers)
				continue;
			if (ct->layers == 0) { /* a tag given no layers takes these */
				ct->layers = dt->layers;
				ct->loc = dt->loc;
				continue;
			}
			return fa_err_at(err, &dt->loc,
					 "label '%s' has layers %d here but %d %s, on the same case: a "
					 "label has one layer count per case",
					 dt->name, dt->layers, ct->layers,
					 held_at(&ct->loc, 0, at, sizeof at));
		}
	if (!c->depth_loc.file && d->depth_loc.file) { /* the repeat names the cache */
		c->depth = d->depth;
		c->depth_loc = d->depth_loc;
	}
	return FA_OK;
}

/* Turns the work list into s->cases: reports the first pending error, drops
 * repeated keys (the first stays, with every label, see
 * fa_case_merge_repeat), sets keys, seeds and settings. */
static enum fa_rc finish(struct load *ld)
{
	struct fa_suite *s = ld->s;
	struct fa_worklist *wl = &ld->work;
	size_t cap = 16;
	int32_t *table;
	for (int32_t i = 0; i < wl->n; i++)
		if (wl->v[i].pending)
			return fa_err_at(ld->err, &wl->v[i].pending_loc, "%s", wl->v[i].pending);
	while (cap < (size_t)wl->n * 2)
		cap *= 2;
	if (!(table = malloc(cap * sizeof *table)))
		return nomem(ld);
	for (size_t i = 0; i < cap; i++)
		table[i] = -1;
	if (!(s->cases = calloc((size_t)wl->n + 1, sizeof *s->cases))) {
		free(table);
		return nomem(ld);
	}
	for (int32_t i = 0; i < wl->n; i++) {
		struct fa_work *w = &wl->v[i];
		char *key = fa_case_key(&w->c);
		uint64_t h;
		size_t slot;
		int dup = 0;
		if (!key) {
			free(table);
			return nomem(ld);
		}
		h = fa_fnv1a64(FA_FNV_OFFSET, key, strlen(key));
		for (slot = h & (cap - 1); table[slot] >= 0; slot = (slot + 1) & (cap - 1))
			if (strcmp(s->cases[table[slot]].key, key) == 0) {
				dup = 1;
				break;
			}
		if (dup) {
			/* one shape, several models: the case keeps every label */
			enum fa_rc mrc =
				fa_case_merge_repeat(&s->cases[table[slot]], &w->c, 0, ld->err);
			int merged = mrc == FA_OK ? fa_case_merge_tags(&s->cases[table[slot]], &w->c) : 0;
			free(key);
			fa_work_free(w);
			if (mrc != FA_OK || merged != 0) {
				free(table);
				return mrc != FA_OK ? mrc : nomem(ld);
			}
			continue;
		}
		struct fa_case *c = &s->cases[s->n_cases];
		*c = w->c;
		memset(&w->c, 0, sizeof w->c); /* ownership moves to the suite */
		c->key = key;
		c->index = s->n_cases;
		c->seed = fa_rng_mix64(s->seed ^ h);
		c->kernels = &s->kernel_sets[w->set];
		c->measure = &s->measures[w->set];
		c->check = &s->checks[w->set];
		table[slot] = s->n_cases++;
	}
	free(table);
	wl->n = 0;
	return FA_OK;
}

/* The file name of path without its folder and .yaml / .yml. */
static char *default_name(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;
	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
		n -= 5;
	else if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
		n -= 4;
	return strndup(base, n);
}

enum fa_rc fa_suite_load(const char *path, uint64_t seed_override, struct fa_suite *s,
			 struct fa_err *err)
{
	struct load ld;
	enum fa_rc rc;
	memset(s, 0, sizeof *s);
	memset(&ld, 0, sizeof ld);
	ld.s = s;
	ld.err = err;
	ld.hash = FA_FNV_OFFSET;
	s->seed = 1;
	if (!(s->path = strdup(path)) || !(s->description = strdup(""))) {
		rc = nomem(&ld);
		goto out;
	}
	if ((rc = load_file(&ld, path, path, NULL, NULL)) != FA_OK)
		goto out;
	if (!ld.name_set && !(s->name = default_name(path))) {
		rc = nomem(&ld);
		goto out;
	}
	if (seed_override != 0)
		s->seed = seed_override;
	snprintf(s->hash, sizeof s->hash, "%016llx", (unsigned long long)ld.hash);
	rc = finish(&ld);
out:
	for (int32_t i = 0; i < ld.work.n; i++)
		fa_work_free(&ld.work.v[i]);
	free(ld.work.v);
	for (int32_t i = 0; i < ld.n_exprs; i++)
		fa_expr_free(ld.exprs[i]);
	free(ld.exprs);
	fa_arena_free(&ld.arena);
	if (rc != FA_OK)
		fa_suite_free(s);
	return rc;
}

static void case_free(struct fa_case *c)
{
	free(c->cu_seqlens_q);
	free(c->cu_seqlens_k);
	free(c->prefix_lens);
	free(c->key);
	fa_case_free_tags(c);
}

enum fa_rc fa_suite_filter(struct fa_suite *s, const char *where, struct fa_err *err)
{
	static const struct fa_loc where_loc = {"--where", 1, 1};
	struct fa_expr *e;
	enum fa_rc rc = fa_expr_parse(where, &where_loc, &e, err);
	int32_t o = 0;
	if (rc != FA_OK) {
		fa_err_set_text(err, where);
		return rc;
	}
	for (int32_t i = 0; i < s->n_cases; i++) {
		if (fa_expr_eval(e, &s->cases[i])) {
			s->cases[o] = s->cases[i];
			s->cases[o].index = o;
			o++;
		} else {
			case_free(&s->cases[i]);
		}
	}
	s->n_cases = o;
	fa_expr_free(e);
	return FA_OK;
}

void fa_suite_free(struct fa_suite *s)
{
	if (!s)
		return;
	for (int32_t i = 0; i < s->n_cases; i++)
		case_free(&s->cases[i]);
	free(s->cases);
	for (int32_t i = 0; i < s->n_sets && s->kernel_sets; i++) {
		for (int32_t k = 0; k < s->kernel_sets[i].n; k++)
			free(s->kernel_sets[i].patterns[k]);
		free(s->kernel_sets[i].patterns);
		free(s->kernel_sets[i].locs);
	}
	for (int32_t i = 0; i < s->n_files; i++)
		free(s->files[i]);
	free(s->files);
	free(s->kernel_sets);
	free(s->measures);
	free(s->checks);
	free(s->name);
	free(s->description);
	free(s->path);
	memset(s, 0, sizeof *s);
}
