/* plot.c - gnuplot scripts for the four kinds of plot (plot.h) and running
 * gnuplot on them.
 *
 * Each kind reads its data (a run from the database; a compare or a history
 * already built by their modules) and writes one self-contained script: the
 * terminal, the data as datablocks ($name << EOD), then labels and plot
 * commands. Numbers are printed with fixed formats and everything is in a
 * fixed order, so the script of a database is the same bytes every time
 * (tests compare it against golden files). The script writes "plot.png" or
 * "plot.svg" in gnuplot's working folder; fa_plot_render runs it in a
 * temporary folder and moves the image where it was asked for.
 *
 * Text is drawn with enhanced text off: kernel names are full of '_', which
 * gnuplot would read as subscripts. Text from users is quoted so that
 * gnuplot never runs it (see "Script text" below).
 */
#include "plot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../suite/expr.h"
#include "../suite/suite.h"
#include "table.h"
#include "../base/util.h"

/* Cases with at most this many queries per sequence are decode-like and
 * memory bound: their throughput is GB/s, as in the report (report.c). */
#define PLOT_DECODE_Q_LEN 16

/* gnuplot draws a plot in well under a second; two minutes means stuck. */
#define PLOT_GNUPLOT_TIMEOUT_MS 120000

/* A history plot has one panel per case: past this many they get too small
 * to read, and the user should narrow the selection. */
#define PLOT_HISTORY_MAX_PANELS 16

/* How much of gnuplot's stderr goes into an error message. */
#define PLOT_STDERR_MAX 1500

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

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
struct colour_map {
	int n;
	const char **label;
	const char **colour;
};

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fills m from labels[0..n) (duplicates allowed; the array is sorted in
 * place). Returns 0, or -1 when out of memory. */
static int colours_assign(struct colour_map *m, const char **labels, int n)
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

static const char *colour_of(const struct colour_map *m, const char *label)
{
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->label[i], label) == 0)
			return m->colour[i];
	return fa_plot_kernel_colour(label);
}

static void colours_free(struct colour_map *m)
{
	free(m->label);
	free(m->colour);
	memset(m, 0, sizeof *m);
}

/* Series of one kernel that differ in other ways (case parameters) share its
 * colour and differ in dash type and point type: gnuplot's dash types 1-5
 * and its filled point types. */
static const int point_types[] = {7, 5, 9, 11, 13, 15, 4, 6, 8, 10};
#define N_DASH_TYPES 5

/* Verdict colours of the speedup bars, by enum fa_perf_verdict. */
static const char *const verdict_colours[4] = {
	[FA_PERF_SAME] = "#9E9E9E",
	[FA_PERF_FASTER] = "#1A9850",
	[FA_PERF_SLOWER] = "#D73027",
	[FA_PERF_NOISY] = "#E69F00",
};

/* ---- Growing strings ------------------------------------------------------- */

struct sbuf {
	char *s;
	size_t len, cap;
	int oom;
};

static void sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 128;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->oom = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
}

/* The text so far ("" when empty); owned by b. */
static const char *sb_str(const struct sbuf *b)
{
	return b->s && !b->oom ? b->s : "";
}

static void sb_free(struct sbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof *b);
}

/* ---- Script text ------------------------------------------------------------ */

/* Text from the database, the suite or the command line never reaches
 * gnuplot as code. gnuplot runs `backquoted` text in double-quoted strings
 * and in bare command text as a shell command, expands @macros outside
 * quotes, and reads a line break as the end of a command (and a line that
 * starts with '!' as a shell command). So user text goes only
 *   - into single-quoted strings (gp_str, gp_text): inside them gnuplot
 *     does no substitution and knows no escape but '' for a quote; or
 *   - into quoted columns of datablocks (gp_data_str), whose lines gnuplot
 *     stores as they are, without substitution. Every data line starts with
 *     a number written here, so no text can end a block early (a block
 *     ends at a line starting with its terminator);
 * and every control character in it (line breaks, CR, tabs, escapes)
 * becomes a space. The only double-quoted strings in a script are fixed
 * ones: "\n" between the lines of a title, "'" for a quote that starts a
 * string (gp_quote). Text is drawn with enhanced text off (gp_begin), so
 * ^ _ @ { } in names are drawn as they are. */
static int gp_plain(unsigned char c)
{
	return c >= 0x20 && c != 0x7f;
}

/* s as a gnuplot string expression of single-quoted strings: inside them
 * '' is a quote, and nothing else is special. gnuplot reads a string that
 * starts with '' as the empty string, so a quote at the start of a piece
 * is the fixed string "'" before it. lines != 0: each line of s is a piece
 * and "\n" joins them (a line break in titles and tic labels); else line
 * breaks become spaces. Other control characters become spaces. */
static void gp_quote(FILE *out, const char *s, int lines)
{
	for (;;) {
		for (; s && *s == '\''; s++)
			fputs("\"'\".", out);
		fputc('\'', out);
		for (; s && *s && !(lines && *s == '\n'); s++) {
			if (*s == '\'')
				fputc('\'', out);
			fputc(gp_plain((unsigned char)*s) ? *s : ' ', out);
		}
		fputc('\'', out);
		if (!s || !*s)
			return;
		fputs(".\"\\n\".", out); /* a line break */
		s++;
	}
}

/* s as a single-quoted string (gp_quote), line breaks as spaces. */
static void gp_str(FILE *out, const char *s)
{
	gp_quote(out, s, 0);
}

/* s as single-quoted strings, its lines joined by "\n" (gp_quote). */
static void gp_text(FILE *out, const char *s)
{
	gp_quote(out, s, 1);
}

/* s as a quoted column of a datablock: gnuplot has no escape there, so a
 * double quote becomes a single one, and control characters spaces (a
 * line break would end the row). */
static void gp_data_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++)
		fputc(*s == '"' ? '\'' : gp_plain((unsigned char)*s) ? *s : ' ', out);
	fputc('"', out);
}

/* A number for the script: six significant digits are more than a plot
 * resolves, and print the same on every machine. */
static void gp_num(FILE *out, double x)
{
	fprintf(out, "%.6g", x);
}

