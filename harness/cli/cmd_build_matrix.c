/* cmd_build_matrix.c - `fabench build-matrix`: compile every kernel source
 * for every target down to the ISA, store per kernel what the compiler said,
 * show the grid, and fail on a regression against an earlier run. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "../base/parallel.h"
#include "../base/util.h"
#include "../report/buildreport.h"
#include "../report/report.h"
#include "../run/buildmatrix.h"
#include "../store/buildstore.h"
#include "../store/store.h"

#ifndef FA_VERSION
#define FA_VERSION "0.0.0"
#endif

#define MAX_LIST 256

static const char usage_text[] =
	"usage: fabench build-matrix [--db PATH] [--label TEXT] [--targets LIST]\n"
	"                            [--source FILE]... [--root DIR] [--jobs N]\n"
	"                            [--nvcc PATH] [--clang PATH] [--cuobjdump PATH]\n"
	"                            [--rocm-device-lib-path DIR] [--keep DIR] [--quiet]\n"
	"                            [--fail-on REF] [--format md|csv|json] [--output FILE]\n"
	"       fabench build-matrix --report [--run REF] [--db PATH] [--fail-on REF]\n"
	"                            [--format md|csv|json] [--output FILE]";

static void help(void)
{
	printf("%s\n\n"
	       "Compiles every kernel source for every target down to the ISA, one job per\n"
	       "source and target on all cores, and stores per kernel what the compiler\n"
	       "reported: ok, or failed with the first error line; registers (AMD: VGPRs and\n"
	       "SGPRs), static shared memory / LDS, scratch and spills, and whether matrix\n"
	       "instructions (HMMA, HGMMA, v_mfma, v_wmma) are in the ISA. Then prints the\n"
	       "grid (kernel x target). Targets: gfx90a gfx942 gfx1100 gfx1151 gfx1201 with\n"
	       "clang++-19 (kernels/hip/, and the CUDA sources the HIP plugin shares once\n"
	       "kernels/hip/ exists), sm_80 sm_90a with nvcc (kernels/cuda/*.cu and\n"
	       "instances/; sm_90 when --targets names it: every H100/H200 runs the\n"
	       "plugin's sm_90a code). NVIDIA resources come from ptxas -v, the matrix instructions\n"
	       "from cuobjdump -sass (from the PTX where there is no cuobjdump); AMD both\n"
	       "from clang's assembly. A compiler that is not installed makes its jobs\n"
	       "'skipped: nvcc not found', not failed. Each job is stored as it finishes,\n"
	       "so a killed run keeps them (the run stays 'incomplete').\n\n"
	       "options:\n"
	       "  --db PATH              database (default results/fabench.db, or $FABENCH_DB)\n"
	       "  --label TEXT           a label for the build run (--run and --fail-on find it)\n"
	       "  --targets LIST         only these targets, comma separated (default all\n"
	       "                         but sm_90)\n"
	       "  --source FILE          compile FILE (.cu: CUDA targets; .hip, .cpp: HIP ones)\n"
	       "                         instead of the listed sources; repeatable\n"
	       "  --root DIR             the tree the listed sources are under (default .)\n"
	       "  --jobs N               compilers at once (default: $FABENCH_THREADS when set,\n"
	       "                         else the cores)\n"
	       "  --nvcc PATH            nvcc (default nvcc on PATH, else /usr/local/cuda/bin/nvcc)\n"
	       "  --clang PATH           the HIP compiler (default clang++-19 on PATH)\n"
	       "  --cuobjdump PATH       cuobjdump (default next to nvcc, else on PATH)\n"
	       "  --rocm-device-lib-path DIR  ROCm device bitcode; default: a folder of links\n"
	       "                         to the system's plus the oclc_isa_version files it lacks\n"
	       "  --keep DIR             keep the compilers' outputs (.cubin, .ptx, .s) in DIR\n"
	       "  --quiet                no progress lines on standard error\n"
	       "  --report               show a stored build run instead of compiling\n"
	       "  --run REF              with --report: the build run (latest, an id, a label;\n"
	       "                         default latest)\n"
	       "  --fail-on REF          compare with an earlier build run (latest, an id or a\n"
	       "                         label in --db, or a database file: its latest) and\n"
	       "                         fail on a regression: a kernel source that stopped\n"
	       "                         compiling for a target, new or larger spills or\n"
	       "                         scratch, matrix instructions gone\n"
	       "  --format FMT           md (the grid; default), csv or json (a row per unit\n"
	       "                         and per kernel)\n"
	       "  --output FILE          write the grid to FILE instead of standard output\n\n"
	       "exit status: 0 everything compiled (or was skipped) and no regression, 1 a\n"
	       "compile failed, a regression, or an error writing the database, 2 bad usage or\n"
	       "input (an unknown target, a missing source, an unknown REF); see\n"
	       "docs/build-matrix.md\n",
	       usage_text);
}

struct bm_ctx {
	struct fa_store *store;
	int64_t build_id;
	int quiet, n_failed;
	struct fa_err err;
};

static int on_done(void *arg, const struct fa_bm_job *j, int done, int total)
{
	struct bm_ctx *c = arg;
	if (fa_build_add(c->store, c->build_id, j, &c->err) != FA_OK)
		return 1;
	if (j->status == FA_BM_FAILED)
		c->n_failed++;
	if (c->quiet || j->status == FA_BM_SKIPPED)
		return 0;
	int width = snprintf(NULL, 0, "%d", total);
	if (j->status == FA_BM_OK)
		fprintf(stderr, "[%*d/%d] ok      %-8s %s: %d kernel%s (%.1f s)\n", width, done,
			total, j->arch, j->source, j->isa.n, j->isa.n == 1 ? "" : "s", j->compile_s);
	else
		fprintf(stderr, "[%*d/%d] FAILED  %-8s %s: %s\n", width, done, total, j->arch,
			j->source, j->error);
	return 0;
}

/* Splits a comma-separated list in place into items. Returns the count, or
 * -1 when there are more than max or an item is empty. */
