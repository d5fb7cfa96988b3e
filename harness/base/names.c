/* names.c - the words of names.h: dtypes and masks from the plugin SDK's
 * fa_dtype_str / fa_mask_str, layouts, input distributions and passes
 * from the tables here. */
#include "names.h"

#include <string.h>

#include "../../kernels/common/fa_problem.h"

static const char *const layout_names[FA_LAYOUT_COUNT] = {"bshd", "bhsd"};
static const char *const dist_names[FA_DIST_COUNT] = {"normal", "uniform", "outliers"};
static const char *const pass_names[FA_PASS_COUNT] = {"fwd", "bwd", "fwd_bwd"};

const char *fa_dtype_name(int v) { return fa_dtype_str(v); }
const char *fa_mask_name(int v) { return fa_mask_str(v); }

const char *fa_layout_name(int v)
{
	return v >= 0 && v < FA_LAYOUT_COUNT ? layout_names[v] : NULL;
}

const char *fa_dist_name(int v)
{
	return v >= 0 && v < FA_DIST_COUNT ? dist_names[v] : NULL;
}

/* The value whose name (by name_of) is s, -1 when none. */
static int parse_of(const char *(*name_of)(int), int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (strcmp(name_of(i), s) == 0)
			return i;
	return -1;
}

int fa_dtype_parse(const char *s) { return parse_of(fa_dtype_name, FA_DTYPE_COUNT, s); }
int fa_mask_parse(const char *s) { return parse_of(fa_mask_name, FA_MASK_COUNT, s); }
int fa_layout_parse(const char *s) { return parse_of(fa_layout_name, FA_LAYOUT_COUNT, s); }
int fa_dist_parse(const char *s) { return parse_of(fa_dist_name, FA_DIST_COUNT, s); }
const char *fa_grad_name(int v)
{
	static const char *const grad_names[FA_GRAD_COUNT] = {"dq", "dk", "dv"};
	return v >= 0 && v < FA_GRAD_COUNT ? grad_names[v] : NULL;
}
const char *fa_pass_name(int v)
{
	return v >= 0 && v < FA_PASS_COUNT ? pass_names[v] : NULL;
}
int fa_pass_parse(const char *s) { return parse_of(fa_pass_name, FA_PASS_COUNT, s); }
