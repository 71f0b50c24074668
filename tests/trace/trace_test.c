/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_test.c - the trace INFINIRT_TRACE writes (docs/tracing.md), read
 * back and checked.
 *
 *   trace-test NAME    run one test (trace_list.h has the list)
 *
 * Each test runs its workload in a child process, which writes the trace
 * and exits (exit: the trace is finished by an atexit handler), and reads
 * the file in the parent with the small JSON reader below, so that what is
 * checked is the file a user opens in Perfetto.  The device is
 * INFINIRT_TEST_DEVICE's, the config INFINIRT_CONFIG's.  `summary` also
 * runs infinirt-trace (TRACE_TOOL) on the workload's trace and checks its
 * summary against the file.
 */
#define _GNU_SOURCE
#include "common.h"
#include "trace_list.h"

#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_BYTES 4096

TRACE_BACKEND_LIST(TEST_DECLARE)
TRACE_LOADER_LIST(TEST_DECLARE)

/* ------------------------------------------------------------- JSON */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;
typedef struct jv {
    jtype t;
    double num;
    char *str;
    struct jv *items; /* J_ARR, J_OBJ */
    char **keys;      /* J_OBJ */
    size_t n;
} jv;

typedef struct {
    const char *p, *end;
    const char *err;
} jreader;

static void skip_ws(jreader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

static bool jparse(jreader *r, jv *out, int depth);

static char *jstring(jreader *r)
{
    if (r->p >= r->end || *r->p != '"') {
        r->err = "expected a string";
        return NULL;
    }
    r->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (r->p < r->end && *r->p != '"') {
        char c = *r->p++;
        if ((unsigned char)c < 0x20) {
            r->err = "control character in a string";
            free(s);
            return NULL;
        }
        if (c == '\\') {
            if (r->p >= r->end)
                break;
            char e = *r->p++;
            switch (e) {
            case 'n':
                c = '\n';
                break;
            case 't':
                c = '\t';
                break;
            case 'u':
                if (r->end - r->p < 4) {
                    r->err = "short \\u escape";
                    free(s);
                    return NULL;
                }
                c = (char)strtol((char[5]){r->p[0], r->p[1], r->p[2], r->p[3], 0}, NULL, 16);
                r->p += 4;
                break;
            case '"':
            case '\\':
            case '/':
                c = e;
                break;
            default:
                r->err = "bad escape";
                free(s);
                return NULL;
            }
        }
        if (n + 2 > cap)
            s = realloc(s, cap *= 2);
        s[n++] = c;
    }
    if (r->p >= r->end) {
        r->err = "unterminated string";
        free(s);
        return NULL;
    }
    r->p++;
    s[n] = '\0';
    return s;
}

static bool jparse(jreader *r, jv *out, int depth)
{
    memset(out, 0, sizeof *out);
    skip_ws(r);
    if (depth > 64 || r->p >= r->end) {
        r->err = depth > 64 ? "too deep" : "unexpected end";
        return false;
    }
    char c = *r->p;
    if (c == '{' || c == '[') {
        bool obj = c == '{';
        out->t = obj ? J_OBJ : J_ARR;
        r->p++;
        size_t cap = 0;
        skip_ws(r);
        if (r->p < r->end && *r->p == (obj ? '}' : ']')) {
            r->p++;
            return true;
        }
        for (;;) {
            if (out->n == cap) {
                cap = cap ? cap * 2 : 8;
                out->items = realloc(out->items, cap * sizeof *out->items);
                if (obj)
                    out->keys = realloc(out->keys, cap * sizeof *out->keys);
            }
            if (obj) {
                skip_ws(r);
                if ((out->keys[out->n] = jstring(r)) == NULL)
                    return false;
                skip_ws(r);
                if (r->p >= r->end || *r->p != ':') {
                    r->err = "expected ':'";
                    return false;
                }
                r->p++;
            }
            if (!jparse(r, &out->items[out->n], depth + 1))
                return false;
            out->n++;
            skip_ws(r);
            if (r->p < r->end && *r->p == ',') {
                r->p++;
                continue;
            }
            if (r->p < r->end && *r->p == (obj ? '}' : ']')) {
                r->p++;
                return true;
            }
            r->err = obj ? "expected ',' or '}'" : "expected ',' or ']'";
            return false;
        }
    }
    if (c == '"') {
        out->t = J_STR;
        return (out->str = jstring(r)) != NULL;
    }
    if (c == '-' || isdigit((unsigned char)c)) {
        char *e;
        out->t = J_NUM;
        out->num = strtod(r->p, &e);
        if (e == r->p) {
            r->err = "bad number";
            return false;
        }
        r->p = e;
        return true;
    }
    static const struct {
        const char *w;
        jtype t;
        double v;
    } words[] = {{"true", J_BOOL, 1}, {"false", J_BOOL, 0}, {"null", J_NULL, 0}};
    for (size_t i = 0; i < 3; i++) {
        size_t l = strlen(words[i].w);
        if ((size_t)(r->end - r->p) >= l && memcmp(r->p, words[i].w, l) == 0) {
            out->t = words[i].t;
            out->num = words[i].v;
            r->p += l;
            return true;
        }
    }
    r->err = "unexpected character";
    return false;
}

static const jv *jget(const jv *o, const char *k)
{
    if (o == NULL || o->t != J_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], k) == 0)
            return &o->items[i];
    return NULL;
}

static const char *jstr(const jv *o, const char *k)
{
    const jv *v = jget(o, k);
    return v != NULL && v->t == J_STR ? v->str : NULL;
}

static bool jnum(const jv *o, const char *k, double *out)
{
    const jv *v = jget(o, k);
    if (v == NULL || v->t != J_NUM)
        return false;
    *out = v->num;
    return true;
}

static bool is(const char *a, const char *b)
{
    return a != NULL && strcmp(a, b) == 0;
}

