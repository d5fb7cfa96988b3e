/* cmd_report.c - `fabench report`: the tables of a stored run. */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "cmd.h"
#include "../report/compare.h"
#include "../report/report.h"
#include "../store/store.h"
#include "../base/util.h"

static const char usage_text[] =
	"usage: fabench report [--run ID|LABEL|latest] [--db PATH] [--format md|csv|json|html]\n"
	"                      [--baseline KERNEL] [--output FILE] [--compare BASE[:HEAD]]\n"
	"                      [--no-plots] [--metric ms|tflops|gbps] [--layout wide|long]";

static void help(void)
{
	printf("%s\n\n"
	       "Writes the results of a stored run: one table per suite, rows are cases (the\n"
	       "parameters that vary), columns per kernel (median time and its noise, TFLOP/s\n"
	       "or GB/s, speedup against the baseline kernel, max error, status). Instances of\n"
	       "a kernel family (cuda_flash_mma_d72_pad80 of cuda_flash_mma) share the\n"
	       "family's column. Failures, errors and timeouts are listed first with their\n"
	       "reasons. Imported passes nobody checked are marked unchecked. A result that\n"
	       "failed, or whose baseline failed, gets no speedup: a wrong answer's time\n"
	       "says nothing.\n\n"
	       "options:\n"
	       "  --run SPEC        a run id, a label (its latest run) or latest (default)\n"
	       "  --db PATH         database (default results/fabench.db, or $FABENCH_DB)\n"
	       "  --format FMT      md (default), csv (one row per result; a backward result's\n"
	       "                    gradients in dq_*, dk_*, dv_* columns), json, or html (one\n"
	       "                    self-contained page with the plots as inline SVG)\n"
	       "  --baseline NAME   kernel the speedup is measured against, on the cases of\n"
	       "                    the passes it ran (default, and for the other passes:\n"
	       "                    the run's dense kernel of each pass, cpu_dense for\n"
	       "                    forward cases, cpu_dense_bwd for backward ones)\n"
	       "  --output FILE     write to FILE instead of standard output\n"
	       "  --compare B[:H]   html: add fabench compare B H (H defaults to the run)\n"
	       "  --no-plots        html: leave the plots out (they need gnuplot)\n"
	       "  --metric M        md, html: one column per kernel showing ms, tflops or gbps,\n"
	       "                    its noise and a word for a result that did not pass (fits\n"
	       "                    a PR comment); with --layout long (md or csv), that\n"
	       "                    metric's column in place of ms and throughput\n"
	       "  --layout L        wide (default) or long: md and csv with one row per case\n"
	       "                    and kernel (status, metric, instance, noise, stop reason)\n",
	       usage_text);
}

int fa_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"run", required_argument, 0, 'r'},      {"db", required_argument, 0, 'd'},
		{"format", required_argument, 0, 'f'},   {"baseline", required_argument, 0, 'b'},
		{"output", required_argument, 0, 'o'},   {"help", no_argument, 0, 'h'},
		{"compare", required_argument, 0, 'c'},  {"no-plots", no_argument, 0, 'P'},
		{"metric", required_argument, 0, 'm'},   {"layout", required_argument, 0, 'L'},
		{0, 0, 0, 0}};
	const char *run = "latest", *db = fa_cmd_default_db(), *output = NULL;
	struct fa_report_opts ro = {FA_FMT_MD, NULL, FA_METRIC_ALL, FA_LAYOUT_WIDE};
	struct fa_report_html_opts hro = {NULL, 1};
	struct fa_compare cmp;
	char *compare = NULL, *head;
	char run_text[32];
	struct fa_store *store = NULL;
	struct fa_err err;
	int64_t run_id;
	int c, status = FA_EXIT_OK;
	struct fa_cmd_out out;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': run = optarg; break;
		case 'd': db = optarg; break;
		case 'f':
			ro.format = fa_report_format_parse(optarg);
			if (ro.format < 0)
				return fa_cmd_usage_error("report", usage_text,
							  "--format '%s' must be md, csv, json or html",
							  optarg);
			break;
		case 'b': ro.baseline = optarg; break;
		case 'o': output = optarg; break;
		case 'c': compare = optarg; break;
		case 'P': hro.plots = 0; break;
		case 'm':
			ro.metric = fa_report_metric_parse(optarg);
			if (ro.metric < 0)
				return fa_cmd_usage_error("report", usage_text,
							  "--metric '%s' must be ms, tflops or gbps",
							  optarg);
			break;
		case 'L':
			ro.layout = fa_report_layout_parse(optarg);
			if (ro.layout < 0)
				return fa_cmd_usage_error("report", usage_text,
							  "--layout '%s' must be wide or long", optarg);
			break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("report", usage_text, c, argv);
		}
	}
	if (optind < argc)
		return fa_cmd_usage_error("report", usage_text, "unexpected argument '%s'",
					  argv[optind]);
	if (ro.layout == FA_LAYOUT_LONG && ro.format != FA_FMT_MD && ro.format != FA_FMT_CSV)
		return fa_cmd_usage_error("report", usage_text,
					  "--layout long applies to --format md and csv (json lists "
					  "every result already)");
	if (ro.metric != FA_METRIC_ALL && ro.format == FA_FMT_JSON)
		return fa_cmd_usage_error("report", usage_text,
					  "--metric applies to --format md, html and csv --layout long "
					  "(json holds every metric)");
	if (ro.metric != FA_METRIC_ALL && ro.format == FA_FMT_CSV && ro.layout != FA_LAYOUT_LONG)
		return fa_cmd_usage_error("report", usage_text,
					  "--metric applies to --format md, html and csv --layout long "
					  "(the csv holds every metric)");
	if (compare && ro.format != FA_FMT_HTML)
		return fa_cmd_usage_error("report", usage_text,
					  "--compare applies to --format html (for the others use "
					  "fabench compare)");
	memset(&cmp, 0, sizeof cmp);
	fa_err_clear(&err);
	if (fa_store_open_readonly(db, &store, &err) != FA_OK)
		return fa_cmd_fail("report", &err);
	if (fa_store_find_run(store, run, &run_id, &err) != FA_OK) {
		fa_store_close(store);
		return fa_cmd_fail("report", &err);
	}
	if (compare) {
		/* BASE:HEAD, or BASE alone against the report's run */
		if ((head = strchr(compare, ':')))
			*head++ = '\0';
		else
			snprintf(run_text, sizeof run_text, "%" PRId64, run_id);
		if (fa_compare_build(store, compare, head ? head : run_text, NULL, &cmp, &err) !=
		    FA_OK) {
			fa_store_close(store);
			return fa_cmd_fail("report", &err);
		}
		hro.compare = &cmp;
	}
	/* the file is written only when the report is whole: a bad --baseline
	 * (found while writing) leaves it as it was */
	if (fa_cmd_out_open("report", output, &out) != 0) {
		fa_compare_free(&cmp);
		fa_store_close(store);
		return FA_EXIT_FAIL;
	}
	if ((ro.format == FA_FMT_HTML ? fa_report_write_html(store, run_id, &ro, &hro, out.f, &err)
				      : fa_report_write(store, run_id, &ro, out.f, &err)) != FA_OK)
		status = fa_cmd_fail("report", &err);
	if (fa_cmd_out_close("report", &out, status == FA_EXIT_OK) != 0)
		status = FA_EXIT_FAIL;
	fa_compare_free(&cmp);
	fa_store_close(store);
	return status;
}
