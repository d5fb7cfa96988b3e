/* cudnn_api.c - cuDNN through dlopen: the library is opened at init
 * ($FABENCH_CUDNN, a path, first, e.g. the libcudnn.so.9 of PyTorch's
 * nvidia-cudnn wheel; else "libcudnn.so.9" from the loader's path) and the
 * backend graph API is resolved with dlsym, so the plugin neither links
 * against cuDNN nor needs it to build.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_internal.h"

struct fa_cudnn_api *fa_cudnn;

/* Resolves name into *slot; returns 0 or 1 with the reason in why. */
static int api_sym(struct fa_cudnn_api *api, void *slot, const char *name, char *why,
		   size_t why_size)
{
	void *f = dlsym(api->dl, name);
	if (!f) {
		snprintf(why, why_size, "cuDNN entry point '%s' not found: %s", name, dlerror());
		return 1;
	}
	memcpy(slot, &f, sizeof f);
	return 0;
}

/* $FABENCH_CUDNN_BR into *br (FA_CUDNN_BR_DEFAULT when unset or empty)
 * and *set. Returns 0, or 1 with the reason in why. */
static int api_br(int *br, int *set, char *why, size_t why_size)
{
	const char *env = getenv("FABENCH_CUDNN_BR");
	*br = FA_CUDNN_BR_DEFAULT;
	*set = 0;
	if (!env || !*env)
		return 0;
	if (env[1] != '\0' || env[0] < '0' || env[0] > '0' + FA_CUDNN_BR_LAST) {
		snprintf(why, why_size,
			 "FABENCH_CUDNN_BR '%.40s' is not a mask form: 0 (legacy), 1 (by-value "
			 "lengths), 2 (padded), 3 (fp32 shift), 4 (int32 with axis)",
			 env);
		return 1;
	}
	*br = env[0] - '0';
	*set = 1;
	return 0;
}

int fa_cudnn_api_open(struct fa_cudnn_api *api, char *why, size_t why_size)
{
	const char *env = getenv("FABENCH_CUDNN");
	const char *name = env && *env ? env : "libcudnn.so.9";
	int bad = 0;
	memset(api, 0, sizeof *api);
	if (api_br(&api->br, &api->br_set, why, why_size))
		return 1;
	api->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!api->dl) {
		snprintf(why, why_size, "%s not found: %s", name, dlerror());
		return 1;
	}
#define SYM(field, name) bad = bad || api_sym(api, &api->field, name, why, why_size)
	SYM(get_version, "cudnnGetVersion");
	SYM(create, "cudnnCreate");
	SYM(destroy, "cudnnDestroy");
	SYM(set_stream, "cudnnSetStream");
	SYM(get_error_string, "cudnnGetErrorString");
	SYM(get_last_error_string, "cudnnGetLastErrorString");
	SYM(create_desc, "cudnnBackendCreateDescriptor");
	SYM(destroy_desc, "cudnnBackendDestroyDescriptor");
	SYM(set_attr, "cudnnBackendSetAttribute");
	SYM(get_attr, "cudnnBackendGetAttribute");
	SYM(finalize, "cudnnBackendFinalize");
	SYM(execute, "cudnnBackendExecute");
#undef SYM
	if (bad) {
		dlclose(api->dl);
		api->dl = NULL;
		return 1;
	}
	api->version = api->get_version();
	if (api->version < 90000 || api->version >= 100000) {
		snprintf(why, why_size, "cuDNN version %zu not supported: the plugin needs 9.x",
			 api->version);
		dlclose(api->dl);
		api->dl = NULL;
		return 1;
	}
	return 0;
}

void fa_cudnn_api_close(struct fa_cudnn_api *api)
{
	if (api->handle)
		(void)api->destroy(api->handle);
	api->handle = NULL;
	if (api->dl)
		dlclose(api->dl);
	api->dl = NULL;
}

void fa_cudnn_status_text(const struct fa_cudnn_api *api, cudnnStatus_t st, char *buf,
			  size_t size)
{
	char last[384] = "";
	const char *name = api->get_error_string ? api->get_error_string(st) : "?";
	if (api->get_last_error_string)
		api->get_last_error_string(last, sizeof last);
	/* cuDNN's messages end with a newline; keep the reason on one line */
	for (char *c = last; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	size_t n = strlen(last);
	while (n > 0 && last[n - 1] == ' ')
		last[--n] = '\0';
	if (n)
		snprintf(buf, size, "%s: %s", name, last);
	else
		snprintf(buf, size, "%s", name);
}
