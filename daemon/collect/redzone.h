/* redzone.h - refuse a nop5 probe whose function keeps data in the red zone
 * (redzone.c: what the kernel does with a uprobe on a nop5). */
#ifndef QP_REDZONE_H
#define QP_REDZONE_H

#include <stdbool.h>
#include <stddef.h>

struct qp_elf_probes;

/* The running kernel turns a uprobe on a nop5 into a call (x86-64, Linux
 * >= 6.18). */
bool qp_redzone_kernel_optimises(void);

/* For the notes of PROVIDER in ELF (file PATH) whose name is one of NAMES
 * (NULL: any) and whose site is a nop5: 0 when probing every one of them is
 * safe on this kernel; 1 when one is in a function that keeps data below
 * %rsp, or whose function cannot be told (WHY says which); -errno when PATH
 * cannot be read. Always 0 on a kernel that does not optimise. */
int qp_redzone_check(const char *path, const struct qp_elf_probes *elf, const char *provider,
		     const char *const *names, size_t nnames, char *why, size_t whylen);

#endif
