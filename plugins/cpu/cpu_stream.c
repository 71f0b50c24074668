/*
 * cpu_stream.c - streams.  Inline mode: objects without a thread, whose work
 * is done at once.  Async mode: worker threads draining in-order command
 * queues, blocking streams ordered with the device's default stream (the
 * scheme is in cpu.h).
 */
#define _GNU_SOURCE
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

enum cmd_kind { CMD_COPY, CMD_FILL, CMD_HOST_FN, CMD_RECORD, CMD_WAIT, CMD_AFTER };

typedef struct cmd {
    enum cmd_kind kind;
    struct cmd *next;
    union {
        struct { void *dst; const void *src; size_t n; } copy;
        struct { void *dst; int value; size_t n; } fill;
        struct { infinirtPluginHostFn fn; void *user; } host;
        struct { cpu_event *e; uint64_t gen; } ev;
        /* Wait until stream s has completed `count` commands. */
        struct { cpu_stream *s; uint64_t count; } after;
    } u;
} cmd;

struct cpu_stream {
    infinirtCpuStreamHeader pub; /* first: the public view (infinirt_cpu.h) */
    cpu_device *dev;
    bool blocking;               /* ordered with the default stream */
    bool is_default;
    /* The owner, each CMD_AFTER aimed at the stream and each host thread
     * waiting on it: the memory outlives stream_free while they last. */
    atomic_int refs;
    bool has_thread;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv_work;      /* a command was queued, or stop */
    pthread_cond_t cv_done;      /* a command completed while waiters > 0 */
    int waiters;
    cmd *head, *tail;
    uint64_t queued, done;       /* commands queued / completed */
    uint64_t after_default;      /* blocking: the default stream's count we already wait for */
    uint64_t covered;            /* blocking: our count the default stream already waits for */
    bool stop;
    cpu_stream *next;            /* in dev->streams (dev->lock) */
};

bool cpu__inline = true;

/* ------------------------------------------------------------ lifetime */

static void stream_acquire(cpu_stream *s)
{
    atomic_fetch_add(&s->refs, 1);
}

static void stream_release(cpu_stream *s)
{
    if (atomic_fetch_sub(&s->refs, 1) == 1) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv_work);
        pthread_cond_destroy(&s->cv_done);
        free(s);
    }
}

/* Wait until s has completed `count` commands. */
static void wait_count(cpu_stream *s, uint64_t count)
{
    pthread_mutex_lock(&s->mu);
    if (s->done < count) {
        s->waiters++;
        while (s->done < count)
            pthread_cond_wait(&s->cv_done, &s->mu);
        s->waiters--;
    }
    pthread_mutex_unlock(&s->mu);
}

/* --------------------------------------------------------------- workers */

static void run(cmd *c)
{
    switch (c->kind) {
    case CMD_COPY:
        memmove(c->u.copy.dst, c->u.copy.src, c->u.copy.n);
        break;
    case CMD_FILL:
        memset(c->u.fill.dst, c->u.fill.value, c->u.fill.n);
        break;
    case CMD_HOST_FN:
        c->u.host.fn(c->u.host.user);
        break;
    case CMD_RECORD:
        cpu__event_complete(c->u.ev.e, c->u.ev.gen);
        cpu__event_put(c->u.ev.e);
        break;
    case CMD_WAIT:
        /* Blocks this stream's worker only: the host never waits here. */
        cpu__event_wait_gen(c->u.ev.e, c->u.ev.gen);
        cpu__event_put(c->u.ev.e);
        break;
    case CMD_AFTER:
        wait_count(c->u.after.s, c->u.after.count);
        stream_release(c->u.after.s);
        break;
    }
}

