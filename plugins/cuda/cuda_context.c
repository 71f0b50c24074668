/*
 * cuda_context.c - the device table and the primary contexts.
 *
 * Each exposed device uses its primary context, the one the CUDA runtime
 * uses too, so memory and streams are shared with any runtime code in the
 * same process.  It is retained once, on the device's first use (creating a
 * context costs time and device memory, and many processes touch only one of
 * several GPUs), and released at shutdown.
 *
 * Any thread may call with any device: before work that needs a context, the
 * device's context is made current on the calling thread.  We ask the driver
 * which context is current (cuCtxGetCurrent reads the driver's thread-local
 * state; it is cheap) rather than trusting a thread-local cache of our own,
 * because code in the same process that calls cudaSetDevice or
 * cuCtxSetCurrent changes the current context behind our back, and a stale
 * cache would send allocations to the wrong GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

infinirt_cuda__state_t infinirt_cuda__state;

static infiniStatus_t select_devices(const infinirt_cuda__config_t *cfg, int present, char *msg,
                                     size_t msg_size)
{
    infinirt_cuda__state_t *s = &infinirt_cuda__state;
    int want = cfg->devices != NULL ? cfg->device_count : present;

    s->devices = calloc(want > 0 ? (size_t)want : 1, sizeof *s->devices);
    if (s->devices == NULL) {
        snprintf(msg, msg_size, "out of host memory building the device table");
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    for (int i = 0; i < want; i++) {
        int ordinal = cfg->devices != NULL ? cfg->devices[i] : i;
        int dup = 0;

        if (ordinal >= present) {
            infinirt_cuda__log(INFINIRT_PLUGIN_LOG_WARN,
                               "devices: CUDA device %d does not exist (%d present), skipped", ordinal, present);
            continue;
        }
        for (int j = 0; j < s->count; j++)
            dup |= s->devices[j].ordinal == ordinal;
        if (dup) {
            infinirt_cuda__log(INFINIRT_PLUGIN_LOG_WARN, "devices: CUDA device %d listed twice, skipped", ordinal);
            continue;
        }

        infinirt_cuda__device_t *d = &s->devices[s->count];
        infiniStatus_t st = INFINIRT_CUDA__CALL(-1, DeviceGet, &d->cudev, ordinal);
        if (st != INFINI_STATUS_SUCCESS) {
            snprintf(msg, msg_size, "cuDeviceGet(%d) failed", ordinal);
            return st;
        }
        d->ordinal = ordinal;
        atomic_init(&d->active, 0);
        pthread_mutex_init(&d->lock, NULL);
        s->count++;
    }
    if (s->count == 0)
        snprintf(msg, msg_size, "[plugin.cuda] devices selects none of the %d CUDA device(s) present", present);
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t infinirt_cuda__devices_discover(const infinirt_cuda__config_t *cfg, char *msg, size_t msg_size)
{
    int present = 0;
    CUresult r = infinirt_cuda__drv.Init(0);

    if (r == CUDA_ERROR_NO_DEVICE) {
        snprintf(msg, msg_size, "no CUDA-capable device (cuInit: CUDA_ERROR_NO_DEVICE)");
        return INFINI_STATUS_SUCCESS;
    }
    if (r != CUDA_SUCCESS) {
        /* A driver that is installed but cannot start (module not loaded,
         * user-space/kernel mismatch) is broken, not absent: say so loudly. */
        snprintf(msg, msg_size, "cuInit failed: %s (driver for CUDA %d.%d)", infinirt_cuda__error_name(r),
                 infinirt_cuda__state.driver_version / 1000, infinirt_cuda__state.driver_version % 1000 / 10);
        return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
    }
    r = infinirt_cuda__drv.DeviceGetCount(&present);
    if (r != CUDA_SUCCESS) {
        snprintf(msg, msg_size, "cuDeviceGetCount failed: %s", infinirt_cuda__error_name(r));
        return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
    }
    if (present == 0) {
        snprintf(msg, msg_size, "no CUDA-capable device (cuDeviceGetCount: 0)");
        return INFINI_STATUS_SUCCESS;
    }
    return select_devices(cfg, present, msg, msg_size);
}

