/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_load.c - reads a trace file into the model of trace.h: the outer
 * object is walked, traceEvents one event at a time (json.h), so a trace of
 * any size is read in the memory of its largest event plus what is kept.
 * Unknown fields and events are ignored; events may come in any order; a
 * trace that ends early (the writer crashed) keeps what came before.
 */
#define _POSIX_C_SOURCE 200809L
#include "trace.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Times further than this from 0 are refused: about 31 years in µs, so
 * that ns values, their sums over a span and ts + dur fit in int64_t. */
#define MAX_ABS_US 1e15
/* Byte counts: up to 2^63, so that sums of them cannot wrap. */
#define MAX_BYTES 9.2e18

/* ------------------------------------------------------------ storage */

int trace_vec_reserve(void *items_ptr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t new_cap = *cap ? *cap * 2 : 16;
    if (new_cap < *cap || new_cap > SIZE_MAX / size)
        return -1;
    void *items;
    memcpy(&items, items_ptr, sizeof(items));
    void *grown = realloc(items, new_cap * size);
    if (grown == NULL)
        return -1;
    memcpy(items_ptr, &grown, sizeof(grown));
    *cap = new_cap;
    return 0;
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_pair(int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)b + 0x7f4a7c159e3779b9ull + (h << 6) + (h >> 2);
    return h ^ (h >> 29);
}

/* Rebuilds an open-addressing table of CAP slots over COUNT entries, each
 * slot index + 1, with KEY_HASH(m, i) the hash of entry i. */
static int rehash(trace_model *m, uint32_t **table, size_t *cap, size_t count,
                  uint64_t (*key_hash)(const trace_model *, size_t))
{
    size_t new_cap = *cap ? *cap * 2 : 64;
    if (new_cap > SIZE_MAX / sizeof(uint32_t) || count >= UINT32_MAX)
        return -1;
    uint32_t *t = calloc(new_cap, sizeof(uint32_t));
    if (t == NULL)
        return -1;
    for (size_t i = 0; i < count; i++) {
        size_t slot = (size_t)key_hash(m, i) & (new_cap - 1);
        while (t[slot] != 0)
            slot = (slot + 1) & (new_cap - 1);
        t[slot] = (uint32_t)(i + 1);
    }
    free(*table);
    *table = t;
    *cap = new_cap;
    return 0;
}

static uint64_t name_hash_of(const trace_model *m, size_t i)
{
    return hash_bytes(m->names.items[i], strlen(m->names.items[i]));
}

static uint64_t lane_hash_of(const trace_model *m, size_t i)
{
    return hash_pair(m->lanes.items[i].pid, m->lanes.items[i].tid);
}

/* The index of the string S in m->names, added where new; -1 when memory
 * ran out. */
static int64_t intern(trace_model *m, const char *s)
{
    size_t len = strlen(s);
    if ((m->names.n + 1) * 2 > m->hash_cap && rehash(m, &m->name_hash, &m->hash_cap, m->names.n, name_hash_of) != 0)
        return -1;
    size_t slot = (size_t)hash_bytes(s, len) & (m->hash_cap - 1);
    for (; m->name_hash[slot] != 0; slot = (slot + 1) & (m->hash_cap - 1)) {
        const char *have = m->names.items[m->name_hash[slot] - 1];
        if (strcmp(have, s) == 0)
            return m->name_hash[slot] - 1;
    }
    char *copy = strdup(s);
    if (copy == NULL || TRACE_VEC_PUSH(m->names, copy) != 0) {
        free(copy);
        return -1;
    }
    m->name_hash[slot] = (uint32_t)m->names.n;
    return (int64_t)m->names.n - 1;
}

static trace_lane *lane(trace_model *m, int64_t pid, int64_t tid)
{
    if ((m->lanes.n + 1) * 2 > m->lane_hash_cap &&
        rehash(m, &m->lane_hash, &m->lane_hash_cap, m->lanes.n, lane_hash_of) != 0)
        return NULL;
    size_t slot = (size_t)hash_pair(pid, tid) & (m->lane_hash_cap - 1);
    for (; m->lane_hash[slot] != 0; slot = (slot + 1) & (m->lane_hash_cap - 1)) {
        trace_lane *l = &m->lanes.items[m->lane_hash[slot] - 1];
        if (l->pid == pid && l->tid == tid)
            return l;
    }
    trace_lane fresh = {.pid = pid, .tid = tid};
    if (TRACE_VEC_PUSH(m->lanes, fresh) != 0)
        return NULL;
    m->lane_hash[slot] = (uint32_t)m->lanes.n;
    return &m->lanes.items[m->lanes.n - 1];
}

