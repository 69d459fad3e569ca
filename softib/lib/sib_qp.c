/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Queue pairs inside the engine: the receive rings (of a QP or an SRQ), the
 * send queue's allocation, the QP table, and the QP state machine (IBA
 * 10.3: which transitions are allowed, which attributes each requires, the
 * reset, and the move to the error state that flushes the queues). The
 * engines (sib_req.c, sib_resp.c, sib_comp.c) call in here; the ibv_*
 * entry points in verbs_qp.c are thin shims over it.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SIB_MIN_INLINE   64

static uint32_t sib_align8(uint32_t n)
{
    return (n + 7) & ~7u;
}

int sib_rq_init(struct sib_rq *rq, uint32_t max_wr, uint32_t max_sge)
{
    rq->max_wr   = max_wr ? max_wr : 1;
    rq->max_sge  = max_sge ? max_sge : 1;
    rq->size     = sib_roundup_pow2(rq->max_wr);
    rq->wqe_size = sib_align8(sizeof(struct sib_recv_wqe) +
                              rq->max_sge * sizeof(struct ibv_sge));
    rq->head     = 0;
    rq->tail     = 0;
    rq->ring     = calloc(rq->size, rq->wqe_size);
    if (rq->ring == NULL) {
        return -ENOMEM;
    }
    pthread_spin_init(&rq->lock, PTHREAD_PROCESS_PRIVATE);
    return 0;
}

void sib_rq_cleanup(struct sib_rq *rq)
{
    if (rq->ring != NULL) {
        pthread_spin_destroy(&rq->lock);
        free(rq->ring);
    }
}

/* Producer side of a receive queue; the responder consumes. */
int sib_rq_post(struct sib_rq *rq, struct ibv_recv_wr *wr,
                struct ibv_recv_wr **bad_wr)
{
    struct sib_recv_wqe *wqe;
    uint32_t i;
    int ret = 0;

    pthread_spin_lock(&rq->lock);
    for (; wr != NULL; wr = wr->next) {
        if (rq->head - rq->tail >= rq->max_wr) {
            ret = ENOMEM;
        } else if ((uint32_t)wr->num_sge > rq->max_sge) {
            ret = EINVAL;
        }
        if (ret != 0) {
            *bad_wr = wr;
            break;
        }

        wqe          = sib_rq_wqe(rq, rq->head);
        wqe->wr_id   = wr->wr_id;
        wqe->num_sge = (uint32_t)wr->num_sge;
        wqe->length  = 0;
        for (i = 0; i < wqe->num_sge; i++) {
            wqe->sge[i]  = wr->sg_list[i];
            wqe->length += wr->sg_list[i].length;
        }
        rq->head++;
    }
    pthread_spin_unlock(&rq->lock);
    return ret;
}

int sib_qp_check_caps(enum ibv_qp_type type, struct ibv_qp_cap *cap)
{
    if ((type != IBV_QPT_RC) && (type != IBV_QPT_UD)) {
        return EOPNOTSUPP;
    }
    if ((cap->max_send_wr > SIB_MAX_QP_WR) ||
        (cap->max_recv_wr > SIB_MAX_QP_WR) ||
        (cap->max_send_sge > SIB_MAX_SGE) ||
        (cap->max_recv_sge > SIB_MAX_SGE) ||
        (cap->max_inline_data > SIB_MAX_INLINE)) {
        return EINVAL;
    }
    return 0;
}

