/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_test_streams.c - events, host functions, waits between streams and
 * devices, device synchronisation, concurrency and shutdown.
 */
#include "plugin_harness.h"

int test_event_timing(void)
{
    const size_t n = 64 * MiB;
    unsigned char *host = malloc(n);
    void *dev, *s, *e0, *e1, *never, *notime, *late;
    static blocker blk;
    int complete = -1;
    float ms = -1.0f, ms2 = -1.0f;
    double t0;

    ASSERT(host != NULL);
    blocker_reset(&blk);
    memset(host, 0x5c, n);
    CHECK(start(NULL));
    ASSERT_OK(ops->malloc_device(0, &dev, n));
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->event_create(0, 0, &e0));
    ASSERT_OK(ops->event_create(0, 0, &e1));
    ASSERT_OK(ops->event_create(0, 0, &never));
    ASSERT_OK(ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &notime));
    ASSERT_OK(ops->event_create(0, 0, &late));

    ASSERT_OK(ops->event_record(0, e0, s));
    ASSERT_OK(ops->memcpy_async(0, dev, host, n, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(ops->event_record(0, e1, s));
    ASSERT_OK(ops->event_record(0, notime, s));
    ASSERT_OK(ops->event_synchronize(0, e1));
    ASSERT_OK(ops->event_query(0, e1, &complete));
    ASSERT_EQ(complete, 1);
    ASSERT_OK(ops->event_elapsed_time(0, &ms, e0, e1));
    ASSERT(ms > 0.0f); /* 64 MiB take a measurable time */
    fprintf(stderr, "64 MiB H2D: %.3f ms (%.2f GB/s)\n", (double)ms, (double)n / (double)ms / 1e6);

    /* Never recorded: complete, and no time. */
    complete = -1;
    ASSERT_OK(ops->event_query(0, never, &complete));
    ASSERT_EQ(complete, 1);
    ASSERT_OK(ops->event_synchronize(0, never));
    ASSERT_STATUS(ops->event_elapsed_time(0, &ms2, never, e1), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(ops->event_elapsed_time(0, &ms2, e0, never), INFINI_STATUS_INVALID_STATE);
    /* Timing disabled. */
    ASSERT_OK(ops->event_synchronize(0, notime));
    ASSERT_STATUS(ops->event_elapsed_time(0, &ms2, e0, notime), INFINI_STATUS_INVALID_STATE);

    /* Incomplete: NOT_READY, and query does not block. */
    ASSERT_OK(ops->launch_host_func(0, s, block_fn, &blk));
    ASSERT_OK(ops->event_record(0, late, s));
    t0 = now_ms();
    complete = -1;
    ASSERT_OK(ops->event_query(0, late, &complete));
    ASSERT_EQ(complete, 0);
    ASSERT_STATUS(ops->event_elapsed_time(0, &ms2, e0, late), INFINI_STATUS_NOT_READY);
    ASSERT_LT(now_ms() - t0, 1000);
    atomic_store(&blk.release, 1);
    ASSERT_OK(ops->event_synchronize(0, late));
    ASSERT_OK(ops->event_elapsed_time(0, &ms2, e0, late));
    ASSERT(ms2 >= ms);

    /* A second record replaces the first. */
    ASSERT_OK(ops->event_record(0, e0, s));
    ASSERT_OK(ops->stream_synchronize(0, s));
    ASSERT_OK(ops->event_elapsed_time(0, &ms2, e1, e0));
    ASSERT(ms2 >= 0.0f);

    ASSERT_OK(ops->event_destroy(0, e0));
    ASSERT_OK(ops->event_destroy(0, e1));
    ASSERT_OK(ops->event_destroy(0, never));
    ASSERT_OK(ops->event_destroy(0, notime));
    ASSERT_OK(ops->event_destroy(0, late));
    ASSERT_OK(ops->stream_destroy(0, s));
    ASSERT_OK(ops->free_device(0, dev));
    stop();
    free(host);
    return TEST_OK;
}

typedef struct {
    const unsigned char *expect; /* what the copy before the fn delivered */
    const unsigned char *landed;
    unsigned char *write; /* what the fn writes for the copy after it */
    size_t n;
    atomic_int ran, saw_landed;
} order_check;

static void order_fn(void *p)
{
    order_check *c = p;

    sleep_ms(20); /* a slow fn: later work must still wait for it */
    atomic_store(&c->saw_landed, memcmp(c->landed, c->expect, c->n) == 0);
    memset(c->write, 0x5a, c->n);
    atomic_store(&c->ran, 1);
}

static int host_func_on(void *stream)
{
    const size_t n = 4 * MiB;
    unsigned char *src = malloc(n), *landed = malloc(n), *write = malloc(n), *out = malloc(n), *want = malloc(n);
    order_check c;
    void *dev;

    ASSERT(src && landed && write && out && want);
    fill_pattern(src, n, 3);
    memset(landed, 0, n);
    memset(write, 0, n);
    memset(out, 0, n);
    memset(want, 0x5a, n);
    c.expect = src;
    c.landed = landed;
    c.write = write;
    c.n = n;
    atomic_init(&c.ran, 0);
    atomic_init(&c.saw_landed, 0);

    ASSERT_OK(ops->malloc_device(0, &dev, n));
    ASSERT_OK(ops->memcpy_async(0, dev, src, n, INFINIRT_PLUGIN_MEMCPY_H2D, stream));
    ASSERT_OK(ops->memcpy_async(0, landed, dev, n, INFINIRT_PLUGIN_MEMCPY_D2H, stream));
    ASSERT_OK(ops->launch_host_func(0, stream, order_fn, &c));
    ASSERT_OK(ops->memcpy_async(0, dev, write, n, INFINIRT_PLUGIN_MEMCPY_H2D, stream));
    ASSERT_OK(ops->memcpy_async(0, out, dev, n, INFINIRT_PLUGIN_MEMCPY_D2H, stream));
    ASSERT_OK(ops->stream_synchronize(0, stream));
    ASSERT_EQ(atomic_load(&c.ran), 1);        /* synchronize waited for the fn */
    ASSERT_EQ(atomic_load(&c.saw_landed), 1); /* work before it had landed */
    ASSERT_MEM_EQ(out, want, n);              /* work after it saw its write */
    ASSERT_OK(ops->free_device(0, dev));
    free(src);
    free(landed);
    free(write);
    free(out);
    free(want);
    return TEST_OK;
}

int test_host_func(void)
{
    static blocker blk;
    void *s;
    double t0;

    CHECK(start(NULL));
    ASSERT_OK(ops->stream_create(0, &s));
    /* On an idle stream the marker is complete at once: the fn must still
     * run on another thread, and launch must not wait for it. */
    blocker_reset(&blk);
    t0 = now_ms();
    ASSERT_OK(ops->launch_host_func(0, s, block_fn, &blk));
    ASSERT_LT(now_ms() - t0, 1000);
    atomic_store(&blk.release, 1);
    ASSERT_OK(ops->stream_synchronize(0, s));
    ASSERT_EQ(atomic_load(&blk.entered), 1);
    ASSERT_EQ(atomic_load(&blk.on_caller_thread), 0);
    CHECK(host_func_on(s));
    CHECK(host_func_on(NULL));
    ASSERT_OK(ops->stream_destroy(0, s));
    stop();
    return TEST_OK;
}

/* Stream B waits on an event of stream A without blocking the host. */
static int wait_event_between(int dev_a, int dev_b)
{
    const size_t n = 1 * MiB;
    unsigned char *x = malloc(n), *out = malloc(n), *zero = calloc(1, n);
    void *a, *b, *ev, *done, *never, *mem;
    static blocker blk;
    int complete = -1;
    double t0;

    ASSERT(x && out && zero);
    blocker_reset(&blk);
    fill_pattern(x, n, 9);
    memset(out, 0, n);
    ASSERT_OK(ops->stream_create(dev_a, &a));
    ASSERT_OK(ops->stream_create(dev_b, &b));
    ASSERT_OK(ops->event_create(dev_a, 0, &ev));
    ASSERT_OK(ops->event_create(dev_b, 0, &done));
    ASSERT_OK(ops->event_create(dev_a, 0, &never));
    ASSERT_OK(ops->malloc_device(dev_a, &mem, n));

    /* A never-recorded event: nothing to wait for. */
    ASSERT_OK(ops->stream_wait_event(dev_b, b, never));

    t0 = now_ms();
    ASSERT_OK(ops->launch_host_func(dev_a, a, block_fn, &blk));
    ASSERT_OK(ops->memcpy_async(dev_a, mem, x, n, INFINIRT_PLUGIN_MEMCPY_H2D, a));
    ASSERT_OK(ops->event_record(dev_a, ev, a));
    ASSERT_OK(ops->stream_wait_event(dev_b, b, ev));
    ASSERT_LT(now_ms() - t0, 1000); /* did not wait for A */
    if (dev_a == dev_b) {
        ASSERT_OK(ops->memcpy_async(dev_b, out, mem, n, INFINIRT_PLUGIN_MEMCPY_D2H, b));
    } else {
        /* Device memory of another context is staged synchronously; a
         * host copy shows the ordering without that. */
        ASSERT_OK(ops->memcpy_async(dev_b, out, x, n, INFINIRT_PLUGIN_MEMCPY_H2H, b));
    }
    ASSERT_OK(ops->event_record(dev_b, done, b));
    sleep_ms(100);
    ASSERT_OK(ops->event_query(dev_b, done, &complete));
    ASSERT_EQ(complete, 0);
    ASSERT_MEM_EQ(out, zero, n); /* B has not run past the wait */
    atomic_store(&blk.release, 1);
    ASSERT_OK(ops->stream_synchronize(dev_b, b));
    ASSERT_OK(ops->event_query(dev_b, done, &complete));
    ASSERT_EQ(complete, 1);
    ASSERT_MEM_EQ(out, x, n);

    ASSERT_OK(ops->stream_synchronize(dev_a, a));
    ASSERT_OK(ops->free_device(dev_a, mem));
    ASSERT_OK(ops->event_destroy(dev_a, ev));
    ASSERT_OK(ops->event_destroy(dev_b, done));
    ASSERT_OK(ops->event_destroy(dev_a, never));
    ASSERT_OK(ops->stream_destroy(dev_a, a));
    ASSERT_OK(ops->stream_destroy(dev_b, b));
    free(x);
    free(out);
    free(zero);
    return TEST_OK;
}

int test_wait_event(void)
{
    CHECK(start(NULL));
    CHECK(wait_event_between(0, 0));
    stop();
    return TEST_OK;
}

/* devices = 0,0 exposes device 0 twice with two contexts: the cross-device
 * paths (staged D2D, bridged waits) on a one-device machine. */
int test_cross_device(void)
{
    const size_t n = 20 * MiB + 123; /* more than one staging chunk */
    unsigned char *x = malloc(n), *out = malloc(n);
    unsigned char *d0, *d1;
    void *s1;
    char msg[512];
    int count;

    ASSERT(x && out);
    CHECK(start(NULL));
    ASSERT_OK(init_kv(&count, msg, sizeof msg, KV("devices", "0,0")));
    ASSERT_EQ(count, 2);
    fill_pattern(x, n, 5);
    ASSERT_OK(ops->malloc_device(0, (void **)&d0, n));
    ASSERT_OK(ops->malloc_device(1, (void **)&d1, n));
    ASSERT_OK(ops->memcpy(0, d0, x, n, INFINIRT_PLUGIN_MEMCPY_H2D));
    ASSERT_OK(ops->memset(1, d1, 0, n));
    /* Synchronous D2D issued on device 1 from device 0's memory. */
    ASSERT_OK(ops->memcpy(1, d1 + 1, d0 + 2, n - 2, INFINIRT_PLUGIN_MEMCPY_D2D));
    memset(out, 0xff, n);
    ASSERT_OK(ops->memcpy(1, out, d1, n, INFINIRT_PLUGIN_MEMCPY_D2H));
    ASSERT_EQ(out[0], 0);
    ASSERT_MEM_EQ(out + 1, x + 2, n - 2);
    /* Asynchronous, on a stream of device 1. */
    ASSERT_OK(ops->stream_create(1, &s1));
    ASSERT_OK(ops->memset_async(1, d1, 0, n, s1));
    ASSERT_OK(ops->memcpy_async(1, d1, d0, n, INFINIRT_PLUGIN_MEMCPY_D2D, s1));
    ASSERT_OK(ops->memcpy_async(1, out, d1, n, INFINIRT_PLUGIN_MEMCPY_D2H, s1));
    ASSERT_OK(ops->stream_synchronize(1, s1));
    ASSERT_MEM_EQ(out, x, n);
    ASSERT_OK(ops->stream_destroy(1, s1));
    ASSERT_OK(ops->free_device(0, d0));
    ASSERT_OK(ops->free_device(1, d1));

    /* A stream of device 1 waits on an event of device 0. */
    CHECK(wait_event_between(0, 1));
    stop();
    free(x);
    free(out);
    return TEST_OK;
}

static void flag_fn(void *p)
{
    sleep_ms(30);
    atomic_store((atomic_int *)p, 1);
}

int test_device_sync(void)
{
    void *s1, *s2, *dev;
    unsigned char *h = calloc(1, 16 * MiB);
    atomic_int f0 = 0, f1 = 0, f2 = 0;

    ASSERT(h != NULL);
    CHECK(start(NULL));
    ASSERT_OK(ops->malloc_device(0, &dev, 16 * MiB));
    ASSERT_OK(ops->stream_create(0, &s1));
    ASSERT_OK(ops->stream_create(0, &s2));
    ASSERT_OK(ops->memcpy_async(0, dev, h, 16 * MiB, INFINIRT_PLUGIN_MEMCPY_H2D, s1));
    ASSERT_OK(ops->launch_host_func(0, s1, flag_fn, &f1));
    ASSERT_OK(ops->launch_host_func(0, s2, flag_fn, &f2));
    ASSERT_OK(ops->launch_host_func(0, NULL, flag_fn, &f0));
    ASSERT_OK(ops->device_synchronize(0));
    ASSERT_EQ(atomic_load(&f0), 1);
    ASSERT_EQ(atomic_load(&f1), 1);
    ASSERT_EQ(atomic_load(&f2), 1);
    /* stream_destroy waits for its stream's work. */
    atomic_store(&f1, 0);
    ASSERT_OK(ops->launch_host_func(0, s1, flag_fn, &f1));
    ASSERT_OK(ops->stream_destroy(0, s1));
    ASSERT_EQ(atomic_load(&f1), 1);
    ASSERT_OK(ops->stream_destroy(0, s2));
    ASSERT_OK(ops->free_device(0, dev));
    stop();
    free(h);
    return TEST_OK;
}

/* Every entry may be called from any thread at once: four threads, each
 * with its own stream, memory and event, beside one that creates and
 * destroys streams and synchronises the device. */
typedef struct {
    int id;
    atomic_int *stop;
    int ok;
    atomic_int fns;
} worker_arg;

static void count_fn(void *p)
{
    atomic_fetch_add((atomic_int *)p, 1);
}

static void *copy_worker(void *p)
{
    worker_arg *w = p;
    const size_t n = 256 * 1024;
    unsigned char *src = malloc(n), *out = malloc(n);
    void *s = NULL, *ev = NULL, *dev = NULL;
    int complete;

    w->ok = src && out && ops->stream_create(0, &s) == 0 && ops->event_create(0, 0, &ev) == 0 &&
            ops->malloc_device(0, &dev, n) == 0;
    for (int i = 0; i < 50 && w->ok; i++) {
        fill_pattern(src, n, (unsigned)(w->id * 100 + i));
        memset(out, 0, n);
        w->ok = ops->memcpy_async(0, dev, src, n, INFINIRT_PLUGIN_MEMCPY_H2D, s) == 0 &&
                ops->launch_host_func(0, s, count_fn, &w->fns) == 0 &&
                ops->memcpy_async(0, out, dev, n, INFINIRT_PLUGIN_MEMCPY_D2H, s) == 0 &&
                ops->event_record(0, ev, s) == 0 && ops->event_query(0, ev, &complete) == 0 &&
                ops->event_synchronize(0, ev) == 0 && memcmp(src, out, n) == 0;
    }
    if (dev)
        ops->free_device(0, dev);
    if (ev)
        ops->event_destroy(0, ev);
    if (s)
        ops->stream_destroy(0, s);
    free(src);
    free(out);
    return NULL;
}

static void *churn_worker(void *p)
{
    worker_arg *w = p;

    w->ok = 1;
    while (!atomic_load(w->stop) && w->ok) {
        void *s;
        w->ok = ops->stream_create(0, &s) == 0 && ops->launch_host_func(0, s, count_fn, &w->fns) == 0 &&
                ops->device_synchronize(0) == 0 && ops->stream_destroy(0, s) == 0;
    }
    return NULL;
}

int test_threads(void)
{
    pthread_t th[5];
    worker_arg w[5];
    atomic_int halt = 0;

    CHECK(start(NULL));
    for (int i = 0; i < 5; i++) {
        w[i].id = i;
        w[i].stop = &halt;
        w[i].ok = 0;
        atomic_init(&w[i].fns, 0);
        ASSERT_EQ(pthread_create(&th[i], NULL, i < 4 ? copy_worker : churn_worker, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    atomic_store(&halt, 1);
    pthread_join(th[4], NULL);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(w[i].ok, 1);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(atomic_load(&w[i].fns), 50);
    ASSERT_GT(atomic_load(&w[4].fns), 0);
    stop();
    return TEST_OK;
}

/* Shutdown with work queued and objects the caller never released. */
int test_shutdown_pending(void)
{
    static unsigned char h[4 * MiB];
    void *s, *ev, *dev, *pinned;
    atomic_int f = 0;

    CHECK(start(NULL));
    ASSERT_OK(ops->malloc_device(0, &dev, 4 * MiB));
    ASSERT_OK(ops->malloc_host(0, &pinned, MiB));
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->event_create(0, 0, &ev));
    ASSERT_OK(ops->memcpy_async(0, dev, h, sizeof h, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    ASSERT_OK(ops->launch_host_func(0, s, flag_fn, &f));
    ASSERT_OK(ops->event_record(0, ev, s));
    stop(); /* finishes the queued work, releases queues, memory, contexts */
    ASSERT_EQ(atomic_load(&f), 1);
    /* Events are the caller's; destroying one after shutdown is harmless. */
    ASSERT_OK(ops->event_destroy(0, ev));
    /* And the plugin can start again. */
    CHECK(start(NULL));
    stop();
    return TEST_OK;
}

/* ------------------------------------------------------------------- runner */
