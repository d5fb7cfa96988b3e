/* test_suite.c - loading and expanding suites: the order and count of the
 * product, defaults, zip, ranges and the k suffix, groups, includes (order,
 * inheritance, cycles), where and exclude, varlen fields, seeds and keys,
 * --where filtering, and that the shipped suites load. Ad-hoc suites are
 * written to the test's scratch folder. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/suite/suite.h"
#include "../harness/base/util.h"
#include "../kernels/common/fa_rng.h"
#include "test.h"

/* Writes text to NAME under the test's scratch folder (sub-folders are
 * created); returns the path in a static buffer of 8 (enough for one test). */
static const char *write_yaml(const char *name, const char *text)
{
	static char paths[8][PATH_MAX];
	static int next;
	char *p = paths[next++ % 8];
	FILE *f;
	snprintf(p, PATH_MAX, "%s/%s", fa_test_tmpdir(), name);
	fa_mkdir_parent(p);
	f = fopen(p, "w");
	if (!f) {
		fa_test_fail(__FILE__, __LINE__, "cannot write %s", p);
		return p;
	}
	fputs(text, f);
	fclose(f);
	return p;
}

/* Loads path; on failure reports the error and returns 0. */
static int load_at(const char *path, uint64_t seed, struct fa_suite *s, int line)
{
	struct fa_err err;
	fa_err_clear(&err);
	if (fa_suite_load(path, seed, s, &err) != FA_OK) {
		fa_test_fail(__FILE__, line, "loading %s failed: %s:%d:%d: %s", path, err.file,
			     err.line, err.col, err.msg);
		return 0;
	}
	return 1;
}

#define LOAD(path, seed, s) load_at(path, seed, s, __LINE__)

/* Loading must fail with an input error whose message is msg at line:col. */
static void expect_fail_at(const char *path, const char *file, int line, int col, const char *msg,
			   int src_line)
{
	struct fa_suite s;
	struct fa_err err;
	fa_err_clear(&err);
	enum fa_rc rc = fa_suite_load(path, 0, &s, &err);
	if (rc != FA_ERR_INPUT) {
		fa_test_fail(__FILE__, src_line, "%s: rc %s, expected input (%s)", path, fa_rc_name(rc),
			     err.msg);
	} else if (strcmp(err.msg, msg) != 0 || err.line != line || err.col != col ||
		   strcmp(err.file, file) != 0) {
		fa_test_fail(__FILE__, src_line, "%s: got %s:%d:%d: %s\n  expected %s:%d:%d: %s", path,
			     err.file, err.line, err.col, err.msg, file, line, col, msg);
	}
	FA_CHECK(s.n_cases == 0 && s.cases == NULL && s.files == NULL);
	fa_suite_free(&s);
}

#define EXPECT_FAIL(path, line, col, msg) expect_fail_at(path, path, line, col, msg, __LINE__)

FA_TEST(suite, product_order_and_count)
{
	struct fa_suite s;
	const char *path = write_yaml("order.yaml", "defaults: {head_dim: 64}\n"
						   "axes:\n"
						   "  batch: [1, 2]\n"
						   "  heads: [4, 8]\n"
						   "  q_len: [16, 32, 64]\n");
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_REQUIRE(s.n_cases == 12);
	/* the first key varies slowest */
	for (int i = 0; i < 12; i++) {
		const struct fa_problem *p = &s.cases[i].p;
		FA_CHECK(s.cases[i].index == i);
		FA_CHECK(p->batch == 1 + i / 6);
		FA_CHECK(p->heads == (i / 3 % 2 ? 8 : 4));
		FA_CHECK(p->q_len == 16 << (i % 3));
	}
	FA_CHECK(strcmp(s.name, "order") == 0);
	FA_CHECK(s.n_files == 1 && strcmp(s.files[0], path) == 0);
	/* the cases point at the axes mapping that made them */
	FA_CHECK(s.cases[5].loc.line == 3 && s.cases[5].loc.col == 3);
	FA_CHECK(strcmp(s.cases[5].loc.file, path) == 0);
	fa_suite_free(&s);
}

FA_TEST(suite, defaults_of_everything)
{
	struct fa_suite s;
	struct fa_measure_cfg m;
	struct fa_check_cfg ck;
	const char *path = write_yaml("one.yaml", "description: one case\n"
						 "defaults: {heads: 6, head_dim: 64, q_len: 100}\n");
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_REQUIRE(s.n_cases == 1);
	const struct fa_case *c = &s.cases[0];
	const struct fa_problem *p = &c->p;
	FA_CHECK(p->batch == 1 && p->heads == 6 && p->kv_heads == 6);
	FA_CHECK(p->q_len == 100 && p->kv_len == 100);
	FA_CHECK(p->head_dim == 64 && p->head_dim_v == 64);
	FA_CHECK(p->dtype == FA_DTYPE_FP16 && p->mask == FA_MASK_NONE);
	FA_CHECK(p->layout == FA_LAYOUT_BSHD && c->dist == FA_DIST_NORMAL);
	FA_CHECK(p->scale == 0.125f && c->scale_set == 0);
	FA_CHECK(p->varlen == 0 && p->total_q == 100 && p->total_k == 100);
	FA_CHECK(c->cu_seqlens_q == NULL && c->cu_seqlens_k == NULL && c->prefix_lens == NULL);
	/* dense bshd strides */
	FA_CHECK(p->q_stride_h == 64 && p->q_stride_s == 6 * 64 && p->q_stride_b == 100 * 6 * 64);
	FA_CHECK(p->o_stride_s == 6 * 64 && p->k_stride_s == 6 * 64);
	FA_CHECK(s.seed == 1);
	FA_CHECK(strcmp(s.description, "one case") == 0);
	FA_CHECK(strcmp(s.name, "one") == 0);
	FA_CHECK(strlen(s.hash) == 16 && strspn(s.hash, "0123456789abcdef") == 16);
	FA_CHECK(c->kernels->n == 0);
	fa_measure_defaults(&m);
	fa_check_defaults(&ck);
	FA_CHECK(memcmp(c->measure, &m, sizeof m) == 0);
	FA_CHECK(memcmp(c->check, &ck, sizeof ck) == 0);
	fa_suite_free(&s);
}

