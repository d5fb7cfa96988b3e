/* backend.c - the registry of backends: the built-in CPU backend and plugins
 * opened with dlopen, each kept with the reason when it did not load. */
#include "backend.h"

#include <dlfcn.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

static const char *const known_backends[] = {"cpu", "cuda", "hip", "test"};

int fa_backend_name_known(const char *name)
{
	for (size_t i = 0; i < sizeof known_backends / sizeof known_backends[0]; i++)
		if (strcmp(name, known_backends[i]) == 0)
			return 1;
	return 0;
}

void fa_kernel_backend_prefix(const char *name, char *buf, size_t size)
{
	const char *us = strchr(name, '_');
	size_t n = us ? (size_t)(us - name) : 0;
	if (n >= size)
		n = size - 1;
	memcpy(buf, name, n);
	buf[n] = '\0';
}

int fa_kernel_visible(const struct fa_kernel *k)
{
	const char *env;
	if (!k->test_only)
		return 1;
	env = getenv("FABENCH_TEST_KERNELS");
	return env && strcmp(env, "1") == 0;
}

static struct fa_backend_slot *new_slot(struct fa_registry *r, const char *name)
{
	struct fa_backend_slot *s;
	if (r->n >= FA_MAX_BACKENDS)
		return NULL;
	s = &r->slots[r->n++];
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", name);
	return s;
}

/* Fills a loaded slot's device info; a backend whose device_info fails is
 * still usable, with the reason in its name. */
static void slot_ready(struct fa_backend_slot *s)
{
	s->loaded = 1;
	s->why[0] = '\0';
	if (s->be.iface.device_info(s->be.context, &s->info) != 0)
		snprintf(s->info.name, sizeof s->info.name, "(device info unavailable)");
}

/* Opens path into slot s. On failure s->why says why and s stays unloaded. */
static void open_plugin(struct fa_backend_slot *s, const char *path)
{
	fa_backend_plugin_init_fn init;
	char why[512] = "";
	snprintf(s->path, sizeof s->path, "%s", path);
	if (access(path, R_OK) != 0) {
		snprintf(s->why, sizeof s->why, "not built: %s does not exist", path);
		return;
	}
	s->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!s->dl) {
		snprintf(s->why, sizeof s->why, "cannot load %s: %s", path, dlerror());
		return;
	}
	*(void **)&init = dlsym(s->dl, FA_PLUGIN_INIT_SYMBOL);
	if (!init) {
		snprintf(s->why, sizeof s->why, "%s has no symbol %s", path, FA_PLUGIN_INIT_SYMBOL);
		goto fail;
	}
	memset(&s->be, 0, sizeof s->be);
	if (init(FA_BACKEND_API_VERSION, &s->be, why, sizeof why) != 0) {
		snprintf(s->why, sizeof s->why, "%s", why[0] ? why : "plugin refused to start");
		goto fail;
	}
	if (s->be.api_version < 1 || s->be.api_version > FA_BACKEND_API_VERSION) {
		snprintf(s->why, sizeof s->why,
			 "%s has backend API version %d; this fabench knows versions 1 to %d", path,
			 s->be.api_version, FA_BACKEND_API_VERSION);
		if (s->be.iface.shutdown)
			s->be.iface.shutdown(s->be.context);
		goto fail;
	}
	if (s->be.name && *s->be.name)
		snprintf(s->name, sizeof s->name, "%s", s->be.name);
	slot_ready(s);
	return;
fail:
	dlclose(s->dl);
	s->dl = NULL;
}

enum fa_rc fa_registry_load(struct fa_registry *r, const char *exe_dir, struct fa_err *err)
{
	struct fa_backend_slot *s;
	char why[512] = "", path[1024];
	const char *env;

	memset(r, 0, sizeof *r);
	s = new_slot(r, "cpu");
	if (fa_cpu_backend_init(FA_BACKEND_API_VERSION, &s->be, why, sizeof why) != 0)
		return fa_err_set(err, FA_ERR_BACKEND, "cpu backend failed to start: %s", why);
	slot_ready(s);

