/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handle_tests.c - stream handles under concurrent use: destroy while
 * another thread is inside a call, and destroy of a handle guessed before
 * its creator has finished registering it.
 */
#define _GNU_SOURCE
#include "common.h"
#include "fault/fault_tests.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Worker-thread streams (streams = async): the tests hold streams and race
 * calls against their workers. */
static const char k_cpu_config[] = "[plugin.cpu]\nlibrary = " CPU_PLUGIN "\ndevices = 2\nstreams = async\n";

/* ----------------------------------------------- destroy waits for a holder */

typedef struct {
    infinirtStream_t s;
    infiniStatus_t st;
    int done;
} call_arg;

static void *sync_stream(void *p)
{
    call_arg *a = p;
    a->st = infinirtStreamSynchronize(a->s);
    __atomic_store_n(&a->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *destroy_stream(void *p)
{
    call_arg *a = p;
    a->st = infinirtStreamDestroy(a->s);
    __atomic_store_n(&a->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* The header says StreamDestroy waits for the stream's work.  It must do so
 * also when another thread is inside a call on the stream (and so holds the
 * reference that outlives the destroy). */
/* One try, the holder given `lead_ms` to enter its call: *late = 1 when it
 * had not (a loaded machine; its call then fails as it should, on a
 * destroyed stream, and proves nothing). */
static int destroy_waits_once(int lead_ms, int *late)
{
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    static tc_gate gate;
    CHECK(tc_hold_stream(s, &gate));
    call_arg holder = {.s = s}, killer = {.s = s};
    pthread_t th, tk;
    ASSERT_EQ(pthread_create(&th, NULL, sync_stream, &holder), 0);
    tc_sleep_ms(lead_ms); /* the holder is inside StreamSynchronize now, mostly */
    ASSERT_EQ(pthread_create(&tk, NULL, destroy_stream, &killer), 0);
    tc_sleep_ms(100);
    ASSERT_EQ(__atomic_load_n(&killer.done, __ATOMIC_SEQ_CST), 0); /* still waiting for the gated work */
    /* Done while the work is gated: it came after the destroy. */
    *late = __atomic_load_n(&holder.done, __ATOMIC_SEQ_CST);
    tc_gate_open(&gate);
    ASSERT_EQ(pthread_join(tk, NULL), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(killer.st);
    if (*late) {
        ASSERT_STATUS(holder.st, INFINI_STATUS_BAD_PARAM);
        return TEST_OK;
    }
    ASSERT_OK(holder.st);
    ASSERT_STATUS(infinirtStreamSynchronize(s), INFINI_STATUS_BAD_PARAM);
    return TEST_OK;
}

int test_threads_stream_destroy_waits(void)
{
    tc_use_config(k_cpu_config);
    CHECK(tc_use_device(0));
    /* A holder that was late (seen 1 run in 55 with both cores busy) is
     * given a longer lead; the test passes only on a try where it was in. */
    for (int lead_ms = 50; lead_ms <= 1600; lead_ms *= 2) {
        int late = 0;
        CHECK(destroy_waits_once(lead_ms, &late));
        if (!late)
            return TEST_OK;
        fprintf(stderr, "stream_destroy_waits: the holder was not in its call after %d ms: again\n", lead_ms);
    }
    TEST_FAILED_("%s", "the holder never entered StreamSynchronize before the destroy");
}

/* --------------------------------------- a guessed handle destroyed early */

/* Rounds: as many as fit in a few seconds, at most GUESS_ROUNDS (thread
 * creation per stream is slow under the sanitizers). */
enum { GUESS_ROUNDS = 20000, GUESS_SECONDS = 4 };

typedef struct {
    uintptr_t last; /* the creator's latest handle */
    int stop;
    long destroyed; /* handles the guesser destroyed */
} guess_state;

/* Handles are the backend's objects: a stream created right after one was
 * destroyed usually gets the same address back from the heap, so the
 * guesser tries the last handle it saw (and its neighbours) until the
 * creator moves on. */
static void *guesser(void *p)
{
    guess_state *g = p;
    while (!__atomic_load_n(&g->stop, __ATOMIC_SEQ_CST)) {
        uintptr_t last = __atomic_load_n(&g->last, __ATOMIC_SEQ_CST);
        if (last == 0)
            continue;
        for (uintptr_t step = 0; step <= 2; step++) {
            if (infinirtStreamDestroy((infinirtStream_t)(last + (step << 3))) == INFINI_STATUS_SUCCESS)
                __atomic_fetch_add(&g->destroyed, 1, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

int test_threads_guessed_handle_destroy(void)
{
    tc_setenv("INFINIRT_LOG", "error"); /* the guesser's misses are warnings */
    tc_use_config(k_cpu_config);
    CHECK(tc_use_device(0));
    /* A long-lived stream in the first slot: a destroy that ran before the
     * new stream knew its slot dropped this one's reference. */
    infinirtStream_t keep;
    ASSERT_OK(infinirtStreamCreate(&keep));
    guess_state g = {0};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, guesser, &g), 0);
    long mine = 0;
    int rounds = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < GUESS_ROUNDS; i++, rounds++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= GUESS_SECONDS)
            break;
        infinirtStream_t s;
        ASSERT_OK(infinirtStreamCreate(&s));
        __atomic_store_n(&g.last, (uintptr_t)s, __ATOMIC_SEQ_CST);
        infiniStatus_t st = infinirtStreamDestroy(s);
        ASSERT(st == INFINI_STATUS_SUCCESS || st == INFINI_STATUS_BAD_PARAM); /* BAD_PARAM: guessed first */
        mine += st == INFINI_STATUS_SUCCESS;
    }
    __atomic_store_n(&g.stop, 1, __ATOMIC_SEQ_CST);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    /* Every stream was destroyed exactly once, and the bystander lives. */
    ASSERT_EQ(mine + g.destroyed, rounds);
    ASSERT_OK(infinirtStreamSynchronize(keep));
    void *p;
    ASSERT_OK(infinirtMallocAsync(&p, 4096, keep));
    ASSERT_OK(infinirtFreeAsync(p, keep));
    ASSERT_OK(infinirtStreamDestroy(keep));
    fprintf(stderr, "%ld of %d streams were destroyed through a guessed handle\n", g.destroyed, rounds);
    return TEST_OK;
}

/* --------------------------- a synchronous copy after the default stream */

static void *open_later(void *g)
{
    tc_sleep_ms(200);
    tc_gate_open(g);
    return NULL;
}

/* A synchronous copy runs after the work already queued on the default
 * stream (as CUDA's legacy default stream orders it): it waits for the
 * gated memset and reads its result. */
int test_threads_sync_copy_after_default_stream(void)
{
    tc_use_config(k_cpu_config);
    CHECK(tc_use_device(0));
    enum { N = 4096 };
    unsigned char *p, got[N];
    ASSERT_OK(infinirtMalloc((void **)&p, N));
    ASSERT_OK(infinirtMemset(p, 0, N));
    static tc_gate gate;
    CHECK(tc_hold_stream(NULL, &gate));
    ASSERT_OK(infinirtMemsetAsync(p, 0xab, N, NULL));
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, open_later, &gate), 0);
    ASSERT_OK(infinirtMemcpy(got, p, N, INFINIRT_MEMCPY_D2H));
    ASSERT_EQ(pthread_join(t, NULL), 0);
    for (int i = 0; i < N; i++)
        ASSERT_EQ(got[i], 0xab);
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

/* ------------------------------------------- the handle map under churn */

/* Handles are native values found through a map that other threads grow
 * and reshuffle (removals shift entries back) while readers look up with no
 * lock.  A live handle must be found every time, and its value must name
 * its own object: each thread keeps a set of live events and streams,
 * replaces them at random, and checks the whole set after every change. */
#define CHURN_THREADS 4
#define CHURN_LIVE 48
#define CHURN_SECONDS 3

typedef struct {
    unsigned seed;
    long lookups, misses, wrong;
} churn_arg;

static void *churn(void *p)
{
    churn_arg *a = p;
    infinirtEvent_t ev[CHURN_LIVE] = {0};
    infinirtStream_t st[CHURN_LIVE / 8] = {0};
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= CHURN_SECONDS)
            break;
        int i = (int)(rand_r(&a->seed) % CHURN_LIVE);
        if (ev[i] != NULL && infinirtEventDestroy(ev[i]) != INFINI_STATUS_SUCCESS)
            a->misses++;
        if (infinirtEventCreate(&ev[i]) != INFINI_STATUS_SUCCESS)
            ev[i] = NULL;
        int k = i % (CHURN_LIVE / 8);
        if (i < CHURN_LIVE / 8) {
            if (st[k] != NULL && infinirtStreamDestroy(st[k]) != INFINI_STATUS_SUCCESS)
                a->misses++;
            if (infinirtStreamCreate(&st[k]) != INFINI_STATUS_SUCCESS)
                st[k] = NULL;
        }
        for (int j = 0; j < CHURN_LIVE; j++) {
            void *n = NULL;
            if (ev[j] == NULL)
                continue;
            a->lookups++;
            if (infinirtEventGetNativeHandle(ev[j], &n) != INFINI_STATUS_SUCCESS)
                a->misses++;
            else if (n != ev[j])
                a->wrong++;
        }
        for (int j = 0; j < CHURN_LIVE / 8; j++) {
            void *n = NULL;
            if (st[j] == NULL)
                continue;
            a->lookups++;
            if (infinirtStreamGetNativeHandle(st[j], &n) != INFINI_STATUS_SUCCESS)
                a->misses++;
            else if (n != st[j])
                a->wrong++;
        }
    }
    for (int j = 0; j < CHURN_LIVE; j++)
        if (ev[j] != NULL && infinirtEventDestroy(ev[j]) != INFINI_STATUS_SUCCESS)
            a->misses++;
    for (int j = 0; j < CHURN_LIVE / 8; j++)
        if (st[j] != NULL && infinirtStreamDestroy(st[j]) != INFINI_STATUS_SUCCESS)
            a->misses++;
    return NULL;
}

/* Run fn on n threads, one a[i] each (seeded by the caller), and check
 * that together they looked up live handles often, never missing one and
 * never finding the wrong object. */
static int run_churners(void *(*fn)(void *), churn_arg *a, int n)
{
    pthread_t t[16];
    ASSERT(n <= 16);
    for (int i = 0; i < n; i++)
        ASSERT_EQ(pthread_create(&t[i], NULL, fn, &a[i]), 0);
    long lookups = 0, misses = 0, wrong = 0;
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(pthread_join(t[i], NULL), 0);
        lookups += a[i].lookups;
        misses += a[i].misses;
        wrong += a[i].wrong;
    }
    fprintf(stderr, "%ld look-ups of live handles, %ld missed, %ld wrong\n", lookups, misses, wrong);
    ASSERT(lookups > 1000);
    ASSERT_EQ(misses, 0);
    ASSERT_EQ(wrong, 0);
    return TEST_OK;
}

int test_threads_handle_map_churn(void)
{
    tc_use_config(k_cpu_config);
    CHECK(tc_use_device(0));
    churn_arg a[CHURN_THREADS] = {{0}};
    for (int i = 0; i < CHURN_THREADS; i++)
        a[i].seed = 1234u + (unsigned)i;
    return run_churners(churn, a, CHURN_THREADS);
}

/* The map grows and shrinks under readers: each thread keeps a few events
 * live and looks them up all the time, and in between makes a burst of
 * events, looks each up and destroys them all, so the map's array doubles
 * and shrinks again and again, into arrays it had before (handles.c).  A
 * live handle must be found every time, under its own value, and a new
 * one must always be registered. */
#define SWING_THREADS 4
#define SWING_KEPT 8
#define SWING_BURST 400

static void *swing(void *p)
{
    churn_arg *a = p;
    infinirtEvent_t kept[SWING_KEPT], burst[SWING_BURST];
    for (int j = 0; j < SWING_KEPT; j++)
        if (infinirtEventCreate(&kept[j]) != INFINI_STATUS_SUCCESS)
            return NULL; /* lookups stay 0: the test fails */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= 1500)
            break;
        int n = 0;
        for (; n < SWING_BURST; n++) {
            if (infinirtEventCreate(&burst[n]) != INFINI_STATUS_SUCCESS) {
                a->misses++;
                break;
            }
            for (int j = 0; j < SWING_KEPT; j++) {
                void *h = NULL;
                a->lookups++;
                if (infinirtEventGetNativeHandle(kept[j], &h) != INFINI_STATUS_SUCCESS)
                    a->misses++;
                else if (h != kept[j])
                    a->wrong++;
            }
        }
        for (int j = 0; j < n; j++) {
            void *h = NULL;
            a->lookups++;
            if (infinirtEventGetNativeHandle(burst[j], &h) != INFINI_STATUS_SUCCESS)
                a->misses++;
            else if (h != burst[j])
                a->wrong++;
            if (infinirtEventDestroy(burst[j]) != INFINI_STATUS_SUCCESS)
                a->misses++;
        }
    }
    for (int j = 0; j < SWING_KEPT; j++)
        if (infinirtEventDestroy(kept[j]) != INFINI_STATUS_SUCCESS)
            a->misses++;
    return NULL;
}

