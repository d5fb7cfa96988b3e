/* test_plugins.c - the plugin SDK as a third party uses it: the CPU example
 * (examples/plugins/minimal-cpu) copied out of the tree, built against the
 * installed header only, loaded with FABENCH_PLUGINS and run beside
 * cpu_flash in one report table; the CUDA example compiled where nvcc is;
 * a plugin built against the frozen version 1 header loaded and run; and
 * the refusals (unknown versions, missing members, a kernel name that
 * exists), each with its message. */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness/base/util.h"
#include "../harness/run/backend.h"
#include "../harness/run/data.h"
#include "../harness/run/measure.h"
#include "../harness/suite/suite.h"
#include "fixture.h"
#include "proc.h"
#include "test.h"

/* Runs argv (argv[0] looked up on PATH) in dir with the make variables of
 * an enclosing `make test` removed; output goes to log. Returns the exit
 * status, or -1 when it could not start. */
static int run_tool(const char *dir, char *const argv[], const char *log)
{
	pid_t pid = fork();
	int st = 0;
	if (pid < 0)
		return -1;
	if (pid == 0) {
		FILE *f = fopen(log, "w");
		if (f) {
			dup2(fileno(f), 1);
			dup2(fileno(f), 2);
		}
		unsetenv("MAKEFLAGS");
		unsetenv("MFLAGS");
		unsetenv("MAKELEVEL");
		if (dir && chdir(dir) != 0)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int copy_file(const char *from, const char *to)
{
	size_t n = 0;
	char *buf = fa_test_read_file(from, &n);
	FILE *f;
	int ok;
	if (!buf)
		return -1;
	f = fopen(to, "wb");
	ok = f && fwrite(buf, 1, n, f) == n;
	if (f)
		ok = fclose(f) == 0 && ok;
	free(buf);
	return ok ? 0 : -1;
}

/* The folder of the ABI test plugins: build/abi next to the test plugin. */
static const char *abi_dir(void)
{
	static char dir[1024];
	const char *p = getenv("FABENCH_TEST_PLUGIN");
	const char *slash = p ? strrchr(p, '/') : NULL;
	if (slash)
		snprintf(dir, sizeof dir, "%.*s/abi", (int)(slash - p), p);
	else
		snprintf(dir, sizeof dir, "%s/build/abi", fa_test_root());
	return dir;
}

/* Installs the SDK with `make install-sdk PREFIX=dir/prefix` and copies the
 * example `name` to dir/name. Returns 0, or -1 after recording a failure. */
static int stage_example(const char *dir, const char *name, const char *file)
{
	char prefix[1100], arg[1200], src[1200], dst[1200], log[1100], hdr[1200];
	snprintf(prefix, sizeof prefix, "%s/prefix", dir);
	snprintf(arg, sizeof arg, "PREFIX=%s", prefix);
	snprintf(log, sizeof log, "%s/install.log", dir);
	int st = run_tool(fa_test_root(), (char *[]){"make", "-s", "install-sdk", arg, NULL}, log);
	FA_CHECKF(st == 0, "make install-sdk: status %d (see %s)", st, log);
	snprintf(hdr, sizeof hdr, "%s/include/fabench/plugin.h", prefix);
	FA_CHECKF(access(hdr, R_OK) == 0, "%s not installed", hdr);
	snprintf(dst, sizeof dst, "%s/%s", dir, name);
	mkdir(dst, 0777);
	const char *files[] = {"Makefile", file};
	for (int i = 0; i < 2; i++) {
		snprintf(src, sizeof src, "%s/examples/plugins/%s/%s", fa_test_root(), name, files[i]);
		snprintf(dst, sizeof dst, "%s/%s/%s", dir, name, files[i]);
		if (copy_file(src, dst) != 0) {
			FA_CHECKF(0, "cannot copy %s to %s", src, dst);
			return -1;
		}
	}
	return st == 0 ? 0 : -1;
}

/* Stages the minimal-cpu example in dir and builds it against the
 * installed SDK; its plugin's path into so. Returns 0, or -1 after
 * recording a failure. */
static int build_minimal_cpu(const char *dir, char *so, size_t size)
{
	char inc[1100], src[1100], log[1100];
	if (stage_example(dir, "minimal-cpu", "minimal_cpu.c") != 0)
		return -1;
	snprintf(inc, sizeof inc, "FABENCH_INCLUDE=%s/prefix/include", dir);
	snprintf(src, sizeof src, "%s/minimal-cpu", dir);
	snprintf(log, sizeof log, "%s/build.log", dir);
	int st = run_tool(src, (char *[]){"make", "-s", inc, NULL}, log);
	FA_CHECKF(st == 0, "example build: status %d, see %s", st, log);
	snprintf(so, size, "%s/libminimal-cpu.so", src);
	return st == 0 ? 0 : -1;
}

FA_TEST(plugins, header_is_self_contained)
{
	/* plugin.h includes no harness header: only <...> system headers */
	char path[1024];
	snprintf(path, sizeof path, "%s/include/fabench/plugin.h", fa_test_root());
	char *text = fa_test_read_file(path, NULL);
	FA_REQUIRE(text != NULL);
	for (char *l = strstr(text, "#include"); l; l = strstr(l + 1, "#include"))
		FA_CHECKF(strncmp(l, "#include <", 10) == 0, "%.40s", l);
	free(text);
	/* the SDK's names agree with the harness's */
	for (int d = 0; d < FA_DTYPE_COUNT; d++)
		FA_CHECK(strcmp(fa_dtype_str(d), fa_dtype_name(d)) == 0);
	for (int m = 0; m < FA_MASK_COUNT; m++)
		FA_CHECK(strcmp(fa_mask_str(m), fa_mask_name(m)) == 0);
	FA_CHECK(fa_dtype_str(FA_DTYPE_COUNT) == NULL && fa_mask_str(-1) == NULL);
}

FA_TEST(plugins, minimal_cpu_example_runs_beside_cpu_flash)
{
	const char *dir = fa_test_tmpdir();
	char so[1200], src[1100], db[1100], plug[2600], *env[2];
	struct fa_proc_result r;
	FA_REQUIRE(build_minimal_cpu(dir, so, sizeof so) == 0);
	FA_REQUIRE(access(so, R_OK) == 0);
	snprintf(src, sizeof src, "%s/minimal-cpu", dir); /* the folder the plugin is in */

	snprintf(db, sizeof db, "%s/ex.db", dir);
	unlink(db);
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	env[0] = plug;
	env[1] = NULL;
	fa_proc_run((char *[]){"kernels", "--backend", "cpu", NULL}, env, 60, &r);
	FA_CHECK(r.status == 0);
	FA_CHECKF(strstr(r.out, "minimal_cpu_attn") && strstr(r.out, "from ") &&
			  strstr(r.out, "libminimal-cpu.so"),
		  "kernels:\n%s", r.out);
	fa_proc_free(&r);
	fa_proc_run((char *[]){"devices", NULL}, env, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "plugin minimal-cpu (") &&
			  strstr(r.out, "1 kernel for cpu"),
		  "devices:\n%s", r.out);
	fa_proc_free(&r);

	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "cpu_flash,minimal_cpu_attn", "--db", db, "--quiet", NULL},
		    env, 300, &r);
	FA_CHECKF(r.status == 0, "run: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM cases") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'minimal_cpu_attn' AND "
			   "status = 'pass' AND n_samples > 0") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'cpu_flash' AND "
			   "status = 'pass'") == 4);
	/* one table: both kernels, the plugin's speedup against cpu_flash */
	fa_proc_run((char *[]){"report", "--db", db, "--baseline", "cpu_flash", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "minimal_cpu_attn") && strstr(r.out, "cpu_flash"),
		  "report: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);

	/* the same file twice (a folder and the file): loaded once */
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s:%s", src, so);
	fa_proc_run((char *[]){"kernels", "--backend", "cpu", NULL}, env, 60, &r);
	FA_CHECK(r.status == 0 && strstr(r.out, "minimal_cpu_attn") &&
		 strstr(strstr(r.out, "minimal_cpu_attn") + 1, "minimal_cpu_attn") == NULL);
	fa_proc_free(&r);

	/* the search path: plugins/ next to the executable (a copy of fabench
	 * in a temp folder), without FABENCH_PLUGINS */
	char bin[1200], pdir[1200], pso[1300], benv[1300];
	snprintf(bin, sizeof bin, "%s/bin/fabench", dir);
	snprintf(pdir, sizeof pdir, "%s/bin", dir);
	mkdir(pdir, 0777);
	snprintf(pdir, sizeof pdir, "%s/bin/plugins", dir);
	mkdir(pdir, 0777);
	snprintf(pso, sizeof pso, "%s/libminimal-cpu.so", pdir);
	FA_REQUIRE(copy_file(fa_proc_bin(), bin) == 0 && chmod(bin, 0755) == 0);
	FA_REQUIRE(copy_file(so, pso) == 0);
	snprintf(benv, sizeof benv, "%s", getenv("FABENCH_BIN") ? getenv("FABENCH_BIN") : "");
	setenv("FABENCH_BIN", bin, 1);
	fa_proc_run((char *[]){"kernels", "--backend", "cpu", NULL}, NULL, 60, &r);
	if (benv[0])
		setenv("FABENCH_BIN", benv, 1);
	else
		unsetenv("FABENCH_BIN");
	FA_CHECKF(r.status == 0 && strstr(r.out, "minimal_cpu_attn") && strstr(r.out, pso),
		  "kernels from %s:\n%s\n%s", bin, r.out, r.err);
	fa_proc_free(&r);

	/* a second file with the same kernel: refused, both files named */
	char dup[1200];
	snprintf(dup, sizeof dup, "%s/libdup.so", src);
	FA_REQUIRE(copy_file(so, dup) == 0);
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s:%s", so, dup);
	fa_proc_run((char *[]){"devices", NULL}, env, 60, &r);
	char want[3000];
	snprintf(want, sizeof want,
		 "plugin %s: not loaded: cpu: kernel 'minimal_cpu_attn' is already provided by %s",
		 dup, so);
	FA_CHECKF(r.status == 0 && strstr(r.out, want), "devices:\n%s\nwanted: %s", r.out, want);
	fa_proc_free(&r);
}

