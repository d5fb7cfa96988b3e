/* arena.c - the bump allocator of arena.h: blocks of 64 KiB, each request
 * rounded up to max_align_t, a larger request in a block of its own behind
 * the current one (which keeps serving small ones).
 */
#include "arena.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

struct block {
	struct block *next;
	size_t used, size;
	alignas(max_align_t) unsigned char data[];
};

/* Blocks of 64 KiB hold thousands of rows' strings. */
#define ARENA_BLOCK ((size_t)64 * 1024)

void *fa_arena_alloc(struct fa_arena *a, size_t n)
{
	size_t align = alignof(max_align_t), need = (n + align - 1) / align * align;
	struct block *b = a->head;
	if (need == 0)
		need = align;
	if (!b || b->size - b->used < need) {
		size_t bsize = need > ARENA_BLOCK ? need : ARENA_BLOCK;
		struct block *nb = malloc(sizeof *nb + bsize);
		if (!nb)
			return NULL;
		nb->used = 0;
		nb->size = bsize;
		if (b && need > ARENA_BLOCK) {
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			a->head = nb;
		}
		b = nb;
	}
	void *p = b->data + b->used;
	b->used += need;
	memset(p, 0, need);
	return p;
}

char *fa_arena_strdup(struct fa_arena *a, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	char *p = fa_arena_alloc(a, n + 1);
	if (p && n)
		memcpy(p, s, n);
	return p;
}

void fa_arena_free(struct fa_arena *a)
{
	struct block *b = a ? a->head : NULL;
	while (b) {
		struct block *next = b->next;
		free(b);
		b = next;
	}
	if (a)
		a->head = NULL;
}
