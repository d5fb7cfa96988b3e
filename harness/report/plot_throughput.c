/* plot_throughput.c - the throughput plot of one run (plot.h): TFLOP/s
 * (GB/s for decode-like cases) of every kernel along the sequence length,
 * one panel per head_dim (decode-like cases apart), a crowded panel split
 * by one more facet, the variants of a kernel told apart by dash and point.
 */
#include "plot_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"


struct tp_point {
	int ri;           /* result row */
	int panel, series;
	double x, y;
};

/* A panel: the cases of one group (prefill or decode-like) that agree on
 * head_dim and on the group's other split facets. */
struct tp_panel {
	int decode;
	int head_dim;
	int first;         /* its first case (run.cases index): the order after head_dim */
	unsigned split;    /* the facets its cases share by construction: head_dim and
	                      those it was split by */
	unsigned vary;     /* the facets that vary among its cases: its variants */
	char **variants;   /* their labels, by first appearance in case order */
	int n_variants;
};

struct tp_series {
	int panel;
	const char *label; /* kernel column label */
	int variant;       /* index into its panel's variants */
};

static int cmp_tp_panel(const void *a, const void *b)
{
	const struct tp_panel *x = a, *y = b;
	if (x->decode != y->decode)
		return x->decode - y->decode;
	if (x->head_dim != y->head_dim)
		return (x->head_dim > y->head_dim) - (x->head_dim < y->head_dim);
	return x->first - y->first;
}

static const struct tp_point *tp_sort_pts;

static int cmp_tp_point(const void *a, const void *b)
{
	const struct tp_point *x = &tp_sort_pts[*(const int *)a], *y = &tp_sort_pts[*(const int *)b];
	if (x->series != y->series)
		return x->series - y->series;
	if (x->x != y->x)
		return x->x < y->x ? -1 : 1;
	return x->ri - y->ri;
}

static int cmp_tp_series(const void *a, const void *b)
{
	const struct tp_series *x = a, *y = b;
	int c;
	if (x->panel != y->panel)
		return x->panel - y->panel;
	if ((c = strcmp(x->label, y->label)) != 0)
		return c;
	return x->variant - y->variant;
}

struct tp_state {
	struct prun run;
	struct tp_point *pts;
	int n_pts;
	int *order;          /* points by series, then x */
	struct tp_panel *panels;
	int n_panels;
	struct tp_series *series;
	int n_series;
	int *case_panel;     /* per case: its panel, -1 when not plotted */
	int *case_variant;   /* per case: its variant in its panel */
};

static void tp_free(struct tp_state *t)
{
	for (int p = 0; t->panels && p < t->n_panels; p++) {
		for (int v = 0; v < t->panels[p].n_variants; v++)
			free(t->panels[p].variants[v]);
		free(t->panels[p].variants);
	}
	free(t->case_panel);
	free(t->case_variant);
	free(t->pts);
	free(t->order);
	free(t->panels);
	free(t->series);
	fa_plot_run_free(&t->run);
}

/* decode-like: a forward of few queries (a backward stays in TFLOP/s, as
 * in the report) */
static int tp_is_decode(const struct pcase *pc)
{
	return pc->c.p.q_len <= FA_PLOT_DECODE_Q_LEN && pc->c.pass == FA_PASS_FWD;
}

/* Past this many variants (lines of one kernel) in a panel, the panel is
 * split by one more parameter, as long as the plot keeps at most
 * PLOT_TP_MAX_PANELS panels: a dozen panels of four line styles each read
 * better than one panel of seventeen, and a larger suite is better narrowed
 * with --where than drawn in more panels. */
#define PLOT_TP_MAX_VARIANTS 4
#define PLOT_TP_MAX_PANELS 16

/* The facets that name the variants of a panel of group g split by split:
 * all but the split ones and the x axis. */
static unsigned tp_variant_facets(int g, unsigned split)
{
	return FACETS_ALL & ~split & ~(1u << (g ? F_KV_LEN : F_Q_LEN));
}

