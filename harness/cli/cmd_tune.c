/* cmd_tune.c - `fabench tune`: settle a kernel's tunable from a sweep, the
 * stored one of --run RUN or one run first through `fabench run`. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "../report/compare.h"
#include "../report/plot.h"
#include "../report/report.h"
#include "../report/tune.h"
#include "../store/store.h"
#include "../base/text.h"
#include "../base/util.h"

static const char usage_text[] =
	"usage: fabench tune --run RUN [--kernel K] [--param P] [options]\n"
	"       fabench tune SUITE.yaml --kernel K --param P=V1,V2,... [--backend B]\n"
	"                    [--label TEXT] [options]";

static void help(void)
{
	printf("%s\n\n"
	       "Settles a kernel's tunable from a sweep (one kernel run with several values\n"
	       "of one param): per case, the fastest value, the values tied with it (not\n"
	       "significantly slower: the Mann-Whitney test and bootstrap interval of compare\n"
	       "on the stored samples) and how much faster it is than the built-in value\n"
	       "(auto); the regret of the built-in value and of each --rule (how much slower\n"
	       "than each case's best: geometric mean, worst case, cases over --loss); and\n"
	       "with --by, a rule fitted to the run: thresholds on the named case parameters\n"
	       "(a decision tree of depth <= --depth minimizing the summed log regret),\n"
	       "printed as a rule expression and, with --header, as a C header.\n\n"
	       "With SUITE.yaml the sweep is run first (as fabench run SUITE --kernels K\n"
	       "--param K.P=V1,V2,...; the built-in value is added when missing) and\n"
	       "stored, then tuned; run's progress goes to standard error.\n\n"
	       "options:\n"
	       "  --run RUN          the sweep to read: run id, label (its latest run) or latest\n"
	       "  --kernel K         the tuned kernel, by its exact name (default: the one with\n"
	       "                     the most param sets)\n"
	       "  --param P[=V,...]  the tuned param, one (default: the one that varies);\n"
	       "                     with SUITE, the values to sweep; K.P is P when K is\n"
	       "                     --kernel's\n"
	       "  --auto V           the built-in value (default: the kernel's default, when\n"
	       "                     the kernel is registered here)\n"
	       "  --rule EXPR        a candidate rule, a number-valued expression over case\n"
	       "                     parameters: 'kv_len >= 16k ? 16 : 4' (repeatable, %d at most)\n"
	       "  --by X,Y           fit a rule on these case parameters (or expressions);\n"
	       "                     --by X --by Y is --by X,Y\n"
	       "  --depth N          the fitted rule's depth, 1 to %d (default %d)\n"
	       "  --loss PCT         list the cases a rule makes more than PCT%% slower (default %g)\n"
	       "  --min-effect PCT   smallest difference that is not a tie (default %g)\n"
	       "  --alpha P          significance level of the tie test (default %g)\n"
	       "  --where EXPR       tune on the cases for which EXPR holds\n"
	       "  --format FMT       md (default), csv or json\n"
	       "  --output FILE      write the report to FILE instead of standard output\n"
	       "  --header FILE      write the fitted rule as a C header (needs --by)\n"
	       "  --heatmap FILE     draw the sweep (.png or .svg, through gnuplot) with the\n"
	       "                     choice of the fitted rule (else the last --rule, else\n"
	       "                     auto) ringed in each case's row\n"
	       "  --db PATH          database (default results/fabench.db, or $FABENCH_DB)\n"
	       "  --backend B        with SUITE: the backend to run on (default auto)\n"
	       "  --label TEXT       with SUITE: the label of the sweep's run\n\n"
	       "exit status: 0 done, 1 an error reading or writing, no gnuplot for --heatmap\n"
	       "(found before anything runs) or, with SUITE, a case of the sweep failed;\n"
	       "2 bad usage or input; see docs/tuning.md\n",
	       usage_text, FA_TUNE_MAX_RULES, FA_TUNE_MAX_DEPTH, FA_TUNE_DEFAULT_DEPTH,
	       FA_TUNE_DEFAULT_LOSS * 100, FA_CMP_MIN_EFFECT * 100, FA_STATS_ALPHA);
}

static int parse_int(const char *s, long lo, long hi, long *v)
{
	char *end;
	errno = 0;
	*v = strtol(s, &end, 10);
	return end == s || *end || errno || *v < lo || *v > hi ? -1 : 0;
}

/* The default value of kernel's param from the registry into *v; 0, or -1
 * when the kernel or param is not registered here. */
