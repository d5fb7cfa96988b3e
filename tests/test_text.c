/* test_text.c - the text helpers of harness/base/text.h: the edit distance
 * behind every "did you mean". */
#include <string.h>

#include "../harness/base/text.h"
#include "test.h"

FA_TEST(text, edit_distance)
{
	char long_a[80], long_b[80];
	FA_CHECK(fa_edit_distance("", "") == 0);
	FA_CHECK(fa_edit_distance("heads", "heads") == 0);
	FA_CHECK(fa_edit_distance("heds", "heads") == 1);      /* insertion */
	FA_CHECK(fa_edit_distance("headss", "heads") == 1);    /* deletion */
	FA_CHECK(fa_edit_distance("haeds", "heads") == 2);     /* no transpositions */
	FA_CHECK(fa_edit_distance("q_len", "kv_len") == 2);    /* substitution + insertion */
	FA_CHECK(fa_edit_distance("dtype", "mask") == 3);      /* capped */
	FA_CHECK(fa_edit_distance("", "abcdefgh") == 3);
	FA_CHECK(fa_edit_distance("cpu_flash", "cpu_dense") == 3);
	/* symmetric */
	FA_CHECK(fa_edit_distance("window", "widow") == fa_edit_distance("widow", "window"));
	/* longer than 62 bytes: always 3, even when equal */
	memset(long_a, 'a', 63);
	long_a[63] = '\0';
	memcpy(long_b, long_a, 64);
	FA_CHECK(fa_edit_distance(long_a, long_b) == 3);
	long_a[62] = '\0';
	long_b[62] = '\0';
	FA_CHECK(fa_edit_distance(long_a, long_b) == 0);
}

FA_TEST(text, utf8_len)
{
	static const struct {
		const char *s;
		int len; /* of the whole string, which is one sequence, or 0 */
	} cases[] = {
		{"a", 1},
		{"\xc3\xa9", 2},         /* e acute */
		{"\xe2\x82\xac", 3},     /* euro sign */
		{"\xf0\x9f\x98\x80", 4}, /* an emoji */
		{"\xc0\xaf", 0},         /* overlong '/' */
		{"\xe0\x80\xaf", 0},     /* overlong in 3 */
		{"\xed\xa0\x80", 0},     /* a surrogate */
		{"\xf4\x90\x80\x80", 0}, /* past U+10FFFF */
		{"\x80", 0},             /* a continuation byte first */
		{"\xc3(", 0},            /* a bad continuation */
		{"\xff", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const unsigned char *p = (const unsigned char *)cases[i].s;
		FA_CHECKF(fa_utf8_len(p, p + strlen(cases[i].s)) == cases[i].len, "case %zu", i);
	}
	/* cut short by end */
	const unsigned char *euro = (const unsigned char *)"\xe2\x82\xac";
	FA_CHECK(fa_utf8_len(euro, euro + 2) == 0);
}

/* Columns count characters, as libyaml's marks and the caret of
 * fa_err_print do: a UTF-8 sequence is one column, a tab one. */
FA_TEST(text, utf8_col_counts_characters)
{
	static const char line[] = "\xc3\xa9\xc3\xa9,\tx\xe2\x82\xac\xf0\x9f\x98\x80y";
	FA_CHECK(fa_utf8_col(line, line) == 1);
	FA_CHECK(fa_utf8_col(line, line + 2) == 2);            /* after one e-acute */
	FA_CHECK(fa_utf8_col(line, strchr(line, ',')) == 3);   /* two characters, four bytes */
	FA_CHECK(fa_utf8_col(line, strchr(line, 'x')) == 5);   /* the tab is one */
	FA_CHECK(fa_utf8_col(line, strchr(line, 'y')) == 8);   /* euro and an emoji: one each */
	static const char bad[] = "\xff" "a";
	FA_CHECK(fa_utf8_col(bad, bad + 1) == 2); /* an invalid byte is one */
}

/* Counting on along a line gives what counting from its start gives, and
 * starts over on another line or going back. */
FA_TEST(text, utf8_col_next_counts_on)
{
	static const char text[] = "\xc3\xa9" "a\xe2\x82\xac,b\nx\xc3\xa9" "y";
	const char *line2 = strchr(text, '\n') + 1;
	struct fa_utf8_cols m = {0};
	for (const char *p = text; p < line2 - 1; p++)
		FA_CHECKF(fa_utf8_col_next(&m, text, p) == fa_utf8_col(text, p), "at %d",
			  (int)(p - text));
	FA_CHECK(fa_utf8_col_next(&m, text, text + 3) == 3); /* back: from the start */
	FA_CHECK(fa_utf8_col_next(&m, line2, strchr(line2, 'y')) == 3);
	FA_CHECK(fa_utf8_col_next(&m, line2, line2) == 1);
}

/* The hex digits of JSON's \u, YAML's \x \u \U and the import's columns. */
FA_TEST(text, hex_digit)
{
	FA_CHECK(fa_hex_digit('0') == 0 && fa_hex_digit('9') == 9 && fa_hex_digit('a') == 10 &&
		 fa_hex_digit('F') == 15 && fa_hex_digit('f') == 15);
	FA_CHECK(fa_hex_digit('g') == -1 && fa_hex_digit('G') == -1 && fa_hex_digit(' ') == -1 &&
		 fa_hex_digit(0) == -1 && fa_hex_digit(0xc3) == -1);
}

/* A plugin's text as kernels and devices print it: an escape sequence
 * (ESC [ 2 J clears the screen) loses its control characters; UTF-8 and
 * plain text stay; the buffer's size cuts it. */
FA_TEST(text, printable)
{
	char buf[32];
	FA_CHECK(strcmp(fa_printable("a\x1b[2Jb\x07" "c\x7f", buf, sizeof buf), "a?[2Jb?c?") == 0);
	FA_CHECK(strcmp(fa_printable("tiles \xc3\xa9t\xc3\xa9", buf, sizeof buf),
			"tiles \xc3\xa9t\xc3\xa9") == 0);
	/* CSI as the C1 control U+009B (C2 9B), which xterm obeys as ESC [ */
	FA_CHECK(strcmp(fa_printable("a\xc2\x9b" "2Jb\xc2\xa0", buf, sizeof buf),
			"a?2Jb\xc2\xa0") == 0);
	FA_CHECK(strcmp(fa_printable(NULL, buf, sizeof buf), "") == 0);
	FA_CHECK(strcmp(fa_printable("abcdef", buf, 4), "abc") == 0);
}
