/* plan.c - resolves backends and kernel patterns into per-case kernel lists,
 * and keeps the tallies a run prints at its end. */
#include "plan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "../base/text.h"
#include "../base/util.h"

/* Visible kernels of every loaded backend, in registry order. */
static int each_kernel(struct fa_registry *reg, int (*fn)(void *, const struct fa_kernel *,
							   struct fa_backend_slot *),
		       void *ctx)
{
	for (int i = 0; i < reg->n; i++) {
		struct fa_backend_slot *s = &reg->slots[i];
		if (!s->loaded)
			continue;
		int n = fa_backend_kernel_count(s);
		for (int j = 0; j < n; j++) {
			const struct fa_kernel *k = fa_backend_kernel_get(s, j);
			if (fa_kernel_visible(k) && fn(ctx, k, s))
				return 1;
		}
	}
	return 0;
}

struct match_ctx {
	const char *pattern;
	const char *best;
	int best_d;
};

static int match_any(void *vctx, const struct fa_kernel *k, struct fa_backend_slot *s)
{
	struct match_ctx *m = vctx;
	int d;
	(void)s;
	if (fa_kernel_match(m->pattern, k->name))
		return 1;
	d = fa_edit_distance(m->pattern, k->name);
	if (d <= 2 && d < m->best_d) {
		m->best_d = d;
		m->best = k->name;
	}
	return 0;
}

/* 1 when pattern names a known kernel, or a kernel of a known backend that
 * did not load here (cuda_* on a machine without CUDA). Else 0, with a
 * suggestion in hint. */
static int pattern_ok(struct fa_registry *reg, const char *pattern, char *hint, size_t size)
{
	struct match_ctx m = {pattern, NULL, 4};
	char prefix[32];
	hint[0] = '\0';
	if (each_kernel(reg, match_any, &m))
		return 1;
	fa_kernel_backend_prefix(pattern, prefix, sizeof prefix);
	if (prefix[0] && fa_backend_name_known(prefix)) {
		struct fa_backend_slot *s = fa_registry_backend(reg, prefix);
		if (!s || !s->loaded)
			return 1;
	}
	/* a kernel plugin that was refused (one whose reason names the
	 * pattern first, else the first) may be where it was to come from */
	const struct fa_kernel_plugin_slot *refused = NULL;
	char quoted[80];
	snprintf(quoted, sizeof quoted, "'%.64s'", pattern);
	for (int i = 0; i < reg->n_plugins; i++) {
		const struct fa_kernel_plugin_slot *p = &reg->plugins[i];
		if (p->n_att == 0 && p->refused &&
		    (!refused || (!strstr(refused->why, quoted) && strstr(p->why, quoted))))
			refused = p;
	}
	if (m.best && !(refused && strstr(refused->why, quoted)))
		snprintf(hint, size, " (did you mean '%s'?)", m.best);
	else if (refused)
		snprintf(hint, size, " (plugin %s did not load: %s)", refused->path, refused->why);
	else if (!m.best) /* a kernel of a plugin this process did not load (a rerun) */
		snprintf(hint, size, " (no loaded backend or kernel plugin has it; a kernel "
				     "plugin's kernels need FABENCH_PLUGINS=FILE.so)");
	return 0;
}

enum fa_rc fa_plan_pick_backend(struct fa_registry *reg, const char *want,
				struct fa_backend_slot **out, struct fa_err *err)
{
	struct fa_backend_slot *s;
	if (strcmp(want, "auto") == 0) {
		static const char *const order[] = {"cuda", "hip", "cpu"};
		for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
			s = fa_registry_backend(reg, order[i]);
			if (s && s->loaded) {
				*out = s;
				return FA_OK;
			}
		}
		return fa_err_set(err, FA_ERR_USAGE, "no backend loaded");
	}
	s = fa_registry_backend(reg, want);
	if (!s) {
		if (!fa_backend_name_known(want))
			return fa_err_set(err, FA_ERR_USAGE,
					  "unknown backend '%s' (expected cpu, cuda, hip or auto)",
					  want);
		return fa_err_set(err, FA_ERR_USAGE, "backend '%s' is not available: not built",
				  want);
	}
	if (!s->loaded)
		return fa_err_set(err, FA_ERR_USAGE, "backend '%s' is not available: %s", want, s->why);
	*out = s;
	return FA_OK;
}

