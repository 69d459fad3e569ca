/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucp_failover_int.h"

#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_proxy_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/core/ucp_worker.inl>
#include <ucp/wireup/wireup_ep.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <ucs/type/spinlock.h>

#include <string.h>


/*
 * UCP lane failover (DESIGN.md section 7).
 *
 * A lane's transport endpoint failed for good (for rc_varuna: both of its
 * paths are dead) while the UCP endpoint has another lane to the same peer
 * with the same transport: on the same memory domain (the other port of a
 * dual-port device: remote keys and registrations stay valid), or on
 * another one (another device pair: every remote key and memory handle the
 * failed lane's operations carry is translated on the way, see
 * ucp_failover_xlate.c). Then:
 *
 *   hold     the failed lane's index now leads to a proxy (ucp_proxy_ep_t)
 *            whose endpoint holds everything: operations answer "no
 *            resource", pending requests queue here, in order. Every
 *            request keeps its lane index, so nothing in UCP's protocols
 *            changes. The failed transport endpoint is kept; the error
 *            handler returns UCS_INPROGRESS, so the transport keeps its
 *            operations in flight, uncompleted.
 *   query    the failed endpoint's TX token goes to the peer over the other
 *            lane (UCP_AM_ID_FAILOVER); the peer's interface fences its side
 *            of the connection and derives the RX token, which comes back.
 *   purge    the transport completes what executed and hands back, in
 *            posting order, what did not (uct_ep_outstanding_purge).
 *   replay   what was handed back is posted on the other lane, with its
 *            original completion; then the proxy forwards to the other
 *            lane's endpoint and the held requests go, in order; then new
 *            traffic.
 *
 * Nothing is sent twice: the peer answered after its side was fenced, and
 * the transport either completes an operation or hands it back, never both.
 * A lane that carried a moved lane's traffic and fails with no other lane
 * left waits (AWAIT) for that lane to be connected again, if its ports are
 * up (ucp_failover_rebuild.c), and then moves there. No answer within
 * UCX_UCP_FAILOVER_TIMEOUT, no other lane, or any error:
 * the endpoint fails as it would without this (ucp_ep_set_failed). The
 * failed transport endpoint stays until the lanes are destroyed, so that
 * the peer's own query about the same connection finds it.
 *
 * This file starts a failover (ucp_failover_lane_failed), steps it (the
 * progress), ends it, and keeps the list of them; each other job of the
 * failover has a file of its own (ucp_failover_int.h lists them).
 */


/* ------------------------------------------------------------------------
 * The failovers of the process
 * ------------------------------------------------------------------------ */

/* Failovers under way or done, of every worker of the process (there are
 * few: one per failed lane) */
static UCS_LIST_HEAD(ucp_failover_list);
static ucs_spinlock_t ucp_failover_lock;  /* the list */
static uint32_t ucp_failover_seq;

UCS_STATIC_INIT {
    ucs_spinlock_init(&ucp_failover_lock, 0);
}

UCS_STATIC_CLEANUP {
    ucs_spinlock_destroy(&ucp_failover_lock);
}

static const char *ucp_failover_state_names[] = {
    [UCP_FAILOVER_QUERY]   = "query",
    [UCP_FAILOVER_REPLAY]  = "replay",
    [UCP_FAILOVER_FORWARD] = "forward",
    [UCP_FAILOVER_RESTORE] = "restore",
    [UCP_FAILOVER_AWAIT]   = "await"
};

/* fo is out of the list; its endpoints but those of the rebuild are gone */
void ucp_failover_free(ucp_failover_t *fo)
{
    ucp_failover_side_close(fo, 0);
    ucp_failover_rebuild_drop(fo);
    if (fo->rebuild.stale_ep != NULL) {
        uct_ep_destroy(fo->rebuild.stale_ep);
    }
    ucs_free(fo->report);
    ucs_free(fo);
}

void ucp_failover_unlist(ucp_failover_t *fo)
{
    ucs_spin_lock(&ucp_failover_lock);
    if (fo->listed) {
        ucs_list_del(&fo->list);
        fo->listed = 0;
    }
    ucs_spin_unlock(&ucp_failover_lock);
    uct_worker_progress_unregister_safe(fo->ep->worker->uct, &fo->prog_id);
}

