/* plot.c - the common ground of the four kinds of plot (plot.h): their
 * names, the kernels' colours, a run read for a plot (through the reader,
 * store/reader.h), the facets that tell cases apart, and fa_plot_script,
 * which hands each kind to its writer (plot_throughput.c, plot_heatmap.c,
 * plot_speedup.c, plot_history.c). gnuplot.c holds the script text and
 * runs gnuplot.
 *
 * Each kind reads its data (a run from the database; a compare or a history
 * already built by their modules) and writes one self-contained script: the
 * terminal, the data as datablocks ($name << EOD), then labels and plot
 * commands. Numbers are printed with fixed formats and everything is in a
 * fixed order, so the script of a database is the same bytes every time
 * (tests compare it against golden files).
 */
#include "plot_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/util.h"
#include "../store/reader.h"
#include "../suite/expr.h"

static const char *const kind_names[] = {
	[FA_PLOT_THROUGHPUT] = "throughput",
	[FA_PLOT_SPEEDUP] = "speedup",
	[FA_PLOT_HISTORY] = "history",
	[FA_PLOT_HEATMAP] = "heatmap",
};

int fa_plot_kind_parse(const char *s)
{
	for (int i = 0; s && i < N_OF(kind_names); i++)
		if (strcmp(kind_names[i], s) == 0)
			return i;
	return -1;
}

const char *fa_plot_kind_name(int kind)
{
	return kind >= 0 && kind < N_OF(kind_names) ? kind_names[kind] : NULL;
}

int fa_plot_format_of_path(const char *path)
{
	size_t n = path ? strlen(path) : 0;
	if (n > 4 && strcasecmp(path + n - 4, ".png") == 0)
		return FA_PLOT_PNG;
	if (n > 4 && strcasecmp(path + n - 4, ".svg") == 0)
		return FA_PLOT_SVG;
	return -1;
}


/* ---- Colours --------------------------------------------------------------- */

/* Okabe and Ito's colour-blind-safe palette (without its yellow, too pale on
 * white), then five of Tableau's: twelve colours told apart on screen and
 * in print. */
static const char *const palette[] = {
	"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
	"#8C564B", "#7F7F7F", "#BCBD22", "#17BECF", "#9467BD", "#000000",
};

/* The kernels fabench ships (and the fixtures' names), so that they never
 * share a colour: baselines in greys and black, each family in one hue. */
static const struct {
	const char *kernel;
	const char *colour;
} known_colours[] = {
	{"cpu_dense", "#7F7F7F"},       {"cpu_flash", "#0072B2"},
	{"cpu_flash_tiled", "#56B4E9"}, {"cuda_dense", "#000000"},
	{"cuda_flash", "#D55E00"},      {"cuda_flash_simt", "#E69F00"},
	{"cuda_flash_mma", "#009E73"},  {"cuda_flash_decode", "#CC79A7"},
	{"hip_dense", "#8C564B"},       {"hip_flash", "#BCBD22"},
};

const char *fa_plot_kernel_colour(const char *kernel)
{
	uint64_t h;
	if (!kernel)
		kernel = "";
	for (int i = 0; i < N_OF(known_colours); i++)
		if (strcmp(known_colours[i].kernel, kernel) == 0)
			return known_colours[i].colour;
	h = fa_fnv1a64(FA_FNV_OFFSET, kernel, strlen(kernel));
	return palette[h % (uint64_t)N_OF(palette)];
}

/* The colours of the kernels of one plot: each its fa_plot_kernel_colour,
 * but a name whose hashed colour another kernel of the plot already has
 * takes the next free colour of the palette, so that the kernels of a plot
 * (the params of a tuning run, say) are told apart. Labels are assigned in
 * sorted order: the same set of kernels gets the same colours every time. */
static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fills m from labels[0..n) (duplicates allowed; the array is sorted in
 * place). Returns 0, or -1 when out of memory. */
int fa_plot_colours_assign(struct colour_map *m, const char **labels, int n)
{
	int d = 0;
	memset(m, 0, sizeof *m);
	m->label = calloc((size_t)n + 1, sizeof *m->label);
	m->colour = calloc((size_t)n + 1, sizeof *m->colour);
	if (!m->label || !m->colour)
		return -1;
	qsort(labels, (size_t)n, sizeof *labels, cmp_cstr);
	for (int i = 0; i < n; i++)
		if (d == 0 || strcmp(m->label[d - 1], labels[i]) != 0)
			m->label[d++] = labels[i];
	m->n = d;
	/* the known kernels first: their colours are fixed */
	for (int i = 0; i < d; i++)
		for (int k = 0; k < N_OF(known_colours); k++)
			if (strcmp(known_colours[k].kernel, m->label[i]) == 0)
				m->colour[i] = known_colours[k].colour;
	for (int i = 0; i < d; i++) {
		const char *c = fa_plot_kernel_colour(m->label[i]);
		int p, taken = 1;
		if (m->colour[i])
			continue;
		for (p = 0; strcmp(palette[p], c) != 0; p++)
			;
		for (int tries = 0; taken && tries < N_OF(palette); tries++) {
			taken = 0;
			for (int j = 0; j < d && !taken; j++)
				taken = j != i && m->colour[j] && strcmp(m->colour[j], palette[p]) == 0;
			if (taken)
				p = (p + 1) % N_OF(palette);
		}
		m->colour[i] = palette[p]; /* more kernels than colours: they repeat */
	}
	return 0;
}

