/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_device.c - the device table and the device entries: logical devices
 * on host memory, each with its own memory_limit (cpu__settings) and
 * streams.
 *
 * Template: a vendor's <p>_device.c holds the driver's devices (found at
 * init, their contexts made on first use) and the entries that take only a
 * device: device_synchronize, device_query, device_get_native,
 * get_device_flags, set_device where the driver has a current device.
 * Waiting for the CPU's streams is its queue's (cpu__queue->drain).
 */
#include "cpu_internal.h"

#include <string.h>

/* Read through cpu__device (cpu_internal.h), inline on every synchronous
 * copy. */
cpu_device cpu__devices[CPU__MAX_DEVICES];
int cpu__ndevices;

int cpu__device_count(void)
{
    return cpu__ndevices;
}

void cpu__devices_init(int count)
{
    for (int i = 0; i < count; i++) {
        cpu_device *d = &cpu__devices[i];
        memset(d, 0, sizeof *d);
        d->index = i;
        atomic_init(&d->used, 0);
        atomic_init(&d->default_stream, NULL);
        atomic_init(&d->busy, NULL);
        pthread_mutex_init(&d->lock, NULL);
    }
    cpu__ndevices = count;
}

/* Wait on the host for the streams of dev that `what` names (`call`, for
 * the refusal from a host function).  Nothing queued on any stream, the
 * usual case, takes no lock and looks at no stream. */
static infiniStatus_t drain(int dev, const char *call, enum cpu__drain what)
{
    if (cpu__sync_free(dev))
        return INFINI_STATUS_SUCCESS;
    CPU__REFUSE_IN_HOST_FN(call);
    cpu_device *d = cpu__device(dev);
    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    return cpu__queue->drain(d, what);
}

infiniStatus_t cpu__sync_point(int dev, const char *call)
{
    return drain(dev, call, CPU__DRAIN_SYNC);
}

infiniStatus_t cpu__device_synchronize(int dev)
{
    return drain(dev, "device_synchronize", CPU__DRAIN_DEVICE);
}

/* ABI 1.6: nothing queued on any stream of dev is pending (inline streams
 * never queue: always idle). */
infiniStatus_t cpu__device_query(int dev, int *idle)
{
    cpu_device *d = cpu__device(dev);
    if (d == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    *idle = atomic_load_explicit(&d->pending, memory_order_acquire) == 0;
    return INFINI_STATUS_SUCCESS;
}

/* Inline streams: every operation, native ones included, is done before
 * the call that queued it returns (DONE_AT_RETURN): the loader then counts
 * nothing and fences nothing on the device. */
infiniStatus_t cpu__get_device_flags(int dev, uint32_t *flags)
{
    if (cpu__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    *flags = cpu__queue->device_flags;
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t cpu__device_get_native(int dev, void **device, void **context)
{
    if (cpu__device(dev) == NULL)
        return INFINI_STATUS_DEVICE_NOT_FOUND;
    *device = NULL; /* host memory and threads: no native device object */
    *context = NULL;
    return INFINI_STATUS_SUCCESS;
}
