/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "rc_varuna.h"
#include "rc_varuna_impl.h"

#include <uct/ib/base/ib_device.h>
#include <ucs/debug/log.h>
#include <ucs/time/time.h>


/*
 * Control requests and messages (DESIGN.md sections 5.3 and 5.6), and the
 * one dispatcher of their completions and of the peer's messages.
 *
 * Control requests are the failover's own work requests: the drain marker
 * behind a failed lane's requests, the READ of the log word, and the SENDs
 * that carry control messages to the peer (FAILOVER, REPROTECT_*). Each
 * endpoint queues its messages in order (ctrl.msgq) and posts them as its
 * lane has room; one function posts every control request, with one error
 * policy: a message that could not be posted stays queued and is posted
 * again by the next kick; a drain marker that cannot be posted means the
 * lane has nothing more to give back; a log READ that cannot be posted
 * leaves the decision to the peer's expected PSN.
 *
 * A file of its own because the failover (rc_varuna_failover.c), its
 * detection (rc_varuna_detect.c) and re-protection (rc_varuna_reprotect.c)
 * all post control requests and all hear from them: their completions and
 * the peer's messages come to the two dispatchers at the end of this file,
 * which hand each event to the mechanism it is for.
 */


/* The lane control messages travel on: the one we fail over to while
 * fencing, the active one otherwise. */
static unsigned uct_rc_varuna_ep_msg_lane(uct_rc_varuna_ep_t *ep)
{
    return uct_rc_varuna_ep_fo_fencing(ep) ?
           uct_rc_varuna_other_lane(ep->fo.failed_lane) : ep->active;
}


/* ------------------------------------------------------------------------
 * Control requests: outside the operations' sequence and send credits (each
 * QP has UCT_RC_VARUNA_CTRL_WR_RESERVE entries of its own for them), and
 * outside their CQ credits: each holds one of the interface's
 * UCT_RC_VARUNA_CTRL_CQ_RESERVE entries (fo.ctrl_cq_available).
 * ------------------------------------------------------------------------ */

/* The control requests' own send CQ entries, out of the operations'
 * (rc/base counts what the CQ holds, less one) */
ucs_status_t uct_rc_varuna_iface_ctrl_init(uct_rc_varuna_iface_t *iface)
{
    iface->fo.ctrl_cq_available = ucs_min(UCT_RC_VARUNA_CTRL_CQ_RESERVE,
                                          iface->super.tx.cq_available / 4);
    if (iface->fo.ctrl_cq_available < 1) {
        ucs_error("rc_varuna: UCX_RC_VARUNA_TX_CQ_LEN=%u leaves no send CQ "
                  "entries for control requests (at least 5)",
                  iface->super.config.tx_cq_len);
        return UCS_ERR_INVALID_PARAM;
    }
    iface->fo.ctrl_cq_reserve     = iface->fo.ctrl_cq_available;
    iface->super.tx.cq_available -= iface->fo.ctrl_cq_available;
    return UCS_OK;
}

static int uct_rc_varuna_ctrl_room(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, unsigned lane)
{
    return (ep->lane[lane].qp != NULL) &&
           (ep->ctrl.inflight[lane] < UCT_RC_VARUNA_CTRL_WR_RESERVE) &&
           (iface->fo.ctrl_cq_available > 0);
}

/*
 * Who gets the interface's control CQ entries when many endpoints want them
 * at once: a failover all of them (its notice and log READ are on the
 * critical path of both sides), a probe of a quiet lane down to a quarter,
 * re-protection down to half. Seen on rxe with 64 endpoints and a one-way
 * loss: their 64 probe READs over the lossy path, each held until RC's
 * retries ran out, took every entry; a healthy active lane that stopped
 * moving (rxe's QPs do, now and then) found no room for the probe that
 * moves it, and its endpoint ended when it failed.
 */
