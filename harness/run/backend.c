/* backend.c - the registry of backends: the built-in CPU backend, backend
 * plugins and kernel plugins opened with dlopen (each kept with the reason
 * when it did not load), the reading of their records across API versions,
 * and the checks of their required members. */
#include "backend.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/util.h"
#include "../suite/suite.h"

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

/* ---- reading a plugin's records across versions ---- */

/* The version 1 record (frozen in tests/abi/plugin_v1.h): the methods inline,
 * then the context. Its methods are the version 1 members of struct
 * fa_backend_i, which are that struct's first members. */
#define FA_BACKEND_I_V1_BYTES offsetof(struct fa_backend_i, stream)
typedef void (*fa_any_fn)(void);
struct fa_backend_v1 {
	int api_version;
	const char *name;
	fa_any_fn iface[FA_BACKEND_I_V1_BYTES / sizeof(fa_any_fn)];
	void *context;
};
_Static_assert(FA_BACKEND_I_V1_BYTES % sizeof(fa_any_fn) == 0, "methods are function pointers");

/* Big enough for what a plugin of any known version writes. */
union fa_backend_any {
	struct fa_backend v2;
	struct fa_backend_v1 v1;
};

/* Bytes of struct fa_backend_i a plugin of version v has. */
static size_t iface_bytes(int v)
{
	return v == 1	? FA_BACKEND_I_V1_BYTES
	       : v <= 3 ? offsetof(struct fa_backend_i, graph_create_sets)
			: sizeof(struct fa_backend_i);
}

/* Copies what init wrote into be. Returns 0, or -1 with why set (the
 * version is unknown or the record too small); then be->iface.shutdown is
 * set only when the layout was known. */
static int adopt_backend(const union fa_backend_any *u, const char *label,
			 struct fa_backend_loaded *be, char *why, size_t why_size)
{
	int v = u->v2.api_version;
	memset(be, 0, sizeof *be);
	be->api_version = v;
	if (v < FA_BACKEND_API_VERSION_MIN || v > FA_BACKEND_API_VERSION) {
		snprintf(why, why_size, "%s has backend API version %d; this fabench knows versions %d to %d",
			 label, v, FA_BACKEND_API_VERSION_MIN, FA_BACKEND_API_VERSION);
		return -1;
	}
	if (v == 1) {
		be->name = u->v1.name;
		be->context = u->v1.context;
		memcpy(&be->iface, u->v1.iface, iface_bytes(1));
		return 0;
	}
	if (u->v2.struct_size < sizeof(struct fa_backend)) {
		snprintf(why, why_size, "%s: struct fa_backend of size %u, version %d has %zu", label,
			 (unsigned)u->v2.struct_size, v, sizeof(struct fa_backend));
		return -1;
	}
	be->name = u->v2.name;
	be->context = u->v2.context;
	if (!u->v2.iface) {
		snprintf(why, why_size, "%s: backend '%s' has no 'iface'", label,
			 be->name ? be->name : "?");
		return -1;
	}
	memcpy(&be->iface, u->v2.iface, iface_bytes(v));
	return 0;
}

/* Runs init, asking again with each older version when the plugin refuses
 * (version 1 plugins wanted an exact match). Returns init's result of the
 * first call that succeeded, else of the first call, with its why. */
static int call_backend_init(fa_backend_plugin_init_fn init, union fa_backend_any *u, char *why,
			     size_t why_size)
{
	char later[512];
	int rc = -1;
	for (int v = FA_BACKEND_API_VERSION; v >= FA_BACKEND_API_VERSION_MIN; v--) {
		char *w = v == FA_BACKEND_API_VERSION ? why : later;
		size_t n = v == FA_BACKEND_API_VERSION ? why_size : sizeof later;
		memset(u, 0, sizeof *u);
		w[0] = '\0';
		int r = init(v, &u->v2, w, n);
		if (r == 0)
			return 0;
		if (v == FA_BACKEND_API_VERSION)
			rc = r;
	}
	return rc;
}

static int name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