ucp_failover_t *ucp_failover_find(ucp_ep_h ep, uint32_t seq)
{
    ucp_failover_t *fo, *found = NULL;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep == ep) && (fo->seq == seq)) {
            found = fo;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    return found;
}

/* Our failover of the lane the peer names by its memory domains: one in
 * FORWARD (or restoring) that tries to rebuild */
ucp_failover_t *
ucp_failover_find_lane(ucp_ep_h ep, const ucp_failover_rebuild_msg_t *rb)
{
    ucp_failover_t *fo, *found = NULL;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep == ep) && (fo->md_from == rb->dst_md) &&
            (fo->dst_md_from == rb->md) &&
            (fo->rebuild.state != UCP_FAILOVER_REBUILD_OFF) &&
            ((fo->state == UCP_FAILOVER_FORWARD) ||
             (fo->state == UCP_FAILOVER_RESTORE))) {
            found = fo;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    return found;
}

/* The failover of the endpoint's lane, if any */
ucp_failover_t *ucp_failover_of_lane(ucp_ep_h ep, ucp_lane_index_t lane)
{
    ucp_failover_t *fo, *found = NULL;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep == ep) && (fo->lane == lane)) {
            found = fo;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    return found;
}

/* A connection of the endpoint made again and proven, whose lane is being
 * restored (the lane's traffic waits in its hold meanwhile): it reaches the
 * peer's failover of that lane, which restores too or takes the
 * confirmation that came first on it */
uct_ep_h ucp_failover_restoring_ep(ucp_ep_h ep)
{
    uct_ep_h found = NULL;
    ucp_failover_t *fo;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep == ep) && (fo->state == UCP_FAILOVER_RESTORE) &&
            (fo->rebuild.uct_ep != NULL) && !fo->rebuild.failed) {
            found = fo->rebuild.uct_ep;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    return found;
}

/* A failover of the endpoint whose side channel can reach the peer: one
 * open, else one whose carrier died, else one that knows the address */
ucp_failover_t *ucp_failover_side_owner(ucp_ep_h ep)
{
    ucp_failover_t *fo, *found = NULL;
    int rank, best = 0;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep != ep) || !ucp_failover_side_known(fo)) {
            continue;
        }
        rank = (fo->side.uct_ep != NULL) ? 3 :
               fo->rebuild.carrier_lost ? 2 : 1;
        if (rank > best) {
            best  = rank;
            found = fo;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    return found;
}

int ucp_failover_unowned_ep_failed(ucp_worker_h worker, uct_ep_h uct_ep,
                                   ucs_status_t status)
{
    ucp_failover_t *fo;
    int ours = 0;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep->worker == worker) && (fo->rebuild.stale_ep == uct_ep)) {
            ours = 1; /* failed before: nothing more to do */
            break;
        }
        if ((fo->ep->worker == worker) &&
            ucp_failover_side_ep_failed(fo, uct_ep)) {
            ucs_spin_unlock(&ucp_failover_lock);
            return 1; /* the progress closes the side channel */
        }
        if ((fo->ep->worker == worker) && (fo->rebuild.uct_ep == uct_ep)) {
            /* not destroyed here, in its own error handler: the progress
             * ends the try */
            fo->rebuild.failed = 1;
            ours               = 1;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    if (ours) {
        ucs_debug("ep %p: lane %u's new endpoint %p failed (%s, rebuild %s)",
                  fo->ep, fo->lane, uct_ep, ucs_status_string(status),
                  ucp_failover_rebuild_state_names[fo->rebuild.state]);
    }
    return ours;
}


/* ------------------------------------------------------------------------
 * The progress: each step of a failover
 * ------------------------------------------------------------------------ */

/* The failover cannot finish: the endpoint fails as without it. The
 * cleanup (ucp_failover_ep_cleanup) frees fo. */
static void ucp_failover_abort(ucp_failover_t *fo, ucs_status_t status)
{
    ucs_diag("ep %p: failover of lane %u cannot finish in state %s: %s",
             fo->ep, fo->lane, ucp_failover_state_names[fo->state],
             ucs_status_string(status));
    ucp_ep_set_failed(fo->ep, fo->lane, fo->status);
}

/* AWAIT: the lane this one moves to is the one whose traffic it carried,
 * being connected again by its own failover. When that one's new
 * connection is proven, the query goes over it; when that lane is on its
 * own again (its restore ended), over the lane. */
