/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance_graph_misuse.c - captures and graphs used wrongly, written
 * once against the public API like the rest of the conformance suite
 * (include/infinirt.h, "graph"): calls that cannot be captured fail with
 * INVALID_STATE, end the capture and leave the stream usable, and graph
 * and executable-graph handles are checked.
 */
#define _GNU_SOURCE
#include "conformance_graph.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* End a capture an illegal call invalidated: INVALID_STATE and no graph;
 * the stream then works. */
static int end_invalidated(infinirtStream_t s, void *d, unsigned seed)
{
    infinirtGraph_t g = (infinirtGraph_t)&g;
    ASSERT_STATUS(infinirtStreamEndCapture(s, &g), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(g, NULL);
    CHECK(stream_works(s, d, seed));
    return TEST_OK;
}

/* Begin a GLOBAL capture on s with one operation in it. */
static int begin_one(infinirtStream_t s, void *d)
{
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtMemsetAsync(d, 0x44, N, s));
    return TEST_OK;
}

/* Every call that cannot be captured returns INVALID_STATE and invalidates
 * the capture: later operations on the stream fail, EndCapture gives
 * INVALID_STATE and no graph, and the stream works afterwards. */
int test_conformance_graph_illegal_calls(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_EVENTS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
    void *d, *d2;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtMalloc(&d2, N));
    unsigned char *h;
    CHECK(pinned(&h, N, 0));
    infinirtStream_t s, s2;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&s2));
    infinirtEvent_t e_out, e_in;
    ASSERT_OK(infinirtEventCreate(&e_out));
    ASSERT_OK(infinirtEventCreate(&e_in));
    infinirtEventStatus_t es;

    /* StreamSynchronize of the capturing stream; the stream then refuses
     * work until the capture is ended. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtStreamSynchronize(s), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtMemsetAsync(d, 0, N, s), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 1));

    /* StreamDestroy of it: refused, the stream stays alive. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtStreamDestroy(s), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 2));

    /* DeviceSynchronize while a stream of the device captures. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtDeviceSynchronize(), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 3));
    ASSERT_OK(infinirtDeviceSynchronize());

    /* Synchronous Memcpy and Memset while a blocking stream captures. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtMemcpy(d2, h, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 4));
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtMemset(d2, 0, N), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 5));
    /* The copy again with its destination just used and a host buffer the
     * loader does not know: decided from the thread's remembered block
     * (memory.c, quick_copy), which must see the capture too. */
    static unsigned char plain[N];
    ASSERT_OK(infinirtMemcpy(d2, plain, N, INFINIRT_MEMCPY_H2D));
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtMemcpy(d2, plain, N, INFINIRT_MEMCPY_H2D), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 12));

    /* A wait on an event recorded outside the capture. */
    ASSERT_OK(infinirtEventRecord(e_out, s2));
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtStreamWaitEvent(s, e_out), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 6));

    /* Query and synchronize of an event recorded in the capture: refused,
     * and the capture is invalidated (CUDA answers CAPTURED_EVENT and
     * invalidates it: seen on an H100, driver 580.159.04).  Recorded again
     * outside a capture, the event works. */
    CHECK(begin_one(s, d));
    ASSERT_OK(infinirtEventRecord(e_in, s));
    ASSERT_STATUS(infinirtEventQuery(e_in, &es), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtMemsetAsync(d2, 0x45, N, s), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 7));
    ASSERT_OK(infinirtEventRecord(e_in, s2));
    ASSERT_OK(infinirtEventSynchronize(e_in));
    CHECK(begin_one(s, d));
    ASSERT_OK(infinirtEventRecord(e_in, s));
    ASSERT_STATUS(infinirtEventSynchronize(e_in), INFINI_STATUS_INVALID_STATE);
    CHECK(end_invalidated(s, d, 8));
    ASSERT_OK(infinirtEventRecord(e_in, s2));
    ASSERT_OK(infinirtEventQuery(e_in, &es));
    ASSERT_OK(infinirtEventSynchronize(e_in));
    infinirtGraph_t g = NULL;

    /* Beginning twice is refused; whether the first capture survives is the
     * backend's (CUDA may invalidate it): ended either way, the stream works. */
    CHECK(begin_one(s, d));
    ASSERT_STATUS(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED), INFINI_STATUS_INVALID_STATE);
    g = NULL;
    infiniStatus_t st = infinirtStreamEndCapture(s, &g);
    if (st == INFINI_STATUS_SUCCESS) {
        ASSERT(g != NULL);
        ASSERT_OK(infinirtGraphDestroy(g));
    } else {
        ASSERT_STATUS(st, INFINI_STATUS_INVALID_STATE);
        ASSERT_PTR_EQ(g, NULL);
    }
    CHECK(stream_works(s, d, 9));

    /* Ending a stream that is not capturing; beginning on the NULL stream. */
    g = NULL;
    ASSERT_STATUS(infinirtStreamEndCapture(s, &g), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(g, NULL);
    ASSERT_STATUS(infinirtStreamBeginCapture(NULL, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(infinirtStreamBeginCapture(NULL, INFINIRT_STREAM_CAPTURE_MODE_RELAXED),
                  INFINI_STATUS_INVALID_STATE);
    /* Nothing is capturing now: the device and the default stream work. */
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtMemcpy(d2, h, N, INFINIRT_MEMCPY_H2D));
    CHECK(stream_works(NULL, d, 10));
    CHECK(stream_works(s2, d, 11));
    /* A capture on s2 is not disturbed by EndCapture on s. */
    CHECK(begin_one(s2, d));
    ASSERT_STATUS(infinirtStreamEndCapture(s, &g), INFINI_STATUS_INVALID_STATE);
    CHECK(end_ok(s2, &g));
    ASSERT_OK(infinirtGraphDestroy(g));

    ASSERT_OK(infinirtEventDestroy(e_out));
    ASSERT_OK(infinirtEventDestroy(e_in));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(s2));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtFree(d2));
    ASSERT_OK(infinirtFreeHost(h));
    return TEST_OK;
}
/* Made-up, destroyed and wrong-kind graph and executable-graph handles are
 * BAD_PARAM; an executable graph outlives its graph; it launches on the
 * default stream of its device (NULL) but not on another device's stream. */
