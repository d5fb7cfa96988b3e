/* util.c - time stamps, paths, sizes, running a program without a shell. */
#include "util.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void fa_time_iso(char *buf, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int fa_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

int fa_mkdir_parent(const char *file_path)
{
	char buf[PATH_MAX];
	char *slash;
	snprintf(buf, sizeof buf, "%s", file_path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	return fa_mkdir_p(buf);
}

int fa_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes data[0..len) into the file at path, truncated (created with
 * `create`); 0, or -1 with errno set. */
static int write_in_place(const char *path, const char *data, size_t len, int create)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | (create ? O_CREAT : 0), 0666), e;
	if (fd < 0)
		return -1;
	if (fa_write_all(fd, data, len) != 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

int fa_replace_file(const char *path, const char *data, size_t len)
{
	char target[PATH_MAX], part[PATH_MAX + 16];
	struct stat sb;
	mode_t mode;
	int fd, e, exists = stat(path, &sb) == 0;

	if (exists && !S_ISREG(sb.st_mode))
		return write_in_place(path, data, len, 0); /* /dev/stdout, a FIFO: no rename */
	if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
		/* the file the link names is replaced, not the link; a link to
		 * nothing yet is written through, as fopen does */
		if (!realpath(path, target))
			return write_in_place(path, data, len, 1);
		path = target;
	}
	if (snprintf(part, sizeof part, "%s.XXXXXX", path) >= (int)sizeof part) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (exists && stat(path, &sb) == 0) {
		mode = sb.st_mode & 07777;
	} else {
		mode_t mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	if (fa_mkdir_parent(path) != 0)
		return -1;
	if ((fd = mkstemp(part)) < 0) {
		/* a file that may be written in a folder that may not: in place */
		if (exists && (errno == EACCES || errno == EPERM || errno == EROFS))
			return write_in_place(path, data, len, 0);
		return -1;
	}
	if (fchmod(fd, mode) != 0 || fa_write_all(fd, data, len) != 0) {
		e = errno;
		close(fd);
		unlink(part);
		errno = e;
		return -1;
	}
	if (close(fd) != 0 || rename(part, path) != 0) {
		e = errno;
		unlink(part);
		errno = e;
		return -1;
	}
	return 0;
}

int fa_path_writable(const char *file_path)
{
	char buf[PATH_MAX];
	struct stat st;
	if (snprintf(buf, sizeof buf, "%s", file_path) >= (int)sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (stat(buf, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			errno = EISDIR;
			return -1;
		}
		return access(buf, W_OK);
	}
	if (errno != ENOENT)
		return -1;
	/* the nearest folder that exists must be one, and writable */
	for (;;) {
		char *slash = strrchr(buf, '/');
		if (!slash)
			return access(".", W_OK);
		if (slash == buf) {
			buf[1] = '\0';
		} else {
			*slash = '\0';
		}
		if (stat(buf, &st) == 0) {
			if (!S_ISDIR(st.st_mode)) {
				errno = ENOTDIR;
				return -1;
			}
			return access(buf, W_OK);
		}
		if (errno != ENOENT)
			return -1;
		if (slash == buf)
			return -1;
	}
}

void fa_exe_dir(char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
	char *slash;
	buf[0] = '\0';
	if (n <= 0)
		return;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(buf, size, "%s", path);
}

/* What a file that is not a regular file is, for messages. */
static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISFIFO(mode))
		return "a fifo";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a plain file";
}

