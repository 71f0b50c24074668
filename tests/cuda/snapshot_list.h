/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot_list.h - every test of cuda_snapshot_test (snapshot_test.c), one per line; registered as
 * cuda.snapshot.NAME.
 */
#ifndef INFINIRT_CUDA_SNAPSHOT_LIST_H_
#define INFINIRT_CUDA_SNAPSHOT_LIST_H_

#define CUDA_SNAPSHOT_LIST(X) \
    X(nvml_by_uuid)           \
    X(nvml_pci_fallback)      \
    X(nvml_unlisted_device)   \
    X(no_nvml)                \
    X(nvml_init_fails)        \
    X(nvml_rates_fail)        \
    X(nvml_threads)

#endif
