/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_test.c - the CUDA plugin's native stream capture and graphs (ABI
 * 1.2) against fake_libcuda's capture model (label "cuda", every machine):
 *
 *   replay             capture, instantiate, launch twice on another stream:
 *                      nothing runs during the capture, each launch reads
 *                      the memory as it is then; a fake kernel queued
 *                      natively is captured too; capture ids;
 *   illegal_calls      each call CUDA forbids during a capture answers
 *                      INVALID_STATE, ending then gives INVALID_STATE and no
 *                      graph, and the stream works afterwards;
 *   fork_join          fork and join through events; an unjoined fork;
 *   global_capture_threads  a global-mode capture stays valid while another
 *                      thread runs the allocator's entries (malloc/free
 *                      device and host, event create/query/sync/destroy);
 *                      the same raw calls without the mode exchange break it;
 *   stream_query_capturing  stream_query of a capturing stream (and of the
 *                      legacy stream beside a capturing blocking one) says
 *                      "not idle" and leaves the capture valid;
 *   missing_symbols    a driver without the capture and graph symbols: the
 *                      plugin loads, the seven entries are NOT_IMPLEMENTED
 *                      with a log line, the rest works.
 *
 * global_capture_threads and stream_query_capturing are in
 * graph_beside_capture.c, the helpers the files share in graph_test.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "graph_test.h"

static atomic_int counter;
static void count_fn(void *arg)
{
    atomic_fetch_add(&counter, (int)(intptr_t)arg);
}

/* A fake "kernel": doubles each byte of the buffer it is given. */
static void double_kernel(void *arg)
{
    unsigned char *b = arg;
    for (int i = 0; i < N; i++)
        b[i] = (unsigned char)(b[i] * 2);
}

/* ------------------------------------------------------------ replay */