enum fa_rc fa_read_file(const char *path, size_t max_bytes, char **buf, size_t *len,
			struct stat *st_out, char *why, size_t why_size)
{
	struct stat st;
	char *b = NULL, max_text[32];
	size_t n = 0, cap;
	int fd, flags, e;
	*buf = NULL;
	*len = 0;
	/* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		snprintf(why, why_size, "%s", strerror(e));
		return e == ENOENT ? FA_ERR_NOT_FOUND : FA_ERR_IO;
	}
	if (fstat(fd, &st) != 0) {
		e = errno;
		close(fd);
		snprintf(why, why_size, "%s", strerror(e));
		return FA_ERR_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(why, why_size, "is not a regular file (%s)", file_kind(st.st_mode));
		return FA_ERR_INPUT;
	}
	fa_format_bytes((double)max_bytes, max_text, sizeof max_text);
	if (st.st_size < 0 || (uintmax_t)st.st_size > max_bytes) {
		close(fd);
		snprintf(why, why_size, "is too large (%jd bytes; at most %s)", (intmax_t)st.st_size,
			 max_text);
		return FA_ERR_INPUT;
	}
	/* a regular file does not block; reads go back to plain blocking ones */
	if ((flags = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
		e = errno;
		close(fd);
		snprintf(why, why_size, "%s", strerror(e));
		return FA_ERR_IO;
	}
	/* the size from fstat plus one byte (to see growth past it); files of
	 * /proc say 0 and are read in growing steps, never past max_bytes + 1 */
	cap = (size_t)st.st_size + 2;
	if (cap < 4096)
		cap = 4096;
	for (;;) {
		ssize_t got;
		if (n + 1 >= cap || !b) {
			size_t nc = b ? cap * 2 : cap;
			char *nb;
			if (nc > max_bytes + 2)
				nc = max_bytes + 2;
			if (!(nb = realloc(b, nc))) {
				free(b);
				close(fd);
				snprintf(why, why_size, "out of memory");
				return FA_ERR_NOMEM;
			}
			b = nb;
			cap = nc;
		}
		got = read(fd, b + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			e = errno;
			free(b);
			close(fd);
			snprintf(why, why_size, "%s", strerror(e));
			return FA_ERR_IO;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > max_bytes) {
			free(b);
			close(fd);
			snprintf(why, why_size, "is too large (more than %s)", max_text);
			return FA_ERR_INPUT;
		}
	}
	close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	if (st_out)
		*st_out = st;
	return FA_OK;
}

int fa_parse_size(const char *s, double *bytes)
{
	char *end;
	double v, mul = 1;
	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v >= 0) || isinf(v))
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1024.0; end++; break;
	case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'i' && mul > 1)
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	*bytes = v * mul;
	return 0;
}

void fa_format_bytes(double b, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	while (b >= 1024.0 && u < 4) {
		b /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0f B", b);
	else
		snprintf(buf, size, b < 10 ? "%.2f %s" : b < 100 ? "%.1f %s" : "%.0f %s", b, units[u]);
}

void fa_format_float(double x, char *buf, size_t size)
{
	for (int prec = 6; prec <= 9; prec++) {
		snprintf(buf, size, "%.*g", prec, x);
		if ((float)strtod(buf, NULL) == (float)x)
			return;
	}
}

int fa_run_capture(char *const argv[], char *out, size_t size)
{
	int fds[2], status;
	pid_t pid;
	size_t len = 0;
	ssize_t got;
	if (size)
		out[0] = '\0';
	if (pipe(fds) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		dup2(fds[1], 1);
		if (devnull >= 0) {
			dup2(devnull, 2);
			dup2(devnull, 0);
		}
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		char tmp[4096];
		got = read(fds[0], tmp, sizeof tmp);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got; i++)
			if (len + 1 < size)
				out[len++] = tmp[i];
	}
	close(fds[0]);
	if (size) {
		out[len] = '\0';
		while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
			out[--len] = '\0';
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) == 127 ? -1 : WEXITSTATUS(status);
}

int fa_run_output(char *const argv[], char **out, size_t max_bytes)
{
	int fds[2], status;
	pid_t pid;
	size_t len = 0, cap = 4096;
	ssize_t got;
	char *buf = malloc(cap);
	*out = NULL;
	if (!buf)
		return -1;
	buf[0] = '\0';
	if (pipe2(fds, O_CLOEXEC) != 0) {
		snprintf(buf, cap, "cannot make a pipe: %s", strerror(errno));
		*out = buf;
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(buf, cap, "cannot start '%s': %s", argv[0], strerror(errno));
		close(fds[0]);
		close(fds[1]);
		*out = buf;
		return -1;
	}
	if (pid == 0) {
		/* only async-signal-safe calls between fork and exec */
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		char tmp[8192];
		got = read(fds[0], tmp, sizeof tmp);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got && len < max_bytes; i++) {
			if (len + 1 >= cap) {
				char *grown = realloc(buf, cap * 2);
				if (!grown)
					break;
				buf = grown;
				cap *= 2;
			}
			buf[len++] = tmp[i];
		}
	}
	close(fds[0]);
	buf[len] = '\0';
	*out = buf;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 127)
		return -1;
	return WEXITSTATUS(status);
}

/* 1 when the n bytes at s name something on disk. */
static int path_exists_n(const char *s, size_t n)
{
	char p[PATH_MAX];
	if (n == 0 || n >= sizeof p)
		return 0;
	memcpy(p, s, n);
	p[n] = '\0';
	return access(p, F_OK) == 0;
}

