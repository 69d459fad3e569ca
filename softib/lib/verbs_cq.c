/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Verbs: completion channels and completion queues.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    struct sib_comp_channel *chan;
    int fds[2];

    chan = calloc(1, sizeof(*chan));
    if (chan == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (pipe2(fds, O_CLOEXEC) < 0) {
        free(chan);
        return NULL;
    }
    /* the engine must never block on a consumer that stopped reading */
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    chan->ibch.context = context;
    chan->ibch.fd      = fds[0];
    chan->wr_fd        = fds[1];
    return &chan->ibch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ibch)
{
    struct sib_comp_channel *chan = to_schan(ibch);

    if (ibch->refcnt != 0) {
        return EBUSY;
    }
    close(ibch->fd);
    close(chan->wr_fd);
    free(chan);
    return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
                             void *cq_context, struct ibv_comp_channel *channel,
                             int comp_vector)
{
    struct sib_cq *cq;

    if ((cqe < 1) || (cqe > SIB_MAX_CQE) || (comp_vector < 0) ||
        (comp_vector >= context->num_comp_vectors)) {
        errno = EINVAL;
        return NULL;
    }

    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    cq->size = sib_roundup_pow2((uint32_t)cqe);
    cq->ring = calloc(cq->size, sizeof(*cq->ring));
    if (cq->ring == NULL) {
        free(cq);
        errno = ENOMEM;
        return NULL;
    }
    pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
    if (channel != NULL) {
        cq->chan = to_schan(channel);
        __atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELAXED);
    }

    cq->ibcq.context    = context;
    cq->ibcq.channel    = channel;
    cq->ibcq.cq_context = cq_context;
    cq->ibcq.cqe        = (int)cq->size;
    pthread_mutex_init(&cq->ibcq.mutex, NULL);
    pthread_cond_init(&cq->ibcq.cond, NULL);
    return &cq->ibcq;
}

int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
    struct sib_cq *cq      = to_scq(ibcq);
    struct sib_engine *eng = to_sctx(ibcq->context)->eng;
    uint32_t size, i, used;
    struct ibv_wc *ring;

    if ((cqe < 1) || (cqe > SIB_MAX_CQE)) {
        return EINVAL;
    }
    size = sib_roundup_pow2((uint32_t)cqe);
    ring = calloc(size, sizeof(*ring));
    if (ring == NULL) {
        return ENOMEM;
    }

    sib_engine_lock(eng);
    pthread_spin_lock(&cq->lock);
    used = cq->head - cq->tail;
    if (used > size) {
        pthread_spin_unlock(&cq->lock);
        sib_engine_unlock(eng);
        free(ring);
        return EINVAL;
    }
    for (i = 0; i < used; i++) {
        ring[i] = cq->ring[(cq->tail + i) & (cq->size - 1)];
    }
    free(cq->ring);
    cq->ring      = ring;
    cq->size      = size;
    cq->tail      = 0;
    cq->head      = used;
    cq->ibcq.cqe  = (int)size;
    pthread_spin_unlock(&cq->lock);
    sib_engine_unlock(eng);
    return 0;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
    struct sib_cq *cq      = to_scq(ibcq);
    struct sib_engine *eng = to_sctx(ibcq->context)->eng;

    /* a concurrent engine pass may be pushing into it */
    sib_engine_lock(eng);
    sib_engine_unlock(eng);

    if (cq->chan != NULL) {
        __atomic_sub_fetch(&cq->chan->ibch.refcnt, 1, __ATOMIC_RELAXED);
    }
    pthread_spin_destroy(&cq->lock);
    pthread_mutex_destroy(&ibcq->mutex);
    pthread_cond_destroy(&ibcq->cond);
    free(cq->ring);
    free(cq);
    return 0;
}

/* The application's poll is also the device's clock when it busy-polls:
 * an empty CQ runs one engine pass (if one is due, sib_engine_poll_due(),
 * and nobody else is running one) and looks again. */
int sib_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
    struct sib_cq *cq      = to_scq(ibcq);
    struct sib_engine *eng = to_sctx(ibcq->context)->eng;
    int n;

    n = sib_cq_pop(cq, num, wc);
    if (n > 0) {
        return n;
    }

    if (sib_engine_poll_due(eng) && sib_engine_trylock(eng)) {
        sib_engine_progress(eng);
        sib_engine_unlock(eng);
    }
    return sib_cq_pop(cq, num, wc);
}

int sib_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct sib_cq *cq = to_scq(ibcq);

    pthread_spin_lock(&cq->lock);
    cq->armed = solicited_only ? 2 : 1;
    pthread_spin_unlock(&cq->lock);

    /* the application is going to sleep on the channel */
    sib_engine_app_sleeps(to_sctx(ibcq->context)->eng);
    return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                     void **cq_context)
{
    struct ibv_cq *ibcq;
    ssize_t n;

    n = read(channel->fd, &ibcq, sizeof(ibcq));
    if (n != sizeof(ibcq)) {
        if (n >= 0) {
            errno = EIO;
        }
        return -1;
    }
    *cq         = ibcq;
    *cq_context = ibcq->cq_context;
    return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}