static int uct_rc_varuna_ctrl_share(uct_rc_varuna_iface_t *iface,
                                    uct_rc_varuna_ctrl_wr_t kind)
{
    switch (kind) {
    case UCT_RC_VARUNA_CTRL_WR_PROBE:
    case UCT_RC_VARUNA_CTRL_WR_STANDBY_PROBE:
        return iface->fo.ctrl_cq_available > iface->fo.ctrl_cq_reserve / 4;
    default:
        return iface->fo.ctrl_cq_available > 0;
    }
}

/* Room for re-protection's requests (its REQ and probe READ): down to half
 * of the control CQ entries, see uct_rc_varuna_ctrl_share() */
int uct_rc_varuna_reprotect_room(uct_rc_varuna_iface_t *iface,
                                 uct_rc_varuna_ep_t *ep, unsigned lane)
{
    return uct_rc_varuna_ctrl_room(iface, ep, lane) &&
           (iface->fo.ctrl_cq_available > iface->fo.ctrl_cq_reserve / 2);
}

static ucs_status_t uct_rc_varuna_ctrl_post(uct_rc_varuna_iface_t *iface,
                                            uct_rc_varuna_ep_t *ep,
                                            unsigned lane,
                                            uct_rc_varuna_ctrl_wr_t kind,
                                            struct ibv_send_wr *wr)
{
    wr->wr_id       = UCT_RC_VARUNA_WRID_CTRL | kind;
    wr->send_flags |= IBV_SEND_SIGNALED;
    wr->next        = NULL;

    if (uct_rc_varuna_lane_post(iface, &ep->lane[lane], wr, NULL) != NULL) {
        /* the caller's path decides what follows (posted again later, or
         * the other decision path) and says so */
        return UCS_ERR_IO_ERROR;
    }

    if (ep->ctrl.inflight[lane]++ == 0) {
        ep->ctrl.progress = ucs_get_time();
    }
    iface->fo.ctrl_cq_available--;
    if (kind != UCT_RC_VARUNA_CTRL_WR_DRAIN) {
        /* its packets take PSNs of the lane like any request: the PSN
         * accounting of a later failover on this lane must see them */
        ep->lane[lane].sq_psn = uct_rc_varuna_psn_add(
                ep->lane[lane].sq_psn,
                uct_rc_varuna_psn_count((wr->opcode == IBV_WR_RDMA_READ) ?
                                        UCT_RC_VARUNA_KIND_READ :
                                        UCT_RC_VARUNA_KIND_SEND,
                                        (wr->num_sge > 0) ?
                                        wr->sg_list[0].length : 0,
                                        ep->lane[lane].path_mtu));
    }
    return UCS_OK;
}

/* A request posted on the QP in error comes back, flushed, after all the
 * requests before it: then every completion of the lane is in. */
static ucs_status_t uct_rc_varuna_post_drain(uct_rc_varuna_iface_t *iface,
                                             uct_rc_varuna_ep_t *ep)
{
    struct ibv_send_wr wr;

    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_RDMA_WRITE;
    return uct_rc_varuna_ctrl_post(iface, ep, ep->fo.failed_lane,
                                   UCT_RC_VARUNA_CTRL_WR_DRAIN, &wr);
}

static ucs_status_t uct_rc_varuna_post_msg(uct_rc_varuna_iface_t *iface,
                                           uct_rc_varuna_ep_t *ep,
                                           unsigned lane)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)&ep->ctrl.msgq[ep->ctrl.msgq_head];
    sge.length = sizeof(uct_rc_varuna_ctrl_msg_t);
    sge.lkey   = 0;

    memset(&wr, 0, sizeof(wr));
    wr.opcode     = IBV_WR_SEND;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    /* inline: the entry is free again once posted; solicited: a peer
     * sleeping in wakeup mode must wake for it */
    wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SOLICITED;
    return uct_rc_varuna_ctrl_post(iface, ep, lane, UCT_RC_VARUNA_CTRL_WR_MSG,
                                   &wr);
}