static void copy_n(char *buf, size_t size, const char *s, size_t n)
{
	if (size == 0)
		return;
	if (n >= size)
		n = size - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

int fa_path_list_next(const char *list, size_t *pos, char *buf, size_t size)
{
	const size_t len = strlen(list);
	size_t start = *pos, end, first;
	while (start < len && list[start] == ':')
		start++;
	if (start >= len) {
		*pos = len;
		return 0;
	}
	first = start;
	while (first < len && list[first] != ':')
		first++;
	end = first;
	if (!path_exists_n(list + start, first - start))
		for (size_t c = first + 1; c <= len; c++)
			if ((c == len || list[c] == ':') && path_exists_n(list + start, c - start)) {
				end = c;
				break;
			}
	copy_n(buf, size, list + start, end - start);
	*pos = end < len ? end + 1 : len;
	return 1;
}

int fa_split_path_pair(const char *spec, char *a, size_t a_size, char *b, size_t b_size)
{
	const char *first = strchr(spec, ':'), *at = NULL;
	int found = 0;
	if (!first)
		return -1;
	for (const char *c = first; c; c = strchr(c + 1, ':'))
		if (path_exists_n(spec, (size_t)(c - spec)) && access(c + 1, F_OK) == 0) {
			at = c;
			found++;
		}
	if (found > 1)
		return -1;
	if (!at)
		at = first;
	copy_n(a, a_size, spec, (size_t)(at - spec));
	copy_n(b, b_size, at + 1, strlen(at + 1));
	return 0;
}

int fa_find_program(const char *name, char *buf, size_t size)
{
	const char *path = getenv("PATH");
	if (!name || !*name)
		return -1;
	if (strchr(name, '/')) {
		if (access(name, X_OK) != 0 || (size_t)snprintf(buf, size, "%s", name) >= size)
			return -1;
		return 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		struct stat st;
		if (n > 0 && (size_t)snprintf(buf, size, "%.*s/%s", (int)n, path, name) < size &&
		    stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return 0;
		path += n + (colon ? 1 : 0);
	}
	return -1;
}

uint64_t fa_fnv1a64(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull; /* the 64-bit FNV prime */
	}
	return h;
}

char *fa_join_argv(int argc, char **argv)
{
	size_t cap = 1;
	char *s, *w;
	for (int i = 0; i < argc; i++)
		cap += strlen(argv[i]) * 4 + 3;
	s = malloc(cap);
	if (!s)
		return NULL;
	w = s;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		int plain = *a != '\0';
		for (const char *c = a; *c; c++)
			if (!(('a' <= *c && *c <= 'z') || ('A' <= *c && *c <= 'Z') ||
			      ('0' <= *c && *c <= '9') || strchr("-_./=:,+@%", *c)))
				plain = 0;
		if (i)
			*w++ = ' ';
		if (plain) {
			w += sprintf(w, "%s", a);
			continue;
		}
		*w++ = '\'';
		for (const char *c = a; *c; c++) {
			if (*c == '\'') {
				memcpy(w, "'\\''", 4);
				w += 4;
			} else {
				*w++ = *c;
			}
		}
		*w++ = '\'';
	}
	*w = '\0';
	return s;
}

void fa_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : ""), *end = p + strlen((const char *)p);
	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20) {
				fprintf(f, "\\u%04x", *p);
			} else if (*p < 0x80) {
				fputc(*p, f);
			} else {
				/* JSON is UTF-8: a byte that starts no valid sequence
				 * (a plugin's text, a merged database's) is U+FFFD */
				int n = fa_utf8_len(p, end);
				if (n == 0) {
					fputs("\\ufffd", f);
				} else {
					fwrite(p, 1, (size_t)n, f);
					p += n - 1;
				}
			}
		}
	}
	fputc('"', f);
}

void fa_random_hex(char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[64];
	size_t n = size / 2, got = 0; /* bytes for size - 1 digits */
	if (n > sizeof raw)
		n = sizeof raw;
	while (got < n) {
		ssize_t r = getrandom(raw + got, n - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got < n) {
		FILE *f = fopen("/dev/urandom", "rb");
		got = f ? fread(raw, 1, n, f) : 0;
		if (f)
			fclose(f);
	}
	if (got < n) { /* no entropy source: a splitmix64 stream of the time and pid */
		struct timespec ts;
		uint64_t x;
		clock_gettime(CLOCK_REALTIME, &ts);
		x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
		for (size_t i = 0; i < n; i++) {
			uint64_t z = (x += 0x9e3779b97f4a7c15u);
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
			raw[i] = (unsigned char)(z ^ (z >> 31));
		}
	}
	for (size_t i = 0; size && i < size - 1; i++)
		buf[i] = hex[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	if (size)
		buf[size - 1] = '\0';
}
