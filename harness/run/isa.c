/* isa.c - parsers of the compilers' resource reports and ISA listings for
 * `fabench build-matrix` (see isa.h). Line based; a line the parser does not
 * know is skipped, so a newer tool that adds lines still parses. */
#include "isa.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fa_isa_from_name(enum fa_isa_from from)
{
	switch (from) {
	case FA_ISA_SASS: return "sass";
	case FA_ISA_PTX: return "ptx";
	case FA_ISA_AMDGCN: return "amdgcn";
	case FA_ISA_NONE: break;
	}
	return NULL;
}

void fa_isa_free(struct fa_isa *isa)
{
	for (int i = 0; i < isa->n; i++)
		free(isa->k[i].symbol);
	free(isa->k);
	memset(isa, 0, sizeof *isa);
}

struct fa_isa_kernel *fa_isa_kernel(struct fa_isa *isa, const char *symbol, size_t len)
{
	struct fa_isa_kernel *k;
	for (int i = 0; i < isa->n; i++)
		if (strlen(isa->k[i].symbol) == len && memcmp(isa->k[i].symbol, symbol, len) == 0)
			return &isa->k[i];
	if (isa->n == isa->cap) {
		int cap = isa->cap ? isa->cap * 2 : 8;
		struct fa_isa_kernel *grown = realloc(isa->k, (size_t)cap * sizeof *grown);
		if (!grown)
			return NULL;
		isa->k = grown;
		isa->cap = cap;
	}
	k = &isa->k[isa->n];
	memset(k, 0, sizeof *k);
	k->symbol = malloc(len + 1);
	if (!k->symbol)
		return NULL;
	memcpy(k->symbol, symbol, len);
	k->symbol[len] = '\0';
	k->regs = k->sgprs = k->spill_regs = k->matrix_count = -1;
	k->shared_bytes = k->scratch_bytes = k->spill_bytes = -1;
	isa->n++;
	return k;
}

/* ---- Lines ------------------------------------------------------------------- */

/* Steps *p to the next line; returns the current one as [*line, *len). */
static int next_line(const char **p, const char **line, size_t *len)
{
	const char *s = *p, *nl;
	if (!*s)
		return 0;
	nl = strchr(s, '\n');
	*line = s;
	*len = nl ? (size_t)(nl - s) : strlen(s);
	*p = nl ? nl + 1 : s + *len;
	return 1;
}

/* The position of needle in [s, s + n), or NULL. */
static const char *find_in(const char *s, size_t n, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = 0; i + m <= n; i++)
		if (memcmp(s + i, needle, m) == 0)
			return s + i;
	return NULL;
}

/* The number just before " what" in the line ("247 registers"), or -1. */
static long number_before(const char *line, size_t n, const char *what)
{
	const char *at = find_in(line, n, what), *b;
	if (!at || at == line)
		return -1;
	b = at;
	while (b > line && isdigit((unsigned char)b[-1]))
		b--;
	if (b == at)
		return -1;
	return strtol(b, NULL, 10);
}

/* The text between the first pair of single quotes after key. */
static int quoted_after(const char *line, size_t n, const char *key, const char **s, size_t *len)
{
	const char *at = find_in(line, n, key), *end = line + n, *q;
	if (!at)
		return 0;
	at += strlen(key);
	q = memchr(at, '\'', (size_t)(end - at));
	if (!q)
		return 0;
	*s = q + 1;
	q = memchr(q + 1, '\'', (size_t)(end - q - 1));
	if (!q)
		return 0;
	*len = (size_t)(q - *s);
	return 1;
}

/* Counts one matrix instruction in k and keeps its mnemonic once. */
static void add_matrix(struct fa_isa_kernel *k, const char *op, size_t n, enum fa_isa_from from)
{
	size_t have = strlen(k->matrix);
	const char *p = k->matrix;
	if (k->matrix_count < 0)
		k->matrix_count = 0;
	k->matrix_count++;
	k->from = from;
	while (*p) {
		const char *sp = strchr(p, ' ');
		size_t w = sp ? (size_t)(sp - p) : strlen(p);
		if (w == n && memcmp(p, op, n) == 0)
			return;
		p += w + (sp ? 1 : 0);
	}
	if (have + (have ? 1 : 0) + n + 1 > sizeof k->matrix)
		return; /* the count goes on; the list keeps the first ones */
	if (have)
		k->matrix[have++] = ' ';
	memcpy(k->matrix + have, op, n);
	k->matrix[have + n] = '\0';
}

/* Marks k as looked at (0 matrix instructions unless some were found). */
static void looked(struct fa_isa_kernel *k, enum fa_isa_from from)
{
	if (k->matrix_count < 0)
		k->matrix_count = 0;
	k->from = from;
}

/* ---- NVIDIA ------------------------------------------------------------------ */