/* docs/plugins.md step 5: two builds of a kernel plugin under run --ab, each
 * side the --backend backend with one build's kernels of the same names,
 * stored as two runs that compare pairs; a --param of one side reaches only
 * it. A build that is refused, or no file, is bad input (status 2, no
 * database); --ab took backend plugins only ("has no symbol
 * fa_backend_plugin_init", status 1). */
FA_TEST(plugins, two_builds_of_a_kernel_plugin_under_ab)
{
	const char *dir = fa_test_tmpdir();
	char so[1200], old[1200], db[1100], ab[2500], bad[1200];
	struct fa_proc_result r;
	FA_REQUIRE(build_minimal_cpu(dir, so, sizeof so) == 0);
	snprintf(old, sizeof old, "%s/libminimal-cpu-old.so", dir);
	FA_REQUIRE(copy_file(so, old) == 0);
	snprintf(db, sizeof db, "%s/ab.db", dir);
	unlink(db);
	snprintf(ab, sizeof ab, "%s:%s", old, so);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "minimal_cpu_attn,cpu_flash", "--ab", ab, "--param",
			       "a:cpu_flash.block_q=8", "--label", "mine", "--db", db, "--quiet", NULL},
		    NULL, 300, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "A/B of cpu") && strstr(r.out, old),
		  "run: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r JOIN runs u ON u.id = r.run_id "
			   "WHERE r.kernel = 'minimal_cpu_attn' AND r.status = 'pass' AND "
			   "u.label IN ('mine-a', 'mine-b') AND u.backend = 'cpu'") == 8);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r JOIN runs u ON u.id = r.run_id "
			   "WHERE r.kernel = 'cpu_flash' AND (u.label = 'mine-a') = (r.params LIKE "
			   "'block_q=8,%')") == 8);
	fa_proc_run((char *[]){"compare", "--db", db, "mine-a", "mine-b", NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "took their samples in turn") &&
			  strstr(r.out, "| kernel minimal_cpu_attn |"),
		  "compare: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);

	/* a refused build, no file: bad input, nothing written */
	unlink(db);
	snprintf(bad, sizeof bad, "%s/libbad-kdupparam.so", abi_dir());
	snprintf(ab, sizeof ab, "%s:%s", so, bad);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--ab", ab,
			       "--db", db, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "fabench run: error: plugin ") &&
			  strstr(r.err, "libbad-kdupparam.so: cpu: kernel 'bad_k': params 0 and 1 "
					"are both named 'tile'\n"),
		  "status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	snprintf(ab, sizeof ab, "%s/none.so:%s", dir, so);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--ab", ab,
			       "--db", db, NULL},
		    NULL, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "none.so does not exist"), "status %d\n%s",
		  r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(access(db, F_OK) != 0);
}

