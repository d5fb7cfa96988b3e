/* plot_speedup.c - the speedup plot of a compare (plot.h, compare.h): one
 * panel per kernel, a horizontal bar per timed row with the HEAD-over-BASE
 * speedup on a log axis and its bootstrap interval, coloured by verdict.
 */
#include "plot_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"


/* A compare row's kernel as fabench compare names it: "kernel[params]", or
 * "kernel[base -> head]" when its sides ran other params (--ignore-params). */
static void row_label(const struct fa_cmp_row *w, char *buf, size_t size)
{
	if (w->base_params && strcmp(w->base_params, w->params) != 0)
		snprintf(buf, size, "%s[%s -> %s]", w->kernel, w->base_params, w->params);
	else
		fa_plot_kernel_label(w->kernel, w->params, buf, size);
}

/* The parameters that name row w's case into buf: those that vary, and its
 * pass when it is a backward (a bwd and a fwd_bwd case of one shape differ
 * in nothing else). */
static void case_values(const struct fa_compare *cmp, const struct fa_cmp_row *w, char *buf,
			size_t size)
{
	size_t n;
	fa_plot_shown_values(cmp->n_params, cmp->param_names, cmp->shown, w->values, buf, size);
	n = strlen(buf);
	if (w->pass != FA_PASS_FWD && n < size)
		snprintf(buf + n, size - n, "%spass=%s", n ? " " : "", fa_pass_name(w->pass));
}

/* "label 'nightly' (runs 2, 3)" or "run 1" into b. */
static void side_text(struct sbuf *b, const struct fa_cmp_side *sd)
{
	if (sd->matched_by && strcmp(sd->matched_by, "id") != 0)
		fa_sb_add(b, "%s '%s' ", sd->matched_by, sd->spec);
	fa_sb_add(b, "%s", sd->matched_by && strcmp(sd->matched_by, "id") != 0 ? "(" : "");
	fa_sb_add(b, "run%s ", sd->n_runs == 1 ? "" : "s");
	for (int i = 0; i < sd->n_runs && i < 8; i++)
		fa_sb_add(b, "%s%" PRId64, i ? ", " : "", sd->runs[i].id);
	if (sd->n_runs > 8)
		fa_sb_add(b, ", ... (%d)", (int)sd->n_runs);
	fa_sb_add(b, "%s", sd->matched_by && strcmp(sd->matched_by, "id") != 0 ? ")" : "");
}

/* Candidate tics of a speedup axis: round factors either side of 1. */
static const double speedup_tics[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 0.67, 0.8, 0.9,
				      1,    1.1,  1.25, 1.5, 2,   3,    4,   5,    10,  20,
				      50,   100};

static int row_timed(const struct fa_cmp_row *w)
{
	return w->change == FA_CMP_TIMED && w->speedup > 0 && isfinite(w->speedup);
}

/* Speedup panels: one per kernel (kernel[params]), side by side, with the
 * cases as rows shared by all (labelled left of the first), so that a case
 * is named once and the kernels' bars line up. Sizes in pixels. */
#define SPEEDUP_PANEL_PX 340
#define SPEEDUP_ROW_PX 20
#define SPEEDUP_TOP_PX 80
#define SPEEDUP_BOTTOM_PX 110

enum fa_rc fa_plot_script_speedup(const struct fa_plot_opts *o, FILE *out, struct fa_err *err)
{
	const struct fa_compare *cmp = o->compare;
	struct sbuf title = {0};
	int n = 0, left_out = 0, label_w = 10, counts[4] = {0}, nk = 0, ny = 0, width, height;
	int *row_k = NULL, *row_y = NULL, *case_row = NULL;
	char **knames = NULL;
	double lo = 1, hi = 1;
	char buf[2048], vals[768], kl[512];
	enum fa_rc rc = FA_OK;