const char *fa_plot_colour_of(const struct colour_map *m, const char *label)
{
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->label[i], label) == 0)
			return m->colour[i];
	return fa_plot_kernel_colour(label);
}

void fa_plot_colours_free(struct colour_map *m)
{
	free(m->label);
	free(m->colour);
	memset(m, 0, sizeof *m);
}

/* Series of one kernel that differ in other ways (case parameters) share its
 * colour and differ in dash type and point type: gnuplot's dash types 1-5
 * and its filled point types. */
const int fa_plot_point_types[FA_PLOT_N_POINT_TYPES] = {7, 5, 9, 11, 13, 15, 4, 6, 8, 10};

/* Verdict colours of the speedup bars, by enum fa_perf_verdict. */
const char *const fa_plot_verdict_colours[4] = {
	[FA_PERF_SAME] = "#9E9E9E",
	[FA_PERF_FASTER] = "#1A9850",
	[FA_PERF_SLOWER] = "#D73027",
	[FA_PERF_NOISY] = "#E69F00",
};


/* ---- A run read from the database -------------------------------------------- */

void fa_plot_run_free(struct prun *r)
{
	free(r->cases);
	for (int i = 0; i < r->n_res; i++)
		free(r->res[i].label);
	free(r->res);
	fa_arena_free(&r->arena);
	memset(r, 0, sizeof *r);
}

static int cmp_pcase(const void *a, const void *b)
{
	int64_t x = ((const struct pcase *)a)->idx, y = ((const struct pcase *)b)->idx;
	return (x > y) - (x < y);
}

/* The column label of every result: kernel, or kernel[params] when that
 * kernel ran with more than one set of params in the run. (The report's
 * labels name only the params that differ; plots keep them whole.) */
static enum fa_rc label_results(struct prun *r, struct fa_err *err)
{
	/* the distinct kernels (a handful), each with its first params and
	 * whether it ran with others */
	const char **kname = calloc((size_t)r->n_res + 1, sizeof *kname);
	const char **kparams = calloc((size_t)r->n_res + 1, sizeof *kparams);
	int *several = calloc((size_t)r->n_res + 1, sizeof *several);
	int *kof = calloc((size_t)r->n_res + 1, sizeof *kof);
	enum fa_rc rc = FA_OK;
	int nk = 0;

	if (!kname || !kparams || !several || !kof)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
	for (int i = 0; rc == FA_OK && i < r->n_res; i++) {
		const struct pres *p = &r->res[i];
		int k;
		for (k = 0; k < nk && strcmp(kname[k], p->kernel) != 0; k++)
			;
		if (k == nk) {
			kname[nk] = p->kernel;
			kparams[nk++] = p->params;
		} else if (strcmp(kparams[k], p->params) != 0) {
			several[k] = 1;
		}
		kof[i] = k;
	}
	for (int i = 0; rc == FA_OK && i < r->n_res; i++) {
		struct pres *p = &r->res[i];
		size_t len = strlen(p->kernel) + strlen(p->params) + 3;
		if (!(p->label = malloc(len))) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			break;
		}
		if (several[kof[i]] && p->params[0])
			snprintf(p->label, len, "%s[%s]", p->kernel, p->params);
		else
			snprintf(p->label, len, "%s", p->kernel);
	}
	free(kname);
	free(kparams);
	free(several);
	free(kof);
	return rc;
}

/* Reads run_id through the reader (store/reader.h): the run's names, its
 * cases (in suite order) and results, and marks the cases --where keeps. */
enum fa_rc fa_plot_run_load(struct fa_store *s, int64_t run_id, const char *where,
			    struct prun *r, struct fa_err *err)
{
	struct fa_expr *e = NULL;
	struct fa_reader_run run;
	struct fa_reader_case *cs;
	struct fa_reader_result *res;
	int nc = 0, nr = 0;
	enum fa_rc rc = FA_OK;

