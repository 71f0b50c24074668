/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h - the trace writer (trace.c, trace_api.c; docs/tracing.md): a
 * Chrome JSON trace of the public calls, the work of each stream, the
 * allocator and the plugins' start-up, when INFINIRT_TRACE or [loader]
 * trace names a file.  Included at the end of internal.h.
 *
 * Cost when no trace is written: every public function tests
 * infinirt__trace_on at its start (INFINIRT__TRACE_ENTRY); nothing else.
 * The functions that queue work on a stream go, when traced, to a copy of
 * their code built with traced = true (INFINIRT__TRACE_ENTRY_WORK); the
 * untraced copy has traced = false, so no second test (INFINIRT__TRACED,
 * INFINIRT__TRACE_WORK).
 *
 * When one is: each thread formats its events into a ring of its own (made
 * at its first event; no lock, no allocation afterwards), which a writer
 * thread appends to the file a few times a second, at infinirtTraceFlush
 * and at exit.  The file is a complete JSON document after every pass.  A
 * full ring, or a file at trace_max_mb, drops events; the count goes in
 * otherData.dropped_events and an "events dropped" instant.
 */
#ifndef INFINIRT_LOADER_TRACE_H_
#define INFINIRT_LOADER_TRACE_H_

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1 while a trace is written.  1 also from load until the first
 * initialisation has settled it (infinirt__trace_settle), so the very first
 * call, which initialises, is traced when the config asks for a trace. */
/* (Declared hidden, as the loader's globals read on the calls' paths are:
 * the library's own, so each read is one instruction, not a load of its
 * address first.) */
extern __attribute__((visibility("hidden"))) atomic_int infinirt__trace_on;
static inline bool infinirt__tracing(void)
{
    return __builtin_expect(atomic_load_explicit(&infinirt__trace_on, memory_order_relaxed) != 0, 0);
}

/* The first statement of each public function returning a status
 * (api_list.h's S entries): with no trace, one test of the flag and on to
 * the function's own code, so the public symbol is the implementation
 * itself (no call in front of it).  With one, the call goes to
 * infinirt__traced_NAME (trace_api.c), which notes the arguments, sets
 * infinirt__tl_traced_entry and calls NAME again; that call clears the
 * flag and runs the function.  Only the one call the traced function
 * makes is let through: calls made inside it (a host function the CPU
 * plugin runs inline) are traced as their own. */
extern _Thread_local __attribute__((tls_model("initial-exec"))) bool infinirt__tl_traced_entry;
static inline bool infinirt__take_traced_entry(void)
{
    bool let_through = infinirt__tl_traced_entry;
    infinirt__tl_traced_entry = false;
    return let_through;
}
#define INFINIRT__TRACE_ENTRY(name, args)                                               \
    do {                                                                                \
        if (__builtin_expect(infinirt__tracing() && !infinirt__take_traced_entry(), 0)) \
            return infinirt__traced_##name args;                                        \
    } while (0)
/* INFINIRT__TRACE_ENTRY for a function that queues work on a stream: the
 * let-through call returns traced_call, the function's own code built with
 * traced = true (out of line, cold), and the code after the macro is built
 * with traced = false, so that with no trace the flag is tested here once
 * and nowhere else on the call's path. */
#define INFINIRT__TRACE_ENTRY_WORK(name, args, traced_call) \
    do {                                                    \
        if (__builtin_expect(infinirt__tracing(), 0)) {     \
            if (!infinirt__take_traced_entry())             \
                return infinirt__traced_##name args;        \
            return traced_call;                             \
        }                                                   \
    } while (0)
#define INFINIRT__DECLARE_TRACED_S(name, params, args, desc) infiniStatus_t infinirt__traced_##name params;
#define INFINIRT__DECLARE_TRACED_C(name, params, args, desc)
INFINIRT__API_LIST(INFINIRT__DECLARE_TRACED_S, INFINIRT__DECLARE_TRACED_C)
#undef INFINIRT__DECLARE_TRACED_S
#undef INFINIRT__DECLARE_TRACED_C

/* CLOCK_MONOTONIC in nanoseconds: the trace's clock, and the one plugins
 * report work in. */
uint64_t infinirt__trace_now(void);
/* Open the trace file cfg names (none: nothing happens) and start the
 * writer; from do_init, once the config is read. */
void infinirt__trace_start(const infinirt__config *cfg);
/* After initialisation (whatever its outcome): infinirt__trace_on says
 * from now on whether a trace is written. */
void infinirt__trace_settle(void);
/* Whether a trace is being written (for set-up code: plugins, pools). */
bool infinirt__trace_enabled(void);

/* ---- a small JSON text builder, for the events (no allocation) */
typedef struct {
    char *p;
    size_t n, cap;
} infinirt__tb;
void infinirt__tb_raw(infinirt__tb *b, const char *s, size_t n);
void infinirt__tb_lit(infinirt__tb *b, const char *s); /* s as is */
/* A string literal as is (its length known at compile time). */
#define INFINIRT__TB_LIT(b, lit) infinirt__tb_raw((b), "" lit, sizeof(lit) - 1)
void infinirt__tb_str(infinirt__tb *b, const char *s); /* s quoted, escaped */
void infinirt__tb_u64(infinirt__tb *b, uint64_t v);    /* decimal */
void infinirt__tb_i64(infinirt__tb *b, int64_t v);     /* decimal */
void infinirt__tb_hex(infinirt__tb *b, const void *v); /* "0x..." quoted */
/* "cpu:0" for a device type and the loader's id, into out. */
void infinirt__trace_dev_label(char *out, size_t size, infiniDevice_t type, int id);