/* One-sided: the peer's CPU plays no part. */
ucs_status_t uct_rc_varuna_post_log_read(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         unsigned lane)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)uct_rc_varuna_desc_data(ep->fo.log_desc);
    sge.length = sizeof(uint64_t);
    sge.lkey   = ep->fo.log_desc->lkey[lane];

    memset(&wr, 0, sizeof(wr));
    wr.opcode              = IBV_WR_RDMA_READ;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.wr.rdma.remote_addr = ep->peer_log.addr;
    wr.wr.rdma.rkey        = ep->peer_log.rkey[lane];
    return uct_rc_varuna_ctrl_post(iface, ep, lane,
                                   UCT_RC_VARUNA_CTRL_WR_LOG_READ, &wr);
}

/* An empty WRITE to the peer's log word: its ACK says the request crossed
 * the lane one way and the ACK the other. Probes leave a quarter of the
 * control CQ entries to failovers (uct_rc_varuna_ctrl_share): a stuck lane
 * holds its probe until it moves or fails (seen on rxe: 64 endpoints
 * probing their stalled lanes took every entry, and re-protection waited
 * for seconds) */
static ucs_status_t uct_rc_varuna_ep_post_write_probe(uct_rc_varuna_ep_t *ep,
                                                      unsigned lane,
                                                      uct_rc_varuna_ctrl_wr_t kind)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    struct ibv_send_wr wr;

    if (!uct_rc_varuna_ctrl_room(iface, ep, lane) ||
        !uct_rc_varuna_ctrl_share(iface, kind)) {
        return UCS_ERR_NO_RESOURCE;
    }

    memset(&wr, 0, sizeof(wr));
    wr.opcode              = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = ep->peer_log.addr;
    wr.wr.rdma.rkey        = ep->peer_log.rkey[lane];
    return uct_rc_varuna_ctrl_post(iface, ep, lane, kind, &wr);
}

/*
 * A probe on the active lane, behind operations that have not completed
 * for a watchdog interval while there is no lane to fail over to. Its ACK
 * acknowledges everything before it, and a request the peer never got
 * brings a sequence NAK and a retransmission: a QP that only stopped
 * retrying (seen on rxe, a healthy link, the QP in RTS) moves again, one
 * that is really cut ends in retry exhaustion.
 */
ucs_status_t uct_rc_varuna_ep_post_probe(uct_rc_varuna_ep_t *ep)
{
    ucs_status_t status;

    status = uct_rc_varuna_ep_post_write_probe(ep, ep->active,
                                               UCT_RC_VARUNA_CTRL_WR_PROBE);
    if (status == UCS_OK) {
        uct_rc_varuna_ep_iface(ep)->fo.stall_probes++;
    }
    return status;
}

/*
 * A probe on the standby, before the watchdog fails over to it (issue 33).
 * A quiet active lane is not always a dead one (a loaded peer, a software
 * device under load), and failing over fences it for good: onto a standby
 * that passes nothing (a one-way loss raises no port event) that ends the
 * endpoint, where keeping the slow lane would have lost nothing.
 */
ucs_status_t uct_rc_varuna_ep_post_standby_probe(uct_rc_varuna_ep_t *ep)
{
    ucs_status_t status;

    status = uct_rc_varuna_ep_post_write_probe(
            ep, uct_rc_varuna_other_lane(ep->active),
            UCT_RC_VARUNA_CTRL_WR_STANDBY_PROBE);
    if (status == UCS_OK) {
        ep->ctrl.standby_probe = 1;
        uct_rc_varuna_ep_iface(ep)->fo.standby_probes++;
    }
    return status;
}

/*
 * The grow's drain (rc_varuna_grow.c) waits until every operation on the
 * old QP completed; one that went unsignaled completes only with a signaled
 * request behind it, and new operations are held back then. The operations'
 * CQ credits may all be taken by such tails (each request holds one until
 * a completion returns it; 64 endpoints held 12 each when a grow stopped
 * their traffic), so the signaled request is a control request, with a CQ
 * entry of the control share. RC completes in order: its completion
 * completes the operations before it.
 */
