/* gnuplot.c - gnuplot's side of the plot module: growing strings, the
 * script text that keeps user text data (never code), and running gnuplot
 * on a script in a temporary folder with a time limit (fa_plot_render,
 * fa_plot_svg). The script writes "plot.png" or "plot.svg" in gnuplot's
 * working folder; fa_plot_render moves the image where it was asked for.
 *
 * Text is drawn with enhanced text off: kernel names are full of '_', which
 * gnuplot would read as subscripts.
 */
#include "plot_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/text.h"
#include "../base/util.h"

/* gnuplot draws a plot in well under a second; two minutes means stuck. */
#define PLOT_GNUPLOT_TIMEOUT_MS 120000

/* How much of gnuplot's stderr goes into an error message. */
#define PLOT_STDERR_MAX 1500

/* ---- Growing strings ------------------------------------------------------- */

void fa_sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 128;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->oom = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
}

/* The text so far ("" when empty); owned by b. */
const char *fa_sb_str(const struct sbuf *b)
{
	return b->s && !b->oom ? b->s : "";
}

void fa_sb_free(struct sbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof *b);
}


/* ---- Script text ------------------------------------------------------------ */

/* Text from the database, the suite or the command line never reaches
 * gnuplot as code. gnuplot runs `backquoted` text in double-quoted strings
 * and in bare command text as a shell command, expands @macros outside
 * quotes, and reads a line break as the end of a command (and a line that
 * starts with '!' as a shell command). So user text goes only
 *   - into single-quoted strings (fa_gp_str, fa_gp_text): inside them gnuplot
 *     does no substitution and knows no escape but '' for a quote; or
 *   - into quoted columns of datablocks (fa_gp_data_str), whose lines gnuplot
 *     stores as they are, without substitution. Every data line starts with
 *     a number written here, so no text can end a block early (a block
 *     ends at a line starting with its terminator);
 * and every control character in it (line breaks, CR, tabs, escapes)
 * becomes a space, every byte that is not UTF-8 U+FFFD. The only double-quoted strings in a script are fixed
 * ones: "\n" between the lines of a title, "'" for a quote that starts a
 * string (gp_quote). Text is drawn with enhanced text off (fa_gp_begin), so
 * ^ _ @ { } in names are drawn as they are. */
static int gp_plain(unsigned char c)
{
	return c >= 0x20 && c != 0x7f;
}

/* Writes the character at s (a UTF-8 sequence, or one byte: a control
 * character as a space, a byte that starts no valid sequence as U+FFFD, so
 * that the script, which says `set encoding utf8`, and an SVG drawn from it
 * stay UTF-8) with c, itself when plain, in its place; returns the bytes
 * read. */
static int gp_char(FILE *out, const char *s, int c)
{
	const unsigned char *p = (const unsigned char *)s;
	if (*p < 0x80) {
		fputc(gp_plain(*p) ? c : ' ', out);
		return 1;
	}
	int n = fa_utf8_len(p, p + strnlen(s, 4));
	if (n == 0) {
		fputs("\xef\xbf\xbd", out);
		return 1;
	}
	fwrite(s, 1, (size_t)n, out);
	return n;
}

/* s as a gnuplot string expression of single-quoted strings: inside them
 * '' is a quote, and nothing else is special. gnuplot reads a string that
 * starts with '' as the empty string, so a quote at the start of a piece
 * is the fixed string "'" before it. lines != 0: each line of s is a piece
 * and "\n" joins them (a line break in titles and tic labels); else line
 * breaks become spaces. Other control characters become spaces. */
static void gp_quote(FILE *out, const char *s, int lines)
{
	for (;;) {
		for (; s && *s == '\''; s++)
			fputs("\"'\".", out);
		fputc('\'', out);
		while (s && *s && !(lines && *s == '\n')) {
			if (*s == '\'')
				fputc('\'', out);
			s += gp_char(out, s, *s);
		}
		fputc('\'', out);
		if (!s || !*s)
			return;
		fputs(".\"\\n\".", out); /* a line break */
		s++;
	}
}

