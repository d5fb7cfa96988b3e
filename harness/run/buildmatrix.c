/* buildmatrix.c - the list of what `fabench build-matrix` compiles (targets,
 * sources, compilers and their flags: the one place to change it), and the
 * jobs that compile each source for each target and read the results. */
#include "buildmatrix.h"

#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/parallel.h"
#include "../base/util.h"

/* ---- The list ---------------------------------------------------------------- */

const struct fa_bm_target fa_bm_targets[] = {
	{"gfx90a", FA_BM_HIP, 0},  /* MI200 (CDNA2): MFMA, wave64 */
	{"gfx942", FA_BM_HIP, 0},  /* MI300 (CDNA3): MFMA, wave64 */
	{"gfx1100", FA_BM_HIP, 0}, /* RDNA3: WMMA, wave32 */
	{"gfx1151", FA_BM_HIP, 0}, /* RDNA3.5 (Strix Halo): WMMA */
	{"gfx1201", FA_BM_HIP, 0}, /* RDNA4: WMMA, gfx12 layouts */
	{"sm_80", FA_BM_CUDA, 0},  /* A100: mma.sync (HMMA) */
	/* H100 without the arch-specific features: every compute capability
	 * 9.0 device runs sm_90a code, so the plugin ships sm_80 and sm_90a
	 * (Makefile NVCC_GENCODE) and the default matrix leaves sm_90 out */
	{"sm_90", FA_BM_CUDA, 1},
	{"sm_90a", FA_BM_CUDA, 0}, /* H100/H200: wgmma (HGMMA), setmaxnreg */
};
const int fa_bm_n_targets = (int)(sizeof fa_bm_targets / sizeof fa_bm_targets[0]);

struct family {
	const char *name;
	const char *compiler;   /* shown in "skipped: nvcc not found" */
	const char *globs[4];   /* the kernel sources, relative to the root */
	const char *flags[12];  /* as the plugin's build compiles them (Makefile) */
	/* Sources of another family this one compiles too, once the folder
	 * shared_when exists: the CUDA sources the HIP plugin builds (the
	 * Makefile's HIP_SRC). */
	const char *shared_when;
	const char *shared[8];
	/* Flags for the listed sources only (not --source files): the HIP
	 * plugin pre-includes its alias header kernels/common/fa_gpu.h. */
	const char *shared_flags[4];
};

/* Flags match the Makefile's NVCC_FLAGS (and the HIP plugin's): a kernel is
 * compiled here as the plugin compiles it. */
static const struct family families[] = {
	[FA_BM_CUDA] = {"cuda",
			"nvcc",
			{"kernels/cuda/*.cu", "kernels/cuda/instances/*.cu", NULL},
			{"-std=c++17", "-O3", "--expt-relaxed-constexpr", NULL}},
	[FA_BM_HIP] = {"hip",
		       "clang++-19",
		       {"kernels/hip/*.hip", "kernels/hip/instances/*.hip", "kernels/hip/*.cpp", NULL},
		       {"-x", "hip", "-std=c++17", "-O3", "--rocm-path=/usr",
			/* a back-end crash (seed 000: a gfx11 builtin on gfx1201)
			 * is a failed compile, not files left in /tmp */
			"-fno-crash-diagnostics", NULL},
		       "kernels/hip",
		       {"kernels/cuda/cuda_dense.cu", "kernels/cuda/flash_simt.cu",
			"kernels/cuda/flash_bwd_simt.cu", "kernels/cuda/data_gpu.cu", "kernels/cuda/ref_gpu.cu",
			"kernels/cuda/test_kernels.cu", "kernels/cuda/problem_check.cu", NULL},
		       {"-include", "kernels/common/fa_gpu.h", NULL}},
};

/* Where Debian's rocm-device-libs (and a ROCm install) keep the bitcode. */
static const char *const bitcode_dirs[] = {
	"/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
	"/usr/lib/amdgcn/bitcode",
	"/opt/rocm/amdgcn/bitcode",
};

/* The data layout of clang 19's amdgcn modules, so that the generated
 * oclc_isa_version files link without a "different data layouts" warning. */
#define AMDGCN_DATALAYOUT                                                                  \
	"e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-" \
	"p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-"  \
	"v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"

