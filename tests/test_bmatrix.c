/* test_bmatrix.c - `fabench build-matrix`: the parsers of the compilers'
 * outputs on captured samples (tests/bmatrix/), real compiles of a small
 * CUDA and HIP source where the compilers are installed, compilers that are
 * missing (skipped, not failed), and the regression gate on a fixture
 * database (a new spill, lost HMMA, a unit that stopped compiling). */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "fixture.h"
#include "proc.h"
#include "test.h"
#include "../harness/base/util.h"
#include "../harness/report/buildreport.h"
#include "../harness/run/buildmatrix.h"
#include "../harness/run/isa.h"
#include "../harness/store/buildstore.h"
#include "../harness/store/store.h"

static char *fixture(const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/tests/bmatrix/%s", fa_test_root(), name);
	return fa_test_read_file(path, NULL);
}

static const struct fa_isa_kernel *find(const struct fa_isa *isa, const char *symbol)
{
	for (int i = 0; i < isa->n; i++)
		if (strcmp(isa->k[i].symbol, symbol) == 0)
			return &isa->k[i];
	return NULL;
}

/* ---- Parsers ----------------------------------------------------------------- */

FA_TEST(bmatrix, ptxas_resources)
{
	char *log = fixture("ptxas-sm90a.txt");
	struct fa_isa isa = {0};
	const struct fa_isa_kernel *k;
	FA_REQUIRE(log);
	FA_REQUIRE(fa_isa_parse_ptxas(&isa, log) == 0);
	FA_CHECK(isa.n == 5);
	k = find(&isa, "_Z12spill_kernelPKfPfi");
	FA_REQUIRE(k);
	FA_CHECK(k->regs == 32);
	FA_CHECK(k->scratch_bytes == 720);
	FA_CHECK(k->spill_bytes == 848);
	FA_CHECK(k->shared_bytes == 0);
	FA_CHECK(k->sgprs == -1 && k->spill_regs == -1);
	FA_CHECK(k->matrix_count == -1); /* ptxas says nothing of instructions */
	k = find(&isa, "_Z7bm_smemILi256EEvPKfPf");
	FA_REQUIRE(k);
	FA_CHECK(k->regs == 12 && k->shared_bytes == 1024 && k->spill_bytes == 0);
	k = find(&isa, "bm_mma");
	FA_REQUIRE(k);
	FA_CHECK(k->regs == 18 && k->scratch_bytes == 0);
	k = find(&isa, "_ZN46_GLOBAL__N__f1bdc2cb_13_flash_simt_cu_0c6143879fs_kernelILi256ELi256EEEv10fa_"
		       "problemPKvS3_S3_PvPKiS6_S6_f");
	FA_REQUIRE(k);
	FA_CHECK(k->regs == 247);
	fa_isa_free(&isa);
	free(log);
}

