/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_tests.c - the CPU backend's own behaviour, through the public API and
 * its native stream table (infinirt_cpu.h): the two stream modes, blocking
 * streams ordered with the default stream (async mode), and the ABI fields
 * of its entry called directly; with the helpers the CPU tests share
 * (cpu_tests.h).  Work queued natively and infinirt called from a host
 * function are in cpu_native_tests.c, the worker pool in cpu_pool_tests.c.
 * CPU_PLUGIN comes from CMake.
 */
#define _GNU_SOURCE
#include "cpu_tests.h"
#include "infinirt_cpu.h"
#include "infinirt_plugin.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void cpu_config(const char *streams)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\ndevices = 2\n%s%s%s", CPU_PLUGIN,
             streams ? "streams = " : "", streams ? streams : "", streams ? "\n" : "");
    tc_use_config(cfg);
}

int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

void set_flag(void *flag)
{
    atomic_store((atomic_int *)flag, 1);
}

static void sleep_20ms(void *unused)
{
    (void)unused;
    tc_sleep_ms(20);
}

/* ------------------------------------------------------------ inline mode */

/* The default mode: every "asynchronous" operation is done when its call
 * returns, on the caller's thread, with no worker thread anywhere. */
int test_cpu_inline_done_on_return(void)
{
    cpu_config(NULL); /* inline is the default */
    CHECK(tc_use_device(0));
    int threads = thread_count();
    ASSERT_GT(threads, 0);
    infinirtStream_t s;
    ASSERT_OK(infinirtStreamCreate(&s));
    for (int k = 0; k < 2; k++) {
        infinirtStream_t on = k == 0 ? s : NULL; /* a created stream, the NULL stream */
        atomic_int flag = 0;
        ASSERT_OK(infinirtLaunchHostFunc(on, set_flag, &flag));
        ASSERT_EQ(atomic_load(&flag), 1);

        size_t n = 1 * MiB;
        unsigned char *a = malloc(n), *b = calloc(1, n);
        ASSERT(a && b);
        tc_pattern(a, n, 21u + (unsigned)k);
        void *d;
        ASSERT_OK(infinirtMalloc(&d, n));
        ASSERT_OK(infinirtMemcpyAsync(d, a, n, INFINIRT_MEMCPY_H2D, on));
        ASSERT_MEM_EQ(d, a, n); /* CPU device memory is host memory */
        ASSERT_OK(infinirtMemsetAsync(d, 0x3c, 64, on));
        ASSERT_EQ(((unsigned char *)d)[63], 0x3c);
        ASSERT_OK(infinirtMemcpyAsync(b, d, n, INFINIRT_MEMCPY_D2H, on));
        ASSERT_EQ(b[0], 0x3c);
        ASSERT_MEM_EQ(b + 64, a + 64, n - 64);
        ASSERT_OK(infinirtFree(d));
        free(a);
        free(b);

        /* A record completes at once, with its time: the elapsed time
         * covers the host function queued between the two records. */
        infinirtEvent_t e0, e1;
        infinirtEventStatus_t st;
        ASSERT_OK(infinirtEventCreate(&e0));
        ASSERT_OK(infinirtEventCreate(&e1));
        ASSERT_OK(infinirtEventRecord(e0, on));
        ASSERT_OK(infinirtEventQuery(e0, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        ASSERT_OK(infinirtLaunchHostFunc(on, sleep_20ms, NULL));
        ASSERT_OK(infinirtEventRecord(e1, on));
        ASSERT_OK(infinirtEventQuery(e1, &st));
        ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
        float ms = -1;
        ASSERT_OK(infinirtEventElapsedTime(&ms, e0, e1));
        ASSERT(ms >= 15.0f && ms < 60000.0f);
        ASSERT_OK(infinirtStreamWaitEvent(s, e1));
        ASSERT_OK(infinirtEventDestroy(e0));
        ASSERT_OK(infinirtEventDestroy(e1));
    }
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_EQ(thread_count(), threads); /* no worker thread was started */
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* streams = anything else: a warning with file:line, and the default
 * (inline) is used; the plugin serves on (as for its other keys). */
int test_cpu_bad_streams_key(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nstreams = sometimes\n", CPU_PLUGIN);
    char log[600];
    snprintf(log, sizeof log, "%s/log.txt", tc_temp_dir());
    tc_setenv("INFINIRT_LOG_FILE", log);
    tc_use_config(cfg);
    int count = -1;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_CPU, &count));
    ASSERT_EQ(count, 1);
    char want[PATH_MAX + 128], resolved[PATH_MAX];
    ASSERT(realpath(getenv("INFINIRT_CONFIG"), resolved) != NULL);
    snprintf(want, sizeof want, "%s:3: [plugin.cpu] streams = 'sometimes': not inline or async; using inline",
             resolved);
    ASSERT_STR_CONTAINS(tc_read_file(log), want);
    return TEST_OK;
}

/* ------------------------------------------------ blocking streams (async) */

/* Each host function writes its turn: the order work really ran in. */
typedef struct {
    atomic_int next;
    atomic_int at[8];
} order_log;

typedef struct {
    order_log *log;
    int slot;
} order_arg;

static void log_turn(void *arg)
{
    order_arg *a = arg;
    atomic_store(&a->log->at[a->slot], atomic_fetch_add(&a->log->next, 1) + 1);
}

typedef struct {
    void *dst;
    const void *src;
    size_t n;
    order_log *log;
    int slot;
    infiniStatus_t st;
} sync_copy_arg;

static void *sync_copy(void *arg)
{
    sync_copy_arg *c = arg;
    c->st = infinirtMemcpy(c->dst, c->src, c->n, INFINIRT_MEMCPY_H2D);
    atomic_store(&c->log->at[c->slot], atomic_fetch_add(&c->log->next, 1) + 1);
    return NULL;
}

/* Wait (up to 5 s) for an event without risking a hang. */
static int completes_soon(infinirtEvent_t e)
{
    infinirtEventStatus_t st = INFINIRT_EVENT_NOT_READY;
    for (int i = 0; i < 5000 && st != INFINIRT_EVENT_COMPLETE; i++) {
        if (infinirtEventQuery(e, &st) != INFINI_STATUS_SUCCESS)
            return 0;
        if (st != INFINIRT_EVENT_COMPLETE)
            tc_sleep_ms(1);
    }
    return st == INFINIRT_EVENT_COMPLETE;
}

static void *watchdog(void *gate)
{
    tc_gate *g = gate;
    for (int i = 0; i < 2000 && !__atomic_load_n(&g->open, __ATOMIC_SEQ_CST); i++)
        tc_sleep_ms(1);
    tc_gate_open(g);
    return NULL;
}

/* As with CUDA's legacy default stream: NULL-stream work and a synchronous
 * Memcpy run after the work already queued on a blocking stream, and work
 * queued on the blocking stream afterwards runs after the NULL-stream work;
 * a non-blocking stream waits for none of it and holds none of it up. */
int test_cpu_blocking_streams(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    infinirtStream_t b, nb;
    ASSERT_OK(infinirtStreamCreate(&b));
    ASSERT_OK(infinirtStreamCreateWithFlags(&nb, INFINIRT_STREAM_NON_BLOCKING));
    ASSERT_STATUS(infinirtStreamCreateWithFlags(&nb, 0x10), INFINI_STATUS_BAD_PARAM);
    infinirtEvent_t nb_done, null_done;
    ASSERT_OK(infinirtEventCreate(&nb_done));
    ASSERT_OK(infinirtEventCreate(&null_done));
    enum { B1, NUL, COPY, B2, NB };
    static order_log log;
    static order_arg args[5];
    for (int i = 0; i < 5; i++)
        args[i] = (order_arg){&log, i};
    size_t n = 4096;
    unsigned char src[4096];
    tc_pattern(src, n, 5);
    void *d;
    ASSERT_OK(infinirtMalloc(&d, n));

    static tc_gate gate;
    CHECK(tc_hold_stream(b, &gate));
    ASSERT_OK(infinirtLaunchHostFunc(b, log_turn, &args[B1]));
    /* Slow NULL-stream work: B2 must still wait for it. */
    ASSERT_OK(infinirtLaunchHostFunc(NULL, sleep_20ms, NULL));
    ASSERT_OK(infinirtLaunchHostFunc(NULL, log_turn, &args[NUL]));
    ASSERT_OK(infinirtEventRecord(null_done, NULL));
    sync_copy_arg c = {d, src, n, &log, COPY, INFINI_STATUS_INTERNAL_ERROR};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, sync_copy, &c), 0);
    ASSERT_OK(infinirtLaunchHostFunc(b, log_turn, &args[B2]));
    /* The non-blocking stream runs while b is held. */
    ASSERT_OK(infinirtLaunchHostFunc(nb, log_turn, &args[NB]));
    ASSERT_OK(infinirtEventRecord(nb_done, nb));
    int nb_ran = completes_soon(nb_done);
    tc_sleep_ms(30); /* time for a wrong order to show */
    int copy_early = atomic_load(&log.at[COPY]) != 0, null_early = atomic_load(&log.at[NUL]) != 0;
    infinirtEventStatus_t st;
    ASSERT_OK(infinirtEventQuery(null_done, &st));
    tc_gate_open(&gate);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(c.st);
    ASSERT(nb_ran);
    ASSERT_EQ(copy_early, 0);
    ASSERT_EQ(null_early, 0);
    ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
    ASSERT_OK(infinirtDeviceSynchronize());
    ASSERT_MEM_EQ(d, src, n);
    ASSERT_EQ(atomic_load(&log.at[NB]), 1);
    ASSERT_EQ(atomic_load(&log.at[B1]), 2);
    ASSERT_EQ(atomic_load(&log.at[NUL]), 3);
    ASSERT_GT(atomic_load(&log.at[COPY]), 3); /* after the NULL-stream work it was issued after */
    ASSERT_GT(atomic_load(&log.at[B2]), 3);   /* after the NULL-stream work queued before it */

    /* A held non-blocking stream holds up neither the NULL stream nor a
     * synchronous copy or fill (a watchdog opens the gate after 2 s, so a
     * wrong wait shows as slowness, not a hang). */
    static tc_gate gate2;
    CHECK(tc_hold_stream(nb, &gate2));
    pthread_t dog;
    ASSERT_EQ(pthread_create(&dog, NULL, watchdog, &gate2), 0);
    atomic_int flag = 0;
    ASSERT_OK(infinirtLaunchHostFunc(NULL, set_flag, &flag));
    ASSERT_OK(infinirtEventRecord(null_done, NULL));
    int null_ran = completes_soon(null_done);
    ASSERT_OK(infinirtMemset(d, 0x77, n));
    ASSERT_OK(infinirtMemcpy(d, src, 16, INFINIRT_MEMCPY_H2D));
    int held = !__atomic_load_n(&gate2.open, __ATOMIC_SEQ_CST);
    tc_gate_open(&gate2);
    ASSERT_EQ(pthread_join(dog, NULL), 0);
    ASSERT(held);
    ASSERT(null_ran);
    ASSERT_EQ(atomic_load(&flag), 1);
    ASSERT_EQ(((unsigned char *)d)[n - 1], 0x77);

    ASSERT_OK(infinirtFree(d));
    ASSERT_OK(infinirtEventDestroy(nb_done));
    ASSERT_OK(infinirtEventDestroy(null_done));
    ASSERT_OK(infinirtStreamDestroy(b));
    ASSERT_OK(infinirtStreamDestroy(nb));
    return TEST_OK;
}

