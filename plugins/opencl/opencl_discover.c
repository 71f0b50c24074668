/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_discover.c - enumerate platforms and devices, apply the config's
 * filters, and describe each selected device.
 *
 * Order: platforms sorted by name then vendor (stable, so two copies of one
 * ICD keep the loader's order), each platform's devices in the driver's
 * order.  The ICD loader's own order follows directory listings, which are
 * not guaranteed stable, so the sort is what makes "device 0" mean the same
 * device from run to run.
 *
 * Only cheap queries happen here; contexts and queues wait for first use.
 */
#include "opencl_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cl_platform_id id;
    char name[256];
    char vendor[256];
    int major;
} platform_info;

typedef struct {
    cl_device_id id;
    const platform_info *platform;
} candidate;

static void platform_string(cl_platform_id p, cl_platform_info what, char *buf, size_t size)
{
    buf[0] = '\0';
    if (clGetPlatformInfo(p, what, size, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[size - 1] = '\0';
}

static void device_string(cl_device_id d, cl_device_info what, char *buf, size_t size)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, size, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[size - 1] = '\0';
}

/* "OpenCL 3.0 PoCL ..." -> 3; 1 when unparsable (the oldest we accept). */
static int version_major(const char *v)
{
    int major = 0, minor = 0;

    if (sscanf(v, "OpenCL %d.%d", &major, &minor) != 2 || major < 1)
        return 1;
    return major;
}

static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);

    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

static int platform_before(const platform_info *a, const platform_info *b)
{
    int c = strcmp(a->name, b->name);
    return c < 0 || (c == 0 && strcmp(a->vendor, b->vendor) < 0);
}

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "gpu";
    if (t & CL_DEVICE_TYPE_CPU)
        return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    if (t & CL_DEVICE_TYPE_CUSTOM)
        return "custom";
    return "other";
}

/* Coarse-grained buffer SVM needs a 2.0+ device and platform; 3.0 made it
 * optional, so the capability bit decides. */
