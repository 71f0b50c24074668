/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_bench_threads.h - infinirt-cpu-bench's rows of threads allocating on
 * the NULL stream at once (cpu_bench_threads.c).
 */
#ifndef INFINIRT_BENCH_CPU_BENCH_THREADS_H_
#define INFINIRT_BENCH_CPU_BENCH_THREADS_H_

/* Prints "LABEL null_malloc_Nt NS" for N = 1, 2, 4: each thread's CPU
 * time per MallocAsync + FreeAsync of 64 B on the NULL stream, N threads
 * at once (the median of the chunks timed while the others ran beside),
 * and "LABEL null_malloc_Nx R", its ratio to one thread's; the same for
 * glibc's malloc + free of 64 B as libc_malloc_*.  Batches divided by
 * `scale`. */
void cpu_bench_threads_rows(const char *label, long scale);

#endif