FA_TEST(plugins, minimal_cuda_example_builds_and_runs_on_a_gpu)
{
	const char *dir = fa_test_tmpdir();
	const char *nvcc = "/usr/local/cuda/bin/nvcc";
	char inc[1100], src[1100], so[1200], log[1100], nv[1100];
	if (access(nvcc, X_OK) != 0) {
		fa_test_skip("no %s: the CUDA example is not compiled", nvcc);
		return;
	}
	if (stage_example(dir, "minimal-cuda", "minimal_cuda.cu") != 0)
		return;
	snprintf(inc, sizeof inc, "FABENCH_INCLUDE=%s/prefix/include", dir);
	snprintf(nv, sizeof nv, "NVCC=%s", nvcc);
	snprintf(src, sizeof src, "%s/minimal-cuda", dir);
	snprintf(log, sizeof log, "%s/build.log", dir);
	/* PTX for sm_80, JIT-compiled on newer GPUs: a compile check here, and
	 * runnable on any GPU fabench supports */
	int st = run_tool(src, (char *[]){"make", "-s", inc, nv,
					  "CUDA_ARCH=-gencode arch=compute_80,code=compute_80", NULL},
			  log);
	FA_CHECKF(st == 0, "CUDA example build: status %d, see %s", st, log);
	snprintf(so, sizeof so, "%s/libminimal-cuda.so", src);
	FA_CHECK(access(so, R_OK) == 0);
	/* without a GPU the plugin still opens, and declines the cpu backend */
	if (st != 0)
		return;
	char plug[1300], db[1100], *env[] = {plug, NULL};
	struct fa_proc_result r;
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	fa_proc_run((char *[]){"devices", NULL}, env, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "cpu: kernels for cuda only"), "devices:\n%s",
		  r.out);
	int on_gpu = strstr(r.out, "1 kernel for cuda") != NULL;
	fa_proc_free(&r);
	/* a plugin that declined the cpu backend is not offered as the
	 * reason a cpu kernel is unknown (it read 'plugin ... did not load:
	 * cpu: kernels for cuda only' for any misspelt name) */
	snprintf(db, sizeof db, "%s/unknown.db", dir);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "zzz_attn", "--db", db, NULL},
		    env, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "unknown kernel 'zzz_attn' (no loaded backend or "
						 "kernel plugin has it; a kernel plugin's kernels "
						 "need FABENCH_PLUGINS=FILE.so)") &&
			  !strstr(r.err, "did not load"),
		  "run: status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	if (!on_gpu) {
		fa_test_skip("the CUDA example was compiled, not run: the cuda backend did not load");
		return;
	}
	/* on a GPU: beside cuda_flash_simt, in one run */
	snprintf(db, sizeof db, "%s/ex.db", dir);
	unlink(db);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cuda", "--kernels",
			       "cuda_flash_simt,minimal_cuda_attn", "--db", db, "--quiet", NULL},
		    env, 300, &r);
	FA_CHECKF(r.status == 0, "run: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'minimal_cuda_attn' AND "
			   "status = 'pass' AND n_samples > 0") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'cuda_flash_simt' AND "
			   "status = 'pass'") == 4);
}

