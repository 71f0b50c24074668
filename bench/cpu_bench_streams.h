/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_bench_streams.h - infinirt-cpu-bench's many-streams rows
 * (cpu_bench_streams.c).
 */
#ifndef INFINIRT_CPU_BENCH_STREAMS_H_
#define INFINIRT_CPU_BENCH_STREAMS_H_

/* Prints "LABEL destroy_1000|destroy_20000|rr_1|rr_1000 NS" lines;
 * `scale` > 1 is --quick. */
void cpu_bench_stream_rows(const char *label, long scale);

#endif /* INFINIRT_CPU_BENCH_STREAMS_H_ */
