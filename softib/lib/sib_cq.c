/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Completion queue ring. The engine produces (under the engine lock), the
 * application consumes; cq->lock covers only the ring indices and entries.
 */
#include "sib_loc.h"
#include "sib_log.h"

#include <unistd.h>


/* Engine lock held. solicited: the completion may satisfy a
 * solicited-only notification request (IBA 11.4.2.2: a solicited receive
 * or any error). */
void sib_cq_push(struct sib_cq *cq, const struct ibv_wc *wc, int solicited)
{
    struct sib_comp_channel *chan = NULL;
    int overflow = 0;

    pthread_spin_lock(&cq->lock);
    if (cq->head - cq->tail == cq->size) {
        overflow = !cq->overflow;
        cq->overflow = 1;
    } else {
        cq->ring[cq->head & (cq->size - 1)] = *wc;
        cq->head++;
        if ((cq->armed == 1) || ((cq->armed == 2) && solicited)) {
            cq->armed = 0;
            chan      = cq->chan;
        }
    }
    pthread_spin_unlock(&cq->lock);

    if (chan != NULL) {
        struct ibv_cq *ibcq = &cq->ibcq;

        if (write(chan->wr_fd, &ibcq, sizeof(ibcq)) != sizeof(ibcq)) {
            sib_log_warn("cannot signal completion channel: %m");
        }
    }
    if (overflow) {
        sib_log_error("cq %p overflow: completion lost", (void*)cq);
        sib_async_event(to_sctx(cq->ibcq.context), IBV_EVENT_CQ_ERR, cq);
    }
}

int sib_cq_pop(struct sib_cq *cq, int num, struct ibv_wc *wc)
{
    int n = 0;

    pthread_spin_lock(&cq->lock);
    while ((n < num) && (cq->tail != cq->head)) {
        wc[n++] = cq->ring[cq->tail & (cq->size - 1)];
        cq->tail++;
    }
    pthread_spin_unlock(&cq->lock);
    return n;
}