/* The number of variants among cs[0..n): distinct labels of the facets in
 * allowed that vary among them. labels: scratch space for n labels of
 * size bytes. */
static int tp_n_variants(const struct fa_case *const *cs, int n, unsigned allowed, char *labels,
			 size_t size)
{
	unsigned m = fa_plot_facets_varying(cs, n, allowed);
	int nv = 0;
	for (int i = 0; i < n; i++)
		fa_plot_facets_label(cs[i], m, labels + (size_t)i * size, size);
	for (int i = 0; i < n; i++) {
		int k;
		for (k = 0; k < i && strcmp(labels + (size_t)k * size, labels + (size_t)i * size) != 0; k++)
			;
		nv += k == i;
	}
	return nv;
}

/* Splitting cs[0..n) by facet f: the number of parts, and in *max_variants
 * the most variants a part has. scratch holds n pointers, labels as in
 * tp_n_variants. */
static int tp_try_split(const struct fa_case *const *cs, int n, int f, unsigned allowed,
			const struct fa_case **scratch, char *labels, size_t size,
			int *max_variants)
{
	int parts = 0;
	*max_variants = 0;
	for (int i = 0; i < n; i++) {
		char a[128], b[128];
		int j, m = 0, nv;
		fa_plot_facet_text(cs[i], f, a, sizeof a);
		for (j = 0; j < i; j++) {
			fa_plot_facet_text(cs[j], f, b, sizeof b);
			if (strcmp(a, b) == 0)
				break;
		}
		if (j < i)
			continue; /* not the part's first case */
		parts++;
		for (j = i; j < n; j++) {
			fa_plot_facet_text(cs[j], f, b, sizeof b);
			if (strcmp(a, b) == 0)
				scratch[m++] = cs[j];
		}
		nv = tp_n_variants(scratch, m, allowed, labels, size);
		*max_variants = nv > *max_variants ? nv : *max_variants;
	}
	return parts;
}

/* Splits the panels of t (case_panel, panels[].split) while one has more
 * than PLOT_TP_MAX_VARIANTS variants: the fullest panel first, by the facet
 * that splits it into the fewest parts of at most PLOT_TP_MAX_VARIANTS
 * variants each, else by the one that leaves the fewest variants in its
 * fullest part (on a tie the fewest parts), within PLOT_TP_MAX_PANELS
 * panels in all. Returns 0, or -1 when
 * out of memory. */