FA_TEST(bmatrix, ptx_matrix)
{
	char *ptx = fixture("mma-sm90a.ptx");
	struct fa_isa isa = {0};
	const struct fa_isa_kernel *k;
	FA_REQUIRE(ptx);
	FA_REQUIRE(fa_isa_parse_ptx(&isa, ptx) == 0);
	FA_CHECK(isa.n == 2);
	k = find(&isa, "bm_mma");
	FA_REQUIRE(k);
	FA_CHECK(k->matrix_count == 1);
	FA_CHECK(strcmp(k->matrix, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == 0);
	FA_CHECK(k->from == FA_ISA_PTX);
	k = find(&isa, "_Z7bm_smemILi256EEvPKfPf");
	FA_REQUIRE(k);
	FA_CHECK(k->matrix_count == 0 && k->matrix[0] == '\0');
	fa_isa_free(&isa);
	free(ptx);
}

/* sass-sm90a.txt: real `cuobjdump -sass` of tests/bmatrix/mma.cu for sm_90a
 * (nvcc 13.0, captured on the H100 machine 2026-11-26) */
FA_TEST(bmatrix, sass_matrix)
{
	char *sass = fixture("sass-sm90a.txt");
	struct fa_isa isa = {0};
	const struct fa_isa_kernel *k;
	FA_REQUIRE(sass);
	FA_REQUIRE(fa_isa_parse_sass(&isa, sass) == 0);
	FA_CHECK(isa.n == 2);
	k = find(&isa, "bm_mma");
	FA_REQUIRE(k);
	FA_CHECK(k->matrix_count == 1);
	FA_CHECK(strcmp(k->matrix, "HMMA.16816.F32.BF16") == 0);
	FA_CHECK(k->from == FA_ISA_SASS);
	k = find(&isa, "_Z7bm_smemILi256EEvPKfPf");
	FA_REQUIRE(k);
	FA_CHECK(k->matrix_count == 0);
	fa_isa_free(&isa);
	free(sass);
}

/* sass-hand-wgmma.txt: written by hand in cuobjdump's layout (a predicated
 * HMMA, a kernel with HGMMA), for what mma.cu does not produce */
FA_TEST(bmatrix, sass_matrix_predicated_and_hgmma)
{
	char *sass = fixture("sass-hand-wgmma.txt");
	struct fa_isa isa = {0};
	const struct fa_isa_kernel *k;
	FA_REQUIRE(sass);
	FA_REQUIRE(fa_isa_parse_sass(&isa, sass) == 0);
	FA_CHECK(isa.n == 3);
	k = find(&isa, "bm_mma");
	FA_REQUIRE(k);
	FA_CHECK(k->matrix_count == 2); /* one of them predicated (@!P0) */
	FA_CHECK(strcmp(k->matrix, "HMMA.16816.F32.BF16") == 0);
	k = find(&isa, "wgmma_kernel");
	FA_REQUIRE(k);
	FA_CHECK(k->matrix_count == 2);
	FA_CHECK(strcmp(k->matrix, "HGMMA.64x128x16.F32.BF16") == 0);
	fa_isa_free(&isa);
	free(sass);
}

FA_TEST(bmatrix, amdgcn_resources_and_matrix)
{
	static const struct {
		const char *file;
		int vgpr, sgpr;
		const char *matrix;
	} want[] = {
		{"mfma-gfx90a.s", 6, 12, "v_mfma_f32_16x16x16bf16_1k"},
		{"mfma-gfx1201.s", 17, 8, "v_wmma_f32_16x16x16_bf16"},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char *s = fixture(want[i].file);
		struct fa_isa isa = {0};
		const struct fa_isa_kernel *k;
		FA_REQUIRE(s);
		FA_REQUIRE(fa_isa_parse_amdgcn(&isa, s) == 0);
		FA_CHECKF(isa.n == 1, "%s: %d kernels", want[i].file, isa.n);
		k = find(&isa, "_Z2mmPKsS0_Pf");
		FA_REQUIRE(k);
		FA_CHECKF(k->regs == want[i].vgpr && k->sgprs == want[i].sgpr, "%s: %d v %d s",
			  want[i].file, k->regs, k->sgprs);
		FA_CHECK(k->shared_bytes == 0 && k->scratch_bytes == 0 && k->spill_regs == 0);
		FA_CHECK(k->spill_bytes == -1);
		FA_CHECKF(k->matrix_count == 1 && strcmp(k->matrix, want[i].matrix) == 0,
			  "%s: %d '%s'", want[i].file, k->matrix_count, k->matrix);
		FA_CHECK(k->from == FA_ISA_AMDGCN);
		fa_isa_free(&isa);
		free(s);
	}
}

FA_TEST(bmatrix, amdgcn_metadata_fields)
{
	/* LDS, scratch and spills as clang writes them for a kernel that uses
	 * them (the captured kernel has none) */
	static const char s[] =
		"\t.text\n"
		"\t.type\tk2,@function\n"
		"k2:                                      ; @k2\n"
		"\tv_mfma_f32_32x32x8bf16_1k a[0:15], v[0:1], v[2:3], a[0:15]\n"
		"\tv_mfma_f32_32x32x8bf16_1k a[0:15], v[4:5], v[6:7], a[0:15]\n"
		"\tv_mfma_f32_16x16x16bf16_1k v[0:3], v[0:1], v[2:3], 0\n"
		".Lfunc_end0:\n"
		"other:\n"
		"\tv_wmma_f32_16x16x16_bf16 v[0:7], v[8:15], v[16:23], v[0:7]\n"
		"\t.amdgpu_metadata\n"
		"---\n"
		"amdhsa.kernels:\n"
		"  - .args:\n"
		"      - .name:           x\n"
		"        .offset:         0\n"
		"    .group_segment_fixed_size: 32768\n"
		"    .name:           k2\n"
		"    .private_segment_fixed_size: 144\n"
		"    .sgpr_count:     40\n"
		"    .sgpr_spill_count: 2\n"
		"    .vgpr_count:     128\n"
		"    .vgpr_spill_count: 5\n"
		"amdhsa.target:   amdgcn-amd-amdhsa--gfx90a\n"
		"...\n"
		"\t.end_amdgpu_metadata\n";
	struct fa_isa isa = {0};
	const struct fa_isa_kernel *k;
	FA_REQUIRE(fa_isa_parse_amdgcn(&isa, s) == 0);
	FA_CHECK(isa.n == 1); /* "other" is not a kernel */
	k = find(&isa, "k2");
	FA_REQUIRE(k);
	FA_CHECK(k->regs == 128 && k->sgprs == 40);
	FA_CHECK(k->shared_bytes == 32768 && k->scratch_bytes == 144 && k->spill_regs == 7);
	FA_CHECK(k->matrix_count == 3);
	FA_CHECK(strcmp(k->matrix, "v_mfma_f32_32x32x8bf16_1k v_mfma_f32_16x16x16bf16_1k") == 0);
	fa_isa_free(&isa);
}

FA_TEST(bmatrix, first_error_line)
{
	static const struct {
		const char *file, *want;
	} cases[] = {
		{"clang-gfx1201-error.txt",
		 "fatal error: error in backend: Cannot select: intrinsic "
		 "%llvm.amdgcn.wmma.f32.16x16x16.bf16"},
		{"clang-gfx90a-error.txt",
		 "/tmp/bm/bad.hip:6:19: error: '__builtin_amdgcn_wmma_f32_16x16x16_bf16_w32' needs "
		 "target feature gfx11-insts,wavefrontsize32"},
		{"nvcc-error.txt", "/tmp/bm/err.cu(1): error: identifier \"undefined_thing\" is undefined"},
	};
	char buf[512];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *log = fixture(cases[i].file);
		FA_REQUIRE(log);
		fa_isa_first_error(log, buf, sizeof buf);
		FA_CHECKF(strcmp(buf, cases[i].want) == 0, "%s: '%s'", cases[i].file, buf);
		free(log);
	}
	/* -Werror in a warning is not an error line; the first line otherwise */
	fa_isa_first_error("x.cu(3): warning: unused [-Werror=unused]\n  ptxas fatal   : bad\n", buf,
			   sizeof buf);
	FA_CHECK(strcmp(buf, "ptxas fatal   : bad") == 0);
	fa_isa_first_error("\n  Segmentation fault  \n", buf, sizeof buf);
	FA_CHECK(strcmp(buf, "Segmentation fault") == 0);
	fa_isa_first_error("", buf, sizeof buf);
	FA_CHECK(buf[0] == '\0');
}