static void jfree(jv *v)
{
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

/* The whole file parsed; the test fails (with where) when it is not JSON. */
static jv g_doc;
static const jv *g_events;
static char *read_whole(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static char *g_text; /* the file's text, kept until the next load */
static int load_trace(const char *path)
{
    free(g_text);
    g_text = read_whole(path);
    const char *text = g_text;
    if (text == NULL) {
        fprintf(stderr, "trace file %s could not be read\n", path);
        ASSERT_PTR_NE(text, NULL);
    }
    jfree(&g_doc);
    jreader r = {text, text + strlen(text), NULL};
    bool ok = jparse(&r, &g_doc, 0);
    skip_ws(&r);
    if (!ok || r.p != r.end) {
        fprintf(stderr, "%s is not JSON: %s at byte %ld\n", path, r.err ? r.err : "text after the end",
                (long)(r.p - text));
        ASSERT(false);
    }
    ASSERT_EQ((int)g_doc.t, (int)J_OBJ);
    ASSERT_STR_EQ(jstr(&g_doc, "displayTimeUnit"), "ns");
    g_events = jget(&g_doc, "traceEvents");
    ASSERT_PTR_NE(g_events, NULL);
    ASSERT_EQ((int)g_events->t, (int)J_ARR);
    const jv *other = jget(&g_doc, "otherData");
    ASSERT_PTR_NE(other, NULL);
    ASSERT_PTR_NE(jstr(other, "infinirt_version"), NULL);
    double d;
    ASSERT(jnum(other, "dropped_events", &d));
    return TEST_OK;
}

static const jv *ev(size_t i)
{
    return &g_events->items[i];
}

static size_t count_where(const char *ph, const char *cat, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < g_events->n; i++)
        if ((ph == NULL || is(jstr(ev(i), "ph"), ph)) && (cat == NULL || is(jstr(ev(i), "cat"), cat)) &&
            (name == NULL || is(jstr(ev(i), "name"), name)))
            n++;
    return n;
}

static double num(const jv *o, const char *k)
{
    double v = -1;
    if (!jnum(o, k, &v))
        return -1;
    return v;
}

/* ------------------------------------------------------------ children */

/* In TRACE_TEST_DIR when it is set (trace_tool_test.sh keeps the
 * workload's trace there for the browser), else in the test's own folder. */
static const char *trace_path(const char *name)
{
    static char p[1024];
    const char *dir = getenv("TRACE_TEST_DIR");
    snprintf(p, sizeof p, "%s/%s", dir != NULL && dir[0] != '\0' ? dir : tc_temp_dir(), name);
    return p;
}

/* Run fn in a child (INFINIRT_TRACE=path unless path is NULL) that exits
 * with its result; the test fails unless it exits 0, and is skipped when
 * the child skips (TEST_SKIP: no device of the type). */
static int run_child(int (*fn)(void), const char *path)
{
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (path != NULL)
            tc_setenv("INFINIRT_TRACE", path);
        exit(fn());
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == TEST_SKIP)
        return TEST_SKIP; /* no device of the type (a GPU-less machine) */
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "the traced child failed (status 0x%x)\n", status);
    ASSERT(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ workload */

static void host_fn(void *arg)
{
    (*(int *)arg)++;
}

/* Handles of the workload, for the parent's checks (written by the child
 * into a file beside the trace). */
typedef struct {
    void *s1, *s2;
    int graphs; /* 1 when the backend captured and launched a graph */
} workload_ids;

static int workload(void)
{
    infiniDevice_t type = tc_device_type();
    CHECK(tc_needs_devices(type, 1));
    ASSERT_OK(infinirtSetDevice(type, 0));
    infinirtStream_t s1, s2;
    ASSERT_OK(infinirtStreamCreate(&s1));
    ASSERT_OK(infinirtStreamCreate(&s2));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    void *a = NULL, *b = NULL, *h = NULL;
    ASSERT_OK(infinirtMallocAsync(&a, N_BYTES, s1));
    ASSERT_OK(infinirtMallocAsync(&b, N_BYTES, s2));
    ASSERT_OK(infinirtMallocHost(&h, N_BYTES));
    /* s1 fills a; s2 waits for it (an event between the streams), copies
     * it to b and back to the host, then runs a host function. */
    ASSERT_OK(infinirtMemsetAsync(a, 0x5a, N_BYTES, s1));
    ASSERT_OK(infinirtEventRecord(e, s1));
    ASSERT_OK(infinirtStreamWaitEvent(s2, e));
    ASSERT_OK(infinirtMemcpyAsync(b, a, N_BYTES, INFINIRT_MEMCPY_D2D, s2));
    ASSERT_OK(infinirtMemcpyAsync(h, b, N_BYTES, INFINIRT_MEMCPY_D2H, s2));
    int calls = 0;
    ASSERT_OK(infinirtLaunchHostFunc(s2, host_fn, &calls));
    ASSERT_OK(infinirtStreamSynchronize(s2));
    ASSERT_EQ(calls, 1);
    ASSERT_EQ(((unsigned char *)h)[N_BYTES - 1], 0x5a);
    /* A graph: captured on s1, launched twice. */
    workload_ids ids = {s1, s2, 0};
    infiniStatus_t st = infinirtStreamBeginCapture(s1, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL);
    if (st == INFINI_STATUS_SUCCESS) {
        infinirtGraph_t g;
        infinirtGraphExec_t x;
        ASSERT_OK(infinirtMemsetAsync(a, 0x11, N_BYTES, s1));
        ASSERT_OK(infinirtMemcpyAsync(b, a, N_BYTES, INFINIRT_MEMCPY_D2D, s1));
        ASSERT_OK(infinirtStreamEndCapture(s1, &g));
        ASSERT_OK(infinirtGraphInstantiate(&x, g, NULL, NULL, 0));
        ASSERT_OK(infinirtGraphLaunch(x, s1));
        ASSERT_OK(infinirtGraphLaunch(x, s1));
        ASSERT_OK(infinirtStreamSynchronize(s1));
        ASSERT_OK(infinirtGraphExecDestroy(x));
        ASSERT_OK(infinirtGraphDestroy(g));
        ids.graphs = 1;
    } else {
        ASSERT_STATUS(st, INFINI_STATUS_NOT_IMPLEMENTED);
    }
    ASSERT_OK(infinirtFreeAsync(a, s1));
    ASSERT_OK(infinirtFreeAsync(b, s2));
    ASSERT_OK(infinirtStreamSynchronize(s1));
    ASSERT_OK(infinirtStreamSynchronize(s2));
    ASSERT_OK(infinirtFreeHost(h));
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s1));
    ASSERT_OK(infinirtStreamDestroy(s2));
    FILE *f = fopen(trace_path("ids"), "w");
    ASSERT_PTR_NE(f, NULL);
    fprintf(f, "%p %p %d\n", ids.s1, ids.s2, ids.graphs);
    fclose(f);
    return 0;
}

/* The track (tid) named "stream ... HEX" for handle h; -1 when none, -2
 * when more than one. */
static double stream_track(const void *h)
{
    char want[64];
    snprintf(want, sizeof want, " %p", h);
    double tid = -1;
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *e = ev(i);
        const jv *args = jget(e, "args");
        const char *name = jstr(args, "name");
        if (!is(jstr(e, "ph"), "M") || !is(jstr(e, "name"), "thread_name") || name == NULL ||
            strncmp(name, "stream ", 7) != 0)
            continue;
        size_t l = strlen(name), wl = strlen(want);
        if (l >= wl && strcmp(name + l - wl, want) == 0)
            tid = tid == -1 ? num(e, "tid") : -2;
    }
    return tid;
}

/* Whether stream work `name` is on track tid. */
static bool work_on(double tid, const char *name)
{
    for (size_t i = 0; i < g_events->n; i++)
        if (is(jstr(ev(i), "cat"), "stream") && is(jstr(ev(i), "name"), name) && num(ev(i), "tid") == tid)
            return true;
    return false;
}

/* The work of one stream runs in the order it was queued: taken in the
 * order of their flow ids (handed out as it is queued), no span starts
 * before the one before it ended (0.5 us of rounding).  Spans that end
 * "seen complete" (a plugin that does not report) are nested by design
 * and left out. */
static int in_queue_order(double tid)
{
    typedef struct {
        double id, ts, end;
    } span;
    span v[64];
    size_t n = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *e = ev(i);
        if (!is(jstr(e, "cat"), "stream") || num(e, "tid") != tid || jstr(jget(e, "args"), "end") != NULL)
            continue;
        double id = -1;
        for (size_t j = 0; j < g_events->n; j++)
            if (is(jstr(ev(j), "ph"), "f") && num(ev(j), "tid") == tid && num(ev(j), "ts") == num(e, "ts"))
                id = num(ev(j), "id");
        ASSERT_GE(id, 0);
        ASSERT_LT(n, sizeof v / sizeof v[0]);
        v[n++] = (span){id, num(e, "ts"), num(e, "ts") + num(e, "dur")};
    }
    for (size_t i = 1; i < n; i++) /* insertion sort by id */
        for (size_t j = i; j > 0 && v[j].id < v[j - 1].id; j--) {
            span t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    for (size_t i = 1; i < n; i++) {
        if (v[i].ts < v[i - 1].end - 0.5)
            fprintf(stderr, "stream track %.0f: work %.0f starts %.3f us before work %.0f, queued earlier, ends\n",
                    tid, v[i].id, v[i - 1].end - v[i].ts, v[i - 1].id);
        ASSERT(v[i].ts >= v[i - 1].end - 0.5);
    }
    return TEST_OK;
}

/* Run the workload traced into `path`, load its trace, and read the
 * handles it wrote beside it. */
static int run_workload(const char *path, void **s1, void **s2, int *graphs)
{
    CHECK(run_child(workload, path));
    CHECK(load_trace(path));
    FILE *f = fopen(trace_path("ids"), "r");
    ASSERT_PTR_NE(f, NULL);
    ASSERT_EQ(fscanf(f, "%p %p %d", s1, s2, graphs), 3);
    fclose(f);
    return TEST_OK;
}

