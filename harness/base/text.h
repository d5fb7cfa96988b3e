/* text.h - small text helpers shared by the stages that read input: the
 * edit distance behind every "did you mean" (suite keys and parameters,
 * where-expressions, kernel names, import columns), UTF-8 validation and
 * the columns of input errors.
 */
#ifndef FA_TEXT_H
#define FA_TEXT_H

#include <stddef.h>

#include "err.h"

/* Edit distance of a and b (Levenshtein), capped at 3: names closer than 3
 * are the only ones worth suggesting. Strings longer than 62 bytes are
 * always 3 away. */
int fa_edit_distance(const char *a, const char *b);

/* The length (1..4) of the valid UTF-8 sequence at p, before end; 0 when
 * it is not one (overlong forms, surrogates, past U+10FFFF, cut short). */
int fa_utf8_len(const unsigned char *p, const unsigned char *end);

/* The value of hex digit c (0-9, a-f, A-F), or -1. */
int fa_hex_digit(int c);

/* The 1-based column of at on the line that starts at line_start, in
 * characters as libyaml's marks and fa_err_print's caret count them: every
 * byte that does not continue a UTF-8 sequence (0x80..0xbf) is one, so a
 * tab is one column and an invalid byte one as well. */
int fa_utf8_col(const char *line_start, const char *at);

/* The same for a reader that asks again and again along one line: it
 * counts on from the column it gave last (m starts zeroed), so a line of
 * many values costs its length once, not once per value. */
struct fa_utf8_cols {
	const char *line_start, *at;
	int col;
};
int fa_utf8_col_next(struct fa_utf8_cols *m, const char *line_start, const char *at);

/* Checks that no item of list, the comma-separated part of an option's
 * value arg (list points into arg: the values after "NAME=" of --param, the
 * whole of --by), is empty or only blanks: "8,,16", "8, ,16", "8,16," and
 * ",8" each hold one, and so does "". Returns FA_OK, or FA_ERR_INPUT in err
 * pointing into arg as file `option`, line 1, at the column (in characters)
 * where the first empty item begins: "an empty item: give WHAT between the
 * commas", arg as its text (fa_err_print shows it with a caret). */
enum fa_rc fa_list_check_items(const char *option, const char *arg, const char *list,
			       const char *what, struct fa_err *err);

/* s as a terminal may print it: each control character (below 0x20, 0x7f,
 * and the C1 controls U+0080..U+009F written in UTF-8: an escape sequence a
 * plugin's text could carry) becomes '?', into buf (cut to size); returns
 * buf. NULL reads as "". */
const char *fa_printable(const char *s, char *buf, size_t size);

#endif /* FA_TEXT_H */
