/* zst_drv < IN > OUT: compress standard input into one zstd frame on
 * standard output with libzstd (which mgpu links anyway), so that the CLI
 * tests make .zst fixtures without the zstd program. Exit 1 on failure. */
#include <stdio.h>  /* fread, fwrite */
#include <stdlib.h> /* malloc, realloc, free */
#include <zstd.h>   /* ZSTD_compress, ZSTD_compressBound */

int main(void)
{
	unsigned char *in = NULL, *out, *nb;
	size_t n = 0, cap = 0, got, bound, z;

	do {
		if (n == cap) {
			cap = cap ? 2 * cap : 1 << 16;
			nb = realloc(in, cap);
			if (!nb)
				return 1;
			in = nb;
		}
		got = fread(in + n, 1, cap - n, stdin);
		n += got;
	} while (got > 0);
	bound = ZSTD_compressBound(n);
	out = malloc(bound);
	if (!out || ferror(stdin))
		return 1;
	z = ZSTD_compress(out, bound, in, n, 3);
	if (ZSTD_isError(z) || fwrite(out, 1, z, stdout) != z || fflush(stdout) != 0) {
		fprintf(stderr, "zst_drv: cannot compress\n");
		return 1;
	}
	free(in);
	free(out);
	return 0;
}