static void *worker(void *arg)
{
    cpu_stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->head == NULL && !s->stop)
            pthread_cond_wait(&s->cv_work, &s->mu);
        if (s->head == NULL)
            break; /* stopped, and drained */
        cmd *c = s->head;
        pthread_mutex_unlock(&s->mu);
        run(c);
        pthread_mutex_lock(&s->mu);
        /* Dequeue only after running, so `done` counts finished work. */
        s->head = c->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->done++;
        free(c);
        if (s->waiters > 0)
            pthread_cond_broadcast(&s->cv_done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------ native ops */

static infiniStatus_t native_enqueue(void *stream, infinirtCpuWorkFn fn, void *user_data)
{
    if (stream == NULL || fn == NULL)
        return INFINI_STATUS_NULL_POINTER;
    cpu_stream *s = stream;
    return cpu__host_fn(s->dev->index, s, fn, user_data);
}

static infiniStatus_t native_query(void *stream, int *idle)
{
    if (stream == NULL || idle == NULL)
        return INFINI_STATUS_NULL_POINTER;
    cpu_stream *s = stream;
    cpu__stream_query(s->dev->index, s, idle);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t native_synchronize(void *stream)
{
    if (stream == NULL)
        return INFINI_STATUS_NULL_POINTER;
    cpu_stream *s = stream;
    return cpu__stream_sync(s->dev->index, s);
}

static const infinirtCpuStreamOps g_inline_ops = {
    .struct_size = sizeof(infinirtCpuStreamOps),
    .flags = INFINIRT_CPU_STREAM_INLINE,
    .enqueue = native_enqueue,
    .query = native_query,
    .synchronize = native_synchronize,
};

static const infinirtCpuStreamOps g_async_ops = {
    .struct_size = sizeof(infinirtCpuStreamOps),
    .flags = 0,
    .enqueue = native_enqueue,
    .query = native_query,
    .synchronize = native_synchronize,
};

/* --------------------------------------------------------------- streams */

static infiniStatus_t stream_create(cpu_device *d, uint32_t flags, bool is_default, cpu_stream **out)
{
    cpu_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    s->pub.ops = cpu__inline ? &g_inline_ops : &g_async_ops;
    s->dev = d;
    s->is_default = is_default;
    s->blocking = !is_default && !(flags & INFINIRT_PLUGIN_STREAM_NON_BLOCKING);
    atomic_init(&s->refs, 1);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_work, NULL);
    pthread_cond_init(&s->cv_done, NULL);
    if (!cpu__inline) {
        if (pthread_create(&s->thread, NULL, worker, s) != 0) {
            stream_release(s);
            return INFINI_STATUS_OUT_OF_MEMORY;
        }
        s->has_thread = true;
        pthread_mutex_lock(&d->lock);
        s->next = d->streams;
        d->streams = s;
        pthread_mutex_unlock(&d->lock);
    }
    *out = s;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__stream_new(int dev, uint32_t flags, void **out)
{
    cpu_stream *s;
    infiniStatus_t st = stream_create(cpu__device(dev), flags, false, &s);
    if (st == INFINI_STATUS_SUCCESS)
        *out = s;
    return st;
}

static void stream_stop(cpu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL); /* the worker drains the queue first */
}

void cpu__stream_free(void *stream)
{
    cpu_stream *s = stream;
    if (s->has_thread) {
        cpu_device *d = s->dev;
        pthread_mutex_lock(&d->lock);
        for (cpu_stream **pp = &d->streams; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == s) {
                *pp = s->next;
                break;
            }
        }
        pthread_mutex_unlock(&d->lock);
        stream_stop(s);
    }
    stream_release(s);
}

void cpu__shutdown_streams(void)
{
    for (int i = 0; i < cpu__device_count(); i++) {
        cpu_device *d = cpu__device(i);
        pthread_mutex_lock(&d->lock);
        cpu_stream *s = d->streams;
        d->streams = NULL;
        atomic_store(&d->default_stream, NULL);
        pthread_mutex_unlock(&d->lock);
        while (s != NULL) {
            cpu_stream *next = s->next;
            stream_stop(s);
            stream_release(s);
            s = next;
        }
    }
}

/* The device's default stream (async mode), created on first use so devices
 * nobody touches cost no thread. */
static cpu_stream *default_stream(int dev)
{
    cpu_device *d = cpu__device(dev);
    cpu_stream *s = atomic_load_explicit(&d->default_stream, memory_order_acquire);
    if (s != NULL)
        return s;
    cpu_stream *n;
    if (stream_create(d, 0, true, &n) != INFINI_STATUS_SUCCESS)
        return NULL;
    if (atomic_compare_exchange_strong(&d->default_stream, &s, n))
        return n;
    cpu__stream_free(n); /* another thread won the race; s is its stream */
    return s;
}

/* ------------------------------------------------------------- ordering */

static cmd *new_after(cpu_stream *target, uint64_t count)
{
    cmd *w = malloc(sizeof *w);
    if (w == NULL)
        return NULL;
    w->kind = CMD_AFTER;
    w->next = NULL;
    w->u.after.s = target;
    w->u.after.count = count;
    stream_acquire(target);
    return w;
}

