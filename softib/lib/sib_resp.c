/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Responder: executes requests in PSN order and answers them (IBA 9.7.5).
 *
 * - The expected PSN advances only when a request has executed; a request
 *   ahead of it draws one sequence-error NAK per gap (C9-110), one behind
 *   it is a duplicate.
 * - Duplicates never execute again: a SEND or WRITE is only acknowledged,
 *   a READ is answered again from its resource (memory re-read, as the
 *   spec allows), an atomic is answered with the value saved when it ran.
 * - Everything the responder sends to its requester leaves in PSN order:
 *   READ responses and atomic ACKs are queued as resources, and the one
 *   pending ACK/NAK follows them. A requester would otherwise take an ACK
 *   that passed a READ response for the loss of that response.
 */
#include "sib_loc.h"
#include "sib_log.h"

#include <string.h>


/* READ response packets sent per engine pass before others get a turn */
#define SIB_RESP_BUDGET  64

static void sib_resp_queue_ack(struct sib_qp *qp, uint8_t syn, uint32_t psn)
{
    qp->resp.ack_pending = 1;
    qp->resp.ack_syn     = syn;
    qp->resp.ack_psn     = psn;
    sib_engine_schedule(qp);
}

static void sib_resp_send_ack(struct sib_qp *qp, uint8_t syn, uint32_t psn)
{
    struct sib_out out;

    sib_out_init(&out, qp, &qp->av, SIB_RC_ACKNOWLEDGE, qp->dest_qpn, psn, 0,
                 0);
    __aeth_set(sib_out_hdr(&out, sib_aeth, SIB_AETH), syn, qp->resp.msn);
    sib_net_xmit(qp, &out);
}

static void sib_resp_complete(struct sib_qp *qp, struct sib_pkt *pkt,
                              enum ibv_wc_status status,
                              enum ibv_wc_opcode opcode, uint32_t byte_len)
{
    struct sib_recv_wqe *wqe = qp->resp.wqe;
    struct ibv_wc wc;

    memset(&wc, 0, sizeof(wc));
    wc.wr_id    = wqe->wr_id;
    wc.status   = status;
    wc.opcode   = opcode;
    wc.byte_len = byte_len;
    wc.qp_num   = sib_qp_num(qp);
    if (pkt != NULL) {
        wc.src_qp = (qp->type == IBV_QPT_UD) ? deth_sqp(pkt) : qp->dest_qpn;
        wc.slid   = pkt->slid;
        wc.sl     = qp->av.sl;
        if (pkt->mask & SIB_IMMDT_MASK) {
            wc.wc_flags |= IBV_WC_WITH_IMM;
            wc.imm_data  = immdt_imm(pkt);
        }
        if (pkt->mask & SIB_IETH_MASK) {
            wc.wc_flags        |= IBV_WC_WITH_INV;
            wc.invalidated_rkey = ieth_rkey(pkt);
        }
        if (pkt->grh != NULL) {
            wc.wc_flags |= IBV_WC_GRH;
        }
    }
    qp->resp.have_wqe = 0;
    sib_cq_push(qp->rcq, &wc, (status != IBV_WC_SUCCESS) ||
                ((pkt != NULL) && __bth_se(pkt->bth)));
}

/* Take the next receive WQE from the SRQ or the QP's receive queue. */
static int sib_resp_get_wqe(struct sib_qp *qp)
{
    struct sib_rq *rq = (qp->srq != NULL) ? &qp->srq->rq : &qp->rq;
    struct sib_recv_wqe *wqe;
    uint32_t left;
    int limit_hit = 0;

    if (qp->resp.have_wqe) {
        return 1;
    }

    pthread_spin_lock(&rq->lock);
    if (rq->tail == rq->head) {
        pthread_spin_unlock(&rq->lock);
        return 0;
    }
    wqe = sib_rq_wqe(rq, rq->tail);
    memcpy(qp->resp.wqe, wqe,
           sizeof(*wqe) + wqe->num_sge * sizeof(struct ibv_sge));
    rq->tail++;
    left = rq->head - rq->tail;
    if ((qp->srq != NULL) && (qp->srq->limit != 0) &&
        (left < qp->srq->limit)) {
        qp->srq->limit = 0; /* the event fires once, then disarms */
        limit_hit      = 1;
    }
    pthread_spin_unlock(&rq->lock);

    if (limit_hit) {
        sib_async_event(qp->ctx, IBV_EVENT_SRQ_LIMIT_REACHED, qp->srq);
    }
    qp->resp.have_wqe = 1;
    qp->resp.wqe_off  = 0;
    return 1;
}