int test_replay(void)
{
    cuda_plugin p;
    unsigned char src[N], dst[N], want[N];
    void *s, *s2, *d, *graph = NULL, *exec = NULL, *node_graph = NULL;
    int capturing = -1;
    uint64_t id = 0, id2 = 0;
    char log[256];

    CHECK(open_on(&p, FAKE_CUDA_PATH));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create(0, &s2));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->memset(0, d, 0, N));
    memset(src, 1, N);
    memset(dst, 0xEE, N);
    atomic_store(&counter, 0);

    ASSERT_OK(p.ops->stream_is_capturing(0, s, &capturing, &id));
    ASSERT_EQ(capturing, 0);
    ASSERT_EQ(id, 0);
    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL));
    ASSERT_OK(p.ops->stream_is_capturing(0, s, &capturing, &id));
    ASSERT_EQ(capturing, 1);
    ASSERT(id != 0);
    ASSERT_OK(p.ops->memset_async(0, d, 0x7f, N, s));
    ASSERT_OK(p.ops->memcpy_async(0, d, src, N / 2, INFINIRT_PLUGIN_MEMCPY_H2D, s));
    /* The application's own kernel on the native stream is captured too. */
    fake.set_current(0);
    ASSERT_EQ(fake.launch_kernel((CUstream)s, double_kernel, d), CUDA_SUCCESS);
    ASSERT_OK(p.ops->launch_host_func(0, s, count_fn, (void *)(intptr_t)1));
    ASSERT_OK(p.ops->memcpy_async(0, dst, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, s));
    ASSERT_OK(p.ops->stream_end_capture(0, s, &graph));
    ASSERT(graph != NULL);
    ASSERT_OK(p.ops->stream_is_capturing(0, s, &capturing, &id2));
    ASSERT_EQ(capturing, 0);

    /* Nothing ran. */
    ASSERT_OK(p.ops->device_synchronize(0));
    ASSERT_EQ(atomic_load(&counter), 0);
    ASSERT_EQ(dst[0], 0xEE);

    ASSERT_OK(p.ops->graph_instantiate(0, graph, &exec, log, sizeof log));
    ASSERT(exec != NULL);
    ASSERT_STR_EQ(log, "");
    /* Each launch reads src as it is then. */
    memset(src, 3, N);
    ASSERT_OK(p.ops->graph_launch(0, exec, s2));
    ASSERT_OK(p.ops->stream_synchronize(0, s2));
    memset(want, 0xfe, N);
    memset(want, 6, N / 2);
    ASSERT_MEM_EQ(dst, want, N);
    ASSERT_EQ(atomic_load(&counter), 1);
    memset(src, 5, N);
    ASSERT_OK(p.ops->graph_launch(0, exec, s2));
    ASSERT_OK(p.ops->graph_launch(0, exec, NULL)); /* the legacy stream too */
    ASSERT_OK(p.ops->stream_synchronize(0, NULL));
    ASSERT_OK(p.ops->stream_synchronize(0, s2));
    memset(want, 10, N / 2);
    ASSERT_MEM_EQ(dst, want, N);
    ASSERT_EQ(atomic_load(&counter), 3);

    /* A second capture has another id; the stream works between them. */
    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_RELAXED));
    ASSERT_OK(p.ops->stream_is_capturing(0, s, &capturing, &id2));
    ASSERT(id2 != 0 && id2 != id);
    ASSERT_OK(p.ops->stream_end_capture(0, s, &node_graph));
    ASSERT(node_graph != NULL); /* empty, but a graph */
    ASSERT_OK(p.ops->graph_destroy(0, node_graph));

    /* Destroying the graph leaves the exec usable; the exec goes last. */
    ASSERT_OK(p.ops->graph_destroy(0, graph));
    memset(src, 1, N);
    ASSERT_OK(p.ops->graph_launch(0, exec, s2));
    ASSERT_OK(p.ops->graph_exec_destroy(0, exec)); /* the queued launch still runs */
    ASSERT_OK(p.ops->stream_synchronize(0, s2));
    memset(want, 2, N / 2);
    ASSERT_MEM_EQ(dst, want, N);

    /* Destroyed handles: the driver's error, logged, and a reason. */
    test_log_clear();
    ASSERT_STATUS(p.ops->graph_instantiate(0, graph, &exec, log, sizeof log), INFINI_STATUS_BAD_PARAM);
    ASSERT_PTR_EQ(exec, NULL);
    ASSERT_STR_CONTAINS(log, "cuGraphInstantiateWithFlags failed: CUDA_ERROR_INVALID_VALUE");
    ASSERT_EQ(test_log_count("ERROR", "cuGraphInstantiateWithFlags failed"), 1);
    ASSERT_STATUS(p.ops->graph_instantiate(0, graph, &exec, NULL, 0), INFINI_STATUS_BAD_PARAM);

    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(0, s2));
    CHECK(close_plugin(&p));
    return TEST_OK;
}

/* ----------------------------------------------------- illegal calls */

/* Begin a capture with one captured copy on s; run `call`; it must answer
 * INVALID_STATE; end must answer INVALID_STATE with no graph; then the
 * stream must work. */
typedef struct {
    cuda_plugin *p;
    void *s, *d, *ev;
    unsigned char *h;
} ctx_t;

