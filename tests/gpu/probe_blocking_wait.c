/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_blocking_wait.c - what a StreamWaitEvent on a blocking stream, and
 * the work around it, orders on a backend, case by case.
 *
 *   INFINIRT_CONFIG=... INFINIRT_TEST_DEVICE=nvidia probe-blocking-wait [reps]
 *
 * The NULL stream (or another stream) is held by a host function waiting
 * on a gate; each case then asks whether a host wait returns while the gate
 * is shut ("early": not ordered after the held work) or only once it is
 * opened ("held": ordered).  Each line prints how often the wait returned
 * early and what the model (docs/semantics.md, R2) says: "must hold" cases
 * fail the probe when they return early; "may return early" ones are what
 * the rules leave open, printed to show what the backend does (on CUDA
 * they return early: that is how R2's exception for a wait on a blocking
 * stream was found).  Exit 0: every "must hold" case held; 1: one did not;
 * 77: no device of the type.
 */
#define _POSIX_C_SOURCE 200809L
#include <infinirt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    atomic_int open;
} gate;

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void gate_fn(void *p)
{
    gate *g = p;
    for (int i = 0; i < 5000 && !atomic_load(&g->open); i++) /* 5 s at most */
        sleep_ms(1);
}

#define OK(x)                                                                       \
    do {                                                                            \
        infiniStatus_t st_ = (x);                                                   \
        if (st_ != INFINI_STATUS_SUCCESS) {                                         \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #x, (int)st_); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

typedef struct {
    infinirtStream_t s;
    infinirtEvent_t e; /* when set: EventSynchronize(e) instead */
    atomic_int done;
} waiter;

static void *wait_thread(void *p)
{
    waiter *w = p;
    if (w->e)
        OK(infinirtEventSynchronize(w->e));
    else
        OK(infinirtStreamSynchronize(w->s));
    atomic_store(&w->done, 1);
    return NULL;
}

/* Starts the host wait on another thread; 1 when it returned within 100 ms
 * (while the gate is shut), 0 when not.  Opens the gate and joins. */
static int returns_early(infinirtStream_t s, infinirtEvent_t e, gate *g)
{
    waiter w = {s, e, 0};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &w);
    for (int ms = 0; ms < 100 && !atomic_load(&w.done); ms++)
        sleep_ms(1);
    int early = atomic_load(&w.done);
    atomic_store(&g->open, 1);
    pthread_join(t, NULL);
    return early;
}

/* Holds s with a shut gate.  Every case ends with a DeviceSynchronize, so
 * a gate is done with before the ring comes round to it again. */
static gate *hold(infinirtStream_t s)
{
    static gate ring[8];
    static unsigned next;
    gate *g = &ring[next++ % 8];
    atomic_store(&g->open, 0);
    OK(infinirtLaunchHostFunc(s, gate_fn, g));
    return g;
}

/* What every case works with: a blocking stream s, a non-blocking one n,
 * events e and e2; made fresh for each case and destroyed after it. */
typedef struct {
    infinirtStream_t s, n;
    infinirtEvent_t e, e2;
} fixture;

static fixture fixture_make(void)
{
    fixture f;
    OK(infinirtStreamCreate(&f.s));
    OK(infinirtStreamCreateWithFlags(&f.n, INFINIRT_STREAM_NON_BLOCKING));
    OK(infinirtEventCreate(&f.e));
    OK(infinirtEventCreate(&f.e2));
    return f;
}

/* Ends a case: everything queued done, the fixture destroyed; r passed on. */
static int fixture_done(fixture *f, int r)
{
    OK(infinirtDeviceSynchronize());
    OK(infinirtEventDestroy(f->e2));
    OK(infinirtEventDestroy(f->e));
    OK(infinirtStreamDestroy(f->n));
    OK(infinirtStreamDestroy(f->s));
    return r;
}

/* e recorded on s and complete. */
static void record_complete(fixture *f)
{
    OK(infinirtEventRecord(f->e, f->s));
    OK(infinirtEventSynchronize(f->e));
}

/* Each case returns 1 when the host wait returned early. */
static int case_completed_wait(void) /* the conformance test's case */
{
    fixture f = fixture_make();
    record_complete(&f);
    gate *g = hold(NULL);
    OK(infinirtStreamWaitEvent(f.s, f.e));
    return fixture_done(&f, returns_early(f.s, NULL, g));
}

static int case_pending_wait(void) /* record pending on a held non-blocking stream */
{
    fixture f = fixture_make();
    gate *g2 = hold(f.n);
    OK(infinirtEventRecord(f.e, f.n));
    gate *g1 = hold(NULL);
    OK(infinirtStreamWaitEvent(f.s, f.e)); /* e is pending here */
    atomic_store(&g2->open, 1);
    OK(infinirtEventSynchronize(f.e));
    return fixture_done(&f, returns_early(f.s, NULL, g1));
}

static int case_never_recorded_wait(void)
{
    fixture f = fixture_make();
    gate *g = hold(NULL);
    OK(infinirtStreamWaitEvent(f.s, f.e));
    return fixture_done(&f, returns_early(f.s, NULL, g));
}

static int case_completed_wait_then_record(void) /* a record after the wait */
{
    fixture f = fixture_make();
    record_complete(&f);
    gate *g = hold(NULL);
    OK(infinirtStreamWaitEvent(f.s, f.e));
    OK(infinirtEventRecord(f.e2, f.s));
    return fixture_done(&f, returns_early(NULL, f.e2, g));
}

static int case_record_only(void) /* control: a record on a blocking stream */
{
    fixture f = fixture_make();
    gate *g = hold(NULL);
    OK(infinirtEventRecord(f.e, f.s));
    return fixture_done(&f, returns_early(NULL, f.e, g));
}

static int case_empty_sync(void) /* control: a blocking stream with no work */
{
    fixture f = fixture_make();
    gate *g = hold(NULL);
    return fixture_done(&f, returns_early(f.s, NULL, g));
}

static int case_completed_wait_with_pending_own(void)
{
    /* s has its own work pending (held by g2, queued before the NULL hold);
     * the completed wait comes after the NULL hold; opening g2 leaves s
     * with only the wait: does its sync still wait for NULL? */
    fixture f = fixture_make();
    record_complete(&f);
    gate *g2 = hold(f.s);
    OK(infinirtEventRecord(f.e2, f.s));
    gate *g1 = hold(NULL); /* after s's held work: runs when g2 opens */
    OK(infinirtStreamWaitEvent(f.s, f.e));
    atomic_store(&g2->open, 1);
    OK(infinirtEventSynchronize(f.e2));
    return fixture_done(&f, returns_early(f.s, NULL, g1));
}

static int case_null_after_blocking_wait(void)
{
    /* The other direction: the NULL stream's later work after a blocking
     * stream's wait for a pending record (on a held non-blocking stream). */
    fixture f = fixture_make();
    gate *g = hold(f.n);
    OK(infinirtEventRecord(f.e, f.n));
    OK(infinirtStreamWaitEvent(f.s, f.e));
    OK(infinirtEventRecord(f.e2, NULL));
    return fixture_done(&f, returns_early(NULL, f.e2, g));
}

static infiniDevice_t device_type(const char *name)
{
    static const struct {
        const char *name;
        infiniDevice_t type;
    } types[] = {{"cpu", INFINI_DEVICE_CPU}, {"nvidia", INFINI_DEVICE_NVIDIA}, {"opencl", INFINI_DEVICE_OPENCL}};
    for (size_t i = 0; name != NULL && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(name, types[i].name) == 0)
            return types[i].type;
    return INFINI_DEVICE_CPU;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: probe-blocking-wait [reps (1-1000)]\n");
        return 2;
    }
    OK(infinirtInit());
    if (infinirtSetDevice(device_type(getenv("INFINIRT_TEST_DEVICE")), 0) != INFINI_STATUS_SUCCESS) {
        printf("probe-blocking-wait: no device of the type INFINIRT_TEST_DEVICE names\n");
        return 77;
    }
    static const struct {
        const char *name;
        int (*fn)(void);
        int must_hold;
    } cases[] = {
        {"completed_wait", case_completed_wait, 0},
        {"pending_wait", case_pending_wait, 0},
        {"completed_wait_with_pending_own", case_completed_wait_with_pending_own, 0},
        {"never_recorded_wait", case_never_recorded_wait, 0},
        {"empty_sync", case_empty_sync, 0},
        {"completed_wait_then_record", case_completed_wait_then_record, 1},
        {"record_only", case_record_only, 1},
        {"null_after_blocking_wait", case_null_after_blocking_wait, 1},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int early = 0;
        for (int r = 0; r < reps; r++)
            early += cases[i].fn();
        int wrong = cases[i].must_hold && early > 0;
        bad |= wrong;
        printf("%-34s early %d/%d   model: %s%s\n", cases[i].name, early, reps,
               cases[i].must_hold ? "must hold" : "may return early", wrong ? "   WRONG" : "");
    }
    return bad;
}
