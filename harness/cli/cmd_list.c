/* cmd_list.c - `fabench list`: a suite's expanded cases, count first, as
 * text or JSON (the form bench/peers scripts read); nothing is run. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../run/data.h"
#include "../suite/suite.h"
#include "../report/table.h"
#include "../base/util.h"

static const char usage_text[] =
	"usage: fabench list SUITE.yaml [--where EXPR] [--seed N] [--format text|json]";

static void help(void)
{
	printf("%s\n\n"
	       "Prints the number of cases SUITE.yaml expands to, then each case's canonical\n"
	       "key (text) or all of its parameters (json). Nothing is run or stored.\n\n"
	       "options:\n"
	       "  --where EXPR     keep only cases for which EXPR holds\n"
	       "  --seed N         data seed, 1 or more (changes each case's seed field)\n"
	       "  --format FMT     text (default) or json\n",
	       usage_text);
}

static void json_ints(FILE *f, const char *name, const int32_t *cu, int n, int diff)
{
	fprintf(f, ", \"%s\": ", name);
	if (!cu) {
		fputs("null", f);
		return;
	}
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? ", " : "", diff ? cu[i + 1] - cu[i] : cu[i]);
	fputc(']', f);
}

static void print_json(const struct fa_suite *s, FILE *f)
{
	fprintf(f, "{\"schema_version\": %d, \"suite\": ", FA_JSON_SCHEMA_VERSION);
	fa_json_string(f, s->name);
	fprintf(f, ", \"path\": ");
	fa_json_string(f, s->path);
	fprintf(f, ", \"hash\": \"%s\", \"seed\": \"%llu\", \"n_cases\": %d, \"cases\": [", s->hash,
		(unsigned long long)s->seed, s->n_cases);
	for (int i = 0; i < s->n_cases; i++) {
		const struct fa_case *c = &s->cases[i];
		const struct fa_problem *p = &c->p;
		fprintf(f, "%s\n  {\"index\": %d, \"key\": ", i ? "," : "", c->index);
		fa_json_string(f, c->key);
		/* not applicable under this mask: null, never 0 (docs/json.md) */
		char prefix[16] = "null", window[16] = "null";
		if (p->mask == FA_MASK_PREFIX_LM)
			snprintf(prefix, sizeof prefix, "%d", p->prefix_len);
		if (p->mask == FA_MASK_SLIDING_WINDOW)
			snprintf(window, sizeof window, "%d", p->window);
		fprintf(f,
			", \"batch\": %d, \"heads\": %d, \"kv_heads\": %d, \"q_len\": %d, "
			"\"kv_len\": %d, \"head_dim\": %d, \"head_dim_v\": %d, \"dtype\": \"%s\", "
			"\"mask\": \"%s\", \"prefix_len\": %s, \"window\": %s, \"layout\": \"%s\", "
			"\"input\": \"%s\", \"pass\": \"%s\", \"varlen\": %d, \"total_q\": %d, "
			"\"total_k\": %d, \"scale\": %.9g, \"seed\": \"%llu\"",
			p->batch, p->heads, p->kv_heads, p->q_len, p->kv_len, p->head_dim, p->head_dim_v,
			fa_dtype_name(p->dtype), fa_mask_name(p->mask), prefix, window,
			fa_layout_name(p->layout), fa_dist_name(c->dist), fa_pass_name(c->pass),
			p->varlen, p->total_q,
			p->total_k, (double)p->scale, (unsigned long long)c->seed);
		json_ints(f, "seqlens", p->varlen ? c->cu_seqlens_q : NULL, p->batch, 1);
		json_ints(f, "kv_seqlens", p->varlen ? c->cu_seqlens_k : NULL, p->batch, 1);
		json_ints(f, "prefix_lens", c->prefix_lens, p->batch, 0);
		if (c->depth)
			fprintf(f, ", \"depth\": %d", c->depth);
		if (c->n_tags) {
			fputs(", \"tags\": [", f);
			for (int k = 0; k < c->n_tags; k++) {
				if (k)
					fputs(", ", f);
				fa_table_json_tag_open(f, &c->tags[k]);
				fputc('}', f);
			}
			fputc(']', f);
		}
		fprintf(f, ", \"flops\": %.17g, \"bytes\": %.17g}",
			fa_problem_flops(p, c->cu_seqlens_q, c->cu_seqlens_k, c->prefix_lens) *
			fa_pass_flops_factor(c->pass),
			fa_problem_bytes(p, c->cu_seqlens_q, c->cu_seqlens_k, c->pass));
	}
	fprintf(f, "\n]}\n");
}

