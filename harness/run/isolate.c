/* isolate.c - worker processes for `run --isolate` and `run --devices`: the
 * record protocol over a socket, the command line a staying worker reads,
 * and the parent's loop that turns a dead or silent worker into an `error`
 * or `timeout` result and starts the next one. */
#include "isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/util.h"

/* Slack on top of a kernel's own timeouts (check launch + sampling) before
 * the parent decides a worker is stuck: process start, CUDA context creation,
 * a slow download. */
#define GRACE_S 5.0

/* The timing strings a worker may report, sent by index (0: none); every
 * value runner.c stores must be here, or an isolated result loses it. */
static const char *const timing_names[] = {"", "cpu", "cold", "hot", "graph", "cold-clean",
					     "graph-cold"};
#define N_TIMING_NAMES ((int)(sizeof timing_names / sizeof timing_names[0]))

void fa_isolate_send_start(int fd, int i)
{
	struct fa_iso_rec_hdr h = {FA_ISO_REC_MAGIC, FA_ISO_REC_START, i, 0, 0};
	fa_write_all(fd, &h, sizeof h);
}

void fa_isolate_send_result(int fd, int i, const struct fa_result *res,
			    const struct fa_samples *samples)
{
	struct fa_iso_rec_hdr h = {FA_ISO_REC_MAGIC, FA_ISO_REC_RESULT, i, samples ? samples->n : 0, 0};
	for (int t = 0; t < N_TIMING_NAMES; t++)
		if (res->timing && strcmp(res->timing, timing_names[t]) == 0)
			h.timing = t;
	if (fa_write_all(fd, &h, sizeof h) != 0 || fa_write_all(fd, res, sizeof *res) != 0)
		return;
	if (h.n_samples > 0)
		fa_write_all(fd, samples->ms, sizeof(double) * (size_t)h.n_samples);
}

void fa_isolate_send_done(int fd, int case_index)
{
	struct fa_iso_rec_hdr h = {FA_ISO_REC_MAGIC, FA_ISO_REC_DONE, case_index, 0, 0};
	fa_write_all(fd, &h, sizeof h);
}

int fa_isolate_read_command(int fd, int *case_index, int *from)
{
	char line[64];
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, line + n, 1); /* a byte at a time: a line is short */
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return n == 0 ? 0 : -1;
		if (line[n] == '\n')
			break;
		if (++n >= sizeof line - 1)
			return -1;
	}
	line[n] = '\0';
	char end;
	if (sscanf(line, "%d %d%c", case_index, from, &end) != 2 || *case_index < 0 || *from < 0)
		return -1;
	return 1;
}

/* Reads exactly n bytes, waiting at most until deadline. 0 ok, 1 EOF,
 * 2 timeout, 3 cancelled, -1 error. */
