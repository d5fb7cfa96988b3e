/* cmd_kernels.c - `fabench kernels`: every registered kernel with the
 * dtypes, head sizes and tunables it supports (and, for a kernel plugin's,
 * the file it came from), and the backends that did not load (with why). */
#include <getopt.h>
#include <string.h>

#include "cmd.h"
#include "../suite/suite.h"
#include "../base/text.h"

static const char usage_text[] = "usage: fabench kernels [--backend NAME]";

static void help(void)
{
	printf("%s\n\nLists the kernels of every loaded backend (or of one): name, dtypes,\n"
	       "head sizes, tunable parameters (default and allowed values) and what it is.\n"
	       "Kernels added by a kernel plugin say the file they came from. Backends that\n"
	       "did not load are listed with the reason (`fabench devices` lists plugins),\n"
	       "and with their kernels and plugin file where the plugin can list them\n"
	       "without a device (the HIP plugin on a machine without an AMD GPU).\n",
	       usage_text);
}

static void print_kernel(const struct fa_kernel *k, const char *from)
{
	char dt[32] = "";
	for (int d = 0; d < FA_DTYPE_COUNT; d++)
		if (k->dtypes & (1u << d)) {
			if (dt[0])
				strcat(dt, ",");
			strcat(dt, fa_dtype_name(d));
		}
	printf("  %-28s %-15s ", k->name, dt);
	if (k->head_dims) {
		for (int i = 0; i < k->n_head_dims; i++)
			printf("%s%d", i ? "," : "", k->head_dims[i]);
	} else {
		printf("%d..%d", k->head_dim_min, k->head_dim_max);
	}
	char t[1100]; /* a plugin's text, control characters shown as '?' */
	printf("\n      %s\n", fa_printable(k->description, t, sizeof t));
	if (from)
		printf("      from %s\n", from);
	for (int i = 0; i < k->n_params; i++) {
		const struct fa_kernel_param *p = &k->params[i];
		printf("      param %s = %d", p->name, p->default_value);
		if (p->allowed) {
			printf(" {");
			for (int j = 0; j < p->n_allowed; j++)
				printf("%s%d", j ? ", " : "", p->allowed[j]);
			printf("}");
		} else {
			printf(" [%d..%d]", p->min_value, p->max_value);
		}
		if (p->help)
			printf("  %s", fa_printable(p->help, t, sizeof t));
		printf("\n");
	}
}

int fa_cmd_kernels(int argc, char **argv)
{
	static const struct option longopts[] = {{"backend", required_argument, 0, 'b'},
						 {"help", no_argument, 0, 'h'},
						 {0, 0, 0, 0}};
	const char *only = NULL;
	struct fa_registry reg;
	struct fa_err err;
	char t[1100];
	int c, shown = 0;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': only = optarg; break;
		case 'h': help(); return FA_EXIT_OK;
		default:
			return fa_cmd_bad_option("kernels", usage_text, c, argv);
		}
	}
	if (optind < argc)
		return fa_cmd_usage_error("kernels", usage_text, "unexpected argument '%s'",
					  argv[optind]);
	fa_err_clear(&err);
	if (fa_cmd_registry(&reg, &err) != FA_OK)
		return fa_cmd_fail("kernels", &err);
	for (int i = 0; i < reg.n; i++) {
		struct fa_backend_slot *s = &reg.slots[i];
		if (only && strcmp(only, s->name) != 0)
			continue;
		shown++;
		if (!s->loaded) {
			printf("%s: not loaded: %s\n", s->name, fa_printable(s->why, t, sizeof t));
			/* a plugin that cannot start here may still list its kernels */
			if (s->n_idle_kernels > 0)
				printf("  its kernels (they cannot run here):\n");
			for (int j = 0; j < s->n_idle_kernels; j++)
				if (fa_kernel_visible(&s->idle_kernels[j]))
					print_kernel(&s->idle_kernels[j], s->path);
			continue;
		}
		printf("%s (%s):\n", s->name, fa_printable(s->info.name, t, sizeof t));
		int n = fa_backend_kernel_count(s);
		for (int j = 0; j < n; j++) {
			const struct fa_kernel *k = fa_backend_kernel_get(s, j);
			/* a kernel plugin's kernels say which file they came from */
			if (fa_kernel_visible(k))
				print_kernel(k, s->kernels[j].plugin >= 0
							? fa_registry_kernel_origin(&reg, s, j)
							: NULL);
		}
	}
	/* a kernel plugin that added nothing anywhere: why (its author looks
	 * here for the kernel) */
	for (int i = 0; i < reg.n_plugins; i++)
		if (reg.plugins[i].n_att == 0 && reg.plugins[i].why[0])
			printf("plugin %s: not loaded: %s\n", reg.plugins[i].path,
			       fa_printable(reg.plugins[i].why, t, sizeof t));
	fa_registry_free(&reg);
	if (only && !shown) {
		fprintf(stderr, "fabench kernels: no backend '%s' (known: cpu, cuda, hip)\n", only);
		return FA_EXIT_USAGE;
	}
	return FA_EXIT_OK;
}
