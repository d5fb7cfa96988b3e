/* expr.c - the expression language of `where:` and --where (grammar in
 * expr.h): a recursive-descent parser that type-checks as it builds the tree,
 * so every mistake is reported at parse time with its column, and an
 * evaluator over a case's problem.
 *
 * Types: integers (int64, integer arithmetic), numbers (double, when either
 * side is one), conditions, and words of one class (dtype, mask, layout,
 * input). An integer division or remainder by zero, or integer arithmetic
 * past int64, yields "undefined": a number that stays undefined through
 * every operation and makes any comparison it reaches false.
 */
#include "expr.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"
#include "suite.h"

enum node_kind {
	N_INT, N_NUM, N_WORD, N_NAME,
	N_NEG, N_NOT, N_AND, N_OR,
	N_ADD, N_SUB, N_MUL, N_DIV, N_MOD,
	N_EQ, N_NE, N_LT, N_LE, N_GT, N_GE,
	N_COND, /* a ? b : c */
};

enum value_type { T_INT, T_NUM, T_BOOL, T_WORD };

/* Word classes: which enum a word or a word-valued name belongs to. */
enum word_class { W_DTYPE, W_MASK, W_LAYOUT, W_INPUT, W_PASS, W_COUNT };

enum name_id {
	V_BATCH, V_HEADS, V_KV_HEADS, V_GQA, V_Q_LEN, V_KV_LEN, V_HEAD_DIM, V_HEAD_DIM_V,
	V_PREFIX_LEN, V_WINDOW, V_SCALE, V_VARLEN, V_TOKENS, V_DTYPE, V_MASK, V_LAYOUT, V_INPUT,
	V_DEPTH, V_PASS, V_COUNT
};

static const struct {
	const char *name;
	int type;  /* enum value_type */
	int wclass; /* for T_WORD */
} names[V_COUNT] = {
	[V_BATCH] = {"batch", T_INT, 0},
	[V_HEADS] = {"heads", T_INT, 0},
	[V_KV_HEADS] = {"kv_heads", T_INT, 0},
	[V_GQA] = {"gqa", T_INT, 0},
	[V_Q_LEN] = {"q_len", T_INT, 0},
	[V_KV_LEN] = {"kv_len", T_INT, 0},
	[V_HEAD_DIM] = {"head_dim", T_INT, 0},
	[V_HEAD_DIM_V] = {"head_dim_v", T_INT, 0},
	[V_PREFIX_LEN] = {"prefix_len", T_INT, 0},
	[V_WINDOW] = {"window", T_INT, 0},
	[V_SCALE] = {"scale", T_NUM, 0},
	[V_VARLEN] = {"varlen", T_INT, 0},
	[V_TOKENS] = {"tokens", T_INT, 0},
	[V_DTYPE] = {"dtype", T_WORD, W_DTYPE},
	[V_MASK] = {"mask", T_WORD, W_MASK},
	[V_LAYOUT] = {"layout", T_WORD, W_LAYOUT},
	[V_INPUT] = {"input", T_WORD, W_INPUT},
	[V_DEPTH] = {"depth", T_INT, 0},
	[V_PASS] = {"pass", T_WORD, W_PASS},
};

struct fa_expr {
	int kind;   /* enum node_kind */
	int type;   /* enum value_type of the result */
	int wclass; /* T_WORD: enum word_class */
	int64_t i;  /* N_INT value, N_WORD index, N_NAME id */
	double d;   /* N_NUM value */
	int height; /* nodes on the longest path down from here, this one included */
	struct fa_expr *a, *b;
	struct fa_expr *c; /* N_COND: the value when a does not hold */
};

/* Why a value is undefined. */
enum { WHY_NONE, WHY_DIV0, WHY_OVERFLOW };

/* A value during evaluation; defined == 0 after an integer division by zero
 * or an overflow (why says which). */
struct value {
	int defined;
	int why; /* WHY_*, when !defined */
	int64_t i; /* T_INT, T_BOOL (0/1), T_WORD (index) */
	double d;  /* T_NUM */
};

enum tok_kind { K_END, K_INT, K_NUM, K_NAME, K_STRING, K_OP, K_LPAREN, K_RPAREN };

struct token {
	int kind;
	int pos; /* offset of its first character */
	int len;
	int64_t i;
	double d;
	char op[3]; /* K_OP: the operator, normalised ("&&" for 'and') */
};

struct parser {
	const char *text;
	const struct fa_loc *loc;
	const struct fa_loc *map; /* NULL, or where each byte of text sits (and its end) */
	struct fa_err *err;
	struct token tok; /* the current token */
	int failed;
	int nesting; /* '(' and prefix operators open around the current token */
};

/* ---- errors */

/* Where offset pos of the text sits: from the scalar's map when there is
 * one (a quoted, escaped or folded YAML scalar), else counted from loc (or
 * from line 1, column 1): a line break in the text starts a new line at
 * loc's column (a literal block scalar strips the same indentation from
 * every line). */
