/* usdt_spec.c - see usdt_spec.h. The grammar is the one the compilers emit
 * for <sys/sdt.h> and qprof.h operands on x86-64: SIZE@OPERAND separated by
 * spaces, SIZE in {±1, ±2, ±4, ±8} (negative: signed), OPERAND one of
 * $IMM, %REG, OFF(%REG), (%REG). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "usdt_spec.h"

/* offsetof(struct pt_regs, x) on x86-64 */
static int reg_offset(const char *name, size_t n)
{
	static const struct {
		const char *names[4];
		int off;
	} regs[] = {
		{ { "rip", "eip", NULL }, 128 },
		{ { "rax", "eax", "ax", "al" }, 80 },
		{ { "rbx", "ebx", "bx", "bl" }, 40 },
		{ { "rcx", "ecx", "cx", "cl" }, 88 },
		{ { "rdx", "edx", "dx", "dl" }, 96 },
		{ { "rsi", "esi", "si", "sil" }, 104 },
		{ { "rdi", "edi", "di", "dil" }, 112 },
		{ { "rbp", "ebp", "bp", "bpl" }, 32 },
		{ { "rsp", "esp", "sp", "spl" }, 152 },
		{ { "r8", "r8d", "r8w", "r8b" }, 72 },
		{ { "r9", "r9d", "r9w", "r9b" }, 64 },
		{ { "r10", "r10d", "r10w", "r10b" }, 56 },
		{ { "r11", "r11d", "r11w", "r11b" }, 48 },
		{ { "r12", "r12d", "r12w", "r12b" }, 24 },
		{ { "r13", "r13d", "r13w", "r13b" }, 16 },
		{ { "r14", "r14d", "r14w", "r14b" }, 8 },
		{ { "r15", "r15d", "r15w", "r15b" }, 0 },
	};
	size_t i, j;

	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (j = 0; j < 4 && regs[i].names[j]; j++)
			if (strlen(regs[i].names[j]) == n && !strncmp(regs[i].names[j], name, n))
				return regs[i].off;
	return -1;
}

/* "%reg" at *p (p past the '%'): the register's offset; advances *p. */
static int parse_reg(const char **p)
{
	const char *s = *p;
	size_t n = 0;
	int off;

	while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9'))
		n++;
	off = n ? reg_offset(s, n) : -1;
	*p = s + n;
	return off;
}

static int parse_one(const char **pp, struct qp_usdt_arg *a)
{
	const char *p = *pp;
	char *end;
	long size;
	int off;

	errno = 0;
	size = strtol(p, &end, 10);
	if (errno || end == p || *end != '@')
		return -EINVAL;
	if (size != 1 && size != 2 && size != 4 && size != 8 && size != -1 && size != -2 &&
	    size != -4 && size != -8)
		return -EINVAL;
	a->arg_signed = size < 0;
	a->arg_bitshift = (int8_t)(64 - (size < 0 ? -size : size) * 8);
	p = end + 1;
	if (*p == '$') {
		long long v;

		errno = 0;
		v = strtoll(p + 1, &end, 0);
		if (errno || end == p + 1)
			return -EINVAL;
		a->arg_type = QP_USDT_ARG_CONST;
		a->val_off = (uint64_t)v;
		p = end;
	} else if (*p == '%') {
		p++;
		off = parse_reg(&p);
		if (off < 0)
			return -EINVAL;
		a->arg_type = QP_USDT_ARG_REG;
		a->reg_off = (int16_t)off;
	} else {
		long long disp = 0;

		if (*p != '(') {
			errno = 0;
			disp = strtoll(p, &end, 10);
			if (errno || end == p || *end != '(')
				return -EINVAL;
			p = end;
		}
		if (p[0] != '(' || p[1] != '%')
			return -EINVAL;
		p += 2;
		off = parse_reg(&p);
		if (off < 0 || *p != ')')
			return -EINVAL;
		p++;
		a->arg_type = QP_USDT_ARG_REG_DEREF;
		a->reg_off = (int16_t)off;
		a->val_off = (uint64_t)disp;
	}
	if (*p && *p != ' ')
		return -EINVAL;
	*pp = p;
	return 0;
}

int qp_usdt_parse_args(const char *args, struct qp_usdt_spec *spec)
{
	const char *p = args;

	memset(spec, 0, sizeof(*spec));
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (spec->arg_cnt >= QP_USDT_MAX_ARGS)
			return -EINVAL;
		if (parse_one(&p, &spec->args[spec->arg_cnt]))
			return -EINVAL;
		spec->arg_cnt++;
	}
	return 0;
}