int test_threads_handle_map_swing(void)
{
    tc_use_config(k_cpu_config);
    CHECK(tc_use_device(0));
    churn_arg a[SWING_THREADS] = {{0}};
    return run_churners(swing, a, SWING_THREADS);
}

/* ------------------------------------------------ a gate that is never opened */

/* A gate whose only opener is blocked (here: it synchronizes the held
 * stream itself, as a copy that completes before it returns would) lets the
 * stream go after tc_gate_timeout_ms and fails the test, instead of hanging
 * the run until CTest kills it. */
int test_threads_gate_timeout(void)
{
    tc_use_config(k_cpu_config);
    CHECK(tc_use_device(0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    tc_gate_timeout_ms = 200;
    static tc_gate gate;
    CHECK(tc_hold_stream(s, &gate));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_OK(infinirtStreamSynchronize(s)); /* the deadlock the timeout breaks */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    ASSERT_GE(ms, 150);
    ASSERT_EQ(__atomic_load_n(&gate.open, __ATOMIC_SEQ_CST), 0);
    ASSERT_EQ(tc_gate_verdict(TEST_OK), TEST_FAIL);
    ASSERT_EQ(tc_gate_verdict(TEST_SKIP), TEST_FAIL);
    tc_gate_timeouts_reset(); /* this test expected its timeout */
    ASSERT_EQ(tc_gate_verdict(TEST_OK), TEST_OK);
    tc_gate_timeout_ms = 30000;
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* ------------------------------------- work queued after a destroy's drain */

typedef struct {
    infinirtStream_t s;
    infiniStatus_t st;
} late_destroy;

static void *late_destroy_thread(void *p)
{
    late_destroy *d = p;
    d->st = infinirtStreamDestroy(d->s);
    return NULL;
}

/* fn(arg) on another thread, waited for: what a fault-plugin hook runs
 * while the test's own thread is inside a loader call. */
static void on_other_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) == 0)
        pthread_join(t, NULL);
}

