/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_test_native.c - the ABI 1.1 entries of the OpenCL plugin: native
 * handles (queue, device and context, cl_mem and offset), a real kernel on
 * a stream's queue among the plugin's copies, stream flags, wrapping an
 * application's queue, stream_query, and the blocking-stream order.
 */
#include "plugin_harness.h"

#include "cl_kernel.h"

/* Whether device 0 serves memory = svm (the description says). */
static int have_svm(void)
{
    infinirtPluginDeviceInfo info;

    return ops->get_device_info(0, &info) == INFINI_STATUS_SUCCESS && strstr(info.description, "svm: yes") != NULL;
}

/* The queue's reference count, given up to 2 s to come down to `want`:
 * events of finished commands hold their queue until the driver frees
 * them, which PoCL does shortly after completion, not at once. */
static cl_uint queue_refs(cl_command_queue q, cl_uint want)
{
    cl_uint refs = 0;

    for (double t0 = now_ms(); now_ms() - t0 < 2000; sleep_ms(2)) {
        clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL);
        if (refs <= want)
            break;
    }
    return refs;
}

static cl_int event_status(cl_event e)
{
    cl_int status = -12345;

    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    return status;
}

/* Poll a plugin event until complete or ms pass; 1 when complete. */
static int event_done_within(void *e, int ms)
{
    for (double t0 = now_ms(); now_ms() - t0 < ms; sleep_ms(1)) {
        int complete = 0;
        if (ops->event_query(0, e, &complete) != INFINI_STATUS_SUCCESS)
            return 0;
        if (complete)
            return 1;
    }
    return 0;
}

int test_native_handles(void)
{
    infinirtPluginDeviceInfo info;
    cl_device_id dev = NULL, devs[4];
    cl_context ctx = NULL, qctx = NULL;
    cl_command_queue q = NULL, q0 = NULL, qnb = NULL;
    cl_device_id qdev = NULL;
    char name[256] = "";
    size_t ndev = 0;
    void *s, *nb, *out = NULL;

    CHECK(start(NULL));
    /* The 1.1 table: what OpenCL has; events stay the plugin's objects. */
    ASSERT_EQ(ops->abi_minor, INFINIRT_PLUGIN_ABI_MINOR);
    ASSERT_GE(ops->struct_size, INFINIRT_PLUGIN_OPS_SIZE_1_1);
    ASSERT(ops->stream_get_native && ops->device_get_native && ops->mem_get_native && ops->stream_query &&
           ops->stream_create_with_flags && ops->stream_create_from_native);
    ASSERT(ops->event_get_native == NULL);

    /* Device and context: usable with OpenCL directly. */
    ASSERT_OK(ops->device_get_native(0, (void **)&dev, (void **)&ctx));
    ASSERT(dev != NULL && ctx != NULL);
    ASSERT_EQ(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL), CL_SUCCESS);
    ASSERT_OK(ops->get_device_info(0, &info));
    ASSERT_STR_EQ(name, info.name);
    ASSERT_EQ(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof devs, devs, &ndev), CL_SUCCESS);
    ASSERT_EQ(ndev, sizeof(cl_device_id));
    ASSERT_PTR_EQ(devs[0], dev);
    ASSERT_OK(ops->device_get_native(0, NULL, NULL)); /* either output may be NULL */
    ASSERT_OK(ops->device_get_native(0, NULL, &out));
    ASSERT_PTR_EQ(out, ctx);
    ASSERT_STATUS(ops->device_get_native(1000, (void **)&dev, (void **)&ctx), INFINI_STATUS_DEVICE_NOT_FOUND);

    /* A stream's native handle is its queue, of that device and context. */
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->stream_get_native(0, s, (void **)&q));
    ASSERT(q != NULL);
    ASSERT_EQ(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL), CL_SUCCESS);
    ASSERT_EQ(clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL), CL_SUCCESS);
    ASSERT_PTR_EQ(qctx, ctx);
    ASSERT_PTR_EQ(qdev, dev);
    /* NULL: the default queue, another one. */
    ASSERT_OK(ops->stream_get_native(0, NULL, (void **)&q0));
    ASSERT(q0 != NULL);
    ASSERT_PTR_NE(q0, q);
    ASSERT_STATUS(ops->stream_get_native(0, s, NULL), INFINI_STATUS_NULL_POINTER);

    /* Flags: non-blocking accepted, unknown bits refused without a stream. */
    out = (void *)1;
    ASSERT_STATUS(ops->stream_create_with_flags(0, 0x2, &out), INFINI_STATUS_BAD_PARAM);
    ASSERT_PTR_EQ(out, (void *)1);
    ASSERT(log_contains("unknown flags 0x2"));
    ASSERT_OK(ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    ASSERT_OK(ops->stream_get_native(0, nb, (void **)&qnb));
    ASSERT(qnb != NULL && qnb != q && qnb != q0);
    ASSERT_OK(ops->stream_destroy(0, nb));
    ASSERT_OK(ops->stream_destroy(0, s));
    stop();
    return TEST_OK;
}

