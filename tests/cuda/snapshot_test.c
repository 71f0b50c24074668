/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot_test.c - infinirtGetDeviceResourceSnapshot on the CUDA plugin,
 * through the public API, over the fake driver and the fake NVML
 * (fake_nvml.c), which lists the devices in an order unlike CUDA's: the
 * figures each device gets prove NVML was asked by UUID or PCI bus id,
 * never by index.
 *
 *   cuda_snapshot_test NAME   (INFINIRT_CONFIG: a cuda-fake config naming
 *                              the fake NVML, or none, as CMake sets it)
 *
 * FAKE_NVML_PATH is the fake NVML: dlopen of the same path (RTLD_NOLOAD)
 * gives the copy the plugin loaded, whose counters say what it was asked.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "infinirt.h"
#include "snapshot_list.h"
#include "test.h"

#define NDEV 3 /* the fake driver's default */
#define UTIL_BITS                                                     \
    ((uint64_t)INFINIRT_RESOURCE_FIELD_COMPUTE_UTILIZATION |          \
     (uint64_t)INFINIRT_RESOURCE_FIELD_MEMORY_BANDWIDTH_UTILIZATION | \
     (uint64_t)INFINIRT_RESOURCE_FIELD_KERNEL_TIME_RATIO)

/* A fraction as a whole percent (NVML's unit), for exact comparisons. */
static int percent(float f)
{
    return (int)(f * 100.0f + 0.5f);
}

/* A counter of the fake NVML the plugin loaded; -1 if it loaded none. */
static int nvml_counter(const char *name)
{
    void *dl = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_NOLOAD);
    if (dl == NULL)
        return -1;
    void *s = dlsym(dl, name);
    int (*fn)(void);
    memcpy(&fn, &s, sizeof s);
    int v = s != NULL ? fn() : -1;
    dlclose(dl); /* drops our reference only */
    return v;
}

/* Lines of the log file containing `text`. */
static int log_count(const char *text)
{
    const char *path = getenv("INFINIRT_LOG_FILE");
    char line[2048];
    int n = 0;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        n += strstr(line, text) != NULL;
    fclose(f);
    return n;
}

/* The memory part, which holds on every device whatever NVML does:
 * figures from the fake driver (64 MiB a device), reserved from the
 * allocator, which holds the block `held` put there. */
static int check_memory(int d, const infinirtDeviceResourceSnapshot_t *s)
{
    infinirtAllocatorStats_t st;
    size_t f = 0, t = 0;
    ASSERT_EQ(s->device_type, INFINI_DEVICE_NVIDIA);
    ASSERT_EQ(s->device_id, d);
    ASSERT(s->valid_fields & INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY);
    ASSERT_EQ(s->estimated_fields & INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY, 0);
    ASSERT_OK(infinirtGetMemInfo(INFINI_DEVICE_NVIDIA, d, &f, &t));
    ASSERT_EQ(s->total_bytes, t);
    ASSERT_EQ(t, 64u << 20);
    ASSERT_EQ(s->free_bytes, f); /* nothing allocated in between */
    ASSERT_EQ(s->used_bytes, s->total_bytes - s->free_bytes);
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_NVIDIA, d, &st));
    ASSERT_GT(st.reserved_bytes, 0);
    ASSERT_EQ(s->reserved_bytes, st.reserved_bytes);
    ASSERT_GE(s->used_bytes, s->reserved_bytes); /* the driver counts what the allocator holds */
    ASSERT_EQ(s->communication_bytes, 0);
    ASSERT_EQ(s->valid_fields & INFINIRT_RESOURCE_FIELD_COMMUNICATION, 0);
    return TEST_OK;
}

/* Device d as the fake NVML measures CUDA device d (fake_nvml.c). */
static int check_util(int d, const infinirtDeviceResourceSnapshot_t *s)
{
    ASSERT_EQ(s->valid_fields & UTIL_BITS, UTIL_BITS);
    ASSERT_EQ(percent(s->compute_utilization), 10 * d + 11);
    ASSERT_EQ(percent(s->memory_bandwidth_utilization), 5 * d + 7);
    ASSERT_EQ(percent(s->kernel_time_ratio), 10 * d + 11);
    ASSERT_EQ(s->estimated_fields, INFINIRT_RESOURCE_FIELD_KERNEL_TIME_RATIO);
    return TEST_OK;
}

