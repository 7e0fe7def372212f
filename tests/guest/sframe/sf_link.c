// SPDX-License-Identifier: GPL-2.0
/*
 * A library sf_dyn is linked with (libsflink.so, called through the PLT),
 * built without frame pointers and with SFrame tables. link_top ends in a
 * tail call ("jmp", no frame of its own left), so the stack at each
 * getppid() is link_leaf <- link_tail <- the caller of link_top.
 * link_nop and link_nop_got are next to nothing: calls to them spend their
 * time in the PLT stubs on the way (sf_dyn's "plt" mode).
 */
#define noinline __attribute__((noinline))

noinline long link_leaf(unsigned long x)
{
	volatile unsigned long pad[5] = { x };
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(110L) : "rcx", "r11", "memory");
	return ret + (long)pad[0];
}

noinline long link_tail(unsigned long x)
{
	volatile unsigned long pad[13];
	long r;

	pad[x % 13] = x;
	r = link_leaf(x + pad[x % 13]);
	__asm__ volatile("" ::: "memory");	/* no tail call here */
	return r;
}

/* Built with -foptimize-sibling-calls: "jmp link_tail". */
long link_top(unsigned long x)
{
	return link_tail(x * 3 + 1);
}

long link_nop(unsigned long x)
{
	return (long)x + 1;
}

long link_nop_got(unsigned long x)
{
	return (long)x + 2;
}
