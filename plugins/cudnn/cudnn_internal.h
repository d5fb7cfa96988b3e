/* cudnn_internal.h - what the cuDNN plugin's files share: the dlopen'ed
 * entry points (cudnn_api.c), the SDPA graph and its execution plan
 * (sdpa_graph.c), the per-shape plan cache (plan_cache.c). Internal to
 * plugins/cudnn: the harness sees only fa_cudnn.h.
 *
 * cuDNN's headers give the types and enum values; no cuDNN symbol is linked.
 */
#ifndef FA_CUDNN_INTERNAL_H
#define FA_CUDNN_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cudnn_graph.h>

#include "fa_cudnn.h"

/* ---- cudnn_api.c: the library ---- */

struct fa_cudnn_api {
	void *dl;
	size_t version;         /* cudnnGetVersion(): 91900 for 9.19.0 */
	int sm;                 /* compute capability of the device, 90 for sm_90 */
	int br;                 /* the graph form of masks aligned bottom-right
				 * (FA_CUDNN_BR_*): FA_CUDNN_BR_DEFAULT, or
				 * $FABENCH_CUDNN_BR (a debugging switch) */
	int br_set;             /* 1: $FABENCH_CUDNN_BR chose it */
	cudnnHandle_t handle;
	pthread_mutex_t lock;   /* the plan cache and the handle's stream */
	__typeof__(cudnnGetVersion) *get_version;
	__typeof__(cudnnCreate) *create;
	__typeof__(cudnnDestroy) *destroy;
	__typeof__(cudnnSetStream) *set_stream;
	__typeof__(cudnnGetErrorString) *get_error_string;
	__typeof__(cudnnGetLastErrorString) *get_last_error_string;
	__typeof__(cudnnBackendCreateDescriptor) *create_desc;
	__typeof__(cudnnBackendDestroyDescriptor) *destroy_desc;
	__typeof__(cudnnBackendSetAttribute) *set_attr;
	__typeof__(cudnnBackendGetAttribute) *get_attr;
	__typeof__(cudnnBackendFinalize) *finalize;
	__typeof__(cudnnBackendExecute) *execute;
};

/* Graph forms of the masks aligned bottom-right; $FABENCH_CUDNN_BR (0 to 4)
 * picks one for the whole process, a debugging switch that lets one GPU run
 * try each (sdpa_graph.c says what each builds; docs/cudnn.md what each
 * gave on an H100). Unset: FA_CUDNN_BR_DEFAULT. */
enum fa_cudnn_br {
	FA_CUDNN_BR_LEGACY = 0,  /* GEN_INDEX in int32, axis 3 on ADD/SUB, padded */
	FA_CUDNN_BR_SCALAR = 1,  /* cudnn-frontend without padding: by-value int32 lengths */
	FA_CUDNN_BR_PADDED = 2,  /* cudnn-frontend with padding: device length arrays */
	FA_CUDNN_BR_FLOAT = 3,   /* the shift folded into one by-value fp32 constant */
	FA_CUDNN_BR_AXIS = 4,    /* cudnn-frontend's CompositeDiagonalBandMaskNode: as 1,
				  * with axis 3 on the int32 ADD and SUB */
	FA_CUDNN_BR_LAST = FA_CUDNN_BR_AXIS,
	FA_CUDNN_BR_DEFAULT = FA_CUDNN_BR_AXIS
};

/* The loaded library; NULL before fa_cudnn_init succeeded. */
extern struct fa_cudnn_api *fa_cudnn;

/* Opens the library and resolves every entry point into *api (handle not
 * yet created), and reads $FABENCH_CUDNN_BR into api->br. Returns 0, or
 * nonzero with the reason in why (a missing library or entry point, a
 * version other than 9.x, a FABENCH_CUDNN_BR other than 0 to 4). */
int fa_cudnn_api_open(struct fa_cudnn_api *api, char *why, size_t why_size);
void fa_cudnn_api_close(struct fa_cudnn_api *api);

/* "cuDNN's status name: its last error message" for a failed call. */
void fa_cudnn_status_text(const struct fa_cudnn_api *api, cudnnStatus_t st, char *buf,
			  size_t size);

/* ---- sdpa_graph.c: one graph, one plan ---- */

/* Every field of a problem that shapes the graph (the scale is passed by
 * value at launch and is not part of it). Zeroed before it is filled, so
 * that memcmp and the hash see no padding. */
