/* test_cudnn_plugin.c - the cuDNN kernel plugin (plugins/cudnn) on a machine
 * without a GPU: build/plugins/libfabench-cudnn.so loads, declines every
 * backend but cuda, refuses an older harness naming both versions, fails
 * with a reason (and no crash) when asked for cuda without a device, its
 * kernel records (cudnn_sdpa, which writes the LSE, and cudnn_sdpa_bwd,
 * whose forward it is) pass the harness's checks, and
 * fabench (which finds it next to its executable) says why it joined no
 * backend; build/cudnn-selftest --graphs builds every case's graph (the
 * forward, the forward with the LSE, the backward, varlen with the LSE's
 * ragged offsets) in each form of the bottom-right masks ($FABENCH_CUDNN_BR),
 * says which devices and versions the varlen backward is refused on, and
 * refuses a form that does not exist. $FABENCH_TEST_CUDNN names the plugin `make test` built; empty
 * where it is not built (no CUDA or cuDNN headers, the san variant). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
	/* the records it adds on a GPU pass the harness's checks: the forward
	 * writes the LSE, the backward names it as its forward */
	{
		const struct fa_kernel *k = dlsym(dl, "fa_cudnn_sdpa_kernels");
		const char *miss = NULL;
		char what[256] = "";
		FA_REQUIRE(k != NULL);
		for (int i = 0; i < 2; i++)
			FA_CHECKF(fa_kernel_validate(&k[i], &miss, what, sizeof what),
				  "%d: missing '%s': %s", i, miss ? miss : "", what);
		FA_CHECK(strcmp(k[0].name, "cudnn_sdpa") == 0);
		FA_CHECK(k[0].pass == FA_PASS_FWD && k[0].writes_lse == 1);
		FA_CHECK(strcmp(k[1].name, "cudnn_sdpa_bwd") == 0);
		FA_CHECK(k[1].pass == FA_PASS_BWD && k[1].writes_lse == 0);
		FA_CHECK(k[1].fwd_kernel && strcmp(k[1].fwd_kernel, "cudnn_sdpa") == 0);
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
		/* a GPU and cuDNN here: the forward and backward kernels, then
		 * shut down */
		FA_CHECKF(maybe_gpu(), "cuda: added without /dev/nvidia0");
		FA_REQUIRE(rec.kernel_count && rec.kernel_get && rec.shutdown);
		FA_CHECK(rec.kernel_count(rec.context) == 2);
		FA_CHECK(strcmp(rec.kernel_get(rec.context, 0)->name, "cudnn_sdpa") == 0);
		FA_CHECK(strcmp(rec.kernel_get(rec.context, 1)->name, "cudnn_sdpa_bwd") == 0);
		FA_CHECK(rec.kernel_get(rec.context, 2) == NULL);
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
		FA_CHECKF(strstr(r.out, "      2 kernels for cuda\n") != NULL, "%s", r.out);
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

/* Runs the self-test next to the plugin (build/cudnn-selftest) with arg
 * and arg2 (may be NULL) and FABENCH_CUDNN_BR=br (NULL: unset); its stdout
 * into out. Returns its exit status, or -1 when it could not run. */
static int run_selftest(const char *plugin, const char *br, const char *arg, const char *arg2,
			char *out, size_t size)
{
	char exe[1024];
	const char *slash = strrchr(plugin, '/');
	int fds[2], st = 0;
	size_t n = 0;
	ssize_t got;
	pid_t pid;
	/* the plugin is build/plugins/libfabench-cudnn.so */
	snprintf(exe, sizeof exe, "%.*s/../cudnn-selftest", slash ? (int)(slash - plugin) : 1,
		 slash ? plugin : ".");
	if (pipe(fds) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *argv[] = {exe, (char *)arg, (char *)arg2, NULL};
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		if (br)
			setenv("FABENCH_CUDNN_BR", br, 1);
		else
			unsetenv("FABENCH_CUDNN_BR");
		execv(exe, argv);
		_exit(127);
	}
	close(fds[1]);
	while (n + 1 < size && (got = read(fds[0], out + n, size - 1 - n)) > 0)
		n += (size_t)got;
	out[n] = '\0';
	close(fds[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

FA_TEST(cudnn_plugin, selftest_builds_each_bottom_right_form_and_refuses_unknown_ones)
{
	static const char *forms[] = {"0 (legacy", "1 (by-value", "2 (padded", "3 (one by-value fp32",
				      "4 (by-value int32 lengths, axis 3"};
	const char *path = cudnn_plugin();
	static char out[65536];
	char want[64], br[16];
	int rc;
	if (!path)
		return;
	rc = run_selftest(path, NULL, "--graphs", NULL, out, sizeof out);
	if (rc == 2 && strstr(out, "cuDNN not available: ")) {
		fa_test_skip("no libcudnn.so.9 to build graphs with: %s", out);
		return;
	}
	FA_CHECKF(rc == 0, "--graphs: status %d:\n%s", rc, out);
	/* unset: form 4, cudnn-frontend's diagonal band (axis 3 on ADD and SUB) */
	FA_CHECKF(strstr(out, "bottom-right: form 4 (by-value int32 lengths, axis 3 on ADD/SUB; "
			      "the default)") != NULL,
		  "%s", out);
	FA_CHECKF(strstr(out, " 0 failed") != NULL && strstr(out, "2 other ops with an axis"),
		  "%s", out);
	/* the varlen backward: accepted on sm_90 to sm_11x from cuDNN 9.6.0
	 * (the LSE's ragged offsets), refused elsewhere with the reason; the
	 * forward keeps its own limits */
	FA_CHECKF(strstr(out, "PASS  varlen backward, sm_90, cuDNN 91900: accepted") != NULL &&
			  strstr(out, "PASS  varlen backward, sm_100, cuDNN 91900: accepted") != NULL &&
			  strstr(out, "PASS  varlen forward, sm_80, cuDNN 91900: accepted") != NULL,
		  "%s", out);
	FA_CHECKF(strstr(out, "PASS  varlen backward, sm_80, cuDNN 91900: refused: cudnn_sdpa_bwd: "
			      "varlen needs sm_90 to sm_11x: cuDNN's backward takes no ragged "
			      "(packed) LSE on sm_80") != NULL &&
			  strstr(out, "PASS  varlen backward, sm_120, cuDNN 91900: refused: ") != NULL &&
			  strstr(out, "PASS  varlen backward, sm_90, cuDNN 90500: refused: cudnn_sdpa_bwd: "
				      "cuDNN 9.5.0 has no ragged offset on the softmax stats") != NULL,
		  "%s", out);
	for (int f = 0; f < 5; f++) {
		snprintf(br, sizeof br, "%d", f);
		rc = run_selftest(path, br, "--graphs", NULL, out, sizeof out);
		FA_CHECKF(rc == 0, "FABENCH_CUDNN_BR=%d --graphs: status %d:\n%s", f, rc, out);
		snprintf(want, sizeof want, "bottom-right: form %s", forms[f]);
		FA_CHECKF(strstr(out, want) != NULL, "no '%s' in:\n%s", want, out);
		FA_CHECKF(strstr(out, "causal q64 kv192 (bottom-right)") != NULL, "%s", out);
		/* forms 1 to 3 fail a graph that gives an ADD or SUB an axis; the
		 * legacy form and form 4 give the two of the right bound one */
		FA_CHECKF(strstr(out, " 0 failed") != NULL, "%s", out);
		if (f == 0 || f == 4)
			FA_CHECKF(strstr(out, "2 other ops with an axis") != NULL, "%s", out);
		/* the backward's graph and the forward's with the LSE, fixed
		 * lengths and varlen (the LSE with ragged offsets) */
		FA_CHECKF(strstr(out, "bwd bf16 d64 GQA 8/2 causal bhsd") != NULL &&
				  strstr(out, "backward graph: ") != NULL &&
				  strstr(out, "LSE forward graph: ") != NULL &&
				  strstr(out, ", fp32 dQ accumulator") != NULL,
			  "%s", out);
		FA_CHECKF(strstr(out, "bwd bf16 d64 varlen empty sequences (seq 0 no query, seq 2 no key) "
				      "backward graph: ") != NULL &&
				  strstr(out, "variant tensors, ragged LSE") != NULL,
			  "%s", out);
		/* the conformance shape whose dK, dV of keys no query sees an
		 * H200 got wrong while they were written before cuDNN */
		FA_CHECKF(strstr(out, "q 17/0/40/0 kv 17/9/0/0 none (seq 1 keys, no query) backward "
				      "graph: ") != NULL &&
				  strstr(out, "q 17/0/40/0 kv 17/9/0/0 causal (seq 1 keys, no query) "
					      "backward graph: ") != NULL,
			  "%s", out);
	}
	rc = run_selftest(path, "5", "--graphs", NULL, out, sizeof out);
	FA_CHECKF(rc == 2, "FABENCH_CUDNN_BR=5: status %d", rc);
	FA_CHECKF(strstr(out, "cuDNN not available: FABENCH_CUDNN_BR '5' is not a mask form: 0 "
			      "(legacy), 1 (by-value lengths), 2 (padded), 3 (fp32 shift), 4 (int32 "
			      "with axis)") != NULL,
		  "%s", out);
	rc = run_selftest(path, "1x", "--graphs", NULL, out, sizeof out);
	FA_CHECKF(rc == 2 && strstr(out, "FABENCH_CUDNN_BR '1x' is not a mask form") != NULL,
		  "status %d: %s", rc, out);
	/* a filter that names no case fails before looking for a device */
	rc = run_selftest(path, NULL, "--match", "no such case", out, sizeof out);
	FA_CHECKF(rc == 2 &&
			  strstr(out, "no case name contains 'no such case' (--list shows them)") != NULL,
		  "status %d: %s", rc, out);
	rc = run_selftest(path, NULL, "--help", NULL, out, sizeof out);
	FA_CHECKF(rc == 0 && strstr(out, "FABENCH_CUDNN_BR (0 to 4; default 4)") != NULL &&
			  strstr(out, "cudnn_sdpa_bwd") != NULL,
		  "status %d: %s", rc, out);
	rc = run_selftest(path, NULL, "--list", NULL, out, sizeof out);
	FA_CHECKF(rc == 0 && strstr(out, "decode q1 kv4096 causal (bottom-right)") != NULL,
		  "status %d: %s", rc, out);
}
