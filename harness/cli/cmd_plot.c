/* cmd_plot.c - `fabench plot KIND`: a chart of stored results (throughput of
 * a run, speedups of a compare, a history with its steps, the heatmap of a
 * tuning run) drawn by gnuplot as PNG or SVG. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cmd.h"
#include "../report/compare.h"
#include "../report/history.h"
#include "../report/plot.h"
#include "../store/store.h"
#include "../base/util.h"

static const char usage_text[] =
	"usage: fabench plot throughput|heatmap [--run SPEC] [--where EXPR] [--kernel NAME]\n"
	"       fabench plot speedup [--min-effect PCT] [--alpha P] [--ignore-params] BASE HEAD\n"
	"       fabench plot history [--since DATE] [--suite NAME] [--kernel GLOB]\n"
	"                            [--where EXPR] [--label TEXT] [--include-incomplete]\n"
	"                            [--min-effect PCT]\n"
	"   and for every kind: [--db PATH] [--output FILE.png|FILE.svg] [--script FILE]\n"
	"                       [--title TEXT] [--size WIDTHxHEIGHT]";

static void help(void)
{
	printf("%s\n\n"
	       "Draws stored results with gnuplot (install the gnuplot-nox package):\n\n"
	       "  throughput  a run: TFLOP/s against q_len (log2 axis), one line per kernel,\n"
	       "              one panel per head_dim; decode-like cases (q_len <= 16) in\n"
	       "              panels of their own, GB/s against kv_len. Cases that differ in\n"
	       "              other parameters (mask, dtype, batch...) are separate lines of\n"
	       "              the kernel's colour, told apart by dash and point type; a panel\n"
	       "              with more than four of them is split by one more parameter.\n"
	       "  speedup     fabench compare BASE HEAD as bars: one panel per kernel, one row\n"
	       "              per case, HEAD's speedup over BASE with its bootstrap interval,\n"
	       "              coloured by verdict.\n"
	       "  history     fabench history as lines over the runs, one panel per case,\n"
	       "              the detected steps marked and the means between them dashed.\n"
	       "  heatmap     a tuning run (fabench run --param KERNEL.NAME=V1,V2): each case\n"
	       "              against each set of params, coloured by time over the case's\n"
	       "              best.\n\n"
	       "options:\n"
	       "  --db PATH             database (default results/fabench.db, or $FABENCH_DB)\n"
	       "  --run SPEC            throughput, heatmap: a run id, a label (its latest run)\n"
	       "                        or latest (default)\n"
	       "  --where EXPR          throughput, heatmap, history: only the cases where EXPR\n"
	       "                        holds ('head_dim == 128 && mask == causal')\n"
	       "  --kernel NAME         heatmap: the tuned kernel (default: the one with the\n"
	       "                        most sets of params); history: a glob on kernel names\n"
	       "  --min-effect PCT      speedup, history: smallest change reported (default\n"
	       "                        %g for speedup, %g for history)\n"
	       "  --alpha P             speedup: significance level (default %g)\n"
	       "  --ignore-params       speedup: match by case and kernel only, as fabench\n"
	       "                        compare (one kernel run with other tunables in HEAD,\n"
	       "                        as run --ab with --param a:K.N=V and b:K.N=V gives)\n"
	       "  --since DATE          history: runs started on or after DATE (YYYY-MM-DD,\n"
	       "                        or YYYY-MM-DDTHH:MM[:SS][Z], UTC)\n"
	       "  --suite NAME          history: runs of this suite only\n"
	       "  --label TEXT          history: runs with this label only\n"
	       "  --include-incomplete  history: also runs that did not finish\n"
	       "  --output FILE         the image, .png or .svg (default\n"
	       "                        reports/KIND[-runID].png)\n"
	       "  --script FILE         write the gnuplot script to FILE instead of drawing\n"
	       "                        (`gnuplot FILE` then writes plot.png or plot.svg)\n"
	       "  --title TEXT          the plot's title instead of one naming the run(s)\n"
	       "  --size WxH            image size in pixels (default: from the content)\n\n"
	       "Prints the path of the image. Exit status: 0 drawn; 1 no gnuplot, gnuplot\n"
	       "failed or a file that cannot be written; 2 bad usage or nothing to plot in\n"
	       "what was named (a filter that keeps nothing, an empty run). See docs/plots.md.\n",
	       usage_text, FA_CMP_MIN_EFFECT * 100, FA_STATS_MIN_EFFECT * 100, FA_STATS_ALPHA);
}

/* "1200x800" -> 0 and the two sizes; -1 when malformed or out of range. */
static int parse_size(const char *s, int32_t *w, int32_t *h)
{
	char *end;
	long a, b;
	errno = 0;
	a = strtol(s, &end, 10);
	if (end == s || (*end != 'x' && *end != 'X'))
		return -1;
	s = end + 1;
	b = strtol(s, &end, 10);
	/* gnuplot's terminals take up to 10000 pixels a side comfortably */
	if (end == s || *end || errno || a < 100 || b < 100 || a > 10000 || b > 10000)
		return -1;
	*w = (int32_t)a;
	*h = (int32_t)b;
	return 0;
}