static struct fa_loc loc_of(const struct parser *ps, int pos)
{
	static const struct fa_loc none = {NULL, 1, 1};
	const struct fa_loc *base = ps->loc ? ps->loc : &none;
	if (ps->map)
		return ps->map[pos];
	struct fa_loc l = {base->file, base->line, base->col};
	for (int i = 0; i < pos && ps->text[i]; i++) {
		if (ps->text[i] == '\n') {
			l.line++;
			l.col = base->col;
		} else if (((unsigned char)ps->text[i] & 0xc0) != 0x80) {
			l.col++; /* columns count characters, as libyaml's marks do */
		}
	}
	return l;
}

/* "column C" of offset pos, or "line L, column C" when it is not on the
 * line of offset at, for messages that point at a second spot. */
static const char *spot_words(const struct parser *ps, int pos, int at, char *buf, size_t size)
{
	struct fa_loc l = loc_of(ps, pos), here = loc_of(ps, at);
	if (l.line == here.line)
		snprintf(buf, size, "column %d", l.col);
	else
		snprintf(buf, size, "line %d, column %d", l.line, l.col);
	return buf;
}

__attribute__((format(printf, 3, 4))) static void perr(struct parser *ps, int pos,
							const char *fmt, ...)
{
	char msg[FA_ERR_MSG_MAX];
	va_list ap;
	if (ps->failed)
		return;
	ps->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct fa_loc l = loc_of(ps, pos);
	if (l.file) {
		fa_err_at(ps->err, &l, "%s", msg);
	} else if (l.line > 1) {
		fa_err_set(ps->err, FA_ERR_INPUT, "%s at line %d, column %d", msg, l.line, l.col);
	} else {
		fa_err_set(ps->err, FA_ERR_INPUT, "%s at column %d", msg, l.col);
	}
}

/* ---- words */

/* Finds a word of any class: returns its class and sets *index, or -1. */
static int word_lookup(const char *w, int *index)
{
	int v;
	if ((v = fa_dtype_parse(w)) >= 0) {
		*index = v;
		return W_DTYPE;
	}
	if ((v = fa_mask_parse(w)) >= 0) {
		*index = v;
		return W_MASK;
	}
	if ((v = fa_layout_parse(w)) >= 0) {
		*index = v;
		return W_LAYOUT;
	}
	if ((v = fa_dist_parse(w)) >= 0) {
		*index = v;
		return W_INPUT;
	}
	if ((v = fa_pass_parse(w)) >= 0) {
		*index = v;
		return W_PASS;
	}
	return -1;
}

static const char *word_text(int wclass, int index)
{
	switch (wclass) {
	case W_DTYPE: return fa_dtype_name(index);
	case W_MASK: return fa_mask_name(index);
	case W_LAYOUT: return fa_layout_name(index);
	case W_PASS: return fa_pass_name(index);
	default: return fa_dist_name(index);
	}
}

/* The closest known name or word within edit distance 2, or NULL; a bare
 * name (not quoted) takes a word only within 1 (the words are short: at 2,
 * 'foo' would suggest 'fwd'). */
static const char *suggest(const char *w, int quoted)
{
	const int word_max = quoted ? 2 : 1;
	const char *best = NULL;
	int bd = 3;
	for (int i = 0; i < V_COUNT; i++) {
		int d = fa_edit_distance(w, names[i].name);
		if (d < bd) {
			bd = d;
			best = names[i].name;
		}
	}
	for (int c = 0; c < W_COUNT; c++)
		for (int k = 0; word_text(c, k); k++) {
			int d = fa_edit_distance(w, word_text(c, k));
			if (d <= word_max && d < bd) {
				bd = d;
				best = word_text(c, k);
			}
		}
	return bd <= 2 ? best : NULL;
}

/* ---- tokens */

static int is_name_start(int c)
{
	return isalpha(c) || c == '_';
}

static int is_name_char(int c)
{
	return isalnum(c) || c == '_';
}

