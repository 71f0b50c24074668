/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dispatch.c - the loader's own copy of each plugin's ops table.
 *
 * The loader never calls through a plugin's table directly.  At load it
 * copies the part of the table that both sides know (the plugin's
 * struct_size, at most the loader's sizeof), replaces every NULL entry by a
 * stub that answers NOT_IMPLEMENTED, and refuses tables whose entries do not
 * make sense together.  Every call site can then call any entry without a
 * NULL check, a plugin built against an older minor never has its table
 * read past its end, and "which entries did the plugin bring" is answered
 * once, here, in infinirt__plugin.caps.
 */
#include "internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- stubs */

static infiniStatus_t no_init(const infinirtPluginInitArgs *a, int *n)
{
    (void)a;
    (void)n;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static void no_shutdown(void) {}
static infiniStatus_t no_dev_info(int d, infinirtPluginDeviceInfo *i)
{
    (void)d;
    (void)i;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_mem_info(int d, size_t *f, size_t *t)
{
    (void)d;
    (void)f;
    (void)t;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_dev(int d)
{
    (void)d;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_obj_out(int d, void **o)
{
    (void)d;
    (void)o;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_obj(int d, void *o)
{
    (void)d;
    (void)o;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_two_obj(int d, void *a, void *b)
{
    (void)d;
    (void)a;
    (void)b;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_host_func(int d, void *s, infinirtPluginHostFn fn, void *u)
{
    (void)d;
    (void)s;
    (void)fn;
    (void)u;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_event_create(int d, uint32_t fl, void **e)
{
    (void)d;
    (void)fl;
    (void)e;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_event_query(int d, void *e, int *c)
{
    (void)d;
    (void)e;
    (void)c;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_elapsed(int d, float *ms, void *a, void *b)
{
    (void)d;
    (void)ms;
    (void)a;
    (void)b;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_malloc(int d, void **p, size_t n)
{
    (void)d;
    (void)p;
    (void)n;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_memcpy(int d, void *dst, const void *src, size_t n, int k)
{
    (void)d;
    (void)dst;
    (void)src;
    (void)n;
    (void)k;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_memcpy_async(int d, void *dst, const void *src, size_t n, int k, void *s)
{
    (void)d;
    (void)dst;
    (void)src;
    (void)n;
    (void)k;
    (void)s;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_memset(int d, void *p, int v, size_t n)
{
    (void)d;
    (void)p;
    (void)v;
    (void)n;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_obj_native(int d, void *o, void **n)
{
    (void)d;
    (void)o;
    (void)n;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_stream_flags(int d, uint32_t fl, void **s)
{
    (void)d;
    (void)fl;
    (void)s;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_stream_query(int d, void *s, int *idle)
{
    (void)d;
    (void)s;
    (void)idle;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_dev_native(int d, void **a, void **b)
{
    (void)d;
    (void)a;
    (void)b;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_mem_native(int d, void *p, void **n, size_t *off)
{
    (void)d;
    (void)p;
    (void)n;
    (void)off;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_ptr_dev(const void *p, int *d)
{
    (void)p;
    (void)d;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_memset_async(int d, void *p, int v, size_t n, void *s)
{
    (void)d;
    (void)p;
    (void)v;
    (void)n;
    (void)s;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}

static infiniStatus_t no_begin_capture(int d, void *s, int mode)
{
    (void)d;
    (void)s;
    (void)mode;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_is_capturing(int d, void *s, int *c, uint64_t *id)
{
    (void)d;
    (void)s;
    (void)c;
    (void)id;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_instantiate(int d, void *g, void **e, char *log, size_t n)
{
    (void)d;
    (void)g;
    (void)e;
    (void)log;
    (void)n;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_utilization(int d, infinirtPluginUtilization *u)
{
    (void)d;
    (void)u;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_uuid(int d, char *u, size_t n)
{
    (void)d;
    (void)u;
    (void)n;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_flags(int d, uint32_t *flags)
{
    (void)d;
    (void)flags;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}
static infiniStatus_t no_device_query(int d, int *idle)
{
    (void)d;
    *idle = 0;
    return INFINI_STATUS_NOT_IMPLEMENTED;
}

/* Every entry: its name, where it sits, its stub, the capability bit. */
typedef void (*any_fn)(void);
#define ENTRY(field, stub)                                         \
    {                                                              \
#field, offsetof(infinirtPluginOps, field), (any_fn)(stub) \
    }
static const struct {
    const char *name;
    size_t off;
    any_fn stub;
} k_entries[INFINIRT__OP_COUNT] = {
    ENTRY(init, no_init),
    ENTRY(shutdown, no_shutdown),
    ENTRY(get_device_info, no_dev_info),
    ENTRY(get_mem_info, no_mem_info),
    ENTRY(device_synchronize, no_dev),
    ENTRY(stream_create, no_obj_out),
    ENTRY(stream_destroy, no_obj),
    ENTRY(stream_synchronize, no_obj),
    ENTRY(stream_wait_event, no_two_obj),
    ENTRY(launch_host_func, no_host_func),
    ENTRY(event_create, no_event_create),
    ENTRY(event_destroy, no_obj),
    ENTRY(event_record, no_two_obj),
    ENTRY(event_query, no_event_query),
    ENTRY(event_synchronize, no_obj),
    ENTRY(event_elapsed_time, no_elapsed),
    ENTRY(malloc_device, no_malloc),
    ENTRY(free_device, no_obj),
    ENTRY(malloc_host, no_malloc),
    ENTRY(free_host, no_obj),
    ENTRY(memcpy, no_memcpy),
    ENTRY(memcpy_async, no_memcpy_async),
    ENTRY(memset, no_memset),
    ENTRY(memset_async, no_memset_async),
    ENTRY(stream_get_native, no_obj_native),
    ENTRY(event_get_native, no_obj_native),
    ENTRY(stream_create_with_flags, no_stream_flags),
    ENTRY(stream_create_from_native, no_obj_native),
    ENTRY(stream_query, no_stream_query),
    ENTRY(device_get_native, no_dev_native),
    ENTRY(mem_get_native, no_mem_native),
    ENTRY(set_device, no_dev),
    ENTRY(pointer_get_device, no_ptr_dev),
    ENTRY(stream_begin_capture, no_begin_capture),
    ENTRY(stream_end_capture, no_obj_native),
    ENTRY(stream_is_capturing, no_is_capturing),
    ENTRY(graph_instantiate, no_instantiate),
    ENTRY(graph_launch, no_two_obj),
    ENTRY(graph_exec_destroy, no_obj),
    ENTRY(graph_destroy, no_obj),
    ENTRY(get_utilization, no_utilization),
    ENTRY(get_device_uuid, no_uuid),
    ENTRY(get_device_flags, no_flags),
    ENTRY(device_query, no_device_query),
};
#undef ENTRY

/* The k_entries order is the enum's; a mismatch would give one entry
 * another's stub. */
_Static_assert(INFINIRT__OP_init == 0 && INFINIRT__OP_device_query == INFINIRT__OP_COUNT - 1,
               "infinirt__op enum and k_entries disagree");

const char *infinirt__op_name(infinirt__op op)
{
    return (unsigned)op < INFINIRT__OP_COUNT ? k_entries[op].name : "?";
}

#define BIT(op) ((uint64_t)1 << INFINIRT__OP_##op)

/* Entries that only make sense together: when `have` is present, every
 * entry of `need` must be too. */
static const struct {
    uint64_t have, need;
    const char *why;
} k_rules[] = {
    {0, BIT(init) | BIT(get_device_info) | BIT(malloc_device) | BIT(free_device) | BIT(memcpy),
     "required by every plugin"},
    {BIT(stream_create), BIT(stream_destroy) | BIT(stream_synchronize), "a stream must be destroyable and waitable"},
    {BIT(event_create), BIT(event_destroy) | BIT(event_record), "an event must be destroyable and recordable"},
    {BIT(event_record), BIT(event_create) | BIT(event_query) | BIT(event_synchronize),
     "a recorded event must be queryable without blocking and waitable"},
    {BIT(malloc_host), BIT(free_host), "pinned host memory must be freeable"},
    {BIT(free_host), BIT(malloc_host), "free_host without malloc_host"},
    {BIT(stream_create_with_flags), BIT(stream_destroy) | BIT(stream_synchronize),
     "a stream must be destroyable and waitable"},
    {BIT(stream_create_from_native), BIT(stream_destroy) | BIT(stream_synchronize),
     "a stream must be destroyable and waitable"},
};

/* Native graphs come whole: the loader either captures itself or leaves
 * every step to the plugin. */
#define GRAPH_OPS                                                                                              \
    (BIT(stream_begin_capture) | BIT(stream_end_capture) | BIT(stream_is_capturing) | BIT(graph_instantiate) | \
     BIT(graph_launch) | BIT(graph_exec_destroy) | BIT(graph_destroy))

int infinirt__dispatch_build(infinirt__plugin *p, const infinirtPluginOps *theirs, char *why, size_t why_size)
{
    size_t n = theirs->struct_size < sizeof p->table ? theirs->struct_size : sizeof p->table;
    memset(&p->table, 0, sizeof p->table);
    memcpy(&p->table, theirs, n);
    p->table.struct_size = (uint32_t)n;
    uint64_t caps = 0;
    for (unsigned i = 0; i < INFINIRT__OP_COUNT; i++) {
        any_fn *slot = (any_fn *)(void *)((char *)&p->table + k_entries[i].off);
        /* An entry the plugin's table is too short to hold counts as NULL. */
        if (k_entries[i].off + sizeof(any_fn) <= n && *slot != NULL)
            caps |= (uint64_t)1 << i;
        else
            *slot = k_entries[i].stub;
    }
    for (size_t r = 0; r < sizeof k_rules / sizeof k_rules[0]; r++) {
        if ((caps & k_rules[r].have) != k_rules[r].have)
            continue;
        uint64_t missing = k_rules[r].need & ~caps;
        if (missing == 0)
            continue;
        unsigned first = (unsigned)__builtin_ctzll(missing);
        if (k_rules[r].have != 0)
            snprintf(why, why_size, "incoherent ops table: %s without %s (%s)",
                     k_entries[__builtin_ctzll(k_rules[r].have)].name, k_entries[first].name, k_rules[r].why);
        else
            snprintf(why, why_size, "required entry %s is missing", k_entries[first].name);
        return -1;
    }
    /* Work queued asynchronously must be waitable somehow: the allocator
     * and DeviceSynchronize fall back to synchronising, by device or by
     * stream. */
    uint64_t async = BIT(memcpy_async) | BIT(memset_async) | BIT(launch_host_func) | BIT(stream_wait_event) |
                     BIT(event_record) | BIT(stream_create);
    if ((caps & async) && !(caps & (BIT(stream_synchronize) | BIT(device_synchronize)))) {
        snprintf(why, why_size,
                 "incoherent ops table: %s without stream_synchronize or device_synchronize (queued work "
                 "could never be waited for)",
                 k_entries[__builtin_ctzll(caps & async)].name);
        return -1;
    }
    if ((caps & GRAPH_OPS) != 0 && (caps & GRAPH_OPS) != GRAPH_OPS) {
        uint64_t have = caps & GRAPH_OPS, missing = GRAPH_OPS & ~caps;
        snprintf(why, why_size,
                 "incoherent ops table: %s without %s (native graphs need all of "
                 "stream_begin_capture, stream_end_capture, stream_is_capturing, graph_instantiate, graph_launch, "
                 "graph_exec_destroy and graph_destroy)",
                 k_entries[__builtin_ctzll(have)].name, k_entries[__builtin_ctzll(missing)].name);
        return -1;
    }
    p->caps = caps;
    p->ops = &p->table;
    return 0;
}
