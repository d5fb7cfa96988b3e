/* names.h - the words for dtypes, masks, layouts and input distributions, as
 * written in suites, keys, the database and reports. The enums are the
 * plugin SDK's (include/fabench/plugin.h), and so are the dtype and mask
 * words (fa_dtype_str, fa_mask_str): these functions read them, so that a
 * plugin and the harness spell every name the same way.
 */
#ifndef FA_NAMES_H
#define FA_NAMES_H

/* The name of a value; NULL when the value is unknown. */
const char *fa_dtype_name(int dtype);
const char *fa_mask_name(int mask);
const char *fa_layout_name(int layout);
const char *fa_dist_name(int dist);

/* The value of a name; -1 when s is NULL or no name. */
int fa_dtype_parse(const char *s);
int fa_mask_parse(const char *s);
int fa_layout_parse(const char *s);
int fa_dist_parse(const char *s);

/* The gradients of the backward pass, in the order stored (grad_stats) and
 * reported */
enum fa_grad { FA_GRAD_DQ = 0, FA_GRAD_DK = 1, FA_GRAD_DV = 2, FA_GRAD_COUNT };
const char *fa_grad_name(int grad);   /* "dq", "dk", "dv" */
const char *fa_pass_name(int pass);   /* enum fa_pass (plugin.h): "fwd", "bwd", "fwd_bwd" */
int fa_pass_parse(const char *s);

#endif /* FA_NAMES_H */
