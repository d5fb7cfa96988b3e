/* glue.c - the cuDNN plugin's entry points: fa_kernel_plugin_init, the SDK's
 * kernel-only plugin entry (include/fabench/plugin.h) that adds cudnn_sdpa
 * to the cuda backend, and the four functions of fa_cudnn.h behind it (the
 * self-test calls those directly). Everything else in plugins/cudnn is
 * reached from here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cudnn_internal.h"

static struct fa_cudnn_api the_api;

int fa_cudnn_init(char *why, size_t why_size)
{
	struct fa_cudnn_api *api = &the_api;
	cudnnStatus_t st;
	int dev = 0, major = 0, minor = 0;
	char txt[400];
	cudaError_t e;
	if (fa_cudnn)
		return 0;
	/* the device first: without one, cuDNN is not even opened */
	if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
	    (e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) !=
		    cudaSuccess ||
	    (e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev)) !=
		    cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(why, why_size, "no CUDA device: %s", cudaGetErrorName(e));
		return 1;
	}
	if (fa_cudnn_api_open(api, why, why_size) != 0)
		return 1;
	api->sm = major * 10 + minor;
	if ((st = api->create(&api->handle)) != CUDNN_STATUS_SUCCESS) {
		fa_cudnn_status_text(api, st, txt, sizeof txt);
		snprintf(why, why_size, "cudnnCreate failed: %s", txt);
		api->handle = NULL;
		fa_cudnn_api_close(api);
		return 1;
	}
	if (fa_cudnn_aux_load(why, why_size) != 0) {
		fa_cudnn_api_close(api);
		return 1;
	}
	pthread_mutex_init(&api->lock, NULL);
	fa_cudnn_sdpa_describe(api);
	fa_cudnn = api;
	return 0;
}

int fa_cudnn_kernels(const struct fa_kernel **out)
{
	if (!fa_cudnn) {
		*out = NULL;
		return 0;
	}
	*out = fa_cudnn_sdpa_kernels;
	return FA_CUDNN_N_KERNELS;
}

const char *fa_cudnn_error_string(int code)
{
	const char *last = fa_cudnn_last_launch_error(code);
	if (last)
		return last;
	if (code >= FA_CUDNN_ERR && code < FA_CUDNN_ERR + 0x10000) {
		if (fa_cudnn)
			return fa_cudnn->get_error_string((cudnnStatus_t)(code - FA_CUDNN_ERR));
		return "cuDNN error (library not loaded)";
	}
	return cudaGetErrorName((cudaError_t)code);
}

void fa_cudnn_shutdown(void)
{
	struct fa_cudnn_api *api = fa_cudnn;
	if (!api)
		return;
	fa_cudnn_cache_clear(api);
	fa_cudnn_aux_unload();
	fa_cudnn = NULL;
	fa_cudnn_api_close(api);
	pthread_mutex_destroy(&api->lock);
}

/* ---- the SDK's kernel plugin entry ---- */

/* Backend slots the plugin joined (the harness loads the cuda backend twice
 * for --ab): the library is shut down when the last one is done. */
static int plugin_users;

static int plugin_count(void *ctx)
{
	const struct fa_kernel *ks;
	(void)ctx;
	return fa_cudnn_kernels(&ks);
}

static const struct fa_kernel *plugin_get(void *ctx, int i)
{
	const struct fa_kernel *ks;
	int n = fa_cudnn_kernels(&ks);
	(void)ctx;
	return i >= 0 && i < n ? &ks[i] : NULL;
}

/* Words for the plugin's own codes (FA_CUDNN_ERR + a cudnnStatus_t); NULL
 * for a CUDA runtime code, which the cuda backend describes. */
static const char *plugin_error_string(void *ctx, int code)
{
	(void)ctx;
	if (code < FA_CUDNN_ERR || code >= FA_CUDNN_ERR + 0x10000)
		return NULL;
	return fa_cudnn_error_string(code);
}

static void plugin_shutdown(void *ctx)
{
	(void)ctx;
	if (plugin_users > 0 && --plugin_users == 0)
		fa_cudnn_shutdown();
}

/* Exported: the harness finds the plugin by this symbol (plugin.h). */
int fa_kernel_plugin_init(int harness_api_version, const char *backend_name,
			  struct fa_kernel_plugin *out, char *why, size_t why_size);

int fa_kernel_plugin_init(int harness_api_version, const char *backend_name,
			  struct fa_kernel_plugin *out, char *why, size_t why_size)
{
	if (harness_api_version < FA_BACKEND_API_VERSION) {
		snprintf(why, why_size, "needs plugin API %d, fabench reads up to %d",
			 FA_BACKEND_API_VERSION, harness_api_version);
		return -1;
	}
	if (!backend_name || strcmp(backend_name, "cuda") != 0) {
		snprintf(why, why_size, "kernels for cuda only");
		return FA_KERNEL_PLUGIN_DECLINED;
	}
	/* the cuda backend made its device current on this thread */
	if (fa_cudnn_init(why, why_size) != 0)
		return -1;
	memset(out, 0, sizeof *out);
	out->api_version = FA_BACKEND_API_VERSION;
	out->struct_size = (uint32_t)sizeof *out;
	out->name = "cudnn";
	out->kernel_count = plugin_count;
	out->kernel_get = plugin_get;
	out->error_string = plugin_error_string;
	out->shutdown = plugin_shutdown;
	plugin_users++;
	return FA_KERNEL_PLUGIN_ADDED;
}