static void free_afters(cmd *w)
{
    while (w != NULL) {
        cmd *next = w->next;
        stream_release(w->u.after.s);
        free(w);
        w = next;
    }
}

enum pending_set {
    FOR_DEFAULT,  /* blocking streams the default stream does not yet wait for */
    FOR_SYNC,     /* a synchronous copy: blocking streams and the default one */
    FOR_DEVICE,   /* a device synchronize: every stream */
};

/* The streams of d in `set` that have work not yet completed, with the
 * count to reach, as a list of CMD_AFTER (each holding its stream); -1 out
 * of memory. */
static int pending_streams(cpu_device *d, enum pending_set set, cmd **out)
{
    cmd *list = NULL;
    pthread_mutex_lock(&d->lock);
    for (cpu_stream *s = d->streams; s != NULL; s = s->next) {
        bool member = set == FOR_DEVICE || s->blocking || (set == FOR_SYNC && s->is_default);
        if (!member)
            continue;
        pthread_mutex_lock(&s->mu);
        uint64_t q = s->queued;
        bool need = s->done < q && !(set == FOR_DEFAULT && q <= s->covered);
        pthread_mutex_unlock(&s->mu);
        if (!need)
            continue;
        cmd *w = new_after(s, q);
        if (w == NULL) {
            pthread_mutex_unlock(&d->lock);
            free_afters(list);
            return -1;
        }
        w->next = list;
        list = w;
    }
    pthread_mutex_unlock(&d->lock);
    *out = list;
    return 0;
}

static void append_locked(cpu_stream *s, cmd *c)
{
    c->next = NULL;
    if (s->tail != NULL)
        s->tail->next = c;
    else
        s->head = c;
    s->tail = c;
    s->queued++;
}

/* Queue c on s (async mode), behind the waits blocking-stream order asks
 * for.  c is owned by the queue afterwards, or freed on failure. */
static infiniStatus_t enqueue(cpu_stream *s, cmd *c)
{
    cpu_device *d = s->dev;
    cmd *waits = NULL;
    if (s->is_default) {
        if (pending_streams(d, FOR_DEFAULT, &waits) != 0)
            goto oom;
    } else if (s->blocking) {
        cpu_stream *D = atomic_load_explicit(&d->default_stream, memory_order_acquire);
        if (D != NULL) {
            pthread_mutex_lock(&D->mu);
            uint64_t q = D->done < D->queued ? D->queued : 0;
            pthread_mutex_unlock(&D->mu);
            if (q > 0 && (waits = new_after(D, q)) == NULL)
                goto oom;
        }
    }

    pthread_mutex_lock(&s->mu);
    cmd *first = NULL; /* the waits appended (default stream) */
    if (waits != NULL && !s->is_default) {
        /* Decided under s->mu, in one section with appending c, so a
         * command that skips the wait comes after the one that queued it. */
        if (waits->u.after.count > s->after_default) {
            s->after_default = waits->u.after.count;
            append_locked(s, waits);
            waits = NULL;
        }
    } else if (waits != NULL) {
        first = waits;
        for (cmd *w = waits, *next; w != NULL; w = next) {
            next = w->next;
            append_locked(s, w);
        }
        waits = NULL;
    }
    /* What the queued command holds is taken last, when nothing can fail:
     * a record's generation is never left without a completion. */
    if (c->kind == CMD_RECORD || c->kind == CMD_WAIT)
        atomic_fetch_add(&c->u.ev.e->refs, 1);
    if (c->kind == CMD_RECORD)
        c->u.ev.gen = cpu__event_next_gen(c->u.ev.e);
    append_locked(s, c);
    /* Only now (the waits are queued, and cannot be dequeued while we hold
     * s->mu) may other default-stream commands skip those streams. */
    for (cmd *w = first; w != NULL && w != c; w = w->next) {
        cpu_stream *b = w->u.after.s;
        pthread_mutex_lock(&b->mu);
        if (w->u.after.count > b->covered)
            b->covered = w->u.after.count;
        pthread_mutex_unlock(&b->mu);
    }
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    free_afters(waits); /* a wait another command queued first */
    return INFINI_STATUS_SUCCESS;
oom:
    free(c);
    return INFINI_STATUS_OUT_OF_MEMORY;
}

