/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c - the trace writer: the file, the threads' rings and the writer
 * thread, and the events other than call spans (stream work and its
 * flows, the allocator, plugin start-up).  The format and what each event
 * means are docs/tracing.md's; trace.h says what it costs.
 *
 * The file.  A header with room for otherData.dropped_events (rewritten in
 * place), then events, each written as ",\n{...}" after the first, then
 * "\n]}\n".  Every writer pass appends the rings' text where the footer
 * was and writes the footer again after it, so the file is a complete JSON
 * document between passes: a program killed later still leaves a trace
 * that opens.
 *
 * Rings.  A thread's first event makes its ring (RING_BYTES, one
 * allocation) and lists it; from then on an event is formatted on the
 * stack, copied into the ring and published with one release store of the
 * ring's head.  Only the writer moves a ring's tail.  The file's budget
 * (trace_max_mb) is taken from a shared counter BUDGET_GRAIN bytes at a
 * time, so threads rarely touch it.  An event that finds its ring full or
 * the budget spent is dropped and counted.  A thread that exits marks its
 * ring dead; the writer frees it once it is empty.
 *
 * Stream work.  Each traced piece of work gets an id (also its flow's id)
 * and a slot in a table of WORK_SLOTS descriptors (name, bytes, the
 * stream's track, when it was queued).  Whoever ends the work's span - the
 * plugin's report, the queuing call itself, or the loader seeing the
 * stream idle - claims the slot by its id; a slot overwritten by 64K later
 * pieces of work before that is a dropped event.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

atomic_int infinirt__trace_on = 1;

#define RING_BYTES ((size_t)4 << 20)
#define BUDGET_GRAIN ((size_t)64 << 10)
#define EVENT_MAX 2048 /* one event's text, at most */
#define WORK_SLOTS ((uint64_t)1 << 16)
#define STREAM_TID_BASE 1000000u
/* Room kept past the budget for the footer and the dropped-events note. */
#define FOOTER_ROOM 4096
/* How long the writer sleeps between passes when no ring asks sooner. */
#define WRITER_PERIOD_MS 200

typedef struct ring {
    struct ring *next; /* in g_rings (g_list_mu) */
    char *buf;
    _Atomic size_t head, tail; /* bytes ever written / ever taken */
    atomic_bool dead;          /* its thread has exited */
    atomic_bool woke;          /* it asked the writer for a pass */
    uint32_t tid;
    size_t budget;    /* the owning thread's share of the file budget */
    char pid_tid[48]; /* ,"pid":P,"tid":T of its thread, made once */
    size_t pid_tid_n;
} ring;

typedef struct {
    _Atomic uint64_t id; /* 0: free or claimed */
    _Atomic(const char *) name;
    _Atomic uint64_t bytes, t_enq, next_open;
    atomic_uint tid, caller; /* the stream's track, the queuing thread's tid */
} work_slot;

/* The followed pools (counters), by label. */
#define MAX_POOLS 128
typedef struct {
    infinirt__pool *pool;
    size_t allocated, reserved;
    bool emitted;
    char name[80]; /* "memory LABEL" */
} pool_follow;

static atomic_bool g_active;    /* a trace is being written */
static atomic_bool g_accepting; /* events are still taken (false once the file is closed) */
static int g_fd = -1;
static pid_t g_pid;
static char g_pid_text[32]; /* ,"pid":P */
static size_t g_pid_text_n;
static char g_path[1100];
static pthread_mutex_t g_write_mu = PTHREAD_MUTEX_INITIALIZER; /* the file: g_pos, g_fd */
static off_t g_pos;                                            /* where the next event goes */
static off_t g_drop_off;                                       /* the dropped count's place in the header */
static uint64_t g_drop_written;                                /* the count the header shows */
static bool g_write_failed;
static pthread_mutex_t g_list_mu = PTHREAD_MUTEX_INITIALIZER; /* g_rings */
static ring *_Atomic g_rings;
static atomic_llong g_budget; /* file bytes left to hand out */
static atomic_uint_fast64_t g_dropped;
static pthread_key_t g_key;
static pthread_t g_writer;
static bool g_writer_started;
static pthread_mutex_t g_cv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static bool g_stop; /* g_cv_mu */
static work_slot *g_work;
static atomic_uint_fast64_t g_next_id;
static atomic_uint g_next_stream_tid;
static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pool_follow g_pools[MAX_POOLS];
static int g_npools;

static _Thread_local __attribute__((tls_model("initial-exec"))) ring *tl_ring;
/* The work the calling thread is queuing through a plugin entry: what
 * work_id hands out (once), and whether it did. */
static _Thread_local __attribute__((tls_model("initial-exec"))) uint64_t tl_work_id;
static _Thread_local __attribute__((tls_model("initial-exec"))) int tl_work_taken;

uint64_t infinirt__trace_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool infinirt__trace_enabled(void)
{
    return atomic_load_explicit(&g_active, memory_order_acquire);
}

/* ------------------------------------------------------------ the builder */

void infinirt__tb_raw(infinirt__tb *b, const char *s, size_t n)
{
    if (__builtin_expect(n > b->cap - b->n, 0))
        n = b->cap - b->n; /* cut: the caller checks b->n against cap */
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

void infinirt__tb_lit(infinirt__tb *b, const char *s)
{
    infinirt__tb_raw(b, s, strlen(s));
}

void infinirt__tb_str(infinirt__tb *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    infinirt__tb_raw(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s;;) {
        /* The run of characters that need no escape, in one copy. */
        const unsigned char *q = p;
        while (*q >= 0x20 && *q != '"' && *q != '\\')
            q++;
        infinirt__tb_raw(b, (const char *)p, (size_t)(q - p));
        if (*q == '\0')
            break;
        char e[6] = {'\\', (char)*q};
        if (*q < 0x20) {
            memcpy(e + 1, "u00", 3);
            e[4] = hex[*q >> 4];
            e[5] = hex[*q & 15];
            infinirt__tb_raw(b, e, 6);
        } else {
            infinirt__tb_raw(b, e, 2);
        }
        p = q + 1;
    }
    infinirt__tb_raw(b, "\"", 1);
}

void infinirt__tb_u64(infinirt__tb *b, uint64_t v)
{
    /* Two digits at a time: most of an event's text is numbers. */
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    char d[24];
    int i = (int)sizeof d;
    while (v >= 100) {
        unsigned k = (unsigned)(v % 100) * 2;
        v /= 100;
        d[--i] = pairs[k + 1];
        d[--i] = pairs[k];
    }
    if (v >= 10) {
        d[--i] = pairs[v * 2 + 1];
        d[--i] = pairs[v * 2];
    } else {
        d[--i] = (char)('0' + v);
    }
    infinirt__tb_raw(b, d + i, sizeof d - (size_t)i);
}

void infinirt__tb_i64(infinirt__tb *b, int64_t v)
{
    if (v < 0) {
        infinirt__tb_raw(b, "-", 1);
        infinirt__tb_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        infinirt__tb_u64(b, (uint64_t)v);
    }
}

void infinirt__tb_hex(infinirt__tb *b, const void *v)
{
    static const char hex[] = "0123456789abcdef";
    char d[24];
    int i = (int)sizeof d;
    uintptr_t x = (uintptr_t)v;
    d[--i] = '"';
    do {
        d[--i] = hex[x & 15];
        x >>= 4;
    } while (x != 0);
    d[--i] = 'x';
    d[--i] = '0';
    d[--i] = '"';
    infinirt__tb_raw(b, d + i, sizeof d - (size_t)i);
}

/* ns as microseconds, 3 decimals. */
static void tb_ts(infinirt__tb *b, uint64_t ns)
{
    infinirt__tb_u64(b, ns / 1000);
    unsigned f = (unsigned)(ns % 1000);
    char t[4] = {'.', (char)('0' + f / 100), (char)('0' + f / 10 % 10), (char)('0' + f % 10)};
    infinirt__tb_raw(b, t, 4);
}

void infinirt__trace_dev_label(char *out, size_t size, infiniDevice_t type, int id)
{
    infinirt__tb b = {out, 0, size - 1};
    infinirt__tb_lit(&b, infinirtGetDeviceTypeName(type));
    infinirt__tb_raw(&b, ":", 1);
    infinirt__tb_i64(&b, id);
    out[b.n] = '\0';
}

/* ----------------------------------------------------------------- rings */

static void writer_wake(void)
{
    pthread_cond_signal(&g_cv);
}

static void ring_exit(void *arg)
{
    ring *r = arg;
    if (tl_ring == r)
        tl_ring = NULL;
    atomic_store_explicit(&r->dead, true, memory_order_release);
}

static void emit(const char *s, size_t n);

/* The calling thread's ring, made at its first event. */
static ring *ring_mine(void)
{
    ring *r = tl_ring;
    if (__builtin_expect(r != NULL, 1))
        return r;
    r = calloc(1, sizeof *r);
    if (r == NULL || (r->buf = malloc(RING_BYTES)) == NULL) {
        free(r);
        return NULL;
    }
    r->tid = (uint32_t)syscall(SYS_gettid);
    r->pid_tid_n = (size_t)snprintf(r->pid_tid, sizeof r->pid_tid, ",\"pid\":%d,\"tid\":%u", (int)g_pid, r->tid);
    pthread_mutex_lock(&g_list_mu);
    r->next = atomic_load_explicit(&g_rings, memory_order_relaxed);
    atomic_store_explicit(&g_rings, r, memory_order_release);
    pthread_mutex_unlock(&g_list_mu);
    tl_ring = r;
    pthread_setspecific(g_key, r);
    char text[160];
    int len =
        snprintf(text, sizeof text,
                 ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"thread %u\"}}",
                 (int)g_pid, r->tid, r->tid);
    emit(text, (size_t)len);
    return r;
}

static bool budget_take(ring *r, size_t n)
{
    long long want = (long long)(n > BUDGET_GRAIN ? n : BUDGET_GRAIN);
    for (;;) {
        long long left = atomic_load_explicit(&g_budget, memory_order_relaxed);
        if (left < (long long)n)
            return false;
        long long take = left < want ? left : want;
        if (atomic_compare_exchange_weak(&g_budget, &left, left - take)) {
            r->budget += (size_t)take;
            return true;
        }
    }
}

static void drop(void)
{
    atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
}

/* Append one event's text (",\n{...}") to the calling thread's ring. */
static void emit(const char *s, size_t n)
{
    if (!atomic_load_explicit(&g_accepting, memory_order_acquire))
        return;
    ring *r = ring_mine();
    if (r == NULL || (r->budget < n && !budget_take(r, n))) {
        drop();
        return;
    }
    size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (h - t + n > RING_BYTES) {
        drop(); /* the writer is behind */
        if (!atomic_exchange_explicit(&r->woke, true, memory_order_relaxed))
            writer_wake();
        return;
    }
    size_t at = h & (RING_BYTES - 1), first = RING_BYTES - at < n ? RING_BYTES - at : n;
    memcpy(r->buf + at, s, first);
    memcpy(r->buf, s + first, n - first);
    r->budget -= n;
    atomic_store_explicit(&r->head, h + n, memory_order_release);
    if (h + n - t > RING_BYTES / 8 && !atomic_load_explicit(&r->woke, memory_order_relaxed)) {
        atomic_store_explicit(&r->woke, true, memory_order_relaxed);
        writer_wake();
    }
}

static void emit_tb(const infinirt__tb *b)
{
    if (b->n < b->cap) /* a full builder may have cut the event: never write half */
        emit(b->p, b->n);
    else
        drop();
}

/* ------------------------------------------------------------- the file */

static bool write_at(const void *p, size_t n, off_t at)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = pwrite(g_fd, c, n, at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!g_write_failed)
                INFINIRT__WARN("trace %s: writing failed (%s); the trace stops here", g_path,
                               w < 0 ? strerror(errno) : "nothing written");
            g_write_failed = true;
            return false;
        }
        c += w;
        n -= (size_t)w;
        at += w;
    }
    return true;
}

