/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_bandwidth_paths.c - the copy paths the OpenCL bandwidth benchmark
 * (opencl_bandwidth.c) times against each other: the plugin's ops, dlopened
 * directly; OpenCL itself on the same device; memcpy between host buffers;
 * and the public API through the loader.
 */
#define _POSIX_C_SOURCE 200809L
#include "opencl_bandwidth.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- the plugin */

const infinirtPluginOps *bw_ops;

static void quiet_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (level > INFINIRT_PLUGIN_LOG_WARN)
        return;
    va_start(ap, fmt);
    fprintf(stderr, "[%s] ", plugin);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void plugin_load(void)
{
    void *lib = dlopen(bw_plugin_path, RTLD_NOW | RTLD_LOCAL);
    infinirtPluginEntryFn entry;

    if (lib == NULL)
        die("dlopen(%s): %s", bw_plugin_path, dlerror());
    *(void **)&entry = dlsym(lib, INFINIRT_PLUGIN_ENTRY_NAME);
    if (entry == NULL)
        die("%s: no %s", bw_plugin_path, INFINIRT_PLUGIN_ENTRY_NAME);
    PLUG(entry(INFINIRT_PLUGIN_ABI_MAJOR, INFINIRT_PLUGIN_ABI_MINOR, &bw_ops));
}

int plugin_init(const char *memory, char *msg, size_t msg_size)
{
    infinirtPluginKeyValue kv[2] = {{"memory", memory}, {"devices", "0"}};
    infinirtPluginInitArgs args = {
        .struct_size = sizeof args,
        .abi_major = INFINIRT_PLUGIN_ABI_MAJOR,
        .abi_minor = INFINIRT_PLUGIN_ABI_MINOR,
        .config = kv,
        .config_count = memory ? 2 : 0,
        .plugin_path = bw_plugin_path,
        .log = quiet_log,
        .message = msg,
        .message_size = msg_size,
    };
    int count = 0;

    msg[0] = '\0';
    if (bw_ops->init(&args, &count) != INFINI_STATUS_SUCCESS)
        return -1;
    return count;
}

void use_host(set_ctx *c, void *pageable_src, void *pageable_dst, int pinned)
{
    for (int i = 0; i < bw_sets; i++) {
        c->host_src[i] = pinned ? c->pin_src[i] : pageable_src;
        c->host_dst[i] = pinned ? c->pin_dst[i] : pageable_dst;
    }
}

void plug_copy(void *p, int kind)
{
    set_ctx *c = p;
    unsigned i = c->next++ % (unsigned)bw_sets;

    if (kind == H2D)
        PLUG(bw_ops->memcpy(0, c->dev_a[i], c->host_src[i], bw_bytes, INFINIRT_PLUGIN_MEMCPY_H2D));
    else if (kind == D2H)
        PLUG(bw_ops->memcpy(0, c->host_dst[i], c->dev_a[i], bw_bytes, INFINIRT_PLUGIN_MEMCPY_D2H));
    else
        PLUG(bw_ops->memcpy(0, c->dev_b[i], c->dev_a[i], bw_bytes, INFINIRT_PLUGIN_MEMCPY_D2D));
}

/* ---------------------------------------------------------- OpenCL itself */

static cl_device_id find_device(const char *name)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    cl_device_id first = NULL;

    CL(clGetPlatformIDs(16, ps, &np));
    for (cl_uint i = 0; i < np && i < 16; i++) {
        cl_device_id ds[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 16, ds, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint j = 0; j < nd && j < 16; j++) {
            char n[256] = "";
            clGetDeviceInfo(ds[j], CL_DEVICE_NAME, sizeof n, n, NULL);
            if (strcmp(n, name) == 0)
                return ds[j];
            if (first == NULL)
                first = ds[j];
        }
    }
    return first;
}

void direct_open(direct_ctx *c, const char *device_name, int svm)
{
    cl_device_id d = find_device(device_name);
    const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_int err;

    memset(c, 0, sizeof *c);
    c->svm = svm;
    c->ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    CL(err);
    c->q = clCreateCommandQueueWithProperties(c->ctx, d, props, &err);
    CL(err);
    for (int i = 0; i < bw_sets; i++) {
        if (svm) {
            c->svm_a[i] = clSVMAlloc(c->ctx, CL_MEM_READ_WRITE, bw_bytes, 0);
            c->svm_b[i] = clSVMAlloc(c->ctx, CL_MEM_READ_WRITE, bw_bytes, 0);
            if (!c->svm_a[i] || !c->svm_b[i])
                die("clSVMAlloc failed");
        } else {
            c->buf_a[i] = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, bw_bytes, NULL, &err);
            CL(err);
            c->buf_b[i] = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, bw_bytes, NULL, &err);
            CL(err);
        }
    }
}

