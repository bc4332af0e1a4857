#!/usr/bin/env python3
"""bench/bpf_stats_hold.py - keep the kernel's BPF run-time statistics on
(BPF_ENABLE_STATS, BPF_STATS_RUN_TIME) while this process lives, without
touching the kernel.bpf_stats_enabled sysctl (the kernel counts holders, so
another tool's setting is left alone). Prints "held" once they are on, then
sleeps until signalled.   usage: sudo bench/bpf_stats_hold.py"""
import ctypes
import signal
import sys

SYS_BPF = 321		# x86-64
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0

libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(128)	# union bpf_attr, enable_stats.type = 0
attr[0:4] = BPF_STATS_RUN_TIME.to_bytes(4, "little")
fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, ctypes.c_uint(len(attr)))
if fd < 0:
    sys.exit(f"BPF_ENABLE_STATS: errno {ctypes.get_errno()}")
print("held", flush=True)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
signal.pause()
