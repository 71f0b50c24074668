/*
 * test_list.h - every test of the runner, one per line (group, name) inside X().
 * tests/CMakeLists.txt reads this file: the `conformance` group is
 * registered once per backend present, every other group once.
 */
#ifndef INFINIRT_TEST_LIST_H_
#define INFINIRT_TEST_LIST_H_

#define CONFORMANCE_LIST(X)               \
    X(conformance, device_count)          \
    X(conformance, set_get_device)        \
    X(conformance, mem_info)              \
    X(conformance, malloc_free)           \
    X(conformance, memcpy_kinds)          \
    X(conformance, memcpy_errors)         \
    X(conformance, memset)                \
    X(conformance, async_chain)           \
    X(conformance, default_stream)        \
    X(conformance, events)                \
    X(conformance, event_rerecord)        \
    X(conformance, stream_wait_event)     \
    X(conformance, host_func_order)       \
    X(conformance, malloc_async)          \
    X(conformance, malloc_host)           \
    X(conformance, bad_handles)           \
    X(conformance, native_handles)        \
    X(conformance, error_strings)         \
    X(conformance, destroy_pending_free)  \
    X(conformance, host_ranges)           \
    X(conformance, device_as_host)        \
    X(conformance, zero_size_dead_stream) \
    X(conformance, async_ops_fence)       \
    X(conformance, pinned_other_device)   \
    X(conformance, peer_memset_free)      \
    X(conformance, pinned_other_backend)  \
    X(conformance, d2d_across_backends)   \
    X(conformance, free_async_other_device) \
    X(conformance, foreign_memory)        \
    X(conformance, lookup_after_free)     \
    X(conformance, foreign_refused)       \
    X(conformance, graph_replay)          \
    X(conformance, graph_host_fn_count)   \
    X(conformance, graph_chain_other_stream) \
    X(conformance, graph_malloc_async_pool) \
    X(conformance, graph_pool_queued_launch) \
    X(conformance, graph_malloc_not_stream_cache) \
    X(conformance, graph_free_kept_block) \
    X(conformance, graph_cycles_reserved) \
    X(conformance, graph_illegal_calls)   \
    X(conformance, graph_global_churn)    \
    X(conformance, graph_bad_handles)     \
    X(conformance, graph_infinicore_flow) \
    X(conformance, graph_fork_join)       \
    X(conformance, resource_snapshot)

#define OTHER_LIST(X)                     \
    X(loader, missing_file)               \
    X(loader, not_shared_object)          \
    X(loader, no_entry)                   \
    X(loader, abi_major)                  \
    X(loader, table_too_small)            \
    X(loader, table_short_for_minor)      \
    X(loader, abi_1_0_plugin)             \
    X(loader, device_uuid)                \
    X(loader, table_short_for_minor_2)    \
    X(loader, incoherent_partial_graph)   \
    X(loader, vendor_plugin_graph)        \
    X(loader, init_failure)               \
    X(loader, zero_devices)               \
    X(loader, duplicate_type)             \
    X(loader, disabled)                   \
    X(loader, bad_plugin_key)             \
    X(loader, fake_device_routing)        \
    X(loader, malformed_ini)              \
    X(loader, config_env)                 \
    X(loader, relative_library)           \
    X(loader, config_env_missing)         \
    X(loader, xdg_config)                 \
    X(loader, size_suffix_g)              \
    X(loader, size_suffix_t)              \
    X(loader, comments)                   \
    X(loader, device_type_out_of_range)   \
    X(loader, default_device_missing)     \
    X(routing, two_devices)               \
    X(routing, memory_limit)              \
    X(routing, other_backend)             \
    X(routing, foreign_pointer)           \
    X(routing, memory_limit_exact)        \
    X(routing, memory_limit_exact_noalloc) \
    X(allocator, reuse_cross_stream)      \
    X(allocator, reuse_same_stream)       \
    X(allocator, cached_reuse)            \
    X(allocator, oom_retry)               \
    X(allocator, settings)                \
    X(allocator, threads)                 \
    X(threads, first_call)                \
    X(threads, current_device)            \
    X(threads, event_teardown)            \
    X(threads, stream_destroy_waits)      \
    X(threads, guessed_handle_destroy)    \
    X(threads, handle_map_churn)          \
    X(threads, sync_copy_after_default_stream) \
    X(threads, gate_timeout)              \
    X(memory_checks, huge_request)        \
    X(memory_checks, huge_request_limited) \
    X(fault, table_no_event_query)        \
    X(fault, table_no_event_synchronize)  \
    X(fault, table_no_stream_destroy)     \
    X(fault, no_events)                   \
    X(fault, omitted_entries)             \
    X(fault, event_record_fails)          \
    X(fault, event_create_fails)          \
    X(fault, event_query_fails)           \
    X(fault, event_wait_fails)            \
    X(fault, device_sync_fails)           \
    X(fault, device_sync_late_work)       \
    X(fault, sweep)                       \
    X(fault, sweep_release)               \
    X(fault, sweep_noalloc)               \
    X(fault, sweep_always)                \
    X(fault, sync_by_stream_unlocked)     \
    X(fault, passthrough_wait_fails)      \
    X(fault, no_events_default_stream)    \
    X(fault, counted_host_fn_in_flight)   \
    X(fault, counted_memcpy_async_in_flight) \
    X(loader, default_device_negative)    \
    X(allocator, fence_one_past_sync)     \
    X(allocator, default_stream_in_flight) \
    X(allocator, wait_event_in_flight)    \
    X(allocator, retired_stream_merged)   \
    X(loader, incoherent_no_query)        \
    X(loader, incoherent_no_stream_destroy) \
    X(cpu, inline_done_on_return)         \
    X(cpu, bad_streams_key)               \
    X(cpu, blocking_streams)              \
    X(cpu, native_enqueue_inline)         \
    X(cpu, native_enqueue_async)          \
    X(cpu, native_work_free)              \
    X(snapshot, no_mem_info)              \
    X(snapshot, mem_info_fails)           \
    X(loader, lazy_start)                 \
    X(loader, report_starts_all)          \
    X(loader, device_cap)                 \
    X(loader, many_devices_cheap)         \
    X(loader, library_fifo)               \
    X(loader, library_device)             \
    X(loader, library_directory)          \
    X(loader, unsafe_plugin_warns)        \
    X(allocator, peak_exact)              \
    X(loader, not_ready_is_quiet)

#define TEST_LIST(X) CONFORMANCE_LIST(X) OTHER_LIST(X)

#endif