int test_workload(void)
{
    void *s1, *s2;
    int graphs;
    CHECK(run_workload(trace_path("workload.json"), &s1, &s2, &graphs));

    /* Call spans: every call of the workload, with a duration and its
     * status; each on a thread named by a metadata event. */
    static const char *const calls[] = {
        "infinirtSetDevice",      "infinirtStreamCreate",       "infinirtEventCreate",
        "infinirtMallocAsync",    "infinirtMallocHost",         "infinirtMemsetAsync",
        "infinirtEventRecord",    "infinirtStreamWaitEvent",    "infinirtMemcpyAsync",
        "infinirtLaunchHostFunc", "infinirtStreamSynchronize",  "infinirtFreeAsync",
        "infinirtFreeHost",       "infinirtDeviceSynchronize",  "infinirtEventDestroy",
        "infinirtStreamDestroy",  "infinirtStreamBeginCapture",
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        if (count_where("X", "call", calls[i]) == 0)
            fprintf(stderr, "no call span for %s\n", calls[i]);
        ASSERT_GT(count_where("X", "call", calls[i]), 0);
    }
    size_t spans = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *e = ev(i);
        if (!is(jstr(e, "ph"), "X") || !is(jstr(e, "cat"), "call"))
            continue;
        spans++;
        ASSERT_GE(num(e, "ts"), 0);
        ASSERT_GE(num(e, "dur"), 0);
        ASSERT_PTR_NE(jstr(jget(e, "args"), "status"), NULL);
        if (is(jstr(e, "name"), "infinirtMemsetAsync"))
            ASSERT_STR_EQ(jstr(jget(e, "args"), "status"), "SUCCESS");
    }
    ASSERT_GT(spans, 20);
    ASSERT_GT(count_where("M", NULL, "thread_name"), 2);

    /* One track per stream, named with its device and handle, carrying
     * that stream's work. */
    double t1 = stream_track(s1), t2 = stream_track(s2);
    ASSERT_GE(t1, 0);
    ASSERT_GE(t2, 0);
    ASSERT_NE(t1, t2);
    ASSERT(work_on(t1, "fill"));
    ASSERT(work_on(t1, "event record"));
    ASSERT(work_on(t2, "event wait"));
    ASSERT(work_on(t2, "copy D2D"));
    ASSERT(work_on(t2, "copy D2H"));
    ASSERT(work_on(t2, "host function"));
    if (graphs && tc_device_type() != INFINI_DEVICE_OPENCL)
        ASSERT(work_on(t1, "graph launch"));
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *e = ev(i);
        if (is(jstr(e, "cat"), "stream")) {
            ASSERT_STR_EQ(jstr(e, "ph"), "X");
            ASSERT_GE(num(e, "dur"), 0);
            ASSERT_GE(num(jget(e, "args"), "bytes"), 0);
        }
    }

    /* Flows: every start ("s", inside a call span of its thread) has one
     * end ("f") with its id, on a stream's track, at a span there. */
    size_t flows = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *s = ev(i);
        if (!is(jstr(s, "ph"), "s"))
            continue;
        flows++;
        double id = num(s, "id"), ts = num(s, "ts"), tid = num(s, "tid");
        size_t ends = 0, starts = 0;
        bool in_call = false;
        for (size_t j = 0; j < g_events->n; j++) {
            const jv *o = ev(j);
            if (is(jstr(o, "ph"), "f") && num(o, "id") == id) {
                ends++;
                ASSERT_STR_EQ(jstr(o, "bp"), "e");
                ASSERT(num(o, "tid") == t1 || num(o, "tid") == t2 || num(o, "tid") >= 1000000);
            }
            if (is(jstr(o, "ph"), "s") && num(o, "id") == id)
                starts++;
            if (is(jstr(o, "cat"), "call") && num(o, "tid") == tid && num(o, "ts") <= ts &&
                ts <= num(o, "ts") + num(o, "dur") + 0.001)
                in_call = true;
        }
        if (ends != 1 || !in_call)
            fprintf(stderr, "flow %.0f: %zu ends, %s a call span\n", id, ends, in_call ? "in" : "not in");
        ASSERT_EQ(ends, 1);
        ASSERT_EQ(starts, 1);
        ASSERT(in_call);
    }
    ASSERT_GE(flows, 7);
    ASSERT_EQ(count_where("f", "flow", NULL), flows);
    CHECK(in_queue_order(t1));
    CHECK(in_queue_order(t2));

    /* The allocator: a malloc and a free for each block, and counters
     * per device that come back to 0 allocated after the frees. */
    ASSERT_GE(count_where("i", "alloc", "malloc"), 3);
    ASSERT_EQ(count_where("i", "alloc", "free"), count_where("i", "alloc", "malloc"));
    ASSERT_GE(count_where("i", "alloc", "segment reserve"), 1);
    char dev[64];
    snprintf(dev, sizeof dev, "memory %s:0", infinirtGetDeviceTypeName(tc_device_type()));
    /* The latest by time (threads' rings reach the file in turn). */
    double last = -1, last_ts = -1, peak = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *e = ev(i);
        if (!is(jstr(e, "ph"), "C") || !is(jstr(e, "name"), dev))
            continue;
        const jv *args = jget(e, "args");
        double allocated = num(args, "allocated");
        ASSERT_GE(allocated, 0);
        ASSERT_GE(num(args, "reserved"), allocated);
        peak = allocated > peak ? allocated : peak;
        if (num(e, "ts") > last_ts) {
            last = allocated;
            last_ts = num(e, "ts");
        }
    }
    if (last != 0)
        fprintf(stderr, "counter \"%s\": last allocated %.0f, peak %.0f\n", dev, last, peak);
    ASSERT_GE(peak, 2 * N_BYTES);
    ASSERT_EQ(last, 0);

    /* The plugin's start-up. */
    size_t startups = 0;
    for (size_t i = 0; i < g_events->n; i++)
        if (is(jstr(ev(i), "cat"), "startup") && strncmp(jstr(ev(i), "name"), "start plugin ", 13) == 0) {
            startups++;
            ASSERT_GE(num(ev(i), "dur"), 0);
        }
    ASSERT_GE(startups, 1);
    ASSERT_EQ(num(jget(&g_doc, "otherData"), "dropped_events"), 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ summary */

/* infinirt-trace's summary of the workload's trace, read into lines. */
typedef struct {
    char text[1 << 16];
    char *line[512];
    size_t n;
} tool_out;

static int run_tool(const char *trace, tool_out *o, int *rc)
{
    char err[1100], cmd[4096];
    snprintf(err, sizeof err, "%s/tool.err", tc_temp_dir());
    snprintf(cmd, sizeof cmd, "'%s' '%s' 2>'%s'", TRACE_TOOL, trace, err);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    ASSERT_PTR_NE(p, NULL);
    size_t n = fread(o->text, 1, sizeof o->text - 1, p);
    o->text[n] = '\0';
    int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    const char *e = tc_read_file(err);
    if (e != NULL && e[0] != '\0')
        fprintf(stderr, "infinirt-trace said on stderr: %s\n", e);
    ASSERT(e == NULL || e[0] == '\0');
    o->n = 0;
    for (char *l = o->text; *l != '\0' && o->n < sizeof o->line / sizeof o->line[0];) {
        o->line[o->n++] = l;
        char *nl = strchr(l, '\n');
        if (nl == NULL)
            break;
        *nl = '\0';
        l = nl + 1;
    }
    return TEST_OK;
}

/* The index of the line that starts (after spaces) with `head`, or -1. */
static long find_line(const tool_out *o, const char *head)
{
    for (size_t i = 0; i < o->n; i++) {
        const char *l = o->line[i];
        while (*l == ' ')
            l++;
        if (strncmp(l, head, strlen(head)) == 0)
            return (long)i;
    }
    return -1;
}

/* The summary's call row for `name`: its count and total (us); false when
 * there is none.  Rows: Time % Total Count Mean P50 P99 Max Name. */
static bool call_row(const tool_out *o, const char *name, unsigned long *count, double *total)
{
    long from = find_line(o, "Calls ");
    for (size_t i = from < 0 ? o->n : (size_t)from + 2; i < o->n && o->line[i][0] != '\0'; i++) {
        double pct, mean, p50, p99, max;
        char nm[128];
        if (sscanf(o->line[i], "%lf %lf %lu %lf %lf %lf %lf %127s", &pct, total, count, &mean, &p50, &p99, &max,
                   nm) == 8 &&
            strcmp(nm, name) == 0)
            return true;
    }
    return false;
}

/* The lines of a table: from the column heads (the line after the one
 * that begins with `head`) to the first empty line. */
static size_t table_rows(const tool_out *o, const char *head, size_t *first)
{
    long h = find_line(o, head);
    *first = h < 0 ? o->n : (size_t)h + 1;
    size_t n = 0;
    while (*first + n < o->n && o->line[*first + n][0] != '\0')
        n++;
    return n;
}

/* The sum of the durations (us) of the call spans named `name`. */
static double call_total(const char *name)
{
    double t = 0;
    for (size_t i = 0; i < g_events->n; i++)
        if (is(jstr(ev(i), "ph"), "X") && is(jstr(ev(i), "cat"), "call") && is(jstr(ev(i), "name"), name))
            t += num(ev(i), "dur");
    return t;
}

static size_t work_count(double tid)
{
    size_t n = 0;
    for (size_t i = 0; i < g_events->n; i++)
        if (is(jstr(ev(i), "cat"), "stream") && num(ev(i), "tid") == tid)
            n++;
    return n;
}

static int summary_matches(tool_out *o, void *s1, void *s2, int graphs)
{
    /* The header and the count of each kind of event. */
    long h = find_line(o, "infinirt trace ");
    ASSERT_GE(h, 0);
    char want[256];
    snprintf(want, sizeof want, ", %zu events over ", g_events->n);
    ASSERT_STR_CONTAINS(o->line[h], want);
    long e = find_line(o, "Events: ");
    ASSERT_GE(e, 0);
    size_t calls = count_where("X", "call", NULL), work = count_where("X", "stream", NULL);
    size_t flows = count_where("s", NULL, NULL) + count_where("f", NULL, NULL);
    size_t allocs = count_where("i", "alloc", NULL), counters = count_where("C", NULL, NULL);
    size_t startups = count_where("X", "startup", NULL), meta = count_where("M", NULL, NULL);
    snprintf(want, sizeof want,
             "Events: %zu calls, %zu stream ops, %zu flow events, %zu allocator events, %zu memory counters, "
             "%zu start-up spans, 0 trace notes, %zu metadata; 0 ignored (0 of unknown kinds, 0 incomplete)",
             calls, work, flows, allocs, counters, startups, meta);
    ASSERT_STR_EQ(o->line[e], want);

    /* A row per call name, with the trace's count and total time; the
     * calls the workload makes a known number of times. */
    size_t first, rows = table_rows(o, "Calls ", &first), names = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        const char *n = jstr(ev(i), "name");
        if (!is(jstr(ev(i), "cat"), "call"))
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = is(jstr(ev(j), "cat"), "call") && is(jstr(ev(j), "name"), n);
        if (seen)
            continue;
        names++;
        unsigned long count = 0;
        double total = -1;
        if (!call_row(o, n, &count, &total))
            fprintf(stderr, "no row for %s\n", n);
        ASSERT(call_row(o, n, &count, &total));
        ASSERT_EQ(count, count_where("X", "call", n));
        double t = call_total(n);
        if (total < t - 0.0015 * (double)count || total > t + 0.0015 * (double)count)
            fprintf(stderr, "%s: total %.3f us in the summary, %.3f in the trace\n", n, total, t);
        ASSERT(total >= t - 0.0015 * (double)count && total <= t + 0.0015 * (double)count);
    }
    ASSERT_EQ(rows - 1, names); /* the column heads, then one row a name */
    static const struct {
        const char *name;
        unsigned long count, per_graph;
    } known[] = {
        {"infinirtStreamCreate", 2, 0},   {"infinirtMallocAsync", 2, 0},        {"infinirtEventRecord", 1, 0},
        {"infinirtMemsetAsync", 1, 1},    {"infinirtMemcpyAsync", 2, 1},        {"infinirtStreamSynchronize", 3, 1},
        {"infinirtGraphLaunch", 0, 2},    {"infinirtFreeAsync", 2, 0},          {"infinirtStreamDestroy", 2, 0},
        {"infinirtLaunchHostFunc", 1, 0}, {"infinirtStreamBeginCapture", 1, 0},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        unsigned long want_n = known[i].count + (unsigned long)graphs * known[i].per_graph, count = 0;
        double total;
        if (want_n == 0)
            continue;
        ASSERT(call_row(o, known[i].name, &count, &total));
        if (count != want_n)
            fprintf(stderr, "%s: %lu calls in the summary, the workload makes %lu\n", known[i].name, count, want_n);
        ASSERT_EQ(count, want_n);
    }

    /* One row per stream, each with its track's ops. */
    size_t stream_rows = table_rows(o, "Streams ", &first) - 1, matched = 0;
    void *handles[2] = {s1, s2};
    for (int k = 0; k < 2; k++) {
        char tail[64];
        snprintf(tail, sizeof tail, " %p", handles[k]);
        double tid = stream_track(handles[k]);
        ASSERT_GE(tid, 0);
        size_t found = 0;
        for (size_t i = first + 1; i < first + 1 + stream_rows; i++) {
            const char *l = o->line[i];
            size_t ll = strlen(l), tl = strlen(tail);
            if (ll < tl || strcmp(l + ll - tl, tail) != 0)
                continue;
            found++;
            double busy, pct, idle, longest;
            unsigned long ops, gaps;
            ASSERT_EQ(sscanf(l, "%lf %lf %lu %lu %lf %lf", &busy, &pct, &ops, &gaps, &idle, &longest), 6);
            ASSERT_EQ(ops, work_count(tid));
            ASSERT_GT(busy, 0);
            ASSERT_LE(gaps, ops);
        }
        if (found != 1)
            fprintf(stderr, "%zu rows for the stream%s\n", found, tail);
        ASSERT_EQ(found, 1);
        matched++;
    }
    ASSERT_GE(work_count(stream_track(s2)), 4); /* event wait, two copies, the host function */
    ASSERT_EQ(stream_rows, matched);

    /* The device's memory: the peak of its counter, back to 0 at the end,
     * a malloc and a free for each of its blocks. */
    char dev[64], counter[80];
    snprintf(dev, sizeof dev, "%s:0", infinirtGetDeviceTypeName(tc_device_type()));
    snprintf(counter, sizeof counter, "memory %s", dev);
    double peak = 0;
    size_t mallocs = 0, frees = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *x = ev(i);
        if (is(jstr(x, "ph"), "C") && is(jstr(x, "name"), counter) && num(jget(x, "args"), "allocated") > peak)
            peak = num(jget(x, "args"), "allocated");
        if (is(jstr(x, "cat"), "alloc") && is(jstr(jget(x, "args"), "device"), dev)) {
            mallocs += is(jstr(x, "name"), "malloc");
            frees += is(jstr(x, "name"), "free");
        }
    }
    ASSERT_GE(peak, 2 * N_BYTES);
    size_t mem_rows = table_rows(o, "Memory ", &first), dev_rows = 0;
    for (size_t i = first + 1; i < first + mem_rows; i++) {
        const char *l = o->line[i];
        double pa, pr, ea, er;
        unsigned long m, fr;
        if (strncmp(l, dev, strlen(dev)) != 0 || l[strlen(dev)] != ' ') /* "cpu host": the host's pool */
            continue;
        ASSERT_EQ(sscanf(l + strlen(dev), "%lf %lf %lf %lf %lu %lu", &pa, &pr, &ea, &er, &m, &fr), 6);
        dev_rows++;
        if (pa != peak)
            fprintf(stderr, "%s: peak allocated %.0f in the summary, %.0f in the trace\n", dev, pa, peak);
        ASSERT(pa == peak);
        ASSERT_GE(pr, pa);
        ASSERT(ea == 0);
        ASSERT_EQ(m, mallocs);
        ASSERT_EQ(fr, frees);
        ASSERT_GE(m, 2);
    }
    ASSERT_EQ(dev_rows, 1);
    return TEST_OK;
}