int test_conformance_graph_bad_handles(void)
{
    CHECK(tc_use_device(0));
    TC_NEEDS(TC_STREAMS, TC_EVENTS, TC_GRAPHS, TC_PINNED_MEMORY, TC_MEMSET);
    int junk[16] = {0};
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtMemset(d, 0, N));
    infinirtStream_t s, dead;
    infinirtEvent_t e;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&dead));
    ASSERT_OK(infinirtStreamDestroy(dead));
    ASSERT_OK(infinirtEventCreate(&e));
    infinirtGraph_t g;
    infinirtGraphExec_t x, x2 = NULL;
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMemsetAsync(d, 0x17, N, s));
    CHECK(end_ok(s, &g));
    CHECK(instantiate(&x, g));

    /* Capture calls. */
    ASSERT_STATUS(infinirtStreamBeginCapture(dead, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamBeginCapture((infinirtStream_t)junk, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL),
                  INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamBeginCapture(e, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamBeginCapture(s, (infinirtStreamCaptureMode_t)3), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamBeginCapture(s, (infinirtStreamCaptureMode_t)-1), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamEndCapture(s, NULL), INFINI_STATUS_NULL_POINTER);
    infinirtGraph_t g2 = NULL;
    ASSERT_STATUS(infinirtStreamEndCapture(dead, &g2), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamEndCapture((infinirtStream_t)junk, &g2), INFINI_STATUS_BAD_PARAM);
    CHECK(stream_works(s, d, 1)); /* none of that began a capture */
    ASSERT_OK(infinirtMemset(d, 0, N));

    /* Made-up and wrong-kind handles. */
    ASSERT_STATUS(infinirtGraphDestroy(NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphDestroy((infinirtGraph_t)junk), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphDestroy(x), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphDestroy(s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphExecDestroy(NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphExecDestroy((infinirtGraphExec_t)junk), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphExecDestroy(g), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphExecDestroy(e), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphInstantiate(NULL, g, NULL, NULL, 0), INFINI_STATUS_NULL_POINTER);
    ASSERT_STATUS(infinirtGraphInstantiate(&x2, NULL, NULL, NULL, 0), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphInstantiate(&x2, x, NULL, NULL, 0), INFINI_STATUS_BAD_PARAM);
    char log[16];
    memset(log, 'x', sizeof log);
    ASSERT_STATUS(infinirtGraphInstantiate(&x2, (infinirtGraph_t)junk, NULL, log, sizeof log),
                  INFINI_STATUS_BAD_PARAM);
    ASSERT(memchr(log, '\0', sizeof log) != NULL); /* NUL-terminated in the buffer */
    ASSERT_GT(strlen(log), 0);                     /* with a reason */
    ASSERT_PTR_EQ(x2, NULL);
    ASSERT_STATUS(infinirtGraphLuanch(NULL, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLuanch((infinirtGraphExec_t)junk, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(g, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(x, dead), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(x, e), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(x, (infinirtStream_t)junk), INFINI_STATUS_BAD_PARAM);

    /* A stream of another device of the type, and of another backend. */
    int n = 0, ncpu = 0;
    ASSERT_OK(infinirtGetDeviceCount(tc_device_type(), &n));
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &ncpu));
    infinirtStream_t s_other[2] = {NULL, NULL};
    if (n >= 2) {
        ASSERT_OK(infinirtSetDevice(tc_device_type(), 1));
        ASSERT_OK(infinirtStreamCreate(&s_other[0]));
    }
    if (tc_device_type() != INFINI_DEVICE_CPU && ncpu >= 1) {
        ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
        ASSERT_OK(infinirtStreamCreate(&s_other[1]));
    }
    ASSERT_OK(infinirtSetDevice(tc_device_type(), 0));
    if (s_other[0] == NULL && s_other[1] == NULL)
        fprintf(stderr, "one device only: launching on another device's stream is not checked\n");
    for (int i = 0; i < 2; i++) {
        if (s_other[i] == NULL)
            continue;
        ASSERT_STATUS(infinirtGraphLaunch(x, s_other[i]), INFINI_STATUS_BAD_PARAM);
        /* Nor from that device's thread state. */
        ASSERT_OK(infinirtSetDevice(i == 0 ? tc_device_type() : INFINI_DEVICE_CPU, i == 0 ? 1 : 0));
        ASSERT_STATUS(infinirtGraphLuanch(x, s_other[i]), INFINI_STATUS_BAD_PARAM);
        ASSERT_OK(infinirtSetDevice(tc_device_type(), 0));
        ASSERT_OK(infinirtStreamSynchronize(s_other[i]));
        ASSERT_OK(infinirtStreamDestroy(s_other[i]));
    }
    ASSERT_OK(infinirtDeviceSynchronize());
    CHECK(tc_device_all(d, N, 0)); /* no refused launch ran */

    /* NULL: the default stream of the graph's device, whatever is current. */
    if (n >= 2)
        ASSERT_OK(infinirtSetDevice(tc_device_type(), 1));
    ASSERT_OK(infinirtGraphLaunch(x, NULL));
    ASSERT_OK(infinirtSetDevice(tc_device_type(), 0));
    ASSERT_OK(infinirtDeviceSynchronize());
    CHECK(tc_device_all(d, N, 0x17));

    /* Destroyed: the graph first; its exec still launches. */
    ASSERT_OK(infinirtMemset(d, 0, N));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_STATUS(infinirtGraphDestroy(g), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphInstantiate(&x2, g, NULL, NULL, 0), INFINI_STATUS_BAD_PARAM);
    ASSERT_PTR_EQ(x2, NULL);
    ASSERT_OK(infinirtGraphLaunch(x, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    CHECK(tc_device_all(d, N, 0x17));
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_STATUS(infinirtGraphExecDestroy(x), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLuanch(x, s), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtGraphLaunch(x, NULL), INFINI_STATUS_BAD_PARAM);

    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}
