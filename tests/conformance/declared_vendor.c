/* SPDX-License-Identifier: Apache-2.0 */
/*
 * declared_vendor.c - what examples/vendor-plugin declares unsupported to
 * the conformance suite (common.h, "declared unsupported").
 */
#include "common.h"

/* launch_host_func is NULL; its device memory is the plugin's own, which
 * the suite cannot make. */
const tc_declaration tc_declared_vendor = {"vendor", TC_BIT(TC_HOST_FUNCTIONS) | TC_BIT(TC_FOREIGN_MEMORY), NULL};
