/* table.h - the text that the report, compare and history writers share:
 * markdown text and code spans, CSV fields, JSON numbers, the number
 * formats of their tables, and markdown tables printed with every column
 * padded to its widest cell.
 *
 * Every function here writes the same bytes for the same input, so the
 * writers built on them stay comparable byte for byte with golden files.
 */
#ifndef FA_TABLE_H
#define FA_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../base/err.h"

/* Digits of a commit hash that reports and tables print: 12 name a commit
 * unambiguously in practice. */
#define FA_TABLE_SHORT_COMMIT 12

/* The "schema_version" every JSON output (report, compare, history, list,
 * the manifests of run --dump) carries at its top level; docs/json.md
 * describes version 2. Raised when a member is removed or changes meaning;
 * adding a member keeps it. 2: compare's row "tags" became report's list
 * of label objects (it was the names joined by ", "). */
#define FA_JSON_SCHEMA_VERSION 2

/* The formats the writers (report, compare, history) produce; each says
 * which of them it takes. */
enum fa_report_format { FA_FMT_MD = 0, FA_FMT_CSV = 1, FA_FMT_JSON = 2, FA_FMT_HTML = 3 };

/* ---- Text ------------------------------------------------------------------- */

/* s as markdown text: '\\', '`', '*', '[', ']', '<' and '|' escaped with a
 * backslash ('_' is left alone: inside words, as in cpu_flash, it is
 * literal), line breaks and other control characters as spaces. NULL writes
 * nothing. */
void fa_table_md_text(FILE *f, const char *s);

/* s (not NULL) as a markdown code span: fenced with one backtick more than
 * the longest run of backticks in s, line breaks and other control
 * characters as spaces (a report is printed on terminals too). */
void fa_table_md_code(FILE *f, const char *s);

/* Writes s[0..len) to f as valid UTF-8: each byte that starts no valid
 * UTF-8 sequence (a plugin's device name or skip reason, a merged
 * database's text) as U+FFFD, the replacement character, as the JSON,
 * HTML, JUnit and gnuplot writers write it; valid text as it is. */
void fa_table_write_utf8(FILE *f, const char *s, size_t len);

/* The markdown and CSV writers (report, compare, history, tune,
 * build-matrix) write their text into memory and then through
 * fa_table_write_utf8, so that every byte of it, whichever function wrote
 * it, is valid UTF-8. fa_table_write_text calls fn(m, ctx, err) on a
 * memory stream m and, when it returns FA_OK, writes the text to f.
 * Returns fn's rc, or FA_ERR_NOMEM in err when the memory stream
 * failed ("out of memory writing WHAT" when it cannot be opened). */
typedef enum fa_rc (*fa_table_text_fn)(FILE *m, const void *ctx, struct fa_err *err);
enum fa_rc fa_table_write_text(FILE *f, fa_table_text_fn fn, const void *ctx,
			       const char *what, struct fa_err *err);

/* s as a CSV field, quoted as RFC 4180 asks when it holds a comma, a quote
 * or a line break. NULL writes nothing (an empty field). A leading '=', '+',
 * '-' or '@' stays as it is, by choice: the CSV is data that import reads
 * back (docs/peers.md). */
void fa_table_csv_text(FILE *f, const char *s);

/* x at full precision (fa_table_fmt_real) as a CSV field; nothing (an empty
 * field) for NaN and infinities. */
void fa_table_csv_real(FILE *f, double x);

/* x as a JSON number at full precision; null for NaN and infinities, which
 * JSON does not have. */
void fa_table_json_real(FILE *f, double x);

/* A case's label as report, compare and list write it in JSON, left open
 * for more members: {"name": "llama3-8b", "model": true, "layers": 32
 * (layers null when unknown). */
struct fa_case_tag;
void fa_table_json_tag_open(FILE *f, const struct fa_case_tag *t);

/* ---- Numbers ---------------------------------------------------------------- */

/* Three significant digits, fixed point: 1234, 123, 12.3, 1.23, 0.0123;
 * "" for NaN, printf's %g for 0 and infinities. */
void fa_table_fmt_sig3(double x, char *buf, size_t size);

/* Full precision: the shortest of %.15g, %.16g and %.17g that reads back as
 * the same double; "" for NaN. */
void fa_table_fmt_real(double x, char *buf, size_t size);

/* (A float32 value, as the scale parameter is, is base/util.h's
 * fa_format_float: the reader formats stored parameters with it.) */

/* ---- Tables ------------------------------------------------------------------ */

/* Text cells added row by row, the first row being the header. */
struct fa_table {
	int32_t ncols, nrows, cap;
	int32_t col;           /* the next cell's column in the row being added */
	int32_t *right;        /* per column: 1 right-aligns its cells below the
	                          header (numbers); 0 after fa_table_init */
	char **cell;           /* nrows * ncols, row by row; malloc'd */
};

/* An empty table of ncols columns. Returns FA_OK or FA_ERR_NOMEM (then t
 * holds nothing and fa_table_free on it is harmless). */
enum fa_rc fa_table_init(struct fa_table *t, int ncols, struct fa_err *err);

/* Appends a cell, copied as it is (NULL gives ""); the row ends after ncols
 * cells. Returns FA_OK or FA_ERR_NOMEM. */
enum fa_rc fa_table_add(struct fa_table *t, const char *text, struct fa_err *err);

/* Appends a markdown cell: text (NULL gives "") with '|' escaped, so that it
 * does not end the cell, and '<', '*', '`', '\\' and a ']' before '('
 * escaped, so that a name cannot become markup (lone brackets stay, as in
 * cpu_flash[block_q=32]); control characters and line breaks as spaces.
 * Returns FA_OK or FA_ERR_NOMEM. */
enum fa_rc fa_table_add_md(struct fa_table *t, const char *text, struct fa_err *err);

/* Appends a markdown cell holding text as a code span (fa_table_md_code's
 * fence), with '|' written "\|", which GitHub's tables read as '|' inside
 * a code span, and control characters as spaces. */
enum fa_rc fa_table_add_code(struct fa_table *t, const char *text, struct fa_err *err);

/* The text of the cell at row (0: the header) and col. */
const char *fa_table_cell(const struct fa_table *t, int row, int col);

/* Prints the complete rows of t as a markdown table: every column padded to
 * its widest cell, counted in UTF-8 characters (a byte that starts no valid
 * sequence counts one, the U+FFFD it becomes; at least the 3 characters
 * of "---"), the separator after the header with ':' over right-aligned
 * columns. Returns FA_OK, or FA_ERR_NOMEM with nothing printed. */
enum fa_rc fa_table_print_md(FILE *f, const struct fa_table *t, struct fa_err *err);

/* Frees every cell and zeroes t. */
void fa_table_free(struct fa_table *t);

/* ---- Params ------------------------------------------------------------------ */

/* Compares two params strings "a=1,b=2" item by item: values that are both
 * numbers as numbers (block_q=8 before block_q=16), other text as text.
 * strcmp's sign convention. */
int fa_table_params_cmp(const char *a, const char *b);

/* 1 when params ("a=1,b=2", may be NULL) has the item item[0..n) ("b=2"). */
int fa_table_params_has(const char *params, const char *item, size_t n);

#endif /* FA_TABLE_H */
