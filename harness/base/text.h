/* text.h - small text helpers shared by the stages that read input: the
 * edit distance behind every "did you mean" (suite keys and parameters,
 * where-expressions, kernel names, import columns).
 */
#ifndef FA_TEXT_H
#define FA_TEXT_H

/* Edit distance of a and b (Levenshtein), capped at 3: names closer than 3
 * are the only ones worth suggesting. Strings longer than 62 bytes are
 * always 3 away. */
int fa_edit_distance(const char *a, const char *b);

#endif /* FA_TEXT_H */