static int after_invalid(ctx_t *c, const char *what)
{
    void *graph = (void *)1;
    int capturing = -1;
    uint64_t id;

    fprintf(stderr, "illegal: %s\n", what);
    /* invalidated, not ended: still capturing, and refusing work */
    ASSERT_OK(c->p->ops->stream_is_capturing(0, c->s, &capturing, &id));
    ASSERT_EQ(capturing, 1);
    ASSERT_STATUS(c->p->ops->memset_async(0, c->d, 1, 16, c->s), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(c->p->ops->stream_end_capture(0, c->s, &graph), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(graph, NULL);
    ASSERT_OK(c->p->ops->stream_is_capturing(0, c->s, &capturing, &id));
    ASSERT_EQ(capturing, 0);
    /* usable again */
    memset(c->h, 0, N);
    ASSERT_OK(c->p->ops->memset_async(0, c->d, 0x42, N, c->s));
    ASSERT_OK(c->p->ops->memcpy_async(0, c->h, c->d, N, INFINIRT_PLUGIN_MEMCPY_D2H, c->s));
    ASSERT_OK(c->p->ops->stream_synchronize(0, c->s));
    ASSERT_EQ(c->h[N - 1], 0x42);
    return TEST_OK;
}

static int begin(ctx_t *c)
{
    ASSERT_OK(c->p->ops->stream_begin_capture(0, c->s, INFINIRT_PLUGIN_CAPTURE_GLOBAL));
    ASSERT_OK(c->p->ops->memset_async(0, c->d, 9, N, c->s));
    return TEST_OK;
}

int test_illegal_calls(void)
{
    cuda_plugin p;
    unsigned char h[N];
    void *s, *d, *ev, *outside, *graph = NULL;
    int done = -1, invalidations;
    ctx_t c = {&p, NULL, NULL, NULL, h};

    CHECK(open_on(&p, FAKE_CUDA_PATH));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->malloc_device(0, &d, N));
    ASSERT_OK(p.ops->event_create(0, 0, &ev));
    ASSERT_OK(p.ops->event_create(0, 0, &outside));
    c.s = s;
    c.d = d;
    c.ev = ev;
    invalidations = fake.invalidations();

    CHECK(begin(&c));
    ASSERT_STATUS(p.ops->stream_synchronize(0, s), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "stream_synchronize"));
    CHECK(begin(&c));
    ASSERT_STATUS(p.ops->stream_destroy(0, s), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "stream_destroy"));
    CHECK(begin(&c));
    ASSERT_STATUS(p.ops->device_synchronize(0), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "device_synchronize"));
    /* A synchronous copy or fill runs on the legacy stream, which would
     * wait for the capturing blocking stream. */
    CHECK(begin(&c));
    ASSERT_STATUS(p.ops->memcpy(0, d, h, N, INFINIRT_PLUGIN_MEMCPY_H2D), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "memcpy"));
    CHECK(begin(&c));
    ASSERT_STATUS(p.ops->memset(0, d, 0, N), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "memset"));
    CHECK(begin(&c));
    ASSERT_STATUS(p.ops->memcpy_async(0, h, d, N, INFINIRT_PLUGIN_MEMCPY_D2H, NULL), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "memcpy_async on the legacy stream"));
    /* A wait for an event recorded outside the capture. */
    ASSERT_OK(p.ops->event_record(0, outside, NULL));
    CHECK(begin(&c));
    ASSERT_STATUS(p.ops->stream_wait_event(0, s, outside), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "stream_wait_event on an outside event"));
    ASSERT_EQ(fake.invalidations(), invalidations + 7);

    /* An event recorded in the capture cannot be queried or synchronized:
     * the refusal invalidates the capture, and the event is refused
     * (INVALID_STATE, from CAPTURED_EVENT and then INVALID_VALUE) until it
     * is recorded again outside a capture: as on an H100. */
    CHECK(begin(&c));
    ASSERT_OK(p.ops->event_record(0, ev, s));
    ASSERT_STATUS(p.ops->event_query(0, ev, &done), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(p.ops->event_synchronize(0, ev), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "event_query of a captured event"));
    ASSERT_EQ(fake.invalidations(), invalidations + 8);
    CHECK(begin(&c));
    ASSERT_OK(p.ops->event_record(0, ev, s));
    ASSERT_STATUS(p.ops->event_synchronize(0, ev), INFINI_STATUS_INVALID_STATE);
    CHECK(after_invalid(&c, "event_synchronize of a captured event"));
    /* Ended well, the capture still leaves the event refused. */
    CHECK(begin(&c));
    ASSERT_OK(p.ops->event_record(0, ev, s));
    ASSERT_OK(p.ops->stream_end_capture(0, s, &graph));
    ASSERT_OK(p.ops->graph_destroy(0, graph));
    ASSERT_STATUS(p.ops->event_query(0, ev, &done), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(p.ops->event_synchronize(0, ev), INFINI_STATUS_INVALID_STATE);
    ASSERT_STATUS(p.ops->stream_wait_event(0, s, ev), INFINI_STATUS_INVALID_STATE);
    ASSERT_OK(p.ops->event_record(0, ev, s)); /* out of the capture again */
    ASSERT_OK(p.ops->event_synchronize(0, ev));
    ASSERT_OK(p.ops->event_query(0, ev, &done));
    ASSERT_EQ(done, 1);

    /* States: ending without a capture, beginning twice, a bad mode. */
    ASSERT_STATUS(p.ops->stream_end_capture(0, s, &graph), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(graph, NULL);
    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_THREAD_LOCAL));
    ASSERT_STATUS(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL), INFINI_STATUS_INVALID_STATE);
    ASSERT_OK(p.ops->stream_end_capture(0, s, &graph));
    ASSERT_OK(p.ops->graph_destroy(0, graph));
    test_log_clear();
    ASSERT_STATUS(p.ops->stream_begin_capture(0, s, 3), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(test_log_count("ERROR", "unknown capture mode 3"), 1);
    ASSERT_EQ(fake.invalidations(), invalidations + 9);

    ASSERT_OK(p.ops->event_destroy(0, ev));
    ASSERT_OK(p.ops->event_destroy(0, outside));
    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    CHECK(close_plugin(&p));
    return TEST_OK;
}