/* Class C/D responder errors (IBA 9.9.3.1): NAK the request and take the
 * QP to the error state. */
static void sib_resp_error(struct sib_qp *qp, struct sib_pkt *pkt,
                           enum sib_aeth_nak_code code)
{
    sib_count(qp->ctx, (code == SIB_NAK_REM_ACCESS) ?
              SIB_CNT_REM_ACCESS_NAK : SIB_CNT_INV_REQ_NAK, 1);
    sib_log_debug("qp 0x%x NAKs %s psn 0x%x with code %u", sib_qp_num(qp),
                  sib_opcode[pkt->opcode].name, pkt->psn, code);
    sib_resp_send_ack(qp, SIB_AETH_NAK | code, pkt->psn);
    if (qp->resp.have_wqe) {
        sib_resp_complete(qp, pkt, (code == SIB_NAK_REM_ACCESS) ?
                          IBV_WC_REM_ACCESS_ERR : IBV_WC_REM_INV_REQ_ERR,
                          IBV_WC_RECV, 0);
    }
    sib_qp_enter_error(qp);
}

static void sib_resp_rnr(struct sib_qp *qp, struct sib_pkt *pkt)
{
    sib_count(qp->ctx, SIB_CNT_RNR_NAK_SENT, 1);
    qp->resp.nak_sent = 1;
    sib_resp_queue_ack(qp, SIB_AETH_RNR_NAK | (qp->min_rnr_timer & 0x1f),
                       pkt->psn);
}

/* The request was executed: advance the expected PSN and acknowledge. */
static void sib_resp_executed(struct sib_qp *qp, struct sib_pkt *pkt,
                              uint32_t npsn)
{
    qp->resp.epsn = sib_psn_add(pkt->psn, npsn);
    if (pkt->mask & SIB_END_MASK) {
        qp->resp.msn = (qp->resp.msn + 1) & 0xffffff;
    }
    if (__bth_ackreq(pkt->bth)) {
        sib_resp_queue_ack(qp, SIB_AETH_ACK_UNLIMITED, pkt->psn);
    }
}

/* FIRST/MIDDLE carry exactly one MTU, LAST and ONLY at most one. */
static int sib_resp_length_ok(const struct sib_qp *qp,
                              const struct sib_pkt *pkt)
{
    if (!(pkt->mask & SIB_END_MASK)) {
        return pkt->paylen == qp->mtu;
    }
    return pkt->paylen <= qp->mtu;
}

static void sib_resp_send(struct sib_qp *qp, struct sib_pkt *pkt)
{
    struct sib_recv_wqe *wqe;

    if (!sib_resp_length_ok(qp, pkt)) {
        sib_resp_error(qp, pkt, SIB_NAK_INVALID_REQ);
        return;
    }
    if ((pkt->mask & SIB_START_MASK) && !sib_resp_get_wqe(qp)) {
        sib_resp_rnr(qp, pkt);
        return;
    }

    wqe = qp->resp.wqe;
    if (qp->resp.wqe_off + pkt->paylen > wqe->length) {
        /* the receive buffer is too small: local length error here,
         * invalid request for the requester */
        sib_resp_send_ack(qp, SIB_AETH_NAK | SIB_NAK_INVALID_REQ, pkt->psn);
        sib_resp_complete(qp, pkt, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0);
        sib_qp_enter_error(qp);
        return;
    }
    if (sib_sge_copy_to(qp->ctx, qp->pd, wqe->sge, wqe->num_sge,
                        qp->resp.wqe_off, pkt->payload, pkt->paylen) < 0) {
        sib_resp_send_ack(qp, SIB_AETH_NAK | SIB_NAK_REM_OP, pkt->psn);
        sib_resp_complete(qp, pkt, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0);
        sib_qp_enter_error(qp);
        return;
    }
    qp->resp.wqe_off += pkt->paylen;

    if (pkt->mask & SIB_END_MASK) {
        qp->resp.msg_kind = 0;
        sib_resp_complete(qp, pkt, IBV_WC_SUCCESS, IBV_WC_RECV,
                          qp->resp.wqe_off);
    } else {
        qp->resp.msg_kind = SIB_SEND_MASK;
    }
    sib_resp_executed(qp, pkt, 1);
}