int fa_kernel_validate(const struct fa_kernel *k, const char **missing, char *what,
		       size_t what_size)
{
	*missing = NULL;
	what[0] = '\0';
	if (!k->name || !*k->name) {
		*missing = "name";
		return 0;
	}
	if (!k->launch) {
		*missing = "launch";
		return 0;
	}
	if (!k->dtypes) {
		*missing = "dtypes";
		return 0;
	}
	if (k->n_params > 0 && !k->params) {
		*missing = "params";
		return 0;
	}
	if (k->n_head_dims > 0 && !k->head_dims) {
		*missing = "head_dims";
		return 0;
	}
	for (const char *c = k->name; *c; c++)
		if (!name_char_ok(*c)) {
			snprintf(what, what_size,
				 "name '%.64s' has '%c': use letters, digits, '_', '-' and '.'", k->name,
				 *c);
			return 0;
		}
	if (strlen(k->name) > 63) {
		snprintf(what, what_size, "name '%.64s...' is longer than 63 characters", k->name);
		return 0;
	}
	if (k->dtypes & ~((1u << FA_DTYPE_COUNT) - 1u)) {
		snprintf(what, what_size, "dtypes 0x%x has bits of no known dtype", k->dtypes);
		return 0;
	}
	if (k->head_dim_min < 1 || k->head_dim_max < k->head_dim_min) {
		snprintf(what, what_size, "head_dim range %d..%d is empty or below 1", k->head_dim_min,
			 k->head_dim_max);
		return 0;
	}
	if (k->head_dims && k->n_head_dims < 1) {
		snprintf(what, what_size, "head_dims given with n_head_dims %d", k->n_head_dims);
		return 0;
	}
	if (k->score_bytes < 0) {
		snprintf(what, what_size, "score_bytes %d is negative", k->score_bytes);
		return 0;
	}
	if (k->n_params < 0 || k->n_params > FA_KERNEL_MAX_PARAMS) {
		snprintf(what, what_size, "n_params %d outside 0..%d", k->n_params,
			 FA_KERNEL_MAX_PARAMS);
		return 0;
	}
	for (int i = 0; i < k->n_params; i++) {
		const struct fa_kernel_param *p = &k->params[i];
		if (!p->name || !*p->name) {
			snprintf(what, what_size, "param %d has no 'name'", i);
			return 0;
		}
		for (const char *c = p->name; *c; c++)
			if (!name_char_ok(*c) || *c == '.' || *c == '-') {
				snprintf(what, what_size,
					 "param name '%.64s' has '%c': use letters, digits and '_'",
					 p->name, *c);
				return 0;
			}
		/* --param K.NAME=V and the stored "NAME=V,..." read it back: a
		 * name like a number, one of another param or one cut short
		 * would not be this param */
		if (p->name[0] >= '0' && p->name[0] <= '9') {
			snprintf(what, what_size,
				 "param name '%.64s' starts with a digit: begin with a letter or '_'",
				 p->name);
			return 0;
		}
		if (strlen(p->name) > FA_KERNEL_PARAM_NAME_MAX) {
			snprintf(what, what_size, "param name '%.64s...' is longer than %d characters",
				 p->name, FA_KERNEL_PARAM_NAME_MAX);
			return 0;
		}
		for (int j = 0; j < i; j++)
			if (strcmp(k->params[j].name, p->name) == 0) {
				snprintf(what, what_size, "params %d and %d are both named '%s'", j, i,
					 p->name);
				return 0;
			}
		if (p->allowed && p->n_allowed < 1) {
			snprintf(what, what_size, "param '%.64s' has allowed values but n_allowed %d",
				 p->name, p->n_allowed);
			return 0;
		}
		/* the default is what runs without --param, and tune's built-in
		 * value: one the kernel takes */
		if (!p->allowed && p->min_value > p->max_value) {
			snprintf(what, what_size, "param '%.64s' has the empty range %d..%d", p->name,
				 p->min_value, p->max_value);
			return 0;
		}
		if (!p->allowed &&
		    (p->default_value < p->min_value || p->default_value > p->max_value)) {
			snprintf(what, what_size, "param '%.64s' has default %d outside its range %d..%d",
				 p->name, p->default_value, p->min_value, p->max_value);
			return 0;
		}
		if (p->allowed) {
			int ok = 0;
			for (int a = 0; a < p->n_allowed; a++)
				ok |= p->allowed[a] == p->default_value;
			if (!ok) {
				snprintf(what, what_size,
					 "param '%.64s' has default %d, not one of its allowed values",
					 p->name, p->default_value);
				return 0;
			}
		}
	}
	if (FA_RECORD_HAS(struct fa_kernel, k, pass) && k->pass != FA_PASS_FWD &&
	    k->pass != FA_PASS_BWD) {
		snprintf(what, what_size, "pass %d is neither FA_PASS_FWD nor FA_PASS_BWD", k->pass);
		return 0;
	}
	if (fa_kernel_pass(k) == FA_PASS_BWD && !fa_kernel_fwd_name(k)) {
		*missing = "fwd_kernel";
		return 0;
	}
	return 1;
}

int fa_kernel_pass(const struct fa_kernel *k)
{
	return FA_RECORD_HAS(struct fa_kernel, k, pass) ? k->pass : FA_PASS_FWD;
}

int fa_kernel_writes_lse(const struct fa_kernel *k)
{
	return FA_RECORD_HAS(struct fa_kernel, k, writes_lse) && k->writes_lse;
}

