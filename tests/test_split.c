/* test_split.c - the split-KV rule of fa_split.h on the shapes it was tuned
 * on (an H100's 132 SMs x 2 resident CTAs of cuda_flash_mma at head_dim
 * 128: 32-key tiles), its caps, and the cases where it must not split. */
#include <stdlib.h>
#include <string.h>

#include "../kernels/common/fa_decode.h"
#include "../harness/run/data.h"
#include "../kernels/common/fa_split.h"
#include "test.h"

#define SLOTS_H100 (132 * 2)

/* Llama-3-8B decode: 32 query / 8 KV heads of 128, q_len tokens over kv_len
 * cached keys, bf16. One CTA per (sequence, KV head): the query heads of a
 * group are packed into one tile. */
static struct fa_problem decode(int batch, int q_len, int kv_len)
{
	struct fa_problem p;
	memset(&p, 0, sizeof p);
	p.batch = batch;
	p.heads = 32;
	p.kv_heads = 8;
	p.q_len = q_len;
	p.kv_len = kv_len;
	p.head_dim = p.head_dim_v = 128;
	p.total_q = batch * q_len;
	p.total_k = batch * kv_len;
	return p;
}

static int auto_decode(int batch, int q_len, int kv_len)
{
	struct fa_problem p = decode(batch, q_len, kv_len);
	return fa_split_count(&p, (int64_t)batch * 8, SLOTS_H100, (kv_len + 31) / 32, 128, 0);
}

FA_TEST(split, auto_fills_the_device_for_decode)
{
	/* batch 1: 8 CTAs; 32 splits make 256 of the 264 slots busy */
	FA_CHECK(auto_decode(1, 1, 8192) == 32);
	/* 512 or 1024 key tiles: 31 ranges (94% of a wave) are within 95% of
	 * the best, 32 ranges (97%); 33 would leave a range empty */
	FA_CHECK(auto_decode(1, 16, 32768) == 31);
	FA_CHECK(auto_decode(1, 1, 16384) == 31);
	/* batch 8: 64 CTAs x 4 = 256 */
	FA_CHECK(auto_decode(8, 1, 8192) == 4);
	FA_CHECK(auto_decode(8, 16, 16384) == 4);
	/* batch 64: 512 CTAs are almost two waves already */
	FA_CHECK(auto_decode(64, 1, 8192) == 1);
	FA_CHECK(auto_decode(512, 1, 8192) == 1);
}

FA_TEST(split, auto_leaves_short_prefill_alone)
{
	/* ViT at 1k tokens, 16 heads of 80: 8 query tiles x 16 heads = 128 CTAs,
	 * under one wave, but its partial outputs would weigh 2x its K/V */
	struct fa_problem p;
	memset(&p, 0, sizeof p);
	p.batch = 1;
	p.heads = p.kv_heads = 16;
	p.q_len = p.kv_len = p.total_q = p.total_k = 1024;
	p.head_dim = p.head_dim_v = 80;
	FA_CHECK(fa_split_count(&p, 128, SLOTS_H100, 16, 80, 0) == 1);
	/* asked for, it splits all the same */
	FA_CHECK(fa_split_count(&p, 128, SLOTS_H100, 16, 80, 2) == 2);
}

FA_TEST(split, unknown_device_never_splits_on_its_own)
{
	struct fa_problem p = decode(1, 1, 8192);
	FA_CHECK(fa_split_count(&p, 8, 0, 256, 128, 0) == 1);
	FA_CHECK(fa_split_count(&p, 8, 0, 256, 128, 8) == 8);
}

FA_TEST(split, requests_are_capped)
{
	struct fa_problem p = decode(1, 1, 8192);
	FA_CHECK(fa_split_count(&p, 8, SLOTS_H100, 256, 128, 7) == 7);
	FA_CHECK(fa_split_count(&p, 8, SLOTS_H100, 256, 128, 1000) == FA_SPLIT_MAX);
	FA_CHECK(fa_split_count(&p, 8, SLOTS_H100, 3, 128, 10) == 3);   /* 3 key tiles */
	FA_CHECK(fa_split_count(&p, 8, SLOTS_H100, 0, 128, 10) == 1);   /* no keys */
	/* grid.z = batch x splits stays within 65535 */
	p = decode(40000, 1, 64);
	FA_CHECK(fa_split_count(&p, 320000, SLOTS_H100, 2, 128, 4) == 1);
	p = decode(20000, 1, 256);
	FA_CHECK(fa_split_count(&p, 160000, SLOTS_H100, 8, 128, 8) == 3);
}