FA_TEST(suite, settings_and_kernels)
{
	struct fa_suite s;
	const char *path = write_yaml("settings.yaml",
				      "suite: named\n"
				      "kernels: [cpu_flash, 'cuda_*']\n"
				      "measure: {warmup: 1, min_samples: 5, max_noise: 0.01, cache: cold,\n"
				      "          timeout_s: 2.5, graph_launches: 8}\n"
				      "check:\n"
				      "  rule: fa\n"
				      "  reference: cpu\n"
				      "  rows: 64\n"
				      "  fa_k: 3\n"
				      "  tolerances:\n"
				      "    bf16: {max_abs: 0.1}\n"
				      "defaults: {heads: 2, head_dim: 16, q_len: 8, layout: bhsd}\n");
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_REQUIRE(s.n_cases == 1);
	const struct fa_case *c = &s.cases[0];
	FA_CHECK(strcmp(s.name, "named") == 0);
	FA_REQUIRE(c->kernels->n == 2);
	FA_CHECK(strcmp(c->kernels->patterns[0], "cpu_flash") == 0);
	FA_CHECK(strcmp(c->kernels->patterns[1], "cuda_*") == 0);
	FA_CHECK(c->kernels->locs[1].line == 2 && c->kernels->locs[1].col == 22);
	FA_CHECK(c->measure->warmup == 1 && c->measure->min_samples == 5);
	FA_CHECK(c->measure->max_samples == 1000 && c->measure->max_noise == 0.01);
	FA_CHECK(c->measure->cache == FA_CACHE_COLD && c->measure->timeout_s == 2.5);
	FA_CHECK(c->measure->graph_launches == 8 && c->measure->max_time_ms == 2000);
	FA_CHECK(c->check->rule == FA_RULE_FA && c->check->reference == FA_REF_CPU);
	FA_CHECK(c->check->rows == 64 && c->check->fa_k == 3 && c->check->fa_atol == -1);
	FA_CHECK(c->check->tol[FA_DTYPE_BF16].max_abs == 0.1);
	FA_CHECK(c->check->tol[FA_DTYPE_BF16].rel_l2 == 1.6e-2); /* key by key */
	{
		struct fa_check_cfg d; /* untouched fields keep the documented defaults */
		fa_check_defaults(&d);
		FA_CHECK(c->check->tol[FA_DTYPE_FP16].max_abs == d.tol[FA_DTYPE_FP16].max_abs);
	}
	/* bhsd: heads outermost within a sequence */
	FA_CHECK(c->p.layout == FA_LAYOUT_BHSD && c->p.q_stride_s == 16 && c->p.q_stride_h == 8 * 16);
	fa_suite_free(&s);
}

FA_TEST(suite, zip_moves_together)
{
	struct fa_suite s;
	const char *path = write_yaml("zip.yaml", "defaults: {head_dim: 128}\n"
						 "axes:\n"
						 "  seq_len: [128, 256]\n"
						 "zip:\n"
						 "  - heads: [32, 64, 16]\n"
						 "    kv_heads: [8, 8, 16]\n"
						 "  - dtype: [bf16, fp32]\n"
						 "    head_dim: [128, 64]\n");
	static const int heads[3] = {32, 64, 16}, kv[3] = {8, 8, 16};
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_REQUIRE(s.n_cases == 12);
	for (int i = 0; i < 12; i++) {
		const struct fa_problem *p = &s.cases[i].p;
		FA_CHECK(p->q_len == (i < 6 ? 128 : 256));
		FA_CHECK(p->heads == heads[i / 2 % 3] && p->kv_heads == kv[i / 2 % 3]);
		FA_CHECK(p->dtype == (i % 2 ? FA_DTYPE_FP32 : FA_DTYPE_BF16));
		FA_CHECK(p->head_dim == (i % 2 ? 64 : 128));
	}
	fa_suite_free(&s);
}

FA_TEST(suite, ranges_and_k_suffix)
{
	struct fa_suite s;
	const char *path = write_yaml("ranges.yaml", "defaults: {heads: 1, head_dim: 8}\n"
						    "axes:\n"
						    "  q_len: {start: 512, stop: 32k, mul: 2}\n"
						    "  kv_len: [3, {start: 1, stop: 16, step: 5}, 2K]\n");
	static const int kv[6] = {3, 1, 6, 11, 16, 2048};
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_REQUIRE(s.n_cases == 7 * 6);
	for (int i = 0; i < s.n_cases; i++) {
		FA_CHECK(s.cases[i].p.q_len == 512 << (i / 6));
		FA_CHECK(s.cases[i].p.kv_len == kv[i % 6]);
	}
	fa_suite_free(&s);
}

FA_TEST(suite, groups)
{
	struct fa_suite s;
	const char *path = write_yaml("groups.yaml",
				      "defaults: {heads: 8, head_dim: 64, seq_len: 64, dtype: fp32}\n"
				      "axes:\n"
				      "  layout: [bshd, bhsd]\n"
				      "where: layout == bshd || heads == 16\n"
				      "groups:\n"
				      "  - name: first\n"
				      "    axes: {mask: [none, causal]}\n"
				      "  - defaults: {dtype: bf16, heads: 16}\n"
				      "    axes: {batch: [1, 2, 3]}\n"
				      "    where: batch != 2\n");
	FA_REQUIRE(LOAD(path, 0, &s));
	/* group 1: layout bshd only (file where) x 2 masks; group 2: 2 layouts x batch 1, 3 */
	FA_REQUIRE(s.n_cases == 2 + 4);
	FA_CHECK(s.cases[0].p.mask == FA_MASK_NONE && s.cases[1].p.mask == FA_MASK_CAUSAL);
	FA_CHECK(s.cases[0].p.dtype == FA_DTYPE_FP32 && s.cases[0].p.heads == 8);
	FA_CHECK(s.cases[0].loc.line == 7); /* the group's axes */
	for (int i = 2; i < 6; i++) {
		const struct fa_problem *p = &s.cases[i].p;
		FA_CHECK(p->dtype == FA_DTYPE_BF16 && p->heads == 16 && p->batch != 2);
		FA_CHECK(p->layout == (i < 4 ? FA_LAYOUT_BSHD : FA_LAYOUT_BHSD)); /* file axes outer */
	}
	fa_suite_free(&s);

	path = write_yaml("groups_conflict.yaml", "defaults: {heads: 8, head_dim: 64, seq_len: 64}\n"
						     "zip: [{dtype: [bf16]}]\n"
						     "groups:\n"
						     "  - axes: {dtype: [fp16]}\n");
	EXPECT_FAIL(path, 4, 12, "'dtype' is already varied in the file's zip");
	path = write_yaml("groups_nomap.yaml", "groups: [3]\n");
	EXPECT_FAIL(path, 1, 10, "expected a mapping in 'groups', got '3'");
}

