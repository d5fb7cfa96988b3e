/* backend.h - what the harness calls: the registry of loaded backends, the
 * kernel plugins added to them, and their kernels.
 *
 * The CPU backend is built in. GPU backends are shared objects found next to
 * the fabench executable (libfabench-cuda.so, libfabench-hip.so). Plugins of
 * either kind (include/fabench/plugin.h) are found in the folder plugins/
 * next to the executable and in the colon-separated list FABENCH_PLUGINS
 * (files, or folders whose *.so files are all loaded). Each is opened with
 * dlopen; one that fails to load is kept in the registry with the reason, so
 * `fabench devices` can say why.
 */
#ifndef FA_BACKEND_H
#define FA_BACKEND_H

#include <stddef.h>

#include "backend_impl.h"
#include "../base/err.h"

#define FA_MAX_BACKENDS 8
#define FA_MAX_KERNEL_PLUGINS 16

/* A loaded backend as the harness uses it, whatever API version the plugin
 * was built with: its methods copied into the current struct fa_backend_i,
 * the members its version lacks left NULL (each of those is optional). */
struct fa_backend_loaded {
	int api_version;  /* the version the plugin was built with */
	const char *name;
	void *context;
	struct fa_backend_i iface;
};

/* One kernel of a backend: its own, or one a kernel plugin added. */
struct fa_slot_kernel {
	const struct fa_kernel *k;
	int plugin; /* index into fa_registry.plugins; -1: the backend's own */
	const char *file; /* the kernel plugin's file, NULL for a backend's own */
};

struct fa_backend_slot {
	char name[32];      /* "cpu", "cuda", ... (from the file name until loaded) */
	char path[512];     /* shared object, "" for the built-in CPU backend */
	int loaded;         /* 1: be is usable */
	char why[512];      /* why it did not load, when !loaded */
	void *dl;           /* dlopen handle or NULL */
	struct fa_backend_loaded be;
	struct fa_device_info info;
	struct fa_slot_kernel *kernels; /* the backend's own, then plugins' (malloc'd) */
	int n_kernels;
	/* the error_string of each kernel plugin added here, asked first */
	struct {
		const char *(*fn)(void *ctx, int code);
		void *ctx;
	} plugin_errors[FA_MAX_KERNEL_PLUGINS];
	int n_plugin_errors;
	/* when !loaded: the table of FA_PLUGIN_KERNELS_SYMBOL, if the plugin
	 * has one (dl then stays open), else NULL */
	const struct fa_kernel *idle_kernels;
	int n_idle_kernels;
	/* 1: an --ab side of kernel plugins (fa_registry_load_kernel_side): the
	 * backend, device and dl of another slot, borrowed (never shut down
	 * here), with that slot's own kernels and one kernel plugin's */
	int borrowed;
};

/* A kernel plugin and the records it gave for the backends it joined. */
struct fa_kernel_plugin_slot {
	char path[512];
	char name[64];      /* the plugin's name once it joined a backend, else "" */
	void *dl;
	fa_kernel_plugin_init_fn init; /* NULL: it did not open */
	char why[1024];     /* why it is not (or not everywhere) loaded, "" when none */
	int refused;        /* 1: why holds a refusal (a file that did not open, a bad
	                       record), not only backends the plugin declined */
	int n_att;
	struct {
		int slot;   /* index into fa_registry.slots */
		int n_kernels;
		struct fa_kernel_plugin rec;
	} att[FA_MAX_BACKENDS];
};

struct fa_registry {
	struct fa_backend_slot slots[FA_MAX_BACKENDS];
	int n;
	struct fa_kernel_plugin_slot plugins[FA_MAX_KERNEL_PLUGINS];
	int n_plugins;
};

/* Loads the CPU backend and every plugin found. exe_dir is the folder of the
 * fabench executable (plugins are looked up there); NULL skips that search.
 * Plugins that fail to load are recorded, not errors. Returns FA_OK, or an
 * error only when the CPU backend itself fails. */
enum fa_rc fa_registry_load(struct fa_registry *r, const char *exe_dir, struct fa_err *err);

