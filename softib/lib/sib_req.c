/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Requester: turns send WQEs into request packets, in order, within the
 * limits IBA puts on it (outstanding READ/atomics, fences) and ours (a
 * window of unacknowledged PSNs). Retransmission is a rewind to the oldest
 * incomplete WQE; the responder recognises the duplicates by PSN.
 */
#include "sib_loc.h"
#include "sib_log.h"


int sib_wqe_is_rd_atomic(const struct sib_send_wqe *wqe)
{
    return (wqe->opcode == IBV_WR_RDMA_READ) ||
           (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
           (wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD);
}

static int sib_wqe_is_atomic(const struct sib_send_wqe *wqe)
{
    return (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
           (wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD);
}

/* PSNs a WQE occupies (IBA 9.7.1): one per packet, and a READ reserves one
 * per response packet. */
static uint32_t sib_wqe_npkts(const struct sib_qp *qp,
                              const struct sib_send_wqe *wqe)
{
    if (sib_wqe_is_atomic(wqe) || (wqe->length == 0)) {
        return 1;
    }
    return (wqe->length + qp->mtu - 1) / qp->mtu;
}

/* Go back to the oldest incomplete WQE; it and everything after it is sent
 * again with the same PSNs. */
static void sib_req_rewind(struct sib_qp *qp)
{
    struct sib_send_wqe *wqe;
    uint32_t idx;

    if (qp->sq.tail == qp->sq.head) {
        return;
    }

    wqe = sib_sq_wqe(&qp->sq, qp->sq.tail);
    if (wqe->state == SIB_WQE_POSTED) {
        return; /* nothing of it was sent yet */
    }

    qp->req.psn = wqe->first_psn;
    for (idx = qp->sq.tail; idx != qp->sq.head; idx++) {
        wqe = sib_sq_wqe(&qp->sq, idx);
        if (wqe->state == SIB_WQE_POSTED) {
            break;
        }
        wqe->state = SIB_WQE_POSTED;
        wqe->sent  = 0;
    }
    qp->sq.req         = qp->sq.tail;
    qp->req.rd_atomic  = 0;
    qp->req.noack_pkts = 0;
    sib_log_debug("qp 0x%x rewinds to psn 0x%x", sib_qp_num(qp),
                  qp->req.psn);
}

/* Every local buffer a WQE names must be registered and, where the
 * response lands in it, writable (IBA 10.6.3, local protection). */
static int sib_req_check_local(struct sib_qp *qp, struct sib_send_wqe *wqe)
{
    unsigned access = sib_wqe_is_rd_atomic(wqe) ? IBV_ACCESS_LOCAL_WRITE : 0;
    struct sib_mr *mr;
    uint32_t i;

    for (i = 0; i < wqe->num_sge; i++) {
        mr = sib_mr_lookup(qp->ctx, wqe->sge[i].lkey);
        if ((mr == NULL) || sib_mr_check(mr, qp->pd, wqe->sge[i].addr,
                                         wqe->sge[i].length, access)) {
            return -1;
        }
    }
    return 0;
}

/* Decide whether the WQE may start now and give it its PSNs. Returns 0 if
 * it must wait. */
static int sib_req_start(struct sib_qp *qp, struct sib_send_wqe *wqe)
{
    uint32_t max_rd_atomic = qp->max_rd_atomic ? qp->max_rd_atomic : 1;

    /* IBA 10.8.3.3: a fenced WQE waits for every earlier READ and atomic */
    if ((wqe->send_flags & IBV_SEND_FENCE) && (qp->req.rd_atomic > 0)) {
        return 0;
    }
    if (sib_wqe_is_rd_atomic(wqe) && (qp->req.rd_atomic >= max_rd_atomic)) {
        return 0;
    }

    wqe->first_psn = qp->req.psn;
    wqe->sent      = 0;
    if (sib_req_check_local(qp, wqe) < 0) {
        /* Occupies no PSN; completes with the error when its turn comes. */
        wqe->status   = IBV_WC_LOC_PROT_ERR;
        wqe->last_psn = (wqe->first_psn - 1) & SIB_PSN_MASK;
        wqe->state    = SIB_WQE_PENDING;
        return 1;
    }

    wqe->status   = IBV_WC_SUCCESS;
    wqe->last_psn = sib_psn_add(wqe->first_psn, sib_wqe_npkts(qp, wqe) - 1);
    wqe->state    = SIB_WQE_PROCESSING;
    return 1;
}

/* Add bytes [off, off + len) of the WQE's data to the packet. */
static void sib_req_gather(struct sib_qp *qp, struct sib_send_wqe *wqe,
                           uint32_t off, uint32_t len, struct sib_out *out)
{
    struct sib_mr *mr;
    uint32_t i, piece;

    if (wqe->num_sge == 0) {
        sib_out_add_payload(out, wqe->inline_data + off, len);
        return;
    }

    for (i = 0; (i < wqe->num_sge) && (len > 0); i++) {
        if (off >= wqe->sge[i].length) {
            off -= wqe->sge[i].length;
            continue;
        }
        piece = wqe->sge[i].length - off;
        if (piece > len) {
            piece = len;
        }
        /* checked in sib_req_start; a key deregistered since then is the
         * application's bug and the packet goes out short */
        mr = sib_mr_lookup(qp->ctx, wqe->sge[i].lkey);
        if (mr != NULL) {
            sib_out_add_payload(out, mr->addr + (wqe->sge[i].addr - mr->iova) +
                                off, piece);
        }
        len -= piece;
        off  = 0;
    }
}

static uint8_t sib_req_send_opcode(const struct sib_send_wqe *wqe, int first,
                                   int last)
{
    switch (wqe->opcode) {
    case IBV_WR_SEND:
        return first ? (last ? SIB_RC_SEND_ONLY : SIB_RC_SEND_FIRST) :
                       (last ? SIB_RC_SEND_LAST : SIB_RC_SEND_MIDDLE);
    case IBV_WR_SEND_WITH_IMM:
        return first ? (last ? SIB_RC_SEND_ONLY_WITH_IMMEDIATE :
                               SIB_RC_SEND_FIRST) :
                       (last ? SIB_RC_SEND_LAST_WITH_IMMEDIATE :
                               SIB_RC_SEND_MIDDLE);
    case IBV_WR_SEND_WITH_INV:
        return first ? (last ? SIB_RC_SEND_ONLY_WITH_INVALIDATE :
                               SIB_RC_SEND_FIRST) :
                       (last ? SIB_RC_SEND_LAST_WITH_INVALIDATE :
                               SIB_RC_SEND_MIDDLE);
    case IBV_WR_RDMA_WRITE:
        return first ? (last ? SIB_RC_RDMA_WRITE_ONLY :
                               SIB_RC_RDMA_WRITE_FIRST) :
                       (last ? SIB_RC_RDMA_WRITE_LAST :
                               SIB_RC_RDMA_WRITE_MIDDLE);
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return first ? (last ? SIB_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
                               SIB_RC_RDMA_WRITE_FIRST) :
                       (last ? SIB_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE :
                               SIB_RC_RDMA_WRITE_MIDDLE);
    case IBV_WR_RDMA_READ:
        return SIB_RC_RDMA_READ_REQUEST;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return SIB_RC_COMPARE_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return SIB_RC_FETCH_ADD;
    default:
        return SIB_OPCODE_NONE;
    }
}

/* Send the next packet of an RC WQE. */
static void sib_req_send_rc(struct sib_qp *qp, struct sib_send_wqe *wqe)
{
    uint32_t off   = wqe->sent;
    uint32_t len   = wqe->length - off;
    int      first = (off == 0);
    int      last, ackreq;
    uint8_t  opcode;
    uint32_t mask;
    struct sib_out out;

    if (sib_wqe_is_rd_atomic(wqe)) {
        len = 0;     /* the request carries no payload */
        last = 1;
    } else {
        if (len > qp->mtu) {
            len = qp->mtu;
        }
        last = (off + len == wqe->length);
    }

    opcode = sib_req_send_opcode(wqe, first, last);
    mask   = sib_opcode[opcode].mask;
    ackreq = 0;
    if (!(mask & (SIB_READ_MASK | SIB_ATOMIC_MASK)) &&
        (last || (++qp->req.noack_pkts >= SIB_ACKREQ_INTERVAL))) {
        ackreq              = 1;
        qp->req.noack_pkts  = 0;
    }

    sib_out_init(&out, qp, &qp->av, opcode, qp->dest_qpn, qp->req.psn, ackreq,
                 last && (wqe->send_flags & IBV_SEND_SOLICITED));

    if (mask & SIB_RETH_MASK) {
        __reth_set(sib_out_hdr(&out, sib_reth, SIB_RETH), wqe->remote_addr,
                   wqe->rkey, wqe->length);
    }
    if (mask & SIB_ATMETH_MASK) {
        __atmeth_set(sib_out_hdr(&out, sib_atmeth, SIB_ATMETH),
                     wqe->remote_addr, wqe->rkey,
                     (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ?
                     wqe->swap : wqe->compare_add, wqe->compare_add);
    }
    if (mask & SIB_IMMDT_MASK) {
        __immdt_set(sib_out_hdr(&out, sib_immdt, SIB_IMMDT), wqe->imm_data);
    }
    if (mask & SIB_IETH_MASK) {
        sib_out_hdr(&out, sib_ieth, SIB_IETH)->rkey = htobe32(wqe->imm_data);
    }
    if (mask & SIB_PAYLOAD_MASK) {
        sib_req_gather(qp, wqe, off, len, &out);
    }

    sib_log_trace("qp 0x%x tx %s psn 0x%x len %u", sib_qp_num(qp),
                  sib_opcode[opcode].name, qp->req.psn, len);
    sib_net_xmit(qp, &out);

    wqe->sent += len;
    if (mask & SIB_READ_MASK) {
        qp->req.psn = sib_psn_add(wqe->last_psn, 1);
    } else {
        qp->req.psn = sib_psn_add(qp->req.psn, 1);
    }
    if (last) {
        wqe->state = SIB_WQE_PENDING;
        if (sib_wqe_is_rd_atomic(wqe)) {
            qp->req.rd_atomic++;
        }
    }
}

/* UD has no acknowledgments: a WQE is complete once its datagram left. */
static void sib_req_run_ud(struct sib_qp *qp)
{
    struct sib_send_wqe *wqe;
    struct sib_out out;
    uint32_t mask;
    uint8_t opcode;

    while (qp->sq.req != qp->sq.head) {
        wqe    = sib_sq_wqe(&qp->sq, qp->sq.req);
        opcode = (wqe->opcode == IBV_WR_SEND_WITH_IMM) ?
                 SIB_UD_SEND_ONLY_WITH_IMMEDIATE : SIB_UD_SEND_ONLY;
        mask   = sib_opcode[opcode].mask;

        if ((wqe->state == SIB_WQE_POSTED) &&
            (sib_req_check_local(qp, wqe) < 0)) {
            qp->sq.req++;
            sib_comp_complete(qp, wqe, IBV_WC_LOC_PROT_ERR);
            continue;
        }

        sib_out_init(&out, qp, &wqe->ud_av, opcode, wqe->ud_qpn, qp->req.psn,
                     0, !!(wqe->send_flags & IBV_SEND_SOLICITED));
        /* IBA 10.2.5: a Q_Key with the high bit set means "use the QP's" */
        __deth_set(sib_out_hdr(&out, sib_deth, SIB_DETH),
                   (wqe->ud_qkey & 0x80000000u) ? qp->qkey : wqe->ud_qkey,
                   sib_qp_num(qp));
        if (mask & SIB_IMMDT_MASK) {
            __immdt_set(sib_out_hdr(&out, sib_immdt, SIB_IMMDT),
                        wqe->imm_data);
        }
        sib_req_gather(qp, wqe, 0, wqe->length, &out);
        sib_net_xmit(qp, &out);

        qp->req.psn = sib_psn_add(qp->req.psn, 1);
        wqe->state  = SIB_WQE_PENDING;
        qp->sq.req++;
        sib_comp_complete(qp, wqe, IBV_WC_SUCCESS);
    }
}

static int sib_req_window_full(const struct sib_qp *qp)
{
    return sib_psn_compare(qp->req.psn, qp->comp.psn) >= SIB_MAX_UNACKED_PSNS;
}

/* Engine lock held. Send whatever the send queue allows right now. */
void sib_req_run(struct sib_qp *qp)
{
    struct sib_send_wqe *wqe;
    int sent = 0;

    if (sib_qp_state(qp) != IBV_QPS_RTS) {
        return;
    }
    if (qp->type == IBV_QPT_UD) {
        sib_req_run_ud(qp);
        return;
    }
    if (qp->comp.rnr_ns != 0) {
        return; /* waiting out an RNR NAK */
    }

    if (qp->req.need_retry) {
        qp->req.need_retry = 0;
        sib_req_rewind(qp);
    }

    while (qp->sq.req != qp->sq.head) {
        wqe = sib_sq_wqe(&qp->sq, qp->sq.req);
        if ((wqe->state == SIB_WQE_POSTED) && !sib_req_start(qp, wqe)) {
            break;
        }
        if (wqe->state == SIB_WQE_PENDING) {
            /* a WQE that failed its local checks: nothing to send */
            qp->sq.req++;
            continue;
        }
        if (sib_req_window_full(qp)) {
            break;
        }

        sib_req_send_rc(qp, wqe);
        sent = 1;
        if (wqe->state == SIB_WQE_PENDING) {
            qp->sq.req++;
        }
    }

    if (sent) {
        sib_comp_arm_timer(qp);
    }

    /* A failed WQE at the head of the queue completes right away. */
    if (qp->sq.tail != qp->sq.req) {
        wqe = sib_sq_wqe(&qp->sq, qp->sq.tail);
        if ((wqe->status != IBV_WC_SUCCESS) &&
            (wqe->state == SIB_WQE_PENDING)) {
            sib_comp_complete(qp, wqe, wqe->status);
            sib_qp_enter_error(qp);
        }
    }
}

/* Engine lock held. Resend from the oldest incomplete WQE. */
void sib_req_retry(struct sib_qp *qp)
{
    qp->req.need_retry = 1;
    sib_engine_schedule(qp);
}