struct fa_cudnn_key {
	int32_t dtype, batch, heads, kv_heads, q_len, kv_len, head_dim, head_dim_v;
	int32_t mask, window, prefix_len, varlen;
	int32_t kind, unused; /* enum fa_cudnn_kind; unused: 0 */
	int64_t q_stride_b, q_stride_s, q_stride_h;
	int64_t k_stride_b, k_stride_s, k_stride_h;
	int64_t v_stride_b, v_stride_s, v_stride_h;
	int64_t o_stride_b, o_stride_s, o_stride_h;
};

/* The graphs of a problem: the forward (inference: no stats, unless no
 * engine takes that form), the forward that writes fabench's LSE (the
 * forward of the backward), the backward. */
enum fa_cudnn_kind {
	FA_CUDNN_FWD = 0,
	FA_CUDNN_FWD_LSE = 1,
	FA_CUDNN_BWD = 2
};

/* Tensor ids of the variant pack (0: not in this graph). */
enum fa_cudnn_uid {
	FA_CUDNN_UID_Q = 1,
	FA_CUDNN_UID_K,
	FA_CUDNN_UID_V,
	FA_CUDNN_UID_O,
	FA_CUDNN_UID_SCALE,
	FA_CUDNN_UID_NEG_INF,
	FA_CUDNN_UID_SKV,     /* bottom-right shift, fixed lengths: kv_len (int32,
			       * by value), or kv_len - q_len (fp32, FA_CUDNN_BR_FLOAT) */
	FA_CUDNN_UID_SQ,      /* q_len (int32, by value; FA_CUDNN_BR_SCALAR) */
	FA_CUDNN_UID_WINDOW,  /* sliding window left bound */
	FA_CUDNN_UID_PREFIX,  /* prefix_lm: batch int32 prefix lengths */
	FA_CUDNN_UID_SEQ_Q,   /* varlen, bottom-right: batch int32 lengths */
	FA_CUDNN_UID_SEQ_KV,
	FA_CUDNN_UID_RAG_Q,   /* varlen: batch + 1 int32 element offsets */
	FA_CUDNN_UID_RAG_K,
	FA_CUDNN_UID_RAG_V,
	FA_CUDNN_UID_RAG_O,
	FA_CUDNN_UID_STATS,   /* softmax stats: the fallback forward (workspace), the
			       * LSE forward and the backward (fabench's LSE) */
	FA_CUDNN_UID_DO,      /* backward: dO (laid out as O) */
	FA_CUDNN_UID_DQ,      /* backward: the gradients, laid out as Q, K, V */
	FA_CUDNN_UID_DK,
	FA_CUDNN_UID_DV,
	FA_CUDNN_UID_ONE,     /* backward: by-value fp32 1 (the dropout scales' place) */
	FA_CUDNN_UID_DQ_ACCUM,/* backward: fp32 dQ accumulator (workspace, zeroed) */
	FA_CUDNN_UID_RAG_STATS, /* varlen, fabench's LSE (the LSE forward, the backward):
				 * batch + 1 int32 offsets cu_seqlens_q[b] x heads */
	FA_CUDNN_UID_FIRST_VIRTUAL /* virtual tensors count up from here */
};

/* Varlen: the int32 arrays the aux kernel fills in the workspace (batch + 1
 * each): the ragged offsets of Q, K, V, O (0 to 3), the lengths of Q and KV
 * (4, 5: batch each), the ragged offsets of the LSE (6). */
#define FA_CUDNN_AUX_ARRAYS 7

#define FA_CUDNN_MAX_DESCS 384
#define FA_CUDNN_MAX_VARIANTS 24

