/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_dir.h - the process-wide pointer directory: every live segment of
 * every pool by address, so that any pointer (interior ones too) leads to
 * its segment, its pool and - locked - its arena.  Between the arenas
 * (alloc_arena.h) and the pools (alloc_pool.h): it locks arenas, and pools
 * register their segments in it.
 *
 * Lock order: the directory lock before an arena lock (see alloc_pool.h).
 */
#ifndef INFINIRT_LOADER_ALLOC_DIR_H_
#define INFINIRT_LOADER_ALLOC_DIR_H_

#include "alloc_arena.h"

/* A 64-byte aligned segment struct with arena == NULL. */
infinirt__seg *infinirt__seg_struct_new(void);
void infinirt__dir_insert(infinirt__seg *s);
/* Remove s from the directory and recycle its struct. */
void infinirt__dir_remove(infinirt__seg *s);
/* Lock the arena owning the segment holding p and return it, with the
 * segment in *seg_out; NULL when no attached segment holds p. */
infinirt__arena *infinirt__dir_lock_owner(uintptr_t p, infinirt__seg **seg_out, bool read_only);
infinirt__pool *infinirt__dir_pool_of(uintptr_t p);

#endif /* INFINIRT_LOADER_ALLOC_DIR_H_ */