/* s as a single-quoted string (gp_quote), line breaks as spaces. */
void fa_gp_str(FILE *out, const char *s)
{
	gp_quote(out, s, 0);
}

/* s as single-quoted strings, its lines joined by "\n" (gp_quote). */
void fa_gp_text(FILE *out, const char *s)
{
	gp_quote(out, s, 1);
}

/* s as a quoted column of a datablock: gnuplot has no escape there, so a
 * double quote becomes a single one, and control characters spaces (a
 * line break would end the row). */
void fa_gp_data_str(FILE *out, const char *s)
{
	fputc('"', out);
	while (s && *s)
		s += gp_char(out, s, *s == '"' ? '\'' : *s);
	fputc('"', out);
}

/* A number for the script: six significant digits are more than a plot
 * resolves, and print the same on every machine. */
void fa_gp_num(FILE *out, double x)
{
	fprintf(out, "%.6g", x);
}

/* The terminal, the output file and the common settings. */
void fa_gp_begin(FILE *out, const struct fa_plot_opts *o, int width, int height)
{
	int w = o->width > 0 ? o->width : width, h = o->height > 0 ? o->height : height;
	fprintf(out, "# fabench plot %s, generated by fabench: 'gnuplot THIS_FILE' writes plot.%s\n",
		fa_plot_kind_name(o->kind), o->format == FA_PLOT_SVG ? "svg" : "png");
	if (o->format == FA_PLOT_SVG) {
		fprintf(out, "set terminal svg size %d,%d font 'sans,11' background rgb 'white'\n", w,
			h);
	} else {
		/* pngcairo draws smoother lines; gnuplot-nox builds may only have
		 * libgd's png */
		fprintf(out,
			"if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
			"    set terminal pngcairo size %d,%d font 'sans,10' background rgb 'white'\n"
			"} else {\n"
			"    set terminal png size %d,%d font 'sans,10' background rgb 'white'\n"
			"}\n",
			w, h, w, h);
	}
	fprintf(out, "set output 'plot.%s'\n", o->format == FA_PLOT_SVG ? "svg" : "png");
	fputs("set encoding utf8\nset termoption noenhanced\n", out);
}

/* A datablock header; the caller writes the rows and then fa_gp_block_end. */
void fa_gp_block(FILE *out, const char *name, const char *columns)
{
	fprintf(out, "$%s << EOD\n# %s\n", name, columns);
}

void fa_gp_block_end(FILE *out)
{
	fputs("EOD\n", out);
}

/* Power-of-two tic label: 512, 1K, 64K, 1M. */
static void pow2_label(double v, char *buf, size_t size)
{
	if (v >= 1048576 && fmod(v, 1048576) == 0)
		snprintf(buf, size, "%.0fM", v / 1048576);
	else if (v >= 1024 && fmod(v, 1024) == 0)
		snprintf(buf, size, "%.0fK", v / 1024);
	else
		snprintf(buf, size, "%.6g", v);
}

/* Breaks s (in place) into lines of at most width characters where it has
 * spaces, for titles over narrow panels; write it with fa_gp_text. */
void fa_gp_wrap(char *s, int width)
{
	char *line = s, *space = NULL;
	for (char *p = s; *p; p++) {
		if (*p == ' ')
			space = p;
		if (p - line >= width && space) {
			*space = '\n';
			line = space + 1;
			space = NULL;
		}
	}
}

/* A log2 x axis over [lo, hi] (data values, lo > 0): half a power of two of
 * margin each side, a tic at each power of two (every second, ... when
 * there are more than 12). */
