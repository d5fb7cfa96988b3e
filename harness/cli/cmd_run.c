/* cmd_run.c - `fabench run`: expand a suite, run every case on one backend,
 * commit each case as soon as it finishes, then summarise (and write a
 * report when asked). Input errors are found before the database is opened,
 * so a bad suite leaves it as it was. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../kernels/common/fa_rng.h"
#include "cmd.h"
#include "../run/crash.h"
#include "../run/data.h"
#include "../run/fleet.h"
#include "../run/isolate.h"
#include "../base/parallel.h"
#include "../base/text.h"
#include "../run/plan.h"
#include "../report/junit.h"
#include "../report/report.h"
#include "../run/runner.h"
#include "../store/store.h"
#include "../suite/suite.h"
#include "../base/util.h"

static const char usage_text[] =
	"usage: fabench run SUITE.yaml [--backend cpu|cuda|hip|auto] [--kernels GLOB,...]\n"
	"                  [--where EXPR] [--db PATH] [--label TEXT] [--seed N] [--dry-run]\n"
	"                  [--mem-budget SIZE] [--timeout SECONDS] [--cache cold-clean|cold|hot]\n"
	"                  [--threads N] [--param KERNEL.NAME=V[,V...]]... [--isolate]\n"
	"                  [--ab PLUGIN_A:PLUGIN_B | --ab-params] [--repeat N] [--dump DIR]\n"
	"                  [--report FILE] [--quiet] [--case KEY]... [--shard K/N]\n"
	"                  [--devices LIST|all] [--junit FILE] [--max-failures N]\n"
	"                  [--graph N]\n"
	"       fabench run [SUITE.yaml] --rerun-failed RUN | --resume RUN [--db PATH]";

static void help(void)
{
	printf("%s\n\n"
	       "Runs every case of SUITE.yaml on one backend: inputs drawn from a counter-based\n"
	       "RNG (seed printed; --seed replays), the output poisoned, one checked launch\n"
	       "against the dense fp64 reference, then timed samples until the stopping rule\n"
	       "holds. Each case is committed to the database as soon as it finishes.\n"
	       "Cases with pass: bwd or fwd_bwd run the backward kernels (dQ, dK, dV after\n"
	       "one forward; checked per gradient) and fwd cases the forward ones.\n\n"
	       "options:\n"
	       "  --backend NAME     cpu, cuda, hip or auto (default: the best one loaded)\n"
	       "  --kernels LIST     comma-separated kernel names or globs (cpu_flash,cuda_*)\n"
	       "  --where EXPR       keep only cases for which EXPR holds ('head_dim == 128')\n"
	       "  --db PATH          database (default results/fabench.db, or $FABENCH_DB)\n"
	       "  --label TEXT       a label for the run (compare and report find runs by it)\n"
	       "  --seed N           data seed, 1 or more (overrides the suite's)\n"
	       "  --dry-run          show what would run, with skip reasons; write nothing\n"
	       "  --mem-budget SIZE  skip kernels needing more memory (e.g. 8G; default 75%%\n"
	       "                     of the device's free memory)\n"
	       "  --timeout SECONDS  per case and kernel (overrides the suite's timeout_s)\n"
	       "  --cache MODE       cold-clean (GPUs' default: flush the L2 before each\n"
	       "                     sample and leave it holding clean lines, so the timed\n"
	       "                     kernel pays for no write-back of the flush), cold (the\n"
	       "                     flush leaves dirty lines: fabench's flush before\n"
	       "                     cold-clean) or hot (no flush); stored as each result's\n"
	       "                     timing\n"
	       "  --graph N          time N launches captured in one CUDA graph, the time\n"
	       "                     divided by N (overrides the suite's graph_launches; 0:\n"
	       "                     no graph): no launch latency per sample, as in a\n"
	       "                     model's step. With a cold cache the launches cycle\n"
	       "                     over copies of the case's Q, K, V and O, enough that\n"
	       "                     none finds its inputs in the L2 (timing graph-cold);\n"
	       "                     hot, they repeat one set (timing graph). A backend\n"
	       "                     without graphs (the CPU, HIP) times single launches,\n"
	       "                     and the header says so\n"
	       "  --threads N        CPU threads for kernels and the reference\n"
	       "  --param K.N=V,...  set tunable N of kernel K (a name or glob); several\n"
	       "                     values sweep it: the kernel runs once per combination\n"
	       "                     (fabench kernels lists the tunables)\n"
	       "  --ab A.so:B.so     load two builds of a backend plugin (files or build\n"
	       "                     folders), or of a kernel plugin (each side the\n"
	       "                     backend of --backend with one build's kernels),\n"
	       "                     and measure them on each case with their\n"
	       "                     samples taken in turn (each pair in a seeded random\n"
	       "                     order: A B, B A, ...), so drift of the machine hits\n"
	       "                     both alike; stored as two runs labelled\n"
	       "                     LABEL-a and LABEL-b (LABEL from --label, else ab).\n"
	       "                     A path may hold ':': the split is where both\n"
	       "                     sides exist (refused where two colons would both do).\n"
	       "                     --param a:K.N=V or b:K.N=V sets a tunable on one side;\n"
	       "                     both sides run on one set of buffers where the two\n"
	       "                     backends share host memory (FABENCH_AB_SHARE=0: not);\n"
	       "                     on a GPU each side has its own, and a coin flip per\n"
	       "                     round swaps them (FABENCH_AB_CROSS=0: not)\n"
	       "  --ab-params        the same, with one build: the backend of --backend (the\n"
	       "                     built-in CPU one, or a plugin's) on both sides, the\n"
	       "                     sides told apart by --param a:K.N=V and b:K.N=W;\n"
	       "                     compare them with fabench compare --ignore-params\n"
	       "  --repeat N         run the whole suite N times in this run (timing sanity:\n"
	       "                     the copies of a case share its key)\n"
	       "  --isolate          run each case in a worker process: a kernel that faults\n"
	       "                     is stored as error, one that hangs as timeout, and the\n"
	       "                     run goes on\n"
	       "  --dump DIR         write q, k, v, outputs and reference as .npy files\n"
	       "                     (backward cases: dO, dQ, dK, dV and their reference)\n"
	       "  --report FILE      write the markdown report of this run to FILE\n"
	       "  --quiet            no per-case progress lines\n"
	       "  --shard K/N        run share K of N of the cases (1 <= K <= N), chosen by a\n"
	       "                     hash of each case key: the same on every machine and\n"
	       "                     wherever the case stands in the suite file, so N jobs\n"
	       "                     (a CI matrix, a Slurm array) split a suite without\n"
	       "                     talking to each other; fabench merge joins their\n"
	       "                     databases (docs/ci.md)\n"
	       "  --devices LIST     one worker process per device (0,1,3 or all), pinned\n"
	       "                     to it (FABENCH_CUDA_DEVICE), that runs case after case\n"
	       "                     and keeps its plugin, context and warm state: no case\n"
	       "                     is timed while another of this run uses its GPU.\n"
	       "                     Cases are dealt longest first (the plan's estimate); a\n"
	       "                     worker that faults is stored as --isolate stores it and\n"
	       "                     replaced for the cases left; each result stores its\n"
	       "                     device. With --isolate, a fresh worker per case. With\n"
	       "                     --ab, one device (both sides of a pair on it)\n"
	       "  --junit FILE       also write the results as JUnit XML (one testcase per\n"
	       "                     case and kernel) for CI\n"
	       "  --case KEY         run only the case with this key (fabench list shows\n"
	       "                     them); repeatable, or several keys joined by commas\n"
	       "                     (a key starts with batch=)\n"
	       "  --rerun-failed RUN run again, as a new run, the cases of run RUN (an id,\n"
	       "                     a label or latest) that failed, errored or timed out,\n"
	       "                     with its suite file, seed and options, and only the\n"
	       "                     kernels that failed (unless --kernels)\n"
	       "  --max-failures N   stop once N cases have failed, errored or timed out\n"
	       "                     (1: at the first): the cases finished are stored, the\n"
	       "                     run stays incomplete and --resume finishes it (with\n"
	       "                     --resume and --rerun-failed: this command's limit, not\n"
	       "                     the stored run's)\n"
	       "  --resume RUN       finish an incomplete run: run the cases it has not\n"
	       "                     stored, with its suite file, seed and options, append\n"
	       "                     them to it and mark it complete (refused, status 1,\n"
	       "                     while another process is writing that run)\n"
	       "                     (both write --junit, --dump and --report files only\n"
	       "                     when this command names them, never where the stored\n"
	       "                     run's did)\n\n"
	       "At the end the failures are listed again (case, key, kernel, reason) with\n"
	       "the command that reruns just them.\n\n"
	       "exit status: 0 all passed (skips allowed), 1 a case failed, errored or timed\n"
	       "out, 2 bad usage or input (nothing written), 130 interrupted (finished cases\n"
	       "are kept; the run is marked incomplete)\n",
	       usage_text);
}

int64_t fa_cmd_run_last_id;

static volatile int g_cancel;

static void on_signal(int sig)
{
	g_cancel = 1;
	signal(sig, SIG_DFL); /* a second signal ends the process at once */
}

struct run_cli {
	const char *suite, *backend, *kernels, *where, *db, *label, *dump, *report;
	const char *seed_text, *budget_text, *timeout_text, *cache_text, *threads_text, *ab;
	const char *graph_text;
	int graph; /* --graph: > 0 launches per graph, -1 none, 0 the suite's */
	char *params[64];
	int n_params;
	uint64_t seed;
	int dry_run, quiet, threads, cache, isolate;
	int ab_params; /* --ab-params: one backend, two sets of params */
	int ab_same;   /* --ab-params with no param of a side: an A/A */
	double budget, timeout;
	int worker_fd, worker_case, worker_from; /* worker mode when worker_fd > 0 */
	int worker_serve; /* a staying worker: cases come as commands on worker_fd */
	int repeat; /* run the whole suite this many times (--repeat) */
	int max_failures; /* --max-failures: stop after this many (0: never) */
	char *case_args[64]; /* --case, as given */
	int n_case_args;
	const char *rerun, *resume; /* --rerun-failed RUN, --resume RUN */
	const char *shard_text, *devices_text, *junit; /* --shard, --devices, --junit */
	int shard_k, shard_n; /* 0/0: no --shard */
	/* the cases to run, by key (--case, or --rerun-failed's), NULL: all */
	char **keys;
	int n_keys;
};

/* Says, under the run's header, when --graph will time no graph on slot's
 * backend (a case whose copies do not fit falls back alone: its stored
 * timing says so). */