int fa_cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {{"where", required_argument, 0, 'w'},
						 {"seed", required_argument, 0, 's'},
						 {"format", required_argument, 0, 'f'},
						 {"help", no_argument, 0, 'h'},
						 {0, 0, 0, 0}};
	const char *where = NULL, *format = "text";
	uint64_t seed = 0;
	struct fa_suite s;
	struct fa_err err;
	int c;
	char *end;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w': where = optarg; break;
		case 's':
			errno = 0;
			seed = strtoull(optarg, &end, 0);
			if (errno || *end || seed == 0 || optarg[0] == '-')
				return fa_cmd_usage_error("list", usage_text,
							  "--seed '%s' is not a positive integer", optarg);
			break;
		case 'f': format = optarg; break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("list", usage_text, c, argv);
		}
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)
		return fa_cmd_usage_error("list", usage_text, "--format '%s' must be text or json",
					  format);
	if (optind >= argc)
		return fa_cmd_usage_error("list", usage_text, "missing SUITE.yaml");
	if (optind + 1 < argc)
		return fa_cmd_usage_error("list", usage_text, "unexpected argument '%s'",
					  argv[optind + 1]);
	fa_err_clear(&err);
	memset(&s, 0, sizeof s);
	if (fa_suite_load(argv[optind], seed, &s, &err) != FA_OK)
		return fa_cmd_fail("list", &err);
	if (where && fa_suite_filter(&s, where, &err) != FA_OK) {
		fa_suite_free(&s);
		return fa_cmd_fail("list", &err);
	}
	if (where && s.n_cases == 0) {
		fa_err_set(&err, FA_ERR_INPUT, "no case of suite %s matches --where '%s'", s.name,
			   where);
		fa_suite_free(&s);
		return fa_cmd_fail("list", &err);
	}
	if (strcmp(format, "json") == 0) {
		print_json(&s, stdout);
	} else {
		/* labels of repeats kept on one case: say how many, so that a
		 * grid of models x shapes that lists fewer cases is explained */
		long labels = 0, shared = 0;
		for (int i = 0; i < s.n_cases; i++) {
			labels += s.cases[i].n_tags;
			shared += s.cases[i].n_tags > 1;
		}
		printf("%d case%s in suite %s (%s), seed %llu", s.n_cases, s.n_cases == 1 ? "" : "s",
		       s.name, s.path, (unsigned long long)s.seed);
		if (shared)
			printf("; %ld labels on them (%ld case%s of one shape named by several)", labels,
			       shared, shared == 1 ? "" : "s");
		putchar('\n');
		for (int i = 0; i < s.n_cases; i++) {
			const struct fa_case *ci = &s.cases[i];
			printf("%5d  %s", ci->index + 1, ci->key); /* from 1, as run */
			if (ci->depth > 0) /* not in the key: kv_len holds it */
				printf("  depth %d", (int)ci->depth);
			/* the models (tags) that share the shape */
			for (int k = 0; k < ci->n_tags; k++)
				printf("%s%s", k ? ", " : "  [", ci->tags[k].name);
			printf("%s\n", ci->n_tags ? "]" : "");
		}
	}
	fa_suite_free(&s);
	return FA_EXIT_OK;
}