static int registered_default(const char *kernel, const char *param, int32_t *v)
{
	struct fa_registry reg;
	struct fa_err err;
	struct fa_backend_slot *slot = NULL;
	int found = -1;
	fa_err_clear(&err);
	if (fa_cmd_registry(&reg, &err) != FA_OK)
		return -1;
	const struct fa_kernel *k = fa_registry_kernel(&reg, kernel, &slot);
	for (int i = 0; k && i < k->n_params; i++)
		if (strcmp(k->params[i].name, param) == 0) {
			*v = k->params[i].default_value;
			found = 0;
		}
	fa_registry_free(&reg);
	return found;
}

/* Runs the sweep through `fabench run` with its output on standard error;
 * returns run's exit status. */
static int run_sweep(const char *suite, const char *db, const char *kernel, const char *param,
		     const char *values, int has_auto, int32_t auto_value, const char *backend,
		     const char *label, const char *where)
{
	char spec[2304], kv[1024];
	char *argv[20];
	int argc = 0, status;
	/* fa_cmd_run stores its command line from argv[-1] on: "fabench run ..." */
	argv[argc++] = "fabench";
	int listed = 0;
	/* the built-in value, unless listed */
	if (has_auto) {
		char *copy = strdup(values), *save = NULL;
		if (!copy)
			return FA_EXIT_FAIL;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			long x;
			if (parse_int(tok, INT32_MIN, INT32_MAX, &x) == 0 && x == auto_value)
				listed = 1;
		}
		free(copy);
	}
	if (has_auto && !listed)
		snprintf(kv, sizeof kv, "%s,%" PRId32, values, auto_value);
	else
		snprintf(kv, sizeof kv, "%s", values);
	snprintf(spec, sizeof spec, "%.600s.%.600s=%s", kernel, param, kv);
	argv[argc++] = "run";
	argv[argc++] = (char *)suite;
	argv[argc++] = "--db";
	argv[argc++] = (char *)db;
	argv[argc++] = "--kernels";
	argv[argc++] = (char *)kernel;
	argv[argc++] = "--param";
	argv[argc++] = spec;
	if (backend) {
		argv[argc++] = "--backend";
		argv[argc++] = (char *)backend;
	}
	if (label) {
		argv[argc++] = "--label";
		argv[argc++] = (char *)label;
	}
	if (where) {
		argv[argc++] = "--where";
		argv[argc++] = (char *)where;
	}
	argv[argc] = NULL;
	fflush(stdout);
	int saved = dup(1);
	if (saved < 0 || dup2(2, 1) < 0)
		return FA_EXIT_FAIL;
	status = fa_cmd_run(argc - 1, argv + 1);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	if (status == FA_EXIT_USAGE) { /* run's message names run's options and values */
		fprintf(stderr, "fabench tune: its sweep was: fabench run %s --kernels %s --param %s",
			suite, kernel, spec);
		if (has_auto && !listed)
			fprintf(stderr, " (%" PRId32 ", the built-in value, added to score auto)",
				auto_value);
		fputc('\n', stderr);
	}
	return status;
}

