/* backend.h - what the harness calls: the registry of loaded backends and
 * their kernels.
 *
 * The CPU backend is built in. GPU backends are shared objects found next to
 * the fabench executable (libfabench-cuda.so, libfabench-hip.so) and in the
 * colon-separated list FABENCH_PLUGINS; each is opened with dlopen, and a
 * backend that fails to load is kept in the registry with the reason, so
 * `fabench devices` can say why.
 */
#ifndef FA_BACKEND_H
#define FA_BACKEND_H

#include <stddef.h>

#include "backend_impl.h"
#include "err.h"

#define FA_MAX_BACKENDS 8

struct fa_backend_slot {
	char name[32];      /* "cpu", "cuda", ... (from the file name until loaded) */
	char path[512];     /* shared object, "" for the built-in CPU backend */
	int loaded;         /* 1: be is usable */
	char why[512];      /* why it did not load, when !loaded */
	void *dl;           /* dlopen handle or NULL */
	struct fa_backend be;
	struct fa_device_info info;
};

struct fa_registry {
	struct fa_backend_slot slots[FA_MAX_BACKENDS];
	int n;
};

/* Loads the CPU backend and every plugin found. exe_dir is the folder of the
 * fabench executable (plugins are looked up there); NULL skips that search.
 * Plugins that fail to load are recorded, not errors. Returns FA_OK, or an
 * error only when the CPU backend itself fails. */
enum fa_rc fa_registry_load(struct fa_registry *r, const char *exe_dir, struct fa_err *err);

/* Loads one more plugin from path (used by --ab and tests). The slot is
 * renamed to `name` when name is not NULL. Returns FA_OK or an error naming
 * the path and reason; the registry is unchanged on error. */
enum fa_rc fa_registry_load_plugin(struct fa_registry *r, const char *path, const char *name,
				   struct fa_err *err);

/* Shuts every backend down and closes the plugins. */
void fa_registry_free(struct fa_registry *r);

/* The slot named name, loaded or not; NULL when no such backend was found. */
struct fa_backend_slot *fa_registry_backend(struct fa_registry *r, const char *name);

/* The kernel called name and its backend, or NULL. */
const struct fa_kernel *fa_registry_kernel(struct fa_registry *r, const char *name,
					   struct fa_backend_slot **slot);

/* 1 when name is a backend fabench knows of (cpu, cuda, hip, test), loaded or not. */
int fa_backend_name_known(const char *name);

/* The backend prefix of a kernel name or pattern ("cuda" for "cuda_flash_*")
 * into buf; "" when the name has no '_'. */
void fa_kernel_backend_prefix(const char *name, char *buf, size_t size);

/* 1 when the kernel name matches the pattern (a name or an fnmatch glob). */
int fa_kernel_match(const char *pattern, const char *name);

/* 1 when k is listed and runnable: test-only kernels are hidden unless the
 * environment has FABENCH_TEST_KERNELS=1. */
int fa_kernel_visible(const struct fa_kernel *k);

/* 1 when k can run p; else 0 with the reason in why. Checks dtype, head
 * sizes and then the kernel's own supports(). */
int fa_kernel_supports(const struct fa_kernel *k, const struct fa_problem *p, char *why,
		       size_t why_size);

/* Words for a backend return code: "<backend>: <error_string>" into buf. */
const char *fa_backend_strerror(const struct fa_backend_slot *s, int code, char *buf, size_t size);

/* The built-in CPU backend (harness/backend_cpu.c). */
int fa_cpu_backend_init(int harness_api_version, struct fa_backend *out, char *why,
			size_t why_size);

#endif /* FA_BACKEND_H */
