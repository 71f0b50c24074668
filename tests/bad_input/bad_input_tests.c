/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bad_input_tests.c - every public function, called with one bad argument at
 * a time (the table in bad_input_rows.h), must return the documented status,
 * log a line naming itself, and change nothing: not the current device, not
 * any device's or host pool's allocator statistics, not the contents of the
 * live buffers, not the liveness of the live stream and events, not the
 * output arguments.
 *
 * Each row is one test of the shared runner (tests/harness), named
 * "function/row": under --all it runs in a child process of its own, which
 * sets up a fresh fixture (the loader initialises afresh, from
 * INFINIRT_CONFIG), takes a snapshot, makes the call, takes a second
 * snapshot and compares.  A crash or a hang (the runner's time limit,
 * BI_ROW_SECONDS unless INFINIRT_TEST_TIMEOUT says otherwise) is then one
 * failed row; a row's output is shown only when it fails, and the summary
 * names every failed row.
 *
 *   bad-input-tests                 run every row (--all; --tap as TAP)
 *   bad-input-tests FUNCTION/ROW    one row, in this process
 *   bad-input-tests --list          print the row names
 *   bad-input-tests --functions     print each function the table covers
 * INFINIRT_TEST_DEVICE picks the device type (cpu when unset); with no
 * INFINIRT_CONFIG a config with two CPU devices is written.
 */
#define _GNU_SOURCE
#include "common.h"

#include <limits.h>
#include <stdint.h>
#include <unistd.h>

#define BI_SMALL ((size_t)4096)   /* d_a, h_pin */
#define BI_BIG ((size_t)16384)    /* d_big, d_other, h_src, h_dst */
#define BI_SEED ((size_t)1 << 20) /* per device: allocated and freed, so the cache holds it */
#define BI_HUGE_BYTES ((size_t)1 << 62)
#define BI_HUGE (-2)
#define BI_HUGE_HOST (-3)
#define BI_STR 1
#define BI_OTHER 2
#define BI_CACHED 4
#define BI_ROW_SECONDS 30
#define BI_OUT_FILL 0xa5

/* Every output argument a row passes points in here. */
typedef struct {
    int i;
    infiniDevice_t types[4];
    size_t z1, z2;
    void *p, *p2;
    infinirtStream_t s;
    infinirtEvent_t e;
    infinirtEventStatus_t es;
    float ms;
    infinirtDeviceProperties_t props;
    infinirtDeviceResourceSnapshot_t snap;
    infinirtPluginInfo_t info;
    infinirtConfigEntry_t entry;
    infinirtAllocatorStats_t stats;
    infinirtGraph_t g;
    infinirtGraphExec_t x;
    infinirtGraphNode_t node;
} bi_out;

typedef struct {
    infiniDevice_t type; /* the type under test; devices 0 .. count-1 */
    int count, nplugins, nentries;
    infinirtDeviceProperties_t props; /* of (type, 0) */
    bool has_other;                   /* a second device: (type, 1), else CPU 0 */
    infiniDevice_t other_type;
    int other_id;
    infiniDevice_t cur_type; /* the current device the fixture leaves */
    int cur_id;
    /* On (type, 0): */
    infinirtStream_t s_live, s_dead;
    infinirtEvent_t e_live, e_dead;
    void *d_a, *d_big, *d_freed;
    void *h_pin, *h_pin_freed;
    /* Graphs of a capture of one MemsetAsync of d_big (a launch that should
     * not have happened shows in d_big), live and destroyed. */
    infinirtGraph_t g_live, g_dead;
    infinirtGraphExec_t x_live, x_dead;
    /* Written by documented outputs of failed calls (EndCapture's NULL
     * graph, Instantiate's reason), so not in `out`. */
    infinirtGraph_t g_end;
    char log[256];
    /* On the other device: */
    infinirtStream_t s_other;
    infinirtEvent_t e_other;
    void *d_other;
    /* Made-up handles: a host address, and odd values shaped like the
     * loader's handles but with a generation never issued. */
    void *made_up, *forged_s, *forged_e;
    unsigned char *h_src, *h_dst; /* plain host memory */
    volatile int hostfn_calls;
    bi_out out;
} bi_fixture;