const char *fa_kernel_fwd_name(const struct fa_kernel *k)
{
	if (!FA_RECORD_HAS(struct fa_kernel, k, fwd_kernel) || !k->fwd_kernel || !*k->fwd_kernel)
		return NULL;
	return k->fwd_kernel;
}

/* Checks the methods every backend must have; returns the first missing
 * one's name, or NULL. */
static const char *missing_method(const struct fa_backend_i *i)
{
#define FA_REQUIRE_METHOD(m)                                                     \
	if (!i->m)                                                               \
		return #m
	FA_REQUIRE_METHOD(device_info);
	FA_REQUIRE_METHOD(alloc);
	FA_REQUIRE_METHOD(free);
	FA_REQUIRE_METHOD(upload);
	FA_REQUIRE_METHOD(download);
	FA_REQUIRE_METHOD(memset);
	FA_REQUIRE_METHOD(synchronize);
	FA_REQUIRE_METHOD(event_create);
	FA_REQUIRE_METHOD(event_record);
	FA_REQUIRE_METHOD(event_elapsed_ms);
	FA_REQUIRE_METHOD(event_destroy);
	FA_REQUIRE_METHOD(kernel_count);
	FA_REQUIRE_METHOD(kernel_get);
	FA_REQUIRE_METHOD(error_string);
	FA_REQUIRE_METHOD(shutdown);
#undef FA_REQUIRE_METHOD
	if ((i->graph_create || i->graph_launch || i->graph_destroy) &&
	    !(i->graph_create && i->graph_launch && i->graph_destroy))
		return !i->graph_create ? "graph_create" : !i->graph_launch ? "graph_launch"
									: "graph_destroy";
	if (i->graph_create_sets && !i->graph_create) /* replayed and freed by the same two */
		return "graph_create";
	return NULL;
}

/* Appends kernel k (from plugin, -1: the backend, whose file is file) to
 * s. Returns 0 or -1 when out of memory. */
static int slot_add_kernel(struct fa_backend_slot *s, const struct fa_kernel *k, int plugin,
			   const char *file)
{
	struct fa_slot_kernel *nk = realloc(s->kernels, sizeof *nk * (size_t)(s->n_kernels + 1));
	if (!nk)
		return -1;
	s->kernels = nk;
	s->kernels[s->n_kernels].k = k;
	s->kernels[s->n_kernels].plugin = plugin;
	s->kernels[s->n_kernels].file = file;
	s->n_kernels++;
	return 0;
}

/* The kernel of s called name, or NULL. */
static const struct fa_slot_kernel *slot_find(const struct fa_backend_slot *s, const char *name)
{
	for (int i = 0; i < s->n_kernels; i++)
		if (strcmp(s->kernels[i].k->name, name) == 0)
			return &s->kernels[i];
	return NULL;
}

/* Validates the methods and kernels of the freshly adopted backend in s and
 * lists its kernels. Returns 0, or -1 with s->why set. label names where the
 * backend came from ("plugin build/x.so", "built-in backend"). */
