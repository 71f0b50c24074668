/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sem.h - the semantics tester (tests/semantics): a program of stream
 * operations, a model of the ordering rules of include/infinirt.h
 * (docs/semantics.md), a generator of random programs, a runner that plays
 * a program on the library, and the check of what it read against the
 * model.
 *
 * A program is a list of operations the host issues one after another on
 * one thread.  Each operation names its objects by slot: streams, events,
 * buffers, graphs (a graph slot holds one captured graph and its one
 * executable graph).  The model (sem_model.c) turns the program into nodes -
 * the work that runs on streams - and the set of nodes each node is ordered
 * after; from that it knows, for every read, whether the rules determine
 * what it sees and, if so, which write that is.
 */
#ifndef INFINIRT_SEM_H_
#define INFINIRT_SEM_H_

#include "infinirt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEM_MAX_OPS 256
#define SEM_MAX_NODES 1024
#define SEM_MAX_STREAMS 16
#define SEM_MAX_EVENTS 8
#define SEM_MAX_BUFS 32
#define SEM_MAX_GRAPHS 4
#define SEM_MAX_TEMPLATE 8 /* operations captured into one graph */
#define SEM_MAX_DEVICES 2
#define SEM_WORDS (SEM_MAX_NODES / 64)

typedef enum {
    SEM_STREAM_CREATE,     /* s = new stream of device dev; flags: 1 = non-blocking */
    SEM_STREAM_DESTROY,    /* s */
    SEM_EVENT_CREATE,      /* e on device dev */
    SEM_EVENT_DESTROY,     /* e */
    SEM_MALLOC,            /* b = Malloc(size) on device dev */
    SEM_FREE,              /* Free(b) */
    SEM_MALLOC_ASYNC,      /* b = MallocAsync(size, s) */
    SEM_FREE_ASYNC,        /* FreeAsync(b, s) */
    SEM_MEMSET_ASYNC,      /* MemsetAsync(b, value, s) */
    SEM_H2D_ASYNC,         /* MemcpyAsync(b, pattern(value), H2D, s) */
    SEM_D2D_ASYNC,         /* MemcpyAsync(b, b2, D2D, s) */
    SEM_D2H_ASYNC,         /* MemcpyAsync(host, b, D2H, s): a read */
    SEM_MEMSET,            /* Memset(b, value) */
    SEM_H2D,               /* Memcpy(b, pattern(value), H2D) */
    SEM_D2D,               /* Memcpy(b, b2, D2D) */
    SEM_D2H,               /* Memcpy(host, b, D2H): a read */
    SEM_HOST_FN,           /* LaunchHostFunc(s, sleep value microseconds) */
    SEM_EVENT_RECORD,      /* EventRecord(e, s) */
    SEM_STREAM_WAIT,       /* StreamWaitEvent(s, e) */
    SEM_EVENT_SYNC,        /* EventSynchronize(e) */
    SEM_EVENT_QUERY,       /* EventQuery(e) */
    SEM_STREAM_SYNC,       /* StreamSynchronize(s) */
    SEM_DEVICE_SYNC,       /* SetDevice(dev); DeviceSynchronize() */
    SEM_CAPTURE_BEGIN,     /* StreamBeginCapture(s) for graph g */
    SEM_CAPTURE_END,       /* StreamEndCapture(s, &g) + GraphInstantiate */
    SEM_GRAPH_LAUNCH,      /* GraphLaunch(exec of g, s) */
    SEM_GRAPH_EXEC_DESTROY /* GraphExecDestroy and GraphDestroy of g */
} sem_kind;

typedef struct {
    sem_kind kind;
    int s;     /* stream slot (0 .. SEM_MAX_DEVICES-1: the devices' NULL streams) */
    int e;     /* event slot */
    int b, b2; /* buffer slots: b is written (or read by D2H), b2 is a D2D source */
    int g;     /* graph slot */
    int dev;
    uint32_t value; /* memset byte, pattern seed, sleep microseconds, stream flags */
    size_t size;
} sem_op;

typedef struct {
    int ndevices; /* devices the program uses */
    bool nonblocking, host_fn, events, graphs, async_alloc, peer;
    /* Only programs without a data race: every two accesses of a buffer,
     * one of them a write, are ordered (for ThreadSanitizer, which would
     * report the races the other programs contain on purpose). */
    bool race_free;
} sem_caps;

typedef struct {
    uint64_t seed;
    int nops;
    sem_op ops[SEM_MAX_OPS];
} sem_program;

/* ---- The model ---- */

typedef struct {
    uint64_t w[SEM_WORDS];
} sem_set;

/* What a node does to memory. */
typedef struct {
    int op;     /* the program operation that made it */
    int stream; /* stream slot it runs on */
    int wbuf;   /* buffer written, -1 none */
    int rbuf;   /* buffer read, -1 none */
    int kind;   /* 0 plain, 1 memset value, 2 pattern value, 3 copy of what rbuf holds */
    uint32_t value;
    int read_id; /* index in the model's reads when the host reads this node's result, else -1 */
} sem_node;

typedef enum { SEM_VAL_UNDET = 0, SEM_VAL_MEMSET, SEM_VAL_PATTERN } sem_val_kind;
typedef struct {
    sem_val_kind kind;
    uint32_t value;
} sem_value;

