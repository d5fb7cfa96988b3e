/* cmd_devices.c - `fabench devices`: each backend, whether it loaded (and
 * why not), and its device; then each kernel plugin and the backends it
 * joined (or why it joined none). */
#include <string.h>

#include "cmd.h"
#include "../base/util.h"
#include "../base/text.h"

int fa_cmd_devices(int argc, char **argv)
{
	struct fa_registry reg;
	struct fa_err err;
	char t[1100]; /* a plugin's text, control characters shown as '?' */
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: fabench devices\n\nLists every backend fabench knows: loaded with its "
		       "device (name, architecture,\ndriver, runtime, memory, units, cache), or "
		       "the reason it did not load;\nthen every kernel plugin found (FABENCH_PLUGINS, "
		       "plugins/ next to fabench): the\nbackends it added kernels to, or why not.\n");
		return FA_EXIT_OK;
	}
	if (argc > 1)
		return fa_cmd_usage_error("devices", "usage: fabench devices",
					  "unexpected argument '%s'", argv[1]);
	fa_err_clear(&err);
	if (fa_cmd_registry(&reg, &err) != FA_OK)
		return fa_cmd_fail("devices", &err);
	for (int i = 0; i < reg.n; i++) {
		const struct fa_backend_slot *s = &reg.slots[i];
		if (!s->loaded) {
			printf("%-5s not loaded: %s\n", s->name, fa_printable(s->why, t, sizeof t));
			continue;
		}
		const struct fa_device_info *d = &s->info;
		char tot[32], fr[32], l2[32];
		fa_format_bytes((double)d->mem_total_bytes, tot, sizeof tot);
		fa_format_bytes((double)d->mem_free_bytes, fr, sizeof fr);
		fa_format_bytes((double)d->l2_bytes, l2, sizeof l2);
		printf("%-5s %s\n", s->name, fa_printable(d->name, t, sizeof t));
		printf("      arch %s, driver %s, runtime %s\n", d->arch, d->driver[0] ? d->driver : "-",
		       d->runtime[0] ? d->runtime : "-");
		printf("      memory %s (%s free), %d units, last-level cache %s%s%s\n", tot, fr,
		       d->sm_count, l2, s->path[0] ? ", plugin " : "", s->path);
	}
	for (int i = 0; i < reg.n_plugins; i++) {
		const struct fa_kernel_plugin_slot *p = &reg.plugins[i];
		if (!p->n_att) {
			printf("plugin %s: not loaded: %s\n", p->path, fa_printable(p->why, t, sizeof t));
			continue;
		}
		printf("plugin %s (%s)\n", p->name[0] ? fa_printable(p->name, t, sizeof t) : "?", p->path);
		for (int j = 0; j < p->n_att; j++)
			printf("      %d kernel%s for %s\n", p->att[j].n_kernels,
			       p->att[j].n_kernels == 1 ? "" : "s", reg.slots[p->att[j].slot].name);
		if (p->why[0])
			printf("      not for %s\n", fa_printable(p->why, t, sizeof t));
	}
	fa_registry_free(&reg);
	return FA_EXIT_OK;
}