static int check_backend(struct fa_backend_slot *s, const char *label)
{
	const struct fa_backend_loaded *be = &s->be;
	const char *name = be->name && *be->name ? be->name : s->name, *miss;
	char what[256];
	int n;
	if ((miss = missing_method(&be->iface)) != NULL) {
		snprintf(s->why, sizeof s->why, "%s: backend '%s' has no '%s'", label, name, miss);
		return -1;
	}
	n = be->iface.kernel_count(be->context);
	if (n < 0) {
		snprintf(s->why, sizeof s->why, "%s: backend '%s' has kernel_count %d", label, name, n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const struct fa_kernel *k = be->iface.kernel_get(be->context, i);
		if (!k) {
			snprintf(s->why, sizeof s->why, "%s: backend '%s' has no kernel %d of %d", label,
				 name, i, n);
			return -1;
		}
		if (!fa_kernel_validate(k, &miss, what, sizeof what)) {
			if (miss && k->name && *k->name)
				snprintf(s->why, sizeof s->why, "%s: backend '%s' has no '%s' in kernel '%.64s'",
					 label, name, miss, k->name);
			else if (miss)
				snprintf(s->why, sizeof s->why, "%s: backend '%s' has no '%s' in kernel %d",
					 label, name, miss, i);
			else
				snprintf(s->why, sizeof s->why, "%s: backend '%s', kernel '%.64s': %s", label,
					 name, k->name, what);
			return -1;
		}
		if (slot_find(s, k->name)) {
			snprintf(s->why, sizeof s->why, "%s: backend '%s' has two kernels named '%.64s'",
				 label, name, k->name);
			return -1;
		}
		if (slot_add_kernel(s, k, -1, NULL) != 0) {
			snprintf(s->why, sizeof s->why, "out of memory");
			return -1;
		}
	}
	return 0;
}

/* Marks s loaded once adopt_backend succeeded: checks it, fills its device
 * info (a backend whose device_info fails is still usable, with the reason
 * in its name). On a failed check the backend is shut down and s->why says
 * why; returns -1. */
static int slot_ready(struct fa_backend_slot *s, const char *label)
{
	if (check_backend(s, label) != 0) {
		if (s->be.iface.shutdown)
			s->be.iface.shutdown(s->be.context);
		free(s->kernels);
		s->kernels = NULL;
		s->n_kernels = 0;
		return -1;
	}
	if (s->be.name && *s->be.name)
		snprintf(s->name, sizeof s->name, "%s", s->be.name);
	s->loaded = 1;
	s->why[0] = '\0';
	if (s->be.iface.device_info(s->be.context, &s->info) != 0)
		snprintf(s->info.name, sizeof s->info.name, "(device info unavailable)");
	return 0;
}

/* Opens the backend plugin at path (already dlopen'ed as dl, or NULL) into
 * slot s. On failure s->why says why and s stays unloaded. */
/* A plugin that did not start may still say which kernels it has
 * (FA_PLUGIN_KERNELS_SYMBOL): keeps its table, and the plugin open, for
 * `fabench kernels`. Returns 1 when it did. */
static int keep_idle_kernels(struct fa_backend_slot *s)
{
	fa_backend_plugin_kernels_fn fn;
	const struct fa_kernel *t;
	int n = 0;
	const char *miss;
	char what[256];
	*(void **)&fn = dlsym(s->dl, FA_PLUGIN_KERNELS_SYMBOL);
	/* 4096: far above any real table, so a wild count is not walked */
	if (!fn || !(t = fn(FA_BACKEND_API_VERSION, &n)) || n <= 0 || n > 4096)
		return 0;
	for (int i = 0; i < n; i++)
		if (!fa_kernel_validate(&t[i], &miss, what, sizeof what))
			return 0; /* a table `fabench kernels` could not print: list nothing */
	s->idle_kernels = t;
	s->n_idle_kernels = n;
	return 1;
}

static void open_plugin(struct fa_backend_slot *s, const char *path, void *dl)
{
	fa_backend_plugin_init_fn init;
	union fa_backend_any u;
	char label[600];
	snprintf(s->path, sizeof s->path, "%s", path);
	snprintf(label, sizeof label, "plugin %s", path);
	if (!dl && access(path, R_OK) != 0) {
		snprintf(s->why, sizeof s->why, "not built: %s does not exist", path);
		return;
	}
	s->dl = dl ? dl : dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!s->dl) {
		snprintf(s->why, sizeof s->why, "cannot load %s: %s", path, dlerror());
		return;
	}
	*(void **)&init = dlsym(s->dl, FA_PLUGIN_INIT_SYMBOL);
	if (!init) {
		snprintf(s->why, sizeof s->why, "%s has no symbol %s", path, FA_PLUGIN_INIT_SYMBOL);
		goto fail;
	}
	if (call_backend_init(init, &u, s->why, sizeof s->why) != 0) {
		if (!s->why[0])
			snprintf(s->why, sizeof s->why, "plugin refused to start");
		goto fail;
	}
	if (adopt_backend(&u, label, &s->be, s->why, sizeof s->why) != 0) {
		if (s->be.iface.shutdown)
			s->be.iface.shutdown(s->be.context);
		goto fail;
	}
	if (slot_ready(s, label) != 0)
		goto fail;
	return;
fail:
	if (keep_idle_kernels(s))
		return;
	dlclose(s->dl);
	s->dl = NULL;
}

/* ---- kernel plugins ---- */

/* Where kernel k of s came from, for messages: "PATH" of a plugin, "backend
 * 'cuda' (PATH)" or "the built-in cpu backend". */
static void origin_words(const struct fa_registry *r, const struct fa_backend_slot *s,
			 const struct fa_slot_kernel *sk, char *buf, size_t size)
{
	if (sk->plugin >= 0)
		snprintf(buf, size, "%s", r->plugins[sk->plugin].path);
	else if (s->path[0])
		snprintf(buf, size, "backend '%s' (%s)", s->name, s->path);
	else
		snprintf(buf, size, "the built-in %s backend", s->name);
}

static void append_why(struct fa_kernel_plugin_slot *p, const char *fmt, const char *a,
		       const char *b)
{
	size_t len = strlen(p->why);
	if (len && len + 2 < sizeof p->why) {
		memcpy(p->why + len, "; ", 3);
		len += 2;
	}
	if (len < sizeof p->why)
		snprintf(p->why + len, sizeof p->why - len, fmt, a, b);
	p->refused = 1;
}

/* Offers backend slot si to kernel plugin pi. A refusal (the plugin's, or
 * ours: a bad record, a name that exists) is noted in the plugin's why. */