/* Reads the token at offset pos into ps->tok. */
static void lex_at(struct parser *ps, int pos)
{
	const char *s = ps->text;
	struct token *t = &ps->tok;
	while (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r')
		pos++;
	memset(t, 0, sizeof *t);
	t->pos = pos;
	if (!s[pos]) {
		t->kind = K_END;
		return;
	}
	if (isdigit((unsigned char)s[pos]) ||
	    (s[pos] == '.' && isdigit((unsigned char)s[pos + 1]))) {
		int end = pos, is_num = 0;
		while (isdigit((unsigned char)s[end]))
			end++;
		if (s[end] == '.') {
			is_num = 1;
			end++;
			while (isdigit((unsigned char)s[end]))
				end++;
		}
		if ((s[end] == 'e' || s[end] == 'E') &&
		    (isdigit((unsigned char)s[end + 1]) ||
		     ((s[end + 1] == '+' || s[end + 1] == '-') &&
		      isdigit((unsigned char)s[end + 2])))) {
			is_num = 1;
			end += 2;
			while (isdigit((unsigned char)s[end]))
				end++;
		}
		int mul = 1;
		if (!is_num && (s[end] == 'k' || s[end] == 'K') && !is_name_char((unsigned char)s[end + 1])) {
			mul = 1024; /* the suites' k suffix: 8k = 8192 */
			end++;
		}
		t->len = end - pos;
		if (is_name_char((unsigned char)s[end]) || s[end] == '.') {
			while (is_name_char((unsigned char)s[end]) || s[end] == '.')
				end++;
			perr(ps, pos, "invalid number '%.*s'", end - pos, s + pos);
			t->kind = K_END;
			return;
		}
		errno = 0;
		if (is_num) {
			t->kind = K_NUM;
			t->d = strtod(s + pos, NULL);
		} else {
			t->kind = K_INT;
			t->i = strtoll(s + pos, NULL, 10);
			if (errno == ERANGE || t->i > INT64_MAX / mul) {
				perr(ps, pos, "number '%.*s' is too large", t->len, s + pos);
				t->kind = K_END;
				return;
			}
			t->i *= mul;
		}
		return;
	}
	if (is_name_start((unsigned char)s[pos])) {
		int end = pos;
		while (is_name_char((unsigned char)s[end]))
			end++;
		t->len = end - pos;
		if (t->len == 3 && strncmp(s + pos, "and", 3) == 0) {
			t->kind = K_OP;
			strcpy(t->op, "&&");
		} else if (t->len == 2 && strncmp(s + pos, "or", 2) == 0) {
			t->kind = K_OP;
			strcpy(t->op, "||");
		} else if (t->len == 3 && strncmp(s + pos, "not", 3) == 0) {
			t->kind = K_OP;
			strcpy(t->op, "!");
		} else {
			t->kind = K_NAME;
		}
		return;
	}
	if (s[pos] == '\'' || s[pos] == '"') {
		int end = pos + 1;
		while (s[end] && s[end] != s[pos])
			end++;
		if (!s[end]) {
			perr(ps, pos, "unterminated string");
			t->kind = K_END;
			return;
		}
		t->kind = K_STRING;
		t->len = end + 1 - pos;
		return;
	}
	if (s[pos] == '(' || s[pos] == ')') {
		t->kind = s[pos] == '(' ? K_LPAREN : K_RPAREN;
		t->len = 1;
		return;
	}
	static const char *const ops[] = {"&&", "||", "==", "!=", "<=", ">=", "<", ">", "!",
					  "+",  "-",  "*",  "/",  "%", "?", ":"};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		size_t n = strlen(ops[k]);
		if (strncmp(s + pos, ops[k], n) == 0) {
			t->kind = K_OP;
			t->len = (int)n;
			strcpy(t->op, ops[k]);
			return;
		}
	}
	if (s[pos] == '=')
		perr(ps, pos, "unexpected '=' (use '==' to compare)");
	else if (s[pos] == '&' || s[pos] == '|')
		perr(ps, pos, "unexpected '%c' (use '%c%c')", s[pos], s[pos], s[pos]);
	else if (isprint((unsigned char)s[pos]))
		perr(ps, pos, "unexpected character '%c'", s[pos]);
	else
		perr(ps, pos, "unexpected byte 0x%02x", (unsigned char)s[pos]);
	t->kind = K_END;
}

static void advance(struct parser *ps)
{
	lex_at(ps, ps->tok.pos + ps->tok.len);
}

static int is_op(const struct parser *ps, const char *op)
{
	return ps->tok.kind == K_OP && strcmp(ps->tok.op, op) == 0;
}

/* ---- tree */

static struct fa_expr *node_new(struct parser *ps, int kind, int type)
{
	struct fa_expr *e = calloc(1, sizeof *e);
	if (!e) {
		if (!ps->failed) {
			ps->failed = 1;
			fa_err_set(ps->err, FA_ERR_NOMEM, "out of memory parsing an expression");
		}
		return NULL;
	}
	e->kind = kind;
	e->type = type;
	e->height = 1;
	return e;
}

/* Gives e its children a and b (b may be NULL) and the height they make; 0,
 * or -1 with the error at pos when the tree grows deeper than
 * FA_EXPR_MAX_HEIGHT (the evaluator and fa_expr_free recurse that deep). */
static int attach(struct parser *ps, struct fa_expr *e, int pos, struct fa_expr *a,
		  struct fa_expr *b)
{
	int h = a->height > (b ? b->height : 0) ? a->height : b->height;
	e->a = a;
	e->b = b;
	e->height = h + 1;
	if (e->height - 1 > FA_EXPR_MAX_HEIGHT) { /* leaves are height 1 */
		perr(ps, pos, "expression too deep: more than %d operators inside one another",
		     FA_EXPR_MAX_HEIGHT);
		return -1;
	}
	return 0;
}

