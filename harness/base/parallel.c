/* parallel.c - chunked parallel for on POSIX threads. Threads take chunks
 * from a shared atomic counter, so uneven rows (causal masks) balance out. */
#include "parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct job {
	int64_t n, grain;
	atomic_llong next;
	fa_parallel_fn fn;
	void *ctx;
};

struct worker {
	struct job *job;
	int thread;
	pthread_t tid;
};

static void run_chunks(struct job *j, int thread)
{
	for (;;) {
		int64_t b = atomic_fetch_add(&j->next, j->grain);
		if (b >= j->n)
			return;
		int64_t e = b + j->grain < j->n ? b + j->grain : j->n;
		j->fn(j->ctx, b, e, thread);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	run_chunks(w->job, w->thread);
	return NULL;
}

int fa_parallel_for(int64_t n, int64_t grain, int nthreads, fa_parallel_fn fn, void *ctx)
{
	struct job j;
	struct worker *ws;
	int started = 0, rc = 0;
	if (n <= 0)
		return 0;
	if (grain < 1)
		grain = 1;
	if (nthreads < 1)
		nthreads = 1;
	if ((int64_t)nthreads > (n + grain - 1) / grain)
		nthreads = (int)((n + grain - 1) / grain);
	j.n = n;
	j.grain = grain;
	atomic_init(&j.next, 0);
	j.fn = fn;
	j.ctx = ctx;
	if (nthreads == 1) {
		run_chunks(&j, 0);
		return 0;
	}
	ws = calloc((size_t)nthreads, sizeof *ws);
	if (!ws) {
		run_chunks(&j, 0);
		return -1;
	}
	for (int t = 1; t < nthreads; t++) {
		ws[t].job = &j;
		ws[t].thread = t;
		if (pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]) != 0) {
			rc = -1;
			break;
		}
		started = t;
	}
	run_chunks(&j, 0);
	for (int t = 1; t <= started; t++)
		pthread_join(ws[t].tid, NULL);
	free(ws);
	return rc;
}

int fa_cpu_threads(void)
{
	const char *env = getenv("FABENCH_THREADS");
	long n;
	if (env && *env) {
		n = strtol(env, NULL, 10);
		if (n >= 1 && n <= 4096)
			return (int)n;
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n >= 1 ? (int)n : 1;
}