int sib_qp_alloc_queues(struct sib_qp *qp, struct ibv_qp_cap *cap)
{
    struct sib_sq *sq = &qp->sq;
    uint32_t data;

    sq->max_wr     = cap->max_send_wr ? cap->max_send_wr : 1;
    sq->max_sge    = cap->max_send_sge ? cap->max_send_sge : 1;
    sq->max_inline = (cap->max_inline_data > SIB_MIN_INLINE) ?
                     cap->max_inline_data : SIB_MIN_INLINE;
    sq->size       = sib_roundup_pow2(sq->max_wr);
    data           = sq->max_sge * sizeof(struct ibv_sge);
    if (data < sq->max_inline) {
        data = sq->max_inline;
    }
    sq->wqe_size = sib_align8(sizeof(struct sib_send_wqe) + data);
    sq->ring     = calloc(sq->size, sq->wqe_size);
    if (sq->ring == NULL) {
        return -ENOMEM;
    }

    qp->resp.wqe = malloc(sizeof(struct sib_recv_wqe) +
                          SIB_MAX_SGE * sizeof(struct ibv_sge));
    if (qp->resp.wqe == NULL) {
        return -ENOMEM;
    }

    if (qp->srq == NULL) {
        return sib_rq_init(&qp->rq, cap->max_recv_wr, cap->max_recv_sge);
    }
    return 0;
}

void sib_qp_free(struct sib_qp *qp)
{
    sib_rq_cleanup(&qp->rq);
    free(qp->resp.wqe);
    free(qp->sq.ring);
    free(qp->wr_pool);
    free(qp);
}

/* Engine lock held. A QP number in the context's slot: slot << 12 | index.
 * Indices rotate so a number is reused as late as possible. */
int sib_qp_register(struct sib_context *ctx, struct sib_qp *qp)
{
    uint32_t i, idx;

    for (i = 0; i < SIB_QPS_PER_SLOT; i++) {
        idx = (ctx->qp_next + i) % SIB_QPS_PER_SLOT;
        if (ctx->qp_table[idx] == NULL) {
            pthread_mutex_lock(&ctx->qp_table_lock);
            qp->ibqpx.qp_base.qp_num = (ctx->slot << SIB_QPN_SLOT_SHIFT) |
                                       idx;
            ctx->qp_table[idx] = qp;
            pthread_mutex_unlock(&ctx->qp_table_lock);
            ctx->qp_next       = idx + 1;
            return 0;
        }
    }
    return -ENOSPC;
}

/* Attributes each transition must carry, IBA 11.2.4.2 table 93 */
int sib_qp_required(enum ibv_qp_type type, enum ibv_qp_state cur,
                    enum ibv_qp_state next)
{
    int rc = (type == IBV_QPT_RC);

    if ((cur == IBV_QPS_RESET) && (next == IBV_QPS_INIT)) {
        return IBV_QP_PKEY_INDEX | IBV_QP_PORT |
               (rc ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY);
    }
    if ((cur == IBV_QPS_INIT) && (next == IBV_QPS_RTR)) {
        return rc ? (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                     IBV_QP_MIN_RNR_TIMER) : 0;
    }
    if ((cur == IBV_QPS_RTR) && (next == IBV_QPS_RTS)) {
        return IBV_QP_SQ_PSN |
               (rc ? (IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                      IBV_QP_MAX_QP_RD_ATOMIC) : 0);
    }
    return 0;
}

int sib_qp_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state next)
{
    if ((next == IBV_QPS_RESET) || (next == IBV_QPS_ERR)) {
        return 1;
    }
    switch (cur) {
    case IBV_QPS_RESET:
        return next == IBV_QPS_INIT;
    case IBV_QPS_INIT:
        return (next == IBV_QPS_INIT) || (next == IBV_QPS_RTR);
    case IBV_QPS_RTR:
        return next == IBV_QPS_RTS;
    case IBV_QPS_RTS:
        return (next == IBV_QPS_RTS) || (next == IBV_QPS_SQD);
    case IBV_QPS_SQD:
        return (next == IBV_QPS_SQD) || (next == IBV_QPS_RTS);
    case IBV_QPS_SQE:
        return next == IBV_QPS_RTS;
    default:
        return 0;
    }
}