static int check_no_util(const infinirtDeviceResourceSnapshot_t *s)
{
    ASSERT_EQ(s->valid_fields, INFINIRT_RESOURCE_FIELD_MEMORY_CAPACITY);
    ASSERT_EQ(s->estimated_fields, 0);
    ASSERT_EQ(percent(s->compute_utilization), 0);
    ASSERT_EQ(percent(s->kernel_time_ratio), 0);
    return TEST_OK;
}

/* A block on every device, so reserved_bytes is not 0. */
static int hold_memory(void *held[NDEV])
{
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_NVIDIA, &n));
    ASSERT_EQ(n, NDEV);
    for (int d = 0; d < NDEV; d++) {
        ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_NVIDIA, d));
        ASSERT_OK(infinirtMalloc(&held[d], 4096));
    }
    return TEST_OK;
}

static int snapshot(int d, infinirtDeviceResourceSnapshot_t *s)
{
    memset(s, 0xab, sizeof *s); /* everything must be written */
    ASSERT_OK(infinirtGetDeviceResourceSnapshot(INFINI_DEVICE_NVIDIA, d, s));
    return TEST_OK;
}

/* Every device gets its own figures although NVML lists them in another
 * order; NVML was asked by UUID, initialised once, never asked by index. */
static int test_nvml_by_uuid(void)
{
    void *held[NDEV];
    infinirtDeviceResourceSnapshot_t s;
    CHECK(hold_memory(held));
    for (int round = 0; round < 3; round++)
        for (int d = NDEV - 1; d >= 0; d--) {
            CHECK(snapshot(d, &s));
            CHECK(check_memory(d, &s));
            CHECK(check_util(d, &s));
        }
    ASSERT_EQ(nvml_counter("fake_nvml_init_calls"), 1);
    ASSERT_EQ(nvml_counter("fake_nvml_index_calls"), 0);
    ASSERT_EQ(nvml_counter("fake_nvml_pci_calls"), 0);
    ASSERT_EQ(nvml_counter("fake_nvml_uuid_calls"), NDEV); /* matched once per device, then cached */
    ASSERT_EQ(nvml_counter("fake_nvml_rates_calls"), 3 * NDEV);
    for (int d = 0; d < NDEV; d++)
        ASSERT_OK(infinirtFree(held[d]));
    return TEST_OK;
}

/* A driver that gives no UUID (FAKE_CUDA_NO_UUID=1): the PCI bus id. */
static int test_nvml_pci_fallback(void)
{
    void *held[NDEV];
    infinirtDeviceResourceSnapshot_t s;
    CHECK(hold_memory(held));
    for (int d = 0; d < NDEV; d++) {
        CHECK(snapshot(d, &s));
        CHECK(check_memory(d, &s));
        CHECK(check_util(d, &s));
    }
    ASSERT_EQ(nvml_counter("fake_nvml_pci_calls"), NDEV);
    ASSERT_EQ(nvml_counter("fake_nvml_index_calls"), 0);
    return TEST_OK;
}

/* NVML lists 2 of the 3 devices (FAKE_NVML_DEVICES=2): the third has its
 * memory figures and no utilisation, with one log line however often it
 * is asked. */
static int test_nvml_unlisted_device(void)
{
    void *held[NDEV];
    infinirtDeviceResourceSnapshot_t s;
    CHECK(hold_memory(held));
    for (int round = 0; round < 4; round++) {
        for (int d = 0; d < 2; d++) {
            CHECK(snapshot(d, &s));
            CHECK(check_memory(d, &s));
            CHECK(check_util(d, &s));
        }
        CHECK(snapshot(2, &s));
        CHECK(check_memory(2, &s));
        CHECK(check_no_util(&s));
    }
    ASSERT_EQ(log_count("is not one NVML lists"), 1);
    ASSERT_EQ(nvml_counter("fake_nvml_index_calls"), 0);
    return TEST_OK;
}

