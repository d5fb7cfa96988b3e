/* test_expr.c - the where-expression language: precedence, integer and
 * floating arithmetic, words, undefined division, and parse errors with
 * their columns. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/suite/expr.h"
#include "../harness/suite/suite.h"
#include "../kernels/common/fa_rng.h"
#include "test.h"

static struct fa_case make_case(void)
{
	struct fa_case c;
	memset(&c, 0, sizeof c);
	c.p.batch = 2;
	c.p.heads = 32;
	c.p.kv_heads = 8;
	c.p.q_len = 1024;
	c.p.kv_len = 4096;
	c.p.head_dim = 128;
	c.p.head_dim_v = 128;
	c.p.dtype = FA_DTYPE_BF16;
	c.p.mask = FA_MASK_CAUSAL;
	c.p.layout = FA_LAYOUT_BSHD;
	c.p.total_q = 2048;
	c.p.total_k = 8192;
	c.p.scale = 0.125f;
	c.dist = FA_DIST_OUTLIERS;
	return c;
}

/* Parses text (must succeed) and evaluates it on c. Returns -1 on a parse error. */
static int eval_on(const char *text, const struct fa_case *c)
{
	struct fa_expr *e = NULL;
	struct fa_err err;
	int r;
	fa_err_clear(&err);
	if (fa_expr_parse(text, NULL, &e, &err) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "'%s' did not parse: %s", text, err.msg);
		return -1;
	}
	r = fa_expr_eval(e, c);
	fa_expr_free(e);
	return r;
}

#define HOLDS(text) FA_CHECKF(eval_on(text, &c) == 1, "'%s' should hold", text)
#define FAILS(text) FA_CHECKF(eval_on(text, &c) == 0, "'%s' should not hold", text)

FA_TEST(expr, precedence)
{
	struct fa_case c = make_case();
	HOLDS("1 + 2 * 3 == 7");
	HOLDS("(1 + 2) * 3 == 9");
	HOLDS("10 - 4 - 3 == 3");      /* left associative */
	HOLDS("64 / 4 / 2 == 8");
	HOLDS("2 * 3 % 4 == 2");       /* (2 * 3) % 4 */
	HOLDS("-2 * -3 == 6");
	HOLDS("1 == 1 || 1 == 2 && 1 == 2"); /* && binds tighter than || */
	FAILS("(1 == 1 || 1 == 2) && 1 == 2");
	HOLDS("!heads == 16");         /* ! applies to the comparison */
	HOLDS("not heads == 16 and heads == 32");
	HOLDS("heads == 1 or heads == 32");
	HOLDS("!!(heads == 32)");
	HOLDS("heads > 4 and (mask == causal or mask == none)");
}

FA_TEST(expr, arithmetic)
{
	struct fa_case c = make_case();
	HOLDS("7 / 2 == 3");           /* integers divide as integers */
	HOLDS("-7 / 2 == -3");
	HOLDS("7 % 4 == 3");
	HOLDS("7.0 / 2 == 3.5");       /* a double makes it floating */
	HOLDS("7 / 2.0 > 3.4");
	HOLDS("8k == 8192");
	HOLDS("32k / 1k == 32");
	HOLDS("1e3 == 1000");
	HOLDS("heads / kv_heads == gqa");
	HOLDS("gqa == 4");
	HOLDS("tokens == batch * q_len");
	HOLDS("kv_len - q_len == 3k");
	HOLDS("scale == 0.125");
	HOLDS("scale * head_dim == 16");
	c.p.scale = 0.3f; /* compared at float precision */
	HOLDS("scale == 0.3 && 0.3 == scale && scale > 0.29");
	FAILS("scale != 0.3");
	c.p.scale = 0.125f;
	HOLDS("batch * kv_len <= 4194304");
	FAILS("batch * kv_len * 1k > 4194304 * 2k");
	/* division by zero: every comparison it reaches is false */
	FAILS("heads / 0 == 0");
	FAILS("heads / 0 != 0");
	FAILS("heads % (kv_heads - 8) >= 0");
	HOLDS("!(heads / 0 == 0)");
	HOLDS("heads / 0 == 0 || heads == 32");
	/* an undefined number stays undefined through later arithmetic (it
	 * once became a defined 0 there) */
	FAILS("heads / 0 + 0 == 0");
	FAILS("(heads / 0) * 0 + 16 == 16");
	FAILS("-(heads % 0) == 0");
	/* integer arithmetic past int64 is undefined, not wrapped */
	FAILS("heads * 4611686018427387904 * 2 == 0");
	FAILS("9223372036854775807 + heads > 0");
	FAILS("9223372036854775807 + heads < 0");
	FAILS("-9223372036854775807 - heads < 0");
	FAILS("-(-9223372036854775807 - 1) != 0");
	FAILS("(-9223372036854775807 - 1) / -1 != 0");
	HOLDS("(-9223372036854775807 - 1) % -1 == 0");
	HOLDS("9223372036854775807 - heads + heads == 9223372036854775807");
}

