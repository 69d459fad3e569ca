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
#include <ucp/core/ucp_worker.h>
#include <ucp/core/ucp_worker.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <string.h>


/*
 * The side channel: a lane's failover messages when no lane is left to
 * carry them (DESIGN.md section 7, "the carrier dies").
 *
 * A moved lane A is rebuilt with messages on a live lane, B, which also
 * carries A's traffic. When B dies while A's ports are up, none is left,
 * although a path to the peer lives. The worker keeps the aux transport's
 * interfaces (ud_verbs) open after wireup, with every UCP active message
 * handler installed, UCP_AM_ID_FAILOVER's too, and the handler finds the
 * endpoint by its id whichever interface a message came on. So each side's
 * query and reply about A carry the address of its aux interface on A's
 * device (UCP keeps none of the peer's aux addresses after wireup), and
 * when B dies the rebuild of A goes over an aux endpoint to the peer's
 * interface there: connected to an interface, reliable and in order. Its
 * sends find no resources until the aux transport's connection reply: they
 * wait on its pending queue, in order, and go from the interface's
 * progress, which the channel keeps on while it is open.
 */

/* A message that waits for the aux endpoint's resources */
typedef struct {
    uct_pending_req_t       uct;
    ucp_failover_t          *fo;          /* its channel's failover (the
                                             queue goes when it closes) */
    ucp_failover_msg_max_t  msg;
} ucp_failover_side_req_t;

/* Our aux interface on the device of the lane's resource: one that
 * connects to an interface and sends active messages */
static ucp_worker_iface_t *ucp_failover_side_iface(ucp_ep_h ep,
                                                   ucp_lane_index_t lane)
{
    ucp_worker_h worker   = ep->worker;
    ucp_context_h context = worker->context;
    const char *dev_name  = ucp_ep_get_tl_rsc(ep, lane)->dev_name;
    ucp_worker_iface_t *wiface;
    unsigned i;

    for (i = 0; i < worker->num_ifaces; ++i) {
        wiface = worker->ifaces[i];
        if ((wiface->iface != NULL) &&
            ucs_test_all_flags(wiface->attr.cap.flags,
                               UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                               UCT_IFACE_FLAG_AM_BCOPY) &&
            (wiface->attr.cap.am.max_bcopy >=
             sizeof(ucp_failover_msg_max_t)) &&
            !strcmp(context->tl_rscs[wiface->rsc_index].tl_rsc.dev_name,
                    dev_name)) {
            return wiface;
        }
    }
    return NULL;
}

size_t ucp_failover_side_addr_pack(ucp_ep_h ep, ucp_lane_index_t lane,
                                   uint8_t *buf, size_t max)
{
    ucp_worker_iface_t *wiface = ucp_failover_side_iface(ep, lane);
    size_t dev_len, iface_len;

    if (wiface == NULL) {
        return 0;
    }
    dev_len   = wiface->attr.device_addr_len;
    iface_len = wiface->attr.iface_addr_len;
    if ((2 + dev_len + iface_len > max) || (dev_len > UINT8_MAX) ||
        (iface_len > UINT8_MAX) ||
        (uct_iface_get_device_address(wiface->iface,
                                      (uct_device_addr_t*)(buf + 2)) !=
         UCS_OK) ||
        (uct_iface_get_address(wiface->iface,
                               (uct_iface_addr_t*)(buf + 2 + dev_len)) !=
         UCS_OK)) {
        return 0;
    }
    buf[0] = (uint8_t)dev_len;
    buf[1] = (uint8_t)iface_len;
    return 2 + dev_len + iface_len;
}

void ucp_failover_side_addr_keep(ucp_failover_t *fo, const uint8_t *addr,
                                 size_t length)
{
    if ((length < 2) || (length > sizeof(fo->side.peer_addr)) ||
        (2 + addr[0] + addr[1] != length)) {
        fo->side.peer_addr_length = 0;
        return;
    }
    memcpy(fo->side.peer_addr, addr, length);
    fo->side.peer_addr_length = (uint8_t)length;
}

int ucp_failover_side_known(const ucp_failover_t *fo)
{
    return fo->side.peer_addr_length > 0;
}

/* The channel is open: our aux interface is progressed (the peer's
 * messages come on it) and an endpoint to the peer's exists */
ucs_status_t ucp_failover_side_open(ucp_failover_t *fo)
{
    const uint8_t *addr = fo->side.peer_addr;
    ucp_worker_iface_t *wiface;
    uct_ep_params_t params;
    ucs_status_t status;

    if (fo->side.uct_ep != NULL) {
        return UCS_OK;
    }
    if (!ucp_failover_side_known(fo)) {
        return UCS_ERR_UNREACHABLE;
    }
    wiface = ucp_failover_side_iface(fo->ep, fo->lane);
    if (wiface == NULL) {
        return UCS_ERR_UNREACHABLE;
    }

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = wiface->iface;
    params.dev_addr   = (const uct_device_addr_t*)(addr + 2);
    params.iface_addr = (const uct_iface_addr_t*)(addr + 2 + addr[0]);
    status            = uct_ep_create(&params, &fo->side.uct_ep);
    if (status != UCS_OK) {
        fo->side.uct_ep = NULL;
        return status;
    }
    fo->side.wiface = wiface;
    fo->side.failed = 0;
    ucp_worker_iface_progress_ep(wiface);
    ucs_diag("ep %p: lane %u's failover messages go over %s/%s: no lane "
             "left to carry them", fo->ep, fo->lane,
             fo->ep->worker->context->tl_rscs[wiface->rsc_index].tl_rsc.
                     tl_name,
             fo->ep->worker->context->tl_rscs[wiface->rsc_index].tl_rsc.
                     dev_name);
    return UCS_OK;
}