/* Under a sanitizer, a malloc of BI_HUGE_BYTES that a backend passes on
 * returns NULL, as libc's does, instead of ending the process: the huge rows
 * test the loader, not the sanitizer's allocator.  (Exported: the runtime
 * looks these up dynamically.) */
#define BI_SANITIZER_OPTIONS(name)                                \
    const char *name(void);                                       \
    __attribute__((visibility("default"))) const char *name(void) \
    {                                                             \
        return "allocator_may_return_null=1";                     \
    }
BI_SANITIZER_OPTIONS(__asan_default_options)
BI_SANITIZER_OPTIONS(__tsan_default_options)

static void bi_hostfn(void *arg)
{
    ((bi_fixture *)arg)->hostfn_calls++;
}

/* A string-returning call: SUCCESS when it returned `want`, else -1. */
static int bi_str(const char *got, const char *want)
{
    if (got != NULL && strcmp(got, want) == 0)
        return INFINI_STATUS_SUCCESS;
    fprintf(stderr, "    returned \"%s\", want \"%s\"\n", got ? got : "(null)", want);
    return -1;
}

#include "bad_input_rows.h"

/* The rows, as functions and as a table. */
#define BI_FN(fn, name, want, flags, call)     \
    static int bi_##fn##_##name(bi_fixture *f) \
    {                                          \
        (void)f;                               \
        return (int)(call);                    \
    }
BI_ROWS(BI_FN)
#undef BI_FN

typedef struct {
    const char *function, *test_name; /* "fn", "fn/name" */
    void (*addr)(void);               /* the function itself: a misspelt name does not compile */
    int (*call)(bi_fixture *f);
    int want, flags;
} bi_row;

#define BI_ENTRY(fn, name, want, flags, call) {#fn, #fn "/" #name, (void (*)(void))fn, bi_##fn##_##name, want, flags},
static const bi_row k_rows[] = {BI_ROWS(BI_ENTRY)};
#undef BI_ENTRY
#define NROWS (sizeof k_rows / sizeof k_rows[0])

/* ------------------------------------------------------------ fixture */

#define SETUP(call)                                                                         \
    do {                                                                                    \
        infiniStatus_t st_ = (call);                                                        \
        if (st_ != INFINI_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "fixture: %s returned %s\n", #call, infinirtGetErrorName(st_)); \
            return TEST_FAIL;                                                               \
        }                                                                                   \
    } while (0)

static unsigned char g_src[BI_BIG], g_dst[BI_BIG];
static int g_not_a_handle[16];

/* Fill device memory with a pattern through a copy. */
static int fill_device(void *d, size_t n, unsigned seed)
{
    static unsigned char tmp[BI_BIG];
    tc_pattern(tmp, n, seed);
    SETUP(infinirtMemcpy(d, tmp, n, INFINIRT_MEMCPY_H2D));
    return TEST_OK;
}

/* Leave BI_SEED bytes cached (allocated, then freed) on the current device,
 * with the peak above the current figures. */
static int seed_cache(void)
{
    void *p = NULL;
    SETUP(infinirtMalloc(&p, BI_SEED));
    SETUP(infinirtFree(p));
    return TEST_OK;
}