int fa_isa_parse_ptxas(struct fa_isa *isa, const char *log)
{
	const char *p = log, *line, *sym;
	size_t n, sn;
	struct fa_isa_kernel *entry = NULL, *props = NULL;
	while (next_line(&p, &line, &n)) {
		if (quoted_after(line, n, "Compiling entry function", &sym, &sn)) {
			if (!(entry = fa_isa_kernel(isa, sym, sn)))
				return -1;
			props = NULL;
		} else if (find_in(line, n, "Function properties for ")) {
			const char *s = find_in(line, n, "Function properties for ") + 24;
			sn = (size_t)(line + n - s);
			while (sn > 0 && isspace((unsigned char)s[sn - 1]))
				sn--;
			/* only kernels: a device function's properties are its own */
			props = NULL;
			for (int i = 0; i < isa->n; i++)
				if (strlen(isa->k[i].symbol) == sn && memcmp(isa->k[i].symbol, s, sn) == 0)
					props = &isa->k[i];
		} else if (props && find_in(line, n, "bytes stack frame")) {
			props->scratch_bytes = number_before(line, n, " bytes stack frame");
			props->spill_bytes = number_before(line, n, " bytes spill stores");
			props = NULL;
		} else if (entry && find_in(line, n, "Used ") && find_in(line, n, " registers")) {
			long smem = number_before(line, n, " bytes smem");
			entry->regs = (int)number_before(line, n, " registers");
			entry->shared_bytes = smem >= 0 ? smem : 0; /* ptxas omits 0 bytes */
			entry = NULL;
		}
	}
	return 0;
}

/* Past the white space at s (up to e). */
static const char *skip_space(const char *s, const char *e)
{
	while (s < e && isspace((unsigned char)*s))
		s++;
	return s;
}

/* The opcode of the instruction at s (up to e): past white space and a
 * predicate (@P0, @!P1), up to white space or ';'; its length into *len. */
static const char *opcode_at(const char *s, const char *e, size_t *len)
{
	const char *o;
	s = skip_space(s, e);
	if (s < e && *s == '@') {
		while (s < e && !isspace((unsigned char)*s))
			s++;
		s = skip_space(s, e);
	}
	o = s;
	while (s < e && !isspace((unsigned char)*s) && *s != ';')
		s++;
	*len = (size_t)(s - o);
	return o;
}

static int is_matrix_sass(const char *op, size_t n)
{
	static const char *const ops[] = {"HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA",
					  "DMMA", "OMMA", "BMMA", "UTCHMMA", "UTCQMMA"};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		size_t m = strlen(ops[i]);
		if (n >= m && memcmp(op, ops[i], m) == 0 && (n == m || op[m] == '.'))
			return 1;
	}
	return 0;
}

int fa_isa_parse_sass(struct fa_isa *isa, const char *sass)
{
	const char *p = sass, *line;
	size_t n;
	struct fa_isa_kernel *k = NULL;
	while (next_line(&p, &line, &n)) {
		const char *f = find_in(line, n, "Function : "), *s, *e = line + n;
		if (f) {
			s = f + 11;
			while (e > s && isspace((unsigned char)e[-1]))
				e--;
			if (!(k = fa_isa_kernel(isa, s, (size_t)(e - s))))
				return -1;
			looked(k, FA_ISA_SASS);
			continue;
		}
		/* an instruction: its address in a comment, an optional predicate
		 * (@!P0), the opcode (HMMA.16816.F32.BF16), operands, ";" */
		s = skip_space(line, e);
		if (!k || e - s < 4 || s[0] != '/' || s[1] != '*')
			continue;
		s = find_in(s, (size_t)(e - s), "*/");
		if (!s)
			continue;
		s = skip_space(s + 2, e);
		if (s < e && *s == '{') /* dual-issue braces of old SASS */
			s++;
		size_t on;
		const char *o = opcode_at(s, e, &on);
		if (is_matrix_sass(o, on))
			add_matrix(k, o, on, FA_ISA_SASS);
	}
	return 0;
}

int fa_isa_parse_ptx(struct fa_isa *isa, const char *ptx)
{
	const char *p = ptx, *line;
	size_t n;
	struct fa_isa_kernel *k = NULL;
	while (next_line(&p, &line, &n)) {
		const char *e = line + n, *s = line, *at = find_in(line, n, ".entry ");
		if (at && (at == line || isspace((unsigned char)at[-1]))) {
			s = skip_space(at + 7, e);
			const char *b = s;
			while (s < e && *s != '(' && !isspace((unsigned char)*s))
				s++;
			if (s > b) {
				if (!(k = fa_isa_kernel(isa, b, (size_t)(s - b))))
					return -1;
				looked(k, FA_ISA_PTX);
			}
			continue;
		}
		if (n >= 1 && line[0] == '}') { /* a body ends at a '}' in column 0 */
			k = NULL;
			continue;
		}
		if (!k)
			continue;
		size_t on;
		const char *o = opcode_at(s, e, &on);
		if ((on >= 9 && memcmp(o, "mma.sync.", 9) == 0) ||
		    (on >= 7 && memcmp(o, "mma.sp.", 7) == 0) ||
		    (on >= 7 && memcmp(o, "mma.sp:", 7) == 0) ||
		    (on >= 16 && memcmp(o, "wgmma.mma_async.", 16) == 0))
			add_matrix(k, o, on, FA_ISA_PTX);
	}
	return 0;
}

