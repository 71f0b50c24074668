/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_config.c - the [plugin.opencl] keys.
 *
 *   platform    = substring of the platform name, case-insensitive
 *   device_type = gpu, cpu, accelerator, custom, all (comma list; default all)
 *   devices     = comma list of indices into the filtered list (default all)
 *   memory      = auto | svm | buffer (default auto: svm where supported)
 *
 * A malformed value is reported with its file and line (through the loader)
 * and the key's default is kept: one typo must not take the backend down,
 * and the warning says what is used instead.
 */
#include "opencl_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "svm", "buffer" or "auto": the name a config uses for m (defined below). */
static const char *mem_mode_name(opencl__mem_mode m);

/* Keys the loader itself reads from the section.  It does not pass them on
 * today; should it ever, they are not unknown. */
static const char *const loader_keys[] = {"library", "enabled"};

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* Copy the next comma-separated token of *p, trimmed, into tok; advance *p.
 * Returns 0 at the end of the string. */
static int next_token(const char **p, char *tok, size_t tok_size)
{
    const char *s = *p, *e;
    size_t n;

    if (*s == '\0')
        return 0;
    e = strchr(s, ',');
    if (e == NULL)
        e = s + strlen(s);
    *p = *e ? e + 1 : e;
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    n = (size_t)(e - s);
    if (n >= tok_size)
        n = tok_size - 1;
    memcpy(tok, s, n);
    tok[n] = '\0';
    return 1;
}

static infiniStatus_t parse_type(const char *v, opencl__config *cfg, char *msg, size_t msg_size)
{
    char tok[32];
    const char *p = v;
    cl_device_type mask = 0;

    while (next_token(&p, tok, sizeof tok)) {
        if (ieq(tok, "gpu"))
            mask |= CL_DEVICE_TYPE_GPU;
        else if (ieq(tok, "cpu"))
            mask |= CL_DEVICE_TYPE_CPU;
        else if (ieq(tok, "accelerator"))
            mask |= CL_DEVICE_TYPE_ACCELERATOR;
        else if (ieq(tok, "custom"))
            mask |= CL_DEVICE_TYPE_CUSTOM;
        else if (ieq(tok, "all"))
            mask |= CL_DEVICE_TYPE_ALL;
        else {
            snprintf(msg, msg_size,
                     "unknown type \"%s\" (want gpu, cpu, accelerator, custom or all, comma-separated)", tok);
            return INFINI_STATUS_BAD_PARAM;
        }
    }
    if (mask == 0) {
        snprintf(msg, msg_size, "empty (want gpu, cpu, accelerator, custom or all)");
        return INFINI_STATUS_BAD_PARAM;
    }
    cfg->type_mask = mask;
    snprintf(cfg->type_text, sizeof cfg->type_text, "%s", v);
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t parse_devices(const char *v, opencl__config *cfg, char *msg, size_t msg_size)
{
    const char *bad = v;
    size_t n = 0;
    int *list = NULL;
    int r = infinirtPluginParseIndexList(v, 4095, &list, &n, &bad);

    if (r == -2) {
        snprintf(msg, msg_size, "out of host memory parsing [plugin.opencl] devices");
        return INFINI_STATUS_OUT_OF_MEMORY;
    }
    if (r != 0) {
        size_t len = strcspn(bad, ",");
        while (len > 0 && (bad[len - 1] == ' ' || bad[len - 1] == '\t'))
            len--;
        if (len == 0 && bad == v + strspn(v, " \t") && bad[0] == '\0')
            snprintf(msg, msg_size, "empty (want a comma list of indices, or omit the key)");
        else
            snprintf(msg, msg_size, "\"%.*s\" is not a device index (want a comma list of integers from 0 to 4095)",
                     (int)len, bad);
        return INFINI_STATUS_BAD_PARAM;
    }
    free(cfg->devices);
    cfg->devices = list;
    cfg->device_count = n;
    return INFINI_STATUS_SUCCESS;
}

static infiniStatus_t parse_memory(const char *v, opencl__config *cfg, char *msg, size_t msg_size)
{
    if (ieq(v, "auto"))
        cfg->memory = OPENCL__MEM_AUTO;
    else if (ieq(v, "svm"))
        cfg->memory = OPENCL__MEM_SVM;
    else if (ieq(v, "buffer"))
        cfg->memory = OPENCL__MEM_BUFFER;
    else {
        snprintf(msg, msg_size, "want auto, svm or buffer");
        return INFINI_STATUS_BAD_PARAM;
    }
    return INFINI_STATUS_SUCCESS;
}

infiniStatus_t opencl__config_parse(const infinirtPluginInitArgs *args, opencl__config *cfg, char *msg,
                                    size_t msg_size)
{
    infiniStatus_t st = INFINI_STATUS_SUCCESS;

    memset(cfg, 0, sizeof *cfg);
    cfg->type_mask = CL_DEVICE_TYPE_ALL;
    snprintf(cfg->type_text, sizeof cfg->type_text, "all");
    cfg->memory = OPENCL__MEM_AUTO;

    for (size_t i = 0; i < args->config_count && st == INFINI_STATUS_SUCCESS; i++) {
        const char *k = args->config[i].key, *v = args->config[i].value;
        const char *used = NULL;
        char why[256] = "";
        int known = 0;

        if (k == NULL)
            continue;
        if (v == NULL)
            v = "";
        if (ieq(k, "platform")) {
            free(cfg->platform);
            cfg->platform = NULL;
            if (v[0] != '\0') {
                cfg->platform = strdup(v);
                if (cfg->platform == NULL)
                    st = INFINI_STATUS_OUT_OF_MEMORY;
            }
        } else if (ieq(k, "device_type")) {
            st = parse_type(v, cfg, why, sizeof why);
            used = cfg->type_text;
        } else if (ieq(k, "devices")) {
            st = parse_devices(v, cfg, why, sizeof why);
            used = cfg->devices == NULL ? "every device" : "the earlier list";
        } else if (ieq(k, "memory")) {
            st = parse_memory(v, cfg, why, sizeof why);
            used = mem_mode_name(cfg->memory);
        } else {
            for (size_t j = 0; j < sizeof loader_keys / sizeof loader_keys[0]; j++)
                known |= ieq(k, loader_keys[j]);
            if (!known)
                infinirtPluginConfigWarn(args, "opencl", i,
                                         "unknown key ignored (known: platform, device_type, devices, memory)");
        }
        if (st == INFINI_STATUS_BAD_PARAM) {
            infinirtPluginConfigWarn(args, "opencl", i, "%s; using %s", why, used);
            st = INFINI_STATUS_SUCCESS;
        } else if (st != INFINI_STATUS_SUCCESS) {
            snprintf(msg, msg_size, "%s", why[0] ? why : "out of host memory reading the config");
        }
    }
    if (st != INFINI_STATUS_SUCCESS)
        opencl__config_free(cfg);
    return st;
}

void opencl__config_free(opencl__config *cfg)
{
    free(cfg->platform);
    free(cfg->devices);
    cfg->platform = NULL;
    cfg->devices = NULL;
    cfg->device_count = 0;
}

static const char *mem_mode_name(opencl__mem_mode m)
{
    switch (m) {
    case OPENCL__MEM_SVM:
        return "svm";
    case OPENCL__MEM_BUFFER:
        return "buffer";
    default:
        return "auto";
    }
}
