/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_api.c - the traced calls.  For each public function of api_list.h
 * that returns a status, infinirt__traced_NAME, where the function's own
 * first statement sends a call while a trace is written
 * (INFINIRT__TRACE_ENTRY, trace.h); for each that returns const char *,
 * the public symbol itself, which passes the call on to the loader's own
 * definition (infinirt__impl_NAME) after one test of a flag.  The traced
 * call notes the arguments the list names, times the call, and writes its
 * span (docs/tracing.md), with the allocator's events and counters for the
 * calls that allocate or free.
 */
#define _GNU_SOURCE
#define INFINIRT__API_WRAPPERS /* no renaming here: this file defines the public names */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* What a traced call notes before it is made, and writes after. */
typedef struct {
    infinirt__tb args; /* ,"key":value pairs, in args_buf */
    char dev[48];      /* "cpu:0"; "" until known */
    const char *out_key;
    void **out;
    /* Allocator events. */
    bool malloc_call, free_call, memory, has_stream;
    infinirt__pool *counted; /* the pool a malloc or free changed (NULL: every pool) */
    void **malloc_out;
    size_t bytes;
    const void *free_ptr;
    infinirtStream_t stream;
    infinirt__pool *free_pool;
    /* Work whose span ends when the call has succeeded (plugins that do
     * not report: trace.c). */
    infinirt__stream *idle_stream; /* a reference */
    bool idle_device;
    char args_buf[640]; /* last: call_begin clears what comes before */
} tcall;

static bool rt_ready(void)
{
    return atomic_load_explicit(&infinirt__ready, memory_order_acquire) != 0;
}

static void set_dev_label(tcall *c, const infinirt__device *dev)
{
    if (c->dev[0] == '\0' && dev != NULL)
        infinirt__trace_dev_label(c->dev, sizeof c->dev, dev->plugin->type, dev->id);
}

static void copy_label(tcall *c, const char *label)
{
    size_t n = strnlen(label, sizeof c->dev - 1);
    memcpy(c->dev, label, n);
    c->dev[n] = '\0';
}

static void key(tcall *c, const char *k)
{
    INFINIRT__TB_LIT(&c->args, ",\"");
    infinirt__tb_lit(&c->args, k);
    INFINIRT__TB_LIT(&c->args, "\":");
}

static void ta_dev(tcall *c, infiniDevice_t type, int id)
{
    if (c->dev[0] == '\0' && infinirt__type_slot(type) >= 0)
        infinirt__trace_dev_label(c->dev, sizeof c->dev, type, id);
}

static void ta_stream(tcall *c, infinirtStream_t h)
{
    key(c, "stream");
    infinirt__tb_hex(&c->args, h);
    c->has_stream = true;
    c->stream = h;
    if (h == NULL || !rt_ready())
        return;
    infinirt__stream *s = infinirt__stream_get(h);
    if (s != NULL) {
        set_dev_label(c, s->dev);
        infinirt__stream_put(s);
    }
}

static void ta_event(tcall *c, infinirtEvent_t h)
{
    key(c, "event");
    infinirt__tb_hex(&c->args, h);
    if (h == NULL || !rt_ready())
        return;
    infinirt__event *e = infinirt__event_get(h);
    if (e != NULL) {
        set_dev_label(c, e->dev);
        infinirt__event_put(e);
    }
}

/* The device whose pool holds p (a host pool: "cpu host"). */
static bool pool_of(const void *p, infinirt__ptr_info *info)
{
    return p != NULL && rt_ready() && infinirt__pool_lookup(p, info) == 1;
}

static void ta_mem(tcall *c, const char *k, const void *p)
{
    key(c, k);
    infinirt__tb_hex(&c->args, p);
    infinirt__ptr_info info;
    if (c->dev[0] == '\0' && pool_of(p, &info))
        copy_label(c, infinirt__pool_label(info.pool));
}

static void ta_free(tcall *c, const void *p)
{
    key(c, "ptr");
    infinirt__tb_hex(&c->args, p);
    c->free_call = true;
    c->memory = true;
    c->free_ptr = p;
    infinirt__ptr_info info;
    if (pool_of(p, &info) && info.offset == 0) {
        c->bytes = info.block_size;
        c->free_pool = info.pool;
        if (c->dev[0] == '\0')
            copy_label(c, infinirt__pool_label(info.pool));
        key(c, "bytes");
        infinirt__tb_u64(&c->args, info.block_size);
    }
}

static void ta_cur(tcall *c)
{
    if (c->dev[0] == '\0' && rt_ready()) {
        infinirt__device *d = infinirt__tl_current.dev;
        if (d != NULL)
            set_dev_label(c, d);
        else if (infinirt__tl_current.set)
            ta_dev(c, infinirt__tl_current.type, infinirt__tl_current.id);
        else
            ta_dev(c, infinirt__rt.default_type, infinirt__rt.default_id);
    }
}

static void ta_syncs_stream(tcall *c, infinirtStream_t h)
{
    if (!rt_ready())
        return;
    if (h != NULL) {
        c->idle_stream = infinirt__stream_get(h);
        return;
    }
    infinirt__device *d = NULL;
    if (infinirt__current_device("trace", &d) == INFINI_STATUS_SUCCESS && d != NULL)
        c->idle_stream = d->default_stream; /* no reference: stream_put skips it */
}

static const char *kind_name(int kind)
{
    static const char *const names[] = {"H2H", "H2D", "D2H", "D2D"};
    return (unsigned)kind < 4 ? names[kind] : "?";
}

