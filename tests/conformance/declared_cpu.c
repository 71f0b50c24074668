/* SPDX-License-Identifier: Apache-2.0 */
/*
 * declared_cpu.c - what the CPU plugin declares unsupported to the
 * conformance suite (common.h, "declared unsupported"): nothing, except
 * asynchronous streams when its config says streams = inline.
 */
#include "common.h"

#include "infinirt_cpu.h"

/* The CPU backend with streams = inline runs stream work on the caller's
 * thread; it says so in every stream's ops flags (infinirt_cpu.h). */
static unsigned cpu_by_config(void)
{
    infinirtStream_t s;
    void *native = NULL;
    unsigned bits = 0;
    if (infinirtStreamCreate(&s) != INFINI_STATUS_SUCCESS)
        return 0;
    if (infinirtStreamGetNativeHandle(s, &native) == INFINI_STATUS_SUCCESS && native != NULL &&
        (infinirtCpuStreamGetOps(native)->flags & INFINIRT_CPU_STREAM_INLINE))
        bits |= TC_BIT(TC_ASYNC_STREAMS);
    infinirtStreamDestroy(s);
    return bits;
}

const tc_declaration tc_declared_cpu = {"cpu", 0, cpu_by_config};
