/* test_hip_plugin.c - the HIP backend plugin (kernels/hip, docs/hip.md) on a
 * machine without an AMD GPU: build/libfabench-hip.so loads, refuses an
 * older harness naming both versions and a bad $FABENCH_HIP_DEVICE, answers
 * the runtime's hipErrorNoDevice instead of starting, lists its kernels
 * without a device (records that pass the harness's checks), and fabench,
 * which finds it next to its executable, prints that answer in `devices`,
 * lists the hip_* kernels with the plugin file in `kernels`, and keeps the
 * other backends working. $FABENCH_TEST_HIP names the plugin `make test`
 * built; empty where it is not built ($FABENCH_TEST_HIP_WHY says why). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/run/backend.h"
#include "proc.h"
#include "test.h"

/* The plugin's path, or NULL after printing the reason it is not tested. */
static const char *hip_plugin(void)
{
	const char *p = getenv("FABENCH_TEST_HIP"), *why = getenv("FABENCH_TEST_HIP_WHY");
	if (!p || !*p) {
		fa_test_skip("the HIP plugin is not built here (%s)",
			     why && *why ? why : "FABENCH_TEST_HIP is not set");
		return NULL;
	}
	return p;
}

/* 1 when this machine may have an AMD GPU (then the plugin may start). */
static int maybe_amd_gpu(void)
{
	return access("/dev/kfd", F_OK) == 0;
}

FA_TEST(hip_plugin, answers_no_device_and_lists_its_kernels)
{
	const char *path = hip_plugin(), *miss;
	fa_backend_plugin_init_fn init;
	fa_backend_plugin_kernels_fn kernels;
	struct fa_backend be;
	char why[512], what[256];
	int rc, n = -1, seen_dense = 0, seen_simt = 0, seen_mma = 0, seen_bwd = 0;
	const struct fa_kernel *t;
	void *dl;
	if (!path)
		return;
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	FA_REQUIRE(dl != NULL);
	*(void **)&init = dlsym(dl, FA_PLUGIN_INIT_SYMBOL);
	*(void **)&kernels = dlsym(dl, FA_PLUGIN_KERNELS_SYMBOL);
	FA_REQUIRE(init != NULL);
	FA_REQUIRE(kernels != NULL);

	/* no table for a harness of another version (its records are another size) */
	FA_CHECK(kernels(FA_BACKEND_API_VERSION - 1, &n) == NULL && n == 0);
	/* the table, without a device: every record passes the harness's checks */
	t = kernels(FA_BACKEND_API_VERSION, &n);
	FA_REQUIRE(t != NULL);
	/* hip_dense, hip_flash_simt, hip_flash_bwd_simt, two test-only ones,
	 * hip_flash_mfma, hip_flash_wmma */
	FA_CHECKF(n == 7, "%d kernels", n);
	for (int i = 0; i < n; i++) {
		miss = NULL;
		what[0] = '\0';
		FA_CHECKF(fa_kernel_validate(&t[i], &miss, what, sizeof what),
			  "kernel %d: missing '%s': %s", i, miss ? miss : "", what);
		FA_CHECKF(strncmp(t[i].name, "hip_", 4) == 0, "kernel %d is '%s'", i, t[i].name);
		seen_dense += strcmp(t[i].name, "hip_dense") == 0;
		seen_simt += strcmp(t[i].name, "hip_flash_simt") == 0;
		seen_mma += strcmp(t[i].name, "hip_flash_mfma") == 0;
		seen_mma += strcmp(t[i].name, "hip_flash_wmma") == 0;
		/* a backward's forward is in the same table and writes the LSE,
		 * as the runner demands before it launches the backward */
		if (fa_kernel_pass(&t[i]) == FA_PASS_BWD) {
			const char *fwd = fa_kernel_fwd_name(&t[i]);
			int found = 0;
			seen_bwd += strcmp(t[i].name, "hip_flash_bwd_simt") == 0;
			FA_REQUIRE(fwd != NULL);
			for (int j = 0; j < n; j++)
				if (strcmp(t[j].name, fwd) == 0) {
					found = 1;
					FA_CHECKF(fa_kernel_pass(&t[j]) == FA_PASS_FWD &&
							  fa_kernel_writes_lse(&t[j]),
						  "%s's forward %s does not write the LSE", t[i].name, fwd);
				}
			FA_CHECKF(found, "%s's forward '%s' is not in the table", t[i].name, fwd);
		}
	}
	FA_CHECK(seen_dense == 1 && seen_simt == 1 && seen_mma == 2 && seen_bwd == 1);

	why[0] = '\0';
	rc = init(1, &be, why, sizeof why);
	FA_CHECK(rc != 0);
	{
		char want[160];
		snprintf(want, sizeof want,
			 "harness reads backend API versions up to 1; the hip plugin is version %d",
			 FA_BACKEND_API_VERSION);
		FA_CHECKF(strcmp(why, want) == 0, "old harness: '%s'", why);
	}

	setenv("FABENCH_HIP_DEVICE", "gpu0", 1);
	why[0] = '\0';
	rc = init(FA_BACKEND_API_VERSION, &be, why, sizeof why);
	unsetenv("FABENCH_HIP_DEVICE");
	FA_CHECK(rc != 0);
	FA_CHECKF(strcmp(why, "FABENCH_HIP_DEVICE 'gpu0' is not a device number") == 0, "'%s'",
		  why);

	why[0] = '\0';
	memset(&be, 0, sizeof be);
	rc = init(FA_BACKEND_API_VERSION, &be, why, sizeof why);
	if (rc == 0) {
		/* an AMD GPU here: a backend named hip, then shut down */
		FA_CHECKF(maybe_amd_gpu(), "started without /dev/kfd");
		FA_CHECK(be.name && strcmp(be.name, "hip") == 0);
		FA_REQUIRE(be.iface && be.iface->shutdown);
		be.iface->shutdown(be.context);
	} else if (!maybe_amd_gpu()) {
		FA_CHECKF(strcmp(why, "no HIP device: hipErrorNoDevice") == 0, "'%s'", why);
	} else {
		FA_CHECKF(why[0] != '\0', "failed without a reason");
	}
	dlclose(dl);
}