static void ucp_failover_await_progress(ucp_failover_t *fo)
{
    ucp_failover_t *carried = ucp_failover_of_lane(fo->ep, fo->sub_lane);
    uct_ep_h sub_ep         = fo->ep->uct_eps[fo->sub_lane];
    ucs_time_t now          = ucs_get_time();

    if ((carried != NULL) && (carried->state == UCP_FAILOVER_RESTORE) &&
        (carried->rebuild.uct_ep != NULL)) {
        fo->sub_new_ep = carried->rebuild.uct_ep;
    } else if ((carried != NULL) || ucp_proxy_ep_test(sub_ep) ||
               ucp_is_uct_ep_failed(sub_ep)) {
        if (now > fo->deadline) {
            ucp_failover_abort(fo, UCS_ERR_ENDPOINT_TIMEOUT);
        }
        return;
    }

    ucs_diag("ep %p: lane %u (%s) is connected again: lane %u's traffic "
             "goes there, asking the peer what executed", fo->ep,
             fo->sub_lane, ucp_ep_get_tl_rsc(fo->ep, fo->sub_lane)->dev_name,
             fo->lane);
    fo->state    = UCP_FAILOVER_QUERY;
    fo->deadline = now + ucs_time_from_sec(ucp_failover_timeout());
}

static unsigned ucp_failover_progress(void *arg)
{
    ucp_failover_t *fo  = arg;
    ucp_worker_h worker = fo->ep->worker;
    ucs_status_t status;

    UCS_ASYNC_BLOCK(&worker->async);
    ucp_failover_side_progress(fo);
    switch (fo->state) {
    case UCP_FAILOVER_AWAIT:
        ucp_failover_await_progress(fo);
        break;
    case UCP_FAILOVER_QUERY:
        if (!fo->query_sent) {
            status = ucp_failover_send_query(fo);
            if (status == UCS_OK) {
                fo->query_sent = 1;
            } else if (status != UCS_ERR_NO_RESOURCE) {
                ucp_failover_abort(fo, status);
                break;
            }
        }
        if (ucs_get_time() > fo->deadline) {
            ucp_failover_abort(fo, UCS_ERR_ENDPOINT_TIMEOUT);
        }
        break;
    case UCP_FAILOVER_REPLAY:
        status = ucp_failover_replay(fo);
        if (status == UCS_OK) {
            ucp_failover_forward(fo);
        } else if (status != UCS_ERR_NO_RESOURCE) {
            ucp_failover_abort(fo, status);
        }
        break;
    case UCP_FAILOVER_FORWARD:
        if (fo->sub_new_ep == fo->ep->uct_eps[fo->sub_lane]) {
            fo->sub_new_ep = NULL; /* its lane has it now */
        }
        ucp_failover_rebuild_progress(fo);
        break;
    case UCP_FAILOVER_RESTORE:
        ucp_failover_restore_progress(fo); /* may free fo */
        break;
    default:
        break;
    }
    UCS_ASYNC_UNBLOCK(&worker->async);
    return 0;
}


/* ------------------------------------------------------------------------
 * Start and end
 * ------------------------------------------------------------------------ */

/* The other lane's transport takes whatever the failed lane's does: UCP
 * keeps choosing protocols by the failed lane's limits */