FA_TEST(suite, include_order_and_inheritance)
{
	struct fa_suite s;
	char top_built[PATH_MAX];
	write_yaml("inc/a.yaml", "suite: ignored\n"
				 "seed: 12345\n"
				 "measure: {warmup: 7}\n"
				 "check: {rows: 9}\n"
				 "defaults: {heads: 4}\n"
				 "axes: {q_len: [8, 16, 32]}\n");
	write_yaml("inc/b.yaml", "kernels: cpu_dense\n"
				 "defaults: {q_len: 5}\n");
	const char *top = write_yaml("top.yaml", "suite: top\n"
						 "kernels: ['cpu_*']\n"
						 "include: [inc/a.yaml, inc/b.yaml]\n"
						 "measure: {min_samples: 3}\n"
						 "defaults: {heads: 2, head_dim: 32, dtype: bf16}\n"
						 "axes: {q_len: [64]}\n"
						 "where: q_len != 16\n");
	snprintf(top_built, sizeof top_built, "%s", top);
	FA_REQUIRE(LOAD(top_built, 0, &s));
	FA_CHECK(strcmp(s.name, "top") == 0 && s.seed == 1);
	FA_REQUIRE(s.n_files == 3);
	char *dir = strndup(top_built, strlen(top_built) - strlen("/top.yaml"));
	char want[PATH_MAX];
	snprintf(want, sizeof want, "%s/inc/a.yaml", dir);
	FA_CHECK(strcmp(s.files[1], want) == 0);
	snprintf(want, sizeof want, "%s/inc/b.yaml", dir);
	FA_CHECK(strcmp(s.files[2], want) == 0);
	free(dir);
	/* a: q_len 8, 32 (16 dropped by the includer's where); b: one case; then top's own */
	FA_REQUIRE(s.n_cases == 4);
	FA_CHECK(s.cases[0].p.q_len == 8 && s.cases[1].p.q_len == 32);
	FA_CHECK(s.cases[2].p.q_len == 5 && s.cases[3].p.q_len == 64);
	for (int i = 0; i < 4; i++) {
		const struct fa_case *c = &s.cases[i];
		FA_CHECK(c->p.dtype == FA_DTYPE_BF16 && c->p.head_dim == 32); /* inherited */
		FA_CHECK(c->p.heads == (i < 2 ? 4 : 2));                      /* a's own wins */
		FA_CHECK(c->measure->min_samples == 3);
		FA_CHECK(c->measure->warmup == (i < 2 ? 7 : 2));
		FA_CHECK(c->check->rows == (i < 2 ? 9 : 256));
		FA_REQUIRE(c->kernels->n == 1);
		FA_CHECK(strcmp(c->kernels->patterns[0], i == 2 ? "cpu_dense" : "cpu_*") == 0);
	}
	/* the included cases' locations name the included file */
	FA_CHECK(strcmp(s.cases[0].loc.file, s.files[1]) == 0);
	fa_suite_free(&s);
}

FA_TEST(suite, include_only_file_adds_no_case)
{
	struct fa_suite s;
	write_yaml("base.yaml", "axes: {q_len: [8, 16]}\n");
	const char *top = write_yaml("only.yaml", "defaults: {heads: 3, head_dim: 8}\n"
						  "include: base.yaml\n");
	FA_REQUIRE(LOAD(top, 0, &s));
	FA_REQUIRE(s.n_cases == 2);
	FA_CHECK(s.cases[0].p.heads == 3 && s.cases[1].p.q_len == 16);
	fa_suite_free(&s);
}

FA_TEST(suite, include_cycle_and_missing)
{
	char built[PATH_MAX], msg[3 * PATH_MAX + 64];
	write_yaml("c/x.yaml", "include: y.yaml\n");
	write_yaml("c/y.yaml", "defaults: {heads: 1}\ninclude: [../c/x.yaml]\n");
	const char *top = write_yaml("cycle.yaml", "include: c/x.yaml\n");
	char *dir = strndup(top, strlen(top) - strlen("/cycle.yaml"));
	snprintf(built, sizeof built, "%s/c/y.yaml", dir);
	snprintf(msg, sizeof msg, "include cycle: %s/c/x.yaml -> %s/c/y.yaml -> %s/c/../c/x.yaml", dir,
		 dir, dir);
	expect_fail_at(top, built, 2, 11, msg, __LINE__);

	const char *self = write_yaml("self.yaml", "include: self.yaml\n");
	snprintf(msg, sizeof msg, "include cycle: %s -> %s/self.yaml", self, dir);
	EXPECT_FAIL(self, 1, 10, msg);

	const char *missing = write_yaml("missing.yaml", "include:\n  - nowhere.yaml\n");
	EXPECT_FAIL(missing, 2, 5, "cannot read included file 'nowhere.yaml': No such file or directory");
	free(dir);
}

FA_TEST(suite, where_and_exclude)
{
	struct fa_suite s;
	const char *path = write_yaml("filters.yaml",
				      "defaults: {head_dim: 64, q_len: 32}\n"
				      "axes:\n"
				      "  heads: [4, 8, 16]\n"
				      "  dtype: [fp32, fp16, bf16]\n"
				      "  mask: [none, causal]\n"
				      "where:\n"
				      "  - heads >= 8\n"
				      "  - \"mask == causal || dtype != fp32\"\n"
				      "exclude:\n"
				      "  - {kv_heads: 16, dtype: [fp16, bf16]}\n"
				      "  - {gqa: 1, heads: 8, mask: causal, dtype: fp32}\n");
	int n = 0;
	FA_REQUIRE(LOAD(path, 0, &s));
	for (int heads = 8; heads <= 16; heads *= 2)
		for (int dt = 0; dt < 3; dt++)
			for (int mk = 0; mk < 2; mk++) {
				if (!(mk == FA_MASK_CAUSAL || dt != FA_DTYPE_FP32))
					continue;
				if (heads == 16 && dt != FA_DTYPE_FP32)
					continue; /* kv_heads defaults to heads: the effective value matches */
				if (heads == 8 && mk == FA_MASK_CAUSAL && dt == FA_DTYPE_FP32)
					continue;
				FA_REQUIRE(n < s.n_cases);
				FA_CHECK(s.cases[n].p.heads == heads && s.cases[n].p.dtype == dt &&
					 s.cases[n].p.mask == mk);
				n++;
			}
	FA_CHECK(s.n_cases == n && n == 5);
	fa_suite_free(&s);
}

