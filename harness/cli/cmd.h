/* cmd.h - the subcommands (one file each, harness/cmd_*.c) and the helpers
 * they share for options and output. Only main.c and cmd_*.c print or exit. */
#ifndef FA_CMD_H
#define FA_CMD_H

#include <stdint.h>
#include <stdio.h>

#include "../run/backend.h"
#include "../base/err.h"

/* Exit statuses of every command. */
#define FA_EXIT_OK 0       /* everything passed */
#define FA_EXIT_FAIL 1     /* a case failed its check, errored or timed out */
#define FA_EXIT_USAGE 2    /* bad usage or bad input; nothing was written */
#define FA_EXIT_SIGNAL 130 /* interrupted; finished cases are kept */

int fa_cmd_run(int argc, char **argv);
/* The run the last fa_cmd_run of this process stored into (0: none yet), so
 * that tune's sweep reads its own run rather than whichever is latest when
 * another process writes to the same database. */
extern int64_t fa_cmd_run_last_id;
int fa_cmd_list(int argc, char **argv);
int fa_cmd_kernels(int argc, char **argv);
int fa_cmd_devices(int argc, char **argv);
int fa_cmd_report(int argc, char **argv);
int fa_cmd_calibrate(int argc, char **argv);
int fa_cmd_compare(int argc, char **argv);
int fa_cmd_history(int argc, char **argv);
int fa_cmd_plot(int argc, char **argv);
int fa_cmd_import(int argc, char **argv);
int fa_cmd_merge(int argc, char **argv);
int fa_cmd_build_matrix(int argc, char **argv);
int fa_cmd_tune(int argc, char **argv);

/* Prints e to stderr ("fabench CMD: error: ..." or file:line:col with a
 * caret) and returns the exit status for it: 2 for usage and input errors
 * and for what the user named that is not there (FA_ERR_NOT_FOUND: a suite
 * or import file, a database, a run, a kernel), 1 otherwise. */
int fa_cmd_fail(const char *cmd, const struct fa_err *e);

/* Prints "fabench CMD: MESSAGE" and the usage hint to stderr; returns 2. */
/* 0 when text (an option's value that is stored and printed: --label) is
 * UTF-8 with no control character; else a usage error naming the option,
 * the byte and the character it is, exit status 2. */
int fa_cmd_check_text(const char *cmd, const char *usage, const char *option, const char *text);

/* The usage error of getopt_long's return c for an option it did not take
 * (its option string starts with ':'): "option '--x' needs a value" for ':',
 * else "unknown option '--x'"; exit status 2. */
int fa_cmd_bad_option(const char *cmd, const char *usage, int c, char **argv);
int fa_cmd_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prints an error in the value of an option as --where's, --rule's and
 * --by's are: "OPTION:1:COL: MESSAGE", then text with a caret under its byte
 * at (the column counts characters); returns FA_EXIT_USAGE. */
int fa_cmd_option_error(const char *cmd, const char *option, const char *text, size_t at,
			const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Loads the backend registry (plugins next to the executable). */
enum fa_rc fa_cmd_registry(struct fa_registry *r, struct fa_err *err);

/* The default database path: $FABENCH_DB or results/fabench.db. */
const char *fa_cmd_default_db(void);

/* A finite number, the whole of s: 0 with it in *v, else -1. */
int fa_cmd_parse_number(const char *s, double *v);

/* A command's output: standard output, or the file --output names. The
 * file's text is kept in memory until fa_cmd_out_close, which writes it
 * only when the command succeeded: a command that stops on an error (a bad
 * --baseline, a run that is not there) leaves the file, and its folders,
 * exactly as they were. */
struct fa_cmd_out {
	FILE *f;          /* what the writer writes to */
	const char *path; /* the file; NULL for standard output */
	char *text;       /* the file's text (open_memstream) */
	size_t len;
};

/* Opens o for path (NULL: standard output). A path that cannot be written
 * (a folder, a read-only file or folder; fa_path_writable) is refused now,
 * before the work: "fabench CMD: cannot write 'PATH': ..." is printed and
 * FA_EXIT_FAIL returned. Otherwise 0. */
int fa_cmd_out_open(const char *cmd, const char *path, struct fa_cmd_out *o);

/* Ends o. With keep, the text is written to the file: its folders made,
 * through a temporary file beside it renamed over it (a reader never sees
 * half of it; an existing file keeps its mode, a link keeps pointing at
 * it), or straight into what is not a regular file (/dev/stdout, a FIFO)
 * and into a file whose folder may not be written.
 * Without keep nothing is written or created. Returns 0, or after printing
 * "fabench CMD: cannot write 'PATH': ..." FA_EXIT_FAIL. Standard output is
 * left alone (0). */
int fa_cmd_out_close(const char *cmd, struct fa_cmd_out *o, int keep);

struct fa_store;
struct fa_plot_opts;

/* Draws po into path (fa_plot_render) for command cmd, printing any error;
 * returns the exit status by fa_cmd_fail: nothing to plot in what was named
 * (FA_ERR_NOT_FOUND) is 2; gnuplot gone since the command found it there
 * (FA_ERR_BACKEND, as gnuplot failing) is 1, as its absence then is: the
 * machine lacks a tool, the input is fine. */
int fa_cmd_plot_render(const char *cmd, struct fa_store *s, const struct fa_plot_opts *po,
		       const char *path);

/* Option values several commands take. Each returns 0 with the value in its
 * last argument, or, after printing the usage error for command cmd
 * ("--min-effect 'x' must be ..."), the exit status FA_EXIT_USAGE. */
/* --min-effect: a percentage in [0, 100), stored as a fraction */
int fa_cmd_opt_min_effect(const char *cmd, const char *usage, const char *arg, double *fraction);
/* --alpha: strictly between 0 and 1 */
int fa_cmd_opt_alpha(const char *cmd, const char *usage, const char *arg, double *alpha);
/* --format of the table writers: md, csv or json (FA_FMT_*) */
int fa_cmd_opt_table_format(const char *cmd, const char *usage, const char *arg, int *format);

#endif /* FA_CMD_H */