/* Enters one more level of '(' or prefix operator at pos: 0, or -1 with the
 * error when more than FA_EXPR_MAX_NESTING are open (the parser recurses once
 * per level). Every successful call is paired with ps->nesting--. */
static int nest(struct parser *ps, int pos)
{
	if (ps->nesting >= FA_EXPR_MAX_NESTING) {
		perr(ps, pos, "expression nested too deeply: more than %d parentheses or prefix "
			      "operators open",
		     FA_EXPR_MAX_NESTING);
		return -1;
	}
	ps->nesting++;
	return 0;
}

void fa_expr_free(struct fa_expr *e)
{
	if (!e)
		return;
	fa_expr_free(e->a);
	fa_expr_free(e->b);
	fa_expr_free(e->c);
	free(e);
}

static const char *type_words(const struct fa_expr *e)
{
	static const char *const w[] = {"a number", "a number", "a condition", "a word"};
	return w[e->type];
}

static int is_number(const struct fa_expr *e)
{
	return e->type == T_INT || e->type == T_NUM;
}

/* Conditions and integers (nonzero holds) may stand where a condition is due. */
static int is_condition(const struct fa_expr *e)
{
	return e->type == T_BOOL || e->type == T_INT;
}

static struct fa_expr *parse_expr(struct parser *ps);

static struct fa_expr *parse_atom(struct parser *ps)
{
	struct token t = ps->tok;
	struct fa_expr *e = NULL;
	char word[64];
	switch (t.kind) {
	case K_INT:
		if ((e = node_new(ps, N_INT, T_INT)))
			e->i = t.i;
		advance(ps);
		return e;
	case K_NUM:
		if ((e = node_new(ps, N_NUM, T_NUM)))
			e->d = t.d;
		advance(ps);
		return e;
	case K_NAME:
	case K_STRING: {
		int quoted = t.kind == K_STRING;
		int off = quoted ? 1 : 0, n = t.len - 2 * off, index = 0, wclass;
		snprintf(word, sizeof word, "%.*s", n, ps->text + t.pos + off);
		if (!quoted)
			for (int k = 0; k < V_COUNT; k++)
				if (strcmp(word, names[k].name) == 0) {
					if ((e = node_new(ps, N_NAME, names[k].type))) {
						e->i = k;
						e->wclass = names[k].wclass;
					}
					advance(ps);
					return e;
				}
		wclass = word_lookup(word, &index);
		if (wclass < 0) {
			const char *hint = suggest(word, quoted);
			char hint_text[96] = "";
			if (!quoted && strcmp(word, "seq_len") == 0) /* a parameter, not a case field */
				snprintf(hint_text, sizeof hint_text, " (use q_len or kv_len)");
			else if (hint)
				snprintf(hint_text, sizeof hint_text, " (did you mean '%s'?)", hint);
			perr(ps, t.pos, "unknown %s '%s'%s", quoted ? "word" : "name", word, hint_text);
			return NULL;
		}
		if ((e = node_new(ps, N_WORD, T_WORD))) {
			e->i = index;
			e->wclass = wclass;
		}
		advance(ps);
		return e;
	}
	case K_LPAREN:
		if (nest(ps, t.pos) != 0)
			return NULL;
		advance(ps);
		e = parse_expr(ps);
		ps->nesting--;
		if (!e)
			return NULL;
		if (ps->tok.kind != K_RPAREN) {
			char spot[48];
			perr(ps, ps->tok.pos, "expected ')' to close the '(' at %s",
			     spot_words(ps, t.pos, ps->tok.pos, spot, sizeof spot));
			fa_expr_free(e);
			return NULL;
		}
		advance(ps);
		return e;
	case K_END:
		if (!ps->failed)
			perr(ps, t.pos, "unexpected end of expression");
		return NULL;
	case K_RPAREN:
		perr(ps, t.pos, "unexpected ')'");
		return NULL;
	default:
		perr(ps, t.pos, "unexpected '%s'", t.op);
		return NULL;
	}
}

/* The prefix operator op at the current token applied to what operand
 * parses: a node of kind whose type is type, or the operand's where type is
 * -1. The operand must pass accepts, else "'op' needs <needs>, got ...". */
static struct fa_expr *parse_prefix(struct parser *ps, const char *op, int kind, int type,
				    struct fa_expr *(*operand)(struct parser *),
				    int (*accepts)(const struct fa_expr *), const char *needs)
{
	int pos = ps->tok.pos;
	struct fa_expr *a, *e;
	if (nest(ps, pos) != 0)
		return NULL;
	advance(ps);
	a = operand(ps);
	ps->nesting--;
	if (!a)
		return NULL;
	if (!accepts(a)) {
		perr(ps, pos, "'%s' needs %s, got %s", op, needs, type_words(a));
		fa_expr_free(a);
		return NULL;
	}
	if (!(e = node_new(ps, kind, type < 0 ? a->type : type))) {
		fa_expr_free(a);
		return NULL;
	}
	if (attach(ps, e, pos, a, NULL) != 0) {
		fa_expr_free(e);
		return NULL;
	}
	return e;
}