	if (exe_dir && *exe_dir) {
		static const char *const plugins[] = {"cuda", "hip"};
		for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++) {
			s = new_slot(r, plugins[i]);
			snprintf(path, sizeof path, "%s/libfabench-%s.so", exe_dir, plugins[i]);
			open_plugin(s, path);
		}
	}
	env = getenv("FABENCH_PLUGINS");
	if (env && *env) {
		char *list = strdup(env), *save = NULL;
		if (!list)
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
			const char *base = strrchr(p, '/');
			char name[32];
			base = base ? base + 1 : p;
			/* libfabench-NAME.so -> NAME until the plugin names itself */
			if (sscanf(base, "libfabench-%31[^.]", name) != 1)
				snprintf(name, sizeof name, "%s", base);
			s = new_slot(r, name);
			if (!s)
				break;
			open_plugin(s, p);
		}
		free(list);
	}
	return FA_OK;
}

enum fa_rc fa_registry_load_plugin(struct fa_registry *r, const char *path, const char *name,
				   struct fa_err *err)
{
	struct fa_backend_slot *s = new_slot(r, name ? name : "plugin");
	if (!s)
		return fa_err_set(err, FA_ERR_BACKEND, "too many backends (at most %d)",
				  FA_MAX_BACKENDS);
	open_plugin(s, path);
	if (!s->loaded) {
		fa_err_set(err, FA_ERR_BACKEND, "%s", s->why);
		r->n--;
		return FA_ERR_BACKEND;
	}
	if (name)
		snprintf(s->name, sizeof s->name, "%s", name);
	return FA_OK;
}

void fa_registry_free(struct fa_registry *r)
{
	for (int i = r->n - 1; i >= 0; i--) {
		struct fa_backend_slot *s = &r->slots[i];
		if (s->loaded && s->be.iface.shutdown)
			s->be.iface.shutdown(s->be.context);
		if (s->dl)
			dlclose(s->dl);
		s->loaded = 0;
		s->dl = NULL;
	}
	r->n = 0;
}

struct fa_backend_slot *fa_registry_backend(struct fa_registry *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->slots[i].name, name) == 0)
			return &r->slots[i];
	return NULL;
}

const struct fa_kernel *fa_registry_kernel(struct fa_registry *r, const char *name,
					   struct fa_backend_slot **slot)
{
	for (int i = 0; i < r->n; i++) {
		struct fa_backend_slot *s = &r->slots[i];
		if (!s->loaded)
			continue;
		int n = s->be.iface.kernel_count(s->be.context);
		for (int j = 0; j < n; j++) {
			const struct fa_kernel *k = s->be.iface.kernel_get(s->be.context, j);
			if (fa_kernel_visible(k) && strcmp(k->name, name) == 0) {
				if (slot)
					*slot = s;
				return k;
			}
		}
	}
	return NULL;
}

int fa_kernel_supports(const struct fa_kernel *k, const struct fa_problem *p, char *why,
		       size_t why_size)
{
	if (!(k->dtypes & (1u << p->dtype))) {
		snprintf(why, why_size, "dtype %s not supported", fa_dtype_name(p->dtype));
		return 0;
	}
	if (k->head_dims) {
		int ok = 0;
		for (int i = 0; i < k->n_head_dims; i++)
			ok |= k->head_dims[i] == p->head_dim;
		if (!ok) {
			snprintf(why, why_size, "head_dim %d not instantiated", p->head_dim);
			return 0;
		}
	} else if (p->head_dim < k->head_dim_min || p->head_dim > k->head_dim_max) {
		snprintf(why, why_size, "head_dim %d outside %d..%d", p->head_dim, k->head_dim_min,
			 k->head_dim_max);
		return 0;
	}
	if (p->head_dim_v < k->head_dim_min || p->head_dim_v > k->head_dim_max) {
		snprintf(why, why_size, "head_dim_v %d outside %d..%d", p->head_dim_v,
			 k->head_dim_min, k->head_dim_max);
		return 0;
	}
	if (k->supports && !k->supports(p, why, why_size))
		return 0;
	return 1;
}

const char *fa_backend_strerror(const struct fa_backend_slot *s, int code, char *buf, size_t size)
{
	const char *w = s->be.iface.error_string ? s->be.iface.error_string(s->be.context, code) : NULL;
	snprintf(buf, size, "%s: %s", s->name, w ? w : "unknown error");
	return buf;
}

int fa_kernel_match(const char *pattern, const char *name)
{
	return fnmatch(pattern, name, 0) == 0;
}