struct plot_args {
	const char *db, *run, *output, *script;
	const char *base, *head;
	struct fa_plot_opts po;
	struct fa_compare_opts co;
	struct fa_history_opts ho;
	int min_effect_set, alpha_set, history_set; /* options of one kind only */
	const char *history_opt;                    /* one of them, for the message */
};

/* Parses argv into a; returns -1 when done, else the exit status (help or
 * a usage error, already printed). */
static int parse_args(int argc, char **argv, struct plot_args *a)
{
	static const struct option longopts[] = {
		{"db", required_argument, 0, 'd'},       {"run", required_argument, 0, 'r'},
		{"where", required_argument, 0, 'w'},    {"kernel", required_argument, 0, 'k'},
		{"min-effect", required_argument, 0, 'm'}, {"alpha", required_argument, 0, 'a'},
		{"since", required_argument, 0, 'S'},    {"suite", required_argument, 0, 'u'},
		{"label", required_argument, 0, 'l'},    {"include-incomplete", no_argument, 0, 'I'},
		{"output", required_argument, 0, 'o'},   {"script", required_argument, 0, 'x'},
		{"title", required_argument, 0, 't'},    {"size", required_argument, 0, 'z'},
		{"ignore-params", no_argument, 0, 'P'},  {"help", no_argument, 0, 'h'},
		{0, 0, 0, 0}};
	const char *kind_name;
	int c, kind, st;
	double v;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': a->db = optarg; break;
		case 'r': a->run = optarg; break;
		case 'w': a->po.where = a->ho.where = optarg; break;
		case 'k': a->po.kernel = a->ho.kernel = optarg; break;
		case 'm':
			if ((st = fa_cmd_opt_min_effect("plot", usage_text, optarg, &v)) != 0)
				return st;
			a->co.perf.min_effect = a->ho.min_effect = v;
			a->min_effect_set = 1;
			break;
		case 'a':
			if ((st = fa_cmd_opt_alpha("plot", usage_text, optarg, &v)) != 0)
				return st;
			a->co.perf.alpha = v;
			a->alpha_set = 1;
			break;
		case 'S': a->ho.since = optarg; a->history_set = 1; a->history_opt = "--since"; break;
		case 'u': a->ho.suite = optarg; a->history_set = 1; a->history_opt = "--suite"; break;
		case 'l': a->ho.label = optarg; a->history_set = 1; a->history_opt = "--label"; break;
		case 'I':
			a->ho.include_incomplete = 1;
			a->history_set = 1;
			a->history_opt = "--include-incomplete";
			break;
		case 'P': a->co.ignore_params = 1; break;
		case 'o': a->output = optarg; break;
		case 'x': a->script = optarg; break;
		case 't': a->po.title = optarg; break;
		case 'z':
			if (parse_size(optarg, &a->po.width, &a->po.height) != 0)
				return fa_cmd_usage_error("plot", usage_text,
							  "--size '%s' must be WIDTHxHEIGHT in pixels, "
							  "100 to 10000 each",
							  optarg);
			break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("plot", usage_text, c, argv);
		}
	}
	/* positional arguments (getopt moved them last): KIND, then BASE HEAD
	 * for speedup */
	if (optind >= argc)
		return fa_cmd_usage_error("plot", usage_text,
					  "KIND is required: throughput, speedup, history or heatmap");
	kind = fa_plot_kind_parse(argv[optind]);
	if (kind < 0)
		return fa_cmd_usage_error("plot", usage_text,
					  "unknown plot kind '%s': use throughput, speedup, history "
					  "or heatmap",
					  argv[optind]);
	a->po.kind = kind;
	kind_name = argv[optind++];
	if (kind == FA_PLOT_SPEEDUP) {
		if (argc - optind < 2)
			return fa_cmd_usage_error("plot", usage_text,
						  "a speedup plot needs BASE and HEAD");
		a->base = argv[optind];
		a->head = argv[optind + 1];
		optind += 2;
	}
	if (optind < argc)
		return fa_cmd_usage_error("plot", usage_text, "unexpected argument '%s'",
					  argv[optind]);
	/* options that the kind does not take */
	if (a->run && kind != FA_PLOT_THROUGHPUT && kind != FA_PLOT_HEATMAP)
		return fa_cmd_usage_error("plot", usage_text,
					  "--run applies to throughput and heatmap plots, not %s",
					  kind_name);
	if (a->po.where && kind == FA_PLOT_SPEEDUP)
		return fa_cmd_usage_error("plot", usage_text,
					  "--where applies to throughput, heatmap and history plots, "
					  "not speedup");
	if (a->po.kernel && kind != FA_PLOT_HEATMAP && kind != FA_PLOT_HISTORY)
		return fa_cmd_usage_error("plot", usage_text,
					  "--kernel applies to heatmap and history plots, not %s",
					  kind_name);
	if (a->min_effect_set && kind != FA_PLOT_SPEEDUP && kind != FA_PLOT_HISTORY)
		return fa_cmd_usage_error("plot", usage_text,
					  "--min-effect applies to speedup and history plots, not %s",
					  kind_name);
	if (a->co.ignore_params && kind != FA_PLOT_SPEEDUP)
		return fa_cmd_usage_error("plot", usage_text,
					  "--ignore-params applies to speedup plots, not %s", kind_name);
	if (a->alpha_set && kind != FA_PLOT_SPEEDUP)
		return fa_cmd_usage_error("plot", usage_text,
					  "--alpha applies to speedup plots, not %s", kind_name);
	if (a->history_set && kind != FA_PLOT_HISTORY)
		return fa_cmd_usage_error("plot", usage_text, "%s applies to history plots, not %s",
					  a->history_opt, kind_name);
	if (a->output) {
		int f = fa_plot_format_of_path(a->output);
		if (f < 0)
			return fa_cmd_usage_error("plot", usage_text,
						  "--output '%s' must end in .png or .svg", a->output);
		a->po.format = f;
	}
	return -1;
}