	memset(r, 0, sizeof *r);
	r->id = run_id;
	if (where) {
		static const struct fa_loc where_loc = {"--where", 1, 1};
		rc = fa_expr_parse(where, &where_loc, &e, err);
		if (rc != FA_OK) {
			fa_err_set_text(err, where);
			return rc;
		}
	}
	rc = fa_reader_run_get(s, run_id, &r->arena, &run, err);
	if (rc == FA_OK) {
		r->label = run.label;
		r->suite = run.suite_name;
		r->backend = run.backend;
		r->device = run.device_name;
		rc = fa_reader_cases(s, run_id, &r->arena, &cs, &nc, err);
	}
	if (rc == FA_OK)
		rc = fa_reader_results(s, run_id, run.suite_name, 0, &r->arena, &res, &nr, err);
	if (rc == FA_OK) {
		r->cases = malloc(((size_t)nc + 1) * sizeof *r->cases);
		r->res = malloc(((size_t)nr + 1) * sizeof *r->res);
		if (!r->cases || !r->res)
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
	}
	for (int i = 0; rc == FA_OK && i < nc; i++) {
		struct pcase *pc = &r->cases[r->n_cases++];
		pc->idx = cs[i].idx;
		pc->c = cs[i].c;
		pc->keep = !e || fa_expr_eval(e, &pc->c);
	}
	for (int i = 0; rc == FA_OK && i < nr; i++) {
		struct pcase key = {.idx = res[i].case_idx}, *hit;
		struct pres *pr;
		hit = bsearch(&key, r->cases, (size_t)r->n_cases, sizeof *r->cases, cmp_pcase);
		if (!hit)
			continue; /* cannot happen: results reference their case */
		pr = &r->res[r->n_res++];
		memset(pr, 0, sizeof *pr);
		pr->ci = (int)(hit - r->cases);
		pr->kernel = res[i].kernel;
		pr->params = res[i].params;
		/* as stored: a pass nobody checked is drawn as a pass */
		pr->status = res[i].status == FA_STATUS_UNCHECKED ? FA_STATUS_PASS : res[i].status;
		pr->median_ms = res[i].median_ms;
		pr->tflops = res[i].tflops;
		pr->gbps = res[i].gbps;
	}
	if (rc == FA_OK)
		rc = label_results(r, err);
	fa_expr_free(e);
	return rc;
}

/* "run 2 (nightly): suite smoke, cpu on AMD EPYC" into b. */
void fa_plot_run_title(struct sbuf *b, const struct prun *r, const char *where)
{
	fa_sb_add(b, "run %" PRId64, r->id);
	if (r->label[0])
		fa_sb_add(b, " (%s)", r->label);
	if (r->suite[0])
		fa_sb_add(b, ": suite %s", r->suite);
	if (r->backend[0])
		fa_sb_add(b, ", %s", r->backend);
	if (r->device[0])
		fa_sb_add(b, " on %s", r->device);
	if (where)
		fa_sb_add(b, ", cases where %s", where);
}


/* ---- Case descriptions -------------------------------------------------------- */

void fa_plot_facet_text(const struct fa_case *c, int f, char *buf, size_t size)
{
	const struct fa_problem *p = &c->p;
	switch (f) {
	case F_DTYPE: snprintf(buf, size, "%s", fa_dtype_name(p->dtype)); break;
	case F_MASK:
		if (p->mask == FA_MASK_NONE)
			snprintf(buf, size, "no mask");
		else if (p->mask == FA_MASK_SLIDING_WINDOW)
			snprintf(buf, size, "sliding_window %d", p->window);
		else if (p->mask == FA_MASK_PREFIX_LM && p->prefix_len > 0)
			snprintf(buf, size, "prefix_lm %d", p->prefix_len);
		else
			snprintf(buf, size, "%s", fa_mask_name(p->mask));
		break;
	case F_BATCH: snprintf(buf, size, "batch %d", p->batch); break;
	case F_HEADS: snprintf(buf, size, "heads %d", p->heads); break;
	case F_KV_HEADS: snprintf(buf, size, "kv_heads %d", p->kv_heads); break;
	case F_Q_LEN: snprintf(buf, size, "q_len %d", p->q_len); break;
	case F_KV_LEN:
		/* self-attention stays one series along q_len */
		if (p->kv_len == p->q_len && p->q_len > FA_PLOT_DECODE_Q_LEN)
			snprintf(buf, size, "kv_len = q_len");
		else
			snprintf(buf, size, "kv_len %d", p->kv_len);
		break;
	case F_HEAD_DIM: snprintf(buf, size, "head_dim %d", p->head_dim); break;
	case F_HEAD_DIM_V: snprintf(buf, size, "head_dim_v %d", p->head_dim_v); break;
	case F_LAYOUT: snprintf(buf, size, "%s", fa_layout_name(p->layout)); break;
	case F_INPUT: snprintf(buf, size, "input %s", fa_dist_name(c->dist)); break;
	/* the usual value says nothing: only the unusual one is named */
	case F_VARLEN: snprintf(buf, size, "%s", p->varlen ? "varlen" : ""); break;
	case F_PASS:
		snprintf(buf, size, "%s", fa_pass_name(c->pass));
		break;
	case F_MASK_KIND:
		snprintf(buf, size, "%s", p->mask == FA_MASK_NONE ? "no mask" : fa_mask_name(p->mask));
		break;
	default:
		if (c->scale_set)
			snprintf(buf, size, "scale %g", (double)p->scale);
		else
			buf[0] = '\0';
		break;
	}
}

