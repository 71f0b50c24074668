/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_nvml.c - device utilisation from NVML, for the resource snapshot
 * (the get_utilization entry).
 *
 * NVML (libnvidia-ml.so.1) ships with the driver but is optional: it is
 * dlopened on the first utilisation query, once for the process, never
 * linked, and its absence only means "no utilisation figures".  The path can
 * be changed with `nvml_library` in [plugin.cuda] (cuda_config.c).
 *
 * It also gives memory figures without a CUDA context (the get_mem_info
 * entry, cuda_memory.c): cuMemGetInfo needs one, and retaining a primary
 * context costs hundreds of MiB of the device, which a tool that lists
 * every device's memory (infinirt-info) should not spend.
 *
 * NVML numbers devices its own way: it ignores CUDA_VISIBLE_DEVICES and may
 * order them differently from CUDA (CUDA_DEVICE_ORDER=FASTEST_FIRST), so an
 * NVML index says nothing about a CUDA ordinal.  Each device is matched by
 * its UUID, else by its PCI bus id, and the match is cached per device.
 *
 * NVML's structures are not taken from nvml.h (not part of the CUDA
 * toolkit's headers everywhere): the few used here are declared below, with
 * the layout NVML has kept stable since its first version.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"

typedef int nvml_return;                  /* nvmlReturn_t */
typedef struct nvml_device_ *nvml_device; /* nvmlDevice_t */
typedef struct {
    unsigned int gpu;    /* percent of time a kernel was running */
    unsigned int memory; /* percent of time device memory was read or written */
} nvml_utilization;      /* nvmlUtilization_t */
typedef struct {
    unsigned long long total; /* bytes */
    unsigned long long free;
    unsigned long long used;
} nvml_memory; /* nvmlMemory_t (version 1) */
#define NVML_OK 0

typedef nvml_return (*nvml_init_fn)(void);
typedef nvml_return (*nvml_by_string_fn)(const char *id, nvml_device *device);
typedef nvml_return (*nvml_rates_fn)(nvml_device device, nvml_utilization *util);
typedef nvml_return (*nvml_memory_fn)(nvml_device device, nvml_memory *mem);
typedef const char *(*nvml_error_string_fn)(nvml_return r);

/* One device's match, keyed by the CUdevice it was made for (a plugin
 * re-initialised by a harness may put another device at the same index). */
typedef struct {
    int resolved; /* 0: not yet tried */
    CUdevice cudev;
    nvml_device handle; /* NULL: NVML does not list the device */
    int by_uuid;        /* matched by UUID (not only by PCI bus id) */
    int rates_failed_logged;
} nvml_match;

static struct {
    pthread_once_t once;
    char path[1024]; /* set at init, read by the load */
    int usable;      /* the load succeeded: everything below is set */
    nvml_by_string_fn by_uuid, by_pci;
    nvml_rates_fn rates;
    nvml_memory_fn memory; /* NULL: not exported */
    nvml_error_string_fn error_string;
    PFN_cuDeviceGetPCIBusId_v4010 get_bus_id; /* NULL: not exported */
    pthread_mutex_t lock;                     /* matches */
    nvml_match *matches;
    int nmatches;
} g_nvml = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

void cuda__nvml_configure(const char *path)
{
    /* Read by the load only, which runs after init has returned; a
     * harness that initialises the plugin again after the load gets the
     * library already loaded, whatever it names now. */
    snprintf(g_nvml.path, sizeof g_nvml.path, "%s", path != NULL ? path : NVML_DEFAULT_LIBRARY);
}

static const char *nvml_error(nvml_return r)
{
    static _Thread_local char buf[32];
    const char *s = g_nvml.error_string != NULL ? g_nvml.error_string(r) : NULL;
    if (s != NULL)
        return s;
    snprintf(buf, sizeof buf, "nvmlReturn_t %d", r);
    return buf;
}

/* dlsym's data pointer into a function pointer (see cuda_driver.c). */
static int sym(void *lib, const char *name, void *fn_out)
{
    void *p = dlsym(lib, name);
    if (p == NULL)
        return -1;
    memcpy(fn_out, &p, sizeof p);
    return 0;
}