/* Loads one more backend plugin from path (used by --ab and tests), and adds
 * the kernel plugins already loaded to it. The slot is renamed to `name` when
 * name is not NULL. Returns FA_OK or an error naming the path and reason
 * (FA_ERR_NOT_FOUND: no such file, FA_ERR_USAGE: not a backend plugin, else
 * FA_ERR_BACKEND); the registry is unchanged on error. */
enum fa_rc fa_registry_load_plugin(struct fa_registry *r, const char *path, const char *name,
				   struct fa_err *err);

/* Shuts every backend down and closes the plugins. */
/* 1 when path is a kernel plugin (it exports fa_kernel_plugin_init and not
 * fa_backend_plugin_init). */
int fa_plugin_file_is_kernel_plugin(const char *path);

/* For --ab of two builds of a kernel plugin: a new slot named like host
 * that borrows host's backend (its device, context and own kernels) and
 * holds the kernels of the kernel plugin at path, and no other plugin's;
 * the same kernel names may be in host or another side. Returns FA_OK, or
 * an error naming the path and reason (FA_ERR_NOT_FOUND, FA_ERR_USAGE: not
 * loadable, refused, or no kernels for host's backend). */
enum fa_rc fa_registry_load_kernel_side(struct fa_registry *r, const char *path,
					struct fa_backend_slot *host, struct fa_err *err);

void fa_registry_free(struct fa_registry *r);

/* The slot named name, loaded or not; NULL when no such backend was found. */
struct fa_backend_slot *fa_registry_backend(struct fa_registry *r, const char *name);

/* Kernels of a loaded backend, its own first and then those kernel plugins
 * added (test-only ones included: see fa_kernel_visible). */
int fa_backend_kernel_count(const struct fa_backend_slot *s);
const struct fa_kernel *fa_backend_kernel_get(const struct fa_backend_slot *s, int i);

/* The file kernel i of s came from: the kernel plugin's path, the backend
 * plugin's path, or "" for the built-in CPU backend. */
const char *fa_registry_kernel_origin(const struct fa_registry *r, const struct fa_backend_slot *s,
				      int i);

/* The kernel plugin file kernel k of s came from, or NULL (a backend's own
 * kernel). Allocates nothing: a crash handler may call it. */
const char *fa_backend_kernel_plugin_file(const struct fa_backend_slot *s,
					  const struct fa_kernel *k);

/* Fills a with what every launch of a kernel of s has in common: zeroes it,
 * then sets struct_size, the backend's context and its stream. */
void fa_backend_launch_args_init(const struct fa_backend_slot *s, struct fa_launch_args *a);

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

/* Words for a backend return code: "<backend>: <error_string>" into buf,
 * the words of the first kernel plugin of s that knows the code, else the
 * backend's. */
const char *fa_backend_strerror(const struct fa_backend_slot *s, int code, char *buf, size_t size);

/* The version 3 members of k, read only when its struct_size has them:
 * its enum fa_pass (FA_PASS_FWD for older kernels), whether a forward writes
 * the LSE, and a backward's forward kernel (NULL when none). */
int fa_kernel_pass(const struct fa_kernel *k);
int fa_kernel_writes_lse(const struct fa_kernel *k);
const char *fa_kernel_fwd_name(const struct fa_kernel *k);

/* The kernel of s called name, or NULL. */
const struct fa_kernel *fa_backend_kernel_find(const struct fa_backend_slot *s, const char *name);

/* Checks a kernel record: the required members (name, dtypes, launch), the
 * name's characters, head sizes and params, a
 * backward's fwd_kernel. Returns 1 when it is sound; else
 * 0 with either *missing set to the name of a required member that is NULL
 * ("launch") and what "", or *missing NULL and the problem in what
 * ("head_dim_min 0 must be at least 1"). */
int fa_kernel_validate(const struct fa_kernel *k, const char **missing, char *what,
		       size_t what_size);

/* The built-in CPU backend (harness/run/backend_cpu.c). */
int fa_cpu_backend_init(int harness_api_version, struct fa_backend *out, char *why,
			size_t why_size);

#endif /* FA_BACKEND_H */
