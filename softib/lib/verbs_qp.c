/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Verbs: the ibv_* entry points of queue pairs and shared receive queues
 * (create, modify, query, destroy, post); the QP's queues and state
 * machine they drive are in sib_qp.c.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
                               struct ibv_srq_init_attr *attr)
{
    struct sib_srq *srq;

    if ((attr->attr.max_wr > SIB_MAX_SRQ_WR) ||
        (attr->attr.max_sge > SIB_MAX_SGE)) {
        errno = EINVAL;
        return NULL;
    }

    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (sib_rq_init(&srq->rq, attr->attr.max_wr, attr->attr.max_sge) < 0) {
        free(srq);
        errno = ENOMEM;
        return NULL;
    }
    srq->limit             = attr->attr.srq_limit;
    attr->attr.max_wr      = srq->rq.max_wr;
    attr->attr.max_sge     = srq->rq.max_sge;
    srq->ibsrq.context     = pd->context;
    srq->ibsrq.srq_context = attr->srq_context;
    srq->ibsrq.pd          = pd;
    pthread_mutex_init(&srq->ibsrq.mutex, NULL);
    pthread_cond_init(&srq->ibsrq.cond, NULL);
    return &srq->ibsrq;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
                   int attr_mask)
{
    struct sib_srq *srq = to_ssrq(ibsrq);

    if ((attr_mask & IBV_SRQ_MAX_WR) && (attr->max_wr > srq->rq.max_wr)) {
        return EINVAL; /* growing would move a ring the engine reads */
    }
    if (attr_mask & IBV_SRQ_LIMIT) {
        pthread_spin_lock(&srq->rq.lock);
        srq->limit = attr->srq_limit;
        pthread_spin_unlock(&srq->rq.lock);
    }
    return 0;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
    struct sib_srq *srq = to_ssrq(ibsrq);

    attr->max_wr    = srq->rq.max_wr;
    attr->max_sge   = srq->rq.max_sge;
    attr->srq_limit = srq->limit;
    return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
    struct sib_srq *srq    = to_ssrq(ibsrq);
    struct sib_engine *eng = to_sctx(ibsrq->context)->eng;

    sib_engine_lock(eng); /* no engine pass is reading it */
    sib_engine_unlock(eng);
    sib_rq_cleanup(&srq->rq);
    pthread_mutex_destroy(&ibsrq->mutex);
    pthread_cond_destroy(&ibsrq->cond);
    free(srq);
    return 0;
}

int sib_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                      struct ibv_recv_wr **bad_wr)
{
    return sib_rq_post(&to_ssrq(ibsrq)->rq, wr, bad_wr);
}

