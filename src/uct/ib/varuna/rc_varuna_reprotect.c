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
 * Re-protection (DESIGN.md section 5.6).
 *
 * Re-protection makes a failed lane the standby again once its ports are
 * up: the initiator resets its QP and sends REPROTECT_REQ with its new PSN
 * and port address; the peer resets and connects its own and answers
 * REPROTECT_ACK (or _NACK); the initiator connects, reads its log word over
 * the new lane as a probe, and says REPROTECT_DONE. All of it runs off the
 * critical path, from the interface's periodic check. Its messages and
 * requests go through the control channel (rc_varuna_ctrl.c), whose
 * dispatchers hand their answers to the uct_rc_varuna_ep_reprotect_*
 * functions here.
 */


static ucs_status_t
uct_rc_varuna_ep_reprotect_connect(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, unsigned lane,
                                   uint32_t peer_psn);


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


/* The peer's QP of the lane as its REPROTECT_REQ or _ACK names it: a new
 * one when the peer made a long standby short again (rc_varuna_grow.c) */
static void uct_rc_varuna_ep_msg_peer_qpn(uct_rc_varuna_ep_t *ep,
                                          const uct_rc_varuna_ctrl_msg_t *msg)
{
    if (msg->qpn != 0) {
        ep->peer.qpn[msg->lane] = msg->qpn;
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
    uct_rc_varuna_lane_set_state(ep, UCT_RC_VARUNA_SIDE_STANDBY,
                                 UCT_RC_VARUNA_LANE_FAILED);
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
        uct_rc_varuna_lane_set_state(ep, lane, UCT_RC_VARUNA_LANE_FAILED);
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
/* Whether the peer's side of the active lane is known to be connected:
 * something crossed it (a failover, which takes both sides, a completion,
 * an active message, a control message, the peer's log word written
 * behind its operations), or REPROTECT_TIMEOUT passed since ours was
 * connected. Before, the peer may not have connected its QP: UCP connects
 * the two sides one after the other, and an endpoint created while a port
 * is down lists its standby for re-protection at once. A request to a QP
 * that is not ready to receive dies by retries, and takes the active lane
 * with it (seen: a client connecting after a failure lost all its
 * endpoints at the server's first request). Evidence alone was not enough:
 * an endpoint that only received RMA, or nothing, never saw any, and its
 * standby lost to a port event was never re-protected (issue 48). */
static int uct_rc_varuna_ep_crossed(uct_rc_varuna_iface_t *iface,
                                    uct_rc_varuna_ep_t *ep, ucs_time_t now)
{
    return (ep->fo.epoch != 0) || (ep->tx.done_sn != 0) ||
           (ep->rx.am_seq != 0) || ep->rp.heard ||
           (*uct_rc_varuna_log_word(ep) != 0) ||
           (now >= ep->rp.connected + iface->config.reprotect_timeout);
}

/*
 * Not the initiator, with our side of the standby failed alone (it could
 * not be connected, or its port failed, rp.ask): the peer's side may be a
 * working standby as far as it knows, and the initiator re-protects only
 * lanes it knows are failed (after a failover both sides know). So it is
 * told, and told again each REPROTECT_TIMEOUT until its request comes.
 * Returns whether the endpoint waits for time to pass.
 */
static int uct_rc_varuna_ep_reprotect_ask(uct_rc_varuna_iface_t *iface,
                                          uct_rc_varuna_ep_t *ep,
                                          unsigned lane, ucs_time_t now)
{
    if ((ep->lane[lane].state != UCT_RC_VARUNA_LANE_FAILED) ||
        (ep->lane[lane].qp == NULL) ||
        !uct_rc_varuna_ep_lane_port_up(iface, lane)) {
        return 0; /* the peer's request, or its port's event */
    }
    if (!ep->rp.ask) {
        if (uct_rc_varuna_ep_unprotected_up(iface, ep, lane, now) <
            iface->config.reprotect_timeout) {
            return 1; /* the initiator's request, or the timeout */
        }
        /* the initiator has not re-protected the lane for a timeout since
         * its port came back: it may not know it failed, or its attempt
         * stalled; telling it again costs one message per timeout */
        ep->rp.ask = 1;
    }
    if (!uct_rc_varuna_ep_crossed(iface, ep, now) ||
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
    if ((ep->gr.state == UCT_RC_VARUNA_GROW_DRAIN) ||
        (ep->gr.state == UCT_RC_VARUNA_GROW_SWAPPED)) {
        /* a grow moves the traffic to a new QP: a standby back meanwhile
         * could start a failover whose classification reads the QP the
         * peer's requests no longer go to (rc_varuna_grow.c); it takes
         * a drain and a message */
        return 1;
    }

    if (!ep->rp.self && !uct_rc_varuna_ep_crossed(iface, ep, now)) {
        return 1; /* evidence, or the time since the connection */
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
            uct_rc_varuna_lane_set_state(ep, lane, UCT_RC_VARUNA_LANE_FAILED);
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

    if (ep->gr.state == UCT_RC_VARUNA_GROW_ASKED) {
        /* nothing moved yet: the primary back is worth more than a full
         * queue on the standby's port (the peer drops its new QP when our
         * request comes). Only when the request goes now: while the path
         * is quarantined or the peer backed off, a grow stopped at every
         * check started again at the next, a QP made and destroyed each
         * time, for as long as the path stays quarantined */
        uct_rc_varuna_ep_grow_abort(ep, "the other lane's port is back");
    }

    if (uct_rc_varuna_ep_grow_reset_lane(iface, ep, lane) != UCS_OK) {
        return 1;
    }
    ep->rp.probe_wait = 0;
    ep->rp.lane       = (uint8_t)lane;
    ep->rp.psn        = ep->lane[lane].sq_psn;
    ep->rp.sent       = now;
    ep->rp.attempt++;
    if (ep->rp.self) {
        /* its own peer: the lane's QP connects to itself, with its own
         * new PSN, and the probe READ proves it as for any other; no
         * request, whose answer would reset the same QP again */
        ep->peer.qpn[lane] = ep->lane[lane].qp->qp_num;
        uct_rc_varuna_ep_reprotect_connect(iface, ep, lane, ep->rp.psn);
        return 1;
    }
    msg = uct_rc_varuna_ep_queue_msg(ep, UCT_RC_VARUNA_CTRL_REPROTECT_REQ,
                                     lane, ep->rp.psn, ep->rp.attempt);
    uct_rc_varuna_msg_port_addr(iface, msg, lane);
    msg->qpn = ep->lane[lane].qp->qp_num; /* renewed, or the same */
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
    uct_rc_varuna_ep_report_reprotected(iface, ep, lane, buf, now, up);

    uct_rc_varuna_lane_set_state(ep, lane, UCT_RC_VARUNA_LANE_STANDBY);
    /* (the peer's DONE or FAILOVER: it connected to our number) */
    uct_rc_varuna_ep_grow_renew_known(ep, lane);
    ep->rp.backoff       = 0;
    ep->rp.probe_wait    = 0;
    ep->rp.unprotected   = 0;
    ep->rp.probes_failed = 0;
    ep->rp.next_try      = 0;
    iface->fo.reprotected++;
    if (!ep->rp.done_pending) {
        uct_rc_varuna_ep_reprotect_unlist(ep);
    }
    uct_rc_varuna_ep_failback_arm(ep, lane);
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
        uct_rc_varuna_lane_set_state(ep, lane, UCT_RC_VARUNA_LANE_FAILED);
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

void uct_rc_varuna_ep_reprotect_probe_failed(uct_rc_varuna_iface_t *iface,
                                             uct_rc_varuna_ep_t *ep,
                                             unsigned lane,
                                             enum ibv_wc_status status)
{
    ucs_time_t now = ucs_get_time();
    ucs_time_t wait;
    char name[64];

    uct_rc_varuna_lane_fence(ep, lane);
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
void uct_rc_varuna_ep_reprotect_probed(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep, unsigned lane)
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

/* REPROTECT_REQ: reset and connect our side of the lane, and answer */
void uct_rc_varuna_ep_reprotect_recv_req(uct_rc_varuna_iface_t *iface,
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
    if (ep->gr.state == UCT_RC_VARUNA_GROW_READY) {
        /* the initiator gave up the grow it asked for */
        uct_rc_varuna_ep_grow_abort(ep, "re-protection instead");
    }

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
        status = uct_rc_varuna_ep_grow_reset_lane(iface, ep, lane);
        if (status == UCS_OK) {
            uct_rc_varuna_ep_msg_peer_addr(iface, ep, msg);
            uct_rc_varuna_ep_msg_peer_qpn(ep, msg);
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
    answer->qpn = ep->lane[lane].qp->qp_num;
    uct_rc_varuna_ep_ctrl_kick(ep);
}

/* ------------------------------------------------------------------------
 * The peer's messages about re-protection (from the control channel's
 * dispatcher, uct_rc_varuna_ep_ctrl_recv)
 * ------------------------------------------------------------------------ */

/* The peer's FAILOVER came on a lane we are reconnecting (not the
 * initiator) */
void uct_rc_varuna_ep_reprotect_recv_failover(uct_rc_varuna_iface_t *iface,
                                              uct_rc_varuna_ep_t *ep,
                                              unsigned lane)
{
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
}

/* REPROTECT_ACK: the peer connected its side of the lane (initiator) */
void uct_rc_varuna_ep_reprotect_recv_ack(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg)
{
    unsigned about = msg->lane;

    if ((about == ep->rp.lane) && (msg->attempt == ep->rp.attempt) &&
        (ep->lane[about].state == UCT_RC_VARUNA_LANE_RECONNECTING) &&
        !(ep->rp.probing & UCS_BIT(about))) {
        uct_rc_varuna_ep_msg_peer_addr(iface, ep, msg);
        uct_rc_varuna_ep_msg_peer_qpn(ep, msg);
        /* the peer answered with the lane's QP, renewed or not, connected
         * to ours: it has our number */
        uct_rc_varuna_ep_grow_renew_known(ep, about);
        uct_rc_varuna_ep_reprotect_connect(iface, ep, about, msg->psn);
    }
}

/* REPROTECT_DONE: the initiator's probe READ crossed the lane */
void uct_rc_varuna_ep_reprotect_recv_done(uct_rc_varuna_iface_t *iface,
                                          uct_rc_varuna_ep_t *ep,
                                          const uct_rc_varuna_ctrl_msg_t *msg)
{
    unsigned about = msg->lane;

    if ((about < UCT_RC_VARUNA_NUM_SIDES) && (about != ep->active) &&
        (msg->attempt == ep->rp.peer_attempt) &&
        (ep->lane[about].state == UCT_RC_VARUNA_LANE_RECONNECTING)) {
        uct_rc_varuna_ep_reprotect_done(iface, ep, about);
    }
}

/* REPROTECT_ASK: the peer's side of our standby is not connected
 * (initiator) */
void uct_rc_varuna_ep_reprotect_recv_ask(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg)
{
    unsigned about = msg->lane;

    if (!ep->rp.initiator || (about >= UCT_RC_VARUNA_NUM_SIDES) ||
        (about == ep->active)) {
        return;
    }
    if (ep->lane[about].state == UCT_RC_VARUNA_LANE_FAILED) {
        /* ours is lost too: the peer waits for our request, which the
         * periodic check sends once its port is up */
        uct_rc_varuna_ep_reprotect_list(ep);
    } else if (ep->lane[about].state == UCT_RC_VARUNA_LANE_STANDBY) {
        /* a standby whose other side is not connected carries
         * nothing: fail it, and re-protect it as after a failover */
        ucs_diag("rc_varuna: ep %p: the peer's side of standby lane %u "
                 "is not connected: re-protecting it", ep, about);
        uct_rc_varuna_lane_fence(ep, about);
        uct_rc_varuna_ep_reprotect_list(ep);
    }
}

/* REPROTECT_NACK: the peer could not reconnect its side (initiator) */
void uct_rc_varuna_ep_reprotect_recv_nack(uct_rc_varuna_iface_t *iface,
                                          uct_rc_varuna_ep_t *ep,
                                          const uct_rc_varuna_ctrl_msg_t *msg)
{
    unsigned about = msg->lane;

    if ((about == ep->rp.lane) && (msg->attempt == ep->rp.attempt) &&
        (ep->lane[about].state == UCT_RC_VARUNA_LANE_RECONNECTING)) {
        uct_rc_varuna_lane_set_state(ep, about, UCT_RC_VARUNA_LANE_FAILED);
        /* the first refusal is most often the peer not having seen
         * its port come back yet: ask again soon, then less and less
         * often, up to REPROTECT_TIMEOUT */
        ep->rp.backoff = (ep->rp.backoff == 0) ?
                         iface->config.reprotect_interval :
                         ucs_min(2 * ep->rp.backoff,
                                 iface->config.reprotect_timeout);
    }
}