static int tp_split_panels(struct tp_state *t)
{
	struct prun *r = &t->run;
	const size_t size = 256;
	const struct fa_case **cs = calloc((size_t)r->n_cases + 1, sizeof *cs);
	const struct fa_case **scratch = calloc((size_t)r->n_cases + 1, sizeof *scratch);
	char *labels = malloc((size_t)r->n_cases * size + 1);
	int *done = calloc((size_t)r->n_cases + 1, sizeof *done);
	int rc = 0;

	if (!cs || !scratch || !labels || !done) {
		rc = -1;
		goto out;
	}
	for (;;) {
		int worst = -1, worst_nv = PLOT_TP_MAX_VARIANTS, n = 0, best = -1, best_mv = 0,
		    best_parts = 0;
		struct tp_panel *pa;
		for (int p = 0; p < t->n_panels; p++) {
			int m = 0, nv;
			if (done[p])
				continue;
			for (int c = 0; c < r->n_cases; c++)
				if (t->case_panel[c] == p)
					cs[m++] = &r->cases[c].c;
			nv = tp_n_variants(cs, m,
					   tp_variant_facets(t->panels[p].decode, t->panels[p].split),
					   labels, size);
			if (nv > worst_nv) {
				worst = p;
				worst_nv = nv;
			}
		}
		if (worst < 0)
			break;
		pa = &t->panels[worst];
		for (int c = 0; c < r->n_cases; c++)
			if (t->case_panel[c] == worst)
				cs[n++] = &r->cases[c].c;
		for (int f = 0; f < F_COUNT; f++) {
			unsigned split = pa->split | 1u << f;
			int parts, mv;
			if ((pa->split >> f & 1) || f == (pa->decode ? F_KV_LEN : F_Q_LEN) ||
			    !fa_plot_facet_varies(cs, n, f))
				continue;
			parts = tp_try_split(cs, n, f, tp_variant_facets(pa->decode, split), scratch,
					     labels, size, &mv);
			if (parts < 2 || t->n_panels - 1 + parts > PLOT_TP_MAX_PANELS ||
			    mv >= worst_nv)
				continue;
			/* enough: the fewest parts; else the fewest variants */
			if (best < 0 ||
			    (mv <= PLOT_TP_MAX_VARIANTS
				     ? best_mv > PLOT_TP_MAX_VARIANTS || parts < best_parts
				     : mv < best_mv || (mv == best_mv && parts < best_parts))) {
				best = f;
				best_mv = mv;
				best_parts = parts;
			}
		}
		if (best < 0) {
			done[worst] = 1;
			continue;
		}
		/* the part of the panel's first case stays; the others are new
		 * panels, each with its first case */
		{
			unsigned split = pa->split | 1u << best;
			int first_panel = t->n_panels;
			pa->split = split;
			for (int c = 0; c < r->n_cases; c++) {
				char a[128], b[128];
				int p;
				if (t->case_panel[c] != worst)
					continue;
				fa_plot_facet_text(&r->cases[c].c, best, a, sizeof a);
				fa_plot_facet_text(&r->cases[t->panels[worst].first].c, best, b, sizeof b);
				if (strcmp(a, b) == 0)
					continue;
				for (p = first_panel; p < t->n_panels; p++) {
					fa_plot_facet_text(&r->cases[t->panels[p].first].c, best, b, sizeof b);
					if (strcmp(a, b) == 0)
						break;
				}
				if (p == t->n_panels)
					t->panels[t->n_panels++] = (struct tp_panel){
						t->panels[worst].decode, t->panels[worst].head_dim, c,
						split, 0, NULL, 0};
				t->case_panel[c] = p;
			}
		}
	}
out:
	free(cs);
	free(scratch);
	free(labels);
	free(done);
	return rc;
}

/* Collects the points, panels, variants and series of run. */
static enum fa_rc tp_build(struct tp_state *t, const char *where, struct fa_err *err)
{
	struct prun *r = &t->run;
	const struct fa_case **group = calloc((size_t)r->n_cases + 1, sizeof *group);
	int *used = calloc((size_t)r->n_cases + 1, sizeof *used);
	enum fa_rc rc = FA_OK;

