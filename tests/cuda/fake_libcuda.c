/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_libcuda.c - a stand-in for libcuda.so.1, so the CUDA plugin's own
 * logic (driver discovery, error paths, config, contexts, events, memory
 * routing) is tested on machines without a GPU.  The plugin is pointed at
 * it with `driver_library = <path>`.
 *
 * It exports the symbols the plugin resolves, under their versioned names.
 * Device memory is host memory (256-byte aligned, like cuMemAlloc's;
 * fake_libcuda_memory.c), and each stream runs its queue on a thread of its
 * own (fake_libcuda_stream.c), so work is really asynchronous.  Stream 0 is each context's legacy default
 * stream, ordered with the context's blocking streams as the real driver
 * orders them.  Like the real driver it rejects destroyed or made-up streams
 * and events (INVALID_HANDLE) and contexts that are not one of its own
 * (INVALID_CONTEXT).  It is stricter than the real driver in one way, on
 * purpose: calls that use a context, or a stream or event, fail unless the
 * owning device's context is current on the calling thread, which checks
 * that the plugin makes the right context current before each call.  The
 * current context is per thread, as the driver's is: tests read it with
 * cuCtxGetCurrent or fake_cuda_current_device.
 *
 * Behaviour is chosen by environment variables, read at cuInit:
 *   FAKE_CUDA_MODE    ok (default) | nodevice | old | initfail
 *   FAKE_CUDA_DEVICES number of devices (default 3, at most 8)
 *   FAKE_CUDA_MEM     bytes of memory per device (default 64 MiB)
 *   FAKE_CUDA_PEER    which devices can access which others' memory
 *                     (cuDeviceCanAccessPeer): all (default) | none | a
 *                     list of pairs "0>1,1>0" (device 0 can access 1's)
 *
 * Peer access is modelled: cuCtxEnablePeerAccess maps a peer's memory into
 * the current context where FAKE_CUDA_PEER allows.  A copy that touches
 * another device's memory is counted as direct when the copying context has
 * that mapping and as staged through the host otherwise (both work, as on
 * the real driver); a fill of another device's memory without the mapping
 * fails with CUDA_ERROR_ILLEGAL_ADDRESS, as the fill kernel would fault,
 * and is counted (fake_cuda_peer_faults).
 * Built a second time with FAKE_CUDA_OMIT_MEMSET to lack cuMemsetD8Async,
 * and a third time with FAKE_CUDA_OMIT_GRAPHS to lack every stream-capture
 * and graph symbol (a driver older than the plugin's optional entries).
 *
 * Stream capture and graphs (fake_libcuda_graph.c) follow CUDA's rules,
 * strictly: raw allocations and frees (here) and event queries are
 * "potentially unsafe" calls, refused while a global-mode capture goes on
 * unless the calling thread exchanged its capture mode to relaxed.
 *
 * Strict mode (FAKE_CUDA_STRICT=1, read at cuInit; every ctest entry that
 * loads the fake sets it) adds the real driver's rules where the lenient
 * fake is kinder, so that what passes here does not deadlock or fail on a
 * GPU:
 *  - an async copy touching pageable host memory (malloc'd: neither
 *    cuMemHostAlloc'd nor a device allocation) returns only after the copy
 *    has completed, so after all the work queued before it on the stream
 *    (D2H by CUDA's rule; H2D waits the same way, for the staging);
 *  - host functions run one at a time across all streams, and every driver
 *    call made from inside one fails with CUDA_ERROR_NOT_PERMITTED;
 *  - cuStreamDestroy returns at once: the handle is invalid at once, the
 *    queued work still completes;
 *  - the last cuDevicePrimaryCtxRelease resets the context: its streams,
 *    events and allocations (device and pinned host) are gone;
 *  - fake_cuda_inject_sticky(dev, r) models a fault that breaks a context
 *    (CUDA_ERROR_ILLEGAL_ADDRESS, ...): every later call in that context
 *    returns r, queued work is skipped, until the context is reset;
 *  - the driver's teardown at process exit (an atexit handler, or
 *    fake_cuda_unload): every later call returns CUDA_ERROR_DEINITIALIZED.
 * In both modes the current context is the top of a per-thread stack
 * (cuCtxPushCurrent / cuCtxPopCurrent), which cuCtxSetCurrent replaces
 * (NULL pops it), as the driver documents.
 *
 * fake_cuda_* functions let the test look inside.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_libcuda.h"

pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t fake_progress = PTHREAD_COND_INITIALIZER;
int fake_initialized;
_Thread_local fake_ctx *fake_current;
int fake_strict;
_Atomic int fake_deinit;
_Thread_local int fake_in_host_fn;
static _Atomic int host_fn_refusals;

/* The calling thread's context stack; fake_current is its top (NULL when
 * empty). */
#define FAKE_CTX_STACK 16
static _Thread_local fake_ctx *ctx_stack[FAKE_CTX_STACK];
static _Thread_local int ctx_depth;

static int ndev = 3;
static fake_ctx ctxs[FAKE_MAX_DEV];

static _Atomic int set_current_calls;
/* can_peer[a][b]: device a can access b's memory; peer_on[a][b]: a's
 * context has b's memory mapped (cuCtxEnablePeerAccess). */
static int can_peer[FAKE_MAX_DEV][FAKE_MAX_DEV], peer_on[FAKE_MAX_DEV][FAKE_MAX_DEV];
static int peer_copies, staged_copies, peer_faults;

/* cuCtxSetCurrent's rule: replace the top of the stack (push onto an empty
 * one); NULL pops. */
static void set_top(fake_ctx *x)
{
    if (x == NULL)
        ctx_depth -= ctx_depth > 0;
    else if (ctx_depth == 0)
        ctx_stack[ctx_depth++] = x;
    else
        ctx_stack[ctx_depth - 1] = x;
    fake_current = ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

CUresult fake_gate(void)
{
    if (fake_deinit)
        return CUDA_ERROR_DEINITIALIZED;
    if (!fake_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (fake_in_host_fn) {
        host_fn_refusals++;
        return CUDA_ERROR_NOT_PERMITTED;
    }
    return CUDA_SUCCESS;
}

int fake_cuda_strict(void)
{
    return fake_strict;
}
int fake_cuda_host_fn_refusals(void)
{
    return host_fn_refusals;
}
int fake_cuda_ctx_stack_depth(void)
{
    return ctx_depth;
}
void fake_cuda_unload(void)
{
    fake_deinit = 1;
}

void fake_cuda_inject_sticky(int dev, CUresult r)
{
    pthread_mutex_lock(&fake_lock);
    ctxs[dev].sticky = r;
    pthread_mutex_unlock(&fake_lock);
}

int fake_cuda_refcount(int dev)
{
    return ctxs[dev].refcount;
}
void fake_cuda_set_current(int dev)
{
    set_top(dev < 0 ? NULL : &ctxs[dev]);
}
int fake_cuda_current_device(void)
{
    return fake_current != NULL ? fake_current->dev : -1;
}
void *fake_cuda_ctx(int dev)
{
    return &ctxs[dev];
}
int fake_cuda_set_current_calls(void)
{
    return set_current_calls;
}
int fake_cuda_peer_enabled(int from, int to)
{
    return peer_on[from][to];
}
int fake_cuda_peer_copies(void)
{
    return peer_copies;
}
int fake_cuda_staged_copies(void)
{
    return staged_copies;
}
int fake_cuda_peer_faults(void)
{
    return peer_faults;
}

/* The device of another device's memory that ctx reaches at p: -1 when p
 * is host memory, unknown, or ctx's own device's. */
static int peer_of_locked(const fake_ctx *ctx, const void *p)
{
    alloc *a = fake_find_alloc_locked(p);
    return a != NULL && a->dev >= 0 && a->dev != ctx->dev ? a->dev : -1;
}

void fake_peer_copy_locked(const fake_ctx *ctx, const void *dst, const void *src)
{
    int d = peer_of_locked(ctx, dst), s = peer_of_locked(ctx, src);
    if (d < 0 && s < 0)
        return;
    if ((d < 0 || peer_on[ctx->dev][d]) && (s < 0 || peer_on[ctx->dev][s]))
        peer_copies++;
    else
        staged_copies++;
}

CUresult fake_peer_fill_locked(const fake_ctx *ctx, const void *dst)
{
    int d = peer_of_locked(ctx, dst);
    if (d < 0 || peer_on[ctx->dev][d])
        return CUDA_SUCCESS;
    peer_faults++;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}

static const char *env(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* ---- errors, init, version ---- */
static const struct {
    CUresult r;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the resource is not in a valid state"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_MERGE, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
     "operation would result in a merge of separate capture sequences"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
     "operation not permitted on an event last recorded in a capturing stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    /* driver semantics: peer access, refusals, faults that break the context */
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
};

CUresult CUDAAPI cuGetErrorName(CUresult r, const char **s)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].r == r) {
            *s = errors[i].name;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult r, const char **s)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].r == r) {
            *s = errors[i].text;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDriverGetVersion(int *v)
{
    *v = strcmp(env("FAKE_CUDA_MODE", "ok"), "old") == 0 ? 10020 : 13000;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuInit(unsigned int flags)
{
    const char *mode = env("FAKE_CUDA_MODE", "ok");
    (void)flags;
    if (strcmp(mode, "nodevice") == 0)
        return CUDA_ERROR_NO_DEVICE;
    if (strcmp(mode, "initfail") == 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    ndev = atoi(env("FAKE_CUDA_DEVICES", "3"));
    if (ndev < 0 || ndev > FAKE_MAX_DEV)
        ndev = FAKE_MAX_DEV;
    fake_mem_per_dev = (size_t)strtoull(env("FAKE_CUDA_MEM", "67108864"), NULL, 10);
    const char *peer = env("FAKE_CUDA_PEER", "all");
    for (int a = 0; a < FAKE_MAX_DEV; a++)
        for (int b = 0; b < FAKE_MAX_DEV; b++)
            can_peer[a][b] = a != b && strcmp(peer, "all") == 0;
    for (const char *q = peer; strcmp(peer, "all") != 0 && strcmp(peer, "none") != 0 && *q;) {
        int a = -1, b = -1, n = 0;
        if (sscanf(q, "%d>%d%n", &a, &b, &n) != 2 || a < 0 || b < 0 || a >= FAKE_MAX_DEV || b >= FAKE_MAX_DEV)
            break;
        can_peer[a][b] = a != b;
        q += n;
        q += *q == ',';
    }
    for (int i = 0; i < FAKE_MAX_DEV; i++)
        ctxs[i].dev = i;
    /* The real driver tears itself down at exit; strict mode models that
     * (registered once, whatever the number of cuInit calls). */
    fake_strict = strcmp(env("FAKE_CUDA_STRICT", "0"), "1") == 0;
    static int atexit_done;
    if (fake_strict && !atexit_done)
        atexit_done = atexit(fake_cuda_unload) == 0;
    fake_initialized = 1;
    return CUDA_SUCCESS;
}

/* ---- devices ---- */
CUresult CUDAAPI cuDeviceGetCount(int *n)
{
    NEED_INIT();
    *n = ndev;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal)
{
    NEED_INIT();
    if (ordinal < 0 || ordinal >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= ndev || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Fake GPU %d", (int)d);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *v = 0x10 + d;
        break;
    default:
        *v = 0;
        break;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = fake_mem_per_dev;
    return CUDA_SUCCESS;
}

/* ---- contexts ---- */

/* Strict mode: the context's last release resets it.  Its queued work
 * drains (a reset would abort it; the fake lets it end rather than touch
 * freed memory), then its streams, events and allocations go. */
static void reset_ctx(fake_ctx *ctx)
{
    fake_ctx_streams_reset(ctx);
    pthread_mutex_lock(&fake_lock);
    for (alloc **pp = &fake_allocs; *pp;) {
        alloc *a = *pp;
        if (a->dev == ctx->dev || (a->dev < 0 && a->ctx_dev == ctx->dev)) {
            *pp = a->next;
            if (a->dev >= 0)
                fake_used[a->dev] -= a->size;
            free(a->p);
            free(a);
        } else
            pp = &a->next;
    }
    ctx->sticky = CUDA_SUCCESS;
    pthread_mutex_unlock(&fake_lock);
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fake_lock);
    int first = ctxs[d].refcount++ == 0;
    pthread_mutex_unlock(&fake_lock);
    if (first) {
        CUresult r = fake_legacy_create(&ctxs[d]);
        if (r != CUDA_SUCCESS) {
            pthread_mutex_lock(&fake_lock);
            ctxs[d].refcount--;
            pthread_mutex_unlock(&fake_lock);
            return r;
        }
    }
    *c = (CUcontext)(void *)&ctxs[d];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= ndev || ctxs[d].refcount == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&fake_lock);
    int last = --ctxs[d].refcount == 0;
    /* A context that goes away takes its peer mappings, both ways. */
    for (int i = 0; last && i < FAKE_MAX_DEV; i++)
        peer_on[d][i] = peer_on[i][d] = 0;
    pthread_mutex_unlock(&fake_lock);
    if (last && fake_strict)
        reset_ctx(&ctxs[d]);
    if (last)
        fake_legacy_destroy(&ctxs[d]);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext c)
{
    fake_ctx *x = (fake_ctx *)(void *)c;
    NEED_INIT();
    set_current_calls++;
    if (x != NULL && (x < ctxs || x >= ctxs + ndev))
        return CUDA_ERROR_INVALID_CONTEXT;
    set_top(x);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext c)
{
    fake_ctx *x = (fake_ctx *)(void *)c;
    NEED_INIT();
    if (x == NULL || x < ctxs || x >= ctxs + ndev)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == FAKE_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = x;
    fake_current = x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pc)
{
    NEED_INIT();
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (pc != NULL)
        *pc = (CUcontext)(void *)fake_current;
    set_top(NULL);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer)
{
    NEED_INIT();
    if (can == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (d < 0 || d >= ndev || peer < 0 || peer >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *can = can_peer[d][peer];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext c, unsigned int flags)
{
    fake_ctx *x = (fake_ctx *)(void *)c;
    NEED_CTX();
    if (x == NULL || x < ctxs || x >= ctxs + ndev || x->refcount == 0 || x == fake_current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!can_peer[fake_current->dev][x->dev])
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    pthread_mutex_lock(&fake_lock);
    CUresult r = peer_on[fake_current->dev][x->dev] ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : CUDA_SUCCESS;
    peer_on[fake_current->dev][x->dev] = 1;
    pthread_mutex_unlock(&fake_lock);
    return r;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c)
{
    NEED_INIT();
    *c = (CUcontext)(void *)fake_current;
    return CUDA_SUCCESS;
}