static int split_list(char *s, const char **items, int max)
{
	int n = 0;
	for (char *tok = s;; ) {
		char *comma = strchr(tok, ',');
		if (comma)
			*comma = '\0';
		if (!*tok || n == max)
			return -1;
		items[n++] = tok;
		if (!comma)
			return n;
		tok = comma + 1;
	}
}

/* Loads the build run REF: from the database file REF when it is one (its
 * latest build run), else from db. */
static enum fa_rc load_ref(const char *db, const char *ref, struct fa_build_table *t,
			   struct fa_err *err)
{
	struct stat st;
	struct fa_store *s = NULL;
	int64_t id;
	enum fa_rc rc;
	int is_file = stat(ref, &st) == 0 && S_ISREG(st.st_mode);
	rc = fa_store_open_readonly(is_file ? ref : db, &s, err);
	if (rc == FA_ERR_NOT_FOUND && !is_file) {
		fa_err_clear(err);
		return fa_err_set(err, FA_ERR_NOT_FOUND,
				  "no build-matrix run '%s': no database '%s' and no such file", ref,
				  db);
	}
	if (rc != FA_OK)
		return rc;
	rc = fa_build_find(s, is_file ? "latest" : ref, &id, err);
	if (rc == FA_OK)
		rc = fa_build_load(s, id, t, err);
	fa_store_close(s);
	return rc;
}

static int write_out(const struct fa_build_table *t, int format, const char *output)
{
	struct fa_err err;
	struct fa_cmd_out out;
	int status = FA_EXIT_OK;
	fa_err_clear(&err);
	if (fa_cmd_out_open("build-matrix", output, &out) != 0)
		return FA_EXIT_FAIL;
	if (fa_build_report_write(t, format, out.f, &err) != FA_OK)
		status = fa_cmd_fail("build-matrix", &err);
	if (fa_cmd_out_close("build-matrix", &out, status == FA_EXIT_OK) != 0)
		status = FA_EXIT_FAIL;
	return status;
}

/* Runs the gate; prints its lines to stderr. Returns 1 on a regression. */
static int gate(const struct fa_build_table *ref, const struct fa_build_table *head,
		const char *ref_name)
{
	int n = fa_build_gate(ref, head, stderr);
	if (n) {
		fprintf(stderr, "fabench build-matrix: %d regression%s against build-matrix run "
				"%lld ('%s')\n",
			n, n == 1 ? "" : "s", (long long)ref->id, ref_name);
		return 1;
	}
	fprintf(stderr, "fabench build-matrix: no regression against build-matrix run %lld ('%s')\n",
		(long long)ref->id, ref_name);
	return 0;
}

