/* plot_int.h - what the files of the plot module share (plot.h is its
 * public face): the growing strings and script text of gnuplot.c, the
 * colours, the run read for a plot, the case facets and labels of plot.c,
 * and the script writer of each kind (plot_throughput.c, plot_heatmap.c,
 * plot_speedup.c, plot_history.c). Not for other modules.
 */
#ifndef FA_PLOT_INT_H
#define FA_PLOT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../base/arena.h"
#include "../base/err.h"
#include "../store/store.h"
#include "../suite/suite.h"
#include "plot.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Cases with at most this many queries per sequence are decode-like and
 * memory bound: their throughput is GB/s, as in the report (report.c). */
#define FA_PLOT_DECODE_Q_LEN 16

/* A history plot has one panel per case: past this many they get too small
 * to read, and the user should narrow the selection. */
#define FA_PLOT_HISTORY_MAX_PANELS 16

/* ---- Growing strings (gnuplot.c) ---- */

struct sbuf {
	char *s;
	size_t len, cap;
	int oom;
};

/* Appends printf-style text to b; out of memory sets b->oom and keeps what
 * b held. */
void fa_sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* b's text ("" when empty or out of memory). */
const char *fa_sb_str(const struct sbuf *b);
void fa_sb_free(struct sbuf *b);

/* ---- Script text (gnuplot.c; how user text stays data is told there) ---- */

/* s as a single-quoted string, line breaks as spaces. */
void fa_gp_str(FILE *out, const char *s);
/* s as single-quoted strings, its lines joined by "\n". */
void fa_gp_text(FILE *out, const char *s);
/* s as a quoted column of a datablock. */
void fa_gp_data_str(FILE *out, const char *s);
/* A number, six significant digits. */
void fa_gp_num(FILE *out, double x);
/* The terminal, the output file and the common settings. */
void fa_gp_begin(FILE *out, const struct fa_plot_opts *o, int width, int height);
/* A datablock header; the caller writes the rows and then fa_gp_block_end. */
void fa_gp_block(FILE *out, const char *name, const char *columns);
void fa_gp_block_end(FILE *out);
/* Breaks s (in place) into lines of at most width characters at spaces. */
void fa_gp_wrap(char *s, int width);
/* A log2 x axis over [lo, hi] (lo > 0), a tic at powers of two. */
void fa_gp_log2_axis(FILE *out, double lo, double hi);

/* ---- Colours (plot.c) ---- */

/* The colours of the kernels of one plot (fa_plot_colours_assign). */
struct colour_map {
	int n;
	const char **label;
	const char **colour;
};

/* Assigns a colour to each of labels[0..n) (sorted, distinct from each
 * other while the palette lasts). Returns 0, or -1 when out of memory. */
int fa_plot_colours_assign(struct colour_map *m, const char **labels, int n);
/* The colour of label (the palette's first when it has none). */
const char *fa_plot_colour_of(const struct colour_map *m, const char *label);
void fa_plot_colours_free(struct colour_map *m);

/* Series of one kernel that differ in other ways share its colour and
 * differ in dash type (1..FA_PLOT_N_DASH_TYPES) and point type. */
#define FA_PLOT_N_POINT_TYPES 10
#define FA_PLOT_N_DASH_TYPES 5
extern const int fa_plot_point_types[FA_PLOT_N_POINT_TYPES];
/* Verdict colours of the speedup bars, by enum fa_perf_verdict. */
extern const char *const fa_plot_verdict_colours[4];

/* ---- A run read for a plot (plot.c, through store/reader.h) ---- */

struct pcase {
	int64_t idx;
	struct fa_case c;  /* the problem, dist and scale_set: enough for expressions
	                      (expr.h) and labels; no key, no lengths */
	int keep;          /* 1: --where holds */
};

struct pres {
	int ci;            /* index into run.cases */
	const char *kernel, *params; /* in the run's arena */
	char *label;       /* kernel, or kernel[params] when the kernel ran with
	                      several params in the run */
	int status;        /* enum fa_status, -1 unknown */
	double median_ms, tflops, gbps; /* NaN when NULL */
};

struct prun {
	int64_t id;
	const char *label, *suite, *backend, *device;
	struct pcase *cases;
	int n_cases;
	struct pres *res;
	int n_res;
	struct fa_arena arena; /* the reader's records and strings */
};

/* Reads run_id: its names, its cases (in suite order) and results, and
 * marks the cases where (a --where expression, NULL: all) keeps. Returns
 * FA_OK; FA_ERR_INPUT for an expression that does not parse; the reader's
 * errors (FA_ERR_NOT_FOUND, FA_ERR_DB, FA_ERR_NOMEM). Free r with
 * fa_plot_run_free either way. */
enum fa_rc fa_plot_run_load(struct fa_store *s, int64_t run_id, const char *where,
			    struct prun *r, struct fa_err *err);
void fa_plot_run_free(struct prun *r);
/* "run 2 (nightly): suite smoke, cpu on AMD EPYC" into b. */
void fa_plot_run_title(struct sbuf *b, const struct prun *r, const char *where);

/* ---- Case facets and labels (plot.c) ---- */

/* The ways cases differ, as they are named in legends and tic labels. */
enum facet {
	F_DTYPE, F_MASK, F_BATCH, F_HEADS, F_KV_HEADS, F_Q_LEN, F_KV_LEN,
	F_HEAD_DIM, F_HEAD_DIM_V, F_LAYOUT, F_INPUT, F_VARLEN, F_SCALE,
	F_PASS,      /* bwd, fwd_bwd: a backward and a forward-and-backward of one
	                shape are two series, not one line through both */
	F_MASK_KIND, /* the mask without its window or prefix: splits panels only */
	F_COUNT
};

/* Every facet that names a case (F_MASK_KIND is in F_MASK's text). */
#define FACETS_ALL (((1u << F_COUNT) - 1) & ~(1u << F_MASK_KIND))

/* The text of facet f of c into buf ("" for an unremarkable value). */
void fa_plot_facet_text(const struct fa_case *c, int f, char *buf, size_t size);
/* 1 when facet f differs between the cases cs[0..n). */
int fa_plot_facet_varies(const struct fa_case *const *cs, int n, int f);
/* The facets in allowed (a bit per facet) that vary between cs[0..n). */
unsigned fa_plot_facets_varying(const struct fa_case *const *cs, int n, unsigned allowed);
/* The texts of the facets in m, joined by ", ", into buf. */
void fa_plot_facets_label(const struct fa_case *c, unsigned m, char *buf, size_t size);
/* "kernel[params]" into buf ("kernel" without params). */
void fa_plot_kernel_label(const char *kernel, const char *params, char *buf, size_t size);
/* "name=value name=value" of the shown parameters that apply, into buf. */
void fa_plot_shown_values(int n, const char *const *names, const int32_t *shown,
			  const char *const *values, char *buf, size_t size);

/* ---- The kinds: each writes its whole script to out (fa_plot_script) ---- */

enum fa_rc fa_plot_script_throughput(struct fa_store *s, const struct fa_plot_opts *o, FILE *out,
				     struct fa_err *err);
enum fa_rc fa_plot_script_heatmap(struct fa_store *s, const struct fa_plot_opts *o, FILE *out,
				  struct fa_err *err);
enum fa_rc fa_plot_script_speedup(const struct fa_plot_opts *o, FILE *out, struct fa_err *err);
enum fa_rc fa_plot_script_history(const struct fa_plot_opts *o, FILE *out, struct fa_err *err);

#endif /* FA_PLOT_INT_H */
