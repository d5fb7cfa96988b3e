/* fa_dtype.h - exact conversions between fp32 and the 16-bit storage types
 * (integer arithmetic, the same bits on the host and every GPU) and the
 * poison pattern of unwritten outputs. Part of the public plugin SDK now:
 * the definitions live in include/fabench/plugin.h; this name stays for the
 * existing sources.
 */
#ifndef FA_DTYPE_H
#define FA_DTYPE_H

#include "../../include/fabench/plugin.h"

#endif /* FA_DTYPE_H */