/* mem_get_native in one memory mode. */
static int mem_native_in(const char *mode)
{
    const size_t n = MiB;
    cl_context ctx = NULL, mctx = NULL;
    unsigned char *p;
    void *native = NULL;
    size_t off = 1, msize = 0;
    int local = 0;

    CHECK(start(KV("memory", mode)));
    ASSERT_OK(ops->device_get_native(0, NULL, (void **)&ctx));
    ASSERT_OK(ops->malloc_device(0, (void **)&p, n));
    ASSERT_OK(ops->mem_get_native(0, p + 4108, &native, &off));
    if (strcmp(mode, "svm") == 0) {
        ASSERT_PTR_EQ(native, p + 4108);
        ASSERT_EQ(off, 0);
    } else {
        cl_mem mem = native;
        ASSERT(native != NULL && native != p + 4108);
        ASSERT_EQ(off, 4108);
        ASSERT_EQ(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof msize, &msize, NULL), CL_SUCCESS);
        ASSERT_GE(msize, n);
        ASSERT_EQ(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mctx, &mctx, NULL), CL_SUCCESS);
        ASSERT_PTR_EQ(mctx, ctx);
        /* The start and the last byte map to the same buffer. */
        ASSERT_OK(ops->mem_get_native(0, p, &native, &off));
        ASSERT_PTR_EQ(native, mem);
        ASSERT_EQ(off, 0);
        ASSERT_OK(ops->mem_get_native(0, p + n - 1, &native, &off));
        ASSERT_EQ(off, n - 1);
    }
    ASSERT_OK(ops->mem_get_native(0, p + 8, NULL, NULL));
    /* Not ours, one past the end, freed: refused, outputs untouched. */
    native = (void *)1;
    off = 7;
    ASSERT_STATUS(ops->mem_get_native(0, &local, &native, &off), INFINI_STATUS_BAD_PARAM);
    ASSERT(log_contains("not inside a live device allocation"));
    ASSERT_STATUS(ops->mem_get_native(0, p + n, &native, &off), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(ops->free_device(0, p));
    ASSERT_STATUS(ops->mem_get_native(0, p, &native, &off), INFINI_STATUS_BAD_PARAM);
    ASSERT_PTR_EQ(native, (void *)1);
    ASSERT_EQ(off, 7);
    stop();
    return TEST_OK;
}

int test_native_mem(void)
{
    CHECK(start(NULL));
    if (have_svm())
        CHECK(mem_native_in("svm"));
    else
        fprintf(stderr, "device 0 has no SVM: buffer mode only\n");
    return mem_native_in("buffer");
}

/* The kernel on a stream's queue, interleaved with the plugin's async
 * copies and fills on the same stream, read back with a synchronous D2H
 * (which the blocking-stream order puts after the stream's work). */