static void load(void)
{
    const char *path = g_nvml.path[0] != '\0' ? g_nvml.path : NVML_DEFAULT_LIBRARY;
    nvml_init_fn init = NULL;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

    if (lib == NULL) {
        const char *err = dlerror();
        cuda__log(INFINIRT_PLUGIN_LOG_INFO,
                  "NVML not available (%s), so resource snapshots carry no "
                  "utilisation: %s",
                  path, err ? err : "unknown dlopen error");
        return;
    }
    if (sym(lib, "nvmlInit_v2", &init) != 0 || sym(lib, "nvmlDeviceGetHandleByUUID", &g_nvml.by_uuid) != 0 ||
        sym(lib, "nvmlDeviceGetUtilizationRates", &g_nvml.rates) != 0) {
        cuda__log(INFINIRT_PLUGIN_LOG_INFO,
                  "%s is not a usable NVML (it lacks nvmlInit_v2, "
                  "nvmlDeviceGetHandleByUUID or nvmlDeviceGetUtilizationRates): no utilisation",
                  path);
        dlclose(lib); /* nothing of it has run */
        return;
    }
    (void)sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", &g_nvml.by_pci);
    (void)sym(lib, "nvmlErrorString", &g_nvml.error_string);
    (void)sym(lib, "nvmlDeviceGetMemoryInfo", &g_nvml.memory);
    /* The driver's PCI bus id of a device (cuda_driver.c resolved the
     * functions every call needs; this one only serves this file). */
    (void)sym(cuda__state.lib, "cuDeviceGetPCIBusId", &g_nvml.get_bus_id);

    nvml_return r = init();
    if (r != NVML_OK) {
        /* NVML may have started something: the library stays loaded. */
        cuda__log(INFINIRT_PLUGIN_LOG_INFO, "%s: nvmlInit_v2 failed (%s): no utilisation", path, nvml_error(r));
        return;
    }
    cuda__log(INFINIRT_PLUGIN_LOG_DEBUG, "NVML loaded from %s for utilisation figures", path);
    g_nvml.usable = 1;
}

/* Find device `dev` in NVML: by UUID ("GPU-" and the 16 bytes as 8-4-4-4-12
 * hex digits, NVML's spelling), else by PCI bus id.  Called with the lock. */
static void resolve(int dev, nvml_match *m)
{
    const cuda__device_t *d = &cuda__state.devices[dev];
    char uuid[64] = "", bus_id[32] = "";
    nvml_device h = NULL;
    const char *fn;

    m->resolved = 1;
    m->cudev = d->cudev;
    m->handle = NULL;
    m->by_uuid = 0;
    m->rates_failed_logged = 0;
    if (cuda__device_uuid(dev, uuid, sizeof uuid, &fn) == CUDA_SUCCESS) {
        if (g_nvml.by_uuid(uuid, &h) == NVML_OK && h != NULL) {
            m->handle = h;
            m->by_uuid = 1;
            return;
        }
    }
    if (g_nvml.by_pci != NULL && g_nvml.get_bus_id != NULL &&
        g_nvml.get_bus_id(bus_id, (int)sizeof bus_id, d->cudev) == CUDA_SUCCESS) {
        bus_id[sizeof bus_id - 1] = '\0';
        if (g_nvml.by_pci(bus_id, &h) == NVML_OK && h != NULL) {
            m->handle = h;
            return;
        }
    }
    cuda__log(INFINIRT_PLUGIN_LOG_INFO,
              "device %d (CUDA device %d, %s, PCI %s) is not one NVML lists: no utilisation for it", dev, d->ordinal,
              uuid[0] ? uuid : "no UUID", bus_id[0] ? bus_id : "unknown");
}

/* The NVML device of `dev` (matched on first use), or NULL; *by_uuid
 * (when not NULL) says whether the match was by UUID. */
