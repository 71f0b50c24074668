/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sem_print.c - a program as C, ready to paste into a regression test.
 *
 * The function uses the public API and the harness's assertions only
 * (tests/harness/test.h): every call is ASSERT_OK'd, and each read the run
 * got wrong is asserted, byte by byte, right after the operation that told
 * the host it had completed - where the tester looked at it.
 */
#include "sem.h"

#include <stdio.h>

static const char *type_macro(infiniDevice_t t)
{
    switch (t) {
    case INFINI_DEVICE_CPU:
        return "INFINI_DEVICE_CPU";
    case INFINI_DEVICE_NVIDIA:
        return "INFINI_DEVICE_NVIDIA";
    case INFINI_DEVICE_OPENCL:
        return "INFINI_DEVICE_OPENCL";
    case INFINI_DEVICE_ASCEND:
        return "INFINI_DEVICE_ASCEND";
    default:
        return "tc_device_type()";
    }
}

static size_t buf_size(const sem_program *p, int b)
{
    for (int i = 0; i < p->nops; i++)
        if ((p->ops[i].kind == SEM_MALLOC || p->ops[i].kind == SEM_MALLOC_ASYNC) && p->ops[i].b == b)
            return p->ops[i].size;
    return 0;
}

/* How stream slot s is named, after making its device current if it is a
 * NULL stream: slots below ndevices, the devices the program uses (with
 * one device, slot 1 is a stream the program made). */
static const char *stream_name(int ndevices, int s, char *buf, size_t n, const char *type)
{
    if (s < ndevices && s >= 0) {
        printf("    ASSERT_OK(infinirtSetDevice(%s, %d));\n", type, s);
        snprintf(buf, n, "NULL");
    } else {
        snprintf(buf, n, "s[%d]", s);
    }
    return buf;
}

static void print_check(const sem_bad_read *bad, const char *where)
{
    if (bad->want.kind == SEM_VAL_MEMSET)
        printf("    for (size_t j = 0; j < %zu; j++) /* the rules: the memset of 0x%02x */\n"
               "        ASSERT_EQ(%s[j], 0x%02x);\n",
               bad->size, (unsigned)bad->want.value, where, (unsigned)bad->want.value);
    else
        printf("    for (size_t j = 0; j < %zu; j++) /* the rules: pattern %u */\n"
               "        ASSERT_EQ(%s[j], sem_byte(%u, j));\n",
               bad->size, (unsigned)bad->want.value, where, (unsigned)bad->want.value);
}

