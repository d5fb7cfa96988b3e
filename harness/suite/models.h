/* models.h - the shipped model presets of `model:` in suites: the attention
 * shape of a model (heads, kv_heads, head_dim) and its number of attention
 * layers, which turns one attention call's time into tokens/s. */
#ifndef FA_MODELS_H
#define FA_MODELS_H

#include <stdint.h>

struct fa_model {
	const char *name;    /* as written in suites: "llama3-8b" */
	int32_t heads, kv_heads, head_dim;
	int32_t layers;      /* attention layers a token passes through */
	const char *source;  /* where the numbers come from */
};

/* The presets, ending with a NULL name. */
extern const struct fa_model fa_models[];

/* The preset named name, or -1. */
int fa_model_lookup(const char *name);

/* The closest preset name within edit distance 2, or NULL. */
const char *fa_model_suggest(const char *name);

#endif /* FA_MODELS_H */
