/* fa_problem.h - the attention problem descriptor that every kernel, backend,
 * the reference and the harness share. It is part of the public plugin SDK
 * now: struct fa_problem, its enums and its FA_HD helpers live in
 * include/fabench/plugin.h; this name stays for the existing sources.
 */
#ifndef FA_PROBLEM_H
#define FA_PROBLEM_H

#include "../../include/fabench/plugin.h"

#endif /* FA_PROBLEM_H */
