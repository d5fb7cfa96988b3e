/* test_cudnn_plugin.c - the cuDNN kernel plugin (plugins/cudnn) on a machine
 * without a GPU: build/plugins/libfabench-cudnn.so loads, declines every
 * backend but cuda, refuses an older harness naming both versions, fails
 * with a reason (and no crash) when asked for cuda without a device, its
 * kernel record passes the harness's checks, and
 * fabench (which finds it next to its executable) says why it joined no
 * backend. $FABENCH_TEST_CUDNN names the plugin `make test` built; empty
 * where it is not built (no CUDA or cuDNN headers, the san variant). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/run/backend.h"
#include "proc.h"
#include "test.h"

/* The plugin's path, or NULL after printing the reason it is not tested. */
static const char *cudnn_plugin(void)
{
	const char *p = getenv("FABENCH_TEST_CUDNN");
	if (!p || !*p) {
		fa_test_skip("the cuDNN plugin is not built here (no CUDA runtime or cuDNN headers "
			     "in CUDA_HOME, or the san variant)");
		return NULL;
	}
	return p;
}

/* 1 when this machine may have an NVIDIA GPU (then the cuda answers differ). */
static int maybe_gpu(void)
{
	return access("/dev/nvidia0", F_OK) == 0;
}

FA_TEST(cudnn_plugin, declines_other_backends_and_fails_cleanly_without_a_device)
{
	const char *path = cudnn_plugin();
	char why[512];
	struct fa_kernel_plugin rec;
	fa_kernel_plugin_init_fn init;
	void *dl;
	int rc;
	if (!path)
		return;
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	FA_REQUIRE(dl != NULL);
	*(void **)&init = dlsym(dl, FA_KERNEL_PLUGIN_INIT_SYMBOL);
	FA_REQUIRE(init != NULL);
	/* the plugin is a kernel plugin only */
	FA_CHECK(dlsym(dl, FA_PLUGIN_INIT_SYMBOL) == NULL);
	/* the record it adds on a GPU passes the harness's checks */
	{
		const struct fa_kernel *k = dlsym(dl, "fa_cudnn_sdpa_kernel");
		const char *miss = NULL;
		char what[256] = "";
		FA_REQUIRE(k != NULL);
		FA_CHECKF(fa_kernel_validate(k, &miss, what, sizeof what), "missing '%s': %s",
			  miss ? miss : "", what);
		FA_CHECK(strcmp(k->name, "cudnn_sdpa") == 0);
	}

	memset(&rec, 0, sizeof rec);
	why[0] = '\0';
	rc = init(FA_BACKEND_API_VERSION, "cpu", &rec, why, sizeof why);
	FA_CHECKF(rc == FA_KERNEL_PLUGIN_DECLINED, "cpu: rc %d (%s)", rc, why);
	FA_CHECKF(strcmp(why, "kernels for cuda only") == 0, "cpu: '%s'", why);
	FA_CHECK(rec.kernel_count == NULL);

	why[0] = '\0';
	rc = init(FA_BACKEND_API_VERSION, "hip", &rec, why, sizeof why);
	FA_CHECKF(rc == FA_KERNEL_PLUGIN_DECLINED, "hip: rc %d (%s)", rc, why);

	why[0] = '\0';
	rc = init(1, "cuda", &rec, why, sizeof why);
	FA_CHECKF(rc != FA_KERNEL_PLUGIN_ADDED && rc != FA_KERNEL_PLUGIN_DECLINED,
		  "old harness: rc %d", rc);
	{
		char want[64];
		snprintf(want, sizeof want, "needs plugin API %d, fabench reads up to 1",
			 FA_BACKEND_API_VERSION);
		FA_CHECKF(strcmp(why, want) == 0, "old harness: '%s'", why);
	}

	why[0] = '\0';
	rc = init(FA_BACKEND_API_VERSION, "cuda", &rec, why, sizeof why);
	if (rc == FA_KERNEL_PLUGIN_ADDED) {
		/* a GPU and cuDNN here: the one kernel, then shut down */
		FA_CHECKF(maybe_gpu(), "cuda: added without /dev/nvidia0");
		FA_REQUIRE(rec.kernel_count && rec.kernel_get && rec.shutdown);
		FA_CHECK(rec.kernel_count(rec.context) == 1);
		FA_CHECK(strcmp(rec.kernel_get(rec.context, 0)->name, "cudnn_sdpa") == 0);
		FA_CHECK(rec.kernel_get(rec.context, 1) == NULL);
		rec.shutdown(rec.context);
	} else {
		FA_CHECKF(rc != FA_KERNEL_PLUGIN_DECLINED, "cuda: declined (%s)", why);
		FA_CHECKF(why[0] != '\0', "cuda: failed without a reason");
		if (!maybe_gpu())
			FA_CHECKF(strncmp(why, "no CUDA device: cuda", 20) == 0, "cuda: '%s'", why);
	}
	dlclose(dl);
}

FA_TEST(cudnn_plugin, fabench_devices_says_why_it_joined_no_backend)
{
	const char *path = cudnn_plugin();
	struct fa_proc_result r;
	char want[1200], bin_dir[1024];
	const char *slash;
	if (!path)
		return;
	/* the plugin `make test` built is the one next to fabench */
	slash = strrchr(fa_proc_bin(), '/');
	snprintf(bin_dir, sizeof bin_dir, "%.*s/plugins/libfabench-cudnn.so",
		 slash ? (int)(slash - fa_proc_bin()) : 1, slash ? fa_proc_bin() : ".");
	FA_CHECKF(access(bin_dir, R_OK) == 0, "%s is not next to fabench", bin_dir);
	fa_proc_run((char *[]){"devices", NULL}, (char *[]){"FABENCH_PLUGINS=", NULL}, 60, &r);
	FA_CHECKF(r.status == 0, "fabench devices: status %d: %s", r.status, r.err);
	if (strstr(r.out, "plugin cudnn (")) {
		/* a GPU machine where it joined the cuda backend */
		FA_CHECKF(strstr(r.out, "1 kernel for cuda") != NULL, "%s", r.out);
	} else {
		snprintf(want, sizeof want, "plugin %s: not loaded: cpu: kernels for cuda only",
			 bin_dir);
		FA_CHECKF(strstr(r.out, want) != NULL, "no '%s' in:\n%s", want, r.out);
	}
	fa_proc_free(&r);

	/* it adds nothing to the cpu backend's kernels, and breaks no listing */
	fa_proc_run((char *[]){"kernels", "--backend", "cpu", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "fabench kernels: status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.out, "cpu_flash") != NULL);
	FA_CHECK(strstr(r.out, "cudnn_sdpa") == NULL);
	fa_proc_free(&r);
}
