/* cmd_compare.c - `fabench compare BASE HEAD`: two runs side by side, with a
 * verdict per result from the samples, for a PR comment or a CI gate. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../report/compare.h"
#include "../report/report.h"
#include "../store/merge.h"
#include "../store/store.h"
#include "../base/util.h"

#include <unistd.h>

static const char usage_text[] =
	"usage: fabench compare [--db PATH] [--format md|csv|json] [--min-effect PCT]\n"
	"                       [--alpha P] [--fail-on-regression] [--ignore-params]\n"
	"                       [--output FILE] [--cross-device] [--only-changed]\n"
	"                       [--max-chars N] BASE HEAD";

static void help(void)
{
	printf("%s\n\n"
	       "Compares the results of HEAD with those of BASE, matched by case key, kernel\n"
	       "and kernel params: base and head medians, the speedup (base / head) and a\n"
	       "verdict per result: FASTER or SLOWER when the Mann-Whitney test on the samples\n"
	       "gives p < alpha and the bootstrap interval of the time ratio lies beyond the\n"
	       "minimum effect; same when it lies within; noisy when the samples cannot tell.\n"
	       "Results that passed in BASE and fail in HEAD are listed first; added, removed\n"
	       "and untimed results are counted. A summary gives the geometric-mean speedup\n"
	       "per kernel and per suite.\n\n"
	       "BASE and HEAD name runs: a run id; a label (every run with it, pooled);\n"
	       "latest; or a git commit prefix of at least %d hex digits (every run of it,\n"
	       "pooled). Pooled runs' samples are taken together. FILE.db:RUN names a run\n"
	       "(an id, latest, or the latest with a label) of another database, so base\n"
	       "and head measured by two CI jobs compare directly: both runs are copied\n"
	       "into a temporary database (run ids in the output are that database's).\n\n"
	       "options:\n"
	       "  --db PATH              database (default results/fabench.db, or $FABENCH_DB)\n"
	       "  --format FMT           md (default, for a PR comment), csv or json\n"
	       "  --min-effect PCT       smallest change reported, in percent (default %g)\n"
	       "  --alpha P              significance level of the rank test (default %g)\n"
	       "  --fail-on-regression   exit 1 when a result is SLOWER or newly fails, when\n"
	       "                         one timed in BASE is not timed in HEAD, or when no\n"
	       "                         result was timed on both sides\n"
	       "  --ignore-params        match by case and kernel only: compare one kernel\n"
	       "                         run with other tunables (--param) in HEAD\n"
	       "  --output FILE          write to FILE instead of standard output\n"
	       "  --max-chars N          markdown of at most N characters (a GitHub PR\n"
	       "                         comment holds 65536): timed rows are left out of\n"
	       "                         the tables, SLOWER kept first, then FASTER, and a\n"
	       "                         note says how many; the counts, the correctness\n"
	       "                         lines and the summary stay\n"
	       "  --only-changed         list only the rows that changed: FASTER, SLOWER,\n"
	       "                         broken, fixed, still failing, added, removed and\n"
	       "                         lost coverage (the counts and summary still cover\n"
	       "                         every row): a PR comment that fits\n"
	       "  --cross-device         compare runs measured on different GPU models\n"
	       "                         (refused otherwise: their times are not like for\n"
	       "                         like); the table says so\n\n"
	       "exit status: 0 done (no regression with --fail-on-regression), 1 a regression\n"
	       "with --fail-on-regression, or an error reading the database, 2 bad usage or\n"
	       "an unknown run; see docs/compare.md\n",
	       usage_text, FA_COMPARE_MIN_COMMIT_PREFIX, FA_CMP_MIN_EFFECT * 100, FA_STATS_ALPHA);
}

/* The temporary database of compare FILE.db:RUN (dir and its db). */
struct tmp_db {
	char dir[1024], path[1100];
};

