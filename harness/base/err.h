/* err.h - return codes and the first-error record every module fills.
 *
 * Modules return an enum fa_rc and describe the first failure in a struct
 * fa_err; only main.c and the cmd_*.c files print or exit. Messages follow
 * git's wording: lowercase, no final period, what is wrong first, the value
 * quoted. Errors about input carry file:line:col (1-based) and, when printed,
 * the offending line with a caret under the column.
 */
#ifndef FA_ERR_H
#define FA_ERR_H

#include <stdarg.h>
#include <stdio.h>

/* Stored in the database and used as exit paths: never renumber, only append. */
enum fa_rc {
	FA_OK = 0,
	FA_ERR_USAGE = 1,       /* bad command line */
	FA_ERR_INPUT = 2,       /* bad suite, filter or import file */
	FA_ERR_IO = 3,          /* a file could not be read or written */
	FA_ERR_NOMEM = 4,       /* an allocation failed */
	FA_ERR_DB = 5,          /* SQLite said no */
	FA_ERR_BACKEND = 6,     /* a backend call failed (message has the backend's words) */
	FA_ERR_UNSUPPORTED = 7, /* a kernel does not support a case */
	FA_ERR_TIMEOUT = 8,     /* a case ran past its timeout */
	FA_ERR_CANCELLED = 9,   /* stopped on request (signal) */
	FA_ERR_NOT_FOUND = 10,  /* a named run, kernel or file does not exist */
	FA_ERR_INTERNAL = 11,   /* a bug in fabench */
	FA_ERR_STICKY = 12,     /* the device is unusable until the process ends */
};

#define FA_ERR_MSG_MAX 2048
#define FA_ERR_PATH_MAX 1024

struct fa_err {
	enum fa_rc rc;
	char msg[FA_ERR_MSG_MAX]; /* "what is wrong", without location */
	char file[FA_ERR_PATH_MAX]; /* input file, "" when the error is not about input */
	int line, col;            /* 1-based; 0 when unknown */
	char text[512];           /* the source line when it is not in a file
	                             (a --where expression); "" reads the file */
};

/* Where a value came from in an input file. file points to storage owned by
 * whoever parsed it (the suite keeps its file names alive). */
struct fa_loc {
	const char *file;
	int line, col; /* 1-based */
};

/* Clears e (rc FA_OK, empty message). */
void fa_err_clear(struct fa_err *e);

/* Records the first error only: if e already holds one, nothing changes.
 * Returns rc so callers can write `return fa_err_set(e, FA_ERR_IO, ...)`.
 * e may be NULL. */
enum fa_rc fa_err_set(struct fa_err *e, enum fa_rc rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
enum fa_rc fa_err_setv(struct fa_err *e, enum fa_rc rc, const char *fmt, va_list ap);

/* Records an input error at loc (FA_ERR_INPUT). Same first-error rule. */
enum fa_rc fa_err_at(struct fa_err *e, const struct fa_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Attaches the text of the offending line, for input that is not a file
 * (command-line expressions). Does nothing when e holds no input error. */
void fa_err_set_text(struct fa_err *e, const char *text);

/* Prints e to f:
 *   file:line:col: message
 *    LINE | text of that line
 *         |     ^
 * For errors without a file, "fabench: error: message". Control characters
 * of the file name and message (input they quote) print as '?', line feeds
 * and tabs too, except in a tool's failure (FA_ERR_BACKEND without a file),
 * whose message may hold the lines of the tool's own output (gnuplot's
 * stderr); those of the excerpt too, but tabs. The source line is
 * re-read from the file; when it cannot be, only the first line is printed.
 * A UTF-8 byte order mark opening line 1 is left out of the excerpt: columns
 * count from after it (libyaml's marks, import's).
 * `prefix` (may be NULL) is printed before "error: " for errors without a
 * file, e.g. "fabench run". */
void fa_err_print(const struct fa_err *e, FILE *f, const char *prefix);

/* Name of a return code ("input", "io", ...), for messages and storage. */
const char *fa_rc_name(enum fa_rc rc);

#endif /* FA_ERR_H */