/* ---- AMD --------------------------------------------------------------------- */

/* "    .vgpr_count:     17" -> key ".vgpr_count", value 17. */
static int meta_value(const char *line, size_t n, const char *key, long *v)
{
	const char *s = line, *e = line + n;
	size_t kn = strlen(key);
	while (s < e && *s == ' ')
		s++;
	if (s < e && *s == '-') { /* the first key of a list item: "  - .args:" */
		s++;
		while (s < e && *s == ' ')
			s++;
	}
	if ((size_t)(e - s) <= kn || memcmp(s, key, kn) != 0 || s[kn] != ':')
		return 0;
	s += kn + 1;
	while (s < e && *s == ' ')
		s++;
	if (s >= e || !(isdigit((unsigned char)*s) || *s == '-'))
		return 0;
	*v = strtol(s, NULL, 10);
	return 1;
}

struct amd_meta {
	char name[512];
	long vgpr, sgpr, lds, priv, vspill, sspill;
};

static int amd_flush(struct fa_isa *isa, struct amd_meta *m)
{
	struct fa_isa_kernel *k;
	if (!m->name[0])
		return 0;
	if (!(k = fa_isa_kernel(isa, m->name, strlen(m->name))))
		return -1;
	k->regs = (int)m->vgpr;
	k->sgprs = (int)m->sgpr;
	k->shared_bytes = m->lds;
	k->scratch_bytes = m->priv;
	k->spill_regs = m->vspill < 0 && m->sspill < 0
				? -1
				: (int)((m->vspill > 0 ? m->vspill : 0) + (m->sspill > 0 ? m->sspill : 0));
	looked(k, FA_ISA_AMDGCN);
	memset(m, 0, sizeof *m);
	m->vgpr = m->sgpr = m->lds = m->priv = m->vspill = m->sspill = -1;
	return 0;
}

static int is_matrix_amd(const char *op, size_t n)
{
	static const char *const ops[] = {"v_mfma_", "v_smfmac_", "v_wmma_", "v_swmmac_"};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		size_t m = strlen(ops[i]);
		if (n > m && memcmp(op, ops[i], m) == 0)
			return 1;
	}
	return 0;
}

int fa_isa_parse_amdgcn(struct fa_isa *isa, const char *s)
{
	const char *p = s, *line;
	size_t n;
	int in_meta = 0, in_kernels = 0;
	struct amd_meta m;
	/* pass 1: the metadata names the kernels and gives their resources */
	memset(&m, 0, sizeof m);
	m.vgpr = m.sgpr = m.lds = m.priv = m.vspill = m.sspill = -1;
	while (next_line(&p, &line, &n)) {
		const char *e = line + n, *t = skip_space(line, e);
		long v;
		if ((size_t)(e - t) >= 16 && memcmp(t, ".amdgpu_metadata", 16) == 0) {
			in_meta = 1;
			continue;
		}
		if ((size_t)(e - t) >= 20 && memcmp(t, ".end_amdgpu_metadata", 20) == 0) {
			if (amd_flush(isa, &m) != 0)
				return -1;
			in_meta = in_kernels = 0;
			continue;
		}
		if (!in_meta)
			continue;
		if (n >= 15 && memcmp(line, "amdhsa.kernels:", 15) == 0) {
			in_kernels = 1;
			continue;
		}
		if (n > 0 && line[0] != ' ' && line[0] != '-') { /* the next top-level key */
			if (amd_flush(isa, &m) != 0)
				return -1;
			in_kernels = 0;
			continue;
		}
		if (!in_kernels)
			continue;
		if (n >= 4 && memcmp(line, "  - ", 4) == 0 && amd_flush(isa, &m) != 0)
			return -1;
		if (n >= 10 && memcmp(line, "    .name:", 10) == 0) {
			const char *a = line + 10;
			while (a < e && *a == ' ')
				a++;
			size_t an = (size_t)(e - a);
			while (an > 0 && isspace((unsigned char)a[an - 1]))
				an--;
			if (an >= sizeof m.name)
				an = sizeof m.name - 1;
			memcpy(m.name, a, an);
			m.name[an] = '\0';
		} else if (meta_value(line, n, ".vgpr_count", &v)) {
			m.vgpr = v;
		} else if (meta_value(line, n, ".sgpr_count", &v)) {
			m.sgpr = v;
		} else if (meta_value(line, n, ".group_segment_fixed_size", &v)) {
			m.lds = v;
		} else if (meta_value(line, n, ".private_segment_fixed_size", &v)) {
			m.priv = v;
		} else if (meta_value(line, n, ".vgpr_spill_count", &v)) {
			m.vspill = v;
		} else if (meta_value(line, n, ".sgpr_spill_count", &v)) {
			m.sspill = v;
		}
	}
	/* pass 2: the instructions between a kernel's label and its .Lfunc_end */
	struct fa_isa_kernel *k = NULL;
	int n_known = isa->n;
	p = s;
	while (next_line(&p, &line, &n)) {
		const char *t = line, *e = line + n;
		/* a label: "NAME:" in column 0, maybe followed by "; @NAME" */
		const char *colon = n > 1 && !isspace((unsigned char)line[0]) && line[0] != ';'
					    ? memchr(line, ':', n)
					    : NULL;
		if (colon && (colon + 1 == e || isspace((unsigned char)colon[1]))) {
			size_t ln = (size_t)(colon - line);
			if (ln >= 10 && memcmp(line, ".Lfunc_end", 10) == 0) {
				k = NULL;
				continue;
			}
			for (int i = 0; i < n_known; i++)
				if (strlen(isa->k[i].symbol) == ln &&
				    memcmp(isa->k[i].symbol, line, ln) == 0)
					k = &isa->k[i];
			continue;
		}
		if (!k)
			continue;
		const char *o = t = skip_space(t, e);
		while (t < e && !isspace((unsigned char)*t))
			t++;
		if (is_matrix_amd(o, (size_t)(t - o)))
			add_matrix(k, o, (size_t)(t - o), FA_ISA_AMDGCN);
	}
	return 0;
}

