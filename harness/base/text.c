/* text.c - the text helpers of text.h. */
#include "text.h"

#include <stdint.h>
#include <string.h>

int fa_edit_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	int row[64];
	if (la > 62 || lb > 62)
		return 3;
	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		int prev = row[0];
		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int cur = row[j];
			int best = prev + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	return row[lb] > 3 ? 3 : row[lb];
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one. */
int fa_utf8_len(const unsigned char *p, const unsigned char *end)
{
	int n;
	uint32_t cp;
	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if (end - p < n)
		return 0;
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

int fa_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int fa_utf8_col(const char *line_start, const char *at)
{
	int col = 1;
	for (const char *p = line_start; p < at; p++)
		col += ((unsigned char)*p & 0xc0) != 0x80;
	return col;
}

int fa_utf8_col_next(struct fa_utf8_cols *m, const char *line_start, const char *at)
{
	if (m->line_start != line_start || !m->at || at < m->at) {
		m->line_start = line_start;
		m->at = line_start;
		m->col = 1;
	}
	for (; m->at < at; m->at++)
		m->col += ((unsigned char)*m->at & 0xc0) != 0x80;
	return m->col;
}

enum fa_rc fa_list_check_items(const char *option, const char *arg, const char *list,
			       const char *what, struct fa_err *err)
{
	for (const char *item = list;; item++) {
		const size_t n = strcspn(item, ",");
		if (strspn(item, " \t") >= n) {
			const struct fa_loc loc = {option, 1, fa_utf8_col(arg, item)};
			enum fa_rc rc = fa_err_at(err, &loc,
						  "an empty item: give %s between the commas", what);
			fa_err_set_text(err, arg);
			return rc;
		}
		item += n;
		if (!*item)
			return FA_OK;
	}
}

const char *fa_printable(const char *s, char *buf, size_t size)
{
	size_t n = 0;
	if (!size)
		return "";
	for (; s && *s && n + 1 < size; s++, n++) {
		/* U+0080..U+009F (C2 80..C2 9F): the C1 controls, CSI among them,
		 * which xterm obeys in UTF-8 too */
		if ((unsigned char)s[0] == 0xc2 && (unsigned char)s[1] >= 0x80 &&
		    (unsigned char)s[1] <= 0x9f) {
			buf[n] = '?';
			s++;
			continue;
		}
		buf[n] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	}
	buf[n] = '\0';
	return buf;
}
