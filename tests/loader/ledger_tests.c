/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger_tests.c - the exact plugin calls a public call makes.
 *
 * The ledger plugin (fixtures/ledger_plugin.c) serves two METAX devices beside the
 * CPU plugin and writes down every call it receives with its arguments;
 * each test makes public calls and compares the ledger with the calls,
 * devices, objects, sizes and kinds they must have reached the backend
 * as - nothing missing, nothing extra (OpenCL-ICD-Loader's stub driver and
 * icd_test_match.c do the same for the OpenCL ICD loader).
 */
#define _GNU_SOURCE
#include "common.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define METAX INFINI_DEVICE_METAX

typedef size_t (*ledger_read_fn)(char *buf, size_t size);
typedef void (*ledger_clear_fn)(void);
typedef void (*ledger_name_fn)(const void *p, size_t n, const char *name);

static struct {
    ledger_read_fn read;
    ledger_clear_fn clear;
    ledger_name_fn name;
} g_ledger;

/* The CPU plugin and two ledger devices; the ledger plugin started (its
 * init and device queries are not what the tests look at), METAX:0
 * current and the ledger empty. */
static int ledger_start(void)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\n\n[plugin.ledger]\nlibrary = %s\ndevices = 2\n",
             CPU_PLUGIN, LEDGER_PLUGIN);
    tc_use_config(cfg);
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(METAX, &n));
    ASSERT_EQ(n, 2);
    void *dl = dlopen(LEDGER_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    ASSERT(dl != NULL);
    g_ledger.read = (ledger_read_fn)dlsym(dl, "ledger_read");
    g_ledger.clear = (ledger_clear_fn)dlsym(dl, "ledger_clear");
    g_ledger.name = (ledger_name_fn)dlsym(dl, "ledger_name");
    dlclose(dl); /* the loader keeps it loaded */
    ASSERT(g_ledger.read && g_ledger.clear && g_ledger.name);
    ASSERT_OK(infinirtSetDevice(METAX, 0));
    g_ledger.clear();
    return TEST_OK;
}

/* The ledger since the last check equals `want`, line for line; on a
 * difference both are printed with the first line that differs.  The
 * ledger is emptied. */
static int ledger_is(const char *want, const char *file, int line)
{
    static char got[1 << 16];
    size_t n = g_ledger.read(got, sizeof got);
    g_ledger.clear();
    if (getenv("LEDGER_PRINT") != NULL) /* to write a new test's expectations */
        fprintf(stderr, "%s:%d: the plugin received:\n%s", file, line, got);
    if (n < sizeof got && strcmp(got, want) == 0)
        return TEST_OK;
    const char *g = got, *w = want;
    int at = 1;
    while (*g && *g == *w) {
        at += *g == '\n';
        g++;
        w++;
    }
    fprintf(
        stderr,
        "%s:%d: FAIL: the plugin received other calls (first difference on line %d)\n--- want\n%s--- got\n%s---\n",
        file, line, at, want, got);
    return TEST_FAIL;
}
#define ASSERT_LEDGER(want) CHECK(ledger_is((want), __FILE__, __LINE__))

/* What StreamDestroy asks of the plugin for stream S of device D: it
 * drains the stream once and destroys it.  The release of the last
 * reference (stream.c stream_free) drains again only if work was queued
 * after that drain. */
#define DESTROYED(D, S)                    \
    "stream_synchronize dev=" D " " S "\n" \
    "stream_destroy dev=" D " " S "\n"

/* SetDevice reaches the plugin with the plugin's own index; a device that
 * does not exist, or one of another plugin, reaches it not at all. */
int test_ledger_set_device(void)
{
    CHECK(ledger_start());
    ASSERT_OK(infinirtSetDevice(METAX, 1));
    ASSERT_LEDGER("set_device dev=1\n");
    ASSERT_OK(infinirtSetDevice(METAX, 0));
    ASSERT_LEDGER("set_device dev=0\n");
    ASSERT_STATUS(infinirtSetDevice(METAX, 2), INFINI_STATUS_DEVICE_NOT_FOUND);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    ASSERT_LEDGER("");
    return TEST_OK;
}

