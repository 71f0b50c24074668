/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc_dir.c - the process-wide pointer directory: every live segment of
 * every pool, in an AVL tree keyed by base address, so any pointer (interior
 * ones too) leads to its segment, pool and arena; and beside it the page
 * directory (alloc.h), which answers "no pool's" for any other address in
 * a few loads and no lock.
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
 * answered "not ours" with two loads.  Only ever widened, under the write
 * lock; a segment is inserted before any pointer into it is handed out, so
 * a reader that holds such a pointer sees bounds that cover it.  Inside
 * them, the page directory answers (alloc.h). */
atomic_uintptr_t infinirt__dir_lo = UINTPTR_MAX, infinirt__dir_hi;
infinirt__pd_node infinirt__pd_top;
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

/* ------------------------------------------------------- page directory */

/* The page directory (alloc.h) is kept, under the write lock, a superset
 * of what the live segments cover, page by page:
 *  - a page wholly inside a segment is covered by it alone: marked whole
 *    when the segment is inserted, emptied when it is removed (an upper
 *    slot whose whole range is such pages takes INFINIRT__PD_FULL or 0
 *    instead, unless it already holds a node);
 *  - a page a segment covers only in part (its first and last) may be
 *    shared: its slot is computed again from the tree (pd_page_value)
 *    whenever a segment touching it comes or goes.
 * A node that cannot be allocated leaves its slot INFINIRT__PD_FULL:
 * slower answers for that range, never wrong ones. */

#define PD_PAGE_SHIFT 12u
#define PD_PAGE ((uint64_t)1 << PD_PAGE_SHIFT)
#define PD_LEVEL_BITS INFINIRT__PD_BITS
#define PD_TOP_LEVEL 3u /* the levels: 3 (top) .. 0 (leaves) */

/* A leaf slot covering the whole page. */
#define PD_LEAF_ALL infinirt__pd_leaf(0, (unsigned)PD_PAGE, 0, 0)

/* The intervals of one page, streamed in address order: the first start,
 * the last end and the widest gap between two of them. */
typedef struct {
    uint64_t first, end, gap_lo, gap_hi;
    bool any;
} pd_acc;

static void pd_acc_add(pd_acc *acc, uint64_t a, uint64_t b)
{
    if (!acc->any) {
        acc->first = a;
        acc->any = true;
    } else if (a - acc->end > acc->gap_hi - acc->gap_lo) {
        acc->gap_lo = acc->end;
        acc->gap_hi = a;
    }
    acc->end = b;
}

/* Every segment overlapping [lo, hi), in address order, into acc as
 * offsets from lo.  Segments never overlap: one whose base is at or below
 * lo ends at or before the base of any other above it. */
static void pd_visit(const infinirt__seg *n, uint64_t lo, uint64_t hi, pd_acc *acc)
{
    if (n == NULL)
        return;
    uint64_t b = n->base, e = b + n->size;
    if (b > lo)
        pd_visit(n->left, lo, hi, acc);
    if (b < hi && e > lo)
        pd_acc_add(acc, (b > lo ? b : lo) - lo, (e < hi ? e : hi) - lo);
    if (b < hi)
        pd_visit(n->right, lo, hi, acc);
}

/* What the slot of page `page` must hold for the segments now in the tree:
 * exact for up to two intervals; for more, the hull split at its widest
 * gap. */
static uint64_t pd_page_value(uint64_t page)
{
    pd_acc acc = {0, 0, 0, 0, false};
    pd_visit(g_root, page << PD_PAGE_SHIFT, (page + 1) << PD_PAGE_SHIFT, &acc);
    if (!acc.any)
        return 0;
    if (acc.gap_hi == acc.gap_lo)
        return infinirt__pd_leaf((unsigned)acc.first, (unsigned)acc.end, 0, 0);
    return infinirt__pd_leaf((unsigned)acc.first, (unsigned)acc.gap_lo, (unsigned)acc.gap_hi, (unsigned)acc.end);
}

/* A node whose slots all hold `fill`; NULL without memory.  Never freed: a
 * reader may hold it. */
static infinirt__pd_node *pd_node_new(uint64_t fill)
{
    infinirt__pd_node *n = malloc(sizeof *n);
    if (n != NULL)
        for (unsigned i = 0; i < INFINIRT__PD_SLOTS; i++)
            atomic_init(&n->e[i], fill);
    return n;
}

