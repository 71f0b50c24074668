/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_fuzz.c - libFuzzer harness over infinirt-trace's reader
 * (tools/trace: the JSON reader, the trace model) and its writers (the
 * summary and the HTML page, written to /dev/null).
 *
 * Built only with clang and -DINFINIRT_FUZZ=ON (tests/fuzz/CMakeLists.txt),
 * with -fsanitize=fuzzer,address,undefined.  Seeds: tests/trace/fixtures
 * (the tests' traces, valid, cut short and malformed); trace.dict gives the
 * format's words.  ./dev test runs it for a bounded time; by hand:
 *   build-fuzz/bin/infinirt-trace-fuzz -dict=tests/fuzz/trace.dict -max_total_time=600 \
 *       CORPUS_COPY tests/trace/fixtures
 *
 * Beside the sanitizers' checks: input that is refused has a message, and
 * a model read keeps its promises (trace_check_model).
 */
#include "trace.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (null == NULL && (null = fopen("/dev/null", "w")) == NULL)
        abort();
    trace_model m;
    trace_error err;
    if (trace_load(&m, (const char *)data, size, &err) == 0) {
        if (trace_check_model(&m, size) != NULL)
            abort();
        if (trace_print_summary(null, &m, "fuzz") != 0 || trace_write_html(null, &m, "fuzz") != 0)
            abort();
    } else if (err.msg[0] == '\0') {
        abort();
    }
    trace_free(&m);
    return 0;
}