FA_TEST(split, auto_skips_counts_that_leave_a_range_empty)
{
	/* 10 key tiles over 6 ranges is 2 tiles per range, 5 ranges: 6 would
	 * fill the 264 slots exactly (44 x 6) but one range would be empty; of
	 * the rest 5 and 10 are the most efficient (0.83), 5 the fewer */
	struct fa_problem p = decode(1, 1, 320);
	p.kv_heads = 44;
	p.heads = 44;
	FA_CHECK(fa_split_count(&p, 44, SLOTS_H100, 10, 128, 0) == 5);
	/* never more ranges than tiles */
	p.kv_heads = p.heads = 1;
	p.kv_len = p.total_k = 7 * 32;
	FA_CHECK(fa_split_count(&p, 1, SLOTS_H100, 7, 128, 0) == 7);
}

/* ---- stream-K: the schedule against brute force ---- */

/* Checks plan pl by enumerating every CTA's range: the ranges are
 * non-empty and cover the iteration space exactly once in CTA order;
 * fa_sk_cta_of names the owner of every iteration; fa_sk_tile_ctas names
 * the first and last CTA touching every tile; a uniform plan never crosses
 * a tile and gives every tile ctas / tiles CTAs; the partials of all tiles
 * get distinct slots below 2 x ctas. Returns the number of failures. */
static int sk_brute(const struct fa_sk_plan *pl)
{
	const int64_t n = pl->tiles * pl->kblocks;
	int bad = 0;
	int64_t *owner = calloc((size_t)n, sizeof *owner);
	unsigned char *slot_used = calloc((size_t)pl->ctas * 2, 1);
	if (!owner || !slot_used) {
		free(owner);
		free(slot_used);
		return 1;
	}
	for (int64_t i = 0; i < n; i++)
		owner[i] = -1;
	bad += fa_sk_begin(pl, 0) != 0;
	bad += fa_sk_begin(pl, pl->ctas) != n;
	for (int64_t c = 0; c < pl->ctas; c++) {
		const int64_t b = fa_sk_begin(pl, c), e = fa_sk_begin(pl, c + 1);
		bad += e <= b; /* every CTA has work */
		for (int64_t i = b; i < e && i < n; i++) {
			bad += owner[i] != -1; /* covered twice */
			owner[i] = c;
		}
		if (pl->uniform)
			bad += b / pl->kblocks != (e - 1) / pl->kblocks; /* crosses a tile */
	}
	for (int64_t i = 0; i < n; i++) {
		bad += owner[i] == -1; /* never covered */
		bad += fa_sk_cta_of(pl, i) != owner[i];
	}
	for (int64_t t = 0; t < pl->tiles; t++) {
		int64_t c0, c1;
		fa_sk_tile_ctas(pl, t, &c0, &c1);
		bad += c0 != owner[t * pl->kblocks];
		bad += c1 != owner[t * pl->kblocks + pl->kblocks - 1];
		if (pl->uniform)
			bad += c1 - c0 + 1 != pl->ctas / pl->tiles;
		if (c0 == c1)
			continue; /* written directly, no slot */
		for (int64_t c = c0; c <= c1; c++) {
			const int64_t s = fa_sk_slot(pl, c, t);
			if (s < 0 || s >= 2 * (int64_t)pl->ctas || slot_used[s]) {
				bad++;
				continue;
			}
			slot_used[s] = 1;
		}
	}
	free(owner);
	free(slot_used);
	return bad;
}

