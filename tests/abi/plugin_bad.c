/* plugin_bad.c - build/abi/libbad-VARIANT.so: plugins the harness must
 * refuse, one reason each, for tests/test_plugins.c. BAD_VARIANT names it:
 *
 *   future     a backend plugin of an API version this fabench does not know
 *   nolaunch   a backend plugin whose kernel 'bad_k' has no launch
 *   noalloc    a backend plugin without the required method alloc
 *   kfuture    a kernel plugin of an unknown API version
 *   knolaunch  a kernel plugin whose kernel 'bad_k' has no launch
 *   kclash     a kernel plugin whose kernel is named like the CPU's cpu_flash
 *   kerr       not refused: a kernel plugin whose kernel fails with a code of
 *              its own, which its error_string puts in words
 *   knofwd     a kernel plugin whose backward kernel names no fwd_kernel
 *   kv2        not refused: a version 2 kernel plugin (kernel record of the
 *              version 2 size, garbage where version 3's pass would be): a
 *              forward kernel that leaves O unwritten
 *   kbwd       not refused: backward kernels 'bad_k' (its forward 'bad_f'
 *              does not write the LSE) and 'bad_m' (its forward is missing)
 *   kdupparam  a kernel plugin whose kernel declares param 'tile' twice
 *   kdigitparam a kernel plugin whose kernel's param is named '2tile'
 *   kwide      not refused: a kernel with 16 params of 63-character names,
 *              each -2147483648 by default: the longest params text
 *   kstuck     not refused: a kernel that never returns from a causal case
 *              (it ignores *a->cancel)
 *   kcrash     not refused: a kernel that raises SIGSEGV in a causal case
 *   kneg       a kernel plugin whose kernel_count is -1
 *
 * BAD_KERNEL_PLUGIN is defined for the k* variants, which export only
 * fa_kernel_plugin_init.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../include/fabench/plugin.h"

#ifndef BAD_VARIANT
#error "build with -DBAD_VARIANT='\"name\"'"
#endif

static int is(const char *v)
{
	return strcmp(BAD_VARIANT, v) == 0;
}

#define BAD_OWN_CODE 0x40001 /* outside every backend's codes */

static int k_copy_q(const struct fa_launch_args *a)
{
	if (a->p->mask == FA_MASK_CAUSAL && is("kstuck"))
		for (;;)
			pause(); /* a signal ends a pause, not the loop */
	if (a->p->mask == FA_MASK_CAUSAL && is("kcrash"))
		raise(SIGSEGV);
	return is("kerr") ? BAD_OWN_CODE : 0;
}



static struct fa_kernel kernel = {
	.name = "bad_k",
	.description = "a kernel of a plugin that is refused",
	.dtypes = 1u << FA_DTYPE_FP32,
	.head_dim_min = 1,
	.head_dim_max = 64,
	.launch = k_copy_q,
	.struct_size = sizeof(struct fa_kernel),
};

/* kbwd's other kernels: a forward without the LSE, a backward whose
 * forward is not loaded */
static struct fa_kernel kernel_f = {
	.name = "bad_f",
	.description = "a forward that does not write the LSE",
	.dtypes = 1u << FA_DTYPE_FP32,
	.head_dim_min = 1,
	.head_dim_max = 64,
	.launch = k_copy_q,
	.struct_size = sizeof(struct fa_kernel),
};
static struct fa_kernel kernel_m = {
	.name = "bad_m",
	.description = "a backward whose forward is missing",
	.dtypes = 1u << FA_DTYPE_FP32,
	.head_dim_min = 1,
	.head_dim_max = 64,
	.launch = k_copy_q,
	.struct_size = sizeof(struct fa_kernel),
	.pass = FA_PASS_BWD,
	.fwd_kernel = "no_such_forward",
};