static int setup(bi_fixture *f)
{
    memset(f, 0, sizeof *f);
    f->type = tc_device_type();
    SETUP(infinirtGetDeviceCount(f->type, &f->count));
    if (f->count < 1) {
        fprintf(stderr, "no %s device: skipping\n", infinirtGetDeviceTypeName(f->type));
        return TEST_SKIP;
    }
    SETUP(infinirtGetPluginCount(&f->nplugins));
    SETUP(infinirtGetConfigEntryCount(&f->nentries));
    SETUP(infinirtGetDeviceProperties(f->type, 0, &f->props));
    int ncpu = 0;
    SETUP(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &ncpu));
    if (f->count >= 2)
        f->has_other = true, f->other_type = f->type, f->other_id = 1;
    else if (f->type != INFINI_DEVICE_CPU && ncpu >= 1)
        f->has_other = true, f->other_type = INFINI_DEVICE_CPU, f->other_id = 0;

    for (int id = 0; id < f->count; id++) {
        SETUP(infinirtSetDevice(f->type, id));
        CHECK(seed_cache());
    }
    if (f->has_other) {
        SETUP(infinirtSetDevice(f->other_type, f->other_id));
        if (f->other_type != f->type)
            CHECK(seed_cache());
        SETUP(infinirtStreamCreate(&f->s_other));
        SETUP(infinirtEventCreate(&f->e_other));
        SETUP(infinirtEventRecord(f->e_other, f->s_other));
        SETUP(infinirtMalloc(&f->d_other, BI_BIG));
        CHECK(fill_device(f->d_other, BI_BIG, 3));
    }

    SETUP(infinirtSetDevice(f->type, 0));
    SETUP(infinirtStreamCreate(&f->s_live));
    SETUP(infinirtStreamCreate(&f->s_dead));
    SETUP(infinirtStreamDestroy(f->s_dead));
    SETUP(infinirtEventCreate(&f->e_live));
    SETUP(infinirtEventRecord(f->e_live, f->s_live));
    SETUP(infinirtEventCreate(&f->e_dead));
    SETUP(infinirtEventDestroy(f->e_dead));
    SETUP(infinirtMalloc(&f->d_a, BI_SMALL));
    SETUP(infinirtMalloc(&f->d_big, BI_BIG));
    SETUP(infinirtMalloc(&f->d_freed, BI_SMALL));
    SETUP(infinirtMallocHost(&f->h_pin, BI_SMALL));
    SETUP(infinirtMallocHost(&f->h_pin_freed, BI_SMALL));
    /* Freed after the last allocation of device or pinned memory: without
     * the allocator the plugin's raw allocator may hand a freed address out
     * again, and the "freed" rows would then name a live buffer. */
    SETUP(infinirtFree(f->d_freed));
    SETUP(infinirtFreeHost(f->h_pin_freed));
    CHECK(fill_device(f->d_a, BI_SMALL, 1));
    CHECK(fill_device(f->d_big, BI_BIG, 2));
    for (int i = 0; i < 2; i++) {
        infinirtGraph_t *g = i == 0 ? &f->g_live : &f->g_dead;
        SETUP(infinirtStreamBeginCapture(f->s_live, INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));
        SETUP(infinirtMemsetAsync(f->d_big, 0x5c, BI_BIG, f->s_live));
        SETUP(infinirtStreamEndCapture(f->s_live, g));
    }
    SETUP(infinirtGraphInstantiate(&f->x_live, f->g_live, NULL, NULL, 0));
    SETUP(infinirtGraphInstantiate(&f->x_dead, f->g_live, NULL, NULL, 0));
    SETUP(infinirtGraphExecDestroy(f->x_dead));
    SETUP(infinirtGraphDestroy(f->g_dead));
    tc_pattern(f->h_pin, BI_SMALL, 4);
    f->h_src = g_src;
    f->h_dst = g_dst;
    tc_pattern(f->h_src, BI_BIG, 5);
    tc_pattern(f->h_dst, BI_BIG, 6);
    f->made_up = g_not_a_handle;
    /* (generation << 32) | (slot << 3) | (kind << 1) | 1, kind 1 stream,
     * 2 event; generation 0x5eed is far beyond any this process issues. */
    f->forged_s = (void *)(((uintptr_t)0x5eed << 32) | (1u << 1) | 1u);
    f->forged_e = (void *)(((uintptr_t)0x5eed << 32) | (2u << 1) | 1u);

    /* Everything settled, so the snapshots see no work completing. */
    for (int id = 0; id < f->count; id++) {
        SETUP(infinirtSetDevice(f->type, id));
        SETUP(infinirtDeviceSynchronize());
    }
    SETUP(infinirtStreamSynchronize(f->s_live));
    if (f->has_other)
        SETUP(infinirtStreamSynchronize(f->s_other));
    /* The current device is the last of the type, not the default one, so a
     * failed call that resets it shows. */
    f->cur_type = f->type;
    f->cur_id = f->count - 1;
    SETUP(infinirtSetDevice(f->cur_type, f->cur_id));
    memset(&f->out, BI_OUT_FILL, sizeof f->out);
    return TEST_OK;
}

/* ------------------------------------------------------------ snapshot */

#define MAX_POOLS 64

typedef struct {
    char label[48];
    infinirtAllocatorStats_t stats;
} bi_pool;