FA_TEST(hip_plugin, fabench_devices_and_kernels_without_a_device)
{
	const char *path = hip_plugin(), *slash;
	struct fa_proc_result r;
	char next[1100], want[1300];
	if (!path)
		return;
	if (maybe_amd_gpu()) {
		fa_test_skip("/dev/kfd exists: the answers without an AMD GPU cannot be checked");
		return;
	}
	/* the plugin `make test` built is the one next to fabench */
	slash = strrchr(fa_proc_bin(), '/');
	snprintf(next, sizeof next, "%.*s/libfabench-hip.so",
		 slash ? (int)(slash - fa_proc_bin()) : 1, slash ? fa_proc_bin() : ".");
	FA_CHECKF(access(next, R_OK) == 0, "%s is not next to fabench", next);

	fa_proc_run((char *[]){"devices", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "fabench devices: status %d: %s", r.status, r.err);
	FA_CHECKF(strstr(r.out, "hip   not loaded: no HIP device: hipErrorNoDevice\n") != NULL,
		  "no hipErrorNoDevice in:\n%s", r.out);
	FA_CHECKF(strncmp(r.out, "cpu   ", 6) == 0, "the cpu backend is not first:\n%s", r.out);
	fa_proc_free(&r);

	fa_proc_run((char *[]){"kernels", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "fabench kernels: status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.out, "cpu_flash") != NULL);
	FA_CHECKF(strstr(r.out, "hip: not loaded: no HIP device: hipErrorNoDevice\n"
				"  its kernels (they cannot run here):\n  hip_dense ") != NULL,
		  "no hip kernels in:\n%s", r.out);
	FA_CHECK(strstr(r.out, "  hip_flash_simt ") != NULL);
	FA_CHECK(strstr(r.out, "  hip_flash_bwd_simt ") != NULL);
	snprintf(want, sizeof want, "      from %s\n", next);
	FA_CHECKF(strstr(r.out, want) != NULL, "no '%s' in:\n%s", want, r.out);
	/* test-only kernels stay hidden */
	FA_CHECK(strstr(r.out, "hip_test_fault") == NULL);
	fa_proc_free(&r);

	/* a run on it says why it cannot, and the cpu backend still runs */
	fa_proc_run((char *[]){"list", "suites/smoke.yaml", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "fabench list: status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"run", "suites/smoke.yaml", "--backend", "hip", "--dry-run", NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 2, "run --backend hip: status %d", r.status);
	FA_CHECKF(strstr(r.err, "hipErrorNoDevice") != NULL, "run --backend hip: '%s'", r.err);
	fa_proc_free(&r);
}