	t->pts = calloc((size_t)r->n_res + 1, sizeof *t->pts);
	t->order = calloc((size_t)r->n_res + 1, sizeof *t->order);
	t->panels = calloc((size_t)r->n_cases + 1, sizeof *t->panels);
	t->series = calloc((size_t)r->n_res + 1, sizeof *t->series);
	t->case_panel = calloc((size_t)r->n_cases + 1, sizeof *t->case_panel);
	t->case_variant = calloc((size_t)r->n_cases + 1, sizeof *t->case_variant);
	if (!group || !used || !t->pts || !t->order || !t->panels || !t->series ||
	    !t->case_panel || !t->case_variant) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	/* the points: passed, timed results of the kept cases */
	for (int i = 0; i < r->n_res; i++) {
		const struct pres *p = &r->res[i];
		const struct pcase *pc = &r->cases[p->ci];
		int decode = tp_is_decode(pc);
		double y = decode ? p->gbps : p->tflops;
		if (!pc->keep || p->status != FA_STATUS_PASS || !(y > 0) || !isfinite(y))
			continue;
		t->pts[t->n_pts++] = (struct tp_point){i, 0, 0,
						       decode ? pc->c.p.kv_len : pc->c.p.q_len, y};
		used[p->ci] = 1;
	}
	if (t->n_pts == 0) {
		if (where)
			rc = fa_err_set(err, FA_ERR_NOT_FOUND,
					"no passed, timed result of run %" PRId64
					" in the cases where '%s'",
					r->id, where);
		else
			rc = fa_err_set(err, FA_ERR_NOT_FOUND,
					"run %" PRId64 " has no passed, timed result to plot", r->id);
		goto out;
	}
	/* panels: one per group (prefill, decode-like) and head_dim, split by
	 * more parameters where they hold too many variants */
	for (int c = 0; c < r->n_cases; c++) {
		int g, p;
		t->case_panel[c] = -1;
		if (!used[c])
			continue;
		g = tp_is_decode(&r->cases[c]);
		for (p = 0; p < t->n_panels; p++)
			if (t->panels[p].decode == g && t->panels[p].head_dim == r->cases[c].c.p.head_dim)
				break;
		if (p == t->n_panels)
			t->panels[t->n_panels++] = (struct tp_panel){g, r->cases[c].c.p.head_dim, c,
								    1u << F_HEAD_DIM, 0, NULL, 0};
		t->case_panel[c] = p;
	}
	if (tp_split_panels(t) != 0) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	/* sorted: head_dims ascending, then in case order; decode-like ones last */
	{
		int *new_of_old = calloc((size_t)t->n_panels + 1, sizeof *new_of_old);
		if (!new_of_old) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			goto out;
		}
		for (int p = 0; p < t->n_panels; p++)
			t->panels[p].n_variants = p; /* the old index, for now */
		qsort(t->panels, (size_t)t->n_panels, sizeof *t->panels, cmp_tp_panel);
		for (int p = 0; p < t->n_panels; p++) {
			new_of_old[t->panels[p].n_variants] = p;
			t->panels[p].n_variants = 0;
		}
		for (int c = 0; c < r->n_cases; c++)
			if (t->case_panel[c] >= 0)
				t->case_panel[c] = new_of_old[t->case_panel[c]];
		free(new_of_old);
	}
	/* each panel's variants: the facets that vary among its cases, but the
	 * split ones and the x axis */
	for (int p = 0; p < t->n_panels; p++) {
		struct tp_panel *pa = &t->panels[p];
		int n = 0;
		for (int c = 0; c < r->n_cases; c++)
			if (t->case_panel[c] == p)
				group[n++] = &r->cases[c].c;
		pa->vary = fa_plot_facets_varying(group, n, tp_variant_facets(pa->decode, pa->split));
		if (!(pa->variants = calloc((size_t)n + 1, sizeof *pa->variants))) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			goto out;
		}
		for (int c = 0; c < r->n_cases; c++) {
			char label[512];
			int v;
			if (t->case_panel[c] != p)
				continue;
			fa_plot_facets_label(&r->cases[c].c, pa->vary, label, sizeof label);
			for (v = 0; v < pa->n_variants && strcmp(pa->variants[v], label) != 0; v++)
				;
			if (v == pa->n_variants) {
				if (!(pa->variants[v] = strdup(label))) {
					rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
					goto out;
				}
				pa->n_variants++;
			}
			t->case_variant[c] = v;
		}
	}
	/* series: (panel, kernel label, variant), sorted */
	for (int i = 0; i < t->n_pts; i++) {
		const struct pres *p = &r->res[t->pts[i].ri];
		struct tp_series sk = {t->case_panel[p->ci], p->label, t->case_variant[p->ci]};
		int k;
		for (k = 0; k < t->n_series && cmp_tp_series(&t->series[k], &sk) != 0; k++)
			;
		if (k == t->n_series)
			t->series[t->n_series++] = sk;
	}
	qsort(t->series, (size_t)t->n_series, sizeof *t->series, cmp_tp_series);
	for (int i = 0; i < t->n_pts; i++) {
		const struct pres *p = &r->res[t->pts[i].ri];
		struct tp_series sk = {t->case_panel[p->ci], p->label, t->case_variant[p->ci]};
		int k;
		t->pts[i].panel = sk.panel;
		for (k = 0; cmp_tp_series(&t->series[k], &sk) != 0; k++)
			;
		t->pts[i].series = k;
	}
out:
	free(group);
	free(used);
	return rc;
}

/* The widest legend entry of panel p in characters (at least 8): its
 * kernel labels, and its variant labels when it has several. */