ucs_status_t uct_rc_varuna_ep_post_grow_tail(uct_rc_varuna_ep_t *ep)
{
    ucs_status_t status;

    status = uct_rc_varuna_ep_post_write_probe(ep, ep->active,
                                               UCT_RC_VARUNA_CTRL_WR_GROW_TAIL);
    if (status == UCS_OK) {
        ep->gr.tail_posted = 1;
        ep->gr.tail_sn     = ep->tx.sn;
    }
    return status;
}

/* Room for a message other than FAILOVER (the last entries are kept for
 * FAILOVERs) */
int uct_rc_varuna_ep_msgq_room(uct_rc_varuna_ep_t *ep)
{
    return ep->ctrl.msgq_count <
           (UCT_RC_VARUNA_CTRL_MSGQ_LEN - UCT_RC_VARUNA_CTRL_MSGQ_FO);
}

/* Queue a message behind those waiting; returns it (for more fields), or
 * NULL when there is no room. */
uct_rc_varuna_ctrl_msg_t *
uct_rc_varuna_ep_queue_msg(uct_rc_varuna_ep_t *ep,
                           uct_rc_varuna_ctrl_type_t type, unsigned lane,
                           uint32_t psn, uint32_t attempt)
{
    uct_rc_varuna_ctrl_msg_t *msg;

    if (((type != UCT_RC_VARUNA_CTRL_FAILOVER) &&
         !uct_rc_varuna_ep_msgq_room(ep)) ||
        (ep->ctrl.msgq_count == UCT_RC_VARUNA_CTRL_MSGQ_LEN)) {
        return NULL;
    }

    msg = &ep->ctrl.msgq[(ep->ctrl.msgq_head + ep->ctrl.msgq_count) %
                       UCT_RC_VARUNA_CTRL_MSGQ_LEN];
    ep->ctrl.msgq_count++;
    memset(msg, 0, sizeof(*msg));
    msg->rc_hdr.am_id = UCT_RC_VARUNA_CTRL_AM_ID;
    msg->type         = (uint8_t)type;
    msg->lane         = (uint8_t)lane;
    msg->epoch        = ep->fo.epoch;
    msg->psn          = psn;
    msg->attempt      = attempt;
    return msg;
}

/* Post the control requests that wait, as far as there is room. */
void uct_rc_varuna_ep_ctrl_kick(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    unsigned lane;

    /* messages in order, as far as the lane has room */
    lane = uct_rc_varuna_ep_msg_lane(ep);
    while ((ep->ctrl.msgq_count > 0) &&
           uct_rc_varuna_ctrl_room(iface, ep, lane)) {
        if (uct_rc_varuna_post_msg(iface, ep, lane) != UCS_OK) {
            /* kept, and posted again by the next kick: the failover's
             * progress, or the periodic pass (reprotect_try) */
            uct_rc_varuna_ep_reprotect_list(ep);
            break;
        }
        if ((ep->ctrl.msgq[ep->ctrl.msgq_head].type ==
             UCT_RC_VARUNA_CTRL_FAILOVER) &&
            (ep->fo.report.t_notice == 0)) {
            ep->fo.report.t_notice = ucs_get_time();
        } else if (ep->ctrl.msgq[ep->ctrl.msgq_head].type ==
                   UCT_RC_VARUNA_CTRL_REPROTECT_REQ) {
            /* the answer's timeout runs from here: a request that waited
             * for room was not lost */
            ep->rp.sent = ucs_get_time();
        }
        ep->ctrl.msgq_head = (ep->ctrl.msgq_head + 1) %
                             UCT_RC_VARUNA_CTRL_MSGQ_LEN;
        ep->ctrl.msgq_count--;
    }

    /* after the messages: a FAILOVER notice is on the critical path of
     * both sides (the peer fences and answers when it comes), the drain
     * marker only on ours */
    if ((ep->ctrl.pending & UCS_BIT(UCT_RC_VARUNA_CTRL_WR_DRAIN)) &&
        uct_rc_varuna_ctrl_room(iface, ep, ep->fo.failed_lane)) {
        ep->ctrl.pending &= ~UCS_BIT(UCT_RC_VARUNA_CTRL_WR_DRAIN);
        if (uct_rc_varuna_post_drain(iface, ep) != UCS_OK) {
            /* a QP in error that takes nothing: it has nothing more to
             * give back either */
            ep->fo.flags |= UCT_RC_VARUNA_FO_DRAINED;
        }
    }

    lane = uct_rc_varuna_other_lane(ep->fo.failed_lane);
    if ((ep->ctrl.pending & UCS_BIT(UCT_RC_VARUNA_CTRL_WR_LOG_READ)) &&
        uct_rc_varuna_ctrl_room(iface, ep, lane)) {
        if (ep->fo.log_desc == NULL) {
            ep->fo.log_desc = ucs_mpool_get(&iface->short_desc_mp);
        }
        if (ep->fo.log_desc != NULL) {
            ep->ctrl.pending &= ~UCS_BIT(UCT_RC_VARUNA_CTRL_WR_LOG_READ);
            if (uct_rc_varuna_post_log_read(iface, ep, lane) != UCS_OK) {
                /* the other decision path: the peer's expected PSN, as
                 * with UCX_RC_VARUNA_LOG=n */
                ucs_diag("rc_varuna: ep %p: the log READ could not be "
                         "posted, the peer's expected PSN decides", ep);
                ep->fo.flags |= UCT_RC_VARUNA_FO_LOG_FAILED |
                                UCT_RC_VARUNA_FO_LOG_DONE;
            }
        }
    }
}



