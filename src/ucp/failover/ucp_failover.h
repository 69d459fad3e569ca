/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCP_FAILOVER_H_
#define UCP_FAILOVER_H_

#include <ucp/core/ucp_types.h>
#include <uct/api/uct.h>


/*
 * UCP lane failover (DESIGN.md section 7): when a lane's transport endpoint
 * fails for good and the UCP endpoint has another lane to the same peer,
 * move the failed lane's traffic there, resending only what the failed
 * transport says never executed (uct_ep_outstanding_purge).
 */

/* ucp_failover.c: what UCP calls when a lane fails and when it selects one */

/*
 * The transport endpoint of a lane failed. Returns UCS_INPROGRESS when the
 * failover took it over (the caller returns that to the transport, which
 * then keeps the operations in flight for the purge), anything else when
 * the endpoint must fail as before (ucp_ep_set_failed).
 */
ucs_status_t ucp_failover_lane_failed(ucp_ep_h ep, ucp_lane_index_t lane,
                                      uct_ep_h uct_ep, ucs_status_t status);

/*
 * A transport endpoint of the worker failed that is on none of its
 * endpoints' lanes. If it is one the failover made to connect a failed lane
 * again (UCX_UCP_FAILOVER_REBUILD_INTERVAL), the failover takes the failure
 * (that try ends) and this returns 1; otherwise 0, and UCP reports it as
 * before.
 */
int ucp_failover_unowned_ep_failed(ucp_worker_h worker, uct_ep_h uct_ep,
                                   ucs_status_t status);

/*
 * The endpoint's lanes are about to be discarded or destroyed
 * (ucp_ep_set_lanes_failed): a failover of the endpoint ends here, and each
 * lane it moved gets back its own failed transport endpoint, which the
 * caller discards like any other.
 */
void ucp_failover_ep_cleanup(ucp_ep_h ep);

/*
 * UCP selected a lane for remote memory access or atomics on resource
 * rsc_index (wireup, patch 0010): whether to add a spare lane of the same
 * transport on another device (UCX_UCP_FAILOVER_SPARE_LANE), so that an
 * endpoint with no other lane has somewhere to move when both paths of
 * this one fail.
 */
int ucp_failover_spare_lane(ucp_worker_h worker, ucp_rsc_index_t rsc_index);


/* ucp_failover_xlate.c: the remote keys of a lane moved to another memory
 * domain */

/*
 * A remote key was unpacked for ep, or is destroyed. The failover keeps
 * the keys of endpoints that may move a lane to another memory domain: the
 * operations of such a lane carry the failed lane's key, and the same
 * ucp_rkey_t has the key for the other lane's memory domain
 * (UCP_RKEY_DESC_FLAG_FAILOVER marks the keys kept).
 */
void ucp_failover_rkey_unpacked(ucp_ep_h ep, ucp_rkey_h rkey);

void ucp_failover_rkey_destroyed(ucp_rkey_h rkey);


#endif
