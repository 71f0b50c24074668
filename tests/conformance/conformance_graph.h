/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance_graph.h - what the graph conformance tests
 * (conformance_graph.c, conformance_graph_memory.c,
 * conformance_graph_misuse.c) share, defined in conformance_graph.c.
 */
#ifndef INFINIRT_TEST_CONFORMANCE_GRAPH_H_
#define INFINIRT_TEST_CONFORMANCE_GRAPH_H_

#include "common.h"

#define N 4096 /* bytes moved by the captured copies */

/* infinirtMallocHost of n bytes, filled with `fill`. */
int pinned(unsigned char **h, size_t n, int fill);
/* Every byte of h[0..n) is v. */
int host_all(const unsigned char *h, size_t n, unsigned char v);
/* The stream works: a copy queued on it round-trips through d. */
int stream_works(infinirtStream_t s, void *d, unsigned seed);
/* Instantiate as InfiniCore does; on success the node is NULL and the log
 * empty. */
int instantiate(infinirtGraphExec_t *x, infinirtGraph_t g);
/* End a capture that must have succeeded. */
int end_ok(infinirtStream_t s, infinirtGraph_t *g);

#endif