/* ------------------------------------------------------------------------
 * Completions of control requests
 * ------------------------------------------------------------------------ */

void uct_rc_varuna_ep_ctrl_completion(uct_rc_varuna_ep_t *ep, unsigned lane,
                                      struct ibv_wc *wc)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    unsigned kind                = (unsigned)(wc->wr_id & 0xff);
    int probe;

    ucs_assert(ep->ctrl.inflight[lane] > 0);
    ep->ctrl.inflight[lane]--;
    ep->ctrl.progress = ucs_get_time();
    iface->fo.ctrl_cq_available++;
    uct_rc_varuna_iface_reprotect_recheck(iface);
    if (kind == UCT_RC_VARUNA_CTRL_WR_PROBE) {
        ep->ctrl.stall_probe = 0;
    } else if (kind == UCT_RC_VARUNA_CTRL_WR_STANDBY_PROBE) {
        ep->ctrl.standby_probe = 0;
    }

    /* a re-protection probe (a failed one fails the lane below) */
    probe = (kind == UCT_RC_VARUNA_CTRL_WR_LOG_READ) &&
            (ep->rp.probing & UCS_BIT(lane));
    ep->rp.probing &= ~UCS_BIT(lane);

    if (ucs_unlikely(ep->gr.hold)) {
        uct_rc_varuna_ep_grow_drained(ep);
    }

    if (kind == UCT_RC_VARUNA_CTRL_WR_DRAIN) {
        /* flushed, behind everything the failed lane had */
        if (lane == ep->fo.failed_lane) {
            uct_rc_varuna_ep_failover_drained(ep);
        }
        return;
    }

    if (wc->status != IBV_WC_SUCCESS) {
        if (ep->fo.state == UCT_RC_VARUNA_FO_DEAD) {
            return;
        }
        ucs_diag("rc_varuna: ep %p: control request %u on lane %u failed: "
                 "%s", ep, kind, lane, ibv_wc_status_str(wc->status));
        if (uct_rc_varuna_ep_fo_fencing(ep) &&
            (lane != ep->fo.failed_lane)) {
            /* the lane we were failing over to is dead too */
            uct_rc_varuna_ep_fail(ep, UCS_ERR_ENDPOINT_TIMEOUT);
        } else if (lane == ep->active) {
            uct_rc_varuna_ep_failover(ep, lane,
                                      (wc->status == IBV_WC_RETRY_EXC_ERR) ?
                                      UCT_RC_VARUNA_CAUSE_RETRY_EXC :
                                      UCT_RC_VARUNA_CAUSE_WC_ERROR);
        } else if (probe) {
            uct_rc_varuna_ep_reprotect_probe_failed(iface, ep, lane,
                                                    wc->status);
        } else {
            /* the standby (its probe included: the watchdog then keeps
             * the quiet lane) */
            uct_rc_varuna_ep_failover(ep, lane, UCT_RC_VARUNA_CAUSE_WC_ERROR);
        }
        return;
    }

    if (probe) {
        uct_rc_varuna_ep_reprotect_probed(iface, ep, lane);
        return;
    }

    if (kind == UCT_RC_VARUNA_CTRL_WR_STANDBY_PROBE) {
        uct_rc_varuna_ep_standby_probed(ep);
        return;
    }

    if (kind == UCT_RC_VARUNA_CTRL_WR_GROW_TAIL) {
        /* in order: the operations before it have completed too */
        ep->gr.tail_posted = 0;
        if (ep->tx.done_sn < ep->gr.tail_sn) {
            uct_rc_varuna_ep_complete(ep, ep->gr.tail_sn);
        }
        return;
    }

    if (kind == UCT_RC_VARUNA_CTRL_WR_PROBE) {
        /* in order: what was posted before it has completed too */
        ucs_diag("rc_varuna: ep %p: the stall probe completed on lane %u, "
                 "the lane moves again", ep, lane);
        return;
    }

    if (kind == UCT_RC_VARUNA_CTRL_WR_LOG_READ) {
        uct_rc_varuna_ep_failover_log_read(ep);
    } else {
        uct_rc_varuna_ep_failover_progress(ep);
    }
}


