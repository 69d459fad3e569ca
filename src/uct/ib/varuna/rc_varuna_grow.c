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

#include <ucs/debug/log.h>
#include <ucs/time/time.h>


/*
 * The active lane's short send queue replaced by a full one (DESIGN.md
 * section 5.9).
 *
 * A standby waits with a short send queue (STANDBY_TX_QUEUE_LEN), which
 * keeps an idle endpoint's memory small; after a failover onto it the
 * endpoint has that many send credits for as long as its primary stays
 * down, a fraction of its rate. A QP's send queue cannot be resized, so a
 * new QP with the primary's length (TX_QUEUE_LEN) is made on the same port
 * and the traffic moves to it:
 *
 *   initiator                               peer
 *   ASKED: make G, GROW_REQ(G) ---------->  make G', connect it to G,
 *                                           READY  <--- GROW_ACK(G')
 *   connect G to G'; DRAIN: hold new
 *   operations until all ours on the old
 *   QP completed; swap to G, SWAPPED,
 *   GROW_SWAP on G  -------------------->   DRAIN: the same on its side;
 *                                           swap to G', SWAPPED
 *                   <--------------------   GROW_SWAP_ACK on G'
 *   a check later: destroy the old QP       a check later: the same
 *
 * Exactly once without a classification: each side moves its own requests
 * only when none of them is in flight on the old QP (all completed, so
 * executed at the peer), and from then on sends on the new one only. At
 * every moment a side's requests are in flight on one QP; each side's new
 * QP is connected before the other side may send on it (the initiator's
 * before GROW_ACK is sent, ours before GROW_SWAP is). Receives of either
 * QP come to the same endpoint and lane (the side's QP table has both);
 * active messages keep their order by sequence number, as across a
 * failover. A failover of the lane aborts the grow: the QP not carrying
 * the traffic goes, and the failover runs on the lane's QP as always.
 * Re-protection, which could bring back a standby and with it a failover
 * whose classification reads a QP's expected PSN, waits until no grow is
 * under way (uct_rc_varuna_ep_reprotect_try); a grow starts only while the
 * other lane is failed and not being reconnected. So a failure during the
 * switch ends the endpoint (both lanes lost) as it would without the grow.
 *
 * UCP's lane failover then carries each side's TX token, which names the
 * lane by the connection its traffic is on: (our QP, the peer's). One side
 * may have moved and the other not, so the two tokens can name different
 * connections of the lane. Each side keeps the QP not carrying its traffic
 * (ep->gr.qp) with the peer's QP it is connected to (ep->gr.peer_qpn) until
 * both moved, and a dead endpoint keeps it until it is destroyed; the
 * peer's interface finds the connection a token names among both
 * (uct_rc_varuna_ep_grow_conn_qp), fences both QPs and answers the expected
 * PSN of the one named, which is where the token's requests went.
 *
 * Only the side that initiates re-protection asks, so the two sides never
 * start crossing grows; an endpoint connected to itself is both sides and
 * connects G to G.
 *
 * The standby made short again. After a failback the traffic is back on
 * the primary and the grown QP waits as the standby, with the primary's
 * queue. The failback failed that lane, so re-protection resets its QP
 * anyway: where the QP is longer than its side's, each side makes a new
 * one of the standby's length instead (uct_rc_varuna_ep_grow_reset_lane)
 * and REPROTECT_REQ and _ACK carry the sender's QP number of the lane. A
 * side that renewed is RENEWED until it knows the peer has its new number
 * (the initiator: the peer's REPROTECT_ACK; the other side: the
 * initiator's REPROTECT_DONE or its FAILOVER on the lane, which make the
 * lane the standby), and keeps the old QP, in the error state since the
 * failback, in ep->gr meanwhile. Both lanes lost then: our TX token names
 * no connection on the lane (nothing of ours is in flight on a lane being
 * reconnected, and the peer may not know our new QP), and the peer's,
 * which may still name the old connection, is found in ep->gr.
 */


static const char *uct_rc_varuna_grow_state_str(uct_rc_varuna_grow_state_t state)
{
    static const char *names[] = {
        [UCT_RC_VARUNA_GROW_IDLE]    = "idle",
        [UCT_RC_VARUNA_GROW_ASKED]   = "asked",
        [UCT_RC_VARUNA_GROW_READY]   = "ready",
        [UCT_RC_VARUNA_GROW_DRAIN]   = "drain",
        [UCT_RC_VARUNA_GROW_SWAPPED] = "swapped",
        [UCT_RC_VARUNA_GROW_RENEWED] = "renewed"
    };

    return (state < ucs_static_array_size(names)) ? names[state] : "unknown";
}

