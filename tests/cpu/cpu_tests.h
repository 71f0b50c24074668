/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_tests.h - what the CPU backend's tests (cpu_tests.c,
 * cpu_native_tests.c, cpu_pool_tests.c) share, defined in cpu_tests.c.
 */
#ifndef INFINIRT_TEST_CPU_TESTS_H_
#define INFINIRT_TEST_CPU_TESTS_H_

#include "common.h"

#define MiB ((size_t)1 << 20)

/* A config with the cpu plugin (2 devices) and, unless NULL, its streams
 * key set to `streams`. */
void cpu_config(const char *streams);
/* The threads of this process (/proc/self/task), or -1. */
int thread_count(void);
/* A host function: sets the atomic_int at `flag` to 1. */
void set_flag(void *flag);

#endif
