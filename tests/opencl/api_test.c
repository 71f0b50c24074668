/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_test.c - OpenCL native interop through the public API, the way an
 * application (InfiniCore's kernels) uses it: the infinirt stream IS the
 * cl_command_queue, memory is reached through infinirtMemGetNativeHandle,
 * an application's own queue is wrapped, and streams are blocking.
 *
 *   opencl_api_test NAME | --list | --all   (api_list.h names the tests)
 *
 * Run under a config that loads the OpenCL plugin (CTest passes the
 * conformance suite's, per memory mode).  Exit 77 (skipped) without an
 * OpenCL device.
 */
#define _POSIX_C_SOURCE 200809L
#include "api_list.h"
#include "infinirt.h"
#include "test.h"

#include "cl_kernel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- helpers */

static cl_context g_ctx;
static cl_device_id g_dev;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void pattern(int *v, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (int)((i + seed) * 2654435761u) ^ (int)seed;
}

/* User events that hold native work.  Releasing is idempotent, and every
 * hold is released after each test (main), so a failed assertion never
 * leaves a queue held. */
typedef struct {
    cl_event u;
    atomic_int released;
} hold;

static hold g_holds[16];
static int g_nholds;

static hold *hold_new(void)
{
    hold *h;

    if (g_nholds == 16)
        return NULL;
    h = &g_holds[g_nholds];
    h->u = clCreateUserEvent(g_ctx, NULL);
    if (h->u == NULL)
        return NULL;
    atomic_store(&h->released, 0);
    g_nholds++;
    return h;
}

static void hold_release(hold *h)
{
    if (!atomic_exchange(&h->released, 1))
        clSetUserEventStatus(h->u, CL_COMPLETE);
}

static void holds_release_all(void)
{
    for (int i = 0; i < g_nholds; i++) {
        hold_release(&g_holds[i]);
        clReleaseEvent(g_holds[i].u);
    }
    g_nholds = 0;
}

/* A thread that releases every hold after `ms`, unless stopped first: for
 * calls that may rightly wait for held work (a Free without the caching
 * allocator waits for the work that used the memory). */
typedef struct {
    pthread_t thread;
    int ms;
    atomic_int stop;
} releaser;

static void *releaser_main(void *p)
{
    releaser *r = p;

    for (int waited = 0; waited < r->ms && !atomic_load(&r->stop); waited += 5)
        sleep_ms(5);
    if (!atomic_load(&r->stop))
        for (int i = 0; i < g_nholds; i++)
            hold_release(&g_holds[i]);
    return NULL;
}

static int releaser_start(releaser *r, int ms)
{
    r->ms = ms;
    atomic_store(&r->stop, 0);
    return pthread_create(&r->thread, NULL, releaser_main, r);
}

static void releaser_stop(releaser *r)
{
    atomic_store(&r->stop, 1);
    pthread_join(r->thread, NULL);
}

/* The OpenCL device 0 made current, its native objects in g_ctx/g_dev;
 * TEST_SKIP without one. */
static int use_opencl(void)
{
    int count = 0;

    if (infinirtGetDeviceCount(INFINI_DEVICE_OPENCL, &count) != INFINI_STATUS_SUCCESS || count < 1) {
        fprintf(stderr, "skip: no OpenCL device\n");
        return TEST_SKIP;
    }
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_OPENCL, 0));
    ASSERT_OK(infinirtDeviceGetNativeHandle(INFINI_DEVICE_OPENCL, 0, (void **)&g_dev, (void **)&g_ctx));
    ASSERT(g_dev != NULL && g_ctx != NULL);
    return TEST_OK;
}

static int ranges_overlap(const void *a, const void *b, size_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + n && y < x + n;
}

/* ------------------------------------------------------------------ tests */

/* The device's native objects are OpenCL's: a device with a name, a context
 * holding it, which the streams' queues belong to. */