static void sib_resp_write(struct sib_qp *qp, struct sib_pkt *pkt)
{
    struct sib_mr *mr;
    uint8_t *dst;

    if (pkt->mask & SIB_START_MASK) {
        qp->resp.va        = reth_va(pkt);
        qp->resp.resid     = reth_len(pkt);
        qp->resp.write_len = qp->resp.resid;
        qp->resp.mr        = NULL;
        /* a zero-length WRITE touches no memory and checks no key
         * (IBA 9.4.3, C9-88) */
        if (qp->resp.resid != 0) {
            mr = sib_mr_lookup(qp->ctx, reth_rkey(pkt));
            if ((mr == NULL) ||
                sib_mr_check(mr, qp->pd, qp->resp.va, qp->resp.resid,
                             IBV_ACCESS_REMOTE_WRITE)) {
                sib_resp_error(qp, pkt, SIB_NAK_REM_ACCESS);
                return;
            }
            qp->resp.mr = mr;
        }
    }

    if (!sib_resp_length_ok(qp, pkt) || (pkt->paylen > qp->resp.resid) ||
        ((pkt->mask & SIB_END_MASK) && (pkt->paylen != qp->resp.resid))) {
        sib_resp_error(qp, pkt, SIB_NAK_INVALID_REQ);
        return;
    }
    /* a WRITE with immediate needs its receive WQE before any byte lands */
    if ((pkt->mask & SIB_RWR_MASK) && !sib_resp_get_wqe(qp)) {
        sib_resp_rnr(qp, pkt);
        return;
    }

    if (pkt->paylen != 0) {
        dst = qp->resp.mr->addr + (qp->resp.va - qp->resp.mr->iova);
        sib_mem_copy(qp->ctx, dst, pkt->payload, pkt->paylen, dst);
    }
    qp->resp.va    += pkt->paylen;
    qp->resp.resid -= pkt->paylen;

    if (pkt->mask & SIB_END_MASK) {
        qp->resp.msg_kind = 0;
        if (pkt->mask & SIB_COMP_MASK) {
            sib_resp_complete(qp, pkt, IBV_WC_SUCCESS,
                              IBV_WC_RECV_RDMA_WITH_IMM, qp->resp.write_len);
        }
    } else {
        qp->resp.msg_kind = SIB_WRITE_MASK;
    }
    sib_resp_executed(qp, pkt, 1);
}

static struct sib_resource *sib_resp_new_resource(struct sib_qp *qp)
{
    struct sib_resource *res = &qp->resp.res[qp->resp.res_head %
                                             qp->resp.res_num];

    qp->resp.res_head++;
    memset(res, 0, sizeof(*res));
    return res;
}

static void sib_resp_read(struct sib_qp *qp, struct sib_pkt *pkt)
{
    uint32_t len = reth_len(pkt);
    uint32_t npkts = (len == 0) ? 1 : (len + qp->mtu - 1) / qp->mtu;
    struct sib_resource *res;
    struct sib_mr *mr;

    if (len != 0) {
        mr = sib_mr_lookup(qp->ctx, reth_rkey(pkt));
        if ((mr == NULL) || sib_mr_check(mr, qp->pd, reth_va(pkt), len,
                                         IBV_ACCESS_REMOTE_READ)) {
            sib_resp_error(qp, pkt, SIB_NAK_REM_ACCESS);
            return;
        }
    }

    res            = sib_resp_new_resource(qp);
    res->type      = SIB_RES_READ;
    res->first_psn = pkt->psn;
    res->last_psn  = sib_psn_add(pkt->psn, npkts - 1);
    res->cur_psn   = pkt->psn;
    res->va        = reth_va(pkt);
    res->rkey      = reth_rkey(pkt);
    res->length    = len;
    res->pending   = 1;

    sib_resp_executed(qp, pkt, npkts);
    res->msn = qp->resp.msn;
    sib_engine_schedule(qp);
}

