/* test_cta.c - kernels/common/fa_cta.h, the block-work rule that
 * cuda_flash_mma and the AMD matrix-core kernels share: for every block of
 * a grid, its key tiles (over all of its splits) must hold every key a row
 * of its tile may attend, the splits must partition them, blocks must cover
 * every (row, head) exactly once, and a chunk the kernels treat as "full"
 * (no masking) must be allowed for every row. Checked against
 * fa_mask_allows() by brute force over masks, GQA packing and block
 * orders; plus the online-softmax edge rules.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/common/fa_cta.h"
#include "test.h"

static struct fa_problem problem(int mask, int heads, int kv_heads, int lq, int lk, int window)
{
	struct fa_problem p;
	memset(&p, 0, sizeof p);
	p.batch = 2;
	p.heads = heads;
	p.kv_heads = kv_heads;
	p.q_len = lq;
	p.kv_len = lk;
	p.head_dim = p.head_dim_v = 64;
	p.mask = mask;
	p.window = window;
	p.prefix_len = 7;
	p.total_q = p.batch * lq;
	p.total_k = p.batch * lk;
	return p;
}

/* Checks every block of the grid of p with tiles bm x bn; returns the
 * number of failed checks (each reported). */
static int check_grid(const struct fa_problem *p, int bm, int bn, int packed, int reverse,
		      int tile_major, int splits)
{
	const int group = p->heads / p->kv_heads;
	const int rows = packed ? group * p->q_len : p->q_len;
	struct fa_grid gr = {group, packed, (rows + bm - 1) / bm, reverse, tile_major, splits};
	const int gy = packed ? p->kv_heads : p->heads;
	const int lk = p->kv_len;
	int bad = 0;
	/* covered[b][h][i]: how many blocks own (sequence b, head h, position i) */
	int *covered = calloc((size_t)p->batch * p->heads * p->q_len, sizeof *covered);
	/* seen[key tile]: which splits of a tile-block took it */
	int *seen = calloc((size_t)(lk / bn + 2), sizeof *seen);
	for (int bz0 = 0; bz0 < p->batch; bz0++)
		for (int by = 0; by < gy; by++)
			for (int bx = 0; bx < gr.m_tiles; bx++) {
				memset(seen, 0, (size_t)(lk / bn + 2) * sizeof *seen);
				struct fa_cta_work w0;
				memset(&w0, 0, sizeof w0);
				int have = 0;
				for (int sp = 0; sp < splits; sp++) {
					struct fa_cta_work w;
					const int bz = bz0 * splits + sp;
					if (!fa_cta_work_of(p, &gr, NULL, NULL, NULL, bm, bn, bx, by, bz, &w))
						continue;
					have = 1;
					w0 = w;
					FA_CHECK(w.b == bz0 && w.sp == sp);
					for (int n = w.n_begin; n < w.n_end; n++)
						seen[n]++;
					/* the "full" shortcut of both kernels, chunk by chunk */
					for (int n = w.n_begin; n < w.n_end; n++) {
						const int n0 = n * bn;
						if (!fa_cta_chunk_full(&w, n0, bn))
							continue;
						for (int R = w.row0; R <= w.row_last; R++) {
							int h, i;
							fa_cta_row_head_pos(packed, w.h0, w.lq, R, &h, &i);
							for (int j = n0; j < n0 + bn; j++)
								if (!fa_mask_allows(p->mask, i, j, w.lq, lk, w.pfx,
										    p->window)) {
									bad++;
									FA_CHECKF(0, "full chunk %d has a masked key %d for row %d",
										  n, j, i);
								}
						}
					}
				}
				if (!have)
					continue;
				/* splits partition the tiles; every allowed key is in one */
				for (int n = 0; n < lk / bn + 2; n++)
					if (seen[n] > 1) {
						bad++;
						FA_CHECKF(0, "key tile %d taken by %d splits", n, seen[n]);
					}
				for (int R = w0.row0; R <= w0.row_last; R++) {
					int h, i;
					fa_cta_row_head_pos(packed, w0.h0, w0.lq, R, &h, &i);
					FA_CHECK(h / group == w0.hk);
					covered[((size_t)bz0 * p->heads + h) * p->q_len + i]++;
					for (int j = 0; j < lk; j++)
						if (fa_mask_allows(p->mask, i, j, w0.lq, lk, w0.pfx, p->window) &&
						    !seen[j / bn]) {
							bad++;
							FA_CHECKF(0, "row %d head %d: allowed key %d in no tile", i, h, j);
							break;
						}
				}
			}
	for (size_t x = 0; x < (size_t)p->batch * p->heads * p->q_len; x++)
		if (covered[x] != 1) {
			bad++;
			FA_CHECKF(0, "(sequence, head, row) %zu owned by %d blocks", x, covered[x]);
			break;
		}
	free(covered);
	free(seen);
	return bad;
}

FA_TEST(cta, blocks_cover_every_row_and_allowed_key)
{
	const int masks[] = {FA_MASK_NONE, FA_MASK_CAUSAL, FA_MASK_PREFIX_LM,
			     FA_MASK_SLIDING_WINDOW};
	const int shapes[][2] = {{37, 37}, {5, 70}, {70, 5}, {1, 33}, {64, 64}};
	for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int packed = 0; packed < 2; packed++)
				for (int order = 0; order < 4; order++)
					for (int splits = 1; splits <= 3; splits += 2) {
						/* windows narrower and wider than a tile */
						const struct fa_problem p =
							problem(masks[m], 4, packed ? 2 : 4, shapes[s][0],
								shapes[s][1], splits == 1 ? 5 : 20);
						const int bad = check_grid(&p, 16, 8, packed, order & 1,
									   order >> 1, splits);
						FA_CHECKF(bad == 0,
							  "mask %d, %dx%d, packed %d, order %d, splits %d",
							  masks[m], shapes[s][0], shapes[s][1], packed,
							  order, splits);
						if (bad)
							return;
					}
}