static int test_device_native(void)
{
    char name[256] = "";
    cl_device_id devs[4];
    size_t ndev = 0;
    cl_context qctx = NULL;
    infinirtStream_t s;
    void *d = (void *)1, *c = (void *)1;

    CHECK(use_opencl());
    ASSERT_EQ(clGetDeviceInfo(g_dev, CL_DEVICE_NAME, sizeof name, name, NULL), CL_SUCCESS);
    ASSERT_GT(strlen(name), 0);
    ASSERT_EQ(clGetContextInfo(g_ctx, CL_CONTEXT_DEVICES, sizeof devs, devs, &ndev), CL_SUCCESS);
    ASSERT_EQ(ndev, sizeof(cl_device_id));
    ASSERT_PTR_EQ(devs[0], g_dev);
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_EQ(clGetCommandQueueInfo((cl_command_queue)s, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL), CL_SUCCESS);
    ASSERT_PTR_EQ(qctx, g_ctx);
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_STATUS(infinirtDeviceGetNativeHandle(INFINI_DEVICE_OPENCL, 999, &d, &c), INFINI_STATUS_DEVICE_NOT_FOUND);
    ASSERT_PTR_EQ(d, (void *)1);
    fprintf(stderr, "device 0: %s\n", name);
    return TEST_OK;
}

/* A kernel built with clBuildProgram, enqueued on (cl_command_queue)stream
 * between infinirt's async copies and fills on the same stream, checked
 * element by element after a synchronous D2H. */