/* The terminal, the output file and the common settings. */
static void gp_begin(FILE *out, const struct fa_plot_opts *o, int width, int height)
{
	int w = o->width > 0 ? o->width : width, h = o->height > 0 ? o->height : height;
	fprintf(out, "# fabench plot %s, generated by fabench: 'gnuplot THIS_FILE' writes plot.%s\n",
		fa_plot_kind_name(o->kind), o->format == FA_PLOT_SVG ? "svg" : "png");
	if (o->format == FA_PLOT_SVG) {
		fprintf(out, "set terminal svg size %d,%d font 'sans,11' background rgb 'white'\n", w,
			h);
	} else {
		/* pngcairo draws smoother lines; gnuplot-nox builds may only have
		 * libgd's png */
		fprintf(out,
			"if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
			"    set terminal pngcairo size %d,%d font 'sans,10' background rgb 'white'\n"
			"} else {\n"
			"    set terminal png size %d,%d font 'sans,10' background rgb 'white'\n"
			"}\n",
			w, h, w, h);
	}
	fprintf(out, "set output 'plot.%s'\n", o->format == FA_PLOT_SVG ? "svg" : "png");
	fputs("set encoding utf8\nset termoption noenhanced\n", out);
}

/* A datablock header; the caller writes the rows and then gp_block_end. */
static void gp_block(FILE *out, const char *name, const char *columns)
{
	fprintf(out, "$%s << EOD\n# %s\n", name, columns);
}

static void gp_block_end(FILE *out)
{
	fputs("EOD\n", out);
}

/* Power-of-two tic label: 512, 1K, 64K, 1M. */
static void pow2_label(double v, char *buf, size_t size)
{
	if (v >= 1048576 && fmod(v, 1048576) == 0)
		snprintf(buf, size, "%.0fM", v / 1048576);
	else if (v >= 1024 && fmod(v, 1024) == 0)
		snprintf(buf, size, "%.0fK", v / 1024);
	else
		snprintf(buf, size, "%.6g", v);
}

/* Breaks s (in place) into lines of at most width characters where it has
 * spaces, for titles over narrow panels; write it with gp_text. */
static void wrap(char *s, int width)
{
	char *line = s, *space = NULL;
	for (char *p = s; *p; p++) {
		if (*p == ' ')
			space = p;
		if (p - line >= width && space) {
			*space = '\n';
			line = space + 1;
			space = NULL;
		}
	}
}

/* A log2 x axis over [lo, hi] (data values, lo > 0): half a power of two of
 * margin each side, a tic at each power of two (every second, ... when
 * there are more than 12). */
static void gp_log2_axis(FILE *out, double lo, double hi)
{
	int a = (int)ceil(log2(lo / M_SQRT2)), b = (int)floor(log2(hi * M_SQRT2));
	int step = 1 + (b - a) / 12, first = 1;
	char label[32];
	if (b <= a) {
		/* fewer than two powers of two in range (one length, 37 and 50):
		 * label the lengths themselves */
		fputs("set logscale x 2\nset xrange [", out);
		gp_num(out, lo / M_SQRT2);
		fputc(':', out);
		gp_num(out, hi * M_SQRT2);
		fputs("]\nset xtics (", out);
		for (int i = 0; i < (lo == hi ? 1 : 2); i++) {
			pow2_label(i ? hi : lo, label, sizeof label);
			fputs(i ? ", " : "", out);
			gp_str(out, label);
			fputc(' ', out);
			gp_num(out, i ? hi : lo);
		}
		fputs(")\n", out);
		return;
	}
	fputs("set logscale x 2\nset xrange [", out);
	gp_num(out, lo / M_SQRT2);
	fputc(':', out);
	gp_num(out, hi * M_SQRT2);
	fputs("]\nset xtics (", out);
	for (int e = a; e <= b; e += step) {
		double v = ldexp(1.0, e);
		pow2_label(v, label, sizeof label);
		fputs(first ? "" : ", ", out);
		gp_str(out, label);
		fputc(' ', out);
		gp_num(out, v);
		first = 0;
	}
	fputs(")\n", out);
}

/* ---- A run read from the database -------------------------------------------- */

struct pcase {
	int64_t idx;
	struct fa_case c;  /* the problem, dist and scale_set: enough for expressions
	                      (expr.h) and labels; no key, no lengths */
	int keep;          /* 1: --where holds */
};

struct pres {
	int ci;            /* index into run.cases */
	char *kernel, *params;
	char *label;       /* kernel, or kernel[params] when the kernel ran with
	                      several params in the run */
	int status;        /* enum fa_status, -1 unknown */
	double median_ms, tflops, gbps; /* NaN when NULL */
};

struct prun {
	int64_t id;
	char *label, *suite, *backend, *device;
	struct pcase *cases;
	int n_cases;
	struct pres *res;
	int n_res;
};

static void prun_free(struct prun *r)
{
	free(r->label);
	free(r->suite);
	free(r->backend);
	free(r->device);
	free(r->cases);
	for (int i = 0; i < r->n_res; i++) {
		free(r->res[i].kernel);
		free(r->res[i].params);
		free(r->res[i].label);
	}
	free(r->res);
	memset(r, 0, sizeof *r);
}

static char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return strdup(t ? (const char *)t : "");
}

