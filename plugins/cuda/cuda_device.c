/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_device.c - the device table and the primary contexts.
 *
 * Each exposed device uses its primary context, the one the CUDA runtime
 * uses too, so memory and streams are shared with any runtime code in the
 * same process.  It is retained once, on the device's first use (creating a
 * context costs time and device memory, and many processes touch only one of
 * several GPUs), and released at shutdown.
 *
 * Current context.  The caller's current context is the application's: it
 * follows infinirtSetDevice (set_device makes the device's primary context
 * current, as cudaSetDevice does), so the application's own kernels and
 * library calls go to the device it chose.  Any thread may call any entry
 * with any device: the entry makes that device's context current for its
 * driver calls and restores the caller's afterwards (cuda__enter
 * and cuda__leave), so a call routed to another device by pointer,
 * stream or event leaves the caller where it was.  We ask the driver which
 * context is current (cuCtxGetCurrent reads the driver's thread-local state;
 * it is cheap) rather than trusting a thread-local cache of our own, because
 * code in the same process that calls cudaSetDevice or cuCtxSetCurrent
 * changes the current context behind our back.  When the device's context is
 * already current (the common case: the call is for the caller's device),
 * nothing is switched at all.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

cuda__state_t cuda__state = {.wrapped_lock = PTHREAD_MUTEX_INITIALIZER, .first_active = -1};

static infiniStatus_t select_devices(const cuda__config_t *cfg, int present, char *msg, size_t msg_size)
{
    cuda__state_t *s = &cuda__state;
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
            cuda__log(INFINIRT_PLUGIN_LOG_WARN, "devices: CUDA device %d does not exist (%d present), skipped",
                      ordinal, present);
            continue;
        }
        for (int j = 0; j < s->count; j++)
            dup |= s->devices[j].ordinal == ordinal;
        if (dup) {
            cuda__log(INFINIRT_PLUGIN_LOG_WARN, "devices: CUDA device %d listed twice, skipped", ordinal);
            continue;
        }

        cuda__device_t *d = &s->devices[s->count];
        infiniStatus_t st = CUDA__CALL(-1, DeviceGet, &d->cudev, ordinal);
        if (st != INFINI_STATUS_SUCCESS) {
            snprintf(msg, msg_size, "cuDeviceGet(%d) failed", ordinal);
            return st;
        }
        d->ordinal = ordinal;
        atomic_init(&d->active, 0);
        pthread_mutex_init(&d->lock, NULL);
        s->count++;
    }
    if (s->count == 0) {
        snprintf(msg, msg_size, "[plugin.cuda] devices selects none of the %d CUDA device(s) present", present);
        return INFINI_STATUS_SUCCESS;
    }
    s->peer = calloc((size_t)s->count * (size_t)s->count, sizeof *s->peer);
    if (s->peer == NULL) {
        snprintf(msg, msg_size, "out of host memory building the device table");
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cuda__devices_discover(const cuda__config_t *cfg, char *msg, size_t msg_size)
{
    int present = 0;
    CUresult r = cuda__drv.Init(0);

    if (r == CUDA_ERROR_NO_DEVICE) {
        snprintf(msg, msg_size, "no CUDA-capable device (cuInit: CUDA_ERROR_NO_DEVICE)");
        return INFINI_STATUS_SUCCESS;
    }
    if (r != CUDA_SUCCESS) {
        /* A driver that is installed but cannot start (module not loaded,
         * user-space/kernel mismatch) is broken, not absent: say so loudly. */
        snprintf(msg, msg_size, "cuInit failed: %s (driver for CUDA %d.%d)", cuda__error_name(r),
                 cuda__state.driver_version / 1000, cuda__state.driver_version % 1000 / 10);
        return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
    }
    r = cuda__drv.DeviceGetCount(&present);
    if (r != CUDA_SUCCESS) {
        snprintf(msg, msg_size, "cuDeviceGetCount failed: %s", cuda__error_name(r));
        return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
    }
    if (present == 0) {
        snprintf(msg, msg_size, "no CUDA-capable device (cuDeviceGetCount: 0)");
        return INFINI_STATUS_SUCCESS;
    }
    return select_devices(cfg, present, msg, msg_size);
}

cuda__device_t *cuda__device(int dev)
{
    return dev >= 0 && dev < cuda__state.count ? &cuda__state.devices[dev] : NULL;
}

/* First use of a device: retain its primary context.  The NULL stream is
 * the context's own legacy default stream, so nothing else is created. */
static infiniStatus_t activate(int dev)
{
    cuda__device_t *d = cuda__device(dev);
    infiniStatus_t st = INFINI_STATUS_SUCCESS;

    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    if (atomic_load_explicit(&d->active, memory_order_acquire))
        return INFINI_STATUS_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!atomic_load_explicit(&d->active, memory_order_relaxed)) {
        st = CUDA__CALL(dev, DevicePrimaryCtxRetain, &d->ctx, d->cudev);
        if (st == INFINI_STATUS_SUCCESS) {
            int none = -1;
            atomic_store_explicit(&d->active, 1, memory_order_release);
            atomic_compare_exchange_strong(&cuda__state.first_active, &none, dev);
        } else
            d->ctx = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

infiniStatus_t cuda__enter(int dev, cuda__scope_t *sc)
{
    cuda__device_t *d = cuda__device(dev);
    infiniStatus_t st = activate(dev); /* DEVICE_NOT_FOUND when d is NULL */

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    sc->d = d;
    sc->prev = NULL;
    st = CUDA__CALL(dev, CtxGetCurrent, &sc->prev);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (sc->prev != d->ctx)
        st = CUDA__CALL(dev, CtxSetCurrent, d->ctx);
    return st;
}

void cuda__leave(const cuda__scope_t *sc)
{
    /* A failure here cannot undo the work done; it is logged, and the
     * entry's own status stands. */
    if (sc->prev != sc->d->ctx)
        (void)CUDA__CALL((int)(sc->d - cuda__state.devices), CtxSetCurrent, sc->prev);
}

/* infinirtSetDevice: the device's primary context becomes the thread's
 * current one and stays so, as after cudaSetDevice. */
infiniStatus_t cuda__set_device(int dev)
{
    cuda__device_t *d = cuda__device(dev);
    infiniStatus_t st = activate(dev); /* DEVICE_NOT_FOUND when d is NULL */
    CUcontext cur = NULL;

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = CUDA__CALL(dev, CtxGetCurrent, &cur);
    if (st != INFINI_STATUS_SUCCESS || cur == d->ctx)
        return st;
    return CUDA__CALL(dev, CtxSetCurrent, d->ctx);
}

/* The CUdevice (an int ordinal, carried through intptr_t) and the primary
 * context, retained if this is the device's first use but made current
 * nowhere. */
infiniStatus_t cuda__device_get_native(int dev, void **device, void **context)
{
    cuda__device_t *d = cuda__device(dev);
    infiniStatus_t st = activate(dev); /* DEVICE_NOT_FOUND when d is NULL */

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (device != NULL)
        *device = (void *)(intptr_t)d->cudev;
    if (context != NULL)
        *context = (void *)d->ctx;
    return INFINI_STATUS_SUCCESS;
}

/*
 * Peer access.  A copy between two GPUs, by unified addressing, goes
 * directly over NVLink or PCIe only when the copying context has the other
 * device's memory mapped (cuCtxEnablePeerAccess); otherwise the driver
 * stages it through host memory.  A fill (a kernel) of another device's
 * memory needs that mapping to be valid at all.  The mapping is made on
 * first need, per ordered pair, where cuDeviceCanAccessPeer allows, and
 * kept for the life of the context.  Two threads may race to make it: the
 * loser's CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is success (and so is an
 * application's own earlier cuCtxEnablePeerAccess).
 */
int cuda__peer_enable(int a, int b)
{
    cuda__state_t *s = &cuda__state;
    atomic_int *state = &s->peer[a * s->count + b];
    int known = atomic_load_explicit(state, memory_order_acquire);
    int can = 0;
    CUresult r;

    if (known != CUDA__PEER_UNKNOWN)
        return known == CUDA__PEER_ENABLED;
    r = cuda__drv.DeviceCanAccessPeer(&can, s->devices[a].cudev, s->devices[b].cudev);
    if (r != CUDA_SUCCESS || !can) {
        if (r != CUDA_SUCCESS)
            (void)cuda__check(r, cuda__drv_names.DeviceCanAccessPeer, a);
        if (atomic_exchange(state, CUDA__PEER_IMPOSSIBLE) != CUDA__PEER_IMPOSSIBLE)
            cuda__log(INFINIRT_PLUGIN_LOG_INFO,
                      "device %d cannot access device %d's memory directly (cuDeviceCanAccessPeer): "
                      "copies between them are staged through host memory, fills refused",
                      a, b);
        return 0;
    }
    /* b's memory belongs to its primary context (ours, or the runtime's,
     * which is the same one). */
    if (activate(b) != INFINI_STATUS_SUCCESS)
        return 0;
    r = cuda__drv.CtxEnablePeerAccess(s->devices[b].ctx, 0);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        atomic_store_explicit(state, CUDA__PEER_ENABLED, memory_order_release);
        return 1;
    }
    /* E.g. CUDA_ERROR_TOO_MANY_PEERS: copies still work, staged. */
    if (atomic_exchange(state, CUDA__PEER_IMPOSSIBLE) != CUDA__PEER_IMPOSSIBLE)
        (void)cuda__check(r, cuda__drv_names.CtxEnablePeerAccess, a);
    return 0;
}

/* Shutdown runs at process exit, possibly after the driver began its own
 * teardown: CUDA_ERROR_DEINITIALIZED then is expected and not reported. */
static void quiet_check(CUresult r, const char *call, int dev)
{
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
        cuda__check(r, call, dev);
}

void cuda__devices_release(void)
{
    cuda__state_t *s = &cuda__state;
    const cuda__driver_t *drv = &cuda__drv;
    CUcontext cur = NULL;
    int cur_is_ours = 0;

    if (s->devices == NULL)
        return;
    if (drv->CtxGetCurrent != NULL && drv->CtxGetCurrent(&cur) != CUDA_SUCCESS)
        cur = NULL;
    for (int i = 0; i < s->count; i++) {
        cuda__device_t *d = &s->devices[i];

        if (atomic_load(&d->active)) {
            cur_is_ours |= cur == d->ctx;
            quiet_check(drv->DevicePrimaryCtxRelease(d->cudev), cuda__drv_names.DevicePrimaryCtxRelease, i);
            atomic_store(&d->active, 0);
        }
        pthread_mutex_destroy(&d->lock);
    }
    /* Leave this thread as we found it, unless what was current is a
     * context we just released, which may no longer exist. */
    if (s->count > 0 && drv->CtxSetCurrent != NULL)
        quiet_check(drv->CtxSetCurrent(cur_is_ours ? NULL : cur), cuda__drv_names.CtxSetCurrent, -1);
    free(s->devices);
    s->devices = NULL;
    free(s->peer);
    s->peer = NULL;
    s->count = 0;
    atomic_store(&s->first_active, -1);
    /* Wrapped streams are the application's: forget them, destroy none. */
    pthread_mutex_lock(&s->wrapped_lock);
    while (s->wrapped != NULL) {
        cuda__wrapped_t *w = s->wrapped;
        s->wrapped = w->next;
        free(w);
    }
    pthread_mutex_unlock(&s->wrapped_lock);
}

infiniStatus_t cuda__device_synchronize(int dev)
{
    cuda__scope_t sc;
    infiniStatus_t st = cuda__enter(dev, &sc);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    /* Every stream of the device lives in its primary context (wrapped
     * ones too: stream_create_from_native checks it). */
    st = cuda__check(cuda__drv.CtxSynchronize(), cuda__drv_names.CtxSynchronize, dev);
    cuda__leave(&sc);
    return st;
}

/* "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits (NVML's and nvidia-smi's
 * spelling).  cuDeviceGetUuid_v2 (CUDA 11.4) gives a MIG instance its own
 * UUID, the older name the whole GPU's; neither needs a context.  Quiet:
 * *fn names the driver call for the caller's message; a driver exporting
 * neither gives CUDA_ERROR_NOT_FOUND. */
CUresult cuda__device_uuid(int dev, char *uuid, size_t size, const char **fn)
{
    const cuda__device_t *d = cuda__device(dev);
    PFN_cuDeviceGetUuid_v11040 get = NULL;
    void *p = dlsym(cuda__state.lib, *fn = "cuDeviceGetUuid_v2");
    CUuuid u;

    if (d == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if (p == NULL)
        p = dlsym(cuda__state.lib, *fn = "cuDeviceGetUuid");
    if (p == NULL)
        return CUDA_ERROR_NOT_FOUND;
    memcpy(&get, &p, sizeof p);
    CUresult r = get(&u, d->cudev);
    if (r != CUDA_SUCCESS)
        return r;
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(uuid, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return CUDA_SUCCESS;
}

/* A driver that cannot tell (NOT_SUPPORTED, or no UUID call at all) means
 * no UUID, not a failure. */
infiniStatus_t cuda__get_device_uuid(int dev, char *uuid, size_t size)
{
    const char *fn;
    CUresult r;

    if (cuda__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    r = cuda__device_uuid(dev, uuid, size, &fn);
    if (r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_NOT_SUPPORTED)
        return INFINI_STATUS_NOT_IMPLEMENTED;
    if (r != CUDA_SUCCESS)
        return cuda__check(r, fn, dev);
    return INFINI_STATUS_SUCCESS;
}