/* The footer after the last event, and the header's dropped count (g_write_mu). */
static void write_footer(bool final)
{
    uint64_t dropped = atomic_load(&g_dropped);
    char text[256];
    int len = 0;
    uint64_t now = infinirt__trace_now();
    if (final && dropped != 0)
        len =
            snprintf(text, sizeof text,
                     ",\n{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"trace\",\"name\":\"events dropped\",\"ts\":%llu.%03llu,"
                     "\"pid\":%d,\"tid\":%d,\"args\":{\"count\":%llu}}",
                     (unsigned long long)(now / 1000), (unsigned long long)(now % 1000), (int)g_pid, (int)g_pid,
                     (unsigned long long)dropped);
    len += snprintf(text + len, sizeof text - (size_t)len, "\n]}\n");
    if (g_write_failed || !write_at(text, (size_t)len, g_pos))
        return;
    if (final && ftruncate(g_fd, g_pos + len) != 0)
        (void)0; /* a pipe or a device: nothing past the end to cut */
    if (dropped != g_drop_written && g_drop_off > 0) {
        char num[21];
        int k = snprintf(num, sizeof num, "%-20llu", (unsigned long long)dropped);
        if (write_at(num, (size_t)k, g_drop_off))
            g_drop_written = dropped;
    }
}

