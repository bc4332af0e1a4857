/* open_scope_maps.bpf.h - the maps of the threads' open scopes, declared once
 * for the objects that read them (profile.bpf.c and its offcpu.bpf.h
 * through sampler.bpf.h, heap.bpf.c): the BPF collector's scope stacks
 * (thread_stacks, made by scopes.bpf.c, whose own declaration is in scope_maps.bpf.h) and the rings threads announced
 * (ring_tids, made by ringreg.bpf.c), each reused by the daemon
 * (bpf_map__reuse_fd); left empty in an object that has neither. */
#ifndef QPROF_OPEN_SCOPE_MAPS_BPF_H
#define QPROF_OPEN_SCOPE_MAPS_BPF_H
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "ringreg.h"
#include "scopes.h"

/* Reused from scopes.bpf.c by the daemon (bpf_map__reuse_fd). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_stack);
} thread_stacks SEC(".maps");

/* Reused from ringreg.bpf.c by the daemon: the ring each thread announced. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, QPROF_RING_TIDS);
	__type(key, __u32);
	__type(value, struct ring_tid);
} ring_tids SEC(".maps");
#endif