static int tp_legend_width(const struct tp_state *t, int p)
{
	size_t longest = 8;
	for (int k = 0; k < t->n_series; k++)
		if (t->series[k].panel == p && strlen(t->series[k].label) > longest)
			longest = strlen(t->series[k].label);
	for (int v = 0; t->panels[p].n_variants > 1 && v < t->panels[p].n_variants; v++)
		if (strlen(t->panels[p].variants[v]) > longest)
			longest = strlen(t->panels[p].variants[v]);
	return (int)longest;
}

enum fa_rc fa_plot_script_throughput(struct fa_store *s, const struct fa_plot_opts *o, FILE *out,
				  struct fa_err *err)
{
	struct tp_state t;
	struct sbuf title = {0};
	struct colour_map cm;
	int *order, cols, rows, legend_w, legend_rows = 0;
	enum fa_rc rc;

	memset(&t, 0, sizeof t);
	rc = fa_plot_run_load(s, o->run_id, o->where, &t.run, err);
	if (rc == FA_OK)
		rc = tp_build(&t, o->where, err);
	if (rc != FA_OK) {
		tp_free(&t);
		return rc;
	}
	order = t.order;
	for (int i = 0; i < t.n_pts; i++)
		order[i] = i;
	tp_sort_pts = t.pts;
	qsort(order, (size_t)t.n_pts, sizeof *order, cmp_tp_point);
	tp_sort_pts = NULL;

	{
		const char **names = calloc((size_t)t.n_series + 1, sizeof *names);
		for (int k = 0; names && k < t.n_series; k++)
			names[k] = t.series[k].label;
		if (!names || fa_plot_colours_assign(&cm, names, t.n_series) != 0) {
			free(names);
			fa_plot_colours_free(&cm);
			tp_free(&t);
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		}
		free(names);
	}
	/* panels in up to three columns; each panel is a plot area of about
	 * 430 x 280 px with its legend right of it (gnuplot sets a right margin
	 * of about 8 px a character of the 10 pt font; a line sample is six) */
	cols = t.n_panels == 1 ? 1 : t.n_panels <= 4 ? 2 : 3;
	rows = (t.n_panels + cols - 1) / cols;
	legend_w = 8;
	for (int p = 0; p < t.n_panels; p++) {
		int entries = t.panels[p].n_variants > 1 ? t.panels[p].n_variants : 0;
		legend_w = tp_legend_width(&t, p) > legend_w ? tp_legend_width(&t, p) : legend_w;
		for (int k = 0; k < t.n_series; k++) /* series come by panel, then kernel */
			entries += t.series[k].panel == p &&
				   (k == 0 || t.series[k - 1].panel != p ||
				    strcmp(t.series[k - 1].label, t.series[k].label) != 0);
		legend_rows = entries > legend_rows ? entries : legend_rows;
	}
	/* a row is tall enough for the longest legend (about 16 px an entry)
	 * to stay in one column */
	fa_gp_begin(out, o, cols * (510 + 8 * (legend_w + 9)),
		 70 + rows * (int)fmax(330, 90 + 16 * legend_rows));

	/* data: one block per series, points by x */
	for (int k = 0, i = 0; k < t.n_series; k++) {
		const struct tp_series *se = &t.series[k];
		char name[32];
		snprintf(name, sizeof name, "s%d", k);
		fa_gp_block(out, name, t.panels[se->panel].decode ? "kv_len GB/s case"
							       : "q_len TFLOP/s case");
		for (; i < t.n_pts && t.pts[order[i]].series == k; i++) {
			const struct tp_point *p = &t.pts[order[i]];
			fa_gp_num(out, p->x);
			fputc(' ', out);
			fa_gp_num(out, p->y);
			fprintf(out, " %" PRId64 "\n", t.run.cases[t.run.res[p->ri].ci].idx);
		}
		fa_gp_block_end(out);
	}