/* zip and exclude take a list of mappings (one mapping is a list of one):
 * anything else is an error at the value or at the item. */
FA_TEST(suite, zip_and_exclude_need_mappings)
{
	static const struct {
		const char *yaml;
		int line, col;
		const char *msg;
	} cases[] = {
		{"zip: 3\n", 2, 6, "expected a list of mappings for 'zip', got '3'"},
		{"zip: [3]\n", 2, 7, "expected a mapping in 'zip', got '3'"},
		{"zip: [{heads: [8]}, {}]\n", 2, 21, "empty mapping in 'zip'"},
		{"exclude: 3\n", 2, 10, "expected a list of mappings for 'exclude', got '3'"},
		{"exclude: [{heads: 8}, 3]\n", 2, 23, "expected a mapping in 'exclude', got '3'"},
		{"exclude: {}\n", 2, 10, "empty mapping in 'exclude'"},
	};
	struct fa_suite s;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[256];
		const char *path;
		snprintf(text, sizeof text, "defaults: {heads: 8, head_dim: 64, seq_len: 64}\n%s",
			 cases[i].yaml);
		path = write_yaml("mappings.yaml", text);
		expect_fail_at(path, path, cases[i].line, cases[i].col, cases[i].msg, __LINE__);
	}
	/* one mapping is a list of one */
	FA_REQUIRE(LOAD(write_yaml("one_zip.yaml", "defaults: {head_dim: 64, seq_len: 64}\n"
						   "zip: {heads: [8, 16], kv_heads: [8, 4]}\n"
						   "exclude: {heads: 16}\n"),
			0, &s));
	FA_CHECK(s.n_cases == 1 && s.cases[0].p.heads == 8 && s.cases[0].p.kv_heads == 8);
	fa_suite_free(&s);
}

FA_TEST(suite, invalid_combinations_wait_for_filters)
{
	struct fa_suite s;
	/* prefix 384 > 256 and window 512 > 256 are invalid, but filtered away */
	const char *path = write_yaml("pending.yaml",
				      "defaults: {heads: 12, head_dim: 64}\n"
				      "groups:\n"
				      "  - defaults: {mask: prefix_lm}\n"
				      "    axes: {seq_len: [256, 512], prefix_len: [128, 384]}\n"
				      "    where: prefix_len * 2 <= kv_len\n"
				      "  - defaults: {mask: sliding_window, seq_len: 256}\n"
				      "    axes: {window: [64, 512], kv_heads: [4, 5]}\n"
				      "    exclude: [{window: 512}, {kv_heads: 5}]\n");
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_CHECK(s.n_cases == 2 + 1);
	fa_suite_free(&s);
	path = write_yaml("pending_kept.yaml", "defaults: {heads: 12, head_dim: 64, mask: prefix_lm}\n"
					       "axes: {seq_len: [256, 512], prefix_len: [128, 384]}\n"
					       "where: prefix_len <= 400\n");
	EXPECT_FAIL(path, 2, 47, "prefix_len 384 exceeds kv_len 256");
}

/* A varlen case of batch sequences: the longest query and key lengths, and
 * the packed prefix sums cu_q and cu_k (batch + 1 entries each), whose last
 * entries are the totals. */
static void check_packed(const struct fa_case *c, int batch, int q_len, int kv_len,
			 const int32_t *cu_q, const int32_t *cu_k)
{
	const struct fa_problem *p = &c->p;
	FA_CHECK(p->varlen == 1 && p->batch == batch);
	FA_CHECK(p->q_len == q_len && p->kv_len == kv_len);
	FA_CHECK(p->total_q == cu_q[batch] && p->total_k == cu_k[batch]);
	FA_REQUIRE(c->cu_seqlens_q && c->cu_seqlens_k);
	FA_CHECK(memcmp(c->cu_seqlens_q, cu_q, sizeof *cu_q * (size_t)(batch + 1)) == 0);
	FA_CHECK(memcmp(c->cu_seqlens_k, cu_k, sizeof *cu_k * (size_t)(batch + 1)) == 0);
}

FA_TEST(suite, varlen_fields)
{
	struct fa_suite s;
	const char *path = write_yaml("varlen.yaml",
				      "defaults: {heads: 4, kv_heads: 2, head_dim: 16}\n"
				      "groups:\n"
				      "  - defaults: {seqlens: [1, 17, 64, 5], kv_seqlens: [9, 17, 80, 40]}\n"
				      "  - defaults: {mask: prefix_lm}\n"
				      "    zip:\n"
				      "      - seqlens: [[1, 17, 64, 5], [3, 3]]\n"
				      "        prefix_lens: [[0, 8, 32, 5], [3, 1]]\n");
	static const int32_t cu_q[5] = {0, 1, 18, 82, 87}, cu_k[5] = {0, 9, 26, 106, 146};
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_REQUIRE(s.n_cases == 3);
	const struct fa_case *c = &s.cases[0];
	const struct fa_problem *p = &c->p;
	check_packed(c, 4, 64, 80, cu_q, cu_k);
	FA_CHECK(p->q_stride_s == 4 * 16 && p->k_stride_s == 2 * 16 && p->q_stride_h == 16);
	FA_CHECK(c->prefix_lens == NULL);

	c = &s.cases[1];
	FA_REQUIRE(c->prefix_lens != NULL);
	FA_CHECK(c->prefix_lens[1] == 8 && c->prefix_lens[2] == 32 && c->p.prefix_len == 32);
	FA_CHECK(c->p.kv_len == 64 && c->p.total_k == 87 && c->cu_seqlens_k[4] == 87);
	FA_CHECK(s.cases[2].p.batch == 2 && s.cases[2].p.total_q == 6);
	fa_suite_free(&s);

	path = write_yaml("varlen_bad.yaml", "defaults: {heads: 4, head_dim: 16, mask: prefix_lm}\n"
					     "axes:\n"
					     "  seqlens: [[4, 8]]\n"
					     "  prefix_lens: [[4, 9]]\n");
	EXPECT_FAIL(path, 4, 21, "prefix_lens entry 9 exceeds the kv length 8 of sequence 1");
	path = write_yaml("varlen_needs.yaml", "defaults: {heads: 4, head_dim: 16, q_len: 8,\n"
					       "           prefix_lens: [1]}\n");
	EXPECT_FAIL(path, 2, 25, "prefix_lens needs seqlens");
}

/* A varlen batch may hold empty sequences: 0 in seqlens (no query rows)
 * or in kv_seqlens (queries with no key, whose rows are zeros). The packed
 * prefix sums repeat, the key names them, and an empty sequence makes a
 * case of its own (seqlens 0/17 is not 17/0 nor 17). Every sequence empty,
 * on either side, is refused, unless a filter drops the case first. */