static void graph_note(const struct run_cli *o, const struct fa_backend_slot *s)
{
	const char *why = NULL;
	if (o->cache >= 0 && s->info.host_memory)
		printf("  --cache %s: backend %s times host memory (timing cpu): there is no device "
		       "cache to flush or keep\n",
		       o->cache == FA_CACHE_HOT ? "hot" : o->cache == FA_CACHE_COLD ? "cold" : "cold-clean",
		       s->name);
	if (o->graph <= 0)
		return;
	if (s->info.host_memory || !s->be.iface.graph_create)
		why = "has no graphs: every case is timed in single launches";
	else if (o->cache != FA_CACHE_HOT && !s->be.iface.graph_create_sets)
		why = "has no graphs over copies of the buffers (backend API 4's "
		      "graph_create_sets): cold cases are timed in single launches";
	else if (o->cache != FA_CACHE_HOT && s->info.l2_bytes <= 0)
		why = "does not say how large its L2 is, which sizes the copies: cold cases "
		      "are timed in single launches";
	if (why)
		printf("  --graph %d: backend %s %s\n", o->graph, s->name, why);
}

static int parse_args(int argc, char **argv, struct run_cli *o)
{
	static const struct option longopts[] = {
		{"backend", required_argument, 0, 'b'}, {"kernels", required_argument, 0, 'k'},
		{"where", required_argument, 0, 'w'},   {"db", required_argument, 0, 'd'},
		{"label", required_argument, 0, 'l'},   {"seed", required_argument, 0, 's'},
		{"dry-run", no_argument, 0, 'n'},       {"mem-budget", required_argument, 0, 'm'},
		{"timeout", required_argument, 0, 't'}, {"cache", required_argument, 0, 'c'},
		{"threads", required_argument, 0, 'j'}, {"dump", required_argument, 0, 'D'},
		{"report", required_argument, 0, 'r'},  {"quiet", no_argument, 0, 'q'},
		{"isolate", no_argument, 0, 'I'},       {"worker-fd", required_argument, 0, 'F'},
		{"param", required_argument, 0, 'P'},   {"ab", required_argument, 0, 'A'},
		{"ab-params", no_argument, 0, 'B'},
		{"repeat", required_argument, 0, 'R'},
		{"case", required_argument, 0, 'E'},
		{"rerun-failed", required_argument, 0, 'X'},
		{"resume", required_argument, 0, 'Z'},
		{"worker-case", required_argument, 0, 'C'},
		{"shard", required_argument, 0, 'S'},
		{"devices", required_argument, 0, 'V'},
		{"junit", required_argument, 0, 'J'},
		{"worker-from", required_argument, 0, 'K'},
		{"worker-serve", no_argument, 0, 'W'},
		{"max-failures", required_argument, 0, 'M'},
		{"graph", required_argument, 0, 'G'},
		{"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
	int c;
	char *end;
	memset(o, 0, sizeof *o);
	o->backend = "auto";
	o->db = fa_cmd_default_db();
	o->cache = -1;
	o->repeat = 1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': o->backend = optarg; break;
		case 'k': o->kernels = optarg; break;
		case 'w': o->where = optarg; break;
		case 'd': o->db = optarg; break;
		case 'l':
			if (fa_cmd_check_text("run", usage_text, "--label", optarg) != 0)
				return FA_EXIT_USAGE;
			o->label = optarg;
			break;
		case 's':
			o->seed_text = optarg;
			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg || optarg[0] == '-')
				return fa_cmd_usage_error("run", usage_text,
							  "--seed '%s' is not a positive integer",
							  optarg);
			if (o->seed == 0)
				return fa_cmd_usage_error("run", usage_text,
							  "--seed 0 is reserved; use 1 or more");
			break;
		case 'n': o->dry_run = 1; break;
		case 'm':
			o->budget_text = optarg;
			if (fa_parse_size(optarg, &o->budget) != 0 || o->budget <= 0)
				return fa_cmd_usage_error("run", usage_text,
							  "--mem-budget '%s' is not a size like 8G",
							  optarg);
			break;
		case 't':
			o->timeout_text = optarg;
			o->timeout = strtod(optarg, &end);
			if (*end || !(o->timeout > 0))
				return fa_cmd_usage_error("run", usage_text,
							  "--timeout '%s' must be a positive number",
							  optarg);
			break;
		case 'c':
			o->cache_text = optarg;
			if (strcmp(optarg, "cold-clean") == 0)
				o->cache = FA_CACHE_COLD_CLEAN;
			else if (strcmp(optarg, "cold") == 0)
				o->cache = FA_CACHE_COLD;
			else if (strcmp(optarg, "hot") == 0)
				o->cache = FA_CACHE_HOT;
			else
				return fa_cmd_usage_error("run", usage_text,
							  "--cache '%s' must be cold-clean, cold or hot",
							  optarg);
			break;
		case 'j':
			o->threads_text = optarg;
			o->threads = (int)strtol(optarg, &end, 10);
			if (*end || o->threads < 1 || o->threads > 4096)
				return fa_cmd_usage_error("run", usage_text,
							  "--threads '%s' must be 1 to 4096", optarg);
			break;
		case 'D': o->dump = optarg; break;
		case 'r': o->report = optarg; break;
		case 'q': o->quiet = 1; break;
		case 'I': o->isolate = 1; break;
		case 'P':
			if (o->n_params >= 64)
				return fa_cmd_usage_error("run", usage_text, "too many --param options");
			o->params[o->n_params++] = optarg;
			break;
		case 'A': o->ab = optarg; break;
		case 'B': o->ab_params = 1; break;
		case 'R':
			o->repeat = (int)strtol(optarg, &end, 10);
			if (*end || o->repeat < 1 || o->repeat > 1000)
				return fa_cmd_usage_error("run", usage_text,
							  "--repeat '%s' must be 1 to 1000", optarg);
			break;
		case 'M':
			errno = 0;
			o->max_failures = (int)strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->max_failures < 1 ||
			    o->max_failures > 1000000)
				return fa_cmd_usage_error("run", usage_text,
							  "--max-failures '%s' must be 1 to 1000000",
							  optarg);
			break;
		case 'G':
			errno = 0;
			o->graph_text = optarg;
			o->graph = (int)strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->graph < 0 || o->graph > 1000)
				return fa_cmd_usage_error("run", usage_text,
							  "--graph '%s' must be 0 to 1000", optarg);
			if (o->graph == 0)
				o->graph = -1;
			break;
		case 'E':
			if (o->n_case_args >= 64)
				return fa_cmd_usage_error("run", usage_text, "too many --case options");
			o->case_args[o->n_case_args++] = optarg;
			break;
		case 'X': o->rerun = optarg; break;
		case 'Z': o->resume = optarg; break;
		case 'S': {
			struct fa_err e;
			fa_err_clear(&e);
			o->shard_text = optarg;
			if (fa_fleet_parse_shard(optarg, &o->shard_k, &o->shard_n, &e) != FA_OK)
				return fa_cmd_usage_error("run", usage_text, "%s", e.msg);
			break;
		}
		case 'V': o->devices_text = optarg; break;
		case 'J': o->junit = optarg; break;
		case 'F': o->worker_fd = atoi(optarg); break;
		case 'C': o->worker_case = atoi(optarg); break;
		case 'K': o->worker_from = atoi(optarg); break;
		case 'W': o->worker_serve = 1; break;
		case 'h': help(); return -1;
		default:
			return fa_cmd_bad_option("run", usage_text, c, argv);
		}
	}
	if (o->rerun && o->resume)
		return fa_cmd_usage_error("run", usage_text,
					  "--rerun-failed and --resume do not go together");
	if (o->ab && o->ab_params)
		return fa_cmd_usage_error("run", usage_text,
					  "--ab and --ab-params do not go together: --ab compares two "
					  "builds, --ab-params two sets of params of one");
	if (o->ab_params)
		o->ab = "params"; /* the --ab path, one backend on both sides */
	if (o->resume && o->n_case_args)
		return fa_cmd_usage_error("run", usage_text,
					  "--resume runs the cases the run lacks; --case does not go "
					  "with it");
	if (o->ab && o->n_case_args)
		return fa_cmd_usage_error("run", usage_text, "--case does not go with --ab");
	if ((o->rerun || o->resume) && (o->ab || o->dry_run || o->where || o->n_params))
		return fa_cmd_usage_error("run", usage_text,
					  "%s takes the run's own options; %s does not go with it",
					  o->rerun ? "--rerun-failed" : "--resume",
					  o->ab ? (o->ab_params ? "--ab-params" : "--ab")
					  : o->dry_run ? "--dry-run"
					  : o->where ? "--where" : "--param");
	if (optind >= argc && !o->rerun && !o->resume)
		return fa_cmd_usage_error("run", usage_text, "missing SUITE.yaml");
	if (optind + 1 < argc)
		return fa_cmd_usage_error("run", usage_text, "unexpected argument '%s'",
					  argv[optind + 1]);
	o->suite = optind < argc ? argv[optind] : NULL;
	if (o->ab && (o->isolate || o->dry_run))
		return fa_cmd_usage_error("run", usage_text, "%s does not go with %s",
					  o->ab_params ? "--ab-params" : "--ab",
					  o->isolate ? "--isolate" : "--dry-run");
	for (int i = 0; !o->ab && i < o->n_params; i++)
		if ((o->params[i][0] == 'a' || o->params[i][0] == 'b') && o->params[i][1] == ':')
			return fa_cmd_usage_error("run", usage_text,
						  "--param '%s': a side (a: or b:) goes with --ab or "
						  "--ab-params only",
						  o->params[i]);
	for (int i = 0; i < o->n_params; i++) {
		const char *pp = o->params[i], *eq = strchr(pp, '=');
		if (pp[0] && pp[1] == ':' && pp[0] != 'a' && pp[0] != 'b')
			return fa_cmd_usage_error("run", usage_text,
						  "--param '%s': a side is a: or b:", pp);
		/* "8,,16" is not "8,16": a value left out by mistake */
		struct fa_err err;
		fa_err_clear(&err);
		if (eq && eq[1] && fa_list_check_items("--param", pp, eq + 1, "a value", &err) != FA_OK)
			return fa_cmd_fail("run", &err);
	}
	if (o->ab_params) {
		int sides = 0;
		for (int i = 0; i < o->n_params; i++) {
			const char *pp = o->params[i], *eq = strchr(pp, '=');
			if (!((pp[0] == 'a' || pp[0] == 'b') && pp[1] == ':'))
				continue;
			sides |= pp[0] == 'a' ? 1 : 2;
			if (eq && strchr(eq, ','))
				return fa_cmd_usage_error(
					"run", usage_text,
					"--param '%s': a side takes one value of a param; its samples "
					"are paired with the other side's",
					pp);
			for (int j = 0; j < i; j++)
				if (eq && strncmp(o->params[j], pp, (size_t)(eq - pp + 1)) == 0)
					return fa_cmd_usage_error("run", usage_text,
								  "--param '%s': side %c sets %.*s twice "
								  "(also '%s')",
								  pp, pp[0], (int)(eq - pp - 2), pp + 2,
								  o->params[j]);
		}
		o->ab_same = !sides; /* an A/A: the header says so */
	}
	if (o->ab && o->repeat > 1)
		return fa_cmd_usage_error("run", usage_text,
					  "--repeat does not go with %s: its samples are already "
					  "taken in turn; run the comparison again for another round",
					  o->ab_params ? "--ab-params" : "--ab");
	if (o->ab && !o->ab_params && !strchr(o->ab, ':'))
		return fa_cmd_usage_error("run", usage_text,
					  "--ab '%s' must name two plugins: A.so:B.so", o->ab);
	if (o->ab && !o->ab_params) {
		char a[1024], b[1024];
		if (fa_split_path_pair(o->ab, a, sizeof a, b, sizeof b) != 0)
			return fa_cmd_usage_error("run", usage_text,
						  "--ab '%s' splits into two existing paths at more "
						  "than one ':'; link or copy one of them to a path "
						  "without ':'",
						  o->ab);
	}
	return 0;
}