FA_TEST(bmatrix, short_names)
{
	static const char *const cases[][2] = {
		{"void (anonymous namespace)::fs_kernel<256, 256>(fa_problem, void const*, float)",
		 "fs_kernel<256, 256>"},
		{"void bm_smem<256>(float const*, float*)", "bm_smem<256>"},
		{"bm_mma", "bm_mma"},
		{"mm(short const*, short const*, float*)", "mm"},
		{"void fa::flash<(fa_mask)1>(fa_args)", "fa::flash<(fa_mask)1>"},
	};
	char buf[256];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fa_isa_short_name(cases[i][0], buf, sizeof buf);
		FA_CHECKF(strcmp(buf, cases[i][1]) == 0, "'%s' -> '%s'", cases[i][0], buf);
	}
}

/* ---- Real compiles ----------------------------------------------------------- */

static int have(const char *name, const char *fallback)
{
	char path[1024];
	return fa_find_program(name, path, sizeof path) == 0 ||
	       (fallback && fa_find_program(fallback, path, sizeof path) == 0);
}

static void db_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", fa_test_tmpdir(), name);
	remove(buf);
}

FA_TEST(bmatrix, compile_cuda)
{
	char db[1024], sql[512];
	struct fa_proc_result r;
	if (!have("nvcc", "/usr/local/cuda/bin/nvcc")) {
		fa_test_skip("nvcc not found");
		return;
	}
	db_path(db, sizeof db, "cuda.db");
	char *argv[] = {"build-matrix", "--source", "tests/bmatrix/mma.cu", "--targets", "sm_80",
			"--db", db, NULL};
	fa_proc_run(argv, NULL, 300, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "[1/1] ok      sm_80    tests/bmatrix/mma.cu: 2 kernels") != NULL);
	FA_CHECK(strstr(r.out, "| bm_mma ") != NULL);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT status = 'complete' FROM build_runs") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE symbol IS NULL "
				    "AND status = 'ok' AND arch = 'sm_80'") == 1);
	snprintf(sql, sizeof sql, "SELECT matrix_count FROM build_results WHERE symbol = 'bm_mma'");
	FA_CHECK(fa_test_db_int(db, sql) >= 1);
	FA_CHECK(fa_test_db_int(db, "SELECT regs > 0 FROM build_results WHERE symbol = 'bm_mma'") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT shared_bytes FROM build_results WHERE name = "
				    "'bm_smem<256>'") == 1024);
	FA_CHECK(fa_test_db_int(db, "SELECT matrix_count FROM build_results WHERE name = "
				    "'bm_smem<256>'") == 0);
	FA_CHECK(fa_test_db_int(db, "SELECT spill_bytes FROM build_results WHERE name = "
				    "'bm_smem<256>'") == 0);
}