FA_TEST(suite, varlen_empty_sequences)
{
	struct fa_suite s;
	const char *path = write_yaml(
		"empty_seqs.yaml",
		"defaults: {heads: 4, kv_heads: 2, head_dim: 16}\n"
		"groups:\n"
		"  - defaults: {seqlens: [0, 17, 0, 64], kv_seqlens: [5, 0, 9, 70], mask: causal}\n"
		"  - axes:\n"
		"      seqlens: [[0, 17], [17, 0], [17], [0, 0], [0, 17]]\n"
		"    where: tokens > 0\n"
		"  - defaults: {mask: prefix_lm, seqlens: [3, 8, 0], kv_seqlens: [4, 0, 6],\n"
		"               prefix_lens: [2, 0, 6]}\n"
		"  - defaults: {mask: sliding_window, window: 3, seqlens: [4, 4], kv_seqlens: [0, 4]}\n");
	static const int32_t cu_q[5] = {0, 0, 17, 17, 81}, cu_k[5] = {0, 5, 5, 14, 84};
	FA_REQUIRE(LOAD(path, 0, &s));
	/* [0, 0] has no query and the where drops it; the second [0, 17] is
	 * the first one's key again, kept once */
	FA_REQUIRE(s.n_cases == 6);
	const struct fa_case *c = &s.cases[0];
	check_packed(c, 4, 64, 70, cu_q, cu_k);
	FA_CHECK(strstr(c->key, ",seqlens=0/17/0/64,kv_seqlens=5/0/9/70") != NULL);
	FA_CHECK(strcmp(s.cases[1].key + strlen(s.cases[1].key) - strlen("seqlens=0/17,kv_seqlens=0/17"),
			"seqlens=0/17,kv_seqlens=0/17") == 0);
	FA_CHECK(strstr(s.cases[2].key, ",seqlens=17/0,kv_seqlens=17/0") != NULL);
	FA_CHECK(strstr(s.cases[3].key, ",seqlens=17,kv_seqlens=17") != NULL);
	FA_CHECK(s.cases[1].p.batch == 2 && s.cases[1].p.total_q == 17 && s.cases[1].p.q_len == 17);
	FA_CHECK(s.cases[3].p.batch == 1);
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 4; j++)
			FA_CHECK(strcmp(s.cases[i].key, s.cases[j].key) != 0);
	c = &s.cases[4];
	FA_REQUIRE(c->prefix_lens != NULL);
	FA_CHECK(c->prefix_lens[1] == 0 && c->p.prefix_len == 6 && c->p.total_q == 11 &&
		 c->p.total_k == 10);
	FA_CHECK(strstr(c->key, ",prefix_lens=2/0/6,seqlens=3/8/0,kv_seqlens=4/0/6") != NULL);
	c = &s.cases[5];
	FA_CHECK(c->p.window == 3 && c->p.kv_len == 4 && c->cu_seqlens_k[1] == 0);
	for (int i = 0; i < s.n_cases; i++) {
		char *k = fa_case_key(&s.cases[i]);
		FA_CHECK(k && strcmp(k, s.cases[i].key) == 0);
		free(k);
	}
	fa_suite_free(&s);

	/* exclude matches a list with its empty sequences, entry by entry */
	path = write_yaml("empty_seqs_exclude.yaml",
			  "defaults: {heads: 4, head_dim: 16}\n"
			  "axes: {seqlens: [[0, 5], [5, 0], [5]]}\n"
			  "exclude: [{seqlens: [5, 0]}]\n");
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_CHECK(s.n_cases == 2 && strstr(s.cases[0].key, "seqlens=0/5,") &&
		 strstr(s.cases[1].key, "seqlens=5,"));
	fa_suite_free(&s);

	/* what stays refused */
	path = write_yaml("empty_neg.yaml", "defaults: {heads: 4, head_dim: 16,\n"
					    "           seqlens: [3, 0], kv_seqlens: [3, -2]}\n");
	EXPECT_FAIL(path, 2, 45, "kv_seqlens entry -2 must not be negative");
	path = write_yaml("empty_all_q.yaml", "defaults: {heads: 4, head_dim: 16}\n"
					      "axes: {seqlens: [[0, 3], [0, 0]]}\n");
	EXPECT_FAIL(path, 2, 26, "seqlens add up to 0 tokens: every sequence is empty");
	path = write_yaml("empty_all_k.yaml", "defaults: {heads: 4, head_dim: 16, seqlens: [2, 1],\n"
					      "           kv_seqlens: [0, 0]}\n");
	EXPECT_FAIL(path, 2, 24, "kv_seqlens add up to 0 tokens: no sequence has a key");
	path = write_yaml("empty_prefix.yaml",
			  "defaults: {heads: 4, head_dim: 16, mask: prefix_lm, seqlens: [2, 2],\n"
			  "           kv_seqlens: [3, 0], prefix_lens: [3, 1]}\n");
	EXPECT_FAIL(path, 2, 49, "prefix_lens entry 1 exceeds the kv length 0 of sequence 1");
	path = write_yaml("empty_prefix_len.yaml",
			  "defaults: {heads: 4, head_dim: 16, mask: prefix_lm, seqlens: [2, 2],\n"
			  "           kv_seqlens: [3, 0], prefix_len: 1}\n");
	EXPECT_FAIL(path, 2, 44,
		    "prefix_len 1 exceeds the kv length 0 of sequence 1 (a batch with a sequence "
		    "of no keys gives prefix_lens, 0 for it)");
	path = write_yaml("empty_window.yaml",
			  "defaults: {heads: 4, head_dim: 16, mask: sliding_window, window: 5,\n"
			  "           seqlens: [2, 2], kv_seqlens: [0, 4]}\n");
	EXPECT_FAIL(path, 1, 66, "window 5 exceeds kv_len 4");
}