/* Runs inside the test's MemcpyAsync, after the plugin queued the copy and
 * before the loader counted it: another thread destroys the stream, whose
 * drain therefore cannot have seen the copy counted. */
static void destroy_from_hook(void *p)
{
    on_other_thread(late_destroy_thread, p);
}

/* A plain StreamDestroy, then one racing a copy that another thread is
 * still inside, on the fault plugin (native: with its stream_query,
 * FAULT_NATIVE_QUERIES=1): each must cost the plugin the stream_synchronize
 * calls given, and on the native plugin one stream_query. */
static int destroy_drains(bool native, long plain_syncs, long race_syncs)
{
    ft_config(NULL, NULL);
    if (native)
        tc_setenv("FAULT_NATIVE_QUERIES", "1");
    fault_api api;
    CHECK(ft_start(&api));
    static unsigned char host[4096];
    void *p;
    ASSERT_OK(infinirtMalloc(&p, sizeof host));

    infinirtStream_t a;
    ASSERT_OK(ft_stream(&a));
    ASSERT_OK(infinirtMemcpyAsync(p, host, sizeof host, INFINIRT_MEMCPY_H2D, a));
    long syncs = api.calls("stream_synchronize"), queries = native ? api.calls("stream_query") : 0;
    ASSERT_OK(infinirtStreamDestroy(a));
    ASSERT_EQ(api.calls("stream_synchronize") - syncs, plain_syncs);
    if (native)
        ASSERT_EQ(api.calls("stream_query") - queries, 1);

    ASSERT_OK(ft_stream(&a));
    late_destroy d = {.s = a, .st = INFINI_STATUS_INTERNAL_ERROR};
    ASSERT_EQ(api.hook("memcpy_async", destroy_from_hook, &d), 0);
    syncs = api.calls("stream_synchronize");
    queries = native ? api.calls("stream_query") : 0;
    ASSERT_OK(infinirtMemcpyAsync(p, host, sizeof host, INFINIRT_MEMCPY_H2D, a));
    ASSERT_OK(d.st);
    ASSERT_EQ(api.calls("stream_synchronize") - syncs, race_syncs);
    if (native)
        ASSERT_EQ(api.calls("stream_query") - queries, 1);
    ASSERT_STATUS(infinirtStreamSynchronize(a), INFINI_STATUS_BAD_PARAM);
    ASSERT_OK(infinirtFree(p));
    return TEST_OK;
}