struct tally {
	int count[5];
	int failed_cases; /* cases with a kernel failed, errored or timed out */
};

/* Counts one case's results by status; 1 when one of them failed, errored
 * or timed out (the caller counts the case in failed_cases). */
static int tally_results(struct tally *t, const struct fa_result *res, int n)
{
	int failed = 0;
	for (int i = 0; i < n; i++) {
		t->count[res[i].status]++;
		failed |= res[i].status == FA_STATUS_FAIL || res[i].status == FA_STATUS_ERROR ||
			  res[i].status == FA_STATUS_TIMEOUT;
	}
	return failed;
}

/* What a run stopped by --max-failures prints. */
static void max_failures_note(const struct run_cli *o, int n_done, const char *runs)
{
	fprintf(stderr,
		"fabench run: stopping after %d failed case%s (--max-failures %d); the %d "
		"finished cases are stored (%s, incomplete)\n",
		o->max_failures, o->max_failures == 1 ? "" : "s", o->max_failures, n_done, runs);
}

/* "312 TFLOP/s", "41.2 GFLOP/s", "850 MFLOP/s": three significant digits. */
static void format_rate(double tflops, char *buf, size_t size)
{
	static const char *const units[] = {"TFLOP/s", "GFLOP/s", "MFLOP/s", "kFLOP/s"};
	int u = 0;
	while (u < 3 && tflops < 1.0 && tflops > 0) {
		tflops *= 1000;
		u++;
	}
	snprintf(buf, size, "%.3g %s", tflops, units[u]);
}

static void print_case_line(const struct fa_plan *plan, int ci, int step, int total,
			    const struct fa_case_kernel *ks, const struct fa_result *res, int n,
			    double done, double eta_s)
{
	printf("[%*d/%d] %s\n", (int)(total >= 1000 ? 4 : total >= 100 ? 3 : 2), step + 1, total,
	       plan->labels[ci] ? plan->labels[ci] : "");
	for (int i = 0; i < n; i++) {
		const struct fa_result *r = &res[i];
		/* a reason may hold a plugin's words (supports(), its strerror):
		 * no escape sequence of theirs reaches the terminal */
		char name[300], rate[32], why[sizeof r->reason];
		int swept = 0;
		for (int j = 0; j < n; j++)
			swept |= j != i && ks[j].k == ks[i].k;
		snprintf(name, sizeof name, swept ? "%s[%s]" : "%s", ks[i].k->name, ks[i].params_text);
		if ((r->status == FA_STATUS_PASS || r->status == FA_STATUS_FAIL) && r->t.n > 0) {
			char noise[32] = "";
			format_rate(r->tflops, rate, sizeof rate);
			/* the samples' relative stdev; '*': stopped short of the noise target */
			if (r->t.n >= 2 && r->t.mean_ms > 0) {
				double pct = 100.0 * r->t.stdev_ms / r->t.mean_ms;
				snprintf(noise, sizeof noise, pct < 9.95 ? "±%.1f%%" : "±%.0f%%", pct);
			}
			if (r->t.stop != FA_STOP_CONVERGED)
				strncat(noise, "*", sizeof noise - strlen(noise) - 1);
			/* a backward result: O of its forward kernel, then each
			 * gradient's max_abs (what a backward is checked on) */
			char e[4][16]; /* '-': no finite element to measure (the reason says) */
			const double ea[4] = {r->st.max_abs, r->st_grad[FA_GRAD_DQ].max_abs,
					      r->st_grad[FA_GRAD_DK].max_abs,
					      r->st_grad[FA_GRAD_DV].max_abs};
			for (int g = 0; g < 4; g++)
				snprintf(e[g], sizeof e[g], isnan(ea[g]) ? "-" : "%.2e", ea[g]);
			printf("      %-24s %-7s %10.4g ms %-*s %14s  max_abs %s%s", name,
			       fa_status_name(r->status), r->t.median_ms, noise[0] ? 9 : 8, noise, rate,
			       r->grad_checked ? "O " : "", e[0]);
			if (r->grad_checked)
				printf(" dQ %s dK %s dV %s", e[1], e[2], e[3]);
			if (r->status == FA_STATUS_FAIL)
				printf("  (%s)", fa_printable(r->reason, why, sizeof why));
			printf("\n");
		} else {
			printf("      %-24s %-7s %s\n", name, fa_status_name(r->status),
			       fa_printable(r->reason, why, sizeof why));
		}
	}
	if (eta_s >= 1)
		printf("      %.0f%% done, about %d:%02d left\n", 100.0 * done, (int)(eta_s / 60),
		       (int)fmod(eta_s, 60));
	fflush(stdout);
}

/* ---- what runs now: in the database and in the crash handler's message ---- */

struct running_mark {
	struct fa_store *store;
	int64_t run_id;
	const struct fa_case_kernel *ks;
	char what[1024]; /* "case 3/12 KEY" */
};

/* Marks the case as running, before anything of it runs: committed to the
 * run's row and kept for the crash handler; stdout is flushed so that the
 * lines before it survive a crash when output goes to a file. */
static void mark_case(struct running_mark *m, int step, int total, const struct fa_case *c,
		      const struct fa_case_kernel *ks, int isolated)
{
	struct fa_err e;
	fa_err_clear(&e);
	snprintf(m->what, sizeof m->what, "case %d/%d %s", step + 1, total, c->key);
	m->ks = ks;
	if (!isolated)
		fa_crash_set_case(m->what);
	fa_store_run_running(m->store, m->run_id, m->what, &e);
	fflush(stdout);
}

/* The runner's on_start: kernel i of the marked case starts. */
static void mark_kernel(void *vctx, const struct fa_case *c, int i)
{
	struct running_mark *m = vctx;
	char what[1024 + 80 + FA_PARAMS_TEXT_SIZE];
	struct fa_err e;
	(void)c;
	if (i < 0 || !m->ks)
		return;
	fa_err_clear(&e);
	snprintf(what, sizeof what, "%s kernel %s%s%s%s", m->what, m->ks[i].k->name,
		 m->ks[i].params_text[0] ? "[" : "", m->ks[i].params_text,
		 m->ks[i].params_text[0] ? "]" : "");
	fa_store_run_running(m->store, m->run_id, what, &e);
}

/* ---- --case, --rerun-failed, --resume ---- */

/* Appends the keys of one --case argument to *keys: one key, or several
 * joined by commas; a key's first parameter is batch= (fa_case_key), so a
 * comma followed by "batch=" starts the next one. Returns 0, -1 when out of
 * memory. */
static int split_case_arg(const char *arg, char ***keys, int *n)
{
	const char *p = arg;
	while (*p) {
		const char *end = p, *q;
		char **nk;
		for (q = p; (q = strchr(q, ',')); q++)
			if (strncmp(q + 1, "batch=", 6) == 0)
				break;
		end = q ? q : p + strlen(p);
		if (!(nk = realloc(*keys, ((size_t)*n + 1) * sizeof *nk)))
			return -1;
		*keys = nk;
		if (!(nk[*n] = strndup(p, (size_t)(end - p))))
			return -1;
		(*n)++;
		p = q ? q + 1 : end;
	}
	return 0;
}

