/* usdt_spec.h - USDT argument specs ("8@%rax", "-4@$5", "8@-16(%rbp)") in
 * the layout libbpf's usdt.bpf.h reads from its __bpf_usdt_specs map, so
 * qprofd can attach USDT probes itself (one uprobe-multi link per probe name
 * per file) while the BPF side keeps reading specs the libbpf way. x86-64. */
#ifndef QPROF_USDT_SPEC_H
#define QPROF_USDT_SPEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QP_USDT_MAX_ARGS 12	/* BPF_USDT_MAX_ARG_CNT of libbpf 1.1 */

enum qp_usdt_arg_type { QP_USDT_ARG_CONST, QP_USDT_ARG_REG, QP_USDT_ARG_REG_DEREF };

/* Mirrors struct __bpf_usdt_arg_spec / __bpf_usdt_spec of <bpf/usdt.bpf.h>. */
struct qp_usdt_arg {
	uint64_t val_off;
	uint32_t arg_type;	/* enum qp_usdt_arg_type */
	int16_t reg_off;	/* offsetof(struct pt_regs, reg) */
	bool arg_signed;
	int8_t arg_bitshift;
};

struct qp_usdt_spec {
	struct qp_usdt_arg args[QP_USDT_MAX_ARGS];
	uint64_t usdt_cookie;
	int16_t arg_cnt;
};

/* Parse the argument string of a note. 0, or -EINVAL for anything this
 * parser does not understand (then the probe is not attached). */
int qp_usdt_parse_args(const char *args, struct qp_usdt_spec *spec);
#endif
