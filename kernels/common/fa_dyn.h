/* fa_dyn.h - the dynamic persistent schedule of cuda_flash_wgmma (tunable
 * `dynamic`) in plain C: when the launch takes it, how many CTAs, the order
 * of the work items, and the rule that hands out and puts back the device
 * counter. The kernel calls these (FA_HD) and the CPU tests check them
 * (tests/test_dyn.c), so the order and the counter protocol are written
 * once.
 *
 * A work item is one query tile of one head of one sequence and, under
 * split-KV, one key range of it: items = query tiles x heads x batch x
 * splits. Under the dynamic schedule a persistent grid of C <= items CTAs
 * runs them: CTA c runs item c first, then its producer thread takes a
 * value v from a counter in device memory (atomicAdd) and runs item C + v,
 * until C + v is past the last item. So a CTA takes its next item when it
 * has issued the last loads of this one, and uneven items (causal: the
 * last query tile of a head attends every key, the first 128) even out
 * across the SMs as they do under a grid of one CTA per item, while the
 * K/V ring runs on from one item to the next (the next item's first loads
 * under the end of this one).
 *
 * The counter's protocol (fa_dyn_after): it is 0 when a launch starts.
 * The CTAs take values one at a time (atomics are ordered): the values
 * 0 .. items - C - 1 are items C .. items - 1, each taken once; every CTA
 * stops at the first value past them, so each of the C CTAs takes exactly
 * one such value and a launch takes exactly `items` values, 0 .. items - 1.
 * The value items - 1 is thus the launch's last take: the CTA that gets it
 * puts the counter back to 0 (no take can follow it in this launch, and
 * the next launch on the stream starts after this one has ended). This
 * holds for any C from 1 to items (C = items: only the stopping values
 * are taken; C > items, which the launcher never asks for: the CTAs past
 * the items run nothing and take nothing, the others one stopping value
 * each, items in all), with split-KV (a key range is an item like any
 * other) and with varlen, where an item past a shorter sequence's rows is
 * taken and skipped like any other. A launch that does not run to its end (a fault
 * or a kill) leaves the counter where it was: the context is lost with it.
 */
#ifndef FA_DYN_H
#define FA_DYN_H

#include <stdint.h>

#include "fa_problem.h"

#define FA_DYN_AUTO 0 /* tunable dynamic: the rule of fa_dyn_wanted (the default) */
#define FA_DYN_OFF 1  /* the grid of tunable persistent as it is (one CTA per item, or static) */
#define FA_DYN_ON 2   /* the dynamic schedule on a persistent grid, whatever the shape */

/* 1 when the items of a launch differ in length: a mask that gives the
 * query tiles of one head different key ranges (causal, prefix-LM, sliding
 * window), and more than one query tile. Never without a mask: there every
 * item has the same keys (varlen aside) and the dynamic schedule measured
 * slower (ViT head size 72, 1k tokens: -8% on an H100). */
FA_HD int fa_dyn_uneven(int mask, int n_mtiles)
{
	return mask != FA_MASK_NONE && n_mtiles > 1;
}

/* 1 when a launch takes the dynamic schedule: tunable `dynamic` (FA_DYN_*)
 * on, or auto with uneven items and no split-KV (splits <= 1: a split
 * launch is a short grid already, as main left it). */
FA_HD int fa_dyn_wanted(int dynamic, int mask, int n_mtiles, int splits)
{
	return dynamic == FA_DYN_ON ||
	       (dynamic == FA_DYN_AUTO && splits <= 1 && fa_dyn_uneven(mask, n_mtiles));
}

/* CTAs of the launch's grid; 0 = one CTA per work item (no persistent
 * grid). dyn: fa_dyn_wanted(); persistent: the tunable (0 none, 1 one CTA
 * per SM, N > 1 N CTAs); sms: the device's SMs (> 0); items: work items
 * (> 0). The dynamic schedule always takes a persistent grid, one CTA per
 * SM unless persistent asks for N; the result is capped at the items. */
FA_HD int64_t fa_dyn_ctas(int dyn, int persistent, int64_t sms, int64_t items)
{
	int64_t c = persistent > 1 ? persistent : persistent == 1 || dyn ? sms : 0;
	return c < items ? c : items;
}

/* (sequence, head) pairs per section of the dynamic order: as many as have
 * their K and V (kv_bytes each, a KV head's shared by its query heads) in
 * half the L2 (l2_bytes, 0 unknown: one section), at least 1, at most
 * n_bh. */
static inline int32_t fa_dyn_sect(int64_t l2_bytes, double kv_bytes, int32_t n_bh)
{
	if (l2_bytes <= 0 || kv_bytes <= 0)
		return n_bh;
	const double fit = (double)l2_bytes / 2 / kv_bytes;
	return fit < 1 ? 1 : fit < n_bh ? (int32_t)fit : n_bh;
}

/* Item `item` of the dynamic order: its query tile counted from the last
 * (mt_rev 0 is the last tile, the heaviest when causal), its pair bh =
 * sequence x heads + head, its key range sp. The order: sections of `sect`
 * pairs (the last may hold fewer), each section's last query tiles of
 * every pair first, then the tiles before them; the splits of one tile
 * next to each other. A section's K and V stay in the L2 while its CTAs
 * run, and the longest items start first. */
FA_HD void fa_dyn_item(int item, int n_mtiles, int splits, int sect, int n_bh, int *mt_rev,
		       int *bh, int *sp)
{
	const int q = item / splits; /* (query tile, pair) */
	const int per = sect * n_mtiles; /* of a whole section */
	const int sec = q / per, r = q - sec * per, first = sec * sect;
	const int hs = n_bh - first < sect ? n_bh - first : sect;
	*sp = item - q * splits;
	*bh = first + r % hs;
	*mt_rev = r / hs;
}

/* The item a CTA of a grid of `ctas` runs after taking value `got` from
 * the counter, or -1 when it stops (the value is past the items); *reset
 * 1 when it took the launch's last value and must put the counter back
 * to 0 (the protocol above). */
FA_HD int fa_dyn_after(unsigned got, int ctas, int n_items, int *reset)
{
	*reset = got == (unsigned)n_items - 1u;
	return ctas < n_items && got < (unsigned)(n_items - ctas) ? ctas + (int)got : -1;
}

#endif /* FA_DYN_H */
