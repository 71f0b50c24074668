/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lifecycle_list.h - every test of lifecycle-test (lifecycle_test.c), one
 * per line; registered as loader.lifecycle.NAME, and as cuda.lifecycle.NAME
 * on the CUDA plugin over the fake driver.
 */
#ifndef INFINIRT_LIFECYCLE_LIST_H_
#define INFINIRT_LIFECYCLE_LIST_H_

#define LIFECYCLE_LIST(X) \
    X(fork_exit)          \
    X(fork_child_calls)   \
    X(fork_before_init)   \
    X(after_exit)

#endif
