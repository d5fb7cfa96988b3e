/* main.c - the command table and dispatch, nothing else. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"

#ifndef FA_VERSION
#define FA_VERSION "0.0.0"
#endif

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct cmd commands[] = {
	{"run", fa_cmd_run, "run a suite's cases, check them, store the results"},
	{"list", fa_cmd_list, "show a suite's expanded cases without running them"},
	{"kernels", fa_cmd_kernels, "list the registered kernels and what they support"},
	{"devices", fa_cmd_devices, "list the backends, their devices, and why one did not load"},
	{"report", fa_cmd_report, "tables of a stored run (markdown, CSV, JSON, HTML)"},
	{"calibrate", fa_cmd_calibrate, "measure this device's copy bandwidth and matrix rate"},
	{"compare", fa_cmd_compare, "two runs side by side, a verdict per result (PR table)"},
	{"history", fa_cmd_history, "each result over the runs, with steps (nightly job)"},
	{"plot", fa_cmd_plot, "charts of stored results through gnuplot (PNG, SVG)"},
	{"import", fa_cmd_import, "store results measured by other tools (JSON lines, CSV)"},
	{"merge", fa_cmd_merge, "the runs of several databases in one (CI shards, hosts)"},
	{"build-matrix", fa_cmd_build_matrix, "compile every kernel for every GPU target; the ISA grid"},
	{"tune", fa_cmd_tune, "settle a tunable from a sweep: best values, regret, a fitted rule"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: fabench [--version] [--help] COMMAND [ARGS]\n\n"
		   "fabench benchmarks and checks flash-attention kernels against a dense fp64\n"
		   "reference, and stores every result in SQLite.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'fabench COMMAND --help' describes a command.\n"
		   "exit status: 0 done (run: every case passed), 1 a case failed, errored or\n"
		   "timed out, a runtime error, or a regression found, 2 bad usage or input,\n"
		   "130 interrupted\n");
}

int main(int argc, char **argv)
{
	/* a file grown past the file-size limit (ulimit -f) fails its write
	 * (EFBIG), which each writer reports naming the file, instead of the
	 * signal killing the process mid-run without a word */
	signal(SIGXFSZ, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return FA_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("fabench %s\n", FA_VERSION);
		return FA_EXIT_OK;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return FA_EXIT_OK;
	}
	if (strcmp(argv[1], "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return FA_EXIT_OK;
		}
		char *help_argv[] = {argv[2], "--help", NULL};
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (strcmp(argv[2], commands[i].name) == 0)
				return commands[i].fn(2, help_argv);
		fprintf(stderr, "fabench: no command '%s'\n", argv[2]);
		return FA_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "fabench: '%s' is not a command; see 'fabench --help'\n", argv[1]);
	return FA_EXIT_USAGE;
}