	if (!cmp)
		return fa_err_set(err, FA_ERR_USAGE, "a speedup plot needs a compare");
	row_k = calloc((size_t)cmp->n_rows + 1, sizeof *row_k);
	row_y = calloc((size_t)cmp->n_rows + 1, sizeof *row_y);
	case_row = calloc((size_t)cmp->n_rows + 1, sizeof *case_row); /* y -> its first row */
	knames = calloc((size_t)cmp->n_rows + 1, sizeof *knames);
	if (!row_k || !row_y || !case_row || !knames) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	/* the timed rows: their kernel (panel) and case (row), each in order of
	 * first appearance in the compare's row order */
	for (int i = 0; i < cmp->n_rows; i++) {
		const struct fa_cmp_row *w = &cmp->rows[i];
		int k, y;
		if (!row_timed(w)) {
			left_out++;
			continue;
		}
		n++;
		lo = fmin(lo, w->speedup);
		hi = fmax(hi, w->speedup);
		if (isfinite(w->perf.lo) && isfinite(w->perf.hi) && w->perf.lo > 0) {
			lo = fmin(lo, 1 / w->perf.hi);
			hi = fmax(hi, 1 / w->perf.lo);
		}
		if (w->verdict >= 0 && w->verdict < 4)
			counts[w->verdict]++;
		row_label(w, kl, sizeof kl);
		for (k = 0; k < nk && strcmp(knames[k], kl) != 0; k++)
			;
		if (k == nk && !(knames[nk++] = strdup(kl))) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			goto out;
		}
		for (y = 0; y < ny; y++) {
			const struct fa_cmp_row *f = &cmp->rows[case_row[y]];
			if (f->case_idx == w->case_idx && strcmp(f->suite, w->suite) == 0)
				break;
		}
		if (y == ny) {
			case_row[ny++] = i;
			case_values(cmp, w, vals, sizeof vals);
			label_w = (int)fmax(label_w, (double)(strlen(vals) + 6 +
							      (cmp->n_suites > 1 ? strlen(w->suite) + 1 : 0)));
		}
		row_k[i] = k;
		row_y[i] = y;
	}
	if (n == 0) {
		rc = fa_err_set(err, FA_ERR_NOT_FOUND,
				"no row of the compare was timed on both sides: nothing to plot");
		goto out;
	}

	/* about 7.5 px a character of the 10 pt font for the case labels */
	width = (int)(7.5 * label_w) + 40 + nk * SPEEDUP_PANEL_PX + 20;
	height = SPEEDUP_TOP_PX + SPEEDUP_BOTTOM_PX + (int)fmax(160, SPEEDUP_ROW_PX * (ny + 1));
	fa_gp_begin(out, o, width, height);
	/* per kernel: bars by verdict (one block each), the intervals and the
	 * value labels; y is the case's row */
	for (int k = 0; k < nk; k++) {
		char name[48];
		for (int v = 0; v < 4; v++) {
			snprintf(name, sizeof name, "k%d_%s", k, fa_stats_verdict_name(v));
			fa_gp_block(out, name, "case_row speedup bar_from bar_to");
			for (int i = 0; i < cmp->n_rows; i++) {
				const struct fa_cmp_row *w = &cmp->rows[i];
				if (!row_timed(w) || row_k[i] != k || w->verdict != v)
					continue;
				fprintf(out, "%d ", row_y[i]);
				fa_gp_num(out, w->speedup);
				fputc(' ', out);
				fa_gp_num(out, fmin(w->speedup, 1));
				fputc(' ', out);
				fa_gp_num(out, fmax(w->speedup, 1));
				fputc('\n', out);
			}
			fa_gp_block_end(out);
		}
		snprintf(name, sizeof name, "k%d_ci", k);
		fa_gp_block(out, name, "case_row speedup low high (95% bootstrap interval)");
		for (int i = 0; i < cmp->n_rows; i++) {
			const struct fa_cmp_row *w = &cmp->rows[i];
			if (!row_timed(w) || row_k[i] != k || !isfinite(w->perf.lo) ||
			    !isfinite(w->perf.hi) || !(w->perf.lo > 0))
				continue;
			fprintf(out, "%d ", row_y[i]);
			fa_gp_num(out, w->speedup);
			fputc(' ', out);
			fa_gp_num(out, 1 / w->perf.hi);
			fputc(' ', out);
			fa_gp_num(out, 1 / w->perf.lo);
			fputc('\n', out);
		}
		fa_gp_block_end(out);
		snprintf(name, sizeof name, "k%d_values", k);
		fa_gp_block(out, name, "case_row x text");
		for (int i = 0; i < cmp->n_rows; i++) {
			const struct fa_cmp_row *w = &cmp->rows[i];
			double x;
			char txt[32];
			if (!row_timed(w) || row_k[i] != k)
				continue;
			x = fmax(w->speedup, 1);
			if (isfinite(w->perf.lo) && w->perf.lo > 0)
				x = fmax(x, 1 / w->perf.lo);
			snprintf(txt, sizeof txt, "%.3fx", w->speedup);
			fprintf(out, "%d ", row_y[i]);
			fa_gp_num(out, x * 1.02);
			fputc(' ', out);
			fa_gp_data_str(out, txt);
			fputc('\n', out);
		}
		fa_gp_block_end(out);
	}

	if (o->title)
		fa_sb_add(&title, "%s", o->title);
	else {
		fa_sb_add(&title, "speedup of HEAD over BASE: BASE ");
		side_text(&title, &cmp->base);
		fa_sb_add(&title, ", HEAD ");
		side_text(&title, &cmp->head);
		if (isfinite(cmp->geomean_speedup))
			fa_sb_add(&title, "; geometric mean %.3gx", cmp->geomean_speedup);
		if (left_out)
			fa_sb_add(&title, "\n%d row%s not timed on both sides %s not shown (see fabench compare)",
			       left_out, left_out == 1 ? "" : "s", left_out == 1 ? "is" : "are");
	}
	fputs("set multiplot title ", out);
	fa_gp_text(out, fa_sb_str(&title));
	fputs(" font ',12'\n", out);
	/* the labels right of the bars need room: a quarter of the range more */
	lo /= 1.1;
	hi *= 1.1 * pow(hi / lo, 0.25);
	fprintf(out, "set yrange [%d.7:-0.7]\nset logscale x 2\nset xrange [", ny - 1);
	fa_gp_num(out, lo);
	fputc(':', out);
	fa_gp_num(out, hi);
	fputs("]\nset xtics (", out);
	{
		/* 1, then outwards the candidates at least a sixth of the axis
		 * (in log) from the last one kept, so labels never overlap */
		double gap = log(hi / lo) / 6, last;
		int keep[N_OF(speedup_tics)] = {0}, one = 0, first = 1;
		while (speedup_tics[one] != 1)
			one++;
		keep[one] = 1;
		last = 1;
		for (int i = one + 1; i < N_OF(speedup_tics) && speedup_tics[i] <= hi; i++)
			if (log(speedup_tics[i] / last) >= gap) {
				keep[i] = 1;
				last = speedup_tics[i];
			}
		last = 1;
		for (int i = one - 1; i >= 0 && speedup_tics[i] >= lo; i--)
			if (log(last / speedup_tics[i]) >= gap) {
				keep[i] = 1;
				last = speedup_tics[i];
			}
		for (int i = 0; i < N_OF(speedup_tics); i++) {
			if (!keep[i])
				continue;
			snprintf(buf, sizeof buf, "%gx", speedup_tics[i]);
			fputs(first ? "" : ", ", out);
			fa_gp_str(out, buf);
			fputc(' ', out);
			fa_gp_num(out, speedup_tics[i]);
			first = 0;
		}
	}
	fputs(")\nset xlabel 'speedup, log scale'\n"
	      "set grid xtics\nset tics nomirror\nset ytics scale 0\n"
	      "set arrow from 1, graph 0 to 1, graph 1 nohead lc rgb '#333333' lw 1.5\n",
	      out);
	/* every panel has the same plot area; the key and the note once, at the
	 * bottom of the image */
	fprintf(out, "set tmargin at screen %.4f\nset bmargin at screen %.4f\n",
		1 - (double)SPEEDUP_TOP_PX / height, (double)SPEEDUP_BOTTOM_PX / height);
	fputs("set key at screen 0.5, screen 0.01 center bottom horizontal maxrows 1 Left reverse\n"
	      "set label 1 'speedup = BASE median / HEAD median (> 1: HEAD is faster); whiskers: "
	      "95% bootstrap interval' at screen 0.5, screen ",
	      out);
	fprintf(out, "%.4f center\n", 48.0 / height);
	for (int k = 0; k < nk; k++) {
		double x0 = (int)(7.5 * label_w) + 40 + k * SPEEDUP_PANEL_PX;
		fprintf(out, "\n# panel %d\nset lmargin at screen %.4f\nset rmargin at screen %.4f\n",
			k + 1, x0 / width, (x0 + SPEEDUP_PANEL_PX - 30) / width);
		fputs("set title ", out);
		fa_gp_str(out, knames[k]);
		fputs("\n", out);
		if (k == 0) {
			fputs("set ytics (", out);
			for (int y = 0; y < ny; y++) {
				const struct fa_cmp_row *w = &cmp->rows[case_row[y]];
				case_values(cmp, w, vals, sizeof vals);
				snprintf(buf, sizeof buf, "%s%s#%d%s%s", cmp->n_suites > 1 ? w->suite : "",
					 cmp->n_suites > 1 ? " " : "", (int)w->case_idx + 1,
					 vals[0] ? "  " : "", vals);
				fputs(y ? ", " : "", out);
				fa_gp_str(out, buf);
				fprintf(out, " %d", y);
			}
			fputs(")\n", out);
		} else if (k == 1) {
			fputs("set ytics format ''\nset ytics ()\nunset label 1\nunset key\n", out);
		}
		fputs("plot ", out);
		/* the verdicts the kernel has (an empty block only makes gnuplot
		 * warn), its intervals when it has some, its values */
		for (int v = 0; v < 4; v++) {
			int rows = 0;
			for (int i = 0; i < cmp->n_rows; i++)
				rows += row_timed(&cmp->rows[i]) && row_k[i] == k &&
					cmp->rows[i].verdict == v;
			if (rows)
				fprintf(out,
					"$k%d_%s using 2:1:3:4:($1-0.35):($1+0.35) with boxxyerror "
					"fs solid 0.85 noborder lc rgb '%s' notitle, \\\n     ",
					k, fa_stats_verdict_name(v), fa_plot_verdict_colours[v]);
		}
		for (int i = 0; i < cmp->n_rows; i++) {
			const struct fa_cmp_row *w = &cmp->rows[i];
			if (row_timed(w) && row_k[i] == k && isfinite(w->perf.lo) &&
			    isfinite(w->perf.hi) && w->perf.lo > 0) {
				fprintf(out, "$k%d_ci using 2:1:3:4 with xerrorbars lc rgb '#333333' ps 0 "
					     "notitle, \\\n     ",
					k);
				break;
			}
		}
		fprintf(out, "$k%d_values using 2:1:3 with labels left font ',9' notitle", k);
		/* the legend: each verdict's colour with its count (also a verdict
		 * without rows, so the four colours are always explained) */
		for (int v = 0; k == 0 && v < 4; v++) {
			snprintf(buf, sizeof buf, "%s (%d)", fa_stats_verdict_name(v), counts[v]);
			fprintf(out,
				", \\\n     keyentry with boxes fs solid 0.85 noborder lc rgb '%s' title ",
				fa_plot_verdict_colours[v]);
			fa_gp_str(out, buf);
		}
		fputs("\n", out);
	}
	fputs("unset multiplot\n", out);
	if (title.oom)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
out:
	fa_sb_free(&title);
	for (int k = 0; knames && k < nk; k++)
		free(knames[k]);
	free(knames);
	free(row_k);
	free(row_y);
	free(case_row);
	return rc;
}