int fa_cmd_build_matrix(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"db", required_argument, 0, 'd'},
		{"label", required_argument, 0, 'l'},
		{"targets", required_argument, 0, 't'},
		{"source", required_argument, 0, 's'},
		{"root", required_argument, 0, 'R'},
		{"jobs", required_argument, 0, 'j'},
		{"nvcc", required_argument, 0, 'N'},
		{"clang", required_argument, 0, 'C'},
		{"cuobjdump", required_argument, 0, 'O'},
		{"rocm-device-lib-path", required_argument, 0, 'L'},
		{"keep", required_argument, 0, 'k'},
		{"quiet", no_argument, 0, 'q'},
		{"report", no_argument, 0, 'r'},
		{"run", required_argument, 0, 'u'},
		{"fail-on", required_argument, 0, 'F'},
		{"format", required_argument, 0, 'f'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0}};
	const char *db = fa_cmd_default_db(), *output = NULL, *fail_on = NULL, *run_ref = NULL;
	const char *label = NULL, *sources[MAX_LIST], *targets[32];
	char targets_buf[512];
	struct fa_bm_opts o;
	struct fa_bm_plan plan;
	struct fa_build_table ref, head;
	struct bm_ctx ctx;
	int c, format = FA_FMT_MD, report_only = 0, status = FA_EXIT_OK, have_ref = 0, st;
	char *end;

	memset(&o, 0, sizeof o);
	memset(&ref, 0, sizeof ref);
	memset(&head, 0, sizeof head);
	memset(&ctx, 0, sizeof ctx);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'l': label = optarg; break;
		case 't':
			snprintf(targets_buf, sizeof targets_buf, "%s", optarg);
			o.n_targets = split_list(targets_buf, targets, 32);
			if (o.n_targets < 0 || strlen(optarg) >= sizeof targets_buf)
				return fa_cmd_usage_error("build-matrix", usage_text,
							  "--targets '%s' must be a comma-separated "
							  "list of targets",
							  optarg);
			o.targets = targets;
			break;
		case 's':
			if (o.n_sources == MAX_LIST)
				return fa_cmd_usage_error("build-matrix", usage_text,
							  "more than %d --source", MAX_LIST);
			sources[o.n_sources++] = optarg;
			o.sources = sources;
			break;
		case 'R': o.root = optarg; break;
		case 'j':
			errno = 0;
			o.jobs = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || o.jobs < 1 || o.jobs > 1024)
				return fa_cmd_usage_error("build-matrix", usage_text,
							  "--jobs '%s' must be an integer from 1 to 1024",
							  optarg);
			break;
		case 'N': o.nvcc = optarg; break;
		case 'C': o.clang = optarg; break;
		case 'O': o.cuobjdump = optarg; break;
		case 'L': o.device_libs = optarg; break;
		case 'k': o.workdir = optarg; break;
		case 'q': ctx.quiet = 1; break;
		case 'r': report_only = 1; break;
		case 'u': run_ref = optarg; break;
		case 'F': fail_on = optarg; break;
		case 'f':
			if ((st = fa_cmd_opt_table_format("build-matrix", usage_text, optarg,
							  &format)) != 0)
				return st;
			break;
		case 'o': output = optarg; break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("build-matrix", usage_text, c, argv);
		}
	}
	if (optind < argc)
		return fa_cmd_usage_error("build-matrix", usage_text, "unexpected argument '%s'",
					  argv[optind]);
	if (run_ref && !report_only)
		return fa_cmd_usage_error("build-matrix", usage_text,
					  "--run '%s' needs --report (a new run is compiled otherwise)",
					  run_ref);
	if (report_only && (o.sources || o.targets || label || o.workdir))
		return fa_cmd_usage_error("build-matrix", usage_text,
					  "--report shows a stored run: --source, --targets, --label "
					  "and --keep compile a new one");
	fa_err_clear(&ctx.err);

	if (report_only) {
		struct fa_store *s = NULL;
		int64_t id;
		if (fa_store_open_readonly(db, &s, &ctx.err) != FA_OK)
			return fa_cmd_fail("build-matrix", &ctx.err);
		if (fa_build_find(s, run_ref ? run_ref : "latest", &id, &ctx.err) != FA_OK ||
		    fa_build_load(s, id, &head, &ctx.err) != FA_OK) {
			fa_store_close(s);
			return fa_cmd_fail("build-matrix", &ctx.err);
		}
		fa_store_close(s);
		if (fail_on && load_ref(db, fail_on, &ref, &ctx.err) != FA_OK) {
			fa_build_table_free(&head);
			return fa_cmd_fail("build-matrix", &ctx.err);
		}
		status = write_out(&head, format, output);
		if (fail_on && gate(&ref, &head, fail_on) && status == FA_EXIT_OK)
			status = FA_EXIT_FAIL;
		fa_build_table_free(&ref);
		fa_build_table_free(&head);
		return status;
	}

	/* everything the user named is checked before the database is touched */
	if (fa_bm_plan_make(&o, &plan, &ctx.err) != FA_OK)
		return fa_cmd_fail("build-matrix", &ctx.err);
	if (fail_on) {
		if (load_ref(db, fail_on, &ref, &ctx.err) != FA_OK) {
			fa_bm_plan_free(&plan);
			return fa_cmd_fail("build-matrix", &ctx.err);
		}
		have_ref = 1;
	}
	if (!ctx.quiet) {
		int skipped[2] = {0, 0}, shown[2] = {0, 0};
		if (plan.notes[0])
			fprintf(stderr, "build-matrix: %s\n", plan.notes);
		for (int i = 0; i < plan.n_jobs; i++)
			skipped[plan.jobs[i].family] += plan.jobs[i].status == FA_BM_SKIPPED;
		for (int i = 0; i < plan.n_jobs; i++) {
			const struct fa_bm_job *j = &plan.jobs[i];
			if (j->status != FA_BM_SKIPPED || shown[j->family]++)
				continue;
			fprintf(stderr, "build-matrix: %s: %d compile%s skipped: %s\n",
				fa_bm_family_name(j->family), skipped[j->family],
				skipped[j->family] == 1 ? "" : "s", j->error);
		}
		fprintf(stderr, "build-matrix: %d compile%s on %d jobs (nvcc %s, clang %s, cuobjdump %s)\n",
			plan.n_jobs, plan.n_jobs == 1 ? "" : "s", o.jobs > 0 ? o.jobs : fa_cpu_threads(),
			plan.nvcc[0] ? plan.nvcc : "none", plan.clang[0] ? plan.clang : "none",
			plan.cuobjdump[0] ? plan.cuobjdump : "none: matrix instructions from the PTX");
	}
	{
		char commit[64], host[256], dirty[4096], tools[2200];
		char *git_rev[] = {"git", "rev-parse", "HEAD", NULL};
		char *git_st[] = {"git", "status", "--porcelain", "--untracked-files=no", NULL};
		char *cmdline = fa_join_argv(argc, argv);
		struct fa_build_info bi;
		memset(&bi, 0, sizeof bi);
		if (fa_run_capture(git_rev, commit, sizeof commit) != 0)
			commit[0] = '\0';
		bi.git_commit = commit;
		bi.git_dirty = commit[0] ? (fa_run_capture(git_st, dirty, sizeof dirty) == 0
						    ? dirty[0] != '\0'
						    : -1)
					 : -1;
		if (gethostname(host, sizeof host - 1) != 0)
			snprintf(host, sizeof host, "unknown");
		host[sizeof host - 1] = '\0';
		snprintf(tools, sizeof tools, "nvcc=%s clang=%s cuobjdump=%s",
			 plan.nvcc[0] ? plan.nvcc : "none", plan.clang[0] ? plan.clang : "none",
			 plan.cuobjdump[0] ? plan.cuobjdump : "none");
		bi.host = host;
		bi.label = label;
		bi.command_line = cmdline;
		bi.version = FA_VERSION;
		bi.tools = tools;
		if (fa_store_open(db, 1, &ctx.store, &ctx.err) != FA_OK ||
		    fa_build_begin(ctx.store, &bi, &ctx.build_id, &ctx.err) != FA_OK) {
			free(cmdline);
			fa_store_close(ctx.store);
			fa_bm_plan_free(&plan);
			fa_build_table_free(&ref);
			return fa_cmd_fail("build-matrix", &ctx.err);
		}
		free(cmdline);
	}
	if (fa_bm_execute(&plan, &o, on_done, &ctx, &ctx.err) != FA_OK ||
	    fa_build_end(ctx.store, ctx.build_id, &ctx.err) != FA_OK ||
	    fa_build_load(ctx.store, ctx.build_id, &head, &ctx.err) != FA_OK) {
		status = fa_cmd_fail("build-matrix", &ctx.err);
		goto out;
	}
	status = write_out(&head, format, output);
	if (ctx.n_failed) {
		fprintf(stderr, "fabench build-matrix: %d compile%s failed\n", ctx.n_failed,
			ctx.n_failed == 1 ? "" : "s");
		status = FA_EXIT_FAIL;
	}
	if (have_ref && gate(&ref, &head, fail_on))
		status = FA_EXIT_FAIL;
out:
	fa_store_close(ctx.store);
	fa_bm_plan_free(&plan);
	fa_build_table_free(&ref);
	fa_build_table_free(&head);
	return status;
}