/* The sweep's heatmap with the marked rule's choice per case. */
static int draw_heatmap(const char *db, const struct fa_tune_opts *o, const struct fa_tune *t,
			const char *path)
{
	struct fa_plot_opts po;
	struct fa_store *store = NULL;
	struct fa_err err;
	int status = FA_EXIT_OK, rule = fa_tune_mark_rule(t);
	int64_t *idx = calloc((size_t)t->n_cases + 1, sizeof *idx);
	const char **params = calloc((size_t)t->n_cases + 1, sizeof *params);
	char mark_label[640];
	memset(&po, 0, sizeof po);
	po.kind = FA_PLOT_HEATMAP;
	po.format = fa_plot_format_of_path(path);
	po.run_id = t->run_id;
	po.where = o->where;
	po.kernel = t->kernel;
	if (!idx || !params) {
		free(idx);
		free(params);
		fprintf(stderr, "fabench tune: out of memory drawing the heatmap\n");
		return FA_EXIT_FAIL;
	}
	if (rule >= 0) {
		const struct fa_tune_rule *r = &t->rules[rule];
		for (int i = 0; i < t->n_cases; i++) {
			idx[i] = t->cases[i].idx;
			params[i] = r->choice[i] >= 0 ? t->value_params[r->choice[i]] : NULL;
		}
		snprintf(mark_label, sizeof mark_label, "%s: %.600s", r->name, r->text);
		po.mark_idx = idx;
		po.mark_params = params;
		po.n_marks = t->n_cases;
		po.mark_label = mark_label;
	}
	fa_err_clear(&err);
	if (fa_store_open_readonly(db, &store, &err) != FA_OK)
		status = fa_cmd_fail("tune", &err);
	else
		status = fa_cmd_plot_render("tune", store, &po, path);
	fa_store_close(store);
	free(idx);
	free(params);
	return status;
}

