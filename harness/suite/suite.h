/* suite.h - a YAML suite, parsed (libyaml) and expanded into a flat array of
 * cases. Every value keeps the file:line:col it came from, so errors found
 * late (an unknown kernel, a bad combination) still point at the input.
 *
 * The schema is documented for users in docs/suites.md.
 */
#ifndef FA_SUITE_H
#define FA_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "../../kernels/common/fa_problem.h"
#include "../run/check.h"
#include "../base/err.h"
#include "../base/names.h"
#include "../run/measure.h"

/* Kernel names or globs (fnmatch) a file asks for. */
struct fa_kernel_set {
	char **patterns;
	struct fa_loc *locs;
	int32_t n;
};

/* A label a case carries: a model (`model:`, a preset) or a free `tag:`.
 * Cases of one shape de-duplicate into one case that keeps every label. */
struct fa_case_tag {
	char *name;           /* "llama3-8b", or the tag's text; owned */
	int32_t model;        /* 1: from `model:`, 0: from `tag:` */
	int32_t layers;       /* attention layers per token (for tokens/s); 0 unknown */
	struct fa_loc loc;    /* where layers came from (the layers value, else the
	                         model or tag), set where a case is built from a
	                         file's values (a suite, an import's row) and read
	                         only while it is read (repeats that conflict,
	                         fa_case_merge_repeat) */
};

struct fa_case {
	int32_t index;         /* position in the expanded suite, from 0 */
	struct fa_problem p;   /* strides set for the case's layout */
	int32_t *cu_seqlens_q; /* batch + 1 entries, owned; NULL unless p.varlen */
	int32_t *cu_seqlens_k;
	int32_t *prefix_lens;  /* batch entries, owned; NULL: p.prefix_len for all */
	int32_t dist;          /* enum fa_dist */
	int32_t pass;          /* enum fa_pass: what is timed (fwd unless the suite says) */
	int32_t scale_set;     /* 1 when the suite gave scale explicitly */
	uint64_t seed;         /* data seed: the suite seed mixed with the key */
	char *key;             /* canonical key (fa_case_key), owned */
	struct fa_loc loc;     /* the mapping (file, group or axes) that made it */
	const struct fa_kernel_set *kernels;   /* what its file asks for (n == 0: all) */
	const struct fa_measure_cfg *measure;  /* its file's settings, defaults applied */
	const struct fa_check_cfg *check;
	int32_t depth;                /* `depth:`, KV positions before the queries; 0 none */
	struct fa_loc depth_loc;      /* where `depth:` was given; file NULL when not */
	struct fa_case_tag *tags;     /* n_tags labels, owned; NULL when none */
	int32_t n_tags;
};

/* Appends the labels of src that dst lacks (by name) to dst's; 0, or -1 when
 * out of memory (dst unchanged). */
int fa_case_merge_tags(struct fa_case *dst, const struct fa_case *src);

/* A repeat d of case c (the same key: a suite's case made twice, an
 * import's row of a case seen before, an import's case that the run of
 * --run-into holds) may only add to c: a `depth` or a label's `layers` that
 * c holds with another value would be lost, so it is an error at d's value
 * that names c's (depth_loc, the label's loc: FILE:LINE:COL, or for a case
 * read from a database, line 0, "in " and what the loc's file says, "run
 * 3"); one that c lacks (no depth, a tag without layers) is taken. row:
 * the hint of a depth error speaks of an import's row, not a suite's
 * `kv_len:`. The labels d adds are merged by the caller
 * (fa_case_merge_tags). */
enum fa_rc fa_case_merge_repeat(struct fa_case *c, const struct fa_case *d, int row,
				struct fa_err *err);

/* Frees the labels of c and zeroes them. */
void fa_case_free_tags(struct fa_case *c);

struct fa_suite {
	char *name;         /* `suite:`, or the file name without .yaml */
	char *description;  /* may be "" */
	char *path;         /* the top file as given */
	char hash[17];      /* FNV-1a 64 of every file read, in order, hex */
	uint64_t seed;      /* `seed:` or the default 1 */
	struct fa_case *cases;
	int32_t n_cases;
	/* Storage the cases point into (one entry per file read). */
	char **files;
	int32_t n_files;
	struct fa_kernel_set *kernel_sets;
	struct fa_measure_cfg *measures;
	struct fa_check_cfg *checks;
	int32_t n_sets;
};

/* The largest suite or included file read (a suite is a page of YAML; this
 * only stops a mistake such as `include: /dev/zero`'s cousins, a huge file). */
#define FA_SUITE_FILE_MAX ((size_t)16 << 20)

/* Parses path (and the files it includes), expands the axes and validates
 * every case. seed_override != 0 replaces the suite's seed (--seed; 0 means
 * none). On error fills err with file:line:col and leaves s empty (freeable). */
enum fa_rc fa_suite_load(const char *path, uint64_t seed_override, struct fa_suite *s,
			 struct fa_err *err);

/* Keeps only the cases for which the expression (--where) holds; indices are
 * renumbered. Errors point into the expression as file "--where", line 1. */
enum fa_rc fa_suite_filter(struct fa_suite *s, const char *where, struct fa_err *err);

void fa_suite_free(struct fa_suite *s);

/* The canonical key of a case: every parameter that defines the problem, in
 * a fixed order, independent of the seed, e.g.
 *   batch=1,heads=16,kv_heads=16,q_len=1024,kv_len=1024,head_dim=72,
 *   head_dim_v=72,dtype=bf16,mask=none,layout=bshd,input=normal
 * then, when they apply: prefix_len=N or prefix_lens=a/b, window=N,
 * seqlens=a/b/c, kv_seqlens=a/b/c, scale=X (only when given explicitly),
 * pass=bwd or pass=fwd_bwd (a fwd case's key has no pass, as before).
 * Returns a malloc'd string, or NULL when out of memory. */
char *fa_case_key(const struct fa_case *c);

/* The names of dtypes, masks, layouts and dists (fa_dtype_name, ...) are
 * base/names.h's, included above. */

#endif /* FA_SUITE_H */
