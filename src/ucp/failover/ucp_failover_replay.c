/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucp_failover_int.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_proxy_ep.h>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_request.inl>
#include <ucp/core/ucp_worker.h>
#include <ucp/core/ucp_worker.inl>
#include <ucp/wireup/wireup.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>


/*
 * Query, purge, replay, forward: what tells which operations executed, and
 * what follows. The peer's interface fences its side of the failed
 * connection and derives an RX token from our TX token; with it the failed
 * endpoint completes what executed and hands back what did not, of which
 * we keep copies, post them on the other lane in order, then point the
 * lane there, release the requests held meanwhile and report.
 */

/* The name of a UCT operation, for the report: UCX's own table, which has
 * none for UCT_EP_OP_FLUSH (patch 0007 adds the operation, not its name) */
static const char *ucp_failover_op_name(int op)
{
    return (op == UCT_EP_OP_FLUSH) ? "flush" : uct_ep_operation_names[op];
}


/* ------------------------------------------------------------------------
 * The peer's side: derive the RX token, answer
 * ------------------------------------------------------------------------ */

void ucp_failover_answer(ucp_worker_h worker,
                         const ucp_failover_msg_t *query)
{
    ucp_failover_msg_buf_t reply;
    ucp_worker_iface_t *wiface;
    ucp_lane_index_t lane, dead_lane;
    ucs_status_t status;
    size_t rx_length;
    ucp_ep_h ep;

    UCP_WORKER_GET_VALID_EP_BY_ID(&ep, worker, query->dst_ep_id, return,
                                  "failover query");

    memset(&reply, 0, sizeof(reply));
    status    = UCS_ERR_NO_ELEM;
    dead_lane = UCP_NULL_LANE;
    if (query->side_length > query->token_length) {
        return;
    }
    for (lane = 0; lane < ucp_ep_num_lanes(ep); ++lane) {
        if (!ucp_failover_lane_can_purge(ep, lane)) {
            continue;
        }
        wiface    = ucp_worker_iface(worker, ucp_ep_get_rsc_index(ep, lane));
        rx_length = 0;
        status    = uct_iface_derive_rx_token(wiface->iface, query + 1,
                                              query->token_length -
                                              query->side_length,
                                              reply.token, &rx_length);
        if (status == UCS_OK) {
            dead_lane                = lane;
            reply.hdr.token_length   = (uint8_t)rx_length;
            break;
        }
    }

    ucs_diag("ep %p: the peer's lane failed; its connection %s: %s", ep,
             (dead_lane == UCP_NULL_LANE) ? "is not ours" : "fenced here",
             ucs_status_string(status));

    if (dead_lane != UCP_NULL_LANE) {
        /* where the peer reaches us when no lane is left (the side
         * channel) */
        reply.hdr.side_length   = (uint8_t)ucp_failover_side_addr_pack(
                ep, dead_lane, reply.token + reply.hdr.token_length,
                UCP_FAILOVER_SIDE_ADDR_MAX);
        reply.hdr.token_length += reply.hdr.side_length;
    }
    reply.hdr.type      = UCP_FAILOVER_MSG_REPLY;
    reply.hdr.status    = (int8_t)status;
    reply.hdr.seq       = query->seq;
    reply.hdr.dst_ep_id = query->src_ep_id;
    reply.hdr.src_ep_id = ucp_ep_local_id(ep);
    ucp_failover_msg_send_queued(ep, dead_lane, &reply.hdr);
}


/* ------------------------------------------------------------------------
 * Our side: purge, replay, forward
 * ------------------------------------------------------------------------ */

/* The transport hands back an operation that never executed: keep a copy
 * of it and of everything it points to (valid only in this call) */
