/* plot.h - charts of stored results, drawn by gnuplot as PNG or SVG.
 *
 * Four kinds:
 *   throughput  one run: x = sequence length (q_len; kv_len for decode-like
 *               cases), log2 axis; y = TFLOP/s (GB/s for decode-like cases,
 *               q_len <= 16); one line per kernel, one panel per head_dim
 *               (decode-like cases in panels of their own), a panel with
 *               more than four variants (cases that differ in mask, dtype,
 *               batch, ...) split by one more parameter; the variants are
 *               series of the kernel's colour, told apart by dash and point
 *               type, named by what differs within their panel.
 *   speedup     a compare (compare.h): one panel per kernel, one row per
 *               case: a horizontal bar per timed row, the HEAD-over-BASE
 *               speedup on a log axis with its bootstrap interval, coloured
 *               by verdict.
 *   history     a history (history.h): one panel per case, the median of
 *               each kernel over the runs, the segments between detected
 *               steps as dashed lines and each step marked.
 *   heatmap     a tuning run (one kernel with several sets of params): x =
 *               the params, y = case, colour = time relative to the best
 *               params of that case.
 *
 * Two layers: fa_plot_script() writes a self-contained gnuplot script (the
 * data inline as datablocks, output to "plot.png" or "plot.svg" in the
 * current folder), deterministic for a database, so tests can compare it
 * byte for byte; fa_plot_render() and fa_plot_svg() write that script into
 * a temporary folder, run gnuplot on it (fork and execvp, never a shell)
 * and take the image. Nothing here prints.
 *
 * Colours: the same kernel gets the same colour in every plot (a table of
 * the known kernels first, then a stable hash of the name into the palette).
 */
#ifndef FA_PLOT_H
#define FA_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compare.h"
#include "../base/err.h"
#include "history.h"
#include "../store/store.h"

enum fa_plot_kind {
	FA_PLOT_THROUGHPUT = 0,
	FA_PLOT_SPEEDUP = 1,
	FA_PLOT_HISTORY = 2,
	FA_PLOT_HEATMAP = 3,
};

enum fa_plot_format { FA_PLOT_PNG = 0, FA_PLOT_SVG = 1 };

/* "throughput", "speedup", "history", "heatmap" -> enum; -1 when unknown. */
int fa_plot_kind_parse(const char *s);
const char *fa_plot_kind_name(int kind);

/* The format a file name asks for by its extension (".png", ".svg", any
 * case); -1 for another. */
int fa_plot_format_of_path(const char *path);

struct fa_plot_opts {
	int32_t kind;            /* enum fa_plot_kind */
	int32_t format;          /* enum fa_plot_format */
	int64_t run_id;          /* throughput, heatmap: the run */
	const char *where;       /* throughput, heatmap: keep the cases for which
	                            this expression (expr.h) holds; NULL: all */
	const char *kernel;      /* heatmap: the tuned kernel; NULL: the kernel
	                            with the most sets of params */
	const struct fa_compare *compare; /* speedup: the compare to draw */
	const struct fa_history *history; /* history: the history to draw */
	const char *title;       /* NULL: a title naming the run(s) */
	int32_t width, height;   /* pixels (SVG: its size); 0: the kind's default */
	/* heatmap (fabench tune): a rule's choice per case, drawn as a ring on
	 * the cell of case idx mark_idx[i] and params mark_params[i]; n_marks 0:
	 * none. mark_label names the rule in the key. */
	const int64_t *mark_idx;
	const char *const *mark_params;
	int32_t n_marks;
	const char *mark_label;
};

/* The colour of a kernel (or of a column label "kernel[params]") as
 * "#rrggbb": a fixed table for the known kernels, else a hash of the name
 * into a palette of distinct colours. Static storage. */
const char *fa_plot_kernel_colour(const char *kernel);

/* Writes the gnuplot script of o to out: terminal, data, labels and plot
 * commands; run in a folder, it writes plot.png or plot.svg there. s is
 * needed for throughput and heatmap (may be NULL otherwise). Returns FA_OK;
 * FA_ERR_NOT_FOUND for an unknown run, a run with nothing to plot (no
 * passed timed result, none left by --where, no tuned kernel, a compare
 * without timed rows, an empty history) with a message saying which;
 * FA_ERR_INPUT for a --where that does not parse (err points into it as
 * file "--where"); FA_ERR_USAGE for a bad kind, format or a missing input
 * (no compare or history given); FA_ERR_DB; FA_ERR_NOMEM; FA_ERR_IO when out
 * cannot be written. On error, what was written to out is incomplete. */
enum fa_rc fa_plot_script(struct fa_store *s, const struct fa_plot_opts *o, FILE *out,
			  struct fa_err *err);

/* 1 when gnuplot can be run: $FABENCH_GNUPLOT (a program name or path, for
 * tests) or "gnuplot" is found in PATH. */
int fa_plot_gnuplot_available(void);

/* Draws o into path (its parent folders are created): the script and the
 * image are made in a temporary folder (mkdtemp under $TMPDIR or /tmp),
 * gnuplot runs there with its stderr captured to a file, and the folder is
 * removed afterwards. Returns FA_OK; the errors of fa_plot_script;
 * FA_ERR_NOT_FOUND when gnuplot is not installed (the message says to
 * install gnuplot-nox); FA_ERR_BACKEND when gnuplot fails (its exit status
 * and stderr in the message) or writes no image; FA_ERR_TIMEOUT when it
 * runs past 120 s (killed); FA_ERR_IO when a file cannot be written. path
 * is not touched on failure. */
enum fa_rc fa_plot_render(struct fa_store *s, const struct fa_plot_opts *o, const char *path,
			  struct fa_err *err);

/* Draws o as SVG (o->format is ignored) into *svg: a malloc'd,
 * NUL-terminated string the caller frees, *len its length (len may be
 * NULL). Errors as fa_plot_render; *svg is NULL on failure. */
enum fa_rc fa_plot_svg(struct fa_store *s, const struct fa_plot_opts *o, char **svg, size_t *len,
		       struct fa_err *err);

#endif /* FA_PLOT_H */