static int ucp_failover_limits_cover(ucp_worker_h worker,
                                     ucp_rsc_index_t sub_rsc,
                                     ucp_rsc_index_t failed_rsc)
{
    const uct_iface_attr_t *sub    = &ucp_worker_iface(worker,
                                                       sub_rsc)->attr;
    const uct_iface_attr_t *failed = &ucp_worker_iface(worker,
                                                       failed_rsc)->attr;

#define UCP_FAILOVER_COVERS(_field) (sub->cap._field >= failed->cap._field)
    return UCP_FAILOVER_COVERS(put.max_short) &&
           UCP_FAILOVER_COVERS(put.max_bcopy) &&
           UCP_FAILOVER_COVERS(put.max_zcopy) &&
           UCP_FAILOVER_COVERS(put.max_iov) &&
           UCP_FAILOVER_COVERS(get.max_short) &&
           UCP_FAILOVER_COVERS(get.max_bcopy) &&
           UCP_FAILOVER_COVERS(get.max_zcopy) &&
           UCP_FAILOVER_COVERS(get.max_iov) &&
           UCP_FAILOVER_COVERS(am.max_short) &&
           UCP_FAILOVER_COVERS(am.max_bcopy) &&
           UCP_FAILOVER_COVERS(am.max_zcopy) &&
           UCP_FAILOVER_COVERS(am.max_hdr) &&
           UCP_FAILOVER_COVERS(am.max_iov) &&
           ucs_test_all_flags(sub->cap.flags, failed->cap.flags &
                              (UCT_IFACE_FLAG_PUT_SHORT |
                               UCT_IFACE_FLAG_PUT_BCOPY |
                               UCT_IFACE_FLAG_PUT_ZCOPY |
                               UCT_IFACE_FLAG_GET_BCOPY |
                               UCT_IFACE_FLAG_GET_ZCOPY |
                               UCT_IFACE_FLAG_AM_SHORT |
                               UCT_IFACE_FLAG_AM_BCOPY |
                               UCT_IFACE_FLAG_AM_ZCOPY)) &&
           ucs_test_all_flags(sub->cap.atomic64.op_flags,
                              failed->cap.atomic64.op_flags) &&
           ucs_test_all_flags(sub->cap.atomic64.fop_flags,
                              failed->cap.atomic64.fop_flags) &&
           ucs_test_all_flags(sub->cap.atomic32.op_flags,
                              failed->cap.atomic32.op_flags) &&
           ucs_test_all_flags(sub->cap.atomic32.fop_flags,
                              failed->cap.atomic32.fop_flags);
#undef UCP_FAILOVER_COVERS
}

/* Another lane to the same peer with the same transport, whose endpoint
 * works: on the same memory domain if there is one (nothing to translate),
 * else on another whose transport takes what the failed lane's did */
static ucp_lane_index_t ucp_failover_substitute(ucp_ep_h ep,
                                                ucp_lane_index_t failed)
{
    ucp_context_h context = ep->worker->context;
    ucp_rsc_index_t f_rsc = ucp_ep_get_rsc_index(ep, failed);
    ucp_lane_index_t other_md = UCP_NULL_LANE;
    ucp_rsc_index_t rsc;
    ucp_lane_index_t lane;
    uct_ep_h uct_ep;

    for (lane = 0; lane < ucp_ep_num_lanes(ep); ++lane) {
        uct_ep = ep->uct_eps[lane];
        rsc    = ucp_ep_get_rsc_index(ep, lane);
        if ((lane == failed) || (uct_ep == NULL) ||
            (rsc == UCP_NULL_RESOURCE) || (rsc == f_rsc) ||
            ucp_is_uct_ep_failed(uct_ep) || ucp_wireup_ep_test(uct_ep) ||
            ucp_proxy_ep_test(uct_ep) ||
            strcmp(context->tl_rscs[rsc].tl_rsc.tl_name,
                   context->tl_rscs[f_rsc].tl_rsc.tl_name)) {
            continue;
        }
        if (context->tl_rscs[rsc].md_index ==
            context->tl_rscs[f_rsc].md_index) {
            return lane;
        }
        if ((other_md == UCP_NULL_LANE) &&
            ucp_failover_limits_cover(ep->worker, rsc, f_rsc)) {
            other_md = lane;
        }
    }
    return other_md;
}

/* The failover that moved its lane's traffic onto this lane and can
 * connect its own lane again now (ucp_failover_rebuild_can_carry) */
static ucp_failover_t *ucp_failover_carried(ucp_ep_h ep,
                                            ucp_lane_index_t lane)
{
    ucp_failover_t *fo, *found = NULL;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep == ep) && (fo->sub_lane == lane) &&
            ((fo->state == UCP_FAILOVER_FORWARD) ||
             (fo->state == UCP_FAILOVER_RESTORE))) {
            found = fo;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    if ((found == NULL) || !ucp_failover_rebuild_can_carry(found)) {
        return NULL;
    }
    /* on another memory domain, it takes what this lane's transport does */
    return (!found->other_md ||
            ucp_failover_limits_cover(ep->worker,
                                      ucp_ep_get_rsc_index(ep, found->lane),
                                      ucp_ep_get_rsc_index(ep, lane))) ?
           found : NULL;
}

/* The lane's transport can tell which operations never executed */
int ucp_failover_lane_can_purge(ucp_ep_h ep, ucp_lane_index_t lane)
{
    ucp_rsc_index_t rsc_index = ucp_ep_get_rsc_index(ep, lane);

    return (rsc_index != UCP_NULL_RESOURCE) &&
           (ucp_worker_iface(ep->worker, rsc_index)->attr.cap.flags &
            UCT_IFACE_FLAG_EP_OUTSTANDING_PURGE);
}

