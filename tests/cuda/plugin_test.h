/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_test.h - what the files of cuda_plugin_test share: the list of
 * tests and opening the plugin on a GPU.
 */
#ifndef INFINIRT_CUDA_PLUGIN_TEST_H_
#define INFINIRT_CUDA_PLUGIN_TEST_H_

#include <cuda.h> /* types and values only; the driver is dlopened */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include "cuda_test_util.h"
#include "plugin_list.h"

CUDA_PLUGIN_LIST(TEST_DECLARE)
CUDA_PLUGIN_GPU_LIST(TEST_DECLARE)

/* Skips without a device, unless INFINIRT_CUDA_TEST_REQUIRE_GPU=1 (set by
 * tests/gpu/run-cuda-checks.sh, where a missing device is a failure). */
static inline int gpu_open(cuda_plugin *p)
{
    const char *require = getenv("INFINIRT_CUDA_TEST_REQUIRE_GPU");

    CHECK(plugin_open(p));
    ASSERT_OK(plugin_init(p));
    if (p->count == 0) {
        fprintf(stderr, "no CUDA device: %s\n", p->msg);
        p->ops->shutdown();
        return require != NULL && strcmp(require, "1") == 0 ? TEST_FAIL : TEST_SKIP;
    }
    return TEST_OK;
}

#endif