FA_TEST(bmatrix, compile_hip)
{
	char db[1024];
	struct fa_proc_result r;
	if (!have("clang++-19", NULL)) {
		fa_test_skip("clang++-19 not found");
		return;
	}
	db_path(db, sizeof db, "hip.db");
	/* wmma-gfx11.hip fails on gfx1201 in the back end and on gfx942 in the
	 * front end: the run stores both and exits 1 */
	char *argv[] = {"build-matrix", "--source", "tests/bmatrix/mfma.hip", "--source",
			"tests/bmatrix/wmma-gfx11.hip", "--targets", "gfx942,gfx1100,gfx1201",
			"--db", db, "--quiet", "--format", "csv", NULL};
	fa_proc_run(argv, NULL, 300, &r);
	FA_CHECKF(r.status == 1, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "fabench build-matrix: 2 compiles failed") != NULL);
	FA_CHECK(strncmp(r.out, "build_id,source,arch,", 21) == 0);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE symbol IS NULL") == 6);
	FA_CHECK(fa_test_db_int(db, "SELECT matrix LIKE 'v_mfma_f32_16x16x16%' FROM build_results "
				    "WHERE source = 'tests/bmatrix/mfma.hip' AND arch = 'gfx942' "
				    "AND symbol IS NOT NULL") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT matrix LIKE 'v_wmma_%' FROM build_results WHERE "
				    "source = 'tests/bmatrix/mfma.hip' AND arch = 'gfx1201' AND "
				    "symbol IS NOT NULL") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT vgpr > 0 FROM (SELECT regs AS vgpr FROM build_results "
				    "WHERE arch = 'gfx1100' AND symbol IS NOT NULL LIMIT 1)") == 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE source = "
				    "'tests/bmatrix/wmma-gfx11.hip' AND arch = 'gfx1100' AND "
				    "status = 'ok' AND symbol IS NOT NULL AND matrix_count = 1") == 1);
	char *e = fa_test_db_text(db, "SELECT error FROM build_results WHERE source = "
				      "'tests/bmatrix/wmma-gfx11.hip' AND arch = 'gfx1201'");
	FA_CHECKF(strstr(e, "Cannot select: intrinsic %llvm.amdgcn.wmma") != NULL, "'%s'", e);
	free(e);
	e = fa_test_db_text(db, "SELECT error FROM build_results WHERE source = "
				"'tests/bmatrix/wmma-gfx11.hip' AND arch = 'gfx942'");
	FA_CHECKF(strstr(e, "needs target feature") != NULL, "'%s'", e);
	free(e);
}

FA_TEST(bmatrix, missing_compilers_skip)
{
	char db[1024];
	struct fa_proc_result r;
	db_path(db, sizeof db, "skip.db");
	char *argv[] = {"build-matrix", "--source", "tests/bmatrix/mma.cu", "--source",
			"tests/bmatrix/mfma.hip", "--targets", "sm_80,sm_90a,gfx1201", "--nvcc",
			"/nonexistent/nvcc", "--clang", "no-such-clang++", "--db", db, NULL};
	fa_proc_run(argv, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "build-matrix: cuda: 2 compiles skipped: /nonexistent/nvcc not "
			       "found") != NULL);
	FA_CHECK(strstr(r.err, "build-matrix: hip: 1 compile skipped: no-such-clang++ not found") !=
		 NULL);
	FA_CHECK(strstr(r.out, "- cuda, 2 compiles: /nonexistent/nvcc not found") != NULL);
	FA_CHECK(strstr(r.out, "| (no kernels) | mma.cu   |         | skipped | skipped |") != NULL);
	FA_CHECK(strstr(r.out, "| (no kernels) | mfma.hip | skipped |         |         |") != NULL);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE status = 'skipped'") ==
		 3);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE status != 'skipped'") ==
		 0);
}