static int device_has_svm(cl_device_id d, const platform_info *p)
{
    char version[128];
    cl_device_svm_capabilities caps = 0;

    device_string(d, CL_DEVICE_VERSION, version, sizeof version);
    if (version_major(version) < 2 || p->major < 2)
        return 0;
    if (clGetDeviceInfo(d, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL) != CL_SUCCESS)
        return 0;
    return (caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
}

/* Fill one opencl__device from a candidate.  Returns BAD_PARAM (msg) when the
 * memory mode cannot be honoured. */
static infiniStatus_t describe(opencl__device *d, const candidate *c, opencl__mem_mode mode, char *msg,
                               size_t msg_size)
{
    char version[128];
    cl_ulong global = 0, max_alloc = 0;
    int svm = device_has_svm(c->id, c->platform);

    d->platform = c->platform->id;
    d->id = c->id;
    d->platform_major = c->platform->major;
    device_string(c->id, CL_DEVICE_NAME, d->name, sizeof d->name);
    device_string(c->id, CL_DEVICE_VERSION, version, sizeof version);
    clGetDeviceInfo(c->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    clGetDeviceInfo(c->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    d->global_mem = (size_t)global;
    d->max_alloc = (size_t)max_alloc;

    if (mode == OPENCL__MEM_SVM && !svm) {
        snprintf(msg, msg_size,
                 "[plugin.opencl] memory = svm, but device %d (%s, %s) has no coarse-grained "
                 "buffer SVM; use memory = buffer or auto",
                 d->index, d->name, version);
        return INFINI_STATUS_BAD_PARAM;
    }
    d->svm = mode == OPENCL__MEM_BUFFER ? 0 : svm;
    /* The version string can be long; cut it so svm/mode always fit. */
    snprintf(d->description, sizeof d->description, "platform: %.80s; %.100s; svm: %s; mode: %s", c->platform->name,
             version, svm ? "yes" : "no", d->svm ? "svm" : "buffer");
    return INFINI_STATUS_SUCCESS;
}

/* Gather platforms, sorted.  *out is malloc'd. */
static infiniStatus_t list_platforms(platform_info **out, cl_uint *count, char *msg, size_t msg_size)
{
    cl_uint n = 0;
    cl_platform_id *ids;
    platform_info *ps;
    cl_int err = clGetPlatformIDs(0, NULL, &n);

    *out = NULL;
    *count = 0;
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && n == 0)) {
        snprintf(msg, msg_size,
                 "no OpenCL platform found (no ICD registered in /etc/OpenCL/vendors, or OCL_ICD_VENDORS)");
        return INFINI_STATUS_SUCCESS;
    }
    if (err != CL_SUCCESS) {
        snprintf(msg, msg_size, "clGetPlatformIDs failed: %s (%d)", opencl__cl_error_name(err), (int)err);
        return opencl__cl_fail("clGetPlatformIDs", err);
    }
    ids = calloc(n, sizeof *ids);
    ps = calloc(n, sizeof *ps);
    if (ids == NULL || ps == NULL) {
        free(ids);
        free(ps);
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    err = clGetPlatformIDs(n, ids, &n);
    if (err != CL_SUCCESS) {
        free(ids);
        free(ps);
        snprintf(msg, msg_size, "clGetPlatformIDs failed: %s (%d)", opencl__cl_error_name(err), (int)err);
        return opencl__cl_fail("clGetPlatformIDs", err);
    }
    for (cl_uint i = 0; i < n; i++) {
        platform_info p;
        char version[128];
        cl_uint j = i;

        p.id = ids[i];
        platform_string(p.id, CL_PLATFORM_NAME, p.name, sizeof p.name);
        platform_string(p.id, CL_PLATFORM_VENDOR, p.vendor, sizeof p.vendor);
        platform_string(p.id, CL_PLATFORM_VERSION, version, sizeof version);
        p.major = version_major(version);
        /* Insertion sort: stable, and platforms are few. */
        while (j > 0 && platform_before(&p, &ps[j - 1])) {
            ps[j] = ps[j - 1];
            j--;
        }
        ps[j] = p;
    }
    free(ids);
    *out = ps;
    *count = n;
    return INFINI_STATUS_SUCCESS;
}

/* Append the platform's devices matching the type mask to *cands. */
static infiniStatus_t add_devices(const platform_info *p, cl_device_type mask, candidate **cands, size_t *count)
{
    cl_uint n = 0;
    cl_device_id *ids;
    candidate *grown;
    cl_int err;

    err = clGetDeviceIDs(p->id, mask, 0, NULL, &n);
    if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && n == 0))
        return INFINI_STATUS_SUCCESS;
    if (err != CL_SUCCESS) {
        /* One broken platform must not hide the others. */
        opencl__log(INFINIRT_PLUGIN_LOG_WARN, "platform \"%s\" skipped: clGetDeviceIDs failed: %s (%d)", p->name,
                    opencl__cl_error_name(err), (int)err);
        return INFINI_STATUS_SUCCESS;
    }
    ids = calloc(n, sizeof *ids);
    grown = realloc(*cands, (*count + n) * sizeof **cands);
    if (ids == NULL || grown == NULL) {
        free(ids);
        if (grown != NULL)
            *cands = grown;
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    *cands = grown;
    err = clGetDeviceIDs(p->id, mask, n, ids, &n);
    if (err != CL_SUCCESS) {
        free(ids);
        opencl__log(INFINIRT_PLUGIN_LOG_WARN, "platform \"%s\" skipped: clGetDeviceIDs failed: %s (%d)", p->name,
                    opencl__cl_error_name(err), (int)err);
        return INFINI_STATUS_SUCCESS;
    }
    for (cl_uint i = 0; i < n; i++) {
        grown[*count].id = ids[i];
        grown[*count].platform = p;
        (*count)++;
    }
    free(ids);
    return INFINI_STATUS_SUCCESS;
}

/* Why nothing matched: name every device the filters saw. */
static void explain_none(const opencl__config *cfg, const platform_info *ps, cl_uint np, char *msg, size_t msg_size)
{
    size_t len, all = 0;

    for (cl_uint i = 0; i < np; i++) {
        cl_uint n = 0;
        if (clGetDeviceIDs(ps[i].id, CL_DEVICE_TYPE_ALL, 0, NULL, &n) == CL_SUCCESS)
            all += n;
    }

    snprintf(msg, msg_size,
             "no OpenCL device matches platform = \"%s\", device_type = %s (%zu device%s on %u platform%s:",
             cfg->platform ? cfg->platform : "*", cfg->type_text, all, all == 1 ? "" : "s", (unsigned)np,
             np == 1 ? "" : "s");
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id ids[16];
        cl_uint n = 0;

        if (clGetDeviceIDs(ps[i].id, CL_DEVICE_TYPE_ALL, 16, ids, &n) != CL_SUCCESS)
            n = 0;
        for (cl_uint j = 0; j < n && j < 16; j++) {
            char name[128];
            cl_device_type t = 0;

            device_string(ids[j], CL_DEVICE_NAME, name, sizeof name);
            clGetDeviceInfo(ids[j], CL_DEVICE_TYPE, sizeof t, &t, NULL);
            len = strlen(msg);
            snprintf(msg + len, msg_size - len, " \"%s\" [%s] on \"%s\";", name, type_name(t), ps[i].name);
        }
    }
    len = strlen(msg);
    if (len > 0 && msg[len - 1] == ';')
        msg[len - 1] = ')';
    else
        snprintf(msg + len, msg_size - len, ")");
}