static struct ibv_qp *sib_create_qp_common(struct ibv_context *context,
                                           struct ibv_pd *pd,
                                           struct ibv_qp_init_attr *attr,
                                           uint64_t send_ops_flags)
{
    struct sib_context *ctx = to_sctx(context);
    struct ibv_qp *ibqp;
    struct sib_qp *qp;
    int ret;

    ret = sib_qp_check_caps(attr->qp_type, &attr->cap);
    if ((ret == 0) && ((attr->send_cq == NULL) || (attr->recv_cq == NULL))) {
        ret = EINVAL;
    }
    if (ret == 0) {
        ret = sib_registry_verb_fail(ctx->eng->reg, ctx->dev->index,
                                     SIB_VERB_CREATE_QP, 0);
    }
    if (ret != 0) {
        errno = ret;
        return NULL;
    }

    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    qp->ctx        = ctx;
    qp->pd         = to_spd(pd);
    qp->scq        = to_scq(attr->send_cq);
    qp->rcq        = to_scq(attr->recv_cq);
    qp->srq        = (attr->srq != NULL) ? to_ssrq(attr->srq) : NULL;
    qp->type       = attr->qp_type;
    qp->sq_sig_all = attr->sq_sig_all;
    qp->port_num   = 1;
    qp->mtu        = sib_mtu_bytes(SIB_MAX_MTU);
    qp->path_mtu   = SIB_MAX_MTU;
    sib_list_init(&qp->tx_link);
    sib_list_init(&qp->timer_link);

    if ((sib_qp_alloc_queues(qp, &attr->cap) < 0) ||
        ((send_ops_flags != 0) &&
         (sib_qp_ex_init(qp, send_ops_flags) < 0))) {
        sib_qp_free(qp);
        errno = ENOMEM;
        return NULL;
    }
    sib_resp_reset(qp);

    sib_engine_lock(ctx->eng);
    ret = sib_qp_register(ctx, qp);
    sib_engine_unlock(ctx->eng);
    if (ret < 0) {
        sib_qp_free(qp);
        errno = -ret;
        return NULL;
    }

    ibqp             = sib_qp_ib(qp);
    ibqp->context    = context;
    ibqp->qp_context = attr->qp_context;
    ibqp->pd         = pd;
    ibqp->send_cq    = attr->send_cq;
    ibqp->recv_cq    = attr->recv_cq;
    ibqp->srq        = attr->srq;
    ibqp->handle     = ibqp->qp_num;
    ibqp->state      = IBV_QPS_RESET;
    qp->state        = IBV_QPS_RESET;
    ibqp->qp_type    = attr->qp_type;
    pthread_mutex_init(&ibqp->mutex, NULL);
    pthread_cond_init(&ibqp->cond, NULL);

    attr->cap.max_send_wr     = qp->sq.max_wr;
    attr->cap.max_send_sge    = qp->sq.max_sge;
    attr->cap.max_inline_data = qp->sq.max_inline;
    if (qp->srq == NULL) {
        attr->cap.max_recv_wr  = qp->rq.max_wr;
        attr->cap.max_recv_sge = qp->rq.max_sge;
    }

    sib_count(ctx, SIB_CNT_QP_CREATED, 1);
    sib_log_debug("created %s qp 0x%x", (qp->type == IBV_QPT_RC) ? "rc" : "ud",
                  ibqp->qp_num);
    return ibqp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    return sib_create_qp_common(pd->context, pd, attr, 0);
}

