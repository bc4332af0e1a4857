/* usdt_args.bpf.h - all USDT arguments of a probe hit with one spec lookup.
 *
 * libbpf's bpf_usdt_arg() looks the spec up again for every argument and
 * reads registers through bpf_probe_read_kernel(); on a marker hit that is
 * most of the BPF cost. Here the spec (libbpf's own map, filled by libbpf at
 * attach) is looked up once, registers are read straight from pt_regs with
 * constant offsets, and only memory operands (-O0 builds) take a probe read.
 * x86-64 only; elsewhere it falls back to libbpf's helpers. */
#ifndef QPROF_USDT_ARGS_BPF_H
#define QPROF_USDT_ARGS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
/* qprofd gives every site of a file its own spec (collect_attach.c):
 * libbpf's default of 256 specs is too few */
#ifndef BPF_USDT_MAX_SPEC_CNT
#ifdef __USDT_BPF_H__
#error "include usdt_args.bpf.h before <bpf/usdt.bpf.h>: it sets libbpf's number of USDT specs"
#endif
#define BPF_USDT_MAX_SPEC_CNT 1024
#endif
#include <bpf/usdt.bpf.h>

#if defined(__TARGET_ARCH_x86)
/* offsetof(struct pt_regs, reg) / 8 for x86-64: r15 r14 r13 r12 bp bx r11 r10
 * r9 r8 ax cx dx si di orig_ax ip cs flags sp ss */
/* Each case must stay a load at a constant offset of ctx: the verifier
 * refuses ctx + variable. The empty asm after each load keeps clang from
 * merging the cases into one computed address. */
#define QP_REG_CASE(n)                                                             \
	case (n) * 8:                                                              \
		v = *(volatile __u64 *)((char *)ctx + (n) * 8);                    \
		asm volatile("" : "+r"(v));                                        \
		break
static __always_inline __u64 qp_reg(struct pt_regs *ctx, int off)
{
	__u64 v = 0;

	switch (off) {
	QP_REG_CASE(0); QP_REG_CASE(1); QP_REG_CASE(2); QP_REG_CASE(3);
	QP_REG_CASE(4); QP_REG_CASE(5); QP_REG_CASE(6); QP_REG_CASE(7);
	QP_REG_CASE(8); QP_REG_CASE(9); QP_REG_CASE(10); QP_REG_CASE(11);
	QP_REG_CASE(12); QP_REG_CASE(13); QP_REG_CASE(14); QP_REG_CASE(16);
	QP_REG_CASE(19);
	default:
		break;
	}
	return v;
}

static __always_inline int qp_arg(struct pt_regs *ctx, struct __bpf_usdt_arg_spec *a, __u64 *out)
{
	__u64 v;

	switch (a->arg_type) {
	case BPF_USDT_ARG_CONST:
		v = a->val_off;
		break;
	case BPF_USDT_ARG_REG:
		v = qp_reg(ctx, a->reg_off);
		break;
	case BPF_USDT_ARG_REG_DEREF:
		v = qp_reg(ctx, a->reg_off);
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(v + a->val_off)))
			return -1;
		break;
	default:
		return -1;
	}
	v <<= a->arg_bitshift;
	if (a->arg_signed)
		v = (__u64)((__s64)v >> a->arg_bitshift);
	else
		v >>= a->arg_bitshift;
	*out = v;
	return 0;
}

/* The USDT cookie alone (probes whose arguments are not read). */
static __always_inline int qp_usdt_cookie(struct pt_regs *ctx, __u64 *cookie)
{
	int id = (int)bpf_get_attach_cookie(ctx);
	struct __bpf_usdt_spec *spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &id);

	if (!spec)
		return -1;
	*cookie = spec->usdt_cookie;
	return 0;
}

/* Arguments 1 and 2 and the attach cookie. 0, or -1 when unreadable. */
static __always_inline int qp_usdt_args2(struct pt_regs *ctx, __u64 *a0, __u64 *a1, __u64 *cookie)
{
	int id = (int)bpf_get_attach_cookie(ctx);
	struct __bpf_usdt_spec *spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &id);

	if (!spec || spec->arg_cnt < 2)
		return -1;
	*cookie = spec->usdt_cookie;
	if (qp_arg(ctx, &spec->args[0], a0) || qp_arg(ctx, &spec->args[1], a1))
		return -1;
	return 0;
}

/* The same with argument 3 (the length of a log message). */
static __always_inline int qp_usdt_args3(struct pt_regs *ctx, __u64 *a0, __u64 *a1, __u64 *a2,
					 __u64 *cookie)
{
	int id = (int)bpf_get_attach_cookie(ctx);
	struct __bpf_usdt_spec *spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &id);

	if (!spec || spec->arg_cnt < 3)
		return -1;
	*cookie = spec->usdt_cookie;
	if (qp_arg(ctx, &spec->args[0], a0) || qp_arg(ctx, &spec->args[1], a1) ||
	    qp_arg(ctx, &spec->args[2], a2))
		return -1;
	return 0;
}
#else
static __always_inline int qp_usdt_args3(struct pt_regs *ctx, __u64 *a0, __u64 *a1, __u64 *a2,
					 __u64 *cookie)
{
	long v0, v1, v2;

	if (bpf_usdt_arg(ctx, 0, &v0) || bpf_usdt_arg(ctx, 1, &v1) || bpf_usdt_arg(ctx, 2, &v2))
		return -1;
	*a0 = v0;
	*a1 = v1;
	*a2 = v2;
	*cookie = bpf_usdt_cookie(ctx);
	return 0;
}

static __always_inline int qp_usdt_cookie(struct pt_regs *ctx, __u64 *cookie)
{
	*cookie = bpf_usdt_cookie(ctx);
	return 0;
}

static __always_inline int qp_usdt_args2(struct pt_regs *ctx, __u64 *a0, __u64 *a1, __u64 *cookie)
{
	long v0, v1;

	if (bpf_usdt_arg(ctx, 0, &v0) || bpf_usdt_arg(ctx, 1, &v1))
		return -1;
	*a0 = v0;
	*a1 = v1;
	*cookie = bpf_usdt_cookie(ctx);
	return 0;
}
#endif
#endif
