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
 * Failback (DESIGN.md section 5.8).
 *
 * After a failover the traffic stays on the standby's lane, whose send
 * queue is the standby's short one (STANDBY_TX_QUEUE_LEN) and whose port is
 * often a NIC that operators want traffic to leave. Once the primary lane
 * is the standby again (re-protection proved it with a READ both ways) and
 * has stayed so for UCX_RC_VARUNA_FAILBACK_HOLD, the initiator of the
 * endpoint's re-protection moves the traffic back to it by a failover of
 * its own (cause "failback"): the same fence, drain, classification and
 * resend that make a failover exactly once, with the old lane still
 * healthy. Its FAILOVER message carries UCT_RC_VARUNA_CTRL_FLAG_FAILBACK,
 * so the peer's side counts its own half as a failback too. The lane left
 * is then re-protected as the standby, its port being up, and the
 * endpoint is as it was before the failure: the full send queue on the
 * primary, the short one waiting.
 *
 * The hold-down keeps a flapping port from pulling the traffic to and fro:
 * a failure of the primary within it only ends the wait. Only the
 * initiator decides, so the two sides never start crossing failbacks.
 */


static void uct_rc_varuna_ep_failback_unlist(uct_rc_varuna_ep_t *ep)
{
    if (ep->fb.listed) {
        ucs_list_del(&ep->fb.list);
        ep->fb.listed = 0;
    }
}

/* A lane became the standby again (re-protection): if it is the primary and
 * the traffic is elsewhere, the hold-down starts now */
void uct_rc_varuna_ep_failback_arm(uct_rc_varuna_ep_t *ep, unsigned lane)
{
    uct_rc_varuna_iface_t *iface = uct_rc_varuna_ep_iface(ep);

    if ((iface->config.failback_hold == UCS_TIME_INFINITY) ||
        !ep->rp.initiator || (lane != UCT_RC_VARUNA_SIDE_PRIMARY) ||
        (ep->active == UCT_RC_VARUNA_SIDE_PRIMARY)) {
        return;
    }

    ep->fb.since = ucs_get_time();
    if (!ep->fb.listed) {
        ucs_list_add_tail(&iface->fo.failback, &ep->fb.list);
        ep->fb.listed = 1;
    }
}

/* The endpoint goes away or dies */
void uct_rc_varuna_ep_failback_cleanup(uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_ep_failback_unlist(ep);
}

/* The periodic check: the endpoints whose hold-down is over fail back. An
 * endpoint whose primary is no longer the standby, or that carries its
 * traffic there already, leaves the list; one whose failover or control
 * messages are under way waits for them. */
void uct_rc_varuna_iface_failback_check(uct_rc_varuna_iface_t *iface,
                                        ucs_time_t now)
{
    uct_rc_varuna_ep_t *ep, *tmp_ep;
    char from[64], to[64];

    ucs_list_for_each_safe(ep, tmp_ep, &iface->fo.failback, fb.list) {
        if ((ep->active == UCT_RC_VARUNA_SIDE_PRIMARY) ||
            (ep->lane[UCT_RC_VARUNA_SIDE_PRIMARY].state !=
             UCT_RC_VARUNA_LANE_STANDBY) ||
            (ep->fo.state == UCT_RC_VARUNA_FO_DEAD) ||
            (ep->super.flags & UCT_RC_EP_FLAG_FLUSH_CANCEL)) {
            /* nothing to fail back to, or no one to: the traffic is on
             * the primary already, the primary is no longer the standby,
             * the endpoint died, or it is being discarded (a failover
             * now would end it) */
            uct_rc_varuna_ep_failback_unlist(ep);
            continue;
        }
        if ((ep->fo.state != UCT_RC_VARUNA_FO_IDLE) ||
            (ep->ctrl.msgq_count > 0) || ep->rp.done_pending ||
            (now < ep->fb.since + iface->config.failback_hold)) {
            /* the peer must know the primary is the standby (DONE sent)
             * before our failover says to move to it */
            continue;
        }

        uct_rc_varuna_ep_failback_unlist(ep);
        ucs_diag("rc_varuna: ep %p: failing back from %s to %s, the standby "
                 "again for %.0f ms", ep,
                 uct_rc_varuna_lane_str(iface, ep->active, from,
                                        sizeof(from)),
                 uct_rc_varuna_lane_str(iface, UCT_RC_VARUNA_SIDE_PRIMARY,
                                        to, sizeof(to)),
                 ucs_time_to_msec(now - ep->fb.since));
        uct_rc_varuna_ep_failover(ep, ep->active,
                                  UCT_RC_VARUNA_CAUSE_FAILBACK);
    }
}
