/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader_plugin_files_tests.c - the plugin files the loader accepts and
 * the device counts it serves: a device cap, many cheap devices, library
 * paths that are not regular files, and plugin files others may change;
 * and an event polled before it completed (NOT_READY) logs no warning.
 */
#define _GNU_SOURCE
#include "loader_tests.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
/* A plugin that declares more devices than the loader serves is refused,
 * with the reason in the report; the others keep serving. */
int test_loader_device_cap(void)
{
    return bad_plugin_case("library = " FAKE_DIR "/libfake_good.so\nanswer = 42\ndevices = 100000", "huge",
                           INFINIRT_PLUGIN_INIT_FAILED, "declared 100000 devices; a plugin may serve at most 4096");
}

/* The most a plugin may declare loads, and a device costs little until it
 * is used (each one's allocator is made on first use). */
int test_loader_many_devices_cheap(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\n\n[plugin.many]\nlibrary = " FAKE_DIR
             "/libfake_good.so\nanswer = 42\ndevices = 4096\n",
             CPU_PLUGIN);
    use_config(cfg);
    tc_setenv("INFINIRT_LOG", "error"); /* the fake's odd UUIDs warn once per device */
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    int counts[INFINI_DEVICE_TYPE_COUNT];
    ASSERT_OK(infinirtGetAllDeviceCount(counts));
    getrusage(RUSAGE_SELF, &after);
    ASSERT_EQ(counts[INFINI_DEVICE_ASCEND], 4096);
    /* 85 KiB a device (348 MB here) when each device made its allocator at
     * load; a few MB now. */
    long grew_kib = after.ru_maxrss - before.ru_maxrss;
    if (grew_kib > 64 * 1024)
        TEST_FAILED_("loading 4096 devices grew the process by %ld KiB", grew_kib);
    /* The last device works, and its statistics start at zero. */
    infinirtAllocatorStats_t st;
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 4095, &st));
    ASSERT_EQ(st.reserved_bytes, 0);
    ASSERT_OK(infinirtSetDevice(INFINI_DEVICE_ASCEND, 4095));
    void *d;
    ASSERT_OK(infinirtMalloc(&d, 4096));
    ASSERT_OK(infinirtGetAllocatorStats(INFINI_DEVICE_ASCEND, 4095, &st));
    ASSERT_EQ(st.allocated_bytes, 4096);
    ASSERT_OK(infinirtFree(d));
    CHECK(cpu_still_works());
    return TEST_OK;
}

/* `library =` naming what is not a regular file is refused before dlopen,
 * which would block on a FIFO until a writer came. */
int test_loader_library_fifo(void)
{
    char fifo[600], extra[700];
    snprintf(fifo, sizeof fifo, "%s/libinfinirt_pipe.so", tc_temp_dir());
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    snprintf(extra, sizeof extra, "library = %s", fifo);
    return bad_plugin_case(extra, "pipe", INFINIRT_PLUGIN_DLOPEN_ERROR, "a FIFO, not a regular file");
}

int test_loader_library_device(void)
{
    return bad_plugin_case("library = /dev/zero", "zero", INFINIRT_PLUGIN_DLOPEN_ERROR,
                           "a character device, not a regular file");
}

int test_loader_library_directory(void)
{
    char extra[700];
    snprintf(extra, sizeof extra, "library = %s", tc_temp_dir());
    return bad_plugin_case(extra, "folder", INFINIRT_PLUGIN_DLOPEN_ERROR, "a directory, not a regular file");
}

/* Copy the fake plugin to `dst`. */
static int copy_fake(const char *dst)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", FAKE_DIR "/libfake_good.so", dst);
    ASSERT_EQ(system(cmd), 0);
    return TEST_OK;
}

/* A plugin file or folder that others can change is loaded with a warning,
 * in the log and in the report. */
int test_loader_unsafe_plugin_warns(void)
{
    char dir[600], open_dir[700], wfile[800], dfile[800], ofile[800], cfg[4096];
    snprintf(dir, sizeof dir, "%s", tc_temp_dir());
    snprintf(wfile, sizeof wfile, "%s/libww.so", dir);
    CHECK(copy_fake(wfile));
    ASSERT_EQ(chmod(wfile, 0666), 0);
    snprintf(open_dir, sizeof open_dir, "%s/open", dir);
    ASSERT_EQ(mkdir(open_dir, 0755), 0);
    ASSERT_EQ(chmod(open_dir, 0777), 0); /* not sticky: anyone may replace the file */
    snprintf(dfile, sizeof dfile, "%s/libwd.so", open_dir);
    CHECK(copy_fake(dfile));
    /* Owned by someone else: only root can make that file here. */
    bool other_owner = geteuid() == 0;
    snprintf(ofile, sizeof ofile, "%s/libother.so", dir);
    CHECK(copy_fake(ofile));
    if (other_owner)
        ASSERT_EQ(chown(ofile, 4321, 4321), 0);
    /* Three plugins of one device type would be duplicates: each is
     * checked in a process of its own. */
    const char *files[] = {wfile, dfile, ofile};
    const char *want[] = {"the file is world-writable", "is world-writable", "is owned by uid 4321"};
    for (int i = 0; i < (other_owner ? 3 : 2); i++) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
            snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\n\n[plugin.unsafe]\nlibrary = %s\nanswer = 42\n",
                     CPU_PLUGIN, files[i]);
            use_config(cfg);
            infinirtPluginInfo_t pi;
            int rc = find_plugin("unsafe", &pi) >= 0 && pi.status == INFINIRT_PLUGIN_LOADED &&
                             strstr(pi.message, want[i]) != NULL && strstr(pi.message, "warning") != NULL &&
                             strstr(tc_read_file(log_path()), want[i]) != NULL
                         ? 0
                         : 1;
            if (rc != 0)
                fprintf(stderr, "case %d: status %s, message '%s'; log:\n%s\n", i,
                        infinirtGetPluginStatusString(pi.status), pi.message, tc_read_file(log_path()));
            _exit(rc);
        }
        int ws = 0;
        ASSERT_EQ(waitpid(pid, &ws, 0), pid);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            TEST_FAILED_("case %d (%s): the plugin did not load with the warning '%s'", i, files[i], want[i]);
    }
    /* A file of ours in a safe folder: no warning. */
    snprintf(cfg, sizeof cfg,
             "[plugin.cpu]\nlibrary = %s\n\n[plugin.safe]\nlibrary = " FAKE_DIR "/libfake_good.so\nanswer = 42\n",
             CPU_PLUGIN);
    use_config(cfg);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("safe", &pi), 0);
    ASSERT_EQ(pi.status, INFINIRT_PLUGIN_LOADED);
    ASSERT(strstr(pi.message, "warning") == NULL);
    if (!other_owner)
        fprintf(stderr, "not root: the case of a file owned by another user was not run\n");
    return TEST_OK;
}