static void sib_resp_atomic(struct sib_qp *qp, struct sib_pkt *pkt)
{
    uint64_t va = atmeth_va(pkt);
    struct sib_resource *res;
    struct sib_mr *mr;
    uint64_t *target, orig;

    if (va & (sizeof(uint64_t) - 1)) {
        sib_resp_error(qp, pkt, SIB_NAK_INVALID_REQ); /* IBA C9-172 */
        return;
    }
    mr = sib_mr_lookup(qp->ctx, atmeth_rkey(pkt));
    if ((mr == NULL) || sib_mr_check(mr, qp->pd, va, sizeof(uint64_t),
                                     IBV_ACCESS_REMOTE_ATOMIC)) {
        sib_resp_error(qp, pkt, SIB_NAK_REM_ACCESS);
        return;
    }

    target = (uint64_t*)(mr->addr + (va - mr->iova));
    orig   = sib_mem_atomic(qp->ctx, target,
                            pkt->opcode != SIB_RC_FETCH_ADD,
                            atmeth_comp(pkt), atmeth_swap_add(pkt));

    res            = sib_resp_new_resource(qp);
    res->type      = SIB_RES_ATOMIC;
    res->first_psn = res->last_psn = res->cur_psn = pkt->psn;
    res->orig      = orig;
    res->pending   = 1;

    sib_resp_executed(qp, pkt, 1);
    res->msn = qp->resp.msn;
    sib_engine_schedule(qp);
}

/* The resource of an earlier READ/atomic that covers psn, if still kept. */
static struct sib_resource *sib_resp_find_resource(struct sib_qp *qp,
                                                   uint32_t psn,
                                                   uint32_t type)
{
    struct sib_resource *res;
    uint32_t i;

    for (i = 0; i < qp->resp.res_num; i++) {
        res = &qp->resp.res[i];
        if ((res->type == type) &&
            (sib_psn_compare(psn, res->first_psn) >= 0) &&
            (sib_psn_compare(psn, res->last_psn) <= 0)) {
            return res;
        }
    }
    return NULL;
}

static void sib_resp_duplicate(struct sib_qp *qp, struct sib_pkt *pkt)
{
    struct sib_resource *res;

    if (pkt->mask & (SIB_SEND_MASK | SIB_WRITE_MASK)) {
        /* C9-105: acknowledge again, execute nothing */
        sib_count(qp->ctx, SIB_CNT_DUP_REQUEST, 1);
        if (__bth_ackreq(pkt->bth) || (pkt->mask & SIB_END_MASK)) {
            sib_resp_queue_ack(qp, SIB_AETH_ACK_UNLIMITED,
                               (qp->resp.epsn - 1) & SIB_PSN_MASK);
        }
        return;
    }

    res = sib_resp_find_resource(qp, pkt->psn, (pkt->mask & SIB_READ_MASK) ?
                                 SIB_RES_READ : SIB_RES_ATOMIC);
    if (res == NULL) {
        return; /* too old to answer; the requester times out */
    }

    if (res->type == SIB_RES_READ) {
        sib_count(qp->ctx, SIB_CNT_DUP_READ, 1);
        res->cur_psn = pkt->psn; /* the requester may resume mid-READ */
    } else {
        sib_count(qp->ctx, SIB_CNT_DUP_ATOMIC, 1);
    }
    res->pending = 1;
    sib_engine_schedule(qp);
}

static int sib_resp_check_seq(struct sib_qp *qp, struct sib_pkt *pkt)
{
    if (qp->resp.msg_kind != 0) {
        /* inside a multi-packet SEND or WRITE: only its continuation */
        return (pkt->mask & qp->resp.msg_kind) &&
               (pkt->mask & (SIB_MIDDLE_MASK | SIB_END_MASK));
    }
    return !!(pkt->mask & SIB_START_MASK);
}

static int sib_resp_access_ok(const struct sib_qp *qp, uint32_t mask)
{
    if (mask & SIB_WRITE_MASK) {
        return !!(qp->access & IBV_ACCESS_REMOTE_WRITE);
    }
    if (mask & SIB_READ_MASK) {
        return !!(qp->access & IBV_ACCESS_REMOTE_READ);
    }
    if (mask & SIB_ATOMIC_MASK) {
        return !!(qp->access & IBV_ACCESS_REMOTE_ATOMIC);
    }
    return 1;
}

