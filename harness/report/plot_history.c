/* plot_history.c - the history plot (plot.h, history.h): one panel per
 * case, the median of each kernel over the runs, the segments between the
 * detected steps as dashed lines and each step marked.
 */
#include "plot_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"


static int hist_same_case(const struct fa_hist_series *a, const struct fa_hist_series *b)
{
	return strcmp(a->suite, b->suite) == 0 && strcmp(a->key, b->key) == 0;
}

/* 1 when the kernel of se has series with other params in h: then its
 * series are named kernel[params], as the report names columns. */
static int several_params(const struct fa_history *h, const struct fa_hist_series *se)
{
	for (int i = 0; i < h->n_series; i++)
		if (strcmp(h->series[i].kernel, se->kernel) == 0 &&
		    strcmp(h->series[i].params, se->params) != 0)
			return 1;
	return 0;
}

enum fa_rc fa_plot_script_history(const struct fa_plot_opts *o, FILE *out, struct fa_err *err)
{
	const struct fa_history *h = o->history;
	struct sbuf title = {0};
	int *panel_of = NULL, *panel_first = NULL, np = 0, cols, rows, suites = 0, step;
	char **names = NULL;
	const char **sorted = NULL;
	int n_named = 0;
	struct colour_map cm = {0, NULL, NULL};
	const struct fa_history_opts *ho;
	char buf[1024], kl[256];
	enum fa_rc rc = FA_OK;

