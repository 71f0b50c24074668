/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_list.h - every test of alloc_test (the caching allocator against
 * the fake backend), one per line; tests/alloc/CMakeLists.txt registers
 * each as alloc.NAME.
 */
#ifndef INFINIRT_TESTS_ALLOC_LIST_H_
#define INFINIRT_TESTS_ALLOC_LIST_H_

#define ALLOC_TESTS(X)             \
    X(basic)                       \
    X(random_model)                \
    X(random_model_oom)            \
    X(stream_order_async)          \
    X(stream_order_sync)           \
    X(null_free_sync_alloc)        \
    X(quiet_word)                  \
    X(free_fence_fails)            \
    X(oom_retry)                   \
    X(oom_waits_for_fences)        \
    X(oom_last_resort)             \
    X(strict_near_capacity)        \
    X(huge_request_fails_fast)     \
    X(oom_keeps_capacity)          \
    X(bounded_cache)               \
    X(max_alloc_size)              \
    X(bad_free)                    \
    X(lookup_interior)             \
    X(passthrough)                 \
    X(release_on_free)             \
    X(max_cached)                  \
    X(trim_and_peak)               \
    X(stream_retired)              \
    X(threads)                     \
    X(hash_collisions)             \
    X(whole_block_frees)           \
    X(invariants_stress)           \
    X(invariants_threads)          \
    X(hash_prefetch_during_grow)   \
    X(free_unqueued_async)         \
    X(free_unqueued_sync)          \
    X(reserved_free_alloc_race)    \
    X(reserved_threads_limit)      \
    X(dir_pages_edges)             \
    X(dir_pages_crowded)           \
    X(dir_pages_large)             \
    X(dir_pages_model)             \
    X(dir_pages_threads)           \
    X(lookup_after_alloc)          \
    X(tcache_reuse_order)          \
    X(tcache_exit_drain)           \
    X(tcache_thread_churn)         \
    X(tcache_trim_drains)          \
    X(tcache_stats_exact)          \
    X(stream_slack_peak)           \
    X(tcache_fence_other_thread)   \
    X(tcache_pool_destroyed_first) \
    X(tcache_lookup_after_alloc)

/* alloc_fence_test: the loader's fences, and a capture's graph, when a
 * host allocation fails, through the public API; each registered as
 * alloc.NAME. */
#define ALLOC_FENCE_TESTS(X) \
    X(fence_oom_sync)        \
    X(fence_oom_async)       \
    X(capture_end_oom)

#endif /* INFINIRT_TESTS_ALLOC_LIST_H_ */
