/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_bandwidth.h - what the OpenCL bandwidth benchmark's two files
 * share: the run's settings, the error macros, and the copy paths
 * (opencl_bandwidth_paths.c) that opencl_bandwidth.c times.
 */
#ifndef INFINIRT_OPENCL_BANDWIDTH_H_
#define INFINIRT_OPENCL_BANDWIDTH_H_

#include <stddef.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include "infinirt_plugin.h"
#ifdef INFINIRT_BENCH_API
#include "infinirt.h"
#endif

#define MAX_SETS 16

enum { H2D, D2H, D2D, N_KINDS };

/* The run's settings (--plugin, --size, --sets) and the plugin's table. */
extern const char *bw_plugin_path;
extern size_t bw_bytes;
extern int bw_sets;
extern const infinirtPluginOps *bw_ops;

void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#define PLUG(call)                                                                    \
    do {                                                                              \
        infiniStatus_t st_ = (call);                                                  \
        if (st_ != INFINI_STATUS_SUCCESS)                                             \
            die("%s:%d: %s returned status %d", __FILE__, __LINE__, #call, (int)st_); \
    } while (0)
#define CL(call)                                                                      \
    do {                                                                              \
        cl_int e_ = (call);                                                           \
        if (e_ != CL_SUCCESS)                                                         \
            die("%s:%d: %s returned OpenCL error %d", __FILE__, __LINE__, #call, e_); \
    } while (0)
#ifdef INFINIRT_BENCH_API
#define IRT(call)                                                                         \
    do {                                                                                  \
        infiniStatus_t st_ = (call);                                                      \
        if (st_ != INFINI_STATUS_SUCCESS)                                                 \
            die("%s:%d: %s: %s", __FILE__, __LINE__, #call, infinirtGetErrorString(st_)); \
    } while (0)
#endif

/* Buffers of one path (the plugin's ops, or the public API); copies rotate
 * over the sets. */
typedef struct {
    void *dev_a[MAX_SETS], *dev_b[MAX_SETS];
    void *host_src[MAX_SETS], *host_dst[MAX_SETS]; /* what copies use now */
    void *pin_src[MAX_SETS], *pin_dst[MAX_SETS];   /* pinned, once allocated */
    unsigned next;
} set_ctx;

typedef struct {
    cl_context ctx;
    cl_command_queue q;
    int svm;
    void *svm_a[MAX_SETS], *svm_b[MAX_SETS];
    cl_mem buf_a[MAX_SETS], buf_b[MAX_SETS];
    cl_mem pin_mem[2][MAX_SETS]; /* pinned host buffers ... */
    set_ctx host;                /* ... mapped at host.pin_src/pin_dst; host.next rotates */
} direct_ctx;

typedef struct {
    void *a, *b, *c;
} host_ctx;

/* ------------------------------------------------------------- the plugin */

void plugin_load(void);
/* Returns the device count, or -1 (msg says why). */
int plugin_init(const char *memory, char *msg, size_t msg_size);
/* Use pageable (shared by every path) or this path's pinned buffers. */
void use_host(set_ctx *c, void *pageable_src, void *pageable_dst, int pinned);

/* The copy paths: each returns after its copy has completed. */
void plug_copy(void *p, int kind);   /* set_ctx, through bw_ops */
void direct_copy(void *p, int kind); /* direct_ctx: OpenCL itself */
void host_copy(void *p, int kind);   /* host_ctx: memcpy */
#ifdef INFINIRT_BENCH_API
void api_copy(void *p, int kind); /* set_ctx, through the public API */
/* A config enabling only the opencl plugin, in one memory mode. */
void api_config(const char *memory, char *path, size_t path_size);
#endif

/* The per-call rows (opencl_bandwidth_sync.c), on the plugin's device 0,
 * printed; quick: short batches. */
void sync_rows(int svm, int quick);

/* ---------------------------------------------------------- OpenCL itself */

void direct_open(direct_ctx *c, const char *device_name, int svm);
/* Pinned host memory the OpenCL way, as the plugin's malloc_host does. */
void direct_pinned(direct_ctx *c);
void direct_close(direct_ctx *c);

#endif /* INFINIRT_OPENCL_BANDWIDTH_H_ */
