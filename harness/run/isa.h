/* isa.h - reading what the compilers say about each kernel they built: the
 * resource reports (ptxas -v; the amdgpu metadata of clang's .s) and the
 * instructions of the ISA (cuobjdump -sass, PTX, AMDGPU assembly), for
 * `fabench build-matrix`. Pure text parsers: no compiler is run here, so
 * tests feed them captured outputs (tests/bmatrix/). */
#ifndef FA_ISA_H
#define FA_ISA_H

#include <stddef.h>

/* Where the matrix-instruction count of a kernel came from. */
enum fa_isa_from {
	FA_ISA_NONE = 0, /* not looked at */
	FA_ISA_SASS,     /* cuobjdump -sass: HMMA, HGMMA, ... (the machine code) */
	FA_ISA_PTX,      /* the PTX (no cuobjdump here): mma.sync, wgmma.mma_async */
	FA_ISA_AMDGCN,   /* clang's AMDGPU assembly: v_mfma, v_wmma, ... */
};

/* "sass", "ptx", "amdgcn", NULL for FA_ISA_NONE. */
const char *fa_isa_from_name(enum fa_isa_from from);

/* One kernel (an entry function) of a compiled translation unit. Numbers
 * that the tool did not report are -1. */
struct fa_isa_kernel {
	char *symbol;         /* the mangled name, as the tools print it (malloc'd) */
	int regs;             /* registers per thread (NVIDIA) or VGPRs (AMD .vgpr_count) */
	int sgprs;            /* AMD .sgpr_count; -1 on NVIDIA */
	long shared_bytes;    /* static shared memory / LDS (group segment); the
	                         dynamic shared memory a launch asks for is not in it */
	long scratch_bytes;   /* per thread: NVIDIA's stack frame, AMD's private segment */
	long spill_bytes;     /* NVIDIA: bytes of spill stores; -1 on AMD */
	int spill_regs;       /* AMD: .vgpr_spill_count + .sgpr_spill_count; -1 on NVIDIA */
	int matrix_count;     /* matrix instructions in the kernel's code; -1 not looked at */
	char matrix[160];     /* their distinct mnemonics, space separated, in order
	                         of first use ("HMMA.16816.F32.BF16"); "" when none */
	enum fa_isa_from from;
};

struct fa_isa {
	struct fa_isa_kernel *k;
	int n, cap;
};

/* Frees every kernel and zeroes isa. */
void fa_isa_free(struct fa_isa *isa);

/* The kernel named symbol, added (with every number -1) when absent.
 * NULL when out of memory. */
struct fa_isa_kernel *fa_isa_kernel(struct fa_isa *isa, const char *symbol, size_t len);

/* ptxas -v output (nvcc -Xptxas -v): per "Compiling entry function 'S'",
 * its "Used N registers ... N bytes smem" and, from "Function properties for
 * S", the stack frame and spill stores. Returns 0, -1 when out of memory. */
int fa_isa_parse_ptxas(struct fa_isa *isa, const char *log);

/* cuobjdump -sass output: per "Function : S" section, the instructions
 * whose opcode is a matrix one (HMMA, HGMMA, IMMA, IGMMA, QGMMA, DMMA,
 * OMMA, BMMA), a predicate (@P0) skipped. Returns 0, -1 when out of memory. */
int fa_isa_parse_sass(struct fa_isa *isa, const char *sass);

/* PTX: per ".entry S(" body, the instructions mma.sync / mma.sp /
 * wgmma.mma_async. Device functions that were not inlined (.func) are not
 * attributed to a kernel. Returns 0, -1 when out of memory. */
int fa_isa_parse_ptx(struct fa_isa *isa, const char *ptx);

/* clang's AMDGPU assembly (-S for one --offload-arch): the resources of
 * each kernel from the amdhsa.kernels metadata (.vgpr_count, .sgpr_count,
 * .group_segment_fixed_size, .private_segment_fixed_size, the spill
 * counts), and the v_mfma / v_smfmac / v_wmma / v_swmmac instructions
 * between a kernel's label and its .Lfunc_end. Returns 0, -1 when out of
 * memory. */
int fa_isa_parse_amdgcn(struct fa_isa *isa, const char *s);

/* The first line of a compiler's output that reports an error (holding
 * "error" as a word: "x.cu(3): error: ...", "ptxas fatal   : ...",
 * "clang++-19: error: ..."), else its first non-empty line, trimmed, into
 * buf; "" when the output is empty. */
void fa_isa_first_error(const char *log, char *buf, size_t size);

/* The readable part of a demangled name for a grid: without the return
 * type, "(anonymous namespace)::" and the parameter list.
 * "void (anonymous namespace)::fs_kernel<64, 64>(fa_problem, float)" gives
 * "fs_kernel<64, 64>". Writes into buf. */
void fa_isa_short_name(const char *demangled, char *buf, size_t size);

#endif /* FA_ISA_H */