static int read_all(int fd, void *buf, size_t n, double deadline, volatile int *cancel)
{
	char *p = buf;
	while (n > 0) {
		double left = deadline - fa_now_s();
		struct pollfd pfd = {fd, POLLIN, 0};
		if (cancel && *cancel)
			return 3;
		if (left <= 0)
			return 2;
		int pr = poll(&pfd, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return 1;
		if (r < 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

extern char **environ;

/* The worker's environment: this process's, with ic->env_extra on top
 * (malloc'd array of borrowed strings; NULL when there is nothing to add,
 * or on failure, which leaves the environment as it is). Built before fork:
 * the child of a threaded process should not allocate. */
static char **worker_env(const struct fa_isolate_case *ic)
{
	size_t n = 0, m = 0, k = 0;
	char **env;
	if (!ic->env_extra || !ic->env_extra[0])
		return NULL;
	while (environ[n])
		n++;
	while (ic->env_extra[m])
		m++;
	if (!(env = malloc(sizeof *env * (n + m + 1))))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int replaced = 0;
		for (size_t j = 0; j < m && !replaced; j++) {
			const char *eq = strchr(ic->env_extra[j], '=');
			size_t len = eq ? (size_t)(eq - ic->env_extra[j]) + 1 : 0;
			replaced = len && strncmp(environ[i], ic->env_extra[j], len) == 0;
		}
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		env[k++] = (char *)ic->env_extra[j];
	env[k] = NULL;
	return env;
}

/* Starts a worker for kernels from `from` on of ic's case, or (from < 0) a
 * staying worker that waits for commands. *rfd receives the parent's end of
 * the socket. Returns the pid, or -1 (errno set). */
static pid_t spawn_worker(const struct fa_isolate_case *ic, int from, int *rfd)
{
	char **env;
	int fds[2], n = 0;
	char ci[32], fr[32];
	const char *args[128];
	pid_t pid, parent;
	/* close-on-exec: under --devices other threads start workers at the same
	 * time, and a worker that inherited this socket's end would keep the
	 * parent from seeing this worker die. A socket, not a pipe: a staying
	 * worker reads its commands from it, and the parent's send to a dead
	 * worker fails with EPIPE instead of raising SIGPIPE (MSG_NOSIGNAL). */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
		return -1;
	for (int i = 0; ic->worker_argv[i] && n < 120; i++)
		args[n++] = ic->worker_argv[i];
	snprintf(ci, sizeof ci, "%d", ic->case_index);
	snprintf(fr, sizeof fr, "%d", from);
	args[n++] = "--worker-fd";
	args[n++] = "3";
	if (from < 0) {
		args[n++] = "--worker-serve";
	} else {
		args[n++] = "--worker-case";
		args[n++] = ci;
		args[n++] = "--worker-from";
		args[n++] = fr;
	}
	args[n] = NULL;
	fflush(stdout);
	fflush(stderr);
	parent = getpid();
	env = worker_env(ic);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		free(env);
		return -1;
	}
	if (pid == 0) {
		/* A worker dies with the parent (kill -9 of the run): else it would go
		 * on computing, and on a GPU hold the device. The death signal goes
		 * with the thread that forked, which waits for this worker; if the
		 * parent died before prctl, the worker already has a new parent. It
		 * survives execv. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(127);
		if (fds[1] != 3) {
			dup2(fds[1], 3); /* the copy is not close-on-exec */
			close(fds[1]);
		} else {
			fcntl(3, F_SETFD, 0);
		}
		close(fds[0]);
		signal(SIGINT, SIG_IGN); /* the parent decides when to stop */
		if (env)
			execve("/proc/self/exe", (char *const *)args, env);
		else
			execv("/proc/self/exe", (char *const *)args);
		_exit(127);
	}
	free(env);
	close(fds[1]);
	*rfd = fds[0];
	return pid;
}

static void describe_exit(int st, char *buf, size_t size)
{
	if (WIFSIGNALED(st))
		snprintf(buf, size, "worker killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st))
		snprintf(buf, size, "worker exited with status %d", WEXITSTATUS(st));
	else
		snprintf(buf, size, "worker stopped");
}

static void set_reason(struct fa_result *r, int status, const char *why)
{
	r->status = status;
	snprintf(r->reason, sizeof r->reason, "%s", why);
}

void fa_isolate_worker_init(struct fa_isolate_worker *w)
{
	memset(w, 0, sizeof *w);
	w->fd = -1;
}

/* Waits for pid; after timeout_s (< 0: no limit) kills it and waits again.
 * Fills *st. */
static void reap(pid_t pid, int *st, double timeout_s)
{
	double until = fa_now_s() + timeout_s;
	for (;;) {
		pid_t r = waitpid(pid, st, timeout_s < 0 ? 0 : WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return;
		if (r == 0 && fa_now_s() >= until) {
			kill(pid, SIGKILL);
			timeout_s = -1;
		} else if (r == 0) {
			struct timespec ts = {0, 10000000};
			nanosleep(&ts, NULL);
		}
	}
}

/* A staying worker has a few seconds, once its input ends, to give its
 * device back (a CUDA context's teardown) before it is killed. */
#define STOP_GRACE_S 10.0

void fa_isolate_worker_stop(struct fa_isolate_worker *w)
{
	int st;
	if (w->pid > 0) {
		close(w->fd);
		reap(w->pid, &st, STOP_GRACE_S);
	}
	w->pid = 0;
	w->fd = -1;
}

/* Sends "CASE FROM" to a staying worker. 0, or -1 when it is gone. */
static int send_command(int fd, int case_index, int from)
{
	char line[64];
	int n = snprintf(line, sizeof line, "%d %d\n", case_index, from);
	const char *p = line;
	while (n > 0) {
		ssize_t w = send(fd, p, (size_t)n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (int)w;
	}
	return 0;
}

/* The process to run kernels from `from` on of ic's case: ic->worker's
 * (started when it has none, and once more when the one it had is found
 * dead before it took the command), else a fresh one. Returns the pid with
 * *rfd set, or -1 (errno set). */
static pid_t worker_for(const struct fa_isolate_case *ic, int from, int *rfd)
{
	struct fa_isolate_worker *w = ic->worker;
	if (!w)
		return spawn_worker(ic, from, rfd);
	for (int tries = 0; tries < 2; tries++) {
		if (w->pid <= 0) {
			int fd;
			pid_t pid = spawn_worker(ic, -1, &fd);
			if (pid < 0)
				return -1;
			w->pid = pid;
			w->fd = fd;
			w->n_started++;
		}
		if (send_command(w->fd, ic->case_index, from) == 0) {
			*rfd = w->fd;
			return w->pid;
		}
		/* it died between cases (killed from outside): no case is to blame */
		int st;
		close(w->fd);
		reap(w->pid, &st, STOP_GRACE_S);
		w->pid = 0;
		w->fd = -1;
	}
	errno = EPIPE;
	return -1;
}

enum fa_rc fa_isolate_run_case(const struct fa_isolate_case *ic, struct fa_result *results,
			       struct fa_samples *samples, struct fa_err *err)
{
	int next = 0;
	for (int i = 0; i < ic->n_kernels; i++) {
		memset(&results[i], 0, sizeof results[i]);
		results[i].status = -1;
		samples[i].n = 0;
	}
	while (next < ic->n_kernels) {
		int rfd = -1, current = -1, st = 0, outcome = 0, first = next;
		double deadline = fa_now_s() + 2 * ic->setup_timeout_s + GRACE_S;
		pid_t pid = worker_for(ic, next, &rfd);
		if (pid < 0)
			return fa_err_set(err, FA_ERR_INTERNAL, "cannot start a worker: %s",
					  strerror(errno));
		for (;;) {
			struct fa_iso_rec_hdr h;
			outcome = read_all(rfd, &h, sizeof h, deadline, ic->cancel);
			if (outcome != 0)
				break;
			if (h.magic == FA_ISO_REC_MAGIC && h.type == FA_ISO_REC_DONE && ic->worker &&
			    h.index == ic->case_index) {
				outcome = 4; /* the worker stays for the next case */
				break;
			}
			if (h.magic != FA_ISO_REC_MAGIC || h.type == FA_ISO_REC_DONE || h.index < -1 ||
			    h.index >= ic->n_kernels) {
				outcome = -1;
				break;
			}
			if (h.type == FA_ISO_REC_START) {
				current = h.index;
				deadline = fa_now_s() +
					   (h.index < 0 ? 2 * ic->setup_timeout_s
							: 2 * ic->kernel_timeout_s) + GRACE_S;
				continue;
			}
			struct fa_result r;
			double *ms = NULL;
			if ((outcome = read_all(rfd, &r, sizeof r, deadline, ic->cancel)) != 0)
				break;
			if (h.n_samples > 0) {
				ms = malloc(sizeof(double) * (size_t)h.n_samples);
				if (!ms || (outcome = read_all(rfd, ms, sizeof(double) *
									(size_t)h.n_samples,
							       deadline, ic->cancel)) != 0) {
					free(ms);
					if (!ms)
						outcome = -1;
					break;
				}
			}
			const struct fa_case_kernel *ck = &ic->kernels[h.index];
			/* pointers in the record belong to the worker: rebind them */
			r.kernel = ck->k->name;
			r.backend = ck->slot->name;
			r.params = ck->params_text;
			r.timing = timing_names[h.timing >= 0 && h.timing < N_TIMING_NAMES ? h.timing : 0];
			fa_samples_free(&samples[h.index]);
			samples[h.index].ms = ms;
			samples[h.index].n = samples[h.index].cap = h.n_samples;
			r.samples = ms;
			results[h.index] = r;
			if (h.index + 1 > next)
				next = h.index + 1;
			current = -2; /* between kernels */
		}
		if (outcome == 4)
			break; /* next is past the last kernel: the worker ran them all */
		close(rfd);
		if (outcome == 2 || outcome == 3 || outcome == -1)
			kill(pid, SIGKILL);
		reap(pid, &st, -1);
		if (ic->worker) {
			ic->worker->pid = 0;
			ic->worker->fd = -1;
		}
		if (outcome == 3)
			return fa_err_set(err, FA_ERR_CANCELLED, "cancelled");
		if (next >= ic->n_kernels)
			break;
		/* a worker whose device became unusable reports the kernel that broke it
		 * and exits with FA_WORKER_STICKY: the rest run in a fresh worker */
		if (outcome == 1 && WIFEXITED(st) && WEXITSTATUS(st) == FA_WORKER_STICKY && next > first)
			continue;
		char why[256];
		if (outcome == 2)
			snprintf(why, sizeof why, "no answer from the worker for %.0f s; killed",
				 (current < 0 ? 2 * ic->setup_timeout_s : 2 * ic->kernel_timeout_s) +
					 GRACE_S);
		else
			describe_exit(st, why, sizeof why);
		int status = outcome == 2 ? FA_STATUS_TIMEOUT : FA_STATUS_ERROR;
		if (current == -1) { /* died or hung preparing the case: nothing can run */
			char full[320];
			snprintf(full, sizeof full, "%s (while preparing inputs and reference)", why);
			for (int i = next; i < ic->n_kernels; i++)
				if (results[i].status < 0)
					set_reason(&results[i], status, full);
			break;
		}
		if (current >= 0) {
			set_reason(&results[current], status, why);
			next = current + 1;
		} else if (results[next].status < 0) {
			/* died between kernels: the next one never started; try it again
			 * once in a fresh worker, then give up on it */
			set_reason(&results[next], FA_STATUS_ERROR, why);
			next++;
		}
	}
	for (int i = 0; i < ic->n_kernels; i++) {
		const struct fa_case_kernel *ck = &ic->kernels[i];
		if (results[i].status >= 0 && results[i].kernel)
			continue;
		results[i].kernel = ck->k->name;
		results[i].backend = ck->slot->name;
		results[i].params = ck->params_text;
		results[i].timing = "";
		results[i].st.same_max_abs = -1;
		results[i].st.worst_index = -1;
		if (results[i].status < 0)
			set_reason(&results[i], FA_STATUS_ERROR, "no result from the worker");
	}
	return FA_OK;
}
