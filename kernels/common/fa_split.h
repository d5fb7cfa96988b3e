/* fa_split.h - how many key ranges a split-KV (flash-decoding) launch uses,
 * and the stream-K schedule: the rules of cuda_flash_mma, in plain C so
 * that the CPU tests check them and a HIP build shares them. fa_split_count
 * and fa_sk_plan are host code; the fa_sk_* lookups are FA_HD (the kernel
 * and its fixup call them).
 *
 * Split-KV turns each (query tile, head) CTA into `splits` CTAs over
 * consecutive ranges of its key tiles; each writes its rows' fp32 partial
 * output and log-sum-exp, and a second kernel merges them. It pays when the
 * grid leaves the device idle (decode: one CTA per KV head and sequence),
 * and costs the partials' traffic and a launch otherwise.
 */
#ifndef FA_SPLIT_H
#define FA_SPLIT_H

#include <math.h>
#include <stdint.h>

#include "fa_problem.h"

#define FA_SPLIT_MAX 64        /* most key ranges per CTA of the unsplit grid */
#define FA_SPLIT_GRID_Z 65535  /* grid.z = batch x splits */

/* Splits for problem p, whose unsplit grid has `ctas` CTAs, on a device
 * with `slots` resident CTAs at once (SMs x CTAs per SM; 0 = unknown), with
 * `key_tiles` tiles of keys in the longest row range and `dv_tile` the
 * width of the partial outputs (the kernel's DV). `requested` > 0 is taken
 * as given, capped at key_tiles and FA_SPLIT_MAX; 0 is auto:
 *   - no split when the grid fills 80% of one wave of slots, or slots are
 *     unknown;
 *   - at most as many splits as keep the fp32 partials (written and read
 *     back once per split) under a quarter of the K/V bytes: decode has few
 *     query rows per key and splits freely; a short prefill under one wave
 *     (ViT at 1k tokens: 128 CTAs) does not, where two splits measured
 *     11-13% slower than none on an H100;
 *   - among those, no count that leaves a range empty, and the fewest
 *     splits whose wave efficiency (CTAs / whole waves of slots) is within
 *     95% of the best: FlashAttention-2's num_splits_heuristic settles for
 *     85%, which took 29 splits for batch-1 decode on an H200 where 32 were
 *     9% faster (the sweep in docs/BENCHMARKS.md).
 * Always 1 <= result and batch x result <= FA_SPLIT_GRID_Z. */
static inline int fa_split_count(const struct fa_problem *p, int64_t ctas, int64_t slots,
				 int key_tiles, int dv_tile, int requested)
{
	int cap = key_tiles < FA_SPLIT_MAX ? (key_tiles > 0 ? key_tiles : 1) : FA_SPLIT_MAX;
	int splits = 1;
	if (p->batch > 0 && cap > FA_SPLIT_GRID_Z / p->batch)
		cap = FA_SPLIT_GRID_Z / p->batch > 0 ? FA_SPLIT_GRID_Z / p->batch : 1;
	if (requested > 0) {
		splits = requested < cap ? requested : cap;
	} else if (ctas > 0 && slots > 0 && (double)ctas < 0.8 * (double)slots) {
		double kv_bytes = (double)p->total_k * p->kv_heads * (p->head_dim + p->head_dim_v) * 2;
		double part_bytes = (double)p->total_q * p->heads * (dv_tile + 1) * 4 * 2;
		double bound = part_bytes > 0 ? 0.25 * kv_bytes / part_bytes : 0;
		int top = bound < cap ? (int)bound : cap;
		double eff[FA_SPLIT_MAX + 1], best = 0;
		for (int s = 1; s <= top; s++) {
			int per = (key_tiles + s - 1) / s;
			double waves = (double)(ctas * s) / (double)slots;
			eff[s] = 0;
			if (s > 1 && (key_tiles + per - 1) / per < s)
				continue; /* some range would be empty */
			eff[s] = waves / ceil(waves);
			best = eff[s] > best ? eff[s] : best;
		}
		for (int s = 1; s <= top; s++)
			if (eff[s] >= 0.95 * best) {
				splits = s;
				break;
			}
	}
	return splits;
}

/* ---- stream-K (cuda_flash_mma tunable `sched` 2 and 3) ----
 * The iteration space is every (output tile, key block) pair, flattened
 * tile-major: iteration i is block i % kblocks of tile i / kblocks, with
 * kblocks the key blocks of the longest sequence (a tile whose mask or
 * sequence allows fewer leaves the rest of its blocks empty). A fixed
 * number of CTAs each take one contiguous range, CTA c the iterations
 * [floor(c N / C), floor((c+1) N / C)) with N = tiles x kblocks: a range
 * may end inside a tile and the next one start there, and may cross tiles
 * (heads, sequences). A tile done by one CTA is written directly; the
 * others write a partial (O / l, log2-sum-exp2 per row) into a slot of the
 * workspace and a fixup kernel merges a tile's partials. A CTA writes at
 * most two partials - its first tile (begun by an earlier CTA) and its last
 * (finished by a later one) - into slots 2c and 2c + 1.
 *   uniform: ctas = s x tiles with s <= kblocks; CTA c works on tile c / s
 *            only, and tile t's partials are CTAs t s .. t s + s - 1 (no
 *            search: the cheap fixup of llama.cpp's stream-K);
 *   general: any count; the fixup finds a tile's CTAs by division.
 * The seed's rounding rule turns general into uniform: round the CTA count
 * down to a multiple of the tile count when that loses at most `loss_pct`
 * percent of the CTAs (llama.cpp: 5), or when it is at least `ratio` times
 * the tile count (the 4x / 16x of seed 001's review). */