/* Write what every ring holds (g_write_mu held). */
static void drain_locked(bool final)
{
    bool wrote = false;
    for (ring *r = atomic_load_explicit(&g_rings, memory_order_acquire); r != NULL; r = r->next) {
        size_t h = atomic_load_explicit(&r->head, memory_order_acquire);
        size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (h == t)
            continue;
        size_t at = t & (RING_BYTES - 1), n = h - t;
        size_t first = RING_BYTES - at < n ? RING_BYTES - at : n;
        if (!g_write_failed && write_at(r->buf + at, first, g_pos) &&
            (first == n || write_at(r->buf, n - first, g_pos + (off_t)first)))
            g_pos += (off_t)n;
        atomic_store_explicit(&r->woke, false, memory_order_relaxed);
        atomic_store_explicit(&r->tail, h, memory_order_release);
        wrote = true;
    }
    if (wrote || final || atomic_load(&g_dropped) != g_drop_written)
        write_footer(final);
    /* Rings of threads that have exited, once empty, are freed. */
    pthread_mutex_lock(&g_list_mu);
    ring *prev = NULL;
    for (ring *r = atomic_load_explicit(&g_rings, memory_order_relaxed), *next; r != NULL; r = next) {
        next = r->next;
        if (atomic_load_explicit(&r->dead, memory_order_acquire) &&
            atomic_load_explicit(&r->head, memory_order_acquire) == atomic_load(&r->tail)) {
            if (prev != NULL)
                prev->next = next;
            else
                atomic_store_explicit(&g_rings, next, memory_order_release);
            free(r->buf);
            free(r);
        } else {
            prev = r;
        }
    }
    pthread_mutex_unlock(&g_list_mu);
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_cv_mu);
    while (!g_stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WRITER_PERIOD_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_cv, &g_cv_mu, &until);
        pthread_mutex_unlock(&g_cv_mu);
        pthread_mutex_lock(&g_write_mu);
        drain_locked(false);
        pthread_mutex_unlock(&g_write_mu);
        pthread_mutex_lock(&g_cv_mu);
    }
    pthread_mutex_unlock(&g_cv_mu);
    return NULL;
}