static int set_matches(const struct fa_kernel_set *set, const char *name)
{
	if (!set || set->n == 0)
		return 1;
	for (int i = 0; i < set->n; i++)
		if (fa_kernel_match(set->patterns[i], name))
			return 1;
	return 0;
}

static int csv_matches(char **pats, int n, const char *name)
{
	if (n == 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (fa_kernel_match(pats[i], name))
			return 1;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The case key without the parameters every case shares. */
static char **make_labels(const struct fa_suite *s)
{
	char **labels = calloc((size_t)(s->n_cases ? s->n_cases : 1), sizeof *labels);
	char **tok = NULL;
	int ntok = 0, cap = 0;
	if (!labels)
		return NULL;
	/* count, for each name=value token, the cases it appears in */
	for (int i = 0; i < s->n_cases; i++) {
		char *k = strdup(s->cases[i].key ? s->cases[i].key : ""), *save = NULL;
		for (char *t = k ? strtok_r(k, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
			char *d = strdup(t);
			if (ntok == cap) {
				char **nt = realloc(tok, sizeof *tok * (size_t)(cap ? cap * 2 : 256));
				if (!nt) {
					free(d);
					break;
				}
				tok = nt;
				cap = cap ? cap * 2 : 256;
			}
			if (d)
				tok[ntok++] = d;
		}
		free(k);
	}
	qsort(tok, (size_t)ntok, sizeof *tok, cmp_str);
	for (int i = 0; i < s->n_cases; i++) {
		char *k = strdup(s->cases[i].key ? s->cases[i].key : ""), *save = NULL;
		size_t len = (k ? strlen(k) : 0) + 32;
		char *out = calloc(len, 1);
		if (!k || !out) {
			free(k);
			free(out);
			labels[i] = NULL;
			continue;
		}
		for (char *t = strtok_r(k, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			/* binary search for the token's run of equal entries */
			int lo = 0, hi = ntok;
			while (lo < hi) {
				int mid = (lo + hi) / 2;
				if (strcmp(tok[mid], t) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			int run = 0;
			while (lo + run < ntok && strcmp(tok[lo + run], t) == 0)
				run++;
			if (run >= s->n_cases && s->n_cases > 1)
				continue; /* shared by every case */
			if (out[0])
				strcat(out, " ");
			strcat(out, t);
		}
		if (!out[0])
			snprintf(out, len, "case %d", i);
		labels[i] = out;
		free(k);
	}
	for (int i = 0; i < ntok; i++)
		free(tok[i]);
	free(tok);
	return labels;
}

/* Most combinations one kernel may sweep in a run. */
#define FA_MAX_VARIANTS 4096

/* Values of one --param for one kernel. */
struct pvals {
	int32_t v[256];
	int n;
	const char *spec; /* the --param that gave them */
};

static int param_allowed(const struct fa_kernel_param *kp, int32_t v)
{
	if (!kp->allowed)
		return v >= kp->min_value && v <= kp->max_value;
	for (int i = 0; i < kp->n_allowed; i++)
		if (kp->allowed[i] == v)
			return 1;
	return 0;
}

/* Parses the --param specs that apply to kernel k into vals[param index]
 * (n == 0: default). Errors name the spec. */
static enum fa_rc kernel_param_values(const struct fa_kernel *k, char *const *specs, int n_specs,
				      struct pvals *vals, struct fa_err *err)
{
	for (int i = 0; i < n_specs; i++) {
		char pat[128], name[64];
		const char *eq = strchr(specs[i], '='), *dot;
		if (!eq)
			continue; /* checked by the caller */
		dot = eq;
		while (dot > specs[i] && *dot != '.')
			dot--;
		snprintf(pat, sizeof pat, "%.*s", (int)(dot - specs[i]), specs[i]);
		snprintf(name, sizeof name, "%.*s", (int)(eq - dot - 1), dot + 1);
		if (!fa_kernel_match(pat, k->name))
			continue;
		for (int pi = 0; pi < k->n_params && pi < FA_KERNEL_MAX_PARAMS; pi++) {
			const struct fa_kernel_param *kp = &k->params[pi];
			if (strcmp(kp->name, name) != 0)
				continue;
			if (vals[pi].n) {
				fa_err_set(err, FA_ERR_USAGE,
					   "--param %s: %s.%s is given values twice (once by '%s')",
					   specs[i], k->name, kp->name, vals[pi].spec);
				return FA_ERR_USAGE;
			}
			char *list = strdup(eq + 1), *save = NULL;
			vals[pi].spec = specs[i];
			for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				char *end;
				long v = strtol(t, &end, 10);
				if (*end || end == t || v < INT32_MIN || v > INT32_MAX ||
				    !param_allowed(kp, (int32_t)v)) {
					char allowed[256] = "";
					size_t len = 0;
					if (kp->allowed)
						for (int a = 0; a < kp->n_allowed; a++)
							len += (size_t)snprintf(allowed + len,
										sizeof allowed - len,
										"%s%d", a ? ", " : "",
										kp->allowed[a]);
					else
						snprintf(allowed, sizeof allowed, "%d to %d",
							 kp->min_value, kp->max_value);
					fa_err_set(err, FA_ERR_USAGE,
						   "--param %s: '%s' is not an allowed value of %s.%s "
						   "(allowed: %s)",
						   specs[i], t, k->name, kp->name, allowed);
					free(list);
					return FA_ERR_USAGE;
				}
				for (int d = 0; d < vals[pi].n; d++)
					if (vals[pi].v[d] == (int32_t)v) {
						fa_err_set(err, FA_ERR_USAGE,
							   "--param %s: %ld is given twice; each value "
							   "runs once",
							   specs[i], v);
						free(list);
						return FA_ERR_USAGE;
					}
				if (vals[pi].n < 256)
					vals[pi].v[vals[pi].n++] = (int32_t)v;
			}
			free(list);
		}
	}
	return FA_OK;
}

/* The variants of kernel k: the cartesian product of its parameter values. */
static enum fa_rc make_variants(struct fa_plan_kstat *ks, struct fa_backend_slot *slot,
				char *const *specs, int n_specs, struct fa_err *err)
{
	struct pvals vals[FA_KERNEL_MAX_PARAMS];
	int np = ks->k->n_params < FA_KERNEL_MAX_PARAMS ? ks->k->n_params : FA_KERNEL_MAX_PARAMS;
	long total = 1;
	enum fa_rc rc;
	memset(vals, 0, sizeof vals);
	if ((rc = kernel_param_values(ks->k, specs, n_specs, vals, err)) != FA_OK)
		return rc;
	for (int pi = 0; pi < np; pi++)
		total *= vals[pi].n ? vals[pi].n : 1;
	if (total > FA_MAX_VARIANTS)
		return fa_err_set(err, FA_ERR_USAGE,
				  "--param: %ld combinations for %s, more than %d", total,
				  ks->k->name, FA_MAX_VARIANTS);
	ks->variants = calloc((size_t)total, sizeof *ks->variants);
	ks->texts = malloc((size_t)total * FA_PARAMS_TEXT_SIZE);
	if (!ks->variants || !ks->texts)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
	for (long c = 0; c < total; c++) {
		struct fa_case_kernel *ck = &ks->variants[c];
		long rest = c;
		fa_case_kernel_init(ck, ks->k, slot);
		/* the last parameter varies fastest */
		for (int pi = np - 1; pi >= 0; pi--) {
			if (!vals[pi].n)
				continue;
			ck->params[pi] = vals[pi].v[rest % vals[pi].n];
			rest /= vals[pi].n;
		}
		fa_case_kernel_text(ck, ks->texts + c * FA_PARAMS_TEXT_SIZE, FA_PARAMS_TEXT_SIZE);
	}
	ks->n_variants = (int32_t)total;
	return FA_OK;
}

/* Every --param spec must be well formed and reach a parameter of some
 * kernel of the backend. */
static enum fa_rc check_param_specs(struct fa_plan *pl, char *const *specs, int n_specs,
				    struct fa_err *err)
{
	for (int i = 0; i < n_specs; i++) {
		const char *eq = strchr(specs[i], '='), *dot = eq;
		int found = 0;
		while (dot && dot > specs[i] && *dot != '.')
			dot--;
		if (!eq || !dot || *dot != '.' || dot == specs[i] || eq == dot + 1 || !eq[1])
			return fa_err_set(err, FA_ERR_USAGE,
					  "--param '%s' must look like KERNEL.NAME=VALUE[,VALUE...]",
					  specs[i]);
		for (int j = 0; j < pl->n_kstats && !found; j++) {
			const struct fa_kernel *k = pl->kstats[j].k;
			char pat[128];
			snprintf(pat, sizeof pat, "%.*s", (int)(dot - specs[i]), specs[i]);
			if (!fa_kernel_match(pat, k->name))
				continue;
			for (int pi = 0; pi < k->n_params; pi++)
				if (strlen(k->params[pi].name) == (size_t)(eq - dot - 1) &&
				    strncmp(k->params[pi].name, dot + 1, (size_t)(eq - dot - 1)) == 0)
					found = 1;
		}
		if (!found)
			return fa_err_set(err, FA_ERR_USAGE,
					  "--param '%s': no kernel of backend %s matching '%.*s' has a "
					  "parameter '%.*s' (see fabench kernels)",
					  specs[i], pl->slot->name, (int)(dot - specs[i]), specs[i],
					  (int)(eq - dot - 1), dot + 1);
	}
	return FA_OK;
}

enum fa_rc fa_plan_build(struct fa_plan *pl, const struct fa_suite *s, struct fa_registry *reg,
			 const char *backend, const char *kernels_csv, char *const *params,
			 int n_params, struct fa_err *err)
{
	struct fa_backend_slot *slot = NULL;
	enum fa_rc rc;
	memset(pl, 0, sizeof *pl);
	if ((rc = fa_plan_pick_backend(reg, backend, &slot, err)) != FA_OK)
		return rc;
	return fa_plan_build_slot(pl, s, reg, slot, kernels_csv, params, n_params, err);
}

enum fa_rc fa_plan_build_slot(struct fa_plan *pl, const struct fa_suite *s, struct fa_registry *reg,
			      struct fa_backend_slot *slot, const char *kernels_csv,
			      char *const *params, int n_params, struct fa_err *err)
{
	char **cli = NULL, hint[1700], *csv = NULL;
	int ncli = 0;
	double total = 0;
	enum fa_rc rc = FA_OK;

	memset(pl, 0, sizeof *pl);
	pl->slot = slot;
	if (kernels_csv) {
		char *save = NULL;
		csv = strdup(kernels_csv);
		cli = calloc(strlen(kernels_csv) + 1, sizeof *cli);
		if (!csv || !cli) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory");
			goto done;
		}
		for (char *t = strtok_r(csv, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (!pattern_ok(reg, t, hint, sizeof hint)) {
				rc = fa_err_set(err, FA_ERR_USAGE, "--kernels: unknown kernel '%s'%s", t,
						hint);
				goto done;
			}
			cli[ncli++] = t;
		}
	}
	for (int i = 0; i < s->n_sets; i++) {
		const struct fa_kernel_set *set = &s->kernel_sets[i];
		for (int j = 0; j < set->n; j++)
			if (!pattern_ok(reg, set->patterns[j], hint, sizeof hint)) {
				rc = fa_err_at(err, &set->locs[j], "unknown kernel '%s'%s",
					       set->patterns[j], hint);
				goto done;
			}
	}

	pl->n_cases = s->n_cases;
	pl->kernels = calloc((size_t)(s->n_cases + 1), sizeof *pl->kernels);
	pl->n_kernels = calloc((size_t)(s->n_cases + 1), sizeof *pl->n_kernels);
	pl->work_cum = calloc((size_t)(s->n_cases + 1), sizeof *pl->work_cum);
	pl->labels = make_labels(s);
	int nk = fa_backend_kernel_count(pl->slot);
	pl->kstats = calloc((size_t)(nk + 1), sizeof *pl->kstats);
	if (!pl->kernels || !pl->n_kernels || !pl->work_cum || !pl->labels || !pl->kstats) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		goto done;
	}
	int max_per_case = 0;
	for (int j = 0; j < nk; j++) {
		const struct fa_kernel *k = fa_backend_kernel_get(pl->slot, j);
		if (fa_kernel_visible(k))
			pl->kstats[pl->n_kstats++].k = k;
	}
	if ((rc = check_param_specs(pl, params, n_params, err)) != FA_OK)
		goto done;
	for (int j = 0; j < pl->n_kstats; j++) {
		if ((rc = make_variants(&pl->kstats[j], pl->slot, params, n_params, err)) != FA_OK)
			goto done;
		max_per_case += pl->kstats[j].n_variants;
	}
	for (int ci = 0; ci < s->n_cases; ci++) {
		const struct fa_case *c = &s->cases[ci];
		pl->kernels[ci] = calloc((size_t)(max_per_case + 1), sizeof **pl->kernels);
		if (!pl->kernels[ci]) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory");
			goto done;
		}
		for (int j = 0; j < pl->n_kstats; j++) {
			const struct fa_kernel *k = pl->kstats[j].k;
			if (!set_matches(c->kernels, k->name) || !csv_matches(cli, ncli, k->name))
				continue;
			/* forward kernels run fwd cases, backward kernels bwd and fwd_bwd */
			if ((fa_kernel_pass(k) == FA_PASS_BWD) != (c->pass != FA_PASS_FWD))
				continue;
			for (int v = 0; v < pl->kstats[j].n_variants; v++)
				pl->kernels[ci][pl->n_kernels[ci]++] = pl->kstats[j].variants[v];
		}
		pl->n_pairs += pl->n_kernels[ci];
		/* work: FLOPs (plus a constant per case for set-up) times kernels */
		total += (fa_problem_flops(&c->p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens) *
			fa_pass_flops_factor(c->pass) +
			  1e6) * pl->n_kernels[ci];
		pl->work_cum[ci] = total;
	}
	for (int ci = 0; ci < s->n_cases; ci++)
		pl->work_cum[ci] = total > 0 ? pl->work_cum[ci] / total : 1.0;
	/* the baselines of the summary's speed-ups: the first dense kernel of
	 * each pass that runs some case (one not selected would be named
	 * with nothing to compare) */
	for (int j = 0; j < pl->n_kstats; j++) {
		const struct fa_kernel *k = pl->kstats[j].k;
		const struct fa_kernel **b =
			fa_kernel_pass(k) == FA_PASS_BWD ? &pl->baseline_bwd : &pl->baseline;
		int runs = 0;
		if (*b || !strstr(k->name, "dense"))
			continue;
		for (int ci = 0; ci < s->n_cases && !runs; ci++)
			for (int i = 0; i < pl->n_kernels[ci] && !runs; i++)
				runs = pl->kernels[ci][i].k == k;
		if (runs)
			*b = k;
	}
done:
	free(cli);
	free(csv);
	return rc;
}

void fa_plan_free(struct fa_plan *pl)
{
	for (int i = 0; i < pl->n_cases; i++) {
		if (pl->kernels)
			free(pl->kernels[i]);
		if (pl->labels)
			free(pl->labels[i]);
	}
	free(pl->kernels);
	free(pl->n_kernels);
	free(pl->labels);
	free(pl->work_cum);
	for (int j = 0; pl->kstats && j < pl->n_kstats; j++) {
		free(pl->kstats[j].variants);
		free(pl->kstats[j].texts);
	}
	free(pl->kstats);
	memset(pl, 0, sizeof *pl);
}

double fa_plan_progress(const struct fa_plan *pl, int ci)
{
	return ci >= 0 && ci < pl->n_cases ? pl->work_cum[ci] : 0.0;
}

static struct fa_plan_kstat *kstat(struct fa_plan *pl, const struct fa_kernel *k)
{
	for (int j = 0; j < pl->n_kstats; j++)
		if (pl->kstats[j].k == k)
			return &pl->kstats[j];
	return NULL;
}

void fa_plan_tally_case(struct fa_plan *pl, int ci, const struct fa_result *res, int n)
{
	double base = 0;
	/* a case's kernels are all forward or all backward: their pass's baseline */
	const struct fa_kernel *baseline =
		n > 0 && fa_kernel_pass(pl->kernels[ci][0].k) == FA_PASS_BWD ? pl->baseline_bwd
									    : pl->baseline;
	for (int i = 0; i < n; i++)
		if (pl->kernels[ci][i].k == baseline && baseline && res[i].t.n > 0 &&
		    res[i].status == FA_STATUS_PASS)
			base = res[i].t.median_ms;
	for (int i = 0; i < n; i++) {
		struct fa_plan_kstat *ks = kstat(pl, pl->kernels[ci][i].k);
		if (!ks || res[i].status < 0 || res[i].status > 4)
			continue;
		ks->count[res[i].status]++;
		/* a failed result's time is of a wrong answer: no speedup */
		if (base > 0 && res[i].status == FA_STATUS_PASS && res[i].t.n > 0 &&
		    res[i].t.median_ms > 0 && pl->kernels[ci][i].k != baseline) {
			ks->log_speedup_sum += log(base / res[i].t.median_ms);
			ks->n_speedup++;
		}
	}
}

void fa_plan_print_dry(const struct fa_plan *pl, const struct fa_suite *s, struct fa_runner *r,
		       const char *skip, FILE *f)
{
	char mem[32], budget[32], why[256];
	int nrun = 0, nskip = 0;
	fa_format_bytes(fa_runner_budget(r), budget, sizeof budget);
	fprintf(f, "dry run: nothing is run or stored; memory budget %s\n", budget);
	for (int ci = 0; ci < s->n_cases; ci++) {
		const struct fa_case *c = &s->cases[ci];
		double fl = fa_problem_flops(&c->p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens) *
			fa_pass_flops_factor(c->pass);
		if (skip && skip[ci])
			continue;
		fprintf(f, "[%d] %s  (%.3g GFLOP)\n", ci + 1, pl->labels[ci], fl / 1e9);
		if (pl->n_kernels[ci] == 0)
			fprintf(f, "      no kernel of backend %s matches this case's kernels\n",
				pl->slot->name);
		for (int i = 0; i < pl->n_kernels[ci]; i++) {
			const struct fa_case_kernel *ck = &pl->kernels[ci][i];
			double m = fa_runner_mem_estimate(c, ck);
			fa_format_bytes(m, mem, sizeof mem);
			if (!fa_kernel_supports(ck->k, &c->p, why, sizeof why)) {
				fprintf(f, "      %-24s skip: %s\n", ck->k->name, why);
				nskip++;
			} else if (m > fa_runner_budget(r)) {
				fprintf(f, "      %-24s skip: needs %s, over the memory budget of %s\n",
					ck->k->name, mem, budget);
				nskip++;
			} else {
				fprintf(f, "      %-24s run (%s)%s%s\n", ck->k->name, mem,
					ck->params_text[0] ? " " : "", ck->params_text);
				nrun++;
			}
		}
	}
	fprintf(f, "%d to run, %d to skip\n", nrun, nskip);
}

void fa_plan_print_summary(const struct fa_plan *pl, const struct fa_suite *s, FILE *f)
{
	(void)s;
	fprintf(f, "\n%-24s %5s %5s %5s %5s %7s", "kernel", "pass", "fail", "skip", "error",
		"timeout");
	if (pl->baseline || pl->baseline_bwd)
		fprintf(f, "  speedup vs %s%s%s (geomean)", pl->baseline ? pl->baseline->name : "",
			pl->baseline && pl->baseline_bwd ? " / " : "",
			pl->baseline_bwd ? pl->baseline_bwd->name : "");
	fprintf(f, "\n");
	for (int j = 0; j < pl->n_kstats; j++) {
		const struct fa_plan_kstat *k = &pl->kstats[j];
		int total = 0;
		for (int i = 0; i < 5; i++)
			total += k->count[i];
		if (!total)
			continue;
		fprintf(f, "%-24s %5d %5d %5d %5d %7d", k->k->name, k->count[FA_STATUS_PASS],
			k->count[FA_STATUS_FAIL], k->count[FA_STATUS_SKIP], k->count[FA_STATUS_ERROR],
			k->count[FA_STATUS_TIMEOUT]);
		if (k->n_speedup) {
			const struct fa_kernel *b =
				fa_kernel_pass(k->k) == FA_PASS_BWD ? pl->baseline_bwd : pl->baseline;
			fprintf(f, "  %.2fx over ", exp(k->log_speedup_sum / k->n_speedup));
			if (pl->baseline && pl->baseline_bwd)
				fprintf(f, "%s, ", b->name);
			fprintf(f, "%d case%s", k->n_speedup, k->n_speedup == 1 ? "" : "s");
		}
		fprintf(f, "\n");
	}
}
