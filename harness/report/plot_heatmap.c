/* plot_heatmap.c - the heatmap of a tuning run (plot.h): for a kernel that
 * ran with several sets of params, x = the params, y = the case, colour =
 * time relative to the best params of that case.
 */
#include "plot_int.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "../store/store.h"


static int cmp_params_p(const void *a, const void *b)
{
	return fa_table_params_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 when the item "name=value" (n bytes) is in every params string of sets. */
static int item_common(const char *item, size_t n, const char *const *sets, int nsets)
{
	for (int i = 0; i < nsets; i++)
		if (!fa_table_params_has(sets[i], item, n))
			return 0;
	return 1;
}

/* The items of params that are not common to every set (the tic label),
 * or, when common != 0, those that are (for the axis label). */
static void params_part(const char *params, const char *const *sets, int nsets, int common,
			char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (const char *p = params; *p;) {
		size_t m = strcspn(p, ",");
		if (item_common(p, m, sets, nsets) == common && len + m + 2 < size) {
			if (len)
				buf[len++] = ',';
			memcpy(buf + len, p, m);
			len += m;
			buf[len] = '\0';
		}
		p += m + (p[m] == ',');
	}
}

enum fa_rc fa_plot_script_heatmap(struct fa_store *s, const struct fa_plot_opts *o, FILE *out,
			       struct fa_err *err)
{
	struct prun r;
	struct sbuf title = {0};
	const char **knames = NULL, *kernel = NULL;
	const char **sets = NULL;
	char **ylabels = NULL, common[512], buf[700];
	int *nsets_of = NULL, *row_case = NULL, *pair_k = NULL, nk = 0, nsets = 0, ny = 0;
	const struct fa_case **cs = NULL;
	double *ratio = NULL, *best = NULL, max_ratio = 1;
	int *status = NULL, label_w = 8, tick_w = 4;
	unsigned facets;
	sqlite3_stmt *tags_st = NULL; /* the models of a case, for its row's label */
	enum fa_rc rc = fa_plot_run_load(s, o->run_id, o->where, &r, err);

	if (rc != FA_OK)
		return rc;
	sets = calloc((size_t)r.n_res + 1, sizeof *sets);
	pair_k = calloc((size_t)r.n_res + 1, sizeof *pair_k);
	knames = calloc((size_t)r.n_res + 1, sizeof *knames);
	nsets_of = calloc((size_t)r.n_res + 1, sizeof *nsets_of);
	row_case = calloc((size_t)r.n_cases + 1, sizeof *row_case);
	cs = calloc((size_t)r.n_cases + 1, sizeof *cs);
	ylabels = calloc((size_t)r.n_cases + 1, sizeof *ylabels);
	if (!sets || !pair_k || !knames || !nsets_of || !row_case || !cs || !ylabels) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	/* the tuned kernel: the one asked for, else the one with the most sets
	 * of params (the first by name on a tie) */
	for (int i = 0, np = 0; i < r.n_res; i++) {
		int k, dup = 0;
		for (k = 0; k < nk && strcmp(knames[k], r.res[i].kernel) != 0; k++)
			;
		if (k == nk)
			knames[nk++] = r.res[i].kernel;
		/* distinct (kernel, params) pairs so far, in sets[] for now */
		for (int j = 0; j < np && !dup; j++)
			dup = pair_k[j] == k && strcmp(sets[j], r.res[i].params) == 0;
		if (!dup) {
			pair_k[np] = k;
			sets[np++] = r.res[i].params;
		}
		nsets_of[k] += !dup;
	}
	for (int k = 0, bk = -1; k < nk; k++) {
		if (o->kernel ? strcmp(knames[k], o->kernel) != 0 : nsets_of[k] < 2)
			continue;
		if (bk < 0 || nsets_of[k] > nsets_of[bk] ||
		    (nsets_of[k] == nsets_of[bk] && strcmp(knames[k], knames[bk]) < 0))
			bk = k;
		kernel = knames[bk];
	}
	if (o->kernel && !kernel) {
		rc = fa_err_set(err, FA_ERR_NOT_FOUND, "kernel '%s' has no results in run %" PRId64,
				o->kernel, r.id);
		goto out;
	}
	if (!kernel) {
		rc = fa_err_set(err, FA_ERR_NOT_FOUND,
				"run %" PRId64 " has no kernel that ran with several sets of params "
				"(a tuning run: fabench run --param KERNEL.NAME=V1,V2,...)",
				r.id);
		goto out;
	}
	/* its sets of params (columns) and cases (rows) among the kept cases */
	for (int i = 0; i < r.n_res; i++) {
		int dup = 0;
		if (strcmp(r.res[i].kernel, kernel) != 0 || !r.cases[r.res[i].ci].keep)
			continue;
		for (int j = 0; j < nsets && !dup; j++)
			dup = strcmp(sets[j], r.res[i].params) == 0;
		if (!dup)
			sets[nsets++] = r.res[i].params;
		if (ny == 0 || row_case[ny - 1] != r.res[i].ci) /* results come by case */
			row_case[ny++] = r.res[i].ci;
	}
	if (nsets < 2) {
		rc = fa_err_set(err, FA_ERR_NOT_FOUND,
				"kernel '%s' ran with %d set%s of params in the cases of run %" PRId64
				"%s%s%s: a heatmap needs two or more",
				kernel, nsets, nsets == 1 ? "" : "s", r.id,
				o->where ? " where '" : "", o->where ? o->where : "",
				o->where ? "'" : "");
		goto out;
	}
	qsort(sets, (size_t)nsets, sizeof *sets, cmp_params_p);
	for (int y = 0; y < ny; y++)
		cs[y] = &r.cases[row_case[y]].c;
	facets = fa_plot_facets_varying(cs, ny, FACETS_ALL);

	/* cells: each result's median over the best median of its case */
	ratio = malloc((size_t)ny * nsets * sizeof *ratio);
	status = malloc((size_t)ny * nsets * sizeof *status);
	best = malloc((size_t)ny * sizeof *best);
	if (!ratio || !status || !best) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	for (int y = 0; y < ny; y++) {
		best[y] = INFINITY;
		for (int x = 0; x < nsets; x++) {
			status[y * nsets + x] = -1;
			ratio[y * nsets + x] = NAN;
		}
	}
	/* the results come by case, as the rows */
	for (int i = 0, y = 0; i < r.n_res && y < ny; i++) {
		const struct pres *p = &r.res[i];
		int x;
		while (y < ny && row_case[y] < p->ci)
			y++;
		if (y == ny || row_case[y] != p->ci || strcmp(p->kernel, kernel) != 0)
			continue;
		for (x = 0; strcmp(sets[x], p->params) != 0; x++)
			;
		if (status[y * nsets + x] >= 0)
			continue; /* a set run twice on one case: the first counts */
		status[y * nsets + x] = p->status;
		if (p->status == FA_STATUS_PASS && p->median_ms > 0) {
			ratio[y * nsets + x] = p->median_ms;
			best[y] = fmin(best[y], p->median_ms);
		}
	}
	if (sqlite3_prepare_v2(fa_store_db(s),
			       "SELECT group_concat(name, ', ') FROM (SELECT t.name FROM case_tags t "
			       "JOIN cases c ON c.id = t.case_id WHERE c.run_id = ?1 AND c.idx = ?2 "
			       "ORDER BY t.seq)",
			       -1, &tags_st, NULL) != SQLITE_OK)
		tags_st = NULL; /* no labels shown: the plot is drawn all the same */
	for (int y = 0; y < ny; y++) {
		for (int x = 0; x < nsets; x++) {
			ratio[y * nsets + x] /= best[y];
			if (isfinite(ratio[y * nsets + x]))
				max_ratio = fmax(max_ratio, ratio[y * nsets + x]);
		}
		fa_plot_facets_label(cs[y], facets, common, sizeof common);
		/* the models (labels) that share the case, as the reports show them */
		char models[160] = "";
		if (tags_st) {
			sqlite3_reset(tags_st);
			sqlite3_bind_int64(tags_st, 1, r.id);
			sqlite3_bind_int64(tags_st, 2, r.cases[row_case[y]].idx);
			if (sqlite3_step(tags_st) == SQLITE_ROW && sqlite3_column_text(tags_st, 0))
				snprintf(models, sizeof models, " (%.150s)",
					 (const char *)sqlite3_column_text(tags_st, 0));
		}
		if (isfinite(best[y]))
			snprintf(buf, sizeof buf, "#%" PRId64 "%s%s%s: best %.3g ms",
				 r.cases[row_case[y]].idx + 1, common[0] ? " " : "", common, models,
				 best[y]);
		else
			snprintf(buf, sizeof buf, "#%" PRId64 "%s%s%s: no time",
				 r.cases[row_case[y]].idx + 1, common[0] ? " " : "", common, models);
		if (!(ylabels[y] = strdup(buf))) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			goto out;
		}
		label_w = (int)fmax(label_w, (double)strlen(buf));
	}
	for (int x = 0; x < nsets; x++) {
		params_part(sets[x], sets, nsets, 0, buf, sizeof buf);
		tick_w = (int)fmax(tick_w, (double)strlen(buf));
	}

	if (o->title)
		fa_sb_add(&title, "%s", o->title);
	else {
		fa_sb_add(&title, "tuning of %s: ", kernel);
		fa_plot_run_title(&title, &r, o->where);
	}
	/* about 7 px per character of a 10 pt font; the x tics are turned by
	 * 30 degrees, so half their length goes down; and wide enough for the
	 * title, which a heatmap of two or three values clipped */
	const int cells_w = 260 + 7 * label_w + nsets * (int)fmax(90, 6.5 * tick_w);
	const int title_w = 80 + 8 * (int)strlen(fa_sb_str(&title));
	/* the key naming the ringed rule (fabench tune) sits above the cells
	 * and may be no wider than they are: gnuplot leaves a wider one out,
	 * with only a warning, so the cells widen to hold it (its sample and
	 * 8 px a character) */
	const int key_w = o->n_marks > 0 && o->mark_label
				  ? 260 + 7 * label_w + 8 * ((int)strlen(o->mark_label) + 8)
				  : 0;
	int width = cells_w > title_w ? cells_w : title_w;
	if (key_w > width)
		width = key_w;
	fa_gp_begin(out, o, width,
		 (int)fmax(420, 170 + 34 * ny + 3.5 * tick_w));
	fa_gp_block(out, "cells", "params_index case_row time_over_best label");
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nsets; x++)
			if (isfinite(ratio[y * nsets + x])) {
				char txt[32];
				snprintf(txt, sizeof txt, "%.2f", ratio[y * nsets + x]);
				fprintf(out, "%d %d ", x, y);
				fa_gp_num(out, ratio[y * nsets + x]);
				fputc(' ', out);
				fa_gp_data_str(out, txt);
				fputc('\n', out);
			}
	fa_gp_block_end(out);
	fa_gp_block(out, "missing", "params_index case_row status");
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nsets; x++) {
			int st = status[y * nsets + x];
			if (isfinite(ratio[y * nsets + x]))
				continue;
			fprintf(out, "%d %d \"%s\"\n", x, y,
				st < 0				? "no result"
				: st == FA_STATUS_FAIL		? "FAIL"
				: st == FA_STATUS_PASS		? "no time"
								: fa_status_name(st));
		}
	fa_gp_block_end(out);
	int n_marks = 0;
	if (o->n_marks > 0) {
		/* the rule's choices (fabench tune), on the cells drawn */
		fa_gp_block(out, "marks", "params_index case_row");
		for (int y = 0; y < ny; y++)
			for (int i = 0; i < o->n_marks; i++) {
				if (o->mark_idx[i] != r.cases[row_case[y]].idx || !o->mark_params[i])
					continue;
				for (int x = 0; x < nsets; x++)
					if (strcmp(sets[x], o->mark_params[i]) == 0) {
						fprintf(out, "%d %d\n", x, y);
						n_marks++;
					}
			}
		fa_gp_block_end(out);
	}

	fputs("set title ", out);
	fa_gp_str(out, fa_sb_str(&title));
	fputs("\nset xtics (", out);
	for (int x = 0; x < nsets; x++) {
		params_part(sets[x], sets, nsets, 0, buf, sizeof buf);
		fputs(x ? ", " : "", out);
		fa_gp_str(out, buf);
		fprintf(out, " %d", x);
	}
	fputs(") rotate by -30 left\nset ytics (", out);
	for (int y = 0; y < ny; y++) {
		fputs(y ? ", " : "", out);
		fa_gp_str(out, ylabels[y]);
		fprintf(out, " %d", y);
	}
	fputs(")\n", out);
	params_part(sets[0], sets, nsets, 1, common, sizeof common);
	if (common[0])
		snprintf(buf, sizeof buf, "params of %s (every set has %s)", kernel, common);
	else
		snprintf(buf, sizeof buf, "params of %s", kernel);
	fputs("set xlabel ", out);
	fa_gp_str(out, buf);
	/* case 0 on top */
	fprintf(out, "\nset ylabel 'case'\nset xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n",
		nsets - 1, ny - 1);
	/* the key names the ringed rule; without one there is nothing to name */
	fputs("set tics nomirror out\n", out);
	fputs(n_marks ? "set key outside top left horizontal\n" : "unset key\n", out);
	fputs("set palette defined (0 '#FFFFCC', 0.35 '#FED976', 0.6 '#FD8D3C', 1 '#BD0026')\n",
	      out);
	/* the colour scale starts at the best (1) and spans at least 10%, so
	 * sets within noise of each other look alike */
	fprintf(out, "set cbrange [1:%.3g]\n", fmax(max_ratio, 1.1));
	fputs("set cblabel 'time / best time of the case (1 = best)'\n", out);
	{
		/* an empty block would only make gnuplot warn */
		int n_cells = 0, n_missing = 0;
		for (int i = 0; i < ny * nsets; i++) {
			n_cells += isfinite(ratio[i]) != 0;
			n_missing += !isfinite(ratio[i]);
		}
		fputs("plot ", out);
		if (n_cells)
			fprintf(out, "$cells using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 fc "
				     "palette%s, \\\n     $cells using 1:2:4 with labels%s",
				n_marks ? " notitle" : "", n_marks ? " notitle" : "");
		if (n_missing)
			fprintf(out, "%s$missing using 1:2:(0.5):(0.5) with boxxyerror fs solid 1.0 "
				     "fc rgb '#DDDDDD'%s, \\\n     $missing using 1:2:3 with labels "
				     "tc rgb '#555555'%s",
				n_cells ? ", \\\n     " : "", n_marks ? " notitle" : "",
				n_marks ? " notitle" : "");
		if (n_marks) {
			/* a ring around the chosen cell, named by the rule */
			fputs(", \\\n     $marks using 1:2 with points pt 6 ps 4 lw 2 lc rgb '#1F4E9A' "
			      "title ",
			      out);
			fa_gp_str(out, o->mark_label ? o->mark_label : "rule");
		}
		fputs("\n", out);
	}
	if (title.oom)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
out:
	sqlite3_finalize(tags_st);
	fa_sb_free(&title);
	for (int y = 0; ylabels && y < ny; y++)
		free(ylabels[y]);
	free(ylabels);
	free(sets);
	free(pair_k);
	free(knames);
	free(nsets_of);
	free(row_case);
	free(cs);
	free(ratio);
	free(status);
	free(best);
	fa_plot_run_free(&r);
	return rc;
}