static double col_real(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static int name_or(int v, int fallback)
{
	return v < 0 ? fallback : v;
}

static enum fa_rc db_fail(struct fa_store *s, int64_t run_id, struct fa_err *err)
{
	return fa_err_set(err, FA_ERR_DB, "cannot read run %" PRId64 " from '%s': %s", run_id,
			  fa_store_path(s), sqlite3_errmsg(fa_store_db(s)));
}

static int cmp_pcase(const void *a, const void *b)
{
	int64_t x = ((const struct pcase *)a)->idx, y = ((const struct pcase *)b)->idx;
	return (x > y) - (x < y);
}

/* The column label of every result: kernel, or kernel[params] when that
 * kernel ran with more than one set of params (as the report's columns). */
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

/* Reads run_id: the run's names, its cases (in suite order) and results,
 * and marks the cases --where keeps. */
static enum fa_rc prun_load(struct fa_store *s, int64_t run_id, const char *where,
			    struct prun *r, struct fa_err *err)
{
	sqlite3 *db = fa_store_db(s);
	sqlite3_stmt *st = NULL;
	struct fa_expr *e = NULL;
	enum fa_rc rc = FA_OK;
	int src, cap = 0;

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
	if (sqlite3_prepare_v2(db, "SELECT label, suite_name, backend, device_name FROM runs WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(s, run_id, err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, run_id);
	src = sqlite3_step(st);
	if (src == SQLITE_DONE) {
		rc = fa_err_set(err, FA_ERR_NOT_FOUND, "no run %" PRId64 " in '%s'", run_id,
				fa_store_path(s));
		goto out;
	}
	if (src != SQLITE_ROW) {
		rc = db_fail(s, run_id, err);
		goto out;
	}
	r->label = col_text(st, 0);
	r->suite = col_text(st, 1);
	r->backend = col_text(st, 2);
	r->device = col_text(st, 3);
	if (!r->label || !r->suite || !r->backend || !r->device) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;

	if (sqlite3_prepare_v2(db,
			       "SELECT idx, batch, heads, kv_heads, q_len, kv_len, head_dim,"
			       " head_dim_v, dtype, mask, prefix_len, window, layout, input, varlen,"
			       " total_q, total_k, scale, scale_set FROM cases WHERE run_id = ?"
			       " ORDER BY idx",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(s, run_id, err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, run_id);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		struct pcase *pc;
		struct fa_problem *p;
		if (r->n_cases == cap) {
			int ncap = cap ? cap * 2 : 16;
			struct pcase *nc = realloc(r->cases, (size_t)ncap * sizeof *nc);
			if (!nc) {
				rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
				goto out;
			}
			r->cases = nc;
			cap = ncap;
		}
		pc = &r->cases[r->n_cases++];
		memset(pc, 0, sizeof *pc);
		p = &pc->c.p;
		pc->idx = sqlite3_column_int64(st, 0);
		pc->c.index = (int32_t)pc->idx;
		p->batch = sqlite3_column_int(st, 1);
		p->heads = sqlite3_column_int(st, 2);
		p->kv_heads = sqlite3_column_int(st, 3);
		p->q_len = sqlite3_column_int(st, 4);
		p->kv_len = sqlite3_column_int(st, 5);
		p->head_dim = sqlite3_column_int(st, 6);
		p->head_dim_v = sqlite3_column_int(st, 7);
		p->dtype = name_or(fa_dtype_parse((const char *)sqlite3_column_text(st, 8)), 0);
		p->mask = name_or(fa_mask_parse((const char *)sqlite3_column_text(st, 9)), 0);
		p->prefix_len = sqlite3_column_int(st, 10); /* NULL reads as 0 */
		p->window = sqlite3_column_int(st, 11);
		p->layout = name_or(fa_layout_parse((const char *)sqlite3_column_text(st, 12)), 0);
		pc->c.dist = name_or(fa_dist_parse((const char *)sqlite3_column_text(st, 13)), 0);
		p->varlen = sqlite3_column_int(st, 14);
		p->total_q = sqlite3_column_int(st, 15);
		p->total_k = sqlite3_column_int(st, 16);
		p->scale = (float)sqlite3_column_double(st, 17);
		pc->c.scale_set = sqlite3_column_int(st, 18);
		pc->keep = !e || fa_expr_eval(e, &pc->c);
	}
	if (src != SQLITE_DONE) {
		rc = db_fail(s, run_id, err);
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;

	cap = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT c.idx, r.kernel, r.params, r.status, r.median_ms, r.tflops,"
			       " r.gbps FROM results r JOIN cases c ON c.id = r.case_id"
			       " WHERE r.run_id = ? ORDER BY c.idx, r.kernel, r.params, r.id",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(s, run_id, err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, run_id);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		struct pcase key = {.idx = sqlite3_column_int64(st, 0)}, *hit;
		struct pres *pr;
		hit = bsearch(&key, r->cases, (size_t)r->n_cases, sizeof *r->cases, cmp_pcase);
		if (!hit)
			continue; /* cannot happen: results reference their case */
		if (r->n_res == cap) {
			int ncap = cap ? cap * 2 : 32;
			struct pres *nr = realloc(r->res, (size_t)ncap * sizeof *nr);
			if (!nr) {
				rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
				goto out;
			}
			r->res = nr;
			cap = ncap;
		}
		pr = &r->res[r->n_res++];
		memset(pr, 0, sizeof *pr);
		pr->ci = (int)(hit - r->cases);
		pr->kernel = col_text(st, 1);
		pr->params = col_text(st, 2);
		pr->status = fa_status_parse((const char *)sqlite3_column_text(st, 3));
		pr->median_ms = col_real(st, 4);
		pr->tflops = col_real(st, 5);
		pr->gbps = col_real(st, 6);
		if (!pr->kernel || !pr->params) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			goto out;
		}
	}
	if (src != SQLITE_DONE) {
		rc = db_fail(s, run_id, err);
		goto out;
	}
	rc = label_results(r, err);
out:
	sqlite3_finalize(st);
	fa_expr_free(e);
	return rc;
}

/* "run 2 (nightly): suite smoke, cpu on AMD EPYC" into b. */
static void run_title(struct sbuf *b, const struct prun *r, const char *where)
{
	sb_add(b, "run %" PRId64, r->id);
	if (r->label[0])
		sb_add(b, " (%s)", r->label);
	if (r->suite[0])
		sb_add(b, ": suite %s", r->suite);
	if (r->backend[0])
		sb_add(b, ", %s", r->backend);
	if (r->device[0])
		sb_add(b, " on %s", r->device);
	if (where)
		sb_add(b, ", cases where %s", where);
}

/* ---- Case descriptions -------------------------------------------------------- */

/* The ways cases differ, as they are named in legends and tic labels. */
enum facet {
	F_DTYPE, F_MASK, F_BATCH, F_HEADS, F_KV_HEADS, F_Q_LEN, F_KV_LEN,
	F_HEAD_DIM, F_HEAD_DIM_V, F_LAYOUT, F_INPUT, F_VARLEN, F_SCALE,
	F_MASK_KIND, /* the mask without its window or prefix: splits panels only */
	F_COUNT
};

/* Every facet that names a case (F_MASK_KIND is in F_MASK's text). */
#define FACETS_ALL (((1u << F_COUNT) - 1) & ~(1u << F_MASK_KIND))

static void facet_text(const struct fa_case *c, int f, char *buf, size_t size)
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
		if (p->kv_len == p->q_len && p->q_len > PLOT_DECODE_Q_LEN)
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
static int facet_varies(const struct fa_case *const *cs, int n, int f)
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
		facet_text(cs[0], f, a, sizeof a);
		facet_text(cs[i], f, b, sizeof b);
		if (strcmp(a, b) != 0)
			return 1;
	}
	return 0;
}

/* The facets in `allowed` (a bit per facet) that vary between cs[0..n). */
static unsigned facets_varying(const struct fa_case *const *cs, int n, unsigned allowed)
{
	unsigned m = 0;
	for (int f = 0; f < F_COUNT; f++)
		if ((allowed >> f & 1) && facet_varies(cs, n, f))
			m |= 1u << f;
	return m;
}

/* The texts of the facets in m, joined by ", ", into buf ("" when none). */
static void facets_label(const struct fa_case *c, unsigned m, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int f = 0; f < F_COUNT; f++) {
		char t[128];
		if (!(m >> f & 1))
			continue;
		facet_text(c, f, t, sizeof t);
		if (!t[0])
			continue;
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s", n ? ", " : "", t);
		if (n >= size)
			return;
	}
}