/* 1 when facet f differs between the cases cs[0..n) (pointers). Partners
 * that are equal in every case (kv_heads = heads, head_dim_v = head_dim)
 * are not a difference of their own. */
int fa_plot_facet_varies(const struct fa_case *const *cs, int n, int f)
{
	char a[128], b[128];
	if (f == F_KV_HEADS || f == F_HEAD_DIM_V) {
		int same = 1;
		for (int i = 0; i < n && same; i++)
			same = f == F_KV_HEADS ? cs[i]->p.kv_heads == cs[i]->p.heads
					       : cs[i]->p.head_dim_v == cs[i]->p.head_dim;
		if (same)
			return 0;
	}
	for (int i = 1; i < n; i++) {
		fa_plot_facet_text(cs[0], f, a, sizeof a);
		fa_plot_facet_text(cs[i], f, b, sizeof b);
		if (strcmp(a, b) != 0)
			return 1;
	}
	return 0;
}

/* The facets in `allowed` (a bit per facet) that vary between cs[0..n). */
unsigned fa_plot_facets_varying(const struct fa_case *const *cs, int n, unsigned allowed)
{
	unsigned m = 0;
	for (int f = 0; f < F_COUNT; f++)
		if ((allowed >> f & 1) && fa_plot_facet_varies(cs, n, f))
			m |= 1u << f;
	return m;
}

/* The texts of the facets in m, joined by ", ", into buf ("" when none). */
void fa_plot_facets_label(const struct fa_case *c, unsigned m, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int f = 0; f < F_COUNT; f++) {
		char t[128];
		if (!(m >> f & 1))
			continue;
		fa_plot_facet_text(c, f, t, sizeof t);
		if (!t[0])
			continue;
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s", n ? ", " : "", t);
		if (n >= size)
			return;
	}
}


/* ---- Labels -------------------------------------------------------------------- */

/* "kernel[params]" into buf. */
void fa_plot_kernel_label(const char *kernel, const char *params, char *buf, size_t size)
{
	if (params && params[0])
		snprintf(buf, size, "%s[%s]", kernel, params);
	else
		snprintf(buf, size, "%s", kernel);
}

/* "name=value name=value" of the shown parameters that apply, into buf. */
void fa_plot_shown_values(int n, const char *const *names, const int32_t *shown,
			 const char *const *values, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int j = 0; j < n && len < size; j++)
		if (shown[j] && values[j] && values[j][0])
			len += (size_t)snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "",
						names[j], values[j]);
}


/* ---- The script ------------------------------------------------------------------------ */

enum fa_rc fa_plot_script(struct fa_store *s, const struct fa_plot_opts *o, FILE *out,
			  struct fa_err *err)
{
	enum fa_rc rc;
	if (o->format != FA_PLOT_PNG && o->format != FA_PLOT_SVG)
		return fa_err_set(err, FA_ERR_USAGE, "unknown plot format %d", (int)o->format);
	if ((o->kind == FA_PLOT_THROUGHPUT || o->kind == FA_PLOT_HEATMAP) && !s)
		return fa_err_set(err, FA_ERR_USAGE, "a %s plot needs a database",
				  fa_plot_kind_name(o->kind));
	switch (o->kind) {
	case FA_PLOT_THROUGHPUT: rc = fa_plot_script_throughput(s, o, out, err); break;
	case FA_PLOT_SPEEDUP: rc = fa_plot_script_speedup(o, out, err); break;
	case FA_PLOT_HISTORY: rc = fa_plot_script_history(o, out, err); break;
	case FA_PLOT_HEATMAP: rc = fa_plot_script_heatmap(s, o, out, err); break;
	default: return fa_err_set(err, FA_ERR_USAGE, "unknown plot kind %d", (int)o->kind);
	}
	if (rc == FA_OK && (fflush(out) != 0 || ferror(out)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot write the %s plot's script",
				fa_plot_kind_name(o->kind));
	return rc;
}