/* Compiler output kept per job: the first error line is near the top. */
#define BM_LOG_MAX (4u << 20)
/* ISA listings read back: a large translation unit's SASS is tens of MiB. */
#define BM_ISA_MAX (256u << 20)

const char *fa_bm_status_name(int status)
{
	switch (status) {
	case FA_BM_OK: return "ok";
	case FA_BM_FAILED: return "failed";
	case FA_BM_SKIPPED: return "skipped";
	}
	return NULL;
}

int fa_bm_status_parse(const char *name)
{
	for (int s = FA_BM_OK; s <= FA_BM_SKIPPED; s++)
		if (strcmp(name, fa_bm_status_name(s)) == 0)
			return s;
	return -1;
}

const char *fa_bm_family_name(enum fa_bm_family f)
{
	return families[f].name;
}

/* ---- Planning ---------------------------------------------------------------- */

static const struct fa_bm_target *find_target(const char *arch)
{
	for (int i = 0; i < fa_bm_n_targets; i++)
		if (strcmp(fa_bm_targets[i].arch, arch) == 0)
			return &fa_bm_targets[i];
	return NULL;
}

static int family_of_source(const char *path)
{
	size_t n = strlen(path);
	if (n > 3 && strcmp(path + n - 3, ".cu") == 0)
		return FA_BM_CUDA;
	if ((n > 4 && strcmp(path + n - 4, ".hip") == 0) ||
	    (n > 4 && strcmp(path + n - 4, ".cpp") == 0))
		return FA_BM_HIP;
	return -1;
}

static void note(struct fa_bm_plan *p, const char *fmt, const char *a, const char *b)
{
	size_t have = strlen(p->notes);
	if (have)
		snprintf(p->notes + have, sizeof p->notes - have, "; ");
	have = strlen(p->notes);
	snprintf(p->notes + have, sizeof p->notes - have, fmt, a, b);
}

static enum fa_rc add_job(struct fa_bm_plan *p, int *cap, const char *source,
			  const struct fa_bm_target *t, int listed, struct fa_err *err)
{
	struct fa_bm_job *j;
	if (p->n_jobs == *cap) {
		int ncap = *cap ? *cap * 2 : 32;
		struct fa_bm_job *grown = realloc(p->jobs, (size_t)ncap * sizeof *grown);
		if (!grown)
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		p->jobs = grown;
		*cap = ncap;
	}
	j = &p->jobs[p->n_jobs++];
	memset(j, 0, sizeof *j);
	snprintf(j->source, sizeof j->source, "%s", source);
	j->arch = t->arch;
	j->family = t->family;
	j->listed = listed;
	j->status = FA_BM_OK;
	return FA_OK;
}

static int target_selected(const struct fa_bm_opts *o, const struct fa_bm_target *t)
{
	if (!o->targets)
		return !t->optional;
	for (int i = 0; i < o->n_targets; i++)
		if (strcmp(o->targets[i], t->arch) == 0)
			return 1;
	return 0;
}

static void find_nvcc(const struct fa_bm_opts *o, struct fa_bm_plan *p)
{
	if (o->nvcc) {
		if (fa_find_program(o->nvcc, p->nvcc, sizeof p->nvcc) != 0)
			p->nvcc[0] = '\0';
	} else if (fa_find_program("nvcc", p->nvcc, sizeof p->nvcc) != 0 &&
		   fa_find_program("/usr/local/cuda/bin/nvcc", p->nvcc, sizeof p->nvcc) != 0) {
		p->nvcc[0] = '\0';
	}
	if (o->cuobjdump) {
		if (fa_find_program(o->cuobjdump, p->cuobjdump, sizeof p->cuobjdump) != 0)
			p->cuobjdump[0] = '\0';
	} else if (p->nvcc[0]) {
		/* the cuobjdump of the same toolkit first */
		char next[600];
		const char *slash = strrchr(p->nvcc, '/');
		snprintf(next, sizeof next, "%.*scuobjdump", (int)(slash - p->nvcc + 1), p->nvcc);
		if (fa_find_program(next, p->cuobjdump, sizeof p->cuobjdump) != 0 &&
		    fa_find_program("cuobjdump", p->cuobjdump, sizeof p->cuobjdump) != 0)
			p->cuobjdump[0] = '\0';
	}
}

/* The oclc_isa_version number of an arch: gfx942 -> "942" and 9402 (major
 * 9, minor 4, stepping 2; gfx90a's stepping 'a' is 10). */