/* The endpoint and its failed lane are of the kind the failover moves.
 * Any error handling mode: an endpoint without peer error handling (Open
 * MPI 4.1 creates all of its so) would end the process at this failure,
 * and the same exactly-once rules hold whatever the mode (issue 35). */
static int ucp_failover_can_move(ucp_ep_h ep, ucp_lane_index_t lane,
                                 uct_ep_h uct_ep)
{
    return !ucp_ep_has_cm_lane(ep) &&
           !(ep->flags & (UCP_EP_FLAG_FAILED | UCP_EP_FLAG_CLOSED)) &&
           (ep->uct_eps[lane] == uct_ep) &&
           ucp_failover_lane_can_purge(ep, lane);
}

int ucp_failover_spare_lane(ucp_worker_h worker, ucp_rsc_index_t rsc_index)
{
    ucp_failover_config_t config;

    ucp_failover_config(&config);
    return config.enable && config.spare_lane &&
           (ucp_worker_iface(worker, rsc_index)->attr.cap.flags &
            UCT_IFACE_FLAG_EP_OUTSTANDING_PURGE);
}

ucs_status_t ucp_failover_lane_failed(ucp_ep_h ep, ucp_lane_index_t lane,
                                      uct_ep_h uct_ep, ucs_status_t status)
{
    static const uct_iface_ops_t forward_ops; /* all forwarded by the proxy */
    ucp_worker_h worker = ep->worker;
    ucp_failover_t *carried = NULL;
    ucp_failover_config_t config;
    ucp_lane_index_t sub_lane;
    ucp_failover_t *fo;
    uct_ep_attr_t attr;
    ucs_status_t ret;

    ucp_failover_config(&config);
    if (!config.enable || !ucp_failover_can_move(ep, lane, uct_ep)) {
        return status;
    }

    sub_lane = ucp_failover_substitute(ep, lane);
    if (sub_lane == UCP_NULL_LANE) {
        /* the lane carried another's traffic, whose own ports are up: that
         * one is connected again first (issue 48) */
        carried = ucp_failover_carried(ep, lane);
        if (carried == NULL) {
            ucs_diag("ep %p: lane %u failed (%s), no other lane to the peer "
                     "with the same transport", ep, lane,
                     ucs_status_string(status));
            return status;
        }
        sub_lane = carried->lane;
    }

    fo = ucs_calloc(1, sizeof(*fo), "ucp_failover");
    if (fo == NULL) {
        return status;
    }

    memset(&attr, 0, sizeof(attr));
    attr.field_mask      = UCT_EP_ATTR_FIELD_TX_TOKEN;
    attr.tx_token        = fo->tx_token;
    attr.tx_token_length = sizeof(fo->tx_token);
    ret = uct_ep_query(uct_ep, &attr);
    if (ret != UCS_OK) {
        ucs_diag("ep %p: lane %u has no TX token: %s", ep, lane,
                 ucs_status_string(ret));
        goto out_free;
    }

    if (ucp_failover_config_report(&fo->report) != UCS_OK) {
        goto out_free;
    }

    fo->hold_iface.ops  = ucp_failover_hold_ops;
    fo->hold_ep.iface   = &fo->hold_iface;
    fo->xlate_iface.ops = ucp_failover_xlate_ops;
    fo->xlate_ep.iface  = &fo->xlate_iface;
    fo->md_from         = ucp_ep_md_index(ep, lane);
    fo->md_to           = ucp_ep_md_index(ep, sub_lane);
    fo->dst_md_from     = ucp_ep_config(ep)->key.lanes[lane].dst_md_index;
    fo->dst_md_to       = ucp_ep_config(ep)->key.lanes[sub_lane].dst_md_index;
    fo->other_md        = (fo->md_from != fo->md_to) ||
                          (fo->dst_md_from != fo->dst_md_to);
    ret = UCS_CLASS_NEW(ucp_proxy_ep_t, &fo->proxy, &forward_ops, ep,
                        &fo->hold_ep, 1);
    if (ret != UCS_OK) {
        goto out_free;
    }

    fo->tx_token_length = attr.tx_token_length;
    fo->ep              = ep;
    fo->lane            = lane;
    fo->sub_lane        = sub_lane;
    fo->awaited         = (carried != NULL);
    fo->state           = fo->awaited ? UCP_FAILOVER_AWAIT :
                                        UCP_FAILOVER_QUERY;
    fo->status          = status;
    fo->failed_ep       = uct_ep;
    fo->t_failed        = ucs_get_time();
    /* AWAIT: a try of the carried lane's rebuild, then the query */
    fo->deadline        = fo->t_failed +
                          ucs_time_from_sec(config.timeout *
                                            ((carried != NULL) ? 2 : 1));
    fo->prog_id         = UCS_CALLBACKQ_ID_NULL;
    fo->rebuild.base    = ucs_time_from_sec(config.rebuild_interval);
    fo->rebuild.state   = (fo->rebuild.base == 0) ?
                          UCP_FAILOVER_REBUILD_OFF : UCP_FAILOVER_REBUILD_IDLE;
    ucs_queue_head_init(&fo->held);
    ucs_queue_head_init(&fo->replay);

    ucs_spin_lock(&ucp_failover_lock);
    fo->seq    = ++ucp_failover_seq;
    fo->listed = 1;
    ucs_list_add_tail(&ucp_failover_list, &fo->list);
    ucs_spin_unlock(&ucp_failover_lock);

    /* what waited for the failed endpoint waits here now, first in line */
    uct_ep_pending_purge(uct_ep, ucp_failover_hold_enqueue_cb, fo);
    ep->uct_eps[lane] = fo->proxy;

    if (carried != NULL) {
        ucs_diag("ep %p: lane %u (%s) failed (%s) with no other lane to "
                 "move to: holding its traffic until lane %u (%s), whose "
                 "traffic it carried, is connected again", ep, lane,
                 ucp_ep_get_tl_rsc(ep, lane)->dev_name,
                 ucs_status_string(status), sub_lane,
                 ucp_ep_get_tl_rsc(ep, sub_lane)->dev_name);
        ucp_failover_rebuild_carrier_lost(carried);
        uct_worker_progress_register_safe(worker->uct, ucp_failover_progress,
                                          fo, 0, &fo->prog_id);
        return UCS_INPROGRESS;
    }

    ucs_diag("ep %p: lane %u (%s) failed (%s): holding its traffic, asking "
             "the peer over lane %u (%s, %s memory domain) what executed", ep,
             lane, ucp_ep_get_tl_rsc(ep, lane)->dev_name,
             ucs_status_string(status), sub_lane,
             ucp_ep_get_tl_rsc(ep, sub_lane)->dev_name,
             fo->other_md ? "another" : "the same");
    uct_worker_progress_register_safe(worker->uct, ucp_failover_progress, fo,
                                      0, &fo->prog_id);
    return UCS_INPROGRESS;

out_free:
    ucs_free(fo->report);
    ucs_free(fo);
    return status;
}

