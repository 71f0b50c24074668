/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_driver.c - finding the NVIDIA driver at run time, and turning its
 * errors into infinirt statuses and log lines.
 *
 * The plugin never links libcuda: a machine without the driver must still
 * load the plugin so that it can say why it serves no device.  So libcuda.so.1
 * is dlopened at init and every function is resolved by its exported,
 * versioned symbol name.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

cuda__driver_t cuda__drv;
cuda__driver_names_t cuda__drv_names;

/* Set at init, read from any thread afterwards: the loader's logger stays
 * valid for the life of the process. */
static void (*log_fn)(int, const char *, const char *, ...);

void cuda__set_logger(void (*log)(int, const char *, const char *, ...))
{
    log_fn = log;
}

void cuda__log(int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (log_fn == NULL)
        return;
    /* The loader's log is variadic and cannot take a va_list, so the line is
     * formatted here and handed over as one string. */
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log_fn(level, CUDA__NAME, "%s", line);
}

const char *cuda__error_name(CUresult r)
{
    const char *name = NULL;

    if (cuda__drv.GetErrorName == NULL || cuda__drv.GetErrorName(r, &name) != CUDA_SUCCESS || name == NULL)
        return "CUDA_ERROR_UNKNOWN_CODE";
    return name;
}

static infiniStatus_t status_of(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS:
        return INFINI_STATUS_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return INFINI_STATUS_OUT_OF_MEMORY;
    case CUDA_ERROR_NOT_READY:
        return INFINI_STATUS_NOT_READY;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
        return INFINI_STATUS_BAD_PARAM;
    case CUDA_ERROR_NOT_SUPPORTED:
        return INFINI_STATUS_NOT_IMPLEMENTED;
    /* Stream capture: a call the capture forbids (which may have
     * invalidated it), or a capture in the wrong state for the call. */
    case CUDA_ERROR_ILLEGAL_STATE:
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_MERGE:
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_CAPTURED_EVENT:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    /* A call the driver refuses in this state, e.g. a CUDA call from
     * inside a host function. */
    case CUDA_ERROR_NOT_PERMITTED:
        return INFINI_STATUS_INVALID_STATE;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
        return INFINI_STATUS_DEVICE_NOT_INITIALIZED;
    default:
        return INFINI_STATUS_INTERNAL_ERROR;
    }
}

/*
 * The errors after which the context is corrupt: the driver answers every
 * later call in it with the same error, and only a new process gets a
 * working one (CUDA's documentation of each says "the process must be
 * terminated and relaunched", or for ASSERT that the context "cannot be
 * used anymore").  Uncorrectable ECC and NVLink errors are hardware faults
 * found during execution, which leave the context in the same state.  The
 * newer codes are numbers, so an older toolkit builds this too.
 */
static int sticky(CUresult r)
{
    switch ((int)r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case 226: /* CUDA_ERROR_CONTAINED */
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case 721: /* CUDA_ERROR_TENSOR_MEMORY_LEAK */
    case 810: /* CUDA_ERROR_MPS_CLIENT_TERMINATED */
    case 911: /* CUDA_ERROR_EXTERNAL_DEVICE */
        return 1;
    default:
        return 0;
    }
}

infiniStatus_t cuda__check(CUresult r, const char *call, int dev)
{
    const char *text = NULL;
    char where[32] = "";

    if (r == CUDA_SUCCESS)
        return INFINI_STATUS_SUCCESS;
    if (cuda__drv.GetErrorString == NULL || cuda__drv.GetErrorString(r, &text) != CUDA_SUCCESS || text == NULL)
        text = "no description";
    if (dev >= 0)
        snprintf(where, sizeof where, "device %d: ", dev);
    /* Out of memory is not final: the loader releases its cache and retries,
     * so it is a warning here and the loader reports a real failure. */
    cuda__log(r == CUDA_ERROR_OUT_OF_MEMORY ? INFINIRT_PLUGIN_LOG_WARN : INFINIRT_PLUGIN_LOG_ERROR,
              "%s%s failed: %s (%s)%s", where, call, cuda__error_name(r), text,
              sticky(r) ? "; a sticky error: the device's CUDA context is unusable until the process "
                          "restarts (every later call on it fails the same way)"
                        : "");
    return status_of(r);
}

/* dlsym returns a data pointer; POSIX guarantees it converts to a function
 * pointer, and the memcpy keeps -Wpedantic quiet about that conversion. */
static int resolve(void *lib, const char *sym, const char *alt, void *fn_out, const char **name_out)
{
    void *p = dlsym(lib, sym);

    if (p == NULL && alt != NULL) {
        p = dlsym(lib, alt);
        sym = alt;
    }
    if (p == NULL)
        return -1;
    memcpy(fn_out, &p, sizeof p);
    *name_out = sym;
    return 0;
}