typedef struct {
    infiniStatus_t getdev_st;
    infiniDevice_t cur_type;
    int cur_id;
    int counts[INFINI_DEVICE_TYPE_COUNT];
    int npools;
    bi_pool pools[MAX_POOLS];
    infiniStatus_t s_live, e_live, s_other, e_other; /* liveness: SUCCESS while alive */
    infiniStatus_t rd_a, rd_big, rd_other;           /* reading the device buffers back */
    unsigned char d_a[BI_SMALL], d_big[BI_BIG], d_other[BI_BIG], h_pin[BI_SMALL], h_src[BI_BIG], h_dst[BI_BIG];
    int hostfn_calls;
    bi_out out;
} bi_snap;

static bi_snap g_before, g_after;

static void add_pool(bi_snap *s, const char *label, infiniStatus_t st, const infinirtAllocatorStats_t *stats)
{
    if (s->npools == MAX_POOLS)
        return;
    bi_pool *p = &s->pools[s->npools++];
    snprintf(p->label, sizeof p->label, "%s%s", label, st == INFINI_STATUS_SUCCESS ? "" : " (unreadable)");
    if (st == INFINI_STATUS_SUCCESS)
        p->stats = *stats;
}

/* Read the state without changing it: no call here allocates, frees or
 * changes the current device. */
static void snapshot(bi_fixture *f, bi_snap *s)
{
    memset(s, 0, sizeof *s);
    s->getdev_st = infinirtGetDevice(&s->cur_type, &s->cur_id);
    infinirtGetAllDeviceCount(s->counts);
    infiniDevice_t types[32];
    int ntypes = 0;
    infinirtGetDeviceTypes(types, 32, &ntypes);
    for (int k = 0; k < ntypes && k < 32; k++) {
        infiniDevice_t t = types[k];
        char label[48];
        infinirtAllocatorStats_t st;
        int count = 0;
        infinirtGetDeviceCount(t, &count);
        for (int id = 0; id < count; id++) {
            snprintf(label, sizeof label, "%s:%d", infinirtGetDeviceTypeName(t), id);
            add_pool(s, label, infinirtGetAllocatorStats(t, id, &st), &st);
        }
        if (count > 0) {
            snprintf(label, sizeof label, "%s host pool", infinirtGetDeviceTypeName(t));
            add_pool(s, label, infinirtGetHostAllocatorStats(t, &st), &st);
        }
    }
    infinirtEventStatus_t es;
    s->s_live = infinirtStreamSynchronize(f->s_live);
    s->e_live = infinirtEventQuery(f->e_live, &es);
    if (f->has_other) {
        s->s_other = infinirtStreamSynchronize(f->s_other);
        s->e_other = infinirtEventQuery(f->e_other, &es);
        s->rd_other = infinirtMemcpy(s->d_other, f->d_other, BI_BIG, INFINIRT_MEMCPY_D2H);
    }
    s->rd_a = infinirtMemcpy(s->d_a, f->d_a, BI_SMALL, INFINIRT_MEMCPY_D2H);
    s->rd_big = infinirtMemcpy(s->d_big, f->d_big, BI_BIG, INFINIRT_MEMCPY_D2H);
    memcpy(s->h_pin, f->h_pin, BI_SMALL);
    memcpy(s->h_src, f->h_src, BI_BIG);
    memcpy(s->h_dst, f->h_dst, BI_BIG);
    s->hostfn_calls = f->hostfn_calls;
    memcpy(&s->out, &f->out, sizeof s->out); /* padding bytes too */
}

#define STAT_FIELDS(X)      \
    X(allocated_bytes)      \
    X(peak_allocated_bytes) \
    X(reserved_bytes)       \
    X(peak_reserved_bytes)  \
    X(active_blocks)        \
    X(segments)             \
    X(raw_allocs)           \
    X(raw_frees)            \
    X(alloc_requests)       \
    X(retries)              \
    X(oom_count)            \
    X(cached_free_bytes)

/* Print what differs; returns the number of differences.  `oom_ok`: the call
 * failed for lack of memory, which oom_count counts (once). */
