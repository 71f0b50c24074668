/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl_hostfn.c - host functions in stream order.
 *
 * OpenCL has no "run this on the host in queue order", so it is built from
 *   M = marker on the queue            completes when earlier work has
 *   clSetEventCallback(M, CL_COMPLETE) hands the job to the stream's thread
 *   barrier on the queue waiting on U  later work waits for the job
 * and the stream's thread runs fn, then completes user event U.  clFinish
 * waits for the barrier, hence for fn.
 *
 * Why a thread of our own rather than running fn in the callback: drivers
 * call event callbacks from whatever thread notices completion.  PoCL calls
 * them from its device worker threads (a slow fn would stall the device)
 * and, when M is already complete, from clSetEventCallback itself, that is
 * in the caller of launch_host_func, which must never run fn.  So the
 * callback only queues the job.  One thread per stream that uses host
 * functions keeps host functions of different streams independent.
 */
#include "opencl_internal.h"

#include <stdlib.h>

typedef struct host_job {
    infinirtPluginHostFn fn;
    infinirtPluginHostFn discard; /* instead of fn when it is skipped; may be NULL */
    void *user_data;
    cl_event user; /* U; the job owns one reference */
    cl_int status; /* M's final status */
    opencl__hostq *q;
    struct host_job *next;
} host_job;

struct opencl__hostq {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* jobs arrived, or stop */
    pthread_cond_t idle; /* pending reached 0 */
    host_job *head, *tail;
    size_t pending; /* enqueued and not yet run */
    int stop;
};

static void run_job(host_job *job)
{
    cl_event user = job->user;
    cl_int status = job->status;

    if (status == CL_COMPLETE) {
        job->fn(job->user_data);
    } else {
        opencl__log(INFINIRT_PLUGIN_LOG_ERROR,
                    "host function not run: earlier work on its stream failed with %s (%d)",
                    opencl__cl_error_name(status), (int)status);
        if (job->discard != NULL)
            job->discard(job->user_data);
    }
    free(job);
    /* A failure propagates: work queued after the function is terminated. */
    clSetUserEventStatus(user, status == CL_COMPLETE ? CL_COMPLETE : status);
    clReleaseEvent(user);
}

static void *worker(void *p)
{
    opencl__hostq *q = p;

    pthread_mutex_lock(&q->lock);
    for (;;) {
        host_job *job;

        while (q->head == NULL && !q->stop)
            pthread_cond_wait(&q->cond, &q->lock);
        if (q->head == NULL)
            break;
        job = q->head;
        q->head = job->next;
        if (q->head == NULL)
            q->tail = NULL;
        pthread_mutex_unlock(&q->lock);
        run_job(job);
        pthread_mutex_lock(&q->lock);
        if (--q->pending == 0)
            pthread_cond_broadcast(&q->idle);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* The marker's callback: queue the job and return at once. */
static void CL_CALLBACK post_job(cl_event marker, cl_int status, void *p)
{
    host_job *job = p;
    opencl__hostq *q = job->q;

    (void)marker;
    job->status = status;
    job->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->tail != NULL)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

static infiniStatus_t hostq_get(opencl__stream *s, opencl__hostq **out)
{
    opencl__hostq *q;
    infiniStatus_t st = INFINI_STATUS_SUCCESS;

    pthread_mutex_lock(&s->dev->lock);
    q = s->hostq;
    if (q == NULL) {
        q = calloc(1, sizeof *q);
        if (q == NULL) {
            st = INFINI_STATUS_OUT_OF_MEMORY;
            goto out;
        }
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->cond, NULL);
        pthread_cond_init(&q->idle, NULL);
        if (pthread_create(&q->thread, NULL, worker, q) != 0) {
            opencl__log(INFINIRT_PLUGIN_LOG_ERROR,
                        "launch_host_func: cannot start the stream's host-function thread");
            pthread_cond_destroy(&q->idle);
            pthread_cond_destroy(&q->cond);
            pthread_mutex_destroy(&q->lock);
            free(q);
            q = NULL;
            st = INFINI_STATUS_OUT_OF_MEMORY;
            goto out;
        }
        s->hostq = q;
    }
out:
    pthread_mutex_unlock(&s->dev->lock);
    *out = q;
    return st;
}

void opencl__hostq_stop(opencl__stream *s)
{
    opencl__hostq *q = s->hostq;

    if (q == NULL)
        return;
    pthread_mutex_lock(&q->lock);
    /* Callbacks may trail clFinish; wait until every job has run. */
    while (q->pending > 0)
        pthread_cond_wait(&q->idle, &q->lock);
    q->stop = 1;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->idle);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q);
    s->hostq = NULL;
}

infiniStatus_t opencl__enqueue_host_fn(opencl__stream *s, infinirtPluginHostFn fn, infinirtPluginHostFn discard,
                                       void *user_data)
{
    host_job *job;
    opencl__hostq *q;
    cl_event user, marker = NULL;
    infiniStatus_t st;
    cl_int err = CL_SUCCESS;

    if ((st = hostq_get(s, &q)) != INFINI_STATUS_SUCCESS)
        return st;
    job = malloc(sizeof *job);
    if (job == NULL)
        return INFINI_STATUS_OUT_OF_MEMORY;
    user = clCreateUserEvent(s->dev->context, &err);
    if (user == NULL) {
        free(job);
        return opencl__cl_fail_alloc("clCreateUserEvent", err);
    }
    err = clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &marker);
    if (err != CL_SUCCESS) {
        st = opencl__cl_fail("clEnqueueMarkerWithWaitList", err);
        goto fail_marker;
    }
    *job = (host_job){.fn = fn, .discard = discard, .user_data = user_data, .user = user, .q = q};
    /* Our own reference: the job may run and drop its one before the
     * barrier below is enqueued. */
    clRetainEvent(user);
    pthread_mutex_lock(&q->lock);
    q->pending++;
    pthread_mutex_unlock(&q->lock);
    err = clSetEventCallback(marker, CL_COMPLETE, post_job, job);
    if (err != CL_SUCCESS) {
        st = opencl__cl_fail("clSetEventCallback", err);
        pthread_mutex_lock(&q->lock);
        if (--q->pending == 0)
            pthread_cond_broadcast(&q->idle);
        pthread_mutex_unlock(&q->lock);
        clReleaseEvent(user); /* the job's reference */
        goto fail_callback;
    }
    err = clEnqueueBarrierWithWaitList(s->queue, 1, &user, NULL);
    if (err != CL_SUCCESS)
        st = opencl__cl_fail("clEnqueueBarrierWithWaitList", err);
    clReleaseEvent(user);
    clReleaseEvent(marker);
    clFlush(s->queue);
    return st;

fail_callback:
    clReleaseEvent(marker);
fail_marker:
    clReleaseEvent(user);
    free(job);
    return st;
}