/* At exit (and at dlclose): the last pass, the dropped note, and no
 * further events.  Not in a forked child: the file is the parent's. */
static void trace_finish(void)
{
    if (!atomic_load(&g_active) || getpid() != g_pid)
        return;
    if (g_writer_started) {
        pthread_mutex_lock(&g_cv_mu);
        g_stop = true;
        pthread_cond_signal(&g_cv);
        pthread_mutex_unlock(&g_cv_mu);
        pthread_join(g_writer, NULL);
        g_writer_started = false;
    }
    pthread_mutex_lock(&g_write_mu);
    atomic_store(&g_accepting, false);
    drain_locked(true);
    pthread_mutex_unlock(&g_write_mu);
    atomic_store(&g_active, false);
    atomic_store(&infinirt__trace_on, 0);
}

/* A forked child writes nothing: its events would interleave with the
 * parent's in one file. */
static void trace_forked(void)
{
    atomic_store(&g_accepting, false);
    atomic_store(&g_active, false);
    atomic_store(&infinirt__trace_on, 0);
    g_writer_started = false;
}

INFINIRT_API infiniStatus_t infinirtTraceFlush(void)
{
    INFINIRT__TRACE_ENTRY(infinirtTraceFlush, ());
    infiniStatus_t st = infinirt__ensure_init();
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (!atomic_load(&g_active))
        return INFINI_STATUS_SUCCESS;
    pthread_mutex_lock(&g_write_mu);
    if (atomic_load(&g_accepting))
        drain_locked(false);
    pthread_mutex_unlock(&g_write_mu);
    return INFINI_STATUS_SUCCESS;
}

