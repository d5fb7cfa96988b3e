/* cmd_history.c - `fabench history`: every result over the stored runs, with
 * the steps in its medians, for the nightly job. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../report/history.h"
#include "../report/report.h"
#include "../report/stats.h"
#include "../store/store.h"
#include "../base/util.h"

static const char usage_text[] =
	"usage: fabench history [--db PATH] [--label TEXT] [--since DATE] [--suite NAME]\n"
	"                       [--kernel GLOB] [--where EXPR] [--include-incomplete]\n"
	"                       [--no-ab] [--min-effect PCT] [--format md|csv|json]\n"
	"                       [--output FILE]";

static void help(void)
{
	printf("%s\n\n"
	       "For each case and kernel (and kernel params, and side of a run --ab), the\n"
	       "series of its results over the runs, oldest first: the latest median, the\n"
	       "best, the change since the run before, and the steps where the medians\n"
	       "change level (change points on the medians, each weighted by its noise),\n"
	       "with the commits between the last run before a step and the first after it.\n"
	       "Only complete runs unless --include-incomplete.\n\n"
	       "options:\n"
	       "  --db PATH              database (default results/fabench.db, or $FABENCH_DB)\n"
	       "  --label TEXT           only runs with this label (e.g. nightly)\n"
	       "  --since DATE           only runs started on or after DATE (YYYY-MM-DD, or\n"
	       "                         YYYY-MM-DDTHH:MM[:SS][Z], UTC)\n"
	       "  --suite NAME           only runs of this suite\n"
	       "  --kernel GLOB          only kernels matching GLOB ('cuda_*')\n"
	       "  --where EXPR           only cases for which EXPR holds ('head_dim == 128')\n"
	       "  --include-incomplete   also runs that did not finish\n"
	       "  --no-ab                leave out the runs of run --ab (each of its sides\n"
	       "                         otherwise makes series of its own)\n"
	       "  --min-effect PCT       smallest step kept, in percent (default %g)\n"
	       "  --format FMT           md (default), csv (one line per point) or json\n"
	       "  --output FILE          write to FILE instead of standard output\n\n"
	       "exit status: 0 done, 1 a new regression (a step to slower times of more than\n"
	       "the minimum effect at the latest run) or an error reading the database, 2 bad\n"
	       "usage; see docs/compare.md\n",
	       usage_text, FA_STATS_MIN_EFFECT * 100);
}

int fa_cmd_history(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"db", required_argument, 0, 'd'},
		{"label", required_argument, 0, 'l'},
		{"since", required_argument, 0, 's'},
		{"suite", required_argument, 0, 'S'},
		{"kernel", required_argument, 0, 'k'},
		{"where", required_argument, 0, 'w'},
		{"include-incomplete", no_argument, 0, 'i'},
		{"no-ab", no_argument, 0, 'A'},
		{"min-effect", required_argument, 0, 'm'},
		{"format", required_argument, 0, 'f'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0}};
	const char *db = fa_cmd_default_db(), *output = NULL;
	struct fa_history_opts ho;
	struct fa_history h;
	struct fa_store *store = NULL;
	struct fa_err err;
	int c, format = FA_FMT_MD, status = FA_EXIT_OK, st;
	struct fa_cmd_out out;

	fa_history_opts_init(&ho);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'l': ho.label = optarg; break;
		case 's': ho.since = optarg; break;
		case 'S': ho.suite = optarg; break;
		case 'k': ho.kernel = optarg; break;
		case 'w': ho.where = optarg; break;
		case 'i': ho.include_incomplete = 1; break;
		case 'A': ho.no_ab = 1; break;
		case 'm':
			if ((st = fa_cmd_opt_min_effect("history", usage_text, optarg,
							&ho.min_effect)) != 0)
				return st;
			break;
		case 'f':
			if ((st = fa_cmd_opt_table_format("history", usage_text, optarg, &format)) != 0)
				return st;
			break;
		case 'o': output = optarg; break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("history", usage_text, c, argv);
		}
	}
	if (optind < argc)
		return fa_cmd_usage_error("history", usage_text, "unexpected argument '%s'",
					  argv[optind]);
	fa_err_clear(&err);
	if (fa_store_open_readonly(db, &store, &err) != FA_OK)
		return fa_cmd_fail("history", &err);
	if (fa_history_build(store, &ho, &h, &err) != FA_OK) {
		fa_store_close(store);
		return fa_cmd_fail("history", &err);
	}
	if (fa_cmd_out_open("history", output, &out) != 0) {
		fa_history_free(&h);
		fa_store_close(store);
		return FA_EXIT_FAIL;
	}
	if (fa_history_write(&h, format, out.f, &err) != FA_OK)
		status = fa_cmd_fail("history", &err);
	if (fa_cmd_out_close("history", &out, status == FA_EXIT_OK) != 0)
		status = FA_EXIT_FAIL;
	if (status == FA_EXIT_OK && h.n_new_regressions > 0) {
		fprintf(stderr, "fabench history: %d new regression%s at the latest run\n",
			h.n_new_regressions, h.n_new_regressions == 1 ? "" : "s");
		status = FA_EXIT_FAIL;
	}
	fa_history_free(&h);
	fa_store_close(store);
	return status;
}