/* ---- Throughput ------------------------------------------------------------------ */

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
	prun_free(&t->run);
}

static int tp_is_decode(const struct pcase *pc)
{
	return pc->c.p.q_len <= PLOT_DECODE_Q_LEN;
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
	unsigned m = facets_varying(cs, n, allowed);
	int nv = 0;
	for (int i = 0; i < n; i++)
		facets_label(cs[i], m, labels + (size_t)i * size, size);
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
		facet_text(cs[i], f, a, sizeof a);
		for (j = 0; j < i; j++) {
			facet_text(cs[j], f, b, sizeof b);
			if (strcmp(a, b) == 0)
				break;
		}
		if (j < i)
			continue; /* not the part's first case */
		parts++;
		for (j = i; j < n; j++) {
			facet_text(cs[j], f, b, sizeof b);
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
			    !facet_varies(cs, n, f))
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
				facet_text(&r->cases[c].c, best, a, sizeof a);
				facet_text(&r->cases[t->panels[worst].first].c, best, b, sizeof b);
				if (strcmp(a, b) == 0)
					continue;
				for (p = first_panel; p < t->n_panels; p++) {
					facet_text(&r->cases[t->panels[p].first].c, best, b, sizeof b);
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
		pa->vary = facets_varying(group, n, tp_variant_facets(pa->decode, pa->split));
		if (!(pa->variants = calloc((size_t)n + 1, sizeof *pa->variants))) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			goto out;
		}
		for (int c = 0; c < r->n_cases; c++) {
			char label[512];
			int v;
			if (t->case_panel[c] != p)
				continue;
			facets_label(&r->cases[c].c, pa->vary, label, sizeof label);
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

static enum fa_rc plot_throughput(struct fa_store *s, const struct fa_plot_opts *o, FILE *out,
				  struct fa_err *err)
{
	struct tp_state t;
	struct sbuf title = {0};
	struct colour_map cm;
	int *order, cols, rows, legend_w, legend_rows = 0;
	enum fa_rc rc;

	memset(&t, 0, sizeof t);
	rc = prun_load(s, o->run_id, o->where, &t.run, err);
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
		if (!names || colours_assign(&cm, names, t.n_series) != 0) {
			free(names);
			colours_free(&cm);
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
	gp_begin(out, o, cols * (510 + 8 * (legend_w + 9)),
		 70 + rows * (int)fmax(330, 90 + 16 * legend_rows));

	/* data: one block per series, points by x */
	for (int k = 0, i = 0; k < t.n_series; k++) {
		const struct tp_series *se = &t.series[k];
		char name[32];
		snprintf(name, sizeof name, "s%d", k);
		gp_block(out, name, t.panels[se->panel].decode ? "kv_len GB/s case"
							       : "q_len TFLOP/s case");
		for (; i < t.n_pts && t.pts[order[i]].series == k; i++) {
			const struct tp_point *p = &t.pts[order[i]];
			gp_num(out, p->x);
			fputc(' ', out);
			gp_num(out, p->y);
			fprintf(out, " %" PRId64 "\n", t.run.cases[t.run.res[p->ri].ci].idx);
		}
		gp_block_end(out);
	}

	if (o->title)
		sb_add(&title, "%s", o->title);
	else {
		sb_add(&title, "throughput of ");
		run_title(&title, &t.run, o->where);
	}
	fprintf(out, "set multiplot layout %d,%d title ", rows, cols);
	gp_str(out, sb_str(&title));
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
		facets_label(c0, pa->split & ~(1u << F_HEAD_DIM), extra, sizeof extra);
		snprintf(buf, sizeof buf, "head_dim %d%s%s%s", pa->head_dim, extra[0] ? ", " : "", extra,
			 pa->decode ? ", decode-like (q_len <= 16)" : "");
		fputs("set title ", out);
		gp_str(out, buf);
		/* room right of the plot for the panel's legend (a line sample is
		 * about 6 characters); the cells are as wide as the widest */
		fprintf(out, "\nset rmargin %d\n", tp_legend_width(&t, pn) + 8);
		gp_log2_axis(out, lo, hi);
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
				first ? "" : ", \\\n     ", k, colour_of(&cm, se->label),
				1 + se->variant % N_DASH_TYPES,
				point_types[se->variant % N_OF(point_types)]);
			if (!several) {
				fputs("title ", out);
				gp_str(out, se->label);
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
					colour_of(&cm, se->label));
				gp_str(out, se->label);
			}
			for (int v = 0; v < pa->n_variants; v++) {
				fprintf(out,
					", \\\n     keyentry with linespoints lw 1.5 lc rgb '#333333' "
					"dt %d pt %d title ",
					1 + v % N_DASH_TYPES, point_types[v % N_OF(point_types)]);
				gp_str(out, pa->variants[v]);
			}
		}
		fputs("\n", out);
	}
	fputs("unset multiplot\n", out);
	if (title.oom)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
	sb_free(&title);
	colours_free(&cm);
	tp_free(&t);
	return rc;
}

/* ---- Heatmap ---------------------------------------------------------------------- */