/* NOT_READY is an answer, not an error: polling an event that has not
 * completed logs nothing at warn level (it flooded stderr). */
int test_loader_not_ready_is_quiet(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "[plugin.cpu]\nlibrary = %s\nstreams = async\n", CPU_PLUGIN);
    use_config(cfg);
    tc_setenv("INFINIRT_LOG", "warn");
    infinirtStream_t s;
    infinirtEvent_t a, b;
    ASSERT_OK(infinirtStreamCreate(&s));
    ASSERT_OK(infinirtEventCreate(&a));
    ASSERT_OK(infinirtEventCreate(&b));
    static tc_gate gate; /* static: the runner may open it after we return */
    ASSERT_OK(infinirtEventRecord(a, s));
    CHECK(tc_hold_stream(s, &gate));
    ASSERT_OK(infinirtEventRecord(b, s));
    infinirtEventStatus_t es;
    float ms;
    for (int i = 0; i < 100; i++) {
        ASSERT_OK(infinirtEventQuery(b, &es));
        ASSERT_EQ(es, INFINIRT_EVENT_NOT_READY);
        ASSERT_STATUS(infinirtEventElapsedTime(&ms, a, b), INFINI_STATUS_NOT_READY);
    }
    /* A real mistake next to it is still logged. */
    ASSERT_STATUS(infinirtEventElapsedTime(NULL, a, b), INFINI_STATUS_NULL_POINTER);
    tc_gate_open(&gate);
    ASSERT_OK(infinirtStreamSynchronize(s));
    ASSERT_OK(infinirtEventElapsedTime(&ms, a, b));
    const char *log = tc_read_file(log_path());
    ASSERT(log != NULL);
    ASSERT_STR_CONTAINS(log, "ms_ptr is NULL");
    if (strstr(log, "NOT_READY") != NULL || strstr(log, "not completed") != NULL)
        TEST_FAILED_("NOT_READY was logged as a warning:\n%s", log);
    ASSERT_OK(infinirtEventDestroy(a));
    ASSERT_OK(infinirtEventDestroy(b));
    ASSERT_OK(infinirtStreamDestroy(s));
    return TEST_OK;
}

/* A `library =` that names a missing file, or a file that is not a
 * plugin, is reported with the config line that named it: that line is
 * what the operator has to fix. */
int test_loader_library_names_line(void)
{
    CHECK(bad_plugin_case("library = /nonexistent/libinfinirt_ghost.so", "ghost", INFINIRT_PLUGIN_NOT_FOUND,
                          "No such file or directory; library = set at "));
    char resolved[PATH_MAX], want[PATH_MAX + 64];
    ASSERT(realpath(getenv("INFINIRT_CONFIG"), resolved) != NULL);
    snprintf(want, sizeof want, "library = set at %s:5", resolved);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("ghost", &pi), 0);
    ASSERT_STR_CONTAINS(pi.message, want);
    ASSERT_STR_CONTAINS(tc_read_file(log_path()), want);
    return TEST_OK;
}

int test_loader_library_unloadable_names_line(void)
{
    char lib[600], extra[700];
    snprintf(lib, sizeof lib, "%s/libinfinirt_text.so", tc_temp_dir());
    FILE *f = fopen(lib, "w");
    ASSERT(f != NULL);
    fputs("not a shared object\n", f);
    fclose(f);
    snprintf(extra, sizeof extra, "library = %s", lib);
    CHECK(bad_plugin_case(extra, "text", INFINIRT_PLUGIN_DLOPEN_ERROR, "; library = set at "));
    char resolved[PATH_MAX], want[PATH_MAX + 64];
    ASSERT(realpath(getenv("INFINIRT_CONFIG"), resolved) != NULL);
    snprintf(want, sizeof want, "library = set at %s:5", resolved);
    infinirtPluginInfo_t pi;
    ASSERT_GE(find_plugin("text", &pi), 0);
    ASSERT_STR_CONTAINS(pi.message, want);
    return TEST_OK;
}
