/* junit.c - JUnit XML of a run's results (run --junit FILE): a testsuite
 * per suite, a testcase per (case, kernel), the reason of a fail, error,
 * timeout or skip in the element CI systems show. */
#include "junit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/text.h"
#include "../base/util.h"

struct entry {
	char *classname; /* "suite.kernel" or "suite.kernel[params]" */
	char *name;      /* "case 3: LABEL (KEY)" */
	char *reason;
	int status;
	double time_s;   /* the median sample, 0 when untimed */
	int device;
	double median_ms, tflops;
};

struct fa_junit {
	char *suite;
	struct entry *e;
	int n, cap;
};

struct fa_junit *fa_junit_new(const char *suite_name)
{
	struct fa_junit *j = calloc(1, sizeof *j);
	if (j && !(j->suite = strdup(suite_name ? suite_name : "fabench"))) {
		free(j);
		return NULL;
	}
	return j;
}

void fa_junit_free(struct fa_junit *j)
{
	if (!j)
		return;
	for (int i = 0; i < j->n; i++) {
		free(j->e[i].classname);
		free(j->e[i].name);
		free(j->e[i].reason);
	}
	free(j->e);
	free(j->suite);
	free(j);
}

static char *dup_printf(const char *fmt, const char *a, const char *b, const char *c)
{
	int n = snprintf(NULL, 0, fmt, a, b, c);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s)
		snprintf(s, (size_t)n + 1, fmt, a, b, c);
	return s;
}

int fa_junit_add(struct fa_junit *j, const struct fa_case *c, const char *label,
		 const char *params, const struct fa_result *r, int device)
{
	struct entry *e;
	char idx[32];
	if (j->n == j->cap) {
		int cap = j->cap ? 2 * j->cap : 64;
		struct entry *ne = realloc(j->e, sizeof *ne * (size_t)cap);
		if (!ne)
			return -1;
		j->e = ne;
		j->cap = cap;
	}
	e = &j->e[j->n];
	memset(e, 0, sizeof *e);
	snprintf(idx, sizeof idx, "%d", (int)c->index + 1);
	if (params && *params)
		e->classname = dup_printf("%s.%s[%s]", j->suite, r->kernel, params);
	else
		e->classname = dup_printf("%s.%s%s", j->suite, r->kernel, "");
	if (label && *label)
		e->name = dup_printf("case %s: %s (%s)", idx, label, c->key);
	else
		e->name = dup_printf("case %s: %s%s", idx, c->key, "");
	e->reason = strdup(r->reason);
	if (!e->classname || !e->name || !e->reason) {
		free(e->classname);
		free(e->name);
		free(e->reason);
		return -1;
	}
	e->status = r->status;
	e->device = device;
	if (r->t.n > 0) {
		e->median_ms = r->t.median_ms;
		e->time_s = r->t.median_ms / 1000.0;
		e->tflops = r->tflops;
	}
	j->n++;
	return 0;
}

void fa_xml_escape(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : ""), *end = p + strlen((const char *)p);
	for (; *p; p++) {
		if (*p >= 0x80) {
			/* the document says UTF-8: a byte that starts no valid
			 * sequence (a plugin's text) is U+FFFD, and U+FFFE and
			 * U+FFFF, which XML 1.0 does not allow, are '?' */
			int n = fa_utf8_len(p, end);
			if (n == 0)
				fputs("\xef\xbf\xbd", f);
			else if (n == 3 && p[0] == 0xef && p[1] == 0xbf && p[2] >= 0xbe)
				fputc('?', f);
			else
				fwrite(p, 1, (size_t)n, f);
			p += n ? n - 1 : 0;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if ((*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') || *p == 0x7f)
				fputc('?', f);
			else
				fputc(*p, f);
		}
	}
}

/* An attribute: name="escaped value". */
static void attr(FILE *f, const char *name, const char *value)
{
	fprintf(f, " %s=\"", name);
	fa_xml_escape(f, value);
	fputc('"', f);
}

void fa_junit_print(const struct fa_junit *j, FILE *f)
{
	int count[6] = {0};
	double time_s = 0;
	for (int i = 0; i < j->n; i++) {
		if (j->e[i].status >= 0 && j->e[i].status < 6)
			count[j->e[i].status]++;
		time_s += j->e[i].time_s;
	}
	int errors = count[FA_STATUS_ERROR] + count[FA_STATUS_TIMEOUT];
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<testsuites name=\"fabench\" tests=\"%d\" failures=\"%d\" errors=\"%d\" "
		   "skipped=\"%d\" time=\"%.6f\">\n",
		j->n, count[FA_STATUS_FAIL], errors, count[FA_STATUS_SKIP], time_s);
	fprintf(f, "  <testsuite");
	attr(f, "name", j->suite);
	fprintf(f, " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.6f\">\n",
		j->n, count[FA_STATUS_FAIL], errors, count[FA_STATUS_SKIP], time_s);
	for (int i = 0; i < j->n; i++) {
		const struct entry *e = &j->e[i];
		fprintf(f, "    <testcase");
		attr(f, "classname", e->classname);
		attr(f, "name", e->name);
		fprintf(f, " time=\"%.6f\">\n", e->time_s);
		switch (e->status) {
		case FA_STATUS_FAIL:
			fprintf(f, "      <failure type=\"fail\"");
			attr(f, "message", e->reason);
			fprintf(f, ">");
			fa_xml_escape(f, e->reason);
			fprintf(f, "</failure>\n");
			break;
		case FA_STATUS_ERROR:
		case FA_STATUS_TIMEOUT:
			fprintf(f, "      <error");
			attr(f, "type", fa_status_name(e->status));
			attr(f, "message", e->reason);
			fprintf(f, ">");
			fa_xml_escape(f, e->reason);
			fprintf(f, "</error>\n");
			break;
		case FA_STATUS_SKIP:
			fprintf(f, "      <skipped");
			attr(f, "message", e->reason);
			fprintf(f, "/>\n");
			break;
		default:
			break;
		}
		if (e->median_ms > 0 || e->device >= 0) {
			fprintf(f, "      <system-out>");
			if (e->median_ms > 0)
				fprintf(f, "median %.6g ms, %.4g TFLOP/s", e->median_ms, e->tflops);
			if (e->device >= 0)
				fprintf(f, "%sdevice %d", e->median_ms > 0 ? ", " : "", e->device);
			fprintf(f, "</system-out>\n");
		}
		fprintf(f, "    </testcase>\n");
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
}

enum fa_rc fa_junit_write(const struct fa_junit *j, const char *path, struct fa_err *err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int bad;
	if (!f)
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory");
	fa_junit_print(j, f);
	bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		free(text);
		return fa_err_set(err, FA_ERR_NOMEM, "out of memory for the junit file");
	}
	/* path whole or untouched */
	if (fa_replace_file(path, text, len) != 0) {
		fa_err_set(err, FA_ERR_IO, "cannot write junit file '%s': %s", path, strerror(errno));
		free(text);
		return FA_ERR_IO;
	}
	free(text);
	return FA_OK;
}