static void ucp_failover_keep_op(const uct_ep_op_info_t *info, void *arg)
{
    ucp_failover_t *fo = arg;
    size_t iov_size    = info->iovcnt * sizeof(uct_iov_t);
    size_t data_size   = (info->field_mask & UCT_EP_OP_INFO_FIELD_DATA) ?
                         info->data.length : 0;
    size_t hdr_size    = (info->field_mask & UCT_EP_OP_INFO_FIELD_AM) ?
                         info->am.header_length : 0;
    ucp_failover_op_t *op;
    char *p;

    op = ucs_malloc(sizeof(*op) + iov_size + data_size + hdr_size,
                    "ucp_failover_op");
    if (op == NULL) {
        /* cannot be resent: complete it with the error, as the failure
         * would have without the failover. One without a completion (a
         * short put or active message) would be lost without a word: then
         * the endpoint fails instead of going on (the review of 0aa6934,
         * risk 12) */
        ucs_error("ep %p: no memory to keep an operation to resend", fo->ep);
        if (info->comp != NULL) {
            ucp_invoke_uct_completion(info->comp, UCS_ERR_NO_MEMORY);
        } else {
            ++fo->dropped;
        }
        return;
    }

    op->info = *info;
    p        = op->data;
    if (iov_size > 0) {
        memcpy(p, info->iov, iov_size);
        op->info.iov = (uct_iov_t*)p;
        p           += iov_size;
    }
    if (data_size > 0) {
        memcpy(p, info->data.buffer, data_size);
        op->info.data.buffer = p;
        p                   += data_size;
    }
    if (hdr_size > 0) {
        memcpy(p, info->am.header, hdr_size);
        op->info.am.header = p;
    }
    ucs_queue_push(&fo->replay, &op->queue);
    ++fo->handed_back;
    if (info->operation < UCT_EP_OP_LAST) {
        ++fo->handed_back_by_op[info->operation];
    }
}

static size_t ucp_failover_op_pack(void *dest, void *arg)
{
    const ucp_failover_op_t *op = arg;

    memcpy(dest, op->info.data.buffer, op->info.data.length);
    return op->info.data.length;
}

static ucs_status_t ucp_failover_bcopy_status(ssize_t packed)
{
    return (packed < 0) ? (ucs_status_t)packed : UCS_OK;
}