static void tmp_db_remove(struct tmp_db *t)
{
	char p[1200];
	if (!t->dir[0])
		return;
	unlink(t->path);
	snprintf(p, sizeof p, "%s-wal", t->path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", t->path);
	unlink(p);
	rmdir(t->dir);
	t->dir[0] = '\0';
}

/* When BASE or HEAD is FILE.db:RUN, copies both runs (a plain spec from db)
 * into a temporary database and rewrites the specs to their ids there.
 * Returns FA_OK (t->dir "" when there was nothing to do), or an error. */
static enum fa_rc specs_from_files(const char *db, const char **spec, char ids[2][32],
				   struct tmp_db *t, struct fa_err *err)
{
	char file[2][1024];
	const char *run[2];
	int is_file[2];
	const char *tmp = getenv("TMPDIR");
	for (int i = 0; i < 2; i++) {
		is_file[i] = fa_store_spec_file(spec[i], file[i], sizeof file[i], &run[i]);
		if (!is_file[i]) {
			snprintf(file[i], sizeof file[i], "%s", db);
			run[i] = spec[i];
		}
	}
	t->dir[0] = '\0';
	if (!is_file[0] && !is_file[1])
		return FA_OK;
	snprintf(t->dir, sizeof t->dir, "%s/fabench-compare.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t->dir)) {
		t->dir[0] = '\0';
		return fa_err_set(err, FA_ERR_IO, "cannot make a temporary folder: %s",
				  strerror(errno));
	}
	snprintf(t->path, sizeof t->path, "%s/compare.db", t->dir);
	for (int i = 0; i < 2; i++) {
		int64_t id;
		enum fa_rc rc = fa_store_copy_run(t->path, file[i], run[i], &id, err);
		if (rc != FA_OK)
			return rc;
		snprintf(ids[i], sizeof ids[i], "%lld", (long long)id);
		spec[i] = ids[i];
	}
	return FA_OK;
}

/* The GPU model of a side's runs, or NULL when they differ among
 * themselves or are unknown. */
static const char *side_device(const struct fa_cmp_side *s)
{
	const char *d = s->n_runs > 0 ? s->runs[0].device_name : NULL;
	for (int i = 1; d && i < s->n_runs; i++)
		if (strcmp(s->runs[i].device_name, d) != 0)
			return NULL;
	return d && *d ? d : NULL;
}

int fa_cmd_compare(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"db", required_argument, 0, 'd'},
		{"format", required_argument, 0, 'f'},
		{"min-effect", required_argument, 0, 'm'},
		{"alpha", required_argument, 0, 'a'},
		{"fail-on-regression", no_argument, 0, 'F'},
		{"ignore-params", no_argument, 0, 'I'},
		{"cross-device", no_argument, 0, 'X'},
		{"only-changed", no_argument, 0, 'C'},
		{"max-chars", required_argument, 0, 'M'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0}};
	const char *db = fa_cmd_default_db(), *output = NULL;
	struct fa_compare_opts co;
	struct fa_compare cmp;
	struct fa_store *store = NULL;
	struct fa_err err;
	int c, format = FA_FMT_MD, gate = 0, status = FA_EXIT_OK, cross = 0, only_changed = 0, st;
	long max_chars = 0;
	const char *spec[2];
	char ids[2][32];
	struct tmp_db tmp = {"", ""};
	struct fa_cmd_out out;

	fa_compare_opts_init(&co);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'f':
			if ((st = fa_cmd_opt_table_format("compare", usage_text, optarg, &format)) != 0)
				return st;
			break;
		case 'm':
			if ((st = fa_cmd_opt_min_effect("compare", usage_text, optarg,
							&co.perf.min_effect)) != 0)
				return st;
			break;
		case 'a':
			if ((st = fa_cmd_opt_alpha("compare", usage_text, optarg, &co.perf.alpha)) != 0)
				return st;
			break;
		case 'F': gate = 1; break;
		case 'I': co.ignore_params = 1; break;
		case 'X': cross = 1; break;
		case 'C': only_changed = 1; break;
		case 'M': {
			char *end;
			errno = 0;
			max_chars = strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || max_chars < 1000)
				return fa_cmd_usage_error("compare", usage_text,
							  "--max-chars '%s' must be a whole number of "
							  "characters, at least 1000",
							  optarg);
			break;
		}
		case 'o': output = optarg; break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("compare", usage_text, c, argv);
		}
	}
	if (argc - optind < 2)
		return fa_cmd_usage_error("compare", usage_text, "BASE and HEAD are required");
	if (argc - optind > 2)
		return fa_cmd_usage_error("compare", usage_text, "unexpected argument '%s'",
					  argv[optind + 2]);
	if (max_chars && format != FA_FMT_MD) /* a cut CSV or JSON would not parse */
		return fa_cmd_usage_error("compare", usage_text,
					  "--max-chars goes with --format md only");
	fa_err_clear(&err);
	spec[0] = argv[optind];
	spec[1] = argv[optind + 1];
	if (specs_from_files(db, spec, ids, &tmp, &err) != FA_OK) {
		tmp_db_remove(&tmp);
		return fa_cmd_fail("compare", &err);
	}
	if (fa_store_open_readonly(tmp.dir[0] ? tmp.path : db, &store, &err) != FA_OK) {
		tmp_db_remove(&tmp);
		return fa_cmd_fail("compare", &err);
	}
	if (fa_compare_build(store, spec[0], spec[1], &co, &cmp, &err) != FA_OK) {
		fa_store_close(store);
		tmp_db_remove(&tmp);
		return fa_cmd_fail("compare", &err);
	}
	if (only_changed) {
		/* keep the rows that changed; the counts were made over all of them */
		int32_t n = 0;
		for (int32_t i = 0; i < cmp.n_rows; i++) {
			const struct fa_cmp_row *row = &cmp.rows[i];
			int timed = row->change == FA_CMP_TIMED, untimed = row->change == FA_CMP_UNTIMED;
			if ((timed && (row->verdict == FA_PERF_FASTER || row->verdict == FA_PERF_SLOWER)) ||
			    (!timed && !untimed) || row->lost)
				cmp.rows[n++] = *row;
		}
		cmp.n_rows = n;
	}
	/* the tables name the sides as given */
	cmp.base.spec = argv[optind];
	cmp.head.spec = argv[optind + 1];
	{
		const char *bd = side_device(&cmp.base), *hd = side_device(&cmp.head);
		if (bd && hd && strcmp(bd, hd) != 0 && !cross) {
			fprintf(stderr,
				"fabench compare: base '%s' ran on '%s', head '%s' on '%s': times of "
				"different GPU models do not compare; --cross-device compares them "
				"anyway\n",
				argv[optind], bd, argv[optind + 1], hd);
			fa_compare_free(&cmp);
			fa_store_close(store);
			tmp_db_remove(&tmp);
			return FA_EXIT_USAGE;
		}
	}
	if (fa_cmd_out_open("compare", output, &out) != 0) {
		fa_compare_free(&cmp);
		fa_store_close(store);
		tmp_db_remove(&tmp);
		return FA_EXIT_FAIL;
	}
	if ((max_chars ? fa_compare_write_md_fit(&cmp, max_chars, out.f, &err)
		       : fa_compare_write(&cmp, format, out.f, &err)) != FA_OK)
		status = fa_cmd_fail("compare", &err);
	if (fa_cmd_out_close("compare", &out, status == FA_EXIT_OK) != 0)
		status = FA_EXIT_FAIL;
	/* the gate: regressions, and lost coverage (a result that is no longer
	 * timed cannot show that it got slower; an empty comparison shows nothing) */
	if (status == FA_EXIT_OK && gate) {
		if (cmp.n_regressions > 0)
			fprintf(stderr,
				"fabench compare: %d regression%s (%d slower, %d newly failing) "
				"against base '%s'\n",
				cmp.n_regressions, cmp.n_regressions == 1 ? "" : "s",
				cmp.verdicts[FA_PERF_SLOWER], cmp.changes[FA_CMP_BROKEN],
				cmp.base.spec);
		if (cmp.n_lost > 0)
			fprintf(stderr,
				"fabench compare: coverage lost: %d result%s timed in base '%s' %s "
				"not timed in head (%d removed, %d not timed)\n",
				cmp.n_lost, cmp.n_lost == 1 ? "" : "s", cmp.base.spec,
				cmp.n_lost == 1 ? "is" : "are", cmp.lost_removed, cmp.lost_untimed);
		if (cmp.changes[FA_CMP_TIMED] == 0)
			fprintf(stderr,
				"fabench compare: no result was timed on both sides: nothing "
				"compared against base '%s'\n",
				cmp.base.spec);
		if (cmp.n_regressions > 0 || cmp.n_lost > 0 || cmp.changes[FA_CMP_TIMED] == 0)
			status = FA_EXIT_FAIL;
	}
	fa_compare_free(&cmp);
	fa_store_close(store);
	tmp_db_remove(&tmp);
	return status;
}
