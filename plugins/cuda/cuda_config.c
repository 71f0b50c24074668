/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_config.c - the keys of [plugin.cuda].
 *
 *   devices = 0,2          expose only these CUDA device ordinals, in this
 *                          order (ordinals as the driver numbers them, i.e.
 *                          after CUDA_VISIBLE_DEVICES); default: all
 *   driver_library = PATH  the driver library to dlopen; default libcuda.so.1
 *                          (a name without '/' is searched as dlopen does)
 *   nvml_library = PATH    the NVML library to dlopen for utilisation
 *                          figures; default libnvidia-ml.so.1 (cuda_nvml.c)
 *
 * The loader consumes `library` and `enabled` itself and passes the rest.
 * Unknown keys and bad values are reported with their file and line
 * (through the loader) and otherwise ignored: a typo is seen but never
 * disables the backend.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* "0, 2,3" -> {0, 2, 3}.  Returns 0, or -1 on a malformed list (or no
 * memory for it). */
static int parse_devices(const char *value, int **out, int *count)
{
    const char *bad;
    size_t n;
    if (infinirtPluginParseIndexList(value, INT_MAX, out, &n, &bad) != 0 || n > INT_MAX) {
        return -1;
    }
    *count = (int)n;
    return 0;
}

infiniStatus_t cuda__config_parse(const infinirtPluginInitArgs *args, cuda__config_t *cfg, char *msg, size_t msg_size)
{
    (void)msg; /* no value fails init any more */
    (void)msg_size;
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < args->config_count; i++) {
        const char *key = args->config[i].key, *value = args->config[i].value;

        if (key == NULL)
            continue;
        if (value == NULL)
            value = "";
        if (strcmp(key, "devices") == 0) {
            free(cfg->devices);
            cfg->devices = NULL;
            if (parse_devices(value, &cfg->devices, &cfg->device_count) != 0)
                infinirtPluginConfigWarn(args, "cuda", i,
                                         "not a comma-separated list of CUDA device ordinals (e.g. 0,2); "
                                         "using every device");
        } else if (strcmp(key, "driver_library") == 0) {
            cfg->driver_library = value[0] != '\0' ? value : NULL;
        } else if (strcmp(key, "nvml_library") == 0) {
            cfg->nvml_library = value[0] != '\0' ? value : NULL;
        } else {
            infinirtPluginConfigWarn(args, "cuda", i,
                                     "unknown key ignored (known: devices, driver_library, nvml_library)");
        }
    }
    return INFINI_STATUS_SUCCESS;
}

void cuda__config_free(cuda__config_t *cfg)
{
    free(cfg->devices);
    cfg->devices = NULL;
    cfg->device_count = 0;
}