void ucp_failover_ep_cleanup(ucp_ep_h ep)
{
    ucp_failover_t *fo, *tmp;
    UCS_LIST_HEAD(mine);

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each_safe(fo, tmp, &ucp_failover_list, list) {
        if (fo->ep == ep) {
            ucs_list_del(&fo->list);
            ucs_list_add_tail(&mine, &fo->list);
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);

    ucs_list_for_each_safe(fo, tmp, &mine, list) {
        ucs_list_del(&fo->list);
        fo->listed = 0;
        uct_worker_progress_unregister_safe(ep->worker->uct, &fo->prog_id);
        ucs_assert(ep->uct_eps[fo->lane] == fo->proxy);
        if (fo->state != UCP_FAILOVER_FORWARD) {
            /* the lane keeps its proxy: the caller purges what it holds,
             * flushes it (which gives the failed endpoint's operations
             * back, to complete with the error) and destroys it, with the
             * failed endpoint (ucp_failover_hold_destroy) */
            ucs_diag("ep %p: failover of lane %u gives up in state %s: the "
                     "endpoint's lanes are discarded", ep, fo->lane,
                     ucp_failover_state_names[fo->state]);
            continue;
        }

        /* moved: the lane gets its failed endpoint back, to be discarded or
         * destroyed like the others; the proxy forwarded to a lane that is
         * the caller's */
        ep->uct_eps[fo->lane] = fo->failed_ep;
        uct_ep_destroy(fo->proxy);
        ucp_failover_free(fo);
    }
}