static int cmp_params_p(const void *a, const void *b)
{
	return fa_table_params_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 when the item "name=value" (n bytes) is in every params string of sets. */
static int item_common(const char *item, size_t n, char *const *sets, int nsets)
{
	for (int i = 0; i < nsets; i++)
		if (!fa_table_params_has(sets[i], item, n))
			return 0;
	return 1;
}

/* The items of params that are not common to every set (the tic label),
 * or, when common != 0, those that are (for the axis label). */
static void params_part(const char *params, char *const *sets, int nsets, int common, char *buf,
			size_t size)
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

static enum fa_rc plot_heatmap(struct fa_store *s, const struct fa_plot_opts *o, FILE *out,
			       struct fa_err *err)
{
	struct prun r;
	struct sbuf title = {0};
	const char **knames = NULL, *kernel = NULL;
	char **sets = NULL, **ylabels = NULL, common[512], buf[700];
	int *nsets_of = NULL, *row_case = NULL, *pair_k = NULL, nk = 0, nsets = 0, ny = 0;
	const struct fa_case **cs = NULL;
	double *ratio = NULL, *best = NULL, max_ratio = 1;
	int *status = NULL, label_w = 8, tick_w = 4;
	unsigned facets;
	enum fa_rc rc = prun_load(s, o->run_id, o->where, &r, err);

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
	facets = facets_varying(cs, ny, FACETS_ALL);

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
	for (int y = 0; y < ny; y++) {
		for (int x = 0; x < nsets; x++) {
			ratio[y * nsets + x] /= best[y];
			if (isfinite(ratio[y * nsets + x]))
				max_ratio = fmax(max_ratio, ratio[y * nsets + x]);
		}
		facets_label(cs[y], facets, common, sizeof common);
		if (isfinite(best[y]))
			snprintf(buf, sizeof buf, "#%" PRId64 "%s%s: best %.3g ms",
				 r.cases[row_case[y]].idx, common[0] ? " " : "", common, best[y]);
		else
			snprintf(buf, sizeof buf, "#%" PRId64 "%s%s: no time",
				 r.cases[row_case[y]].idx, common[0] ? " " : "", common);
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

	/* about 7 px per character of a 10 pt font; the x tics are turned by
	 * 30 degrees, so half their length goes down */
	gp_begin(out, o, 260 + 7 * label_w + nsets * (int)fmax(90, 6.5 * tick_w),
		 (int)fmax(420, 170 + 34 * ny + 3.5 * tick_w));
	gp_block(out, "cells", "params_index case_row time_over_best label");
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nsets; x++)
			if (isfinite(ratio[y * nsets + x])) {
				char txt[32];
				snprintf(txt, sizeof txt, "%.2f", ratio[y * nsets + x]);
				fprintf(out, "%d %d ", x, y);
				gp_num(out, ratio[y * nsets + x]);
				fputc(' ', out);
				gp_data_str(out, txt);
				fputc('\n', out);
			}
	gp_block_end(out);
	gp_block(out, "missing", "params_index case_row status");
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
	gp_block_end(out);
	int n_marks = 0;
	if (o->n_marks > 0) {
		/* the rule's choices (fabench tune), on the cells drawn */
		gp_block(out, "marks", "params_index case_row");
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
		gp_block_end(out);
	}

	if (o->title)
		sb_add(&title, "%s", o->title);
	else {
		sb_add(&title, "tuning of %s: ", kernel);
		run_title(&title, &r, o->where);
	}
	fputs("set title ", out);
	gp_str(out, sb_str(&title));
	fputs("\nset xtics (", out);
	for (int x = 0; x < nsets; x++) {
		params_part(sets[x], sets, nsets, 0, buf, sizeof buf);
		fputs(x ? ", " : "", out);
		gp_str(out, buf);
		fprintf(out, " %d", x);
	}
	fputs(") rotate by -30 left\nset ytics (", out);
	for (int y = 0; y < ny; y++) {
		fputs(y ? ", " : "", out);
		gp_str(out, ylabels[y]);
		fprintf(out, " %d", y);
	}
	fputs(")\n", out);
	params_part(sets[0], sets, nsets, 1, common, sizeof common);
	if (common[0])
		snprintf(buf, sizeof buf, "params of %s (every set has %s)", kernel, common);
	else
		snprintf(buf, sizeof buf, "params of %s", kernel);
	fputs("set xlabel ", out);
	gp_str(out, buf);
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
			gp_str(out, o->mark_label ? o->mark_label : "rule");
		}
		fputs("\n", out);
	}
	if (title.oom)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
out:
	sb_free(&title);
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
	prun_free(&r);
	return rc;
}

/* ---- Speedup ------------------------------------------------------------------------- */

/* "kernel[params]" into buf. */
static void kernel_label(const char *kernel, const char *params, char *buf, size_t size)
{
	if (params && params[0])
		snprintf(buf, size, "%s[%s]", kernel, params);
	else
		snprintf(buf, size, "%s", kernel);
}

/* "name=value name=value" of the shown parameters that apply, into buf. */
static void shown_values(int n, const char *const *names, const int32_t *shown,
			 const char *const *values, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int j = 0; j < n && len < size; j++)
		if (shown[j] && values[j] && values[j][0])
			len += (size_t)snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "",
						names[j], values[j]);
}

/* A compare row's kernel as fabench compare names it: "kernel[params]", or
 * "kernel[base -> head]" when its sides ran other params (--ignore-params). */
static void row_label(const struct fa_cmp_row *w, char *buf, size_t size)
{
	if (w->base_params && strcmp(w->base_params, w->params) != 0)
		snprintf(buf, size, "%s[%s -> %s]", w->kernel, w->base_params, w->params);
	else
		kernel_label(w->kernel, w->params, buf, size);
}

