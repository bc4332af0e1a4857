/* sf_lib.c - symbolizer fixture: a shared library with one noinline
 * function that sf_prog (PIE) takes the address of. */
volatile int sf_lib_sink;

__attribute__((noinline)) int sf_lib_gamma(int x)
{
	int i, s = 2;

	for (i = 0; i < x; i++)
		s += s * sf_lib_sink + i;
	return s;
}