/* The only place ep->gr.state changes */
static void uct_rc_varuna_ep_grow_enter(uct_rc_varuna_ep_t *ep,
                                        uct_rc_varuna_grow_state_t state)
{
    if (state != UCT_RC_VARUNA_GROW_SWAPPED) {
        ep->gr.swap_acked = 0;
    }
    if (ep->gr.state == state) {
        return;
    }
    if ((state == UCT_RC_VARUNA_GROW_IDLE) && ep->gr.counted) {
        ucs_assert(uct_rc_varuna_ep_iface(ep)->fo.grows_asked > 0);
        uct_rc_varuna_ep_iface(ep)->fo.grows_asked--;
        ep->gr.counted = 0;
    }
    ucs_debug("rc_varuna: ep %p: grow %s -> %s", ep,
              uct_rc_varuna_grow_state_str(
                      (uct_rc_varuna_grow_state_t)ep->gr.state),
              uct_rc_varuna_grow_state_str(state));
    ep->gr.state = (uint8_t)state;
    ep->gr.since = ucs_get_time();
}

static void uct_rc_varuna_ep_grow_list(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    if (!ep->gr.listed) {
        ucs_list_add_tail(&iface->fo.grow, &ep->gr.list);
        ep->gr.listed = 1;
    }
}

static void uct_rc_varuna_ep_grow_unlist(uct_rc_varuna_ep_t *ep)
{
    if (ep->gr.listed) {
        ucs_list_del(&ep->gr.list);
        ep->gr.listed = 0;
    }
}

/* New operations go again, with the credits parked meanwhile */
static void uct_rc_varuna_ep_grow_release(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    if (!ep->gr.hold) {
        return;
    }
    ep->gr.hold = 0;
    uct_rc_varuna_ep_tx_unpark(iface, ep);
}

/* The QP not carrying the traffic (the new one before the swap, the old one
 * after it) goes; new operations go again */
static void uct_rc_varuna_ep_grow_drop(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    uct_rc_varuna_ep_grow_release(ep);
    if (ep->gr.qp != NULL) {
        uct_rc_varuna_qp_destroy(iface, ep, ep->gr.lane, ep->gr.qp);
        ep->gr.qp     = NULL;
        ep->gr.fenced = 0;
    }
    uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_IDLE);
}

/* The lane the traffic is on has a shorter send queue than the primary's */
static int uct_rc_varuna_ep_grow_short(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep)
{
    return ep->lane[ep->active].max_wr <
           iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].tx_max_wr;
}

/* A failover has ended on a lane with a short send queue: the initiator
 * replaces it, GROW_AFTER from now, unless the other lane is back first */
void uct_rc_varuna_ep_grow_arm(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    if ((iface->config.grow_after == UCS_TIME_INFINITY) ||
        !(ep->rp.initiator || ep->rp.self) ||
        !uct_rc_varuna_ep_grow_short(iface, ep)) {
        return;
    }
    ep->gr.next_try = ucs_get_time() + iface->config.grow_after;
    uct_rc_varuna_ep_grow_list(ep);
}

/* A failover of the lane, or the endpoint's end: whatever the grow had
 * under way is given up */
void uct_rc_varuna_ep_grow_abort(uct_rc_varuna_ep_t *ep, const char *why)
{
    if (ep->gr.state != UCT_RC_VARUNA_GROW_IDLE) {
        ucs_diag("rc_varuna: ep %p: the send queue's replacement stops in "
                 "state %s: %s", ep,
                 uct_rc_varuna_grow_state_str(
                         (uct_rc_varuna_grow_state_t)ep->gr.state), why);
    }
    uct_rc_varuna_ep_grow_drop(ep);
}

/*
 * The endpoint ends (its last lane failed, or it died): whatever the grow
 * had under way stops, but the QP not carrying the traffic stays, fenced,
 * until the endpoint is destroyed. The peer may have moved when we did not,
 * or not when we did, and its failover's token then names that QP's
 * connection (uct_rc_varuna_iface_derive_rx_token).
 */