/* An event recorded on an idle stream completes at once only when no other
 * stream's work comes before it: a record on the NULL stream waits for the
 * work already queued on a blocking stream, a record on a blocking stream
 * for the NULL stream's, as with CUDA's legacy default stream; a record on
 * an idle non-blocking stream completes at once whatever is held. */
int test_cpu_blocking_records(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    infinirtStream_t b, nb;
    ASSERT_OK(infinirtStreamCreate(&b));
    ASSERT_OK(infinirtStreamCreateWithFlags(&nb, INFINIRT_STREAM_NON_BLOCKING));
    infinirtEvent_t e;
    ASSERT_OK(infinirtEventCreate(&e));
    infinirtEventStatus_t st;

    /* b held; the NULL stream itself has nothing queued. */
    static tc_gate held_b;
    CHECK(tc_hold_stream(b, &held_b));
    ASSERT_OK(infinirtEventRecord(e, NULL));
    tc_sleep_ms(20); /* time for a wrong completion to show */
    ASSERT_OK(infinirtEventQuery(e, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
    ASSERT_OK(infinirtEventRecord(e, nb));
    ASSERT(completes_soon(e));
    tc_gate_open(&held_b);
    ASSERT_OK(infinirtDeviceSynchronize());

    /* The NULL stream held; b has nothing queued. */
    static tc_gate held_null;
    CHECK(tc_hold_stream(NULL, &held_null));
    ASSERT_OK(infinirtEventRecord(e, b));
    tc_sleep_ms(20);
    ASSERT_OK(infinirtEventQuery(e, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_NOT_READY);
    ASSERT_OK(infinirtEventRecord(e, nb));
    ASSERT(completes_soon(e));
    tc_gate_open(&held_null);
    ASSERT_OK(infinirtDeviceSynchronize());

    /* Nothing held: a record on each completes at once. */
    ASSERT_OK(infinirtEventRecord(e, b));
    ASSERT_OK(infinirtEventQuery(e, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    ASSERT_OK(infinirtEventRecord(e, NULL));
    ASSERT_OK(infinirtEventQuery(e, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);

    ASSERT_OK(infinirtEventDestroy(e));
    ASSERT_OK(infinirtStreamDestroy(b));
    ASSERT_OK(infinirtStreamDestroy(nb));
    return TEST_OK;
}

/* EventSynchronize waits for the record current when it was called: a
 * later record of the event that completes first (on an idle stream) does
 * not end it.  The waiting thread is seen asleep (/proc) for a while
 * before the event is recorded again, so its call has certainly taken
 * its record; a plain sleep could let the record come first, which the
 * call would then rightly wait for instead. */
typedef struct {
    infinirtEvent_t e;
    atomic_int tid, returned;
    infiniStatus_t st;
} event_syncer;

static void *event_sync_thread(void *p)
{
    event_syncer *y = p;
    atomic_store(&y->tid, (int)syscall(SYS_gettid));
    y->st = infinirtEventSynchronize(y->e);
    atomic_store(&y->returned, 1);
    return NULL;
}

/* Whether thread tid of this process is asleep (state S in its stat). */
static int thread_asleep(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after the command name, which may hold anything */
    return p != NULL && p[1] == ' ' && p[2] == 'S';
}

int test_cpu_event_sync_binds_record(void)
{
    cpu_config("async");
    CHECK(tc_use_device(0));
    infinirtStream_t held, idle;
    ASSERT_OK(infinirtStreamCreate(&held));
    ASSERT_OK(infinirtStreamCreate(&idle));
    event_syncer y = {.st = INFINI_STATUS_INTERNAL_ERROR};
    ASSERT_OK(infinirtEventCreate(&y.e));
    static tc_gate gate; /* static: the runner may open it after we return */
    CHECK(tc_hold_stream(held, &gate));
    ASSERT_OK(infinirtEventRecord(y.e, held));
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, event_sync_thread, &y), 0);
    /* Asleep 20 polls in a row (a passing lock or barrier sleeps far
     * shorter): it waits for the held record. */
    for (int i = 0, asleep = 0; asleep < 20; i++) {
        ASSERT(i < 30000);
        int returned = atomic_load(&y.returned);
        ASSERT_EQ(returned, 0);
        int tid = atomic_load(&y.tid);
        asleep = tid != 0 && thread_asleep(tid) ? asleep + 1 : 0;
        tc_sleep_ms(1);
    }
    ASSERT_OK(infinirtEventRecord(y.e, idle)); /* complete at once */
    infinirtEventStatus_t st;
    ASSERT_OK(infinirtEventQuery(y.e, &st));
    ASSERT_EQ(st, INFINIRT_EVENT_COMPLETE);
    for (int i = 0; i < 100; i++) {
        int returned = atomic_load(&y.returned);
        ASSERT_EQ(returned, 0); /* still waiting for the held record */
        tc_sleep_ms(1);
    }
    tc_gate_open(&gate);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_OK(y.st);
    ASSERT_OK(infinirtEventDestroy(y.e));
    ASSERT_OK(infinirtStreamDestroy(held));
    ASSERT_OK(infinirtStreamDestroy(idle));
    return TEST_OK;
}

/* --------------------------------------------- ABI fields, called directly */

/* Counts the log lines about short init args (the format is enough). */
static int abi_logged;

static void abi_log_fn(int level, const char *plugin, const char *fmt, ...)
{
    (void)plugin;
    abi_logged += level == INFINIRT_PLUGIN_LOG_ERROR && strstr(fmt, "init args of") != NULL;
}

/* The CPU plugin's own table, from its entry (no loader involved). */
static int raw_cpu_ops(const infinirtPluginOps **ops)
{
    void *lib = dlopen(CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT(lib != NULL);
    void *sym = dlsym(lib, INFINIRT_PLUGIN_ENTRY_NAME);
    ASSERT(sym != NULL);
    infinirtPluginEntryFn entry;
    memcpy(&entry, &sym, sizeof sym);
    *ops = NULL;
    ASSERT_OK(entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, ops));
    return TEST_OK;
}

/* Init args for two devices with async streams, of this loader's size. */
static const infinirtPluginKeyValue k_two_async[] = {{"devices", "2"}, {"streams", "async"}};
static infinirtPluginInitArgs two_async_args(char *msg, size_t size)
{
    return (infinirtPluginInitArgs){
        .struct_size = sizeof(infinirtPluginInitArgs),
        .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
        .config = k_two_async,
        .config_count = 2,
        .log = abi_log_fn,
        .message = msg,
        .message_size = size,
    };
}

/* plugins/README.md, "ABI fields", on the CPU plugin's table called
 * without the loader (as a tool or a test harness may): init args shorter
 * than ABI 1.0's are refused with the reason in the log, args of exactly
 * that size are served, and a device index outside [0, count) is
 * DEVICE_NOT_FOUND from every entry that looks a device up.  No infinirt
 * call is made, so the loader never loads the same library. */
int test_cpu_abi_fields(void)
{
    const infinirtPluginOps *ops = NULL;
    CHECK(raw_cpu_ops(&ops));
    char msg[256] = "";
    infinirtPluginInitArgs args = two_async_args(msg, sizeof msg);
    args.struct_size = offsetof(infinirtPluginInitArgs, message_size) + sizeof(size_t) - 1;
    int count = -1;
    ASSERT_STATUS(ops->init(&args, &count), INFINI_STATUS_BAD_PARAM);
    ASSERT_EQ(abi_logged, 1);
    args.struct_size++;
    ASSERT_OK(ops->init(&args, &count));
    ASSERT_EQ(count, 2);
    infinirtPluginDeviceInfo info;
    size_t fr, tot;
    void *a = NULL, *b = NULL;
    uint32_t flags;
    int idle;
    unsigned char x = 1, y = 0;
    for (int dev = -1; dev <= 2; dev += 3) {
        ASSERT_STATUS(ops->get_device_info(dev, &info), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->get_mem_info(dev, &fr, &tot), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->device_synchronize(dev), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->device_get_native(dev, &a, &b), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->get_device_flags(dev, &flags), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->malloc_device(dev, &a, 64), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->stream_create(dev, &a), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->stream_synchronize(dev, NULL), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->stream_query(dev, NULL, &idle), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->device_query(dev, &idle), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->memcpy(dev, &y, &x, 1, INFINIRT_PLUGIN_MEMCPY_H2H), INFINI_STATUS_DEVICE_NOT_FOUND);
        ASSERT_STATUS(ops->memcpy_async(dev, &y, &x, 1, INFINIRT_PLUGIN_MEMCPY_H2H, NULL),
                      INFINI_STATUS_DEVICE_NOT_FOUND);
    }
    ASSERT_EQ(y, 0);
    ops->shutdown();
    return TEST_OK;
}

/* device_query (ABI 1.6), async streams: idle with nothing queued and after
 * small work run on the caller's thread; busy while a command waits in a
 * stream of the device (only that device), and idle again once it is
 * done.  Inline streams are always idle. */
int test_cpu_device_query(void)
{
    const infinirtPluginOps *ops = NULL;
    CHECK(raw_cpu_ops(&ops));
    char msg[256] = "";
    infinirtPluginInitArgs args = two_async_args(msg, sizeof msg);
    int count = -1, idle = -1;
    ASSERT_OK(ops->init(&args, &count));
    ASSERT_OK(ops->device_query(0, &idle));
    ASSERT_EQ(idle, 1);
    void *s;
    unsigned char x = 7, y = 0;
    ASSERT_OK(ops->stream_create(0, &s));
    ASSERT_OK(ops->memcpy_async(0, &y, &x, 1, INFINIRT_PLUGIN_MEMCPY_H2H, s));
    ASSERT_OK(ops->device_query(0, &idle));
    ASSERT_EQ(idle, 1);
    ASSERT_EQ(y, 7);
    static tc_gate gate;
    ASSERT_OK(ops->launch_host_func(0, s, tc_gate_wait_fn, &gate));
    ASSERT_OK(ops->memcpy_async(0, &y, &x, 1, INFINIRT_PLUGIN_MEMCPY_H2H, s));
    ASSERT_OK(ops->device_query(0, &idle));
    ASSERT_EQ(idle, 0);
    ASSERT_OK(ops->device_query(1, &idle));
    ASSERT_EQ(idle, 1);
    tc_gate_open(&gate);
    ASSERT_OK(ops->stream_synchronize(0, s));
    ASSERT_OK(ops->device_query(0, &idle));
    ASSERT_EQ(idle, 1);
    ASSERT_OK(ops->stream_destroy(0, s));
    ops->shutdown();
    /* Inline streams: always idle, and a device out of range is still
     * DEVICE_NOT_FOUND (for stream_query too). */
    const infinirtPluginKeyValue inl[] = {{"devices", "2"}, {"streams", "inline"}};
    args.config = inl;
    ASSERT_OK(ops->init(&args, &count));
    ASSERT_OK(ops->device_query(0, &idle));
    ASSERT_EQ(idle, 1);
    ASSERT_STATUS(ops->device_query(2, &idle), INFINI_STATUS_DEVICE_NOT_FOUND);
    ASSERT_STATUS(ops->stream_query(2, NULL, &idle), INFINI_STATUS_DEVICE_NOT_FOUND);
    ops->shutdown();
    return TEST_OK;
}
