/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_list.h - the tests of trace-test (trace_test.c).  TRACE_BACKEND_LIST
 * runs once per backend configuration (trace.cpu.NAME, trace.cpu-async.NAME,
 * trace.opencl.NAME, trace.cuda.NAME); TRACE_LOADER_LIST once, on the CPU
 * plugin (trace.NAME).
 */
#ifndef INFINIRT_TRACE_LIST_H_
#define INFINIRT_TRACE_LIST_H_

#define TRACE_BACKEND_LIST(X) \
    X(workload)               \
    X(summary)                \
    X(null_threads)

#define TRACE_LOADER_LIST(X) \
    X(coverage)              \
    X(entry)                 \
    X(work)                  \
    X(dropped)               \
    X(env_wins)              \
    X(off)                   \
    X(flush)                 \
    X(bad_file)              \
    X(threads)

#endif