/* The value of a number-valued text on c, with the reason it is undefined. */
static double number_why(const char *text, const struct fa_case *c, const char **why)
{
	struct fa_expr *e = NULL;
	struct fa_err err;
	fa_err_clear(&err);
	if (fa_expr_parse_number(text, NULL, &e, &err) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "'%s' did not parse: %s", text, err.msg);
		return 0;
	}
	double x = fa_expr_number_why(e, c, why);
	fa_expr_free(e);
	return x;
}

FA_TEST(expr, undefined_numbers_say_why)
{
	struct fa_case c = make_case();
	const char *why = "unset";
	FA_CHECK(number_why("kv_len / heads + 1", &c, &why) == 129 && why == NULL);
	FA_CHECK(isnan(number_why("kv_len / (heads - 32) + 1", &c, &why)));
	FA_CHECK(why && strcmp(why, "a division by zero") == 0);
	FA_CHECK(isnan(number_why("kv_len * 4611686018427387904 + 1", &c, &why)));
	FA_CHECK(why && strncmp(why, "an integer overflow", 19) == 0);
	FA_CHECK(isnan(number_why("(q_len * 1e300 * 1e300) - (q_len * 1e300 * 1e300)", &c, &why)));
	FA_CHECK(why && strncmp(why, "not a number", 12) == 0);
	FA_CHECK(isinf(number_why("q_len * 1e300 * 1e300", &c, &why)));
	FA_CHECK(why && strcmp(why, "infinite") == 0);
	/* the reason of the first undefined operand carries through */
	FA_CHECK(isnan(number_why("kv_len / 0 + heads * 9223372036854775807", &c, &why)));
	FA_CHECK(why && strcmp(why, "a division by zero") == 0);
}

FA_TEST(expr, words)
{
	struct fa_case c = make_case();
	HOLDS("dtype == bf16");
	FAILS("dtype == fp16");
	HOLDS("dtype != fp32");
	HOLDS("mask == 'causal'");
	HOLDS("layout == \"bshd\"");
	HOLDS("bhsd != layout");
	HOLDS("input == outliers");
	HOLDS("prefix_len == 0 && window == 0"); /* not applicable: 0 */
	HOLDS("varlen == 0 && !varlen");
	c.p.mask = FA_MASK_SLIDING_WINDOW;
	c.p.window = 256;
	HOLDS("mask == sliding_window && window == 256");
	c.p.mask = FA_MASK_PREFIX_LM;
	c.p.prefix_len = 100;
	HOLDS("mask == prefix_lm && prefix_len * 4 > 399");
	c.p.varlen = 1;
	HOLDS("varlen");
	HOLDS("heads");                /* a nonzero integer holds */
}