static trace_device *device(trace_model *m, const char *name)
{
    int64_t id = intern(m, name);
    if (id < 0)
        return NULL;
    while (m->device_of_name.n <= (size_t)id)
        if (TRACE_VEC_PUSH(m->device_of_name, 0) != 0)
            return NULL;
    uint32_t have = m->device_of_name.items[id];
    if (have != 0)
        return &m->devices.items[have - 1];
    trace_device fresh = {.name = m->names.items[id]};
    if (TRACE_VEC_PUSH(m->devices, fresh) != 0)
        return NULL;
    m->device_of_name.items[id] = (uint32_t)m->devices.n;
    return &m->devices.items[m->devices.n - 1];
}

void trace_free(trace_model *m)
{
    for (size_t i = 0; i < m->names.n; i++)
        free(m->names.items[i]);
    free(m->names.items);
    free(m->name_hash);
    for (size_t i = 0; i < m->lanes.n; i++) {
        free(m->lanes.items[i].name);
        free(m->lanes.items[i].calls.items);
        free(m->lanes.items[i].work.items);
    }
    free(m->lanes.items);
    free(m->lane_hash);
    for (size_t i = 0; i < m->devices.n; i++)
        free(m->devices.items[i].points.items);
    free(m->devices.items);
    free(m->device_of_name.items);
    free(m->startup.items);
    free(m->version);
    memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------ fields */

/* A time in µs (ts, dur) as ns; 0 where absent, not a number or too far. */
static int time_ns(const json_value *v, int64_t *out)
{
    double us;
    if (!json_num(v, &us) || fabs(us) > MAX_ABS_US)
        return 0;
    *out = (int64_t)llround(us * 1000.0);
    return 1;
}

static int bytes_of(const json_value *v, uint64_t *out)
{
    if (v != NULL && v->type == JSON_NUMBER && v->u.num.is_int) {
        if (v->u.num.i < 0)
            return 0;
        *out = (uint64_t)v->u.num.i;
        return 1;
    }
    double d;
    if (!json_num(v, &d) || d < 0 || d > MAX_BYTES)
        return 0;
    *out = (uint64_t)d;
    return 1;
}

/* pid and tid: integers, as the format has them; a string (which some
 * writers use) names its own track, by its hash; anything else is 0. */
static int64_t id_of(const json_value *v)
{
    if (v != NULL && v->type == JSON_NUMBER && v->u.num.is_int)
        return v->u.num.i;
    if (v != NULL && v->type == JSON_STRING)
        return (int64_t)(hash_bytes(v->u.str.s, v->u.str.len) | (1ull << 62)) & INT64_MAX;
    return 0;
}

static void saw_time(trace_model *m, int64_t start, int64_t end)
{
    if (!m->have_time || start < m->t_min)
        m->t_min = start;
    if (!m->have_time || end > m->t_max)
        m->t_max = end;
    m->have_time = 1;
}

/* ------------------------------------------------------------ events */

typedef struct {
    const json_value *ev, *args;
    const char *ph, *cat, *name;
    int64_t pid, tid;
} event;

enum { EV_OK = 0, EV_INCOMPLETE = 1, EV_UNKNOWN = 2, EV_NOMEM = -1 };

static int on_metadata(trace_model *m, const event *e)
{
    if (e->name == NULL || strcmp(e->name, "thread_name") != 0) {
        m->metadata++;
        return EV_OK; /* process_name, sort indexes: nothing to keep */
    }
    const char *label = json_str(json_get(e->args, "name"));
    if (label == NULL)
        return EV_INCOMPLETE;
    trace_lane *l = lane(m, e->pid, e->tid);
    char *copy = strdup(label);
    if (l == NULL || copy == NULL) {
        free(copy);
        return EV_NOMEM;
    }
    free(l->name);
    l->name = copy;
    m->metadata++;
    return EV_OK;
}

static int on_complete(trace_model *m, const event *e)
{
    int is_call = e->cat != NULL && strcmp(e->cat, "call") == 0;
    int is_work = e->cat != NULL && strcmp(e->cat, "stream") == 0;
    int is_startup = e->cat != NULL && strcmp(e->cat, "startup") == 0;
    if (!is_call && !is_work && !is_startup)
        return EV_UNKNOWN;
    int64_t ts, dur;
    if (e->name == NULL || !time_ns(json_get(e->ev, "ts"), &ts) || !time_ns(json_get(e->ev, "dur"), &dur) || dur < 0)
        return EV_INCOMPLETE;
    int64_t name = intern(m, e->name);
    if (name < 0)
        return EV_NOMEM;
    trace_span s = {.start = ts, .dur = dur, .name = (uint32_t)name};
    if (is_startup) {
        if (TRACE_VEC_PUSH(m->startup, s) != 0)
            return EV_NOMEM;
        m->startups++;
    } else {
        trace_lane *l = lane(m, e->pid, e->tid);
        if (l == NULL || TRACE_VEC_PUSH(*(is_call ? &l->calls : &l->work), s) != 0)
            return EV_NOMEM;
        if (is_call)
            m->calls++;
        else
            m->work++;
    }
    saw_time(m, ts, ts + dur);
    return EV_OK;
}

static int on_instant(trace_model *m, const event *e)
{
    int64_t ts;
    int is_alloc = e->cat != NULL && strcmp(e->cat, "alloc") == 0;
    int is_note =
        e->cat != NULL && strcmp(e->cat, "trace") == 0 && e->name != NULL && strcmp(e->name, "events dropped") == 0;
    if (!is_alloc && !is_note)
        return EV_UNKNOWN;
    if (e->name == NULL || !time_ns(json_get(e->ev, "ts"), &ts))
        return EV_INCOMPLETE;
    if (is_note) {
        uint64_t n;
        if (!bytes_of(json_get(e->args, "count"), &n))
            return EV_INCOMPLETE;
        m->dropped_instants = m->dropped_instants + n < m->dropped_instants ? UINT64_MAX : m->dropped_instants + n;
        m->notes++;
        saw_time(m, ts, ts);
        return EV_OK;
    }
    const char *dev_name = json_str(json_get(e->args, "device"));
    trace_device *d = device(m, dev_name != NULL ? dev_name : "?");
    if (d == NULL)
        return EV_NOMEM;
    if (strcmp(e->name, "malloc") == 0)
        d->mallocs++;
    else if (strcmp(e->name, "free") == 0)
        d->frees++;
    else if (strcmp(e->name, "segment reserve") == 0)
        d->reserves++;
    else if (strcmp(e->name, "segment release") == 0)
        d->releases++;
    else if (strcmp(e->name, "trim") == 0)
        d->trims++;
    else if (strcmp(e->name, "oom retry") == 0)
        d->oom_retries++;
    m->alloc_events++;
    saw_time(m, ts, ts);
    return EV_OK;
}

static int on_counter(trace_model *m, const event *e)
{
    static const char prefix[] = "memory ";
    if (e->name == NULL || strncmp(e->name, prefix, sizeof(prefix) - 1) != 0 || e->name[sizeof(prefix) - 1] == 0)
        return EV_UNKNOWN;
    trace_point p = {.allocated = TRACE_UNSET, .reserved = TRACE_UNSET};
    if (!time_ns(json_get(e->ev, "ts"), &p.ts))
        return EV_INCOMPLETE;
    int have_a = bytes_of(json_get(e->args, "allocated"), &p.allocated);
    int have_r = bytes_of(json_get(e->args, "reserved"), &p.reserved);
    if (!have_a && !have_r)
        return EV_INCOMPLETE;
    trace_device *d = device(m, e->name + sizeof(prefix) - 1);
    if (d == NULL)
        return EV_NOMEM;
    p.seq = d->points.n;
    if (TRACE_VEC_PUSH(d->points, p) != 0)
        return EV_NOMEM;
    m->counters++;
    saw_time(m, p.ts, p.ts);
    return EV_OK;
}

static int on_event(trace_model *m, const json_value *v)
{
    m->events++;
    event e = {.ev = v};
    e.ph = json_str(json_get(v, "ph"));
    e.cat = json_str(json_get(v, "cat"));
    e.name = json_str(json_get(v, "name"));
    e.args = json_get(v, "args");
    e.pid = id_of(json_get(v, "pid"));
    e.tid = id_of(json_get(v, "tid"));
    int rc = EV_UNKNOWN;
    if (e.ph == NULL)
        rc = EV_UNKNOWN;
    else if (strcmp(e.ph, "M") == 0)
        rc = on_metadata(m, &e);
    else if (strcmp(e.ph, "X") == 0)
        rc = on_complete(m, &e);
    else if (strcmp(e.ph, "i") == 0 || strcmp(e.ph, "I") == 0)
        rc = on_instant(m, &e);
    else if (strcmp(e.ph, "C") == 0)
        rc = on_counter(m, &e);
    else if ((strcmp(e.ph, "s") == 0 || strcmp(e.ph, "f") == 0 || strcmp(e.ph, "t") == 0) && e.cat != NULL &&
             strcmp(e.cat, "flow") == 0) {
        m->flows++;
        rc = EV_OK;
    }
    if (rc == EV_UNKNOWN)
        m->unknown++;
    else if (rc == EV_INCOMPLETE)
        m->incomplete++;
    return rc == EV_NOMEM ? -1 : 0;
}

static int on_other_data(trace_model *m, const json_value *v)
{
    const char *version = json_str(json_get(v, "infinirt_version"));
    if (version != NULL) {
        char *copy = strdup(version);
        if (copy == NULL)
            return -1;
        free(m->version);
        m->version = copy;
    }
    uint64_t n;
    if (bytes_of(json_get(v, "dropped_events"), &n)) {
        m->dropped_other = n;
        m->have_dropped_other = 1;
    }
    return 0;
}

/* ------------------------------------------------------------ the file */

/* The traceEvents array, or a whole JSON Array Format file: one event at
 * a time, the arena emptied after each. */
static int read_events(trace_model *m, json_reader *r)
{
    if (json_open(r, '[') != 0)
        return -1;
    for (;;) {
        int more = json_next_item(r);
        if (more <= 0)
            return more;
        json_value *v;
        if (json_parse(r, &v) != 0)
            return -1;
        if (on_event(m, v) != 0)
            return -2;
        json_reset(r);
    }
}

/* The JSON Object Format: traceEvents, otherData, the rest ignored.
 * 1 when traceEvents was there. */
static int read_object(trace_model *m, json_reader *r)
{
    int have_events = 0;
    if (json_open(r, '{') != 0)
        return -1;
    for (;;) {
        const char *key;
        size_t key_len;
        int more = json_next_member(r, &key, &key_len);
        if (more < 0)
            return -1;
        if (more == 0)
            return have_events;
        if (strcmp(key, "traceEvents") == 0 && json_peek(r) == '[') {
            json_reset(r);
            have_events = 1;
            int rc = read_events(m, r);
            if (rc < 0)
                return rc;
            continue;
        }
        int other = strcmp(key, "otherData") == 0;
        json_value *v;
        if (json_parse(r, &v) != 0)
            return -1;
        if (other && on_other_data(m, v) != 0)
            return -2;
        json_reset(r);
    }
}

static int cmp_span(const void *a, const void *b)
{
    const trace_span *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur < y->dur ? -1 : 1;
    return 0;
}

static int cmp_point(const void *a, const void *b)
{
    const trace_point *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts what the printers walk in time order, and gives each counter
 * point the value a point before it set where it has none of its own. */
static void finish(trace_model *m)
{
    for (size_t i = 0; i < m->lanes.n; i++) {
        trace_lane *l = &m->lanes.items[i];
        if (l->calls.n > 1)
            qsort(l->calls.items, l->calls.n, sizeof(trace_span), cmp_span);
        if (l->work.n > 1)
            qsort(l->work.items, l->work.n, sizeof(trace_span), cmp_span);
    }
    if (m->startup.n > 1)
        qsort(m->startup.items, m->startup.n, sizeof(trace_span), cmp_span);
    for (size_t i = 0; i < m->devices.n; i++) {
        trace_device *d = &m->devices.items[i];
        if (d->points.n > 1)
            qsort(d->points.items, d->points.n, sizeof(trace_point), cmp_point);
        uint64_t a = 0, r = 0;
        for (size_t k = 0; k < d->points.n; k++) {
            trace_point *p = &d->points.items[k];
            if (p->allocated == TRACE_UNSET)
                p->allocated = a;
            if (p->reserved == TRACE_UNSET)
                p->reserved = r;
            a = p->allocated;
            r = p->reserved;
        }
    }
}

/* "byte N (line L, column C)" for an offset in DATA. */
static void where(char *buf, size_t size, const char *data, size_t offset)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < offset; i++) {
        if (data[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(buf, size, "byte %zu (line %zu, column %zu)", offset, line, col);
}

int trace_load(trace_model *m, const char *data, size_t len, trace_error *err)
{
    memset(m, 0, sizeof(*m));
    err->msg[0] = '\0';
    /* A file cut short by a crash may end in zero bytes (space the file
     * system gave it that was never written) or a partial line. */
    while (len > 0 && (data[len - 1] == '\0' || data[len - 1] == ' ' || data[len - 1] == '\n' ||
                       data[len - 1] == '\r' || data[len - 1] == '\t'))
        len--;
    if (len == 0) {
        snprintf(err->msg, sizeof(err->msg), "the file is empty: not a trace");
        return -1;
    }
    json_reader r;
    json_init(&r, data, len);
    int c = json_peek(&r), rc;
    if (c == '[') {
        rc = read_events(m, &r);
    } else if (c == '{') {
        rc = read_object(m, &r);
    } else {
        json_free(&r);
        snprintf(err->msg, sizeof(err->msg),
                 "not a trace: it starts with neither '{' (a trace object) nor '[' (an array of events)");
        return -1;
    }
    char at[96];
    if (rc == -2 || r.status == JSON_ERR_NOMEM) {
        snprintf(err->msg, sizeof(err->msg), "out of memory after %llu events", (unsigned long long)m->events);
        rc = -1;
    } else if (r.status == JSON_ERR_EOF) {
        m->truncated = 1;
        m->truncated_at = r.err_offset;
        snprintf(m->truncated_what, sizeof(m->truncated_what), "%s", r.err_msg);
        rc = 0;
    } else if (r.status == JSON_ERR_SYNTAX) {
        where(at, sizeof(at), data, r.err_offset);
        snprintf(err->msg, sizeof(err->msg), "malformed JSON at %s: %s", at, r.err_msg);
        rc = -1;
    } else if (c == '{' && rc == 0) {
        snprintf(err->msg, sizeof(err->msg), "not a trace: the object has no traceEvents array");
        rc = -1;
    } else if (json_peek(&r) >= 0) {
        where(at, sizeof(at), data, (size_t)(r.p - data));
        snprintf(err->msg, sizeof(err->msg), "malformed JSON at %s: more data after the trace's end", at);
        rc = -1;
    } else {
        rc = 0;
    }
    json_free(&r);
    if (rc == 0)
        finish(m);
    return rc;
}

int trace_read_file(const char *path, char **data, size_t *len, trace_error *err)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err->msg, sizeof(err->msg), "cannot open: %s", strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf == NULL) {
            snprintf(err->msg, sizeof(err->msg), "out of memory reading it");
            fclose(f);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (grown == NULL)
            free(buf);
        buf = grown;
        cap *= 2;
    }
    if (ferror(f)) {
        snprintf(err->msg, sizeof(err->msg), "cannot read: %s", strerror(errno));
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    *data = buf;
    *len = n;
    return 0;
}

static int spans_sorted(const trace_span_vec *v)
{
    for (size_t i = 0; i < v->n; i++) {
        if (v->items[i].dur < 0)
            return 0;
        if (i > 0 && cmp_span(&v->items[i - 1], &v->items[i]) > 0)
            return 0;
    }
    return 1;
}

const char *trace_check_model(const trace_model *m, size_t len)
{
    uint64_t sum = m->calls + m->work + m->flows + m->alloc_events + m->counters + m->startups + m->notes +
                   m->metadata + m->unknown + m->incomplete;
    if (sum != m->events)
        return "the events by kind do not add up to the events read";
    if (m->have_time && m->t_min > m->t_max)
        return "the trace's start is after its end";
    if (m->truncated && m->truncated_at > len)
        return "the cut lies past the input's end";
    if (!spans_sorted(&m->startup))
        return "start-up spans not sorted";
    for (size_t i = 0; i < m->lanes.n; i++)
        if (!spans_sorted(&m->lanes.items[i].calls) || !spans_sorted(&m->lanes.items[i].work))
            return "a lane's spans are not sorted";
    for (size_t i = 0; i < m->devices.n; i++) {
        const trace_device *d = &m->devices.items[i];
        for (size_t k = 0; k < d->points.n; k++) {
            if (d->points.items[k].allocated == TRACE_UNSET || d->points.items[k].reserved == TRACE_UNSET)
                return "a counter point left unset";
            if (k > 0 && cmp_point(&d->points.items[k - 1], &d->points.items[k]) > 0)
                return "a device's points are not sorted";
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ shared */

int trace_lane_is_stream(const trace_lane *l)
{
    return l->work.n > 0 || (l->name != NULL && strncmp(l->name, "stream ", 7) == 0);
}

const char *trace_lane_label(const trace_lane *l, char *buf, size_t size)
{
    if (l->name != NULL)
        return l->name;
    snprintf(buf, size, "pid %lld tid %lld", (long long)l->pid, (long long)l->tid);
    return buf;
}
