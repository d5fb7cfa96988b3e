/* proc.c - fork/exec of the fabench binary for end-to-end tests. */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

extern char **environ;

const char *fa_proc_bin(void)
{
	static char path[1024];
	const char *env = getenv("FABENCH_BIN");
	if (env && *env)
		return env;
	snprintf(path, sizeof path, "%s/build/fabench", fa_test_root());
	return path;
}

static void child_exec(char *const argv[], char *const env[])
{
	char *args[64];
	int n = 0;
	args[n++] = (char *)fa_proc_bin();
	for (int i = 0; argv[i] && n < 63; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	for (int i = 0; env && env[i]; i++)
		putenv(env[i]);
	if (chdir(fa_test_root()) != 0)
		_exit(126);
	execv(args[0], args);
	_exit(127);
}

static int decode(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

static void append(char **buf, size_t *len, const char *data, size_t n)
{
	char *nb = realloc(*buf, *len + n + 1);
	if (!nb)
		return;
	memcpy(nb + *len, data, n);
	*len += n;
	nb[*len] = '\0';
	*buf = nb;
}

void fa_proc_run(char *const argv[], char *const env[], double timeout_s,
		 struct fa_proc_result *r)
{
	int po[2], pe[2], st = 0;
	size_t lo = 0, le = 0;
	pid_t pid;
	struct timespec t0, t;
	memset(r, 0, sizeof *r);
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	if (pipe(po) != 0 || pipe(pe) != 0) {
		r->status = -1;
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		close(po[1]);
		close(pe[1]);
		child_exec(argv, env);
	}
	close(po[1]);
	close(pe[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int open_fds = 2;
	struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
	while (open_fds > 0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		double el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
		if (el > timeout_s) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(fds, 2, 100) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[4096];
			ssize_t n = read(fds[i].fd, buf, sizeof buf);
			if (n <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
			} else if (i == 0) {
				append(&r->out, &lo, buf, (size_t)n);
			} else {
				append(&r->err, &le, buf, (size_t)n);
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (fds[i].fd >= 0)
			close(fds[i].fd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r->status = decode(st);
}

void fa_proc_free(struct fa_proc_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

pid_t fa_proc_start_log(char *const argv[], char *const env[], const char *log)
{
	pid_t pid;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int dn = open("/dev/null", O_RDWR);
		int lf = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
		if (dn >= 0) {
			dup2(dn, 1);
			dup2(lf >= 0 ? lf : dn, 2);
		}
		child_exec(argv, env);
	}
	return pid;
}

pid_t fa_proc_start(char *const argv[], char *const env[])
{
	return fa_proc_start_log(argv, env, NULL);
}

int fa_proc_wait(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return decode(st);
}

int fa_proc_script(const char *script, char *const args[], char **out, char **err)
{
	char po[1200], pe[1200], bin[1200], *argv[32];
	const char *base = strrchr(script, '/') ? strrchr(script, '/') + 1 : script;
	int n = 0, status = -1;
	pid_t pid;
	snprintf(po, sizeof po, "%s/%s.out", fa_test_tmpdir(), base);
	snprintf(pe, sizeof pe, "%s/%s.err", fa_test_tmpdir(), base);
	snprintf(bin, sizeof bin, "FABENCH_BIN=%s", fa_proc_bin());
	argv[n++] = (char *)"bash";
	argv[n++] = (char *)script;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fo < 0 || fe < 0 || chdir(fa_test_root()) != 0 || dup2(fo, 1) < 0 ||
		    dup2(fe, 2) < 0 || putenv(bin) != 0)
			_exit(127);
		execvp("bash", argv);
		_exit(127);
	}
	if (pid > 0 && waitpid(pid, &status, 0) == pid)
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	*out = fa_test_read_file(po, NULL);
	*err = fa_test_read_file(pe, NULL);
	return status;
}