static struct fa_expr *parse_unary(struct parser *ps)
{
	if (is_op(ps, "-"))
		return parse_prefix(ps, "-", N_NEG, -1, parse_unary, is_number, "a number");
	return parse_atom(ps);
}

/* "heads (a number)", "'causal' (a mask)", "a number": an operand, for messages. */
static void describe(const struct fa_expr *e, char *buf, size_t size)
{
	static const char *const kinds[W_COUNT] = {"a dtype", "a mask", "a layout", "an input",
							   "a pass"};
	const char *kind = e->type == T_WORD ? kinds[e->wclass] : type_words(e);
	if (e->kind == N_NAME)
		snprintf(buf, size, "%s (%s)", names[e->i].name, kind);
	else if (e->kind == N_WORD)
		snprintf(buf, size, "'%s' (%s)", word_text(e->wclass, (int)e->i), kind);
	else
		snprintf(buf, size, "%s", kind);
}

static void cannot_compare(struct parser *ps, int pos, const struct fa_expr *a,
			   const struct fa_expr *b)
{
	char da[96], db[96];
	describe(a, da, sizeof da);
	describe(b, db, sizeof db);
	perr(ps, pos, "cannot compare %s with %s", da, db);
}

/* Builds a binary node after type checks; frees a and b on failure. */
static struct fa_expr *binary(struct parser *ps, int kind, int pos, const char *op,
			      struct fa_expr *a, struct fa_expr *b)
{
	struct fa_expr *e;
	int type;
	if (!a || !b) {
		fa_expr_free(a);
		fa_expr_free(b);
		return NULL;
	}
	switch (kind) {
	case N_AND:
	case N_OR:
		if (!is_condition(a) || !is_condition(b)) {
			perr(ps, pos, "'%s' needs conditions, got %s", op,
			     type_words(is_condition(a) ? b : a));
			goto fail;
		}
		type = T_BOOL;
		break;
	case N_ADD: case N_SUB: case N_MUL: case N_DIV: case N_MOD:
		if (!is_number(a) || !is_number(b)) {
			perr(ps, pos, "'%s' needs numbers, got %s", op, type_words(is_number(a) ? b : a));
			goto fail;
		}
		type = a->type == T_INT && b->type == T_INT ? T_INT : T_NUM;
		break;
	default: /* comparisons */
		if (is_number(a) && is_number(b)) {
			type = T_BOOL;
			break;
		}
		if (a->type == T_WORD && b->type == T_WORD) {
			if (kind != N_EQ && kind != N_NE) {
				perr(ps, pos, "'%s' cannot order words; use '==' or '!='", op);
				goto fail;
			}
			if (a->wclass != b->wclass) {
				cannot_compare(ps, pos, a, b);
				goto fail;
			}
			type = T_BOOL;
			break;
		}
		cannot_compare(ps, pos, a, b);
		goto fail;
	}
	if (!(e = node_new(ps, kind, type)))
		goto fail;
	if (attach(ps, e, pos, a, b) != 0) {
		fa_expr_free(e);
		return NULL;
	}
	return e;
fail:
	fa_expr_free(a);
	fa_expr_free(b);
	return NULL;
}

static struct fa_expr *parse_prod(struct parser *ps)
{
	struct fa_expr *e = parse_unary(ps);
	while (e && (is_op(ps, "*") || is_op(ps, "/") || is_op(ps, "%"))) {
		char op[3];
		int pos = ps->tok.pos;
		int kind = ps->tok.op[0] == '*' ? N_MUL : ps->tok.op[0] == '/' ? N_DIV : N_MOD;
		strcpy(op, ps->tok.op);
		advance(ps);
		e = binary(ps, kind, pos, op, e, parse_unary(ps));
	}
	return e;
}

static struct fa_expr *parse_sum(struct parser *ps)
{
	struct fa_expr *e = parse_prod(ps);
	while (e && (is_op(ps, "+") || is_op(ps, "-"))) {
		int pos = ps->tok.pos, kind = ps->tok.op[0] == '+' ? N_ADD : N_SUB;
		char op[3];
		strcpy(op, ps->tok.op);
		advance(ps);
		e = binary(ps, kind, pos, op, e, parse_prod(ps));
	}
	return e;
}