static void attach(struct fa_registry *r, int pi, int si)
{
	struct fa_kernel_plugin_slot *p = &r->plugins[pi];
	struct fa_backend_slot *s = &r->slots[si];
	struct fa_kernel_plugin rec;
	char why[1024] = "", what[256], other[600];
	const char *miss;
	int rc, n, first = s->n_kernels;
	if (!s->loaded || p->n_att >= FA_MAX_BACKENDS)
		return;
	memset(&rec, 0, sizeof rec);
	rc = p->init(FA_BACKEND_API_VERSION, s->name, &rec, why, sizeof why);
	if (rc == FA_KERNEL_PLUGIN_DECLINED) { /* not a refusal: it has none for s */
		const int was = p->refused;
		append_why(p, "%s: %s", s->name, why[0] ? why : "no kernels for this backend");
		p->refused = was;
		return;
	}
	if (rc != FA_KERNEL_PLUGIN_ADDED) {
		append_why(p, "%s: %s", s->name, why[0] ? why : "the plugin failed to start");
		return;
	}
	if (rec.api_version < 2 || rec.api_version > FA_BACKEND_API_VERSION) {
		snprintf(why, sizeof why,
			 "kernel plugin API version %d; this fabench knows versions 2 to %d",
			 rec.api_version, FA_BACKEND_API_VERSION);
		append_why(p, "%s: %s", s->name, why);
		return; /* an unknown layout: not even shutdown can be trusted */
	}
	if (rec.struct_size < sizeof rec) {
		snprintf(why, sizeof why, "struct fa_kernel_plugin of size %u, version %d has %zu",
			 (unsigned)rec.struct_size, rec.api_version, sizeof rec);
		append_why(p, "%s: %s", s->name, why);
		return;
	}
	if (!rec.kernel_count || !rec.kernel_get) {
		snprintf(why, sizeof why, "kernel plugin has no '%s'",
			 !rec.kernel_count ? "kernel_count" : "kernel_get");
		goto refuse;
	}
	n = rec.kernel_count(rec.context);
	if (n < 0) {
		snprintf(why, sizeof why, "kernel plugin has kernel_count %d", n);
		goto refuse;
	}
	for (int i = 0; i < n; i++) {
		const struct fa_kernel *k = rec.kernel_get(rec.context, i);
		if (!k) {
			snprintf(why, sizeof why, "kernel plugin has no kernel %d of %d", i, n);
			goto refuse;
		}
		if (!fa_kernel_validate(k, &miss, what, sizeof what)) {
			if (miss && k->name && *k->name)
				snprintf(why, sizeof why, "kernel '%.64s' has no '%s'", k->name, miss);
			else if (miss)
				snprintf(why, sizeof why, "kernel %d has no '%s'", i, miss);
			else
				snprintf(why, sizeof why, "kernel '%.64s': %s", k->name, what);
			goto refuse;
		}
		/* a name must be new, except the same plugin's kernel in another
		 * backend slot (--ab loads a backend twice) */
		for (int j = 0; j < r->n; j++) {
			const struct fa_slot_kernel *sk;
			if (j != si && (s->borrowed || r->slots[j].borrowed))
				continue; /* an --ab side of kernel plugins: its own names */
			if (!r->slots[j].loaded || !(sk = slot_find(&r->slots[j], k->name)))
				continue;
			if (j != si && sk->plugin == pi)
				continue;
			origin_words(r, &r->slots[j], sk, other, sizeof other);
			snprintf(why, sizeof why, "kernel '%.64s' is already provided by %s", k->name,
				 other);
			goto refuse;
		}
		if (slot_add_kernel(s, k, pi, p->path) != 0) {
			snprintf(why, sizeof why, "out of memory");
			goto refuse;
		}
	}
	if (rec.error_string && s->n_plugin_errors < FA_MAX_KERNEL_PLUGINS) {
		s->plugin_errors[s->n_plugin_errors].fn = rec.error_string;
		s->plugin_errors[s->n_plugin_errors].ctx = rec.context;
		s->n_plugin_errors++;
	}
	p->att[p->n_att].slot = si;
	p->att[p->n_att].n_kernels = n;
	p->att[p->n_att].rec = rec;
	p->n_att++;
	if (!p->name[0] && rec.name)
		snprintf(p->name, sizeof p->name, "%s", rec.name);
	return;
refuse:
	s->n_kernels = first; /* drop what this plugin added */
	if (rec.shutdown)
		rec.shutdown(rec.context);
	append_why(p, "%s: %s", s->name, why);
}

/* 1 when path names a file already opened as a backend or kernel plugin. */
static int already_open(const struct fa_registry *r, const char *path)
{
	char a[PATH_MAX], b[PATH_MAX];
	if (!realpath(path, a))
		return 0;
	for (int i = 0; i < r->n; i++)
		if (r->slots[i].path[0] && realpath(r->slots[i].path, b) && strcmp(a, b) == 0)
			return 1;
	for (int i = 0; i < r->n_plugins; i++)
		if (realpath(r->plugins[i].path, b) && strcmp(a, b) == 0)
			return 1;
	return 0;
}

