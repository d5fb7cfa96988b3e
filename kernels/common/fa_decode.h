/* fa_decode.h - when cuda_flash_mma runs a problem on its decode path
 * (kernels/cuda/flash_decode.cu) and how many key ranges that path splits
 * the cache into: plain C, so that the CPU tests check the rule.
 *
 * The decode path is for few query rows per KV head (decode, speculative
 * decode): one CTA holds all group x q_len rows of one KV head in one m16
 * tile, so K and V are read once per KV head, and its warps each stream
 * their own 16-key tiles; the key range is split over enough CTAs to keep
 * every SM loading. Host code only (the kernels get the count).
 */
#ifndef FA_DECODE_H
#define FA_DECODE_H

#include <stdint.h>

#include "fa_problem.h"

#define FA_DECODE_ROWS 16      /* rows of the one m16 tile: group x q_len at most this */
#define FA_DECODE_TILE 16      /* keys per warp tile */
#define FA_DECODE_SPLIT_MAX 64 /* key ranges: the merge (combine_kernel) takes 64 */
/* Most key ranges of an automatic split: every range adds its partial rows
 * to the merge. Batch-1 decode on an H100 (8 KV heads, 8k and 32k keys)
 * measured best at 16 (1340 / 2119 GB/s) against 32 (1281 / 2050) and 8
 * (1255 / 2088). */
#define FA_DECODE_AUTO_MAX 16
/* Rows per KV head up to which the last CTA merges the key ranges itself
 * (no second kernel): its merge reads rows x splits partial rows alone,
 * which at 16 rows cost more than the launch it saves (batch 1, 16 splits:
 * 1003 against 1173 GB/s with combine_kernel; 4 rows: 1340 against 1272). */
#define FA_DECODE_FUSE_ROWS 4
/* Fewest key tiles per range of an automatic split: 8 tiles (128 keys) keep
 * each of 4 warps two tiles deep in its pipeline; shorter ranges spend more
 * on the pipeline's start and on the partials than they gain. */
#define FA_DECODE_MIN_TILES 8
/* Most key ranges merged inside one thread-block cluster (flash_decode.cu):
 * the largest cluster an H100 takes (16, beyond the portable 8). */
#define FA_DECODE_CLUSTER_MAX 16
/* Largest cluster the automatic merge takes: the portable 8. On an H100,
 * batch 1 at 16k keys, clusters of 9 (9 resident, for 8 KV heads) gave
 * 2003 GB/s against 2276 with 8. */
#define FA_DECODE_CLUSTER_AUTO_MAX 8
#define FA_DECODE_GRID_Z 65535 /* grid.z = batch x splits */

/* 1 when the decode path can run p: every sequence's group x q_len rows
 * fit one tile (q_len is the longest for varlen), equal head sizes of one
 * instance (64, 128 or 256), rows starting on 16-byte boundaries (strides
 * multiples of 8 elements; the bases are checked at launch), fp16 or bf16.
 * why, when not NULL, gets the first reason it cannot. */
static inline int fa_decode_fits(const struct fa_problem *p, const char **why)
{
	const char *w = NULL;
	const int group = p->kv_heads > 0 ? p->heads / p->kv_heads : 0;
	if (p->dtype != FA_DTYPE_FP16 && p->dtype != FA_DTYPE_BF16)
		w = "not fp16 or bf16";
	else if (group < 1 || (int64_t)group * p->q_len > FA_DECODE_ROWS)
		w = "more than 16 query rows per KV head";
	else if (p->head_dim != p->head_dim_v ||
		 (p->head_dim != 64 && p->head_dim != 128 && p->head_dim != 256))
		w = "head sizes not 64, 128 or 256";
	else if (p->q_stride_s % 8 || p->q_stride_h % 8 || p->q_stride_b % 8 || p->k_stride_s % 8 ||
		 p->k_stride_h % 8 || p->k_stride_b % 8 || p->v_stride_s % 8 || p->v_stride_h % 8 ||
		 p->v_stride_b % 8 || p->o_stride_s % 8 || p->o_stride_h % 8 || p->o_stride_b % 8)
		w = "rows not 16-byte aligned";
	else if (p->kv_heads > 65535 || p->batch < 1)
		w = "grid out of range";
	if (why)
		*why = w;
	return w == NULL;
}

