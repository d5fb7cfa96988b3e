/* crash.c - the last words of a process that a kernel crashed, or that a
 * kernel which ignores its cancel flag holds: which case and which kernel
 * (and its plugin), and that --isolate would have kept the run going. The
 * crash handler runs in whatever state the crash left, so it only formats
 * from static buffers and calls write(2), then re-raises the signal with
 * its default action. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "crash.h"
#include "runner.h"

static char g_case[1024];
static volatile sig_atomic_t g_case_set;
static int g_installed;

static const struct {
	int sig;
	const char *name;
} crash_signals[] = {
	{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"},
	{SIGILL, "SIGILL"},   {SIGABRT, "SIGABRT"},
};

void fa_crash_set_case(const char *what)
{
	g_case_set = 0;
	if (what) {
		snprintf(g_case, sizeof g_case, "%s", what);
		g_case_set = 1;
	}
}

/* Appends s to buf[*n] without passing cap - 1 (async-signal-safe). */
static void put(char *buf, size_t *n, size_t cap, const char *s)
{
	while (s && *s && *n + 1 < cap)
		buf[(*n)++] = *s++;
}

/* Appends " in case ... kernel NAME[PARAMS] (plugin FILE)" for what runs
 * now (async-signal-safe). */
static void put_running(char *buf, size_t *n, size_t cap)
{
	const struct fa_case_kernel *ck = fa_runner_running;
	const char *file;
	if (g_case_set) {
		put(buf, n, cap, " in ");
		put(buf, n, cap, g_case);
	}
	if (!ck || !ck->k) {
		if (g_case_set)
			put(buf, n, cap, " (preparing its inputs and reference)");
		return;
	}
	put(buf, n, cap, g_case_set ? " kernel " : " in kernel ");
	put(buf, n, cap, ck->k->name);
	if (ck->params_text[0]) {
		put(buf, n, cap, "[");
		put(buf, n, cap, ck->params_text);
		put(buf, n, cap, "]");
	}
	if ((file = fa_backend_kernel_plugin_file(ck->slot, ck->k)) != NULL) {
		put(buf, n, cap, " (plugin ");
		put(buf, n, cap, file);
		put(buf, n, cap, ")");
	}
}

static void on_crash(int sig)
{
	char buf[4096];
	size_t n = 0;
	const char *name = "a signal";
	for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
		if (crash_signals[i].sig == sig)
			name = crash_signals[i].name;
	put(buf, &n, sizeof buf, "\nfabench: crashed (");
	put(buf, &n, sizeof buf, name);
	put(buf, &n, sizeof buf, ")");
	put_running(buf, &n, sizeof buf);
	put(buf, &n, sizeof buf, "; rerun with --isolate to record it as an error and go on\n");
	if (write(STDERR_FILENO, buf, n) < 0) {
		/* nothing left to tell it to */
	}
	/* SA_RESETHAND restored the default action: this ends the process */
	raise(sig);
}

void fa_crash_stuck(const char *what, int status)
{
	char buf[4096];
	size_t n = 0;
	fflush(stdout); /* the lines of the cases that finished */
	put(buf, &n, sizeof buf, "\nfabench: stuck");
	put_running(buf, &n, sizeof buf);
	put(buf, &n, sizeof buf, ": ");
	put(buf, &n, sizeof buf, what);
	put(buf, &n, sizeof buf, "; the finished cases are stored and the run is marked incomplete");
	if (g_installed) /* a run that --isolate goes with */
		put(buf, &n, sizeof buf, "; rerun with --isolate to record it as a timeout and go on");
	put(buf, &n, sizeof buf, "\n");
	if (write(STDERR_FILENO, buf, n) < 0) {
		/* nothing left to tell it to */
	}
	_exit(status);
}

void fa_crash_install(void)
{
	struct sigaction sa;
	if (g_installed)
		return;
	g_installed = 1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_crash;
	sa.sa_flags = (int)(SA_RESETHAND | SA_NODEFER);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
		sigaction(crash_signals[i].sig, &sa, NULL);
}