/* Random problems: expressions agree with the same arithmetic done in C. */
FA_TEST(expr, random_cases)
{
	uint64_t seed = fa_test_seed();
	struct fa_expr *e1 = NULL, *e2 = NULL, *e3 = NULL;
	struct fa_err err;
	fa_err_clear(&err);
	FA_REQUIRE(fa_expr_parse("heads * head_dim > 1000 && kv_len >= q_len", NULL, &e1, &err) ==
		   FA_OK);
	FA_REQUIRE(fa_expr_parse("(batch + 3) * (q_len - kv_len) % 7 == 2 || dtype == fp32", NULL,
				 &e2, &err) == FA_OK);
	FA_REQUIRE(fa_expr_parse("q_len / kv_len * 2 + head_dim_v / 3 >= heads - batch", NULL, &e3,
				 &err) == FA_OK);
	for (int i = 0; i < 500; i++) {
		struct fa_case c = make_case();
		uint64_t r = fa_rng_mix64(seed + (uint64_t)i);
		c.p.batch = 1 + (int32_t)(r % 9);
		c.p.heads = 1 + (int32_t)((r >> 8) % 64);
		c.p.head_dim = 1 + (int32_t)((r >> 16) % 256);
		c.p.head_dim_v = 1 + (int32_t)((r >> 24) % 256);
		c.p.q_len = 1 + (int32_t)((r >> 32) % 5000);
		c.p.kv_len = 1 + (int32_t)((r >> 44) % 5000);
		c.p.dtype = (int32_t)((r >> 56) % 3);
		int64_t m = ((int64_t)c.p.batch + 3) * ((int64_t)c.p.q_len - c.p.kv_len) % 7;
		FA_CHECK(fa_expr_eval(e1, &c) ==
			 (c.p.heads * c.p.head_dim > 1000 && c.p.kv_len >= c.p.q_len));
		FA_CHECK(fa_expr_eval(e2, &c) == (m == 2 || c.p.dtype == FA_DTYPE_FP32));
		FA_CHECK(fa_expr_eval(e3, &c) == (c.p.q_len / c.p.kv_len * 2 + c.p.head_dim_v / 3 >=
						  c.p.heads - c.p.batch));
	}
	fa_expr_free(e1);
	fa_expr_free(e2);
	fa_expr_free(e3);
}

/* Parses text at loc file.yaml:3:10; expects an error at column col with msg. */
static void expect_error(const char *text, int col, const char *msg, int line)
{
	struct fa_loc loc = {"file.yaml", 3, 10};
	struct fa_expr *e = (struct fa_expr *)&loc; /* must come back NULL */
	struct fa_err err;
	fa_err_clear(&err);
	enum fa_rc rc = fa_expr_parse(text, &loc, &e, &err);
	if (rc != FA_ERR_INPUT || e != NULL) {
		fa_test_fail(__FILE__, line, "'%s' parsed (rc %d)", text, rc);
		return;
	}
	if (strcmp(err.file, "file.yaml") != 0 || err.line != 3 || err.col != 9 + col ||
	    strcmp(err.msg, msg) != 0)
		fa_test_fail(__FILE__, line, "'%s': got %s:%d:%d: %s; expected column %d: %s", text,
			     err.file, err.line, err.col, err.msg, 9 + col, msg);
}

#define ERR(text, col, msg) expect_error(text, col, msg, __LINE__)