void uct_rc_varuna_ep_grow_end(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_ep_grow_release(ep);
    uct_rc_varuna_ep_grow_unlist(ep);
    uct_rc_varuna_ep_grow_fence(ep);
    if (ep->gr.state != UCT_RC_VARUNA_GROW_RENEWED) {
        /* (a renewed lane stays unnamed in the token) */
        uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_IDLE);
    }
}

/* The endpoint dies (the QP stays, uct_rc_varuna_ep_grow_end) or goes
 * away */
void uct_rc_varuna_ep_grow_cleanup(uct_rc_varuna_ep_t *ep)
{
    if (ep->fo.state == UCT_RC_VARUNA_FO_DEAD) {
        uct_rc_varuna_ep_grow_end(ep);
        return;
    }
    uct_rc_varuna_ep_grow_drop(ep);
    uct_rc_varuna_ep_grow_unlist(ep);
}

/* Nothing more executes on the QP not carrying the traffic */
void uct_rc_varuna_ep_grow_fence(uct_rc_varuna_ep_t *ep)
{
    if ((ep->gr.qp != NULL) && !ep->gr.fenced) {
        uct_ib_modify_qp(ep->gr.qp, IBV_QPS_ERR);
        ep->gr.fenced = 1;
    }
}

/* Our QP of the connection (our QP number, the peer's) on a lane: the
 * lane's, or the other one a grow keeps; NULL if neither */
struct ibv_qp *uct_rc_varuna_ep_grow_conn_qp(const uct_rc_varuna_ep_t *ep,
                                             unsigned lane, uint32_t qpn,
                                             uint32_t peer_qpn)
{
    const uct_rc_varuna_lane_t *l = &ep->lane[lane];

    if ((l->qp != NULL) && (l->qp->qp_num == qpn) &&
        (ep->peer.qpn[lane] == peer_qpn)) {
        return l->qp;
    }
    if ((ep->gr.qp != NULL) && (ep->gr.lane == lane) &&
        (ep->gr.qp->qp_num == qpn) && (ep->gr.peer_qpn == peer_qpn)) {
        return ep->gr.qp;
    }
    return NULL;
}

/* Whether our TX token names the lane's connection: not while the peer may
 * not have the number of the lane's renewed QP */
int uct_rc_varuna_ep_grow_names_lane(const uct_rc_varuna_ep_t *ep,
                                     unsigned lane)
{
    return (ep->gr.state != UCT_RC_VARUNA_GROW_RENEWED) ||
           (ep->gr.lane != lane);
}

/* A failed lane's QP made ready for re-protection: reset, or renewed with
 * its side's length where a grow made it longer (the standby made short
 * again, above) */
ucs_status_t uct_rc_varuna_ep_grow_reset_lane(uct_rc_varuna_iface_t *iface,
                                              uct_rc_varuna_ep_t *ep,
                                              unsigned lane)
{
    int failed = (ep->lane[lane].state == UCT_RC_VARUNA_LANE_FAILED);
    struct ibv_qp *old_qp;
    ucs_status_t status;
    char name[64];

    if ((ep->lane[lane].max_wr <= iface->side[lane].tx_max_wr) ||
        (ep->gr.state != UCT_RC_VARUNA_GROW_IDLE) || (ep->gr.qp != NULL)) {
        /* its own length, or the grow's QP slot taken (a later
         * re-protection renews it) */
        return uct_rc_varuna_lane_reset(iface, ep, lane);
    }

    status = uct_rc_varuna_lane_renew(iface, ep, lane, &old_qp);
    if (status != UCS_OK) {
        return status;
    }
    iface->fo.renewed++;
    iface->fo.grow_qps++;
    uct_rc_varuna_lane_str(iface, lane, name, sizeof(name));
    ucs_diag("rc_varuna: ep %p: standby lane %s made short again: qp 0x%x "
             "with %u send credits replaces qp 0x%x", ep, name,
             ep->lane[lane].qp->qp_num, ep->lane[lane].max_wr,
             old_qp->qp_num);
    ep->gr.qp       = old_qp;
    ep->gr.lane     = (uint8_t)lane;
    ep->gr.peer_qpn = ep->peer.qpn[lane];
    ep->gr.fenced   = failed; /* in the error state since */
    /* (a standby the peer asked to re-protect was not) */
    uct_rc_varuna_ep_grow_fence(ep);
    uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_RENEWED);
    return UCS_OK;
}