int fa_cmd_tune(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"run", required_argument, 0, 'R'},
		{"kernel", required_argument, 0, 'k'},
		{"param", required_argument, 0, 'p'},
		{"auto", required_argument, 0, 'A'},
		{"rule", required_argument, 0, 'r'},
		{"by", required_argument, 0, 'b'},
		{"depth", required_argument, 0, 'D'},
		{"loss", required_argument, 0, 'l'},
		{"min-effect", required_argument, 0, 'm'},
		{"alpha", required_argument, 0, 'a'},
		{"where", required_argument, 0, 'w'},
		{"format", required_argument, 0, 'f'},
		{"output", required_argument, 0, 'o'},
		{"header", required_argument, 0, 'H'},
		{"heatmap", required_argument, 0, 'M'},
		{"db", required_argument, 0, 'd'},
		{"backend", required_argument, 0, 'B'},
		{"label", required_argument, 0, 'L'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0}};
	const char *db = fa_cmd_default_db(), *output = NULL, *header = NULL, *run = NULL;
	const char *backend = NULL, *label = NULL, *heatmap = NULL;
	char *param = NULL, *values = NULL;
	const char *by[FA_TUNE_MAX_BY];
	char by_list[2048];
	int n_by = 0;
	struct fa_tune_opts o;
	struct fa_tune t;
	struct fa_store *store = NULL;
	struct fa_err err;
	int c, format = FA_FMT_MD, status = FA_EXIT_OK, sweep_status = FA_EXIT_OK, st;
	double v;
	long n;
	struct fa_cmd_out out, hout;

	fa_tune_opts_init(&o);
	memset(&t, 0, sizeof t);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'R': run = optarg; break;
		case 'k':
			if (o.kernel)
				return fa_cmd_usage_error("tune", usage_text,
							  "--kernel given twice ('%s' and '%s'): tune "
							  "settles one kernel's param; tune each kernel on "
							  "its own",
							  o.kernel, optarg);
			o.kernel = optarg;
			break;
		case 'p':
			if (param)
				return fa_cmd_usage_error("tune", usage_text,
							  "--param given twice ('%s' and '%s'): tune "
							  "settles one param; tune the other in a run of "
							  "its own",
							  param, optarg);
			param = optarg;
			break;
		case 'A':
			if (parse_int(optarg, INT32_MIN, INT32_MAX, &n) != 0)
				return fa_cmd_usage_error("tune", usage_text,
							  "--auto '%s' must be an integer", optarg);
			o.has_auto = 1;
			o.auto_value = (int32_t)n;
			break;
		case 'r':
			if (o.n_rules == FA_TUNE_MAX_RULES)
				return fa_cmd_usage_error("tune", usage_text,
							  "more than %d --rule options",
							  FA_TUNE_MAX_RULES);
			o.rules[o.n_rules++] = optarg;
			break;
		case 'b':
			/* several --by are one list: --by batch --by kv_len is
			 * --by batch,kv_len */
			if (n_by == FA_TUNE_MAX_BY)
				return fa_cmd_usage_error("tune", usage_text,
							  "more than %d --by expressions",
							  FA_TUNE_MAX_BY);
			by[n_by++] = optarg;
			break;
		case 'D':
			if (parse_int(optarg, 1, FA_TUNE_MAX_DEPTH, &n) != 0)
				return fa_cmd_usage_error("tune", usage_text,
							  "--depth '%s' must be 1 to %d", optarg,
							  FA_TUNE_MAX_DEPTH);
			o.depth = (int32_t)n;
			break;
		case 'l':
			if (fa_cmd_parse_number(optarg, &v) != 0 || v < 0)
				return fa_cmd_usage_error("tune", usage_text,
							  "--loss '%s' must be a percentage >= 0",
							  optarg);
			o.loss = v / 100;
			break;
		case 'm':
			if ((st = fa_cmd_opt_min_effect("tune", usage_text, optarg,
							&o.perf.min_effect)) != 0)
				return st;
			break;
		case 'a':
			if ((st = fa_cmd_opt_alpha("tune", usage_text, optarg, &o.perf.alpha)) != 0)
				return st;
			break;
		case 'w': o.where = optarg; break;
		case 'f':
			if ((st = fa_cmd_opt_table_format("tune", usage_text, optarg, &format)) != 0)
				return st;
			break;
		case 'o': output = optarg; break;
		case 'H': header = optarg; break;
		case 'M':
			if (fa_plot_format_of_path(optarg) < 0)
				return fa_cmd_usage_error("tune", usage_text,
							  "--heatmap '%s' must end in .png or .svg",
							  optarg);
			heatmap = optarg;
			break;
		case 'd': db = optarg; break;
		case 'B': backend = optarg; break;
		case 'L':
			if (fa_cmd_check_text("tune", usage_text, "--label", optarg) != 0)
				return FA_EXIT_USAGE;
			label = optarg;
			break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("tune", usage_text, c, argv);
		}
	}
	const char *suite = optind < argc ? argv[optind] : NULL;
	if (argc - optind > 1)
		return fa_cmd_usage_error("tune", usage_text, "unexpected argument '%s'",
					  argv[optind + 1]);
	if (suite && run)
		return fa_cmd_usage_error("tune", usage_text,
					  "give SUITE.yaml (run a sweep) or --run RUN, not both");
	if (!suite && !run)
		return fa_cmd_usage_error("tune", usage_text,
					  "give --run RUN, or SUITE.yaml with --kernel and --param");
	if (!suite && (backend || label))
		return fa_cmd_usage_error("tune", usage_text, "--%s needs SUITE.yaml",
					  backend ? "backend" : "label");
	if (n_by == 1) {
		o.by = by[0];
	} else if (n_by > 1) {
		/* each checked alone first, so that an error's column is in the
		 * --by that has it */
		size_t used = 0;
		int exprs = 0;
		for (int i = 0; i < n_by; i++) {
			struct fa_tune_opts one;
			fa_tune_opts_init(&one);
			one.by = by[i];
			fa_err_clear(&err);
			if (fa_tune_check_opts(&one, &err) != FA_OK)
				return fa_cmd_fail("tune", &err);
			/* it parsed: its commas separate its expressions */
			for (const char *ch = by[i]; *ch; ch++)
				exprs += *ch == ',';
			if (++exprs > FA_TUNE_MAX_BY)
				return fa_cmd_usage_error("tune", usage_text,
							  "--by: more than %d expressions over the "
							  "%d --by options",
							  FA_TUNE_MAX_BY, n_by);
			if (used + strlen(by[i]) + 2 > sizeof by_list)
				return fa_cmd_usage_error("tune", usage_text,
							  "--by: the expressions are longer than %zu "
							  "characters together",
							  sizeof by_list - 1);
			used += (size_t)snprintf(by_list + used, sizeof by_list - used, "%s%s",
						 i ? "," : "", by[i]);
		}
		o.by = by_list;
	}
	if (header && !o.by)
		return fa_cmd_usage_error("tune", usage_text,
					  "--header needs --by: the header holds the fitted rule");
	/* one kernel by its exact name: tune reads its results by name, and
	 * the sweep's --kernels would take a glob or a list as several */
	if (o.kernel) {
		size_t at = strcspn(o.kernel, "*?[],");
		if (!*o.kernel)
			return fa_cmd_option_error("tune", "--kernel", o.kernel, 0,
						   "no kernel named: tune takes one kernel by its "
						   "exact name (fabench kernels lists them)");
		if (o.kernel[at])
			return fa_cmd_option_error(
				"tune", "--kernel", o.kernel, at,
				"'%c' makes %s: tune takes one kernel by its exact name (fabench "
				"kernels lists them); tune each kernel on its own",
				o.kernel[at], o.kernel[at] == ',' ? "a list" : "a glob");
	}
	char param_name[128] = "", sweep_run[32];
	if (param) {
		const char *eq = strchr(param, '='), *name = param;
		size_t len = eq ? (size_t)(eq - param) : strlen(param);
		/* K.P, as run's --param takes it: a param's name has no '.', so
		 * what is left of the last one names a kernel; --kernel's is
		 * taken off, another is refused */
		const char *dot = NULL;
		for (const char *ch = param; ch < param + len; ch++)
			if (*ch == '.')
				dot = ch;
		if (dot) {
			size_t klen = (size_t)(dot - param);
			if (!o.kernel)
				return fa_cmd_option_error(
					"tune", "--param", param, 0,
					"'%.*s.' names a kernel: give the param alone and the kernel "
					"with --kernel (--kernel %.*s --param %s)",
					(int)klen, param, (int)klen, param, dot + 1);
			if (strlen(o.kernel) != klen || strncmp(o.kernel, param, klen) != 0)
				return fa_cmd_option_error(
					"tune", "--param", param, 0,
					"'%.*s.' names another kernel than --kernel '%s': give the "
					"param alone (--param %s)",
					(int)klen, param, o.kernel, dot + 1);
			name = dot + 1;
			len -= klen + 1;
		}
		if (len == 0 || len >= sizeof param_name)
			return fa_cmd_usage_error("tune", usage_text, "--param '%s' names no param",
						  param);
		memcpy(param_name, name, len);
		param_name[len] = '\0';
		values = eq ? (char *)eq + 1 : NULL;
		o.param = param_name;
		if (!suite && values)
			return fa_cmd_usage_error("tune", usage_text,
						  "--param '%s': values are for a sweep (SUITE.yaml); "
						  "with --run name the param alone",
						  param);
		fa_err_clear(&err);
		if (values && *values &&
		    fa_list_check_items("--param", param, values, "a value", &err) != FA_OK)
			return fa_cmd_fail("tune", &err);
	}
	if (suite && (!o.kernel || !values || !*values))
		return fa_cmd_usage_error("tune", usage_text,
					  "SUITE.yaml needs --kernel K and --param P=V1,V2,...");
	if (!o.has_auto && o.kernel && o.param &&
	    registered_default(o.kernel, o.param, &o.auto_value) == 0)
		o.has_auto = 1;
	fa_err_clear(&err);
	if (fa_tune_check_opts(&o, &err) != FA_OK) /* before a sweep that may take minutes */
		return fa_cmd_fail("tune", &err);
	/* without gnuplot the heatmap cannot be drawn: say so (1, as fabench plot
	 * does) before a sweep is run or stored, or a report written */
	if (heatmap && !fa_plot_gnuplot_available()) {
		fprintf(stderr, "fabench tune: error: gnuplot is not installed: --heatmap needs it; "
				"install the gnuplot-nox package (apt-get install gnuplot-nox), or "
				"leave --heatmap out and draw the sweep later with fabench plot "
				"heatmap --run RUN\n");
		return FA_EXIT_FAIL;
	}
	if (suite) {
		/* the files it writes, before a sweep that may take minutes */
		const char *outs[] = {output, header, heatmap};
		for (int i = 0; i < 3; i++)
			if (outs[i] && fa_path_writable(outs[i]) != 0) {
				fprintf(stderr, "fabench tune: cannot write '%s': %s\n", outs[i],
					strerror(errno));
				return FA_EXIT_FAIL;
			}
		fa_cmd_run_last_id = 0;
		sweep_status = run_sweep(suite, db, o.kernel, o.param, values, o.has_auto,
					 o.auto_value, backend, label, o.where);
		if (sweep_status != FA_EXIT_OK && sweep_status != FA_EXIT_FAIL)
			return sweep_status;
		/* the sweep's own run, by id: "latest" (or the label's latest)
		 * may be another process's run by now */
		snprintf(sweep_run, sizeof sweep_run, "%lld", (long long)fa_cmd_run_last_id);
		run = fa_cmd_run_last_id > 0 ? sweep_run : label ? label : "latest";
	}

	fa_err_clear(&err);
	if (fa_store_open_readonly(db, &store, &err) != FA_OK)
		return fa_cmd_fail("tune", &err);
	if (fa_store_find_run(store, run, &o.run_id, &err) != FA_OK) {
		fa_store_close(store);
		return fa_cmd_fail("tune", &err);
	}
	if (fa_tune_build(store, &o, &t, &err) != FA_OK) {
		fa_tune_free(&t);
		fa_store_close(store);
		return fa_cmd_fail("tune", &err);
	}
	if (!o.has_auto && registered_default(t.kernel, t.param, &o.auto_value) == 0) {
		/* the kernel and param were found in the run: score the built-in value */
		o.has_auto = 1;
		fa_tune_free(&t);
		if (fa_tune_build(store, &o, &t, &err) != FA_OK) {
			fa_tune_free(&t);
			fa_store_close(store);
			return fa_cmd_fail("tune", &err);
		}
	}
	fa_store_close(store);

	/* the tables and the header are both made in memory before either file
	 * is replaced, so an error in making either leaves both as they were;
	 * a failure to write the header's file once the tables' is replaced
	 * (a full disk) is reported, status 1, with the tables' file written */
	if (fa_cmd_out_open("tune", output, &out) != 0) {
		fa_tune_free(&t);
		return FA_EXIT_FAIL;
	}
	if (header && fa_cmd_out_open("tune", header, &hout) != 0) {
		fa_cmd_out_close("tune", &out, 0);
		fa_tune_free(&t);
		return FA_EXIT_FAIL;
	}
	if (fa_tune_write(&t, format, out.f, &err) != FA_OK)
		status = fa_cmd_fail("tune", &err);
	if (status == FA_EXIT_OK && header && fa_tune_write_header(&t, hout.f, &err) != FA_OK)
		status = fa_cmd_fail("tune", &err);
	if (fa_cmd_out_close("tune", &out, status == FA_EXIT_OK) != 0)
		status = FA_EXIT_FAIL;
	if (header && fa_cmd_out_close("tune", &hout, status == FA_EXIT_OK) != 0)
		status = FA_EXIT_FAIL;
	if (status == FA_EXIT_OK && heatmap)
		status = draw_heatmap(db, &o, &t, heatmap);
	fa_tune_free(&t);
	return status != FA_EXIT_OK ? status : sweep_status;
}
