/* err.c - the first-error record and its printing with a caret under the
 * offending column. */
#include "err.h"

#include <stdlib.h>
#include <string.h>

void fa_err_clear(struct fa_err *e)
{
	if (!e)
		return;
	e->rc = FA_OK;
	e->msg[0] = '\0';
	e->file[0] = '\0';
	e->line = e->col = 0;
	e->text[0] = '\0';
}

void fa_err_set_text(struct fa_err *e, const char *text)
{
	if (e && e->rc == FA_ERR_INPUT)
		snprintf(e->text, sizeof e->text, "%s", text);
}

enum fa_rc fa_err_setv(struct fa_err *e, enum fa_rc rc, const char *fmt, va_list ap)
{
	if (!e || e->rc != FA_OK)
		return rc;
	e->rc = rc;
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	e->file[0] = '\0';
	e->line = e->col = 0;
	e->text[0] = '\0';
	return rc;
}

enum fa_rc fa_err_set(struct fa_err *e, enum fa_rc rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fa_err_setv(e, rc, fmt, ap);
	va_end(ap);
	return rc;
}

enum fa_rc fa_err_at(struct fa_err *e, const struct fa_loc *loc, const char *fmt, ...)
{
	va_list ap;
	if (!e || e->rc != FA_OK)
		return FA_ERR_INPUT;
	va_start(ap, fmt);
	fa_err_setv(e, FA_ERR_INPUT, fmt, ap);
	va_end(ap);
	if (loc && loc->file) {
		snprintf(e->file, sizeof e->file, "%s", loc->file);
		e->line = loc->line;
		e->col = loc->col;
	}
	return FA_ERR_INPUT;
}

/* Reads line `line` (1-based) of path into buf without its newline.
 * Returns 0 on success. */
static int read_line(const char *path, int line, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	int n = 1, c;
	size_t len = 0;
	if (!f)
		return -1;
	while (n < line && (c = fgetc(f)) != EOF)
		if (c == '\n')
			n++;
	if (n != line) {
		fclose(f);
		return -1;
	}
	while ((c = fgetc(f)) != EOF && c != '\n' && c != '\r')
		if (len + 1 < size)
			buf[len++] = (char)c;
	buf[len] = '\0';
	fclose(f);
	return 0;
}

void fa_err_print(const struct fa_err *e, FILE *f, const char *prefix)
{
	char text[1024];
	if (!e->file[0]) {
		fprintf(f, "%s: error: %s\n", prefix ? prefix : "fabench", e->msg);
		return;
	}
	if (e->line > 0)
		fprintf(f, "%s:%d:%d: %s\n", e->file, e->line, e->col, e->msg);
	else
		fprintf(f, "%s: %s\n", e->file, e->msg);
	if (e->text[0])
		snprintf(text, sizeof text, "%s", e->text);
	if (e->line > 0 && (e->text[0] || read_line(e->file, e->line, text, sizeof text) == 0)) {
		char num[16];
		int w = snprintf(num, sizeof num, "%d", e->line);
		fprintf(f, " %s | %s\n", num, text);
		fprintf(f, " %*s | ", w, "");
		/* keep tabs so the caret lines up under tab-indented text */
		for (int i = 0; i + 1 < e->col && text[i]; i++)
			fputc(text[i] == '\t' ? '\t' : ' ', f);
		fputs("^\n", f);
	}
}

const char *fa_rc_name(enum fa_rc rc)
{
	static const char *const names[] = {
		[FA_OK] = "ok",
		[FA_ERR_USAGE] = "usage",
		[FA_ERR_INPUT] = "input",
		[FA_ERR_IO] = "io",
		[FA_ERR_NOMEM] = "nomem",
		[FA_ERR_DB] = "db",
		[FA_ERR_BACKEND] = "backend",
		[FA_ERR_UNSUPPORTED] = "unsupported",
		[FA_ERR_TIMEOUT] = "timeout",
		[FA_ERR_CANCELLED] = "cancelled",
		[FA_ERR_NOT_FOUND] = "not_found",
		[FA_ERR_INTERNAL] = "internal",
		[FA_ERR_STICKY] = "sticky",
	};
	if ((unsigned)rc < sizeof names / sizeof names[0] && names[rc])
		return names[rc];
	return "unknown";
}
