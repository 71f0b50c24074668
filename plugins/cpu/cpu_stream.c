/*
 * cpu_stream.c - streams as worker threads with in-order command queues, and
 * events as generation counters completed by those workers.
 */
#define _GNU_SOURCE
#include "cpu.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum cmd_kind { CMD_COPY, CMD_FILL, CMD_HOST_FN, CMD_RECORD, CMD_WAIT };

typedef struct cmd {
    enum cmd_kind kind;
    struct cmd *next;
    union {
        struct { void *dst; const void *src; size_t n; } copy;
        struct { void *dst; int value; size_t n; } fill;
        struct { infinirtPluginHostFn fn; void *user; } host;
        struct { cpu_event *e; uint64_t gen; } ev;
    } u;
} cmd;

struct cpu_stream {
    cpu_device *dev;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv_work;   /* signalled when a command is queued or stop */
    pthread_cond_t cv_idle;   /* signalled when the queue drains */
    cmd *head, *tail;
    uint64_t queued, done;    /* commands queued / completed */
    bool stop;
    int pins;                 /* device syncs waiting on it (dev->lock) */
    cpu_stream *next;         /* in dev->streams */
};

double cpu__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- events */

cpu_event *cpu__event_new(int dev, uint32_t flags)
{
    cpu_event *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->flags = flags;
    e->device = dev;
    atomic_init(&e->refs, 1);
    return e;
}

/* Events are freed by whoever drops the last reference: the handle
 * (event_destroy), a queued record or a queued wait.  The count is a C11
 * atomic and every access to the event's state is under its mutex, which
 * the last holder no longer shares with anyone when it destroys it; the
 * loader keeps its own reference while a thread is inside a call on the
 * event.  threads.event_teardown destroys events in each of those ways
 * under ThreadSanitizer (and fails on a non-atomic count or a record that
 * drops its reference before completing the event). */
void cpu__event_put(cpu_event *e)
{
    if (atomic_fetch_sub(&e->refs, 1) == 1) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        free(e);
    }
}