/* First use of a device: retain its primary context and create the stream
 * that stands for the NULL stream. */
static infiniStatus_t activate(infinirt_cuda__device_t *d, int dev)
{
    infiniStatus_t st = INFINI_STATUS_SUCCESS;

    pthread_mutex_lock(&d->lock);
    if (atomic_load_explicit(&d->active, memory_order_relaxed))
        goto out;
    st = INFINIRT_CUDA__CALL(dev, DevicePrimaryCtxRetain, &d->ctx, d->cudev);
    if (st != INFINI_STATUS_SUCCESS)
        goto out;
    st = INFINIRT_CUDA__CALL(dev, CtxSetCurrent, d->ctx);
    if (st != INFINI_STATUS_SUCCESS)
        goto release_ctx;
    /* Non-blocking: the default stream must not serialise with the legacy
     * NULL stream, or every infinirt stream would wait on it (see cuda.md). */
    st = INFINIRT_CUDA__CALL(dev, StreamCreate, &d->default_stream, CU_STREAM_NON_BLOCKING);
    if (st != INFINI_STATUS_SUCCESS)
        goto release_ctx;
    atomic_store_explicit(&d->active, 1, memory_order_release);
    goto out;

release_ctx:
    infinirt_cuda__drv.DevicePrimaryCtxRelease(d->cudev);
    d->ctx = NULL;
out:
    pthread_mutex_unlock(&d->lock);
    return st;
}

infiniStatus_t infinirt_cuda__enter(int dev, infinirt_cuda__device_t **out)
{
    infinirt_cuda__device_t *d = &infinirt_cuda__state.devices[dev];
    CUcontext cur = NULL;
    infiniStatus_t st;

    if (!atomic_load_explicit(&d->active, memory_order_acquire)) {
        st = activate(d, dev);
        if (st != INFINI_STATUS_SUCCESS)
            return st;
    }
    st = INFINIRT_CUDA__CALL(dev, CtxGetCurrent, &cur);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (cur != d->ctx) {
        st = INFINIRT_CUDA__CALL(dev, CtxSetCurrent, d->ctx);
        if (st != INFINI_STATUS_SUCCESS)
            return st;
    }
    *out = d;
    return INFINI_STATUS_SUCCESS;
}

/* Shutdown runs at process exit, possibly after the driver began its own
 * teardown: CUDA_ERROR_DEINITIALIZED then is expected and not reported. */
static void quiet_check(CUresult r, const char *call, int dev)
{
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
        infinirt_cuda__check(r, call, dev);
}

void infinirt_cuda__devices_release(void)
{
    infinirt_cuda__state_t *s = &infinirt_cuda__state;
    const infinirt_cuda__driver_t *drv = &infinirt_cuda__drv;
    CUcontext cur = NULL;
    int cur_is_ours = 0;

    if (s->devices == NULL)
        return;
    if (drv->CtxGetCurrent != NULL && drv->CtxGetCurrent(&cur) != CUDA_SUCCESS)
        cur = NULL;
    for (int i = 0; i < s->count; i++) {
        infinirt_cuda__device_t *d = &s->devices[i];

        if (atomic_load(&d->active)) {
            cur_is_ours |= cur == d->ctx;
            quiet_check(drv->CtxSetCurrent(d->ctx), infinirt_cuda__drv_names.CtxSetCurrent, i);
            quiet_check(drv->StreamDestroy(d->default_stream), infinirt_cuda__drv_names.StreamDestroy, i);
            quiet_check(drv->DevicePrimaryCtxRelease(d->cudev), infinirt_cuda__drv_names.DevicePrimaryCtxRelease,
                        i);
            atomic_store(&d->active, 0);
        }
        pthread_mutex_destroy(&d->lock);
    }
    /* Leave this thread as we found it, unless what was current is a
     * context we just released, which may no longer exist. */
    if (s->count > 0 && drv->CtxSetCurrent != NULL)
        quiet_check(drv->CtxSetCurrent(cur_is_ours ? NULL : cur), infinirt_cuda__drv_names.CtxSetCurrent, -1);
    free(s->devices);
    s->devices = NULL;
    s->count = 0;
}