static void sib_resp_ud(struct sib_qp *qp, struct sib_pkt *pkt)
{
    struct sib_recv_wqe *wqe;
    uint32_t total = SIB_UD_GRH_SIZE + pkt->paylen;

    if (deth_qkey(pkt) != qp->qkey) {
        sib_count(qp->ctx, SIB_CNT_DROP_NO_QP, 1);
        return;
    }
    if (!sib_resp_get_wqe(qp)) {
        /* unreliable datagram: no receive, no delivery */
        sib_count(qp->ctx, SIB_CNT_DROP_NO_RECV_WQE, 1);
        return;
    }

    wqe = qp->resp.wqe;
    if (total > wqe->length) {
        sib_resp_complete(qp, pkt, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0);
        return;
    }
    /* The first 40 bytes of a UD receive hold the GRH, if one came. */
    if ((pkt->grh != NULL) &&
        (sib_sge_copy_to(qp->ctx, qp->pd, wqe->sge, wqe->num_sge, 0, pkt->grh,
                         SIB_UD_GRH_SIZE) < 0)) {
        sib_resp_complete(qp, pkt, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0);
        return;
    }
    if (sib_sge_copy_to(qp->ctx, qp->pd, wqe->sge, wqe->num_sge,
                        SIB_UD_GRH_SIZE, pkt->payload, pkt->paylen) < 0) {
        sib_resp_complete(qp, pkt, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0);
        return;
    }
    sib_resp_complete(qp, pkt, IBV_WC_SUCCESS, IBV_WC_RECV, total);
}

/* Engine lock held. A request packet for this QP. */
void sib_resp_pkt(struct sib_qp *qp, struct sib_pkt *pkt)
{
    int32_t c;

    if (qp->type == IBV_QPT_UD) {
        sib_resp_ud(qp, pkt);
        return;
    }

    c = sib_psn_compare(pkt->psn, qp->resp.epsn);
    if (c > 0) {
        if (!qp->resp.nak_sent) {
            qp->resp.nak_sent = 1;
            sib_count(qp->ctx, SIB_CNT_SEQ_NAK_SENT, 1);
            sib_resp_queue_ack(qp, SIB_AETH_NAK | SIB_NAK_PSN_SEQ_ERROR,
                               qp->resp.epsn);
        }
        return;
    }
    if (c < 0) {
        sib_resp_duplicate(qp, pkt);
        return;
    }
    qp->resp.nak_sent = 0;

    if (!sib_resp_check_seq(qp, pkt) || !sib_resp_access_ok(qp, pkt->mask)) {
        sib_resp_error(qp, pkt, SIB_NAK_INVALID_REQ);
        return;
    }

    if (pkt->mask & SIB_SEND_MASK) {
        sib_resp_send(qp, pkt);
    } else if (pkt->mask & SIB_WRITE_MASK) {
        sib_resp_write(qp, pkt);
    } else if (pkt->mask & SIB_READ_MASK) {
        sib_resp_read(qp, pkt);
    } else {
        sib_resp_atomic(qp, pkt);
    }
}

static uint8_t sib_resp_read_opcode(const struct sib_resource *res)
{
    if (res->first_psn == res->last_psn) {
        return SIB_RC_RDMA_READ_RESPONSE_ONLY;
    }
    if (res->cur_psn == res->first_psn) {
        return SIB_RC_RDMA_READ_RESPONSE_FIRST;
    }
    if (res->cur_psn == res->last_psn) {
        return SIB_RC_RDMA_READ_RESPONSE_LAST;
    }
    return SIB_RC_RDMA_READ_RESPONSE_MIDDLE;
}

/* Send the next response packet of a READ; returns 0 when it was the last
 * (or the memory vanished). */
static int sib_resp_read_packet(struct sib_qp *qp, struct sib_resource *res)
{
    uint32_t off = ((res->cur_psn - res->first_psn) & SIB_PSN_MASK) * qp->mtu;
    uint32_t len = res->length - off;
    uint8_t opcode = sib_resp_read_opcode(res);
    struct sib_out out;
    struct sib_mr *mr = NULL;

    if (len > qp->mtu) {
        len = qp->mtu;
    }
    if (res->length != 0) {
        /* re-read memory every time, duplicates included */
        mr = sib_mr_lookup(qp->ctx, res->rkey);
        if ((mr == NULL) || sib_mr_check(mr, qp->pd, res->va + off, len,
                                         IBV_ACCESS_REMOTE_READ)) {
            return 0;
        }
    }

    sib_out_init(&out, qp, &qp->av, opcode, qp->dest_qpn, res->cur_psn, 0, 0);
    if (sib_opcode[opcode].mask & SIB_AETH_MASK) {
        __aeth_set(sib_out_hdr(&out, sib_aeth, SIB_AETH),
                   SIB_AETH_ACK_UNLIMITED, res->msn);
    }
    if (mr != NULL) {
        sib_out_add_payload(&out, mr->addr + (res->va + off - mr->iova), len);
    }
    sib_net_xmit(qp, &out);

    if (res->cur_psn == res->last_psn) {
        return 0;
    }
    res->cur_psn = sib_psn_add(res->cur_psn, 1);
    return 1;
}

