/* import_int.h - what the files of import share (import.h is its public
 * face): the values of a row as either reader produces them (struct ival,
 * with their file:line:col), the parse state, and the row mapping that
 * import.c does for both readers (import_json.c, import_csv.c). Not for
 * other modules.
 */
#ifndef FA_IMPORT_INT_H
#define FA_IMPORT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "../base/arena.h"
#include "../base/err.h"
#include "import.h"

/* ---- values of a row, from either format ---- */

enum ikind {
	IK_NULL,  /* JSON null, or an empty CSV cell: absent */
	IK_RAW,   /* a CSV cell: text that may be a number, a word or a list */
	IK_STR,   /* a JSON string */
	IK_NUM,   /* a JSON number (its literal text) */
	IK_BOOL,  /* JSON true / false */
	IK_LIST,  /* a JSON array */
	IK_OBJ,   /* a JSON object */
};

struct ifield;

/* How ival.src spells the text, for fa_import_loc_in. */
enum iesc {
	IE_NONE,  /* as it is (a plain CSV cell, a header line's value) */
	IE_JSON,  /* a JSON string's body: \ escapes; loc is its opening quote */
	IE_CSV,   /* a quoted CSV cell's body: "" for a quote, line breaks */
};

struct ival {
	int kind;
	const char *s; /* RAW, STR, NUM, BOOL: the text (decoded for STR) */
	struct fa_loc loc;
	const char *src; /* RAW, STR: the text's first byte in the file (past an
			    opening quote) while the file is read; NULL: unknown */
	int esc;         /* enum iesc: how src spells s */
	struct ival *items; /* LIST */
	struct ifield *fields; /* OBJ */
	int32_t n;          /* items or fields */
};

struct ifield {
	const char *name;
	struct fa_loc loc;
	struct ival v;
};


/* ---- parse state ---- */

/* A string -> index map (open addressing, power-of-two size). */
struct smap {
	const char **keys;
	int32_t *vals;
	size_t cap, n;
};

struct mem {
	struct fa_arena arena;
	yaml_document_t doc; /* the current row's parameter nodes */
	int doc_live;
	struct smap cases;   /* key -> case index */
	struct smap results; /* key \x1f kernel \x1f params -> row index */
	int32_t cap_cases, cap_rows;
};

struct ctx {
	struct fa_import *im;
	struct mem *m;
	const char *file;
	struct fa_err *err;
	int header_done;     /* JSON lines: a row was seen, so no header may follow */
};

/* ---- shared by the readers (import.c) ---- */

/* The file:line:col of byte off of v->s (a character of a string with
 * escapes, of a quoted cell with "" or line breaks): where an error inside
 * the value points. v->loc when v->src is unknown. */
struct fa_loc fa_import_loc_in(const struct ival *v, size_t off);
/* Sets "out of memory reading 'FILE'" and returns FA_ERR_NOMEM. */
enum fa_rc fa_import_nomem(struct ctx *cx);
/* A terminated copy of s[0..n) in the arena; NULL when out of memory. */
char *fa_import_strndup(struct fa_arena *a, const char *s, size_t n);
/* The value as a message names it: null, a list, an object, the string
 * quoted (cut at 60), a number as written; buf may hold the text. */
const char *fa_import_ival_words(const struct ival *v, char *buf, size_t size);
/* The error of an unknown field or column, with a suggestion when one is
 * close (header != 0: among the run header's fields). */
enum fa_rc fa_import_unknown_field(struct ctx *cx, const struct fa_loc *l, const char *what,
				   const char *name, int header);
/* 1 when name is a case parameter or a result field. */
int fa_import_row_field_known(const char *name);
/* 1 when name is a run header field or close to one. */
int fa_import_header_field_near(const char *name);
/* Turns one row (an object of named values) into a case and a result. */
enum fa_rc fa_import_take_row(struct ctx *cx, const struct ival *obj, const struct fa_loc *row_loc);
/* Takes one field of the run header. */
enum fa_rc fa_import_take_header_field(struct ctx *cx, const char *name, const struct fa_loc *nl,
				       const struct ival *v);

/* ---- the readers ---- */

/* JSON lines (import_json.c): a {"run": {...}} header line, then a result
 * object per line. */
enum fa_rc fa_import_parse_jsonl(struct ctx *cx, const char *text, size_t len);
/* A report of fabench's own (report --format json), one document; and 1
 * when the text is such a document: its first line holds only "{", or its
 * object's first member is "schema_version" (a report on one line). */
enum fa_rc fa_import_parse_report_json(struct ctx *cx, const char *text, size_t len);
int fa_import_is_document(const char *text, size_t len);
/* 1 for a column or field of fabench's own reports that import recomputes
 * or does not store (a report imports as it was written) */
int fa_import_report_only(const char *name);
/* 1 for a run header field; 1 for a per-sequence list parameter */
int fa_import_header_field_is(const char *name);
int fa_import_param_is_list(const char *name);
/* CSV (import_csv.c): "# key: value" header lines, a row of column names,
 * then a result per row. */
enum fa_rc fa_import_parse_csv(struct ctx *cx, const char *text, size_t len);

#endif /* FA_IMPORT_INT_H */
