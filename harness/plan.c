/* plan.c - resolves backends and kernel patterns into per-case kernel lists,
 * and keeps the tallies a run prints at its end. */
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "expand.h"
#include "util.h"

/* Visible kernels of every loaded backend, in registry order. */
static int each_kernel(struct fa_registry *reg, int (*fn)(void *, const struct fa_kernel *,
							   struct fa_backend_slot *),
		       void *ctx)
{
	for (int i = 0; i < reg->n; i++) {
		struct fa_backend_slot *s = &reg->slots[i];
		if (!s->loaded)
			continue;
		int n = s->be.iface.kernel_count(s->be.context);
		for (int j = 0; j < n; j++) {
			const struct fa_kernel *k = s->be.iface.kernel_get(s->be.context, j);
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
	if (m.best)
		snprintf(hint, size, " (did you mean '%s'?)", m.best);
	return 0;
}

static int pick_backend(struct fa_registry *reg, const char *want, struct fa_backend_slot **out,
			struct fa_err *err)
{
	struct fa_backend_slot *s;
	if (strcmp(want, "auto") == 0) {
		static const char *const order[] = {"cuda", "hip", "cpu"};
		for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
			s = fa_registry_backend(reg, order[i]);
			if (s && s->loaded) {
				*out = s;
				return 0;
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
	return 0;
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
		for (char *t = strtok_r(k, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (ntok == cap) {
				cap = cap ? cap * 2 : 256;
				tok = realloc(tok, sizeof *tok * (size_t)cap);
			}
			tok[ntok++] = strdup(t);
		}
		free(k);
	}
	qsort(tok, (size_t)ntok, sizeof *tok, (int (*)(const void *, const void *))strcmp);
	for (int i = 0; i < s->n_cases; i++) {
		char *k = strdup(s->cases[i].key ? s->cases[i].key : ""), *save = NULL;
		size_t len = strlen(k) + 2;
		char *out = calloc(len, 1);
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

enum fa_rc fa_plan_build(struct fa_plan *pl, const struct fa_suite *s, struct fa_registry *reg,
			 const char *backend, const char *kernels_csv, struct fa_err *err)
{
	char **cli = NULL, hint[128], *csv = NULL;
	int ncli = 0;
	double total = 0;
	enum fa_rc rc = FA_OK;

	memset(pl, 0, sizeof *pl);
	if ((rc = pick_backend(reg, backend, &pl->slot, err)) != FA_OK)
		return rc;
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
	int nk = pl->slot->be.iface.kernel_count(pl->slot->be.context);
	pl->kstats = calloc((size_t)(nk + 1), sizeof *pl->kstats);
	if (!pl->kernels || !pl->n_kernels || !pl->work_cum || !pl->labels || !pl->kstats) {
		rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int j = 0; j < nk; j++) {
		const struct fa_kernel *k = pl->slot->be.iface.kernel_get(pl->slot->be.context, j);
		if (fa_kernel_visible(k))
			pl->kstats[pl->n_kstats++].k = k;
	}
	for (int ci = 0; ci < s->n_cases; ci++) {
		const struct fa_case *c = &s->cases[ci];
		pl->kernels[ci] = calloc((size_t)(pl->n_kstats + 1), sizeof **pl->kernels);
		if (!pl->kernels[ci]) {
			rc = fa_err_set(err, FA_ERR_NOMEM, "out of memory");
			goto done;
		}
		for (int j = 0; j < pl->n_kstats; j++) {
			const struct fa_kernel *k = pl->kstats[j].k;
			if (!set_matches(c->kernels, k->name) || !csv_matches(cli, ncli, k->name))
				continue;
			fa_case_kernel_init(&pl->kernels[ci][pl->n_kernels[ci]++], k, pl->slot);
		}
		pl->n_pairs += pl->n_kernels[ci];
		/* work: FLOPs (plus a constant per case for set-up) times kernels */
		total += (fa_problem_flops(&c->p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens) +
			  1e6) * pl->n_kernels[ci];
		pl->work_cum[ci] = total;
	}
	for (int ci = 0; ci < s->n_cases; ci++)
		pl->work_cum[ci] = total > 0 ? pl->work_cum[ci] / total : 1.0;
	for (int j = 0; j < pl->n_kstats; j++)
		if (strstr(pl->kstats[j].k->name, "dense")) {
			pl->baseline = pl->kstats[j].k;
			break;
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
	for (int i = 0; i < n; i++)
		if (pl->kernels[ci][i].k == pl->baseline && res[i].t.n > 0 &&
		    (res[i].status == FA_STATUS_PASS || res[i].status == FA_STATUS_FAIL))
			base = res[i].t.median_ms;
	for (int i = 0; i < n; i++) {
		struct fa_plan_kstat *ks = kstat(pl, pl->kernels[ci][i].k);
		if (!ks || res[i].status < 0 || res[i].status > 4)
			continue;
		ks->count[res[i].status]++;
		if (base > 0 && res[i].t.n > 0 && res[i].t.median_ms > 0 &&
		    pl->kernels[ci][i].k != pl->baseline) {
			ks->log_speedup_sum += log(base / res[i].t.median_ms);
			ks->n_speedup++;
		}
	}
}

void fa_plan_print_dry(const struct fa_plan *pl, const struct fa_suite *s, struct fa_runner *r,
		       FILE *f)
{
	char mem[32], budget[32], why[256];
	int nrun = 0, nskip = 0;
	fa_format_bytes(fa_runner_budget(r), budget, sizeof budget);
	fprintf(f, "dry run: nothing is run or stored; memory budget %s\n", budget);
	for (int ci = 0; ci < s->n_cases; ci++) {
		const struct fa_case *c = &s->cases[ci];
		double fl = fa_problem_flops(&c->p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens);
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
	if (pl->baseline)
		fprintf(f, "  speedup vs %s (geomean)", pl->baseline->name);
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
		if (k->n_speedup)
			fprintf(f, "  %.2fx over %d cases", exp(k->log_speedup_sum / k->n_speedup),
				k->n_speedup);
		fprintf(f, "\n");
	}
}
