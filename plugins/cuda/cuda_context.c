/*
 * cuda_context.c - the device table and the primary contexts.
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
 * driver calls and restores the caller's afterwards (infinirt_cuda__enter
 * and infinirt_cuda__leave), so a call routed to another device by pointer,
 * stream or event leaves the caller where it was.  We ask the driver which
 * context is current (cuCtxGetCurrent reads the driver's thread-local state;
 * it is cheap) rather than trusting a thread-local cache of our own, because
 * code in the same process that calls cudaSetDevice or cuCtxSetCurrent
 * changes the current context behind our back.  When the device's context is
 * already current (the common case: the call is for the caller's device),
 * nothing is switched at all.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

infinirt_cuda__state_t infinirt_cuda__state = {.wrapped_lock = PTHREAD_MUTEX_INITIALIZER, .first_active = -1};

static infiniStatus_t select_devices(const infinirt_cuda__config_t *cfg, int present, char *msg, size_t msg_size)
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

/* First use of a device: retain its primary context.  The NULL stream is
 * the context's own legacy default stream, so nothing else is created. */
infiniStatus_t infinirt_cuda__activate(int dev)
{
    infinirt_cuda__device_t *d = &infinirt_cuda__state.devices[dev];
    infiniStatus_t st = INFINI_STATUS_SUCCESS;

    if (atomic_load_explicit(&d->active, memory_order_acquire))
        return INFINI_STATUS_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!atomic_load_explicit(&d->active, memory_order_relaxed)) {
        st = INFINIRT_CUDA__CALL(dev, DevicePrimaryCtxRetain, &d->ctx, d->cudev);
        if (st == INFINI_STATUS_SUCCESS) {
            int none = -1;
            atomic_store_explicit(&d->active, 1, memory_order_release);
            atomic_compare_exchange_strong(&infinirt_cuda__state.first_active, &none, dev);
        } else
            d->ctx = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

infiniStatus_t infinirt_cuda__enter(int dev, infinirt_cuda__scope_t *sc)
{
    infinirt_cuda__device_t *d = &infinirt_cuda__state.devices[dev];
    infiniStatus_t st = infinirt_cuda__activate(dev);

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    sc->d = d;
    sc->prev = NULL;
    st = INFINIRT_CUDA__CALL(dev, CtxGetCurrent, &sc->prev);
    if (st != INFINI_STATUS_SUCCESS)
        return st;
    if (sc->prev != d->ctx)
        st = INFINIRT_CUDA__CALL(dev, CtxSetCurrent, d->ctx);
    return st;
}

void infinirt_cuda__leave(const infinirt_cuda__scope_t *sc)
{
    /* A failure here cannot undo the work done; it is logged, and the
     * entry's own status stands. */
    if (sc->prev != sc->d->ctx)
        (void)INFINIRT_CUDA__CALL((int)(sc->d - infinirt_cuda__state.devices), CtxSetCurrent, sc->prev);
}

/* infinirtSetDevice: the device's primary context becomes the thread's
 * current one and stays so, as after cudaSetDevice. */
infiniStatus_t infinirt_cuda__set_device(int dev)
{
    infinirt_cuda__device_t *d = &infinirt_cuda__state.devices[dev];
    infiniStatus_t st = infinirt_cuda__activate(dev);
    CUcontext cur = NULL;

    if (st != INFINI_STATUS_SUCCESS)
        return st;
    st = INFINIRT_CUDA__CALL(dev, CtxGetCurrent, &cur);
    if (st != INFINI_STATUS_SUCCESS || cur == d->ctx)
        return st;
    return INFINIRT_CUDA__CALL(dev, CtxSetCurrent, d->ctx);
}

/* The CUdevice (an int ordinal, carried through intptr_t) and the primary
 * context, retained if this is the device's first use but made current
 * nowhere. */
infiniStatus_t infinirt_cuda__device_get_native(int dev, void **device, void **context)
{
    infinirt_cuda__device_t *d = &infinirt_cuda__state.devices[dev];
    infiniStatus_t st = infinirt_cuda__activate(dev);

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
int infinirt_cuda__peer_enable(int a, int b)
{
    infinirt_cuda__state_t *s = &infinirt_cuda__state;
    atomic_int *state = &s->peer[a * s->count + b];
    int known = atomic_load_explicit(state, memory_order_acquire);
    int can = 0;
    CUresult r;

    if (known != INFINIRT_CUDA__PEER_UNKNOWN)
        return known == INFINIRT_CUDA__PEER_ENABLED;
    r = infinirt_cuda__drv.DeviceCanAccessPeer(&can, s->devices[a].cudev, s->devices[b].cudev);
    if (r != CUDA_SUCCESS || !can) {
        if (r != CUDA_SUCCESS)
            (void)infinirt_cuda__check(r, infinirt_cuda__drv_names.DeviceCanAccessPeer, a);
        if (atomic_exchange(state, INFINIRT_CUDA__PEER_IMPOSSIBLE) != INFINIRT_CUDA__PEER_IMPOSSIBLE)
            infinirt_cuda__log(INFINIRT_PLUGIN_LOG_INFO,
                               "device %d cannot access device %d's memory directly (cuDeviceCanAccessPeer): "
                               "copies between them are staged through host memory, fills refused",
                               a, b);
        return 0;
    }
    /* b's memory belongs to its primary context (ours, or the runtime's,
     * which is the same one). */
    if (infinirt_cuda__activate(b) != INFINI_STATUS_SUCCESS)
        return 0;
    r = infinirt_cuda__drv.CtxEnablePeerAccess(s->devices[b].ctx, 0);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        atomic_store_explicit(state, INFINIRT_CUDA__PEER_ENABLED, memory_order_release);
        return 1;
    }
    /* E.g. CUDA_ERROR_TOO_MANY_PEERS: copies still work, staged. */
    if (atomic_exchange(state, INFINIRT_CUDA__PEER_IMPOSSIBLE) != INFINIRT_CUDA__PEER_IMPOSSIBLE)
        (void)infinirt_cuda__check(r, infinirt_cuda__drv_names.CtxEnablePeerAccess, a);
    return 0;
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
            quiet_check(drv->DevicePrimaryCtxRelease(d->cudev), infinirt_cuda__drv_names.DevicePrimaryCtxRelease, i);
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
    free(s->peer);
    s->peer = NULL;
    s->count = 0;
    atomic_store(&s->first_active, -1);
    /* Wrapped streams are the application's: forget them, destroy none. */
    pthread_mutex_lock(&s->wrapped_lock);
    while (s->wrapped != NULL) {
        infinirt_cuda__wrapped_t *w = s->wrapped;
        s->wrapped = w->next;
        free(w);
    }
    pthread_mutex_unlock(&s->wrapped_lock);
}