/* infinirt-trace on the trace of the workload above (the same program,
 * on this backend): every figure checked against the file it summarises,
 * and the calls the workload makes a known number of times. */
int test_summary(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", trace_path("workload.json"));
    void *s1, *s2;
    int graphs;
    CHECK(run_workload(path, &s1, &s2, &graphs));
    static tool_out o;
    int rc = -1;
    CHECK(run_tool(path, &o, &rc));
    if (rc != 0)
        fprintf(stderr, "infinirt-trace exited %d; its output:\n%s\n", rc, o.text);
    ASSERT_EQ(rc, 0);
    int r = summary_matches(&o, s1, s2, graphs);
    if (r != TEST_OK)
        fprintf(stderr, "--- the summary:\n%s---\n", o.text);
    return r;
}

/* ------------------------------------------------------- null_threads */

/* Threads allocating small blocks on the NULL stream at once, each from an
 * arena of its own (docs/allocator.md, "Thread arenas"): NT threads take
 * NB blocks each; once all have (a barrier), the parent thread takes one
 * more, so that its counter holds every block; then each thread frees
 * half of its own and half of its neighbour's (another thread's arena)
 * and exits with NB / 4 blocks of its own still live, which its exit
 * gives to the shared arena; the parent frees those last. */
#define NT 4
#define NB 16
#define NBYTES 64

