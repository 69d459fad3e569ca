/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Completer: matches ACKs, NAKs and responses to send WQEs, places READ
 * data and atomic results, produces send completions in order, and runs
 * the retransmission and RNR timers (IBA 9.7.5.2, 9.9.2).
 *
 * ACKs are cumulative: an ACK, a READ response or an atomic ACK for PSN p
 * completes every earlier SEND/WRITE. A READ or atomic that an
 * acknowledgment passes without its own response lost that response on
 * the way; the requester sends it again and the responder answers the
 * duplicate from its resources (IBA 9.7.5.1.2), never executing twice.
 */
#include "sib_loc.h"
#include "sib_log.h"

#include <string.h>


/* RNR NAK timer field to microseconds, IBA table 45 */
static const uint32_t sib_rnr_timer_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
    61440, 81920, 122880, 163840, 245760, 327680, 491520
};

/* rnr_retry 7 means "retry forever" (IBA 9.7.5.2.8); retry_cnt has no such
 * value: 7 is seven retries. */
#define SIB_RNR_RETRY_INFINITE  7

/* Local ACK Timeout: 4.096 us * 2^timeout, and 0 disables it (IBA 11.2.4.2,
 * ibv_modify_qp(3)). */
uint64_t sib_qp_timeout_ns(const struct sib_qp *qp)
{
    if (qp->timeout == 0) {
        return 0;
    }
    return 4096ull << (qp->timeout > 31 ? 31 : qp->timeout);
}

static enum ibv_wc_opcode sib_wc_opcode(uint32_t wr_opcode)
{
    switch (wr_opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return IBV_WC_FETCH_ADD;
    default:
        return IBV_WC_SEND;
    }
}

static int sib_comp_outstanding(const struct sib_qp *qp)
{
    if (qp->sq.tail != qp->sq.req) {
        return 1;
    }
    return (qp->sq.req != qp->sq.head) &&
           (sib_sq_wqe((struct sib_sq*)&qp->sq, qp->sq.req)->state ==
            SIB_WQE_PROCESSING);
}

/* Engine lock held. Complete the oldest WQE (it must be sq.tail). */
void sib_comp_complete(struct sib_qp *qp, struct sib_send_wqe *wqe,
                       enum ibv_wc_status status)
{
    struct ibv_wc wc;