FA_TEST(cta, a_block_past_its_sequence_has_no_work)
{
	const struct fa_problem p = problem(FA_MASK_CAUSAL, 4, 4, 20, 20, 0);
	const struct fa_grid gr = {1, 0, 3, 0, 0, 1};
	struct fa_cta_work w;
	FA_CHECK(fa_cta_work_of(&p, &gr, NULL, NULL, NULL, 8, 8, 2, 0, 0, &w) == 1);
	FA_CHECK(w.row0 == 16 && w.row_last == 19);
	/* 16-row tiles: tile 2 starts at row 32, past the 20 rows */
	FA_CHECK(fa_cta_work_of(&p, &gr, NULL, NULL, NULL, 16, 8, 2, 0, 0, &w) == 0);
}

FA_TEST(cta, online_softmax_edge_rules)
{
	/* a row with no key yet: -inf never moves the max, exponentials are
	 * taken against 0, the final 1/l is 0 and the split's lse -inf */
	FA_CHECK(!fa_online_moves(-INFINITY, -INFINITY));
	FA_CHECK(fa_online_moves(-INFINITY, -1000.f));
	FA_CHECK(fa_online_m_use(-INFINITY) == 0.f);
	FA_CHECK(fa_online_m_use(3.5f) == 3.5f);
	FA_CHECK(fa_online_inv_l(0.f) == 0.f);
	FA_CHECK(fa_online_inv_l(4.f) == 0.25f);
	FA_CHECK(isinf(fa_online_lse(-INFINITY, 0.f)) && fa_online_lse(-INFINITY, 0.f) < 0);
	FA_CHECK(fa_online_lse(1.f, 8.f) == 4.f);
	/* lazy rescaling: the max moves only past the slack */
	FA_CHECK(!fa_online_moves(10.f, 10.f + FA_ONLINE_SLACK));
	FA_CHECK(fa_online_moves(10.f, 10.f + FA_ONLINE_SLACK + 0.5f));
	FA_CHECK(fa_cta_key_allowed(3, 0, 4, 0) && !fa_cta_key_allowed(4, 0, 4, 0));
	FA_CHECK(fa_cta_key_allowed(1, 5, 9, 2)); /* a prefix key */
}

/* fa_cta_rows_for_keys (the tensor-core backward's query range of a key
 * block) by brute force: every row that may see a key of the block lies in
 * the range, and, without a prefix key in the block, the range's first and
 * last rows do see one (the range is tight, so no block of work is wasted
 * at either end). Every mask, q_len above and below kv_len, windows and
 * prefixes, blocks of 1 to 64 keys. */
FA_TEST(cta, rows_for_keys_hold_every_row_that_sees_the_block)
{
	static const int lens[][2] = {{1, 1}, {17, 113}, {113, 17}, {64, 64}, {200, 150}, {5, 300}};
	static const int windows[] = {1, 7, 64, 1000};
	static const int pfxs[] = {0, 1, 40, 500};
	static const int bns[] = {1, 16, 64};
	int bad = 0;
	for (int mask = 0; mask < FA_MASK_COUNT; mask++)
		for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
			for (size_t wi = 0; wi < sizeof windows / sizeof windows[0]; wi++)
				for (size_t pi = 0; pi < sizeof pfxs / sizeof pfxs[0]; pi++)
					for (size_t bi = 0; bi < sizeof bns / sizeof bns[0]; bi++) {
						const int lq = lens[l][0], lk = lens[l][1], bn = bns[bi];
						const int win = windows[wi];
						int pfx = mask == FA_MASK_PREFIX_LM ? pfxs[pi] : 0;
						pfx = pfx > lk ? lk : pfx;
						for (int j0 = 0; j0 < lk && bad < 5; j0 += bn) {
							const int nk = lk - j0 < bn ? lk - j0 : bn;
							int ib, ie, first = -1, last = -1;
							fa_cta_rows_for_keys(mask, lq, lk, win, pfx, j0, nk,
									     &ib, &ie);
							for (int i = 0; i < lq; i++)
								for (int j = j0; j < j0 + nk; j++)
									if (fa_mask_allows(mask, i, j, lq, lk,
											   pfx, win)) {
										if (first < 0)
											first = i;
										last = i;
									}
							if (first >= 0 && (first < ib || last >= ie)) {
								bad++;
								FA_CHECKF(0, "mask %d lq %d lk %d win %d pfx %d keys [%d, %d): rows [%d, %d] outside [%d, %d)",
									  mask, lq, lk, win, pfx, j0, j0 + nk, first, last, ib, ie);
							}
							if (j0 >= pfx && ie > ib &&
							    (first != ib || last != ie - 1)) {
								bad++;
								FA_CHECKF(0, "mask %d lq %d lk %d win %d pfx %d keys [%d, %d): range [%d, %d) not tight (rows %d..%d)",
									  mask, lq, lk, win, pfx, j0, j0 + nk, ib, ie, first, last);
							}
						}
					}
	FA_CHECK(bad == 0);
}