static struct fa_expr *parse_cmp(struct parser *ps)
{
	static const struct {
		const char *op;
		int kind;
	} cmps[] = {{"==", N_EQ}, {"!=", N_NE}, {"<", N_LT}, {"<=", N_LE}, {">", N_GT}, {">=", N_GE}};
	struct fa_expr *e = parse_sum(ps);
	if (!e)
		return NULL;
	for (size_t k = 0; k < sizeof cmps / sizeof cmps[0]; k++)
		if (is_op(ps, cmps[k].op)) {
			int pos = ps->tok.pos;
			advance(ps);
			e = binary(ps, cmps[k].kind, pos, cmps[k].op, e, parse_sum(ps));
			for (size_t j = 0; e && j < sizeof cmps / sizeof cmps[0]; j++)
				if (is_op(ps, cmps[j].op)) { /* 1 < a < 3 */
					perr(ps, ps->tok.pos, "comparisons do not chain: '%s' after a "
					     "comparison (write 'a < b && b < c')", cmps[j].op);
					fa_expr_free(e);
					return NULL;
				}
			return e;
		}
	return e;
}

static struct fa_expr *parse_not(struct parser *ps)
{
	if (is_op(ps, "!"))
		return parse_prefix(ps, "!", N_NOT, T_BOOL, parse_not, is_condition, "a condition");
	return parse_cmp(ps);
}

static struct fa_expr *parse_and(struct parser *ps)
{
	struct fa_expr *e = parse_not(ps);
	while (e && is_op(ps, "&&")) {
		int pos = ps->tok.pos;
		advance(ps);
		e = binary(ps, N_AND, pos, "&&", e, parse_not(ps));
	}
	return e;
}

static struct fa_expr *parse_or(struct parser *ps)
{
	struct fa_expr *e = parse_and(ps);
	while (e && is_op(ps, "||")) {
		int pos = ps->tok.pos;
		advance(ps);
		e = binary(ps, N_OR, pos, "||", e, parse_and(ps));
	}
	return e;
}

/* cond ? then : else, right-associative (a ? b : c ? d : e is a ? b : (c ?
 * d : e)); then and else are both numbers or both words of one class. */
static struct fa_expr *parse_expr(struct parser *ps)
{
	struct fa_expr *a = parse_or(ps), *b, *c, *e;
	if (!a || !is_op(ps, "?"))
		return a;
	int pos = ps->tok.pos;
	if (!is_condition(a)) {
		perr(ps, pos, "'?' needs a condition before it, got %s", type_words(a));
		fa_expr_free(a);
		return NULL;
	}
	if (nest(ps, pos) != 0) {
		fa_expr_free(a);
		return NULL;
	}
	advance(ps);
	b = parse_expr(ps);
	if (b && !is_op(ps, ":")) {
		char spot[48];
		spot_words(ps, pos, ps->tok.pos, spot, sizeof spot);
		if (ps->tok.kind == K_END)
			perr(ps, ps->tok.pos, "expected ':' of the '?' at %s", spot);
		else
			perr(ps, ps->tok.pos, "expected ':' of the '?' at %s, got '%.*s'", spot,
			     ps->tok.len, ps->text + ps->tok.pos);
		fa_expr_free(b);
		b = NULL;
	}
	int cpos = ps->tok.pos;
	c = NULL;
	if (b) {
		advance(ps);
		c = parse_expr(ps);
	}
	ps->nesting--;
	if (!b || !c) {
		fa_expr_free(a);
		fa_expr_free(b);
		fa_expr_free(c);
		return NULL;
	}
	int type;
	if (is_number(b) && is_number(c)) {
		type = b->type == T_INT && c->type == T_INT ? T_INT : T_NUM;
	} else if (b->type == T_WORD && c->type == T_WORD && b->wclass == c->wclass) {
		type = T_WORD;
	} else if (b->type == T_BOOL && c->type == T_BOOL) {
		type = T_BOOL;
	} else {
		char db[96], dc[96];
		describe(b, db, sizeof db);
		describe(c, dc, sizeof dc);
		perr(ps, cpos, "the two values of '?' differ: %s and %s", db, dc);
		fa_expr_free(a);
		fa_expr_free(b);
		fa_expr_free(c);
		return NULL;
	}
	if (!(e = node_new(ps, N_COND, type))) {
		fa_expr_free(a);
		fa_expr_free(b);
		fa_expr_free(c);
		return NULL;
	}
	e->wclass = b->wclass;
	e->c = c;
	if (attach(ps, e, pos, a, b) != 0) {
		fa_expr_free(e);
		return NULL;
	}
	if (c->height + 1 > e->height)
		e->height = c->height + 1;
	if (e->height - 1 > FA_EXPR_MAX_HEIGHT) {
		perr(ps, pos, "expression too deep: more than %d operators inside one another",
		     FA_EXPR_MAX_HEIGHT);
		fa_expr_free(e);
		return NULL;
	}
	return e;
}

/* Parses the whole text; want_number selects what it must be: a number
 * (1) or a condition (0). */