static int test_kernel(void)
{
    enum { N = 8192 };
    int *x = malloc(N * sizeof *x), *got = malloc(N * sizeof *got), *want = malloc(N * sizeof *want);
    tk_kernel k;
    infinirtStream_t s;
    char *p, *q;
    void *native = NULL;
    size_t off = 0;

    ASSERT(x && got && want);
    CHECK(use_opencl());
    ASSERT_EQ(tk_build(g_ctx, g_dev, &k), 0);
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMallocAsync((void **)&p, 3 * N * sizeof(int), s));
    q = p + N * sizeof(int) + 512; /* an interior pointer */
    ASSERT_OK(infinirtMemGetNativeHandle(q, &native, &off));
    fprintf(stderr, "memory: %s\n", native == q ? "SVM pointer" : "cl_mem + offset");

    pattern(x, N, 3);
    ASSERT_OK(infinirtMemsetAsync(q, 0, N * sizeof(int), s));
    ASSERT_OK(infinirtMemcpyAsync(q, x, N * sizeof(int), INFINIRT_MEMCPY_H2D, s));
    ASSERT_EQ(tk_enqueue(&k, (cl_command_queue)s, q, native, off, N, 5, 11, 0, NULL, NULL), CL_SUCCESS);
    ASSERT_OK(infinirtMemsetAsync(q + 40 * sizeof(int), 0x02, 8 * sizeof(int), s));
    ASSERT_OK(infinirtMemcpyAsync(q + 1000 * sizeof(int), x, 24 * sizeof(int), INFINIRT_MEMCPY_H2D, s));
    ASSERT_EQ(tk_enqueue(&k, (cl_command_queue)s, q, native, off, N, -1, 7, 0, NULL, NULL), CL_SUCCESS);
    /* A D2D right behind the kernel copies what it wrote. */
    ASSERT_OK(infinirtMemcpyAsync(p, q, N * sizeof(int), INFINIRT_MEMCPY_D2D, s));

    for (size_t i = 0; i < N; i++) {
        int v = tk_expect(x[i], i, 5, 11);
        if (i >= 40 && i < 48)
            v = 0x02020202;
        if (i >= 1000 && i < 1024)
            v = x[i - 1000];
        want[i] = tk_expect(v, i, -1, 7);
    }
    /* Synchronous, as InfiniCore reads results: after the stream's work. */
    ASSERT_OK(infinirtMemcpy(got, q, N * sizeof(int), INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < N; i++)
        if (got[i] != want[i])
            TEST_FAILED_("element %zu is %d, want %d", i, got[i], want[i]);
    ASSERT_OK(infinirtMemcpy(got, p, N * sizeof(int), INFINIRT_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, N * sizeof(int));

    ASSERT_OK(infinirtFreeAsync(p, s));
    ASSERT_OK(infinirtStreamDestroy(s));
    tk_release(&k);
    free(x);
    free(got);
    free(want);
    return TEST_OK;
}

/* Blocks freed with FreeAsync or Free while a native kernel (held by a user
 * event) still writes them are not handed to anyone else until it is done:
 * new allocations on other streams do not overlap them while the kernel is
 * held and keep what is written into them; an allocation on the same stream
 * may reuse the block, and its writes land after the kernel's.  The stream
 * is synchronized before the kernel, so only the native kernel - which the
 * loader's own counts do not see - keeps the block busy.  Without the
 * caching allocator the free waits for the kernel instead (a releaser
 * thread lets it go): then the memory may come back, after the kernel. */
static int test_alloc_native(void)
{
    enum { N = 64 * 1024 }; /* ints */
    const size_t bytes = N * sizeof(int);
    int *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes), *got = malloc(bytes);
    tk_kernel k;
    releaser rel;

    ASSERT(x && y && z && got);
    CHECK(use_opencl());
    ASSERT_EQ(tk_build(g_ctx, g_dev, &k), 0);
    pattern(x, N, 1);
    pattern(y, N, 2);
    pattern(z, N, 3);

    /* 1. FreeAsync on the kernel's stream. */
    {
        infinirtStream_t s, s2;
        void *p, *r, *t, *native;
        size_t off;
        hold *h = hold_new();

        ASSERT(h != NULL);
        ASSERT_OK(infinirtStreamCreate(&s));
        ASSERT_OK(infinirtStreamCreate(&s2));
        ASSERT_OK(infinirtMallocAsync(&p, bytes, s));
        ASSERT_OK(infinirtMemcpyAsync(p, x, bytes, INFINIRT_MEMCPY_H2D, s));
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtMemGetNativeHandle(p, &native, &off));
        ASSERT_EQ(tk_enqueue(&k, (cl_command_queue)s, p, native, off, N, 3, 1, 1, &h->u, NULL), CL_SUCCESS);
        ASSERT_EQ(releaser_start(&rel, 3000), 0);
        ASSERT_OK(infinirtFreeAsync(p, s));
        /* Another stream: never the block while the kernel is held. */
        ASSERT_OK(infinirtMallocAsync(&r, bytes, s2));
        if (!atomic_load(&h->released))
            ASSERT(!ranges_overlap(r, p, bytes));
        else
            fprintf(stderr, "FreeAsync waited for the native kernel\n");
        ASSERT_OK(infinirtMemcpyAsync(r, y, bytes, INFINIRT_MEMCPY_H2D, s2));
        ASSERT_OK(infinirtStreamSynchronize(s2));
        /* The same stream: may be the block; stream order protects it. */
        ASSERT_OK(infinirtMallocAsync(&t, bytes, s));
        ASSERT_OK(infinirtMemcpyAsync(t, z, bytes, INFINIRT_MEMCPY_H2D, s));
        releaser_stop(&rel);
        hold_release(h);
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtMemcpy(got, r, bytes, INFINIRT_MEMCPY_D2H));
        ASSERT_MEM_EQ(got, y, bytes);
        ASSERT_OK(infinirtMemcpy(got, t, bytes, INFINIRT_MEMCPY_D2H));
        ASSERT_MEM_EQ(got, z, bytes);
        fprintf(stderr, "FreeAsync: same-stream allocation %s the freed block\n",
                t == p ? "reused" : "did not reuse");
        ASSERT_OK(infinirtFreeAsync(r, s2));
        ASSERT_OK(infinirtFreeAsync(t, s));
        ASSERT_OK(infinirtStreamDestroy(s2));
        ASSERT_OK(infinirtStreamDestroy(s));
    }

    /* 2. Synchronous Free under a kernel on a blocking and on a non-blocking
     *    stream; the new block is written through a non-blocking stream, so
     *    nothing here waits for the held kernel. */
    for (int nonblocking = 0; nonblocking < 2; nonblocking++) {
        infinirtStream_t s, w;
        void *p, *r, *native;
        size_t off;
        hold *h = hold_new();

        ASSERT(h != NULL);
        ASSERT_OK(infinirtStreamCreateWithFlags(&s, nonblocking ? INFINIRT_STREAM_NON_BLOCKING : 0));
        ASSERT_OK(infinirtStreamCreateWithFlags(&w, INFINIRT_STREAM_NON_BLOCKING));
        ASSERT_OK(infinirtMalloc(&p, bytes));
        ASSERT_OK(infinirtMemcpy(p, x, bytes, INFINIRT_MEMCPY_H2D));
        ASSERT_OK(infinirtMemGetNativeHandle(p, &native, &off));
        ASSERT_EQ(tk_enqueue(&k, (cl_command_queue)s, p, native, off, N, 3, 1, 1, &h->u, NULL), CL_SUCCESS);
        ASSERT_EQ(releaser_start(&rel, 3000), 0);
        ASSERT_OK(infinirtFree(p));
        ASSERT_OK(infinirtMallocAsync(&r, bytes, w));
        if (!atomic_load(&h->released))
            ASSERT(!ranges_overlap(r, p, bytes));
        else
            fprintf(stderr, "Free waited for the native kernel\n");
        ASSERT_OK(infinirtMemcpyAsync(r, y, bytes, INFINIRT_MEMCPY_H2D, w));
        ASSERT_OK(infinirtStreamSynchronize(w));
        releaser_stop(&rel);
        hold_release(h);
        ASSERT_OK(infinirtStreamSynchronize(s));
        ASSERT_OK(infinirtMemcpyAsync(got, r, bytes, INFINIRT_MEMCPY_D2H, w));
        ASSERT_OK(infinirtStreamSynchronize(w));
        ASSERT_MEM_EQ(got, y, bytes);
        ASSERT_OK(infinirtFreeAsync(r, w));
        ASSERT_OK(infinirtStreamDestroy(w));
        ASSERT_OK(infinirtStreamDestroy(s));
    }
    tk_release(&k);
    free(x);
    free(y);
    free(z);
    free(got);
    return TEST_OK;
}

