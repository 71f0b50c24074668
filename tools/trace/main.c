/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - infinirt-trace, the summary of a trace the runtime wrote
 * (INFINIRT_TRACE=FILE; docs/tracing.md, man infinirt-trace):
 *
 *   infinirt-trace FILE              the summary, on stdout
 *   infinirt-trace --html OUT FILE   the summary, and the page OUT
 *   infinirt-trace --help|--version
 *
 * Exit status: 0 the summary was printed (a trace cut short too, with a
 * warning on stderr); 1 the trace cannot be read (missing, malformed: the
 * message gives the byte offset, not a trace) or the page cannot be
 * written; 2 a wrong command line.  It does not load libinfinirt.so.
 */
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef INFINIRT_VERSION_STRING
#define INFINIRT_VERSION_STRING "unknown"
#endif

static void usage(FILE *to, const char *prog)
{
    fprintf(to,
            "usage: %s [--html OUT] FILE\n"
            "       %s --help | --version\n"
            "Summarise FILE, a trace infinirt wrote (INFINIRT_TRACE=FILE): per call name the count,\n"
            "total, mean, p50, p99 and max time; per stream its busy time and idle gaps; per device\n"
            "the allocator's peaks and event counts; the events the writer dropped.  Times in us.\n"
            "  --html OUT     also write OUT, one self-contained HTML page: the memory timeline of\n"
            "                 each device and the lanes of the streams and threads, zoomable\n"
            "  -h, --help     this text\n"
            "  -V, --version  the version\n"
            "Exit status: 0 summary printed (also for a trace cut short, with a warning);\n"
            "1 the trace cannot be read or the page cannot be written; 2 a wrong command line.\n",
            prog, prog);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int main(int argc, char **argv)
{
    const char *prog = base_name(argv[0]);
    const char *html = NULL, *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout, prog);
            return 0;
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            printf("%s infinirt %s\n", prog, INFINIRT_VERSION_STRING);
            return 0;
        }
        if (strcmp(a, "--html") == 0 || strncmp(a, "--html=", 7) == 0) {
            const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (v == NULL || *v == '\0') {
                fprintf(stderr, "%s: --html needs a file name\n", prog);
                usage(stderr, prog);
                return 2;
            }
            html = v;
        } else if (strcmp(a, "--") == 0 && i + 2 == argc && file == NULL) {
            file = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "%s: unknown option %s\n", prog, a);
            usage(stderr, prog);
            return 2;
        } else if (file == NULL) {
            file = a;
        } else {
            fprintf(stderr, "%s: one trace file at a time (%s, then %s)\n", prog, file, a);
            usage(stderr, prog);
            return 2;
        }
    }
    if (file == NULL) {
        fprintf(stderr, "%s: no trace file given\n", prog);
        usage(stderr, prog);
        return 2;
    }

    trace_error err;
    char *data;
    size_t len;
    if (trace_read_file(file, &data, &len, &err) != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, file, err.msg);
        return 1;
    }
    trace_model m;
    int rc = trace_load(&m, data, len, &err);
    free(data);
    if (rc != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, file, err.msg);
        trace_free(&m);
        return 1;
    }
    if (m.truncated)
        fprintf(stderr,
                "%s: warning: %s is cut short at byte %zu (%s), as a trace is after a crash: "
                "summarising the %llu events before the cut\n",
                prog, file, m.truncated_at, m.truncated_what, (unsigned long long)m.events);
    int status = 0;
    if (trace_print_summary(stdout, &m, file) != 0 || fflush(stdout) != 0) {
        fprintf(stderr, "%s: cannot write the summary: %s\n", prog, strerror(errno));
        status = 1;
    }
    if (html != NULL) {
        FILE *out = fopen(html, "w");
        if (out == NULL) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, html, strerror(errno));
            status = 1;
        } else {
            int wrc = trace_write_html(out, &m, file);
            if (fclose(out) != 0 || wrc != 0) {
                fprintf(stderr, "%s: cannot write %s: %s\n", prog, html, strerror(errno));
                status = 1;
            }
        }
    }
    trace_free(&m);
    return status;
}
