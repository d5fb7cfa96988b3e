/* plan_cache.c - execution plans by shape: a chained hash map keyed by
 * every field of the problem that shapes the graph (struct fa_cudnn_key).
 * A plan is built the first time supports(), workspace_bytes() or launch()
 * asks for its key (the harness asks supports() and workspace_bytes()
 * before it times anything), failures included, so a refused shape is not
 * rebuilt and its reason is given again.
 */
#include <stdlib.h>
#include <string.h>

#include "cudnn_internal.h"

/* Buckets: a run holds tens to a few hundred shapes. */
#define CACHE_BUCKETS 256

static struct fa_cudnn_plan *cache[CACHE_BUCKETS];
static int cache_n;

/* FNV-1a over the key's bytes (the key is zeroed before it is filled). */
static uint64_t key_hash(const struct fa_cudnn_key *k)
{
	const unsigned char *b = (const unsigned char *)k;
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < sizeof *k; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* The cached plan of key (hash h), or NULL; needs the lock. */
static struct fa_cudnn_plan *cache_find(const struct fa_cudnn_key *key, uint64_t h)
{
	struct fa_cudnn_plan *pl;
	for (pl = cache[h % CACHE_BUCKETS]; pl; pl = pl->next)
		if (pl->hash == h && memcmp(&pl->key, key, sizeof *key) == 0)
			break;
	return pl;
}

struct fa_cudnn_plan *fa_cudnn_cache_peek(struct fa_cudnn_api *api, const struct fa_problem *p,
					  int kind)
{
	struct fa_cudnn_key key;
	struct fa_cudnn_plan *pl;
	fa_cudnn_key_of(p, kind, &key);
	pthread_mutex_lock(&api->lock);
	pl = cache_find(&key, key_hash(&key));
	pthread_mutex_unlock(&api->lock);
	return pl;
}

struct fa_cudnn_plan *fa_cudnn_cache_get(struct fa_cudnn_api *api, const struct fa_problem *p,
					 int kind)
{
	struct fa_cudnn_key key;
	struct fa_cudnn_plan *pl;
	uint64_t h;
	fa_cudnn_key_of(p, kind, &key);
	h = key_hash(&key);
	pthread_mutex_lock(&api->lock);
	pl = cache_find(&key, h);
	if (!pl && (pl = calloc(1, sizeof *pl)) != NULL) {
		pl->key = key;
		pl->hash = h;
		fa_cudnn_plan_build(api, pl);
		pl->next = cache[h % CACHE_BUCKETS];
		cache[h % CACHE_BUCKETS] = pl;
		cache_n++;
	}
	pthread_mutex_unlock(&api->lock);
	return pl;
}

void fa_cudnn_cache_clear(struct fa_cudnn_api *api)
{
	pthread_mutex_lock(&api->lock);
	for (int i = 0; i < CACHE_BUCKETS; i++) {
		while (cache[i]) {
			struct fa_cudnn_plan *pl = cache[i];
			cache[i] = pl->next;
			fa_cudnn_plan_release(api, pl);
			free(pl);
		}
	}
	cache_n = 0;
	pthread_mutex_unlock(&api->lock);
}

int fa_cudnn_cache_count(void)
{
	return cache_n;
}