void fa_gp_log2_axis(FILE *out, double lo, double hi)
{
	int a = (int)ceil(log2(lo / M_SQRT2)), b = (int)floor(log2(hi * M_SQRT2));
	int step = 1 + (b - a) / 12, first = 1;
	char label[32];
	if (b <= a) {
		/* fewer than two powers of two in range (one length, 37 and 50):
		 * label the lengths themselves */
		fputs("set logscale x 2\nset xrange [", out);
		fa_gp_num(out, lo / M_SQRT2);
		fputc(':', out);
		fa_gp_num(out, hi * M_SQRT2);
		fputs("]\nset xtics (", out);
		for (int i = 0; i < (lo == hi ? 1 : 2); i++) {
			pow2_label(i ? hi : lo, label, sizeof label);
			fputs(i ? ", " : "", out);
			fa_gp_str(out, label);
			fputc(' ', out);
			fa_gp_num(out, i ? hi : lo);
		}
		fputs(")\n", out);
		return;
	}
	fputs("set logscale x 2\nset xrange [", out);
	fa_gp_num(out, lo / M_SQRT2);
	fputc(':', out);
	fa_gp_num(out, hi * M_SQRT2);
	fputs("]\nset xtics (", out);
	for (int e = a; e <= b; e += step) {
		double v = ldexp(1.0, e);
		pow2_label(v, label, sizeof label);
		fputs(first ? "" : ", ", out);
		fa_gp_str(out, label);
		fputc(' ', out);
		fa_gp_num(out, v);
		first = 0;
	}
	fputs(")\n", out);
}


/* ---- Running gnuplot ----------------------------------------------------------------- */

/* The program to run: $FABENCH_GNUPLOT or "gnuplot". */
static const char *gnuplot_program(void)
{
	const char *env = getenv("FABENCH_GNUPLOT");
	return env && *env ? env : "gnuplot";
}

/* 1 when prog is executable: a path as given, a name through PATH. */
static int program_found(const char *prog)
{
	const char *path = getenv("PATH");
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		char full[4096];
		snprintf(full, sizeof full, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", prog);
		if (access(full, X_OK) == 0)
			return 1;
		path += n + (path[n] == ':');
	}
	return 0;
}

int fa_plot_gnuplot_available(void)
{
	return program_found(gnuplot_program());
}

/* The whole file at path, malloc'd and NUL-terminated; NULL on failure. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, got;
	if (!f)
		return NULL;
	do {
		if (cap - n < 4096) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
	} while (got > 0);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* A temporary folder with plot.gp, gnuplot.err and the image. */
struct plot_tmp {
	char dir[1024];
	char script[1100], errors[1100], image[1100];
};

static void tmp_remove(struct plot_tmp *t)
{
	if (!t->dir[0])
		return;
	unlink(t->script);
	unlink(t->errors);
	unlink(t->image);
	rmdir(t->dir);
	t->dir[0] = '\0';
}

/* Runs prog on plot.gp in t->dir, stderr to gnuplot.err. Returns FA_OK
 * when it exits with status 0. */
static enum fa_rc run_gnuplot(const char *prog, const struct plot_tmp *t, struct fa_err *err)
{
	pid_t pid = fork(), w;
	int status = 0;
	long waited_ms = 0;
	if (pid < 0)
		return fa_err_set(err, FA_ERR_IO, "cannot start gnuplot: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		int efd = open(t->errors, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		char *argv[] = {(char *)prog, "plot.gp", NULL};
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		if (efd >= 0)
			dup2(efd, 2);
		if (chdir(t->dir) != 0)
			_exit(126);
		execvp(prog, argv);
		_exit(127);
	}
	for (;;) {
		struct timespec ts = {0, 10 * 1000 * 1000}; /* 10 ms */
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return fa_err_set(err, FA_ERR_IO, "cannot wait for gnuplot: %s",
					  strerror(errno));
		if (waited_ms >= PLOT_GNUPLOT_TIMEOUT_MS) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return fa_err_set(err, FA_ERR_TIMEOUT,
					  "gnuplot ran past %d s drawing the plot and was killed",
					  PLOT_GNUPLOT_TIMEOUT_MS / 1000);
		}
		nanosleep(&ts, NULL);
		waited_ms += 10;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return FA_OK;
	{
		char *text = slurp(t->errors, NULL);
		const char *tail = text ? text : "";
		size_t n;
		while (*tail == '\n' || *tail == ' ')
			tail++;
		n = strlen(tail);
		while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == ' '))
			n--;
		if (n > PLOT_STDERR_MAX) {
			tail += n - PLOT_STDERR_MAX;
			n = PLOT_STDERR_MAX;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && n == 0)
			fa_err_set(err, FA_ERR_BACKEND, "cannot run '%s'", prog);
		else if (WIFEXITED(status))
			fa_err_set(err, FA_ERR_BACKEND, "gnuplot failed with exit status %d: %.*s",
				   WEXITSTATUS(status), (int)n, n ? tail : "(nothing on stderr)");
		else
			fa_err_set(err, FA_ERR_BACKEND, "gnuplot was killed by signal %d: %.*s",
				   WTERMSIG(status), (int)n, n ? tail : "(nothing on stderr)");
		free(text);
	}
	return err ? err->rc : FA_ERR_BACKEND;
}