/* Key ranges for `units` CTAs of the unsplit grid (batch x KV heads), with
 * `key_tiles` 16-key tiles in the longest range of keys, on a device with
 * `slots` CTAs resident at once (SMs x CTAs per SM; 0 = unknown), batch
 * `batch`. `requested` > 0 is taken as given; 0 is auto:
 *   - no split when the grid already fills the slots (or slots are unknown);
 *   - else as many ranges as fill the slots once (one wave: every CTA
 *     starts at once and keeps its loads in flight to the end), at most
 *     FA_DECODE_AUTO_MAX (the merge's share grows with the ranges): on an
 *     H100 with 2 CTAs per SM (264 slots, decode_ring 0) batch 8 takes 4
 *     (2508 GB/s at 8k keys against 2431 with 8 and 2408 with 16), with 1
 *     (132 slots, decode_ring 2, the default at head size 128) 2; batch 1
 *     takes 16 (at 8k keys 8, 16 and auto tie: 1714, 1703, 1706 GB/s;
 *     32 ranges 1338, 4 ranges 1525);
 *   - but no range under FA_DECODE_MIN_TILES tiles.
 * Both capped at the key tiles (no empty range), FA_DECODE_SPLIT_MAX and
 * the grid's z limit. Always >= 1. */
static inline int fa_decode_splits(int64_t units, int key_tiles, int64_t slots, int batch,
				   int requested)
{
	int cap = key_tiles > 0 ? key_tiles : 1, s = 1;
	if (cap > FA_DECODE_SPLIT_MAX)
		cap = FA_DECODE_SPLIT_MAX;
	if (batch > 0 && cap > FA_DECODE_GRID_Z / batch)
		cap = FA_DECODE_GRID_Z / batch > 0 ? FA_DECODE_GRID_Z / batch : 1;
	if (requested > 0)
		return requested < cap ? requested : cap;
	if (units <= 0 || slots <= 0 || units >= slots)
		return 1;
	{
		int64_t want = slots / units;
		if (want > FA_DECODE_AUTO_MAX)
			want = FA_DECODE_AUTO_MAX;
		const int by_len = key_tiles / FA_DECODE_MIN_TILES;
		s = want < cap ? (int)want : cap;
		if (s > by_len)
			s = by_len;
	}
	return s < 1 ? 1 : s;
}

/* The split count to merge inside thread-block clusters of that many CTAs
 * (one cluster per unit: sequence x KV head), or 0 for no cluster, given
 * resident[c] (c = 2..FA_DECODE_CLUSTER_MAX): how many clusters of c CTAs
 * the device holds at once (0 where it has none: before sm_90, or a size
 * that does not fit). `splits` is the split count of fa_decode_splits.
 *   - forced (tunable decode=4): `splits` itself wherever the device has
 *     such clusters at all;
 *   - else the largest c up to FA_DECODE_CLUSTER_AUTO_MAX, from `splits`
 *     down to, when may_shrink (the split count was the automatic one),
 *     half of it, whose clusters of every unit are resident at once (one
 *     wave). On an H100 with the 192 KB decode CTA the device holds 7
 *     clusters of 10-16 CTAs, 9 of 9 and 15 of 8: batch 1 of 8 KV heads
 *     takes 8 ranges in clusters, not 16 (16k keys: 2276-2305 GB/s against
 *     2174-2210 with 16 ranges merged by the last CTA; clusters of 16, in
 *     two waves: 1788).
 */
static inline int fa_decode_cluster_splits(int splits, int64_t units, const int *resident,
					   int forced, int may_shrink)
{
	if (splits < 2 || units < 1)
		return 0;
	if (forced)
		return splits <= FA_DECODE_CLUSTER_MAX && resident[splits] > 0 ? splits : 0;
	const int lo = may_shrink ? (splits + 1) / 2 : splits;
	for (int c = splits < FA_DECODE_CLUSTER_AUTO_MAX ? splits : FA_DECODE_CLUSTER_AUTO_MAX;
	     c >= lo && c >= 2; --c)
		if (resident[c] >= units)
			return c;
	return 0;
}

#endif /* FA_DECODE_H */