FA_TEST(expr, errors_with_columns)
{
	/* col is 1-based inside the text; the file column adds loc.col - 1 */
	ERR("hedas > 4", 1, "unknown name 'hedas' (did you mean 'heads'?)");
	ERR("heads > 4 && dtype == causal", 20, "cannot compare dtype (a dtype) with 'causal' (a mask)");
	ERR("heads == bf16", 7, "cannot compare heads (a number) with 'bf16' (a dtype)");
	ERR("dtype < bf16", 7, "'<' cannot order words; use '==' or '!='");
	ERR("heads + bf16 > 2", 7, "'+' needs numbers, got a word");
	ERR("heads ==", 9, "unexpected end of expression");
	ERR("", 1, "empty expression");
	ERR("(heads == 1", 12, "expected ')' to close the '(' at column 10");
	ERR("heads = 1", 7, "unexpected '=' (use '==' to compare)");
	ERR("heads == 1 & batch == 2", 12, "unexpected '&' (use '&&')");
	ERR("heads == 1 $", 12, "unexpected character '$'");
	ERR("dtype == 'fp8'", 10, "unknown word 'fp8' (did you mean 'fp32'?)");
	/* a bare unknown name is not offered a word two edits away */
	ERR("foo == 1", 1, "unknown name 'foo'");
	ERR("mask == caual", 9, "unknown name 'caual' (did you mean 'causal'?)");
	ERR("1 < 2 < 3", 7, "comparisons do not chain: '<' after a comparison (write 'a < b && b < c')");
	ERR("scale", 1, "the expression is a number, not a condition");
	ERR("heads == 1)", 11, "unexpected ')'");
	ERR("q_len > 8x", 9, "invalid number '8x'");
	ERR("mask == 'causal", 9, "unterminated string");
	ERR("seq_len > 1", 1, "unknown name 'seq_len' (use q_len or kv_len)");
	ERR("dtype && heads", 7, "'&&' needs conditions, got a word");
	ERR("-dtype == 1", 1, "'-' needs a number, got a word");
	ERR("!scale", 1, "'!' needs a condition, got a number");
}

FA_TEST(expr, error_without_location)
{
	struct fa_expr *e = NULL;
	struct fa_err err;
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse("heads >", NULL, &e, &err) == FA_ERR_INPUT);
	FA_CHECK(e == NULL);
	FA_CHECK(strcmp(err.msg, "unexpected end of expression at column 8") == 0);
	FA_CHECK(err.file[0] == '\0');
}

/* With a location, lines after a line break start at the location's column
 * (a literal block scalar), columns count characters, and the second spot of
 * a message is on the error's line or named with its own. */
FA_TEST(expr, error_lines_and_characters)
{
	struct fa_expr *e = NULL;
	struct fa_err err;
	const struct fa_loc loc = {"s.yaml", 4, 3};
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse("heads == 1 &&\nbogus", &loc, &e, &err) == FA_ERR_INPUT);
	FA_CHECKF(err.line == 5 && err.col == 3, "at %d:%d", err.line, err.col);
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse("dtype == 'bf16' && \xc3\xa9", &loc, &e, &err) == FA_ERR_INPUT);
	FA_CHECKF(err.line == 4 && err.col == 22, "at %d:%d: %s", err.line, err.col, err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse("(heads == 1 &&\n batch == 2", &loc, &e, &err) == FA_ERR_INPUT);
	FA_CHECKF(err.line == 5 && err.col == 14, "at %d:%d", err.line, err.col);
	FA_CHECKF(strcmp(err.msg, "expected ')' to close the '(' at line 4, column 3") == 0, "%s",
		  err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse_number("batch > 1 ? 1", &loc, &e, &err) == FA_ERR_INPUT);
	FA_CHECKF(strcmp(err.msg, "expected ':' of the '?' at column 13") == 0, "%s", err.msg);
	/* a map puts every byte where its scalar's source has it */
	struct fa_loc map[6];
	for (int i = 0; i < 6; i++)
		map[i] = (struct fa_loc){"m.yaml", 7, 10 + 2 * i};
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse_mapped("a > 1", map, 0, &e, &err) == FA_ERR_INPUT);
	FA_CHECKF(err.line == 7 && err.col == 10 && strcmp(err.file, "m.yaml") == 0, "%s:%d:%d",
		  err.file, err.line, err.col);
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse_mapped("1 > 2", map, 1, &e, &err) == FA_ERR_INPUT);
	FA_CHECKF(err.line == 7 && err.col == 10, "%d:%d %s", err.line, err.col, err.msg);
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse_mapped("1 > ", map, 1, &e, &err) == FA_ERR_INPUT);
	FA_CHECKF(err.col == 18, "end at column %d", err.col);
}