/* --------------------------------------------------------- fork/join */

int test_fork_join(void)
{
    cuda_plugin p;
    void *s, *s2, *e1, *e2, *graph = NULL, *exec = NULL;
    int capturing = -1;
    uint64_t id = 0, id2 = 0;

    CHECK(open_on(&p, FAKE_CUDA_PATH));
    ASSERT_OK(p.ops->stream_create(0, &s));
    ASSERT_OK(p.ops->stream_create_with_flags(0, INFINIRT_PLUGIN_STREAM_NON_BLOCKING, &s2));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &e1));
    ASSERT_OK(p.ops->event_create(0, INFINIRT_PLUGIN_EVENT_DISABLE_TIMING, &e2));
    atomic_store(&counter, 0);

    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL));
    ASSERT_OK(p.ops->launch_host_func(0, s, count_fn, (void *)(intptr_t)1));
    ASSERT_OK(p.ops->event_record(0, e1, s));
    ASSERT_OK(p.ops->stream_wait_event(0, s2, e1)); /* fork: s2 joins the capture */
    ASSERT_OK(p.ops->stream_is_capturing(0, s, &capturing, &id));
    ASSERT_OK(p.ops->stream_is_capturing(0, s2, &capturing, &id2));
    ASSERT_EQ(capturing, 1);
    ASSERT_EQ(id2, id); /* one capture, one id */
    ASSERT_OK(p.ops->launch_host_func(0, s2, count_fn, (void *)(intptr_t)10));
    ASSERT_OK(p.ops->event_record(0, e2, s2));
    ASSERT_OK(p.ops->stream_wait_event(0, s, e2)); /* join */
    ASSERT_OK(p.ops->stream_end_capture(0, s, &graph));
    ASSERT_OK(p.ops->stream_is_capturing(0, s2, &capturing, &id2));
    ASSERT_EQ(capturing, 0);
    ASSERT_OK(p.ops->graph_instantiate(0, graph, &exec, NULL, 0));
    ASSERT_OK(p.ops->graph_launch(0, exec, s));
    ASSERT_OK(p.ops->stream_synchronize(0, s));
    ASSERT_EQ(atomic_load(&counter), 11);
    ASSERT_OK(p.ops->graph_exec_destroy(0, exec));
    ASSERT_OK(p.ops->graph_destroy(0, graph));

    /* A fork with work after its last join: unjoined, no graph. */
    ASSERT_OK(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL));
    ASSERT_OK(p.ops->event_record(0, e1, s));
    ASSERT_OK(p.ops->stream_wait_event(0, s2, e1));
    ASSERT_OK(p.ops->event_record(0, e2, s2));
    ASSERT_OK(p.ops->stream_wait_event(0, s, e2));
    ASSERT_OK(p.ops->launch_host_func(0, s2, count_fn, (void *)(intptr_t)100));
    ASSERT_STATUS(p.ops->stream_end_capture(0, s, &graph), INFINI_STATUS_INVALID_STATE);
    ASSERT_PTR_EQ(graph, NULL);
    ASSERT_OK(p.ops->stream_synchronize(0, s2)); /* s2 left the capture too */
    ASSERT_EQ(atomic_load(&counter), 11);

    ASSERT_OK(p.ops->event_destroy(0, e1));
    ASSERT_OK(p.ops->event_destroy(0, e2));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_OK(p.ops->stream_destroy(0, s2));
    CHECK(close_plugin(&p));
    return TEST_OK;
}

