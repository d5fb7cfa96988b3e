/* test_split.c - the split-KV rule of fa_split.h on the shapes it was tuned
 * on (an H100's 132 SMs x 2 resident CTAs of cuda_flash_mma at head_dim
 * 128: 32-key tiles), its caps, and the cases where it must not split. */
#include <string.h>

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