/* StreamDestroy drains the stream once, and the release of its last
 * reference drains it only if a call queued work after that drain: a plain
 * destroy costs the plugin one stream_synchronize, and a destroy racing a
 * copy that another thread is still inside costs two, the second after the
 * copy was counted (before the stream's cached blocks move). */
int test_threads_destroy_drains_late_work(void)
{
    return destroy_drains(false, 1, 2);
}

/* The same with the plugin's stream_query: the loader counts no work
 * there, so the release of the last reference asks the plugin whether the
 * stream is idle - once, and drains again only if it is not.  Both
 * destroys find it idle (the racing copy was queued before the destroy's
 * drain began): one stream_synchronize and one stream_query each. */
int test_threads_destroy_asks_native_stream(void)
{
    return destroy_drains(true, 1, 1);
}

typedef struct {
    fault_api *api;
    infinirtEvent_t e;
    infiniStatus_t st;
    long destroyed_meanwhile; /* event_destroy calls the destroy itself made */
} event_destroy_probe;

static void *event_destroy_thread(void *p)
{
    event_destroy_probe *d = p;
    long before = d->api->calls("event_destroy");
    d->st = infinirtEventDestroy(d->e);
    d->destroyed_meanwhile = d->api->calls("event_destroy") - before;
    return NULL;
}

/* Runs inside the test's EventQuery, after the plugin answered: another
 * thread destroys the event while the query still holds its reference. */
static void destroy_event_from_hook(void *p)
{
    on_other_thread(event_destroy_thread, p);
}

/* EventDestroy while another thread is inside a call on the event: the
 * handle dies at once (later calls get BAD_PARAM), but the plugin event is
 * destroyed only when that call lets go of it, exactly once. */
int test_threads_event_destroy_while_queried(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventRecord(e, NULL));
    event_destroy_probe d = {.api = &api, .e = e, .st = INFINI_STATUS_INTERNAL_ERROR, .destroyed_meanwhile = -1};
    ASSERT_EQ(api.hook("event_query", destroy_event_from_hook, &d), 0);
    long before = api.calls("event_destroy");
    infinirtEventStatus_t q;
    ASSERT_OK(infinirtEventQuery(e, &q));
    ASSERT_OK(d.st);
    ASSERT_EQ(d.destroyed_meanwhile, 0);
    ASSERT_EQ(api.calls("event_destroy") - before, 1);
    ASSERT_STATUS(infinirtEventQuery(e, &q), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventDestroy(e), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(api.calls("event_destroy") - before, 1);
    return TEST_OK;
}

/* ------------------------------------------- borrowed handles (handles.c) */

/* What a hook's thread destroys, and what the plugin destroyed meanwhile. */
typedef struct {
    fault_api *api;
    infinirtStream_t s; /* destroyed when non-NULL */
    infinirtEvent_t e;  /* destroyed when non-NULL */
    infiniStatus_t st_s, st_e;
    long streams_meanwhile, events_meanwhile;
} borrow_probe;

static void *borrow_destroy_thread(void *p)
{
    borrow_probe *d = p;
    long s0 = d->api->calls("stream_destroy"), e0 = d->api->calls("event_destroy");
    if (d->e != NULL)
        d->st_e = infinirtEventDestroy(d->e);
    if (d->s != NULL)
        d->st_s = infinirtStreamDestroy(d->s);
    d->streams_meanwhile = d->api->calls("stream_destroy") - s0;
    d->events_meanwhile = d->api->calls("event_destroy") - e0;
    return NULL;
}

static void borrow_destroy_from_hook(void *p)
{
    on_other_thread(borrow_destroy_thread, p);
}

/* A thread that has used the loader and stays until told: while it lives
 * the test's thread is not alone, and keeps borrows as their owner only. */
typedef struct {
    pthread_barrier_t joined, done;
    infiniStatus_t st;
} bystander;

static void *bystander_thread(void *p)
{
    bystander *b = p;
    infinirtEvent_t e;
    b->st = infinirtSetDevice(DEV, 0);
    if (b->st == INFINI_STATUS_SUCCESS)
        b->st = infinirtEventCreate(&e);
    if (b->st == INFINI_STATUS_SUCCESS)
        b->st = infinirtEventDestroy(e);
    pthread_barrier_wait(&b->joined);
    pthread_barrier_wait(&b->done);
    return NULL;
}

static int destroy_while_borrowed(fault_hook_fn destroyer);

/* A call that borrows its handles (StreamSynchronize; EventRecord, which
 * borrows an event and a stream) while the hook `destroyer` destroys them:
 * the handles die at once, and the plugin objects are destroyed when the
 * call gives them back, exactly once each.  Twice: with the test's thread
 * alone until the destroyer starts another (if it does: that is when
 * handles.c lets a call borrow without a reference), and with a bystander
 * thread alive throughout (the calls' borrows are then kept because the
 * test's thread made the handles). */
static int destroy_while_borrowed_twice(fault_hook_fn destroyer)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    if (destroy_while_borrowed(destroyer) != TEST_OK)
        return TEST_FAIL;
    bystander b = {.st = INFINI_STATUS_INTERNAL_ERROR};
    pthread_barrier_init(&b.joined, NULL, 2);
    pthread_barrier_init(&b.done, NULL, 2);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, bystander_thread, &b), 0);
    pthread_barrier_wait(&b.joined);
    int rc = destroy_while_borrowed(destroyer);
    pthread_barrier_wait(&b.done);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    pthread_barrier_destroy(&b.joined);
    pthread_barrier_destroy(&b.done);
    ASSERT_OK(b.st);
    return rc;
}

/* The destroys on another thread, which the hook starts and waits for. */
int test_threads_destroy_while_borrowed(void)
{
    return destroy_while_borrowed_twice(borrow_destroy_from_hook);
}

/* The hook's destroys on the calling thread itself: the handles' owner,
 * inside its own call on them. */