int sib_qp_apply_attrs(struct sib_qp *qp, struct ibv_qp_attr *attr,
                       int mask)
{
    if ((mask & IBV_QP_PORT) &&
        ((attr->port_num < 1) || (attr->port_num > qp->ctx->dev->num_ports))) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PKEY_INDEX) && (attr->pkey_index != 0)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PATH_MTU) &&
        ((attr->path_mtu < IBV_MTU_256) || (attr->path_mtu > SIB_MAX_MTU))) {
        return EINVAL;
    }
    if (((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
         (attr->max_rd_atomic > SIB_MAX_RD_ATOMIC)) ||
        ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
         (attr->max_dest_rd_atomic > SIB_MAX_RD_ATOMIC)) ||
        ((mask & IBV_QP_RETRY_CNT) && (attr->retry_cnt > 7)) ||
        ((mask & IBV_QP_RNR_RETRY) && (attr->rnr_retry > 7))) {
        return EINVAL;
    }
    if (mask & (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE)) {
        return EOPNOTSUPP; /* no automatic path migration */
    }

    if (mask & IBV_QP_PORT) {
        qp->port_num = attr->port_num;
    }
    if (mask & IBV_QP_ACCESS_FLAGS) {
        qp->access = attr->qp_access_flags;
    }
    if (mask & IBV_QP_QKEY) {
        qp->qkey = attr->qkey;
    }
    if (mask & IBV_QP_AV) {
        qp->av = attr->ah_attr;
    }
    if (mask & IBV_QP_PATH_MTU) {
        qp->path_mtu = attr->path_mtu;
        qp->mtu      = sib_mtu_bytes(attr->path_mtu);
    }
    if (mask & IBV_QP_DEST_QPN) {
        qp->dest_qpn = attr->dest_qp_num & SIB_QPN_MASK;
    }
    if (mask & IBV_QP_TIMEOUT) {
        qp->timeout = attr->timeout;
    }
    if (mask & IBV_QP_RETRY_CNT) {
        qp->retry_cnt = attr->retry_cnt;
    }
    if (mask & IBV_QP_RNR_RETRY) {
        qp->rnr_retry = attr->rnr_retry;
    }
    if (mask & IBV_QP_MIN_RNR_TIMER) {
        qp->min_rnr_timer = attr->min_rnr_timer;
    }
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) {
        qp->max_rd_atomic = attr->max_rd_atomic;
    }
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
        qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
    }
    return 0;
}

/* Engine lock held. Back to RESET: every queue empties, no completions. */
void sib_qp_reset(struct sib_qp *qp)
{
    sib_engine_unschedule(qp);
    qp->sq.head = qp->sq.req = qp->sq.tail = 0;
    if (qp->srq == NULL) {
        pthread_spin_lock(&qp->rq.lock);
        qp->rq.head = qp->rq.tail = 0;
        pthread_spin_unlock(&qp->rq.lock);
    }
    memset(&qp->req, 0, sizeof(qp->req));
    memset(&qp->comp, 0, sizeof(qp->comp));
    sib_resp_reset(qp);
    qp->last_wqe_sent = 0;
}

/* Engine lock held. The QP failed or was moved to ERR: complete every WQE
 * with a flush, and tell an SRQ user the QP will take no more receives. */
void sib_qp_enter_error(struct sib_qp *qp)
{
    if (qp->state == IBV_QPS_ERR) {
        return;
    }
    __atomic_store_n(&qp->state, IBV_QPS_ERR, __ATOMIC_RELAXED);
    qp->comp.timer_ns = 0;
    qp->comp.rnr_ns   = 0;
    sib_engine_unschedule(qp);
    sib_comp_flush_sq(qp);
    sib_resp_flush(qp);

    /* IBA 11.6.3: LAST_WQE_REACHED once an SRQ-attached QP is in error and
     * takes nothing more from the SRQ; UCX waits for it to destroy QPs.
     * Linux rxe (kernel 6.1) never raises it: SOFTIB_LAST_WQE=0 does the
     * same, so that consumers are tested without it too. */
    if ((qp->srq != NULL) && !qp->last_wqe_sent && qp->ctx->eng->last_wqe) {
        qp->last_wqe_sent = 1;
        sib_async_event(qp->ctx, IBV_EVENT_QP_LAST_WQE_REACHED, qp);
    }
    sib_log_debug("qp 0x%x entered the error state", sib_qp_num(qp));
}
