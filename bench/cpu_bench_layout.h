/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_bench_layout.h - the rows of infinirt-cpu-bench that depend on where
 * memory lies and on what an operator does with it (cpu_bench_layout.c):
 * a 64 B copy whose host buffer was mmap'ed between two pool segments
 * against one from a static buffer, and a realistic operator step.
 */
#ifndef INFINIRT_BENCH_CPU_BENCH_LAYOUT_H_
#define INFINIRT_BENCH_CPU_BENCH_LAYOUT_H_

/* Prints this process's rows as "LABEL ROW VALUE" lines (--rows), each time
 * the best of its batches, batches divided by `scale` (--quick: 10).  The
 * operator step runs only where a stream's work runs at the call (label
 * "async" skips it: its host kernel would race with the queued copy). */
void layout_rows(const char *label, long scale);

/* The rows' lines of the table for one stream mode `lab` (its passes'
 * outputs reached through get(), the first pass's text in out0 for where
 * the layout lay).  Returns 1 when a row is missing from every pass. */
int layout_table(const char *lab, const char *out0, double (*get)(const char *row, void *ctx), void *ctx);

#endif