typedef struct {
    int k;
    void *blk[NB];
    pthread_barrier_t *bar;
    int ok;
} null_thread_arg;

static null_thread_arg g_nt[NT];

static void *null_thread(void *arg)
{
    null_thread_arg *t = arg;
    t->ok = infinirtSetDevice(tc_device_type(), 0) == INFINI_STATUS_SUCCESS;
    for (int i = 0; i < NB; i++)
        t->ok &= infinirtMallocAsync(&t->blk[i], NBYTES, NULL) == INFINI_STATUS_SUCCESS;
    pthread_barrier_wait(t->bar); /* all allocated */
    pthread_barrier_wait(t->bar); /* the parent's one more too */
    /* Own blocks 0..NB/2-1, then the neighbour's NB/2..3NB/4-1; NB/4 of
     * its own (3NB/4..NB-1) stay live past its exit. */
    for (int i = 0; i < NB / 2; i++)
        t->ok &= infinirtFreeAsync(t->blk[i], NULL) == INFINI_STATUS_SUCCESS;
    int n = (t->k + 1) % NT;
    for (int i = NB / 2; i < 3 * NB / 4; i++)
        t->ok &= infinirtFreeAsync(g_nt[n].blk[i], NULL) == INFINI_STATUS_SUCCESS;
    return NULL;
}

static int null_threads(void)
{
    CHECK(tc_needs_devices(tc_device_type(), 1));
    ASSERT_OK(infinirtSetDevice(tc_device_type(), 0));
    pthread_barrier_t bar;
    ASSERT_EQ(pthread_barrier_init(&bar, NULL, NT + 1), 0);
    pthread_t th[NT];
    for (int k = 0; k < NT; k++) {
        g_nt[k].k = k;
        g_nt[k].bar = &bar;
        ASSERT_EQ(pthread_create(&th[k], NULL, null_thread, &g_nt[k]), 0);
    }
    pthread_barrier_wait(&bar);
    void *mine = NULL;
    ASSERT_OK(infinirtMallocAsync(&mine, NBYTES, NULL));
    pthread_barrier_wait(&bar);
    for (int k = 0; k < NT; k++) {
        ASSERT_EQ(pthread_join(th[k], NULL), 0);
        ASSERT(g_nt[k].ok);
    }
    pthread_barrier_destroy(&bar);
    /* The threads have exited: their live blocks are in the shared arena. */
    for (int k = 0; k < NT; k++)
        for (int i = 3 * NB / 4; i < NB; i++)
            ASSERT_OK(infinirtFreeAsync(g_nt[k].blk[i], NULL));
    ASSERT_OK(infinirtFreeAsync(mine, NULL));
    ASSERT_OK(infinirtDeviceSynchronize());
    return 0;
}

int test_null_threads(void)
{
    const char *path = trace_path("null_threads.json");
    CHECK(run_child(null_threads, path));
    CHECK(load_trace(path));
    /* A malloc and a free event for every block, whichever thread freed it. */
    ASSERT_GE(count_where("i", "alloc", "malloc"), NT * NB + 1);
    ASSERT_EQ(count_where("i", "alloc", "free"), count_where("i", "alloc", "malloc"));
    /* The device's counter: the parent's one more block found every
     * thread's blocks live (peak), and every free came back to 0. */
    char dev[64];
    snprintf(dev, sizeof dev, "memory %s:0", infinirtGetDeviceTypeName(tc_device_type()));
    double last = -1, peak = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *e = ev(i);
        if (!is(jstr(e, "ph"), "C") || !is(jstr(e, "name"), dev))
            continue;
        const jv *args = jget(e, "args");
        last = num(args, "allocated");
        ASSERT_GE(last, 0);
        ASSERT_GE(num(args, "reserved"), last);
        peak = last > peak ? last : peak;
    }
    if (last != 0 || peak < (NT * NB + 1) * NBYTES)
        fprintf(stderr, "counter \"%s\": last allocated %.0f, peak %.0f\n", dev, last, peak);
    ASSERT_GE(peak, (NT * NB + 1) * NBYTES);
    ASSERT_EQ(last, 0);
    ASSERT_EQ(num(jget(&g_doc, "otherData"), "dropped_events"), 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ coverage */

static void noop(void *arg)
{
    (void)arg;
}

/* Every public function once (the status does not matter here). */
static int every_call(void)
{
    infiniDevice_t type = tc_device_type();
    int counts[INFINI_DEVICE_TYPE_COUNT], n = 0, id = 0;
    infiniDevice_t types[32], dt;
    size_t fb, tb;
    void *p = NULL, *q = NULL, *nat = NULL, *nat2 = NULL;
    size_t off;
    infinirtStream_t s = NULL, s2 = NULL;
    infinirtEvent_t e = NULL, e2 = NULL;
    infinirtEventStatus_t es;
    float ms;
    infinirtDeviceResourceSnapshot_t snap;
    infinirtDeviceProperties_t props;
    infinirtPluginInfo_t pinfo;
    infinirtConfigEntry_t centry;
    infinirtAllocatorStats_t stats;
    infinirtAllocatorSettings_t settings;
    const char *path;
    int a, b, c;
    infinirtInit();
    infinirtGetAllDeviceCount(counts);
    infinirtGetDeviceTypes(types, 32, &n);
    infinirtGetDeviceCount(type, &n);
    infinirtSetDevice(type, 0);
    infinirtGetDevice(&dt, &id);
    infinirtGetMemInfo(type, 0, &fb, &tb);
    infinirtGetDeviceResourceSnapshot(type, 0, &snap);
    infinirtDeviceSynchronize();
    infinirtDeviceGetNativeHandle(type, 0, &nat, &nat2);
    infinirtStreamCreate(&s);
    infinirtStreamCreateWithFlags(&s2, 0);
    infinirtStreamGetNativeHandle(s, &nat);
    infinirtStreamCreateFromNative(&s2, nat); /* refused: already a stream */
    infinirtEventCreate(&e);
    infinirtEventCreateWithFlags(&e2, 0);
    infinirtEventRecord(e, s);
    infinirtEventRecord(e2, s);
    infinirtStreamWaitEvent(s, e);
    infinirtLaunchHostFunc(s, noop, NULL);
    infinirtEventQuery(e, &es);
    infinirtEventSynchronize(e2);
    infinirtEventElapsedTime(&ms, e, e2);
    infinirtEventGetNativeHandle(e, &nat);
    infinirtMalloc(&p, 256);
    infinirtMallocHost(&q, 256);
    infinirtMemset(p, 0, 256);
    infinirtMemcpy(q, p, 256, INFINIRT_MEMCPY_D2H);
    infinirtMemcpyAsync(p, q, 256, INFINIRT_MEMCPY_H2D, s);
    infinirtMemsetAsync(p, 1, 256, s);
    infinirtMemGetNativeHandle(p, &nat, &off);
    void *pa = NULL;
    infinirtMallocAsync(&pa, 256, s);
    infinirtFreeAsync(pa, s);
    infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL);
    infinirtGraph_t g = NULL;
    infinirtGraphExec_t x = NULL;
    infinirtStreamEndCapture(s, &g);
    infinirtGraphInstantiate(&x, g, NULL, NULL, 0);
    infinirtGraphLaunch(x, s);
    infinirtGraphLuanch(x, s);
    infinirtStreamSynchronize(s);
    infinirtGraphExecDestroy(x);
    infinirtGraphDestroy(g);
    infinirtFree(p);
    infinirtFreeHost(q);
    infinirtGetErrorString(INFINI_STATUS_SUCCESS);
    infinirtGetErrorName(INFINI_STATUS_SUCCESS);
    infinirtGetDeviceTypeName(type);
    infinirtGetDeviceProperties(type, 0, &props);
    infinirtGetPluginCount(&n);
    infinirtGetPluginInfo(0, &pinfo);
    infinirtPeekPluginInfo(0, &pinfo);
    infinirtGetPluginStatusString(INFINIRT_PLUGIN_LOADED);
    infinirtGetConfigPath(&path);
    infinirtGetConfigEntryCount(&n);
    infinirtGetConfigEntry(0, &centry);
    infinirtGetVersion(&a, &b, &c);
    infinirtGetAllocatorStats(type, 0, &stats);
    infinirtGetHostAllocatorStats(type, &stats);
    infinirtGetAllocatorSettings(&settings);
    infinirtResetPeakStats(type, 0);
    infinirtTrimCache(type, 0);
    infinirtTraceFlush();
    infinirtEventDestroy(e);
    infinirtEventDestroy(e2);
    infinirtStreamDestroy(s);
    infinirtStreamDestroy(s2);
    return 0;
}

