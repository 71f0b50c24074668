/* SPDX-License-Identifier: Apache-2.0 */
/* selftest_list.h - the harness's own tests (selftest.c), one per line. */
#ifndef INFINIRT_SELFTEST_LIST_H_
#define INFINIRT_SELFTEST_LIST_H_

#define SELFTEST_LIST(X) \
    X(selftest, pass)    \
    X(selftest, fail)    \
    X(selftest, skip)    \
    X(selftest, hang)    \
    X(selftest, thread_fail)

#endif