/* Opens one plugin file: a backend plugin gets a slot, a kernel plugin an
 * entry in r->plugins (added to the backends later); a file that is neither
 * is recorded as a kernel plugin that did not load. Returns FA_OK, or
 * FA_ERR_NOMEM. */
static enum fa_rc open_any(struct fa_registry *r, const char *path, struct fa_err *err)
{
	const char *base = strrchr(path, '/');
	char name[32];
	void *dl;
	struct fa_kernel_plugin_slot *p;
	base = base ? base + 1 : path;
	if (already_open(r, path))
		return FA_OK;
	/* libfabench-NAME.so: a backend named NAME (until it names itself) */
	if (sscanf(base, "libfabench-%31[^.]", name) == 1 && access(path, R_OK) != 0) {
		struct fa_backend_slot *s = new_slot(r, name);
		if (s)
			open_plugin(s, path, NULL);
		return FA_OK;
	}
	if (r->n_plugins >= FA_MAX_KERNEL_PLUGINS)
		return fa_err_set(err, FA_ERR_BACKEND, "too many plugins (at most %d)",
				  FA_MAX_KERNEL_PLUGINS);
	dl = access(path, R_OK) == 0 ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (dl && dlsym(dl, FA_PLUGIN_INIT_SYMBOL)) {
		if (sscanf(base, "libfabench-%31[^.]", name) != 1)
			snprintf(name, sizeof name, "%s", base);
		struct fa_backend_slot *s = new_slot(r, name);
		if (!s) {
			dlclose(dl);
			return FA_OK;
		}
		open_plugin(s, path, dl);
		return FA_OK;
	}
	p = &r->plugins[r->n_plugins++];
	memset(p, 0, sizeof *p);
	snprintf(p->path, sizeof p->path, "%s", path);
	p->refused = 1; /* until it opens */
	if (access(path, R_OK) != 0) {
		snprintf(p->why, sizeof p->why, "%s does not exist", path);
		return FA_OK;
	}
	if (!dl) {
		snprintf(p->why, sizeof p->why, "cannot load %s: %s", path, dlerror());
		return FA_OK;
	}
	*(void **)&p->init = dlsym(dl, FA_KERNEL_PLUGIN_INIT_SYMBOL);
	if (!p->init) {
		snprintf(p->why, sizeof p->why, "%s has neither %s nor %s", path,
			 FA_KERNEL_PLUGIN_INIT_SYMBOL, FA_PLUGIN_INIT_SYMBOL);
		dlclose(dl);
		return FA_OK;
	}
	p->dl = dl;
	p->refused = 0;
	return FA_OK;
}

static int ends_with_so(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return d->d_name[0] != '.' && n > 3 && strcmp(d->d_name + n - 3, ".so") == 0;
}

/* Opens path: a file, or every *.so file of a folder in name order. */
static enum fa_rc open_path(struct fa_registry *r, const char *path, struct fa_err *err)
{
	struct stat st;
	struct dirent **names = NULL;
	enum fa_rc rc = FA_OK;
	int n;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return open_any(r, path, err);
	n = scandir(path, &names, ends_with_so, alphasort);
	for (int i = 0; i < n; i++) {
		char full[1024];
		snprintf(full, sizeof full, "%s/%s", path, names[i]->d_name);
		if (rc == FA_OK)
			rc = open_any(r, full, err);
		free(names[i]);
	}
	free(names);
	return rc;
}

enum fa_rc fa_registry_load(struct fa_registry *r, const char *exe_dir, struct fa_err *err)
{
	struct fa_backend_slot *s;
	union fa_backend_any u;
	char why[512] = "", path[1024];
	const char *env;
	enum fa_rc rc = FA_OK;

	memset(r, 0, sizeof *r);
	s = new_slot(r, "cpu");
	if (fa_cpu_backend_init(FA_BACKEND_API_VERSION, &u.v2, why, sizeof why) != 0)
		return fa_err_set(err, FA_ERR_BACKEND, "cpu backend failed to start: %s", why);
	if (adopt_backend(&u, "built-in backend", &s->be, s->why, sizeof s->why) != 0 ||
	    slot_ready(s, "built-in backend") != 0) {
		rc = fa_err_set(err, FA_ERR_BACKEND, "cpu backend failed to start: %s", s->why);
		r->n = 0;
		return rc;
	}

