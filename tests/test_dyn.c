/* test_dyn.c - the dynamic persistent schedule of cuda_flash_wgmma
 * (kernels/common/fa_dyn.h) on the CPU: when tunable `dynamic` takes it,
 * the grid it launches, the order of the work items, and the counter's
 * protocol against every interleaving a random scheduler draws (each item
 * run once, the counter back at 0 after every launch, so launches of other
 * sizes can follow). The kernel itself runs in tests/test_cuda.c. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/common/fa_dyn.h"
#include "../kernels/common/fa_rng.h"
#include "test.h"

FA_TEST(dyn, auto_takes_uneven_masked_items_only)
{
	static const int masked[] = {FA_MASK_CAUSAL, FA_MASK_PREFIX_LM, FA_MASK_SLIDING_WINDOW};
	for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
		FA_CHECK(fa_dyn_wanted(FA_DYN_AUTO, masked[i], 2, 1) == 1);
		FA_CHECK(fa_dyn_wanted(FA_DYN_AUTO, masked[i], 64, 1) == 1);
		/* one query tile: every item of a head is alike */
		FA_CHECK(fa_dyn_wanted(FA_DYN_AUTO, masked[i], 1, 1) == 0);
		/* split-KV: the grid main had */
		FA_CHECK(fa_dyn_wanted(FA_DYN_AUTO, masked[i], 64, 2) == 0);
		FA_CHECK(fa_dyn_wanted(FA_DYN_OFF, masked[i], 64, 1) == 0);
		FA_CHECK(fa_dyn_wanted(FA_DYN_ON, masked[i], 64, 3) == 1);
	}
	/* never without a mask under auto; on when asked */
	FA_CHECK(fa_dyn_wanted(FA_DYN_AUTO, FA_MASK_NONE, 64, 1) == 0);
	FA_CHECK(fa_dyn_wanted(FA_DYN_ON, FA_MASK_NONE, 64, 1) == 1);
	FA_CHECK(fa_dyn_wanted(FA_DYN_ON, FA_MASK_NONE, 1, 1) == 1);
	FA_CHECK(fa_dyn_uneven(FA_MASK_NONE, 100) == 0);
	FA_CHECK(fa_dyn_uneven(FA_MASK_CAUSAL, 100) == 1);
}

FA_TEST(dyn, grid_sizes)
{
	/* no persistent grid: one CTA per item (0) */
	FA_CHECK(fa_dyn_ctas(0, 0, 132, 1000) == 0);
	/* static persistent, as tunable persistent says */
	FA_CHECK(fa_dyn_ctas(0, 1, 132, 1000) == 132);
	FA_CHECK(fa_dyn_ctas(0, 7, 132, 1000) == 7);
	/* dynamic: one CTA per SM unless persistent names N */
	FA_CHECK(fa_dyn_ctas(1, 0, 132, 1000) == 132);
	FA_CHECK(fa_dyn_ctas(1, 1, 132, 1000) == 132);
	FA_CHECK(fa_dyn_ctas(1, 3, 132, 1000) == 3);
	/* never more CTAs than items */
	FA_CHECK(fa_dyn_ctas(1, 0, 132, 50) == 50);
	FA_CHECK(fa_dyn_ctas(0, 500, 132, 50) == 50);
	FA_CHECK(fa_dyn_ctas(1, 0, 132, 1) == 1);
}

FA_TEST(dyn, sections_fit_half_the_l2)
{
	/* 50 MiB of L2, K and V of 8192 keys x (128 + 128) x 2 bytes = 4 MiB
	 * a pair: 6 pairs in 25 MiB */
	const double kv = 8192.0 * 256 * 2;
	FA_CHECK(fa_dyn_sect(50 << 20, kv, 32) == 6);
	/* GQA 4: a KV head's bytes shared by 4 query heads, 1 MiB a pair */
	FA_CHECK(fa_dyn_sect(50 << 20, kv / 4, 32) == 25);
	/* at most every pair, at least one */
	FA_CHECK(fa_dyn_sect(50 << 20, kv, 4) == 4);
	FA_CHECK(fa_dyn_sect(50 << 20, kv * 100, 32) == 1);
	/* L2 unknown: one section */
	FA_CHECK(fa_dyn_sect(0, kv, 32) == 32);
}

