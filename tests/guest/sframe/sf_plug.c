// SPDX-License-Identifier: GPL-2.0
/*
 * The plugin of sf_dyn, loaded with dlopen(): built without frame pointers
 * and with SFrame tables. plug_top <- plug_mid <- plug_leaf make getppid().
 * Built twice: the second build (PLUG_ALT, libsfplug_alt.so) has the same
 * functions with other frame sizes, for the rewrite run of sframe_stack;
 * the third (PLUG_FP, libsfplug_fp.so) keeps frame pointers and has no
 * table, and leaves %rbp alone.
 */
#define noinline __attribute__((noinline))

#ifdef PLUG_ALT
#define LEAF_PAD	3
#define MID_PAD		5
#else
#define LEAF_PAD	7
#define MID_PAD		11
#endif

noinline long plug_leaf(unsigned long x)
{
	volatile unsigned long pad[LEAF_PAD] = { x };
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(110L) : "rcx", "r11", "memory");
	return ret + (long)pad[0];
}

noinline long plug_mid(unsigned long x)
{
	volatile unsigned long pad[MID_PAD];
#ifdef PLUG_FP
	unsigned long junk = 0;
#else
	/* Not a frame pointer: a frame-pointer walk through here goes astray. */
	register unsigned long junk __asm__("rbp") = x ^ 0x5bd1e995UL;
#endif
	long r;

	pad[x % MID_PAD] = x;
	__asm__ volatile("" : "+r"(junk));
	r = plug_leaf(x + pad[x % MID_PAD] + junk);
	__asm__ volatile("" ::: "memory");
	return r;
}

long plug_top(unsigned long x)
{
	long r = plug_mid(x + 3);

	__asm__ volatile("" ::: "memory");
	return r;
}