/* Malloc and Free go through the caching allocator: one raw allocation of
 * a segment, on the device the pointer belongs to, reused without a call
 * (nothing is queued on the device, so the free needs no fence); TrimCache
 * gives it back to that device whatever the current one. */
int test_ledger_malloc_free(void)
{
    CHECK(ledger_start());
    ASSERT_OK(infinirtSetDevice(METAX, 1));
    g_ledger.clear();
    void *p, *q;
    ASSERT_OK(infinirtMalloc(&p, 1000));
    ASSERT_LEDGER("malloc_device dev=1 size=2097152 -> d1\n");
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtMalloc(&q, 1000));
    ASSERT_PTR_EQ(q, p);
    ASSERT_LEDGER("");
    ASSERT_OK(infinirtSetDevice(METAX, 0));
    ASSERT_OK(infinirtFree(q)); /* the pointer's device, not the current one */
    ASSERT_LEDGER("set_device dev=0\n");
    ASSERT_OK(infinirtTrimCache(METAX, 1));
    ASSERT_LEDGER("free_device dev=1 d1+0\n");
    /* Pinned host memory: one pool per plugin, the device a hint (0). */
    void *h;
    ASSERT_OK(infinirtSetDevice(METAX, 1));
    g_ledger.clear();
    ASSERT_OK(infinirtMallocHost(&h, 1000));
    ASSERT_LEDGER("malloc_host dev=0 size=2097152 -> h1\n");
    ASSERT_OK(infinirtFreeHost(h));
    ASSERT_LEDGER("");
    return TEST_OK;
}

/* Copies and fills reach the device that owns the device memory (a
 * synchronous call) or the stream (a queued one), with the caller's
 * pointers, size, value and kind, once each. */
