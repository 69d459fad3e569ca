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
#include <ucp/core/ucp_worker.h>
#include <ucp/core/ucp_worker.inl>
#include <ucp/wireup/wireup_ep.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>

#include <stdio.h>
#include <string.h>


/*
 * The lane failover's messages (DESIGN.md section 7). One active message
 * id, UCP_AM_ID_FAILOVER, carries them all: a header, then a token or a
 * rebuild's addresses. Packing, a lane a message can go on, the outbox that
 * sends an answer again from the progress while no lane has resources, and
 * the handler that gives each message to the file whose job it is.
 */

/* A header and the token_length bytes after it */
static size_t ucp_failover_msg_pack(void *dest, void *arg)
{
    const ucp_failover_msg_t *msg = arg;
    size_t length = sizeof(*msg) + msg->token_length;

    memcpy(dest, msg, length);
    return length;
}

ucs_status_t ucp_failover_msg_post(uct_ep_h uct_ep,
                                   const ucp_failover_msg_t *msg)
{
    ssize_t packed;

    packed = uct_ep_am_bcopy(uct_ep, UCP_AM_ID_FAILOVER,
                             ucp_failover_msg_pack, (void*)msg, 0);
    return (packed < 0) ? (ucs_status_t)packed : UCS_OK;
}

/* A lane of the endpoint that can carry a message now: not the failed one
 * (nor, while the failed one has no failover here yet, one whose traffic a
 * failover forwards to its endpoint), not one that holds its traffic */
ucp_lane_index_t ucp_failover_msg_lane(ucp_ep_h ep,
                                       ucp_lane_index_t avoid)
{
    uct_ep_h avoid_ep = ((avoid == UCP_NULL_LANE) ||
                         ucp_proxy_ep_test(ep->uct_eps[avoid])) ? NULL :
                        ep->uct_eps[avoid];
    ucp_lane_index_t lane;
    uct_ep_h uct_ep;

    for (lane = 0; lane < ucp_ep_num_lanes(ep); ++lane) {
        uct_ep = ep->uct_eps[lane];
        if ((lane == avoid) || (uct_ep == NULL) ||
            (ucp_ep_get_rsc_index(ep, lane) == UCP_NULL_RESOURCE) ||
            ucp_is_uct_ep_failed(uct_ep) || ucp_wireup_ep_test(uct_ep) ||
            ucp_failover_is_holding(uct_ep) ||
            ((avoid_ep != NULL) &&
             (ucp_failover_final_ep(uct_ep) == avoid_ep))) {
            continue;
        }
        return lane;
    }
    return UCP_NULL_LANE;
}

ucs_status_t ucp_failover_msg_send(ucp_ep_h ep, ucp_lane_index_t lane,
                                   const ucp_failover_msg_t *msg)
{
    return ucp_failover_msg_post(ep->uct_eps[lane], msg);
}

/* A message to the peer: over a live lane other than avoid; when none is
 * left, over a connection made again whose lane is being restored (when the
 * carrier died, the peer queries over it: the reply goes back the same way,
 * where the confirmation came before it); else over the side channel of a
 * failover of the endpoint that knows the peer's aux address
 * (ucp_failover_side.c). A reply posted on the side channel sometimes
 * never reached the peer, whose query timed out and ended the endpoint
 * (the carrier scenario: 2 runs of 45 with logging on, 2 of 60 without;
 * why, not found). */
ucs_status_t ucp_failover_peer_send(ucp_ep_h ep, ucp_lane_index_t avoid,
                                    const ucp_failover_msg_t *msg)
{
    ucp_lane_index_t lane = ucp_failover_msg_lane(ep, avoid);
    ucp_failover_t *side;
    uct_ep_h restoring;

    if (lane != UCP_NULL_LANE) {
        return ucp_failover_msg_send(ep, lane, msg);
    }
    restoring = ucp_failover_restoring_ep(ep);
    if (restoring != NULL) {
        return ucp_failover_msg_post(restoring, msg);
    }
    side = ucp_failover_side_owner(ep);
    return (side == NULL) ? UCS_ERR_NO_RESOURCE :
           ucp_failover_side_send(side, msg);
}

/* A message that found no send resources: sent again from the progress,
 * until UCX_UCP_FAILOVER_TIMEOUT */
typedef struct {
    ucp_worker_h            worker;
    uint64_t                ep_id;
    ucp_lane_index_t        avoid;
    ucs_time_t              deadline;
    uct_worker_cb_id_t      prog_id;
    ucp_failover_msg_max_t  msg;
} ucp_failover_outbox_t;