static nvml_device device_of(int dev, int *by_uuid)
{
    nvml_device h = NULL;

    pthread_mutex_lock(&g_nvml.lock);
    if (dev >= g_nvml.nmatches) {
        int n = cuda__state.count > dev ? cuda__state.count : dev + 1;
        nvml_match *grown = realloc(g_nvml.matches, (size_t)n * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&g_nvml.lock);
            return NULL;
        }
        memset(grown + g_nvml.nmatches, 0, (size_t)(n - g_nvml.nmatches) * sizeof *grown);
        g_nvml.matches = grown;
        g_nvml.nmatches = n;
    }
    nvml_match *m = &g_nvml.matches[dev];
    if (!m->resolved || m->cudev != cuda__state.devices[dev].cudev)
        resolve(dev, m);
    h = m->handle;
    if (by_uuid != NULL)
        *by_uuid = m->by_uuid;
    pthread_mutex_unlock(&g_nvml.lock);
    return h;
}

/* Once per device, so a monitor that polls a device NVML cannot measure
 * (a MIG instance, say) does not fill the log. */
static void note_rates_failed(int dev, nvml_return r)
{
    int first;

    pthread_mutex_lock(&g_nvml.lock);
    first = !g_nvml.matches[dev].rates_failed_logged;
    g_nvml.matches[dev].rates_failed_logged = 1;
    pthread_mutex_unlock(&g_nvml.lock);
    if (first)
        cuda__log(INFINIRT_PLUGIN_LOG_INFO,
                  "device %d: nvmlDeviceGetUtilizationRates failed (%s): no "
                  "utilisation for it",
                  dev, nvml_error(r));
}

infiniStatus_t cuda__get_utilization(int dev, infinirtPluginUtilization *util)
{
    nvml_utilization u = {0, 0};

    if (cuda__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    memset(util, 0, sizeof *util);
    pthread_once(&g_nvml.once, load);
    if (!g_nvml.usable)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    nvml_device h = device_of(dev, NULL);
    if (h == NULL)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    nvml_return r = g_nvml.rates(h, &u);
    if (r != NVML_OK) {
        note_rates_failed(dev, r);
        return INFINI_STATUS_NOT_IMPLEMENTED;
    }
    util->compute = (float)(u.gpu > 100 ? 100 : u.gpu) / 100.0f;
    util->memory_bandwidth = (float)(u.memory > 100 ? 100 : u.memory) / 100.0f;
    /* NVML's "gpu" figure is the share of its sample period in which some
     * kernel ran: the time in kernels, as far as NVML can tell, but sampled
     * (1/6 s to 1 s periods) and blind to overlap, so an estimate. */
    util->kernel_time = util->compute;
    util->valid =
        INFINIRT_PLUGIN_UTIL_COMPUTE | INFINIRT_PLUGIN_UTIL_MEMORY_BANDWIDTH | INFINIRT_PLUGIN_UTIL_KERNEL_TIME;
    util->estimated = INFINIRT_PLUGIN_UTIL_KERNEL_TIME;
    return INFINI_STATUS_SUCCESS;
}

/*
 * Free and total memory of `dev` from NVML, with no CUDA context; nonzero
 * when NVML cannot tell (no NVML, no nvmlDeviceGetMemoryInfo, a device it
 * does not list, a failed query): the caller asks the driver then.  Only a
 * match by UUID counts: a MIG instance's UUID is not spelled "GPU-...", so
 * such a device is found, if at all, by its PCI bus id, which names the
 * whole GPU, whose memory is not the instance's.
 */
int cuda__nvml_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
    nvml_memory mem = {0, 0, 0};
    int by_uuid = 0;

    pthread_once(&g_nvml.once, load);
    if (!g_nvml.usable || g_nvml.memory == NULL)
        return -1;
    nvml_device h = device_of(dev, &by_uuid);
    if (h == NULL || !by_uuid)
        return -1;
    nvml_return r = g_nvml.memory(h, &mem);
    if (r != NVML_OK || mem.free > mem.total) {
        cuda__log(INFINIRT_PLUGIN_LOG_DEBUG,
                  "device %d: nvmlDeviceGetMemoryInfo failed (%s): memory "
                  "figures from the driver",
                  dev, r != NVML_OK ? nvml_error(r) : "free above total");
        return -1;
    }
    *free_bytes = (size_t)mem.free;
    *total_bytes = (size_t)mem.total;
    return 0;
}
