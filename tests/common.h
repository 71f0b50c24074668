/* SPDX-License-Identifier: Apache-2.0 */
/* common.h - helpers shared by the test files. */
#ifndef INFINIRT_TEST_COMMON_H_
#define INFINIRT_TEST_COMMON_H_

#include "infinirt.h"
#include "test.h"
#include "test_list.h"

#include <pthread.h>
#include <stdbool.h>

/* The device type a conformance run targets: INFINIRT_TEST_DEVICE (cpu,
 * opencl, nvidia or "cuda", ascend, kunlun, ...: a type's name); cpu when
 * unset.  A value that names no type ends the process (exit 2) saying so
 * (tc_check_environment says it before any test runs). */
infiniDevice_t tc_device_type(void);
/* Select device `id` of the target type; TEST_SKIP ("skip: needs N
 * devices") when it does not exist. */
int tc_use_device(int id);
/* Fill buf with a pattern derived from seed. */
void tc_pattern(void *buf, size_t n, unsigned seed);
/* Every byte of device memory d equals v (read with a synchronous copy). */
int tc_device_all(const void *d, size_t n, unsigned char v);
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

/* ---- Declared unsupported features (IREE CTS's TestUnsupported) ----
 * A test skips only where the backend under test declared the feature it
 * needs unsupported, or where the machine lacks what it needs (a second
 * device: tc_use_device, tc_needs_devices; the caching allocator, which
 * the config turns off: tc_needs_caching_allocator).  Both ways are
 * checked: a skip the plugin did not declare fails, and so does a feature
 * it declared unsupported that works.  Whether a feature is there is asked
 * of the backend (tc_needs, or the test's own call): NOT_IMPLEMENTED, the
 * loader's answer for an entry the plugin left NULL, means it is not.
 *
 * The declarations: INFINIRT_TEST_UNSUPPORTED (a comma-separated list of
 * the names below, "" for none) for the plugin under test (the one serving
 * INFINIRT_TEST_DEVICE), which is how a vendor declares its plugin's gaps;
 * else, per plugin name, the plugin's tc_declaration (the plugins of this
 * tree and the vendor example, each in conformance/declared_<plugin>.c).
 * The plugin asked about is the one serving the calling thread's current
 * device.  `infinirt-conformance --features`
 * prints the names and what each means (tc_feature_meaning). */
typedef enum {
    /* "streams": infinirtStreamCreate, and work queued on a stream or the
     * NULL stream (MemcpyAsync, MallocAsync, FreeAsync, ...) */
    TC_STREAMS,
    TC_EVENTS,         /* "events": infinirtEventCreate, EventRecord, StreamWaitEvent, ... */
    TC_MEMSET,         /* "memset": infinirtMemset (and MemsetAsync, with streams) */
    TC_PINNED_MEMORY,  /* "pinned_memory": infinirtMallocHost, FreeHost */
    TC_MEM_INFO,       /* "mem_info": infinirtGetMemInfo (and the snapshot's capacity) */
    TC_HOST_FUNCTIONS, /* "host_functions": infinirtLaunchHostFunc */
    /* "async_streams": stream work runs after the call that queued it
     * returns, so a host function can hold a stream (not the CPU
     * backend's streams = inline) */
    TC_ASYNC_STREAMS,
    /* "peer_access": a stream of device 0 writes memory of device 1 */
    TC_PEER_ACCESS,
    /* "foreign_memory": the suite can make device memory of the backend
     * without infinirt (malloc on the CPU, SVM on OpenCL) */
    TC_FOREIGN_MEMORY,
    TC_GRAPHS, /* "graphs": infinirtStreamBeginCapture, graphs and their launches */
    TC_FEATURE_COUNT
} tc_feature;
#define TC_BIT(f) (1u << (f))
/* What a plugin of this tree declares unsupported: `always` (TC_BIT of
 * each feature), plus what its config decides (by_config, NULL when
 * nothing does), read from what the plugin says of itself.  Each plugin's
 * is in its own file, tests/conformance/declared_<plugin>.c; common.c's
 * k_declared lists them. */