infiniStatus_t opencl__discover(const opencl__config *cfg, int *count, char *msg, size_t msg_size)
{
    platform_info *ps = NULL;
    candidate *cands = NULL, *picked = NULL;
    size_t ncands = 0, npicked = 0;
    cl_uint np = 0;
    infiniStatus_t st;

    *count = 0;
    st = list_platforms(&ps, &np, msg, msg_size);
    if (st != INFINI_STATUS_SUCCESS || np == 0)
        goto out;

    for (cl_uint i = 0; i < np; i++) {
        if (cfg->platform != NULL && !contains_ci(ps[i].name, cfg->platform))
            continue;
        st = add_devices(&ps[i], cfg->type_mask, &cands, &ncands);
        if (st != INFINI_STATUS_SUCCESS)
            goto out;
    }
    if (ncands == 0) {
        explain_none(cfg, ps, np, msg, msg_size);
        /* No device at all is a plain answer (a machine without OpenCL
         * devices: the report says so); a platform or device_type filter
         * that matches none is more likely a mistake in the config. */
        if (cfg->platform != NULL || cfg->type_mask != CL_DEVICE_TYPE_ALL)
            opencl__log(INFINIRT_PLUGIN_LOG_WARN, "%s", msg);
        goto out;
    }

    /* devices = i,j,...: indices into the filtered list, in the order given.
     * A repeated index is a second device with its own context, which lets a
     * one-device machine exercise cross-device paths. */
    if (cfg->devices != NULL) {
        picked = calloc(cfg->device_count, sizeof *picked);
        if (picked == NULL) {
            st = INFINI_STATUS_OUT_OF_MEMORY;
            goto out;
        }
        for (size_t i = 0; i < cfg->device_count; i++) {
            int idx = cfg->devices[i];
            if ((size_t)idx >= ncands) {
                opencl__log(INFINIRT_PLUGIN_LOG_WARN,
                            "[plugin.opencl] devices: index %d skipped, only %zu device%s match the filters", idx,
                            ncands, ncands == 1 ? "" : "s");
                continue;
            }
            for (size_t j = 0; j < i; j++)
                if (cfg->devices[j] == idx) {
                    opencl__log(INFINIRT_PLUGIN_LOG_WARN,
                                "[plugin.opencl] devices: index %d listed twice; it is exposed as two devices "
                                "with separate contexts",
                                idx);
                    break;
                }
            picked[npicked++] = cands[idx];
        }
        if (npicked == 0) {
            snprintf(msg, msg_size,
                     "[plugin.opencl] devices: no listed index is below %zu, the number of devices matching "
                     "the filters",
                     ncands);
            opencl__log(INFINIRT_PLUGIN_LOG_WARN, "%s", msg);
            goto out;
        }
    } else {
        picked = cands;
        npicked = ncands;
        cands = NULL;
    }

    opencl__g.devices = calloc(npicked, sizeof *opencl__g.devices);
    if (opencl__g.devices == NULL) {
        st = INFINI_STATUS_OUT_OF_MEMORY;
        goto out;
    }
    for (size_t i = 0; i < npicked; i++) {
        opencl__device *d = &opencl__g.devices[i];

        d->index = (int)i;
        pthread_mutex_init(&d->lock, NULL);
        atomic_init(&d->ready, 0);
        atomic_init(&d->held, 0);
        d->queues.next = d->queues.prev = &d->queues;
        opencl__g.count = (int)i + 1;
        st = describe(d, &picked[i], cfg->memory, msg, msg_size);
        if (st != INFINI_STATUS_SUCCESS)
            goto out;
    }
    *count = opencl__g.count;

out:
    free(picked);
    free(cands);
    free(ps);
    return st;
}