/* The default targets are the plugin's: sm_80 and sm_90a, not sm_90 (every
 * compute capability 9.0 device runs sm_90a code), which --targets still
 * compiles. Without compilers every job is stored skipped, with its arch. */
FA_TEST(bmatrix, default_targets_leave_sm90_out)
{
	char db[1024];
	struct fa_proc_result r;
	db_path(db, sizeof db, "targets.db");
	char *argv[] = {"build-matrix", "--source", "tests/bmatrix/mma.cu", "--source",
			"tests/bmatrix/mfma.hip", "--nvcc", "/nonexistent/nvcc", "--clang",
			"no-such-clang++", "--db", db, "--quiet", NULL};
	fa_proc_run(argv, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	char *archs = fa_test_db_text(db, "SELECT group_concat(arch, ' ') FROM (SELECT arch FROM "
					  "build_results WHERE family = 'cuda' ORDER BY arch)");
	FA_CHECKF(archs && strcmp(archs, "sm_80 sm_90a") == 0, "cuda targets '%s'", archs);
	free(archs);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE family = 'hip'") == 5);
	char *argv2[] = {"build-matrix", "--source", "tests/bmatrix/mma.cu", "--targets",
			 "sm_90,sm_90a", "--nvcc", "/nonexistent/nvcc", "--db", db, "--quiet", NULL};
	fa_proc_run(argv2, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE arch = 'sm_90' AND "
			   "build_id = (SELECT max(id) FROM build_runs)") == 1);
}

/* ---- The gate ---------------------------------------------------------------- */

/* A job of a fixture: source x arch with its status and kernels. */
static void add_job(struct fa_store *s, int64_t id, const char *source, const char *arch,
		    int status, const char *error, int n, const struct fa_isa_kernel *ks)
{
	struct fa_bm_job j;
	struct fa_err err;
	memset(&j, 0, sizeof j);
	snprintf(j.source, sizeof j.source, "%s", source);
	j.arch = arch;
	j.family = arch[0] == 's' ? FA_BM_CUDA : FA_BM_HIP;
	snprintf(j.compiler, sizeof j.compiler, "%s", arch[0] == 's' ? "nvcc" : "clang++-19");
	j.status = status;
	snprintf(j.error, sizeof j.error, "%s", error ? error : "");
	j.compile_s = 1.5;
	for (int i = 0; i < n; i++) {
		struct fa_isa_kernel *k = fa_isa_kernel(&j.isa, ks[i].symbol, strlen(ks[i].symbol));
		char *sym = k->symbol;
		*k = ks[i];
		k->symbol = sym;
	}
	fa_err_clear(&err);
	FA_CHECKF(fa_build_add(s, id, &j, &err) == FA_OK, "%s", err.msg);
	fa_isa_free(&j.isa);
}

static struct fa_isa_kernel kern(const char *sym, int regs, long spill, long scratch, int mma,
				 const char *matrix)
{
	struct fa_isa_kernel k;
	memset(&k, 0, sizeof k);
	k.symbol = (char *)sym;
	k.regs = regs;
	k.sgprs = -1;
	k.shared_bytes = 0;
	k.scratch_bytes = scratch;
	k.spill_bytes = spill;
	k.spill_regs = -1;
	k.matrix_count = mma;
	snprintf(k.matrix, sizeof k.matrix, "%s", matrix);
	k.from = FA_ISA_SASS;
	return k;
}

/* base: two units ok; head: the same with bm_mma's HMMA gone, a new spill
 * in k2 and flash.cu failing for sm_80; skip: every unit skipped. */
