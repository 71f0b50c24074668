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
 * once, here, in infinirt__plugin.caps.  The stubs, the table and the
 * compile-time check that it matches the struct are expanded from
 * ops_list.h.
 */
#include "internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- stubs */

/* One per entry, answering "not supported" (its parameters unused: the
 * build has -Wno-unused-parameter).  Declared first with the field's own
 * type, so a row of ops_list.h whose params disagree with the struct does
 * not compile. */
#define STUB(op, minor, group, ret, params, args) \
    static INFINIRT__OPS_FN_TYPE(op) no_##op;     \
    static INFINIRT__OPS_RET_##ret no_##op params \
    {                                             \
        INFINIRT__OPS_STUB_##ret                  \
    }
INFINIRT__OPS_LIST(STUB)
#undef STUB

/* ------------------------------------------------------------- the table */

/* Every entry: its name, where it sits, the minor that added it, its
 * stub.  Row i is capability bit i. */
typedef void (*any_fn)(void);
static const struct {
    const char *name;
    size_t off;
    unsigned minor;
    any_fn stub;
} k_entries[INFINIRT__OP_COUNT] = {
#define ENTRY(op, minor, ...) {#op, offsetof(infinirtPluginOps, op), minor, (any_fn)no_##op},
    INFINIRT__OPS_LIST(ENTRY)
#undef ENTRY
};

/* The list and the struct agree row by row: entry INFINIRT__OP_x is the
 * x-th function pointer after the header, and the struct ends with the
 * last row, so a row out of place, a field without a row or a row without
 * a field fails the build (and with it capability bits, stubs and rules
 * naming the wrong entry).  Every row also fits the public size of its
 * minor and is of the loader's ABI or older.  (A minor written too high
 * is not caught here; it is also harmless: the loader then accepts a
 * table of the true minor that ends before the entry, and treats the
 * entry as absent, as for any short table.) */
#define FIRST_ENTRY offsetof(infinirtPluginOps, init)
#define AT_ITS_PLACE(op, minor, ...)                                                                       \
    _Static_assert(offsetof(infinirtPluginOps, op) == FIRST_ENTRY + INFINIRT__OP_##op * sizeof(any_fn),    \
                   "loader/ops_list.h: row " #op " is not where infinirtPluginOps has that field");        \
    _Static_assert(offsetof(infinirtPluginOps, op) + sizeof(any_fn) <= INFINIRT_PLUGIN_OPS_SIZE_1_##minor, \
                   "loader/ops_list.h: row " #op " lies past INFINIRT_PLUGIN_OPS_SIZE of its minor");      \
    _Static_assert((minor) <= INFINIRT_PLUGIN_ABI_MINOR, "loader/ops_list.h: row " #op " of a future minor");
INFINIRT__OPS_LIST(AT_ITS_PLACE)
#undef AT_ITS_PLACE
_Static_assert(FIRST_ENTRY + INFINIRT__OP_COUNT * sizeof(any_fn) == sizeof(infinirtPluginOps),
               "infinirtPluginOps has fields past the last row of loader/ops_list.h");
_Static_assert(INFINIRT__OP_COUNT <= 64, "infinirt__plugin.caps has one bit per entry");

size_t infinirt__dispatch_table_size(uint32_t minor)
{
    size_t need = 0;
    for (unsigned i = 0; i < INFINIRT__OP_COUNT; i++)
        if (k_entries[i].minor <= minor)
            need = k_entries[i].off + sizeof(any_fn);
    return need;
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

/* Native graphs come whole (the graph group of ops_list.h): the loader
 * either captures itself or leaves every step to the plugin. */
#define IN_GRAPH_GROUP(op, minor, group, ...) \
    | (INFINIRT__OPS_GROUP_##group == INFINIRT__OPS_GROUP_graph ? BIT(op) : 0)
#define GRAPH_OPS (0 INFINIRT__OPS_LIST(IN_GRAPH_GROUP))

/* "a, b and c": the names of the entries in mask, in table order. */
static void list_names(uint64_t mask, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    while (mask != 0) {
        unsigned i = (unsigned)__builtin_ctzll(mask);
        mask &= mask - 1;
        const char *sep = mask == 0 ? " and " : ", ";
        int w = snprintf(buf + len, size - len, "%s%s", len == 0 ? "" : sep, k_entries[i].name);
        if (w < 0 || (size_t)w >= size - len)
            return;
        len += (size_t)w;
    }
}

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
        char all[192];
        list_names(GRAPH_OPS, all, sizeof all);
        snprintf(why, why_size, "incoherent ops table: %s without %s (native graphs need all of %s)",
                 k_entries[__builtin_ctzll(have)].name, k_entries[__builtin_ctzll(missing)].name, all);
        return -1;
    }
    p->caps = caps;
    p->ops = &p->table;
    return 0;
}