    if ((status != IBV_WC_SUCCESS) || qp->sq_sig_all ||
        (wqe->send_flags & IBV_SEND_SIGNALED)) {
        memset(&wc, 0, sizeof(wc));
        wc.wr_id    = wqe->wr_id;
        wc.status   = status;
        wc.opcode   = sib_wc_opcode(wqe->opcode);
        wc.qp_num   = sib_qp_num(qp);
        if (wqe->opcode == IBV_WR_RDMA_READ) {
            wc.byte_len = wqe->length;
        } else if ((wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
                   (wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
            wc.byte_len = sizeof(uint64_t);
        }
        sib_cq_push(qp->scq, &wc, status != IBV_WC_SUCCESS);
    }

    if (sib_wqe_is_rd_atomic(wqe) && (wqe->state == SIB_WQE_PENDING) &&
        (wqe->status == IBV_WC_SUCCESS) && (qp->req.rd_atomic > 0)) {
        qp->req.rd_atomic--;
    }

    wqe->state = SIB_WQE_DONE;
    qp->sq.tail++;
    if ((int32_t)(qp->sq.req - qp->sq.tail) < 0) {
        qp->sq.req = qp->sq.tail;
    }
}

/* Complete and move to the error state: the WQE at the tail failed. */
static void sib_comp_fail(struct sib_qp *qp, enum ibv_wc_status status)
{
    struct sib_send_wqe *wqe = sib_sq_wqe(&qp->sq, qp->sq.tail);

    sib_log_debug("qp 0x%x wr_id 0x%llx fails with %s", sib_qp_num(qp),
                  (unsigned long long)wqe->wr_id, ibv_wc_status_str(status));
    sib_comp_complete(qp, wqe, status);
    sib_qp_enter_error(qp);
}

void sib_comp_arm_timer(struct sib_qp *qp)
{
    uint64_t timeout = sib_qp_timeout_ns(qp);

    if ((timeout == 0) || (qp->comp.timer_ns != 0) ||
        !sib_comp_outstanding(qp)) {
        return;
    }
    qp->comp.timer_ns = sib_now_ns() + timeout;
    sib_engine_timer_update(qp);
}

/* The responder acknowledged something new: the retry budgets refill
 * (IBA 9.7.5.2.3) and the timer restarts. */
static void sib_comp_progress(struct sib_qp *qp)
{
    qp->comp.retry_cnt = qp->retry_cnt;
    if (qp->comp.rnr_retry != SIB_RNR_RETRY_INFINITE) {
        qp->comp.rnr_retry = qp->rnr_retry;
    }
    qp->comp.timer_ns = 0;
    sib_comp_arm_timer(qp);
    if (qp->sq.req != qp->sq.head) {
        sib_engine_schedule(qp);
    }
}

/* Complete the WQEs an acknowledgment covers: those ending at or before
 * psn (inclusive) or strictly before it. Returns 0, 1 if the QP failed,
 * -1 if a READ/atomic lost its response and must be sent again. */
static int sib_comp_ack_through(struct sib_qp *qp, uint32_t psn, int inclusive)
{
    struct sib_send_wqe *wqe;
    int32_t c;

    while (qp->sq.tail != qp->sq.req) {
        wqe = sib_sq_wqe(&qp->sq, qp->sq.tail);
        if (wqe->state != SIB_WQE_PENDING) {
            break;
        }
        c = sib_psn_compare(wqe->last_psn, psn);
        if ((c > 0) || ((c == 0) && !inclusive)) {
            break;
        }
        if (wqe->status != IBV_WC_SUCCESS) {
            sib_comp_fail(qp, wqe->status);
            return 1;
        }
        if (sib_wqe_is_rd_atomic(wqe)) {
            sib_count(qp->ctx, SIB_CNT_ACK_IMPLIED_RETRY, 1);
            return -1;
        }
        if (sib_psn_compare(wqe->last_psn, qp->comp.psn) >= 0) {
            qp->comp.psn = sib_psn_add(wqe->last_psn, 1);
        }
        sib_comp_complete(qp, wqe, IBV_WC_SUCCESS);
    }
    return 0;
}

static void sib_comp_nak(struct sib_qp *qp, struct sib_pkt *pkt, uint8_t syn)
{
    enum ibv_wc_status status;

    switch (syn & 0x1f) {
    case SIB_NAK_PSN_SEQ_ERROR:
        /* the responder is missing pkt->psn: resend from there */
        sib_count(qp->ctx, SIB_CNT_SEQ_NAK_RCVD, 1);
        sib_req_retry(qp);
        return;
    case SIB_NAK_REM_ACCESS:
        status = IBV_WC_REM_ACCESS_ERR;
        break;
    case SIB_NAK_REM_OP:
        status = IBV_WC_REM_OP_ERR;
        break;
    default:
        status = IBV_WC_REM_INV_REQ_ERR;
        break;
    }

    if (qp->sq.tail != qp->sq.req) {
        sib_log_debug("qp 0x%x NAK 0x%x for psn 0x%x", sib_qp_num(qp), syn,
                      pkt->psn);
        sib_comp_fail(qp, status);
    }
}

static void sib_comp_rnr_nak(struct sib_qp *qp, uint8_t syn)
{
    sib_count(qp->ctx, SIB_CNT_RNR_NAK_RCVD, 1);
    if (qp->sq.tail == qp->sq.req) {
        return;
    }
    if (qp->comp.rnr_retry == 0) {
        sib_count(qp->ctx, SIB_CNT_RNR_RETRY_EXCEEDED, 1);
        sib_comp_fail(qp, IBV_WC_RNR_RETRY_EXC_ERR);
        return;
    }
    if (qp->comp.rnr_retry != SIB_RNR_RETRY_INFINITE) {
        qp->comp.rnr_retry--;
    }
    /* stop sending until the responder has had time to post receives */
    qp->comp.timer_ns  = 0;
    qp->comp.rnr_ns    = sib_now_ns() +
                         1000ull * sib_rnr_timer_us[syn & 0x1f];
    qp->req.need_retry = 1;
    sib_engine_timer_update(qp);
}

static void sib_comp_ack(struct sib_qp *qp, struct sib_pkt *pkt)
{
    uint8_t syn = aeth_syn(pkt);
    int ret;

    switch (syn & 0x60) {
    case SIB_AETH_ACK:
        ret = sib_comp_ack_through(qp, pkt->psn, 1);
        if (ret > 0) {
            return;
        }
        /* an ACK inside a multi-packet message acknowledges its packets */
        if ((sib_psn_compare(pkt->psn, qp->comp.psn) >= 0) &&
            (sib_psn_compare(pkt->psn, qp->req.psn) < 0)) {
            qp->comp.psn = sib_psn_add(pkt->psn, 1);
        }
        if (ret < 0) {
            sib_req_retry(qp);
        }
        sib_comp_progress(qp);
        return;
    case SIB_AETH_RNR_NAK:
        if (sib_comp_ack_through(qp, pkt->psn, 0) == 0) {
            sib_comp_rnr_nak(qp, syn);
        }
        return;
    case SIB_AETH_NAK:
        if (sib_comp_ack_through(qp, pkt->psn, 0) == 0) {
            sib_comp_nak(qp, pkt, syn);
        }
        return;
    default:
        return; /* reserved syndrome: ignore the packet */
    }
}

static uint8_t sib_comp_read_opcode(const struct sib_send_wqe *wqe,
                                    uint32_t psn)
{
    if (wqe->first_psn == wqe->last_psn) {
        return SIB_RC_RDMA_READ_RESPONSE_ONLY;
    }
    if (psn == wqe->first_psn) {
        return SIB_RC_RDMA_READ_RESPONSE_FIRST;
    }
    if (psn == wqe->last_psn) {
        return SIB_RC_RDMA_READ_RESPONSE_LAST;
    }
    return SIB_RC_RDMA_READ_RESPONSE_MIDDLE;
}

/* Place one READ response packet; the WQE is at the tail and the packet is
 * the next one expected. */
static void sib_comp_read_resp(struct sib_qp *qp, struct sib_send_wqe *wqe,
                               struct sib_pkt *pkt)
{
    uint32_t off = (pkt->psn - wqe->first_psn) & SIB_PSN_MASK;
    uint32_t expect;

    off   *= qp->mtu;
    expect = wqe->length - off;
    if (expect > qp->mtu) {
        expect = qp->mtu;
    }

    if ((pkt->opcode != sib_comp_read_opcode(wqe, pkt->psn)) ||
        (pkt->paylen != expect)) {
        sib_log_debug("qp 0x%x unexpected %s psn 0x%x len %u", sib_qp_num(qp),
                      sib_opcode[pkt->opcode].name, pkt->psn, pkt->paylen);
        sib_req_retry(qp);
        return;
    }

    if (sib_sge_copy_to(qp->ctx, qp->pd, wqe->sge, wqe->num_sge, off,
                        pkt->payload, pkt->paylen) < 0) {
        sib_comp_fail(qp, IBV_WC_LOC_PROT_ERR);
        return;
    }

    wqe->rcvd   += pkt->paylen;
    qp->comp.psn = sib_psn_add(pkt->psn, 1);
    if (pkt->psn == wqe->last_psn) {
        sib_comp_complete(qp, wqe, IBV_WC_SUCCESS);
    }
    sib_comp_progress(qp);
}

static void sib_comp_atomic_resp(struct sib_qp *qp, struct sib_send_wqe *wqe,
                                 struct sib_pkt *pkt)
{
    uint64_t orig = atmack_orig(pkt);

    /* the verbs md returns results in host order (UCX atomic_arg_sizes_be
     * is 0 for it) */
    if (sib_sge_copy_to(qp->ctx, qp->pd, wqe->sge, wqe->num_sge, 0, &orig,
                        sizeof(orig)) < 0) {
        sib_comp_fail(qp, IBV_WC_LOC_PROT_ERR);
        return;
    }

    qp->comp.psn = sib_psn_add(pkt->psn, 1);
    sib_comp_complete(qp, wqe, IBV_WC_SUCCESS);
    sib_comp_progress(qp);
}

/* A READ response or atomic ACK: complete what it passes, then match it to
 * the WQE at the tail. */
static void sib_comp_response(struct sib_qp *qp, struct sib_pkt *pkt)
{
    struct sib_send_wqe *wqe;
    int ret;

    ret = sib_comp_ack_through(qp, pkt->psn, 0);
    if (ret > 0) {
        return;
    }
    if (ret < 0) {
        sib_req_retry(qp);
        sib_comp_progress(qp);
        return;
    }
    if (qp->sq.tail == qp->sq.req) {
        return; /* nothing outstanding: a stale duplicate */
    }

    wqe = sib_sq_wqe(&qp->sq, qp->sq.tail);
    if ((sib_psn_compare(pkt->psn, wqe->first_psn) < 0) ||
        (sib_psn_compare(pkt->psn, wqe->last_psn) > 0) ||
        (sib_psn_compare(pkt->psn, qp->comp.psn) < 0)) {
        return; /* duplicate of a response already placed */
    }
    if (sib_psn_compare(pkt->psn, qp->comp.psn) > 0) {
        /* an earlier response packet was lost */
        sib_req_retry(qp);
        return;
    }

    if ((pkt->mask & SIB_READ_MASK) && (wqe->opcode == IBV_WR_RDMA_READ)) {
        sib_comp_read_resp(qp, wqe, pkt);
    } else if ((pkt->mask & SIB_ATOMIC_MASK) && sib_wqe_is_rd_atomic(wqe) &&
               (wqe->opcode != IBV_WR_RDMA_READ)) {
        sib_comp_atomic_resp(qp, wqe, pkt);
    }
}

/* Engine lock held. */
void sib_comp_pkt(struct sib_qp *qp, struct sib_pkt *pkt)
{
    if (qp->type != IBV_QPT_RC) {
        return;
    }

    if (pkt->opcode == SIB_RC_ACKNOWLEDGE) {
        sib_comp_ack(qp, pkt);
    } else {
        sib_comp_response(qp, pkt);
    }
}

/* Engine lock held. Run expired timers of one QP. */
void sib_comp_timers(struct sib_qp *qp, uint64_t now)
{
    if ((qp->comp.rnr_ns != 0) && (now >= qp->comp.rnr_ns)) {
        qp->comp.rnr_ns = 0;
        sib_req_retry(qp);
    }

    if ((qp->comp.timer_ns == 0) || (now < qp->comp.timer_ns)) {
        return;
    }

    qp->comp.timer_ns = 0;
    if ((sib_qp_state(qp) != IBV_QPS_RTS) || !sib_comp_outstanding(qp)) {
        return;
    }

    if (qp->comp.retry_cnt > 0) {
        qp->comp.retry_cnt--;
        sib_count(qp->ctx, SIB_CNT_RETRANSMIT_TIMEOUT, 1);
        sib_log_debug("qp 0x%x ack timeout, %u retries left", sib_qp_num(qp),
                      qp->comp.retry_cnt);
        sib_req_retry(qp);
        return;
    }

    /* IBA 9.9.2.1: the retry budget is spent; the oldest WQE fails with
     * RETRY_EXC_ERR and the rest are flushed. */
    sib_count(qp->ctx, SIB_CNT_RETRY_EXCEEDED, 1);
    sib_comp_fail(qp, IBV_WC_RETRY_EXC_ERR);
}

/* Engine lock held. Flush every WQE left in the send queue. */
void sib_comp_flush_sq(struct sib_qp *qp)
{
    while (qp->sq.tail != qp->sq.head) {
        sib_comp_complete(qp, sib_sq_wqe(&qp->sq, qp->sq.tail),
                          IBV_WC_WR_FLUSH_ERR);
    }
    qp->sq.req        = qp->sq.tail;
    qp->req.rd_atomic = 0;
}