static int isa_version(const char *arch, char *suffix, size_t size)
{
	const char *d = arch + 3;
	size_t n = strlen(d);
	int major, minor, step;
	char *end;
	if (strncmp(arch, "gfx", 3) != 0 || n < 3)
		return -1;
	snprintf(suffix, size, "%s", d);
	step = (int)strtol((char[]){d[n - 1], 0}, &end, 16);
	minor = (int)strtol((char[]){d[n - 2], 0}, &end, 16);
	major = (int)strtol((char[]){d[0], n == 4 ? d[1] : 0, 0}, &end, 10);
	return major * 1000 + minor * 100 + step;
}

/* Makes dir/devlibs: links to the system's bitcode and, for each HIP target
 * of the plan whose oclc_isa_version file is missing (Debian's stops at
 * gfx940 and gfx1036), one generated with llvm-as. Returns 0, or -1 with
 * why. */
static int make_device_libs(struct fa_bm_plan *p, char *why, size_t why_size)
{
	const char *sys = NULL;
	char dir[600], path[1200], llvm_as[600], glob_pat[700];
	glob_t g;
	struct stat st;
	for (size_t i = 0; i < sizeof bitcode_dirs / sizeof bitcode_dirs[0] && !sys; i++) {
		snprintf(path, sizeof path, "%s/ockl.bc", bitcode_dirs[i]);
		if (stat(path, &st) == 0)
			sys = bitcode_dirs[i];
	}
	if (!sys) {
		snprintf(why, why_size, "ROCm device libraries not found (install rocm-device-libs)");
		return -1;
	}
	snprintf(dir, sizeof dir, "%s/devlibs", p->workdir);
	if (fa_mkdir_p(dir) != 0) {
		snprintf(why, why_size, "cannot make '%.200s': %.200s", dir, strerror(errno));
		return -1;
	}
	snprintf(glob_pat, sizeof glob_pat, "%s/*.bc", sys);
	if (glob(glob_pat, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			const char *base = strrchr(g.gl_pathv[i], '/') + 1;
			snprintf(path, sizeof path, "%s/%s", dir, base);
			if (symlink(g.gl_pathv[i], path) != 0 && errno != EEXIST) {
				snprintf(why, why_size, "cannot link '%.200s': %.200s", path, strerror(errno));
				globfree(&g);
				return -1;
			}
		}
		globfree(&g);
	}
	/* llvm-as of the same LLVM as the compiler: clang++-19 -> llvm-as-19 */
	{
		const char *slash = strrchr(p->clang, '/'), *dash = strrchr(p->clang, '-');
		const char *ver = dash && dash > slash && dash[1] >= '0' && dash[1] <= '9' ? dash : "";
		snprintf(llvm_as, sizeof llvm_as, "%.*sllvm-as%s", (int)(slash - p->clang + 1),
			 p->clang, ver);
		if (access(llvm_as, X_OK) != 0) {
			char name[64];
			snprintf(name, sizeof name, "llvm-as%s", ver);
			if (fa_find_program(name, llvm_as, sizeof llvm_as) != 0)
				llvm_as[0] = '\0';
		}
	}
	for (int i = 0; i < p->n_jobs; i++) {
		char suffix[16], ll[1200], bc[1200];
		int v;
		FILE *f;
		if (p->jobs[i].family != FA_BM_HIP || p->jobs[i].status == FA_BM_SKIPPED)
			continue;
		v = isa_version(p->jobs[i].arch, suffix, sizeof suffix);
		snprintf(bc, sizeof bc, "%s/oclc_isa_version_%s.bc", dir, suffix);
		if (v < 0 || stat(bc, &st) == 0)
			continue;
		if (!llvm_as[0]) {
			snprintf(why, why_size, "no %.200s for %.200s (llvm-as not found)", bc, p->jobs[i].arch);
			return -1;
		}
		snprintf(ll, sizeof ll, "%s/oclc_isa_version_%s.ll", dir, suffix);
		if (!(f = fopen(ll, "w"))) {
			snprintf(why, why_size, "cannot write '%.200s': %.200s", ll, strerror(errno));
			return -1;
		}
		fprintf(f,
			"target datalayout = \"%s\"\n"
			"target triple = \"amdgcn-amd-amdhsa\"\n"
			"@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr "
			"addrspace(4) constant i32 %d, align 4\n",
			AMDGCN_DATALAYOUT, v);
		fclose(f);
		{
			char *argv[] = {llvm_as, "-o", bc, ll, NULL}, *out = NULL;
			int rc = fa_run_output(argv, &out, 4096);
			if (rc != 0) {
				snprintf(why, why_size, "%.150s failed for %.150s: %.150s", llvm_as, ll,
					 out ? out : "out of memory");
				free(out);
				return -1;
			}
			free(out);
		}
	}
	snprintf(p->device_libs, sizeof p->device_libs, "%s", dir);
	return 0;
}