static void event_complete(cpu_event *e, uint64_t gen)
{
    double now = cpu__now_ms();
    pthread_mutex_lock(&e->mu);
    if (gen > e->completed) {
        e->completed = gen;
        e->completed_at_ms = now;
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static void event_wait_gen(cpu_event *e, uint64_t gen)
{
    pthread_mutex_lock(&e->mu);
    while (e->completed < gen)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
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
        event_complete(c->u.ev.e, c->u.ev.gen);
        cpu__event_put(c->u.ev.e);
        break;
    case CMD_WAIT:
        /* Blocks this stream's worker only: the host never waits here. */
        event_wait_gen(c->u.ev.e, c->u.ev.gen);
        cpu__event_put(c->u.ev.e);
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
        if (s->head == NULL && s->stop)
            break;
        cmd *c = s->head;
        pthread_mutex_unlock(&s->mu);
        run(c);
        pthread_mutex_lock(&s->mu);
        /* Dequeue only after running, so "queue empty" means "all done". */
        s->head = c->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->done++;
        free(c);
        if (s->head == NULL)
            pthread_cond_broadcast(&s->cv_idle);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int cpu__stream_new(cpu_device *d, cpu_stream **out)
{
    cpu_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    s->dev = d;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_work, NULL);
    pthread_cond_init(&s->cv_idle, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv_work);
        pthread_cond_destroy(&s->cv_idle);
        free(s);
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    s->next = d->streams;
    d->streams = s;
    pthread_mutex_unlock(&d->lock);
    *out = s;
    return 0;
}

void cpu__stream_sync(cpu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    while (s->head != NULL)
        pthread_cond_wait(&s->cv_idle, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

bool cpu__stream_idle(cpu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    bool idle = s->head == NULL;
    pthread_mutex_unlock(&s->mu);
    return idle;
}

static void stream_stop(cpu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL); /* the worker drains the queue first */
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_work);
    pthread_cond_destroy(&s->cv_idle);
}

void cpu__stream_free(cpu_stream *s)
{
    cpu_device *d = s->dev;
    pthread_mutex_lock(&d->lock);
    for (cpu_stream **pp = &d->streams; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    while (s->pins > 0)
        pthread_cond_wait(&d->unpinned, &d->lock);
    pthread_mutex_unlock(&d->lock);
    stream_stop(s);
    free(s);
}

void cpu__device_sync(cpu_device *d)
{
    /* Pin the streams instead of holding d->lock while waiting: a host
     * function running on one of them may itself queue work (which takes
     * d->lock to find the default stream). */
    pthread_mutex_lock(&d->lock);
    size_t n = 0;
    for (cpu_stream *s = d->streams; s != NULL; s = s->next)
        n++;
    cpu_stream **pinned = malloc((n ? n : 1) * sizeof *pinned);
    if (pinned == NULL) {
        /* No memory to pin: wait under the lock rather than not at all. */
        for (cpu_stream *s = d->streams; s != NULL; s = s->next)
            cpu__stream_sync(s);
        pthread_mutex_unlock(&d->lock);
        return;
    }
    n = 0;
    for (cpu_stream *s = d->streams; s != NULL; s = s->next) {
        s->pins++;
        pinned[n++] = s;
    }
    pthread_mutex_unlock(&d->lock);
    for (size_t i = 0; i < n; i++)
        cpu__stream_sync(pinned[i]);
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < n; i++)
        pinned[i]->pins--;
    pthread_cond_broadcast(&d->unpinned);
    pthread_mutex_unlock(&d->lock);
    free(pinned);
}

void cpu__shutdown_streams(void)
{
    for (int i = 0; i < cpu__device_count(); i++) {
        cpu_device *d = cpu__device(i);
        pthread_mutex_lock(&d->lock);
        cpu_stream *s = d->streams;
        d->streams = NULL;
        d->default_stream = NULL;
        pthread_mutex_unlock(&d->lock);
        while (s != NULL) {
            cpu_stream *next = s->next;
            stream_stop(s);
            free(s);
            s = next;
        }
    }
}

cpu_stream *cpu__resolve(int dev, void *stream)
{
    if (stream != NULL)
        return stream;
    cpu_device *d = cpu__device(dev);
    pthread_mutex_lock(&d->lock);
    cpu_stream *s = d->default_stream;
    pthread_mutex_unlock(&d->lock);
    if (s != NULL)
        return s;
    /* Created on first use so devices nobody touches cost no thread. */
    cpu_stream *n;
    if (cpu__stream_new(d, &n) != 0)
        return NULL;
    pthread_mutex_lock(&d->lock);
    if (d->default_stream == NULL) {
        d->default_stream = n;
        n = NULL;
    }
    s = d->default_stream;
    pthread_mutex_unlock(&d->lock);
    if (n != NULL)
        cpu__stream_free(n); /* another thread won the race */
    return s;
}

static int enqueue(cpu_stream *s, cmd *c)
{
    c->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->tail != NULL)
        s->tail->next = c;
    else
        s->head = c;
    s->tail = c;
    s->queued++;
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static cmd *new_cmd(enum cmd_kind k)
{
    cmd *c = calloc(1, sizeof *c);
    if (c != NULL)
        c->kind = k;
    return c;
}

int cpu__enqueue_copy(cpu_stream *s, void *dst, const void *src, size_t n)
{
    cmd *c = new_cmd(CMD_COPY);
    if (c == NULL)
        return -1;
    c->u.copy.dst = dst;
    c->u.copy.src = src;
    c->u.copy.n = n;
    return enqueue(s, c);
}

int cpu__enqueue_fill(cpu_stream *s, void *dst, int value, size_t n)
{
    cmd *c = new_cmd(CMD_FILL);
    if (c == NULL)
        return -1;
    c->u.fill.dst = dst;
    c->u.fill.value = value;
    c->u.fill.n = n;
    return enqueue(s, c);
}

int cpu__enqueue_host_fn(cpu_stream *s, infinirtPluginHostFn fn, void *user)
{
    cmd *c = new_cmd(CMD_HOST_FN);
    if (c == NULL)
        return -1;
    c->u.host.fn = fn;
    c->u.host.user = user;
    return enqueue(s, c);
}

int cpu__enqueue_record(cpu_stream *s, cpu_event *e)
{
    cmd *c = new_cmd(CMD_RECORD);
    if (c == NULL)
        return -1;
    atomic_fetch_add(&e->refs, 1); /* the queued record keeps the event alive */
    pthread_mutex_lock(&e->mu);
    c->u.ev.gen = ++e->recorded;
    pthread_mutex_unlock(&e->mu);
    c->u.ev.e = e;
    return enqueue(s, c);
}

int cpu__enqueue_wait(cpu_stream *s, cpu_event *e)
{
    pthread_mutex_lock(&e->mu);
    uint64_t gen = e->recorded;
    bool done = e->completed >= gen;
    pthread_mutex_unlock(&e->mu);
    if (done)
        return 0; /* nothing to wait for: never recorded, or complete */
    cmd *c = new_cmd(CMD_WAIT);
    if (c == NULL)
        return -1;
    atomic_fetch_add(&e->refs, 1);
    c->u.ev.e = e;
    c->u.ev.gen = gen;
    return enqueue(s, c);
}
