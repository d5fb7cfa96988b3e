/* util.h - small host helpers: time stamps, paths, sizes, running a program
 * without a shell, and the FNV-1a hash. */
#ifndef FA_UTIL_H
#define FA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "err.h"

/* Current UTC time as "2026-11-25T21:40:00Z" into buf (at least 21 bytes). */
void fa_time_iso(char *buf, size_t size);

/* Creates path and its parents (mode 0777 & umask). 0 on success, else -1
 * with errno set. */
int fa_mkdir_p(const char *path);

/* Creates the parent folders of a file path. */
int fa_mkdir_parent(const char *file_path);

/* 0 when a file could be written at file_path (its parent folders made as
 * fa_mkdir_parent would), without writing anything; else -1 with errno set
 * (ENOTDIR, EISDIR, EACCES, ...), for a check before long work. */
int fa_path_writable(const char *file_path);

/* Writes buf[0..n) to fd whole, again after a short write or EINTR.
 * 0, or -1 with errno set (a write of 0 bytes leaves errno as it was). */
int fa_write_all(int fd, const void *buf, size_t n);

/* Replaces the file at path with data[0..len), so that path is whole or as
 * it was: written to a temporary file beside it (mkstemp) and renamed over
 * it, with the old file's mode (else 0666 & umask), its parent folders
 * made. A link is followed to the file it names, and a link to nothing yet
 * is written through, as fopen does; a path that is not a regular file
 * (/dev/stdout, a FIFO), or a file that may be written in a folder that
 * may not, is written in place. 0, or -1 with errno set and nothing left
 * behind but the folders made. */
int fa_replace_file(const char *path, const char *data, size_t len);

/* Folder of the running executable (from /proc/self/exe) into buf; "" when
 * unknown. */
void fa_exe_dir(char *buf, size_t size);

/* Reads the regular file at path whole, for the readers of input files
 * (suites, includes, import). Refuses anything else before reading a byte: a
 * directory, a device such as /dev/zero, a FIFO (opened without blocking, so
 * a FIFO with no writer cannot hang the caller), and files larger than
 * max_bytes (also when one grows while it is read).
 * Returns FA_OK with *buf (malloc'd, NUL-terminated, the caller frees it),
 * *len and, when st is not NULL, the file's stat. Otherwise *buf is NULL and
 * why holds what is wrong, to follow the file's name in a message:
 *   FA_ERR_INPUT      "is not a regular file (a character device)",
 *                     "is too large (20971520 bytes; at most 16.0 MiB)";
 *   FA_ERR_NOT_FOUND  strerror(ENOENT);
 *   FA_ERR_IO         strerror of another failure;
 *   FA_ERR_NOMEM      "out of memory". */
enum fa_rc fa_read_file(const char *path, size_t max_bytes, char **buf, size_t *len,
			struct stat *st, char *why, size_t why_size);

/* Parses a size: a number with an optional K, M, G or T suffix (powers of
 * 1024, an optional trailing 'B' or 'iB'). Returns 0 and *bytes, or -1. */
int fa_parse_size(const char *s, double *bytes);

/* "1.5 GiB", "312 MiB", "12 KiB", "100 B" into buf. */
void fa_format_bytes(double bytes, char *buf, size_t size);

/* A float32 value (as the scale parameter is) in the fewest digits, %.6g to
 * %.9g, that give the same float back: 0.3, not 0.30000001192092896. */
void fa_format_float(double x, char *buf, size_t size);

/* Runs argv[0] (looked up in PATH) with argv, without a shell, capturing at
 * most size-1 bytes of its standard output into out (NUL-terminated, trailing
 * newlines removed); stderr is discarded. Returns the exit status, or -1
 * when it could not be run. */
int fa_run_capture(char *const argv[], char *out, size_t size);

/* Runs argv[0] (a path, or a name looked up in PATH) with argv, without a
 * shell and with /dev/null as its standard input, capturing its standard
 * output and standard error together, in the order written, into *out
 * (malloc'd, NUL-terminated, the caller frees it; only the first max_bytes
 * are kept, the rest is read and dropped). Safe to call from several
 * threads at once (the pipes are close-on-exec, so one child never holds
 * another's pipe open). Returns the exit status, 128 + the signal when it
 * was killed, or -1 when it could not be run (*out then holds why, or NULL
 * when out of memory). */
int fa_run_output(char *const argv[], char **out, size_t max_bytes);

/* The next entry of a colon-separated list of paths (FABENCH_PLUGINS), from
 * *pos (0 at the start; moved past the entry and its colon), into buf; 0
 * when the list is done. A path may hold ':' itself: where the text up to a
 * colon names nothing on disk but the text up to a later colon does, the
 * entry is that longer path (the shortest one that exists). Empty entries
 * are skipped. */
int fa_path_list_next(const char *list, size_t *pos, char *buf, size_t size);

/* Splits "A:B" (run --ab) at the colon where both sides exist on disk, for
 * paths that hold ':' themselves; with no such colon, at the first one.
 * Returns 0 (a and b written), or -1 when spec has no colon or when more
 * than one colon splits it into two paths that exist (which is then
 * ambiguous). */
int fa_split_path_pair(const char *spec, char *a, size_t a_size, char *b, size_t b_size);

/* Finds a program: name itself when it holds a '/' (and is executable),
 * else the first executable name in $PATH's folders. Writes the path into
 * buf and returns 0, or returns -1 when there is none. */
int fa_find_program(const char *name, char *buf, size_t size);

/* 64-bit FNV-1a of data, continuing from h (start with FA_FNV_OFFSET). */
#define FA_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t fa_fnv1a64(uint64_t h, const void *data, size_t n);

/* The command line as one string, arguments with spaces or quotes quoted
 * shell-style; malloc'd (NULL when out of memory). */
char *fa_join_argv(int argc, char **argv);

/* Writes s as a JSON string literal (quotes and escapes included): valid
 * JSON for any bytes, each byte that starts no valid UTF-8 sequence written
 * as \ufffd (the replacement character). */
void fa_json_string(FILE *f, const char *s);

/* size - 1 random hex digits and a NUL into buf (getrandom, else
 * /dev/urandom, else the time and the process id mixed). */
void fa_random_hex(char *buf, size_t size);

#endif /* FA_UTIL_H */