/* Post one handed-back operation on the other lane's endpoint */
static ucs_status_t ucp_failover_op_post(uct_ep_h uct_ep,
                                         ucp_failover_op_t *op)
{
    uct_ep_op_info_t *i = &op->info;

    switch (i->operation) {
    case UCT_EP_OP_PUT_SHORT:
        return uct_ep_put_short(uct_ep, i->data.buffer, i->data.length,
                                i->rma.remote_addr, i->rma.rkey);
    case UCT_EP_OP_PUT_BCOPY:
        return ucp_failover_bcopy_status(
                uct_ep_put_bcopy(uct_ep, ucp_failover_op_pack, op,
                                 i->rma.remote_addr, i->rma.rkey));
    case UCT_EP_OP_PUT_ZCOPY:
        return uct_ep_put_zcopy(uct_ep, i->iov, i->iovcnt, i->rma.remote_addr,
                                i->rma.rkey, i->comp);
    case UCT_EP_OP_GET_BCOPY:
        return uct_ep_get_bcopy(uct_ep, i->get_bcopy.unpack_cb,
                                i->get_bcopy.arg, i->get_bcopy.length,
                                i->rma.remote_addr, i->rma.rkey, i->comp);
    case UCT_EP_OP_GET_ZCOPY:
        return uct_ep_get_zcopy(uct_ep, i->iov, i->iovcnt, i->rma.remote_addr,
                                i->rma.rkey, i->comp);
    case UCT_EP_OP_AM_BCOPY:
        return ucp_failover_bcopy_status(
                uct_ep_am_bcopy(uct_ep, i->am.id, ucp_failover_op_pack, op,
                                i->flags));
    case UCT_EP_OP_AM_ZCOPY:
        return uct_ep_am_zcopy(uct_ep, i->am.id, i->am.header,
                               i->am.header_length, i->iov, i->iovcnt,
                               i->flags, i->comp);
    case UCT_EP_OP_ATOMIC_POST:
        return (i->atomic.size == sizeof(uint64_t)) ?
               uct_ep_atomic64_post(uct_ep, i->atomic.op, i->atomic.value,
                                    i->rma.remote_addr, i->rma.rkey) :
               uct_ep_atomic32_post(uct_ep, i->atomic.op,
                                    (uint32_t)i->atomic.value,
                                    i->rma.remote_addr, i->rma.rkey);
    case UCT_EP_OP_ATOMIC_FETCH:
        if (i->atomic.size != sizeof(uint64_t)) {
            return (i->atomic.op == UCT_ATOMIC_OP_CSWAP) ?
                   uct_ep_atomic_cswap32(uct_ep, (uint32_t)i->atomic.compare,
                                         (uint32_t)i->atomic.value,
                                         i->rma.remote_addr, i->rma.rkey,
                                         i->atomic.result, i->comp) :
                   uct_ep_atomic32_fetch(uct_ep, i->atomic.op,
                                         (uint32_t)i->atomic.value,
                                         i->atomic.result, i->rma.remote_addr,
                                         i->rma.rkey, i->comp);
        }
        return (i->atomic.op == UCT_ATOMIC_OP_CSWAP) ?
               uct_ep_atomic_cswap64(uct_ep, i->atomic.compare,
                                     i->atomic.value, i->rma.remote_addr,
                                     i->rma.rkey, i->atomic.result, i->comp) :
               uct_ep_atomic64_fetch(uct_ep, i->atomic.op, i->atomic.value,
                                     i->atomic.result, i->rma.remote_addr,
                                     i->rma.rkey, i->comp);
    case UCT_EP_OP_FLUSH:
        return uct_ep_flush(uct_ep, i->flags, i->comp);
    default:
        ucs_error("UCP failover: cannot resend operation %d", i->operation);
        return UCS_ERR_UNSUPPORTED;
    }
}

/* Post what was handed back, in order, as far as resources go */
ucs_status_t ucp_failover_replay(ucp_failover_t *fo)
{
    uct_ep_h uct_ep = ucp_failover_target_ep(fo);
    ucp_failover_op_t *op;
    ucs_status_t status;

    while (!ucs_queue_is_empty(&fo->replay)) {
        op     = ucs_queue_head_elem_non_empty(&fo->replay, ucp_failover_op_t,
                                               queue);
        status = ucp_failover_op_post(uct_ep, op);
        if (status == UCS_ERR_NO_RESOURCE) {
            return status;
        }
        if (UCS_STATUS_IS_ERR(status)) {
            return status;
        }

        ucs_queue_pull_non_empty(&fo->replay);
        if ((status == UCS_OK) && (op->info.comp != NULL)) {
            /* done at once: the completion is ours to call */
            ucp_invoke_uct_completion(op->info.comp, UCS_OK);
        }
        ucs_free(op);
        ++fo->replayed;
    }
    return UCS_OK;
}

/* Complete what was handed back and not posted with an error: the failover
 * gives up */
void ucp_failover_replay_purge(ucp_failover_t *fo, ucs_status_t status)
{
    ucp_failover_op_t *op;

    ucs_queue_for_each_extract(op, &fo->replay, queue, 1) {
        if (op->info.comp != NULL) {
            ucp_invoke_uct_completion(op->info.comp, status);
        }
        ucs_free(op);
    }
}

/* "name":count of every kind of operation handed back, for the report */
static void ucp_failover_by_op_str(ucp_failover_t *fo, char *buf, size_t max)
{
    const char *sep = "";
    size_t len      = 0;
    int op;

    buf[0] = '\0';
    for (op = 0; (op < UCT_EP_OP_LAST) && (len < max); ++op) {
        if ((fo->handed_back_by_op[op] == 0) ||
            (ucp_failover_op_name(op) == NULL)) {
            continue;
        }
        len += snprintf(buf + len, max - len, "%s\"%s\":%u", sep,
                        ucp_failover_op_name(op), fo->handed_back_by_op[op]);
        sep  = ",";
    }
}