FA_TEST(split, streamk_covers_every_block_once)
{
	static const int tiles[] = {1, 2, 3, 7, 8, 10, 64, 100, 257};
	static const int kblocks[] = {1, 2, 5, 32, 256};
	static const int ctas[] = {0, 1, 3, 8, 131, 264, 1000};
	int plans = 0, uniform = 0, general = 0;
	for (size_t a = 0; a < sizeof tiles / sizeof tiles[0]; a++)
		for (size_t b = 0; b < sizeof kblocks / sizeof kblocks[0]; b++)
			for (size_t c = 0; c < sizeof ctas / sizeof ctas[0]; c++)
				for (int sched = FA_SCHED_SK_UNIFORM; sched <= FA_SCHED_SK_GENERAL; sched++) {
					struct fa_sk_plan pl = {0, 0, 0, 0};
					FA_CHECK(fa_sk_plan(tiles[a], kblocks[b], SLOTS_H100, sched, ctas[c],
							    sched == FA_SCHED_SK_GENERAL ? 0 : 5, 0, &pl));
					FA_CHECK(pl.ctas >= 1 && pl.ctas <= (int64_t)tiles[a] * kblocks[b]);
					FA_CHECK(pl.uniform == (sched == FA_SCHED_SK_UNIFORM));
					if (pl.uniform)
						FA_CHECK(pl.ctas % tiles[a] == 0);
					FA_CHECK(sk_brute(&pl) == 0);
					plans++;
					uniform += pl.uniform;
					general += !pl.uniform && pl.ctas % tiles[a] != 0;
				}
	/* both forms were exercised, and general ranges that cross tiles */
	FA_CHECK(plans == 9 * 5 * 7 * 2);
	FA_CHECK(uniform == plans / 2);
	FA_CHECK(general > 50);
}

FA_TEST(split, streamk_counts_and_uniform_split)
{
	struct fa_sk_plan pl;
	/* batch-1 decode of 8 KV heads at 8k keys (256 blocks of 32): 264
	 * slots; uniform takes 33 CTAs per tile */
	FA_CHECK(fa_sk_plan(8, 256, SLOTS_H100, FA_SCHED_SK_UNIFORM, 0, 0, 0, &pl));
	FA_CHECK(pl.ctas == 264 && pl.uniform);
	/* 10 tiles: 26 per tile, 260 CTAs */
	FA_CHECK(fa_sk_plan(10, 256, SLOTS_H100, FA_SCHED_SK_UNIFORM, 0, 0, 0, &pl));
	FA_CHECK(pl.ctas == 260 && pl.uniform);
	/* more tiles than slots: one CTA per tile */
	FA_CHECK(fa_sk_plan(1000, 256, SLOTS_H100, FA_SCHED_SK_UNIFORM, 0, 0, 0, &pl));
	FA_CHECK(pl.ctas == 1000);
	/* never more CTAs per tile than blocks, never more CTAs than blocks */
	FA_CHECK(fa_sk_plan(8, 4, SLOTS_H100, FA_SCHED_SK_UNIFORM, 0, 0, 0, &pl));
	FA_CHECK(pl.ctas == 32);
	FA_CHECK(fa_sk_plan(3, 2, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 0, 0, &pl));
	FA_CHECK(pl.ctas == 6);
	/* a request is taken as given (general) */
	FA_CHECK(fa_sk_plan(8, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 131, 0, 0, &pl));
	FA_CHECK(pl.ctas == 131 && !pl.uniform);
	/* unknown device: one CTA per tile */
	FA_CHECK(fa_sk_plan(8, 256, 0, FA_SCHED_SK_GENERAL, 0, 0, 0, &pl));
	FA_CHECK(pl.ctas == 8);
	/* nothing to do */
	FA_CHECK(!fa_sk_plan(0, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 0, 0, &pl));
	FA_CHECK(!fa_sk_plan(8, 0, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 0, 0, &pl));
}

FA_TEST(split, streamk_rounding_rule)
{
	struct fa_sk_plan pl;
	/* 10 tiles, 264 slots: 260 loses 1.5% */
	FA_CHECK(fa_sk_plan(10, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 5, 0, &pl));
	FA_CHECK(pl.ctas == 260 && pl.uniform);
	FA_CHECK(fa_sk_plan(10, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 1, 0, &pl));
	FA_CHECK(pl.ctas == 264 && !pl.uniform); /* 1% allowed: stays general */
	FA_CHECK(fa_sk_plan(10, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 0, 0, &pl));
	FA_CHECK(pl.ctas == 264 && !pl.uniform); /* no rule: stays general */
	/* 100 tiles: 200 would lose 24% */
	FA_CHECK(fa_sk_plan(100, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 5, 0, &pl));
	FA_CHECK(pl.ctas == 264 && !pl.uniform);
	FA_CHECK(fa_sk_plan(100, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 24, 0, &pl));
	FA_CHECK(pl.ctas == 264 && !pl.uniform); /* 24.2% > 24% */
	FA_CHECK(fa_sk_plan(100, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 25, 0, &pl));
	FA_CHECK(pl.ctas == 200 && pl.uniform);
	/* the seed's ratio: 264 >= 2 x 100 rounds, 4 x 100 does not */
	FA_CHECK(fa_sk_plan(100, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 0, 2, &pl));
	FA_CHECK(pl.ctas == 200 && pl.uniform);
	FA_CHECK(fa_sk_plan(100, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 0, 4, &pl));
	FA_CHECK(pl.ctas == 264 && !pl.uniform);
	/* 8 tiles: 264 = 33 x 8 is a multiple already */
	FA_CHECK(fa_sk_plan(8, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 5, 0, &pl));
	FA_CHECK(pl.ctas == 264 && pl.uniform);
	/* fewer CTAs than tiles: nothing to round to */
	FA_CHECK(fa_sk_plan(300, 256, SLOTS_H100, FA_SCHED_SK_GENERAL, 0, 100, 1, &pl));
	FA_CHECK(pl.ctas == 264 && !pl.uniform);
	FA_CHECK(sk_brute(&pl) == 0);
}