/* The application's own queue wrapped: infinirt copies, fills, events and
 * stream-ordered allocations on it; destroying the wrapper leaves the
 * queue working.  A queue of another context is refused. */
static int test_from_native(void)
{
    enum { N = 100000 };
    unsigned char *x = malloc(N), *got = malloc(N);
    cl_command_queue q, qo;
    cl_context other;
    cl_mem mem;
    cl_int err = CL_SUCCESS;
    infinirtStream_t w = NULL, w2 = (infinirtStream_t)1;
    infinirtEvent_t e;
    void *n = NULL;
    unsigned char *p;

    ASSERT(x && got);
    CHECK(use_opencl());
    q = clCreateCommandQueueWithProperties(g_ctx, g_dev, NULL, &err);
    ASSERT(q != NULL);
    ASSERT_OK(infinirtStreamCreateFromNative(&w, q));
    ASSERT_PTR_EQ(w, q);
    ASSERT_OK(infinirtStreamGetNativeHandle(w, &n));
    ASSERT_PTR_EQ(n, q);

    for (size_t i = 0; i < N; i++)
        x[i] = (unsigned char)(i * 7 + 1);
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtMallocAsync((void **)&p, N, w));
    ASSERT_OK(infinirtMemcpyAsync(p, x, N, INFINIRT_MEMCPY_H2D, w));
    ASSERT_OK(infinirtMemsetAsync(p + 10, 0x5a, 100, w));
    ASSERT_OK(infinirtMemcpyAsync(got, p, N, INFINIRT_MEMCPY_D2H, w));
    ASSERT_OK(infinirtEventRecord(e, w));
    ASSERT_OK(infinirtEventSynchronize(e));
    memset(x + 10, 0x5a, 100);
    ASSERT_MEM_EQ(got, x, N);
    ASSERT_OK(infinirtFreeAsync(p, w));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(w));
    ASSERT_STATUS(infinirtStreamGetNativeHandle(w, &n), INFINI_STATUS_BAD_PARAM);

    /* Still the application's, and working. */
    mem = clCreateBuffer(g_ctx, CL_MEM_READ_WRITE, N, NULL, &err);
    ASSERT(mem != NULL);
    ASSERT_EQ(clEnqueueWriteBuffer(q, mem, CL_FALSE, 0, N, x, 0, NULL, NULL), CL_SUCCESS);
    memset(got, 0, N);
    ASSERT_EQ(clEnqueueReadBuffer(q, mem, CL_TRUE, 0, N, got, 0, NULL, NULL), CL_SUCCESS);
    ASSERT_MEM_EQ(got, x, N);
    ASSERT_EQ(clFinish(q), CL_SUCCESS);
    clReleaseMemObject(mem);

    /* Refused: another context's queue, NULL. */
    other = clCreateContext(NULL, 1, &g_dev, NULL, NULL, &err);
    ASSERT(other != NULL);
    qo = clCreateCommandQueueWithProperties(other, g_dev, NULL, &err);
    ASSERT(qo != NULL);
    ASSERT_STATUS(infinirtStreamCreateFromNative(&w2, qo), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtStreamCreateFromNative(&w2, NULL), INFINI_STATUS_BAD_PARAM);
    ASSERT_PTR_EQ(w2, (infinirtStream_t)1);
    clReleaseCommandQueue(qo);
    clReleaseContext(other);
    clReleaseCommandQueue(q);
    free(x);
    free(got);
    return TEST_OK;
}