static void ucp_failover_report(ucp_failover_t *fo)
{
    ucp_ep_h ep = fo->ep;
    double us   = ucs_time_to_usec(ucs_get_time() - fo->t_failed);
    char by_op[512];
    FILE *file;

    ucp_failover_by_op_str(fo, by_op, sizeof(by_op));

    if (fo->report != NULL) {
        file = fopen(fo->report, "a");
        if (file == NULL) {
            ucs_warn("UCP lane failover: cannot open %s: %m", fo->report);
        } else {
            fprintf(file, "{\"event\":\"lane_failover\",\"pid\":%d,"
                    "\"ep\":\"%p\",\"status\":\"%s\",\"from_lane\":%u,"
                    "\"from\":\"%s\",\"to_lane\":%u,\"to\":\"%s\","
                    "\"memory_domain\":\"%s\",\"keys_translated\":%u,"
                    "\"buffers_registered\":%u,"
                    "\"handed_back\":%u,\"handed_back_by_op\":{%s},"
                    "\"resent\":%u,\"held\":%u,\"awaited_rebuild\":%s,"
                    "\"failure_to_flowing_us\":%.1f}\n", getpid(), ep,
                    ucs_status_string(fo->status), fo->lane,
                    ucp_ep_get_tl_rsc(ep, fo->lane)->dev_name, fo->sub_lane,
                    ucp_ep_get_tl_rsc(ep, fo->sub_lane)->dev_name,
                    fo->other_md ? "other" : "same", fo->keys_translated,
                    fo->buffers_registered, fo->handed_back, by_op,
                    fo->replayed, fo->held_count,
                    fo->awaited ? "true" : "false", us);
            fclose(file);
        }
    }

    ucs_info("ep %p: lane %u (%s) failed (%s); its traffic moved to lane %u "
             "(%s, %s memory domain%s): %u operations resent (handed back "
             "by the transport as never executed: {%s}), %u requests held "
             "meanwhile; traffic flowing again %.1f us after the failure",
             ep, fo->lane,
             ucp_ep_get_tl_rsc(ep, fo->lane)->dev_name,
             ucs_status_string(fo->status), fo->sub_lane,
             ucp_ep_get_tl_rsc(ep, fo->sub_lane)->dev_name,
             fo->other_md ? "another" : "the same",
             fo->awaited ? ", connected again for it" : "", fo->replayed,
             by_op, fo->held_count, us);
}

/* Everything handed back is posted: the lane goes to the other lane's
 * endpoint, and the requests held meanwhile go there, in order */
void ucp_failover_forward(ucp_failover_t *fo)
{
    ucp_ep_h ep      = fo->ep;
    ucp_worker_h wkr = ep->worker;
    ucs_queue_head_t held;

    fo->state = UCP_FAILOVER_FORWARD;
    /* the proxy stops owning the hold endpoint: the failover stays listed,
     * with the failed endpoint, until the lane is destroyed */
    ucp_proxy_ep_set_uct_ep(ucs_derived_of(fo->proxy, ucp_proxy_ep_t),
                            ucp_failover_target_ep(fo), 0,
                            ucp_ep_get_rsc_index(ep, fo->sub_lane));

    ucp_failover_held_extract(fo, &held);
    ucp_failover_report(fo);
    if (fo->rebuild.state == UCP_FAILOVER_REBUILD_OFF) {
        uct_worker_progress_unregister_safe(wkr->uct, &fo->prog_id);
    } else {
        /* the progress goes on, for the rebuild */
        fo->rebuild.t_forward = ucs_get_time();
        fo->rebuild.interval  = fo->rebuild.base;
        fo->rebuild.next      = fo->rebuild.t_forward + fo->rebuild.base;
        fo->rebuild.path_up   = 0;
    }
    ucp_wireup_replay_pending_requests(ep, &held);
}