/* ---- call spans (trace_api.c builds the args) */
/* One complete event of category "call" on the calling thread: name,
 * [t0, t1], "status" and then args (text of ,"key":value pairs). */
void infinirt__trace_call(const char *name, uint64_t t0, uint64_t t1, infiniStatus_t st, const char *args,
                          size_t args_len);
/* An allocator instant ("malloc", "free", ...) on the calling thread:
 * device label, bytes, block, and the stream when has_stream. */
void infinirt__trace_alloc(const char *what, const char *device, size_t bytes, const void *ptr, bool has_stream,
                           const void *stream);
/* A counter event for pool (NULL: every followed pool) when its figures
 * changed. */
void infinirt__trace_counters(infinirt__pool *pool);
/* The allocator's note callback (infinirt__pool_backend.note). */
void infinirt__trace_pool_note(infinirt__pool *pool, int what, size_t bytes, const void *ptr);

/* ---- plugin start-up */
/* A "start plugin NAME" span from t0 to now, with its outcome. */
void infinirt__trace_startup(const infinirt__plugin *p, uint64_t t0);
/* The tracing functions a plugin is given at init (ABI 1.7), NULL when no
 * trace is written.  Each plugin gets its own, to say in plugin_flags
 * whether it reports the work it queues. */
void infinirt__trace_plugin_hooks(infinirtPluginTrace *t);

/* ---- the work of streams */
typedef struct {
    uint64_t id; /* 0: not traced */
    uint64_t t0;
    uint64_t saved_id;
    int saved_taken;
    bool done_at_return; /* a synchronous entry: the work is done when it returns */
    infinirt__stream *s;
} infinirt__trace_work;
void infinirt__trace_work_begin(infinirt__trace_work *w, infinirt__stream *s, const char *name, uint64_t bytes,
                                bool done_at_return);
void infinirt__trace_work_end(infinirt__trace_work *w, infiniStatus_t st);
/* "copy H2D" ...: the work's name for a memcpy kind. */
const char *infinirt__trace_copy_name(int kind);
/* st = call, where call queues work `name` of `bytes` on loader stream s,
 * in code built with a constant traced (INFINIRT__TRACE_ENTRY_WORK): when
 * traced and the trace still runs, a span on s's track from when it
 * started to when it completed (the plugin reports it, or the call did it,
 * or the loader saw it done), with a flow from the calling thread's span;
 * when not traced, the call alone. */
#define INFINIRT__TRACE_WORK(traced, st, s, name, bytes, call) \
    INFINIRT__TRACE_WORK_(traced, st, s, name, bytes, false, call)
/* The same for a synchronous entry (memcpy, memset): done when it returns. */
#define INFINIRT__TRACE_SYNC_WORK(traced, st, s, name, bytes, call) \
    INFINIRT__TRACE_WORK_(traced, st, s, name, bytes, true, call)
#define INFINIRT__TRACE_WORK_(traced, st, s, name, bytes, sync, call)                      \
    do {                                                                                   \
        if ((traced) && infinirt__tracing()) {                                             \
            infinirt__trace_work trace_w_;                                                 \
            infinirt__trace_work_begin(&trace_w_, (s), (name), (uint64_t)(bytes), (sync)); \
            (st) = (call);                                                                 \
            infinirt__trace_work_end(&trace_w_, (st));                                     \
        } else {                                                                           \
            (st) = (call);                                                                 \
        }                                                                                  \
    } while (0)
/* The plugin calls of the hot paths, traced: each queues its work as the
 * plain call does, between work_begin and work_end.  Out of line, and
 * called as INFINIRT__TRACED(traced, traced_call, plain) in code built
 * with a constant traced (INFINIRT__TRACE_ENTRY_WORK): the untraced copy
 * is the plain call alone; the traced one still asks whether the trace
 * runs (initialisation may have settled it off meanwhile). */
#define INFINIRT__TRACED(traced, traced_call, plain) ((traced) && infinirt__tracing() ? (traced_call) : (plain))
infiniStatus_t infinirt__traced_memcpy(infinirt__device *d, void *dst, const void *src, size_t n, int kind);
infiniStatus_t infinirt__traced_memcpy_async(infinirt__stream *s, void *dst, const void *src, size_t n, int kind);
infiniStatus_t infinirt__traced_memset(infinirt__device *d, void *p, int value, size_t n);
infiniStatus_t infinirt__traced_memset_async(infinirt__stream *s, void *p, int value, size_t n);
infiniStatus_t infinirt__traced_host_fn(infinirt__stream *s, infinirtHostFn_t fn, void *user_data);
infiniStatus_t infinirt__traced_event_record(infinirt__stream *s, void *pe);
infiniStatus_t infinirt__traced_wait_event(infinirt__stream *s, void *pe);
/* The work queued on s (on every stream of dev) has completed: the spans
 * of work no plugin reports end now. */
void infinirt__trace_stream_idle(infinirt__stream *s);
void infinirt__trace_device_idle(infinirt__device *dev);

#endif /* INFINIRT_LOADER_TRACE_H_ */