/* ---- Messages ---------------------------------------------------------------- */

/* 1 when the line holds "error" or "fatal" as a word (not "-Werror"). */
static int is_error_line(const char *line, size_t n)
{
	static const char *const words[] = {"error", "fatal", "Error"};
	for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
		size_t m = strlen(words[w]);
		for (size_t i = 0; i + m <= n; i++) {
			if (memcmp(line + i, words[w], m) != 0)
				continue;
			int before = i == 0 || !(isalnum((unsigned char)line[i - 1]) ||
						 line[i - 1] == '-' || line[i - 1] == '_');
			int after = i + m == n || !(isalnum((unsigned char)line[i + m]) ||
						    line[i + m] == '_' || line[i + m] == '-');
			if (before && after)
				return 1;
		}
	}
	return 0;
}

void fa_isa_first_error(const char *log, char *buf, size_t size)
{
	const char *p = log ? log : "", *line, *first = NULL;
	size_t n, first_n = 0;
	if (size)
		buf[0] = '\0';
	while (next_line(&p, &line, &n)) {
		while (n > 0 && isspace((unsigned char)*line)) {
			line++;
			n--;
		}
		while (n > 0 && isspace((unsigned char)line[n - 1]))
			n--;
		if (!n)
			continue;
		if (is_error_line(line, n)) {
			first = line;
			first_n = n;
			break;
		}
		if (!first) {
			first = line;
			first_n = n;
		}
	}
	if (first && size)
		snprintf(buf, size, "%.*s", (int)first_n, first);
}

void fa_isa_short_name(const char *d, char *buf, size_t size)
{
	static const char anon[] = "(anonymous namespace)::";
	char tmp[1024];
	size_t n = 0;
	int depth = 0;
	const char *s = d, *start = d;
	/* the return type ends at the first space outside <...> and (...)
	 * before the name; a name with no return type (a C kernel) has none */
	for (const char *c = d; *c; c++) {
		if (*c == '<' || *c == '(')
			depth++;
		else if ((*c == '>' || *c == ')') && depth > 0)
			depth--;
		else if (*c == ' ' && depth == 0) {
			start = c + 1;
			break;
		} else if (*c == ':' && depth == 0)
			break;
	}
	if (strncmp(d, anon, sizeof anon - 1) == 0)
		start = d;
	s = start;
	depth = 0;
	while (*s && n + 1 < sizeof tmp) {
		if (strncmp(s, anon, sizeof anon - 1) == 0) {
			s += sizeof anon - 1;
			continue;
		}
		if (*s == '(' && depth == 0)
			break; /* the parameter list */
		if (*s == '<')
			depth++;
		else if (*s == '>' && depth > 0)
			depth--;
		tmp[n++] = *s++;
	}
	tmp[n] = '\0';
	snprintf(buf, size, "%s", n ? tmp : d);
}