/* The items api_list.h names, as statements on `c`. */
#define TA_NONE
#define TA_DEV(type, id) ta_dev(&c, (type), (id));
#define TA_STREAM(h) ta_stream(&c, (h));
#define TA_EVENT(h) ta_event(&c, (h));
#define TA_MEM(k, p) ta_mem(&c, (k), (p));
#define TA_FREE(p) ta_free(&c, (p));
#define TA_CUR ta_cur(&c);
#define TA_HEX(k, p) \
    key(&c, (k));    \
    infinirt__tb_hex(&c.args, (p));
#define TA_INT(k, v) \
    key(&c, (k));    \
    infinirt__tb_i64(&c.args, (int64_t)(v));
#define TA_BYTES(n)   \
    key(&c, "bytes"); \
    infinirt__tb_u64(&c.args, (uint64_t)(n));
#define TA_KIND(k)   \
    key(&c, "kind"); \
    infinirt__tb_str(&c.args, kind_name((int)(k)));
#define TA_OUT(k, pp) \
    c.out_key = (k);  \
    c.out = (void **)(pp);
#define TA_MALLOC(pp, n)             \
    c.malloc_call = c.memory = true; \
    c.malloc_out = (void **)(pp);    \
    c.bytes = (n);
#define TA_MEMORY c.memory = true;
#define TA_SYNCS_STREAM(h) ta_syncs_stream(&c, (h));
#define TA_SYNCS_DEVICE c.idle_device = true;

static void call_begin(tcall *c)
{
    memset(c, 0, offsetof(tcall, args_buf));
    c->args = (infinirt__tb){c->args_buf, 0, sizeof c->args_buf};
}

static void call_end(tcall *c, const char *name, uint64_t t0, infiniStatus_t st)
{
    uint64_t t1 = infinirt__trace_now();
    if (!infinirt__trace_enabled()) {
        infinirt__stream_put(c->idle_stream);
        return; /* a call before initialisation settled there is no trace */
    }
    if (st == INFINI_STATUS_SUCCESS && c->out != NULL) {
        key(c, c->out_key);
        infinirt__tb_hex(&c->args, *c->out);
    }
    if (st == INFINI_STATUS_SUCCESS && c->malloc_call && *c->malloc_out != NULL) {
        infinirt__ptr_info info;
        void *p = *c->malloc_out;
        key(c, "ptr");
        infinirt__tb_hex(&c->args, p);
        if (pool_of(p, &info)) {
            c->counted = info.pool;
            infinirt__trace_alloc("malloc", infinirt__pool_label(info.pool), c->bytes, p, c->has_stream, c->stream);
            copy_label(c, infinirt__pool_label(info.pool)); /* where it came from */
        }
    }
    if (st == INFINI_STATUS_SUCCESS && c->free_call && c->free_pool != NULL) {
        c->counted = c->free_pool;
        infinirt__trace_alloc("free", infinirt__pool_label(c->free_pool), c->bytes, c->free_ptr, c->has_stream,
                              c->stream);
    }
    if (st == INFINI_STATUS_SUCCESS && c->idle_stream != NULL)
        infinirt__trace_stream_idle(c->idle_stream);
    if (st == INFINI_STATUS_SUCCESS && c->idle_device) {
        infinirt__device *d = infinirt__tl_current.dev;
        infinirt__trace_device_idle(d);
    }
    infinirt__stream_put(c->idle_stream);
    /* "device" first among the args. */
    char args[sizeof c->args_buf + 64];
    infinirt__tb a = {args, 0, sizeof args};
    if (c->dev[0] != '\0') {
        INFINIRT__TB_LIT(&a, ",\"device\":");
        infinirt__tb_str(&a, c->dev);
    }
    infinirt__tb_raw(&a, c->args.p, c->args.n);
    infinirt__trace_call(name, t0, t1, st, args, a.n);
    if (c->memory)
        infinirt__trace_counters(c->counted);
}

/* The loader's definitions of the const char * functions (hidden: the
 * names below are exported). */
#define DECLARE_S(name, params, args, desc)
#define DECLARE_C(name, params, args, desc) \
    __attribute__((visibility("hidden"))) const char *infinirt__impl_##name params;
INFINIRT__API_LIST(DECLARE_S, DECLARE_C)

_Thread_local __attribute__((tls_model("initial-exec"))) bool infinirt__tl_traced_entry;

/* A status function's traced call (INFINIRT__TRACE_ENTRY sends it here):
 * the function itself is called again with the flag set that lets it
 * through; the flag is cleared after, should the trace have stopped
 * meanwhile (then the function did not clear it). */
#define DEFINE_S(name, params, args, desc)                                        \
    __attribute__((noinline, cold)) infiniStatus_t infinirt__traced_##name params \
    {                                                                             \
        tcall c;                                                                  \
        call_begin(&c);                                                           \
        desc uint64_t t0 = infinirt__trace_now();                                 \
        infinirt__tl_traced_entry = true;                                         \
        infiniStatus_t r = name args;                                             \
        infinirt__tl_traced_entry = false;                                        \
        call_end(&c, #name, t0, r);                                               \
        return r;                                                                 \
    }
#define DEFINE_C(name, params, args, desc)                                  \
    static __attribute__((noinline, cold)) const char *traced_##name params \
    {                                                                       \
        tcall c;                                                            \
        call_begin(&c);                                                     \
        desc uint64_t t0 = infinirt__trace_now();                           \
        const char *r = infinirt__impl_##name args;                         \
        call_end(&c, #name, t0, INFINI_STATUS_SUCCESS);                     \
        return r;                                                           \
    }                                                                       \
    INFINIRT_API const char *name params                                    \
    {                                                                       \
        if (infinirt__tracing())                                            \
            return traced_##name args;                                      \
        return infinirt__impl_##name args;                                  \
    }
INFINIRT__API_LIST(DEFINE_S, DEFINE_C)
