/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_tests.h - what the fault-injection tests (fault_tests.c,
 * fault_fence_tests.c, fault_sweep.c) share: the fault device, its config,
 * the control functions of the fault plugin (fixtures/fault_plugin.c), and the
 * checks fault_tests.c defines for both test files.
 */
#ifndef INFINIRT_TEST_FAULT_TESTS_H_
#define INFINIRT_TEST_FAULT_TESTS_H_

#include "common.h"
#include "fixtures/fault_plugin.h"

#define DEV INFINI_DEVICE_KUNLUN
#define LIMIT ((size_t)4 << 20) /* memory_limit of the fault device */
#define FAIL_ST INFINI_STATUS_INTERNAL_ERROR
#define BLK ((size_t)64 << 10) /* the blocks of the data-safety checks */

/* The fault plugin's control functions, found with dlsym. */
typedef struct {
    fault_set_fn set;
    fault_fail_nth_any_fn nth_any;
    fault_calls_fn calls;
    fault_reset_fn reset;
    fault_hook_set_fn hook;
} fault_api;

/* Write a config with [plugin.fault] only (the inner cpu plugin must not be
 * loaded twice) and its memory_limit, then `extra` lines; FAULT_OMIT=omit;
 * logging at info level to ft_log_path(). */
void ft_config(const char *omit, const char *extra);
const char *ft_log_path(void);
/* A non-blocking stream of the current device: the tests hold streams with
 * gates and check what other streams and the default stream do meanwhile,
 * which blocking streams would order behind the gates. */
infiniStatus_t ft_stream(infinirtStream_t *s);
/* The plugin's report entry named `name` into *out: its index, or -1. */
int ft_find_plugin(const char *name, infinirtPluginInfo_t *out);
/* The fault plugin is loaded: make its device 0 current, fill *api. */
int ft_start(fault_api *api);
/* The data-safety check (fault_tests.c): a block freed behind a copy queued
 * on the gated stream `gated` is not handed out again, to `other` (NULL: the
 * default stream), while that copy is pending. */
int reuse_is_safe(infinirtStream_t gated, bool async_free, infinirtStream_t other, size_t size);
/* Everything freed: the whole device can be allocated, the statistics
 * balance. */
int all_memory_back(void);
/* How many times `needle` occurs in the log. */
int log_count(const char *needle);

#endif