static void free_keys(char **keys, int n)
{
	for (int i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

/* Splits a command line as fa_join_argv writes it (words; single quotes;
 * '\'' for a quote) into a malloc'd NULL-terminated argv whose strings live
 * in one block after it. NULL when out of memory or a quote is not closed. */
static char **split_command_line(const char *line, int *argc)
{
	size_t len = strlen(line), words = 1;
	char **v, *w;
	int n = 0, in_word = 0, quoted = 0;
	for (const char *p = line; *p; p++)
		words += *p == ' ';
	v = malloc((words + 1) * sizeof *v + len + words + 1);
	if (!v)
		return NULL;
	w = (char *)(v + words + 1);
	for (const char *p = line;; p++) {
		if (quoted) {
			if (!*p) {
				free(v);
				return NULL;
			}
			if (*p == '\'')
				quoted = 0;
			else
				*w++ = *p;
			continue;
		}
		if (!*p || *p == ' ') {
			if (in_word) {
				*w++ = '\0';
				in_word = 0;
			}
			if (!*p)
				break;
			continue;
		}
		if (!in_word) {
			v[n++] = w;
			in_word = 1;
		}
		if (*p == '\'')
			quoted = 1;
		else if (*p == '\\' && p[1])
			*w++ = *++p;
		else
			*w++ = *p;
	}
	v[n] = NULL;
	*argc = n;
	return v;
}

/* What --rerun-failed or --resume took from the stored run. */
struct stored {
	struct fa_stored_run sr;
	int64_t run_id;
	char **argv;       /* its command line, split */
	char seed_text[32];
	char *kernels;     /* --rerun-failed: the kernels that failed, joined */
};

static void stored_free(struct stored *sp)
{
	fa_stored_run_free(&sp->sr);
	free(sp->argv);
	free(sp->kernels);
}

/* --rerun-failed / --resume: reads the stored run and replaces *o by its
 * options (its command line read as run reads one), keeping --db, --quiet,
 * --report, --dump, --junit and the given suite file, with the run's seed; for a rerun,
 * --label and --kernels as given (default: the kernels that failed) and the
 * failed cases' keys. Returns -1 to go on, else the exit status. */
static int load_stored(struct run_cli *o, struct stored *sp)
{
	struct run_cli given = *o;
	const char *spec = o->rerun ? o->rerun : o->resume, *what;
	struct fa_store *store = NULL;
	struct fa_err err;
	int argc = 0;

	what = o->rerun ? "--rerun-failed" : "--resume";
	fa_err_clear(&err);
	if (fa_store_open_readonly(o->db, &store, &err) != FA_OK)
		return fa_cmd_fail("run", &err);
	if (fa_store_find_run(store, spec, &sp->run_id, &err) != FA_OK ||
	    fa_store_run_read(store, sp->run_id, o->rerun != NULL, &sp->sr, &err) != FA_OK) {
		fa_store_close(store);
		fa_cmd_fail("run", &err);
		return FA_EXIT_USAGE;
	}
	fa_store_close(store);
	if (sp->sr.ab || sp->sr.imported)
		return fa_cmd_usage_error("run", usage_text, "%s %s: run %lld %s", what, spec,
					  (long long)sp->run_id,
					  sp->sr.ab ? "is one side of a --ab run"
						    : "holds results imported from another tool");
	if (o->resume && strcmp(sp->sr.status, "complete") == 0)
		return fa_cmd_usage_error("run", usage_text, "--resume %s: run %lld is complete; "
							      "nothing to resume",
					  spec, (long long)sp->run_id);
	if (o->rerun && sp->sr.n_cases == 0) {
		printf("run %lld has no failed, errored or timed-out case: nothing to rerun\n",
		       (long long)sp->run_id);
		return FA_EXIT_OK;
	}
	sp->argv = split_command_line(sp->sr.command_line, &argc);
	if (!sp->argv || argc < 2 || strcmp(sp->argv[1], "run") != 0 ||
	    parse_args(argc - 1, sp->argv + 1, o) != 0 || o->rerun || o->resume || o->ab)
		return fa_cmd_usage_error("run", usage_text,
					  "%s %s: cannot read the command line of run %lld: '%s'",
					  what, spec, (long long)sp->run_id, sp->sr.command_line);
	o->db = given.db;
	o->quiet = given.quiet;
	/* files this command writes come from this command alone: a stored
	 * command line (perhaps from a merged or copied database) never
	 * chooses where a dump, JUnit file or report goes */
	o->report = given.report;
	o->dump = given.dump;
	o->junit = given.junit;
	o->max_failures = given.max_failures; /* this command's, not the stored run's */
	o->rerun = given.rerun;
	o->resume = given.resume;
	if (given.suite)
		o->suite = given.suite;
	snprintf(sp->seed_text, sizeof sp->seed_text, "%llu", (unsigned long long)sp->sr.seed);
	o->seed = sp->sr.seed;
	o->seed_text = sp->seed_text;
	o->n_case_args = 0;
	if (o->rerun) {
		size_t len = 1;
		o->label = given.label;
		for (int i = 0; i < sp->sr.n_kernels; i++)
			len += strlen(sp->sr.kernels[i]) + 1;
		if (!(sp->kernels = calloc(1, len)))
			return fa_cmd_usage_error("run", usage_text, "out of memory");
		for (int i = 0; i < sp->sr.n_kernels; i++)
			strcat(strcat(sp->kernels, i ? "," : ""), sp->sr.kernels[i]);
		o->kernels = given.kernels ? given.kernels : sp->kernels;
		o->keys = sp->sr.keys; /* owned by sp */
		o->n_keys = sp->sr.n_cases;
	}
	return -1;
}

/* Leaves out (sets skip[ci]) the cases outside --shard K/N. */
static void select_shard(const struct run_cli *o, const struct fa_suite *suite, char *skip)
{
	for (int ci = 0; o->shard_n > 0 && ci < suite->n_cases; ci++)
		if (fa_fleet_shard_of(suite->cases[ci].key, o->shard_n) != o->shard_k)
			skip[ci] = 1;
}

/* Which cases of the suite run: none are skipped unless o->keys names some
 * (then every key must name a case) or --shard takes a share. *skip is
 * malloc'd (one flag per case). Returns -1 to go on, else the exit status
 * (an unknown key). */
static int select_cases(const struct run_cli *o, const struct fa_suite *suite, char **skip)
{
	*skip = calloc((size_t)suite->n_cases + 1, 1);
	if (!*skip)
		return FA_EXIT_FAIL;
	if (!o->keys) {
		select_shard(o, suite, *skip);
		return -1;
	}
	memset(*skip, 1, (size_t)suite->n_cases);
	for (int k = 0; k < o->n_keys; k++) {
		int found = 0;
		for (int ci = 0; ci < suite->n_cases; ci++)
			if (strcmp(suite->cases[ci].key, o->keys[k]) == 0) {
				(*skip)[ci] = 0;
				found = 1;
			}
		if (!found)
			return fa_cmd_usage_error("run", usage_text,
						  "%s '%s' matches no case of suite %s (%s)",
						  o->rerun ? "failed case" : "--case", o->keys[k],
						  suite->name, suite->path);
	}
	select_shard(o, suite, *skip);
	return -1;
}

/* One failure of this run, listed again at its end. */
struct failure {
	int idx;
	char *key, *kernel, *reason;
	int status;
};

static void failures_add(struct failure **f, int *n, const struct fa_case *c, const char *kernel,
			 const struct fa_result *r)
{
	struct failure *nf;
	if (r->status != FA_STATUS_FAIL && r->status != FA_STATUS_ERROR &&
	    r->status != FA_STATUS_TIMEOUT)
		return;
	if (!(nf = realloc(*f, ((size_t)*n + 1) * sizeof *nf)))
		return; /* the list is a courtesy; the database has every result */
	*f = nf;
	nf[*n] = (struct failure){c->index, strdup(c->key), strdup(kernel), strdup(r->reason),
				  r->status};
	(*n)++;
}

/* The failures again, and the command that reruns them. */
static void failures_print(struct failure *f, int n, int64_t run_id, const char *db)
{
	char id[32], *cmd;
	char *argv[] = {"fabench", "run", "--rerun-failed", id, "--db", (char *)db};
	if (n == 0)
		return;
	char why[sizeof ((struct fa_result *)0)->reason];
	printf("\n%d failed (case, key, kernel, reason):\n", n);
	for (int i = 0; i < n; i++)
		printf("  case %d %s: %s %s: %s\n", f[i].idx + 1, f[i].key ? f[i].key : "",
		       f[i].kernel ? f[i].kernel : "",
		       f[i].status == FA_STATUS_FAIL ? "FAIL" : fa_status_name(f[i].status),
		       fa_printable(f[i].reason, why, sizeof why));
	snprintf(id, sizeof id, "%lld", (long long)run_id);
	cmd = fa_join_argv(6, argv);
	if (cmd)
		printf("rerun them: %s\n", cmd);
	free(cmd);
}

static void failures_free(struct failure *f, int n)
{
	for (int i = 0; i < n; i++) {
		free(f[i].key);
		free(f[i].kernel);
		free(f[i].reason);
	}
	free(f);
}

/* The command line a --rerun-failed run stores: the stored run's, with its
 * seed, its kernels and each case by --case, so that it replays alone. */
static char *rerun_command_line(const struct stored *sp, const struct run_cli *o)
{
	int n = 0, cap = 8 + 2 * o->n_keys;
	char **v, *line;
	for (char **a = sp->argv; *a; a++)
		cap++;
	if (!(v = calloc((size_t)cap, sizeof *v)))
		return NULL;
	for (char **a = sp->argv; *a; a++) {
		/* drop the stored --seed and --kernels: given again below */
		if ((strcmp(*a, "--seed") == 0 || strcmp(*a, "--kernels") == 0) && a[1]) {
			a++;
			continue;
		}
		v[n++] = *a;
	}
	v[n++] = "--seed";
	v[n++] = (char *)sp->seed_text;
	if (o->kernels) {
		v[n++] = "--kernels";
		v[n++] = (char *)o->kernels;
	}
	for (int k = 0; k < o->n_keys; k++) {
		v[n++] = "--case";
		v[n++] = o->keys[k];
	}
	line = fa_join_argv(n, v);
	free(v);
	return line;
}

/* ---- worker mode (--isolate's children) ---- */

struct worker_ctx {
	int fd, from;
	char *sent;
};

static void worker_on_start(void *vctx, const struct fa_case *c, int i)
{
	struct worker_ctx *w = vctx;
	(void)c;
	fa_isolate_send_start(w->fd, i < 0 ? -1 : w->from + i);
}

static void worker_on_result(void *vctx, const struct fa_case *c, int i, const struct fa_result *res)
{
	struct worker_ctx *w = vctx;
	struct fa_samples smp = {(double *)res->samples, res->samples ? res->t.n : 0, 0};
	(void)c;
	fa_isolate_send_result(w->fd, w->from + i, res, &smp);
	w->sent[i] = 1;
}

/* Runs kernels from `from` on of case ci in runner and reports over fd.
 * Returns the runner's code (FA_OK, FA_ERR_STICKY, ...); err says why. */
static enum fa_rc run_worker_case(struct fa_runner *runner, const struct fa_suite *suite,
				  const struct fa_plan *plan, struct worker_ctx *w, int ci,
				  int from, struct fa_err *err)
{
	int n = plan->n_kernels[ci] - from;
	struct fa_result *res = calloc((size_t)n, sizeof *res);
	struct fa_samples *smp = calloc((size_t)n, sizeof *smp);
	enum fa_rc rc;
	w->from = from;
	w->sent = calloc((size_t)n, 1);
	if (!res || !smp || !w->sent) {
		free(res);
		free(smp);
		free(w->sent);
		w->sent = NULL;
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
	}
	rc = fa_runner_run_case(runner, &suite->cases[ci], plan->kernels[ci] + from, n, res, smp,
				err);
	for (int i = 0; i < n; i++)
		if (!w->sent[i] && res[i].status >= 0 &&
		    (rc == FA_OK || res[i].status == FA_STATUS_SKIP))
			worker_on_result(w, &suite->cases[ci], i, &res[i]);
	for (int i = 0; i < n; i++)
		fa_samples_free(&smp[i]);
	free(res);
	free(smp);
	free(w->sent);
	w->sent = NULL;
	return rc;
}

/* Worker mode: runs kernels from o->worker_from on of case o->worker_case
 * (--isolate), or, with --worker-serve, case after case as the parent sends
 * them (--devices), reporting over o->worker_fd. Exit status 0 (a staying
 * worker: at the end of its input), 3 when the device became unusable, else
 * a failure. */
static int run_worker(const struct run_cli *o, const struct fa_suite *suite,
		      const struct fa_plan *plan, struct fa_runner_cfg *rcfg)
{
	struct fa_err err;
	struct fa_runner *runner;
	int ci = o->worker_case, from = o->worker_from, got = 1;
	struct worker_ctx w;
	enum fa_rc rc = FA_OK;
	memset(&w, 0, sizeof w);
	w.fd = o->worker_fd;
	rcfg->progress = worker_on_result;
	rcfg->on_start = worker_on_start;
	rcfg->progress_ctx = &w;
	fa_err_clear(&err);
	runner = fa_runner_new(plan->slot, rcfg, &err);
	if (!runner)
		return fa_cmd_fail("run", &err);
	for (;;) {
		if (o->worker_serve && (got = fa_isolate_read_command(o->worker_fd, &ci, &from)) <= 0)
			break;
		if (ci < 0 || ci >= suite->n_cases || from < 0 || from >= plan->n_kernels[ci]) {
			fprintf(stderr, "fabench run: worker: no case %d kernel %d\n", ci, from);
			fa_runner_free(runner);
			return FA_EXIT_USAGE;
		}
		fa_err_clear(&err);
		rc = run_worker_case(runner, suite, plan, &w, ci, from, &err);
		if (rc != FA_OK || !o->worker_serve)
			break;
		fa_isolate_send_done(o->worker_fd, ci);
	}
	if (got < 0)
		fprintf(stderr, "fabench run: worker: unreadable command from the parent\n");
	if (rc != FA_OK && rc != FA_ERR_STICKY)
		fa_cmd_fail("run", &err);
	fa_runner_free(runner);
	return rc == FA_ERR_STICKY ? FA_WORKER_STICKY
	       : rc == FA_OK && got >= 0 ? FA_EXIT_OK
					 : FA_EXIT_FAIL;
}

/* The worker's command line: what decides the cases and how they run. */
static const char **worker_argv(const struct run_cli *o, const char *backend)
{
	static const char *v[48];
	int n = 0;
	v[n++] = "fabench";
	v[n++] = "run";
	v[n++] = o->suite;
	v[n++] = "--backend";
	v[n++] = backend;
	v[n++] = "--quiet";
#define ADD(flag, val)          \
	if (val) {              \
		v[n++] = flag;  \
		v[n++] = val;   \
	}
	ADD("--kernels", o->kernels);
	ADD("--where", o->where);
	ADD("--seed", o->seed_text);
	ADD("--threads", o->threads_text);
	ADD("--timeout", o->timeout_text);
	ADD("--cache", o->cache_text);
	ADD("--graph", o->graph_text);
	ADD("--mem-budget", o->budget_text);
	ADD("--dump", o->dump);
	for (int i = 0; i < o->n_params && n < 36; i++) {
		v[n++] = "--param";
		v[n++] = o->params[i];
	}
#undef ADD
	v[n] = NULL;
	return v;
}

static void fill_run_info(struct fa_run_info *ri, const struct fa_suite *s,
			  const struct fa_backend_slot *slot, const struct run_cli *o, char *time_buf,
			  char *commit, char *host, const char *cmdline)
{
	char dirty[4096];
	char *git_rev[] = {"git", "rev-parse", "HEAD", NULL};
	char *git_st[] = {"git", "status", "--porcelain", "--untracked-files=no", NULL};
	memset(ri, 0, sizeof *ri);
	fa_time_iso(time_buf, 32);
	ri->started_at = time_buf;
	if (fa_run_capture(git_rev, commit, 64) != 0)
		commit[0] = '\0';
	ri->git_commit = commit;
	ri->git_dirty = -1;
	if (commit[0])
		ri->git_dirty = fa_run_capture(git_st, dirty, sizeof dirty) == 0 ? dirty[0] != '\0' : -1;
	if (gethostname(host, 255) != 0)
		snprintf(host, 256, "unknown");
	host[255] = '\0';
	ri->host = host;
	ri->backend = slot->name;
	ri->device_name = slot->info.name;
	ri->device_arch = slot->info.arch;
	ri->driver = slot->info.driver;
	ri->runtime = slot->info.runtime;
	ri->suite_path = s->path;
	ri->suite_name = s->name;
	ri->suite_hash = s->hash;
	ri->command_line = cmdline;
	ri->label = o->label ? o->label : "";
	ri->seed = s->seed;
	ri->version = FA_VERSION;
	ri->source = "fabench";
}

/* ---- --ab: two builds of a plugin, sampled in turn on each case ---- */

/* The fa_rng stream of the A/B sample order (0-2: tensors, 16-18: outliers,
 * 32: the checker's rows). */
#define AB_ORDER_STREAM 48u

/* A plugin path: the .so itself, or a build folder holding libfabench-*.so. */
static void plugin_path(const char *spec, char *buf, size_t size)
{
	static const char *const names[] = {"cuda", "hip", "test"};
	snprintf(buf, size, "%s", spec);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char p[1024];
		snprintf(p, sizeof p, "%s/libfabench-%s.so", spec, names[i]);
		if (access(p, R_OK) == 0) {
			snprintf(buf, size, "%s", p);
			return;
		}
	}
}

static int run_ab(const struct run_cli *o, struct fa_suite *suite, struct fa_registry *reg,
		  const char *skip, int argc, char **argv)
{
	char spec[2048], path[2][1024], label[2][256], time_buf[32], commit[64], host[256];
	const char *base = o->label ? o->label : "ab";
	struct fa_backend_slot *slot[2];
	struct fa_plan plan[2];
	struct fa_runner *runner[2] = {NULL, NULL};
	struct fa_store *store = NULL;
	int64_t run_id[2] = {0, 0};
	struct fa_err err;
	struct fa_runner_cfg rcfg;
	struct tally tal;
	int status = FA_EXIT_OK, n_done = 0, share, cross = 0, max_stop = 0;
	char *cmdline = NULL, share_why[512];
	const char *share_env = getenv("FABENCH_AB_SHARE");
	double t0 = fa_now_s();

	memset(plan, 0, sizeof plan);
	memset(&tal, 0, sizeof tal);
	fa_err_clear(&err);
	snprintf(spec, sizeof spec, "%s", o->ab);
	if (o->ab_params) {
		snprintf(path[0], sizeof path[0], "side a");
		snprintf(path[1], sizeof path[1], "side b");
	} else {
		char a[1024], b[1024];
		fa_split_path_pair(spec, a, sizeof a, b, sizeof b); /* checked in the options */
		plugin_path(a, path[0], sizeof path[0]);
		plugin_path(b, path[1], sizeof path[1]);
	}
	for (int i = 0; i < 2; i++) {
		/* --param applies to both sides; "a:" or "b:" in front, to one */
		char *side_params[64];
		int ns = 0;
		for (int j = 0; j < o->n_params; j++) {
			const char *pp = o->params[j];
			if ((pp[0] == 'a' || pp[0] == 'b') && pp[1] == ':') {
				if (pp[0] == 'a' + i)
					side_params[ns++] = (char *)pp + 2;
			} else {
				side_params[ns++] = (char *)pp;
			}
		}
		snprintf(label[i], sizeof label[i], "%s-%c", base, 'a' + i);
		if (o->ab_params) {
			/* one backend (--backend) on both sides, told apart by their params */
			enum fa_rc prc =
				i == 0 ? fa_plan_build(&plan[0], suite, reg, o->backend, o->kernels,
						       side_params, ns, &err)
				       : fa_plan_build_slot(&plan[1], suite, reg, slot[0], o->kernels,
							    side_params, ns, &err);
			if (prc != FA_OK) {
				status = fa_cmd_fail("run", &err);
				goto out;
			}
			slot[i] = plan[i].slot;
			/* what the side runs: its own params, for the header line */
			size_t used = 0;
			path[i][0] = '\0';
			for (int j = 0; j < o->n_params && used < sizeof path[i]; j++)
				if (o->params[j][0] == 'a' + i && o->params[j][1] == ':')
					used += (size_t)snprintf(path[i] + used, sizeof path[i] - used,
								 "%s--param %s", used ? " " : "",
								 o->params[j] + 2);
			if (!path[i][0])
				snprintf(path[i], sizeof path[i], "(no params of its own)");
			continue;
		}
		if (fa_plugin_file_is_kernel_plugin(path[i])) {
			/* two builds of a kernel plugin: each side the --backend
			 * backend with one build's kernels */
			struct fa_backend_slot *be;
			if (fa_plan_pick_backend(reg, o->backend, &be, &err) != FA_OK ||
			    fa_registry_load_kernel_side(reg, path[i], be, &err) != FA_OK) {
				status = fa_cmd_fail("run", &err);
				goto out;
			}
		} else if (fa_registry_load_plugin(reg, path[i], NULL, &err) != FA_OK) {
			status = fa_cmd_fail("run", &err);
			goto out;
		}
		slot[i] = &reg->slots[reg->n - 1];
		if (fa_plan_build_slot(&plan[i], suite, reg, slot[i], o->kernels, side_params, ns,
				       &err) != FA_OK) {
			status = fa_cmd_fail("run", &err);
			goto out;
		}
	}
	if (strcmp(slot[0]->name, slot[1]->name) != 0) {
		fprintf(stderr, "fabench run: --ab needs two builds of one backend; got %s and %s\n",
			slot[0]->name, slot[1]->name);
		status = FA_EXIT_USAGE;
		goto out;
	}
	if (plan[0].n_pairs == 0) {
		fprintf(stderr, "fabench run: nothing to run on backend %s\n", slot[0]->name);
		status = FA_EXIT_USAGE;
		goto out;
	}
	memset(&rcfg, 0, sizeof rcfg);
	rcfg.mem_budget_bytes = o->budget;
	rcfg.timeout_s = o->timeout;
	rcfg.cache = o->cache;
	rcfg.graph_launches = o->graph;
	rcfg.nthreads = o->threads > 0 ? o->threads : fa_cpu_threads();
	rcfg.cancel = &g_cancel;
	rcfg.interleave = 1;
	rcfg.stuck_exit = 1;
	for (int i = 0; i < 2; i++)
		if (!(runner[i] = fa_runner_new(slot[i], &rcfg, &err))) {
			status = fa_cmd_fail("run", &err);
			goto out;
		}
	/* side B runs on side A's buffers where it can, so that where the buffers
	 * lie cannot differ between the sides (docs/compare.md, "Shared buffers") */
	share = fa_runner_can_share(slot[0], slot[1], share_why, sizeof share_why);
	if (share && share_env && strcmp(share_env, "0") == 0) {
		share = 0;
		snprintf(share_why, sizeof share_why, "FABENCH_AB_SHARE=0");
	}
	printf("fabench %s: suite %s (%s), %d cases, A/B of %s, seed %llu (data and sample "
	       "order):\n  A %s\n  B %s\n",
	       FA_VERSION, suite->name, suite->path, suite->n_cases, slot[0]->name,
	       (unsigned long long)suite->seed, path[0], path[1]);
	if (o->ab_same)
		printf("  no --param of a side (a: or b:): both run the same settings, an A/A; "
		       "what compare shows is the noise\n");
	if (!share) {
		const char *cross_env = getenv("FABENCH_AB_CROSS");
		char cross_why[256];
		cross = fa_runner_can_cross(slot[0], slot[1], cross_why, sizeof cross_why);
		if (cross && cross_env && strcmp(cross_env, "0") == 0) {
			cross = 0;
			snprintf(cross_why, sizeof cross_why, "FABENCH_AB_CROSS=0");
		}
		if (cross)
			fa_runner_cross(runner[0], runner[1]);
		else if (strncmp(cross_why, "host memory", 11) != 0)
			snprintf(share_why + strlen(share_why), sizeof share_why - strlen(share_why),
				 "; nor swap them: %s", cross_why);
	}
	graph_note(o, slot[0]);
	if (share)
		printf("  both sides run on the same buffers\n");
	else if (cross)
		printf("  each side has its own buffers; a coin flip per round swaps them\n");
	else
		printf("  sides do not share buffers: %s\n", share_why);
	if (fa_store_open(o->db, 1, &store, &err) != FA_OK) {
		status = fa_cmd_fail("run", &err);
		goto out;
	}
	cmdline = fa_join_argv(argc + 1, argv - 1);
	char group[96];
	fa_time_iso(time_buf, sizeof time_buf);
	snprintf(group, sizeof group, "%s/%ld/%s", time_buf, (long)getpid(), base);
	for (int i = 0; i < 2; i++) {
		struct fa_run_info ri;
		struct run_cli oi = *o;
		oi.label = label[i];
		fill_run_info(&ri, suite, slot[i], &oi, time_buf, commit, host, cmdline ? cmdline : "");
		ri.ab_group = group; /* compare pairs the samples of these two runs */
		if (fa_store_run_begin(store, &ri, &run_id[i], &err) != FA_OK ||
		    ((o->shard_text || o->devices_text) &&
		     fa_store_run_fleet(store, run_id[i], o->shard_text,
					o->devices_text ? getenv("FABENCH_DEVICE") : NULL,
					&err) != FA_OK)) {
			status = fa_cmd_fail("run", &err);
			goto out;
		}
	}
	printf("runs %lld (%s) and %lld (%s) -> %s\n\n", (long long)run_id[0], label[0],
	       (long long)run_id[1], label[1], o->db);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (int ci = 0; ci < suite->n_cases && !g_cancel && !max_stop && status == FA_EXIT_OK;
	     ci++) {
		const struct fa_case *c = &suite->cases[ci];
		int case_failed = 0;
		struct fa_result *res[2] = {NULL, NULL};
		struct fa_samples *smp[2] = {NULL, NULL};
		enum fa_rc frc[2] = {FA_OK, FA_OK};
		int n[2] = {plan[0].n_kernels[ci], plan[1].n_kernels[ci]}, done[2] = {0, 0};
		if (skip && skip[ci]) /* outside --shard */
			continue;
		for (int side = 0; side < 2; side++) {
			res[side] = calloc((size_t)n[side] + 1, sizeof *res[side]);
			smp[side] = calloc((size_t)n[side] + 1, sizeof *smp[side]);
			if (!res[side] || !smp[side])
				frc[side] = fa_err_set(&err, FA_ERR_NOMEM, "out of memory");
		}
		/* both sides prepared, then their samples taken in turn, a round at a time.
		 * Which side goes first in a round is a coin flip from (the run's seed, the
		 * case, the round), so whatever the first or the second sample of a pair
		 * meets (caches the other left, its clock state) falls on both sides alike;
		 * the order follows from the stored seed (docs/compare.md). */
		if (share)
			fa_runner_share(runner[0], runner[1], plan[1].kernels[ci], n[1]);
		for (int side = 0; side < 2; side++)
			if (frc[side] == FA_OK)
				frc[side] = fa_runner_prepare(runner[side], c, plan[side].kernels[ci],
							      n[side], res[side], smp[side], &err);
		for (uint64_t round = 0; !g_cancel && ((frc[0] == FA_OK && !done[0]) ||
						     (frc[1] == FA_OK && !done[1]));
		     round++) {
			uint64_t flip = fa_rng_bits(suite->seed, AB_ORDER_STREAM,
						    ((uint64_t)ci << 32) + round);
			int first = (int)(flip >> 63);
			/* and, with swapped buffers, whether this round swaps them */
			for (int side = 0; cross && side < 2; side++)
				fa_runner_set_crossed(runner[side], (int)(flip >> 62) & 1);
			for (int k = 0; k < 2; k++) {
				int side = first ^ k;
				if (frc[side] == FA_OK && !done[side])
					frc[side] = fa_runner_sample(runner[side], &done[side], &err);
			}
		}
		/* B first: A frees the buffers both used */
		fa_runner_finish(runner[1]);
		fa_runner_finish(runner[0]);
		for (int side = 0; side < 2; side++) {
			if (g_cancel)
				continue;
			if (frc[side] == FA_OK || frc[side] == FA_ERR_STICKY) {
				if (fa_store_case_commit(store, run_id[side], c, res[side], n[side], NULL,
							 &err) != FA_OK) {
					status = fa_cmd_fail("run", &err);
				} else {
					/* a case counts once toward --max-failures, whichever
					 * side failed */
					case_failed |= tally_results(&tal, res[side], n[side]);
					fa_plan_tally_case(&plan[side], ci, res[side], n[side]);
					if (!o->quiet) {
						printf("%c ", 'A' + side);
						print_case_line(&plan[side], ci, ci, suite->n_cases,
								plan[side].kernels[ci], res[side],
								n[side], 0, -1);
					}
				}
				if (frc[side] == FA_ERR_STICKY) {
					fprintf(stderr, "fabench run: %s\n", err.msg);
					status = FA_EXIT_FAIL;
				}
			} else if (frc[side] != FA_ERR_CANCELLED) {
				status = fa_cmd_fail("run", &err);
			}
		}
		for (int side = 0; side < 2; side++) {
			for (int i = 0; smp[side] && i < n[side]; i++)
				fa_samples_free(&smp[side][i]);
			free(res[side]);
			free(smp[side]);
		}
		if (status == FA_EXIT_OK && !g_cancel)
			n_done++;
		tal.failed_cases += case_failed;
		if (status == FA_EXIT_OK && !g_cancel && case_failed && o->max_failures > 0 &&
		    tal.failed_cases >= o->max_failures) {
			char what[96];
			snprintf(what, sizeof what, "runs %lld and %lld", (long long)run_id[0],
				 (long long)run_id[1]);
			max_failures_note(o, n_done, what);
			max_stop = 1;
		}
	}
	for (int i = 0; i < 2; i++) {
		struct fa_err e2;
		fa_err_clear(&e2);
		fa_store_run_end(store, run_id[i],
				 g_cancel || max_stop || status != FA_EXIT_OK ? "incomplete" : "complete",
				 &e2);
	}
	if (g_cancel)
		status = FA_EXIT_SIGNAL;
	else if (status == FA_EXIT_OK &&
		 (tal.count[FA_STATUS_FAIL] || tal.count[FA_STATUS_ERROR] || tal.count[FA_STATUS_TIMEOUT]))
		status = FA_EXIT_FAIL;
	printf("\n%d cases on each side in %.1f s: %d pass, %d fail, %d skip, %d error, %d timeout\n",
	       n_done, fa_now_s() - t0, tal.count[FA_STATUS_PASS], tal.count[FA_STATUS_FAIL],
	       tal.count[FA_STATUS_SKIP], tal.count[FA_STATUS_ERROR], tal.count[FA_STATUS_TIMEOUT]);
	printf("results: %s (runs %lld and %lld)\ncompare: fabench compare --db %s%s %s %s\n",
	       o->db, (long long)run_id[0], (long long)run_id[1], o->db,
	       o->ab_params ? " --ignore-params" : "", label[0], label[1]);
out:
	for (int i = 0; i < 2; i++) {
		fa_runner_free(runner[i]);
		fa_plan_free(&plan[i]);
	}
	if (store)
		fa_store_close(store);
	free(cmdline);
	return status;
}

/* ---- the cases of a run, one step at a time, on one device or several ---- */

/* What run_step reads and updates; the pointers are fa_cmd_run's. Under
 * --devices the steps run on several threads: everything but the worker's
 * case itself is touched under fa_fleet_lock. */
struct run_state {
	const struct run_cli *o;
	const struct fa_suite *suite;
	struct fa_plan *plan;
	struct fa_store *store;
	struct fa_runner *runner; /* NULL under --isolate and --devices */
	int64_t run_id;
	struct running_mark *mark;
	struct tally *tal;
	struct failure **fails;
	int *n_fail, *n_done, *step_no, n_steps, *exit_status, *stopped;
	double t0;
	const char **worker_argv;
	struct fa_junit *junit;   /* --junit, else NULL */
	const int *steps;         /* run_devices: job -> step */
};

/* The stored idx of step `step` (--repeat numbers the copies after the
 * first). */
static int step_index(const struct fa_suite *suite, int step)
{
	return suite->cases[step % suite->n_cases].index + step / suite->n_cases * suite->n_cases;
}

/* Runs one step (a case, or a --repeat copy of one): in-process, or in
 * worker processes (--isolate; device >= 0: pinned to that device with
 * env_extra, under --devices, in the device's staying worker unless
 * --isolate), then stores, tallies and prints it. Returns 0 to go on, 1 to
 * stop the run. */
static int run_step(struct run_state *rs, int step, int device, const char *const *env_extra,
		    struct fa_isolate_worker *worker)
{
	const struct run_cli *o = rs->o;
	const struct fa_suite *suite = rs->suite;
	struct fa_plan *plan = rs->plan;
	int ci = step % suite->n_cases, rep = step / suite->n_cases;
	struct fa_case cc = suite->cases[ci];
	const struct fa_case *c = &cc;
	int n = plan->n_kernels[ci], fleet = device >= 0, stop = 0;
	struct fa_result *res;
	struct fa_samples *smp;
	struct fa_err err;
	enum fa_rc frc;
	cc.index = step_index(suite, step);
	fa_err_clear(&err);
	res = calloc((size_t)n, sizeof *res);
	smp = calloc((size_t)n, sizeof *smp);
	if (!res || !smp) {
		free(res);
		free(smp);
		fa_err_set(&err, FA_ERR_NOMEM, "out of memory");
		if (fleet)
			fa_fleet_lock();
		*rs->exit_status = fa_cmd_fail("run", &err);
		if (fleet)
			fa_fleet_unlock();
		return 1;
	}
	if (!fleet)
		mark_case(rs->mark, step, suite->n_cases * o->repeat, c, plan->kernels[ci], o->isolate);
	if (o->isolate || fleet) {
		struct fa_isolate_case ic;
		memset(&ic, 0, sizeof ic);
		ic.worker_argv = rs->worker_argv;
		ic.case_index = ci;
		ic.n_kernels = n;
		ic.kernels = plan->kernels[ci];
		ic.kernel_timeout_s = o->timeout > 0 ? o->timeout : c->measure->timeout_s;
		ic.setup_timeout_s = ic.kernel_timeout_s;
		ic.cancel = &g_cancel;
		ic.env_extra = env_extra;
		ic.worker = o->isolate ? NULL : worker;
		frc = fa_isolate_run_case(&ic, res, smp, &err);
		for (int i = 0; i < n; i++)
			if (res[i].flops == 0) { /* a result the worker could not send */
				res[i].flops = fa_problem_flops(&c->p, c->cu_seqlens_q, c->cu_seqlens_k,
								c->prefix_lens) *
					       fa_pass_flops_factor(c->pass);
				res[i].bytes = fa_problem_bytes(&c->p, c->cu_seqlens_q,
								c->cu_seqlens_k, c->pass);
				res[i].mem_bytes = fa_runner_mem_estimate(c, &plan->kernels[ci][i]);
				res[i].tel.sm_clock_mhz = res[i].tel.sm_clock_max_mhz = NAN;
				res[i].tel.temp_c = res[i].tel.power_w = NAN;
				res[i].tel.throttle_reasons = -1;
			}
	} else {
		frc = fa_runner_run_case(rs->runner, c, plan->kernels[ci], n, res, smp, &err);
	}
	if (fleet)
		fa_fleet_lock();
	if (frc == FA_OK || frc == FA_ERR_STICKY) {
		struct fa_err serr;
		fa_err_clear(&serr);
		if (fa_store_case_commit_dev(rs->store, rs->run_id, c, res, n, device, NULL, &serr) !=
		    FA_OK) {
			*rs->exit_status = fa_cmd_fail("run", &serr);
			frc = FA_ERR_DB;
		} else {
			int step_no = ++*rs->step_no;
			(*rs->n_done)++;
			int reached = tally_results(rs->tal, res, n) &&
				      ++rs->tal->failed_cases == o->max_failures;
			for (int i = 0; i < n; i++) {
				failures_add(rs->fails, rs->n_fail, c, plan->kernels[ci][i].k->name,
					     &res[i]);
				if (rs->junit)
					fa_junit_add(rs->junit, c, plan->labels[ci],
						     plan->kernels[ci][i].params_text, &res[i], device);
			}
			fa_plan_tally_case(plan, ci, res, n);
			if (!o->quiet) {
				double el = fa_now_s() - rs->t0;
				double done = rs->n_steps < suite->n_cases * o->repeat || fleet
						      ? (double)step_no / rs->n_steps
						      : (rep + fa_plan_progress(plan, ci)) / o->repeat;
				double eta = done > 0 && step_no < rs->n_steps ? el * (1.0 / done - 1.0)
									       : -1;
				print_case_line(plan, ci, step_no - 1, rs->n_steps, plan->kernels[ci], res,
						n, done, eta);
				if (fleet)
					printf("      on device %d\n", device);
			}
			if (reached && !*rs->stopped) {
				char what[64];
				snprintf(what, sizeof what, "run %lld", (long long)rs->run_id);
				max_failures_note(o, *rs->n_done, what);
				fprintf(stderr, "fabench run: finish it with: fabench run --resume %lld --db %s\n",
					(long long)rs->run_id, o->db);
				*rs->stopped = stop = 1;
			}
		}
	}
	if (frc == FA_OK && err.rc != FA_OK) /* e.g. a dump that failed */
		fprintf(stderr, "fabench run: warning: %s\n", err.msg);
	if (frc == FA_ERR_STICKY) {
		fprintf(stderr,
			"fabench run: the device is unusable after case %d: %s\n"
			"fabench run: stopping; the %d finished cases are stored (run %lld, "
			"incomplete); --isolate runs each case in its own process\n",
			ci, err.msg, *rs->n_done, (long long)rs->run_id);
		*rs->exit_status = FA_EXIT_FAIL;
		*rs->stopped = stop = 1;
	} else if (frc == FA_ERR_DB) {
		*rs->stopped = stop = 1;
	} else if (frc == FA_ERR_CANCELLED) {
		stop = 1;
	} else if (frc != FA_OK) {
		*rs->exit_status = fa_cmd_fail("run", &err);
		*rs->stopped = stop = 1;
	}
	if (fleet)
		fa_fleet_unlock();
	for (int i = 0; i < n; i++)
		fa_samples_free(&smp[i]);
	free(res);
	free(smp);
	return stop;
}

/* The environment of device slot i's workers. */
struct device_env {
	char cuda[40], hip[40], any[40];
	const char *v[4];
};

static struct device_env device_envs[FA_FLEET_MAX_DEVICES];
/* Each device's staying worker, started by its thread at its first case and
 * let go by it at FA_FLEET_JOB_END. */
static struct fa_isolate_worker device_workers[FA_FLEET_MAX_DEVICES];

static int device_job(void *ctx, int job, int slot, int device)
{
	struct run_state *rs = ctx;
	if (job == FA_FLEET_JOB_END) {
		fa_isolate_worker_stop(&device_workers[slot]);
		return 0;
	}
	return run_step(rs, rs->steps[job], device, device_envs[slot].v, &device_workers[slot]);
}

/* --devices: the steps still to run, dealt longest first (the plan's work
 * estimate) to one thread per device. Returns the exit status so far. */
static int run_devices(struct run_state *rs, const char *skip, const char *stored_idx)
{
	const struct fa_suite *suite = rs->suite;
	int devices[FA_FLEET_MAX_DEVICES], n_devices = 0, n = 0, total;
	int *steps;
	double *cost;
	struct fa_err err;
	fa_err_clear(&err);
	/* parsed (and refused, exit 2) before the database opened */
	fa_fleet_parse_devices(rs->o->devices_text, rs->plan->slot->name, devices, &n_devices, &err);
	total = suite->n_cases * rs->o->repeat;
	steps = malloc(sizeof *steps * (size_t)(total + 1));
	cost = malloc(sizeof *cost * (size_t)(total + 1));
	if (!steps || !cost) {
		free(steps);
		free(cost);
		fa_err_set(&err, FA_ERR_NOMEM, "out of memory");
		return fa_cmd_fail("run", &err);
	}
	for (int step = 0; step < total; step++) {
		int ci = step % suite->n_cases;
		if (rs->plan->n_kernels[ci] == 0 || skip[ci] ||
		    (stored_idx && stored_idx[step_index(suite, step)]))
			continue;
		steps[n] = step;
		cost[n++] = fa_plan_progress(rs->plan, ci) -
			    (ci > 0 ? fa_plan_progress(rs->plan, ci - 1) : 0);
	}
	for (int i = 0; i < n_devices; i++) {
		struct device_env *de = &device_envs[i];
		snprintf(de->cuda, sizeof de->cuda, "FABENCH_CUDA_DEVICE=%d", devices[i]);
		snprintf(de->hip, sizeof de->hip, "FABENCH_HIP_DEVICE=%d", devices[i]);
		snprintf(de->any, sizeof de->any, "FABENCH_DEVICE=%d", devices[i]);
		de->v[0] = de->cuda;
		de->v[1] = de->hip;
		de->v[2] = de->any;
		de->v[3] = NULL;
		fa_isolate_worker_init(&device_workers[i]);
	}
	rs->steps = steps;
	if (fa_fleet_deal(cost, n, devices, n_devices, device_job, rs, &g_cancel, &err) != FA_OK) {
		*rs->exit_status = fa_cmd_fail("run", &err);
		*rs->stopped = 1;
	}
	free(steps);
	free(cost);
	return *rs->exit_status;
}

int fa_cmd_run(int argc, char **argv)
{
	struct run_cli o;
	struct fa_suite suite;
	struct fa_registry reg;
	struct fa_plan plan;
	struct fa_err err;
	struct fa_store *store = NULL;
	struct fa_runner *runner = NULL;
	struct fa_runner_cfg rcfg;
	struct fa_run_info ri;
	struct tally tal;
	struct running_mark mark;
	struct run_state rs;
	struct fa_junit *junit = NULL;
	char devices_buf[4 * FA_FLEET_MAX_DEVICES] = "";
	int64_t run_id = 0;
	int rc = parse_args(argc, argv, &o), exit_status = FA_EXIT_OK, n_done = 0, stopped = 0;
	int n_fail = 0, n_steps = 0, step_no = 0;
	char time_buf[32], commit[64], host[256], *cmdline = NULL, *skip = NULL, *stored_idx = NULL;
	char **case_keys = NULL;
	int n_case_keys = 0;
	struct failure *fails = NULL;
	struct stored sp;
	double t0 = fa_now_s();

	if (rc != 0)
		return rc < 0 ? FA_EXIT_OK : rc;
	fa_err_clear(&err);
	memset(&suite, 0, sizeof suite);
	memset(&plan, 0, sizeof plan);
	memset(&tal, 0, sizeof tal);
	memset(&reg, 0, sizeof reg);
	memset(&sp, 0, sizeof sp);
	if (o.rerun || o.resume) {
		rc = load_stored(&o, &sp);
		if (rc >= 0) {
			stored_free(&sp);
			return rc;
		}
	}
	for (int i = 0; i < o.n_case_args; i++)
		if (split_case_arg(o.case_args[i], &case_keys, &n_case_keys) != 0) {
			free_keys(case_keys, n_case_keys);
			stored_free(&sp);
			return fa_cmd_usage_error("run", usage_text, "out of memory");
		}
	if (o.n_case_args) {
		o.keys = case_keys;
		o.n_keys = n_case_keys;
	}

	/* everything that can be wrong with the input is found before the database opens */
	if (fa_suite_load(o.suite, o.seed, &suite, &err) != FA_OK) {
		exit_status = fa_cmd_fail("run", &err);
		goto out_early;
	}
	if (o.where && fa_suite_filter(&suite, o.where, &err) != FA_OK) {
		exit_status = fa_cmd_fail("run", &err);
		goto out_early;
	}
	if ((rc = select_cases(&o, &suite, &skip)) >= 0) {
		exit_status = rc;
		goto out_early;
	}
	if (o.resume) {
		/* the same cases as when it started, or the stored ones mean others */
		if (strcmp(suite.hash, sp.sr.suite_hash) != 0) {
			exit_status = fa_cmd_usage_error(
				"run", usage_text,
				"--resume %s: suite %s changed since run %lld started (hash %s, now %s)",
				o.resume, suite.path, (long long)sp.run_id, sp.sr.suite_hash, suite.hash);
			goto out_early;
		}
		stored_idx = calloc((size_t)suite.n_cases * o.repeat + 1, 1);
		if (!stored_idx) {
			exit_status = FA_EXIT_FAIL;
			goto out_early;
		}
		for (int i = 0; i < sp.sr.n_cases; i++)
			if (sp.sr.idx[i] >= 0 && sp.sr.idx[i] < suite.n_cases * o.repeat)
				stored_idx[sp.sr.idx[i]] = 1;
	}
	if (o.where && suite.n_cases == 0) {
		fa_err_set(&err, FA_ERR_INPUT, "no case of suite %s matches --where '%s'", suite.name,
			   o.where);
		exit_status = fa_cmd_fail("run", &err);
		goto out_early;
	}
	if (o.ab && o.devices_text) {
		/* both sides of every pair on one device: the whole process is pinned
		 * to it before a plugin loads */
		int devs[FA_FLEET_MAX_DEVICES], nd = 0;
		char v[16];
		if (fa_fleet_parse_devices(o.devices_text, "cuda", devs, &nd, &err) != FA_OK) {
			exit_status = fa_cmd_usage_error("run", usage_text, "%s", err.msg);
			goto out_early;
		}
		if (nd != 1) {
			exit_status = fa_cmd_usage_error("run", usage_text,
							 "--ab runs on one device: --devices '%s' "
							 "names %d",
							 o.devices_text, nd);
			goto out_early;
		}
		snprintf(v, sizeof v, "%d", devs[0]);
		setenv("FABENCH_CUDA_DEVICE", v, 1);
		setenv("FABENCH_HIP_DEVICE", v, 1);
		setenv("FABENCH_DEVICE", v, 1);
	}
	if (fa_cmd_registry(&reg, &err) != FA_OK) {
		exit_status = fa_cmd_fail("run", &err);
		goto out_early;
	}
	if (o.ab) {
		exit_status = run_ab(&o, &suite, &reg, skip, argc, argv);
		goto out;
	}
	if (fa_plan_build(&plan, &suite, &reg, o.backend, o.kernels, o.params, o.n_params, &err) !=
	    FA_OK) {
		exit_status = fa_cmd_fail("run", &err);
		goto out;
	}
	if (o.worker_fd <= 0) {
		/* the cases this run takes: --case and --shard leave some out */
		int n_take = 0;
		char cases[96];
		for (int ci = 0; ci < suite.n_cases; ci++)
			n_take += !(skip && skip[ci]);
		if (n_take == suite.n_cases)
			snprintf(cases, sizeof cases, "%d case%s", suite.n_cases,
				 suite.n_cases == 1 ? "" : "s");
		else
			snprintf(cases, sizeof cases, "%d of its %d cases (%s)", n_take, suite.n_cases,
				 o.shard_n ? "--shard" : "--case");
		char dev[sizeof plan.slot->info.name];
		printf("fabench %s: suite %s (%s), %s, backend %s (%s), seed %llu\n", FA_VERSION,
		       suite.name, suite.path, cases, plan.slot->name,
		       fa_printable(plan.slot->info.name, dev, sizeof dev),
		       (unsigned long long)suite.seed);
		graph_note(&o, plan.slot);
	}
	if (plan.n_pairs == 0) {
		fprintf(stderr,
			"fabench run: nothing to run: no kernel of backend %s matches the suite's "
			"kernels%s%s\n",
			plan.slot->name, o.kernels ? " and --kernels " : "", o.kernels ? o.kernels : "");
		exit_status = FA_EXIT_USAGE;
		goto out;
	}
	if (o.devices_text && o.worker_fd <= 0) {
		int devs[FA_FLEET_MAX_DEVICES], nd;
		if (fa_fleet_parse_devices(o.devices_text, plan.slot->name, devs, &nd, &err) != FA_OK) {
			exit_status = fa_cmd_usage_error("run", usage_text, "%s", err.msg);
			goto out;
		}
		fa_fleet_devices_text(devs, nd, devices_buf, sizeof devices_buf);
	}
	if (o.junit && o.worker_fd <= 0 && !o.dry_run && !(junit = fa_junit_new(suite.name))) {
		fa_err_set(&err, FA_ERR_NOMEM, "out of memory");
		exit_status = fa_cmd_fail("run", &err);
		goto out;
	}

	memset(&rcfg, 0, sizeof rcfg);
	rcfg.mem_budget_bytes = o.budget;
	rcfg.timeout_s = o.timeout;
	rcfg.cache = o.cache;
	rcfg.graph_launches = o.graph;
	rcfg.nthreads = o.threads > 0 ? o.threads : fa_cpu_threads();
	rcfg.cancel = &g_cancel;
	rcfg.dump_dir = o.dump;
	rcfg.interleave = o.worker_fd <= 0; /* a worker's parent times each kernel in turn */
	memset(&mark, 0, sizeof mark);
	if (o.worker_fd <= 0 && !o.isolate) {
		rcfg.on_start = mark_kernel;
		rcfg.progress_ctx = &mark;
		rcfg.stuck_exit = 1;
	}
	if (o.worker_fd > 0) {
		exit_status = run_worker(&o, &suite, &plan, &rcfg);
		goto out;
	}
	/* under --devices only the workers touch a device: no runner here (its
	 * buffers would sit on a GPU that a worker times on) */
	if (!o.devices_text || o.dry_run) {
		runner = fa_runner_new(plan.slot, &rcfg, &err);
		if (!runner) {
			exit_status = fa_cmd_fail("run", &err);
			goto out;
		}
	}
	if (o.dry_run) {
		fa_plan_print_dry(&plan, &suite, runner, skip, stdout);
		goto out;
	}

	cmdline = o.rerun ? rerun_command_line(&sp, &o) : fa_join_argv(argc + 1, argv - 1);
	if (fa_store_open(o.db, 1, &store, &err) != FA_OK) {
		exit_status = fa_cmd_fail("run", &err);
		goto out;
	}
	if (o.resume) {
		struct fa_stored_run now;
		run_id = sp.run_id; /* append to it */
		/* claimed, then read again: a process that wrote the run since
		 * load_stored read it (the run itself, still going, or another
		 * resume) has either ended, its cases now stored, or refuses us */
		if (fa_store_run_claim(store, run_id, &err) != FA_OK ||
		    fa_store_run_read(store, run_id, 0, &now, &err) != FA_OK) {
			exit_status = fa_cmd_fail("run", &err);
			goto out;
		}
		if (strcmp(now.status, "complete") == 0) {
			fa_stored_run_free(&now);
			/* as load_stored says it of a run complete from the start */
			fa_err_set(&err, FA_ERR_USAGE, "--resume %s: run %lld is complete; nothing to "
						       "resume", o.resume, (long long)run_id);
			exit_status = fa_cmd_fail("run", &err);
			goto out;
		}
		for (int i = 0; i < now.n_cases; i++)
			if (now.idx[i] >= 0 && now.idx[i] < suite.n_cases * o.repeat)
				stored_idx[now.idx[i]] = 1;
		fa_stored_run_free(&now);
	} else {
		fill_run_info(&ri, &suite, plan.slot, &o, time_buf, commit, host,
			      cmdline ? cmdline : "");
		if (fa_store_run_begin(store, &ri, &run_id, &err) != FA_OK) {
			exit_status = fa_cmd_fail("run", &err);
			goto out;
		}
		if ((o.shard_text || o.devices_text) &&
		    fa_store_run_fleet(store, run_id, o.shard_text, devices_buf, &err) != FA_OK) {
			exit_status = fa_cmd_fail("run", &err);
			goto out;
		}
	}
	for (int step = 0; step < suite.n_cases * o.repeat; step++)
		n_steps += !skip[step % suite.n_cases] && !(stored_idx && stored_idx[step]);
	fa_cmd_run_last_id = run_id;
	if (o.resume)
		printf("run %lld -> %s: resumed, %d of %d cases to run%s\n", (long long)run_id, o.db,
		       n_steps, suite.n_cases * o.repeat, o.quiet ? "" : "\n");
	else if (o.rerun)
		printf("run %lld -> %s: the %d failed cases of run %lld again%s\n",
		       (long long)run_id, o.db, n_steps, (long long)sp.run_id, o.quiet ? "" : "\n");
	else
		printf("run %lld -> %s%s\n", (long long)run_id, o.db, o.quiet ? "" : "\n");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	mark.store = store;
	mark.run_id = run_id;
	if (!o.isolate)
		fa_crash_install();

	rs.o = &o;
	rs.suite = &suite;
	rs.plan = &plan;
	rs.store = store;
	rs.runner = runner;
	rs.run_id = run_id;
	rs.mark = &mark;
	rs.tal = &tal;
	rs.fails = &fails;
	rs.n_fail = &n_fail;
	rs.n_done = &n_done;
	rs.step_no = &step_no;
	rs.n_steps = n_steps;
	rs.exit_status = &exit_status;
	rs.stopped = &stopped;
	rs.t0 = t0;
	rs.worker_argv = worker_argv(&o, plan.slot->name);
	rs.junit = junit;
	if (o.devices_text) {
		exit_status = run_devices(&rs, skip, stored_idx);
	} else {
		for (int step = 0; step < suite.n_cases * o.repeat && !g_cancel; step++) {
			int ci = step % suite.n_cases;
			if (plan.n_kernels[ci] == 0 || skip[ci] ||
			    (stored_idx && stored_idx[step_index(&suite, step)]))
				continue;
			if (run_step(&rs, step, -1, NULL, NULL) != 0)
				break;
		}
	}
	fa_crash_set_case(NULL);
	if (g_cancel) {
		char id[32], *cmd;
		char *rargv[] = {"fabench", "run", "--resume", id, "--db", (char *)o.db};
		snprintf(id, sizeof id, "%lld", (long long)run_id);
		cmd = fa_join_argv(6, rargv);
		fprintf(stderr, "fabench run: interrupted; %d finished cases are stored in run %lld "
				"(marked incomplete)\nfabench run: finish it with: %s\n",
			n_done, (long long)run_id, cmd ? cmd : "fabench run --resume");
		free(cmd);
		exit_status = FA_EXIT_SIGNAL;
	}
	{
		/* complete: every case ran (failures included), nothing stopped it */
		int complete = !g_cancel && !stopped && exit_status != FA_EXIT_USAGE &&
			       (exit_status == FA_EXIT_OK || exit_status == FA_EXIT_FAIL);
		struct fa_err e2;
		fa_err_clear(&e2);
		if (fa_store_run_end(store, run_id, complete ? "complete" : "incomplete", &e2) != FA_OK)
			fa_cmd_fail("run", &e2);
	}
	if (tal.count[FA_STATUS_FAIL] || tal.count[FA_STATUS_ERROR] || tal.count[FA_STATUS_TIMEOUT])
		if (exit_status == FA_EXIT_OK)
			exit_status = FA_EXIT_FAIL;

	if (o.report && exit_status != FA_EXIT_SIGNAL) {
		struct fa_report_opts ro = {FA_FMT_MD, NULL, FA_METRIC_ALL, FA_LAYOUT_WIDE};
		struct fa_cmd_out out;
		struct fa_err e3;
		int ok;
		fa_err_clear(&e3);
		if (fa_cmd_out_open("run", o.report, &out) != 0) {
			if (exit_status == FA_EXIT_OK)
				exit_status = FA_EXIT_FAIL;
		} else {
			ok = fa_report_write(store, run_id, &ro, out.f, &e3) == FA_OK;
			if (!ok)
				fa_cmd_fail("run", &e3);
			if (fa_cmd_out_close("run", &out, ok) != 0 && exit_status == FA_EXIT_OK)
				exit_status = FA_EXIT_FAIL;
		}
	}
	if (junit) {
		struct fa_err e4;
		fa_err_clear(&e4);
		if (fa_junit_write(junit, o.junit, &e4) != FA_OK) {
			fa_cmd_fail("run", &e4);
			if (exit_status == FA_EXIT_OK)
				exit_status = FA_EXIT_FAIL;
		}
	}
	fa_plan_print_summary(&plan, &suite, stdout);
	failures_print(fails, n_fail, run_id, o.db);
	printf("\n%d case%s in %.1f s: %d pass, %d fail, %d skip, %d error, %d timeout\n", n_done,
	       n_done == 1 ? "" : "s", fa_now_s() - t0, tal.count[FA_STATUS_PASS], tal.count[FA_STATUS_FAIL],
	       tal.count[FA_STATUS_SKIP], tal.count[FA_STATUS_ERROR], tal.count[FA_STATUS_TIMEOUT]);
	printf("results: %s (run %lld)\n", o.db, (long long)run_id);
	if (o.report)
		printf("report:  %s\n", o.report);
	if (junit)
		printf("junit:   %s\n", o.junit);
	if (o.dump)
		printf("dumps:   %s\n", o.dump);
	printf("seed:    %llu (replay with --seed %llu)\n", (unsigned long long)suite.seed,
	       (unsigned long long)suite.seed);
out:
	fa_junit_free(junit);
	fa_runner_free(runner);
	if (store)
		fa_store_close(store);
	free(cmdline);
	fa_plan_free(&plan);
	fa_registry_free(&reg);
out_early:
	fa_suite_free(&suite);
	failures_free(fails, n_fail);
	free(skip);
	free(stored_idx);
	free_keys(case_keys, n_case_keys);
	stored_free(&sp);
	return exit_status;
}