	if (o->title)
		fa_sb_add(&title, "%s", o->title);
	else {
		fa_sb_add(&title, "throughput of ");
		fa_plot_run_title(&title, &t.run, o->where);
	}
	fprintf(out, "set multiplot layout %d,%d title ", rows, cols);
	fa_gp_str(out, fa_sb_str(&title));
	fputs(" font ',12'\nset grid\nset key outside right top vertical Left reverse\n"
	      "set yrange [0:*]\nset ytics nomirror\n",
	      out);
	for (int pn = 0; pn < t.n_panels; pn++) {
		const struct tp_panel *pa = &t.panels[pn];
		const struct fa_case *c0 = &t.run.cases[pa->first].c;
		int first = 1, several = pa->n_variants > 1;
		double lo = INFINITY, hi = 0;
		char buf[400], extra[256];
		for (int i = 0; i < t.n_pts; i++)
			if (t.pts[i].panel == pn) {
				lo = fmin(lo, t.pts[i].x);
				hi = fmax(hi, t.pts[i].x);
			}
		fprintf(out, "\n# panel %d\n", pn + 1);
		/* titled by what its cases share: head_dim and the other split facets */
		fa_plot_facets_label(c0, pa->split & ~(1u << F_HEAD_DIM), extra, sizeof extra);
		snprintf(buf, sizeof buf, "head_dim %d%s%s%s", pa->head_dim, extra[0] ? ", " : "", extra,
			 pa->decode ? ", decode-like (q_len <= 16)" : "");
		fputs("set title ", out);
		fa_gp_str(out, buf);
		/* room right of the plot for the panel's legend (a line sample is
		 * about 6 characters); the cells are as wide as the widest */
		fprintf(out, "\nset rmargin %d\n", tp_legend_width(&t, pn) + 8);
		fa_gp_log2_axis(out, lo, hi);
		if (pa->decode)
			fputs("set xlabel 'kv_len (keys per sequence, log2 scale)'\n"
			      "set ylabel 'GB/s (Q, K, V read and O written once)'\n",
			      out);
		else
			fputs("set xlabel 'q_len (queries per sequence, log2 scale)'\n"
			      "set ylabel 'TFLOP/s'\n",
			      out);
		fputs("plot ", out);
		for (int k = 0; k < t.n_series; k++) {
			const struct tp_series *se = &t.series[k];
			if (se->panel != pn)
				continue;
			fprintf(out, "%s$s%d using 1:2 with linespoints lw 2 ps 1.2 lc rgb '%s' dt %d pt %d ",
				first ? "" : ", \\\n     ", k, fa_plot_colour_of(&cm, se->label),
				1 + se->variant % FA_PLOT_N_DASH_TYPES,
				fa_plot_point_types[se->variant % FA_PLOT_N_POINT_TYPES]);
			if (!several) {
				fputs("title ", out);
				fa_gp_str(out, se->label);
			} else {
				fputs("notitle", out);
			}
			first = 0;
		}
		if (several) {
			/* the legend: kernels by colour, then variants by dash and
			 * point type */
			for (int k = 0; k < t.n_series; k++) {
				const struct tp_series *se = &t.series[k];
				int dup = 0;
				if (se->panel != pn)
					continue;
				for (int j = 0; j < k && !dup; j++)
					dup = t.series[j].panel == pn &&
					      strcmp(t.series[j].label, se->label) == 0;
				if (dup)
					continue;
				fprintf(out, ", \\\n     keyentry with lines lw 3 lc rgb '%s' title ",
					fa_plot_colour_of(&cm, se->label));
				fa_gp_str(out, se->label);
			}
			for (int v = 0; v < pa->n_variants; v++) {
				fprintf(out,
					", \\\n     keyentry with linespoints lw 1.5 lc rgb '#333333' "
					"dt %d pt %d title ",
					1 + v % FA_PLOT_N_DASH_TYPES, fa_plot_point_types[v % FA_PLOT_N_POINT_TYPES]);
				fa_gp_str(out, pa->variants[v]);
			}
		}
		fputs("\n", out);
	}
	fputs("unset multiplot\n", out);
	if (title.oom)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
	fa_sb_free(&title);
	fa_plot_colours_free(&cm);
	tp_free(&t);
	return rc;
}