static unsigned ucp_failover_outbox_progress(void *arg)
{
    ucp_failover_outbox_t *box = arg;
    ucp_worker_h worker        = box->worker;
    ucs_status_t status        = UCS_ERR_NO_ELEM;
    ucp_ep_h ep;

    UCS_ASYNC_BLOCK(&worker->async);
    if (ucp_worker_get_ep_by_id(worker, box->ep_id, &ep) == UCS_OK) {
        status = ucp_failover_peer_send(ep, box->avoid, &box->msg.hdr);
    }
    if ((status == UCS_ERR_NO_RESOURCE) && (ucs_get_time() < box->deadline)) {
        box->prog_id = UCS_CALLBACKQ_ID_NULL;
        uct_worker_progress_register_safe(worker->uct,
                                          ucp_failover_outbox_progress, box,
                                          UCS_CALLBACKQ_FLAG_ONESHOT,
                                          &box->prog_id);
        UCS_ASYNC_UNBLOCK(&worker->async);
        return 0;
    }
    if (status != UCS_OK) {
        ucs_diag("UCP failover: message to ep id 0x%" PRIx64 " not sent: %s",
                 box->msg.hdr.dst_ep_id, ucs_status_string(status));
    }
    UCS_ASYNC_UNBLOCK(&worker->async);
    ucs_free(box);
    return 1;
}

/* A message goes now over a lane other than avoid, or from the progress
 * when none has resources (an answer to a query, a refusal, a marker's
 * answer, what a restoring failover's side channel still held) */
void ucp_failover_msg_send_queued(ucp_ep_h ep, ucp_lane_index_t avoid,
                                  const ucp_failover_msg_t *msg)
{
    ucp_worker_h worker = ep->worker;
    ucp_failover_outbox_t *box;

    if (ucp_failover_peer_send(ep, avoid, msg) == UCS_OK) {
        return;
    }

    box = ucs_malloc(sizeof(*box), "ucp_failover_outbox");
    if (box == NULL) {
        ucs_error("ep %p: no memory to keep a failover message to send", ep);
        return;
    }
    box->worker   = worker;
    box->ep_id    = ucp_ep_local_id(ep);
    box->avoid    = avoid;
    box->deadline = ucs_get_time() +
                    ucs_time_from_sec(ucp_failover_timeout());
    box->prog_id  = UCS_CALLBACKQ_ID_NULL;
    memcpy(&box->msg, msg, sizeof(*msg) + msg->token_length);
    uct_worker_progress_register_safe(worker->uct,
                                      ucp_failover_outbox_progress, box,
                                      UCS_CALLBACKQ_FLAG_ONESHOT,
                                      &box->prog_id);
}

static const char *ucp_failover_msg_names[] = {
    [UCP_FAILOVER_MSG_QUERY]           = "QUERY",
    [UCP_FAILOVER_MSG_REPLY]           = "REPLY",
    [UCP_FAILOVER_MSG_REBUILD_ASK]     = "REBUILD_ASK",
    [UCP_FAILOVER_MSG_REBUILD_ANSWER]  = "REBUILD_ANSWER",
    [UCP_FAILOVER_MSG_REBUILD_PROBE]   = "REBUILD_PROBE",
    [UCP_FAILOVER_MSG_REBUILD_CONFIRM] = "REBUILD_CONFIRM",
    [UCP_FAILOVER_MSG_RESTORE_MARK]    = "RESTORE_MARK",
    [UCP_FAILOVER_MSG_RESTORE_MARKED]  = "RESTORE_MARKED"
};

static ucs_status_t ucp_failover_am_handler(void *arg, void *data,
                                            size_t length, unsigned flags)
{
    ucp_worker_h worker          = arg;
    const ucp_failover_msg_t *msg = data;

    if ((length < sizeof(*msg)) ||
        (length < sizeof(*msg) + msg->token_length)) {
        ucs_error("UCP failover: message of %zu bytes dropped", length);
        return UCS_OK;
    }

    UCS_ASYNC_BLOCK(&worker->async);
    if (msg->type == UCP_FAILOVER_MSG_QUERY) {
        ucp_failover_answer(worker, msg);
    } else if (msg->type == UCP_FAILOVER_MSG_REPLY) {
        ucp_failover_replied(worker, msg);
    } else if (msg->type <= UCP_FAILOVER_MSG_RESTORE_MARKED) {
        ucp_failover_rebuild_msg(worker, msg);
    }
    UCS_ASYNC_UNBLOCK(&worker->async);
    return UCS_OK;
}

static void ucp_failover_am_dump(ucp_worker_h worker,
                                 uct_am_trace_type_t type, uint8_t id,
                                 const void *data, size_t length,
                                 char *buffer, size_t max)
{
    const ucp_failover_msg_t *msg = data;

    snprintf(buffer, max, "FAILOVER %s seq %u ep 0x%" PRIx64 " length %u",
             ((msg->type >= UCP_FAILOVER_MSG_QUERY) &&
              (msg->type <= UCP_FAILOVER_MSG_RESTORE_MARKED)) ?
             ucp_failover_msg_names[msg->type] : "?",
             msg->seq, msg->dst_ep_id, msg->token_length);
}

UCP_DEFINE_AM(UINT64_MAX, UCP_AM_ID_FAILOVER, ucp_failover_am_handler,
              ucp_failover_am_dump, 0);