/* ------------------------------------------------- an older driver */

int test_missing_symbols(void)
{
    cuda_plugin p;
    void *s, *d, *ev, *graph = (void *)1, *exec = (void *)1;
    int capturing = -1, idle = -1, done = -1;
    uint64_t id = 1;
    char log[64] = "x";

    test_log_clear();
    CHECK(open_on(&p, FAKE_CUDA_NOGRAPH_PATH));
    ASSERT(fake.cuStreamBeginCapture_v2 == NULL);
    ASSERT_EQ(test_log_count("INFO", "does not export cuStreamBeginCapture_v2 (no native stream capture)"), 1);
    ASSERT_OK(p.ops->stream_create(0, &s));

    test_log_clear();
    ASSERT_STATUS(p.ops->stream_begin_capture(0, s, INFINIRT_PLUGIN_CAPTURE_GLOBAL), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_STATUS(p.ops->stream_end_capture(0, s, &graph), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_PTR_EQ(graph, NULL);
    ASSERT_STATUS(p.ops->stream_is_capturing(0, s, &capturing, &id), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_STATUS(p.ops->graph_instantiate(0, (void *)8, &exec, log, sizeof log), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_PTR_EQ(exec, NULL);
    ASSERT_STATUS(p.ops->graph_launch(0, (void *)8, s), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_STATUS(p.ops->graph_exec_destroy(0, (void *)8), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_STATUS(p.ops->graph_destroy(0, (void *)8), INFINI_STATUS_NOT_IMPLEMENTED);
    ASSERT_EQ(test_log_count("ERROR", "does not export"), 7);
    ASSERT_EQ(test_log_count("stream_begin_capture", "cuStreamBeginCapture_v2"), 1);
    ASSERT_EQ(test_log_count("graph_instantiate", "cuGraphInstantiate_v2"), 1);

    /* The rest works without the capture-mode exchange. */
    test_log_clear();
    ASSERT_OK(p.ops->malloc_device(0, &d, 256));
    ASSERT_OK(p.ops->event_create(0, 0, &ev));
    ASSERT_OK(p.ops->event_record(0, ev, s));
    ASSERT_OK(p.ops->event_query(0, ev, &done));
    ASSERT_OK(p.ops->event_synchronize(0, ev));
    ASSERT_OK(p.ops->stream_query(0, s, &idle));
    ASSERT_EQ(idle, 1);
    ASSERT_OK(p.ops->event_destroy(0, ev));
    ASSERT_OK(p.ops->free_device(0, d));
    ASSERT_OK(p.ops->stream_destroy(0, s));
    ASSERT_EQ(test_log_count("", NULL), 0);
    p.ops->shutdown();
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {CUDA_GRAPH_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