/* head, n x open, mid, n x close, tail (malloc'd). */
static char *nested(const char *head, const char *open, int n, const char *mid, const char *close,
		    const char *tail)
{
	size_t hl = strlen(head), ol = strlen(open), ml = strlen(mid), cl = strlen(close);
	size_t tl = strlen(tail);
	char *s = malloc(hl + (ol + cl) * (size_t)n + ml + tl + 1), *w = s;
	if (!s)
		return NULL;
	memcpy(w, head, hl);
	w += hl;
	for (int i = 0; i < n; i++, w += ol)
		memcpy(w, open, ol);
	memcpy(w, mid, ml);
	w += ml;
	for (int i = 0; i < n; i++, w += cl)
		memcpy(w, close, cl);
	memcpy(w, tail, tl + 1);
	return s;
}

/* Parses text built by nested(); expects it to hold on c (want_col 0) or to
 * fail at want_col with want_msg. */
static void limit_case(char *text, const struct fa_case *c, int want_col, const char *want_msg,
		       int line)
{
	struct fa_expr *e = NULL;
	struct fa_err err;
	fa_err_clear(&err);
	if (!text) {
		fa_test_fail(__FILE__, line, "out of memory");
		return;
	}
	enum fa_rc rc = fa_expr_parse(text, NULL, &e, &err);
	if (want_col == 0) {
		if (rc != FA_OK || !fa_expr_eval(e, c))
			fa_test_fail(__FILE__, line, "'%.60s...' (%zu chars) should parse and hold: %s",
				     text, strlen(text), err.msg);
	} else {
		char want[256];
		snprintf(want, sizeof want, "%s at column %d", want_msg, want_col);
		if (rc != FA_ERR_INPUT || e || strcmp(err.msg, want) != 0)
			fa_test_fail(__FILE__, line, "'%.60s...': got rc %d '%s', expected '%s'", text,
				     rc, err.msg, want);
	}
	fa_expr_free(e);
	free(text);
}

#define LIMIT(text, col, msg) limit_case(text, &c, col, msg, __LINE__)

/* Parentheses and prefix operators nest at most FA_EXPR_MAX_NESTING deep, and
 * operators at most FA_EXPR_MAX_HEIGHT inside one another: right at the
 * limit the expression works, one past it the error points at the token
 * that went past, and far past it (13k parentheses killed the parser's
 * stack; 100k operators the evaluator's) it is the same error. */
FA_TEST(expr, nesting_and_height_limits)
{
	static const char nest_msg[] =
		"expression nested too deeply: more than 256 parentheses or prefix operators open";
	static const char height_msg[] =
		"expression too deep: more than 1024 operators inside one another";
	struct fa_case c = make_case();
	FA_REQUIRE(FA_EXPR_MAX_NESTING == 256 && FA_EXPR_MAX_HEIGHT == 1024);
	/* parentheses: the 257th '(' is at column 257 */
	LIMIT(nested("", "(", 256, "heads == 32", ")", ""), 0, NULL);
	LIMIT(nested("", "(", 257, "heads == 32", ")", ""), 257, nest_msg);
	LIMIT(nested("", "(", 13000, "heads == 32", ")", ""), 257, nest_msg);
	/* '!' and 'not' (256 is even: heads holds) */
	LIMIT(nested("", "!", 256, "heads", "", ""), 0, NULL);
	LIMIT(nested("", "!", 257, "heads", "", ""), 257, nest_msg);
	LIMIT(nested("", "not ", 257, "heads", "", ""), 1025, nest_msg);
	LIMIT(nested("", "!", 100000, "heads", "", ""), 257, nest_msg);
	/* unary minus, also spaced out: "- - - heads" */
	LIMIT(nested("", "-", 256, "heads == 32", "", ""), 0, NULL);
	LIMIT(nested("", "- ", 257, "heads == 32", "", ""), 513, nest_msg);
	LIMIT(nested("", "-", 100000, "heads == 32", "", ""), 257, nest_msg);
	/* the levels add up: 128 x "(-" is 256; one '(' more, and the last '-'
	 * is the 257th */
	LIMIT(nested("", "(-", 128, "heads", ")", " == 32"), 0, NULL);
	LIMIT(nested("(", "(-", 128, "heads", ")", ") == 32"), 257, nest_msg);
	/* chains: in heads + 1 + 1 ... each '+' is inside the next; 1024
	 * operators are fine, the 1025th is refused where it stands */
	LIMIT(nested("heads", " + 1", 1023, "", "", " == 1055"), 0, NULL);
	LIMIT(nested("heads", " + 1", 1024, "", "", " == 1056"), 5 + 4 * 1024 + 2, height_msg);
	LIMIT(nested("heads", " + 1", 100000, "", "", " > 0"), 5 + 4 * 1024 + 2, height_msg);
	LIMIT(nested("heads == 32", " || heads == 1", 1023, "", "", ""), 0, NULL);
	LIMIT(nested("heads == 32", " || heads == 1", 100000, "", "", ""), 11 + 14 * 1023 + 2,
	      height_msg);
	LIMIT(nested("heads", " && heads", 100000, "", "", ""), 5 + 9 * 1024 + 2, height_msg);
}