int test_ledger_copies(void)
{
    CHECK(ledger_start());
    enum { N = 4096 };
    static unsigned char host[N], back[N];
    g_ledger.name(host, N, "host");
    g_ledger.name(back, N, "back");
    void *d0, *d1;
    infinirtStream_t s;
    ASSERT_OK(infinirtMalloc(&d0, N));
    ASSERT_OK(infinirtSetDevice(METAX, 1));
    ASSERT_OK(infinirtMalloc(&d1, N));
    ASSERT_OK(infinirtSetDevice(METAX, 0));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_LEDGER("malloc_device dev=0 size=2097152 -> d1\n"
                  "set_device dev=1\n"
                  "malloc_device dev=1 size=2097152 -> d2\n"
                  "set_device dev=0\n"
                  "stream_create dev=0 -> s1\n");
    ASSERT_OK(infinirtMemcpy(d1, host, N, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(back, d1, 100, INFINIRT_MEMCPY_D2H));
    ASSERT_OK(infinirtMemcpyAsync((char *)d0 + 256, host, 512, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(d0, d1, N, INFINIRT_MEMCPY_D2D, s));
    ASSERT_OK(infinirtMemset(d1, 0x5a, N));
    ASSERT_OK(infinirtMemsetAsync(d0, 0xa5, 64, s));
    ASSERT_OK(infinirtMemsetAsync(d0, 1, 8, NULL));
    ASSERT_LEDGER("memcpy dev=1 dst=d2+0 src=host+0 size=4096 kind=H2D\n"
                  "memcpy dev=1 dst=back+0 src=d2+0 size=100 kind=D2H\n"
                  "memcpy_async dev=0 dst=d1+256 src=host+0 size=512 kind=H2D stream=s1\n"
                  "memcpy_async dev=0 dst=d1+0 src=d2+0 size=4096 kind=D2D stream=s1\n"
                  "memset dev=1 ptr=d2+0 value=0x5a size=4096\n"
                  "memset_async dev=0 ptr=d1+0 value=0xa5 size=64 stream=s1\n"
                  "memset_async dev=0 ptr=d1+0 value=0x01 size=8 stream=null\n");
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtStreamSynchronize(NULL));
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_LEDGER("stream_synchronize dev=0 s1\n"
                  "stream_synchronize dev=0 null\n"
                  "device_synchronize dev=0\n");
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_LEDGER(DESTROYED("0", "s1"));
    ASSERT_OK(infinirtFree(d0));
    ASSERT_OK(infinirtFree(d1));
    return TEST_OK;
}

/* Streams taken in turns: four (as many as a thread's stream hints,
 * handles.h), then six, then six with one destroyed and made again between
 * rounds.  Every copy and synchronize reaches the plugin with its own
 * stream's object (a new stream at a reused address is a new object with a
 * new name), and the destroyed handle reaches it not at all. */
int test_ledger_stream_turns(void)
{
    CHECK(ledger_start());
    enum { NS = 6, ROUNDS = 3 };
    static unsigned char host[64];
    g_ledger.name(host, sizeof host, "host");
    void *d;
    ASSERT_OK(infinirtMalloc(&d, 64));
    infinirtStream_t s[NS];
    int name[NS];
    for (int i = 0; i < NS; i++) {
        ASSERT_OK(infinirtStreamCreate(&s[i]));
        name[i] = i + 1;
    }
    g_ledger.clear();
    static char want[16384];
    for (int phase = 0; phase < 3; phase++) {
        int ns = phase == 0 ? 4 : NS;
        for (int r = 0; r < ROUNDS; r++) {
            size_t n = 0;
            for (int i = 0; i < ns; i++) {
                ASSERT_OK(infinirtMemcpyAsync(d, host, sizeof host, INFINIRT_MEMCPY_H2D, s[i]));
                ASSERT_OK(infinirtStreamSynchronize(s[i]));
                n += (size_t)snprintf(want + n, sizeof want - n,
                                      "memcpy_async dev=0 dst=d1+0 src=host+0 size=64 kind=H2D stream=s%d\n"
                                      "stream_synchronize dev=0 s%d\n",
                                      name[i], name[i]);
            }
            ASSERT_LEDGER(want);
            if (phase == 2) {
                /* The stream of this round's middle turn goes, and a new
                 * one takes its place. */
                int k = (r * 2 + 1) % NS;
                infinirtStream_t old = s[k];
                ASSERT_OK(infinirtStreamDestroy(old));
                ASSERT_STATUS(infinirtStreamSynchronize(old), INFINI_STATUS_BAD_PARAM);
                ASSERT_STATUS(infinirtMemcpyAsync(d, host, sizeof host, INFINIRT_MEMCPY_H2D, old),
                              INFINI_STATUS_BAD_PARAM);
                ASSERT_OK(infinirtStreamCreate(&s[k]));
                int fresh = NS + r + 1;
                char dw[256];
                snprintf(dw, sizeof dw, DESTROYED("0", "s%d") "stream_create dev=0 -> s%d\n", name[k], name[k],
                         fresh);
                ASSERT_LEDGER(dw);
                name[k] = fresh;
            }
        }
    }
    for (int i = 0; i < NS; i++)
        ASSERT_OK(infinirtStreamDestroy(s[i]));
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}

/* Events: created on the current device, recorded on a stream, waited for
 * by a stream of the other device (the call goes to the stream's device
 * with the event's object), queried, timed and destroyed on their own. */
int test_ledger_events(void)
{
    CHECK(ledger_start());
    infinirtStream_t s0, s1;
    infinirtEvent_t e, t;
    infinirtEventStatus_t st;
    float ms;
    ASSERT_OK(infinirtStreamCreate(&s0));
    ASSERT_OK(infinirtEventCreate(&e));
    ASSERT_OK(infinirtEventCreateWithFlags(&t, INFINIRT_EVENT_DISABLE_TIMING));
    ASSERT_LEDGER("stream_create dev=0 -> s1\n"
                  "event_create dev=0 flags=0x0 -> e1\n"
                  "event_create dev=0 flags=0x1 -> e2\n");
    ASSERT_OK(infinirtSetDevice(METAX, 1));
    ASSERT_OK(infinirtStreamCreate(&s1));
    ASSERT_LEDGER("set_device dev=1\n"
                  "stream_create dev=1 -> s2\n");
    ASSERT_OK(infinirtEventRecord(e, s0));
    ASSERT_OK(infinirtEventRecord(t, s0));
    ASSERT_OK(infinirtStreamWaitEvent(s1, e));
    ASSERT_OK(infinirtEventQuery(e, &st));
    ASSERT_OK(infinirtEventSynchronize(e));
    ASSERT_OK(infinirtEventElapsedTime(&ms, e, e));
    ASSERT_LEDGER("event_record dev=0 e1 s1\n"
                  "event_record dev=0 e2 s1\n"
                  "stream_wait_event dev=1 s2 e1\n"
                  "event_query dev=0 e1\n"
                  "event_synchronize dev=0 e1\n"
                  "event_elapsed_time dev=0 e1 e1\n");
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtEventDestroy(t));
    ASSERT_OK(infinirtStreamDestroy(s1));
    ASSERT_OK(infinirtStreamDestroy(s0));
    ASSERT_LEDGER("event_destroy dev=0 e1\n"
                  "event_destroy dev=0 e2\n" DESTROYED("1", "s2") DESTROYED("0", "s1"));
    return TEST_OK;
}