/* The peer has the number of the lane's renewed QP: the old one goes */
void uct_rc_varuna_ep_grow_renew_known(uct_rc_varuna_ep_t *ep, unsigned lane)
{
    if ((ep->gr.state == UCT_RC_VARUNA_GROW_RENEWED) &&
        (ep->gr.lane == lane)) {
        uct_rc_varuna_ep_grow_drop(ep);
    }
}

/* A new QP of the lane, the primary's length, on the lane's port */
static ucs_status_t uct_rc_varuna_ep_grow_create(uct_rc_varuna_iface_t *iface,
                                                 uct_rc_varuna_ep_t *ep,
                                                 unsigned lane)
{
    ucs_status_t status;

    status = uct_rc_varuna_qp_create(
            iface, ep, lane,
            iface->side[UCT_RC_VARUNA_SIDE_PRIMARY].tx_qp_len, &ep->gr.qp);
    if (status != UCS_OK) {
        ep->gr.qp = NULL;
        return status;
    }
    iface->fo.grow_qps++;
    ep->gr.lane = (uint8_t)lane;
    ep->gr.psn  = (uint32_t)ucs_generate_uuid((uintptr_t)ep->gr.qp) &
                  UCT_RC_VARUNA_PSN_MASK;
    return UCS_OK;
}

static ucs_status_t uct_rc_varuna_ep_grow_connect(uct_rc_varuna_iface_t *iface,
                                                  uct_rc_varuna_ep_t *ep,
                                                  uint32_t peer_qpn,
                                                  uint32_t peer_psn)
{
    ep->gr.peer_qpn = peer_qpn;
    return uct_rc_varuna_qp_connect(iface, ep->gr.qp, peer_qpn, peer_psn,
                                    ep->gr.psn, &ep->peer.ah[ep->gr.lane],
                                    ep->peer.path_mtu);
}

static void uct_rc_varuna_ep_grow_say(uct_rc_varuna_ep_t *ep,
                                      uct_rc_varuna_ctrl_type_t type)
{
    uct_rc_varuna_ctrl_msg_t *msg;

    msg = uct_rc_varuna_ep_queue_msg(ep, type, ep->gr.lane, ep->gr.psn,
                                     ep->gr.attempt);
    if (msg == NULL) {
        /* no room: the periodic check says it again */
        ep->gr.say = (uint8_t)type;
        uct_rc_varuna_ep_grow_list(ep);
        return;
    }
    if (ep->gr.qp != NULL) {
        msg->qpn = ep->gr.qp->qp_num;
    }
    ep->gr.say = 0;
    uct_rc_varuna_ep_ctrl_kick(ep);
}

/* A refusal of the peer's request, whatever our own grow is doing; not
 * said again when there is no room (the peer's request times out) */
static void uct_rc_varuna_ep_grow_refuse(uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *req,
                                         const char *why)
{
    ucs_diag("rc_varuna: ep %p: the peer's request %u to replace the send "
             "queue of lane %u refused: %s", ep, req->attempt, req->lane,
             why);
    if (uct_rc_varuna_ep_queue_msg(ep, UCT_RC_VARUNA_CTRL_GROW_NACK,
                                   req->lane, 0, req->attempt) != NULL) {
        uct_rc_varuna_ep_ctrl_kick(ep);
    }
}

/*
 * Our requests leave the old QP: new operations are held back (their
 * credits parked), a signaled control request goes behind a tail that went
 * out unsignaled (uct_rc_varuna_ep_post_grow_tail), and the swap waits
 * until everything completed.
 */
static void uct_rc_varuna_ep_grow_drain(uct_rc_varuna_ep_t *ep)
{
    if (!ep->gr.hold) {
        ep->gr.hold        = 1;
        ep->gr.held        = ucs_get_time();
        ep->gr.tail_posted = 0;
        ep->fo.parked      = uct_rc_txqp_available(&ep->super.txqp);
        uct_rc_txqp_available_set(&ep->super.txqp, 0);
    }
    if ((ep->tx.done_sn != ep->tx.sn) && (ep->tx.sig_sn != ep->tx.sn) &&
        !ep->gr.tail_posted &&
        (uct_rc_varuna_ep_post_grow_tail(ep) != UCS_OK)) {
        return; /* no control entry now: the periodic check again */
    }
    uct_rc_varuna_ep_grow_drained(ep);
}