typedef struct {
    void *dst;
    const void *src;
    size_t n;
    atomic_int done;
    infiniStatus_t st;
} copy_job;

static void *sync_d2h(void *p)
{
    copy_job *j = p;

    j->st = infinirtMemcpy(j->dst, j->src, j->n, INFINIRT_MEMCPY_D2H);
    atomic_store(&j->done, 1);
    return NULL;
}

static int done_within(atomic_int *flag, int ms)
{
    for (double t0 = now_ms(); now_ms() - t0 < ms; sleep_ms(1))
        if (atomic_load(flag))
            return 1;
    return atomic_load(flag);
}

/* InfiniCore's pattern: work on its stream, then a synchronous D2H on
 * another thread while the stream is held natively: the copy waits for the
 * stream (blocking) or does not (non-blocking).  The hold is released on
 * every path and the copy waited for with a timeout, so no failure hangs. */
static int sync_copy_against(int nonblocking)
{
    enum { N = 1 << 20 };
    static copy_job job;
    unsigned char *x = malloc(N), *got = malloc(N);
    infinirtStream_t s;
    hold *h = hold_new();
    pthread_t t;
    void *p;
    int early, finished;

    ASSERT(x && got && h);
    for (size_t i = 0; i < N; i++)
        x[i] = (unsigned char)(i * 13 + (size_t)nonblocking);
    ASSERT_OK(
        infinirtStreamCreateWithFlags(&s, nonblocking ? INFINIRT_STREAM_NON_BLOCKING : INFINIRT_STREAM_DEFAULT));
    ASSERT_OK(infinirtMalloc(&p, N));
    ASSERT_OK(infinirtMemset(p, 0, N));
    ASSERT_EQ(clEnqueueBarrierWithWaitList((cl_command_queue)s, 1, &h->u, NULL), CL_SUCCESS);
    ASSERT_OK(infinirtMemcpyAsync(p, x, N, INFINIRT_MEMCPY_H2D, s));
    job = (copy_job){.dst = got, .src = p, .n = N};
    ASSERT_EQ(pthread_create(&t, NULL, sync_d2h, &job), 0);
    early = done_within(&job.done, nonblocking ? 5000 : 300);
    hold_release(h);
    finished = done_within(&job.done, 10000);
    if (!finished)
        TEST_FAILED_("%s", "the synchronous Memcpy did not finish after the release"); /* thread left behind */
    pthread_join(t, NULL);
    ASSERT_OK(job.st);
    if (!nonblocking && early)
        TEST_FAILED_("%s", "a synchronous Memcpy finished while a blocking stream's earlier work was held");
    if (nonblocking && !early)
        TEST_FAILED_("%s", "a synchronous Memcpy waited for a non-blocking stream");
    if (!nonblocking)
        ASSERT_MEM_EQ(got, x, N); /* it read what the held copy wrote */
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtStreamDestroy(s));
    free(x);
    free(got);
    return TEST_OK;
}

