/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_list.h - every test of cuda_graph_test (graph_test.c, graph_beside_capture.c), one per line; registered as
 * cuda.graph.NAME.
 */
#ifndef INFINIRT_CUDA_GRAPH_LIST_H_
#define INFINIRT_CUDA_GRAPH_LIST_H_

#define CUDA_GRAPH_LIST(X)    \
    X(replay)                 \
    X(illegal_calls)          \
    X(fork_join)              \
    X(global_capture_threads) \
    X(stream_query_capturing) \
    X(missing_symbols)

#endif