/* The traffic moves to the new QP: the lane takes it, with its length and
 * the peer's new QP; the old connection waits in ep->gr for its
 * destruction */
static void uct_rc_varuna_ep_grow_swap(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_lane_t *lane = &ep->lane[ep->gr.lane];
    struct ibv_qp *old_qp      = lane->qp;
    uint16_t old_max_wr        = lane->max_wr;
    uint32_t old_peer_qpn      = ep->peer.qpn[ep->gr.lane];
    char name[64];

    lane->qp           = ep->gr.qp;
    lane->sq_psn       = ep->gr.psn;
    lane->init_psn     = ep->gr.psn;
    lane->log_sn       = 0; /* no log write on the new connection yet */
    lane->err_count    = 0;
    lane->lwr_given_up = 0;
    uct_rc_varuna_lane_set_len(lane, &iface->side[UCT_RC_VARUNA_SIDE_PRIMARY]);
    ep->peer.qpn[ep->gr.lane] = ep->gr.peer_qpn;
    /* the old connection, which the peer's token names until it moved */
    ep->gr.qp                 = old_qp;
    ep->gr.peer_qpn           = old_peer_qpn;

    /* the full queue's credits, at once (held back until the release) */
    uct_rc_varuna_ep_tx_resize(iface, ep, ep->gr.lane);

    iface->fo.grows++;
    uct_rc_varuna_lane_str(iface, ep->gr.lane, name, sizeof(name));
    ucs_diag("rc_varuna: ep %p: lane %s moved to qp 0x%x with %u send "
             "credits (was qp 0x%x with %u), the peer's qp 0x%x, new "
             "operations held %.3f ms", ep, name, lane->qp->qp_num,
             lane->max_wr, old_qp->qp_num, old_max_wr,
             ep->peer.qpn[ep->gr.lane],
             ucs_time_to_msec(ucs_get_time() - ep->gr.held));
    uct_rc_varuna_ep_report_grown(iface, ep, name, old_qp->qp_num, old_max_wr,
                                  ucs_get_time());
    uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_SWAPPED);
    uct_rc_varuna_ep_grow_release(ep);
    uct_rc_varuna_ep_grow_list(ep); /* the old QP's destruction */
}

/* A completion came, or the periodic check: the drain may be over */
void uct_rc_varuna_ep_grow_drained(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    if ((ep->gr.state != UCT_RC_VARUNA_GROW_DRAIN) || !ep->gr.hold ||
        (ep->tx.done_sn != ep->tx.sn) ||
        (ep->ctrl.inflight[ep->gr.lane] != 0)) {
        return;
    }

    uct_rc_varuna_ep_grow_swap(iface, ep);
    if (ep->rp.self) {
        /* its own peer moved with it */
        ep->gr.swap_acked = 1;
    } else if (ep->rp.initiator) {
        uct_rc_varuna_ep_grow_say(ep, UCT_RC_VARUNA_CTRL_GROW_SWAP);
    } else {
        /* the initiator moved before it said GROW_SWAP */
        ep->gr.swap_acked = 1;
        uct_rc_varuna_ep_grow_say(ep, UCT_RC_VARUNA_CTRL_GROW_SWAP_ACK);
    }
}

/* The initiator starts a grow when the traffic runs on a short queue and
 * the other lane is not coming back now: failed, and its port down, the
 * peer saying no to its re-protection, or its path failing the probe */
static void uct_rc_varuna_ep_grow_start(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep,
                                        ucs_time_t now)
{
    unsigned lane  = ep->active;
    unsigned other = uct_rc_varuna_other_lane(lane);
    uct_rc_varuna_md_t *md = uct_rc_varuna_iface_md(iface);

    if ((ep->fo.state != UCT_RC_VARUNA_FO_IDLE) ||
        (ep->lane[other].state != UCT_RC_VARUNA_LANE_FAILED) ||
        (ep->ctrl.msgq_count > 0) || ep->rp.done_pending ||
        !uct_rc_varuna_reprotect_room(iface, ep, lane) ||
        (now < ep->gr.next_try) ||
        (iface->fo.grows_asked >= UCT_RC_VARUNA_GROW_AT_ONCE)) {
        return; /* a later check */
    }
    if (!uct_rc_varuna_md_port_down(md, other, iface->side[other].port_num) &&
        (ep->rp.backoff == 0) && (ep->rp.probes_failed == 0)) {
        return; /* re-protection brings the primary back: failback */
    }

    if (uct_rc_varuna_ep_grow_create(iface, ep, lane) != UCS_OK) {
        ep->gr.next_try = now + iface->config.reprotect_timeout;
        return;
    }
    ep->gr.attempt++;
    uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_ASKED);
    iface->fo.grows_asked++;
    ep->gr.counted = 1;
    if (ep->rp.self) {
        if (uct_rc_varuna_ep_grow_connect(iface, ep, ep->gr.qp->qp_num,
                                          ep->gr.psn) != UCS_OK) {
            uct_rc_varuna_ep_grow_abort(ep, "its new QP did not connect");
            ep->gr.next_try = now + iface->config.reprotect_timeout;
            return;
        }
        uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_DRAIN);
        uct_rc_varuna_ep_grow_drain(ep);
        return;
    }
    uct_rc_varuna_ep_grow_say(ep, UCT_RC_VARUNA_CTRL_GROW_REQ);
}

