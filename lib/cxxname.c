// SPDX-License-Identifier: MIT
/* perf's names for demangled C++ functions. */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "internal.h"

/* What may follow a member function's parameter list. */
static bool qualifiers_only(const char *p, const char *end)
{
	static const char *const quals[] = { "const", "volatile", "&&", "&", "noexcept",
					     "restrict", "transaction_safe" };

	while (p < end) {
		size_t i, l = 0;

		if (*p == ' ') {
			p++;
			continue;
		}
		for (i = 0; i < sizeof(quals) / sizeof(quals[0]); i++) {
			l = strlen(quals[i]);
			if ((size_t)(end - p) >= l && !strncmp(p, quals[i], l) &&
			    (p + l == end || p[l] == ' '))
				break;
		}
		if (i == sizeof(quals) / sizeof(quals[0]))
			return false;
		p += l;
	}
	return true;
}

/* The characters of an operator's name after "operator" at p (0: none):
 * "operator<" is followed by " <T>" when it is a template, "operator==" by
 * "<T>". */
static size_t operator_len(const char *p)
{
	static const char *const ops[] = {
		"->*", "<<=", ">>=", "<=>", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&",
		"||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "()",
		"[]", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", "<", ">", ",",
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t l = strlen(ops[i]);

		if (!strncmp(p, ops[i], l))
			return l;
	}
	return 0;
}

static bool is_open(char c)
{
	return c == '(' || c == '<' || c == '[' || c == '{';
}

static bool is_close(char c)
{
	return c == ')' || c == '>' || c == ']' || c == '}';
}

/*
 * In place: name as perf prints it by default, libiberty's cplus_demangle
 * without DMGL_PARAMS: "std::sort<It, Cmp>" for "void std::sort<It,
 * Cmp>(It, It, Cmp)", "A::f" for "A::f(int) const"; the parameter list,
 * what follows it (const, &, noexcept) and a template function's return
 * type go, template arguments, "(anonymous namespace)", lambdas
 * ("{lambda(int)#1}") and " [clone .cold]" suffixes stay.  Anything else
 * (a data symbol, a name this does not understand) is left as it is.  For
 * function names only: special names (_ZT..., _ZG...: thunks, typeinfo,
 * transaction clones) keep their parameters in libiberty too.
 */
void ds_cxx_perf_name(char *name)
{
	char *s = name, *end = strstr(name, " [clone ");
	char *open = NULL, *close = NULL, *space = NULL, *ret_space = NULL, *angle = NULL;
	int depth = 0;

	if (!end)
		end = name + strlen(name);
	for (char *p = s; p < end; p++) {
		/* "operator<", "operator()", "operator new": not brackets, and
		 * not a return type's space */
		if (*p == 'o' && !strncmp(p, "operator", 8) &&
		    (p == s || p[-1] == ':' || p[-1] == ' ') &&
		    !(isalnum((unsigned char)p[8]) || p[8] == '_')) {
			p += 8;
			if (*p == ' ')
				p++;
			p += operator_len(p);
			if (p[0] == ' ' && p[1] == '<')
				p++;	/* "operator< <T>" */
			p--;
			continue;
		}
		if (is_open(*p)) {
			if (depth == 0 && *p == '(') {
				open = p;
				ret_space = space;
				close = NULL;
			}
			depth++;
		} else if (is_close(*p) && depth > 0) {
			depth--;
			if (depth == 0 && *p == ')')
				close = p;
			if (depth == 0 && *p == '>')
				angle = p;
		} else if (*p == ' ' && depth == 0) {
			space = p;
		}
	}
	if (depth || !open || !close || open == s || !qualifiers_only(close + 1, end))
		return;
	/* a template function's return type: "void std::sort<...>(...)" */
	if (angle == open - 1 && ret_space) {
		size_t n = (size_t)(open - (ret_space + 1));

		memmove(s, ret_space + 1, n);
		open = s + n;
	}
	memmove(open, end, strlen(end) + 1);
}