/* The node below upper slot *e of level `level`, made when needed: where
 * the slot is 0 and coverage is to be added (`grow`), a node of empty
 * slots; where it is INFINIRT__PD_FULL and coverage is to be taken away
 * (`shrink`), a node of full ones.  NULL when there is nothing to do below
 * the slot (it already says what is wanted), or no memory: then a slot to
 * grow becomes INFINIRT__PD_FULL. */
static infinirt__pd_node *pd_below(_Atomic(uint64_t) *e, unsigned level, bool grow, bool shrink)
{
    uint64_t v = atomic_load_explicit(e, memory_order_relaxed); /* only writers, under the lock, change it */
    if (v > INFINIRT__PD_FULL)
        return (infinirt__pd_node *)(uintptr_t)v;
    if (v == 0 ? !grow : !shrink)
        return NULL;
    infinirt__pd_node *n = pd_node_new(v == 0 ? 0 : level == 1 ? PD_LEAF_ALL : INFINIRT__PD_FULL);
    if (n == NULL) {
        if (v == 0)
            atomic_store_explicit(e, INFINIRT__PD_FULL, memory_order_release);
        return NULL;
    }
    /* Release: a reader that finds the node sees its slots. */
    atomic_store_explicit(e, (uint64_t)(uintptr_t)n, memory_order_release);
    return n;
}

/* Pages [lo, hi) among the slots of node n of level `level` (0: leaves),
 * whose first page is `base`: each made whole (full) or empty. */
static void pd_fill(infinirt__pd_node *n, unsigned level, uint64_t base, uint64_t lo, uint64_t hi, bool full)
{
    unsigned shift = PD_LEVEL_BITS * level;
    for (uint64_t i = (lo - base) >> shift, last = (hi - 1 - base) >> shift; i <= last; i++) {
        _Atomic(uint64_t) *e = &n->e[i];
        if (level == 0) {
            atomic_store_explicit(e, full ? PD_LEAF_ALL : 0, memory_order_release);
            continue;
        }
        uint64_t slo = base + (i << shift), shi = slo + ((uint64_t)1 << shift);
        if (lo <= slo && shi <= hi && atomic_load_explicit(e, memory_order_relaxed) <= INFINIRT__PD_FULL) {
            atomic_store_explicit(e, full ? INFINIRT__PD_FULL : 0, memory_order_release);
            continue;
        }
        infinirt__pd_node *c = pd_below(e, level, full, !full);
        if (c != NULL)
            pd_fill(c, level - 1, slo, lo > slo ? lo : slo, hi < shi ? hi : shi, full);
    }
}

/* Page `page`'s leaf slot computed again from the tree. */
static void pd_refresh(uint64_t page)
{
    uint64_t v = pd_page_value(page);
    infinirt__pd_node *n = &infinirt__pd_top;
    for (unsigned level = PD_TOP_LEVEL; level > 0 && n != NULL; level--)
        n = pd_below(&n->e[(page >> (PD_LEVEL_BITS * level)) & (INFINIRT__PD_SLOTS - 1)], level, v != 0,
                     v != PD_LEAF_ALL);
    if (n != NULL)
        atomic_store_explicit(&n->e[page & (INFINIRT__PD_SLOTS - 1)], v, memory_order_release);
}

/* The pages of segment s (in the tree when `live`, out of it when not)
 * brought in line with the tree: its whole pages made whole or empty, its
 * partial ones computed again. */
static void pd_update(const infinirt__seg *s, bool live)
{
    uint64_t b = s->base, e = b + s->size;
    if (s->size == 0 || b >= INFINIRT__PD_LIMIT)
        return; /* past the page directory: the span check alone answers */
    if (e > INFINIRT__PD_LIMIT || e < b)
        e = INFINIRT__PD_LIMIT;
    uint64_t first = b >> PD_PAGE_SHIFT, last = (e - 1) >> PD_PAGE_SHIFT;
    uint64_t wlo = (b + PD_PAGE - 1) >> PD_PAGE_SHIFT, whi = e >> PD_PAGE_SHIFT; /* whole pages */
    if (wlo < whi)
        pd_fill(&infinirt__pd_top, PD_TOP_LEVEL, 0, wlo, whi, live);
    if (first < wlo || whi <= first)
        pd_refresh(first);
    if (last != first && whi <= last)
        pd_refresh(last);
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
    pd_update(s, true);
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
    pd_update(s, false);
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