/*
 * The periodic check of the endpoints with a grow to start, a message to
 * say again, an answer to wait for, a drain to retry or an old QP to
 * destroy. One that has none of these leaves the list.
 */
void uct_rc_varuna_iface_grow_check(uct_rc_varuna_iface_t *iface,
                                    ucs_time_t now)
{
    uct_rc_varuna_ep_t *ep, *tmp_ep;

    ucs_list_for_each_safe(ep, tmp_ep, &iface->fo.grow, gr.list) {
        if ((ep->fo.state == UCT_RC_VARUNA_FO_DEAD) ||
            (ep->super.flags & UCT_RC_EP_FLAG_FLUSH_CANCEL)) {
            uct_rc_varuna_ep_grow_cleanup(ep);
            continue;
        }
        if (ep->gr.say != 0) {
            uct_rc_varuna_ep_grow_say(ep, (uct_rc_varuna_ctrl_type_t)
                                          ep->gr.say);
        }

        switch (ep->gr.state) {
        case UCT_RC_VARUNA_GROW_IDLE:
            if (!uct_rc_varuna_ep_grow_short(iface, ep) ||
                (ep->lane[uct_rc_varuna_other_lane(ep->active)].state ==
                 UCT_RC_VARUNA_LANE_STANDBY)) {
                /* nothing to grow, or a standby back: failback brings
                 * the full queue (or the user keeps the traffic where it
                 * is); the standby's loss arms it again */
                uct_rc_varuna_ep_grow_unlist(ep);
            } else {
                uct_rc_varuna_ep_grow_start(iface, ep, now);
            }
            break;
        case UCT_RC_VARUNA_GROW_ASKED:
            if ((ep->gr.say == 0) &&
                (now >= ep->gr.since + iface->config.reprotect_timeout)) {
                uct_rc_varuna_ep_grow_abort(ep, "no answer");
                ep->gr.next_try = now;
            }
            break;
        case UCT_RC_VARUNA_GROW_DRAIN:
            uct_rc_varuna_ep_grow_drain(ep);
            break;
        case UCT_RC_VARUNA_GROW_SWAPPED:
            /* a check after both moved: a receive of the old QP the
             * device completed before the other side's word has been
             * polled, and goes to this endpoint still */
            if (ep->gr.swap_acked && (ep->gr.say == 0) &&
                (now >= ep->gr.since + iface->fo.check_interval)) {
                uct_rc_varuna_ep_grow_drop(ep);
                uct_rc_varuna_ep_grow_unlist(ep);
            }
            break;
        default:
            break;
        }
    }
}


/* ------------------------------------------------------------------------
 * The peer's messages (dispatched by uct_rc_varuna_ep_ctrl_recv)
 * ------------------------------------------------------------------------ */

/* The peer's message answers the grow under way, in the state that awaits
 * it (not an earlier attempt, given up) */
static int uct_rc_varuna_ep_grow_awaits(const uct_rc_varuna_ep_t *ep,
                                        uct_rc_varuna_grow_state_t state,
                                        const uct_rc_varuna_ctrl_msg_t *msg)
{
    return (ep->gr.state == state) && (msg->attempt == ep->gr.attempt);
}