struct fa_cudnn_plan {
	struct fa_cudnn_key key;
	uint64_t hash;
	int ready;                 /* 1: plan usable; 0: why says why not */
	int graph_ok;              /* 1: the operation graph finalized */
	int status;                /* the failing cudnnStatus_t when not ready */
	char why[512];
	cudnnBackendDescriptor_t plan;
	/* every descriptor the plan was built from, destroyed with it */
	cudnnBackendDescriptor_t descs[FA_CUDNN_MAX_DESCS];
	int n_descs;
	int64_t plan_ws_bytes;     /* cuDNN's workspace */
	int64_t engine;            /* the plan's engine (CUDNN_ATTR_ENGINE_GLOBAL_INDEX) */
	int heur_rank;             /* its place in the heuristics' list, 0 first */
	int with_stats;            /* 1: the graph writes the softmax stats */
	size_t stats_bytes;        /* then, in the workspace (FA_CUDNN_FWD only):
				    * batch x heads x q_len fp32 stats */
	size_t dq_accum_bytes;     /* backward: fp32 dQ accumulator in the workspace
				    * (0: cuDNN's dP workspace form, dQ written directly) */
	float one_f;               /* FA_CUDNN_UID_ONE */
	size_t aux_bytes;          /* then: varlen offsets and lengths, */
	size_t aux_pitch_bytes;    /* FA_CUDNN_AUX_ARRAYS int32 arrays this far apart */
	/* by-value scalars of the graph (the variant pack points here) */
	float neg_inf;
	float window_f;
	int32_t window_i;
	int window_is_float;
	int32_t skv_i, sq_i;       /* FA_CUDNN_UID_SKV and _SQ as int32 */
	float shift_f;             /* FA_CUDNN_UID_SKV as fp32 (FA_CUDNN_BR_FLOAT) */
	int shift_is_float;
	void *prefix_dev;          /* prefix_lm: batch int32 copies of prefix_len */
	void *seq_q_dev, *seq_kv_dev; /* bottom-right, fixed lengths: of q_len, kv_len */
	int n_axis_other;          /* pointwise operations other than GEN_INDEX given
				    * CUDNN_ATTR_POINTWISE_AXIS (legacy form only) */
	int64_t uids[FA_CUDNN_MAX_VARIANTS]; /* the non-virtual tensors, in order */
	int n_uids;
	struct fa_cudnn_plan *next; /* hash chain */
};

/* Fills key from p for a graph of that kind. */
void fa_cudnn_key_of(const struct fa_problem *p, int kind, struct fa_cudnn_key *key);
/* 1 when the graph of k has per-sequence lengths (SEQ_Q, SEQ_KV): varlen,
 * or, in the legacy and padded forms (br), a mask aligned bottom-right
 * (q_len != kv_len). */
int fa_cudnn_key_padded(const struct fa_cudnn_key *k, int br);

/* Builds the operation graph of key, asks the heuristics for engine
 * configurations and finalizes the first plan that cuDNN accepts. Every
 * forward graph writes the softmax stats (the training form of the
 * pattern: sdpa_graph.c says why). On success plan->ready is 1; otherwise
 * plan->why holds the failing step and cuDNN's message. Needs the api lock
 * held. */
void fa_cudnn_plan_build(struct fa_cudnn_api *api, struct fa_cudnn_plan *plan);

/* Destroys every descriptor of plan and its device buffer (not plan). */
void fa_cudnn_plan_release(struct fa_cudnn_api *api, struct fa_cudnn_plan *plan);

/* ---- plan_cache.c ---- */

/* The plan for p, built on first request; never NULL unless out of host
 * memory. Thread-safe. The plan lives until fa_cudnn_cache_clear. */
struct fa_cudnn_plan *fa_cudnn_cache_get(struct fa_cudnn_api *api, const struct fa_problem *p,
					 int kind);
/* The plan of that kind for p when one was built, else NULL (builds nothing). */
struct fa_cudnn_plan *fa_cudnn_cache_peek(struct fa_cudnn_api *api, const struct fa_problem *p,
					  int kind);
void fa_cudnn_cache_clear(struct fa_cudnn_api *api);
/* Plans in the cache (for the self-test). */
int fa_cudnn_cache_count(void);

/* ---- cudnn_sdpa.c: the kernel record ---- */

/* What cuDNN is known not to do for p, before a plan is built (the
 * forward's limits; bwd: also the backward's, of cudnn_sdpa_bwd and the
 * forward with the LSE it reads): 1 with the reason in why, else 0. Reads
 * api->version and api->sm only. */
int fa_cudnn_refuse(const struct fa_cudnn_api *api, const struct fa_problem *p, int bwd,
		    char *why, size_t why_size);

/* cudnn_sdpa (forward, writes the LSE) and cudnn_sdpa_bwd (its backward) */
#define FA_CUDNN_N_KERNELS 2
extern const struct fa_kernel fa_cudnn_sdpa_kernels[FA_CUDNN_N_KERNELS];
/* Fills the record's description with the loaded version. */
void fa_cudnn_sdpa_describe(const struct fa_cudnn_api *api);
/* Loads the varlen aux kernel (PTX) into the current context. */
int fa_cudnn_aux_load(char *why, size_t why_size);
void fa_cudnn_aux_unload(void);
/* The words of the last failed launch when it returned code, else NULL. */
const char *fa_cudnn_last_launch_error(int code);

#endif /* FA_CUDNN_INTERNAL_H */
