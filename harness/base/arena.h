/* arena.h - a bump allocator for data that lives and dies together: the
 * parse of one suite, the rows and strings of one compare or one history,
 * what the reader of stored runs returns (store/reader.h). Nothing is freed
 * alone; fa_arena_free frees every block at once.
 */
#ifndef FA_ARENA_H
#define FA_ARENA_H

#include <stddef.h>

/* An arena; zero-initialised ({0} or memset) it is empty. */
struct fa_arena {
	void *head; /* the block being filled, then older ones and big ones */
};

/* n zeroed bytes aligned for any type, valid until fa_arena_free(a); NULL
 * when out of memory (the arena is unchanged). */
void *fa_arena_alloc(struct fa_arena *a, size_t n);

/* A copy of s in the arena ("" for NULL s); NULL when out of memory. */
char *fa_arena_strdup(struct fa_arena *a, const char *s);

/* Frees every block of a and leaves it empty. a may be NULL. */
void fa_arena_free(struct fa_arena *a);

#endif /* FA_ARENA_H */