static void sib_resp_atomic_packet(struct sib_qp *qp,
                                   const struct sib_resource *res)
{
    struct sib_out out;

    sib_out_init(&out, qp, &qp->av, SIB_RC_ATOMIC_ACKNOWLEDGE, qp->dest_qpn,
                 res->first_psn, 0, 0);
    __aeth_set(sib_out_hdr(&out, sib_aeth, SIB_AETH), SIB_AETH_ACK_UNLIMITED,
               res->msn);
    __atmack_set(sib_out_hdr(&out, sib_atmack, SIB_ATMACK), res->orig);
    sib_net_xmit(qp, &out);
}

int sib_resp_has_pending(const struct sib_qp *qp)
{
    uint32_t i;

    if (qp->resp.ack_pending) {
        return 1;
    }
    for (i = 0; i < qp->resp.res_num; i++) {
        if (qp->resp.res[i].pending) {
            return 1;
        }
    }
    return 0;
}

/* Engine lock held. Send queued responses in PSN order, then the ACK. */
void sib_resp_send_pending(struct sib_qp *qp)
{
    uint32_t seq, budget = SIB_RESP_BUDGET;
    uint32_t oldest = (qp->resp.res_head > qp->resp.res_num) ?
                      qp->resp.res_head - qp->resp.res_num : 0;
    struct sib_resource *res;

    /* IBA 10.3.1: the responder works from RTR on (perftest's servers never
     * leave RTR); RESET, INIT and ERR send nothing */
    if ((qp->type != IBV_QPT_RC) || (sib_qp_state(qp) < IBV_QPS_RTR) ||
        (sib_qp_state(qp) == IBV_QPS_ERR)) {
        return;
    }

    for (seq = oldest; seq != qp->resp.res_head; seq++) {
        res = &qp->resp.res[seq % qp->resp.res_num];
        while (res->pending) {
            if (budget-- == 0) {
                sib_engine_schedule(qp);
                return;
            }
            if (res->type == SIB_RES_ATOMIC) {
                sib_resp_atomic_packet(qp, res);
                res->pending = 0;
            } else if (!sib_resp_read_packet(qp, res)) {
                res->pending = 0;
            }
        }
    }

    if (qp->resp.ack_pending) {
        qp->resp.ack_pending = 0;
        sib_resp_send_ack(qp, qp->resp.ack_syn, qp->resp.ack_psn);
    }
}

/* Engine lock held. The QP entered the error state: flush receives. */
void sib_resp_flush(struct sib_qp *qp)
{
    struct sib_rq *rq = &qp->rq;
    uint32_t head;

    if (qp->resp.have_wqe) {
        sib_resp_complete(qp, NULL, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0);
    }
    if (qp->srq != NULL) {
        return; /* SRQ receives belong to the SRQ, not to this QP */
    }

    for (;;) {
        pthread_spin_lock(&rq->lock);
        head = rq->head;
        if (rq->tail == head) {
            pthread_spin_unlock(&rq->lock);
            return;
        }
        memcpy(qp->resp.wqe, sib_rq_wqe(rq, rq->tail),
               sizeof(struct sib_recv_wqe) +
               sib_rq_wqe(rq, rq->tail)->num_sge * sizeof(struct ibv_sge));
        rq->tail++;
        pthread_spin_unlock(&rq->lock);
        qp->resp.have_wqe = 1;
        sib_resp_complete(qp, NULL, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0);
    }
}

/* Engine lock held. Fresh responder state for a QP entering RTR. */
void sib_resp_reset(struct sib_qp *qp)
{
    struct sib_recv_wqe *wqe = qp->resp.wqe;

    memset(&qp->resp, 0, sizeof(qp->resp));
    qp->resp.wqe     = wqe;
    qp->resp.res_num = qp->max_dest_rd_atomic ? qp->max_dest_rd_atomic : 1;
    if (qp->resp.res_num > SIB_MAX_RD_ATOMIC) {
        qp->resp.res_num = SIB_MAX_RD_ATOMIC;
    }
}