static void borrow_destroy_here(void *p)
{
    (void)borrow_destroy_thread(p);
}

/* The same with the owner destroying the handles from inside its own call
 * on them (a hook of that call, on the same thread): the call holds them
 * in its thread's borrow (a cell, or the stream the thread keeps parked
 * between calls, handles.h), which the owner's own release looks at, and
 * the plugin objects are destroyed when the call gives them back. */
int test_threads_destroy_own_while_borrowed(void)
{
    return destroy_while_borrowed_twice(borrow_destroy_here);
}

static int destroy_while_borrowed(fault_hook_fn destroyer)
{
    fault_api api;
    CHECK(ft_start(&api));

    infinirtStream_t s;
    ASSERT_OK(ft_stream(&s));
    borrow_probe d = {.api = &api, .s = s, .st_s = INFINI_STATUS_INTERNAL_ERROR, .streams_meanwhile = -1};
    ASSERT_EQ(api.hook("stream_synchronize", destroyer, &d), 0);
    long before = api.calls("stream_destroy");
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(d.st_s);
    ASSERT_EQ(d.streams_meanwhile, 0);
    ASSERT_EQ(api.calls("stream_destroy") - before, 1);
    ASSERT_STATUS(infinirtStreamSynchronize(s), INFINI_STATUS_BAD_PARAM);

    infinirtEvent_t e;
    ASSERT_OK(ft_stream(&s));
    ASSERT_OK(infinirtEventCreate(&e));
    d = (borrow_probe){.api = &api,
                       .s = s,
                       .e = e,
                       .st_s = INFINI_STATUS_INTERNAL_ERROR,
                       .st_e = INFINI_STATUS_INTERNAL_ERROR,
                       .streams_meanwhile = -1,
                       .events_meanwhile = -1};
    ASSERT_EQ(api.hook("event_record", destroyer, &d), 0);
    long sb = api.calls("stream_destroy"), eb = api.calls("event_destroy");
    ASSERT_OK(infinirtEventRecord(e, s));
    ASSERT_OK(d.st_s);
    ASSERT_OK(d.st_e);
    ASSERT_EQ(d.streams_meanwhile, 0);
    ASSERT_EQ(d.events_meanwhile, 0);
    ASSERT_EQ(api.calls("stream_destroy") - sb, 1);
    ASSERT_EQ(api.calls("event_destroy") - eb, 1);
    infinirtEventStatus_t q;
    ASSERT_STATUS(infinirtEventQuery(e, &q), INFINI_STATUS_BAD_PARAM);
    ASSERT_STATUS(infinirtEventRecord(e, NULL), INFINI_STATUS_BAD_PARAM);

    /* And once every other thread is gone, borrows are released at once
     * again: a plain destroy right after a query destroys the event. */
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventRecord(e, NULL));
    ASSERT_OK(infinirtEventQuery(e, &q));
    eb = api.calls("event_destroy");
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_EQ(api.calls("event_destroy") - eb, 1);
    return TEST_OK;
}

/* Until the gate's hook is reached (a waiting call), 30 s at most. */
static bool gate_reached(tc_gate *g)
{
    for (int i = 0; i < 30000 && !__atomic_load_n(&g->reached, __ATOMIC_SEQ_CST); i++)
        tc_sleep_ms(1);
    return __atomic_load_n(&g->reached, __ATOMIC_SEQ_CST);
}

/* What the test's thread destroys while another thread waits in a call on
 * it, and what the plugin destroyed meanwhile. */
typedef struct {
    fault_api *api;
    infinirtStream_t s;
    tc_gate g;
    pthread_key_t key;
    bool key_made; /* late_thread made key */
    bool rearmed;  /* late_call's first round done */
    infiniStatus_t made, first, second;
} visit;

/* Destroy v->s once the call on the other thread waits in its hook; the
 * plugin streams destroyed meanwhile go to *meanwhile, and what a
 * synchronize of the dead handle answers while that call still holds it
 * to *dead.  Opens the gate. */
static infiniStatus_t destroy_under_call(visit *v, long *meanwhile, infiniStatus_t *dead)
{
    bool reached = gate_reached(&v->g);
    long before = v->api->calls("stream_destroy");
    infiniStatus_t st = reached ? infinirtStreamDestroy(v->s) : INFINI_STATUS_INTERNAL_ERROR;
    *dead = reached ? infinirtStreamSynchronize(v->s) : INFINI_STATUS_INTERNAL_ERROR;
    *meanwhile = v->api->calls("stream_destroy") - before;
    tc_gate_open(&v->g);
    return st;
}

static void *visit_thread(void *p)
{
    visit *v = p;
    v->first = infinirtStreamSynchronize(v->s);
    if (v->first == INFINI_STATUS_SUCCESS && v->api->hook("stream_synchronize", tc_gate_wait_fn, &v->g) == 0)
        v->second = infinirtStreamSynchronize(v->s);
    return NULL;
}

/* Run fn on another thread, destroy v->s under its call (destroy_under_call)
 * and check the outcome: every step of fn succeeded, the handle was dead at
 * once though still held, and the plugin stream was destroyed once, when
 * the call let go. */
static int visit_run(visit *v, void *(*fn)(void *))
{
    long before = v->api->calls("stream_destroy"), meanwhile = -1;
    infiniStatus_t dead = INFINI_STATUS_INTERNAL_ERROR;
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, fn, v), 0);
    infiniStatus_t st = destroy_under_call(v, &meanwhile, &dead);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(v->made);
    ASSERT_OK(v->first);
    ASSERT_OK(v->second);
    ASSERT_OK(st);
    ASSERT_STATUS(dead, INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(meanwhile, 0);
    ASSERT_EQ(v->api->calls("stream_destroy") - before, 1);
    ASSERT_STATUS(infinirtStreamSynchronize(v->s), INFINI_STATUS_BAD_PARAM);
    return TEST_OK;
}

