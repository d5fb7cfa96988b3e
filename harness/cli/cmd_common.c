/* cmd_common.c - what the commands share: error printing, usage errors, the
 * registry, the default database, --output files written only on success,
 * and the option values several commands take (--min-effect, --alpha,
 * --format). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"

#include "../base/text.h"
#include "../base/util.h"
#include "../report/report.h"

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
	char msg[4096], plain[sizeof msg];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* the message quotes input (an option as given, a stored run's command
	 * line): no escape sequence of it reaches the terminal */
	fprintf(stderr, "fabench %s: %s", cmd, fa_printable(msg, plain, sizeof plain));
	fprintf(stderr, "\n%s\nsee 'fabench %s --help'\n", usage, cmd);
	return FA_EXIT_USAGE;
}

int fa_cmd_check_text(const char *cmd, const char *usage, const char *option, const char *text)
{
	const unsigned char *end = (const unsigned char *)text + strlen(text);
	int chars = 1;
	for (const unsigned char *p = (const unsigned char *)text; *p; chars++) {
		int n = fa_utf8_len(p, end);
		if (*p < 0x20 || *p == 0x7f)
			return fa_cmd_usage_error(cmd, usage,
						  "%s holds a control character (0x%02x) at character "
						  "%d: it is stored and printed, so it must be plain text",
						  option, *p, chars);
		/* as a suite's text and an imported file's must be */
		if (n == 0)
			return fa_cmd_usage_error(cmd, usage,
						  "%s holds a byte that is not UTF-8 (0x%02x) at character "
						  "%d: it is stored and printed, so it must be plain text",
						  option, *p, chars);
		p += n;
	}
	return 0;
}

int fa_cmd_option_error(const char *cmd, const char *option, const char *text, size_t at,
			const char *fmt, ...)
{
	struct fa_err err;
	va_list ap;
	char msg[FA_ERR_MSG_MAX];
	const size_t len = strlen(text);
	const int col = fa_utf8_col(text, text + (at < len ? at : len));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const struct fa_loc loc = {option, 1, col};
	fa_err_clear(&err);
	fa_err_at(&err, &loc, "%s", msg);
	fa_err_set_text(&err, text);
	return fa_cmd_fail(cmd, &err);
}

int fa_cmd_bad_option(const char *cmd, const char *usage, int c, char **argv)
{
	const char *opt = optind > 0 ? argv[optind - 1] : "?";
	if (c == ':')
		return fa_cmd_usage_error(cmd, usage, "option '%s' needs a value", opt);
	return fa_cmd_usage_error(cmd, usage, "unknown option '%s'", opt);
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

int fa_cmd_parse_number(const char *s, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return end == s || *end || errno || !isfinite(*v) ? -1 : 0;
}

int fa_cmd_opt_min_effect(const char *cmd, const char *usage, const char *arg, double *fraction)
{
	double v;
	if (fa_cmd_parse_number(arg, &v) != 0 || v < 0 || v >= 100)
		return fa_cmd_usage_error(cmd, usage, "--min-effect '%s' must be a percentage in [0, 100)",
					  arg);
	*fraction = v / 100;
	return 0;
}

int fa_cmd_opt_alpha(const char *cmd, const char *usage, const char *arg, double *alpha)
{
	double v;
	if (fa_cmd_parse_number(arg, &v) != 0 || !(v > 0 && v < 1))
		return fa_cmd_usage_error(cmd, usage, "--alpha '%s' must be between 0 and 1", arg);
	*alpha = v;
	return 0;
}

int fa_cmd_opt_table_format(const char *cmd, const char *usage, const char *arg, int *format)
{
	int f = fa_report_format_parse(arg);
	if (f != FA_FMT_MD && f != FA_FMT_CSV && f != FA_FMT_JSON)
		return fa_cmd_usage_error(cmd, usage, "--format '%s' must be md, csv or json", arg);
	*format = f;
	return 0;
}

int fa_cmd_out_open(const char *cmd, const char *path, struct fa_cmd_out *o)
{
	memset(o, 0, sizeof *o);
	o->path = path;
	if (!path) {
		o->f = stdout;
		return 0;
	}
	if (fa_path_writable(path) != 0) {
		fprintf(stderr, "fabench %s: cannot write '%s': %s\n", cmd, path, strerror(errno));
		return FA_EXIT_FAIL;
	}
	if (!(o->f = open_memstream(&o->text, &o->len))) {
		fprintf(stderr, "fabench %s: cannot write '%s': %s\n", cmd, path, strerror(errno));
		return FA_EXIT_FAIL;
	}
	return 0;
}

int fa_cmd_out_close(const char *cmd, struct fa_cmd_out *o, int keep)
{
	int status = 0;
	if (!o->path || !o->f)
		return 0;
	if (fclose(o->f) != 0 && keep) {
		fprintf(stderr, "fabench %s: cannot write '%s': %s\n", cmd, o->path,
			strerror(errno));
		status = FA_EXIT_FAIL;
	} else if (keep && fa_replace_file(o->path, o->text ? o->text : "", o->len) != 0) {
		fprintf(stderr, "fabench %s: cannot write '%s': %s\n", cmd, o->path,
			strerror(errno));
		status = FA_EXIT_FAIL;
	}
	free(o->text);
	o->f = NULL;
	o->text = NULL;
	return status;
}