FA_TEST(plugins, v1_plugin_loads_and_runs)
{
	char so[1100], db[1100], plug[1200], *env[] = {plug, NULL};
	struct fa_registry reg;
	struct fa_err err;
	struct fa_proc_result r;
	snprintf(so, sizeof so, "%s/libfabench-abiv1.so", abi_dir());
	FA_REQUIRE(access(so, R_OK) == 0);
	/* through the registry: the version 1 layout read into the current one */
	fa_err_clear(&err);
	FA_REQUIRE(fa_registry_load(&reg, NULL, &err) == FA_OK);
	FA_REQUIRE(fa_registry_load_plugin(&reg, so, NULL, &err) == FA_OK);
	struct fa_backend_slot *s = &reg.slots[reg.n - 1];
	FA_CHECK(strcmp(s->name, "abiv1") == 0 && s->be.api_version == 1);
	FA_CHECK(s->be.iface.stream == NULL && s->be.iface.alloc != NULL);
	FA_CHECK(strcmp(s->info.name, "abi v1 device (host memory)") == 0);
	FA_CHECK(fa_backend_kernel_count(s) == 1 &&
		 strcmp(fa_backend_kernel_get(s, 0)->name, "abiv1_attn") == 0);
	fa_registry_free(&reg); /* its shutdown aborts unless it gets its own context */

	snprintf(db, sizeof db, "%s/v1.db", fa_test_tmpdir());
	unlink(db);
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "abiv1", "--db", db,
			       "--quiet", NULL},
		    env, 300, &r);
	FA_CHECKF(r.status == 0, "run: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'abiv1_attn' AND "
			   "status = 'pass' AND n_samples > 0") == 4);
}

/* `fabench devices` with FABENCH_PLUGINS=build/abi/libbad-VARIANT.so must
 * print want (with %s the plugin's path). */
static void check_refusal(const char *variant, const char *want_fmt)
{
	char so[1100], plug[1200], want[2400], *env[] = {plug, NULL};
	struct fa_proc_result r;
	snprintf(so, sizeof so, "%s/libbad-%s.so", abi_dir(), variant);
	FA_REQUIRE(access(so, R_OK) == 0);
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	snprintf(want, sizeof want, want_fmt, so);
	fa_proc_run((char *[]){"devices", NULL}, env, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, want), "%s: devices:\n%s\nwanted: %s", variant,
		  r.out, want);
	fa_proc_free(&r);
}

FA_TEST(plugins, refusals_name_the_reason)
{
	check_refusal("future", "not loaded: plugin %s has backend API version 5; this fabench "
				"knows versions 1 to 4\n");
	check_refusal("nolaunch", "not loaded: plugin %s: backend 'bad' has no 'launch' in kernel "
				  "'bad_k'\n");
	check_refusal("noalloc", "not loaded: plugin %s: backend 'bad' has no 'alloc'\n");
	check_refusal("kfuture", "plugin %s: not loaded: cpu: kernel plugin API version 5; this "
				 "fabench knows versions 2 to 4");
	check_refusal("knofwd", "plugin %s: not loaded: cpu: kernel 'bad_k' has no 'fwd_kernel'");
	check_refusal("knolaunch", "plugin %s: not loaded: cpu: kernel 'bad_k' has no 'launch'");
	check_refusal("kclash", "plugin %s: not loaded: cpu: kernel 'cpu_flash' is already "
				"provided by the built-in cpu backend");
	check_refusal("kneg", "plugin %s: not loaded: cpu: kernel plugin has kernel_count -1");
	/* (a kernel plugin's line goes on with the other backends' answers, e.g.
	 * "; cuda: ..." where a GPU is) */
	/* a refused plugin changes nothing: cpu still has its own four kernels */
	char so[1100];
	struct fa_registry reg;
	struct fa_err err;
	snprintf(so, sizeof so, "%s/libbad-kclash.so", abi_dir());
	setenv("FABENCH_PLUGINS", so, 1);
	fa_err_clear(&err);
	enum fa_rc rc = fa_registry_load(&reg, NULL, &err);
	unsetenv("FABENCH_PLUGINS");
	FA_REQUIRE(rc == FA_OK);
	FA_CHECK(reg.n_plugins == 1 && reg.plugins[0].n_att == 0);
	FA_CHECK(fa_backend_kernel_count(&reg.slots[0]) == 4);
	fa_registry_free(&reg);
	/* a path that does not exist, and a file that is no shared object */
	char plug[1300], want[2400], *env[] = {plug, NULL};
	struct fa_proc_result r;
	snprintf(so, sizeof so, "%s/libnone.so", abi_dir());
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s:tests/suites/tiny.yaml", so);
	snprintf(want, sizeof want, "plugin %s: not loaded: %s does not exist\n", so, so);
	fa_proc_run((char *[]){"devices", NULL}, env, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, want) &&
			  strstr(r.out, "plugin tests/suites/tiny.yaml: not loaded: cannot load "
					"tests/suites/tiny.yaml: "),
		  "devices:\n%s", r.out);
	fa_proc_free(&r);
}

/* Runs bad_k of tests/abi's libbad-VARIANT.so on tiny.yaml's cases of 16
 * queries into a new database NAME in the test's folder, its path into db;
 * returns the run's exit status (printed with its output unless 1, which
 * a bad kernel's results give). */