/* visit_run of fn on a stream this thread made and used first (so its
 * own hint names it: this thread is the owner). */
static int visit_owned(void *(*fn)(void *))
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    visit v = {.api = &api,
               .made = INFINI_STATUS_SUCCESS,
               .first = INFINI_STATUS_INTERNAL_ERROR,
               .second = INFINI_STATUS_INTERNAL_ERROR};
    ASSERT_OK(ft_stream(&v.s));
    ASSERT_OK(infinirtStreamSynchronize(v.s)); /* the owner's own hint too */
    return visit_run(&v, fn);
}

/* A thread that used a stream of another thread before (its per-thread
 * hint names it) is inside a second call on it when the stream's owner
 * destroys it.  That thread is neither the owner nor alone, so its call
 * holds a reference, and the plugin stream is destroyed when the call lets
 * go, not under it.  (A borrow there would be looked for in the owner's
 * cells only.) */
int test_threads_borrow_other_owner(void)
{
    return visit_owned(visit_thread);
}

/* visit_thread without the first call: no hint of the visiting thread
 * names the stream, so the inline borrow finds it in the map
 * (infinirt__handle_borrow_mapped in loader/handles.h), where it is not the
 * owner's either. */
static void *visit_thread_unhinted(void *p)
{
    visit *v = p;
    v->first = INFINI_STATUS_SUCCESS;
    if (v->api->hook("stream_synchronize", tc_gate_wait_fn, &v->g) == 0)
        v->second = infinirtStreamSynchronize(v->s);
    return NULL;
}

/* As borrow_other_owner, the destroyed call being the visiting thread's
 * first on the stream: its look-up comes from the map, not from a hint,
 * and still holds a reference. */
int test_threads_borrow_other_owner_unhinted(void)
{
    return visit_owned(visit_thread_unhinted);
}

/* What a thread that is not an event's owner holds of it while the owner
 * destroys it. */
typedef struct {
    fault_api *api;
    infinirtEvent_t e;
    tc_gate g;
    infiniStatus_t first, second;
} event_visit;

static void *event_visit_thread(void *p)
{
    event_visit *v = p;
    infinirtEventStatus_t q;
    v->first = infinirtEventQuery(v->e, &q);
    if (v->first == INFINI_STATUS_SUCCESS && v->api->hook("event_query", tc_gate_wait_fn, &v->g) == 0)
        v->second = infinirtEventQuery(v->e, &q);
    return NULL;
}

/* borrow_other_owner for an event, which calls borrow in a cell (a stream
 * goes to its owner's park first): another thread that queried the event
 * before is inside a second query, holding a reference, when the owner
 * destroys the event.  The handle is dead at once for the owner too (its
 * own borrow checks the generation and live bit, not only that the slot
 * still has references), and the plugin event is destroyed when the
 * query lets go, not under it. */
int test_threads_event_borrow_other_owner(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    event_visit v = {.api = &api, .first = INFINI_STATUS_INTERNAL_ERROR, .second = INFINI_STATUS_INTERNAL_ERROR};
    infinirtEventStatus_t q;
    ASSERT_OK(infinirtEventCreate(&v.e));
    ASSERT_OK(infinirtEventRecord(v.e, NULL));
    ASSERT_OK(infinirtEventQuery(v.e, &q)); /* the owner's own hint */
    long before = api.calls("event_destroy");
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, event_visit_thread, &v), 0);
    bool reached = gate_reached(&v.g);
    infiniStatus_t st = reached ? infinirtEventDestroy(v.e) : INFINI_STATUS_INTERNAL_ERROR;
    infiniStatus_t dead = reached ? infinirtEventQuery(v.e, &q) : INFINI_STATUS_INTERNAL_ERROR;
    long meanwhile = api.calls("event_destroy") - before;
    tc_gate_open(&v.g);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(v.first);
    ASSERT_OK(v.second);
    ASSERT_OK(st);
    ASSERT_STATUS(dead, INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(meanwhile, 0);
    ASSERT_EQ(api.calls("event_destroy") - before, 1);
    ASSERT_STATUS(infinirtEventQuery(v.e, &q), INFINI_STATUS_BAD_PARAM);
    return TEST_OK;
}

/* At thread exit, after the loader counted the thread out: a call on the
 * stream the thread made.  The first round of destructors only sets the
 * value again, so the call comes in the second round, after the loader's
 * destructor whatever the order of the keys. */
static void late_call(void *p)
{
    visit *v = p;
    if (!v->rearmed) {
        v->rearmed = true;
        pthread_setspecific(v->key, v);
        return;
    }
    if (v->api->hook("stream_synchronize", tc_gate_wait_fn, &v->g) == 0)
        v->second = infinirtStreamSynchronize(v->s);
}

static void *late_thread(void *p)
{
    visit *v = p;
    v->made = infinirtSetDevice(DEV, 0);
    if (v->made == INFINI_STATUS_SUCCESS)
        v->made = ft_stream(&v->s);
    if (v->made == INFINI_STATUS_SUCCESS)
        v->first = infinirtStreamSynchronize(v->s);
    if (v->first == INFINI_STATUS_SUCCESS && pthread_key_create(&v->key, late_call) == 0) {
        v->key_made = true;
        pthread_setspecific(v->key, v);
    }
    return NULL;
}

/* A thread's last calls, from a thread-specific destructor that runs
 * after the loader counted it out: its cells are no longer looked at, so
 * a call on a stream it made holds a reference, and another thread's
 * destroy meanwhile does not free the plugin stream under it. */
int test_threads_borrow_after_exit(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    visit v = {.api = &api,
               .made = INFINI_STATUS_INTERNAL_ERROR,
               .first = INFINI_STATUS_INTERNAL_ERROR,
               .second = INFINI_STATUS_INTERNAL_ERROR};
    int rc = visit_run(&v, late_thread);
    if (v.key_made)
        pthread_key_delete(v.key);
    return rc;
}