/* ------------------------------------------------------------------------
 * Control messages
 * ------------------------------------------------------------------------ */

void uct_rc_varuna_ep_ctrl_recv(uct_rc_varuna_ep_t *ep, unsigned lane,
                                const uct_rc_varuna_ctrl_msg_t *msg,
                                unsigned length)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    unsigned about;

    if ((length < sizeof(*msg)) || (ep->fo.state == UCT_RC_VARUNA_FO_DEAD)) {
        return;
    }

    about        = msg->lane;
    ep->rp.heard = 1; /* the peer's side of the active lane is connected */
    uct_rc_varuna_iface_reprotect_recheck(iface);
    ucs_debug("rc_varuna: ep %p: control message %u about lane %u epoch %u "
              "psn 0x%x on lane %u", ep, msg->type, about, msg->epoch,
              msg->psn, lane);

    switch (msg->type) {
    case UCT_RC_VARUNA_CTRL_FAILOVER:
        uct_rc_varuna_ep_reprotect_recv_failover(iface, ep, lane);
        uct_rc_varuna_ep_failover_peer_fenced(ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_REQ:
        uct_rc_varuna_ep_reprotect_recv_req(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_ACK:
        uct_rc_varuna_ep_reprotect_recv_ack(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_DONE:
        uct_rc_varuna_ep_reprotect_recv_done(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_ASK:
        uct_rc_varuna_ep_reprotect_recv_ask(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_NACK:
        uct_rc_varuna_ep_reprotect_recv_nack(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_GROW_REQ:
        uct_rc_varuna_ep_grow_recv_req(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_GROW_ACK:
        uct_rc_varuna_ep_grow_recv_ack(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_GROW_NACK:
        uct_rc_varuna_ep_grow_recv_nack(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_GROW_SWAP:
        uct_rc_varuna_ep_grow_recv_swap(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_GROW_SWAP_ACK:
        uct_rc_varuna_ep_grow_recv_swap_ack(iface, ep, msg);
        break;
    default:
        ucs_debug("rc_varuna: ep %p: unknown control message %u", ep,
                  msg->type);
        break;
    }
}