FA_TEST(suite, keys)
{
	struct fa_suite s;
	const char *path = write_yaml("keys.yaml",
				      "defaults: {heads: 16, head_dim: 72}\n"
				      "groups:\n"
				      "  - defaults: {seq_len: 1k, dtype: bf16}\n"
				      "  - defaults: {mask: prefix_lm, seqlens: [3, 5], prefix_lens: [1, 2],\n"
				      "               kv_seqlens: [4, 6], scale: 0.3, input: uniform}\n"
				      "  - defaults: {mask: sliding_window, window: 7, q_len: 9, kv_len: 20,\n"
				      "               head_dim_v: 32, gqa: 4, layout: bhsd, batch: 2}\n");
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_REQUIRE(s.n_cases == 3);
	FA_CHECK(strcmp(s.cases[0].key,
			"batch=1,heads=16,kv_heads=16,q_len=1024,kv_len=1024,head_dim=72,head_dim_v=72,"
			"dtype=bf16,mask=none,layout=bshd,input=normal") == 0);
	FA_CHECK(strcmp(s.cases[1].key,
			"batch=2,heads=16,kv_heads=16,q_len=5,kv_len=6,head_dim=72,head_dim_v=72,"
			"dtype=fp16,mask=prefix_lm,layout=bshd,input=uniform,prefix_lens=1/2,"
			"seqlens=3/5,kv_seqlens=4/6,scale=0.3") == 0);
	FA_CHECK(strcmp(s.cases[2].key,
			"batch=2,heads=16,kv_heads=4,q_len=9,kv_len=20,head_dim=72,head_dim_v=32,"
			"dtype=fp16,mask=sliding_window,layout=bhsd,input=normal,window=7") == 0);
	FA_CHECK(s.cases[1].scale_set == 1 && s.cases[1].p.scale == 0.3f);
	for (int i = 0; i < 3; i++) {
		char *k = fa_case_key(&s.cases[i]);
		FA_CHECK(k && strcmp(k, s.cases[i].key) == 0);
		free(k);
	}
	fa_suite_free(&s);
}

FA_TEST(suite, seeds_follow_keys)
{
	struct fa_suite a, b, c;
	const char *pa = write_yaml("seed_a.yaml", "seed: 7\n"
						   "defaults: {heads: 2, head_dim: 8}\n"
						   "axes: {q_len: [8, 16, 32]}\n");
	const char *pb = write_yaml("seed_b.yaml", "seed: 7\n"
						   "defaults: {heads: 2, head_dim: 8}\n"
						   "axes: {q_len: [4, 8, 16, 24, 32]}\n");
	FA_REQUIRE(LOAD(pa, 0, &a));
	FA_REQUIRE(LOAD(pb, 0, &b));
	FA_REQUIRE(LOAD(pa, 99, &c));
	FA_REQUIRE(a.n_cases == 3 && b.n_cases == 5 && c.n_cases == 3);
	FA_CHECK(a.seed == 7 && c.seed == 99);
	for (int i = 0; i < 3; i++) {
		const char *k = a.cases[i].key;
		uint64_t h = fa_fnv1a64(FA_FNV_OFFSET, k, strlen(k));
		FA_CHECK(a.cases[i].seed == fa_rng_mix64(7 ^ h));
		FA_CHECK(c.cases[i].seed == fa_rng_mix64(99 ^ h));
		FA_CHECK(c.cases[i].seed != a.cases[i].seed);
	}
	/* added cases leave the others' data alone */
	FA_CHECK(strcmp(a.cases[0].key, b.cases[1].key) == 0 && a.cases[0].seed == b.cases[1].seed);
	FA_CHECK(strcmp(a.cases[2].key, b.cases[4].key) == 0 && a.cases[2].seed == b.cases[4].seed);
	FA_CHECK(a.cases[0].seed != a.cases[1].seed);
	FA_CHECK(strcmp(a.hash, b.hash) != 0);
	fa_suite_free(&a);
	fa_suite_free(&b);
	fa_suite_free(&c);
}

FA_TEST(suite, hash_covers_every_file)
{
	struct fa_suite s1, s2, s3;
	write_yaml("h/inc.yaml", "axes: {q_len: [8]}\n");
	const char *top = write_yaml("h/top.yaml", "defaults: {heads: 1, head_dim: 8}\ninclude: inc.yaml\n");
	FA_REQUIRE(LOAD(top, 0, &s1));
	FA_REQUIRE(LOAD(top, 0, &s2));
	write_yaml("h/inc.yaml", "axes: {q_len: [8]}  # a comment changes the hash\n");
	FA_REQUIRE(LOAD(top, 0, &s3));
	FA_CHECK(strcmp(s1.hash, s2.hash) == 0);
	FA_CHECK(strcmp(s1.hash, s3.hash) != 0);
	FA_CHECK(strcmp(s1.cases[0].key, s3.cases[0].key) == 0 && s1.cases[0].seed == s3.cases[0].seed);
	fa_suite_free(&s1);
	fa_suite_free(&s2);
	fa_suite_free(&s3);
}

FA_TEST(suite, repeated_cases_are_dropped)
{
	struct fa_suite s;
	write_yaml("d/inc.yaml", "axes: {q_len: [8, 16]}\n");
	const char *top = write_yaml("d/top.yaml", "defaults: {heads: 1, head_dim: 8}\n"
						   "include: [inc.yaml, inc.yaml]\n"
						   "axes: {q_len: [32, 8, 32, 64]}\n");
	FA_REQUIRE(LOAD(top, 0, &s));
	FA_REQUIRE(s.n_cases == 4);
	FA_CHECK(s.cases[0].p.q_len == 8 && s.cases[1].p.q_len == 16);
	FA_CHECK(s.cases[2].p.q_len == 32 && s.cases[3].p.q_len == 64 && s.cases[3].index == 3);
	fa_suite_free(&s);
}

FA_TEST(suite, gqa_and_conflicts)
{
	struct fa_suite s;
	const char *path = write_yaml("gqa.yaml", "defaults: {heads: 32, head_dim: 128, q_len: 1}\n"
						 "axes: {gqa: [1, 4, 32]}\n");
	FA_REQUIRE(LOAD(path, 0, &s));
	FA_REQUIRE(s.n_cases == 3);
	FA_CHECK(s.cases[0].p.kv_heads == 32 && s.cases[1].p.kv_heads == 8 &&
		 s.cases[2].p.kv_heads == 1);
	fa_suite_free(&s);
	path = write_yaml("seq_conflict.yaml", "defaults: {heads: 2, head_dim: 8, seq_len: 8,\n"
					       "  kv_len: 4}\n");
	EXPECT_FAIL(path, 2, 11, "kv_len conflicts with seq_len (seq_len sets both q_len and kv_len)");
	path = write_yaml("no_len.yaml", "defaults: {heads: 2, head_dim: 8}\n");
	EXPECT_FAIL(path, 1, 1, "missing required parameter 'q_len' (or seq_len, or seqlens)");
	path = write_yaml("win_mask.yaml", "defaults: {heads: 2, head_dim: 8, q_len: 9, window: 3}\n");
	EXPECT_FAIL(path, 1, 53, "window needs mask sliding_window (mask is none)");
}