enum fa_rc fa_bm_plan_make(const struct fa_bm_opts *o, struct fa_bm_plan *p, struct fa_err *err)
{
	const char *root = o->root ? o->root : ".";
	int cap = 0, skip_reason_set[2] = {0, 0};
	enum fa_rc rc = FA_OK;
	char why[2][512];
	struct stat st;

	memset(p, 0, sizeof *p);
	for (int i = 0; i < o->n_targets; i++)
		if (!find_target(o->targets[i]))
			return fa_err_set(err, FA_ERR_USAGE,
					  "unknown target '%s' (gfx90a, gfx942, gfx1100, gfx1151, "
					  "gfx1201, sm_80, sm_90, sm_90a)",
					  o->targets[i]);
	if (o->sources) {
		for (int s = 0; s < o->n_sources && rc == FA_OK; s++) {
			int fam = family_of_source(o->sources[s]);
			if (fam < 0) {
				rc = fa_err_set(err, FA_ERR_USAGE,
						"source '%s' is not a .cu, .hip or .cpp file",
						o->sources[s]);
				break;
			}
			if (stat(o->sources[s], &st) != 0) {
				rc = fa_err_set(err, FA_ERR_NOT_FOUND, "source '%s': %s", o->sources[s],
						strerror(errno));
				break;
			}
			if (!S_ISREG(st.st_mode)) {
				rc = fa_err_set(err, FA_ERR_USAGE, "source '%s' is not a regular file",
						o->sources[s]);
				break;
			}
			for (int t = 0; t < fa_bm_n_targets && rc == FA_OK; t++)
				if ((int)fa_bm_targets[t].family == fam &&
				    target_selected(o, &fa_bm_targets[t]))
					rc = add_job(p, &cap, o->sources[s], &fa_bm_targets[t], 0, err);
		}
	} else {
		for (int f = 0; f < 2 && rc == FA_OK; f++) {
			glob_t g;
			int n_found = 0;
			for (int gi = 0; families[f].globs[gi] && rc == FA_OK; gi++) {
				char pat[1024];
				snprintf(pat, sizeof pat, "%s/%s", root, families[f].globs[gi]);
				if (glob(pat, 0, NULL, &g) != 0)
					continue;
				for (size_t i = 0; i < g.gl_pathc && rc == FA_OK; i++) {
					/* stored relative to the root, as the list names it */
					const char *rel = g.gl_pathv[i] + strlen(root);
					while (*rel == '/')
						rel++;
					n_found++;
					for (int t = 0; t < fa_bm_n_targets && rc == FA_OK; t++)
						if ((int)fa_bm_targets[t].family == f &&
						    target_selected(o, &fa_bm_targets[t]))
							rc = add_job(p, &cap, rel, &fa_bm_targets[t], 1, err);
				}
				globfree(&g);
			}
			if (families[f].shared_when) {
				char dir[1024];
				snprintf(dir, sizeof dir, "%s/%s", root, families[f].shared_when);
				for (int i = 0; families[f].shared[i] && rc == FA_OK &&
						stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
				     i++) {
					char src[1024];
					snprintf(src, sizeof src, "%s/%s", root, families[f].shared[i]);
					if (stat(src, &st) != 0)
						continue;
					n_found++;
					for (int t = 0; t < fa_bm_n_targets && rc == FA_OK; t++)
						if ((int)fa_bm_targets[t].family == f &&
						    target_selected(o, &fa_bm_targets[t]))
							rc = add_job(p, &cap, families[f].shared[i],
								     &fa_bm_targets[t], 1, err);
				}
			}
			if (!n_found)
				note(p, "%s: no sources (%s)", families[f].name, families[f].globs[0]);
		}
	}
	if (rc != FA_OK) {
		fa_bm_plan_free(p);
		return rc;
	}

