/* npy.h - writing NumPy .npy files (format version 1.0), so that anyone can
 * check fabench's inputs, outputs and reference with numpy or PyTorch. */
#ifndef FA_NPY_H
#define FA_NPY_H

#include <stdint.h>

#include "err.h"

/* Writes n elements of data with NumPy type descr ("<f4", "<f2", "<f8",
 * "<i8", "<i4") and the given shape (ndim <= 8, product == n) to path.
 * Returns FA_OK or FA_ERR_IO naming the path. */
enum fa_rc fa_npy_write(const char *path, const char *descr, const int64_t *shape, int ndim,
			const void *data, int64_t n, int elem_size, struct fa_err *err);

#endif /* FA_NPY_H */