FA_TEST(suite, value_errors)
{
	const char *path = write_yaml("scale.yaml", "defaults: {heads: 2, head_dim: 8, q_len: 8,\n"
						   "  scale: -0.5}\n");
	EXPECT_FAIL(path, 2, 10, "scale -0.5 must be positive");
	path = write_yaml("empty_val.yaml", "defaults:\n  heads:\n  head_dim: 8\n");
	EXPECT_FAIL(path, 2, 9, "expected an integer for 'heads', got nothing");
	path = write_yaml("range_dtype.yaml", "axes: {dtype: {start: 1, stop: 2, step: 1}}\n");
	EXPECT_FAIL(path, 1, 15, "'dtype' cannot take a range (ranges are for integer parameters)");
	path = write_yaml("exclude_key.yaml", "defaults: {heads: 2, head_dim: 8, q_len: 8}\n"
					      "exclude: [{hed_dim: 8}]\n");
	EXPECT_FAIL(path, 2, 12, "unknown key 'hed_dim' (did you mean 'head_dim'?)");
	path = write_yaml("measure_min.yaml", "defaults: {heads: 2, head_dim: 8, q_len: 8}\n"
					      "measure: {min_samples: 20, max_samples: 10}\n");
	EXPECT_FAIL(path, 2, 10, "min_samples 20 is more than max_samples 10");
	path = write_yaml("big.yaml", "defaults: {heads: 2, head_dim: 8}\n"
				      "axes: {q_len: 3000000000}\n");
	EXPECT_FAIL(path, 2, 15, "q_len 3000000000 is too large (at most 2147483647)");
	path = write_yaml("tokens.yaml", "defaults: {heads: 2, head_dim: 8, batch: 64}\n"
					 "axes: {q_len: 64M}\n");
	EXPECT_FAIL(path, 2, 15, "expected an integer for 'q_len', got '64M'");
	path = write_yaml("tokens2.yaml", "defaults: {heads: 2, head_dim: 8, batch: 64k}\n"
					  "axes: {q_len: [64, 64k]}\n");
	EXPECT_FAIL(path, 1, 42, "batch 65536 x q_len 65536 is 4294967296 tokens, more than 2147483647");
}

FA_TEST(suite, top_file_missing)
{
	struct fa_suite s;
	struct fa_err err;
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/does-not-exist.yaml", fa_test_tmpdir());
	fa_err_clear(&err);
	FA_CHECK(fa_suite_load(path, 0, &s, &err) == FA_ERR_NOT_FOUND);
	FA_CHECK(strstr(err.msg, "cannot read suite file") != NULL);
	FA_CHECK(err.file[0] == '\0');
	fa_suite_free(&s);
}

FA_TEST(suite, filter)
{
	char cwd[PATH_MAX];
	struct fa_suite s;
	struct fa_err err;
	int want = 0;
	char **keys;
	FA_REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
	FA_REQUIRE(chdir(fa_test_root()) == 0);
	FA_REQUIRE(LOAD("suites/smoke.yaml", 0, &s));
	keys = calloc((size_t)s.n_cases, sizeof *keys);
	FA_REQUIRE(keys != NULL);
	for (int i = 0; i < s.n_cases; i++)
		if (s.cases[i].p.mask == FA_MASK_CAUSAL && s.cases[i].p.q_len >= 64)
			keys[want++] = strdup(s.cases[i].key);
	FA_CHECK(want > 0 && want < s.n_cases);
	fa_err_clear(&err);
	FA_CHECK(fa_suite_filter(&s, "mask == causal and q_len >= 64", &err) == FA_OK);
	FA_CHECK(s.n_cases == want);
	for (int i = 0; i < s.n_cases && i < want; i++) {
		FA_CHECK(s.cases[i].index == i);
		FA_CHECK(strcmp(s.cases[i].key, keys[i]) == 0);
	}
	for (int i = 0; i < want; i++)
		free(keys[i]);
	free(keys);
	/* an error leaves the cases as they were */
	FA_CHECK(fa_suite_filter(&s, "mask == causal and", &err) == FA_ERR_INPUT);
	FA_CHECK(s.n_cases == want);
	FA_CHECK(strcmp(err.file, "--where") == 0 && err.line == 1 && err.col == 19);
	FA_CHECK(strcmp(err.text, "mask == causal and") == 0);
	fa_suite_free(&s);
	FA_CHECK(chdir(cwd) == 0);
}