/* Draws o in a new temporary folder; on success t->image holds the image
 * (the caller removes the folder with tmp_remove, also on failure). */
static enum fa_rc draw(struct fa_store *s, const struct fa_plot_opts *o, struct plot_tmp *t,
		       struct fa_err *err)
{
	const char *prog = gnuplot_program(), *tmp = getenv("TMPDIR");
	struct stat stt;
	enum fa_rc rc;
	FILE *f;

	memset(t, 0, sizeof *t);
	/* the machine lacks a tool, the input is fine: a backend failure (exit
	 * status 1), never the not-found of a run or kernel (2) */
	if (!program_found(prog))
		return fa_err_set(err, FA_ERR_BACKEND,
				  "gnuplot is not installed ('%s' not found in PATH): plots need it; "
				  "install the gnuplot-nox package (apt-get install gnuplot-nox)",
				  prog);
	snprintf(t->dir, sizeof t->dir, "%s/fabench-plot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t->dir)) {
		rc = fa_err_set(err, FA_ERR_IO, "cannot create a temporary folder '%s': %s", t->dir,
				strerror(errno));
		t->dir[0] = '\0';
		return rc;
	}
	snprintf(t->script, sizeof t->script, "%s/plot.gp", t->dir);
	snprintf(t->errors, sizeof t->errors, "%s/gnuplot.err", t->dir);
	snprintf(t->image, sizeof t->image, "%s/plot.%s", t->dir,
		 o->format == FA_PLOT_SVG ? "svg" : "png");
	if (!(f = fopen(t->script, "w")))
		return fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", t->script,
				  strerror(errno));
	rc = fa_plot_script(s, o, f, err);
	if (fclose(f) != 0 && rc == FA_OK)
		rc = fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", t->script,
				strerror(errno));
	if (rc == FA_OK)
		rc = run_gnuplot(prog, t, err);
	if (rc == FA_OK && (stat(t->image, &stt) != 0 || stt.st_size == 0))
		rc = fa_err_set(err, FA_ERR_BACKEND, "gnuplot wrote no image (plot.%s)",
				o->format == FA_PLOT_SVG ? "svg" : "png");
	return rc;
}

enum fa_rc fa_plot_render(struct fa_store *s, const struct fa_plot_opts *o, const char *path,
			  struct fa_err *err)
{
	struct plot_tmp t;
	enum fa_rc rc = draw(s, o, &t, err);
	char *data = NULL;
	size_t len = 0;

	if (rc == FA_OK && !(data = slurp(t.image, &len)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot read '%s': %s", t.image, strerror(errno));
	tmp_remove(&t);
	/* path whole or untouched */
	if (rc == FA_OK && fa_replace_file(path, data, len) != 0)
		rc = fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	free(data);
	return rc;
}

enum fa_rc fa_plot_svg(struct fa_store *s, const struct fa_plot_opts *o, char **svg, size_t *len,
		       struct fa_err *err)
{
	struct fa_plot_opts so = *o;
	struct plot_tmp t;
	enum fa_rc rc;

	*svg = NULL;
	so.format = FA_PLOT_SVG;
	rc = draw(s, &so, &t, err);
	if (rc == FA_OK && !(*svg = slurp(t.image, len)))
		rc = fa_err_set(err, FA_ERR_IO, "cannot read '%s': %s", t.image, strerror(errno));
	tmp_remove(&t);
	return rc;
}