/* kdupparam, kdigitparam and kwide's params */
#define WIDE_NAME(c) "p" c "_34567890123456789012345678901234567890123456789012345678901"
static struct fa_kernel_param params[FA_KERNEL_MAX_PARAMS] = {
	{WIDE_NAME("00"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("01"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("02"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("03"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("04"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("05"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("06"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("07"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("08"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("09"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("10"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("11"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("12"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("13"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("14"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
	{WIDE_NAME("15"), INT32_MIN, NULL, 0, INT32_MIN, INT32_MAX, NULL},
};

static int count(void *ctx)
{
	(void)ctx;
	return is("kbwd") ? 3 : is("kneg") ? -1 : 1;
}

static const struct fa_kernel *get(void *ctx, int i)
{
	(void)ctx;
	if (is("nolaunch") || is("knolaunch"))
		kernel.launch = NULL;
	if (is("kclash"))
		kernel.name = "cpu_flash";
	if (is("knofwd"))
		kernel.pass = FA_PASS_BWD;
	if (is("kv2")) { /* only the version 2 members count */
		kernel.struct_size = (uint32_t)offsetof(struct fa_kernel, pass);
		kernel.pass = 99;
	}
	if (is("kdupparam") || is("kdigitparam") || is("kwide")) {
		kernel.params = params;
		kernel.n_params = is("kwide") ? FA_KERNEL_MAX_PARAMS : 2;
		params[0].name = is("kdigitparam") ? "2tile" : "tile";
		params[1].name = "tile";
		if (is("kwide")) {
			params[0].name = WIDE_NAME("00");
			params[1].name = WIDE_NAME("01");
		}
	}
	if (is("kbwd")) {
		kernel.pass = FA_PASS_BWD;
		kernel.fwd_kernel = "bad_f";
		return i == 0 ? &kernel : i == 1 ? &kernel_f : &kernel_m;
	}
	return &kernel;
}

#ifdef BAD_KERNEL_PLUGIN

static const char *own_words(void *ctx, int code)
{
	(void)ctx;
	return code == BAD_OWN_CODE ? "bad library status 1" : NULL;
}

int fa_kernel_plugin_init(int harness_api_version, const char *backend_name,
			  struct fa_kernel_plugin *out, char *why, size_t why_size);
int fa_kernel_plugin_init(int harness_api_version, const char *backend_name,
			  struct fa_kernel_plugin *out, char *why, size_t why_size)
{
	(void)harness_api_version;
	(void)why;
	(void)why_size;
	if (strcmp(backend_name, "cpu") != 0)
		return FA_KERNEL_PLUGIN_DECLINED;
	memset(out, 0, sizeof *out);
	out->api_version = is("kfuture") ? FA_BACKEND_API_VERSION + 1
			   : is("kv2")   ? 2
					 : FA_BACKEND_API_VERSION;
	out->struct_size = sizeof *out;
	out->name = "bad";
	out->kernel_count = count;
	out->kernel_get = get;
	out->error_string = own_words;
	return FA_KERNEL_PLUGIN_ADDED;
}

#else

static int info(void *ctx, struct fa_device_info *out)
{
	(void)ctx;
	memset(out, 0, sizeof *out);
	out->host_memory = 1;
	return 0;
}

static int alloc_(void *ctx, size_t bytes, void **ptr)
{
	(void)ctx;
	*ptr = malloc(bytes ? bytes : 1);
	return *ptr ? 0 : -1;
}

static void free_(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static int copy(void *ctx, void *d, const void *s, size_t n)
{
	(void)ctx;
	memcpy(d, s, n);
	return 0;
}

static int set(void *ctx, void *d, int b, size_t n)
{
	(void)ctx;
	memset(d, b, n);
	return 0;
}

static int none(void *ctx)
{
	(void)ctx;
	return 0;
}

static int ev_create(void *ctx, void **e)
{
	(void)ctx;
	*e = malloc(1);
	return *e ? 0 : -1;
}

static int ev_record(void *ctx, void *e)
{
	(void)ctx;
	(void)e;
	return 0;
}

static int ev_elapsed(void *ctx, void *a, void *b, double *ms)
{
	(void)ctx;
	(void)a;
	(void)b;
	*ms = 0;
	return 0;
}

static void ev_destroy(void *ctx, void *e)
{
	(void)ctx;
	free(e);
}

static const char *words(void *ctx, int code)
{
	(void)ctx;
	(void)code;
	return "bad error";
}

static void shutdown_(void *ctx)
{
	(void)ctx;
}

static struct fa_backend_i iface = {
	.device_info = info,
	.alloc = alloc_,
	.free = free_,
	.upload = copy,
	.download = copy,
	.memset = set,
	.synchronize = none,
	.event_create = ev_create,
	.event_record = ev_record,
	.event_elapsed_ms = ev_elapsed,
	.event_destroy = ev_destroy,
	.kernel_count = count,
	.kernel_get = get,
	.error_string = words,
	.shutdown = shutdown_,
};

int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
			   size_t why_size);
int fa_backend_plugin_init(int harness_api_version, struct fa_backend *out, char *why,
			   size_t why_size)
{
	(void)harness_api_version;
	(void)why;
	(void)why_size;
	if (is("noalloc"))
		iface.alloc = NULL;
	memset(out, 0, sizeof *out);
	out->api_version = is("future") ? FA_BACKEND_API_VERSION + 1 : FA_BACKEND_API_VERSION;
	out->struct_size = sizeof *out;
	out->name = "bad";
	out->iface = &iface;
	return 0;
}

#endif