/* Parses a number-valued expression (must succeed) and evaluates it on c. */
static double number_on(const char *text, const struct fa_case *c)
{
	struct fa_expr *e = NULL;
	struct fa_err err;
	fa_err_clear(&err);
	if (fa_expr_parse_number(text, NULL, &e, &err) != FA_OK) {
		fa_test_fail(__FILE__, __LINE__, "'%s' did not parse: %s", text, err.msg);
		return NAN;
	}
	double v = fa_expr_number(e, c);
	fa_expr_free(e);
	return v;
}

FA_TEST(expr, ternary)
{
	struct fa_case c = make_case(); /* kv_len 4096, batch 2 */
	FA_CHECK(number_on("kv_len >= 16k ? 16 : 4", &c) == 4);
	FA_CHECK(number_on("kv_len >= 4k ? 16 : 4", &c) == 16);
	/* right-associative: a ? b : (c ? d : e) */
	FA_CHECK(number_on("batch > 8 ? 1 : kv_len > 2k ? 8 : 2", &c) == 8);
	FA_CHECK(number_on("batch > 1 ? 0.5 : 4", &c) == 0.5);
	FA_CHECK(number_on("batch > 8 ? 0.5 : 4", &c) == 4); /* int branch of a number */
	FA_CHECK(number_on("(batch == 2 ? 3 : 5) * 2", &c) == 6);
	FA_CHECK(isnan(number_on("batch / (batch - 2)", &c)));
	HOLDS("(batch == 2 ? kv_len : 0) == 4096");
	HOLDS("(mask == causal ? bf16 : fp32) == dtype");
	HOLDS("batch == 2 ? heads == 32 : heads == 1");
	FAILS("batch == 3 ? heads == 32 : heads == 1");
}

FA_TEST(expr, ternary_errors)
{
	ERR("(batch > 1 ? batch > 2 : 2) == 1", 24,
	    "the two values of '?' differ: a condition and a number");
	ERR("(batch > 1 ? 1 : bf16) == 1", 16, "the two values of '?' differ: a number and 'bf16' (a dtype)");
	ERR("(dtype ? 1 : 2) == 1", 8, "'?' needs a condition before it, got a word");
	ERR("(batch > 1 ? 1 2) == 1", 16, "expected ':' of the '?' at column 21, got '2'");
	ERR("batch > 1 ? 1", 14, "expected ':' of the '?' at column 20");
	ERR("batch > 1 ? 0.5 : 2", 1, "the expression is a number, not a condition");
	struct fa_expr *e = NULL;
	struct fa_err err;
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse_number("kv_len >= 16k", NULL, &e, &err) == FA_ERR_INPUT);
	FA_CHECK(e == NULL);
	FA_CHECK(strcmp(err.msg, "the expression is a condition, not a number at column 1") == 0);
	fa_err_clear(&err);
	FA_CHECK(fa_expr_parse_number("kv_lne >= 16k ? 16 : 4", NULL, &e, &err) == FA_ERR_INPUT);
	FA_CHECK(strcmp(err.msg, "unknown name 'kv_lne' (did you mean 'kv_len'?) at column 1") == 0);
}
