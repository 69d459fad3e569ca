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
 * Control requests and messages, and re-protection (DESIGN.md sections 5.3
 * and 5.6).
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
 * Re-protection makes a failed lane the standby again once its ports are
 * up: the initiator resets its QP and sends REPROTECT_REQ with its new PSN
 * and port address; the peer resets and connects its own and answers
 * REPROTECT_ACK (or _NACK); the initiator connects, reads its log word over
 * the new lane as a probe, and says REPROTECT_DONE. All of it runs off the
 * critical path, from the interface's periodic check.
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
static int uct_rc_varuna_reprotect_room(uct_rc_varuna_iface_t *iface,
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
static ucs_status_t uct_rc_varuna_post_log_read(uct_rc_varuna_iface_t *iface,
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

/* Room for a message other than FAILOVER (the last entries are kept for
 * FAILOVERs) */
static int uct_rc_varuna_ep_msgq_room(uct_rc_varuna_ep_t *ep)
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

/* Our port of a lane, for the peer to connect to (REPROTECT_REQ and _ACK) */
static void uct_rc_varuna_msg_port_addr(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ctrl_msg_t *msg,
                                        unsigned lane)
{
    uct_rc_varuna_side_t *s = &iface->side[lane];

    msg->flags |= UCT_RC_VARUNA_CTRL_FLAG_PORT_ADDR;
    msg->lid    = s->lid;
    if (s->is_global) {
        msg->flags |= UCT_RC_VARUNA_CTRL_FLAG_GLOBAL;
        memcpy(&msg->gid, &s->gid, sizeof(s->gid));
    }
}

/* The peer's port of a lane as its REPROTECT_REQ or _ACK gives it */
static void uct_rc_varuna_ep_msg_peer_addr(uct_rc_varuna_iface_t *iface,
                                           uct_rc_varuna_ep_t *ep,
                                           const uct_rc_varuna_ctrl_msg_t *msg)
{
    union ibv_gid gid;

    if (!(msg->flags & UCT_RC_VARUNA_CTRL_FLAG_PORT_ADDR)) {
        return;
    }
    memcpy(&gid, &msg->gid, sizeof(gid));
    uct_rc_varuna_lane_ah(iface, ep, msg->lane, msg->lid,
                          (msg->flags & UCT_RC_VARUNA_CTRL_FLAG_GLOBAL) ?
                          &gid : NULL, &ep->peer.ah[msg->lane]);
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
 * Re-protection (section 5.6)
 * ------------------------------------------------------------------------ */

void uct_rc_varuna_ep_reprotect_list(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);
    unsigned other               = uct_rc_varuna_other_lane(ep->active);

    uct_rc_varuna_iface_reprotect_recheck(iface);
    if ((ep->rp.unprotected == 0) &&
        (ep->lane[other].state != UCT_RC_VARUNA_LANE_STANDBY)) {
        /* what the report and the late check measure from */
        ep->rp.unprotected = ucs_get_time();
        ep->rp.late_said   = 0;
    }
    if (!ep->rp.listed) {
        ucs_list_add_tail(&iface->fo.reprotect, &ep->rp.list);
        ep->rp.listed = 1;
    }
}

void uct_rc_varuna_ep_reprotect_unlist(uct_rc_varuna_ep_t *ep)
{
    if (ep->rp.listed) {
        ucs_list_del(&ep->rp.list);
        ep->rp.listed = 0;
    }
}

/* The standby lane could not be connected with the endpoint (a port of it
 * was down): it is connected as a failed lane is, by re-protection, once
 * the ports are up. Its QP is new, so there is nothing to fence. */
void uct_rc_varuna_ep_standby_later(uct_rc_varuna_ep_t *ep, const char *why)
{
    ucs_diag("rc_varuna: ep %p: %s, re-protection connects the standby lane "
             "later", ep, why);
    ep->lane[UCT_RC_VARUNA_SIDE_STANDBY].state = UCT_RC_VARUNA_LANE_FAILED;
    uct_rc_varuna_ep_reprotect_list(ep);
}

static int uct_rc_varuna_ep_lane_port_up(uct_rc_varuna_iface_t *iface,
                                         unsigned lane)
{
    return !uct_rc_varuna_md_port_down(uct_rc_varuna_iface_md(iface), lane,
                                       iface->side[lane].port_num);
}

/* Tell the peer its re-protected lane is the standby (when the message
 * slot is free; otherwise the next check does) */
static void uct_rc_varuna_ep_reprotect_send_done(uct_rc_varuna_ep_t *ep)
{
    unsigned lane = ep->rp.lane;

    if (!ep->rp.done_pending || !uct_rc_varuna_ep_msgq_room(ep)) {
        return;
    }
    ep->rp.done_pending = 0;
    if (ep->lane[lane].state == UCT_RC_VARUNA_LANE_STANDBY) {
        uct_rc_varuna_ep_queue_msg(ep, UCT_RC_VARUNA_CTRL_REPROTECT_DONE,
                                   lane, 0, ep->rp.attempt);
        uct_rc_varuna_ep_ctrl_kick(ep);
        if (ep->ctrl.msgq_count == 0) {
            uct_rc_varuna_ep_reprotect_unlist(ep);
        }
    }
}

/*
 * The probe READ over a reconnected lane (initiator). With no room for it
 * now (the lane's control entries, the interface's control CQ entries or a
 * descriptor), a later check posts it: UCS_ERR_NO_RESOURCE. Giving up the
 * lane instead made the initiator start over with a new request while the
 * peer had connected, and with many endpoints doing so at once none got
 * through. A lane that takes no request fails again.
 */
static ucs_status_t
uct_rc_varuna_ep_reprotect_post_probe(uct_rc_varuna_iface_t *iface,
                                      uct_rc_varuna_ep_t *ep, unsigned lane)
{
    if (ep->fo.log_desc == NULL) {
        /* where the READ lands; back to the pool once it is done */
        ep->fo.log_desc = ucs_mpool_get(&iface->short_desc_mp);
    }
    if ((ep->fo.log_desc == NULL) ||
        !uct_rc_varuna_reprotect_room(iface, ep, lane)) {
        uct_rc_varuna_iface_reprotect_recheck(iface);
        return UCS_ERR_NO_RESOURCE;
    }

    ep->rp.probe_wait = 0;
    if (uct_rc_varuna_post_log_read(iface, ep, lane) != UCS_OK) {
        ep->lane[lane].state = UCT_RC_VARUNA_LANE_FAILED;
        return UCS_ERR_IO_ERROR;
    }
    ep->rp.probing |= UCS_BIT(lane);
    return UCS_OK;
}

/* How long the endpoint has been without a standby while the port of its
 * lost lane was up (0 while that port is down, or with a standby) */
static ucs_time_t uct_rc_varuna_ep_unprotected_up(uct_rc_varuna_iface_t *iface,
                                                  uct_rc_varuna_ep_t *ep,
                                                  unsigned lane,
                                                  ucs_time_t now)
{
    ucs_time_t since;

    if ((ep->rp.unprotected == 0) ||
        !uct_rc_varuna_ep_lane_port_up(iface, lane)) {
        return 0;
    }
    since = ucs_max(ep->rp.unprotected, iface->fo.port_up_time[lane]);
    return (now > since) ? (now - since) : 0;
}

/* Re-protection takes a few round trips: an endpoint still without a
 * standby REPROTECT_TIMEOUT after the port came back says so, once (log
 * line, counter reprotect_late). Its peer's port may still be down, or the
 * path passes nothing (its probe fails), or re-protection is stuck: the
 * next failure of its active lane ends it. */
static void uct_rc_varuna_ep_reprotect_late(uct_rc_varuna_iface_t *iface,
                                            uct_rc_varuna_ep_t *ep,
                                            unsigned lane, ucs_time_t now)
{
    ucs_time_t waited;
    char name[64];

    if (ep->rp.late_said) {
        return;
    }
    waited = uct_rc_varuna_ep_unprotected_up(iface, ep, lane, now);
    if (waited < iface->config.reprotect_timeout) {
        return;
    }
    ep->rp.late_said = 1;
    iface->fo.reprotect_late++;
    ucs_diag("rc_varuna: ep %p: no standby for %.0f ms since port of lane %s "
             "came back (%s %u requests, lane %s, %u probes failed): one "
             "more failure ends the endpoint", ep, ucs_time_to_msec(waited),
             uct_rc_varuna_lane_str(iface, lane, name, sizeof(name)),
             ep->rp.initiator ? "sent" : "the peer's last of",
             ep->rp.initiator ? ep->rp.attempt : ep->rp.peer_attempt,
             uct_rc_varuna_lane_state_str(ep->lane[lane].state),
             ep->rp.probes_failed);
}

/*
 * The initiator resets its failed lane and asks the peer to do the same.
 * Returns 1 if the endpoint has something to do at a later check (a
 * message to post, an answer's timeout, a back-off), 0 if only an event
 * moves it on: its port coming up, the peer's message, a completion, a
 * failover. An idle worker then sleeps until the event (issue 28).
 */
/* Whether anything has crossed the active lane yet (a failover, which
 * takes both sides, a completion, an active message). Before, the peer
 * may not have connected its QP: UCP connects the two sides one after the
 * other, and an endpoint created while a port is down lists its standby
 * for re-protection at once. A request to a QP that is not ready to
 * receive dies by retries, and takes the active lane with it (seen: a
 * client connecting after a failure lost all its endpoints at the
 * server's first request). */
static int uct_rc_varuna_ep_crossed(const uct_rc_varuna_ep_t *ep)
{
    return (ep->fo.epoch != 0) || (ep->tx.done_sn != 0) ||
           (ep->rx.am_seq != 0);
}

/*
 * Not the initiator, with our side of the standby failed alone (it could
 * not be connected, rp.ask): the peer's side may be a working standby as
 * far as it knows, and the initiator re-protects only lanes it knows are
 * failed (after a failover both sides know). So it is told, and told again
 * each REPROTECT_TIMEOUT until its request comes. Returns whether to stay
 * listed.
 */
static int uct_rc_varuna_ep_reprotect_ask(uct_rc_varuna_iface_t *iface,
                                          uct_rc_varuna_ep_t *ep,
                                          unsigned lane, ucs_time_t now)
{
    if (!ep->rp.ask ||
        (ep->lane[lane].state != UCT_RC_VARUNA_LANE_FAILED) ||
        (ep->lane[lane].qp == NULL) ||
        !uct_rc_varuna_ep_lane_port_up(iface, lane)) {
        return 0; /* the peer's request, or its port's event */
    }
    if (!uct_rc_varuna_ep_crossed(ep) ||
        ((ep->rp.asked != 0) &&
         (now < ep->rp.asked + iface->config.reprotect_timeout))) {
        return 1;
    }
    if (!uct_rc_varuna_ep_msgq_room(ep)) {
        return 1;
    }
    ep->rp.asked = now;
    uct_rc_varuna_ep_queue_msg(ep, UCT_RC_VARUNA_CTRL_REPROTECT_ASK, lane, 0,
                               0);
    uct_rc_varuna_ep_ctrl_kick(ep);
    return 1;
}

int uct_rc_varuna_ep_reprotect_try(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, ucs_time_t now)
{
    unsigned lane = uct_rc_varuna_other_lane(ep->active);
    uct_rc_varuna_ctrl_msg_t *msg;
    ucs_status_t status;

    uct_rc_varuna_ep_reprotect_late(iface, ep, lane, now);
    if (ep->ctrl.msgq_count > 0) {
        uct_rc_varuna_ep_ctrl_kick(ep); /* ones that could not be posted */
    }
    uct_rc_varuna_ep_reprotect_send_done(ep);
    if ((ep->ctrl.msgq_count > 0) || ep->rp.done_pending) {
        return 1; /* a new request only once the last messages are out */
    }
    if (ep->fo.state != UCT_RC_VARUNA_FO_IDLE) {
        return 0; /* the failover's end */
    }
    if (!ep->rp.initiator) {
        return uct_rc_varuna_ep_reprotect_ask(iface, ep, lane, now);
    }

    if (!uct_rc_varuna_ep_crossed(ep)) {
        return 0;
    }

    if (ep->lane[lane].state == UCT_RC_VARUNA_LANE_RECONNECTING) {
        if (ep->rp.probing & UCS_BIT(lane)) {
            return 0; /* its READ completes or fails by itself */
        }
        /* the probe to post, or (NO_RESOURCE) the peer's answer to wait
         * for */
        status = ep->rp.probe_wait ?
                 uct_rc_varuna_ep_reprotect_post_probe(iface, ep, lane) :
                 UCS_ERR_NO_RESOURCE;
        if (status == UCS_OK) {
            return 0;
        }
        if ((status == UCS_ERR_NO_RESOURCE) &&
            (now < ep->rp.sent + iface->config.reprotect_timeout)) {
            return 1;
        }
        if (ep->lane[lane].state == UCT_RC_VARUNA_LANE_RECONNECTING) {
            ucs_diag("rc_varuna: ep %p: re-protection %u of lane %u: %s "
                     "within %.0f ms, asking again", ep, ep->rp.attempt,
                     lane, ep->rp.probe_wait ? "no room for the probe" :
                     "no answer", ucs_time_to_msec(now - ep->rp.sent));
            ep->lane[lane].state = UCT_RC_VARUNA_LANE_FAILED;
        }
    }

    if ((ep->lane[lane].state != UCT_RC_VARUNA_LANE_FAILED) ||
        !uct_rc_varuna_ep_lane_port_up(iface, lane)) {
        return 0; /* its port's event */
    }
    if (!uct_rc_varuna_reprotect_room(iface, ep, ep->active)) {
        return 1;
    }

    if (now < ep->rp.next_try) {
        return 1; /* quarantined: its probe failed */
    }
    if ((ep->rp.backoff != 0) &&
        (now < ep->rp.sent + ep->rp.backoff)) {
        /* the peer's port was down or it was busy: asking every interval
         * would cost two messages per endpoint for as long as its port
         * stays down */
        return 1;
    }

    if (uct_rc_varuna_lane_reset(iface, ep, lane) != UCS_OK) {
        return 1;
    }
    ep->rp.probe_wait = 0;
    ep->rp.lane       = (uint8_t)lane;
    ep->rp.psn        = ep->lane[lane].sq_psn;
    ep->rp.sent       = now;
    ep->rp.attempt++;
    msg = uct_rc_varuna_ep_queue_msg(ep, UCT_RC_VARUNA_CTRL_REPROTECT_REQ,
                                     lane, ep->rp.psn, ep->rp.attempt);
    uct_rc_varuna_msg_port_addr(iface, msg, lane);
    uct_rc_varuna_ep_ctrl_kick(ep);
    return 1; /* the answer's timeout */
}

/* The lane is the standby again (both sides know it carried a READ) */
static void uct_rc_varuna_ep_reprotect_done(uct_rc_varuna_iface_t *iface,
                                            uct_rc_varuna_ep_t *ep,
                                            unsigned lane)
{
    ucs_time_t now = ucs_get_time();
    ucs_time_t up  = uct_rc_varuna_ep_unprotected_up(iface, ep, lane, now);
    char buf[64];

    uct_rc_varuna_lane_str(iface, lane, buf, sizeof(buf));
    ucs_diag("rc_varuna: ep %p: lane %s is the standby again, %.1f ms after "
             "its port came back (request %u%s)", ep, buf,
             ucs_time_to_msec(up),
             ep->rp.initiator ? ep->rp.attempt : ep->rp.peer_attempt,
             (ep->rp.probes_failed > 0) ? ", out of quarantine" : "");
    uct_rc_varuna_ep_report_reprotected(iface, ep, buf, now, up);

    ep->lane[lane].state = UCT_RC_VARUNA_LANE_STANDBY;
    ep->rp.backoff       = 0;
    ep->rp.probe_wait    = 0;
    ep->rp.unprotected   = 0;
    ep->rp.probes_failed = 0;
    ep->rp.next_try      = 0;
    iface->fo.reprotected++;
    if (!ep->rp.done_pending) {
        uct_rc_varuna_ep_reprotect_unlist(ep);
    }
    uct_rc_varuna_ep_failover_noticed(ep);
}

/*
 * Connected again, but not yet a standby: a port that is ACTIVE says
 * nothing about a link that drops packets silently (on rxe a one-way loss
 * raises no event), and a standby that cannot carry traffic ends the
 * endpoint at the next failover. So the initiator first reads its log word
 * over the new lane (the request crosses one way, the response the other)
 * and tells the peer with REPROTECT_DONE; a failed READ fails the lane
 * again, and re-protection starts over.
 */
static ucs_status_t
uct_rc_varuna_ep_reprotect_connect(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, unsigned lane,
                                   uint32_t peer_psn)
{
    ucs_status_t status;

    status = uct_rc_varuna_lane_connect(iface, ep, lane, ep->peer.qpn[lane],
                                        peer_psn, &ep->peer.ah[lane],
                                        ep->peer.path_mtu);
    if (status != UCS_OK) {
        ep->lane[lane].state = UCT_RC_VARUNA_LANE_FAILED;
        return status;
    }

    if (!ep->rp.initiator) {
        return UCS_OK; /* RECONNECTING until the initiator's DONE */
    }

    ep->rp.probe_wait = 1;
    return uct_rc_varuna_ep_reprotect_post_probe(iface, ep, lane);
}

/*
 * The probe READ of a re-protected lane failed (initiator) while the lane's
 * port is up: the path passes nothing one way or the other, whatever its
 * port says (a one-way loss raises no event). It is quarantined: not made
 * the standby, and tried again after a wait that doubles with each failed
 * probe, up to QUARANTINE_MAX. Trying at once, every endpoint reset its QP
 * and the peer's some four times a second for as long as the loss lasted
 * (1,724 failed probes in 8 s, 64 endpoints on rxe).
 */
/* The wait after the n-th probe in a row that failed (n > 0): 4 x
 * REPROTECT_INTERVAL, doubling, up to QUARANTINE_MAX */
static ucs_time_t uct_rc_varuna_quarantine_wait(uct_rc_varuna_iface_t *iface,
                                                unsigned n)
{
    ucs_time_t wait = 4 * iface->config.reprotect_interval;

    while ((--n > 0) && (wait < iface->config.quarantine_max)) {
        wait *= 2;
    }
    return ucs_min(wait, iface->config.quarantine_max);
}

static void uct_rc_varuna_ep_reprotect_probe_failed(uct_rc_varuna_iface_t *iface,
                                                    uct_rc_varuna_ep_t *ep,
                                                    unsigned lane,
                                                    enum ibv_wc_status status)
{
    ucs_time_t now = ucs_get_time();
    ucs_time_t wait;
    char name[64];

    uct_rc_varuna_lane_fence(&ep->lane[lane]);
    uct_rc_varuna_ep_reprotect_list(ep);
    if (!uct_rc_varuna_ep_lane_port_up(iface, lane)) {
        return; /* the port event brings it back */
    }

    iface->fo.probes_failed++;
    ep->rp.probes_failed++;
    wait            = uct_rc_varuna_quarantine_wait(iface,
                                                    ep->rp.probes_failed);
    ep->rp.next_try = now + wait;

    uct_rc_varuna_lane_str(iface, lane, name, sizeof(name));
    if (ep->rp.probes_failed > 1) {
        ucs_debug("rc_varuna: ep %p: path %s failed probe %u (%s), next "
                  "try in %.0f ms", ep, name, ep->rp.probes_failed,
                  ibv_wc_status_str(status), ucs_time_to_msec(wait));
        return;
    }
    iface->fo.quarantined++;
    ucs_diag("rc_varuna: ep %p: path %s quarantined: its port is up but the "
             "probe READ did not cross it (%s); it is not the standby, next "
             "try in %.0f ms, then less and less often", ep, name,
             ibv_wc_status_str(status), ucs_time_to_msec(wait));
    uct_rc_varuna_ep_report_quarantined(iface, ep, name,
                                        ibv_wc_status_str(status), now, wait);
}

/* The probe READ of a re-protected lane completed (initiator) */
static void uct_rc_varuna_ep_reprotect_probed(uct_rc_varuna_iface_t *iface,
                                              uct_rc_varuna_ep_t *ep,
                                              unsigned lane)
{
    if ((ep->fo.state == UCT_RC_VARUNA_FO_IDLE) && (ep->fo.log_desc != NULL)) {
        ucs_mpool_put(ep->fo.log_desc);
        ep->fo.log_desc = NULL;
    }
    if (ep->lane[lane].state != UCT_RC_VARUNA_LANE_RECONNECTING) {
        return; /* given up meanwhile (no answer in time, port down) */
    }
    ep->rp.done_pending = 1;
    uct_rc_varuna_ep_reprotect_done(iface, ep, lane);
    uct_rc_varuna_ep_reprotect_send_done(ep);
}

static void uct_rc_varuna_ep_reprotect_req(uct_rc_varuna_iface_t *iface,
                                           uct_rc_varuna_ep_t *ep,
                                           const uct_rc_varuna_ctrl_msg_t *msg)
{
    unsigned lane = msg->lane;
    uct_rc_varuna_ctrl_msg_t *answer;
    uct_rc_varuna_lane_state_t state;
    ucs_status_t status;

    if (lane >= UCT_RC_VARUNA_NUM_SIDES) {
        return;
    }
    ep->rp.ask = 0; /* the initiator re-protects the lane */

    state = (uct_rc_varuna_lane_state_t)ep->lane[lane].state;
    if ((state == UCT_RC_VARUNA_LANE_RECONNECTING) && !ep->rp.initiator) {
        /* the requests crossed (the peer's rule made it the initiator as
         * well): the initiator refuses the peer's, the other side gives
         * up its own and answers; the initiator's ACK or NACK of the
         * abandoned attempt then finds the lane no longer RECONNECTING */
        ucs_debug("rc_varuna: ep %p: re-protection requests crossed, "
                  "answering the peer's", ep);
        state = UCT_RC_VARUNA_LANE_FAILED;
    }
    if (!uct_rc_varuna_ep_msgq_room(ep)) {
        /* no room for the answer (our lane has had none for a while):
         * the request is left alone, and the initiator asks again */
        ucs_diag("rc_varuna: ep %p: re-protection request %u left for the "
                 "initiator's next one: %u control messages wait", ep,
                 msg->attempt, ep->ctrl.msgq_count);
        return;
    }
    if ((ep->fo.state == UCT_RC_VARUNA_FO_IDLE) && (lane != ep->active) &&
        (ep->lane[lane].qp != NULL) &&
        ((state == UCT_RC_VARUNA_LANE_FAILED) ||
         (state == UCT_RC_VARUNA_LANE_STANDBY)) &&
        uct_rc_varuna_ep_lane_port_up(iface, lane)) {
        status = uct_rc_varuna_lane_reset(iface, ep, lane);
        if (status == UCS_OK) {
            uct_rc_varuna_ep_msg_peer_addr(iface, ep, msg);
            status = uct_rc_varuna_ep_reprotect_connect(iface, ep, lane,
                                                        msg->psn);
        }
    } else {
        status = UCS_ERR_BUSY;
    }

    if (status != UCS_OK) {
        uct_rc_varuna_ep_queue_msg(ep, UCT_RC_VARUNA_CTRL_REPROTECT_NACK,
                                   lane, 0, msg->attempt);
        uct_rc_varuna_ep_ctrl_kick(ep);
        return;
    }

    ep->rp.peer_attempt = msg->attempt;
    answer = uct_rc_varuna_ep_queue_msg(ep, UCT_RC_VARUNA_CTRL_REPROTECT_ACK,
                                        lane, ep->lane[lane].sq_psn,
                                        msg->attempt);
    uct_rc_varuna_msg_port_addr(iface, answer, lane);
    uct_rc_varuna_ep_ctrl_kick(ep);
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

    about = msg->lane;
    uct_rc_varuna_iface_reprotect_recheck(iface);
    ucs_debug("rc_varuna: ep %p: control message %u about lane %u epoch %u "
              "psn 0x%x on lane %u", ep, msg->type, about, msg->epoch,
              msg->psn, lane);

    switch (msg->type) {
    case UCT_RC_VARUNA_CTRL_FAILOVER:
        if ((lane != ep->active) && !ep->rp.initiator &&
            (ep->lane[lane].state == UCT_RC_VARUNA_LANE_RECONNECTING)) {
            /* the peer fails over onto the lane this came on, so it holds
             * that lane for its standby, which the initiator does only
             * once the lane carried its probe READ: its REPROTECT_DONE is
             * behind (on the other lane) or was lost with that lane */
            ucs_diag("rc_varuna: ep %p: the peer's FAILOVER on lane %u "
                     "says the lane is the standby", ep, lane);
            uct_rc_varuna_ep_reprotect_done(iface, ep, lane);
        }
        uct_rc_varuna_ep_failover_peer_fenced(ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_REQ:
        uct_rc_varuna_ep_reprotect_req(iface, ep, msg);
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_ACK:
        if ((about == ep->rp.lane) && (msg->attempt == ep->rp.attempt) &&
            (ep->lane[about].state == UCT_RC_VARUNA_LANE_RECONNECTING) &&
            !(ep->rp.probing & UCS_BIT(about))) {
            uct_rc_varuna_ep_msg_peer_addr(iface, ep, msg);
            uct_rc_varuna_ep_reprotect_connect(iface, ep, about, msg->psn);
        }
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_DONE:
        if ((about < UCT_RC_VARUNA_NUM_SIDES) && (about != ep->active) &&
            (msg->attempt == ep->rp.peer_attempt) &&
            (ep->lane[about].state == UCT_RC_VARUNA_LANE_RECONNECTING)) {
            uct_rc_varuna_ep_reprotect_done(iface, ep, about);
        }
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_ASK:
        if (ep->rp.initiator && (about < UCT_RC_VARUNA_NUM_SIDES) &&
            (about != ep->active) &&
            (ep->lane[about].state == UCT_RC_VARUNA_LANE_STANDBY)) {
            /* a standby whose other side is not connected carries
             * nothing: fail it, and re-protect it as after a failover */
            ucs_diag("rc_varuna: ep %p: the peer's side of standby lane %u "
                     "is not connected: re-protecting it", ep, about);
            uct_rc_varuna_lane_fence(&ep->lane[about]);
            uct_rc_varuna_ep_reprotect_list(ep);
        }
        break;
    case UCT_RC_VARUNA_CTRL_REPROTECT_NACK:
        if ((about == ep->rp.lane) && (msg->attempt == ep->rp.attempt) &&
            (ep->lane[about].state == UCT_RC_VARUNA_LANE_RECONNECTING)) {
            ep->lane[about].state = UCT_RC_VARUNA_LANE_FAILED;
            /* the first refusal is most often the peer not having seen
             * its port come back yet: ask again soon, then less and less
             * often, up to REPROTECT_TIMEOUT */
            ep->rp.backoff = (ep->rp.backoff == 0) ?
                             iface->config.reprotect_interval :
                             ucs_min(2 * ep->rp.backoff,
                                     iface->config.reprotect_timeout);
        }
        break;
    default:
        ucs_debug("rc_varuna: ep %p: unknown control message %u", ep,
                  msg->type);
        break;
    }
}
