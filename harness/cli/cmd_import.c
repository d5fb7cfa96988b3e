/* cmd_import.c - `fabench import FILE`: results measured by other tools
 * (bench/peers/torch_sdpa.py, ...) stored beside fabench's, as a run of their
 * own or added to a fabench run so that one report shows both. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../store/import.h"
#include "../store/store.h"
#include "../base/util.h"

#ifndef FA_VERSION
#define FA_VERSION "0.0.0"
#endif

static const char usage_text[] =
	"usage: fabench import FILE [--db PATH] [--label TEXT] [--run-into ID|LABEL|latest]\n"
	"                      [--format auto|jsonl|csv]";

static void help(void)
{
	printf("%s\n\n"
	       "Stores results that another tool measured (PyTorch SDPA, FlexAttention, a\n"
	       "vendor's benchmark; see docs/peers.md and bench/peers/torch_sdpa.py). FILE is\n"
	       "JSON lines, one result per line, the first line optionally a run header\n"
	       "{\"run\": {\"source\": \"torch 2.11.0\", \"device_name\": ..., ...}}, or CSV with\n"
	       "a header row (\"# key: value\" lines above it give the run header).\n\n"
	       "Each row holds the case parameters (the names of suites: batch, heads,\n"
	       "kv_heads, q_len, kv_len, head_dim, dtype, mask, ...; missing ones take the\n"
	       "suite defaults), kernel, params (the kernel's tunables as fabench writes\n"
	       "them: block_q=16,block_k=64), status (pass, fail, skip, error, timeout; default\n"
	       "pass), reason, median_ms and/or samples (ms; n_samples 0, as a report\n"
	       "writes for a result nothing timed, is refused beside either), error\n"
	       "statistics (max_abs, rel_l2, ...) and timing (cold-clean, cold, hot, graph,\n"
	       "graph-cold, cpu); a backward case (pass bwd or fwd_bwd) may add each\n"
	       "gradient's statistics (dq_max_abs, dk_rel_l2, ..., or a report's \"grads\"\n"
	       "object). fabench computes the case key, FLOPs, bytes, TFLOP/s and GB/s,\n"
	       "and the time statistics from the samples.\n\n"
	       "The whole file is checked first: an error names FILE:LINE:COL, exits 2 and\n"
	       "writes nothing. Then everything is stored in one transaction.\n\n"
	       "options:\n"
	       "  --db PATH         database (default results/fabench.db, or $FABENCH_DB)\n"
	       "  --label TEXT      label of the new run (default: the header's)\n"
	       "  --run-into SPEC   add the rows to this run (id, label or latest) instead of\n"
	       "                    a new run: cases are matched by key, missing ones added,\n"
	       "                    so `fabench report --run SPEC` shows both in one table;\n"
	       "                    a row that contradicts the run (a result it holds for\n"
	       "                    the case and kernel, another depth or other layers of\n"
	       "                    a label of its case) is an error at FILE:LINE:COL, as\n"
	       "                    against the file's own rows: status 2, nothing written\n"
	       "                    (refused, status 1, while another process is writing\n"
	       "                    that run: the run itself or run --resume of it)\n"
	       "  --format FMT      auto (default: by the file name, else the content),\n"
	       "                    jsonl or csv\n",
	       usage_text);
}

int fa_cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"db", required_argument, 0, 'd'},       {"label", required_argument, 0, 'l'},
		{"run-into", required_argument, 0, 'r'}, {"format", required_argument, 0, 'f'},
		{"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
	const char *db = fa_cmd_default_db();
	struct fa_import_opts o = {NULL, NULL, NULL, FA_VERSION};
	struct fa_import_summary sum;
	struct fa_import im;
	struct fa_store *store = NULL;
	struct fa_err err;
	int c, format = FA_IMPORT_AUTO, status;
	char *cmdline;
	static const char *const status_words[] = {"pass",  "fail",    "skip",
						   "error", "timeout", "unchecked"};

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'l':
			if (fa_cmd_check_text("import", usage_text, "--label", optarg) != 0)
				return FA_EXIT_USAGE;
			o.label = optarg;
			break;
		case 'r': o.run_into = optarg; break;
		case 'f':
			if (strcmp(optarg, "auto") == 0)
				format = FA_IMPORT_AUTO;
			else if (strcmp(optarg, "jsonl") == 0)
				format = FA_IMPORT_JSONL;
			else if (strcmp(optarg, "csv") == 0)
				format = FA_IMPORT_CSV;
			else
				return fa_cmd_usage_error("import", usage_text,
							  "--format '%s' must be auto, jsonl or csv",
							  optarg);
			break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("import", usage_text, c, argv);
		}
	}
	if (optind >= argc)
		return fa_cmd_usage_error("import", usage_text, "missing FILE");
	if (optind + 1 < argc)
		return fa_cmd_usage_error("import", usage_text, "unexpected argument '%s'",
					  argv[optind + 1]);
	if (o.label && o.run_into)
		return fa_cmd_usage_error("import", usage_text,
					  "--label names a new run; --run-into adds to an existing one");

	/* the whole file first: nothing is opened or written for a bad one */
	fa_err_clear(&err);
	if (fa_import_read(argv[optind], format, &im, &err) != FA_OK)
		return fa_cmd_fail("import", &err);
	cmdline = fa_join_argv(argc + 1, argv - 1);
	o.command_line = cmdline;
	if (fa_store_open(db, o.run_into == NULL, &store, &err) != FA_OK) {
		free(cmdline);
		fa_import_free(&im);
		return fa_cmd_fail("import", &err);
	}
	if (fa_import_store(store, &im, &o, &sum, &err) != FA_OK) {
		status = fa_cmd_fail("import", &err);
	} else {
		int first = 1;
		if (sum.note[0])
			fprintf(stderr, "fabench import: note: %s\n", sum.note);
		printf("imported %d result%s of %d case%s from %s into run %" PRId64, sum.results,
		       sum.results == 1 ? "" : "s", im.n_cases, im.n_cases == 1 ? "" : "s", im.path,
		       sum.run_id);
		if (sum.into)
			printf(" (%d case%s matched, %d added)", sum.cases_matched,
			       sum.cases_matched == 1 ? "" : "s", sum.cases_added);
		else
			printf(" (new run, source '%s')", im.run.source ? im.run.source : "import");
		printf(":");
		for (int k = 0; k < 6; k++)
			if (sum.by_status[k]) {
				printf("%s %d %s", first ? "" : ",", sum.by_status[k], status_words[k]);
				first = 0;
			}
		printf("\n");
		status = FA_EXIT_OK;
	}
	fa_store_close(store);
	free(cmdline);
	fa_import_free(&im);
	return status;
}