static int kernel_in(const char *mode)
{
    enum { N = 4096 };
    const size_t total = 64 * 1024, at = 768; /* the ints start inside the block */
    int *x = malloc(N * sizeof *x), *got = malloc(N * sizeof *got), *want = malloc(N * sizeof *want);
    unsigned guard[2];
    cl_context ctx = NULL;
    cl_device_id dev = NULL;
    cl_command_queue q = NULL;
    tk_kernel k;
    unsigned char *p;
    void *s, *native = NULL;
    size_t off = 0;

    ASSERT(x && got && want);
    CHECK(start(KV("memory", mode)));
    ASSERT_OK(ops->device_get_native(0, (void **)&dev, (void **)&ctx));
    ASSERT_EQ(tk_build(ctx, dev, &k), 0);
    ASSERT_OK(ops->malloc_device(0, (void **)&p, total));
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->stream_get_native(0, s, (void **)&q));
    ASSERT_OK(ops->mem_get_native(0, p + at, &native, &off));

    for (size_t i = 0; i < N; i++)
        x[i] = (int)(i * 2654435761u) - 12345;
    ASSERT_OK(ops->memset_async(0, p, 0xee, total, s)); /* guard bytes */
    ASSERT_OK(ops->memcpy_async(0, p + at, x, N * sizeof *x, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_EQ(tk_enqueue(&k, q, p + at, native, off, N, 3, -7, 0, NULL, NULL), CL_SUCCESS);
    ASSERT_OK(ops->memset_async(0, p + at + 100 * sizeof(int), 0x01, 16 * sizeof(int), s));
    ASSERT_EQ(tk_enqueue(&k, q, p + at, native, off, N, 1, 1000, 0, NULL, NULL), CL_SUCCESS);
    /* The copy after the kernel reads what it wrote. */
    ASSERT_OK(
        ops->memcpy_async(0, p + at + N * sizeof(int) + 64, p + at, 8 * sizeof(int), INFINIRT_PLUGIN_MEMCPY_D2D, s));

    for (size_t i = 0; i < N; i++) {
        int v = tk_expect(x[i], i, 3, -7);
        if (i >= 100 && i < 116)
            v = 0x01010101;
        want[i] = tk_expect(v, i, 1, 1000);
    }
    memset(got, 0, N * sizeof *got);
    ASSERT_OK(ops->memcpy(0, got, p + at, N * sizeof *got, INFINIRT_PLUGIN_MEMCPY_D2H));
    for (size_t i = 0; i < N; i++)
        if (got[i] != want[i])
            TEST_FAILED_("%s mode: element %zu is %d, want %d", mode, i, got[i], want[i]);
    ASSERT_OK(ops->memcpy(0, got, p + at + N * sizeof(int) + 64, 8 * sizeof(int), INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_MEM_EQ(got, want, 8 * sizeof(int));
    /* The kernel stayed inside its ints. */
    ASSERT_OK(ops->memcpy(0, &guard[0], p + at - 4, 4, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_OK(ops->memcpy(0, &guard[1], p + at + N * sizeof(int), 4, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(guard[0], 0xeeeeeeeeu);
    ASSERT_EQ(guard[1], 0xeeeeeeeeu);

    ASSERT_OK(ops->stream_destroy(0, s));
    ASSERT_OK(ops->free_device(0, p));
    tk_release(&k);
    stop();
    free(x);
    free(got);
    free(want);
    return TEST_OK;
}

int test_native_kernel(void)
{
    CHECK(start(NULL));
    if (have_svm())
        CHECK(kernel_in("svm"));
    return kernel_in("buffer");
}

int test_stream_query(void)
{
    cl_command_queue q = NULL, qnb = NULL;
    cl_context ctx = NULL;
    cl_event u, u2;
    void *s, *nb, *dev;
    int idle = -1, idle_default = -1, held = 1;
    double t0;

    CHECK(start(NULL));
    /* Default stream never used: idle, without making the context. */
    ASSERT_OK(ops->stream_query(0, NULL, &idle));
    ASSERT_EQ(idle, 1);
    ASSERT_OK(ops->device_get_native(0, NULL, (void **)&ctx));
    ASSERT_OK(ops->malloc_device(0, &dev, MiB));
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    ASSERT_OK(ops->stream_get_native(0, s, (void **)&q));
    ASSERT_OK(ops->stream_get_native(0, nb, (void **)&qnb));
    ASSERT_STATUS(ops->stream_query(0, s, NULL), INFINI_STATUS_NULL_POINTER);
    idle = 0;
    for (t0 = now_ms(); !idle && now_ms() - t0 < 2000; sleep_ms(1))
        ASSERT_OK(ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 1);

    /* Work the application queued natively (held by a user event) is seen,
     * and the query does not wait for it.  The default stream, ordered
     * after the blocking stream's work, is busy too. */
    u = clCreateUserEvent(ctx, NULL);
    ASSERT(u != NULL);
    ASSERT_EQ(clEnqueueBarrierWithWaitList(q, 1, &u, NULL), CL_SUCCESS);
    t0 = now_ms();
    idle = -1;
    {
        infiniStatus_t st1 = ops->stream_query(0, s, &idle);
        infiniStatus_t st2 = ops->stream_query(0, NULL, &idle_default);
        held = idle == 0 && idle_default == 0 && st1 == INFINI_STATUS_SUCCESS && st2 == INFINI_STATUS_SUCCESS;
    }
    clSetUserEventStatus(u, CL_COMPLETE); /* before any assertion can return */
    ASSERT_EQ(idle, 0);
    ASSERT_EQ(idle_default, 0);
    ASSERT(held);
    ASSERT_LT(now_ms() - t0, 1000);
    ASSERT_OK(ops->stream_synchronize(0, s));
    idle = 0;
    for (t0 = now_ms(); !idle && now_ms() - t0 < 2000; sleep_ms(1))
        ASSERT_OK(ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 1);

    /* A non-blocking stream held natively keeps the default stream free. */
    u2 = clCreateUserEvent(ctx, NULL);
    ASSERT(u2 != NULL);
    ASSERT_EQ(clEnqueueBarrierWithWaitList(qnb, 1, &u2, NULL), CL_SUCCESS);
    idle = -1;
    idle_default = 0;
    for (t0 = now_ms(); !idle_default && now_ms() - t0 < 2000; sleep_ms(1))
        if (ops->stream_query(0, NULL, &idle_default) != INFINI_STATUS_SUCCESS)
            break;
    ops->stream_query(0, nb, &idle);
    clSetUserEventStatus(u2, CL_COMPLETE);
    ASSERT_EQ(idle_default, 1);
    ASSERT_EQ(idle, 0);
    ASSERT_OK(ops->stream_synchronize(0, nb));

    clReleaseEvent(u);
    clReleaseEvent(u2);
    ASSERT_OK(ops->stream_destroy(0, nb));
    ASSERT_OK(ops->stream_destroy(0, s));
    ASSERT_OK(ops->free_device(0, dev));
    stop();
    return TEST_OK;
}

int test_from_native(void)
{
    enum { N = 256 * 1024 };
    unsigned char *x = malloc(N), *got = malloc(N);
    cl_context ctx = NULL, other = NULL;
    cl_device_id dev = NULL;
    cl_command_queue q, q0 = NULL, qs = NULL, ooo, qo;
    cl_mem mem;
    cl_int err = CL_SUCCESS;
    void *s = NULL, *s2 = (void *)1, *own, *e0, *e1, *p;
    float ms = -1.0f;

    ASSERT(x && got);
    CHECK(start(NULL));
    ASSERT_OK(ops->device_get_native(0, (void **)&dev, (void **)&ctx));
    /* The application's queue: in-order, without profiling. */
    q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    ASSERT(q != NULL);
    ASSERT_EQ(queue_refs(q, 1), 1);

    ASSERT_OK(ops->stream_create_from_native(0, q, &s));
    ASSERT_EQ(queue_refs(q, 2), 2); /* ours */
    ASSERT_OK(ops->stream_get_native(0, s, (void **)&qs));
    ASSERT_PTR_EQ(qs, q);
    /* Wrapped once only. */
    ASSERT_STATUS(ops->stream_create_from_native(0, q, &s2), INFINI_STATUS_BAD_PARAM);
    ASSERT(log_contains("already a stream of this plugin"));
    ASSERT_PTR_EQ(s2, (void *)1);

    /* infinirt copies, a fill and a host function on it. */
    fill_pattern(x, N, 9);
    ASSERT_OK(ops->malloc_device(0, &p, N));
    ASSERT_OK(ops->memset_async(0, p, 0, N, s));
    ASSERT_OK(ops->memcpy_async(0, (unsigned char *)p + 1, x, N - 1, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(ops->memcpy_async(0, got, p, N, INFINIRT_PLUGIN_MEMCPY_D2H, s));
    {
        static blocker blk;
        blocker_reset(&blk);
        atomic_store(&blk.release, 1);
        ASSERT_OK(ops->launch_host_func(0, s, block_fn, &blk));
    }
    ASSERT_OK(ops->stream_synchronize(0, s));
    ASSERT_EQ(got[0], 0);
    ASSERT_MEM_EQ(got + 1, x, N - 1);
    /* Events work; timing needs a profiling queue, which this is not. */
    ASSERT_OK(ops->event_create(0, 0, &e0));
    ASSERT_OK(ops->event_create(0, 0, &e1));
    ASSERT_OK(ops->event_record(0, e0, s));
    ASSERT_OK(ops->event_record(0, e1, s));
    ASSERT_OK(ops->event_synchronize(0, e1));
    ASSERT_STATUS(ops->event_elapsed_time(0, &ms, e0, e1), INFINI_STATUS_INVALID_STATE);
    ASSERT(log_contains("without CL_QUEUE_PROFILING_ENABLE"));
    ASSERT_OK(ops->event_destroy(0, e0));
    ASSERT_OK(ops->event_destroy(0, e1));

    /* Destroying the wrapper leaves the queue to the application. */
    ASSERT_OK(ops->stream_destroy(0, s));
    ASSERT_EQ(queue_refs(q, 1), 1);
    mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N, NULL, &err);
    ASSERT(mem != NULL);
    ASSERT_EQ(clEnqueueWriteBuffer(q, mem, CL_FALSE, 0, N, x, 0, NULL, NULL), CL_SUCCESS);
    memset(got, 0, N);
    ASSERT_EQ(clEnqueueReadBuffer(q, mem, CL_TRUE, 0, N, got, 0, NULL, NULL), CL_SUCCESS);
    ASSERT_MEM_EQ(got, x, N);
    clReleaseMemObject(mem);
    /* ... and it can be wrapped again. */
    ASSERT_OK(ops->stream_create_from_native(0, q, &s));
    ASSERT_OK(ops->stream_destroy(0, s));

    /* Refused, nothing retained: NULL, the plugin's own queues, another
     * context's queue, an out-of-order queue. */
    s2 = (void *)1;
    ASSERT_STATUS(ops->stream_create_from_native(0, NULL, &s2), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(ops->stream_get_native(0, NULL, (void **)&q0));
    ASSERT_STATUS(ops->stream_create_from_native(0, q0, &s2), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(ops->stream_create(0, &own));
    ASSERT_OK(ops->stream_get_native(0, own, (void **)&qs));
    ASSERT_STATUS(ops->stream_create_from_native(0, qs, &s2), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(queue_refs(qs, 1), 1);
    ASSERT_OK(ops->stream_destroy(0, own));
    other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    ASSERT(other != NULL);
    qo = clCreateCommandQueueWithProperties(other, dev, NULL, &err);
    ASSERT(qo != NULL);
    ASSERT_STATUS(ops->stream_create_from_native(0, qo, &s2), INFINI_STATUS_BAD_PARAM);
    ASSERT(log_contains("another context"));
    ASSERT_EQ(queue_refs(qo, 1), 1);
    clReleaseCommandQueue(qo);
    clReleaseContext(other);
    {
        const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
        ooo = clCreateCommandQueueWithProperties(ctx, dev, props, &err);
    }
    if (ooo != NULL) {
        ASSERT_STATUS(ops->stream_create_from_native(0, ooo, &s2), INFINI_STATUS_BAD_PARAM);
        ASSERT(log_contains("out-of-order"));
        ASSERT_EQ(queue_refs(ooo, 1), 1);
        clReleaseCommandQueue(ooo);
    } else {
        fprintf(stderr, "no out-of-order queues on this device (%d): that case not run\n", (int)err);
    }
    ASSERT_PTR_EQ(s2, (void *)1);

    /* A wrapper that shutdown finds still alive is released with the
     * rest; the application's reference survives it. */
    ASSERT_OK(ops->stream_create_from_native(0, q, &s));
    ASSERT_OK(ops->free_device(0, p));
    stop();
    ASSERT_EQ(queue_refs(q, 1), 1);
    clReleaseCommandQueue(q);
    free(x);
    free(got);
    return TEST_OK;
}

/* ------------------------------------------------------------ block order */

typedef struct {
    void *dst;
    const void *src;
    size_t n;
    atomic_int done;
    infiniStatus_t st;
} sync_copy_job;

static void *sync_copy_thread(void *p)
{
    sync_copy_job *j = p;

    j->st = ops->memcpy(0, j->dst, j->src, j->n, INFINIRT_PLUGIN_MEMCPY_D2H);
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

/* Hold stream `s` natively with a user event, queue a copy behind the
 * hold, then run a synchronous D2H on another thread: it must finish only
 * after the release when `blocking`, and while still held otherwise.  The
 * hold is released on every path, so a failure cannot hang the test. */
static int sync_copy_against(void *s, cl_context ctx, int blocking, const char *what)
{
    enum { N = 1 << 20 };
    static sync_copy_job job;
    unsigned char *x = malloc(N), *got = malloc(N);
    cl_command_queue q = NULL;
    cl_event u;
    pthread_t t;
    void *p;
    int early, finished;

    ASSERT(x && got);
    fill_pattern(x, N, blocking ? 21 : 22);
    ASSERT_OK(ops->malloc_device(0, &p, N));
    ASSERT_OK(ops->memset(0, p, 0, N));
    ASSERT_OK(ops->stream_get_native(0, s, (void **)&q));
    u = clCreateUserEvent(ctx, NULL);
    ASSERT(u != NULL);
    ASSERT_EQ(clEnqueueBarrierWithWaitList(q, 1, &u, NULL), CL_SUCCESS);
    if (ops->memcpy_async(0, p, x, N, INFINIRT_PLUGIN_MEMCPY_H2D, s) != INFINI_STATUS_SUCCESS) {
        clSetUserEventStatus(u, CL_COMPLETE);
        TEST_FAILED_("%s: memcpy_async failed", what);
    }
    job = (sync_copy_job){.dst = got, .src = p, .n = N};
    if (pthread_create(&t, NULL, sync_copy_thread, &job) != 0) {
        clSetUserEventStatus(u, CL_COMPLETE);
        TEST_FAILED_("%s: pthread_create", what);
    }
    early = done_within(&job.done, blocking ? 300 : 5000);
    clSetUserEventStatus(u, CL_COMPLETE);
    finished = done_within(&job.done, 10000);
    clReleaseEvent(u);
    if (!finished)
        TEST_FAILED_("%s: the synchronous copy did not finish after the release", what); /* thread left behind */
    pthread_join(t, NULL);
    ASSERT_OK(job.st);
    if (blocking) {
        if (early)
            TEST_FAILED_("%s: a synchronous copy finished while the blocking stream was held", what);
        /* It ran after the held copy: it read its bytes. */
        ASSERT_MEM_EQ(got, x, N);
    } else if (!early) {
        TEST_FAILED_("%s: a synchronous copy waited for a non-blocking stream", what);
    }
    ASSERT_OK(ops->stream_synchronize(0, s));
    ASSERT_OK(ops->free_device(0, p));
    free(x);
    free(got);
    return TEST_OK;
}

int test_blocking_order(void)
{
    cl_context ctx = NULL;
    cl_device_id dev = NULL;
    cl_command_queue q = NULL, app;
    cl_event mark = NULL;
    static blocker blk;
    void *s, *nb, *w, *e, *enb, *p;
    int complete = -1, ok;

    CHECK(start(NULL));
    ASSERT_OK(ops->device_get_native(0, (void **)&dev, (void **)&ctx));
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    app = clCreateCommandQueueWithProperties(ctx, dev, NULL, NULL);
    ASSERT(app != NULL);
    ASSERT_OK(ops->stream_create_from_native(0, app, &w));

    /* 1. A synchronous copy waits for blocking streams (made by the plugin
     *    or wrapped), not for non-blocking ones. */
    CHECK(sync_copy_against(s, ctx, 1, "blocking stream"));
    CHECK(sync_copy_against(w, ctx, 1, "wrapped stream"));
    CHECK(sync_copy_against(nb, ctx, 0, "non-blocking stream"));

    /* 2. Work on the NULL stream waits for blocking streams: an event
     *    recorded on it stays pending while s is held natively. */
    ASSERT_OK(ops->event_create(0, 0, &e));
    ASSERT_OK(ops->event_create(0, 0, &enb));
    ASSERT_OK(ops->stream_get_native(0, s, (void **)&q));
    {
        cl_event u = clCreateUserEvent(ctx, NULL);
        ASSERT(u != NULL);
        ASSERT_EQ(clEnqueueBarrierWithWaitList(q, 1, &u, NULL), CL_SUCCESS);
        ok = ops->event_record(0, e, NULL) == INFINI_STATUS_SUCCESS;
        sleep_ms(50);
        ok = ok && ops->event_query(0, e, &complete) == INFINI_STATUS_SUCCESS;
        clSetUserEventStatus(u, CL_COMPLETE);
        clReleaseEvent(u);
        ASSERT(ok);
        ASSERT_EQ(complete, 0);
        ASSERT(event_done_within(e, 10000));
    }

    /* 3. Work queued on a blocking stream after NULL-stream work waits for
     *    it - through the plugin and natively - and a non-blocking stream's
     *    does not. */
    ASSERT_OK(ops->malloc_device(0, &p, MiB));
    ASSERT_OK(ops->launch_host_func(0, NULL, block_fn, blocker_reset(&blk)));
    ASSERT_OK(ops->memset_async(0, p, 1, MiB, s));
    ASSERT_OK(ops->event_record(0, e, s));
    ASSERT_EQ(clEnqueueMarkerWithWaitList(q, 0, NULL, &mark), CL_SUCCESS);
    clFlush(q);
    ASSERT_OK(ops->event_record(0, enb, nb));
    ok = event_done_within(enb, 5000); /* nb runs meanwhile */
    sleep_ms(50);
    complete = -1;
    ops->event_query(0, e, &complete);
    {
        cl_int native_status = event_status(mark);
        atomic_store(&blk.release, 1);
        ASSERT(ok);
        ASSERT_EQ(complete, 0);
        ASSERT(native_status > CL_COMPLETE); /* queued, submitted or running */
    }
    ASSERT(event_done_within(e, 10000));
    ASSERT_EQ(clWaitForEvents(1, &mark), CL_SUCCESS);
    clReleaseEvent(mark);

    ASSERT_OK(ops->event_destroy(0, e));
    ASSERT_OK(ops->event_destroy(0, enb));
    ASSERT_OK(ops->free_device(0, p));
    ASSERT_OK(ops->stream_destroy(0, w));
    ASSERT_OK(ops->stream_destroy(0, nb));
    ASSERT_OK(ops->stream_destroy(0, s));
    clReleaseCommandQueue(app);
    stop();
    return TEST_OK;
}

/* Streams made after NULL-stream work, while the device has no blocking
 * stream (so "after" reached none): a plugin stream's work and a wrapped
 * queue's native work wait for it; a non-blocking stream's does not.  A
 * synchronize or query of another stream in between does not count as
 * the NULL stream drained. */
int test_blocking_join(void)
{
    cl_context ctx = NULL;
    cl_device_id dev = NULL;
    cl_command_queue app;
    cl_event mark = NULL;
    static blocker blk;
    void *s, *nb, *w, *e, *enb, *p, *early;
    int complete = -1, ok, idle;
    cl_int native_status;

    CHECK(start(NULL));
    ASSERT_OK(ops->device_get_native(0, (void **)&dev, (void **)&ctx));
    app = clCreateCommandQueueWithProperties(ctx, dev, NULL, NULL);
    ASSERT(app != NULL);
    ASSERT_OK(ops->event_create(0, 0, &e));
    ASSERT_OK(ops->event_create(0, 0, &enb));
    ASSERT_OK(ops->malloc_device(0, &p, MiB));
    ASSERT_OK(ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &early));

    ASSERT_OK(ops->launch_host_func(0, NULL, block_fn, blocker_reset(&blk)));
    ASSERT_OK(ops->memset_async(0, p, 1, MiB, NULL));
    ok = ops->stream_synchronize(0, early) == INFINI_STATUS_SUCCESS &&
         ops->stream_query(0, early, &idle) == INFINI_STATUS_SUCCESS;
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->stream_create_from_native(0, app, &w));
    ASSERT_OK(ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &nb));
    ASSERT_OK(ops->event_record(0, e, s));
    ASSERT_EQ(clEnqueueMarkerWithWaitList(app, 0, NULL, &mark), CL_SUCCESS);
    clFlush(app);
    ASSERT_OK(ops->event_record(0, enb, nb));
    ok = ok && event_done_within(enb, 5000); /* nb runs meanwhile */
    sleep_ms(50);
    ops->event_query(0, e, &complete);
    native_status = event_status(mark);
    atomic_store(&blk.release, 1);
    ASSERT(ok);
    ASSERT_EQ(complete, 0);
    ASSERT(native_status > CL_COMPLETE); /* queued, submitted or running */
    ASSERT(event_done_within(e, 10000));
    ASSERT_EQ(clWaitForEvents(1, &mark), CL_SUCCESS);
    clReleaseEvent(mark);

    /* With the NULL stream idle, a new stream starts with nothing to wait
     * for: its record completes at once. */
    ASSERT_OK(ops->stream_synchronize(0, NULL));
    ASSERT_OK(ops->stream_destroy(0, s));
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->event_record(0, e, s));
    ASSERT(event_done_within(e, 10000));

    ASSERT_OK(ops->event_destroy(0, e));
    ASSERT_OK(ops->event_destroy(0, enb));
    ASSERT_OK(ops->free_device(0, p));
    ASSERT_OK(ops->stream_destroy(0, w));
    ASSERT_OK(ops->stream_destroy(0, nb));
    ASSERT_OK(ops->stream_destroy(0, s));
    ASSERT_OK(ops->stream_destroy(0, early));
    clReleaseCommandQueue(app);
    stop();
    return TEST_OK;
}