/* "label 'nightly' (runs 2, 3)" or "run 1" into b. */
static void side_text(struct sbuf *b, const struct fa_cmp_side *sd)
{
	if (sd->matched_by && strcmp(sd->matched_by, "id") != 0)
		sb_add(b, "%s '%s' ", sd->matched_by, sd->spec);
	sb_add(b, "%s", sd->matched_by && strcmp(sd->matched_by, "id") != 0 ? "(" : "");
	sb_add(b, "run%s ", sd->n_runs == 1 ? "" : "s");
	for (int i = 0; i < sd->n_runs && i < 8; i++)
		sb_add(b, "%s%" PRId64, i ? ", " : "", sd->runs[i].id);
	if (sd->n_runs > 8)
		sb_add(b, ", ... (%d)", (int)sd->n_runs);
	sb_add(b, "%s", sd->matched_by && strcmp(sd->matched_by, "id") != 0 ? ")" : "");
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

static enum fa_rc plot_speedup(const struct fa_plot_opts *o, FILE *out, struct fa_err *err)
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
			shown_values(cmp->n_params, cmp->param_names, cmp->shown, w->values, vals,
				     sizeof vals);
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
	gp_begin(out, o, width, height);
	/* per kernel: bars by verdict (one block each), the intervals and the
	 * value labels; y is the case's row */
	for (int k = 0; k < nk; k++) {
		char name[48];
		for (int v = 0; v < 4; v++) {
			snprintf(name, sizeof name, "k%d_%s", k, fa_stats_verdict_name(v));
			gp_block(out, name, "case_row speedup bar_from bar_to");
			for (int i = 0; i < cmp->n_rows; i++) {
				const struct fa_cmp_row *w = &cmp->rows[i];
				if (!row_timed(w) || row_k[i] != k || w->verdict != v)
					continue;
				fprintf(out, "%d ", row_y[i]);
				gp_num(out, w->speedup);
				fputc(' ', out);
				gp_num(out, fmin(w->speedup, 1));
				fputc(' ', out);
				gp_num(out, fmax(w->speedup, 1));
				fputc('\n', out);
			}
			gp_block_end(out);
		}
		snprintf(name, sizeof name, "k%d_ci", k);
		gp_block(out, name, "case_row speedup low high (95% bootstrap interval)");
		for (int i = 0; i < cmp->n_rows; i++) {
			const struct fa_cmp_row *w = &cmp->rows[i];
			if (!row_timed(w) || row_k[i] != k || !isfinite(w->perf.lo) ||
			    !isfinite(w->perf.hi) || !(w->perf.lo > 0))
				continue;
			fprintf(out, "%d ", row_y[i]);
			gp_num(out, w->speedup);
			fputc(' ', out);
			gp_num(out, 1 / w->perf.hi);
			fputc(' ', out);
			gp_num(out, 1 / w->perf.lo);
			fputc('\n', out);
		}
		gp_block_end(out);
		snprintf(name, sizeof name, "k%d_values", k);
		gp_block(out, name, "case_row x text");
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
			gp_num(out, x * 1.02);
			fputc(' ', out);
			gp_data_str(out, txt);
			fputc('\n', out);
		}
		gp_block_end(out);
	}

	if (o->title)
		sb_add(&title, "%s", o->title);
	else {
		sb_add(&title, "speedup of HEAD over BASE: BASE ");
		side_text(&title, &cmp->base);
		sb_add(&title, ", HEAD ");
		side_text(&title, &cmp->head);
		if (isfinite(cmp->geomean_speedup))
			sb_add(&title, "; geometric mean %.3gx", cmp->geomean_speedup);
		if (left_out)
			sb_add(&title, "\n%d row%s not timed on both sides %s not shown (see fabench compare)",
			       left_out, left_out == 1 ? "" : "s", left_out == 1 ? "is" : "are");
	}
	fputs("set multiplot title ", out);
	gp_text(out, sb_str(&title));
	fputs(" font ',12'\n", out);
	/* the labels right of the bars need room: a quarter of the range more */
	lo /= 1.1;
	hi *= 1.1 * pow(hi / lo, 0.25);
	fprintf(out, "set yrange [%d.7:-0.7]\nset logscale x 2\nset xrange [", ny - 1);
	gp_num(out, lo);
	fputc(':', out);
	gp_num(out, hi);
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
			gp_str(out, buf);
			fputc(' ', out);
			gp_num(out, speedup_tics[i]);
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
		gp_str(out, knames[k]);
		fputs("\n", out);
		if (k == 0) {
			fputs("set ytics (", out);
			for (int y = 0; y < ny; y++) {
				const struct fa_cmp_row *w = &cmp->rows[case_row[y]];
				shown_values(cmp->n_params, cmp->param_names, cmp->shown, w->values,
					     vals, sizeof vals);
				snprintf(buf, sizeof buf, "%s%s#%d%s%s", cmp->n_suites > 1 ? w->suite : "",
					 cmp->n_suites > 1 ? " " : "", (int)w->case_idx,
					 vals[0] ? "  " : "", vals);
				fputs(y ? ", " : "", out);
				gp_str(out, buf);
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
					k, fa_stats_verdict_name(v), verdict_colours[v]);
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
				verdict_colours[v]);
			gp_str(out, buf);
		}
		fputs("\n", out);
	}
	fputs("unset multiplot\n", out);
	if (title.oom)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
out:
	sb_free(&title);
	for (int k = 0; knames && k < nk; k++)
		free(knames[k]);
	free(knames);
	free(row_k);
	free(row_y);
	free(case_row);
	return rc;
}

/* ---- History --------------------------------------------------------------------------- */

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

