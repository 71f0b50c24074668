/* SPDX-License-Identifier: Apache-2.0 */
/*
 * declared_cuda.c - what the CUDA plugin declares unsupported to the
 * conformance suite (common.h, "declared unsupported").
 */
#include "common.h"

/* The suite links no CUDA: it makes no CUDA memory of its own. */
const tc_declaration tc_declared_cuda = {"cuda", TC_BIT(TC_FOREIGN_MEMORY), NULL};