/* Every function include/infinirt.h declares has a call span once a
 * workload calls it: none escapes the dispatch (loader/api_list.h). */
int test_coverage(void)
{
    const char *path = trace_path("coverage.json");
    CHECK(run_child(every_call, path));
    CHECK(load_trace(path));
    const char *header = tc_read_file(INFINIRT_INCLUDE_DIR "/infinirt.h");
    ASSERT_PTR_NE(header, NULL);
    size_t declared = 0, missing = 0;
    for (const char *l = header; l != NULL && *l != '\0'; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "INFINIRT_API ", 13) != 0)
            continue;
        const char *name = strstr(l, "infinirt");
        while (name != NULL && !(name[8] >= 'A' && name[8] <= 'Z'))
            name = strstr(name + 1, "infinirt");
        const char *paren = name != NULL ? strchr(name, '(') : NULL;
        ASSERT_PTR_NE(paren, NULL);
        char fn[128];
        snprintf(fn, sizeof fn, "%.*s", (int)(paren - name), name);
        declared++;
        if (count_where("X", "call", fn) == 0) {
            fprintf(stderr, "%s is declared in infinirt.h but has no call span in the trace\n", fn);
            missing++;
        }
    }
    ASSERT_GE(declared, 60);
    ASSERT_EQ(missing, 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ entry */

static void nested_fn(void *arg)
{
    infiniDevice_t dt;
    int id;
    (void)infinirtGetDevice(&dt, &id); /* the status does not matter here */
    (*(int *)arg)++;
}

static int entry_calls(void)
{
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    void *p = NULL;
    ASSERT_OK(infinirtMalloc(&p, 64));
    ASSERT_OK(infinirtFree(p));
    int ran = 0;
    ASSERT_OK(infinirtLaunchHostFunc(NULL, nested_fn, &ran));
    ASSERT_OK(infinirtStreamSynchronize(NULL));
    ASSERT_EQ(ran, 1);
    ASSERT_OK(infinirtEventDestroy(e));
    return 0;
}

/* A public function is its own implementation, which sends a traced call
 * through the trace once (INFINIRT__TRACE_ENTRY, loader/trace.h): each
 * call has one span, a public function the loader's code runs for another
 * (EventCreate's body) none, and a call a host function makes inside a
 * traced call its own span. */
int test_entry(void)
{
    const char *path = trace_path("entry.json");
    CHECK(run_child(entry_calls, path));
    CHECK(load_trace(path));
    ASSERT_EQ(count_where("X", "call", "infinirtSetDevice"), 1);
    ASSERT_EQ(count_where("X", "call", "infinirtEventCreate"), 1);
    ASSERT_EQ(count_where("X", "call", "infinirtEventCreateWithFlags"), 0);
    ASSERT_EQ(count_where("X", "call", "infinirtMalloc"), 1);
    ASSERT_EQ(count_where("X", "call", "infinirtFree"), 1);
    ASSERT_EQ(count_where("X", "call", "infinirtLaunchHostFunc"), 1);
    ASSERT_EQ(count_where("X", "call", "infinirtGetDevice"), 1);
    ASSERT_EQ(count_where("X", "call", "infinirtEventDestroy"), 1);
    return TEST_OK;
}

/* ------------------------------------------------------------ work */

static void noop_fn(void *arg)
{
    (*(int *)arg)++;
}

/* Each public call that queues work, by each of its paths: the one-pass
 * copies (a stack buffer), the full ones (pinned host memory, the NULL
 * stream), and a graph launch by both names. */
static int work_calls(void)
{
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    void *d = NULL, *h = NULL;
    ASSERT_OK(infinirtMalloc(&d, 256));
    ASSERT_OK(infinirtMallocHost(&h, 256));
    unsigned char buf[256] = {0};
    ASSERT_OK(infinirtMemcpy(d, buf, sizeof buf, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpy(d, h, 256, INFINIRT_MEMCPY_H2D));
    ASSERT_OK(infinirtMemcpyAsync(d, buf, sizeof buf, INFINIRT_MEMCPY_H2D, s));
    ASSERT_OK(infinirtMemcpyAsync(d, h, 256, INFINIRT_MEMCPY_H2D, NULL));
    ASSERT_OK(infinirtMemset(d, 1, 256));
    ASSERT_OK(infinirtMemsetAsync(d, 2, 256, s));
    ASSERT_OK(infinirtEventRecord(e, s));
    ASSERT_OK(infinirtStreamWaitEvent(NULL, e));
    int ran = 0;
    ASSERT_OK(infinirtLaunchHostFunc(s, noop_fn, &ran));
    infinirtGraph_t g;
    infinirtGraphExec_t x;
    ASSERT_OK(infinirtStreamBeginCapture(s, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
    ASSERT_OK(infinirtLaunchHostFunc(s, noop_fn, &ran));
    ASSERT_OK(infinirtStreamEndCapture(s, &g));
    ASSERT_OK(infinirtGraphInstantiate(&x, g, NULL, NULL, 0));
    ASSERT_OK(infinirtGraphLaunch(x, s));
    ASSERT_OK(infinirtGraphLuanch(x, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_EQ(ran, 3);
    ASSERT_OK(infinirtGraphExecDestroy(x));
    ASSERT_OK(infinirtGraphDestroy(g));
    ASSERT_OK(infinirtFreeHost(h));
    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(s));
    return 0;
}

/* How many spans of call `name` have exactly one flow starting inside
 * them that ends at a stream span named `work` (0: none of them). */
static size_t calls_with_work(const char *name, const char *work)
{
    size_t good = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        const jv *c = ev(i);
        if (!is(jstr(c, "ph"), "X") || !is(jstr(c, "cat"), "call") || !is(jstr(c, "name"), name))
            continue;
        double t0 = num(c, "ts"), t1 = t0 + num(c, "dur") + 0.001, tid = num(c, "tid");
        size_t flows = 0, to_work = 0;
        for (size_t j = 0; j < g_events->n; j++) {
            const jv *st = ev(j);
            if (!is(jstr(st, "ph"), "s") || num(st, "tid") != tid || num(st, "ts") < t0 || num(st, "ts") > t1)
                continue;
            flows++;
            for (size_t k = 0; k < g_events->n; k++) {
                const jv *f = ev(k);
                if (!is(jstr(f, "ph"), "f") || num(f, "id") != num(st, "id"))
                    continue;
                for (size_t m = 0; m < g_events->n; m++)
                    if (is(jstr(ev(m), "cat"), "stream") && is(jstr(ev(m), "name"), work) &&
                        num(ev(m), "tid") == num(f, "tid") && num(ev(m), "ts") == num(f, "ts"))
                        to_work++;
            }
        }
        if (flows == 1 && to_work == 1)
            good++;
        else
            fprintf(stderr, "%s at %.3f: %zu flows, %zu to \"%s\" work\n", name, t0, flows, to_work, work);
    }
    return good;
}

/* With a trace, every call that queues work, by every path, has its work
 * on the stream's track and a flow to it from its call span (the calls'
 * traced copies, INFINIRT__TRACE_ENTRY_WORK in loader/trace.h, keep the
 * plugin calls' tracing that their untraced copies leave out). */
int test_work(void)
{
    const char *path = trace_path("work.json");
    CHECK(run_child(work_calls, path));
    CHECK(load_trace(path));
    /* spans: the calls made; work: those that queue work (LaunchHostFunc
     * once more while capturing, which queues nothing). */
    static const struct {
        const char *call, *work;
        size_t spans, with_work;
    } want[] = {
        {"infinirtMemcpy", "copy H2D", 2, 2},
        {"infinirtMemcpyAsync", "copy H2D", 2, 2},
        {"infinirtMemset", "fill", 1, 1},
        {"infinirtMemsetAsync", "fill", 1, 1},
        {"infinirtEventRecord", "event record", 1, 1},
        {"infinirtStreamWaitEvent", "event wait", 1, 1},
        {"infinirtLaunchHostFunc", "host function", 2, 1},
        {"infinirtGraphLaunch", "graph launch", 1, 1},
        {"infinirtGraphLuanch", "graph launch", 1, 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        size_t spans = count_where("X", "call", want[i].call),
               with_work = calls_with_work(want[i].call, want[i].work);
        if (spans != want[i].spans || with_work != want[i].with_work)
            fprintf(stderr, "%s: %zu spans (want %zu), %zu with their work (want %zu)\n", want[i].call, spans,
                    want[i].spans, with_work, want[i].with_work);
        ASSERT_EQ(spans, want[i].spans);
        ASSERT_EQ(with_work, want[i].with_work);
    }
    return TEST_OK;
}

/* ------------------------------------------------------------ dropped */

static int many_calls(void)
{
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    void *p = NULL;
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtMalloc(&p, 64));
    /* Some 600 bytes of trace each: well past 1 MiB. */
    for (int i = 0; i < 4000; i++)
        ASSERT_OK(infinirtMemsetAsync(p, i & 0xff, 64, s));
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtFree(p));
    ASSERT_OK(infinirtStreamDestroy(s));
    return 0;
}

/* trace_max_mb bounds the file; what does not fit is counted, in
 * otherData and in an "events dropped" instant, and the file still
 * parses. */
int test_dropped(void)
{
    tc_use_config("[plugin.cpu]\nlibrary = " CPU_PLUGIN "\n[loader]\nplugins = cpu\ntrace_max_mb = 1\n");
    const char *path = trace_path("dropped.json");
    CHECK(run_child(many_calls, path));
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_LE(st.st_size, (1 << 20) + 4096);
    ASSERT_GT(st.st_size, (1 << 20) - (256 << 10));
    CHECK(load_trace(path));
    double dropped = num(jget(&g_doc, "otherData"), "dropped_events");
    ASSERT_GT(dropped, 0);
    size_t notes = 0;
    for (size_t i = 0; i < g_events->n; i++)
        if (is(jstr(ev(i), "name"), "events dropped")) {
            notes++;
            ASSERT_STR_EQ(jstr(ev(i), "ph"), "i");
            ASSERT_STR_EQ(jstr(ev(i), "s"), "g");
            ASSERT_EQ(num(jget(ev(i), "args"), "count"), dropped);
        }
    ASSERT_EQ(notes, 1);
    return TEST_OK;
}

/* ------------------------------------------------------------ threads */

#define T_THREADS 4
#define T_WAVES 2
#define T_FILLS 300 /* a thread's MemsetAsync calls; a copy each 10th, a record and a host function each 50th */

static atomic_int g_done_threads;

static void *traced_thread(void *arg)
{
    (void)arg;
    int bad = 0;
    void *p = NULL, *q = NULL;
    unsigned char host[256] = {0};
    infinirtStream_t s;
    infinirtEvent_t e;
    int ran = 0;
    bad |= infinirtSetDevice(INFINI_DEVICE_CPU, 0) != INFINI_STATUS_SUCCESS;
    bad |= infinirtStreamCreate(&s) != INFINI_STATUS_SUCCESS;
    bad |= infinirtEventCreate(&e) != INFINI_STATUS_SUCCESS;
    bad |= infinirtMalloc(&p, sizeof host) != INFINI_STATUS_SUCCESS;
    for (int i = 0; i < T_FILLS && !bad; i++) {
        bad |= infinirtMemsetAsync(p, i & 0xff, sizeof host, s) != INFINI_STATUS_SUCCESS;
        if (i % 10 == 0)
            bad |= infinirtMemcpyAsync(p, host, sizeof host, INFINIRT_MEMCPY_H2D, s) != INFINI_STATUS_SUCCESS;
        if (i % 50 == 0) {
            bad |= infinirtEventRecord(e, s) != INFINI_STATUS_SUCCESS;
            bad |= infinirtLaunchHostFunc(s, host_fn, &ran) != INFINI_STATUS_SUCCESS;
        }
    }
    bad |= infinirtMallocAsync(&q, 512, s) != INFINI_STATUS_SUCCESS;
    bad |= infinirtFreeAsync(q, s) != INFINI_STATUS_SUCCESS;
    bad |= infinirtStreamSynchronize(s) != INFINI_STATUS_SUCCESS;
    bad |= ran != T_FILLS / 50;
    bad |= infinirtFree(p) != INFINI_STATUS_SUCCESS;
    bad |= infinirtEventDestroy(e) != INFINI_STATUS_SUCCESS;
    bad |= infinirtStreamDestroy(s) != INFINI_STATUS_SUCCESS;
    atomic_fetch_add(&g_done_threads, 1);
    return bad ? (void *)1 : NULL;
}

/* Waves of threads that call, queue work on async streams (whose workers
 * report it) and exit (their rings are freed by the writer), while this
 * thread flushes the file again and again. */
static int threads_workload(void)
{
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    for (int w = 0; w < T_WAVES; w++) {
        pthread_t t[T_THREADS];
        atomic_store(&g_done_threads, 0);
        for (int i = 0; i < T_THREADS; i++)
            ASSERT_EQ(pthread_create(&t[i], NULL, traced_thread, NULL), 0);
        while (atomic_load(&g_done_threads) < T_THREADS) {
            ASSERT_OK(infinirtTraceFlush());
            usleep(500);
        }
        for (int i = 0; i < T_THREADS; i++) {
            void *r = (void *)1;
            ASSERT_EQ(pthread_join(t[i], &r), 0);
            ASSERT_PTR_EQ(r, NULL);
        }
        ASSERT_OK(infinirtTraceFlush());
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The ids of the events of phase ph, sorted; false when one repeats. */
static bool ids_of(const char *ph, double *out, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < g_events->n; i++)
        if (is(jstr(ev(i), "ph"), ph))
            out[(*n)++] = num(ev(i), "id");
    qsort(out, *n, sizeof *out, cmp_double);
    for (size_t i = 1; i < *n; i++)
        if (out[i] == out[i - 1])
            return false;
    return true;
}

/* Many threads at once, on the CPU plugin's async streams: nothing lost
 * or torn (the file parses, no event dropped), every piece of work once
 * with its flow, a call track per thread, the counters back to 0.  Under
 * ThreadSanitizer (./dev test's TSan stage runs the "threads" label) this
 * is the writer, the rings and the workers' reports at work together. */
int test_threads(void)
{
    tc_use_config("[plugin.cpu]\nlibrary = " CPU_PLUGIN "\ndevices = 1\nstreams = async\n");
    const char *path = trace_path("threads.json");
    CHECK(run_child(threads_workload, path));
    CHECK(load_trace(path));
    ASSERT_EQ(num(jget(&g_doc, "otherData"), "dropped_events"), 0);
    const size_t threads = T_THREADS * T_WAVES;
    ASSERT_EQ(count_where("X", "stream", "fill"), threads * T_FILLS);
    ASSERT_EQ(count_where("X", "stream", "copy H2D"), threads * (T_FILLS / 10));
    ASSERT_EQ(count_where("X", "stream", "event record"), threads * (T_FILLS / 50));
    ASSERT_EQ(count_where("X", "stream", "host function"), threads * (T_FILLS / 50));
    ASSERT_EQ(count_where("X", "call", "infinirtMemsetAsync"), threads * T_FILLS);
    /* A flow per piece of work: as many starts as ends as spans, no id twice,
     * the same ids at both ends. */
    size_t work = count_where("X", "stream", NULL), ns = 0, nf = 0;
    double *s_ids = calloc(g_events->n + 1, sizeof *s_ids), *f_ids = calloc(g_events->n + 1, sizeof *f_ids);
    ASSERT(s_ids != NULL && f_ids != NULL);
    bool unique = ids_of("s", s_ids, &ns) && ids_of("f", f_ids, &nf);
    bool same = ns == nf && memcmp(s_ids, f_ids, ns * sizeof *s_ids) == 0;
    free(s_ids);
    free(f_ids);
    ASSERT(unique);
    ASSERT_EQ(ns, work);
    ASSERT(same);
    /* A call track per thread: the tids of the MemsetAsync spans, distinct
     * (all threads ran their fills at once in each wave). */
    double tids[T_THREADS * T_WAVES];
    size_t nt = 0;
    for (size_t i = 0; i < g_events->n; i++) {
        if (!is(jstr(ev(i), "name"), "infinirtMemsetAsync"))
            continue;
        double tid = num(ev(i), "tid");
        bool seen = false;
        for (size_t j = 0; j < nt; j++)
            seen |= tids[j] == tid;
        if (!seen) {
            ASSERT_LT(nt, threads);
            tids[nt++] = tid;
        }
    }
    ASSERT_GE(nt, T_THREADS);
    /* The rings reach the file in turn: the latest counter is the one of
     * the latest time, not the last in the file. */
    double last = -1, last_ts = -1;
    for (size_t i = 0; i < g_events->n; i++)
        if (is(jstr(ev(i), "ph"), "C") && is(jstr(ev(i), "name"), "memory cpu:0") && num(ev(i), "ts") > last_ts) {
            last = num(jget(ev(i), "args"), "allocated");
            last_ts = num(ev(i), "ts");
        }
    ASSERT_EQ(last, 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ config */

static int few_calls(void)
{
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &n));
    return 0;
}

/* INFINIRT_TRACE over [loader] trace: the variable's file is written, the
 * file's is not, and the config report says so. */
static int few_calls_report(void)
{
    CHECK(few_calls());
    int n = 0;
    ASSERT_OK(infinirtGetConfigEntryCount(&n));
    bool said = false;
    for (int i = 0; i < n; i++) {
        infinirtConfigEntry_t e;
        ASSERT_OK(infinirtGetConfigEntry(i, &e));
        if (strcmp(e.name, "INFINIRT_TRACE") == 0) {
            ASSERT_STR_CONTAINS(e.message, "overrides [loader] trace");
            said = true;
        }
    }
    ASSERT(said);
    return 0;
}

int test_env_wins(void)
{
    char from_file[1024];
    snprintf(from_file, sizeof from_file, "%s", trace_path("from-file.json"));
    char text[2048];
    snprintf(text, sizeof text, "[plugin.cpu]\nlibrary = %s\n[loader]\nplugins = cpu\ntrace = %s\n", CPU_PLUGIN,
             from_file);
    tc_use_config(text);
    unlink(from_file);
    CHECK(run_child(few_calls_report, trace_path("from-env-%p.json")));
    ASSERT_NE(access(from_file, F_OK), 0);
    /* %p is the child's process id: find the file it became. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^from-env-[0-9]*\\.json$'", tc_temp_dir());
    FILE *f = popen(cmd, "r");
    int found = 0;
    ASSERT_EQ(fscanf(f, "%d", &found), 1);
    pclose(f);
    ASSERT_EQ(found, 1);
    /* And the key alone is obeyed. */
    CHECK(run_child(few_calls, NULL));
    CHECK(load_trace(from_file));
    ASSERT_GT(count_where("X", "call", "infinirtGetDeviceCount"), 0);
    return TEST_OK;
}

static int off_calls(void)
{
    CHECK(few_calls());
    ASSERT_OK(infinirtTraceFlush()); /* nothing to do */
    return 0;
}

static int flush_calls_ok(void)
{
    CHECK(off_calls());
    void *p = NULL;
    ASSERT_OK(infinirtMalloc(&p, 64));
    ASSERT_OK(infinirtFree(p));
    return 0;
}

/* No trace configured: no file, and infinirtTraceFlush succeeds. */
int test_off(void)
{
    unsetenv("INFINIRT_TRACE");
    const char *dir = tc_temp_dir();
    CHECK(run_child(off_calls, NULL));
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c json", dir);
    FILE *f = popen(cmd, "r");
    int found = -1;
    ASSERT_EQ(fscanf(f, "%d", &found), 1);
    pclose(f);
    ASSERT_EQ(found, 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ flush */

static int flush_then_check(void)
{
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_CPU, 0));
    void *p = NULL;
    ASSERT_OK(infinirtMalloc(&p, 128));
    ASSERT_OK(infinirtTraceFlush());
    /* The file is complete JSON now, with the calls so far, while the
     * process still runs. */
    CHECK(load_trace(trace_path("flush.json")));
    ASSERT_GT(count_where("X", "call", "infinirtMalloc"), 0);
    ASSERT_EQ(count_where("X", "call", "infinirtFree"), 0);
    ASSERT_OK(infinirtFree(p));
    return 0;
}

int test_flush(void)
{
    CHECK(run_child(flush_then_check, trace_path("flush.json")));
    CHECK(load_trace(trace_path("flush.json")));
    ASSERT_GT(count_where("X", "call", "infinirtFree"), 0);
    return TEST_OK;
}

/* ------------------------------------------------------------ bad file */

/* A trace that cannot be written (a folder, a FIFO: rewriting in place
 * needs a regular file) is a warning, and the program runs on. */
int test_bad_file(void)
{
    CHECK(run_child(flush_calls_ok, tc_temp_dir()));
    char fifo[1024];
    snprintf(fifo, sizeof fifo, "%s/fifo", tc_temp_dir());
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    CHECK(run_child(flush_calls_ok, fifo)); /* would block in open() without a reader */
    return TEST_OK;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    static const test_case tests[] = {TRACE_BACKEND_LIST(TEST_ENTRY) TRACE_LOADER_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    return test_main(argc, argv, &suite);
}