	if (!h)
		return fa_err_set(err, FA_ERR_USAGE, "a history plot needs a history");
	ho = &h->opts;
	panel_of = malloc(((size_t)h->n_series + 1) * sizeof *panel_of);
	panel_first = malloc(((size_t)h->n_series + 1) * sizeof *panel_first);
	if (!panel_of || !panel_first) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	/* panels: the cases with a timed point, in series order */
	for (int i = 0; i < h->n_series; i++) {
		int p;
		panel_of[i] = -1;
		if (h->series[i].n_timed == 0)
			continue;
		for (p = 0; p < np && !hist_same_case(&h->series[panel_first[p]], &h->series[i]); p++)
			;
		if (p == np)
			panel_first[np++] = i;
		panel_of[i] = p;
		if (strcmp(h->series[i].suite, h->series[panel_first[0]].suite) != 0)
			suites = 1;
	}
	if (np == 0) {
		if (h->n_runs)
			rc = fa_err_set(err, FA_ERR_NOT_FOUND,
					"no result of the history's %d run%s was timed: nothing to plot",
					(int)h->n_runs, h->n_runs == 1 ? "" : "s");
		else
			rc = fa_err_set(err, FA_ERR_NOT_FOUND,
					"the history selects no run: nothing to plot");
		goto out;
	}
	if (np > FA_PLOT_HISTORY_MAX_PANELS) {
		rc = fa_err_set(err, FA_ERR_USAGE,
				"the history has %d cases and a plot shows at most %d: narrow it "
				"with --where, --kernel or --suite",
				np, FA_PLOT_HISTORY_MAX_PANELS);
		goto out;
	}
	/* the series' names (kernel, or kernel[params] when the kernel has
	 * several) and their colours */
	names = calloc((size_t)h->n_series + 1, sizeof *names);
	sorted = calloc((size_t)h->n_series + 1, sizeof *sorted);
	if (!names || !sorted) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	for (int i = 0; i < h->n_series; i++) {
		const struct fa_hist_series *se = &h->series[i];
		fa_plot_kernel_label(se->kernel, several_params(h, se) ? se->params : "", kl, sizeof kl);
		/* runs on several devices: a series per device, named (and
		 * coloured) by it, as the history's tables name them */
		if (h->n_devices > 1)
			snprintf(kl + strlen(kl), sizeof kl - strlen(kl), " on %s",
				 se->device && se->device[0] ? se->device : "an unknown device");
		if (!(names[i] = strdup(kl))) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			goto out;
		}
		if (panel_of[i] >= 0)
			sorted[n_named++] = names[i];
	}
	if (fa_plot_colours_assign(&cm, sorted, n_named) != 0) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	cols = np == 1 ? 1 : 2;
	rows = (np + cols - 1) / cols;
	fa_gp_begin(out, o, cols == 1 ? 1000 : 1600, 80 + 400 * rows);

	/* per series: its timed points, the segment means between steps (pairs
	 * of points, one segment per blank-line-separated block), the steps */
	for (int i = 0; i < h->n_series; i++) {
		const struct fa_hist_series *se = &h->series[i];
		char name[32];
		if (panel_of[i] < 0)
			continue;
		snprintf(name, sizeof name, "p%d", i);
		fa_gp_block(out, name, "run_index median_ms run_id");
		for (int j = 0; j < se->n_points; j++) {
			const struct fa_hist_point *pt = &se->points[j];
			if (!isfinite(pt->median_ms))
				continue;
			fprintf(out, "%d ", (int)pt->run);
			fa_gp_num(out, pt->median_ms);
			fprintf(out, " %" PRId64 "\n", h->runs[pt->run].id);
		}
		fa_gp_block_end(out);
		if (se->n_steps == 0)
			continue;
		snprintf(name, sizeof name, "m%d", i);
		fa_gp_block(out, name, "run_index segment_mean_ms (segments between steps)");
		for (int k = 0; k <= se->n_steps; k++) {
			/* segment k runs from the point after step k-1 (or the first
			 * timed point) to the last point before step k (or the end) */
			int from = k ? se->steps[k - 1].at : 0, to = se->n_points - 1;
			double mean = k < se->n_steps ? se->steps[k].before_ms : se->steps[k - 1].after_ms;
			if (k < se->n_steps)
				to = se->steps[k].prev;
			while (from < to && !isfinite(se->points[from].median_ms))
				from++;
			while (to > from && !isfinite(se->points[to].median_ms))
				to--;
			fputs(k ? "\n" : "", out);
			fprintf(out, "%g ", se->points[from].run - 0.25);
			fa_gp_num(out, mean);
			fprintf(out, "\n%g ", se->points[to].run + 0.25);
			fa_gp_num(out, mean);
			fputc('\n', out);
		}
		fa_gp_block_end(out);
		for (int dir = 0; dir < 2; dir++) {
			snprintf(name, sizeof name, "%s%d", dir ? "faster" : "slower", i);
			fa_gp_block(out, name, "run_index median_ms change");
			for (int k = 0; k < se->n_steps; k++) {
				const struct fa_hist_step *st = &se->steps[k];
				const struct fa_hist_point *pt = &se->points[st->at];
				char txt[64];
				if ((st->change < 0) != dir)
					continue;
				snprintf(txt, sizeof txt, "%+.0f%%%s", 100 * st->change,
					 st->new_regression ? " new" : "");
				fprintf(out, "%d ", (int)pt->run);
				fa_gp_num(out, isfinite(pt->median_ms) ? pt->median_ms : st->after_ms);
				fputc(' ', out);
				fa_gp_data_str(out, txt);
				fputc('\n', out);
			}
			fa_gp_block_end(out);
		}
	}

	if (o->title) {
		fa_sb_add(&title, "%s", o->title);
	} else {
		const struct fa_hist_run *a = &h->runs[0], *b = &h->runs[h->n_runs - 1];
		fa_sb_add(&title, "history of %d run%s, %.10s to %.10s", (int)h->n_runs,
		       h->n_runs == 1 ? "" : "s", a->started_at, b->started_at);
		if (ho->suite)
			fa_sb_add(&title, ", suite %s", ho->suite);
		if (ho->label)
			fa_sb_add(&title, ", label %s", ho->label);
		if (ho->since)
			fa_sb_add(&title, ", since %s", ho->since);
		if (ho->kernel)
			fa_sb_add(&title, ", kernels %s", ho->kernel);
		if (ho->where)
			fa_sb_add(&title, ", cases where %s", ho->where);
		fa_sb_add(&title, "; %d step%s found", (int)h->n_steps, h->n_steps == 1 ? "" : "s");
		if (h->n_new_regressions)
			fa_sb_add(&title, ", %d new regression%s", (int)h->n_new_regressions,
			       h->n_new_regressions == 1 ? "" : "s");
	}
	fprintf(out, "set multiplot layout %d,%d title ", rows, cols);
	fa_gp_str(out, fa_sb_str(&title));
	fputs(" font ',12'\n", out);
	/* x: the runs, oldest first; about a dozen labels at most */
	step = 1 + (h->n_runs - 1) / 12;
	/* a little room right of the latest run for its step's label */
	fprintf(out, "set xrange [-0.5:%d.8]\nset xtics (", (int)h->n_runs - 1);
	for (int r = 0; r < h->n_runs; r += step) {
		const char *at = h->runs[r].started_at;
		snprintf(buf, sizeof buf, "%" PRId64 "\n%.5s", h->runs[r].id,
			 strlen(at) >= 10 ? at + 5 : at);
		fputs(r ? ", " : "", out);
		fa_gp_text(out, buf);
		fprintf(out, " %d", r);
	}
	fputs(")\nset xlabel 'run (id and date, oldest first)' offset 0,-0.8\nset ylabel 'median time (ms)'\n"
	      "set grid\nset tics nomirror\nset key outside right top vertical Left reverse\n"
	      "set offsets 0, 0, graph 0.08, graph 0.08\n",
	      out);
	{
		/* one right margin for every panel (see fa_plot_script_throughput) */
		size_t longest = strlen("mean between steps");
		for (int i = 0; i < h->n_series; i++) {
			size_t n = strlen(names[i]);
			longest = panel_of[i] >= 0 && n > longest ? n : longest;
		}
		fprintf(out, "set rmargin %d\n", (int)longest + 8);
	}
	for (int p = 0; p < np; p++) {
		const struct fa_hist_series *s0 = &h->series[panel_first[p]];
		int first = 1, any_up = 0, any_down = 0;
		char vals[768];
		fa_plot_shown_values(h->n_params, h->param_names, h->shown, s0->values, vals, sizeof vals);
		snprintf(buf, sizeof buf, "%s%s#%d%s%s%s%s", suites ? s0->suite : "", suites ? " " : "",
			 (int)s0->case_idx + 1, vals[0] ? " " : "", vals,
			 s0->pass != FA_PASS_FWD ? " pass=" : "",
			 s0->pass != FA_PASS_FWD ? fa_pass_name(s0->pass) : "");
		fa_gp_wrap(buf, 70);
		fprintf(out, "\n# panel %d\nset title ", p + 1);
		fa_gp_text(out, buf);
		fputs("\nplot ", out);
		for (int i = 0; i < h->n_series; i++) {
			const struct fa_hist_series *se = &h->series[i];
			const char *colour;
			int up = 0, down = 0;
			if (panel_of[i] != p)
				continue;
			colour = fa_plot_colour_of(&cm, names[i]);
			fprintf(out, "%s$p%d using 1:2 with linespoints lw 2 pt 7 ps 1 lc rgb '%s' title ",
				first ? "" : ", \\\n     ", i, colour);
			fa_gp_str(out, names[i]);
			first = 0;
			if (se->n_steps == 0)
				continue;
			fprintf(out, ", \\\n     $m%d using 1:2 with lines dt 2 lw 1.5 lc rgb '%s' notitle",
				i, colour);
			for (int k = 0; k < se->n_steps; k++) {
				up |= se->steps[k].change >= 0;
				down |= se->steps[k].change < 0;
			}
			if (up)
				fprintf(out,
					", \\\n     $slower%d using 1:2 with points pt 8 ps 2.5 lw 2 "
					"lc rgb '%s' notitle"
					", \\\n     $slower%d using 1:2:3 with labels offset 0,1.6 "
					"tc rgb '%s' notitle",
					i, fa_plot_verdict_colours[FA_PERF_SLOWER], i,
					fa_plot_verdict_colours[FA_PERF_SLOWER]);
			if (down)
				fprintf(out,
					", \\\n     $faster%d using 1:2 with points pt 10 ps 2.5 lw 2 "
					"lc rgb '%s' notitle"
					", \\\n     $faster%d using 1:2:3 with labels offset 0,-1.6 "
					"tc rgb '%s' notitle",
					i, fa_plot_verdict_colours[FA_PERF_FASTER], i,
					fa_plot_verdict_colours[FA_PERF_FASTER]);
			any_up |= up;
			any_down |= down;
		}
		if (any_up || any_down)
			fputs(", \\\n     keyentry with lines dt 2 lw 1.5 lc rgb '#555555' title 'mean between steps'",
			      out);
		if (any_up)
			fprintf(out, ", \\\n     keyentry with points pt 8 ps 2 lw 2 lc rgb '%s' title 'step: slower'",
				fa_plot_verdict_colours[FA_PERF_SLOWER]);
		if (any_down)
			fprintf(out, ", \\\n     keyentry with points pt 10 ps 2 lw 2 lc rgb '%s' title 'step: faster'",
				fa_plot_verdict_colours[FA_PERF_FASTER]);
		fputs("\n", out);
	}
	fputs("unset multiplot\n", out);
	if (title.oom)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
out:
	fa_sb_free(&title);
	for (int i = 0; names && i < h->n_series; i++)
		free(names[i]);
	free(names);
	free(sorted);
	fa_plot_colours_free(&cm);
	free(panel_of);
	free(panel_first);
	return rc;
}

