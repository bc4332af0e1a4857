/* elf_snap.h - a private copy of the parts of a mapped ELF file that CFI
 * unwinding reads, for libdwfl to map instead of the file itself. libdwfl
 * maps the files it is handed; a target's library truncated while it is
 * mapped makes the next read of a page past the new end raise SIGBUS in
 * qprofd. A copy in a sealed memfd cannot shrink: a file that changes
 * while it is copied is refused, one that changes later is not seen.
 *
 * The copy has the file's size and layout (offsets unchanged) but holds
 * only the ELF header, the program and section header tables, the
 * section names, .eh_frame, .eh_frame_hdr, .debug_frame, the notes and the
 * PT_GNU_EH_FRAME segment (to the end of its load segment when there are
 * no section headers); the rest reads as zeros and takes no memory. */
#ifndef QPROF_ELF_SNAP_H
#define QPROF_ELF_SNAP_H
#include <stdint.h>

#define QP_ELF_SNAP_MAX_BYTES (256ull << 20)	/* the parts copied, at most */

/* A sealed memfd (O_CLOEXEC) holding the copy of the ELF file open on FD,
 * or -errno: -ENOEXEC not an ELF file, -EIO the file changed or was cut
 * while read, -E2BIG the parts to copy are over QP_ELF_SNAP_MAX_BYTES (or
 * too many). COPIED (may be NULL): the bytes copied. FD stays open. */
int qp_elf_snapshot(int fd, uint64_t *copied);
#endif