	if (exe_dir && *exe_dir) {
		static const char *const plugins[] = {"cuda", "hip"};
		for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++) {
			s = new_slot(r, plugins[i]);
			snprintf(path, sizeof path, "%s/libfabench-%s.so", exe_dir, plugins[i]);
			open_plugin(s, path, NULL);
		}
	}
	env = getenv("FABENCH_PLUGINS");
	if (env && *env) {
		char entry[PATH_MAX];
		size_t pos = 0;
		while (rc == FA_OK && fa_path_list_next(env, &pos, entry, sizeof entry))
			rc = open_path(r, entry, err);
	}
	if (rc == FA_OK && exe_dir && *exe_dir) {
		snprintf(path, sizeof path, "%s/plugins", exe_dir);
		if (access(path, R_OK) == 0)
			rc = open_path(r, path, err);
	}
	if (rc != FA_OK) {
		fa_registry_free(r);
		return rc;
	}
	for (int pi = 0; pi < r->n_plugins; pi++)
		for (int si = 0; si < r->n && r->plugins[pi].init; si++)
			attach(r, pi, si);
	return FA_OK;
}

/* What path holds: 0 nothing loadable (or no such file), 1 a backend
 * plugin, 2 a kernel plugin, 3 a shared object that is neither. The file
 * stays loaded: a plugin with GPU code registers it with the GPU runtime as
 * it loads and takes it back as it is closed, and a build closed and opened
 * again (as the caller does next) left the CUDA runtime unable to launch
 * it: run --ab of two builds of the CUDA plugin hung with no output, or
 * failed with cudaErrorInvalidKernelImage (H200, 2026-12-02). Kept open, the
 * next dlopen of the path is the same load. */
static int plugin_file_kind(const char *path)
{
	void *dl = access(path, R_OK) == 0 ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!dl)
		return 0;
	return dlsym(dl, FA_PLUGIN_INIT_SYMBOL)		 ? 1
	       : dlsym(dl, FA_KERNEL_PLUGIN_INIT_SYMBOL) ? 2
							 : 3;
}

int fa_plugin_file_is_kernel_plugin(const char *path)
{
	return plugin_file_kind(path) == 2;
}

enum fa_rc fa_registry_load_plugin(struct fa_registry *r, const char *path, const char *name,
				   struct fa_err *err)
{
	struct fa_backend_slot *s = new_slot(r, name ? name : "plugin");
	if (!s)
		return fa_err_set(err, FA_ERR_BACKEND, "too many backends (at most %d)",
				  FA_MAX_BACKENDS);
	open_plugin(s, path, NULL);
	if (!s->loaded) {
		/* a file the user named that is not there or no backend plugin is
		 * bad input; a backend that does not start here (no device) is not */
		int kind = plugin_file_kind(path);
		enum fa_rc rc = access(path, F_OK) != 0 ? FA_ERR_NOT_FOUND
				: kind != 1			? FA_ERR_USAGE
								: FA_ERR_BACKEND;
		fa_err_set(err, rc, "%s%s", s->why,
			   kind == 2 ? " (it is a kernel plugin, fa_kernel_plugin_init)" : "");
		r->n--;
		return rc;
	}
	if (name)
		snprintf(s->name, sizeof s->name, "%s", name);
	for (int pi = 0; pi < r->n_plugins; pi++)
		if (r->plugins[pi].init)
			attach(r, pi, r->n - 1);
	return FA_OK;
}

/* The index in r->plugins of the kernel plugin file path, or -1. */
static int find_kernel_plugin(const struct fa_registry *r, const char *path)
{
	char a[PATH_MAX], b[PATH_MAX];
	if (!realpath(path, a))
		return -1;
	for (int i = 0; i < r->n_plugins; i++)
		if (realpath(r->plugins[i].path, b) && strcmp(a, b) == 0)
			return i;
	return -1;
}

enum fa_rc fa_registry_load_kernel_side(struct fa_registry *r, const char *path,
					struct fa_backend_slot *host, struct fa_err *err)
{
	struct fa_backend_slot *s;
	struct fa_kernel_plugin_slot *p;
	size_t why_len;
	int pi, n_att;
	enum fa_rc rc;
	if (access(path, F_OK) != 0)
		return fa_err_set(err, FA_ERR_NOT_FOUND, "%s does not exist", path);
	if (!host || !host->loaded || host->borrowed)
		return fa_err_set(err, FA_ERR_USAGE, "no backend for the kernel plugin %s", path);
	if ((pi = find_kernel_plugin(r, path)) < 0) {
		if ((rc = open_any(r, path, err)) != FA_OK)
			return rc;
		if ((pi = find_kernel_plugin(r, path)) < 0)
			return fa_err_set(err, FA_ERR_USAGE, "%s is not a kernel plugin", path);
	}
	p = &r->plugins[pi];
	if (!p->init)
		return fa_err_set(err, FA_ERR_USAGE, "plugin %s: %s", path, p->why);
	if (!(s = new_slot(r, host->name)))
		return fa_err_set(err, FA_ERR_BACKEND, "too many backends (at most %d)",
				  FA_MAX_BACKENDS);
	snprintf(s->path, sizeof s->path, "%s", host->path);
	s->be = host->be;
	s->info = host->info;
	s->loaded = 1;
	s->borrowed = 1;
	for (int i = 0; i < host->n_kernels; i++)
		if (host->kernels[i].plugin < 0 &&
		    slot_add_kernel(s, host->kernels[i].k, -1, NULL) != 0) {
			free(s->kernels);
			r->n--;
			return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
		}
	why_len = strlen(p->why);
	n_att = p->n_att;
	attach(r, pi, r->n - 1);
	if (p->n_att == n_att) { /* refused or declined: say what it said */
		const char *said = p->why + why_len;
		while (*said == ';' || *said == ' ')
			said++;
		fa_err_set(err, FA_ERR_USAGE, "plugin %s: %s", path, said);
		p->why[why_len] = '\0';
		free(s->kernels);
		memset(s, 0, sizeof *s);
		r->n--;
		return FA_ERR_USAGE;
	}
	return FA_OK;
}

