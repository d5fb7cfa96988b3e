/* fa_split.h - how many key ranges a split-KV (flash-decoding) launch uses:
 * the rule of cuda_flash_mma, in plain C so that the CPU tests check it and
 * a HIP build shares it. Host code only.
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

#endif /* FA_SPLIT_H */
