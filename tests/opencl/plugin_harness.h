/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_harness.h - what the OpenCL plugin tests share: the plugin under
 * test (dlopened, never dlclosed, as the loader does), init with key/value
 * pairs, a captured log, and host functions that block a stream.
 *
 * Tests are `int test_NAME(void)` returning TEST_OK or TEST_SKIP (77: no
 * OpenCL device); plugin_list.h names them all, once.
 */
#ifndef PLUGIN_HARNESS_H_
#define PLUGIN_HARNESS_H_

#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include "infinirt_plugin.h"
#include "infinirt.h"
#include "plugin_list.h"
#include "test.h"

#define MiB ((size_t)1 << 20)

OPENCL_PLUGIN_LIST(TEST_DECLARE)

extern const char *plugin_path;     /* argv[2] or the built plugin */
extern infinirtPluginEntryFn entry; /* after load_plugin */
extern const infinirtPluginOps *ops;
extern int cl_touched; /* this process has called OpenCL */
extern pthread_t main_thread;

/* dlopen the plugin and take its table (once per process). */
int load_plugin(void);
/* Init with pairs (NULL-terminated: k1, v1, k2, v2, ..., NULL); clears the
 * captured log; shuts a previous init down first. */
infiniStatus_t init_kv(int *count, char *msg, size_t msg_size, const char *const *kv);
#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})
/* load + init, requiring a device (TEST_SKIP without one). */
int start(const char *const *kv);
/* Shut the plugin down if initialised. */
void stop(void);

/* The captured log (every line since the last init) contains needle. */
int log_contains(const char *needle);
/* Devices of a type, asked of OpenCL directly. */
unsigned cl_device_count(cl_device_type type);

void sleep_ms(int ms);
double now_ms(void);
void fill_pattern(unsigned char *p, size_t n, unsigned seed);

/* A host function that holds its stream until released (or 10 s pass).
 * Keep blockers static: a failed assertion returns before releasing one. */
typedef struct {
    atomic_int entered;
    atomic_int release;
    atomic_int on_caller_thread;
} blocker;

void block_fn(void *blocker_ptr);
blocker *blocker_reset(blocker *b);

#endif /* PLUGIN_HARNESS_H_ */
