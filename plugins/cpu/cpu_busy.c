/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_busy.c - the busy list of each device (async queue): the streams
 * that had work queued in their ring since the list was last walked, so
 * that what must find the streams with work (a default-stream command
 * waits for the blocking streams' work, a synchronous copy for theirs and
 * the default stream's, device_synchronize for every stream's) looks at
 * those only, and so that creating or destroying a stream touches nothing
 * of the device, however many streams there are.
 *
 * A stream goes on the list (cpu__busy_note, without a lock: one
 * compare-and-swap on the head) when work is queued in its ring and it is
 * not listed; the list holds a reference.  Only a walk takes streams off:
 * under the device's lock it takes the whole list, drops (and lets go of)
 * the streams found idle and puts the others back.  A push that finds the
 * list longer than twice what the last walk kept, and 64 more, walks it
 * too: a program that never waits on the device still has streams it
 * destroyed let go of, at a cost per push that stays constant.
 *
 * Template: CPU only, with cpu_queue.c and cpu_pool.c.
 */
#include "cpu_internal.h"

#include <stdlib.h>

/* The least length of a busy list that makes a push walk it. */
#define WALK_FIRST 64

/* Work was just queued in s's ring (`queued` raised, under s->mu): put s
 * on its device's busy list unless it is there.  The fence orders the
 * raise before the look at on_busy, as a walk orders its clearing of
 * on_busy before its look at the counts: of a walk dropping s and this
 * call, one sees the other, and s stays listed.  True when the list has
 * grown enough to be walked (by the caller, once s->mu is let go). */
bool cpu__busy_note(cpu_stream *s)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&s->on_busy, memory_order_relaxed))
        return false;
    bool off = false;
    if (!atomic_compare_exchange_strong(&s->on_busy, &off, true))
        return false;    /* a walk kept it meanwhile */
    cpu__stream_hold(s); /* the list's reference */
    cpu_device *d = s->dev;
    cpu_stream *head = atomic_load_explicit(&d->busy, memory_order_relaxed);
    do
        s->busy_next = head;
    while (!atomic_compare_exchange_weak_explicit(&d->busy, &head, s, memory_order_release, memory_order_relaxed));
    int listed = atomic_fetch_add_explicit(&d->listed, 1, memory_order_relaxed) + 1;
    return listed >= atomic_load_explicit(&d->walk_at, memory_order_relaxed) + WALK_FIRST;
}

void cpu__afters_free(cpu_after *w, bool release)
{
    while (w != NULL) {
        cpu_after *next = w->next;
        if (release)
            cpu__stream_put(w->s);
        free(w);
        w = next;
    }
}

/* Whether s, which has work up to count q, belongs in `set`'s list. */
static bool wanted(cpu_stream *s, enum cpu__busy_set set, uint64_t q)
{
    if (set == CPU__FOR_NONE || !(set == CPU__FOR_DEVICE || s->blocking || (set == CPU__FOR_SYNC && s->is_default)))
        return false;
    if (set != CPU__FOR_DEFAULT)
        return true;
    pthread_mutex_lock(&s->mu);
    bool covered = q <= s->covered;
    pthread_mutex_unlock(&s->mu);
    return !covered;
}

/* Walk d's busy list: drop the streams found idle, keep the others and,
 * of those in `set`, list each with its count to reach (held) in *out;
 * -1 out of memory (the walk is finished all the same).  The list is
 * taken whole, so streams pushed meanwhile (work queued during this call,
 * unordered with it) wait for the next walk; the kept ones go back in
 * front of them. */
int cpu__busy_walk(cpu_device *d, enum cpu__busy_set set, cpu_after **out)
{
    cpu_after *list = NULL;
    int rc = 0, kept = 0, dropped = 0;
    cpu_stream *keep = NULL, *last = NULL;
    pthread_mutex_lock(&d->lock);
    cpu_stream *s = atomic_exchange_explicit(&d->busy, NULL, memory_order_acquire);
    while (s != NULL) {
        cpu_stream *next = s->busy_next; /* before on_busy goes: a push may relink s */
        uint64_t q = atomic_load_explicit(&s->queued, memory_order_acquire);
        if (atomic_load_explicit(&s->done, memory_order_acquire) >= q) {
            atomic_store_explicit(&s->on_busy, false, memory_order_release); /* after reading busy_next */
            atomic_thread_fence(memory_order_seq_cst);                       /* see cpu__busy_note */
            q = atomic_load_explicit(&s->queued, memory_order_acquire);
            bool off = false;
            if (atomic_load_explicit(&s->done, memory_order_acquire) >= q ||
                !atomic_compare_exchange_strong(&s->on_busy, &off, true)) {
                /* Idle, or work came and its caller listed s again. */
                cpu__stream_put(s);
                dropped++;
                s = next;
                continue;
            }
        }
        s->busy_next = NULL;
        if (last != NULL)
            last->busy_next = s;
        else
            keep = s;
        last = s;
        kept++;
        if (rc == 0 && wanted(s, set, q)) {
            cpu_after *w = malloc(sizeof *w);
            if (w == NULL) {
                rc = -1;
            } else {
                cpu__stream_hold(s);
                *w = (cpu_after){list, s, q};
                list = w;
            }
        }
        s = next;
    }
    if (keep != NULL) {
        cpu_stream *head = atomic_load_explicit(&d->busy, memory_order_relaxed);
        do
            last->busy_next = head;
        while (!atomic_compare_exchange_weak_explicit(&d->busy, &head, keep, memory_order_release,
                                                      memory_order_relaxed));
    }
    atomic_fetch_sub_explicit(&d->listed, dropped, memory_order_relaxed);
    atomic_store_explicit(&d->walk_at, 2 * kept, memory_order_relaxed);
    pthread_mutex_unlock(&d->lock);
    if (rc != 0) {
        cpu__afters_free(list, true);
        list = NULL;
    }
    *out = list;
    return rc;
}
