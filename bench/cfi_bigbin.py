#!/usr/bin/env python3
"""cfi_bigbin.py - a big ELF shared object with realistic CFI, made cheaply,
for the CFI table compiler's memory and build-time figures
(bench/cfi_tables.sh). No binary is kept in git: this writes assembly with
.cfi directives and runs gcc on it.

    bench/cfi_bigbin.py OUT.so [MEGABYTES] [SEED]

MEGABYTES (default 100) is about the size of the code (96 MB for 100;
the file comes out a third bigger with its .eh_frame and symbols: 136 MB,
or 100 MB for 74). The functions have the shapes
gcc -O2 gives on x86-64 without frame pointers, drawn at random (SEED,
default 1): leaves with no frame, functions that push one to six callee-saved
registers and reserve locals, with early returns inside the body
(remember_state / restore_state), and a few with a frame pointer (CFA from
rbp). Bodies are filled with nops by `.skip`, so the assembly is a few
lines per function; functions are 16-byte aligned, and the padding between
them is covered by no FDE, as in compiler output. The density comes out
about one CFI row per 25 bytes of code, denser than real files (glibc has
one per 49, libstdc++ one per 30, libLLVM-15 one per 54): a worst case.
"""
import os
import random
import subprocess
import sys
import tempfile

REGS = ["rbx", "rbp", "r12", "r13", "r14", "r15"]
DWARF = {"rbx": 3, "rbp": 6, "r12": 12, "r13": 13, "r14": 14, "r15": 15}


def prologue(out, pushes, locals_):
    cfa = 8
    for i, r in enumerate(pushes):
        out.append("\tpush %%%s" % r)
        cfa += 8
        out.append("\t.cfi_def_cfa_offset %d" % cfa)
        out.append("\t.cfi_offset %d, -%d" % (DWARF[r], cfa))
    if locals_:
        out.append("\tsub $%d, %%rsp" % locals_)
        out.append("\t.cfi_def_cfa_offset %d" % (cfa + locals_))
    return cfa


def epilogue(out, pushes, locals_, cfa):
    if locals_:
        out.append("\tadd $%d, %%rsp" % locals_)
        out.append("\t.cfi_def_cfa_offset %d" % cfa)
    for r in reversed(pushes):
        out.append("\tpop %%%s" % r)
        cfa -= 8
        out.append("\t.cfi_def_cfa_offset %d" % cfa)
    out.append("\tret")


def body(out, n):
    if n > 0:
        out.append("\t.skip %d, 0x90" % n)


def function(rnd, out, name):
    out.append("\t.p2align 4")
    out.append("\t.type %s, @function" % name)
    out.append("%s:" % name)
    out.append("\t.cfi_startproc")
    size = int(rnd.lognormvariate(4.9, 0.9))  # median about 130 bytes
    size = max(8, min(size, 20000))
    shape = rnd.random()
    if shape < 0.22:
        # a leaf: no frame at all
        body(out, size)
        out.append("\tret")
    elif shape < 0.26:
        # a frame pointer
        out.append("\tpush %rbp")
        out.append("\t.cfi_def_cfa_offset 16")
        out.append("\t.cfi_offset 6, -16")
        out.append("\tmov %rsp, %rbp")
        out.append("\t.cfi_def_cfa_register 6")
        body(out, size)
        out.append("\tleave")
        out.append("\t.cfi_def_cfa 7, 8")
        out.append("\tret")
    else:
        pushes = REGS[: rnd.choice([1, 1, 2, 2, 3, 4, 5, 6])]
        rnd.shuffle(pushes)
        locals_ = rnd.choice([0, 0, 8, 24, 40, 56, 72, 104, 136, 264, 520])
        cfa = prologue(out, pushes, locals_)
        # early returns: one more epilogue per exit, its rule restored after
        exits = min(int(rnd.expovariate(1 / 0.8)), 6)
        chunk = size // (exits + 1)
        for _ in range(exits):
            body(out, chunk)
            out.append("\t.cfi_remember_state")
            epilogue(out, pushes, locals_, cfa)
            out.append("\t.cfi_restore_state")
        body(out, size - chunk * exits)
        epilogue(out, pushes, locals_, cfa)
    out.append("\t.cfi_endproc")
    out.append("\t.size %s, .-%s" % (name, name))


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    target = int(float(sys.argv[2] if len(sys.argv) > 2 else 100) * 1e6)
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "big.s")
        done = 0
        n = 0
        with open(src, "w") as f:
            f.write("\t.text\n")
            while done < target:
                out = []
                function(rnd, out, "qp_big_%d" % n)
                text = "\n".join(out) + "\n"
                # the code's bytes: the skips, about 2 per instruction line, alignment
                for line in out:
                    if line.startswith("\t.skip "):
                        done += int(line.split()[1].rstrip(","))
                    elif not line.startswith("\t.") and not line.endswith(":"):
                        done += 3
                done += 8
                f.write(text)
                n += 1
            f.write('\t.section .note.GNU-stack,"",@progbits\n')
        subprocess.run(["gcc", "-shared", "-nostdlib", "-Wl,--build-id", "-Wl,-z,noexecstack",
                        "-o", sys.argv[1], src], check=True)
    print("%s: %d functions, %.1f MB" % (sys.argv[1], n, os.path.getsize(sys.argv[1]) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