/* Checks fa_dyn_item's order for one shape: a bijection from the items to
 * (query tile, pair, key range); the key ranges of a tile next to each
 * other; sections of `sect` pairs in pair order, each running its last
 * query tile (mt_rev 0) of every pair first and never going back to a
 * later tile. Returns the number of failures. */
static int order_check(int n_mtiles, int splits, int sect, int n_bh)
{
	const int n = n_mtiles * splits * n_bh;
	int bad = 0, prev_mt = -1, prev_sec = -1;
	char *seen = calloc((size_t)n, 1);
	if (!seen)
		return 1;
	for (int item = 0; item < n; item++) {
		int mt, bh, sp;
		fa_dyn_item(item, n_mtiles, splits, sect, n_bh, &mt, &bh, &sp);
		if (mt < 0 || mt >= n_mtiles || bh < 0 || bh >= n_bh || sp < 0 || sp >= splits) {
			bad++;
			continue;
		}
		const int key = (bh * n_mtiles + mt) * splits + sp;
		bad += seen[key]++ != 0; /* an item twice */
		bad += sp != item % splits; /* the ranges of a tile together */
		const int sec = bh / sect;
		if (sec != prev_sec) {
			/* a new section: the next in order, its last tile first */
			bad += sec != prev_sec + 1 || mt != 0;
			prev_mt = mt;
		} else {
			bad += mt < prev_mt; /* the tiles go forward */
			prev_mt = mt;
		}
		prev_sec = sec;
	}
	for (int i = 0; i < n; i++)
		bad += seen[i] != 1;
	free(seen);
	return bad;
}

FA_TEST(dyn, order_is_every_item_once_last_tiles_first)
{
	/* {n_mtiles, splits, sect, n_bh}: one section, sections that divide
	 * the pairs and that do not (a shorter last one), split-KV, one tile */
	static const int shapes[][4] = {{32, 1, 32, 32}, {32, 1, 6, 32}, {7, 1, 5, 12},
					{3, 4, 2, 5},    {1, 1, 1, 1},   {1, 3, 4, 4},
					{128, 1, 1, 3},  {5, 2, 7, 7}};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		FA_CHECKF(order_check(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]) == 0,
			  "shape %zu (%d tiles, %d splits, sections of %d of %d pairs)", i,
			  shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
	/* the first items of a section of 2 pairs, 3 tiles: tile 2 of both
	 * pairs, then tile 1 of both */
	int mt, bh, sp;
	fa_dyn_item(0, 3, 1, 2, 5, &mt, &bh, &sp);
	FA_CHECK(mt == 0 && bh == 0 && sp == 0);
	fa_dyn_item(1, 3, 1, 2, 5, &mt, &bh, &sp);
	FA_CHECK(mt == 0 && bh == 1 && sp == 0);
	fa_dyn_item(2, 3, 1, 2, 5, &mt, &bh, &sp);
	FA_CHECK(mt == 1 && bh == 0 && sp == 0);
	/* the last section holds pair 4 alone */
	fa_dyn_item(12, 3, 1, 2, 5, &mt, &bh, &sp);
	FA_CHECK(mt == 0 && bh == 4 && sp == 0);
	fa_dyn_item(14, 3, 1, 2, 5, &mt, &bh, &sp);
	FA_CHECK(mt == 2 && bh == 4 && sp == 0);
}

