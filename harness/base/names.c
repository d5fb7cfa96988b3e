/* names.c - the words for dtypes, masks, layouts, input distributions and passes, as
 * written in suites, keys, the database and reports. */
#include <string.h>

#include "../store/store.h"
#include "../suite/suite.h"

static const char *const dtype_names[FA_DTYPE_COUNT] = {"fp32", "fp16", "bf16"};
static const char *const mask_names[FA_MASK_COUNT] = {"none", "causal", "prefix_lm",
						      "sliding_window"};
static const char *const layout_names[FA_LAYOUT_COUNT] = {"bshd", "bhsd"};
static const char *const dist_names[FA_DIST_COUNT] = {"normal", "uniform", "outliers"};
static const char *const pass_names[FA_PASS_COUNT] = {"fwd", "bwd", "fwd_bwd"};

static const char *name_of(const char *const *names, int n, int v)
{
	return v >= 0 && v < n ? names[v] : NULL;
}

static int parse_of(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

const char *fa_dtype_name(int v) { return name_of(dtype_names, FA_DTYPE_COUNT, v); }
const char *fa_mask_name(int v) { return name_of(mask_names, FA_MASK_COUNT, v); }
const char *fa_layout_name(int v) { return name_of(layout_names, FA_LAYOUT_COUNT, v); }
const char *fa_dist_name(int v) { return name_of(dist_names, FA_DIST_COUNT, v); }
int fa_dtype_parse(const char *s) { return parse_of(dtype_names, FA_DTYPE_COUNT, s); }
int fa_mask_parse(const char *s) { return parse_of(mask_names, FA_MASK_COUNT, s); }
int fa_layout_parse(const char *s) { return parse_of(layout_names, FA_LAYOUT_COUNT, s); }
int fa_dist_parse(const char *s) { return parse_of(dist_names, FA_DIST_COUNT, s); }
const char *fa_grad_name(int v)
{
	static const char *const grad_names[FA_GRAD_COUNT] = {"dq", "dk", "dv"};
	return name_of(grad_names, FA_GRAD_COUNT, v);
}
const char *fa_pass_name(int v) { return name_of(pass_names, FA_PASS_COUNT, v); }
int fa_pass_parse(const char *s) { return parse_of(pass_names, FA_PASS_COUNT, s); }
