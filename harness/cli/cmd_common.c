/* cmd_common.c - what the commands share: error printing, usage errors, the
 * registry and the default database. */
#include <stdarg.h>
#include <stdlib.h>

#include "cmd.h"
#include "../base/util.h"

int fa_cmd_fail(const char *cmd, const struct fa_err *e)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "fabench %s", cmd);
	fa_err_print(e, stderr, prefix);
	/* a missing file, database, run or kernel the user named is bad input too */
	return (e->rc == FA_ERR_USAGE || e->rc == FA_ERR_INPUT || e->rc == FA_ERR_NOT_FOUND)
		       ? FA_EXIT_USAGE
		       : FA_EXIT_FAIL;
}

int fa_cmd_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fabench %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s\nsee 'fabench %s --help'\n", usage, cmd);
	return FA_EXIT_USAGE;
}

enum fa_rc fa_cmd_registry(struct fa_registry *r, struct fa_err *err)
{
	char dir[1024];
	fa_exe_dir(dir, sizeof dir);
	return fa_registry_load(r, dir, err);
}

const char *fa_cmd_default_db(void)
{
	const char *env = getenv("FABENCH_DB");
	return env && *env ? env : "results/fabench.db";
}