static int build_gate_db(const char *path, int which)
{
	struct fa_store *s = NULL;
	struct fa_err err;
	int64_t id;
	struct fa_build_info bi = {"abc", 0, "host", NULL, "build-matrix", "0", "nvcc=nvcc"};
	fa_err_clear(&err);
	if (fa_fixture_create(path, &s, &err) != FA_OK)
		return -1;
	for (int w = 0; w < 3; w++) {
		if (which >= 0 && w != which)
			continue;
		bi.label = w == 0 ? "base" : w == 1 ? "head" : "skip";
		if (fa_build_begin(s, &bi, &id, &err) != FA_OK)
			break;
		if (w == 2) {
			add_job(s, id, "kernels/cuda/mma.cu", "sm_90a", FA_BM_SKIPPED,
				"nvcc not found", 0, NULL);
			add_job(s, id, "kernels/cuda/flash.cu", "sm_80", FA_BM_SKIPPED,
				"nvcc not found", 0, NULL);
		} else {
			struct fa_isa_kernel ks[2] = {
				kern("bm_mma", 40, 0, 0, w == 0 ? 8 : 0,
				     w == 0 ? "HMMA.16816.F32.BF16" : ""),
				kern("_Z2k2v", 64, w == 0 ? 0 : 64, w == 0 ? 0 : 64, 0, ""),
			};
			struct fa_isa_kernel fk = kern("flash_kernel", 128, 0, 0, 16, "HMMA.16816.F32");
			add_job(s, id, "kernels/cuda/mma.cu", "sm_90a", FA_BM_OK, NULL, 2, ks);
			if (w == 0)
				add_job(s, id, "kernels/cuda/flash.cu", "sm_80", FA_BM_OK, NULL, 1, &fk);
			else
				add_job(s, id, "kernels/cuda/flash.cu", "sm_80", FA_BM_FAILED,
					"flash.cu(12): error: identifier \"x\" is undefined", 0, NULL);
		}
		if (fa_build_end(s, id, &err) != FA_OK)
			break;
	}
	fa_store_close(s);
	return err.rc == FA_OK ? 0 : -1;
}

FA_TEST(bmatrix, gate_regressions)
{
	char db[1024], ref_db[1024];
	struct fa_proc_result r;
	db_path(db, sizeof db, "gate.db");
	db_path(ref_db, sizeof ref_db, "gate-ref.db");
	FA_REQUIRE(build_gate_db(db, -1) == 0);
	FA_REQUIRE(build_gate_db(ref_db, 0) == 0);

	char *argv[] = {"build-matrix", "--report", "--run", "head", "--fail-on", "base", "--db",
			db, NULL};
	fa_proc_run(argv, NULL, 60, &r);
	FA_CHECKF(r.status == 1, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "regression: kernels/cuda/flash.cu for sm_80: stopped compiling: "
			       "flash.cu(12): error: identifier \"x\" is undefined") != NULL);
	FA_CHECK(strstr(r.err, "regression: kernels/cuda/mma.cu for sm_90a: _Z2k2v: spill stores 0 "
			       "-> 64 bytes") != NULL);
	FA_CHECK(strstr(r.err, "regression: kernels/cuda/mma.cu for sm_90a: _Z2k2v: scratch 0 -> 64 "
			       "bytes") != NULL);
	FA_CHECK(strstr(r.err, "regression: kernels/cuda/mma.cu for sm_90a: bm_mma: matrix "
			       "instructions gone (8 HMMA.16816.F32.BF16 -> none)") != NULL);
	FA_CHECK(strstr(r.err, "fabench build-matrix: 4 regressions against build-matrix run 1 "
			       "('base')") != NULL);
	/* the grid of head: FAILED in flash.cu's column, the spill in k2's cell */
	FA_CHECK(strstr(r.out, "| (no kernels) | flash.cu | FAILED |") != NULL);
	FA_CHECK(strstr(r.out, "| _Z2k2v       | mma.cu   |        | 64r spill 64B scratch 64B |") !=
		 NULL);
	FA_CHECK(strstr(r.out, "- `kernels/cuda/flash.cu` for sm_80: `flash.cu(12): error: "
			       "identifier \"x\" is undefined`") != NULL);
	fa_proc_free(&r);

	/* the same run against itself: no regression */
	char *same[] = {"build-matrix", "--report", "--run", "base", "--fail-on", "base", "--db", db,
			"--format", "json", NULL};
	fa_proc_run(same, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "no regression against build-matrix run 1 ('base')") != NULL);
	const char *head_json = "{\"schema_version\": 2, \"build\": {\"id\": 1,";
	FA_CHECK(strncmp(r.out, head_json, strlen(head_json)) == 0);
	FA_CHECK(strstr(r.out, "\"matrix\": \"HMMA.16816.F32.BF16\"") != NULL);
	fa_proc_free(&r);

	/* REF as a database file: its latest build run */
	char *file[] = {"build-matrix", "--report", "--run", "head", "--fail-on", ref_db, "--db", db,
			"--format", "csv", NULL};
	fa_proc_run(file, NULL, 60, &r);
	FA_CHECKF(r.status == 1, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "4 regressions against build-matrix run 1") != NULL);
	fa_proc_free(&r);

	/* skipped is not a regression: a machine without nvcc says so and passes */
	char *skip[] = {"build-matrix", "--report", "--run", "skip", "--fail-on", "base", "--db", db,
			NULL};
	fa_proc_run(skip, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "note: kernels/cuda/mma.cu for sm_90a: not compiled (skipped: nvcc "
			       "not found)") != NULL);
	fa_proc_free(&r);
}

