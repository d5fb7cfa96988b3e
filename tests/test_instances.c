/* test_instances.c - tools/gen-instances, the one list of the tensor-core
 * kernel's instances: the committed files (instances/flash_mma_*.cu and
 * flash_mma_instances.h) are what the list makes, and --check, run on an
 * edited copy of the tree, fails naming each stale, missing or extra file;
 * a new instance is one line of the list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test.h"

/* Runs cmd (through sh; paths only, no outside text) with stderr joined to
 * stdout; returns its exit status (-1 when it could not run) and its output
 * in out. */
static int run_sh(const char *cmd, char *out, size_t out_size)
{
	char full[4096];
	FILE *p;
	size_t n = 0;
	int st;
	snprintf(full, sizeof full, "{ %s; } 2>&1", cmd);
	out[0] = '\0';
	if (!(p = popen(full, "r")))
		return -1;
	while (n + 1 < out_size) {
		size_t got = fread(out + n, 1, out_size - 1 - n, p);
		if (got == 0)
			break;
		n += got;
	}
	out[n] = '\0';
	st = pclose(p);
	return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Whether python3 is here (tools/ensure-deps installs it). */
static int have_python(void)
{
	char out[256];
	return run_sh("command -v python3", out, sizeof out) == 0;
}

/* The copy of the generator and of what it writes under tmp/tree. */
static int make_copy(char *tree, size_t size)
{
	char cmd[4096], out[1024];
	snprintf(tree, size, "%s/tree", fa_test_tmpdir());
	snprintf(cmd, sizeof cmd,
		 "rm -rf '%s' && mkdir -p '%s/tools' '%s/kernels/cuda' && "
		 "cp '%s/tools/gen-instances' '%s/tools/' && "
		 "cp -r '%s/kernels/cuda/instances' '%s/kernels/cuda/flash_mma_instances.h' "
		 "'%s/kernels/cuda/'",
		 tree, tree, tree, fa_test_root(), tree, fa_test_root(), fa_test_root(), tree);
	return run_sh(cmd, out, sizeof out);
}

FA_TEST(instances, committed_files_match_the_list)
{
	char cmd[2048], out[4096];
	FA_REQUIRE(have_python()); /* tools/ensure-deps installs python3 */
	snprintf(cmd, sizeof cmd, "'%s/tools/gen-instances' --check", fa_test_root());
	FA_CHECKF(run_sh(cmd, out, sizeof out) == 0,
		  "the committed instance files are not what tools/gen-instances writes: %s", out);
	FA_CHECKF(out[0] == '\0', "--check printed '%s'", out);
	snprintf(cmd, sizeof cmd, "'%s/tools/gen-instances' --bogus", fa_test_root());
	FA_CHECK(run_sh(cmd, out, sizeof out) == 2);
	FA_CHECKF(strstr(out, "gen-instances: unknown option '--bogus'") != NULL, "'%s'", out);
	snprintf(cmd, sizeof cmd, "'%s/tools/gen-instances' --help", fa_test_root());
	FA_CHECK(run_sh(cmd, out, sizeof out) == 0);
	FA_CHECKF(strstr(out, "gen-instances - the one list of the tensor-core") == out &&
			  strstr(out, "--check   write nothing"),
		  "'%s'", out);
}

FA_TEST(instances, check_names_stale_missing_and_extra_files)
{
	char tree[1024], cmd[4096], out[4096];
	FA_REQUIRE(have_python()); /* tools/ensure-deps installs python3 */
	FA_REQUIRE(make_copy(tree, sizeof tree) == 0);
	snprintf(cmd, sizeof cmd, "'%s/tools/gen-instances' --check", tree);
	FA_CHECKF(run_sh(cmd, out, sizeof out) == 0, "the fresh copy: %s", out);

	/* an instance edited by hand, one deleted, one nobody lists, and the
	 * header's list edited */
	snprintf(cmd, sizeof cmd,
		 "cd '%s/kernels/cuda' && echo '// edited' >> instances/flash_mma_d128.cu && "
		 "rm instances/flash_mma_d64_any.cu && cp instances/flash_mma_d80.cu "
		 "instances/flash_mma_d48.cu && sed -i 's/X(d96, 96, 96/X(d96, 96, 64/' "
		 "flash_mma_instances.h",
		 tree);
	FA_REQUIRE(run_sh(cmd, out, sizeof out) == 0);
	snprintf(cmd, sizeof cmd, "'%s/tools/gen-instances' --check", tree);
	FA_CHECK(run_sh(cmd, out, sizeof out) == 1);
	FA_CHECKF(strstr(out, "gen-instances: out of date (run tools/gen-instances): ") != NULL,
		  "'%s'", out);
	FA_CHECKF(strstr(out, "kernels/cuda/instances/flash_mma_d128.cu,") != NULL, "'%s'", out);
	FA_CHECKF(strstr(out, "kernels/cuda/instances/flash_mma_d64_any.cu (missing)") != NULL,
		  "'%s'", out);
	FA_CHECKF(strstr(out, "kernels/cuda/instances/flash_mma_d48.cu (not in the list)") != NULL,
		  "'%s'", out);
	FA_CHECKF(strstr(out, "kernels/cuda/flash_mma_instances.h") != NULL, "'%s'", out);
	FA_CHECKF(strstr(out, "flash_mma_d80.cu") == NULL, "an unchanged file named: '%s'", out);

	/* the generator puts it all back, and then --check passes */
	snprintf(cmd, sizeof cmd, "'%s/tools/gen-instances'", tree);
	FA_CHECKF(run_sh(cmd, out, sizeof out) == 0, "%s", out);
	FA_CHECKF(strstr(out, "removed stale kernels/cuda/instances/flash_mma_d48.cu") != NULL,
		  "'%s'", out);
	snprintf(cmd, sizeof cmd, "'%s/tools/gen-instances' --check", tree);
	FA_CHECKF(run_sh(cmd, out, sizeof out) == 0, "after regenerating: %s", out);
}

FA_TEST(instances, new_head_size_is_one_line)
{
	char tree[1024], cmd[4096], out[4096], path[1200];
	char *text;
	FA_REQUIRE(have_python()); /* tools/ensure-deps installs python3 */
	FA_REQUIRE(make_copy(tree, sizeof tree) == 0);
	/* one line after the d256_any instance: an ANY instance of width 144 */
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && sed -i '/name=\"d256_any\"/a\\    dict(name=\"d144_any\", d=144, "
		 "dv=144, bm=128, bn=64, bnc=64, nw=8, st=3, qreg=1, mode=\"ANY\", dreal=0, "
		 "minb=1),' tools/gen-instances && tools/gen-instances --check; echo \"rc $?\"",
		 tree);
	FA_REQUIRE(run_sh(cmd, out, sizeof out) == 0);
	FA_CHECKF(strstr(out, "flash_mma_d144_any.cu (missing)") != NULL && strstr(out, "rc 1"),
		  "'%s'", out);
	snprintf(cmd, sizeof cmd, "'%s/tools/gen-instances'", tree);
	FA_CHECKF(run_sh(cmd, out, sizeof out) == 0, "%s", out);
	/* the instance file, its prototypes and its row of the table's list */
	snprintf(path, sizeof path, "%s/kernels/cuda/instances/flash_mma_d144_any.cu", tree);
	text = fa_test_read_file(path, NULL);
	FA_CHECKF(text && strstr(text, "fa_mma::config<144, 144, 128, 64, 64, 8, 3, true, "
				       "fa_mma::LOAD_ANY, 0, 1>") &&
			  strstr(text, "extern \"C\" int fa_cuda_mma_launch_d144_any("),
		  "%s", text ? text : "(missing)");
	free(text);
	snprintf(path, sizeof path, "%s/kernels/cuda/flash_mma_instances.h", tree);
	text = fa_test_read_file(path, NULL);
	FA_CHECKF(text && strstr(text, "int fa_cuda_mma_launch_d144_any(const struct fa_launch_args *a);") &&
			  strstr(text, "size_t fa_cuda_mma_workspace_d144_any(") &&
			  strstr(text, "\tX(d144_any, 144, 144, FA_MMA_ANY, 0)"),
		  "%s", text ? text : "(missing)");
	free(text);

	/* the list's own rules: a width the shared-memory tiles cannot hold */
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && sed -i 's/name=\"d144_any\", d=144, dv=144/name=\"d144_any\", d=112, "
		 "dv=112/' tools/gen-instances && tools/gen-instances",
		 tree);
	FA_CHECK(run_sh(cmd, out, sizeof out) == 1);
	FA_CHECKF(strstr(out, "gen-instances: instance d144_any: d 112 is not a tile width") != NULL,
		  "'%s'", out);
}
