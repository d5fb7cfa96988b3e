/* proc.h - running build/fabench from tests: arguments and extra
 * environment, captured output and exit status, or in the background for
 * the kill tests. */
#ifndef FA_TEST_PROC_H
#define FA_TEST_PROC_H

#include <sys/types.h>

struct fa_proc_result {
	int status;   /* exit status, or 128 + signal */
	char *out;    /* captured stdout (malloc'd, NUL-terminated) */
	char *err;    /* captured stderr */
};

/* Runs the fabench binary ($FABENCH_BIN, else build/fabench) with argv
 * (NULL-terminated, without argv[0]) and extra "NAME=value" environment
 * entries (NULL-terminated, may be NULL), in the repository root. Kills it
 * after timeout_s seconds (status 128 + SIGKILL). */
void fa_proc_run(char *const argv[], char *const env[], double timeout_s,
		 struct fa_proc_result *r);
void fa_proc_free(struct fa_proc_result *r);

/* Starts fabench in the background with output discarded; returns its pid. */
pid_t fa_proc_start(char *const argv[], char *const env[]);

/* The same with its standard error written to the file log (created or
 * truncated): what a test waits on, and shows when it fails. */
pid_t fa_proc_start_log(char *const argv[], char *const env[], const char *log);

/* Waits for pid; returns its exit status or 128 + signal. */
int fa_proc_wait(pid_t pid);

/* Runs `bash SCRIPT` (a path from the repository root, e.g.
 * "tools/aa-study") with args (NULL-terminated) in the repository root,
 * FABENCH_BIN set to the binary under test; its stdout and stderr go to
 * <test tmpdir>/<script's name>.out and .err, read into *out and *err
 * (malloc'd). Returns its exit status (128 + signal, or -1 when it could
 * not start). */
int fa_proc_script(const char *script, char *const args[], char **out, char **err);

/* The fabench binary's path. */
const char *fa_proc_bin(void);

#endif /* FA_TEST_PROC_H */