/* A compiler's first error line may hold bytes of no UTF-8 sequence (a
 * message in another locale's encoding): the markdown and CSV write them
 * as U+FFFD, as the JSON does. */
FA_TEST(bmatrix, report_text_is_utf8)
{
	char db[1024];
	sqlite3 *raw = NULL;
	db_path(db, sizeof db, "utf8.db");
	FA_REQUIRE(build_gate_db(db, 1) == 0);
	FA_REQUIRE(sqlite3_open(db, &raw) == SQLITE_OK);
	FA_REQUIRE(sqlite3_exec(raw, "UPDATE build_results SET error = CAST(X'666C6173682E6375FF3A80' "
				     "AS TEXT) WHERE status = 'failed'",
				NULL, NULL, NULL) == SQLITE_OK);
	FA_REQUIRE(sqlite3_changes(raw) > 0);
	sqlite3_close(raw);
	static const char *const formats[] = {"md", "csv", "json"};
	for (int i = 0; i < 3; i++) {
		struct fa_proc_result r;
		long bad;
		char *argv[] = {"build-matrix", "--report", "--db", db, "--format", (char *)formats[i],
				NULL};
		fa_proc_run(argv, NULL, 60, &r);
		FA_CHECKF(r.status == 0, "%s: status %d: %s", formats[i], r.status, r.err);
		bad = fa_test_utf8_invalid_at(r.out, strlen(r.out));
		FA_CHECKF(bad < 0, "%s: byte 0x%02x at %ld", formats[i],
			  bad < 0 ? 0 : (unsigned char)r.out[bad], bad);
		FA_CHECKF(strstr(r.out, i == 2 ? "flash.cu\\ufffd:\\ufffd" : "flash.cu\xef\xbf\xbd:\xef\xbf\xbd"),
			  "%s: %s", formats[i], r.out);
		fa_proc_free(&r);
	}
}

FA_TEST(bmatrix, gate_in_process)
{
	/* fa_build_gate directly: a regression count and nothing for equal runs */
	char db[1024];
	struct fa_store *s;
	struct fa_build_table base, head;
	struct fa_err err;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	db_path(db, sizeof db, "gate2.db");
	FA_REQUIRE(build_gate_db(db, -1) == 0);
	s = fa_fixture_open_db(db);
	FA_REQUIRE(s);
	fa_err_clear(&err);
	FA_REQUIRE(fa_build_load(s, 1, &base, &err) == FA_OK);
	FA_REQUIRE(fa_build_load(s, 2, &head, &err) == FA_OK);
	f = open_memstream(&buf, &len);
	FA_REQUIRE(f);
	FA_CHECK(fa_build_gate(&base, &head, f) == 4);
	FA_CHECK(fa_build_gate(&base, &base, f) == 0);
	FA_CHECK(fa_build_gate(&head, &base, f) == 0); /* fixed is not a regression */
	fclose(f);
	free(buf);
	FA_CHECK(fa_build_find(s, "99", &base.id, &err) == FA_ERR_NOT_FOUND);
	FA_CHECK(strstr(err.msg, "no build-matrix run '99'") != NULL);
	fa_build_table_free(&base);
	fa_build_table_free(&head);
	fa_store_close(s);
}

/* ---- A killed run, and a failing compiler, without a real nvcc ------------------ */

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