	/* the tools */
	find_nvcc(o, p);
	if (fa_find_program(o->clang ? o->clang : families[FA_BM_HIP].compiler, p->clang,
			    sizeof p->clang) != 0)
		p->clang[0] = '\0';
	if (fa_find_program("c++filt", p->cxxfilt, sizeof p->cxxfilt) != 0)
		p->cxxfilt[0] = '\0';
	snprintf(why[FA_BM_CUDA], sizeof why[0], "%s not found",
		 o->nvcc ? o->nvcc : families[FA_BM_CUDA].compiler);
	snprintf(why[FA_BM_HIP], sizeof why[0], "%s not found",
		 o->clang ? o->clang : families[FA_BM_HIP].compiler);
	skip_reason_set[FA_BM_CUDA] = !p->nvcc[0];
	skip_reason_set[FA_BM_HIP] = !p->clang[0];

	/* the work folder */
	if (o->workdir) {
		snprintf(p->workdir, sizeof p->workdir, "%s", o->workdir);
		if (fa_mkdir_p(p->workdir) != 0) {
			rc = fa_err_set(err, FA_ERR_IO, "cannot make '%s': %s", p->workdir,
					strerror(errno));
			fa_bm_plan_free(p);
			return rc;
		}
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(p->workdir, sizeof p->workdir, "%s/fabench-bm-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(p->workdir)) {
			rc = fa_err_set(err, FA_ERR_IO, "cannot make a folder under '%s': %s",
					tmp && *tmp ? tmp : "/tmp", strerror(errno));
			p->workdir[0] = '\0';
			fa_bm_plan_free(p);
			return rc;
		}
		p->own_workdir = 1;
	}

	for (int i = 0; i < p->n_jobs; i++) {
		struct fa_bm_job *j = &p->jobs[i];
		if (skip_reason_set[j->family]) {
			j->status = FA_BM_SKIPPED;
			snprintf(j->error, sizeof j->error, "%s", why[j->family]);
		}
	}
	/* the ROCm device libraries, once for every HIP job */
	for (int i = 0; i < p->n_jobs; i++) {
		if (p->jobs[i].family != FA_BM_HIP || p->jobs[i].status == FA_BM_SKIPPED)
			continue;
		if (o->device_libs) {
			snprintf(p->device_libs, sizeof p->device_libs, "%s", o->device_libs);
		} else if (make_device_libs(p, why[FA_BM_HIP], sizeof why[0]) != 0) {
			for (int k = 0; k < p->n_jobs; k++)
				if (p->jobs[k].family == FA_BM_HIP) {
					p->jobs[k].status = FA_BM_SKIPPED;
					snprintf(p->jobs[k].error, sizeof p->jobs[k].error, "%s",
						 why[FA_BM_HIP]);
				}
		}
		break;
	}
	return FA_OK;
}

/* ---- Running ----------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads a whole file (an ISA listing) into a malloc'd string; NULL when it
 * cannot. */
static char *slurp(const char *path)
{
	char *buf = NULL, why[256];
	size_t len;
	if (fa_read_file(path, BM_ISA_MAX, &buf, &len, NULL, why, sizeof why) != FA_OK)
		return NULL;
	return buf;
}

/* Demangles the job's kernel names with c++filt (one call for all) and
 * keeps their short form; the mangled name where that fails. */
static void name_kernels(struct fa_bm_job *j, const char *cxxfilt)
{
	char **argv, *out = NULL;
	int rc = -1;
	if (!j->isa.n)
		return;
	j->names = calloc((size_t)j->isa.n, sizeof *j->names);
	argv = calloc((size_t)j->isa.n + 2, sizeof *argv);
	if (!j->names || !argv) {
		free(argv);
		return;
	}
	if (cxxfilt[0]) {
		argv[0] = (char *)cxxfilt;
		for (int i = 0; i < j->isa.n; i++)
			argv[i + 1] = j->isa.k[i].symbol;
		rc = fa_run_output(argv, &out, 1u << 20);
	}
	const char *p = rc == 0 && out ? out : NULL;
	for (int i = 0; i < j->isa.n; i++) {
		char line[2048], shortn[512];
		const char *nl = p ? strchr(p, '\n') : NULL;
		size_t n = p ? (nl ? (size_t)(nl - p) : strlen(p)) : 0;
		if (p && n > 0 && n < sizeof line) {
			memcpy(line, p, n);
			line[n] = '\0';
			fa_isa_short_name(line, shortn, sizeof shortn);
		} else {
			snprintf(shortn, sizeof shortn, "%s", j->isa.k[i].symbol);
		}
		j->names[i] = strdup(shortn);
		p = p && nl ? nl + 1 : NULL;
	}
	free(out);
	free(argv);
}

