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

/* Characters kept left of the column when a line is too long for the
 * buffer: more than print_excerpt shows (60). */
#define EXCERPT_KEEP 200

/* Reads line `line` (1-based) of path into buf without its newline; on a
 * line longer than buf, the characters more than EXCERPT_KEEP left of
 * column col are left out, so that the column stays in buf, and *skipped
 * says how many (0 otherwise). Returns 0 on success. */
static int read_line(const char *path, int line, int col, char *buf, size_t size, int *skipped)
{
	FILE *f = fopen(path, "r");
	int n = 1, c, chars = 0, drop = col - 1 - EXCERPT_KEEP;
	size_t len = 0;
	*skipped = 0;
	if (!f)
		return -1;
	while (n < line && (c = fgetc(f)) != EOF)
		if (c == '\n')
			n++;
	if (n != line) {
		fclose(f);
		return -1;
	}
	if (line == 1 && drop > 0) { /* columns count from after a byte order mark */
		int b0 = fgetc(f), b1 = fgetc(f), b2 = fgetc(f);
		if (!(b0 == 0xef && b1 == 0xbb && b2 == 0xbf) && fseek(f, 0, SEEK_SET) != 0) {
			fclose(f);
			return -1;
		}
	}
	while ((c = fgetc(f)) != EOF && c != '\n' && c != '\r') {
		if ((c & 0xc0) != 0x80 && chars++ < drop)
			continue; /* a character's first byte, left out */
		if (chars <= drop)
			continue; /* the rest of a character left out */
		if (len + 1 < size)
			buf[len++] = (char)c;
	}
	buf[len] = '\0';
	*skipped = drop > 0 && chars > drop ? drop : 0;
	fclose(f);
	return 0;
}

/* Line `line` (1-based) of text into buf, or -1 when text has fewer lines;
 * a long line cut as read_line cuts it. */
static int text_line(const char *text, int line, int col, char *buf, size_t size, int *skipped)
{
	int chars = 0, drop = col - 1 - EXCERPT_KEEP;
	*skipped = 0;
	for (int n = 1; n < line; n++) {
		const char *nl = strchr(text, '\n');
		if (!nl)
			return -1;
		text = nl + 1;
	}
	size_t len = strcspn(text, "\r\n");
	if (drop > 0) {
		size_t i = 0;
		for (; i < len; i++)
			if (((unsigned char)text[i] & 0xc0) != 0x80 && chars++ == drop)
				break;
		if (i < len) {
			text += i;
			len -= i;
			*skipped = drop;
		}
	}
	if (len >= size)
		len = size - 1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	return 0;
}

/* The excerpt of an error: line text with a caret under column col (in
 * characters; a tab stays a tab so the caret lines up). A long line is
 * cut to a window around the column, marked with "...". Control characters
 * print as '?'. */
static void print_excerpt(FILE *f, int line, const char *text, int col)
{
	enum { WIDE = 120, BEFORE = 60, AFTER = 60 };
	char num[16];
	int w = snprintf(num, sizeof num, "%d", line);
	/* the byte offsets of the window's first character and of the column */
	size_t start = 0, at = 0, len = strlen(text), chars = 0;
	for (size_t i = 0; i < len; i++)
		chars += ((unsigned char)text[i] & 0xc0) != 0x80;
	int c = 1;
	while (at < len && c < col) {
		at++;
		while (at < len && ((unsigned char)text[at] & 0xc0) == 0x80)
			at++;
		c++;
	}
	int skipped = 0;
	if (chars > WIDE && col - 1 > BEFORE + 20) { /* start BEFORE characters left of the column */
		int back = 0;
		start = at;
		while (start > 0 && back < BEFORE) {
			start--;
			while (start > 0 && ((unsigned char)text[start] & 0xc0) == 0x80)
				start--;
			back++;
		}
		skipped = 1;
	}
	size_t end = chars > WIDE ? at : len;
	for (int k = 0; end < len && k < AFTER; k++) {
		end++;
		while (end < len && ((unsigned char)text[end] & 0xc0) == 0x80)
			end++;
	}
	fprintf(f, " %s | %s", num, skipped ? "..." : "");
	for (size_t i = start; i < end; i++)
		fputc((unsigned char)text[i] < 0x20 && text[i] != '\t' ? '?' : text[i], f);
	fprintf(f, "%s\n", end < len ? "..." : "");
	fprintf(f, " %*s | %s", w, "", skipped ? "   " : "");
	for (size_t i = start; i < at; i++)
		if (((unsigned char)text[i] & 0xc0) != 0x80)
			fputc(text[i] == '\t' ? '\t' : ' ', f);
	fputs("^\n", f);
}

/* s as a terminal may show it: a message quotes input (a YAML key or value
 * with its escapes decoded, a plugin's device name), so each control
 * character and each C1 control in UTF-8 prints as '?', as in the excerpt;
 * with `lines`, line feeds and tabs stay (a message that is not about input
 * may hold lines: gnuplot's stderr). */
static void put_plain(FILE *f, const char *s, int lines)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			fputc('?', f);
			p++;
		} else if ((*p < 0x20 && !(lines && (*p == '\n' || *p == '\t'))) || *p == 0x7f) {
			fputc('?', f);
		} else {
			fputc(*p, f);
		}
	}
}

void fa_err_print(const struct fa_err *e, FILE *f, const char *prefix)
{
	char text[4096];
	/* a message quotes input (a suite's value, a command line's argument:
	 * "tag: \"ok\\nfabench: all fine\"", --db $'x\nfabench: ok'), which must
	 * not make lines of its own; only a tool's failure keeps the lines of
	 * the tool's own output (gnuplot's stderr) */
	const int lines = e->rc == FA_ERR_BACKEND && !e->file[0];
	if (!e->file[0]) {
		fprintf(f, "%s: error: ", prefix ? prefix : "fabench");
		put_plain(f, e->msg, lines);
		fputc('\n', f);
		return;
	}
	put_plain(f, e->file, 0);
	if (e->line > 0)
		fprintf(f, ":%d:%d", e->line, e->col);
	fputs(": ", f);
	put_plain(f, e->msg, lines);
	fputc('\n', f);
	int skipped = 0;
	if (e->line > 0 &&
	    (e->text[0] ? text_line(e->text, e->line, e->col, text, sizeof text, &skipped) == 0
			: read_line(e->file, e->line, e->col, text, sizeof text, &skipped) == 0)) {
		/* columns count from after a byte order mark (libyaml's marks,
		 * import's): the excerpt leaves it out so that the caret lines up */
		if (e->line == 1 && !skipped && strncmp(text, "\xef\xbb\xbf", 3) == 0)
			memmove(text, text + 3, strlen(text + 3) + 1);
		print_excerpt(f, e->line, text, e->col - skipped);
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
