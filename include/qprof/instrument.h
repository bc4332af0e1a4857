/* SPDX-License-Identifier: MIT */
/* instrument.h - the INSTRUMENT_* names of the original tutorial API, mapped
 * onto the qprof markers (qprof.h), so that code written against that API
 * compiles unchanged and becomes visible to qprofd.
 *
 *   INSTRUMENT_FUNC();              time the enclosing function   (QPROF_FUNC)
 *   INSTRUMENT_FUNCTION();          the same
 *   INSTRUMENT_SCOPE(Name);         time until the end of the block; Name is an
 *                                   identifier, the site is called "Name"
 *   INSTRUMENT_LOG(fmt, ...);       a printf-style log line, formatted only
 *                                   while a tracer listens       (QPROF_LOG)
 *   INSTRUMENT_VALUE(var);          record var as a double under the name "var"
 *                                   (QPROF_VALUE; evaluated only while traced)
 *
 * The markers exist only when ENABLE_INSTRUMENT is defined (-DENABLE_INSTRUMENT).
 * Otherwise every macro is ((void)0) and qprof.h is not even included: the
 * binary carries no probe, no note, no descriptor, no semaphore.
 * -DQPROF_DISABLE also removes them (it empties the qprof markers themselves).
 *
 * C11 and C++11, GCC and clang.
 */
#ifndef QPROF_INSTRUMENT_H
#define QPROF_INSTRUMENT_H

#if defined(ENABLE_INSTRUMENT)

#include <qprof/qprof.h>

#define INSTRUMENT_FUNC() QPROF_FUNC()
#define INSTRUMENT_FUNCTION() QPROF_FUNC()
#define INSTRUMENT_SCOPE(name) QPROF_SCOPE(#name)
/* Written as (...) rather than (fmt, ...): a format with no argument is then
 * valid ISO C11/C++11, with no need for the GNU ", ##__VA_ARGS__". */
#define INSTRUMENT_LOG(...) QPROF_LOG(__VA_ARGS__)
#define INSTRUMENT_VALUE(var) QPROF_VALUE(#var, (var))

#else /* !ENABLE_INSTRUMENT */

#define INSTRUMENT_FUNC() ((void)0)
#define INSTRUMENT_FUNCTION() ((void)0)
#define INSTRUMENT_SCOPE(name) ((void)0)
#define INSTRUMENT_LOG(...) ((void)0)
#define INSTRUMENT_VALUE(var) ((void)0)

#endif /* ENABLE_INSTRUMENT */

#endif /* QPROF_INSTRUMENT_H */
