/* util.h - small host helpers: time stamps, paths, sizes, running a program
 * without a shell, and the FNV-1a hash. */
#ifndef FA_UTIL_H
#define FA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

/* Current UTC time as "2026-11-25T21:40:00Z" into buf (at least 21 bytes). */
void fa_time_iso(char *buf, size_t size);

/* Creates path and its parents (mode 0777 & umask). 0 on success, else -1
 * with errno set. */
int fa_mkdir_p(const char *path);

/* Creates the parent folders of a file path. */
int fa_mkdir_parent(const char *file_path);

/* Folder of the running executable (from /proc/self/exe) into buf; "" when
 * unknown. */
void fa_exe_dir(char *buf, size_t size);

/* Parses a size: a number with an optional K, M, G or T suffix (powers of
 * 1024, an optional trailing 'B' or 'iB'). Returns 0 and *bytes, or -1. */
int fa_parse_size(const char *s, double *bytes);

/* "1.5 GiB", "312 MiB", "12 KiB", "100 B" into buf. */
void fa_format_bytes(double bytes, char *buf, size_t size);

/* Runs argv[0] (looked up in PATH) with argv, without a shell, capturing at
 * most size-1 bytes of its standard output into out (NUL-terminated, trailing
 * newlines removed); stderr is discarded. Returns the exit status, or -1
 * when it could not be run. */
int fa_run_capture(char *const argv[], char *out, size_t size);

/* 64-bit FNV-1a of data, continuing from h (start with FA_FNV_OFFSET). */
#define FA_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t fa_fnv1a64(uint64_t h, const void *data, size_t n);

/* The command line as one string, arguments with spaces or quotes quoted
 * shell-style; malloc'd (NULL when out of memory). */
char *fa_join_argv(int argc, char **argv);

/* Writes s as a JSON string literal (quotes and escapes included). */
void fa_json_string(FILE *f, const char *s);

#endif /* FA_UTIL_H */