/* Threads join and leave while others borrow and destroy: each worker
 * makes, uses and destroys its own streams and events, and short-lived
 * threads query and destroy events that the first one publishes.  Run
 * under the sanitizers, a use after free or a data race here is a borrow
 * released too early. */
enum { VISIT_ROUNDS = 2000, VISIT_SECONDS = 3 };

typedef struct {
    _Atomic(uintptr_t) shared; /* an event the owner published, or 0 */
    atomic_int stop;
    atomic_long visits, foreign_destroys, borrow_calls;
} churn_state;

static void *churn_visitor(void *p)
{
    churn_state *c = p;
    uintptr_t h = atomic_load(&c->shared);
    if (h != 0) {
        atomic_fetch_add(&c->visits, 1);
        infinirtEventStatus_t q;
        infiniStatus_t st = infinirtEventQuery((infinirtEvent_t)h, &q);
        atomic_fetch_add(&c->borrow_calls, st == INFINI_STATUS_SUCCESS);
        /* Taken only if still that very event: then it is the visitor's. */
        uintptr_t want = h;
        if (atomic_compare_exchange_strong(&c->shared, &want, 0) &&
            infinirtEventDestroy((infinirtEvent_t)h) == INFINI_STATUS_SUCCESS)
            atomic_fetch_add(&c->foreign_destroys, 1);
    }
    return NULL;
}

static void *churn_spawner(void *p)
{
    churn_state *c = p;
    while (!atomic_load(&c->stop))
        on_other_thread(churn_visitor, c);
    return NULL;
}

int test_threads_borrow_churn(void)
{
    tc_setenv("INFINIRT_LOG", "error"); /* visitors' misses are warnings */
    tc_use_config("[plugin.cpu]\nlibrary = " CPU_PLUGIN "\nstreams = inline\n");
    CHECK(tc_use_device(0));
    static unsigned char host[256];
    void *dev;
    ASSERT_OK(infinirtMalloc(&dev, sizeof host));
    churn_state c = {0};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, churn_spawner, &c), 0);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long own_destroys = 0, rounds = 0;
    for (; rounds < VISIT_ROUNDS; rounds++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= VISIT_SECONDS)
            break;
        infinirtStream_t s;
        infinirtEvent_t e;
        ASSERT_OK(infinirtStreamCreate(&s));
        ASSERT_OK(infinirtEventCreate(&e));
        ASSERT_OK(infinirtMemcpyAsync(dev, host, sizeof host, INFINIRT_MEMCPY_H2D, s));
        ASSERT_OK(infinirtEventRecord(e, s));
        infinirtEventStatus_t q;
        ASSERT_OK(infinirtEventQuery(e, &q));
        ASSERT_EQ(q, INFINIRT_EVENT_COMPLETE);
        ASSERT_OK(infinirtStreamSynchronize(s));
        /* Published until a visitor came (or 2 ms), queried meanwhile. */
        long v0 = atomic_load(&c.visits);
        struct timespec p0, p1;
        clock_gettime(CLOCK_MONOTONIC, &p0);
        atomic_store(&c.shared, (uintptr_t)e);
        do {
            (void)infinirtEventQuery(e, &q);
            clock_gettime(CLOCK_MONOTONIC, &p1);
        } while (atomic_load(&c.visits) == v0 &&
                 (p1.tv_sec - p0.tv_sec) * 1000000000L + p1.tv_nsec - p0.tv_nsec < 2000000);
        if (atomic_exchange(&c.shared, 0) == (uintptr_t)e) {
            ASSERT_OK(infinirtEventDestroy(e));
            own_destroys++;
        }
        ASSERT_OK(infinirtStreamDestroy(s));
    }
    atomic_store(&c.stop, 1);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    /* Every event was destroyed exactly once, by one side or the other. */
    ASSERT_EQ(own_destroys + atomic_load(&c.foreign_destroys), rounds);
    ASSERT_OK(infinirtFree(dev));
    fprintf(stderr, "%ld rounds, %ld visits, %ld events destroyed by visiting threads, %ld visitor queries\n", rounds,
            atomic_load(&c.visits), atomic_load(&c.foreign_destroys), atomic_load(&c.borrow_calls));
    return TEST_OK;
}

/* ------------------------------------ the allocator's locks taken alone */

/* One thread takes the allocator's locks with no locked instruction while
 * it is the only thread using the loader (alloc_solo.h); a thread that
 * starts using it takes them the ordinary way.  Each thread here fills the
 * blocks it gets with its own pattern and checks it before freeing: two
 * threads inside one arena at once hand the same block out twice, or
 * corrupt its lists. */
typedef struct {
    atomic_int stop;
    atomic_long bad, ops;
} solo_state;

static long solo_round(solo_state *st, unsigned char tag, unsigned *seed)
{
    void *p[8];
    size_t n[8];
    long bad = 0;
    for (int i = 0; i < 8; i++) {
        n[i] = 16 + (size_t)(rand_r(seed) % 1024);
        if (infinirtMalloc(&p[i], n[i]) != INFINI_STATUS_SUCCESS) {
            p[i] = NULL;
            bad++;
            continue;
        }
        memset(p[i], tag, n[i]);
    }
    for (int i = 0; i < 8; i++) {
        if (p[i] == NULL)
            continue;
        for (size_t j = 0; j < n[i]; j++)
            bad += ((unsigned char *)p[i])[j] != tag;
        bad += infinirtFree(p[i]) != INFINI_STATUS_SUCCESS;
    }
    atomic_fetch_add(&st->ops, 16);
    return bad;
}

typedef struct {
    solo_state *st;
    unsigned char tag;
} solo_worker_arg;

static void *solo_worker(void *p)
{
    solo_worker_arg *a = p;
    unsigned seed = a->tag;
    long bad = infinirtSetDevice(INFINI_DEVICE_CPU, 0) != INFINI_STATUS_SUCCESS;
    for (int r = 0; r < 2000 && !atomic_load(&a->st->stop); r++)
        bad += solo_round(a->st, a->tag, &seed);
    atomic_fetch_add(&a->st->bad, bad);
    return NULL;
}