/* ---- the decode path's rule (fa_decode.h), on an H100 with its decode
 * kernel at head size 128: 132 SMs x 2 CTAs ---- */

FA_TEST(split, decode_fills_the_slots_once)
{
	/* Llama-3-8B batch 1: 8 CTAs; 33 ranges would fill the 264 slots, the
	 * automatic cap is 16 (128 CTAs of 512 keys at 8k) */
	FA_CHECK(fa_decode_splits(8, 8192 / 16, SLOTS_H100, 1, 0) == 16);
	FA_CHECK(fa_decode_splits(8, 32768 / 16, SLOTS_H100, 1, 0) == 16);
	/* batch 8: 64 CTAs x 4 = 256 of the 264 slots */
	FA_CHECK(fa_decode_splits(64, 8192 / 16, SLOTS_H100, 8, 0) == 4);
	/* batch 2 and 4: 16 and 8 ranges, 256 CTAs */
	FA_CHECK(fa_decode_splits(16, 8192 / 16, SLOTS_H100, 2, 0) == 16);
	FA_CHECK(fa_decode_splits(32, 8192 / 16, SLOTS_H100, 4, 0) == 8);
	/* batch 64: 512 CTAs already fill the 264 slots */
	FA_CHECK(fa_decode_splits(512, 8192 / 16, SLOTS_H100, 64, 0) == 1);
	FA_CHECK(fa_decode_splits(264, 8192 / 16, SLOTS_H100, 33, 0) == 1);
	/* short caches: no range under 8 tiles (128 keys) */
	FA_CHECK(fa_decode_splits(8, 1024 / 16, SLOTS_H100, 1, 0) == 8);
	FA_CHECK(fa_decode_splits(8, 7, SLOTS_H100, 1, 0) == 1);
	FA_CHECK(fa_decode_splits(8, 1, SLOTS_H100, 1, 0) == 1);
	/* unknown device: no split */
	FA_CHECK(fa_decode_splits(8, 512, 0, 1, 0) == 1);
	/* asked for: taken, capped at the tiles, 64 and the grid */
	FA_CHECK(fa_decode_splits(8, 512, SLOTS_H100, 1, 3) == 3);
	FA_CHECK(fa_decode_splits(8, 512, SLOTS_H100, 1, 40) == 40);
	FA_CHECK(fa_decode_splits(8, 2, SLOTS_H100, 1, 64) == 2);
	FA_CHECK(fa_decode_splits(8, 4096, SLOTS_H100, 1, 100) == 64);
	FA_CHECK(fa_decode_splits(8 * 4096, 4096, SLOTS_H100, 4096, 64) == 65535 / 4096);
}

/* The clusters an H100 holds at once of a 193 KB, 256-thread CTA, one per
 * SM like the 202 KB decode CTA (cudaOccupancyMaxActiveClusters there,
 * 2026-11-27; ncu reported the same 15 clusters of 8 for the decode CTA
 * itself), by cluster size. */
static const int RESIDENT_H100[FA_DECODE_CLUSTER_MAX + 1] = {0, 132, 66, 39, 30, 22, 17, 15,
							     15, 9, 7,  7,  7,  7,  7,  7, 7};