static int run_bad_k(const char *variant, const char *name, char *db, size_t size)
{
	char so[1100], plug[1200], *env[] = {plug, NULL};
	struct fa_proc_result r;
	int st;
	snprintf(so, sizeof so, "%s/libbad-%s.so", abi_dir(), variant);
	if (access(so, R_OK) != 0) {
		fprintf(stderr, "no %s\n", so);
		return -1;
	}
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	snprintf(db, size, "%s/%s", fa_test_tmpdir(), name);
	unlink(db);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "bad_k", "--where", "q_len == 16", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	st = r.status;
	if (st != 1)
		fprintf(stderr, "run: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	return st;
}

/* A param is named as --param K.NAME=V and the stored "NAME=V,..." read it
 * back: one named like a number or twice in a kernel is refused at load,
 * naming the plugin, kernel and param, and `run --kernels` of its kernel
 * says so; 16 params of the longest names are stored whole and import back. */
FA_TEST(plugins, param_names_are_checked_and_stored_whole)
{
	char so[1100], plug[1200], db[1100], json[1100], db2[1100], *env[] = {plug, NULL};
	struct fa_proc_result r;
	check_refusal("kdupparam", "plugin %s: not loaded: cpu: kernel 'bad_k': params 0 and 1 are "
				   "both named 'tile'");
	check_refusal("kdigitparam", "plugin %s: not loaded: cpu: kernel 'bad_k': param name "
				     "'2tile' starts with a digit: begin with a letter or '_'");
	/* fabench kernels, where the author looks for the kernel, says so too */
	snprintf(so, sizeof so, "%s/libbad-kdigitparam.so", abi_dir());
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	fa_proc_run((char *[]){"kernels", "--backend", "cpu", NULL}, env, 60, &r);
	FA_CHECKF(r.status == 0 && strstr(r.out, "cpu_flash") &&
			  strstr(r.out, "libbad-kdigitparam.so: not loaded: cpu: kernel 'bad_k': "
					"param name '2tile' starts with a digit"),
		  "kernels: status %d\n%s", r.status, r.out);
	fa_proc_free(&r);
	snprintf(so, sizeof so, "%s/libbad-kdupparam.so", abi_dir());
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	snprintf(db, sizeof db, "%s/kdup.db", fa_test_tmpdir());
	unlink(db);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "bad_k", "--db", db, "--quiet", NULL},
		    env, 60, &r);
	FA_CHECKF(r.status == 2 && strstr(r.err, "--kernels: unknown kernel 'bad_k' (plugin ") &&
			  strstr(r.err, "libbad-kdupparam.so did not load: cpu: kernel 'bad_k': "
					"params 0 and 1 are both named 'tile')"),
		  "run: status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(access(db, F_OK) != 0);

	FA_REQUIRE(run_bad_k("kwide", "kwide.db", db, sizeof db) == 1);
	/* 16 items of 63 + 1 + 11 characters and 15 commas */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE length(params) = 1215 AND "
			   "params LIKE 'p00!_%=-2147483648,p01!_%' ESCAPE '!' AND params LIKE "
			   "'%,p15!_34567890123456789012345678901234567890123456789012345678901="
			   "-2147483648' ESCAPE '!'") == 2);
	fa_proc_run((char *[]){"report", "--db", db, "--format", "json", NULL}, NULL, 60, &r);
	FA_REQUIRE(r.status == 0);
	snprintf(json, sizeof json, "%s/kwide.json", fa_test_tmpdir());
	FA_REQUIRE(fa_test_write_file(json, r.out) == 0);
	fa_proc_free(&r);
	snprintf(db2, sizeof db2, "%s/kwide2.db", fa_test_tmpdir());
	unlink(db2);
	fa_proc_run((char *[]){"import", json, "--db", db2, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "import: status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db2, "SELECT count(*) FROM results WHERE length(params) = 1215") ==
		 2);
}

/* A kernel plugin's kernel that crashes the process, or never returns (it
 * ignores *a->cancel), without --isolate: the finished cases are stored,
 * the run is incomplete, and the last words name the case, the kernel and
 * its plugin file. The stuck one ends the process (status 1) its timeout
 * and 5 s more after the timeout passed; it hung the run forever before. */