static void job_fail(struct fa_bm_job *j, const char *log, int rc)
{
	j->status = FA_BM_FAILED;
	fa_isa_first_error(log, j->error, sizeof j->error);
	if (!j->error[0])
		snprintf(j->error, sizeof j->error, "exit status %d and no message", rc);
}

static void run_job(struct fa_bm_plan *p, const char *root, struct fa_bm_job *j, int idx)
{
	char dir[700], src[1100], out_path[800], *log = NULL;
	const char *argv[40];
	char arch_flag[64], keep_dir[720], dl_flag[760], inc[1100];
	int n = 0, rc;
	double t0 = now_s();

	snprintf(dir, sizeof dir, "%s/job%04d-%s", p->workdir, idx, j->arch);
	if (fa_mkdir_p(dir) != 0) {
		j->status = FA_BM_FAILED;
		snprintf(j->error, sizeof j->error, "cannot make '%.400s': %s", dir,
			 strerror(errno));
		return;
	}
	/* listed sources are relative to the root, --source files to the cwd */
	if (!j->listed || strcmp(root, ".") == 0)
		snprintf(src, sizeof src, "%s", j->source);
	else
		snprintf(src, sizeof src, "%s/%s", root, j->source);
	if (j->family == FA_BM_CUDA) {
		snprintf(j->compiler, sizeof j->compiler, "%s", p->nvcc);
		snprintf(arch_flag, sizeof arch_flag, "-arch=%s", j->arch);
		snprintf(keep_dir, sizeof keep_dir, "--keep-dir=%s", dir);
		snprintf(out_path, sizeof out_path, "%s/out.cubin", dir);
		argv[n++] = p->nvcc;
		argv[n++] = "-cubin";
		argv[n++] = arch_flag;
		for (int f = 0; families[FA_BM_CUDA].flags[f]; f++)
			argv[n++] = families[FA_BM_CUDA].flags[f];
		argv[n++] = "-Xptxas";
		argv[n++] = "-v";
		argv[n++] = "--keep"; /* the PTX, read when there is no cuobjdump */
		argv[n++] = keep_dir;
	} else {
		snprintf(j->compiler, sizeof j->compiler, "%s", p->clang);
		snprintf(arch_flag, sizeof arch_flag, "--offload-arch=%s", j->arch);
		snprintf(dl_flag, sizeof dl_flag, "--rocm-device-lib-path=%s", p->device_libs);
		snprintf(out_path, sizeof out_path, "%s/out.s", dir);
		argv[n++] = p->clang;
		for (int f = 0; families[FA_BM_HIP].flags[f]; f++)
			argv[n++] = families[FA_BM_HIP].flags[f];
		if (j->listed) {
			/* the HIP plugin's alias header (its Makefile pre-includes it
			 * in every source), found under the root */
			snprintf(inc, sizeof inc, "%s/%s", root, families[FA_BM_HIP].shared_flags[1]);
			argv[n++] = families[FA_BM_HIP].shared_flags[0];
			argv[n++] = inc;
		}
		argv[n++] = dl_flag;
		argv[n++] = arch_flag;
		argv[n++] = "--cuda-device-only";
		argv[n++] = "-S";
	}
	argv[n++] = "-o";
	argv[n++] = out_path;
	argv[n++] = src;
	argv[n] = NULL;
	rc = fa_run_output((char *const *)argv, &log, BM_LOG_MAX);
	if (rc != 0) {
		job_fail(j, log, rc);
		free(log);
		j->compile_s = now_s() - t0;
		return;
	}
	if (j->family == FA_BM_CUDA) {
		char *isa_text = NULL;
		if (fa_isa_parse_ptxas(&j->isa, log ? log : "") != 0)
			goto nomem;
		if (p->cuobjdump[0]) {
			char *dump_argv[] = {p->cuobjdump, "-sass", out_path, NULL};
			int drc = fa_run_output(dump_argv, &isa_text, BM_ISA_MAX);
			if (drc != 0) {
				free(log);
				log = isa_text;
				isa_text = NULL;
				job_fail(j, log, drc);
				goto done;
			}
			if (fa_isa_parse_sass(&j->isa, isa_text) != 0)
				goto nomem;
		} else {
			char pat[800];
			glob_t g;
			snprintf(pat, sizeof pat, "%s/*.ptx", dir);
			if (glob(pat, 0, NULL, &g) == 0) {
				for (size_t i = 0; i < g.gl_pathc; i++) {
					free(isa_text);
					isa_text = slurp(g.gl_pathv[i]);
					if (isa_text && fa_isa_parse_ptx(&j->isa, isa_text) != 0) {
						globfree(&g);
						goto nomem;
					}
				}
				globfree(&g);
			}
		}
		free(isa_text);
	} else {
		char *s = slurp(out_path);
		if (!s) {
			j->status = FA_BM_FAILED;
			snprintf(j->error, sizeof j->error, "the compiler wrote no '%.400s'", out_path);
			goto done;
		}
		rc = fa_isa_parse_amdgcn(&j->isa, s);
		free(s);
		if (rc != 0)
			goto nomem;
	}
	name_kernels(j, p->cxxfilt);
	goto done;
nomem:
	j->status = FA_BM_FAILED;
	snprintf(j->error, sizeof j->error, "out of memory reading the compiler's output");
done:
	free(log);
	j->compile_s = now_s() - t0;
}

