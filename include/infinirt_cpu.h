/* SPDX-License-Identifier: Apache-2.0 */
/*
 * infinirt_cpu.h - (ours) the CPU backend's native streams: how a library
 * holding an infinirtStream_t of the CPU backend queues its own work on it
 * without going through libinfinirt, as a CUDA library launches kernels on
 * the cudaStream_t it is given.
 *
 * On the CPU backend the value of an infinirtStream_t (and what
 * infinirtStreamGetNativeHandle returns for it) is the plugin's stream
 * object.  Its layout is private except for its first member, a pointer to
 * an infinirtCpuStreamOps table of the plugin's functions:
 *
 *     infinirtStream_t s;                      // a CPU stream, not NULL
 *     const infinirtCpuStreamOps *ops = infinirtCpuStreamGetOps(s);
 *     ops->enqueue(s, my_kernel, my_args);     // runs in stream order
 *
 * Everything queued this way is ordered with what infinirt queues on the same
 * stream (copies, fills, host functions, event records and waits), in the
 * order the calls were made, and with the device's default stream as any
 * work on a blocking stream is (see infinirtStreamCreateWithFlags).  The
 * loader never sees it, and does not need to: the plugin reports it to the
 * loader's allocator, so memory freed behind it is not reused before it
 * completes.
 *
 * The backend runs in one of two modes, chosen by `streams` in the config's
 * [plugin.cpu] section (infinirt.ini):
 *  - inline (the default, InfiniCore's CPU runtime behaviour): work is done
 *    on the calling thread before enqueue returns; ops->flags has
 *    INFINIRT_CPU_STREAM_INLINE;
 *  - async: a pool of worker threads runs each stream's work in order;
 *    enqueue returns at once.
 *
 * The NULL stream has no object: its native handle is NULL.  Queue work on
 * it through infinirtLaunchHostFunc(NULL, ...).
 *
 * Only the CPU backend's streams carry this table: check the stream's device
 * type (the stream was created while a CPU device was current) before using
 * it.  A destroyed stream must not be used, as with any native handle.
 *
 * Thread-safety: every function of the table may be called from any thread,
 * concurrently, and from work running on a stream (a function may queue
 * more work, on its own stream or another).  As with CUDA's host functions,
 * work running on a stream must not wait for streams of its device
 * (synchronize, or a synchronous infinirtMemcpy/Memset, which waits for the
 * blocking streams): it would wait for itself.  Those calls are refused
 * there with INVALID_STATE, in both modes.
 *
 * Compatibility: members are only ever appended.  struct_size is the size of
 * the table the plugin was built with; a member whose end lies past it is
 * absent.  INFINIRT_CPU_STREAM_OPS_HAS(ops, member) tests that.
 */
#ifndef INFINIRT_CPU_H_
#define INFINIRT_CPU_H_

#include "infinicore.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Work queued on a stream: called once, with the user_data given. */
typedef void (*infinirtCpuWorkFn)(void *user_data);

/* Bits of infinirtCpuStreamOps.flags. */
/* The stream runs work on the caller's thread, before enqueue returns
 * (streams = inline); without it, on the stream's worker thread. */
#define INFINIRT_CPU_STREAM_INLINE 0x1u

typedef struct infinirtCpuStreamOps {
    uint32_t struct_size; /* sizeof(infinirtCpuStreamOps) the plugin was built with */
    uint32_t flags;       /* INFINIRT_CPU_STREAM_* */

    /* Queue fn(user_data) on `stream` after everything queued on it so far.
     * Returns SUCCESS, NULL_POINTER (fn is NULL), or OUT_OF_MEMORY (nothing
     * was queued). */
    infiniStatus_t (*enqueue)(void *stream, infinirtCpuWorkFn fn, void *user_data);

    /* *idle = 1 when everything queued on `stream` so far has completed,
     * else 0.  Never blocks.  Returns SUCCESS or NULL_POINTER. */
    infiniStatus_t (*query)(void *stream, int *idle);

    /* Wait until everything queued on `stream` so far has completed.
     * Returns SUCCESS, NULL_POINTER, or INVALID_STATE when called from work
     * running on a stream (it could wait for itself; logged). */
    infiniStatus_t (*synchronize)(void *stream);
} infinirtCpuStreamOps;

/* The public beginning of every CPU stream object. */
typedef struct infinirtCpuStreamHeader {
    const infinirtCpuStreamOps *ops;
} infinirtCpuStreamHeader;

/* The table of a CPU stream (a non-NULL infinirtStream_t of the CPU
 * backend, or the pointer infinirtStreamGetNativeHandle gave for one). */
static inline const infinirtCpuStreamOps *infinirtCpuStreamGetOps(void *stream)
{
    return ((const infinirtCpuStreamHeader *)stream)->ops;
}

/* Whether `ops` has `member` (it was built with a table that long). */
#define INFINIRT_CPU_STREAM_OPS_HAS(ops, member) \
    ((ops)->struct_size >= offsetof(infinirtCpuStreamOps, member) + sizeof((ops)->member))

#ifdef __cplusplus
}
#endif

#endif /* INFINIRT_CPU_H_ */