FA_TEST(plugins, crashing_and_stuck_kernels_name_their_plugin)
{
	static const struct {
		const char *variant;
		int status;
		const char *says;
	} cases[] = {
		{"kcrash", 128 + SIGSEGV, "fabench: crashed (SIGSEGV) in case 2/2 batch=1,"},
		{"kstuck", 1, "fabench: stuck in case 2/2 batch=1,"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char so[1100], plug[1200], db[1100], want[1400], *env[] = {plug, NULL};
		struct fa_proc_result r;
		double t0 = fa_now_s();
		snprintf(so, sizeof so, "%s/libbad-%s.so", abi_dir(), cases[i].variant);
		FA_REQUIRE(access(so, R_OK) == 0);
		snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
		snprintf(db, sizeof db, "%s/%s.db", fa_test_tmpdir(), cases[i].variant);
		unlink(db);
		/* case 1 (no mask) finishes (bad_k writes nothing: fail), case 2
		 * (causal) does not */
		fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
				       "cpu_flash,bad_k", "--where", "q_len == 16", "--timeout", "1",
				       "--db", db, "--quiet", NULL},
			    env, 60, &r);
		snprintf(want, sizeof want, " kernel bad_k (plugin %s)", so);
		FA_CHECKF(r.status == cases[i].status && strstr(r.err, cases[i].says) &&
				  strstr(r.err, want),
			  "%s: status %d\n%s", cases[i].variant, r.status, r.err);
		if (strcmp(cases[i].variant, "kstuck") == 0) {
			FA_CHECKF(strstr(r.err, ": it has not returned 5 s after its timeout passed (a "
						"CPU kernel polls *a->cancel and returns "
						"FA_KERNEL_CANCELLED); the finished cases are stored "
						"and the run is marked incomplete; rerun with "
						"--isolate to record it as a timeout and go on\n"),
				  "%s", r.err);
			FA_CHECKF(fa_now_s() - t0 < 30, "took %.0f s", fa_now_s() - t0);
		}
		fa_proc_free(&r);
		FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete' AND "
				   "running LIKE 'case 2/2 %kernel bad_k'") == 1);
		FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results r JOIN cases c ON c.id = "
				   "r.case_id WHERE c.idx = 0") == 2);
		FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results") == 2);
		fa_proc_run((char *[]){"report", "--db", db, NULL}, NULL, 60, &r);
		FA_CHECKF(r.status == 0 && strstr(r.out, "status: incomplete") &&
				  strstr(r.out, "kernel bad_k: a crash, a kill or a kernel that did "
						"not return ended the process there"),
			  "report: status %d\n%s", r.status, r.out);
		fa_proc_free(&r);
	}
	/* under --ab (no --isolate there): the side's kernel and build named */
	char so[1100], copy[1200], ab[2400], db[1100], want[1400];
	struct fa_proc_result r;
	snprintf(so, sizeof so, "%s/libbad-kstuck.so", abi_dir());
	snprintf(copy, sizeof copy, "%s/libbad-kstuck-b.so", fa_test_tmpdir());
	FA_REQUIRE(copy_file(so, copy) == 0);
	snprintf(ab, sizeof ab, "%s:%s", so, copy);
	snprintf(db, sizeof db, "%s/ab.db", fa_test_tmpdir());
	unlink(db);
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "bad_k", "--where", "q_len == 16", "--timeout", "1", "--ab", ab, "--db",
			       db, "--quiet", NULL},
		    NULL, 60, &r);
	snprintf(want, sizeof want, "fabench: stuck in kernel bad_k (plugin %s): it has not returned ",
		 so);
	FA_CHECKF(r.status == 1 && strstr(r.err, want) &&
			  strstr(r.err, "the run is marked incomplete\n") && !strstr(r.err, "--isolate"),
		  "status %d\n%s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM runs WHERE status = 'incomplete'") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results") == 2);
}

/* --dump with a --param sweep: each variant's output has a file of its own,
 * named by its params (by its place among them where they are too long for
 * a file name); the sweep's variants overwrote one file before. */
FA_TEST(plugins, dump_keeps_every_variant_of_a_sweep)
{
	char so[1100], plug[1200], db[1100], dir[1100], f[1400], *env[] = {plug, NULL};
	struct fa_proc_result r;
	snprintf(so, sizeof so, "%s/libbad-kwide.so", abi_dir());
	FA_REQUIRE(access(so, R_OK) == 0);
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	snprintf(db, sizeof db, "%s/d.db", fa_test_tmpdir());
	snprintf(dir, sizeof dir, "%s/dump", fa_test_tmpdir());
	fa_proc_run((char *[]){"run", "tests/suites/tiny.yaml", "--backend", "cpu", "--kernels",
			       "bad_k,cpu_flash,cpu_dense", "--param", "cpu_flash.block_q=8,16",
			       "--param",
			       "bad_k.p03_34567890123456789012345678901234567890123456789012345678901=1,2",
			       "--where", "q_len == 16 and mask == none", "--dump", dir, "--db", db,
			       "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "run: status %d\n%s", r.status, r.err); /* bad_k writes nothing */
	fa_proc_free(&r);
	static const char *const names[] = {
		"cpu_flash[block_q=8,block_k=64]", "cpu_flash[block_q=16,block_k=64]", "cpu_dense",
		"bad_k[#1]", "bad_k[#2]"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(f, sizeof f, "%s/case0000_out_%s.npy", dir, names[i]);
		FA_CHECKF(access(f, R_OK) == 0, "no %s", f);
	}
	snprintf(f, sizeof f, "%s/case0000_out_cpu_flash.npy", dir);
	FA_CHECK(access(f, F_OK) != 0);
}

FA_TEST(plugins, plugin_error_codes_in_words)
{
	char db[1100];
	FA_REQUIRE(run_bad_k("kerr", "kerr.db", db, sizeof db) == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'bad_k' AND "
			   "status = 'error' AND reason LIKE '%bad library status 1%'") == 2);
}

/* A version 2 kernel plugin loads and its kernel is a forward one, whatever
 * lies past its record's version 2 size; a backward kernel whose forward
 * does not write the LSE, or is not loaded, gets an error result naming it. */
FA_TEST(plugins, version_2_kernels_and_backward_forwards)
{
	char so[1100], plug[1200], db[1100], *env[] = {plug, NULL};
	struct fa_proc_result r;
	FA_REQUIRE(run_bad_k("kv2", "kv2.db", db, sizeof db) == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'bad_k' AND "
			   "status = 'fail' AND reason LIKE '%unwritten%'") == 2);

	snprintf(so, sizeof so, "%s/libbad-kbwd.so", abi_dir());
	snprintf(plug, sizeof plug, "FABENCH_PLUGINS=%s", so);
	snprintf(db, sizeof db, "%s/kbwd.db", fa_test_tmpdir());
	unlink(db);
	fa_proc_run((char *[]){"run", "tests/suites/bwd.yaml", "--backend", "cpu", "--kernels",
			       "bad_k,bad_m", "--where", "q_len == 16", "--db", db, "--quiet", NULL},
		    env, 120, &r);
	FA_CHECKF(r.status == 1, "run: status %d\n%s\n%s", r.status, r.out, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'bad_k' AND "
			   "status = 'error' AND reason = 'forward kernel ''bad_f'' of ''bad_k'' "
			   "does not write the LSE'") == 4);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM results WHERE kernel = 'bad_m' AND "
			   "status = 'error' AND reason = 'forward kernel ''no_such_forward'' of "
			   "''bad_m'' is not loaded'") == 4);
}