void direct_pinned(direct_ctx *c)
{
    for (int i = 0; i < bw_sets; i++)
        for (int j = 0; j < 2; j++) {
            cl_int err;
            void *p;
            c->pin_mem[j][i] =
                clCreateBuffer(c->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bw_bytes, NULL, &err);
            CL(err);
            p = clEnqueueMapBuffer(c->q, c->pin_mem[j][i], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bw_bytes, 0, NULL,
                                   NULL, &err);
            CL(err);
            memset(p, 4 + j, bw_bytes);
            if (j == 0)
                c->host.pin_src[i] = p;
            else
                c->host.pin_dst[i] = p;
        }
}

void direct_close(direct_ctx *c)
{
    for (int i = 0; i < bw_sets; i++) {
        if (c->pin_mem[0][i]) {
            CL(clEnqueueUnmapMemObject(c->q, c->pin_mem[0][i], c->host.pin_src[i], 0, NULL, NULL));
            CL(clEnqueueUnmapMemObject(c->q, c->pin_mem[1][i], c->host.pin_dst[i], 0, NULL, NULL));
            CL(clFinish(c->q));
            clReleaseMemObject(c->pin_mem[0][i]);
            clReleaseMemObject(c->pin_mem[1][i]);
        }
        if (c->svm) {
            clSVMFree(c->ctx, c->svm_a[i]);
            clSVMFree(c->ctx, c->svm_b[i]);
        } else {
            clReleaseMemObject(c->buf_a[i]);
            clReleaseMemObject(c->buf_b[i]);
        }
    }
    clReleaseCommandQueue(c->q);
    clReleaseContext(c->ctx);
}

void direct_copy(void *p, int kind)
{
    direct_ctx *c = p;
    unsigned i = c->host.next++ % (unsigned)bw_sets;
    void *src = c->host.host_src[i], *dst = c->host.host_dst[i];

    if (c->svm) {
        if (kind == H2D)
            CL(clEnqueueSVMMemcpy(c->q, CL_TRUE, c->svm_a[i], src, bw_bytes, 0, NULL, NULL));
        else if (kind == D2H)
            CL(clEnqueueSVMMemcpy(c->q, CL_TRUE, dst, c->svm_a[i], bw_bytes, 0, NULL, NULL));
        else
            CL(clEnqueueSVMMemcpy(c->q, CL_TRUE, c->svm_b[i], c->svm_a[i], bw_bytes, 0, NULL, NULL));
    } else {
        if (kind == H2D)
            CL(clEnqueueWriteBuffer(c->q, c->buf_a[i], CL_TRUE, 0, bw_bytes, src, 0, NULL, NULL));
        else if (kind == D2H)
            CL(clEnqueueReadBuffer(c->q, c->buf_a[i], CL_TRUE, 0, bw_bytes, dst, 0, NULL, NULL));
        else {
            CL(clEnqueueCopyBuffer(c->q, c->buf_a[i], c->buf_b[i], 0, 0, bw_bytes, 0, NULL, NULL));
            CL(clFinish(c->q));
        }
    }
}

/* ------------------------------------------------------------ host memcpy */

void host_copy(void *p, int kind)
{
    host_ctx *h = p;

    /* The same bytes between host buffers: a->b, b->c, c->a rotate so no
     * row copies a buffer onto itself. */
    if (kind == H2D)
        memcpy(h->b, h->a, bw_bytes);
    else if (kind == D2H)
        memcpy(h->c, h->b, bw_bytes);
    else
        memcpy(h->a, h->c, bw_bytes);
}

/* ------------------------------------------------------------- public API */

#ifdef INFINIRT_BENCH_API

void api_copy(void *p, int kind)
{
    set_ctx *c = p;
    unsigned i = c->next++ % (unsigned)bw_sets;

    if (kind == H2D)
        IRT(infinirtMemcpy(c->dev_a[i], c->host_src[i], bw_bytes, INFINIRT_MEMCPY_H2D));
    else if (kind == D2H)
        IRT(infinirtMemcpy(c->host_dst[i], c->dev_a[i], bw_bytes, INFINIRT_MEMCPY_D2H));
    else
        IRT(infinirtMemcpy(c->dev_b[i], c->dev_a[i], bw_bytes, INFINIRT_MEMCPY_D2D));
}

void api_config(const char *memory, char *path, size_t path_size)
{
    FILE *f;

    snprintf(path, path_size, "/tmp/infinirt-opencl-bench-%ld-%s.ini", (long)getpid(), memory);
    f = fopen(path, "w");
    if (f == NULL)
        die("cannot write %s", path);
    fprintf(f,
            "[loader]\nlog_level = warn\n\n[plugin.cpu]\nenabled = false\n\n[plugin.cuda]\nenabled = false\n\n"
            "[plugin.opencl]\nlibrary = %s\ndevices = 0\nmemory = %s\n",
            bw_plugin_path, memory);
    fclose(f);
}
#endif
