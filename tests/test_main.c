/* test_main.c - runs the registered unit tests: all of them, or the modules
 * (and module/name tests) named on the command line. Prints one line per
 * failure and ends with "N passed, N failed". */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../harness/base/text.h"
#include "test.h"

#define MAX_TESTS 1024

struct test {
	const char *module, *name;
	fa_test_fn fn;
};

static struct test tests[MAX_TESTS];
static int n_tests;
static int current_failures;
static const struct test *current;
static uint64_t seed_printed_for = (uint64_t)-1;
static char tmpdir[1024];
static const struct test *tmpdir_for; /* the test whose folder was emptied */
static char root[1024];

void fa_test_register(const char *module, const char *name, fa_test_fn fn)
{
	if (n_tests < MAX_TESTS)
		tests[n_tests++] = (struct test){module, name, fn};
}

void fa_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "FAIL %s/%s: %s:%d: ", current->module, current->name, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	current_failures++;
}

void fa_test_skip(const char *fmt, ...)
{
	va_list ap;
	printf("  skip: %s/%s: ", current->module, current->name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

uint64_t fa_test_seed(void)
{
	const char *env = getenv("FABENCH_TEST_SEED");
	uint64_t s;
	if (env && *env) {
		s = strtoull(env, NULL, 0);
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		s = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
		s ^= (uintptr_t)current; /* differ between tests started in one ns */
	}
	if (seed_printed_for != (uint64_t)(uintptr_t)current) {
		printf("  %s/%s: seed %llu (replay with FABENCH_TEST_SEED=%llu)\n", current->module,
		       current->name, (unsigned long long)s, (unsigned long long)s);
		seed_printed_for = (uint64_t)(uintptr_t)current;
	}
	return s;
}

static void mkdir_p(const char *path)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0777);
			*p = '/';
		}
	mkdir(buf, 0777);
}

/* nftw callbacks of empty_dir: folders writable first (a test may leave
 * one read-only), then everything removed, deepest first */
static int make_writable(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DNR)
		chmod(path, (sb->st_mode & 07777) | S_IRWXU);
	return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

static void empty_dir(const char *path)
{
	nftw(path, make_writable, 16, FTW_PHYS);
	nftw(path, remove_entry, 16, FTW_PHYS | FTW_DEPTH);
}

/* The test's own folder, emptied on the test's first call: what an earlier
 * run left there (a database's -wal and -shm beside a file the test
 * removes, say) never meets this one. */
const char *fa_test_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/build/test-tmp/%s-%s", fa_test_root(), current->module,
		 current->name);
	mkdir_p(tmpdir);
	if (tmpdir_for != current) {
		empty_dir(tmpdir);
		tmpdir_for = current;
	}
	return tmpdir;
}

const char *fa_test_root(void)
{
	if (!root[0]) {
		const char *env = getenv("FABENCH_ROOT");
		if (env && *env) {
			snprintf(root, sizeof root, "%s", env);
		} else if (!getcwd(root, sizeof root)) {
			snprintf(root, sizeof root, ".");
		}
	}
	return root;
}

int fa_test_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	const int ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int fa_test_write_script(const char *path, const char *text)
{
	return fa_test_write_file(path, text) == 0 && chmod(path, 0755) == 0 ? 0 : -1;
}

int fa_test_copy_file(const char *from, const char *to)
{
	size_t len = 0;
	char *data = fa_test_read_file(from, &len);
	FILE *f = data ? fopen(to, "wb") : NULL;
	int ok = f && fwrite(data, 1, len, f) == len;
	if (f && fclose(f) != 0)
		ok = 0;
	free(data);
	return ok ? 0 : -1;
}

char *fa_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, got;
	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, 4096, f);
		n += got;
	} while (got > 0);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int fa_test_count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

long fa_test_utf8_invalid_at(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	while (p < end) {
		int n = fa_utf8_len(p, end);
		if (n == 0)
			return (long)(p - (const unsigned char *)s);
		p += n;
	}
	return -1;
}

static int selected(const struct test *t, int argc, char **argv)
{
	char full[256];
	if (argc <= 1)
		return 1;
	snprintf(full, sizeof full, "%s/%s", t->module, t->name);
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], t->module) == 0 || strcmp(argv[i], full) == 0)
			return 1;
	return 0;
}

static int cmp_test(const void *a, const void *b)
{
	const struct test *x = a, *y = b;
	int c = strcmp(x->module, y->module);
	return c ? c : strcmp(x->name, y->name);
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, ran = 0;
	if (argc > 1 && (strcmp(argv[1], "--list") == 0)) {
		for (int i = 0; i < n_tests; i++)
			printf("%s/%s\n", tests[i].module, tests[i].name);
		return 0;
	}
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: fabench-test [--list] [MODULE | MODULE/TEST]...\n"
		       "Runs the unit tests (all, or those named). Environment:\n"
		       "  FABENCH_TEST_SEED=N  replay random data\n"
		       "  FABENCH_ROOT=DIR     repository root (default: the current folder)\n");
		return 0;
	}
	qsort(tests, (size_t)n_tests, sizeof tests[0], cmp_test);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < n_tests; i++) {
		if (!selected(&tests[i], argc, argv))
			continue;
		current = &tests[i];
		current_failures = 0;
		ran++;
		tests[i].fn();
		if (current_failures) {
			failed++;
			printf("not ok %s/%s\n", tests[i].module, tests[i].name);
		} else {
			passed++;
			printf("ok %s/%s\n", tests[i].module, tests[i].name);
		}
	}
	if (argc > 1 && ran == 0) {
		fprintf(stderr, "fabench-test: no test matches the names given\n");
		return 2;
	}
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
