/* npy.c - the .npy writer: a magic string, a version, a Python-dict header
 * padded so the data starts on a 64-byte boundary, then the raw data. */
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum fa_rc fa_npy_write(const char *path, const char *descr, const int64_t *shape, int ndim,
			const void *data, int64_t n, int elem_size, struct fa_err *err)
{
	char header[512];
	int len;
	FILE *f;
	len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (",
		       descr);
	for (int i = 0; i < ndim; i++)
		len += snprintf(header + len, sizeof header - (size_t)len, "%lld%s",
				(long long)shape[i], ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
	len += snprintf(header + len, sizeof header - (size_t)len, "), }");
	/* magic (6) + version (2) + header length (2) + header + '\n' = multiple of 64 */
	while ((10 + len + 1) % 64 != 0)
		header[len++] = ' ';
	header[len++] = '\n';
	f = fopen(path, "wb");
	if (!f)
		return fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
				 (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
	if (fwrite(pre, 1, sizeof pre, f) != sizeof pre ||
	    fwrite(header, 1, (size_t)len, f) != (size_t)len ||
	    (n > 0 && fwrite(data, (size_t)elem_size, (size_t)n, f) != (size_t)n)) {
		fclose(f);
		return fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	}
	if (fclose(f) != 0)
		return fa_err_set(err, FA_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
	return FA_OK;
}
