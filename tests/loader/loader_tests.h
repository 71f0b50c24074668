/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader_tests.h - what the loader tests (loader_tests.c,
 * loader_config_tests.c, loader_plugin_files_tests.c, routing_tests.c,
 * threads_tests.c) share, defined in loader_tests.c: the config and log
 * they point the loader at, and the plugin report.
 */
#ifndef INFINIRT_TEST_LOADER_TESTS_H_
#define INFINIRT_TEST_LOADER_TESTS_H_

#include "common.h"

/* The file the loader logs to (INFINIRT_LOG_FILE). */
const char *log_path(void);
/* Write a config and point the loader at it; logging goes to log_path(). */
void use_config(const char *text);
/* The plugin's report entry named `name` into *out: its index, or -1. */
int find_plugin(const char *name, infinirtPluginInfo_t *out);
/* The cpu plugin still serves: allocate, copy, free. */
int cpu_still_works(void);
/* A config with the cpu plugin and one more section [plugin.name] holding
 * `extra`: that plugin is refused with status `want` and a message holding
 * `msg_part`, the log names it, and the cpu plugin still serves. */
int bad_plugin_case(const char *extra, const char *name, infinirtPluginStatus_t want, const char *msg_part);
/* Lines of the fake plugin's ledger file; "" when it has none yet. */
const char *ledger_text(const char *path);

#endif
