/* common.h - helpers shared by the test files. */
#ifndef INFINIRT_TEST_COMMON_H_
#define INFINIRT_TEST_COMMON_H_

#include "infinirt.h"
#include "test.h"
#include "test_list.h"

#include <pthread.h>
#include <stdbool.h>

/* The device type a conformance run targets: INFINIRT_TEST_DEVICE (cpu,
 * opencl, nvidia); cpu when unset. */
infiniDevice_t tc_device_type(void);
/* Select device `id` of the target type; TEST_SKIP when it does not exist. */
int tc_use_device(int id);
/* Fill buf with a pattern derived from seed. */
void tc_pattern(void *buf, size_t n, unsigned seed);
/* Write `text` to a fresh file in a private temp folder; returns its path
 * (static storage, valid until the next call). */
const char *tc_write_temp(const char *name, const char *text);
/* The temp folder of this test process. */
const char *tc_temp_dir(void);
/* Read a whole file into a static buffer (NUL-terminated); NULL on error. */
const char *tc_read_file(const char *path);
/* Write `text` as this process's config and point INFINIRT_CONFIG at it
 * (before the first infinirt call, which is when the loader reads it). */
void tc_use_config(const char *text);
/* setenv that aborts on failure. */
void tc_setenv(const char *name, const char *value);

/* A gate a host function can block a stream on.  Give it static storage:
 * the held stream's host function may still read it after a test returned
 * early (the runner opens every gate then). */
typedef struct {
    volatile int open;
    volatile int reached;
    /* Set by tc_hold_stream: the thread that queued the gate.  Run on that
     * same thread (a backend that does stream work inline, as the CPU
     * backend's `streams = inline`), the gate notes it and does not wait:
     * it would block its own opener. */
    int armed;
    pthread_t launcher;
    volatile int ran_inline;
} tc_gate;
/* Host function: reached=1, then wait until the gate is opened, or until
 * tc_gate_timeout_ms have passed: then it says so on stderr, counts the
 * timeout and returns, so a test whose only opener is blocked (a deadlock,
 * such as a copy of pageable host memory that CUDA completes before it
 * returns, queued behind the gate) fails instead of hanging. */
void tc_gate_wait_fn(void *gate);
void tc_gate_open(tc_gate *g);
/* How long a gate waits to be opened: 30 s unless a test changes it. */
extern int tc_gate_timeout_ms;
/* The runner's verdict after a test returned rc: TEST_FAIL, with a line
 * that says why, when any gate timed out in this process; rc otherwise. */
int tc_gate_verdict(int rc);
/* Forget the timeouts counted so far (the test of the timeout itself). */
void tc_gate_timeouts_reset(void);
/* TEST_SKIP when the current device runs stream work inline (on the
 * caller's thread): call it first in tests that hold a stream, before they
 * allocate anything a skip would leak. */
int tc_needs_async(void);
/* Block stream s on g with a host function; TEST_SKIP when the backend has
 * no host functions (NOT_IMPLEMENTED) or runs them inline (the gate cannot
 * hold anything there), TEST_FAIL on any other error.  Queues exactly one
 * host function: tests count on what the loader sees submitted. */
int tc_hold_stream(infinirtStream_t s, tc_gate *g);
/* Open every gate tc_hold_stream was given (the runner, after each test). */
void tc_open_all_gates(void);
void tc_sleep_ms(int ms);

/* Every test function, declared from the one list. */
#define TC_DECLARE(group, name) int test_##group##_##name(void);
TEST_LIST(TC_DECLARE)
#undef TC_DECLARE

/* A stream that does not wait for the NULL stream (nor it for the stream):
 * INFINIRT_STREAM_NON_BLOCKING, or a plain stream on a backend that has
 * only one kind. */
static inline infiniStatus_t tc_stream_create_nonblocking(infinirtStream_t *s)
{
    infiniStatus_t st = infinirtStreamCreateWithFlags(s, INFINIRT_STREAM_NON_BLOCKING);
    return st == INFINI_STATUS_NOT_IMPLEMENTED ? infinirtStreamCreate(s) : st;
}

#endif