FA_TEST(split, decode_cluster_size)
{
	static const int none[FA_DECODE_CLUSTER_MAX + 1] = {0};
	/* batch 1, 8 KV heads: 16 ranges would need 8 clusters of 16 (7
	 * resident); auto takes at most the portable 8 (9 of 9 would fit) */
	FA_CHECK(fa_decode_cluster_splits(16, 8, RESIDENT_H100, 0, 1) == 8);
	/* the count asked for is not shrunk: 16 ranges then merge without a cluster */
	FA_CHECK(fa_decode_cluster_splits(16, 8, RESIDENT_H100, 0, 0) == 0);
	FA_CHECK(fa_decode_cluster_splits(8, 8, RESIDENT_H100, 0, 0) == 8);
	/* 2 KV heads: 16 ranges would fit in clusters of 16, auto takes 8;
	 * a count of 12 asked for is not shrunk, and is over the 8 */
	FA_CHECK(fa_decode_cluster_splits(16, 2, RESIDENT_H100, 0, 1) == 8);
	FA_CHECK(fa_decode_cluster_splits(12, 2, RESIDENT_H100, 0, 0) == 0);
	/* batch 8: 64 units of 2 ranges (66 resident), 128 units do not fit */
	FA_CHECK(fa_decode_cluster_splits(2, 64, RESIDENT_H100, 0, 1) == 2);
	FA_CHECK(fa_decode_cluster_splits(2, 128, RESIDENT_H100, 0, 1) == 0);
	/* not below half: 10 ranges of 16 units take clusters of 6 (17
	 * resident); of 23 units, clusters of 5 (22) would not do */
	FA_CHECK(fa_decode_cluster_splits(10, 16, RESIDENT_H100, 0, 1) == 6);
	FA_CHECK(fa_decode_cluster_splits(10, 23, RESIDENT_H100, 0, 1) == 0);
	/* no split, no device clusters (sm_80) */
	FA_CHECK(fa_decode_cluster_splits(1, 8, RESIDENT_H100, 0, 1) == 0);
	FA_CHECK(fa_decode_cluster_splits(16, 8, none, 0, 1) == 0);
	FA_CHECK(fa_decode_cluster_splits(3, 1, none, 1, 1) == 0);
	/* forced: the count as it is, in any number of waves, up to 16 */
	FA_CHECK(fa_decode_cluster_splits(16, 8, RESIDENT_H100, 1, 1) == 16);
	FA_CHECK(fa_decode_cluster_splits(3, 1000, RESIDENT_H100, 1, 0) == 3);
	FA_CHECK(fa_decode_cluster_splits(17, 1, RESIDENT_H100, 1, 0) == 0);
	FA_CHECK(fa_decode_cluster_splits(64, 1, RESIDENT_H100, 1, 1) == 0);
}

FA_TEST(split, decode_fits_few_rows_per_kv_head)
{
	struct fa_problem p = decode(1, 1, 8192);
	const char *why = NULL;
	p.dtype = FA_DTYPE_BF16;
	fa_problem_set_strides(&p);
	FA_CHECK(fa_decode_fits(&p, &why) && why == NULL);
	p.q_len = 4; /* 4 heads x 4 positions = 16 rows */
	fa_problem_set_strides(&p);
	FA_CHECK(fa_decode_fits(&p, NULL));
	p.q_len = 5;
	fa_problem_set_strides(&p);
	FA_CHECK(!fa_decode_fits(&p, &why) && strstr(why, "16 query rows") != NULL);
	p.q_len = 1;
	p.head_dim = p.head_dim_v = 96;
	fa_problem_set_strides(&p);
	FA_CHECK(!fa_decode_fits(&p, &why) && strstr(why, "head sizes") != NULL);
	p.head_dim = 128;
	p.head_dim_v = 64;
	fa_problem_set_strides(&p);
	FA_CHECK(!fa_decode_fits(&p, &why) && strstr(why, "head sizes") != NULL);
	p.head_dim_v = 128;
	p.dtype = FA_DTYPE_FP32;
	FA_CHECK(!fa_decode_fits(&p, &why) && strstr(why, "fp16") != NULL);
	p.dtype = FA_DTYPE_FP16;
	fa_problem_set_strides(&p);
	FA_CHECK(fa_decode_fits(&p, NULL));
	p.k_stride_s += 4; /* a row not 16-byte aligned */
	FA_CHECK(!fa_decode_fits(&p, &why) && strstr(why, "aligned") != NULL);
}