static int compare(const bi_snap *a, const bi_snap *b, bool oom_ok)
{
    int n = 0;
#define DIFF(...) (fprintf(stderr, "    changed: " __VA_ARGS__), n++)
    if (a->getdev_st != b->getdev_st || a->cur_type != b->cur_type || a->cur_id != b->cur_id)
        DIFF("current device %s:%d -> %s:%d (%s)\n", infinirtGetDeviceTypeName(a->cur_type), a->cur_id,
             infinirtGetDeviceTypeName(b->cur_type), b->cur_id, infinirtGetErrorName(b->getdev_st));
    if (memcmp(a->counts, b->counts, sizeof a->counts) != 0)
        DIFF("device counts\n");
    if (a->npools != b->npools)
        DIFF("number of pools %d -> %d\n", a->npools, b->npools);
    int ooms = 0;
    for (int i = 0; i < a->npools && i < b->npools; i++) {
        const infinirtAllocatorStats_t *x = &a->pools[i].stats, *y = &b->pools[i].stats;
        if (strcmp(a->pools[i].label, b->pools[i].label) != 0)
            DIFF("pool %s -> %s\n", a->pools[i].label, b->pools[i].label);
#define FIELD(name)                                                                             \
    if (x->name != y->name) {                                                                   \
        if (oom_ok && strcmp(#name, "oom_count") == 0 && y->name == x->name + 1 && ooms++ == 0) \
            ;                                                                                   \
        else                                                                                    \
            DIFF("%s allocator %s %zu -> %zu\n", a->pools[i].label, #name, x->name, y->name);   \
    }
        STAT_FIELDS(FIELD)
#undef FIELD
    }
    static const char *const live[] = {"live stream", "live event", "other device's stream", "other device's event"};
    const infiniStatus_t la[] = {a->s_live, a->e_live, a->s_other, a->e_other};
    const infiniStatus_t lb[] = {b->s_live, b->e_live, b->s_other, b->e_other};
    for (int i = 0; i < 4; i++)
        if (la[i] != lb[i])
            DIFF("%s: %s -> %s\n", live[i], infinirtGetErrorName(la[i]), infinirtGetErrorName(lb[i]));
    const infiniStatus_t ra[] = {a->rd_a, a->rd_big, a->rd_other}, rb[] = {b->rd_a, b->rd_big, b->rd_other};
    static const char *const rd[] = {"reading d_a back", "reading d_big back", "reading d_other back"};
    for (int i = 0; i < 3; i++)
        if (ra[i] != rb[i])
            DIFF("%s: %s -> %s\n", rd[i], infinirtGetErrorName(ra[i]), infinirtGetErrorName(rb[i]));
    struct {
        const char *name;
        const void *x, *y;
        size_t n;
    } bufs[] = {
        {"d_a", a->d_a, b->d_a, sizeof a->d_a},
        {"d_big", a->d_big, b->d_big, sizeof a->d_big},
        {"d_other", a->d_other, b->d_other, sizeof a->d_other},
        {"h_pin", a->h_pin, b->h_pin, sizeof a->h_pin},
        {"h_src", a->h_src, b->h_src, sizeof a->h_src},
        {"h_dst", a->h_dst, b->h_dst, sizeof a->h_dst},
        {"output arguments", &a->out, &b->out, sizeof a->out},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        const unsigned char *x = bufs[i].x, *y = bufs[i].y;
        for (size_t j = 0; j < bufs[i].n; j++)
            if (x[j] != y[j]) {
                DIFF("contents of %s, first at byte %zu (0x%02x -> 0x%02x)\n", bufs[i].name, j, x[j], y[j]);
                break;
            }
    }
    if (a->hostfn_calls != b->hostfn_calls)
        DIFF("a host function ran (%d calls)\n", b->hostfn_calls - a->hostfn_calls);
#undef DIFF
    return n;
}

/* ------------------------------------------------------------ one row */

static int resolve_want(const bi_row *r, const bi_fixture *f, int *alt)
{
    *alt = r->want;
    if (r->want == BI_HUGE) {
        bool over = f->props.max_alloc_size != 0 && BI_HUGE_BYTES > f->props.max_alloc_size;
        return *alt = over ? INFINI_STATUS_BAD_PARAM : INFINI_STATUS_OUT_OF_MEMORY;
    }
    if (r->want == BI_HUGE_HOST) {
        *alt = INFINI_STATUS_BAD_PARAM;
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    return r->want;
}

static const char *status_name(int st)
{
    return st == -1 ? "wrong string" : infinirtGetErrorName((infiniStatus_t)st);
}

static long file_size(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return 0;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fclose(fp);
    return n;
}

/* The log lines written since `from`. */
static const char *log_since(const char *path, long from)
{
    const char *all = tc_read_file(path);
    if (all == NULL)
        return "";
    return (long)strlen(all) >= from ? all + from : "";
}

static char g_log_path[512];

/* One row, in the process the runner gives it: fixture, snapshot, call,
 * snapshot, compare. */
static int run_row(size_t i)
{
    const bi_row *r = &k_rows[i];
    const char *log_path = g_log_path;
    unlink(log_path);
    bi_fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return TEST_FAIL;
    int rc = setup(f);
    if (rc != TEST_OK)
        return rc;
    if ((r->flags & BI_OTHER) && !f->has_other) {
        fprintf(stderr, "    needs a second device: skipped\n");
        return TEST_SKIP;
    }
    infinirtAllocatorSettings_t as;
    if ((r->flags & BI_CACHED) &&
        (infinirtGetAllocatorSettings(&as) != INFINI_STATUS_SUCCESS || !as.enabled || as.release_on_free)) {
        fprintf(stderr, "    needs the caching allocator to keep freed memory: skipped\n");
        return TEST_SKIP;
    }
    int alt, want = resolve_want(r, f, &alt);
    snapshot(f, &g_before);
    long log_from = file_size(log_path);
    int got = r->call(f);
    long log_to = file_size(log_path);
    /* Let anything the call may have queued run before looking. */
    infinirtStreamSynchronize(f->s_live);
    infinirtDeviceSynchronize();
    snapshot(f, &g_after);

    int fails = 0;
    if (got != want && got != alt) {
        fprintf(stderr, "    returned %s, want %s%s%s\n", status_name(got), status_name(want),
                alt != want ? " or " : "", alt != want ? status_name(alt) : "");
        fails++;
    }
    if (compare(&g_before, &g_after, got == INFINI_STATUS_OUT_OF_MEMORY) != 0)
        fails++;
    /* A failure is logged, naming the function and the status. */
    if (!(r->flags & BI_STR) && got != INFINI_STATUS_SUCCESS && got == want) {
        char tail[4096];
        snprintf(tail, sizeof tail, "%.*s", (int)(log_to - log_from), log_since(log_path, log_from));
        char status_tag[64];
        snprintf(status_tag, sizeof status_tag, "(%s)", status_name(got));
        if (strstr(tail, r->function) == NULL || strstr(tail, status_tag) == NULL) {
            fprintf(stderr, "    no log line naming %s and %s; the call logged: \"%s\"\n", r->function, status_tag,
                    tail);
            fails++;
        }
    }
    return fails ? TEST_FAIL : TEST_OK;
}

/* ------------------------------------------------------------ runner */

static const char *row_name(size_t i)
{
    return k_rows[i].test_name;
}

/* Nothing passed and nothing failed: every row skipped (no such device). */
static int after_all(int passed, int failed, int skipped)
{
    (void)skipped;
    return failed ? TEST_FAIL : passed == 0 ? TEST_SKIP : TEST_OK;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--functions") == 0) {
        for (size_t i = 0; i < NROWS; i++)
            if (i == 0 || strcmp(k_rows[i].function, k_rows[i - 1].function) != 0)
                printf("%s\n", k_rows[i].function);
        return 0;
    }
    const char *cfg = getenv("INFINIRT_CONFIG");
    if (cfg == NULL || cfg[0] == '\0')
        tc_use_config("[plugin.cpu]\nlibrary = " CPU_PLUGIN "\ndevices = 2\n");
    snprintf(g_log_path, sizeof g_log_path, "%s/row.log", tc_temp_dir());
    tc_setenv("INFINIRT_LOG_FILE", g_log_path);
    tc_setenv("INFINIRT_LOG", "warn");
    const test_suite suite = {NULL, 0, NULL, NULL, after_all};
    /* Quiet: a row's diagnostics are shown only if it fails.  _exit: the
     * loader's exit-time work is no part of a row. */
    const test_rows rows = {
        .count = NROWS, .name = row_name, .run = run_row, .timeout = BI_ROW_SECONDS, .quiet = 1, .quick_exit = 1};
    return test_main_rows(argc, argv, &suite, &rows);
}
