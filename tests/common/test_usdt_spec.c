/* test_usdt_spec.c - USDT argument specs parsed into libbpf's layout. */
#include "testlib.h"
#include "common/usdt_spec.h"

int main(void)
{
	struct qp_usdt_spec s;

	CHECK_INT(sizeof(struct qp_usdt_arg), 16);
	CHECK_INT(sizeof(struct qp_usdt_spec), 208);
	CHECK_INT(qp_usdt_parse_args("8@%rax 8@$0", &s), 0);
	CHECK_INT(s.arg_cnt, 2);
	CHECK_INT(s.args[0].arg_type, QP_USDT_ARG_REG);
	CHECK_INT(s.args[0].reg_off, 80);
	CHECK_INT(s.args[0].arg_bitshift, 0);
	CHECK_INT(s.args[1].arg_type, QP_USDT_ARG_CONST);
	CHECK_INT(s.args[1].val_off, 0);
	CHECK_INT(qp_usdt_parse_args("-4@%edx 8@-1204(%rbp) 2@(%r12) -1@$-9 8@%r15", &s), 0);
	CHECK_INT(s.arg_cnt, 5);
	CHECK_INT(s.args[0].reg_off, 96);
	CHECK(s.args[0].arg_signed);
	CHECK_INT(s.args[0].arg_bitshift, 32);
	CHECK_INT(s.args[1].arg_type, QP_USDT_ARG_REG_DEREF);
	CHECK_INT(s.args[1].reg_off, 32);
	CHECK_INT((int64_t)s.args[1].val_off, -1204);
	CHECK_INT(s.args[2].arg_type, QP_USDT_ARG_REG_DEREF);
	CHECK_INT(s.args[2].reg_off, 24);
	CHECK_INT(s.args[2].val_off, 0);
	CHECK_INT(s.args[2].arg_bitshift, 48);
	CHECK_INT((int64_t)s.args[3].val_off, -9);
	CHECK_INT(s.args[4].reg_off, 0);
	CHECK_INT(qp_usdt_parse_args("8@8(%rsp)", &s), 0);
	CHECK_INT(s.args[0].reg_off, 152);
	CHECK_INT(qp_usdt_parse_args("", &s), 0);
	CHECK_INT(s.arg_cnt, 0);
	/* refused: unknown register, bad size, junk, too many */
	CHECK(qp_usdt_parse_args("8@%xmm0", &s) != 0);
	CHECK(qp_usdt_parse_args("3@%rax", &s) != 0);
	CHECK(qp_usdt_parse_args("8@%rax junk", &s) != 0);
	CHECK(qp_usdt_parse_args("8%rax", &s) != 0);
	CHECK(qp_usdt_parse_args("8@(%rax", &s) != 0);
	CHECK(qp_usdt_parse_args("8@$", &s) != 0);
	CHECK(qp_usdt_parse_args("8@sym(%rip)x", &s) != 0);
	CHECK(qp_usdt_parse_args("8@$1 8@$1 8@$1 8@$1 8@$1 8@$1 8@$1 8@$1 8@$1 8@$1 8@$1 8@$1 8@$1", &s) != 0);
	return test_done("usdt_spec");
}
