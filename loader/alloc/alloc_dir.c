/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_dir.c - the process-wide pointer directory: every live segment of
 * every pool, in an AVL tree keyed by base address, so any pointer (interior
 * ones too) leads to its segment, pool and arena.
 *
 * Pointers of different pools never overlap, so one directory serves all.
 * It changes only when a segment is obtained from or given back to a
 * backend, which is already a slow call; the hot paths avoid it entirely
 * (infinirt__pool_free tries the thread's last arena first).
 */
#define _GNU_SOURCE
#include "alloc_dir.h"
#include "alloc.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_rwlock_t g_dir_lock = PTHREAD_RWLOCK_INITIALIZER;
/* Every segment ever inserted lies in [infinirt__dir_lo, infinirt__dir_hi): a pointer outside (a
 * host buffer on the stack or the heap, the other side of most copies) is
 * answered "not ours" with no lock.  Only ever widened, under the write
 * lock; a segment is inserted before any pointer into it is handed out, so
 * a reader that holds such a pointer sees bounds that cover it. */
atomic_uintptr_t infinirt__dir_lo = UINTPTR_MAX, infinirt__dir_hi;
static infinirt__seg *g_root;
static infinirt__seg *g_seg_free; /* recycled structs; never freed */

/* ----------------------------------------------------------------- AVL */

static int height(const infinirt__seg *n)
{
    return n != NULL ? n->height : 0;
}

static void fix(infinirt__seg *n)
{
    int l = height(n->left), r = height(n->right);
    n->height = (l > r ? l : r) + 1;
}

static infinirt__seg *rot_right(infinirt__seg *n)
{
    infinirt__seg *l = n->left;
    n->left = l->right;
    l->right = n;
    fix(n);
    fix(l);
    return l;
}

static infinirt__seg *rot_left(infinirt__seg *n)
{
    infinirt__seg *r = n->right;
    n->right = r->left;
    r->left = n;
    fix(n);
    fix(r);
    return r;
}

static infinirt__seg *balance(infinirt__seg *n)
{
    fix(n);
    int bf = height(n->left) - height(n->right);
    if (bf > 1) {
        if (height(n->left->left) < height(n->left->right))
            n->left = rot_left(n->left);
        return rot_right(n);
    }
    if (bf < -1) {
        if (height(n->right->right) < height(n->right->left))
            n->right = rot_right(n->right);
        return rot_left(n);
    }
    return n;
}

static infinirt__seg *avl_insert(infinirt__seg *root, infinirt__seg *n)
{
    if (root == NULL) {
        n->left = n->right = NULL;
        n->height = 1;
        return n;
    }
    if (n->base < root->base)
        root->left = avl_insert(root->left, n);
    else
        root->right = avl_insert(root->right, n);
    return balance(root);
}

static infinirt__seg *avl_remove_min(infinirt__seg *root, infinirt__seg **min)
{
    if (root->left == NULL) {
        *min = root;
        return root->right;
    }
    root->left = avl_remove_min(root->left, min);
    return balance(root);
}

static infinirt__seg *avl_remove(infinirt__seg *root, const infinirt__seg *n)
{
    if (root == NULL)
        return NULL;
    if (n->base < root->base) {
        root->left = avl_remove(root->left, n);
    } else if (n->base > root->base) {
        root->right = avl_remove(root->right, n);
    } else {
        infinirt__seg *l = root->left, *r = root->right;
        if (r == NULL)
            return l;
        infinirt__seg *m;
        r = avl_remove_min(r, &m);
        m->left = l;
        m->right = r;
        return balance(m);
    }
    return balance(root);
}

/* The segment holding p, or NULL.  Directory read-locked. */
static infinirt__seg *avl_find(uintptr_t p)
{
    infinirt__seg *n = g_root, *best = NULL;
    while (n != NULL) {
        if (n->base <= p) {
            best = n;
            n = n->right;
        } else {
            n = n->left;
        }
    }
    if (best != NULL && p - best->base < best->size)
        return best;
    return NULL;
}

/* ----------------------------------------------------------------- API */

/* Segment structs come in chunks of SEG_CHUNK, never returned to malloc,
 * so that the hot lines of thousands of segments lie together: one struct
 * per malloc would scatter them among the program's other allocations (over
 * host memory, among the segments' own memory), and the hot paths would
 * touch a new page for every segment.  The chunks stay listed, reachable. */
#define SEG_CHUNK 256u
typedef struct seg_chunk {
    infinirt__seg s[SEG_CHUNK]; /* first: line-aligned */
    struct seg_chunk *next;
} seg_chunk;
static seg_chunk *g_seg_chunks; /* under g_dir_lock */

infinirt__seg *infinirt__seg_struct_new(void)
{
    pthread_rwlock_wrlock(&g_dir_lock);
    infinirt__seg *s = g_seg_free;
    if (s != NULL)
        g_seg_free = s->free_next;
    pthread_rwlock_unlock(&g_dir_lock);
    if (s != NULL)
        return s;
    /* Cache-line aligned: the embedded head block and the fields the free
     * path updates share the first lines. */
    _Static_assert(sizeof(infinirt__seg) % 64 == 0, "segment structs stay line-aligned in a chunk");
    seg_chunk *c = aligned_alloc(64, (sizeof *c + 63) & ~(size_t)63);
    if (c == NULL)
        return NULL;
    for (unsigned i = 0; i < SEG_CHUNK; i++)
        atomic_init(&c->s[i].arena, NULL);
    pthread_rwlock_wrlock(&g_dir_lock);
    c->next = g_seg_chunks;
    g_seg_chunks = c;
    for (unsigned i = SEG_CHUNK - 1; i > 0; i--) {
        c->s[i].free_next = g_seg_free;
        g_seg_free = &c->s[i];
    }
    pthread_rwlock_unlock(&g_dir_lock);
    return &c->s[0];
}

void infinirt__dir_insert(infinirt__seg *s)
{
    pthread_rwlock_wrlock(&g_dir_lock);
    g_root = avl_insert(g_root, s);
    if (s->base < atomic_load_explicit(&infinirt__dir_lo, memory_order_relaxed))
        atomic_store_explicit(&infinirt__dir_lo, s->base, memory_order_release);
    if (s->base + s->size > atomic_load_explicit(&infinirt__dir_hi, memory_order_relaxed))
        atomic_store_explicit(&infinirt__dir_hi, s->base + s->size, memory_order_release);
    pthread_rwlock_unlock(&g_dir_lock);
}

void infinirt__dir_remove(infinirt__seg *s)
{
    pthread_rwlock_wrlock(&g_dir_lock);
    g_root = avl_remove(g_root, s);
    s->free_next = g_seg_free;
    g_seg_free = s;
    pthread_rwlock_unlock(&g_dir_lock);
}

infinirt__arena *infinirt__dir_lock_owner(uintptr_t p, infinirt__seg **seg_out, bool read_only)
{
    infinirt__arena *a = NULL;
    if (infinirt__dir_outside(p)) {
        *seg_out = NULL;
        return NULL;
    }
    pthread_rwlock_rdlock(&g_dir_lock);
    infinirt__seg *s = avl_find(p);
    /* While the directory is read-locked the segment cannot be destroyed,
     * but it may move between arenas of its pool (steal, stream retire):
     * lock the arena it names, then check it still names it. */
    while (s != NULL) {
        a = atomic_load_explicit(&s->arena, memory_order_acquire);
        if (a == NULL)
            break; /* detached: being released or moved; holds no live block */
        if (read_only)
            infinirt__spin_lock_read(&a->lock);
        else
            infinirt__spin_lock(&a->lock);
        if (atomic_load_explicit(&s->arena, memory_order_relaxed) == a)
            break;
        infinirt__spin_unlock(&a->lock);
        a = NULL;
    }
    pthread_rwlock_unlock(&g_dir_lock);
    *seg_out = s;
    return a;
}

infinirt__pool *infinirt__dir_pool_of(uintptr_t p)
{
    if (infinirt__dir_outside(p))
        return NULL;
    pthread_rwlock_rdlock(&g_dir_lock);
    infinirt__seg *s = avl_find(p);
    infinirt__pool *pool = s != NULL ? s->pool : NULL;
    pthread_rwlock_unlock(&g_dir_lock);
    return pool;
}