/* The allocator's fences.  A block freed behind work queued on its stream
 * gets a fence recorded there (a timing-free event, created once and then
 * re-recorded); the same stream takes it back with no call; a synchronous
 * Free fences every stream with work in flight (here the stream, not the
 * idle default stream); the default stream takes such a block back at
 * once, and reaches for pending blocks only after a query says their
 * fences are done; a destroyed stream's fences are queried before its
 * blocks move to the other streams. */
int test_ledger_free_async_fence(void)
{
    CHECK(ledger_start());
    enum { N = 65536 };
    infinirtStream_t a, b;
    ASSERT_OK(infinirtStreamCreate(&a));
    ASSERT_OK(infinirtStreamCreate(&b));
    void *p, *q, *r;
    ASSERT_OK(infinirtMallocAsync(&p, N, a));
    ASSERT_LEDGER("stream_create dev=0 -> s1\n"
                  "stream_create dev=0 -> s2\n"
                  "malloc_device dev=0 size=2097152 -> d1\n");
    ASSERT_OK(infinirtMemsetAsync(p, 7, N, a));
    ASSERT_OK(infinirtFreeAsync(p, a));
    ASSERT_LEDGER("memset_async dev=0 ptr=d1+0 value=0x07 size=65536 stream=s1\n"
                  "event_create dev=0 flags=0x1 -> e1\n"
                  "event_record dev=0 e1 s1\n");
    ASSERT_OK(infinirtMallocAsync(&q, N, a)); /* stream order: no wait, no call */
    ASSERT_PTR_EQ(q, p);
    ASSERT_LEDGER("");
    ASSERT_OK(infinirtMemsetAsync(q, 8, N, a));
    ASSERT_OK(infinirtFree(q));
    ASSERT_LEDGER("memset_async dev=0 ptr=d1+0 value=0x08 size=65536 stream=s1\n"
                  "event_create dev=0 flags=0x1 -> e2\n"
                  "event_record dev=0 e2 s1\n");
    ASSERT_OK(infinirtMalloc(&r, N));
    ASSERT_PTR_EQ(r, p);
    ASSERT_LEDGER("event_query dev=0 e2\n"
                  "event_query dev=0 e1\n");
    ASSERT_OK(infinirtMemsetAsync(r, 9, N, NULL));
    ASSERT_OK(infinirtFree(r));
    ASSERT_LEDGER("memset_async dev=0 ptr=d1+0 value=0x09 size=65536 stream=null\n"
                  "event_record dev=0 e1 null\n"
                  "event_record dev=0 e2 s1\n");
    ASSERT_OK(infinirtMalloc(&r, N));
    ASSERT_LEDGER("");
    ASSERT_OK(infinirtFree(r));
    ASSERT_OK(infinirtStreamDestroy(a));
    ASSERT_LEDGER("event_create dev=0 flags=0x1 -> e3\n"
                  "event_record dev=0 e3 null\n"
                  "event_create dev=0 flags=0x1 -> e4\n"
                  "event_record dev=0 e4 s1\n"
                  "event_query dev=0 e1\n"
                  "event_query dev=0 e2\n" DESTROYED("0", "s1"));
    ASSERT_OK(infinirtMallocAsync(&q, N, b));
    ASSERT_PTR_EQ(q, p);
    ASSERT_LEDGER("event_query dev=0 e3\n"
                  "event_query dev=0 e4\n");
    ASSERT_OK(infinirtFreeAsync(q, b));
    ASSERT_OK(infinirtStreamDestroy(b));
    ASSERT_LEDGER(DESTROYED("0", "s2"));
    return TEST_OK;
}