void cuda__driver_forget(void)
{
    memset(&cuda__drv, 0, sizeof cuda__drv);
    memset(&cuda__drv_names, 0, sizeof cuda__drv_names);
}

int cuda__driver_load(const char *path, char *msg, size_t msg_size, int *no_device)
{
    const char *missing = NULL;
    int version = 0;
    CUresult r;
    void *lib;

    *no_device = 1;
    if (path == NULL)
        path = "libcuda.so.1";
    /* RTLD_LOCAL: the driver's symbols must not leak into the global scope,
     * where they could satisfy another library's undefined references. */
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *err = dlerror();
        snprintf(msg, msg_size, "%s not found (no NVIDIA driver installed): %s", path,
                 err ? err : "unknown dlopen error");
        return -1;
    }

    /* The version first: a driver too old to have some symbol below gets
     * "driver too old" rather than "missing cuXxx". */
    if (resolve(lib, "cuDriverGetVersion", NULL, &cuda__drv.DriverGetVersion, &cuda__drv_names.DriverGetVersion) !=
        0) {
        *no_device = 0;
        snprintf(msg, msg_size, "%s is not an NVIDIA driver library (no cuDriverGetVersion)", path);
        goto fail;
    }
    r = cuda__drv.DriverGetVersion(&version);
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        /* The toolkit's link-time stub (lib64/stubs/libcuda.so) found first
         * on the library path: it answers everything with this error. */
        snprintf(msg, msg_size, "%s is the CUDA Toolkit's stub library, not a driver (no NVIDIA driver installed)",
                 path);
        goto fail;
    }
    if (r != CUDA_SUCCESS) {
        *no_device = 0;
        snprintf(msg, msg_size, "%s: cuDriverGetVersion failed (CUresult %d)", path, (int)r);
        goto fail;
    }
    if (version < CUDA__MIN_DRIVER_VERSION) {
        snprintf(msg, msg_size,
                 "driver too old for this build: driver supports CUDA %d.%d, plugin built with CUDA %d.%d "
                 "needs a driver for CUDA %d.%d or newer",
                 version / 1000, version % 1000 / 10, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10,
                 CUDA__MIN_DRIVER_VERSION / 1000, CUDA__MIN_DRIVER_VERSION % 1000 / 10);
        goto fail;
    }

#define CUDA__RESOLVE_(field, sym, alt, type)                                                     \
    if (missing == NULL && resolve(lib, sym, alt, &cuda__drv.field, &cuda__drv_names.field) != 0) \
        missing = sym;
    CUDA__DRIVER_FUNCS(CUDA__RESOLVE_)
#undef CUDA__RESOLVE_
    if (missing != NULL) {
        /* The version said this driver is new enough, so this is a broken
         * or foreign library, not an old one: a real failure. */
        *no_device = 0;
        snprintf(msg, msg_size, "%s (driver for CUDA %d.%d) does not export %s", path, version / 1000,
                 version % 1000 / 10, missing);
        goto fail;
    }
    /* Optional: a missing one leaves its field NULL, and the entries that
     * need it say so when called. */
    missing = NULL;
#define CUDA__RESOLVE_OPTIONAL_(field, sym, alt, type)                           \
    if (resolve(lib, sym, alt, &cuda__drv.field, &cuda__drv_names.field) != 0) { \
        cuda__drv_names.field = sym; /* for the entries' log lines */            \
        if (missing == NULL)                                                     \
            missing = sym;                                                       \
    }
    CUDA__OPTIONAL_FUNCS(CUDA__RESOLVE_OPTIONAL_)
#undef CUDA__RESOLVE_OPTIONAL_
    if (missing != NULL && strcmp(missing, "cuGraphInstantiateWithFlags") == 0 && cuda__drv.GraphInstantiate != NULL)
        missing = NULL;
    if (missing != NULL)
        cuda__log(INFINIRT_PLUGIN_LOG_INFO,
                  "%s (driver for CUDA %d.%d) does not export %s%s: the calls that need it "
                  "answer NOT_IMPLEMENTED",
                  path, version / 1000, version % 1000 / 10, missing,
                  cuda__drv.StreamBeginCapture == NULL ? " (no native stream capture)" : "");
    cuda__state.lib = lib;
    cuda__state.driver_version = version;
    return 0;

fail:
    cuda__driver_forget();
    /* Closing is safe here: nothing from the library has been called that
     * could have registered handlers or threads (cuInit has not run). */
    dlclose(lib);
    return -1;
}