#define FA_SK_CTAS_MAX (1 << 20) /* grid.x of the stream-K kernel: far below 2^31 - 1 */

#define FA_SCHED_AUTO 0     /* today's rule: split-KV (fa_split_count) */
#define FA_SCHED_SPLIT 1    /* split-KV */
#define FA_SCHED_SK_UNIFORM 2
#define FA_SCHED_SK_GENERAL 3

struct fa_sk_plan {
	int64_t tiles;   /* output tiles (query tile x head x sequence) */
	int32_t kblocks; /* key blocks per tile */
	int32_t ctas;    /* CTAs of the stream-K grid, 1 <= ctas <= tiles x kblocks */
	int32_t uniform; /* 1: ctas is a multiple of tiles and no range crosses a tile */
};

/* The stream-K plan of `tiles` output tiles of `kblocks` key blocks on a
 * device with `slots` resident CTAs (0: unknown) in form `sched` (2
 * uniform, 3 general). ctas_req > 0 asks for that many CTAs (else slots;
 * unknown slots: one per tile); loss_pct > 0 and ratio > 0 are the rounding
 * rule (general only). The count is capped at tiles x kblocks (no empty
 * range) and FA_SK_CTAS_MAX; uniform takes s = max(1, ctas / tiles) CTAs
 * per tile, at most kblocks. Returns 0 (pl untouched) when there is nothing
 * to do (no tile or no block), else 1. */
static inline int fa_sk_plan(int64_t tiles, int kblocks, int64_t slots, int sched, int ctas_req,
			     int loss_pct, int ratio, struct fa_sk_plan *pl)
{
	if (tiles <= 0 || kblocks <= 0)
		return 0;
	const int64_t n = tiles * kblocks;
	int64_t c = ctas_req > 0 ? ctas_req : slots > 0 ? slots : tiles;
	c = c < n ? c : n;
	c = c < FA_SK_CTAS_MAX ? c : FA_SK_CTAS_MAX;
	int uniform = sched == FA_SCHED_SK_UNIFORM;
	if (!uniform && c > tiles) {
		const int64_t r = c - c % tiles; /* > 0 */
		if ((loss_pct > 0 && (c - r) * 100 <= (int64_t)loss_pct * c) ||
		    (ratio > 0 && c >= (int64_t)ratio * tiles))
			uniform = 1;
	}
	if (uniform) {
		int64_t s = c / tiles;
		s = s < 1 ? 1 : s > kblocks ? kblocks : s;
		c = s * tiles;
		if (c > FA_SK_CTAS_MAX) { /* fewer per tile, or general after all */
			s = FA_SK_CTAS_MAX / tiles;
			if (s >= 1)
				c = s * tiles;
			else
				uniform = 0, c = FA_SK_CTAS_MAX;
		}
	}
	pl->tiles = tiles;
	pl->kblocks = kblocks;
	pl->ctas = (int32_t)c;
	pl->uniform = uniform;
	return 1;
}

/* First iteration of CTA c (c = ctas: the end of the space). */
FA_HD int64_t fa_sk_begin(const struct fa_sk_plan *pl, int64_t c)
{
	return c * (pl->tiles * pl->kblocks) / pl->ctas;
}

/* The CTA whose range holds iteration i (0 <= i < tiles x kblocks): the
 * largest c with fa_sk_begin(c) <= i, i.e. c N < (i + 1) C. */
FA_HD int64_t fa_sk_cta_of(const struct fa_sk_plan *pl, int64_t i)
{
	return ((i + 1) * pl->ctas - 1) / (pl->tiles * pl->kblocks);
}

/* The CTAs [*c0, *c1] whose ranges cover tile t; one CTA (c0 == c1) writes
 * the tile itself, more write partials that the fixup merges. */
FA_HD void fa_sk_tile_ctas(const struct fa_sk_plan *pl, int64_t t, int64_t *c0, int64_t *c1)
{
	if (pl->uniform) {
		const int64_t s = pl->ctas / pl->tiles;
		*c0 = t * s;
		*c1 = *c0 + s - 1;
	} else {
		*c0 = fa_sk_cta_of(pl, t * pl->kblocks);
		*c1 = fa_sk_cta_of(pl, t * pl->kblocks + pl->kblocks - 1);
	}
}

/* The workspace slot of CTA c's partial of tile t: 2c for the first tile
 * of its range, 2c + 1 for any later one (only its last can be partial). */
FA_HD int64_t fa_sk_slot(const struct fa_sk_plan *pl, int64_t c, int64_t t)
{
	return 2 * c + (fa_sk_begin(pl, c) / pl->kblocks == t ? 0 : 1);
}

#endif /* FA_SPLIT_H */