FA_TEST(plugins, kernel_records_are_checked)
{
	static const int32_t allowed[] = {1, 2};
	struct fa_kernel_param par = {"tile", 1, allowed, 0, 0, 0, NULL};
	struct fa_kernel k;
	const char *miss;
	char what[256];
	memset(&k, 0, sizeof k);
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) && strcmp(miss, "name") == 0);
	k.name = "ok_name";
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) && strcmp(miss, "launch") == 0);
	k.launch = (int (*)(const struct fa_launch_args *))1; /* never called */
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) && strcmp(miss, "dtypes") == 0);
	k.dtypes = 1u << FA_DTYPE_FP16;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) && !miss &&
		 strcmp(what, "head_dim range 0..0 is empty or below 1") == 0);
	k.head_dim_min = 1;
	k.head_dim_max = 64;
	FA_CHECK(fa_kernel_validate(&k, &miss, what, sizeof what));
	k.name = "bad name";
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "name 'bad name' has ' ': use letters, digits, '_', '-' and '.'") == 0);
	k.name = "ok";
	k.dtypes = 1u << 5;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "dtypes 0x20 has bits of no known dtype") == 0);
	k.dtypes = 1;
	k.n_params = 1;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) && strcmp(miss, "params") == 0);
	k.params = &par;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "param 'tile' has allowed values but n_allowed 0") == 0);
	par.n_allowed = 2;
	FA_CHECK(fa_kernel_validate(&k, &miss, what, sizeof what));
	/* the default is a value the param takes */
	par.default_value = 3;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "param 'tile' has default 3, not one of its allowed values") == 0);
	par.allowed = NULL;
	par.min_value = 4;
	par.max_value = 8;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "param 'tile' has default 3 outside its range 4..8") == 0);
	par.max_value = 2;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "param 'tile' has the empty range 4..2") == 0);
	par.min_value = 3;
	par.max_value = 3;
	FA_CHECK(fa_kernel_validate(&k, &miss, what, sizeof what));
	par.allowed = allowed;
	par.default_value = 1;
	par.name = "a.b";
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "param name 'a.b' has '.': use letters, digits and '_'") == 0);
	/* a param name is not a number, is at most 63 characters, and is once
	 * in its kernel */
	par.name = "2d";
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "param name '2d' starts with a digit: begin with a letter or '_'") == 0);
	par.name = "_2d";
	FA_CHECK(fa_kernel_validate(&k, &miss, what, sizeof what));
	par.name = "p23456789012345678901234567890123456789012345678901234567890123";
	FA_CHECK(fa_kernel_validate(&k, &miss, what, sizeof what));
	par.name = "p234567890123456789012345678901234567890123456789012345678901234";
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "param name 'p234567890123456789012345678901234567890123456789012345678901234"
			      "...' is longer than 63 characters") == 0);
	struct fa_kernel_param two[3] = {par, par, par};
	two[0].name = "tile";
	two[1].name = "tiles";
	two[2].name = "tile";
	k.params = two;
	k.n_params = 3;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "params 0 and 2 are both named 'tile'") == 0);
	k.params = &par;
	par.name = "tile";
	k.n_params = FA_KERNEL_MAX_PARAMS + 1;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "n_params 17 outside 0..16") == 0);
	k.n_params = 0;
	/* version 3: the pass, read only when struct_size covers it */
	k.pass = 5;
	FA_CHECK(fa_kernel_validate(&k, &miss, what, sizeof what)); /* struct_size 0: version 1 */
	k.struct_size = sizeof k;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "pass 5 is neither FA_PASS_FWD nor FA_PASS_BWD") == 0);
	k.pass = FA_PASS_BWD;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) && strcmp(miss, "fwd_kernel") == 0);
	k.fwd_kernel = "ok_fwd";
	FA_CHECK(fa_kernel_validate(&k, &miss, what, sizeof what) && fa_kernel_pass(&k) == FA_PASS_BWD);
	k.struct_size = (uint32_t)offsetof(struct fa_kernel, pass);
	FA_CHECK(fa_kernel_pass(&k) == FA_PASS_FWD && !fa_kernel_fwd_name(&k));
	k.struct_size = 0;
	k.pass = FA_PASS_FWD;
	k.fwd_kernel = NULL;
	k.n_head_dims = 2;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) && strcmp(miss, "head_dims") == 0);
	k.n_head_dims = 0;
	k.score_bytes = -1;
	FA_CHECK(!fa_kernel_validate(&k, &miss, what, sizeof what) &&
		 strcmp(what, "score_bytes -1 is negative") == 0);
}

