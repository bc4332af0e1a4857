/* test_ring_abi_cxx.cpp - the ring ABI test built as C++11 (RAII scope guards). */
#include "test_ring_abi.c"