static enum fa_rc plot_history(const struct fa_plot_opts *o, FILE *out, struct fa_err *err)
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
	if (np > PLOT_HISTORY_MAX_PANELS) {
		rc = fa_err_set(err, FA_ERR_USAGE,
				"the history has %d cases and a plot shows at most %d: narrow it "
				"with --where, --kernel or --suite",
				np, PLOT_HISTORY_MAX_PANELS);
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
		kernel_label(se->kernel, several_params(h, se) ? se->params : "", kl, sizeof kl);
		if (!(names[i] = strdup(kl))) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
			goto out;
		}
		if (panel_of[i] >= 0)
			sorted[n_named++] = names[i];
	}
	if (colours_assign(&cm, sorted, n_named) != 0) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
		goto out;
	}
	cols = np == 1 ? 1 : 2;
	rows = (np + cols - 1) / cols;
	gp_begin(out, o, cols == 1 ? 1000 : 1600, 80 + 400 * rows);

	/* per series: its timed points, the segment means between steps (pairs
	 * of points, one segment per blank-line-separated block), the steps */
	for (int i = 0; i < h->n_series; i++) {
		const struct fa_hist_series *se = &h->series[i];
		char name[32];
		if (panel_of[i] < 0)
			continue;
		snprintf(name, sizeof name, "p%d", i);
		gp_block(out, name, "run_index median_ms run_id");
		for (int j = 0; j < se->n_points; j++) {
			const struct fa_hist_point *pt = &se->points[j];
			if (!isfinite(pt->median_ms))
				continue;
			fprintf(out, "%d ", (int)pt->run);
			gp_num(out, pt->median_ms);
			fprintf(out, " %" PRId64 "\n", h->runs[pt->run].id);
		}
		gp_block_end(out);
		if (se->n_steps == 0)
			continue;
		snprintf(name, sizeof name, "m%d", i);
		gp_block(out, name, "run_index segment_mean_ms (segments between steps)");
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
			gp_num(out, mean);
			fprintf(out, "\n%g ", se->points[to].run + 0.25);
			gp_num(out, mean);
			fputc('\n', out);
		}
		gp_block_end(out);
		for (int dir = 0; dir < 2; dir++) {
			snprintf(name, sizeof name, "%s%d", dir ? "faster" : "slower", i);
			gp_block(out, name, "run_index median_ms change");
			for (int k = 0; k < se->n_steps; k++) {
				const struct fa_hist_step *st = &se->steps[k];
				const struct fa_hist_point *pt = &se->points[st->at];
				char txt[64];
				if ((st->change < 0) != dir)
					continue;
				snprintf(txt, sizeof txt, "%+.0f%%%s", 100 * st->change,
					 st->new_regression ? " new" : "");
				fprintf(out, "%d ", (int)pt->run);
				gp_num(out, isfinite(pt->median_ms) ? pt->median_ms : st->after_ms);
				fputc(' ', out);
				gp_data_str(out, txt);
				fputc('\n', out);
			}
			gp_block_end(out);
		}
	}

	if (o->title) {
		sb_add(&title, "%s", o->title);
	} else {
		const struct fa_hist_run *a = &h->runs[0], *b = &h->runs[h->n_runs - 1];
		sb_add(&title, "history of %d run%s, %.10s to %.10s", (int)h->n_runs,
		       h->n_runs == 1 ? "" : "s", a->started_at, b->started_at);
		if (ho->suite)
			sb_add(&title, ", suite %s", ho->suite);
		if (ho->label)
			sb_add(&title, ", label %s", ho->label);
		if (ho->since)
			sb_add(&title, ", since %s", ho->since);
		if (ho->kernel)
			sb_add(&title, ", kernels %s", ho->kernel);
		if (ho->where)
			sb_add(&title, ", cases where %s", ho->where);
		sb_add(&title, "; %d step%s found", (int)h->n_steps, h->n_steps == 1 ? "" : "s");
		if (h->n_new_regressions)
			sb_add(&title, ", %d new regression%s", (int)h->n_new_regressions,
			       h->n_new_regressions == 1 ? "" : "s");
	}
	fprintf(out, "set multiplot layout %d,%d title ", rows, cols);
	gp_str(out, sb_str(&title));
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
		gp_text(out, buf);
		fprintf(out, " %d", r);
	}
	fputs(")\nset xlabel 'run (id and date, oldest first)' offset 0,-0.8\nset ylabel 'median time (ms)'\n"
	      "set grid\nset tics nomirror\nset key outside right top vertical Left reverse\n"
	      "set offsets 0, 0, graph 0.08, graph 0.08\n",
	      out);
	{
		/* one right margin for every panel (see plot_throughput) */
		size_t longest = strlen("mean between steps");
		for (int i = 0; i < h->n_series; i++) {
			const struct fa_hist_series *se = &h->series[i];
			size_t n = strlen(se->kernel) + (several_params(h, se) ? strlen(se->params) + 2 : 0);
			longest = panel_of[i] >= 0 && n > longest ? n : longest;
		}
		fprintf(out, "set rmargin %d\n", (int)longest + 8);
	}
	for (int p = 0; p < np; p++) {
		const struct fa_hist_series *s0 = &h->series[panel_first[p]];
		int first = 1, any_up = 0, any_down = 0;
		char vals[768];
		shown_values(h->n_params, h->param_names, h->shown, s0->values, vals, sizeof vals);
		snprintf(buf, sizeof buf, "%s%s#%d%s%s", suites ? s0->suite : "", suites ? " " : "",
			 (int)s0->case_idx, vals[0] ? " " : "", vals);
		wrap(buf, 70);
		fprintf(out, "\n# panel %d\nset title ", p + 1);
		gp_text(out, buf);
		fputs("\nplot ", out);
		for (int i = 0; i < h->n_series; i++) {
			const struct fa_hist_series *se = &h->series[i];
			const char *colour;
			int up = 0, down = 0;
			if (panel_of[i] != p)
				continue;
			colour = colour_of(&cm, names[i]);
			fprintf(out, "%s$p%d using 1:2 with linespoints lw 2 pt 7 ps 1 lc rgb '%s' title ",
				first ? "" : ", \\\n     ", i, colour);
			gp_str(out, names[i]);
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
					i, verdict_colours[FA_PERF_SLOWER], i,
					verdict_colours[FA_PERF_SLOWER]);
			if (down)
				fprintf(out,
					", \\\n     $faster%d using 1:2 with points pt 10 ps 2.5 lw 2 "
					"lc rgb '%s' notitle"
					", \\\n     $faster%d using 1:2:3 with labels offset 0,-1.6 "
					"tc rgb '%s' notitle",
					i, verdict_colours[FA_PERF_FASTER], i,
					verdict_colours[FA_PERF_FASTER]);
			any_up |= up;
			any_down |= down;
		}
		if (any_up || any_down)
			fputs(", \\\n     keyentry with lines dt 2 lw 1.5 lc rgb '#555555' title 'mean between steps'",
			      out);
		if (any_up)
			fprintf(out, ", \\\n     keyentry with points pt 8 ps 2 lw 2 lc rgb '%s' title 'step: slower'",
				verdict_colours[FA_PERF_SLOWER]);
		if (any_down)
			fprintf(out, ", \\\n     keyentry with points pt 10 ps 2 lw 2 lc rgb '%s' title 'step: faster'",
				verdict_colours[FA_PERF_FASTER]);
		fputs("\n", out);
	}
	fputs("unset multiplot\n", out);
	if (title.oom)
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory drawing a plot");
out:
	sb_free(&title);
	for (int i = 0; names && i < h->n_series; i++)
		free(names[i]);
	free(names);
	free(sorted);
	colours_free(&cm);
	free(panel_of);
	free(panel_first);
	return rc;
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
	case FA_PLOT_THROUGHPUT: rc = plot_throughput(s, o, out, err); break;
	case FA_PLOT_SPEEDUP: rc = plot_speedup(o, out, err); break;
	case FA_PLOT_HISTORY: rc = plot_history(o, out, err); break;
	case FA_PLOT_HEATMAP: rc = plot_heatmap(s, o, out, err); break;
	default: return fa_err_set(err, FA_ERR_USAGE, "unknown plot kind %d", (int)o->kind);
	}
	if (rc == FA_OK && (fflush(out) != 0 || ferror(out)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot write the %s plot's script",
				fa_plot_kind_name(o->kind));
	return rc;
}

/* ---- Running gnuplot ----------------------------------------------------------------- */

/* The program to run: $FABENCH_GNUPLOT or "gnuplot". */
static const char *gnuplot_program(void)
{
	const char *env = getenv("FABENCH_GNUPLOT");
	return env && *env ? env : "gnuplot";
}

/* 1 when prog is executable: a path as given, a name through PATH. */
static int program_found(const char *prog)
{
	const char *path = getenv("PATH");
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		char full[4096];
		snprintf(full, sizeof full, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", prog);
		if (access(full, X_OK) == 0)
			return 1;
		path += n + (path[n] == ':');
	}
	return 0;
}

int fa_plot_gnuplot_available(void)
{
	return program_found(gnuplot_program());
}

/* The whole file at path, malloc'd and NUL-terminated; NULL on failure. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, got;
	if (!f)
		return NULL;
	do {
		if (cap - n < 4096) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
	} while (got > 0);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* A temporary folder with plot.gp, gnuplot.err and the image. */
