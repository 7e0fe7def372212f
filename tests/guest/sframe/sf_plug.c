// SPDX-License-Identifier: GPL-2.0
/*
 * The plugin of sf_dyn, loaded with dlopen(): built without frame pointers
 * and with SFrame tables. plug_top <- plug_mid <- plug_leaf make getppid().
 */
#define noinline __attribute__((noinline))

noinline long plug_leaf(unsigned long x)
{
	volatile unsigned long pad[7] = { x };
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(110L) : "rcx", "r11", "memory");
	return ret + (long)pad[0];
}

noinline long plug_mid(unsigned long x)
{
	volatile unsigned long pad[11];
	register unsigned long junk __asm__("rbp") = x ^ 0x5bd1e995UL;
	long r;

	pad[x % 11] = x;
	__asm__ volatile("" : "+r"(junk));
	r = plug_leaf(x + pad[x % 11] + junk);
	__asm__ volatile("" ::: "memory");
	return r;
}

long plug_top(unsigned long x)
{
	long r = plug_mid(x + 3);

	__asm__ volatile("" ::: "memory");
	return r;
}
