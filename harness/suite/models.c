/* models.c - the model presets of `model:` (models.h). Each row is taken from
 * the model's published configuration (Hugging Face config.json: the keys
 * num_attention_heads, num_key_value_heads, head_dim or hidden_size /
 * num_attention_heads, num_hidden_layers; for vision towers num_heads,
 * hidden_size / num_heads and depth). Attention only: the MoE experts of
 * qwen3-30b-a3b and gpt-oss change nothing here. gpt-oss alternates
 * sliding-window (128) and full attention layers; the preset is the full
 * attention shape, and its layers count them all. */
#include "models.h"

#include <string.h>
#include <strings.h>

#include "../base/text.h"
#include "expand.h"

const struct fa_model fa_models[] = {
	/* meta-llama/Meta-Llama-3-8B: 32 heads, 8 KV heads, hidden 4096, 32 layers */
	{"llama3-8b", 32, 8, 128, 32, "meta-llama/Meta-Llama-3-8B config.json"},
	/* meta-llama/Meta-Llama-3-70B: 64 heads, 8 KV heads, hidden 8192, 80 layers */
	{"llama3-70b", 64, 8, 128, 80, "meta-llama/Meta-Llama-3-70B config.json"},
	/* Qwen/Qwen3-4B: 32 heads, 8 KV heads, head_dim 128, 36 layers */
	{"qwen3-4b", 32, 8, 128, 36, "Qwen/Qwen3-4B config.json"},
	/* Qwen/Qwen3-14B: 40 heads, 8 KV heads, head_dim 128, 40 layers */
	{"qwen3-14b", 40, 8, 128, 40, "Qwen/Qwen3-14B config.json"},
	/* Qwen/Qwen3-30B-A3B: 32 heads, 4 KV heads, head_dim 128, 48 layers */
	{"qwen3-30b-a3b", 32, 4, 128, 48, "Qwen/Qwen3-30B-A3B config.json"},
	/* Qwen/Qwen2.5-32B (llama.cpp's "qwen2 32B"): 40 heads, 8 KV heads,
	 * hidden 5120, 64 layers */
	{"qwen2-32b", 40, 8, 128, 64, "Qwen/Qwen2.5-32B config.json"},
	/* openai/gpt-oss-20b: 64 heads, 8 KV heads, head_dim 64, 24 layers */
	{"gpt-oss-20b", 64, 8, 64, 24, "openai/gpt-oss-20b config.json"},
	/* openai/gpt-oss-120b: 64 heads, 8 KV heads, head_dim 64, 36 layers */
	{"gpt-oss-120b", 64, 8, 64, 36, "openai/gpt-oss-120b config.json"},
	/* Qwen/Qwen3-VL-8B-Instruct vision_config: num_heads 16, hidden_size 1152,
	 * depth 27 (the ViT; non-causal, no GQA) */
	{"qwen3-vl-vit", 16, 16, 72, 27, "Qwen/Qwen3-VL-8B-Instruct config.json vision_config"},
	/* google/gemma-3-4b-it vision_config (SigLIP so400m): num_attention_heads 16,
	 * hidden_size 1152, num_hidden_layers 27 */
	{"gemma3-vision", 16, 16, 72, 27, "google/gemma-3-4b-it config.json vision_config"},
	{NULL, 0, 0, 0, 0, NULL},
};

int fa_model_lookup(const char *name)
{
	for (int i = 0; fa_models[i].name; i++)
		if (strcmp(fa_models[i].name, name) == 0)
			return i;
	return -1;
}

const char *fa_model_suggest(const char *name)
{
	const char *best = NULL;
	int bd = 3;
	for (int i = 0; fa_models[i].name; i++) /* Llama3-8B: names are lowercase */
		if (strcasecmp(name, fa_models[i].name) == 0)
			return fa_models[i].name;
	for (int i = 0; fa_models[i].name; i++) {
		int d = fa_edit_distance(name, fa_models[i].name);
		if (d < bd) {
			bd = d;
			best = fa_models[i].name;
		}
	}
	return bd <= 2 ? best : NULL;
}