typedef struct {
    const char *plugin;
    unsigned always;
    unsigned (*by_config)(void);
} tc_declaration;
extern const tc_declaration tc_declared_cpu, tc_declared_opencl, tc_declared_cuda, tc_declared_vendor;
/* The feature is missing here: TEST_SKIP (with a "skip:" line) when the
 * current device's plugin declared it unsupported, else TEST_FAIL with a
 * line that says the skip is undeclared. */
int tc_unsupported(tc_feature f);
/* The feature works here: TEST_OK, or TEST_FAIL when the plugin declared
 * it unsupported (the declaration is wrong). */
int tc_supported(tc_feature f);
/* Whether the current device's plugin declares f unsupported. */
bool tc_declared_unsupported(tc_feature f);
const char *tc_feature_name(tc_feature f);
/* One line: what the feature is (for --features). */
const char *tc_feature_meaning(tc_feature f);
#define TC_UNSUPPORTED(f) return tc_unsupported(f)
#define TC_SUPPORTED(f) CHECK(tc_supported(f))
/* Ask the current device's backend whether it has f, with a call that
 * uses it (the answer is kept per plugin and process): TEST_OK
 * (tc_supported) when it works, tc_unsupported(f) when it answers
 * NOT_IMPLEMENTED, TEST_FAIL when the call fails otherwise.  For streams,
 * events, memset, pinned_memory, mem_info, graphs, host_functions and
 * async_streams (tc_needs_async); peer_access and foreign_memory are
 * tried where a test uses them.  Call it first, before allocating
 * anything a skip would leak, and before taking statistics: the question
 * may allocate (and free) a little memory. */
int tc_needs(tc_feature f);
/* tc_needs of each feature in turn, up to TC_FEATURE_COUNT. */
int tc_needs_list(const tc_feature *features);
#define TC_NEEDS(...) CHECK(tc_needs_list((const tc_feature[]){__VA_ARGS__, TC_FEATURE_COUNT}))
/* For a test that uses f only in a part of it: *has says whether the
 * backend has f (asked as tc_needs does); TEST_OK, or TEST_FAIL when the
 * answer contradicts the declaration (missing and undeclared, or declared
 * and working). */
int tc_probe(tc_feature f, bool *has);
/* A device type that the loader serves with no device here (so that
 * SetDevice on it is DEVICE_TYPE_NOT_SUPPORTED): false when every type has
 * devices, and the caller leaves out what needs one. */
bool tc_unserved_type(infiniDevice_t *type);
/* The environment the suite reads, checked before any test runs (no
 * loader call): 0, or 2 with a line on stderr that says what is wrong
 * (INFINIRT_TEST_DEVICE names no device type, INFINIRT_TEST_UNSUPPORTED
 * an unknown feature). */
int tc_check_environment(void);
/* TEST_SKIP (with a "skip:" line) when fewer than n devices of `type` are
 * present, else TEST_OK. */
int tc_needs_devices(infiniDevice_t type, int n);
/* TEST_SKIP (with a "skip:" line) when the config turns the caching
 * allocator off, or (need_cache) makes it give freed memory back at once:
 * what the test checks then does not exist. */
int tc_needs_caching_allocator(bool need_cache);

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
/* For tests that hold a stream: TEST_OK when the current device has
 * streams and host functions and runs stream work asynchronously; else
 * tc_unsupported of the missing feature (TC_STREAMS, TC_HOST_FUNCTIONS,
 * then TC_ASYNC_STREAMS: work run inline, on the caller's thread).  Call
 * it first, before allocating anything a skip would leak. */
int tc_needs_async(void);
/* Block stream s on g with a host function; tc_unsupported(TC_HOST_FUNCTIONS)
 * when the backend has none (NOT_IMPLEMENTED), tc_unsupported(TC_ASYNC_STREAMS)
 * when it runs them inline (the gate cannot hold anything there), TEST_FAIL
 * on any other error, and when it held the stream although the plugin
 * declared either unsupported.  Queues exactly one
 * host function: tests count on what the loader sees submitted. */
int tc_hold_stream(infinirtStream_t s, tc_gate *g);
/* Make g shut and known to the runner, as tc_hold_stream does, for a
 * tc_gate_wait_fn the test queues itself (captured in a graph, say).  Run
 * on the thread that armed it, the gate does not wait. */
void tc_gate_arm(tc_gate *g);
/* Open every gate tc_hold_stream or tc_gate_arm was given (the runner,
 * after each test). */
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