/* A capture reaches the plugin not at all (the loader captures for a
 * plugin without graph entries), nor does instantiation; each launch
 * replays the captured calls, in order, on the launch stream, and records
 * the executable graph's launch event (made at the first launch) after
 * them.  A launch on another stream than the previous one first waits for
 * that event; the executable graph's destruction destroys it. */
int test_ledger_graph(void)
{
    CHECK(ledger_start());
    enum { N = 4096 };
    static unsigned char host[N];
    g_ledger.name(host, N, "host");
    infinirtStream_t s, l;
    void *d;
    ASSERT_OK(infinirtMalloc(&d, N));
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtStreamCreate(&l));
    g_ledger.clear();
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_RELAXED));
    ASSERT_OK(infinirtMemsetAsync(d, 3, N, s));
    ASSERT_OK(infinirtMemcpyAsync(host, d, N, INFINIRT_MEMCPY_D2H, s));
    infinirtGraph_t g;
    infinirtGraphExec_t x;
    ASSERT_OK(infinirtStreamEndCapture(s, &g));
    ASSERT_OK(infinirtGraphInstantiate(&x, g, NULL, NULL, 0));
    ASSERT_LEDGER("");
    ASSERT_OK(infinirtGraphLaunch(x, l));
    ASSERT_OK(infinirtGraphLaunch(x, l));
    ASSERT_LEDGER("event_create dev=0 flags=0x1 -> e1\n"
                  "memset_async dev=0 ptr=d1+0 value=0x03 size=4096 stream=s2\n"
                  "memcpy_async dev=0 dst=host+0 src=d1+0 size=4096 kind=D2H stream=s2\n"
                  "event_record dev=0 e1 s2\n"
                  "memset_async dev=0 ptr=d1+0 value=0x03 size=4096 stream=s2\n"
                  "memcpy_async dev=0 dst=host+0 src=d1+0 size=4096 kind=D2H stream=s2\n"
                  "event_record dev=0 e1 s2\n");
    ASSERT_OK(infinirtGraphLaunch(x, s));
    ASSERT_OK(infinirtGraphLaunch(x, NULL));
    ASSERT_LEDGER("stream_wait_event dev=0 s1 e1\n"
                  "memset_async dev=0 ptr=d1+0 value=0x03 size=4096 stream=s1\n"
                  "memcpy_async dev=0 dst=host+0 src=d1+0 size=4096 kind=D2H stream=s1\n"
                  "event_record dev=0 e1 s1\n"
                  "stream_wait_event dev=0 null e1\n"
                  "memset_async dev=0 ptr=d1+0 value=0x03 size=4096 stream=null\n"
                  "memcpy_async dev=0 dst=host+0 src=d1+0 size=4096 kind=D2H stream=null\n"
                  "event_record dev=0 e1 null\n");
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_LEDGER("event_destroy dev=0 e1\n");
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_LEDGER("");
    ASSERT_OK(infinirtStreamDestroy(s));
    ASSERT_OK(infinirtStreamDestroy(l));
    ASSERT_OK(infinirtFree(d));
    return TEST_OK;
}
