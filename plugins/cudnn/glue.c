/* glue.c - the cuDNN plugin's entry points (fa_cudnn.h): the only file the
 * SDK's kernel-only plugin entry, or the CUDA backend, needs to call.
 * Everything else in plugins/cudnn is reached from here.
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
	if (fa_cudnn)
		return 0;
	if (fa_cudnn_api_open(api, why, why_size) != 0)
		return 1;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
		snprintf(why, why_size, "cudnn_sdpa: no CUDA device: %s",
			 cudaGetErrorName(cudaGetLastError()));
		fa_cudnn_api_close(api);
		return 1;
	}
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
	*out = &fa_cudnn_sdpa_kernel;
	return 1;
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