void uct_rc_varuna_ep_grow_recv_req(uct_rc_varuna_iface_t *iface,
                                    uct_rc_varuna_ep_t *ep,
                                    const uct_rc_varuna_ctrl_msg_t *msg)
{
    if (ep->gr.state == UCT_RC_VARUNA_GROW_READY) {
        /* an earlier request's QP, which the initiator gave up */
        uct_rc_varuna_ep_grow_drop(ep);
    } else if ((ep->gr.state == UCT_RC_VARUNA_GROW_ASKED) &&
               (msg->psn > ep->gr.psn)) {
        /* both sides asked (each took itself for the initiator, as
         * re-protection's requests can cross): the request with the
         * higher first PSN goes on */
        uct_rc_varuna_ep_grow_abort(ep, "the peer's request crossed ours");
    }

    if (ep->fo.state != UCT_RC_VARUNA_FO_IDLE) {
        uct_rc_varuna_ep_grow_refuse(ep, msg, "a failover under way");
        return;
    } else if (msg->lane != ep->active) {
        uct_rc_varuna_ep_grow_refuse(ep, msg,
                                     "not the lane carrying the traffic");
        return;
    } else if (ep->gr.state != UCT_RC_VARUNA_GROW_IDLE) {
        uct_rc_varuna_ep_grow_refuse(ep, msg, "a grow under way");
        return;
    } else if (!uct_rc_varuna_ep_msgq_room(ep)) {
        uct_rc_varuna_ep_grow_refuse(ep, msg, "no room for the answer");
        return;
    } else if (uct_rc_varuna_ep_grow_create(iface, ep, msg->lane) != UCS_OK) {
        uct_rc_varuna_ep_grow_refuse(ep, msg, "no new QP");
        return;
    }

    ep->gr.attempt = msg->attempt;
    if (uct_rc_varuna_ep_grow_connect(iface, ep, msg->qpn,
                                      msg->psn) != UCS_OK) {
        uct_rc_varuna_ep_grow_drop(ep);
        uct_rc_varuna_ep_grow_refuse(ep, msg, "its new QP did not connect");
        return;
    }
    uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_READY);
    uct_rc_varuna_ep_grow_say(ep, UCT_RC_VARUNA_CTRL_GROW_ACK);
}

void uct_rc_varuna_ep_grow_recv_ack(uct_rc_varuna_iface_t *iface,
                                    uct_rc_varuna_ep_t *ep,
                                    const uct_rc_varuna_ctrl_msg_t *msg)
{
    if (!uct_rc_varuna_ep_grow_awaits(ep, UCT_RC_VARUNA_GROW_ASKED, msg)) {
        return; /* an answer to a request given up */
    }
    if (uct_rc_varuna_ep_grow_connect(iface, ep, msg->qpn,
                                      msg->psn) != UCS_OK) {
        /* the peer's new QP waits in READY until our next request */
        uct_rc_varuna_ep_grow_abort(ep, "its new QP did not connect");
        ep->gr.next_try = ucs_get_time() + iface->config.reprotect_timeout;
        return;
    }
    uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_DRAIN);
    uct_rc_varuna_ep_grow_drain(ep);
}

void uct_rc_varuna_ep_grow_recv_nack(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep,
                                     const uct_rc_varuna_ctrl_msg_t *msg)
{
    if (!uct_rc_varuna_ep_grow_awaits(ep, UCT_RC_VARUNA_GROW_ASKED, msg)) {
        return;
    }
    uct_rc_varuna_ep_grow_abort(ep, "the peer said no");
    ep->gr.next_try = ucs_get_time() + iface->config.reprotect_timeout;
}

/* On the new QP: the initiator's requests all went there; ours follow
 * once those on the old one completed */
void uct_rc_varuna_ep_grow_recv_swap(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep,
                                     const uct_rc_varuna_ctrl_msg_t *msg)
{
    if (!uct_rc_varuna_ep_grow_awaits(ep, UCT_RC_VARUNA_GROW_READY, msg)) {
        return;
    }
    uct_rc_varuna_ep_grow_enter(ep, UCT_RC_VARUNA_GROW_DRAIN);
    uct_rc_varuna_ep_grow_list(ep);
    uct_rc_varuna_ep_grow_drain(ep);
}

void uct_rc_varuna_ep_grow_recv_swap_ack(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg)
{
    if (!uct_rc_varuna_ep_grow_awaits(ep, UCT_RC_VARUNA_GROW_SWAPPED, msg)) {
        return;
    }
    ep->gr.swap_acked = 1;
    ep->gr.since      = ucs_get_time();
}