static int test_blocking(void)
{
    infinirtStream_t s;
    infinirtEvent_t e;
    infinirtEventStatus_t status = INFINIRT_EVENT_COMPLETE;
    hold *h;
    void *p;
    int ok;

    CHECK(use_opencl());
    CHECK(sync_copy_against(0));
    CHECK(sync_copy_against(1));

    /* Async work on the NULL stream waits for a blocking stream's earlier
     * work too: an event recorded after it stays pending while held. */
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtMalloc(&p, 4096));
    h = hold_new();
    ASSERT(h != NULL);
    ASSERT_EQ(clEnqueueBarrierWithWaitList((cl_command_queue)s, 1, &h->u, NULL), CL_SUCCESS);
    ok = infinirtMemsetAsync(p, 1, 4096, NULL) == INFINI_STATUS_SUCCESS &&
         infinirtEventRecord(e, NULL) == INFINI_STATUS_SUCCESS;
    sleep_ms(50);
    ok = ok && infinirtEventQuery(e, &status) == INFINI_STATUS_SUCCESS;
    hold_release(h);
    ASSERT(ok);
    ASSERT_EQ(status, INFINIRT_EVENT_NOT_READY);
    ASSERT_OK(infinirtEventSynchronize(e));

    /* And the other way: work queued on a blocking stream after NULL-stream
     * work waits for it, whether queued through infinirt or natively; a
     * non-blocking stream's does not.  The NULL stream is held natively
     * (its queue from infinirtStreamGetNativeHandle) in front of a
     * MemsetAsync. */
    {
        infinirtStream_t nb;
        infinirtEvent_t enb;
        cl_command_queue q0 = NULL;
        cl_event mark = NULL;
        cl_int mark_status = CL_COMPLETE;
        int nb_done = 0;

        ASSERT_OK(infinirtStreamCreateWithFlags(&nb, INFINIRT_STREAM_NON_BLOCKING));
        ASSERT_OK(infinirtEventCreate(&enb));
        ASSERT_OK(infinirtStreamGetNativeHandle(NULL, (void **)&q0));
        ASSERT(q0 != NULL);
        h = hold_new();
        ASSERT(h != NULL);
        ASSERT_EQ(clEnqueueBarrierWithWaitList(q0, 1, &h->u, NULL), CL_SUCCESS);
        ok = infinirtMemsetAsync(p, 2, 4096, NULL) == INFINI_STATUS_SUCCESS &&
             infinirtEventRecord(e, s) == INFINI_STATUS_SUCCESS &&
             clEnqueueMarkerWithWaitList((cl_command_queue)s, 0, NULL, &mark) == CL_SUCCESS &&
             infinirtEventRecord(enb, nb) == INFINI_STATUS_SUCCESS;
        clFlush((cl_command_queue)s);
        for (double t0 = now_ms(); ok && !nb_done && now_ms() - t0 < 5000; sleep_ms(1)) {
            infinirtEventStatus_t st_nb = INFINIRT_EVENT_NOT_READY;
            ok = infinirtEventQuery(enb, &st_nb) == INFINI_STATUS_SUCCESS;
            nb_done = st_nb == INFINIRT_EVENT_COMPLETE;
        }
        sleep_ms(50);
        ok = ok && infinirtEventQuery(e, &status) == INFINI_STATUS_SUCCESS;
        if (mark != NULL)
            clGetEventInfo(mark, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof mark_status, &mark_status, NULL);
        hold_release(h);
        ASSERT(ok);
        ASSERT(nb_done);
        ASSERT_EQ(status, INFINIRT_EVENT_NOT_READY);
        ASSERT(mark_status > CL_COMPLETE); /* the native marker waits too */
        ASSERT_OK(infinirtEventSynchronize(e));
        ASSERT_EQ(clWaitForEvents(1, &mark), CL_SUCCESS);
        clReleaseEvent(mark);
        ASSERT_OK(infinirtEventDestroy(enb));
        ASSERT_OK(infinirtStreamDestroy(nb));
    }
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* ----------------------------------------------------------------- runner */

/* After each test, and when an assertion fails: release what a test left
 * held. */
static int finish(int rc)
{
    holds_release_all();
    return rc;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {OPENCL_API_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), finish, holds_release_all, NULL};
    return test_main(argc, argv, &suite);
}