/* Three rounds of snapshots of every device, each with memory figures and
 * no utilisation. */
static int memory_only_rounds(void)
{
    void *held[NDEV];
    infinirtDeviceResourceSnapshot_t s;
    CHECK(hold_memory(held));
    for (int round = 0; round < 3; round++)
        for (int d = 0; d < NDEV; d++) {
            CHECK(snapshot(d, &s));
            CHECK(check_memory(d, &s));
            CHECK(check_no_util(&s));
        }
    return TEST_OK;
}

/* No NVML at all (nvml_library names a missing file): memory only, a
 * success, one log line. */
static int test_no_nvml(void)
{
    CHECK(memory_only_rounds());
    ASSERT_EQ(log_count("NVML not available"), 1);
    ASSERT_EQ(log_count("WARN"), 0);
    ASSERT_EQ(log_count("ERROR"), 0);
    return TEST_OK;
}

/* nvmlInit_v2 fails (FAKE_NVML_INIT=fail): tried once, memory only. */
static int test_nvml_init_fails(void)
{
    CHECK(memory_only_rounds());
    ASSERT_EQ(nvml_counter("fake_nvml_init_calls"), 1);
    ASSERT_EQ(log_count("nvmlInit_v2 failed"), 1);
    return TEST_OK;
}

/* NVML cannot measure device 1 (FAKE_NVML_RATES_FAIL=1, as on a MIG
 * instance): no utilisation for it, one log line, the others unaffected. */
static int test_nvml_rates_fail(void)
{
    void *held[NDEV];
    infinirtDeviceResourceSnapshot_t s;
    CHECK(hold_memory(held));
    for (int round = 0; round < 3; round++)
        for (int d = 0; d < NDEV; d++) {
            CHECK(snapshot(d, &s));
            CHECK(check_memory(d, &s));
            if (d == 1)
                CHECK(check_no_util(&s));
            else
                CHECK(check_util(d, &s));
        }
    ASSERT_EQ(log_count("nvmlDeviceGetUtilizationRates failed"), 1);
    return TEST_OK;
}

/* The first queries come from many threads at once: NVML is loaded and
 * initialised once, each device matched once, every answer right. */
#define NTHREADS 8
static atomic_int g_go;

static void *snapshot_thread(void *arg)
{
    intptr_t bad = 0;
    (void)arg;
    while (!atomic_load(&g_go))
        ;
    for (int i = 0; i < 50; i++)
        for (int d = 0; d < NDEV; d++) {
            infinirtDeviceResourceSnapshot_t s;
            if (infinirtGetDeviceResourceSnapshot(INFINI_DEVICE_NVIDIA, d, &s) != INFINI_STATUS_SUCCESS ||
                (s.valid_fields & UTIL_BITS) != UTIL_BITS || percent(s.compute_utilization) != 10 * d + 11 ||
                s.device_id != d)
                bad++;
        }
    return (void *)bad;
}

static int test_nvml_threads(void)
{
    pthread_t th[NTHREADS];
    int n = 0;
    ASSERT_OK(infinirtGetDeviceCount(INFINI_DEVICE_NVIDIA, &n)); /* loader up, NVML not yet */
    ASSERT_EQ(nvml_counter("fake_nvml_init_calls"), -1);
    for (int i = 0; i < NTHREADS; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, snapshot_thread, NULL), 0);
    atomic_store(&g_go, 1);
    intptr_t bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        ASSERT_EQ(pthread_join(th[i], &r), 0);
        bad += (intptr_t)r;
    }
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(nvml_counter("fake_nvml_init_calls"), 1);
    ASSERT_EQ(nvml_counter("fake_nvml_uuid_calls"), NDEV);
    return TEST_OK;
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {CUDA_SNAPSHOT_LIST(TEST_ENTRY)};
    const test_suite suite = {tests, TEST_SUITE_COUNT(tests), NULL, NULL, NULL};
    const char *log = getenv("INFINIRT_LOG_FILE");
    if (log != NULL)
        unlink(log); /* the loader appends: start each run afresh */
    return test_main(argc, argv, &suite);
}