int fa_cmd_plot_render(const char *cmd, struct fa_store *s, const struct fa_plot_opts *po,
		       const char *path)
{
	struct fa_err err;
	fa_err_clear(&err);
	if (fa_plot_render(s, po, path, &err) == FA_OK)
		return FA_EXIT_OK;
	return fa_cmd_fail(cmd, &err);
}

/* Writes the script to a->script, or draws into the output; prints the path
 * written. Returns the exit status. */
static int finish(struct fa_store *store, struct plot_args *a, int64_t run_id)
{
	char def[128];
	struct fa_err err;
	const char *path = a->output;

	fa_err_clear(&err);
	if (a->script) {
		/* written only when whole: nothing to plot leaves no empty
		 * script (nor its folders), and an earlier one stays as it was */
		struct fa_cmd_out out;
		int status = FA_EXIT_OK;
		enum fa_rc rc;
		if (fa_cmd_out_open("plot", a->script, &out) != 0)
			return FA_EXIT_FAIL;
		rc = fa_plot_script(store, &a->po, out.f, &err);
		if (rc != FA_OK)
			status = fa_cmd_fail("plot", &err);
		if (fa_cmd_out_close("plot", &out, rc == FA_OK) != 0)
			status = FA_EXIT_FAIL;
		if (status != FA_EXIT_OK)
			return status;
		printf("%s\n", a->script);
		return FA_EXIT_OK;
	}
	if (!path) {
		if (a->po.kind == FA_PLOT_THROUGHPUT || a->po.kind == FA_PLOT_HEATMAP)
			snprintf(def, sizeof def, "reports/%s-run%" PRId64 ".png",
				 fa_plot_kind_name(a->po.kind), run_id);
		else
			snprintf(def, sizeof def, "reports/%s.png", fa_plot_kind_name(a->po.kind));
		path = def;
	}
	int status = fa_cmd_plot_render("plot", store, &a->po, path);
	if (status == FA_EXIT_OK)
		printf("%s\n", path);
	return status;
}

int fa_cmd_plot(int argc, char **argv)
{
	struct plot_args a;
	struct fa_store *store = NULL;
	struct fa_compare cmp;
	struct fa_history hist;
	struct fa_err err;
	int64_t run_id = 0;
	int status;

	memset(&a, 0, sizeof a);
	memset(&cmp, 0, sizeof cmp);
	memset(&hist, 0, sizeof hist);
	a.db = fa_cmd_default_db();
	a.po.format = FA_PLOT_PNG;
	fa_compare_opts_init(&a.co);
	fa_history_opts_init(&a.ho);
	status = parse_args(argc, argv, &a);
	if (status >= 0)
		return status;
	/* without gnuplot nothing can be drawn: say so before reading anything */
	if (!a.script && !fa_plot_gnuplot_available()) {
		fprintf(stderr, "fabench plot: error: gnuplot is not installed: plots need it; "
				"install the gnuplot-nox package (apt-get install gnuplot-nox), "
				"or write the script with --script FILE\n");
		return FA_EXIT_FAIL;
	}
	fa_err_clear(&err);
	if (fa_store_open_readonly(a.db, &store, &err) != FA_OK)
		return fa_cmd_fail("plot", &err);
	switch (a.po.kind) {
	case FA_PLOT_THROUGHPUT:
	case FA_PLOT_HEATMAP:
		if (fa_store_find_run(store, a.run ? a.run : "latest", &run_id, &err) != FA_OK)
			break;
		a.po.run_id = run_id;
		break;
	case FA_PLOT_SPEEDUP:
		if (fa_compare_build(store, a.base, a.head, &a.co, &cmp, &err) == FA_OK)
			a.po.compare = &cmp;
		break;
	default:
		if (fa_history_build(store, &a.ho, &hist, &err) == FA_OK)
			a.po.history = &hist;
		break;
	}
	status = err.rc != FA_OK ? fa_cmd_fail("plot", &err) : finish(store, &a, run_id);
	fa_compare_free(&cmp);
	fa_history_free(&hist);
	fa_store_close(store);
	return status;
}