ucs_status_t ucp_failover_send_query(ucp_failover_t *fo)
{
    ucp_failover_msg_buf_t query;

    memset(&query, 0, sizeof(query));
    query.hdr.type         = UCP_FAILOVER_MSG_QUERY;
    query.hdr.token_length = (uint8_t)fo->tx_token_length;
    query.hdr.seq          = fo->seq;
    query.hdr.dst_ep_id    = ucp_ep_remote_id(fo->ep);
    query.hdr.src_ep_id    = ucp_ep_local_id(fo->ep);
    memcpy(query.token, fo->tx_token, fo->tx_token_length);
    query.hdr.side_length   = (uint8_t)ucp_failover_side_addr_pack(
            fo->ep, fo->lane, query.token + fo->tx_token_length,
            UCP_FAILOVER_SIDE_ADDR_MAX);
    query.hdr.token_length += query.hdr.side_length;

    if ((ucp_failover_sub_ep(fo) == NULL) ||
        ucp_is_uct_ep_failed(ucp_failover_sub_ep(fo))) {
        return UCS_ERR_UNREACHABLE;
    }
    /* on the endpoint the lane moves to: the lane's, or (AWAIT) the new
     * connection of the lane whose traffic this one carried */
    return ucp_failover_msg_post(ucp_failover_sub_ep(fo), &query.hdr);
}

/* The peer's RX token: purge the failed endpoint, then replay from the
 * progress */
void ucp_failover_replied(ucp_worker_h worker,
                          const ucp_failover_msg_t *reply)
{
    uct_ep_outstanding_purge_params_t params;
    ucp_failover_t *fo;
    ucs_status_t status;
    ucp_ep_h ep;

    UCP_WORKER_GET_VALID_EP_BY_ID(&ep, worker, reply->dst_ep_id, return,
                                  "failover reply");
    fo = ucp_failover_find(ep, reply->seq);
    if ((fo == NULL) || (fo->state != UCP_FAILOVER_QUERY)) {
        return; /* late: the failover gave up */
    }
    if (reply->side_length > reply->token_length) {
        return;
    }
    ucp_failover_side_addr_keep(fo, (const uint8_t*)(reply + 1) +
                                    reply->token_length - reply->side_length,
                                reply->side_length);

    if (reply->status != UCS_OK) {
        /* the peer could not fence: nothing can be decided, and nothing
         * may be resent; the progress fails the endpoint */
        ucs_diag("ep %p: the peer could not answer for lane %u: %s", ep,
                 fo->lane, ucs_status_string((ucs_status_t)reply->status));
        fo->deadline = 0;
        return;
    }

    params.field_mask      = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN |
                             UCT_EP_OUTSTANDING_FIELD_CB |
                             UCT_EP_OUTSTANDING_FIELD_ARG;
    params.rx_token        = reply + 1;
    params.rx_token_length = reply->token_length - reply->side_length;
    params.cb              = ucp_failover_keep_op;
    params.arg             = fo;
    status = uct_ep_outstanding_purge(fo->failed_ep, &params);
    if (status != UCS_OK) {
        ucs_diag("ep %p: purge of lane %u failed: %s", ep, fo->lane,
                 ucs_status_string(status));
        fo->deadline = 0;
        return;
    }
    if (fo->dropped > 0) {
        ucs_diag("ep %p: %u operations of lane %u could not be kept to "
                 "resend and have no completion: the endpoint fails", ep,
                 fo->dropped, fo->lane);
        fo->status   = UCS_ERR_NO_MEMORY;
        fo->deadline = 0;
        return;
    }
    fo->state = UCP_FAILOVER_REPLAY;
}