struct ibv_qp *sib_create_qp_ex(struct ibv_context *context,
                                struct ibv_qp_init_attr_ex *attr_ex)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *ibqp;

    if ((attr_ex->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
                                IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) ||
        !(attr_ex->comp_mask & IBV_QP_INIT_ATTR_PD)) {
        errno = EOPNOTSUPP;
        return NULL;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_context = attr_ex->qp_context;
    attr.send_cq    = attr_ex->send_cq;
    attr.recv_cq    = attr_ex->recv_cq;
    attr.srq        = attr_ex->srq;
    attr.cap        = attr_ex->cap;
    attr.qp_type    = attr_ex->qp_type;
    attr.sq_sig_all = attr_ex->sq_sig_all;

    ibqp = sib_create_qp_common(context, attr_ex->pd, &attr,
                                (attr_ex->comp_mask &
                                 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ?
                                attr_ex->send_ops_flags : 0);
    if (ibqp != NULL) {
        attr_ex->cap = attr.cap;
    }
    return ibqp;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
    struct sib_qp *qp = to_sqp(ibqp);

    return (qp->wr_pool != NULL) ? &qp->ibqpx : NULL;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
    struct sib_qp *qp       = to_sqp(ibqp);
    struct sib_context *ctx = qp->ctx;

    uint32_t reported;

    sib_engine_lock(ctx->eng);
    sib_engine_unschedule(qp);
    pthread_mutex_lock(&ctx->qp_table_lock);
    ctx->qp_table[ibqp->qp_num & (SIB_QPS_PER_SLOT - 1)] = NULL;
    /* no event of this QP is reported from now on (see sib_async_qp) */
    reported = qp->events_reported;
    pthread_mutex_unlock(&ctx->qp_table_lock);
    sib_engine_unlock(ctx->eng);

    /* like libibverbs over uverbs: the events handed out must be
     * acknowledged first, their element pointing at this QP */
    pthread_mutex_lock(&ibqp->mutex);
    while (ibqp->events_completed != reported) {
        pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
    }
    pthread_mutex_unlock(&ibqp->mutex);

    pthread_mutex_destroy(&ibqp->mutex);
    pthread_cond_destroy(&ibqp->cond);
    sib_qp_free(qp);
    return 0;
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
                  int attr_mask)
{
    struct sib_qp *qp      = to_sqp(ibqp);
    struct sib_engine *eng = qp->ctx->eng;
    enum ibv_qp_state cur, next;
    int required, ret;
    unsigned verb;

    verb = SIB_VERB_MODIFY_QP;
    if ((attr_mask & IBV_QP_STATE) && (attr->qp_state == IBV_QPS_RTR)) {
        verb |= SIB_VERB_CONNECT_QP;
    }
    ret = sib_registry_verb_fail(eng->reg, qp->ctx->dev->index, verb,
                                 ibqp->qp_num);
    if (ret != 0) {
        errno = ret; /* as rdma-core's, whose command's write() failed */
        return ret;
    }

    sib_engine_lock(eng);
    cur  = qp->state;
    next = (attr_mask & IBV_QP_STATE) ? attr->qp_state : cur;
    if ((attr_mask & IBV_QP_CUR_STATE) && (attr->cur_qp_state != cur)) {
        ret = EINVAL;
        goto out;
    }

    required = sib_qp_required(qp->type, cur, next);
    if (!sib_qp_transition_ok(cur, next) ||
        ((attr_mask & required) != required)) {
        sib_log_debug("qp 0x%x: bad transition %d -> %d (mask 0x%x)",
                      ibqp->qp_num, cur, next, attr_mask);
        ret = EINVAL;
        goto out;
    }

    ret = sib_qp_apply_attrs(qp, attr, attr_mask);
    if (ret != 0) {
        goto out;
    }

    if (attr_mask & IBV_QP_SQ_PSN) {
        qp->req.psn  = attr->sq_psn & SIB_PSN_MASK;
        qp->comp.psn = qp->req.psn;
    }

    switch (next) {
    case IBV_QPS_RESET:
        sib_qp_reset(qp);
        break;
    case IBV_QPS_RTR:
        if (cur != IBV_QPS_RTR) {
            sib_resp_reset(qp);
            if (qp->type == IBV_QPT_RC) {
                /* it now has a remote QP: a connection was set up */
                sib_count(qp->ctx, SIB_CNT_QP_CONNECTED, 1);
            }
        }
        break;
    case IBV_QPS_RTS:
        qp->comp.retry_cnt = qp->retry_cnt;
        qp->comp.rnr_retry = qp->rnr_retry;
        break;
    case IBV_QPS_ERR:
        sib_qp_enter_error(qp);
        break;
    default:
        break;
    }
    if (attr_mask & IBV_QP_RQ_PSN) {
        qp->resp.epsn = attr->rq_psn & SIB_PSN_MASK;
    }

    __atomic_store_n(&qp->state, next, __ATOMIC_RELAXED);
    if (attr_mask & IBV_QP_STATE) {
        ibqp->state = next; /* as libibverbs does after the provider */
    }
    if ((next == IBV_QPS_RTS) && (qp->sq.head != qp->sq.req)) {
        sib_engine_schedule(qp);
    }
out:
    sib_engine_unlock(eng);
    if (ret != 0) {
        errno = ret;
    }
    return ret;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
                 struct ibv_qp_init_attr *init_attr)
{
    struct sib_qp *qp      = to_sqp(ibqp);
    struct sib_engine *eng = qp->ctx->eng;
    int ret;

    ret = sib_registry_verb_fail(eng->reg, qp->ctx->dev->index,
                                 SIB_VERB_QUERY_QP, ibqp->qp_num);
    if (ret != 0) {
        return ret;
    }

    /* everything is cheap to report; attr_mask only decides whether
     * ibv_qp.state is refreshed */
    memset(attr, 0, sizeof(*attr));
    memset(init_attr, 0, sizeof(*init_attr));

    sib_engine_lock(eng);
    attr->qp_state            = qp->state;
    attr->cur_qp_state        = qp->state;
    if (attr_mask & IBV_QP_STATE) {
        ibqp->state = qp->state; /* as libibverbs does after the provider */
    }
    attr->path_mtu            = qp->path_mtu;
    attr->path_mig_state      = IBV_MIG_MIGRATED;
    attr->qkey                = qp->qkey;
    /* the responder's next expected PSN: everything before it executed */
    attr->rq_psn              = qp->resp.epsn;
    /* the requester's next PSN to send */
    attr->sq_psn              = qp->req.psn;
    attr->dest_qp_num         = qp->dest_qpn;
    attr->qp_access_flags     = qp->access;
    attr->cap.max_send_wr     = qp->sq.max_wr;
    attr->cap.max_send_sge    = qp->sq.max_sge;
    attr->cap.max_inline_data = qp->sq.max_inline;
    if (qp->srq == NULL) {
        attr->cap.max_recv_wr  = qp->rq.max_wr;
        attr->cap.max_recv_sge = qp->rq.max_sge;
    }
    attr->ah_attr             = qp->av;
    attr->pkey_index          = qp->pkey_index;
    attr->sq_draining         = 0;
    attr->max_rd_atomic       = qp->max_rd_atomic;
    attr->max_dest_rd_atomic  = qp->max_dest_rd_atomic;
    attr->min_rnr_timer       = qp->min_rnr_timer;
    attr->port_num            = qp->port_num;
    attr->timeout             = qp->timeout;
    attr->retry_cnt           = qp->retry_cnt;
    attr->rnr_retry           = qp->rnr_retry;
    sib_engine_unlock(eng);

    init_attr->qp_context = ibqp->qp_context;
    init_attr->send_cq    = ibqp->send_cq;
    init_attr->recv_cq    = ibqp->recv_cq;
    init_attr->srq        = ibqp->srq;
    init_attr->cap        = attr->cap;
    init_attr->qp_type    = ibqp->qp_type;
    init_attr->sq_sig_all = qp->sq_sig_all;
    return 0;
}

static int sib_post_check_opcode(const struct sib_qp *qp,
                                 enum ibv_wr_opcode opcode)
{
    switch (opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return 1;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_SEND_WITH_INV:
        return qp->type == IBV_QPT_RC;
    default:
        return 0;
    }
}

/* Engine lock held. Validate one WR and put it on the send queue. */
static int sib_post_one_send(struct sib_qp *qp, struct ibv_send_wr *wr)
{
    struct sib_sq *sq = &qp->sq;
    struct sib_send_wqe *wqe;
    uint32_t i, length = 0;
    int atomic;

    if (sq->head - sq->tail >= sq->max_wr) {
        return ENOMEM;
    }
    if (!sib_post_check_opcode(qp, wr->opcode) || (wr->num_sge < 0) ||
        ((uint32_t)wr->num_sge > sq->max_sge)) {
        return EINVAL;
    }
    for (i = 0; i < (uint32_t)wr->num_sge; i++) {
        length += wr->sg_list[i].length;
    }

    atomic = (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
             (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD);
    if ((atomic && ((wr->num_sge != 1) || (length < sizeof(uint64_t)))) ||
        ((wr->send_flags & IBV_SEND_INLINE) && !atomic &&
         (wr->opcode != IBV_WR_RDMA_READ) && (length > sq->max_inline)) ||
        ((qp->type == IBV_QPT_UD) &&
         ((wr->wr.ud.ah == NULL) || (length > qp->mtu)))) {
        return EINVAL;
    }

    wqe = sib_sq_wqe(sq, sq->head);
    memset(wqe, 0, sizeof(*wqe));
    wqe->wr_id      = wr->wr_id;
    wqe->opcode     = wr->opcode;
    wqe->send_flags = wr->send_flags;
    wqe->imm_data   = (wr->opcode == IBV_WR_SEND_WITH_INV) ?
                      wr->invalidate_rkey : wr->imm_data;
    wqe->length     = atomic ? sizeof(uint64_t) : length;
    wqe->state      = SIB_WQE_POSTED;
    wqe->status     = IBV_WC_SUCCESS;

    if (atomic) {
        wqe->remote_addr = wr->wr.atomic.remote_addr;
        wqe->rkey        = wr->wr.atomic.rkey;
        wqe->compare_add = wr->wr.atomic.compare_add;
        wqe->swap        = wr->wr.atomic.swap;
    } else if (qp->type == IBV_QPT_UD) {
        wqe->ud_av   = to_sah(wr->wr.ud.ah)->attr;
        wqe->ud_qpn  = wr->wr.ud.remote_qpn & SIB_QPN_MASK;
        wqe->ud_qkey = wr->wr.ud.remote_qkey;
    } else {
        wqe->remote_addr = wr->wr.rdma.remote_addr;
        wqe->rkey        = wr->wr.rdma.rkey;
    }

    if ((wr->send_flags & IBV_SEND_INLINE) && !atomic &&
        (wr->opcode != IBV_WR_RDMA_READ)) {
        /* inline: the data is copied now and needs no key */
        uint32_t off = 0;

        for (i = 0; i < (uint32_t)wr->num_sge; i++) {
            memcpy(wqe->inline_data + off,
                   (void*)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            off += wr->sg_list[i].length;
        }
        wqe->num_sge = 0;
    } else {
        wqe->num_sge = (uint32_t)wr->num_sge;
        for (i = 0; i < wqe->num_sge; i++) {
            wqe->sge[i] = wr->sg_list[i];
        }
        if (atomic) {
            wqe->sge[0].length = sizeof(uint64_t);
        }
    }

    sq->head++;
    return 0;
}

int sib_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                  struct ibv_send_wr **bad_wr)
{
    struct sib_qp *qp      = to_sqp(ibqp);
    struct sib_engine *eng = qp->ctx->eng;
    struct ibv_send_wr *w;
    enum ibv_qp_state state;
    unsigned verb;
    int ret = 0;

    if (__atomic_load_n(&eng->reg->num_rules, __ATOMIC_ACQUIRE) != 0) {
        verb = SIB_VERB_POST_SEND;
        for (w = wr; w != NULL; w = w->next) {
            if (w->opcode == IBV_WR_RDMA_READ) {
                verb |= SIB_VERB_POST_READ;
            }
        }
        ret = sib_registry_verb_fail(eng->reg, qp->ctx->dev->index, verb,
                                     ibqp->qp_num);
        if (ret != 0) {
            *bad_wr = wr;
            return ret;
        }
    }

    sib_engine_lock(eng);
    state = qp->state;
    if ((state == IBV_QPS_RESET) || (state == IBV_QPS_INIT) ||
        (state == IBV_QPS_RTR)) {
        *bad_wr = wr;
        sib_engine_unlock(eng);
        return EINVAL;
    }

    for (; wr != NULL; wr = wr->next) {
        ret = sib_post_one_send(qp, wr);
        if (ret != 0) {
            *bad_wr = wr;
            break;
        }
    }

    if (state == IBV_QPS_ERR) {
        sib_comp_flush_sq(qp); /* IBA 10.8.3.4: posted to ERR, flushed */
    } else {
        sib_req_run(qp);
        sib_net_flush(eng);
    }
    sib_engine_unlock(eng);
    return ret;
}

int sib_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
                  struct ibv_recv_wr **bad_wr)
{
    struct sib_qp *qp      = to_sqp(ibqp);
    struct sib_engine *eng = qp->ctx->eng;
    int ret;

    if ((qp->srq != NULL) || (sib_qp_state(qp) == IBV_QPS_RESET)) {
        *bad_wr = wr;
        return EINVAL;
    }

    ret = sib_rq_post(&qp->rq, wr, bad_wr);
    if (sib_qp_state(qp) == IBV_QPS_ERR) {
        sib_engine_lock(eng);
        sib_resp_flush(qp);
        sib_engine_unlock(eng);
    }
    return ret;
}