FA_TEST(bmatrix, kill9_keeps_finished_jobs)
{
	char db[1024], slow[1024], log[1024];
	char *text = NULL;
	FILE *f;
	pid_t pid;
	int st = -1;
	db_path(db, sizeof db, "kill.db");
	snprintf(slow, sizeof slow, "%s/slow.cu", fa_test_tmpdir());
	snprintf(log, sizeof log, "%s/build-matrix.log", fa_test_tmpdir());
	f = fopen(slow, "w");
	FA_REQUIRE(f);
	fputs("__global__ void k(void) {}\n", f);
	fclose(f);
	/* one job at a time: mma.cu finishes at once, slow.cu takes 10 s. The
	 * kill comes once the progress line of mma.cu is out (printed after its
	 * rows are committed), so nothing but the run touches the database
	 * while it lives. */
	pid = fa_proc_start_log((char *[]){"build-matrix", "--nvcc", "tests/bmatrix/fake-nvcc",
					   "--cuobjdump", "/nonexistent", "--source",
					   "tests/bmatrix/mma.cu", "--source", slow, "--targets",
					   "sm_90a", "--jobs", "1", "--db", db, NULL},
				NULL, log);
	for (int i = 0; i < 600; i++) {
		sleep_ms(50);
		if (waitpid(pid, &st, WNOHANG) == pid)
			break; /* it ended by itself: the checks below say how */
		st = -1;
		free(text);
		text = fa_test_read_file(log, NULL);
		if (text && strstr(text, "] ok      sm_90a   tests/bmatrix/mma.cu:"))
			break;
	}
	if (st == -1) {
		kill(pid, SIGKILL);
		st = fa_proc_wait(pid);
	} else {
		st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	free(text);
	text = fa_test_read_file(log, NULL);
	FA_CHECKF(st == 128 + SIGKILL, "status %d; its standard error:\n%s", st,
		  text ? text : "(none)");
	free(text);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_runs WHERE status = 'incomplete'") ==
		 1);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE symbol IS NULL AND "
				    "source = 'tests/bmatrix/mma.cu' AND status = 'ok'") == 1);
	/* the unit's kernels came with it (the fake prints ptxas-sm90a.txt) */
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE symbol IS NOT NULL") ==
		 5);
	FA_CHECK(fa_test_db_int(db, "SELECT spill_bytes FROM build_results WHERE symbol = "
				    "'_Z12spill_kernelPKfPfi'") == 848);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE source LIKE "
				    "'%slow.cu'") == 0);
	/* the report of the killed run says so */
	struct fa_proc_result r;
	fa_proc_run((char *[]){"build-matrix", "--report", "--db", db, NULL}, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.out, ", incomplete\n") != NULL);
	fa_proc_free(&r);
}

FA_TEST(bmatrix, failed_compile_and_gate)
{
	char db[1024], unit[1024];
	struct fa_proc_result r;
	db_path(db, sizeof db, "broken.db");
	snprintf(unit, sizeof unit, "%s/unit.cu", fa_test_tmpdir());
	char *argv[] = {"build-matrix", "--nvcc", "tests/bmatrix/fake-nvcc", "--cuobjdump",
			"/nonexistent", "--source", "tests/bmatrix/mma.cu", "--source", unit,
			"--targets", "sm_80,sm_90", "--db", db, "--label", NULL, NULL, NULL};
	/* a good run, then the same unit broken, gated against it */
	(void)fa_test_write_file(unit, "__global__ void k(void) {}\n");
	argv[14] = "good";
	fa_proc_run(argv, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	fa_proc_free(&r);
	(void)fa_test_write_file(unit, "__global__ void k(void) { BROKEN; }\n");
	argv[14] = "broken";
	argv[15] = "--fail-on=good";
	fa_proc_run(argv, NULL, 60, &r);
	FA_CHECKF(r.status == 1, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "FAILED  sm_80    ") != NULL);
	FA_CHECK(strstr(r.err, "unit.cu(3): error: identifier \"BROKEN\" is undefined") != NULL);
	FA_CHECK(strstr(r.err, "fabench build-matrix: 2 compiles failed") != NULL);
	FA_CHECK(strstr(r.err, "unit.cu for sm_90: stopped compiling: ") != NULL);
	FA_CHECK(strstr(r.err, "fabench build-matrix: 2 regressions against build-matrix run 1 "
			       "('good')") != NULL);
	fa_proc_free(&r);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE build_id = 2 AND "
				    "symbol IS NULL AND status = 'failed'") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_results WHERE build_id = 2 AND "
				    "symbol IS NULL AND status = 'ok'") == 2);
	FA_CHECK(fa_test_db_int(db, "SELECT count(*) FROM build_runs WHERE status = 'complete'") ==
		 2);
	/* fixed again: the broken run as REF is no regression */
	(void)fa_test_write_file(unit, "__global__ void k(void) {}\n");
	argv[14] = "fixed";
	argv[15] = "--fail-on=broken";
	fa_proc_run(argv, NULL, 60, &r);
	FA_CHECKF(r.status == 0, "status %d: %s", r.status, r.err);
	FA_CHECK(strstr(r.err, "no regression against build-matrix run 2 ('broken')") != NULL);
	fa_proc_free(&r);
}
