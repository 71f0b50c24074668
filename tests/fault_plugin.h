/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_plugin.h - the control functions the fault-injection plugin
 * (fault_plugin.c) exports beside its entry, for the tests that drive it.
 */
#ifndef INFINIRT_TEST_FAULT_PLUGIN_H_
#define INFINIRT_TEST_FAULT_PLUGIN_H_

/* Every entry that can be made to fail, in table order (init and shutdown
 * cannot).  stream_query and device_query are in the table only under
 * FAULT_NATIVE_QUERIES=1 (read when the library is loaded): with them the
 * loader asks the plugin whether streams are idle instead of trusting its
 * own counts, as it does for the CPU, CUDA and OpenCL plugins. */
#define FAULT_OPS(X)            \
    X(get_device_info)          \
    X(get_mem_info)             \
    X(device_synchronize)       \
    X(stream_create)            \
    X(stream_destroy)           \
    X(stream_synchronize)       \
    X(stream_wait_event)        \
    X(launch_host_func)         \
    X(event_create)             \
    X(event_destroy)            \
    X(event_record)             \
    X(event_query)              \
    X(event_synchronize)        \
    X(event_elapsed_time)       \
    X(malloc_device)            \
    X(free_device)              \
    X(malloc_host)              \
    X(free_host)                \
    X(memcpy)                   \
    X(memcpy_async)             \
    X(memset)                   \
    X(memset_async)             \
    X(stream_create_with_flags) \
    X(stream_query)             \
    X(device_query)

/* Modes of fault_set. */
#define FAULT_OFF 0
#define FAULT_ALWAYS 1 /* every call fails */
#define FAULT_NTH 2    /* the n-th call from now fails, once */

/* op: an entry name of infinirtPluginOps ("event_query").  Returns 0, or -1
 * for an unknown name or a FAULT_NTH with n <= 0. */
typedef int (*fault_set_fn)(const char *op, int mode, long n, int status);
/* The n-th call from now of any entry fails with status; n = 0: off. */
typedef void (*fault_fail_nth_any_fn)(long n, int status);
/* Calls of op so far; op NULL: of every entry; -1 for an unknown name. */
typedef long (*fault_calls_fn)(const char *op);
/* Every fault off. */
typedef void (*fault_reset_fn)(void);

/* fn(arg) runs once, right after the next successful call of op returns
 * from the inner plugin.  Returns 0, or -1 for an unknown name. */
typedef void (*fault_hook_fn)(void *arg);
typedef int (*fault_hook_set_fn)(const char *op, fault_hook_fn fn, void *arg);

/* The plugin's definitions (tests reach them through dlsym). */
int fault_set(const char *op, int mode, long n, int status);
void fault_fail_nth_any(long n, int status);
long fault_calls(const char *op);
void fault_reset(void);
int fault_hook(const char *op, fault_hook_fn fn, void *arg);

#endif