FA_TEST(plugins, launch_args_carry_version_and_stream)
{
	struct fa_registry reg;
	struct fa_err err;
	struct fa_launch_args a;
	struct fa_problem p;
	fa_err_clear(&err);
	FA_REQUIRE(fa_registry_load(&reg, NULL, &err) == FA_OK);
	memset(&a, 0x5a, sizeof a);
	fa_backend_launch_args_init(&reg.slots[0], &a);
	FA_CHECK(a.struct_size == sizeof a && a.stream == NULL && a.q == NULL);
	FA_CHECK(a.backend_ctx == reg.slots[0].be.context);
	FA_CHECK(reg.slots[0].be.api_version == FA_BACKEND_API_VERSION);
	fa_registry_free(&reg);
	memset(&p, 0, sizeof p);
	p.batch = p.heads = p.kv_heads = p.q_len = p.kv_len = p.total_q = p.total_k = 1;
	p.head_dim = p.head_dim_v = 8;
	fa_problem_set_strides(&p);
	FA_CHECK(p.struct_size == sizeof p);
}

/* A path in a colon-separated list (FABENCH_PLUGINS) or in run --ab's
 * "A:B" may hold ':' itself: the entry is the shortest text up to a colon
 * that exists on disk, and --ab splits where both sides exist. */
FA_TEST(plugins, path_lists_with_colons)
{
	char dir[1024], x[1100], xy[2100], y[1100], list[4096], got[1100], a[2100], b[2100];
	size_t pos = 0;
	snprintf(dir, sizeof dir, "%s/colon:dir", fa_test_tmpdir());
	FA_REQUIRE(mkdir(dir, 0777) == 0 || errno == EEXIST);
	snprintf(x, sizeof x, "%s/a:b.so", dir);
	snprintf(y, sizeof y, "%s/c.so", dir);
	FA_REQUIRE(fa_test_write_file(x, "x") == 0 && fa_test_write_file(y, "y") == 0);

	/* a list of three: a path with two colons, an empty entry, a missing
	 * one (kept as written, up to its first colon) and a plain one */
	snprintf(list, sizeof list, "%s::/no/such:%s", x, y);
	FA_CHECK(fa_path_list_next(list, &pos, got, sizeof got) == 1 && strcmp(got, x) == 0);
	FA_CHECKF(fa_path_list_next(list, &pos, got, sizeof got) == 1 &&
			  strcmp(got, "/no/such") == 0,
		  "got '%s'", got);
	FA_CHECK(fa_path_list_next(list, &pos, got, sizeof got) == 1 && strcmp(got, y) == 0);
	FA_CHECK(fa_path_list_next(list, &pos, got, sizeof got) == 0);
	pos = 0;
	FA_CHECK(fa_path_list_next("", &pos, got, sizeof got) == 0);

	/* --ab: the one colon where both sides exist */
	snprintf(list, sizeof list, "%s:%s", x, y);
	FA_CHECK(fa_split_path_pair(list, a, sizeof a, b, sizeof b) == 0 && strcmp(a, x) == 0 &&
		 strcmp(b, y) == 0);
	snprintf(list, sizeof list, "%s:%s", y, x);
	FA_CHECK(fa_split_path_pair(list, a, sizeof a, b, sizeof b) == 0 && strcmp(a, y) == 0 &&
		 strcmp(b, x) == 0);
	/* neither side exists: at the first colon, for the message that follows */
	FA_CHECK(fa_split_path_pair("old.so:new.so", a, sizeof a, b, sizeof b) == 0 &&
		 strcmp(a, "old.so") == 0 && strcmp(b, "new.so") == 0);
	FA_CHECK(fa_split_path_pair("old.so", a, sizeof a, b, sizeof b) == -1);
	/* two colons that both split into existing paths: ambiguous. With D
	 * the folder: "D/p" + "D/q:Makefile", and "D/p:D/q" + "Makefile" (the
	 * tests run in the source tree) */
	snprintf(xy, sizeof xy, "%s/p", dir);
	FA_REQUIRE(fa_test_write_file(xy, "p") == 0);
	snprintf(xy, sizeof xy, "%s/q:Makefile", dir);
	FA_REQUIRE(fa_test_write_file(xy, "q") == 0);
	snprintf(xy, sizeof xy, "%s/p:%s", dir, dir);
	FA_REQUIRE(fa_mkdir_p(xy) == 0);
	snprintf(xy, sizeof xy, "%s/p:%s/q", dir, dir);
	FA_REQUIRE(fa_test_write_file(xy, "pq") == 0);
	snprintf(list, sizeof list, "%s/p:%s/q:Makefile", dir, dir);
	FA_CHECK(fa_split_path_pair(list, a, sizeof a, b, sizeof b) == -1);
}

/* Asking what a plugin file is leaves it loaded: a build with GPU code that
 * was closed and opened again could not launch (run --ab of two CUDA
 * builds hung, or failed with cudaErrorInvalidKernelImage, on an H200). */
FA_TEST(plugins, probing_a_plugin_keeps_it_loaded)
{
	char copy[1100];
	const char *p = getenv("FABENCH_TEST_PLUGIN");
	snprintf(copy, sizeof copy, "%s/libprobe-copy.so", fa_test_tmpdir());
	FA_REQUIRE(fa_test_copy_file(p ? p : "build/libfabench-test.so", copy) == 0);
	FA_REQUIRE(dlopen(copy, RTLD_NOW | RTLD_NOLOAD) == NULL);
	FA_CHECK(fa_plugin_file_is_kernel_plugin(copy) == 0); /* a backend plugin */
	void *dl = dlopen(copy, RTLD_NOW | RTLD_NOLOAD);
	FA_CHECK(dl != NULL);
	if (dl)
		dlclose(dl);
}
