// test_log_fmt_cxx.cpp - test_log_fmt.c built as C++ (log_fmt.h in a C++
// translation unit).
#include "test_log_fmt.c"
