/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_test.h - what the allocator's test files share. */
#ifndef INFINIRT_TESTS_ALLOC_TEST_H_
#define INFINIRT_TESTS_ALLOC_TEST_H_

#include "alloc.h"
#include "fake_backend.h"
#include "test.h"

#include <stdint.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* A synchronous free when `sync`, else one on `stream`: what the random
 * tests draw. */
static inline infiniStatus_t free_either(void *p, bool sync, void *stream, infinirt__pool_want want)
{
    return sync ? infinirt__pool_free_sync(p, want) : infinirt__pool_free(p, stream, want);
}

/* A fixed-seed generator: every run draws the same numbers. */
uint64_t rnd(void);
/* A pool over the fake with cfg (NULL: defaults). */
infinirt__pool *make_pool(fake *f, const infinirt__alloc_config *cfg);
/* Destroy the pool; the fake must be left with no memory and no fence. */
int finish(infinirt__pool *pool, fake *f);
/* Statistics against what the test knows, and against the backend. */
int check_stats(infinirt__pool *pool, fake *f, size_t allocated, size_t active);

int test_random_model(void);
int test_random_model_oom(void);
int test_threads(void);
int test_hash_collisions(void);
int test_whole_block_frees(void);
int test_invariants_stress(void);
int test_invariants_threads(void);
int test_hash_prefetch_during_grow(void);
int test_huge_request_fails_fast(void);
int test_oom_keeps_capacity(void);
int test_bad_free(void);
int test_lookup_interior(void);
int test_passthrough(void);
int test_release_on_free(void);
int test_max_cached(void);
int test_trim_and_peak(void);
int test_stream_retired(void);
int test_stream_slack_peak(void);
int test_free_unqueued_async(void);
int test_free_unqueued_sync(void);
int test_reserved_free_alloc_race(void);
int test_reserved_threads_limit(void);
int test_dir_pages_edges(void);
int test_dir_pages_crowded(void);
int test_dir_pages_large(void);
int test_dir_pages_model(void);
int test_dir_pages_threads(void);
int test_lookup_after_alloc(void);
int test_tcache_reuse_order(void);
int test_tcache_exit_drain(void);
int test_tcache_thread_churn(void);
int test_tcache_trim_drains(void);
int test_tcache_stats_exact(void);
int test_tcache_fence_other_thread(void);
int test_tcache_pool_destroyed_first(void);
int test_tcache_lookup_after_alloc(void);

#endif /* INFINIRT_TESTS_ALLOC_TEST_H_ */