int test_threads_solo_lock_handover(void)
{
    tc_use_config("[plugin.cpu]\nlibrary = " CPU_PLUGIN "\nstreams = inline\n");
    CHECK(tc_use_device(0));
    solo_state st = {0};
    unsigned seed = 1;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long bad = 0;
    int threads = 0;
    /* The test's thread allocates throughout; now and then another thread
     * joins for a while (alone -> two -> alone again). */
    for (int round = 0;; round++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= 2 || round == 200)
            break;
        pthread_t t;
        solo_worker_arg a = {.st = &st, .tag = (unsigned char)(0x80 | (round & 0x7f))};
        ASSERT_EQ(pthread_create(&t, NULL, solo_worker, &a), 0);
        threads++;
        for (int r = 0; r < 200; r++)
            bad += solo_round(&st, 0x11, &seed);
        ASSERT_EQ(pthread_join(t, NULL), 0);
        for (int r = 0; r < 50; r++) /* alone again */
            bad += solo_round(&st, 0x22, &seed);
    }
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(atomic_load(&st.bad), 0);
    fprintf(stderr, "%d threads joined, %ld allocations checked\n", threads, atomic_load(&st.ops) / 2);
    return TEST_OK;
}

/* ------------------------------ a capture's allocation and the capture lock */

typedef struct {
    infinirtStream_t other;
    pthread_t thread;
    int started;
    atomic_int done;
    int done_in_time;
    infiniStatus_t begin, end;
} capture_probe;

static void *capture_other(void *p)
{
    capture_probe *c = p;
    infinirtGraph_t g = NULL;
    c->begin = infinirtStreamBeginCapture(c->other, INFINIRT_STREAM_CAPTURE_MODE_RELAXED);
    c->end = infinirtStreamEndCapture(c->other, &g);
    if (g != NULL)
        (void)infinirtGraphDestroy(g);
    atomic_store(&c->done, 1);
    return NULL;
}

/* Start fn(arg) on *t and wait up to 2 s for it to set *done, without
 * joining: the hooks below run inside an allocation, and were the capture
 * lock held across it, a join would never return.  Whether the thread
 * started. */
static int start_and_wait(pthread_t *t, void *(*fn)(void *), void *arg, atomic_int *done)
{
    if (pthread_create(t, NULL, fn, arg) != 0)
        return 0;
    for (int i = 0; i < 2000 && !atomic_load(done); i++)
        tc_sleep_ms(1);
    return 1;
}

/* Runs inside the plugin's malloc_device of the test's MallocAsync: another
 * thread begins and ends a capture of its own stream, which takes the
 * capture lock. */
static void capture_during_malloc(void *p)
{
    capture_probe *c = p;
    c->started = start_and_wait(&c->thread, capture_other, c, &c->done);
    c->done_in_time = atomic_load(&c->done);
}

/* MallocAsync in a capture allocates with the capture lock dropped: the
 * allocation may call the backend and, out of memory, wait for queued
 * work, and every capture operation of every thread takes that lock.  The
 * block still becomes the graph's, freed when the graph goes. */
int test_threads_capture_malloc_unlocked(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    infinirtStream_t s;
    capture_probe c = {0};
    ASSERT_OK(ft_stream(&s));
    ASSERT_OK(ft_stream(&c.other));
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_EQ(api.hook("malloc_device", capture_during_malloc, &c), 0);
    long before = api.calls("malloc_device");
    void *p = NULL;
    ASSERT_OK(infinirtMallocAsync(&p, LIMIT / 4, s));
    ASSERT_EQ(api.calls("malloc_device") - before, 1); /* the hook ran inside this allocation */
    ASSERT(c.started);
    ASSERT_EQ(pthread_join(c.thread, NULL), 0);
    ASSERT_EQ(c.done_in_time, 1);
    ASSERT_OK(c.begin);
    ASSERT_OK(c.end);
    ASSERT_OK(infinirtFreeAsync(p, s));
    infinirtGraph_t g = NULL;
    ASSERT_OK(infinirtStreamEndCapture(s, &g));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtStreamDestroy(c.other));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

typedef struct {
    infinirtStream_t s;
    infinirtGraph_t g;
    pthread_t thread;
    int started;
    atomic_int done;
    infiniStatus_t end;
} capture_ender;

static void *end_capture(void *p)
{
    capture_ender *e = p;
    e->end = infinirtStreamEndCapture(e->s, &e->g);
    atomic_store(&e->done, 1);
    return NULL;
}

static void end_during_malloc(void *p)
{
    capture_ender *e = p;
    e->started = start_and_wait(&e->thread, end_capture, e, &e->done);
}

/* The capture ends (another thread's EndCapture) while a MallocAsync in it
 * is allocating: the block is no graph's, so it goes back to the pool, the
 * call fails with INVALID_STATE and leaves its output alone, and nothing
 * stays allocated. */
int test_threads_capture_malloc_capture_ended(void)
{
    ft_config(NULL, NULL);
    fault_api api;
    CHECK(ft_start(&api));
    capture_ender e = {0};
    ASSERT_OK(ft_stream(&e.s));
    ASSERT_OK(infinirtStreamBeginCapture(e.s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_EQ(api.hook("malloc_device", end_during_malloc, &e), 0);
    void *p = &e;
    ASSERT_STATUS(infinirtMallocAsync(&p, LIMIT / 4, e.s), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(p, &e);
    ASSERT(e.started);
    ASSERT_EQ(pthread_join(e.thread, NULL), 0);
    ASSERT_OK(e.end);
    ASSERT_OK(infinirtGraphDestroy(e.g));
    ASSERT_OK(infinirtStreamDestroy(e.s));
    CHECK(all_memory_back());
    return TEST_OK;
}