static enum fa_rc parse_text(const char *text, const struct fa_loc *loc, const struct fa_loc *map,
			     int want_number, struct fa_expr **out, struct fa_err *err)
{
	struct parser ps = {.text = text, .loc = loc, .map = map, .err = err};
	struct fa_expr *e;
	*out = NULL;
	lex_at(&ps, 0);
	if (ps.failed)
		return err && err->rc != FA_OK ? err->rc : FA_ERR_INPUT;
	if (ps.tok.kind == K_END) {
		perr(&ps, 0, "empty expression");
		return FA_ERR_INPUT;
	}
	e = parse_expr(&ps);
	if (e && ps.failed) { /* a lexing error after a complete sub-expression */
		fa_expr_free(e);
		e = NULL;
	}
	if (e && ps.tok.kind != K_END) {
		if (ps.tok.kind == K_RPAREN)
			perr(&ps, ps.tok.pos, "unexpected ')'");
		else
			perr(&ps, ps.tok.pos, "unexpected '%.*s' after a complete expression",
			     ps.tok.len, text + ps.tok.pos);
		fa_expr_free(e);
		e = NULL;
	}
	if (e && !want_number && !is_condition(e)) {
		perr(&ps, 0, "the expression is %s, not a condition", type_words(e));
		fa_expr_free(e);
		e = NULL;
	}
	if (e && want_number && !is_number(e)) {
		perr(&ps, 0, "the expression is %s, not a number", type_words(e));
		fa_expr_free(e);
		e = NULL;
	}
	if (!e) {
		if (err && err->rc != FA_OK)
			return err->rc;
		return FA_ERR_INPUT;
	}
	*out = e;
	return FA_OK;
}

enum fa_rc fa_expr_parse(const char *text, const struct fa_loc *loc, struct fa_expr **out,
			 struct fa_err *err)
{
	return parse_text(text, loc, NULL, 0, out, err);
}

enum fa_rc fa_expr_parse_number(const char *text, const struct fa_loc *loc, struct fa_expr **out,
				struct fa_err *err)
{
	return parse_text(text, loc, NULL, 1, out, err);
}

enum fa_rc fa_expr_parse_mapped(const char *text, const struct fa_loc *map, int number,
				struct fa_expr **out, struct fa_err *err)
{
	return parse_text(text, map, map, number, out, err);
}

/* ---- evaluation */

static struct value name_value(int id, const struct fa_case *c)
{
	const struct fa_problem *p = &c->p;
	struct value v = {1, WHY_NONE, 0, 0.0};
	switch (id) {
	case V_BATCH: v.i = p->batch; break;
	case V_HEADS: v.i = p->heads; break;
	case V_KV_HEADS: v.i = p->kv_heads; break;
	case V_GQA: v.i = p->kv_heads > 0 ? p->heads / p->kv_heads : 0; break;
	case V_Q_LEN: v.i = p->q_len; break;
	case V_KV_LEN: v.i = p->kv_len; break;
	case V_HEAD_DIM: v.i = p->head_dim; break;
	case V_HEAD_DIM_V: v.i = p->head_dim_v; break;
	case V_PREFIX_LEN: v.i = p->mask == FA_MASK_PREFIX_LM ? p->prefix_len : 0; break;
	case V_WINDOW: v.i = p->mask == FA_MASK_SLIDING_WINDOW ? p->window : 0; break;
	case V_SCALE: v.d = p->scale; break;
	case V_VARLEN: v.i = p->varlen; break;
	case V_TOKENS: v.i = p->total_q; break;
	case V_DTYPE: v.i = p->dtype; break;
	case V_MASK: v.i = p->mask; break;
	case V_LAYOUT: v.i = p->layout; break;
	case V_DEPTH: v.i = c->depth; break;
	case V_PASS: v.i = c->pass; break;
	default: v.i = c->dist; break;
	}
	return v;
}

static double as_double(const struct fa_expr *e, struct value v)
{
	return e->type == T_INT ? (double)v.i : v.d;
}

/* v undefined for reason why. */
static struct value undefined(int why)
{
	struct value v = {0, why, 0, 0.0};
	return v;
}

