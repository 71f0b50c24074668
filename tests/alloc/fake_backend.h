/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_backend.h - a backend for the allocator's unit tests: raw memory from
 * aligned_alloc with an optional byte limit (to provoke out-of-memory), and
 * fences whose completion the test controls.
 *
 * A stream is "busy" when the test says work is queued on it; fence_take
 * returns a fence only for a busy stream (fence_take_all: while any stream
 * is busy), as the loader does.  Fences complete when the test
 * completes them, or when the pool waits on one (the wait finishes the work
 * that fence covers).
 */
#ifndef INFINIRT_TESTS_FAKE_BACKEND_H_
#define INFINIRT_TESTS_FAKE_BACKEND_H_

#include "alloc.h"

#include <pthread.h>
#include <stdbool.h>

#define FAKE_MAX_BUSY 16
#define FAKE_MAX_SEQ (1u << 20)

typedef struct {
    void *p;
    size_t size;
} fake_raw;

typedef struct fake {
    pthread_mutex_t mu;
    infinirt__pool_backend be;
    size_t limit;   /* bytes; 0 = none */
    size_t live;    /* bytes of live raw allocations */
    fake_raw *raws; /* live raw allocations */
    size_t nraw, capraw;
    size_t max_raw; /* largest raw allocation ever served */
    size_t raw_calls, raw_oom;
    size_t peak_live; /* the most `live` ever was */
    /* Set (fake_watch_reserved): the pool's count of reserved bytes, read
     * at every raw call under `mu` - while `live` cannot move - and
     * compared with `live`: `reserved_over` counts the reads that found it
     * larger, `reserved_excess` is the most by which it was. */
    const atomic_size_t *watch_reserved;
    size_t reserved_over, reserved_excess;
    /* Set: runs once, right after the next raw_free gave its memory back
     * and before it returns to the pool, with no lock of the fake held: a
     * test's way to act between the backend's free and the pool's
     * bookkeeping of it. */
    void (*after_free)(void *arg);
    void *after_free_arg;
    /* fences */
    void *busy[FAKE_MAX_BUSY];
    int nbusy;
    infinirt__fence **fences; /* live (taken, not released) */
    size_t nfence, capfence;
    size_t taken, released, waits, bad_release;
    size_t take_calls; /* fence_take and fence_take_all calls */
    unsigned seq;
    unsigned char *done_seq; /* done_seq[seq] = 1 once that fence completed */
    unsigned last_seq;       /* seq of the last fence handed out */
    /* Not SUCCESS: fence_take and fence_take_all fail with it (a backend
     * that could neither give a fence nor synchronize). */
    infiniStatus_t take_fails;
    /* Set: fence_wait blocks until the test completes the fence
     * (fake_complete_all) instead of finishing the work itself; `waiting`
     * counts the waits under way. */
    bool wait_blocks;
    size_t waiting;
    pthread_cond_t cv;
} fake;

void fake_init(fake *f, size_t limit, size_t max_alloc, const char *label);
/* Frees what the pool left behind (nothing, if it is correct). */
void fake_fini(fake *f);

/* Watch the pool's reserved-bytes counter (see watch_reserved). */
void fake_watch_reserved(fake *f, infinirt__pool *pool);

void fake_set_busy(fake *f, void *stream);
/* Complete every fence taken so far; no stream is busy afterwards. */
void fake_complete_all(fake *f);
bool fake_seq_done(fake *f, unsigned seq);
/* With wait_blocks: how many waits are under way. */
size_t fake_waiting(fake *f);
size_t fake_live(fake *f);
size_t fake_nraw(fake *f);
/* Whether [p, p+size) lies inside one live raw allocation. */
bool fake_contains(fake *f, const void *p, size_t size);
/* A malloc'd copy of the live raw allocations sorted by address; *n set. */
fake_raw *fake_raws_sorted(fake *f, size_t *n);

#endif /* INFINIRT_TESTS_FAKE_BACKEND_H_ */
