/* test_text.c - the text helpers of harness/base/text.h: the edit distance
 * behind every "did you mean". */
#include <string.h>

#include "../harness/base/text.h"
#include "test.h"

FA_TEST(text, edit_distance)
{
	char long_a[80], long_b[80];
	FA_CHECK(fa_edit_distance("", "") == 0);
	FA_CHECK(fa_edit_distance("heads", "heads") == 0);
	FA_CHECK(fa_edit_distance("heds", "heads") == 1);      /* insertion */
	FA_CHECK(fa_edit_distance("headss", "heads") == 1);    /* deletion */
	FA_CHECK(fa_edit_distance("haeds", "heads") == 2);     /* no transpositions */
	FA_CHECK(fa_edit_distance("q_len", "kv_len") == 2);    /* substitution + insertion */
	FA_CHECK(fa_edit_distance("dtype", "mask") == 3);      /* capped */
	FA_CHECK(fa_edit_distance("", "abcdefgh") == 3);
	FA_CHECK(fa_edit_distance("cpu_flash", "cpu_dense") == 3);
	/* symmetric */
	FA_CHECK(fa_edit_distance("window", "widow") == fa_edit_distance("widow", "window"));
	/* longer than 62 bytes: always 3, even when equal */
	memset(long_a, 'a', 63);
	long_a[63] = '\0';
	memcpy(long_b, long_a, 64);
	FA_CHECK(fa_edit_distance(long_a, long_b) == 3);
	long_a[62] = '\0';
	long_b[62] = '\0';
	FA_CHECK(fa_edit_distance(long_a, long_b) == 0);
}