/* The shipped suites load, and keep the promises their comments make. */
FA_TEST(suite, shipped_suites)
{
	static const struct {
		const char *path;
		int min, max;
	} suites[] = {
		{"suites/smoke.yaml", 40, 80},	   {"suites/vit.yaml", 20, 200},
		{"suites/llm-prefill.yaml", 20, 200}, {"suites/decode.yaml", 20, 200},
		{"suites/prefixlm.yaml", 10, 200}, {"suites/training.yaml", 20, 200},
		{"suites/splitkv.yaml", 8, 40},	   {"suites/vit-tiles.yaml", 28, 28},
	};
	char cwd[PATH_MAX];
	struct fa_suite s;
	FA_REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
	FA_REQUIRE(chdir(fa_test_root()) == 0);
	for (size_t k = 0; k < sizeof suites / sizeof suites[0]; k++) {
		if (!LOAD(suites[k].path, 0, &s))
			continue;
		printf("  %s: %d cases\n", suites[k].path, s.n_cases);
		FA_CHECKF(s.n_cases >= suites[k].min && s.n_cases <= suites[k].max, "%s: %d cases",
			  suites[k].path, s.n_cases);
		fa_suite_free(&s);
	}

	/* smoke: tiny, and every feature somewhere */
	if (LOAD("suites/smoke.yaml", 0, &s)) {
		int masks = 0, dtypes = 0, layouts = 0, dims = 0, gqa1 = 0, gqa4 = 0, varlen = 0;
		int outliers = 0, prefix_lens = 0;
		for (int i = 0; i < s.n_cases; i++) {
			const struct fa_case *c = &s.cases[i];
			const struct fa_problem *p = &c->p;
			FA_CHECKF(p->q_len <= 128 && p->kv_len <= 128, "%s", c->key);
			FA_CHECKF(p->varlen || p->batch <= 2, "%s", c->key);
			masks |= 1 << p->mask;
			dtypes |= 1 << p->dtype;
			layouts |= 1 << p->layout;
			dims |= (p->head_dim == 64) | (p->head_dim == 72) << 1 | (p->head_dim == 80) << 2 |
				(p->head_dim == 128) << 3;
			gqa1 |= p->heads == p->kv_heads;
			gqa4 |= p->heads == 4 * p->kv_heads;
			varlen |= p->varlen;
			outliers |= c->dist == FA_DIST_OUTLIERS;
			prefix_lens |= c->prefix_lens != NULL;
			FA_CHECK(c->measure->max_time_ms <= 100 && c->measure->timeout_s <= 60);
		}
		FA_CHECK(masks == 15 && dtypes == 7 && layouts == 3 && dims == 15);
		FA_CHECK(gqa1 && gqa4 && varlen && outliers && prefix_lens);
		fa_suite_free(&s);
	}
	/* decode: the KV cache bound holds */
	if (LOAD("suites/decode.yaml", 0, &s)) {
		for (int i = 0; i < s.n_cases; i++) {
			const struct fa_problem *p = &s.cases[i].p;
			FA_CHECK((int64_t)p->batch * p->kv_len <= 4194304);
			FA_CHECK(p->q_len <= 16 && p->mask == FA_MASK_CAUSAL && p->kv_heads == 8);
		}
		fa_suite_free(&s);
	}
	/* training: backward cases only, bf16; ViT 72/80 unmasked, 128 causal */
	if (LOAD("suites/training.yaml", 0, &s)) {
		int vit = 0, llm = 0, gqa = 0, batch2 = 0, fwd_bwd = 0;
		for (int i = 0; i < s.n_cases; i++) {
			const struct fa_case *c = &s.cases[i];
			FA_CHECKF(c->pass != FA_PASS_FWD && c->p.dtype == FA_DTYPE_BF16, "%s", c->key);
			vit += (c->p.head_dim == 72 || c->p.head_dim == 80) && c->p.mask == FA_MASK_NONE;
			llm += c->p.head_dim == 128 && c->p.mask == FA_MASK_CAUSAL;
			gqa |= c->p.heads == 4 * c->p.kv_heads;
			batch2 |= c->p.batch == 2;
			fwd_bwd |= c->pass == FA_PASS_FWD_BWD;
		}
		FA_CHECK(vit + llm == s.n_cases && vit > 0 && llm > 0 && gqa && batch2 && fwd_bwd);
		fa_suite_free(&s);
	}
	/* splitkv: short grids (at most 256 query rows of 8 heads a sequence)
	 * over at least 5000 keys, both masks, GQA 1 and 4, varlen */
	if (LOAD("suites/splitkv.yaml", 0, &s)) {
		int masks = 0, gqa1 = 0, gqa4 = 0, varlen = 0;
		for (int i = 0; i < s.n_cases; i++) {
			const struct fa_problem *p = &s.cases[i].p;
			FA_CHECKF(p->q_len <= 256 && p->heads == 8 && p->kv_len >= 5000 &&
					  p->total_q <= 320,
				  "%s", s.cases[i].key);
			masks |= 1 << p->mask;
			gqa1 |= p->kv_heads == 8;
			gqa4 |= p->kv_heads == 2;
			varlen |= p->varlen;
		}
		FA_CHECK(masks == (1 << FA_MASK_NONE | 1 << FA_MASK_CAUSAL) && gqa1 && gqa4 && varlen);
		fa_suite_free(&s);
	}
	/* prefixlm: every single-sequence prefix is 1/4, 1/2 or 3/4 */
	if (LOAD("suites/prefixlm.yaml", 0, &s)) {
		for (int i = 0; i < s.n_cases; i++) {
			const struct fa_case *c = &s.cases[i];
			FA_CHECK(c->p.mask == FA_MASK_PREFIX_LM);
			if (!c->p.varlen)
				FA_CHECKF(c->p.prefix_len * 4 == c->p.kv_len ||
						  c->p.prefix_len * 2 == c->p.kv_len ||
						  c->p.prefix_len * 4 == c->p.kv_len * 3,
					  "%s", c->key);
			else
				FA_CHECK(c->prefix_lens != NULL);
		}
		fa_suite_free(&s);
	}
	FA_CHECK(chdir(cwd) == 0);
}

/* conformance.yaml keeps the head sizes its comment promises: every exact
 * instance of the tensor-core kernel, the sizes it pads (40, 59, 111, 112,
 * 160, 224: what llama.cpp's and flash-attention's tests use), in both
 * 16-bit types and with a causal mask, split-KV decode at 59 and 111, and
 * MLA decode (576/512); and stays small enough to run in full on a GPU. */
FA_TEST(suite, conformance_head_sizes)
{
	static const int32_t sizes[][2] = {{64, 64},   {72, 72},   {80, 80},   {96, 96},
					   {128, 128}, {256, 256}, {192, 128}, {40, 40},
					   {59, 59},   {111, 111}, {112, 112}, {160, 160},
					   {224, 224}, {576, 512}};
	char cwd[PATH_MAX];
	struct fa_suite s;
	FA_REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
	FA_REQUIRE(chdir(fa_test_root()) == 0);
	if (LOAD("suites/conformance.yaml", 0, &s)) {
		FA_CHECKF(s.n_cases >= 200 && s.n_cases <= 360, "%d cases", s.n_cases);
		for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
			int fp16 = 0, bf16 = 0, causal = 0, decode = 0;
			for (int i = 0; i < s.n_cases; i++) {
				const struct fa_problem *p = &s.cases[i].p;
				if (p->head_dim != sizes[k][0] || p->head_dim_v != sizes[k][1])
					continue;
				fp16 |= p->dtype == FA_DTYPE_FP16;
				bf16 |= p->dtype == FA_DTYPE_BF16;
				causal |= p->mask == FA_MASK_CAUSAL;
				decode |= p->q_len == 1;
			}
			if (sizes[k][0] == 576) /* MLA: decode, bf16 */
				FA_CHECKF(bf16 && causal && decode, "576/512: bf16 %d decode %d", bf16,
					  decode);
			else
				FA_CHECKF(fp16 && bf16 && causal, "%d/%d: fp16 %d bf16 %d causal %d",
					  sizes[k][0], sizes[k][1], fp16, bf16, causal);
			if (sizes[k][0] == 59 || sizes[k][0] == 111)
				FA_CHECKF(decode, "%d: no decode case (split-KV merge)", sizes[k][0]);
		}
		fa_suite_free(&s);
	}
	FA_CHECK(chdir(cwd) == 0);
}