typedef struct {
    int node;
    int op; /* operation that made it (D2H or the final read-back) */
    int buf;
    size_t size;
    int checked_at; /* operation after which the host knew the read complete (-1: at the end) */
} sem_read;

typedef struct {
    bool live;
    bool blocking; /* NULL and created streams; non-blocking ones are not */
    bool is_null;
    bool capturing;
    int dev;
    int last;   /* last node, -1 none */
    int action; /* last node that counts for R2 (not MallocAsync/FreeAsync), -1 none */
} sem_stream_state;

typedef struct {
    bool live;
    int dev;
    int rec; /* node of the current record, -1: never recorded */
    bool recorded;
} sem_event_state;

typedef struct {
    bool live;  /* may be used by new operations */
    bool held;  /* memory not yet given back (freed buffers stay held by a graph) */
    bool async; /* from MallocAsync */
    int dev;
    size_t size;
    int alloc_node; /* MallocAsync: node on its stream; -1 usable everywhere */
    int graph;      /* captured inside graph g (private), else -1 */
    int pinned_by;  /* number of live graphs that use it */
} sem_buf_state;

typedef struct {
    bool live; /* captured and instantiated, exec not destroyed */
    bool capturing;
    int stream; /* capturing stream */
    int ntmpl;
    sem_op tmpl[SEM_MAX_TEMPLATE];
    int last_launch_node; /* last node of the previous launch, -1 none */
    bool uses[SEM_MAX_BUFS];
} sem_graph_state;

typedef struct {
    sem_caps caps;
    int nnodes;
    sem_node nodes[SEM_MAX_NODES];
    sem_set anc[SEM_MAX_NODES]; /* nodes ordered before each node */
    sem_set host;               /* nodes the host knows complete */
    sem_stream_state streams[SEM_MAX_STREAMS];
    sem_event_state events[SEM_MAX_EVENTS];
    sem_buf_state bufs[SEM_MAX_BUFS];
    sem_graph_state graphs[SEM_MAX_GRAPHS];
    int nreads;
    sem_read reads[SEM_MAX_NODES];
    /* Per operation: the nodes it made [first, first+count), for the
     * runner (which reads of an operation became known complete). */
    int op_first[SEM_MAX_OPS], op_count[SEM_MAX_OPS];
    /* Per operation: the reads the host learns complete right after it. */
    int error_op; /* first operation the model refused, -1 none */
} sem_model;

void sem_model_init(sem_model *m, const sem_caps *caps);
/* Whether op may come next in the program (the rules for a well-formed
 * program: live objects, memory used only where its allocation is ordered
 * before, freed only after every use is ordered before the free, ...). */
bool sem_model_legal(const sem_model *m, const sem_op *op);
/* Apply op (which must be legal): add its nodes and orders.  op_index is
 * its place in the program. */
void sem_model_apply(sem_model *m, const sem_op *op, int op_index);
/* As sem_model_apply, with EventQuery's answer (complete): an answer of
 * COMPLETE tells the host the record's work has completed (R4). */
void sem_model_apply_answer(sem_model *m, const sem_op *op, int op_index, bool complete);
/* After the last operation: the final read-back of every buffer still
 * held (a node ordered after everything). */
void sem_model_finish(sem_model *m, int op_index);
/* What read r must see: SEM_VAL_UNDET where the rules leave it open. */
sem_value sem_model_expect(const sem_model *m, int r);
/* The byte at offset i of a buffer holding v. */
unsigned char sem_value_byte(sem_value v, size_t i);
/* Whether event e's current record is known complete to the host. */
bool sem_model_event_known(const sem_model *m, int e);
/* Replay prog through the model, dropping the operations that are not
 * legal where they stand (after the shrinker removed others); returns the
 * number kept. */
int sem_program_legalize(sem_program *prog, const sem_caps *caps);

/* ---- Generator, runner, printer ---- */

void sem_generate(sem_program *prog, const sem_caps *caps, uint64_t seed, int nops);

/* A read that saw what the rules forbid. */
typedef struct {
    int op; /* the D2H operation (prog->nops: the final read-back) */
    int buf;
    int checked_at; /* the operation after which the host knew it complete */
    size_t size;
    sem_value want;
} sem_bad_read;

typedef struct {
    int failures;
    char first[512]; /* the first failure, in words */
    sem_bad_read bad[8];
    int nbad;
    int bad_op;            /* operation whose status or answer was wrong, -1 none */
    int reads, determined; /* reads made, and those the rules determine */
} sem_result;

/* Play prog on the library (device type `type`) and check every read the
 * model determines.  Returns false on a setup failure (with a message). */
bool sem_run(const sem_program *prog, const sem_caps *caps, infiniDevice_t type, sem_result *res);
void sem_print_c(const sem_program *prog, const sem_caps *caps, infiniDevice_t type, const sem_result *res,
                 const char *config);
const char *sem_kind_name(sem_kind k);

static inline bool sem_set_has(const sem_set *s, int i)
{
    return (s->w[i >> 6] >> (i & 63)) & 1u;
}
static inline void sem_set_add(sem_set *s, int i)
{
    s->w[i >> 6] |= (uint64_t)1 << (i & 63);
}
static inline void sem_set_or(sem_set *a, const sem_set *b)
{
    for (int i = 0; i < SEM_WORDS; i++)
        a->w[i] |= b->w[i];
}

#endif