void sem_print_c(const sem_program *p, const sem_caps *caps, infiniDevice_t type, const sem_result *res,
                 const char *config)
{
    const char *t = type_macro(type);
    char sn[32];
    printf("/* infinirt-semantics --seed %llu (%s): %d operations.\n * %s */\n", (unsigned long long)p->seed, config,
           p->nops, res->first);
    printf("static void sem_sleep(void *us)\n{\n    usleep((useconds_t)(uintptr_t)us);\n}\n");
    printf("static unsigned char sem_byte(uint32_t seed, size_t i)\n{\n"
           "    uint32_t x = seed * 2654435761u + (uint32_t)(i / 4) * 40503u;\n    x ^= x >> 15;\n"
           "    return (unsigned char)(x >> ((i %% 4) * 8));\n}\n");
    printf("int test_semantics_seed_%llu(void)\n{\n", (unsigned long long)p->seed);
    printf("    infinirtStream_t s[%d] = {0};\n    infinirtEvent_t e[%d] = {0};\n    void *b[%d] = {0};\n"
           "    infinirtGraph_t g[%d] = {0};\n    infinirtGraphExec_t x[%d] = {0};\n",
           SEM_MAX_STREAMS, SEM_MAX_EVENTS, SEM_MAX_BUFS, SEM_MAX_GRAPHS, SEM_MAX_GRAPHS);
    if (caps->ndevices > 1)
        printf("    CHECK(tc_needs_devices(%s, %d));\n", t, caps->ndevices);
    for (int i = 0; i < p->nops; i++) {
        const sem_op *op = &p->ops[i];
        if (op->kind == SEM_H2D_ASYNC || op->kind == SEM_H2D || op->kind == SEM_D2H_ASYNC || op->kind == SEM_D2H)
            printf("    static unsigned char h%d[%zu];\n", i, buf_size(p, op->b));
        if (op->kind == SEM_H2D_ASYNC || op->kind == SEM_H2D)
            printf("    for (size_t j = 0; j < sizeof h%d; j++)\n        h%d[j] = sem_byte(%u, j);\n", i, i,
                   (unsigned)op->value);
    }
    for (int i = 0; i < p->nops; i++) {
        const sem_op *op = &p->ops[i];
        size_t n = op->b >= 0 ? buf_size(p, op->b) : 0;
        printf("    /* %d */\n", i);
        switch (op->kind) {
        case SEM_STREAM_CREATE:
            printf("    ASSERT_OK(infinirtSetDevice(%s, %d));\n", t, op->dev);
            if (op->value)
                printf("    ASSERT_OK(infinirtStreamCreateWithFlags(&s[%d], INFINIRT_STREAM_NON_BLOCKING));\n",
                       op->s);
            else
                printf("    ASSERT_OK(infinirtStreamCreate(&s[%d]));\n", op->s);
            break;
        case SEM_STREAM_DESTROY:
            printf("    ASSERT_OK(infinirtStreamDestroy(s[%d]));\n", op->s);
            break;
        case SEM_EVENT_CREATE:
            printf("    ASSERT_OK(infinirtSetDevice(%s, %d));\n    ASSERT_OK(infinirtEventCreate(&e[%d]));\n", t,
                   op->dev, op->e);
            break;
        case SEM_EVENT_DESTROY:
            printf("    ASSERT_OK(infinirtEventDestroy(e[%d]));\n", op->e);
            break;
        case SEM_MALLOC:
            printf("    ASSERT_OK(infinirtSetDevice(%s, %d));\n    ASSERT_OK(infinirtMalloc(&b[%d], %zu));\n", t,
                   op->dev, op->b, op->size);
            break;
        case SEM_FREE:
            printf("    ASSERT_OK(infinirtFree(b[%d]));\n", op->b);
            break;
        case SEM_MALLOC_ASYNC:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtMallocAsync(&b[%d], %zu, %s));\n", op->b, op->size, sn);
            break;
        case SEM_FREE_ASYNC:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtFreeAsync(b[%d], %s));\n", op->b, sn);
            break;
        case SEM_MEMSET_ASYNC:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtMemsetAsync(b[%d], 0x%02x, %zu, %s));\n", op->b, (unsigned)op->value, n,
                   sn);
            break;
        case SEM_H2D_ASYNC:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtMemcpyAsync(b[%d], h%d, %zu, INFINIRT_MEMCPY_H2D, %s));\n", op->b, i, n,
                   sn);
            break;
        case SEM_D2D_ASYNC:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtMemcpyAsync(b[%d], b[%d], %zu, INFINIRT_MEMCPY_D2D, %s));\n", op->b, op->b2,
                   n, sn);
            break;
        case SEM_D2H_ASYNC:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtMemcpyAsync(h%d, b[%d], %zu, INFINIRT_MEMCPY_D2H, %s));\n", i, op->b, n,
                   sn);
            break;
        case SEM_MEMSET:
            printf("    ASSERT_OK(infinirtMemset(b[%d], 0x%02x, %zu));\n", op->b, (unsigned)op->value, n);
            break;
        case SEM_H2D:
            printf("    ASSERT_OK(infinirtMemcpy(b[%d], h%d, %zu, INFINIRT_MEMCPY_H2D));\n", op->b, i, n);
            break;
        case SEM_D2D:
            printf("    ASSERT_OK(infinirtMemcpy(b[%d], b[%d], %zu, INFINIRT_MEMCPY_D2D));\n", op->b, op->b2, n);
            break;
        case SEM_D2H:
            printf("    ASSERT_OK(infinirtMemcpy(h%d, b[%d], %zu, INFINIRT_MEMCPY_D2H));\n", i, op->b, n);
            break;
        case SEM_HOST_FN:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf(
                "    ASSERT_OK(infinirtLaunchHostFunc(%s, sem_sleep, (void *)(uintptr_t)%u)); /* sleeps %u us */\n",
                sn, (unsigned)op->value, (unsigned)op->value);
            break;
        case SEM_EVENT_RECORD:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtEventRecord(e[%d], %s));\n", op->e, sn);
            break;
        case SEM_STREAM_WAIT:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtStreamWaitEvent(%s, e[%d]));\n", sn, op->e);
            break;
        case SEM_EVENT_SYNC:
            printf("    ASSERT_OK(infinirtEventSynchronize(e[%d]));\n", op->e);
            break;
        case SEM_EVENT_QUERY:
            printf("    {\n        infinirtEventStatus_t q;\n        ASSERT_OK(infinirtEventQuery(e[%d], &q));\n",
                   op->e);
            if (res->bad_op == i)
                printf("        ASSERT_EQ(q, INFINIRT_EVENT_COMPLETE);\n");
            else
                printf("        (void)q;\n");
            printf("    }\n");
            break;
        case SEM_STREAM_SYNC:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtStreamSynchronize(%s));\n", sn);
            break;
        case SEM_DEVICE_SYNC:
            printf("    ASSERT_OK(infinirtSetDevice(%s, %d));\n    ASSERT_OK(infinirtDeviceSynchronize());\n", t,
                   op->dev);
            break;
        case SEM_CAPTURE_BEGIN:
            printf("    ASSERT_OK(infinirtStreamBeginCapture(s[%d], INFINIRT_STREAM_CAPTURE_MODE_GLOBAL));\n", op->s);
            break;
        case SEM_CAPTURE_END:
            printf("    ASSERT_OK(infinirtStreamEndCapture(s[%d], &g[%d]));\n"
                   "    ASSERT_OK(infinirtGraphInstantiate(&x[%d], g[%d], NULL, NULL, 0));\n",
                   op->s, op->g, op->g, op->g);
            break;
        case SEM_GRAPH_LAUNCH:
            stream_name(caps->ndevices, op->s, sn, sizeof sn, t);
            printf("    ASSERT_OK(infinirtGraphLaunch(x[%d], %s));\n", op->g, sn);
            break;
        case SEM_GRAPH_EXEC_DESTROY:
            printf("    ASSERT_OK(infinirtGraphExecDestroy(x[%d]));\n    ASSERT_OK(infinirtGraphDestroy(g[%d]));\n",
                   op->g, op->g);
            break;
        }
        for (int k = 0; k < res->nbad; k++) {
            if (res->bad[k].checked_at != i || res->bad[k].op >= p->nops)
                continue;
            char where[16];
            snprintf(where, sizeof where, "h%d", res->bad[k].op);
            print_check(&res->bad[k], where);
        }
    }
    for (int d = 0; d < caps->ndevices; d++)
        printf("    ASSERT_OK(infinirtSetDevice(%s, %d));\n    ASSERT_OK(infinirtDeviceSynchronize());\n", t, d);
    for (int k = 0; k < res->nbad; k++) {
        if (res->bad[k].op < p->nops && res->bad[k].checked_at >= p->nops) {
            char where[16];
            snprintf(where, sizeof where, "h%d", res->bad[k].op);
            print_check(&res->bad[k], where);
        }
    }
    for (int k = 0; k < res->nbad; k++) {
        if (res->bad[k].op < p->nops)
            continue;
        printf("    {\n        static unsigned char back[%zu];\n"
               "        ASSERT_OK(infinirtMemcpy(back, b[%d], sizeof back, INFINIRT_MEMCPY_D2H));\n",
               res->bad[k].size, res->bad[k].buf);
        print_check(&res->bad[k], "back");
        printf("    }\n");
    }
    printf("    /* Leaves what the program did not free to the runner's process. */\n");
    printf("    return TEST_OK;\n}\n");
}