struct exec_ctx {
	struct fa_bm_plan *plan;
	const char *root;
	int *order;             /* the jobs to run, in plan order */
	fa_bm_done_fn done;
	void *ctx;
	pthread_mutex_t lock;
	int n_done, stop;
};

static void exec_chunk(void *arg, int64_t begin, int64_t end, int thread)
{
	struct exec_ctx *x = arg;
	(void)thread;
	for (int64_t i = begin; i < end; i++) {
		int idx = x->order[i], stop;
		struct fa_bm_job *j = &x->plan->jobs[idx];
		pthread_mutex_lock(&x->lock);
		stop = x->stop;
		pthread_mutex_unlock(&x->lock);
		if (stop)
			return;
		run_job(x->plan, x->root, j, idx);
		pthread_mutex_lock(&x->lock);
		x->n_done++;
		if (!x->stop && x->done(x->ctx, j, x->n_done, x->plan->n_jobs) != 0)
			x->stop = 1;
		pthread_mutex_unlock(&x->lock);
	}
}

enum fa_rc fa_bm_execute(struct fa_bm_plan *p, const struct fa_bm_opts *o, fa_bm_done_fn done,
			 void *ctx, struct fa_err *err)
{
	struct exec_ctx x;
	int n_run = 0, jobs = o->jobs > 0 ? o->jobs : fa_cpu_threads();
	memset(&x, 0, sizeof x);
	x.plan = p;
	x.root = o->root ? o->root : ".";
	x.done = done;
	x.ctx = ctx;
	x.order = malloc((size_t)(p->n_jobs ? p->n_jobs : 1) * sizeof *x.order);
	if (!x.order)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&x.lock, NULL);
	for (int i = 0; i < p->n_jobs; i++) {
		if (p->jobs[i].status == FA_BM_SKIPPED) {
			x.n_done++;
			if (!x.stop && done(ctx, &p->jobs[i], x.n_done, p->n_jobs) != 0)
				x.stop = 1;
		} else {
			x.order[n_run++] = i;
		}
	}
	if (!x.stop)
		fa_parallel_for(n_run, 1, jobs, exec_chunk, &x);
	pthread_mutex_destroy(&x.lock);
	free(x.order);
	return x.stop ? FA_ERR_CANCELLED : FA_OK;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void fa_bm_plan_free(struct fa_bm_plan *p)
{
	for (int i = 0; i < p->n_jobs; i++) {
		struct fa_bm_job *j = &p->jobs[i];
		for (int k = 0; j->names && k < j->isa.n; k++)
			free(j->names[k]);
		free(j->names);
		fa_isa_free(&j->isa);
	}
	free(p->jobs);
	if (p->own_workdir && p->workdir[0])
		nftw(p->workdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	memset(p, 0, sizeof *p);
}
