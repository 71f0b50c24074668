/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_test.h - what the files of cuda_graph_test share: the fake driver's
 * inspection functions, opening the plugin on a fake driver build and
 * closing it with no capture, graph or exec left, and the list of tests.
 */
#ifndef INFINIRT_CUDA_GRAPH_TEST_H_
#define INFINIRT_CUDA_GRAPH_TEST_H_

#include <cuda.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda_test_util.h"
#include "graph_list.h"

CUDA_GRAPH_LIST(TEST_DECLARE)

/* Bytes in the tests' buffers. */
enum { N = 1024 };

static struct {
    CUresult (*launch_kernel)(CUstream, CUhostFn, void *);
    int (*live_graphs)(void);
    int (*live_execs)(void);
    int (*active_captures)(void);
    int (*invalidations)(void);
    void (*set_current)(int);
    CUresult (*cuStreamBeginCapture_v2)(CUstream, CUstreamCaptureMode);
    CUresult (*cuStreamQuery)(CUstream);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuEventQuery)(CUevent);
} fake;

static inline int bind_sym(void *dl, const char *name, void *fn_out)
{
    void *s = dlsym(dl, name);
    if (s == NULL)
        TEST_FAILED_("the fake driver does not export %s", name);
    memcpy(fn_out, &s, sizeof s);
    return TEST_OK;
}

/* Open the plugin on the fake driver at `path` (the same loaded copy the
 * plugin uses: dlopen of one path gives one handle) and bind the fake. */
static inline int open_on(cuda_plugin *p, const char *path)
{
    const infinirtPluginKeyValue kv[] = {{"driver_library", path}};
    void *dl;

    setenv("FAKE_CUDA_MODE", "ok", 1);
    CHECK(plugin_open(p));
    ASSERT_OK(plugin_init_kv(p, kv, 1));
    ASSERT_EQ(p->count, 3);
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT(dl != NULL);
    CHECK(bind_sym(dl, "fake_cuda_launch_kernel", &fake.launch_kernel));
    CHECK(bind_sym(dl, "fake_cuda_live_graphs", &fake.live_graphs));
    CHECK(bind_sym(dl, "fake_cuda_live_execs", &fake.live_execs));
    CHECK(bind_sym(dl, "fake_cuda_active_captures", &fake.active_captures));
    CHECK(bind_sym(dl, "fake_cuda_invalidations", &fake.invalidations));
    CHECK(bind_sym(dl, "fake_cuda_set_current", &fake.set_current));
    CHECK(bind_sym(dl, "cuStreamQuery", &fake.cuStreamQuery));
    CHECK(bind_sym(dl, "cuMemAlloc_v2", &fake.cuMemAlloc_v2));
    CHECK(bind_sym(dl, "cuEventQuery", &fake.cuEventQuery));
    fake.cuStreamBeginCapture_v2 = NULL;
    void *s = dlsym(dl, "cuStreamBeginCapture_v2"); /* absent from the nograph build */
    memcpy(&fake.cuStreamBeginCapture_v2, &s, sizeof s);
    return TEST_OK;
}

static inline int close_plugin(cuda_plugin *p)
{
    ASSERT_EQ(fake.active_captures(), 0);
    ASSERT_EQ(fake.live_graphs(), 0);
    ASSERT_EQ(fake.live_execs(), 0);
    p->ops->shutdown();
    return TEST_OK;
}

#endif