static struct value eval(const struct fa_expr *e, const struct fa_case *c)
{
	struct value v = {1, WHY_NONE, 0, 0.0}, a, b;
	switch (e->kind) {
	case N_INT: v.i = e->i; return v;
	case N_NUM: v.d = e->d; return v;
	case N_WORD: v.i = e->i; return v;
	case N_NAME: return name_value((int)e->i, c);
	case N_NEG:
		a = eval(e->a, c);
		if (!a.defined)
			return a;
		if (e->type == T_INT) {
			if (a.i == INT64_MIN)
				return undefined(WHY_OVERFLOW);
			a.i = -a.i;
		} else {
			a.d = -a.d;
		}
		return a;
	case N_NOT:
		a = eval(e->a, c);
		v.i = !(a.defined && a.i != 0);
		return v;
	case N_AND:
		a = eval(e->a, c);
		if (!(a.defined && a.i)) {
			v.i = 0;
			return v;
		}
		b = eval(e->b, c);
		v.i = b.defined && b.i != 0;
		return v;
	case N_OR:
		a = eval(e->a, c);
		if (a.defined && a.i) {
			v.i = 1;
			return v;
		}
		b = eval(e->b, c);
		v.i = b.defined && b.i != 0;
		return v;
	case N_COND: {
		a = eval(e->a, c);
		const struct fa_expr *pick = a.defined && a.i ? e->b : e->c;
		v = eval(pick, c);
		if (e->type == T_NUM && pick->type == T_INT) { /* 4 in x ? 0.5 : 4 */
			v.d = (double)v.i;
			v.i = 0;
		}
		return v;
	}
	default:
		break;
	}
	a = eval(e->a, c);
	b = eval(e->b, c);
	if (!a.defined || !b.defined) {
		if (e->type == T_BOOL) { /* a comparison of an undefined number: false */
			v.i = 0;
			return v;
		}
		return a.defined ? b : a; /* an undefined number, with its reason */
	}
	if (e->kind >= N_ADD && e->kind <= N_MOD) {
		if (e->type == T_INT) {
			int over = 0;
			switch (e->kind) {
			case N_ADD: over = __builtin_add_overflow(a.i, b.i, &v.i); break;
			case N_SUB: over = __builtin_sub_overflow(a.i, b.i, &v.i); break;
			case N_MUL: over = __builtin_mul_overflow(a.i, b.i, &v.i); break;
			case N_DIV:
			case N_MOD:
				if (b.i == 0)
					return undefined(WHY_DIV0);
				if (a.i == INT64_MIN && b.i == -1) {
					if (e->kind == N_DIV)
						return undefined(WHY_OVERFLOW);
					v.i = 0;
					break;
				}
				v.i = e->kind == N_DIV ? a.i / b.i : a.i % b.i;
				break;
			}
			if (over)
				return undefined(WHY_OVERFLOW);
		} else {
			double x = as_double(e->a, a), y = as_double(e->b, b);
			switch (e->kind) {
			case N_ADD: v.d = x + y; break;
			case N_SUB: v.d = x - y; break;
			case N_MUL: v.d = x * y; break;
			case N_DIV: v.d = x / y; break;
			default: v.d = fmod(x, y); break;
			}
		}
		return v;
	}
	/* comparisons */
	int r;
	if (e->a->type == T_INT && e->b->type == T_INT) {
		r = a.i < b.i ? -1 : a.i > b.i;
	} else if (e->a->type == T_WORD) {
		r = a.i != b.i; /* only == and != reach here */
	} else {
		double x = as_double(e->a, a), y = as_double(e->b, b);
		/* scale is stored as a float: compare at its precision, so that
		 * scale == 0.3 holds for the scale 0.3 */
		if ((e->a->kind == N_NAME && e->a->i == V_SCALE) ||
		    (e->b->kind == N_NAME && e->b->i == V_SCALE)) {
			x = (float)x;
			y = (float)y;
		}
		if (x != x || y != y) { /* NaN: no comparison holds except != */
			v.i = e->kind == N_NE;
			return v;
		}
		r = x < y ? -1 : x > y;
	}
	switch (e->kind) {
	case N_EQ: v.i = r == 0; break;
	case N_NE: v.i = r != 0; break;
	case N_LT: v.i = r < 0; break;
	case N_LE: v.i = r <= 0; break;
	case N_GT: v.i = r > 0; break;
	default: v.i = r >= 0; break;
	}
	return v;
}

int fa_expr_eval(const struct fa_expr *e, const struct fa_case *c)
{
	struct value v = eval(e, c);
	return v.defined && v.i != 0;
}

double fa_expr_number(const struct fa_expr *e, const struct fa_case *c)
{
	return fa_expr_number_why(e, c, NULL);
}

double fa_expr_number_why(const struct fa_expr *e, const struct fa_case *c, const char **why)
{
	struct value v = eval(e, c);
	double x = v.defined ? as_double(e, v) : NAN;
	if (why)
		*why = !v.defined ? (v.why == WHY_OVERFLOW ? "an integer overflow: a value past "
							     "9223372036854775807"
							   : "a division by zero")
		       : isnan(x) ? "not a number (infinity minus infinity, zero times infinity "
				    "or the like)"
		       : isinf(x) ? "infinite"
				  : NULL;
	return x;
}

int fa_expr_uses(const struct fa_expr *e, const char *name)
{
	if (!e)
		return 0;
	if (e->kind == N_NAME && strcmp(names[e->i].name, name) == 0)
		return 1;
	return fa_expr_uses(e->a, name) || fa_expr_uses(e->b, name) || fa_expr_uses(e->c, name);
}
