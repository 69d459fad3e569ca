/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucp_failover_int.h"

#include <ucp/core/ucp_proxy_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/core/ucp_worker.inl>
#include <ucs/debug/log.h>
#include <ucs/sys/stubs.h>


/*
 * The hold endpoint: what the failed lane's proxy leads to until the replay
 * is done, and again while a lane connected again is restored. Every
 * operation finds no resources, so UCP queues its requests here, in order;
 * while the proxy owns it, destroying the lane ends the failover.
 */

static ucp_failover_t *ucp_failover_of_hold(uct_ep_h hold_ep)
{
    return ucs_container_of(hold_ep, ucp_failover_t, hold_ep);
}

static ssize_t ucp_failover_hold_bcopy(uct_ep_h ep)
{
    return UCS_ERR_NO_RESOURCE;
}

ucs_status_t ucp_failover_hold_pending_add(uct_ep_h hold_ep,
                                           uct_pending_req_t *req,
                                           unsigned flags)
{
    ucp_failover_t *fo = ucp_failover_of_hold(hold_ep);

    ucs_queue_push(&fo->held, (ucs_queue_elem_t*)req->priv);
    ucp_worker_flush_ops_count_inc(fo->ep->worker);
    ++fo->held_count;
    return UCS_OK;
}

static void ucp_failover_hold_pending_purge(uct_ep_h hold_ep,
                                            uct_pending_purge_callback_t cb,
                                            void *arg)
{
    ucp_failover_t *fo = ucp_failover_of_hold(hold_ep);
    uct_pending_req_t *req;

    ucs_queue_for_each_extract(req, &fo->held, priv, 1) {
        ucp_worker_flush_ops_count_dec(fo->ep->worker);
        cb(req, arg);
    }
}

static ucs_status_t ucp_failover_hold_flush(uct_ep_h hold_ep, unsigned flags,
                                            uct_completion_t *comp)
{
    ucp_failover_t *fo = ucp_failover_of_hold(hold_ep);

    if (!(flags & UCT_FLUSH_FLAG_CANCEL)) {
        /* waits behind what is held */
        return UCS_ERR_NO_RESOURCE;
    }

    /* the lane is discarded (ucp_failover_ep_cleanup gave up): what the
     * failed endpoint still holds, and what it handed back and was not
     * sent again, completes with the failure's error */
    ucp_failover_replay_purge(fo, fo->status);
    return uct_ep_flush(fo->failed_ep, UCT_FLUSH_FLAG_CANCEL, NULL);
}

/* The proxy owns the hold endpoint until the replay is done, and again
 * while a lane connected again is restored: destroying it then (the
 * lane's destruction, or its discard) ends the failover */
static void ucp_failover_hold_destroy(uct_ep_h hold_ep)
{
    ucp_failover_t *fo = ucp_failover_of_hold(hold_ep);

    ucs_debug("ep %p: failover of lane %u ends", fo->ep, fo->lane);
    ucp_failover_unlist(fo);
    ucp_failover_replay_purge(fo, fo->status);
    ucs_assert(ucs_queue_is_empty(&fo->held));
    uct_ep_destroy(fo->failed_ep);
    ucp_failover_free(fo);
}

/* Every operation finds no resources; a request waits here, in order */
const uct_iface_ops_t ucp_failover_hold_ops = {
    .ep_put_short        = (uct_ep_put_short_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_put_bcopy        = (uct_ep_put_bcopy_func_t)ucp_failover_hold_bcopy,
    .ep_put_zcopy        = (uct_ep_put_zcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_get_short        = (uct_ep_get_short_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_get_bcopy        = (uct_ep_get_bcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_get_zcopy        = (uct_ep_get_zcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_am_short         = (uct_ep_am_short_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_am_short_iov     = (uct_ep_am_short_iov_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_am_bcopy         = (uct_ep_am_bcopy_func_t)ucp_failover_hold_bcopy,
    .ep_am_zcopy         = (uct_ep_am_zcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic_cswap64   = (uct_ep_atomic_cswap64_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic_cswap32   = (uct_ep_atomic_cswap32_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic64_post    = (uct_ep_atomic64_post_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic32_post    = (uct_ep_atomic32_post_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic64_fetch   = (uct_ep_atomic64_fetch_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic32_fetch   = (uct_ep_atomic32_fetch_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_tag_eager_short  = (uct_ep_tag_eager_short_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_tag_eager_bcopy  = (uct_ep_tag_eager_bcopy_func_t)
                           ucp_failover_hold_bcopy,
    .ep_tag_eager_zcopy  = (uct_ep_tag_eager_zcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_tag_rndv_zcopy   = (uct_ep_tag_rndv_zcopy_func_t)
                           ucs_empty_function_return_ptr_no_resource,
    .ep_tag_rndv_cancel  = (uct_ep_tag_rndv_cancel_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_rndv_request = (uct_ep_tag_rndv_request_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_pending_add      = ucp_failover_hold_pending_add,
    .ep_pending_purge    = ucp_failover_hold_pending_purge,
    .ep_flush            = ucp_failover_hold_flush,
    .ep_fence            = (uct_ep_fence_func_t)
                           ucs_empty_function_return_success,
    .ep_check            = (uct_ep_check_func_t)
                           ucs_empty_function_return_success,
    .ep_get_address      = (uct_ep_get_address_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_connect_to_ep    = (uct_ep_connect_to_ep_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_destroy          = ucp_failover_hold_destroy
};

/* The endpoint a lane's traffic reaches through the proxies of failovers
 * (a moved lane's proxy may lead to the proxy of the lane it forwards to,
 * when that one failed too) */
uct_ep_h ucp_failover_final_ep(uct_ep_h uct_ep)
{
    ucp_lane_index_t hops;

    for (hops = 0; (hops < UCP_MAX_LANES) && (uct_ep != NULL) &&
                   ucp_proxy_ep_test(uct_ep); ++hops) {
        uct_ep = ucs_derived_of(uct_ep, ucp_proxy_ep_t)->uct_ep;
    }
    return uct_ep;
}

int ucp_failover_is_holding(uct_ep_h uct_ep)
{
    if (!ucp_proxy_ep_test(uct_ep)) {
        return 0;
    }
    uct_ep = ucp_failover_final_ep(uct_ep);
    return (uct_ep != NULL) &&
           (uct_ep->iface->ops.ep_destroy == ucp_failover_hold_destroy);
}

/* The held requests, out of the hold, in order */
void ucp_failover_held_extract(ucp_failover_t *fo,
                               ucs_queue_head_t *held)
{
    uct_pending_req_t *req;

    ucs_queue_head_init(held);
    ucs_queue_for_each_extract(req, &fo->held, priv, 1) {
        ucp_worker_flush_ops_count_dec(fo->ep->worker);
        ucs_queue_push(held, (ucs_queue_elem_t*)req->priv);
    }
}

void ucp_failover_hold_enqueue_cb(uct_pending_req_t *req, void *arg)
{
    ucp_failover_hold_pending_add(&((ucp_failover_t*)arg)->hold_ep, req, 0);
}
