/* cmd_merge.c - `fabench merge`: the runs of several databases (the shards
 * of a CI matrix or a Slurm array, the nightly files of several hosts) in
 * one, for report, compare and history. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "../store/merge.h"

static const char usage_text[] =
	"usage: fabench merge A.db [B.db ...] -o OUT.db [--one-run [--label TEXT]]\n"
	"                     [--mixed-suites]";

static void help(void)
{
	printf("%s\n\n"
	       "Copies every run of the input databases into OUT.db (created when missing,\n"
	       "else added to): runs, cases, results, raw samples, every other table of a\n"
	       "run, and the calibrations OUT.db lacks, with ids renumbered. A run OUT.db\n"
	       "already holds (same start time, host, seed, suite hash, shard and command\n"
	       "line; label, for the two sides of a run --ab; and the uid each run draws\n"
	       "as it begins) is left out, so merging a database twice adds nothing; a\n"
	       "run finished by run --resume since it was merged gains the cases it\n"
	       "lacked. Each run keeps its host, device, shard and devices; each result\n"
	       "its device. Into an existing OUT.db the merge is first made in a copy\n"
	       "beside it, OUT.db.merge-HOST-PID: a refused input leaves OUT.db as it was\n"
	       "(a merge killed with kill -9 leaves its copy; the next merge into OUT.db\n"
	       "on the same host removes those whose process is gone). Then it is made in\n"
	       "OUT.db itself, an input at a time, each whole or not at all, so a run or\n"
	       "another merge writing to OUT.db meanwhile loses nothing, and the file\n"
	       "keeps its owner and mode. A new OUT.db is removed after an error.\n\n"
	       "options:\n"
	       "  -o, --output PATH  the database to write (required)\n"
	       "  --one-run          combine the runs copied into one run: the shards of one\n"
	       "                     job (run --shard K/N) become the run of the whole suite,\n"
	       "                     which compare and report then read as one. Its host,\n"
	       "                     shard and devices list every part's; it is complete only\n"
	       "                     when every part is. Refused when two parts hold the same\n"
	       "                     case, or come from suites with different hashes\n"
	       "  --label TEXT       with --one-run: the combined run's label (default: the\n"
	       "                     first part's)\n"
	       "  --mixed-suites     with --one-run: combine parts of different suite hashes\n"
	       "                     anyway\n\n"
	       "exit status: 0 merged, 1 a database fabench cannot read or write, 2 bad usage,\n"
	       "an input that does not exist, or parts --one-run refuses (nothing written)\n",
	       usage_text);
}

int fa_cmd_merge(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, 0, 'o'}, {"one-run", no_argument, 0, '1'},
		{"label", required_argument, 0, 'l'},  {"mixed-suites", no_argument, 0, 'm'},
		{"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
	struct fa_merge_opts opts;
	struct fa_merge_out out;
	struct fa_err err;
	const char *output = NULL;
	int c;
	memset(&opts, 0, sizeof opts);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case '1': opts.one_run = 1; break;
		case 'l':
			if (fa_cmd_check_text("merge", usage_text, "--label", optarg) != 0)
				return FA_EXIT_USAGE;
			opts.label = optarg;
			break;
		case 'm': opts.mixed_suites = 1; break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("merge", usage_text, c, argv);
		}
	}
	if (!output)
		return fa_cmd_usage_error("merge", usage_text, "missing -o OUT.db");
	if (optind >= argc)
		return fa_cmd_usage_error("merge", usage_text, "missing the databases to merge");
	if ((opts.label || opts.mixed_suites) && !opts.one_run)
		return fa_cmd_usage_error("merge", usage_text, "%s goes with --one-run only",
					  opts.label ? "--label" : "--mixed-suites");
	for (int i = optind; i < argc; i++)
		if (strcmp(argv[i], output) == 0)
			return fa_cmd_usage_error("merge", usage_text,
						  "'%s' is both an input and the output", output);
	fa_err_clear(&err);
	if (fa_store_merge(output, (const char *const *)argv + optind, argc - optind, &opts, &out,
			   &err) != FA_OK)
		return fa_cmd_fail("merge", &err);
	printf("%s: %d run%s added (%d case%s, %d result%s, %d sample%s), %d already there\n",
	       output, out.runs_added, out.runs_added == 1 ? "" : "s", out.cases_added,
	       out.cases_added == 1 ? "" : "s", out.results_added, out.results_added == 1 ? "" : "s",
	       out.samples_added, out.samples_added == 1 ? "" : "s", out.runs_duplicate);
	if (out.runs_topped_up)
		printf("%d run%s already there gained the cases %s lacked (resumed since)\n",
		       out.runs_topped_up, out.runs_topped_up == 1 ? "" : "s",
		       out.runs_topped_up == 1 ? "it" : "they");
	if (opts.one_run && out.runs_added)
		printf("combined run: %lld\n", (long long)out.run_id);
	if (out.old_copies)
		fprintf(stderr,
			"fabench merge: note: %d leftover cop%s named '%s.merge-PID' (from a killed "
			"merge of an older fabench, whose copies named no host: kept); remove %s if "
			"no merge into '%s' is running\n",
			out.old_copies, out.old_copies == 1 ? "y" : "ies", output,
			out.old_copies == 1 ? "it" : "them", output);
	return FA_EXIT_OK;
}
