/* crash.h - a run without --isolate names the case and kernel that crash the
 * process: handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT write one
 * line to stderr, then the signal takes its default course (the exit status
 * stays 128 + signal). */
#ifndef FA_CRASH_H
#define FA_CRASH_H

/* Installs the handlers (once per process). They print
 *   fabench: crashed (SIGSEGV) in case 3/12 KEY kernel NAME; rerun with
 *   --isolate to record it as an error and go on
 * naming what fa_crash_set_case set and the kernel fa_runner_running points
 * to (and " (plugin FILE)" after a kernel plugin's), using only write(2). */
void fa_crash_install(void);

/* Ends the process with status after writing
 *   fabench: stuck in case 3/12 KEY kernel NAME (plugin FILE): WHAT; the
 *   finished cases are stored ...; rerun with --isolate ...
 * for a kernel that does not return (the runner's watchdog calls it from
 * its own thread while the kernel's thread is still inside it). */
void fa_crash_stuck(const char *what, int status);

/* Sets the case text of the message ("case 3/12 KEY"; copied, truncated to
 * 1 KiB); NULL while no case runs. Call from the thread that runs cases. */
void fa_crash_set_case(const char *what);

#endif /* FA_CRASH_H */
