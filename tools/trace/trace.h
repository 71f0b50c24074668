/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h - what infinirt-trace keeps of a trace (trace_load.c reads it,
 * trace_summary.c prints the summary, trace_html.c writes the page).
 *
 * The trace is the runtime's Chrome trace-event JSON (docs/tracing.md):
 * "call" complete events on each thread's track, "stream" complete events
 * on one track per stream, allocator instants ("alloc"), "memory DEVICE"
 * counters, "startup" spans and the "events dropped" note.  Times are kept
 * as integer nanoseconds (the file's microseconds times 1000, rounded), so
 * spans that touch in the file touch here too, with no rounding gap.
 */
#ifndef INFINIRT_TRACE_TRACE_H
#define INFINIRT_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A growable array of ELEM: v.items[0 .. v.n). */
#define TRACE_VEC(elem) \
    struct {            \
        elem *items;    \
        size_t n, cap;  \
    }

typedef struct {
    int64_t start, dur; /* ns */
    uint32_t name;      /* index in trace_model.names */
} trace_span;
typedef TRACE_VEC(trace_span) trace_span_vec;

#define TRACE_UNSET UINT64_MAX

typedef struct {
    int64_t ts;                   /* ns */
    uint64_t allocated, reserved; /* bytes; TRACE_UNSET while loading where absent */
    uint64_t seq;                 /* file order, for points at one time */
} trace_point;

/* One track: a (pid, tid) pair.  A thread's calls, or a stream's work. */
typedef struct {
    int64_t pid, tid;
    char *name; /* its thread_name metadata, or NULL */
    trace_span_vec calls;
    trace_span_vec work;
} trace_lane;

typedef struct {
    char *name; /* "cpu:0" */
    TRACE_VEC(trace_point) points;
    uint64_t mallocs, frees, reserves, releases, trims, oom_retries;
} trace_device;

typedef struct {
    /* Interned strings: call and op names, device names. */
    TRACE_VEC(char *) names;
    uint32_t *name_hash; /* open addressing over names, 0 = empty, else index + 1 */
    size_t hash_cap;
    TRACE_VEC(trace_lane) lanes;
    uint32_t *lane_hash; /* likewise, over (pid, tid) */
    size_t lane_hash_cap;
    TRACE_VEC(trace_device) devices;
    TRACE_VEC(uint32_t) device_of_name; /* per name: 0, or its device's index + 1 */
    trace_span_vec startup;             /* names of plugin start-up spans */

    char *version; /* otherData.infinirt_version, or NULL */
    int have_dropped_other;
    uint64_t dropped_other;    /* otherData.dropped_events */
    uint64_t dropped_instants; /* the "events dropped" notes' counts */

    int have_time;
    int64_t t_min, t_max; /* ns: the first start and the last end */

    /* What was read: each event is counted once, in one of these. */
    uint64_t events, calls, work, flows, alloc_events, counters, startups, notes, metadata;
    uint64_t unknown;    /* of a kind this tool does not read */
    uint64_t incomplete; /* of a known kind, with a field missing or wrong */

    /* The input ended inside the trace (a crash): where. */
    int truncated;
    size_t truncated_at;
    char truncated_what[160]; /* what was expected there */
} trace_model;

/* Reading failed: the message, with the byte offset where it applies. */
typedef struct {
    char msg[256];
} trace_error;

/* Reads the trace in DATA (LEN bytes) into M, and sorts every lane's spans
 * (by start, then duration) and every device's points (by time, then file
 * order).  0 on success (M->truncated set where the input ended early);
 * -1 with ERR filled where the input is not a trace, is malformed, or
 * memory ran out.  M must be freed with trace_free either way. */
int trace_load(trace_model *m, const char *data, size_t len, trace_error *err);
void trace_free(trace_model *m);

/* What the model promises, for the tests and the fuzzer: NULL, or the
 * first promise M breaks (each event counted once, the time range and the
 * cut inside the input of LEN bytes, spans and points sorted, no negative
 * duration). */
const char *trace_check_model(const trace_model *m, size_t len);

/* Reads FILE whole into *DATA (malloc'd); -1 with ERR filled. */
int trace_read_file(const char *path, char **data, size_t *len, trace_error *err);

/* The summary, for people (trace_summary.c). */
int trace_print_summary(FILE *out, const trace_model *m, const char *source);
/* The page (trace_html.c): 0, or -1 on a write error. */
int trace_write_html(FILE *out, const trace_model *m, const char *source);

/* Helpers shared by the writers. */
/* Makes room for one more item in a TRACE_VEC: 0, or -1 when memory ran
 * out (the vector is unchanged). */
int trace_vec_reserve(void *items_ptr, size_t *cap, size_t n, size_t size);
#define TRACE_VEC_PUSH(v, x) \
    (trace_vec_reserve(&(v).items, &(v).cap, (v).n, sizeof(*(v).items)) == 0 ? ((v).items[(v).n++] = (x), 0) : -1)
const char *trace_lane_label(const trace_lane *l, char *buf, size_t size);
int trace_lane_is_stream(const trace_lane *l);

#endif