static void ucp_failover_side_purge_cb(uct_pending_req_t *self, void *arg)
{
    ucs_free(ucs_container_of(self, ucp_failover_side_req_t, uct));
}

/* A message that waited for the aux endpoint goes to the outbox, which
 * sends it over a live lane, or another failover's channel, until the
 * timeout */
static void ucp_failover_side_hand_over_cb(uct_pending_req_t *self, void *arg)
{
    ucp_failover_side_req_t *req = ucs_container_of(self,
                                                    ucp_failover_side_req_t,
                                                    uct);

    ucp_failover_msg_send_queued(req->fo->ep, UCP_NULL_LANE, &req->msg.hdr);
    ucs_free(req);
}

/* The channel closes. Its messages that still wait for the aux endpoint
 * (its connection reply can be hundreds of ms away when its first packets
 * went while the path was silent) are dropped when the endpoint ends or
 * the aux endpoint failed (hand_over 0). A failover that restores its lane
 * hands them to the outbox: it ends at once, and with it went the reply
 * to the peer's query it carried for another lane, which the peer waited
 * for until it ended the endpoint (the carrier scenario, 1 run in 60) */
void ucp_failover_side_close(ucp_failover_t *fo, int hand_over)
{
    if (fo->side.uct_ep == NULL) {
        return;
    }
    if (hand_over && (fo->side.pending > 0)) {
        ucs_diag("ep %p: lane %u's side channel closes with %u messages not "
                 "yet sent (no connection reply from the peer's aux "
                 "interface yet): they go by the outbox", fo->ep, fo->lane,
                 fo->side.pending);
    }
    uct_ep_pending_purge(fo->side.uct_ep,
                         hand_over ? ucp_failover_side_hand_over_cb :
                                     ucp_failover_side_purge_cb, NULL);
    uct_ep_destroy(fo->side.uct_ep);
    ucp_worker_iface_unprogress_ep(fo->side.wiface);
    fo->side.uct_ep  = NULL;
    fo->side.wiface  = NULL;
    fo->side.pending = 0;
}

static ucs_status_t ucp_failover_side_pending_cb(uct_pending_req_t *self)
{
    ucp_failover_side_req_t *req = ucs_container_of(self,
                                                    ucp_failover_side_req_t,
                                                    uct);
    ucs_status_t status;

    status = ucp_failover_msg_post(req->fo->side.uct_ep, &req->msg.hdr);
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }
    if (status != UCS_OK) {
        ucs_diag("ep %p: a failover message over the aux transport not "
                 "sent: %s", req->fo->ep, ucs_status_string(status));
    }
    --req->fo->side.pending;
    ucs_free(req);
    return UCS_OK;
}

/* Sent, or waits in order for the aux endpoint's resources */
ucs_status_t ucp_failover_side_send(ucp_failover_t *fo,
                                    const ucp_failover_msg_t *msg)
{
    size_t length = sizeof(*msg) + msg->token_length;
    ucp_failover_side_req_t *req;
    ucs_status_t status;

    status = ucp_failover_side_open(fo);
    if (status != UCS_OK) {
        return status;
    }
    if (fo->side.pending == 0) {
        status = ucp_failover_msg_post(fo->side.uct_ep, msg);
        if (status != UCS_ERR_NO_RESOURCE) {
            return status;
        }
    }

    if (length > sizeof(req->msg)) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    req = ucs_malloc(sizeof(*req), "ucp_failover_side_req");
    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    req->uct.func = ucp_failover_side_pending_cb;
    req->fo       = fo;
    memcpy(&req->msg, msg, length);
    status = uct_ep_pending_add(fo->side.uct_ep, &req->uct, 0);
    if (status == UCS_ERR_BUSY) {
        /* resources came back meanwhile */
        status = ucp_failover_msg_post(fo->side.uct_ep, msg);
        ucs_free(req);
        return status;
    }
    if (status != UCS_OK) {
        ucs_free(req);
        return status;
    }
    ++fo->side.pending;
    return UCS_OK;
}

/* The aux endpoint failed (the peer's interface silent): the channel
 * closes from the progress, and opens again at the next message */
int ucp_failover_side_ep_failed(ucp_failover_t *fo, uct_ep_h uct_ep)
{
    if ((uct_ep == NULL) || (fo->side.uct_ep != uct_ep)) {
        return 0;
    }
    fo->side.failed = 1;
    return 1;
}

void ucp_failover_side_progress(ucp_failover_t *fo)
{
    if (fo->side.failed) {
        ucs_diag("ep %p: lane %u's aux endpoint to the peer failed", fo->ep,
                 fo->lane);
        ucp_failover_side_close(fo, 0);
        fo->side.failed = 0;
    }
}