void fa_registry_free(struct fa_registry *r)
{
	/* kernel plugins first: their kernels may use what the backend holds */
	for (int i = r->n_plugins - 1; i >= 0; i--) {
		struct fa_kernel_plugin_slot *p = &r->plugins[i];
		for (int j = p->n_att - 1; j >= 0; j--)
			if (p->att[j].rec.shutdown)
				p->att[j].rec.shutdown(p->att[j].rec.context);
		p->n_att = 0;
	}
	for (int i = r->n - 1; i >= 0; i--) {
		struct fa_backend_slot *s = &r->slots[i];
		if (s->borrowed) { /* the backend is another slot's */
			free(s->kernels);
			memset(s, 0, sizeof *s);
			continue;
		}
		if (s->loaded && s->be.iface.shutdown)
			s->be.iface.shutdown(s->be.context);
		if (s->dl)
			dlclose(s->dl);
		free(s->kernels);
		s->kernels = NULL;
		s->n_kernels = 0;
		s->n_plugin_errors = 0;
		s->loaded = 0;
		s->dl = NULL;
		s->idle_kernels = NULL;
		s->n_idle_kernels = 0;
	}
	for (int i = r->n_plugins - 1; i >= 0; i--)
		if (r->plugins[i].dl)
			dlclose(r->plugins[i].dl);
	r->n = 0;
	r->n_plugins = 0;
}

int fa_backend_kernel_count(const struct fa_backend_slot *s)
{
	return s->loaded ? s->n_kernels : 0;
}

const struct fa_kernel *fa_backend_kernel_get(const struct fa_backend_slot *s, int i)
{
	return i >= 0 && i < s->n_kernels ? s->kernels[i].k : NULL;
}

const char *fa_registry_kernel_origin(const struct fa_registry *r, const struct fa_backend_slot *s,
				      int i)
{
	if (i < 0 || i >= s->n_kernels)
		return "";
	if (s->kernels[i].plugin >= 0)
		return r->plugins[s->kernels[i].plugin].path;
	return s->path;
}

const char *fa_backend_kernel_plugin_file(const struct fa_backend_slot *s,
					  const struct fa_kernel *k)
{
	for (int i = 0; s && i < s->n_kernels; i++)
		if (s->kernels[i].k == k)
			return s->kernels[i].file;
	return NULL;
}

void fa_backend_launch_args_init(const struct fa_backend_slot *s, struct fa_launch_args *a)
{
	memset(a, 0, sizeof *a);
	a->struct_size = (uint32_t)sizeof *a;
	a->backend_ctx = s->be.context;
	a->stream = s->be.iface.stream ? s->be.iface.stream(s->be.context) : NULL;
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
		int n = fa_backend_kernel_count(s);
		for (int j = 0; j < n; j++) {
			const struct fa_kernel *k = fa_backend_kernel_get(s, j);
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

const struct fa_kernel *fa_backend_kernel_find(const struct fa_backend_slot *s, const char *name)
{
	const struct fa_slot_kernel *sk = slot_find(s, name);
	return sk ? sk->k : NULL;
}

const char *fa_backend_strerror(const struct fa_backend_slot *s, int code, char *buf, size_t size)
{
	const char *w = NULL;
	for (int i = 0; i < s->n_plugin_errors && !w; i++)
		w = s->plugin_errors[i].fn(s->plugin_errors[i].ctx, code);
	if (!w && s->be.iface.error_string)
		w = s->be.iface.error_string(s->be.context, code);
	snprintf(buf, size, "%s: %s", s->name, w ? w : "unknown error");
	return buf;
}

int fa_kernel_match(const char *pattern, const char *name)
{
	return fnmatch(pattern, name, 0) == 0;
}
