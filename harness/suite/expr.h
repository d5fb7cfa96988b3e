/* expr.h - the small expression language of `where:`, `exclude:` and
 * --where, evaluated on a case.
 *
 *   expr   := or ( '?' expr ':' expr )?   right-associative
 *   or     := and ( '||' and )*        also the word 'or'
 *   and    := not ( '&&' not )*        also 'and'
 *   not    := '!' not | cmp            also 'not'
 *   cmp    := sum ( ('=='|'!='|'<'|'<='|'>'|'>=') sum )?
 *   sum    := prod ( ('+'|'-') prod )*
 *   prod   := unary ( ('*'|'/'|'%') unary )*
 *   unary  := '-' unary | atom
 *   atom   := NUMBER | NAME | 'STRING' | "STRING" | '(' expr ')'
 *
 * The two values of a '?' are both numbers, both conditions or both words
 * of one class: `kv_len >= 16k ? 16 : 4` is a number (fabench tune's rules).
 *
 * Names are case parameters (batch, heads, kv_heads, gqa, q_len, kv_len,
 * head_dim, head_dim_v, prefix_len, window, scale, varlen, tokens, depth, dtype,
 * mask, layout, input) or the words those take (bf16, causal, bshd,
 * outliers, ...), which stand for themselves. Numbers compare with numbers,
 * words with words; anything else is an error at parse time, pointing at
 * the column.
 */
#ifndef FA_EXPR_H
#define FA_EXPR_H

#include "../base/err.h"

struct fa_expr;
struct fa_case;

/* Limits that keep the recursive parser, evaluator and fa_expr_free within a
 * small stack whatever the input: parentheses and prefix operators ('-', '!',
 * 'not') open at once, and operators inside one another in the tree (a chain
 * `a + b + c` is a chain of operators, one inside the next). Beyond either the
 * parse fails, pointing at the token that went past it. */
#define FA_EXPR_MAX_NESTING 256
#define FA_EXPR_MAX_HEIGHT 1024

/* Parses text. loc is where text's first character sits in its file (for
 * error columns); it may be NULL. Sets *out (free with fa_expr_free), or
 * NULL with err filled. */
enum fa_rc fa_expr_parse(const char *text, const struct fa_loc *loc, struct fa_expr **out,
			 struct fa_err *err);

/* As fa_expr_parse, for an expression whose value is a number (a tuning
 * rule): "the expression is a condition, not a number" otherwise. */
enum fa_rc fa_expr_parse_number(const char *text, const struct fa_loc *loc, struct fa_expr **out,
				struct fa_err *err);

/* As fa_expr_parse (number 0) or fa_expr_parse_number (number 1), with
 * map[i] where byte i of text sits in its file, for i from 0 to strlen(text)
 * (the end): a YAML scalar whose text is not its source character for
 * character (quoted, escaped, folded; fa_scalar_map). */
enum fa_rc fa_expr_parse_mapped(const char *text, const struct fa_loc *map, int number,
				struct fa_expr **out, struct fa_err *err);

/* The value of an expression from fa_expr_parse_number for c; NaN when it is
 * undefined (an integer division by zero or an integer past int64). */
double fa_expr_number(const struct fa_expr *e, const struct fa_case *c);

/* As fa_expr_number; *why (when why is not NULL) is NULL for a finite value,
 * else the reason in words ("a division by zero", "an integer overflow: ...",
 * "not a number (...)", "infinite"). */
double fa_expr_number_why(const struct fa_expr *e, const struct fa_case *c, const char **why);

/* 1 when the expression holds for c, 0 when it does not. Integer division or
 * remainder by zero, or integer arithmetic past int64, makes the comparison
 * it reaches false. */
int fa_expr_eval(const struct fa_expr *e, const struct fa_case *c);

void fa_expr_free(struct fa_expr *e);

/* 1 when the expression reads the case parameter name ("q_len"). */
int fa_expr_uses(const struct fa_expr *e, const char *name);

#endif /* FA_EXPR_H */