/* One launch of `ctas` CTAs over n items under the counter protocol, the
 * CTAs' takes interleaved at random (the atomics are ordered; which CTA
 * takes next is not): CTA c runs item c (none past the items: it stops at
 * once), then fa_dyn_after() of each value it takes until it stops; the
 * CTA told to reset puts the counter back at a random later point. Checks every item runs once, no take comes after
 * the one that resets, and the counter is 0 at the end. Returns failures. */
static int launch_sim(unsigned *counter, int ctas, int n, uint64_t seed, uint64_t *draw)
{
	int bad = 0, active = ctas, pending_reset = 0, resets = 0;
	char *ran = calloc((size_t)n, 1), *stopped = calloc((size_t)ctas, 1);
	if (!ran || !stopped) {
		free(ran);
		free(stopped);
		return 1;
	}
	for (int c = 0; c < ctas; c++) {
		if (c < n) {
			ran[c]++;
		} else {
			stopped[c] = 1;
			active--;
		}
	}
	while (active > 0 || pending_reset) {
		const uint64_t r = fa_rng_bits(seed, 0, (*draw)++);
		if (pending_reset && (active == 0 || r % 4 == 0)) {
			*counter = 0; /* the resetting CTA's store lands */
			pending_reset = 0;
			continue;
		}
		int c = (int)(r % (uint64_t)ctas);
		while (stopped[c]) /* the next CTA still taking */
			c = (c + 1) % ctas;
		int reset;
		const unsigned got = (*counter)++;
		const int item = fa_dyn_after(got, ctas, n, &reset);
		bad += resets > 0; /* a take after the launch's last */
		if (reset) {
			resets++;
			pending_reset = 1;
		}
		if (item < 0) {
			stopped[c] = 1;
			active--;
		} else if (item >= n) {
			bad++;
		} else {
			ran[item]++;
		}
	}
	for (int i = 0; i < n; i++)
		bad += ran[i] != 1;
	bad += resets != 1 || *counter != 0;
	free(ran);
	free(stopped);
	return bad;
}

FA_TEST(dyn, counter_protocol_runs_each_item_once_and_resets)
{
	/* {ctas, items}: as many CTAs as items (only stopping values taken),
	 * one CTA, 132 CTAs over a causal prefill's items, a few over a few;
	 * more CTAs than items (the launcher caps them; the protocol holds);
	 * one after the other on the same counter, as launches on a stream */
	static const int launches[][2] = {{1, 1},   {5, 5},     {1, 40},  {3, 40},  {132, 132},
					  {132, 2048}, {132, 133}, {7, 100}, {2, 3},   {16, 16},
					  {132, 50},   {4, 1}};
	const uint64_t seed = fa_test_seed();
	uint64_t draw = 0;
	unsigned counter = 0;
	for (int rep = 0; rep < 20; rep++)
		for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
			FA_CHECKF(launch_sim(&counter, launches[i][0], launches[i][1], seed, &draw) ==
					  0,
				  "launch %zu (%d CTAs, %d items), repetition %d", i, launches[i][0],
				  launches[i][1], rep);
	/* the values themselves: item ctas + got while there are items */
	int reset;
	FA_CHECK(fa_dyn_after(0, 3, 10, &reset) == 3 && reset == 0);
	FA_CHECK(fa_dyn_after(6, 3, 10, &reset) == 9 && reset == 0);
	FA_CHECK(fa_dyn_after(7, 3, 10, &reset) == -1 && reset == 0);
	FA_CHECK(fa_dyn_after(9, 3, 10, &reset) == -1 && reset == 1);
	FA_CHECK(fa_dyn_after(0, 10, 10, &reset) == -1 && reset == 0);
	FA_CHECK(fa_dyn_after(9, 10, 10, &reset) == -1 && reset == 1);
	FA_CHECK(fa_dyn_after(0, 12, 10, &reset) == -1 && reset == 0);
	FA_CHECK(fa_dyn_after(9, 12, 10, &reset) == -1 && reset == 1);
}