static infiniStatus_t submit(int dev, void *stream, const cmd *t)
{
    cpu_stream *s = stream != NULL ? stream : default_stream(dev);
    if (s == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    cmd *c = malloc(sizeof *c);
    if (c == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    *c = *t;
    return enqueue(s, c);
}

/* Wait on the host for the commands of a pending_streams list. */
static void wait_afters(cmd *list)
{
    for (cmd *w = list; w != NULL; w = w->next)
        wait_count(w->u.after.s, w->u.after.count);
    free_afters(list);
}

/* ------------------------------------------------------------ operations */

infiniStatus_t cpu__copy(int dev, void *stream, void *dst, const void *src, size_t n)
{
    if (cpu__inline) {
        memmove(dst, src, n);
        return INFINI_STATUS_SUCCESS;
    }
    cmd t = {.kind = CMD_COPY, .u.copy = {dst, src, n}};
    return submit(dev, stream, &t);
}

infiniStatus_t cpu__fill(int dev, void *stream, void *dst, int value, size_t n)
{
    if (cpu__inline) {
        memset(dst, value, n);
        return INFINI_STATUS_SUCCESS;
    }
    cmd t = {.kind = CMD_FILL, .u.fill = {dst, value, n}};
    return submit(dev, stream, &t);
}

infiniStatus_t cpu__host_fn(int dev, void *stream, infinirtPluginHostFn fn, void *user)
{
    if (cpu__inline) {
        fn(user);
        return INFINI_STATUS_SUCCESS;
    }
    cmd t = {.kind = CMD_HOST_FN, .u.host = {fn, user}};
    return submit(dev, stream, &t);
}

infiniStatus_t cpu__record(int dev, void *stream, cpu_event *e)
{
    if (cpu__inline) {
        cpu__event_record_now(e);
        return INFINI_STATUS_SUCCESS;
    }
    cmd t = {.kind = CMD_RECORD, .u.ev = {e, 0}};
    return submit(dev, stream, &t);
}

infiniStatus_t cpu__wait_event(int dev, void *stream, cpu_event *e)
{
    uint64_t gen = cpu__event_pending_gen(e);
    if (gen == 0)
        return INFINI_STATUS_SUCCESS; /* nothing to wait for: never recorded, or complete */
    if (cpu__inline) {
        /* Only a record another thread is completing right now. */
        cpu__event_wait_gen(e, gen);
        return INFINI_STATUS_SUCCESS;
    }
    cmd t = {.kind = CMD_WAIT, .u.ev = {e, gen}};
    return submit(dev, stream, &t);
}

infiniStatus_t cpu__stream_sync(int dev, void *stream)
{
    if (cpu__inline)
        return INFINI_STATUS_SUCCESS;
    cpu_stream *s = stream;
    if (s == NULL && (s = atomic_load_explicit(&cpu__device(dev)->default_stream, memory_order_acquire)) == NULL)
        return INFINI_STATUS_SUCCESS; /* no default stream yet: nothing was queued */
    pthread_mutex_lock(&s->mu);
    uint64_t q = s->queued;
    pthread_mutex_unlock(&s->mu);
    wait_count(s, q);
    return INFINI_STATUS_SUCCESS;
}

void cpu__stream_query(int dev, void *stream, int *idle)
{
    *idle = 1;
    if (cpu__inline)
        return;
    cpu_stream *s = stream;
    if (s == NULL && (s = atomic_load_explicit(&cpu__device(dev)->default_stream, memory_order_acquire)) == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    *idle = s->done >= s->queued;
    pthread_mutex_unlock(&s->mu);
}

/* The streams are held by reference while waited for, not under d->lock:
 * a host function running on one of them may itself queue work (which
 * takes d->lock). */
infiniStatus_t cpu__device_sync(int dev)
{
    if (cpu__inline)
        return INFINI_STATUS_SUCCESS;
    cmd *list;
    if (pending_streams(cpu__device(dev), FOR_DEVICE, &list) != 0)
        return INFINI_STATUS_OUT_OF_MEMORY;
    wait_afters(list);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__sync_point(int dev)
{
    if (cpu__inline)
        return INFINI_STATUS_SUCCESS;
    cmd *list;
    if (pending_streams(cpu__device(dev), FOR_SYNC, &list) != 0)
        return INFINI_STATUS_OUT_OF_MEMORY;
    wait_afters(list);
    return INFINI_STATUS_SUCCESS;
}