/* The file name: %p becomes the process id (one trace per process). */
static void expand_path(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = in; *p != '\0' && o + 1 < n; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            int k = snprintf(out + o, n - o, "%d", (int)getpid());
            o = k > 0 && (size_t)k < n - o ? o + (size_t)k : n - 1;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

void infinirt__trace_start(const infinirt__config *cfg)
{
    if (cfg->trace[0] == '\0')
        return;
    g_pid = getpid();
    g_pid_text_n = (size_t)snprintf(g_pid_text, sizeof g_pid_text, ",\"pid\":%d", (int)g_pid);
    expand_path(cfg->trace, g_path, sizeof g_path);
    g_work = calloc(WORK_SLOTS, sizeof *g_work);
    if (g_work == NULL || pthread_key_create(&g_key, ring_exit) != 0) {
        INFINIRT__WARN("trace %s: out of memory; no trace is written", g_path);
        free(g_work);
        g_work = NULL;
        return;
    }
    /* Not blocking on a FIFO without a reader, and a regular file only:
     * the file is rewritten in place (its header, its footer). */
    g_fd = open(g_path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    struct stat st;
    const char *why = NULL;
    if (g_fd < 0 || fstat(g_fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (ftruncate(g_fd, 0) != 0 || fcntl(g_fd, F_SETFL, 0) != 0)
        why = strerror(errno);
    if (why != NULL) {
        INFINIRT__WARN("trace %s: cannot write it (%s); no trace is written", g_path, why);
        if (g_fd >= 0)
            close(g_fd);
        g_fd = -1;
        return;
    }
    const char *prog = program_invocation_short_name != NULL ? program_invocation_short_name : "?";
    char head[512];
    int n =
        snprintf(head, sizeof head,
                 "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"infinirt_version\":\"%d.%d.%d\",\"dropped_events\":",
                 INFINIRT_VERSION_MAJOR, INFINIRT_VERSION_MINOR, INFINIRT_VERSION_PATCH);
    g_drop_off = n;
    infinirt__tb b = {head, (size_t)n, sizeof head};
    INFINIRT__TB_LIT(&b, "0                   },\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    infinirt__tb_i64(&b, g_pid);
    INFINIRT__TB_LIT(&b, ",\"args\":{\"name\":");
    char pname[128];
    snprintf(pname, sizeof pname, "%.100s (infinirt)", prog);
    infinirt__tb_str(&b, pname);
    INFINIRT__TB_LIT(&b, "}}");
    if (!write_at(head, b.n, 0)) {
        close(g_fd);
        g_fd = -1;
        return;
    }
    g_pos = (off_t)b.n;
    write_footer(false);
    long long max = (long long)cfg->trace_max_mb << 20;
    atomic_store(&g_budget, max > (long long)b.n + FOOTER_ROOM ? max - (long long)b.n - FOOTER_ROOM : 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_store(&g_accepting, true);
    /* The writer takes no signal meant for the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    g_writer_started = pthread_create(&g_writer, NULL, writer_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (g_writer_started)
        pthread_setname_np(g_writer, "infinirt-trace");
    else
        INFINIRT__WARN("trace %s: no writer thread; events are written at infinirtTraceFlush and at exit", g_path);
    pthread_atfork(NULL, NULL, trace_forked);
    atexit(trace_finish);
    atomic_store_explicit(&g_active, true, memory_order_release);
    INFINIRT__INFO("trace: writing %s (at most %zu MiB)", g_path, cfg->trace_max_mb);
}

void infinirt__trace_settle(void)
{
    atomic_store(&infinirt__trace_on, atomic_load(&g_active) ? 1 : 0);
}

/* -------------------------------------------------------------- events */

#define TB(name)                \
    char name##_buf[EVENT_MAX]; \
    infinirt__tb name = {name##_buf, 0, sizeof name##_buf}

/* ,\n{"ph":PH,"cat":CAT,"name":NAME,"ts":TS - the names are the loader's own
 * words (no escaping needed) unless `escape`. */
static void head_x(infinirt__tb *b, const char *ph, const char *cat, const char *name, uint64_t ts, bool escape)
{
    INFINIRT__TB_LIT(b, ",\n{\"ph\":\"");
    infinirt__tb_lit(b, ph);
    INFINIRT__TB_LIT(b, "\",\"cat\":\"");
    infinirt__tb_lit(b, cat);
    INFINIRT__TB_LIT(b, "\",\"name\":");
    if (escape) {
        infinirt__tb_str(b, name);
    } else {
        INFINIRT__TB_LIT(b, "\"");
        infinirt__tb_lit(b, name);
        INFINIRT__TB_LIT(b, "\"");
    }
    INFINIRT__TB_LIT(b, ",\"ts\":");
    tb_ts(b, ts);
}

static void head(infinirt__tb *b, const char *ph, const char *cat, const char *name, uint64_t ts)
{
    head_x(b, ph, cat, name, ts, false);
}

static void pid_tid(infinirt__tb *b, uint32_t tid)
{
    infinirt__tb_raw(b, g_pid_text, g_pid_text_n);
    INFINIRT__TB_LIT(b, ",\"tid\":");
    infinirt__tb_u64(b, tid);
}

/* ,"pid":P,"tid":T of the calling thread. */
static void pid_my_tid(infinirt__tb *b)
{
    ring *r = ring_mine();
    if (r != NULL)
        infinirt__tb_raw(b, r->pid_tid, r->pid_tid_n);
    else
        pid_tid(b, (uint32_t)syscall(SYS_gettid));
}

static void dur(infinirt__tb *b, uint64_t t0, uint64_t t1)
{
    INFINIRT__TB_LIT(b, ",\"dur\":");
    tb_ts(b, t1 > t0 ? t1 - t0 : 0);
}

void infinirt__trace_call(const char *name, uint64_t t0, uint64_t t1, infiniStatus_t st, const char *args,
                          size_t args_len)
{
    if (!atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    TB(b);
    head(&b, "X", "call", name, t0);
    dur(&b, t0, t1);
    pid_my_tid(&b);
    INFINIRT__TB_LIT(&b, ",\"args\":{\"status\":\"");
    infinirt__tb_lit(&b, infinirtGetErrorName(st));
    INFINIRT__TB_LIT(&b, "\"");
    infinirt__tb_raw(&b, args, args_len);
    INFINIRT__TB_LIT(&b, "}}");
    emit_tb(&b);
}

void infinirt__trace_alloc(const char *what, const char *device, size_t bytes, const void *ptr, bool has_stream,
                           const void *stream)
{
    if (!atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    TB(b);
    head(&b, "i", "alloc", what, infinirt__trace_now());
    INFINIRT__TB_LIT(&b, ",\"s\":\"t\"");
    pid_my_tid(&b);
    INFINIRT__TB_LIT(&b, ",\"args\":{\"device\":");
    infinirt__tb_str(&b, device);
    INFINIRT__TB_LIT(&b, ",\"bytes\":");
    infinirt__tb_u64(&b, bytes);
    if (ptr != NULL) {
        INFINIRT__TB_LIT(&b, ",\"ptr\":");
        infinirt__tb_hex(&b, ptr);
    }
    if (has_stream) {
        INFINIRT__TB_LIT(&b, ",\"stream\":");
        infinirt__tb_hex(&b, stream);
    }
    INFINIRT__TB_LIT(&b, "}}");
    emit_tb(&b);
}

/* pool's entry (g_pool_mu held), made when it is new; NULL when full. */
static pool_follow *follow(infinirt__pool *pool)
{
    for (int i = 0; i < g_npools; i++)
        if (g_pools[i].pool == pool)
            return &g_pools[i];
    if (g_npools == MAX_POOLS)
        return NULL;
    pool_follow *f = &g_pools[g_npools++];
    *f = (pool_follow){.pool = pool};
    snprintf(f->name, sizeof f->name, "memory %s", infinirt__pool_label(pool));
    return f;
}

/* Start following pool's counters (allocated, reserved), under its label. */
static void pool_seen(infinirt__pool *pool)
{
    if (pool == NULL || !atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    pthread_mutex_lock(&g_pool_mu);
    (void)follow(pool);
    pthread_mutex_unlock(&g_pool_mu);
}

/* f's counter event, when its figures changed (g_pool_mu held). */
static void counter(pool_follow *f)
{
    infinirtAllocatorStats_t st;
    infinirt__pool_stats(f->pool, &st);
    if (f->emitted && st.allocated_bytes == f->allocated && st.reserved_bytes == f->reserved)
        return;
    f->emitted = true;
    f->allocated = st.allocated_bytes;
    f->reserved = st.reserved_bytes;
    TB(b);
    head(&b, "C", "memory", f->name, infinirt__trace_now());
    infinirt__tb_raw(&b, g_pid_text, g_pid_text_n);
    INFINIRT__TB_LIT(&b, ",\"args\":{\"allocated\":");
    infinirt__tb_u64(&b, st.allocated_bytes);
    INFINIRT__TB_LIT(&b, ",\"reserved\":");
    infinirt__tb_u64(&b, st.reserved_bytes);
    INFINIRT__TB_LIT(&b, "}}");
    emit_tb(&b);
}

void infinirt__trace_counters(infinirt__pool *pool)
{
    if (!atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    /* Under one lock, figures and timestamps in order: a counter track
     * never shows an older figure after a newer one. */
    pthread_mutex_lock(&g_pool_mu);
    if (pool != NULL) {
        pool_follow *f = follow(pool);
        if (f != NULL)
            counter(f);
    } else {
        for (int i = 0; i < g_npools; i++)
            counter(&g_pools[i]);
    }
    pthread_mutex_unlock(&g_pool_mu);
}

void infinirt__trace_pool_note(infinirt__pool *pool, int what, size_t bytes, const void *ptr)
{
    static const char *const names[] = {"segment reserve", "segment release", "trim", "oom retry"};
    if ((unsigned)what >= sizeof names / sizeof names[0])
        return;
    pool_seen(pool);
    infinirt__trace_alloc(names[what], infinirt__pool_label(pool), bytes, ptr, false, NULL);
}

void infinirt__trace_startup(const infinirt__plugin *p, uint64_t t0)
{
    if (!atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    uint64_t t1 = infinirt__trace_now();
    char name[96];
    snprintf(name, sizeof name, "start plugin %s", p->name);
    TB(b);
    head_x(&b, "X", "startup", name, t0, true);
    dur(&b, t0, t1);
    pid_my_tid(&b);
    INFINIRT__TB_LIT(&b, ",\"args\":{\"status\":");
    infinirt__tb_str(&b, infinirtGetPluginStatusString(p->status));
    INFINIRT__TB_LIT(&b, ",\"devices\":");
    infinirt__tb_i64(&b, p->device_count);
    INFINIRT__TB_LIT(&b, ",\"path\":");
    infinirt__tb_str(&b, p->path);
    INFINIRT__TB_LIT(&b, "}}");
    emit_tb(&b);
}

/* ------------------------------------------------------------ stream work */

const char *infinirt__trace_copy_name(int kind)
{
    static const char *const names[] = {"copy H2H", "copy H2D", "copy D2H", "copy D2D"};
    return (unsigned)kind < 4 ? names[kind] : "copy";
}

/* The stream's track: a tid of its own, named once. */
static uint32_t stream_tid(infinirt__stream *s)
{
    unsigned t = atomic_load_explicit(&s->trace_tid, memory_order_acquire);
    if (t != 0)
        return t;
    unsigned mine = STREAM_TID_BASE + atomic_fetch_add(&g_next_stream_tid, 1);
    if (!atomic_compare_exchange_strong(&s->trace_tid, &t, mine))
        return t;
    char label[48], hex[24];
    infinirt__trace_dev_label(label, sizeof label, s->dev->plugin->type, s->dev->id);
    if (s->is_default)
        snprintf(hex, sizeof hex, "NULL");
    else
        snprintf(hex, sizeof hex, "%p", s->native);
    char name[96];
    snprintf(name, sizeof name, "stream %s %s", label, hex);
    TB(b);
    INFINIRT__TB_LIT(&b, ",\n{\"ph\":\"M\",\"name\":\"thread_name\"");
    pid_tid(&b, mine);
    INFINIRT__TB_LIT(&b, ",\"args\":{\"name\":");
    infinirt__tb_str(&b, name);
    INFINIRT__TB_LIT(&b, "}}");
    emit_tb(&b);
    return mine;
}

/* What a work slot holds, as taken. */
typedef struct {
    const char *name;
    uint64_t bytes, t_enq, next;
    uint32_t tid, caller; /* the stream's track, the queuing thread */
} work_desc;

/* Take slot id's descriptor, once: false when it is gone (claimed, or
 * overwritten by later work). */
static bool slot_claim(uint64_t id, work_desc *d)
{
    work_slot *k = &g_work[id & (WORK_SLOTS - 1)];
    if (atomic_load(&k->id) != id)
        return false;
    d->name = atomic_load_explicit(&k->name, memory_order_relaxed);
    d->bytes = atomic_load_explicit(&k->bytes, memory_order_relaxed);
    d->tid = atomic_load_explicit(&k->tid, memory_order_relaxed);
    d->caller = atomic_load_explicit(&k->caller, memory_order_relaxed);
    d->t_enq = atomic_load_explicit(&k->t_enq, memory_order_relaxed);
    d->next = atomic_load_explicit(&k->next_open, memory_order_relaxed);
    uint64_t want = id;
    return atomic_compare_exchange_strong(&k->id, &want, 0);
}

/* The work's span on its stream's track and its flow: the start on the
 * queuing thread when it was queued (inside that call's span), the end at
 * the work's start.  Written together, by whoever ends the span, so a flow
 * never lacks an end (work that never runs, as in a native capture, has
 * neither). */
static void work_span(uint64_t id, const work_desc *d, uint64_t b0, uint64_t b1, const char *how)
{
    TB(s);
    INFINIRT__TB_LIT(&s, ",\n{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"enqueue\",\"id\":");
    infinirt__tb_u64(&s, id);
    pid_tid(&s, d->caller);
    INFINIRT__TB_LIT(&s, ",\"ts\":");
    tb_ts(&s, d->t_enq);
    INFINIRT__TB_LIT(&s, "}");
    emit_tb(&s);
    TB(b);
    head(&b, "X", "stream", d->name, b0);
    dur(&b, b0, b1);
    pid_tid(&b, d->tid);
    INFINIRT__TB_LIT(&b, ",\"args\":{\"bytes\":");
    infinirt__tb_u64(&b, d->bytes);
    if (how != NULL) {
        INFINIRT__TB_LIT(&b, ",\"end\":");
        infinirt__tb_str(&b, how);
    }
    INFINIRT__TB_LIT(&b, "}}");
    emit_tb(&b);
    TB(f);
    INFINIRT__TB_LIT(&f, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"enqueue\",\"id\":");
    infinirt__tb_u64(&f, id);
    pid_tid(&f, d->tid);
    INFINIRT__TB_LIT(&f, ",\"ts\":");
    tb_ts(&f, b0);
    INFINIRT__TB_LIT(&f, "}");
    emit_tb(&f);
}

void infinirt__trace_work_begin(infinirt__trace_work *w, infinirt__stream *s, const char *name, uint64_t bytes,
                                bool done_at_return)
{
    w->id = 0;
    w->s = s;
    w->done_at_return = done_at_return;
    if (!atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    ring *r = ring_mine();
    uint32_t tid = stream_tid(s);
    uint64_t id = atomic_fetch_add(&g_next_id, 1) + 1;
    work_slot *k = &g_work[id & (WORK_SLOTS - 1)];
    atomic_store(&k->id, 0);
    atomic_store_explicit(&k->name, name, memory_order_relaxed);
    atomic_store_explicit(&k->bytes, bytes, memory_order_relaxed);
    atomic_store_explicit(&k->tid, tid, memory_order_relaxed);
    atomic_store_explicit(&k->caller, r != NULL ? r->tid : 0u, memory_order_relaxed);
    w->t0 = infinirt__trace_now();
    atomic_store_explicit(&k->t_enq, w->t0, memory_order_relaxed);
    atomic_store_explicit(&k->next_open, 0, memory_order_relaxed);
    atomic_store(&k->id, id);
    w->id = id;
    w->saved_id = tl_work_id;
    w->saved_taken = tl_work_taken;
    tl_work_id = id;
    tl_work_taken = 0;
}

void infinirt__trace_work_end(infinirt__trace_work *w, infiniStatus_t st)
{
    if (w->id == 0)
        return;
    uint64_t t1 = infinirt__trace_now();
    int taken = tl_work_taken;
    tl_work_id = w->saved_id;
    tl_work_taken = w->saved_taken;
    work_desc d;
    if (st != INFINI_STATUS_SUCCESS) {
        (void)slot_claim(w->id, &d); /* nothing was queued */
        return;
    }
    if (taken)
        return; /* the plugin reports it (work_ran) */
    infinirt__device *dev = w->s->dev;
    if (w->done_at_return || dev->done_at_return || dev->trace_reports) {
        /* Done within the entry: the entry's time is the work's. */
        if (slot_claim(w->id, &d))
            work_span(w->id, &d, w->t0, t1, NULL);
        return;
    }
    /* A plugin that does not report: the span ends when the loader next
     * sees the stream idle (infinirt__trace_stream_idle). */
    work_slot *k = &g_work[w->id & (WORK_SLOTS - 1)];
    uint64_t head_id = atomic_load(&w->s->trace_open);
    do
        atomic_store_explicit(&k->next_open, head_id, memory_order_relaxed);
    while (!atomic_compare_exchange_weak(&w->s->trace_open, &head_id, w->id));
}

void infinirt__trace_stream_idle(infinirt__stream *s)
{
    if (s == NULL || !atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    uint64_t id = atomic_exchange(&s->trace_open, 0);
    if (id == 0)
        return;
    uint64_t now = infinirt__trace_now();
    while (id != 0) {
        work_desc d;
        if (!slot_claim(id, &d)) {
            drop();
            return;
        }
        work_span(id, &d, d.t_enq, now, "seen complete");
        id = d.next;
    }
}

void infinirt__trace_device_idle(infinirt__device *dev)
{
    if (dev == NULL || !atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    infinirt__trace_stream_idle(dev->default_stream);
    pthread_mutex_lock(&dev->lock);
    for (infinirt__stream *s = dev->streams; s != NULL; s = s->next)
        infinirt__trace_stream_idle(s);
    pthread_mutex_unlock(&dev->lock);
}

#define TRACED(s, name, bytes, sync, call)                            \
    do {                                                              \
        infinirt__trace_work w;                                       \
        infinirt__trace_work_begin(&w, (s), (name), (bytes), (sync)); \
        infiniStatus_t st = (call);                                   \
        infinirt__trace_work_end(&w, st);                             \
        return st;                                                    \
    } while (0)

__attribute__((noinline, cold)) infiniStatus_t infinirt__traced_memcpy(infinirt__device *d, void *dst,
                                                                       const void *src, size_t n, int kind)
{
    TRACED(d->default_stream, infinirt__trace_copy_name(kind), n, true,
           d->plugin->ops->memcpy(d->index, dst, src, n, kind));
}

__attribute__((noinline, cold)) infiniStatus_t infinirt__traced_memcpy_async(infinirt__stream *s, void *dst,
                                                                             const void *src, size_t n, int kind)
{
    TRACED(s, infinirt__trace_copy_name(kind), n, false,
           s->dev->plugin->ops->memcpy_async(s->dev->index, dst, src, n, kind, s->ps));
}

__attribute__((noinline, cold)) infiniStatus_t infinirt__traced_memset(infinirt__device *d, void *p, int value,
                                                                       size_t n)
{
    TRACED(d->default_stream, "fill", n, true, d->plugin->ops->memset(d->index, p, value, n));
}

__attribute__((noinline, cold)) infiniStatus_t infinirt__traced_memset_async(infinirt__stream *s, void *p, int value,
                                                                             size_t n)
{
    TRACED(s, "fill", n, false, s->dev->plugin->ops->memset_async(s->dev->index, p, value, n, s->ps));
}

__attribute__((noinline, cold)) infiniStatus_t infinirt__traced_host_fn(infinirt__stream *s, infinirtHostFn_t fn,
                                                                        void *user_data)
{
    TRACED(s, "host function", 0, false, s->dev->plugin->ops->launch_host_func(s->dev->index, s->ps, fn, user_data));
}

__attribute__((noinline, cold)) infiniStatus_t infinirt__traced_event_record(infinirt__stream *s, void *pe)
{
    TRACED(s, "event record", 0, false, s->dev->plugin->ops->event_record(s->dev->index, pe, s->ps));
}

__attribute__((noinline, cold)) infiniStatus_t infinirt__traced_wait_event(infinirt__stream *s, void *pe)
{
    TRACED(s, "event wait", 0, false, s->dev->plugin->ops->stream_wait_event(s->dev->index, s->ps, pe));
}

/* ------------------------------------------------------- the plugin hooks */

static uint64_t hook_work_id(void)
{
    uint64_t id = tl_work_id;
    if (id != 0) {
        tl_work_id = 0; /* once per entry */
        tl_work_taken = 1;
    }
    return id;
}

static void hook_work_ran(uint64_t id, uint64_t begin_ns, uint64_t end_ns)
{
    if (id == 0 || !atomic_load_explicit(&g_active, memory_order_relaxed))
        return;
    work_desc d;
    if (!slot_claim(id, &d)) {
        drop();
        return;
    }
    work_span(id, &d, begin_ns, end_ns > begin_ns ? end_ns : begin_ns, NULL);
}

void infinirt__trace_plugin_hooks(infinirtPluginTrace *t)
{
    *t = (infinirtPluginTrace){
        .struct_size = sizeof *t,
        .plugin_flags = 0,
        .work_id = hook_work_id,
        .work_ran = hook_work_ran,
    };
}
