/* fleet.c - shards (--shard K/N), device lists (--devices) and the
 * longest-first dealer of cases to one thread per device. */
#include "fleet.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest N of --shard: a CI matrix or a Slurm array of more jobs than
 * this is a typo. */
#define SHARD_MAX 100000

static pthread_mutex_t fleet_mutex = PTHREAD_MUTEX_INITIALIZER;

void fa_fleet_lock(void)
{
	pthread_mutex_lock(&fleet_mutex);
}

void fa_fleet_unlock(void)
{
	pthread_mutex_unlock(&fleet_mutex);
}

/* Parses a decimal integer that fills text; -1 when it is not one. */
static long parse_uint(const char *text, const char *end)
{
	long v = 0;
	if (text == end || end - text > 9)
		return -1;
	for (const char *p = text; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

enum fa_rc fa_fleet_parse_shard(const char *text, int *k, int *n, struct fa_err *err)
{
	const char *slash = strchr(text, '/');
	long kk = slash ? parse_uint(text, slash) : -1;
	long nn = slash ? parse_uint(slash + 1, slash + strlen(slash)) : -1;
	if (kk < 0 || nn < 0)
		return fa_err_set(err, FA_ERR_USAGE, "--shard '%s' must be K/N, like 2/8", text);
	if (nn < 1 || nn > SHARD_MAX || kk < 1 || kk > nn)
		return fa_err_set(err, FA_ERR_USAGE,
				  "--shard '%s': K must be 1 to N and N 1 to %d", text, SHARD_MAX);
	*k = (int)kk;
	*n = (int)nn;
	return FA_OK;
}

int fa_fleet_shard_of(const char *key, int n)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a 64 offset basis */
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		h ^= *p;
		h *= 1099511628211ull; /* FNV-1a 64 prime */
	}
	return n > 0 ? (int)(h % (uint64_t)n) + 1 : 1;
}

/* Entries of a comma list ("0,1,2" -> 3); 0 for "" or NULL. */
static int count_list(const char *s)
{
	int n = 1;
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		n += *s == ',';
	return n;
}

/* Entries of dir whose name starts with prefix (NULL: any but . and ..). */
static int count_dir(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (!prefix || strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int fa_fleet_device_count(const char *backend)
{
	int n = 0;
	if (strcmp(backend, "test") == 0) {
		const char *env = getenv("FABENCH_TEST_DEVICES");
		n = env ? atoi(env) : 1;
	} else if (strcmp(backend, "cuda") == 0) {
		n = count_list(getenv("CUDA_VISIBLE_DEVICES"));
		if (!getenv("CUDA_VISIBLE_DEVICES"))
			n = count_dir("/proc/driver/nvidia/gpus", NULL);
	} else if (strcmp(backend, "hip") == 0) {
		n = count_list(getenv("HIP_VISIBLE_DEVICES"));
		if (!getenv("HIP_VISIBLE_DEVICES"))
			n = count_dir("/dev/dri", "renderD");
	}
	if (n > FA_FLEET_MAX_DEVICES)
		n = FA_FLEET_MAX_DEVICES;
	return n > 0 ? n : 1;
}

enum fa_rc fa_fleet_parse_devices(const char *text, const char *backend, int *devices, int *n,
				  struct fa_err *err)
{
	const char *p = text;
	*n = 0;
	if (strcmp(text, "all") == 0) {
		int count = fa_fleet_device_count(backend);
		for (int i = 0; i < count; i++)
			devices[(*n)++] = i;
		return FA_OK;
	}
	for (;;) {
		const char *end = strchr(p, ',');
		long d;
		if (!end)
			end = p + strlen(p);
		d = parse_uint(p, end);
		if (d < 0 || d >= 1000)
			return fa_err_set(err, FA_ERR_USAGE,
					  "--devices '%s' must be all or device numbers like 0,1,2",
					  text);
		for (int i = 0; i < *n; i++)
			if (devices[i] == (int)d)
				return fa_err_set(err, FA_ERR_USAGE,
						  "--devices '%s' names device %ld twice", text, d);
		if (*n >= FA_FLEET_MAX_DEVICES)
			return fa_err_set(err, FA_ERR_USAGE, "--devices '%s': more than %d devices",
					  text, FA_FLEET_MAX_DEVICES);
		devices[(*n)++] = (int)d;
		if (!*end)
			break;
		p = end + 1;
	}
	return FA_OK;
}

void fa_fleet_devices_text(const int *devices, int n, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && used < size; i++) {
		int w = snprintf(buf + used, size - used, i ? ",%d" : "%d", devices[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

static const double *sort_cost;

static int by_cost_desc(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	if (sort_cost[x] != sort_cost[y])
		return sort_cost[x] > sort_cost[y] ? -1 : 1;
	return (x > y) - (x < y);
}

void fa_fleet_lpt_order(const double *cost, int n, int *order)
{
	for (int i = 0; i < n; i++)
		order[i] = i;
	fa_fleet_lock(); /* qsort has no context argument: sort_cost is shared */
	sort_cost = cost;
	qsort(order, (size_t)n, sizeof *order, by_cost_desc);
	sort_cost = NULL;
	fa_fleet_unlock();
}

struct dealer {
	const int *order;
	int n, next, stop;
	fa_fleet_job_fn fn;
	void *ctx;
	volatile int *cancel;
};

struct device_thread {
	struct dealer *d;
	int slot, device;
	pthread_t tid;
};

static void *device_main(void *arg)
{
	struct device_thread *t = arg;
	struct dealer *d = t->d;
	for (;;) {
		int job;
		fa_fleet_lock();
		if (d->stop || d->next >= d->n || (d->cancel && *d->cancel)) {
			fa_fleet_unlock();
			break;
		}
		job = d->order[d->next++];
		fa_fleet_unlock();
		if (d->fn(d->ctx, job, t->slot, t->device) != 0) {
			fa_fleet_lock();
			d->stop = 1;
			fa_fleet_unlock();
		}
	}
	d->fn(d->ctx, FA_FLEET_JOB_END, t->slot, t->device);
	return NULL;
}

enum fa_rc fa_fleet_deal(const double *cost, int n, const int *devices, int n_devices,
			 fa_fleet_job_fn fn, void *ctx, volatile int *cancel, struct fa_err *err)
{
	struct device_thread *t = calloc((size_t)(n_devices > 0 ? n_devices : 1), sizeof *t);
	int *order = malloc(sizeof *order * (size_t)(n > 0 ? n : 1));
	struct dealer d = {order, n, 0, 0, fn, ctx, cancel};
	enum fa_rc rc = FA_OK;
	int started = 0;
	if (!t || !order) {
		free(t);
		free(order);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
	}
	fa_fleet_lpt_order(cost, n, order);
	for (int i = 0; i < n_devices; i++, started++) {
		int e;
		t[i].d = &d;
		t[i].slot = i;
		t[i].device = devices[i];
		if ((e = pthread_create(&t[i].tid, NULL, device_main, &t[i])) != 0) {
			rc = fa_err_set(err, FA_ERR_INTERNAL, "cannot start the thread of device %d: %s",
					devices[i], strerror(e));
			break;
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(t[i].tid, NULL);
	free(t);
	free(order);
	return rc;
}