struct plot_tmp {
	char dir[1024];
	char script[1100], errors[1100], image[1100];
};

static void tmp_remove(struct plot_tmp *t)
{
	if (!t->dir[0])
		return;
	unlink(t->script);
	unlink(t->errors);
	unlink(t->image);
	rmdir(t->dir);
	t->dir[0] = '\0';
}

/* Runs prog on plot.gp in t->dir, stderr to gnuplot.err. Returns FA_OK
 * when it exits with status 0. */
static enum fa_rc run_gnuplot(const char *prog, const struct plot_tmp *t, struct fa_err *err)
{
	pid_t pid = fork(), w;
	int status = 0;
	long waited_ms = 0;
	if (pid < 0)
		return fa_err_set(err, FA_ERR_IO, "cannot start gnuplot: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		int efd = open(t->errors, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		char *argv[] = {(char *)prog, "plot.gp", NULL};
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		if (efd >= 0)
			dup2(efd, 2);
		if (chdir(t->dir) != 0)
			_exit(126);
		execvp(prog, argv);
		_exit(127);
	}
	for (;;) {
		struct timespec ts = {0, 10 * 1000 * 1000}; /* 10 ms */
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return fa_err_set(err, FA_ERR_IO, "cannot wait for gnuplot: %s",
					  strerror(errno));
		if (waited_ms >= PLOT_GNUPLOT_TIMEOUT_MS) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return fa_err_set(err, FA_ERR_TIMEOUT,
					  "gnuplot ran past %d s drawing the plot and was killed",
					  PLOT_GNUPLOT_TIMEOUT_MS / 1000);
		}
		nanosleep(&ts, NULL);
		waited_ms += 10;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return FA_OK;
	{
		char *text = slurp(t->errors, NULL);
		const char *tail = text ? text : "";
		size_t n;
		while (*tail == '\n' || *tail == ' ')
			tail++;
		n = strlen(tail);
		while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == ' '))
			n--;
		if (n > PLOT_STDERR_MAX) {
			tail += n - PLOT_STDERR_MAX;
			n = PLOT_STDERR_MAX;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && n == 0)
			fa_err_set(err, FA_ERR_BACKEND, "cannot run '%s'", prog);
		else if (WIFEXITED(status))
			fa_err_set(err, FA_ERR_BACKEND, "gnuplot failed with exit status %d: %.*s",
				   WEXITSTATUS(status), (int)n, n ? tail : "(nothing on stderr)");
		else
			fa_err_set(err, FA_ERR_BACKEND, "gnuplot was killed by signal %d: %.*s",
				   WTERMSIG(status), (int)n, n ? tail : "(nothing on stderr)");
		free(text);
	}
	return err ? err->rc : FA_ERR_BACKEND;
}

/* Draws o in a new temporary folder; on success t->image holds the image
 * (the caller removes the folder with tmp_remove, also on failure). */
static enum fa_rc draw(struct fa_store *s, const struct fa_plot_opts *o, struct plot_tmp *t,
		       struct fa_err *err)
{
	const char *prog = gnuplot_program(), *tmp = getenv("TMPDIR");
	struct stat stt;
	enum fa_rc rc;
	FILE *f;

	memset(t, 0, sizeof *t);
	if (!program_found(prog))
		return fa_err_set(err, FA_ERR_NOT_FOUND,
				  "gnuplot is not installed ('%s' not found in PATH): plots need it; "
				  "install the gnuplot-nox package (apt-get install gnuplot-nox)",
				  prog);
	snprintf(t->dir, sizeof t->dir, "%s/fabench-plot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t->dir)) {
		rc = fa_err_set(err, FA_ERR_IO, "cannot create a temporary folder '%s': %s", t->dir,
				strerror(errno));
		t->dir[0] = '\0';
		return rc;
	}
	snprintf(t->script, sizeof t->script, "%s/plot.gp", t->dir);
	snprintf(t->errors, sizeof t->errors, "%s/gnuplot.err", t->dir);
	snprintf(t->image, sizeof t->image, "%s/plot.%s", t->dir,
		 o->format == FA_PLOT_SVG ? "svg" : "png");
	if (!(f = fopen(t->script, "w")))
		return fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", t->script,
				  strerror(errno));
	rc = fa_plot_script(s, o, f, err);
	if (fclose(f) != 0 && rc == FA_OK)
		rc = fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", t->script,
				strerror(errno));
	if (rc == FA_OK)
		rc = run_gnuplot(prog, t, err);
	if (rc == FA_OK && (stat(t->image, &stt) != 0 || stt.st_size == 0))
		rc = fa_err_set(err, FA_ERR_BACKEND, "gnuplot wrote no image (plot.%s)",
				o->format == FA_PLOT_SVG ? "svg" : "png");
	return rc;
}

enum fa_rc fa_plot_render(struct fa_store *s, const struct fa_plot_opts *o, const char *path,
			  struct fa_err *err)
{
	struct plot_tmp t;
	enum fa_rc rc = draw(s, o, &t, err);
	char *data = NULL, part[4200];
	size_t len = 0;
	FILE *f;

	if (rc == FA_OK && !(data = slurp(t.image, &len)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot read '%s': %s", t.image, strerror(errno));
	tmp_remove(&t);
	if (rc != FA_OK) {
		free(data);
		return rc;
	}
	/* written next to path and renamed, so path is whole or untouched */
	snprintf(part, sizeof part, "%s.part", path);
	if (fa_mkdir_parent(path) != 0 || !(f = fopen(part, "wb"))) {
		rc = fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
		free(data);
		return rc;
	}
	if (fwrite(data, 1, len, f) != len)
		rc = fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	if (fclose(f) != 0 && rc == FA_OK)
		rc = fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	if (rc == FA_OK && rename(part, path) != 0)
		rc = fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	if (rc != FA_OK)
		unlink(part);
	free(data);
	return rc;
}

enum fa_rc fa_plot_svg(struct fa_store *s, const struct fa_plot_opts *o, char **svg, size_t *len,
		       struct fa_err *err)
{
	struct fa_plot_opts so = *o;
	struct plot_tmp t;
	enum fa_rc rc;

	*svg = NULL;
	so.format = FA_PLOT_SVG;
	rc = draw(s, &so, &t, err);
	if (rc == FA_OK && !(*svg = slurp(t.image, len)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot read '%s': %s", t.image, strerror(errno));
	tmp_remove(&t);
	return rc;
}
