/* tiny.c - the program behind the small committed seeds of fuzz_symbolize
 * (tests/fuzz/corpus_symbolize, made by tests/fuzz/tiny/make_seeds.sh):
 * a few global, local and static functions, no libc. */
int counter;
__attribute__((noinline)) int alpha(int x) { return x * 3 + counter; }
__attribute__((noinline)) int beta(int x) { return alpha(x) ^ 5; }
__attribute__((noinline)) static int gamma_local(int x) { return beta(x) + 1; }
int delta(int x) { return gamma_local(x) - 2; }
void _start(void) { counter = delta(7); for (;;) ; }
