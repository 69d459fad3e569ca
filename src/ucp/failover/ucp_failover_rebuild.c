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
 * Rebuilding the failed lane
 *
 * After the move the endpoint has one lane of the transport left, and when
 * that one fails too the endpoint ends, although the failed lane's ports
 * may have come back meanwhile (an endpoint of UCP's spare lane has two
 * lanes: both would be used up by two failures). So, while FORWARD, the
 * failover tries every UCX_UCP_FAILOVER_REBUILD_INTERVAL (doubled after
 * each try that fails, up to UCP_FAILOVER_REBUILD_BACKOFF times) to connect
 * the failed lane again on its own resource, with a new transport endpoint
 * on each side:
 *
 *   ask      ours, its addresses to the peer over a live lane; of two asks
 *            that cross, the one from the worker with the smaller UUID goes
 *            on, the other side answers it (between two endpoints of one
 *            worker, an endpoint connected to its own worker: the one with
 *            the smaller endpoint id); a side that answers, or fails to,
 *            counts it as its own try for the time of its next
 *   answer   the peer finds its failover of the same lane (its memory
 *            domains), connects a new endpoint of its own to ours and
 *            answers with its addresses
 *   probe    we connect ours, send one message on it and flush it: when the
 *            flush completes the new connection works both ways, else the
 *            try ends (and both new endpoints are dropped: neither side
 *            sent anything else on them)
 *   confirm  we tell the peer, on the new connection; each side then
 *            restores its half, alone:
 *   restore  the lane's index holds its traffic again; its requests still
 *            waiting on the other lane come back first in line; a marker
 *            goes on the other lane behind everything the lane sent there,
 *            and when the peer has processed it (it answers), all of that
 *            is ahead of what follows on the new connection (active
 *            messages stay in order; writes before it were executed); then
 *            the lane gets the new endpoint, the held requests go to it in
 *            order, and the failover ends. A new failure of the lane is a
 *            new failover.
 *
 * When the lane carrying our traffic dies while our ports are up, no lane
 * is left for these messages, and its failover has nowhere to move but
 * here (AWAIT, ucp_failover.c): the carrier is lost. Our traffic then
 * waits in its hold, the rebuild's messages go over the side channel
 * (ucp_failover_side.c), and the restore sends no marker: the carrier's
 * failover queries and purges the dead lane over our new connection, after
 * the peer fenced it, and replays what never executed, ours included,
 * there; when it forwards, nothing of ours is left behind, and our held
 * requests follow.
 */

/* a try that fails doubles the interval, up to this many times the first */
#define UCP_FAILOVER_REBUILD_BACKOFF 32

static void ucp_failover_rebuild_probe(ucp_failover_t *fo, uint32_t peer_seq,
                                       uint64_t peer_ep_id);

const char *ucp_failover_rebuild_state_names[] = {
    [UCP_FAILOVER_REBUILD_OFF]      = "off",
    [UCP_FAILOVER_REBUILD_IDLE]     = "idle",
    [UCP_FAILOVER_REBUILD_ASKED]    = "asked",
    [UCP_FAILOVER_REBUILD_ANSWERED] = "answered",
    [UCP_FAILOVER_REBUILD_PROBING]  = "probing",
    [UCP_FAILOVER_REBUILD_PROVEN]   = "proven"
};

/* The try's endpoint goes, and its ask or answer if it never left; a probe
 * completion that comes while it is destroyed finds the state no longer
 * PROBING */
void ucp_failover_rebuild_drop(ucp_failover_t *fo)
{
    uct_ep_h uct_ep = fo->rebuild.uct_ep;

    if (fo->rebuild.state != UCP_FAILOVER_REBUILD_OFF) {
        fo->rebuild.state = UCP_FAILOVER_REBUILD_IDLE;
    }
    ucs_free(fo->rebuild.unsent);
    fo->rebuild.unsent = NULL;
    fo->rebuild.uct_ep = NULL;
    if (uct_ep != NULL) {
        uct_ep_destroy(uct_ep);
    }
}

/* The try ends without the lane: the next one after a longer interval.
 * With the carrier lost, its failover waits for this lane for twice
 * UCX_UCP_FAILOVER_TIMEOUT: the next try is within a quarter of the
 * timeout (a probe sent while the new path lost everything fails, and the
 * path may be back a moment later). */
static void ucp_failover_rebuild_retry(ucp_failover_t *fo, const char *why,
                                       ucs_status_t status)
{
    ucs_time_t delay = fo->rebuild.interval;

    if (fo->rebuild.carrier_lost) {
        delay = ucs_min(delay,
                        ucs_time_from_sec(ucp_failover_timeout() / 4));
    }
    ucp_failover_rebuild_drop(fo);
    fo->rebuild.next     = ucs_get_time() + delay;
    fo->rebuild.interval = ucs_min(fo->rebuild.interval * 2,
                                   fo->rebuild.base *
                                   UCP_FAILOVER_REBUILD_BACKOFF);
    ucs_debug("ep %p: lane %u not connected again (try %u): %s: %s; next "
              "try in %.0f ms", fo->ep, fo->lane, fo->rebuild.tries, why,
              ucs_status_string(status),
              ucs_time_to_msec(fo->rebuild.next - ucs_get_time()));
}

/* A new endpoint on the failed lane's resource, its addresses in rb */
static ucs_status_t
ucp_failover_rebuild_ep_create(ucp_failover_t *fo,
                               ucp_failover_rebuild_buf_t *buf)
{
    ucp_ep_h ep                = fo->ep;
    ucp_worker_iface_t *wiface = ucp_worker_iface(ep->worker,
                                                  ucp_ep_get_rsc_index(
                                                          ep, fo->lane));
    size_t dev_len             = wiface->attr.device_addr_len;
    size_t ep_len              = wiface->attr.ep_addr_len;
    uct_ep_params_t params;
    ucs_status_t status;

    fo->rebuild.failed = 0;
    if (!(wiface->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP) ||
        (dev_len + ep_len > sizeof(buf->addr))) {
        return UCS_ERR_UNSUPPORTED;
    }

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_PATH_INDEX;
    params.iface      = wiface->iface;
    params.path_index = ucp_ep_get_path_index(ep, fo->lane);
    status            = uct_ep_create(&params, &fo->rebuild.uct_ep);
    if (status != UCS_OK) {
        fo->rebuild.uct_ep = NULL;
        return status;
    }

    status = uct_iface_get_device_address(wiface->iface,
                                          (uct_device_addr_t*)buf->addr);
    if (status == UCS_OK) {
        status = uct_ep_get_address(fo->rebuild.uct_ep,
                                    (uct_ep_addr_t*)(buf->addr + dev_len));
    }
    if (status != UCS_OK) {
        ucp_failover_rebuild_drop(fo);
        return status;
    }

    buf->rb.uuid            = ep->worker->uuid;
    buf->rb.md              = fo->md_from;
    buf->rb.dst_md          = fo->dst_md_from;
    buf->rb.dev_addr_length = (uint8_t)dev_len;
    buf->rb.ep_addr_length  = (uint8_t)ep_len;
    buf->hdr.token_length   = (uint8_t)(sizeof(buf->rb) + dev_len + ep_len);
    buf->hdr.seq            = fo->seq;
    buf->hdr.dst_ep_id      = ucp_ep_remote_id(ep);
    buf->hdr.src_ep_id      = ucp_ep_local_id(ep);
    return UCS_OK;
}

/* Our new endpoint to the peer's, whose addresses the message carries */
static ucs_status_t
ucp_failover_rebuild_connect(ucp_failover_t *fo,
                             const ucp_failover_rebuild_msg_t *rb)
{
    const uint8_t *addr = (const uint8_t*)(rb + 1);

    return uct_ep_connect_to_ep(fo->rebuild.uct_ep,
                                (const uct_device_addr_t*)addr,
                                (const uct_ep_addr_t*)(addr +
                                                       rb->dev_addr_length));
}

/* A message about the rebuild, to the peer over a live lane other than the
 * failed one; over the side channel when the lane carrying our traffic
 * died too, or when it answers a message that came that way */
static ucs_status_t ucp_failover_rebuild_send(ucp_failover_t *fo,
                                              ucp_failover_rebuild_buf_t *buf,
                                              int side)
{
    ucp_lane_index_t lane;

    if (fo->rebuild.carrier_lost || side) {
        buf->rb.side = 1;
        return ucp_failover_side_send(fo, &buf->hdr);
    }
    lane = ucp_failover_msg_lane(fo->ep, fo->lane);
    return (lane == UCP_NULL_LANE) ? UCS_ERR_NO_RESOURCE :
           ucp_failover_msg_send(fo->ep, lane, &buf->hdr);
}

/* An ask or an answer: sent now, or, when no lane has send resources (a
 * busy lane carrying two lanes' traffic), kept in the try and posted again
 * from the progress. Ending the try instead put the next one a
 * REBUILD_INTERVAL away, doubled each time: lanes still moved seconds after
 * their links came back (the carrier scenario, 3 runs of 20). It is never
 * handed to a queue that outlives the try (the outbox): an ask or answer
 * that left after its try ended made the two sides restore onto endpoints
 * not connected to each other (2 gtest runs of about 20 under ASan). */
static ucs_status_t
ucp_failover_rebuild_send_or_keep(ucp_failover_t *fo,
                                  ucp_failover_rebuild_buf_t *buf, int side)
{
    ucs_status_t status = ucp_failover_rebuild_send(fo, buf, side);

    if (status != UCS_ERR_NO_RESOURCE) {
        return status;
    }
    ucs_assert(fo->rebuild.unsent == NULL);
    fo->rebuild.unsent = ucs_malloc(sizeof(*fo->rebuild.unsent),
                                    "ucp_failover_rebuild_unsent");
    if (fo->rebuild.unsent == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(fo->rebuild.unsent, buf, sizeof(buf->hdr) + buf->hdr.token_length);
    return UCS_OK;
}

/* ASKED, ANSWERED: the kept ask or answer, again */
static void ucp_failover_rebuild_send_unsent(ucp_failover_t *fo)
{
    ucp_failover_rebuild_buf_t *buf = (void*)fo->rebuild.unsent;
    ucs_status_t status;

    status = ucp_failover_rebuild_send(fo, buf, buf->rb.side);
    if (status == UCS_ERR_NO_RESOURCE) {
        return;
    }
    ucs_free(fo->rebuild.unsent);
    fo->rebuild.unsent = NULL;
    if (status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "ask or answer not sent", status);
    }
}

static void ucp_failover_rebuild_ask(ucp_failover_t *fo)
{
    ucp_failover_rebuild_buf_t ask;
    ucs_status_t status;

    ++fo->rebuild.tries;
    memset(&ask, 0, sizeof(ask));
    status = ucp_failover_rebuild_ep_create(fo, &ask);
    if (status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "no new endpoint", status);
        return;
    }

    fo->rebuild.attempt = fo->rebuild.tries;
    fo->rebuild.self    = 0;
    ask.hdr.type        = UCP_FAILOVER_MSG_REBUILD_ASK;
    ask.rb.attempt      = fo->rebuild.attempt;
    status              = ucp_failover_rebuild_send_or_keep(fo, &ask, 0);
    if (status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "ask not sent", status);
        return;
    }
    fo->rebuild.state    = UCP_FAILOVER_REBUILD_ASKED;
    fo->rebuild.deadline = ucs_get_time() +
                           ucs_time_from_sec(ucp_failover_timeout());
}

/*
 * Our own ask came back to us: the endpoint is connected to its own worker
 * (OpenSHMEM makes one from every PE to itself). UCP 1.13 makes one
 * endpoint there, whose remote id is its own and whose transport endpoints
 * are connected to themselves, so every message of the lane failover goes
 * from its failover to itself: the query and the marker work so, but the
 * asker would answer its own ask (and drop its try to do so). The try goes
 * on alone: the new endpoint is connected to itself (the ask carries its
 * addresses), proven by the probe, and restored with no confirmation.
 */
static void ucp_failover_rebuild_self(ucp_failover_t *fo,
                                      const ucp_failover_rebuild_msg_t *rb)
{
    ucs_status_t status;

    fo->rebuild.self = 1;
    status           = ucp_failover_rebuild_connect(fo, rb);
    if (status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "connect to itself", status);
        return;
    }
    ucp_failover_rebuild_probe(fo, fo->seq, ucp_ep_local_id(fo->ep));
}

/* Of two asks that crossed, does ours go on? The worker with the smaller
 * UUID wins; an endpoint connected to its own worker has two endpoints of
 * one UUID, each with a failover of the lane, and there the smaller
 * endpoint id wins (with UUIDs alone both dropped their asks, answered each
 * other's and waited for probes that neither sent) */
static int ucp_failover_rebuild_ask_wins(ucp_ep_h ep,
                                         const ucp_failover_msg_t *msg)
{
    const ucp_failover_rebuild_msg_t *rb = (const void*)(msg + 1);

    if (ep->worker->uuid != rb->uuid) {
        return ep->worker->uuid < rb->uuid;
    }
    return ucp_ep_local_id(ep) < msg->src_ep_id;
}

/* The peer asks: connect a new endpoint of ours to its, answer */
static void ucp_failover_rebuild_asked(ucp_ep_h ep,
                                       const ucp_failover_msg_t *msg)
{
    const ucp_failover_rebuild_msg_t *rb = (const void*)(msg + 1);
    ucp_failover_rebuild_buf_t answer;
    ucp_failover_msg_buf_t refusal;
    ucs_status_t status;
    ucp_failover_t *fo;

    memset(&answer, 0, sizeof(answer));
    fo = ucp_failover_find_lane(ep, rb);
    if ((rb->uuid == ep->worker->uuid) &&
        (msg->src_ep_id == ucp_ep_local_id(ep))) {
        if ((fo != NULL) && (fo->state == UCP_FAILOVER_FORWARD) &&
            (fo->rebuild.state == UCP_FAILOVER_REBUILD_ASKED) &&
            (rb->attempt == fo->rebuild.attempt)) {
            ucp_failover_rebuild_self(fo, rb);
        }
        return; /* else an ask of ours of a try that ended */
    }
    if ((fo != NULL) && (fo->state == UCP_FAILOVER_FORWARD) &&
        (fo->rebuild.state == UCP_FAILOVER_REBUILD_ASKED) &&
        ucp_failover_rebuild_ask_wins(ep, msg)) {
        return; /* the asks crossed: ours goes on, the peer answers it */
    }

    if (fo == NULL) {
        status = UCS_ERR_NO_ELEM;
    } else if ((fo->state != UCP_FAILOVER_FORWARD) ||
               (fo->rebuild.state == UCP_FAILOVER_REBUILD_PROBING) ||
               (fo->rebuild.state == UCP_FAILOVER_REBUILD_PROVEN)) {
        status = UCS_ERR_BUSY;
    } else {
        /* idle, our own ask that loses, or an older try of the peer's */
        ucp_failover_rebuild_drop(fo);
        status = ucp_failover_rebuild_ep_create(fo, &answer);
        if (status == UCS_OK) {
            status = ucp_failover_rebuild_connect(fo, rb);
        }
        if (status != UCS_OK) {
            /* our own next try waits its interval too: asking at once,
             * two endpoints of one worker whose lane could not connect
             * (its port down on rxe) asked each other 100 times a second */
            ucp_failover_rebuild_retry(fo, "the peer's try failed here",
                                       status);
        }
    }

    answer.hdr.type      = UCP_FAILOVER_MSG_REBUILD_ANSWER;
    answer.hdr.status    = (int8_t)status;
    answer.hdr.dst_ep_id = msg->src_ep_id;
    answer.hdr.src_ep_id = ucp_ep_local_id(ep);
    answer.rb.peer_seq   = msg->seq;
    answer.rb.attempt    = rb->attempt;
    answer.rb.uuid       = ep->worker->uuid;
    if (status != UCS_OK) {
        ucs_debug("ep %p: the peer's lane cannot be connected again here: %s",
                  ep, ucs_status_string(status));
        memset(&refusal, 0, sizeof(refusal));
        answer.hdr.token_length = sizeof(answer.rb);
        answer.hdr.seq          = (fo != NULL) ? fo->seq : 0;
        memcpy(&refusal, &answer, sizeof(answer.hdr) + sizeof(answer.rb));
        ucp_failover_msg_send_queued(ep, (fo != NULL) ? fo->lane :
                                                    UCP_NULL_LANE,
                                     &refusal.hdr);
        return;
    }

    status = ucp_failover_rebuild_send_or_keep(fo, &answer, rb->side);
    if (status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "answer not sent", status);
        return;
    }
    fo->rebuild.state      = UCP_FAILOVER_REBUILD_ANSWERED;
    fo->rebuild.failed     = 0;
    fo->rebuild.attempt    = rb->attempt;
    fo->rebuild.peer_seq   = msg->seq;
    fo->rebuild.peer_ep_id = msg->src_ep_id;
    fo->rebuild.deadline   = ucs_get_time() +
                             ucs_time_from_sec(ucp_failover_timeout());
}

static void ucp_failover_probe_completed(uct_completion_t *self)
{
    ucp_failover_t *fo = ucs_container_of(self, ucp_failover_t,
                                          rebuild.probe_comp);

    if (fo->rebuild.state == UCP_FAILOVER_REBUILD_PROBING) {
        fo->rebuild.probe_done   = 1;
        fo->rebuild.probe_status = self->status;
    }
}

/* The probe's flush: done, under way, or to post again */
static void ucp_failover_probe_flush(ucp_failover_t *fo)
{
    ucs_status_t status;

    fo->rebuild.probe_comp.func   = ucp_failover_probe_completed;
    fo->rebuild.probe_comp.count  = 1;
    fo->rebuild.probe_comp.status = UCS_OK;
    status = uct_ep_flush(fo->rebuild.uct_ep, 0, &fo->rebuild.probe_comp);
    if (status == UCS_INPROGRESS) {
        fo->rebuild.flush_posted = 1;
    } else if (status != UCS_ERR_NO_RESOURCE) {
        fo->rebuild.flush_posted = 1;
        fo->rebuild.probe_done   = 1;
        fo->rebuild.probe_status = status;
    }
}

/* Our new endpoint is connected to the peer's: one message on it, and its
 * flush */
static void ucp_failover_rebuild_probe(ucp_failover_t *fo, uint32_t peer_seq,
                                       uint64_t peer_ep_id)
{
    ucp_failover_msg_buf_t probe;
    ucs_status_t status;

    memset(&probe, 0, sizeof(probe));
    probe.hdr.type      = UCP_FAILOVER_MSG_REBUILD_PROBE;
    probe.hdr.seq       = fo->seq;
    probe.hdr.dst_ep_id = peer_ep_id;
    probe.hdr.src_ep_id = ucp_ep_local_id(fo->ep);
    status              = ucp_failover_msg_post(fo->rebuild.uct_ep,
                                                &probe.hdr);
    if (status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "probe not sent", status);
        return;
    }

    fo->rebuild.state        = UCP_FAILOVER_REBUILD_PROBING;
    fo->rebuild.peer_seq     = peer_seq;
    fo->rebuild.peer_ep_id   = peer_ep_id;
    fo->rebuild.flush_posted = 0;
    fo->rebuild.probe_done   = 0;
    fo->rebuild.deadline     = ucs_get_time() +
                               ucs_time_from_sec(ucp_failover_timeout());
    ucp_failover_probe_flush(fo);
}

/* The peer answered our ask: connect, probe */
static void ucp_failover_rebuild_answered(ucp_ep_h ep,
                                          const ucp_failover_msg_t *msg)
{
    const ucp_failover_rebuild_msg_t *rb = (const void*)(msg + 1);
    ucp_failover_t *fo;
    ucs_status_t status;

    fo = ucp_failover_find(ep, rb->peer_seq);
    if ((fo == NULL) || (fo->state != UCP_FAILOVER_FORWARD) ||
        (fo->rebuild.state != UCP_FAILOVER_REBUILD_ASKED) ||
        (fo->rebuild.attempt != rb->attempt)) {
        return; /* late: that try ended */
    }

    if (msg->status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "the peer cannot",
                                   (ucs_status_t)msg->status);
        return;
    }

    status = ucp_failover_rebuild_connect(fo, rb);
    if (status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "connect", status);
        return;
    }
    ucp_failover_rebuild_probe(fo, msg->seq, msg->src_ep_id);
}

/* Requests of the failed lane that wait on the other lane's endpoint (the
 * proxy queued them there) come back to the hold, in order; the other
 * lane's own go back to it */
typedef struct {
    ucp_failover_t          *fo;
    ucs_queue_head_t        others;
} ucp_failover_split_t;

static void ucp_failover_split_cb(uct_pending_req_t *self, void *arg)
{
    ucp_failover_split_t *split = arg;
    ucp_request_t *req          = ucs_container_of(self, ucp_request_t,
                                                   send.uct);

    if (req->send.lane == split->fo->lane) {
        ucp_failover_hold_pending_add(&split->fo->hold_ep, self, 0);
    } else {
        ucs_queue_push(&split->others, (ucs_queue_elem_t*)&self->priv);
    }
}

/* The new connection is proven: hold the lane's traffic, mark the end of
 * what it sent on the other lane */
static void ucp_failover_restore_start(ucp_failover_t *fo)
{
    ucp_failover_split_t split;

    split.fo = fo;
    ucs_queue_head_init(&split.others);
    uct_ep_pending_purge(ucp_failover_sub_ep(fo), ucp_failover_split_cb,
                         &split);
    /* the proxy owns the hold again: the endpoint's end ends the failover
     * as in QUERY (ucp_failover_ep_cleanup) */
    ucp_proxy_ep_set_uct_ep(ucs_derived_of(fo->proxy, ucp_proxy_ep_t),
                            &fo->hold_ep, 1,
                            ucp_ep_get_rsc_index(fo->ep, fo->lane));
    fo->state               = UCP_FAILOVER_RESTORE;
    fo->held_count          = 0;
    fo->rebuild.mark_sent   = 0;
    fo->rebuild.marked      = 0;
    fo->rebuild.deadline    = ucs_get_time() +
                              ucs_time_from_sec(ucp_failover_timeout());
    ucp_wireup_replay_pending_requests(fo->ep, &split.others);
    ucs_diag("ep %p: lane %u (%s) is connected again (try %u): holding its "
             "traffic until %s lane %u", fo->ep, fo->lane,
             ucp_ep_get_tl_rsc(fo->ep, fo->lane)->dev_name, fo->rebuild.tries,
             fo->rebuild.carrier_lost ?
             "what it had sent is resent or executed, by the failover of" :
             "the peer took what it sent on", fo->sub_lane);
}

/* The restore cannot finish: the lane forwards to the other lane again.
 * Its new endpoint is kept (stale_ep): the peer, confirmed, may have put
 * its half on the lane already. */
static void ucp_failover_restore_revert(ucp_failover_t *fo, const char *why,
                                        ucs_status_t status)
{
    ucs_queue_head_t held;

    if (fo->rebuild.stale_ep != NULL) {
        uct_ep_destroy(fo->rebuild.stale_ep);
    }
    fo->rebuild.stale_ep = fo->rebuild.uct_ep;
    fo->rebuild.uct_ep   = NULL;

    ucp_proxy_ep_set_uct_ep(ucs_derived_of(fo->proxy, ucp_proxy_ep_t),
                            ucp_failover_target_ep(fo), 0,
                            ucp_ep_get_rsc_index(fo->ep, fo->sub_lane));
    fo->state = UCP_FAILOVER_FORWARD;
    ucp_failover_held_extract(fo, &held);
    ucp_failover_rebuild_retry(fo, why, status);
    ucp_wireup_replay_pending_requests(fo->ep, &held);
}

static void ucp_failover_restore_report(ucp_failover_t *fo)
{
    ucp_ep_h ep = fo->ep;
    double ms   = ucs_time_to_msec(ucs_get_time() - fo->rebuild.t_forward);
    FILE *file;

    if (fo->report != NULL) {
        file = fopen(fo->report, "a");
        if (file == NULL) {
            ucs_warn("UCP lane failover: cannot open %s: %m", fo->report);
        } else {
            fprintf(file, "{\"event\":\"lane_restored\",\"pid\":%d,"
                    "\"ep\":\"%p\",\"lane\":%u,\"on\":\"%s\","
                    "\"from_lane\":%u,\"tries\":%u,\"held\":%u,"
                    "\"moved_to_restored_ms\":%.1f}\n", getpid(), ep,
                    fo->lane, ucp_ep_get_tl_rsc(ep, fo->lane)->dev_name,
                    fo->sub_lane, fo->rebuild.tries, fo->held_count, ms);
            fclose(file);
        }
    }
    ucs_info("ep %p: lane %u (%s) connected again and carries its traffic "
             "again, %.1f ms after it moved to lane %u (%u tries)", ep,
             fo->lane, ucp_ep_get_tl_rsc(ep, fo->lane)->dev_name, ms,
             fo->sub_lane, fo->rebuild.tries);
}

/* The peer took everything the lane sent on the other lane: the lane gets
 * its new endpoint, the held requests go to it, the failover ends */
static void ucp_failover_restore_finish(ucp_failover_t *fo)
{
    ucp_ep_h ep = fo->ep;
    ucs_queue_head_t held;

    ucp_failover_unlist(fo);
    ucp_failover_held_extract(fo, &held);
    ep->uct_eps[fo->lane] = fo->rebuild.uct_ep;
    fo->rebuild.uct_ep    = NULL;
    ucp_proxy_ep_set_uct_ep(ucs_derived_of(fo->proxy, ucp_proxy_ep_t), NULL,
                            0, UCP_NULL_RESOURCE);
    uct_ep_destroy(fo->proxy);
    ucp_failover_restore_report(fo);
    uct_ep_destroy(fo->failed_ep);
    /* what waits on our side channel still goes (the lane is live now) */
    ucp_failover_side_close(fo, 1);
    ucp_failover_free(fo);
    ucp_wireup_replay_pending_requests(ep, &held);
}

/* The failed endpoint's local ports, as its transport says now: 1 one of
 * them up, 0 all down, -1 the transport does not say (uct_ep_query's
 * path_up, patch 0007) */
static int ucp_failover_rebuild_path_up(ucp_failover_t *fo)
{
    uct_ep_attr_t attr;

    attr.field_mask = UCT_EP_ATTR_FIELD_PATH_UP;
    if (uct_ep_query(fo->failed_ep, &attr) != UCS_OK) {
        return -1;
    }
    return !!attr.path_up;
}

/* FORWARD: the next step of the rebuild */
/* Whether a port of the failed lane came back since the last look (the
 * transport's uct_ep_query says so, patch 0007): the next try is then now,
 * at the first interval. Waiting out the timer, doubled by the tries that
 * failed while the port was down, was the time in which the other lane's
 * ports died too under flapping links, and the endpoint ended with a lane
 * whose ports were up (issue 48). A transport that does not say keeps the
 * timer alone. */
static int ucp_failover_rebuild_port_back(ucp_failover_t *fo)
{
    int was_up;

    if (fo->rebuild.path_up < 0) {
        return 0;
    }
    was_up              = fo->rebuild.path_up;
    fo->rebuild.path_up = ucp_failover_rebuild_path_up(fo);
    return !was_up && (fo->rebuild.path_up > 0);
}

/* The new connection is proven: tell the peer (the try's answerer), which
 * restores its half when it has this. On that connection: the probe came
 * through it, and it does not die with the carrier. (Over a live lane, or
 * the side channel when the carrier was lost, the confirmation was lost
 * with the carrier, or never left the side channel's aux endpoint, whose
 * connection request had gone while the path was silent: the answerer
 * never restored and ended the endpoint: the carrier scenario, 4 runs of
 * 110.) */
static ucs_status_t ucp_failover_rebuild_confirm(ucp_failover_t *fo)
{
    ucp_failover_rebuild_buf_t confirm;

    memset(&confirm, 0, sizeof(confirm));
    confirm.hdr.type         = UCP_FAILOVER_MSG_REBUILD_CONFIRM;
    confirm.hdr.token_length = sizeof(confirm.rb);
    confirm.hdr.seq          = fo->seq;
    confirm.hdr.dst_ep_id    = fo->rebuild.peer_ep_id;
    confirm.hdr.src_ep_id    = ucp_ep_local_id(fo->ep);
    confirm.rb.uuid          = fo->ep->worker->uuid;
    confirm.rb.peer_seq      = fo->rebuild.peer_seq;
    confirm.rb.attempt       = fo->rebuild.attempt;
    return ucp_failover_msg_post(fo->rebuild.uct_ep, &confirm.hdr);
}

void ucp_failover_rebuild_progress(ucp_failover_t *fo)
{
    ucs_time_t now = ucs_get_time();
    ucs_status_t status;

    switch (fo->rebuild.state) {
    case UCP_FAILOVER_REBUILD_IDLE:
        if (ucp_failover_rebuild_port_back(fo) && (now < fo->rebuild.next)) {
            ucs_debug("ep %p: a port of lane %u came back: trying to connect "
                      "it again now, not in %.0f ms", fo->ep, fo->lane,
                      ucs_time_to_msec(fo->rebuild.next - now));
            fo->rebuild.next     = now;
            fo->rebuild.interval = fo->rebuild.base;
        }
        if (now >= fo->rebuild.next) {
            ucp_failover_rebuild_ask(fo);
        }
        break;
    case UCP_FAILOVER_REBUILD_ASKED:
    case UCP_FAILOVER_REBUILD_ANSWERED:
        if (fo->rebuild.failed) {
            ucp_failover_rebuild_retry(fo, "the new endpoint failed",
                                       UCS_ERR_ENDPOINT_TIMEOUT);
        } else if (now > fo->rebuild.deadline) {
            ucp_failover_rebuild_retry(fo, "no word from the peer",
                                       UCS_ERR_TIMED_OUT);
        } else if (fo->rebuild.unsent != NULL) {
            ucp_failover_rebuild_send_unsent(fo);
        }
        break;
    case UCP_FAILOVER_REBUILD_PROBING:
        /* first the endpoint's failure: its error handler runs before the
         * flush completes, and a flush completes with UCS_OK even when the
         * endpoint failed (as in rc_verbs) */
        if (fo->rebuild.failed) {
            ucp_failover_rebuild_retry(fo, "the probe did not come through",
                                       UCS_ERR_ENDPOINT_TIMEOUT);
            break;
        }
        if (!fo->rebuild.flush_posted) {
            ucp_failover_probe_flush(fo);
        }
        if (fo->rebuild.probe_done) {
            if (fo->rebuild.probe_status == UCS_OK) {
                fo->rebuild.state = UCP_FAILOVER_REBUILD_PROVEN;
            } else {
                ucp_failover_rebuild_retry(fo, "the probe failed",
                                           fo->rebuild.probe_status);
            }
        } else if (now > fo->rebuild.deadline) {
            ucp_failover_rebuild_retry(fo, "the probe did not come through",
                                       UCS_ERR_TIMED_OUT);
        }
        break;
    case UCP_FAILOVER_REBUILD_PROVEN:
        if (fo->rebuild.self) {
            ucp_failover_restore_start(fo);
            break;
        }
        status = ucp_failover_rebuild_confirm(fo);
        if (status == UCS_OK) {
            ucp_failover_restore_start(fo);
        } else if ((status != UCS_ERR_NO_RESOURCE) ||
                   (now > fo->rebuild.deadline)) {
            ucp_failover_rebuild_retry(fo, "confirmation not sent", status);
        }
        break;
    default:
        break;
    }
}

/* RESTORE with the carrier dead: no marker can go behind our traffic
 * there. Instead the carrier's failover purges it, after the peer fenced
 * it, and replays what never executed, ours included, on our new
 * connection: when it forwards, nothing we sent on it is left to overtake,
 * and our held requests follow. Returns 1 if fo is gone. */
static int ucp_failover_restore_carrier_lost(ucp_failover_t *fo)
{
    ucp_failover_t *carrier = ucp_failover_of_lane(fo->ep, fo->sub_lane);

    if ((carrier == NULL) || (carrier->state == UCP_FAILOVER_FORWARD) ||
        (carrier->state == UCP_FAILOVER_RESTORE)) {
        ucp_failover_restore_finish(fo);
        return 1;
    }
    /* (a failure of the new connection fails the carrier's query on it,
     * and its failover ends the endpoint) */
    return 0;
}

/* RESTORE: the marker, the peer's answer. Returns 1 if fo is gone. */
int ucp_failover_restore_progress(ucp_failover_t *fo)
{
    ucp_failover_msg_buf_t mark;
    ucs_status_t status;

    if (fo->rebuild.marked) {
        ucp_failover_restore_finish(fo);
        return 1;
    }
    if (fo->rebuild.carrier_lost) {
        return ucp_failover_restore_carrier_lost(fo);
    }
    if (fo->rebuild.failed) {
        ucp_failover_restore_revert(fo, "the new endpoint failed",
                                    UCS_ERR_ENDPOINT_TIMEOUT);
        return 0;
    }
    if (!fo->rebuild.mark_sent) {
        memset(&mark, 0, sizeof(mark));
        mark.hdr.type      = UCP_FAILOVER_MSG_RESTORE_MARK;
        mark.hdr.seq       = fo->seq;
        mark.hdr.dst_ep_id = ucp_ep_remote_id(fo->ep);
        mark.hdr.src_ep_id = ucp_ep_local_id(fo->ep);
        /* on the endpoint that carried the lane's traffic, behind it */
        status = ucp_failover_msg_post(ucp_failover_sub_ep(fo), &mark.hdr);
        if (status == UCS_OK) {
            fo->rebuild.mark_sent = 1;
        } else if (status != UCS_ERR_NO_RESOURCE) {
            ucp_failover_restore_revert(fo, "marker not sent", status);
            return 0;
        }
    }
    if (ucs_get_time() > fo->rebuild.deadline) {
        ucp_failover_restore_revert(fo, "the peer did not take the marker",
                                    UCS_ERR_TIMED_OUT);
    }
    return 0;
}

/* The lane carrying our traffic failed with no other lane left: can this
 * lane be connected again now, to carry that lane's traffic and its own?
 * With the peer's aux address (the side channel) and a port of ours up.
 * (On another memory domain the carrier's failover translates what it
 * replays back: our operations it carried hold its memory domain's keys,
 * taken from the same remote keys.) */
int ucp_failover_rebuild_can_carry(ucp_failover_t *fo)
{
    if ((fo->rebuild.state == UCP_FAILOVER_REBUILD_OFF) ||
        !ucp_failover_side_known(fo)) {
        return 0;
    }
    if (fo->state == UCP_FAILOVER_RESTORE) {
        return 1; /* its new connection is proven */
    }
    return ucp_failover_rebuild_path_up(fo) > 0;
}

/* The lane carrying our traffic failed, and its failover waits for us
 * (AWAIT): our traffic waits with its own, in its hold; the rebuild's
 * messages go over the side channel from now on, and a try under way
 * whose ask went over the dead lane starts again, now */
void ucp_failover_rebuild_carrier_lost(ucp_failover_t *fo)
{
    ucp_ep_h ep = fo->ep;
    ucs_status_t status;

    fo->rebuild.carrier_lost = 1;
    status                   = ucp_failover_side_open(fo);
    if (status != UCS_OK) {
        ucs_diag("ep %p: no side channel for lane %u: %s", ep, fo->lane,
                 ucs_status_string(status));
    }
    if (fo->state != UCP_FAILOVER_FORWARD) {
        return;
    }

    ucp_proxy_ep_set_uct_ep(ucs_derived_of(fo->proxy, ucp_proxy_ep_t),
                            ep->uct_eps[fo->sub_lane], 0,
                            ucp_ep_get_rsc_index(ep, fo->sub_lane));
    if (fo->rebuild.state == UCP_FAILOVER_REBUILD_ASKED) {
        ucp_failover_rebuild_drop(fo);
    }
    if (fo->rebuild.state == UCP_FAILOVER_REBUILD_IDLE) {
        fo->rebuild.next     = ucs_get_time();
        fo->rebuild.interval = fo->rebuild.base;
    }
    ucs_diag("ep %p: lane %u's carrier, lane %u, failed: connecting lane %u "
             "again over the side channel (rebuild %s)", ep, fo->lane,
             fo->sub_lane, fo->lane,
             ucp_failover_rebuild_state_names[fo->rebuild.state]);
}

/* The rebuild messages other than the ask */
void ucp_failover_rebuild_msg(ucp_worker_h worker,
                              const ucp_failover_msg_t *msg)
{
    const ucp_failover_rebuild_msg_t *rb = (const void*)(msg + 1);
    ucp_failover_msg_buf_t marked;
    ucp_failover_t *fo;
    ucp_ep_h ep;

    UCP_WORKER_GET_VALID_EP_BY_ID(&ep, worker, msg->dst_ep_id, return,
                                  "failover rebuild");
    switch (msg->type) {
    case UCP_FAILOVER_MSG_REBUILD_ASK:
        if (msg->token_length < sizeof(*rb) + rb->dev_addr_length +
                                rb->ep_addr_length) {
            break;
        }
        ucp_failover_rebuild_asked(ep, msg);
        break;
    case UCP_FAILOVER_MSG_REBUILD_ANSWER:
        if ((msg->token_length < sizeof(*rb)) ||
            ((msg->status == UCS_OK) &&
             (msg->token_length < sizeof(*rb) + rb->dev_addr_length +
                                  rb->ep_addr_length))) {
            break;
        }
        ucp_failover_rebuild_answered(ep, msg);
        break;
    case UCP_FAILOVER_MSG_REBUILD_CONFIRM:
        if (msg->token_length < sizeof(*rb)) {
            break;
        }
        /* the try is the asker's failover and its attempt (attempts
         * alone repeat across failovers of one lane) */
        fo = ucp_failover_find(ep, rb->peer_seq);
        if ((fo != NULL) && (fo->state == UCP_FAILOVER_FORWARD) &&
            (fo->rebuild.state == UCP_FAILOVER_REBUILD_ANSWERED) &&
            (fo->rebuild.peer_seq == msg->seq) &&
            (fo->rebuild.attempt == rb->attempt)) {
            ucp_failover_restore_start(fo);
        }
        break;
    case UCP_FAILOVER_MSG_RESTORE_MARK:
        /* everything the peer's lane sent before it on this lane is
         * processed: say so */
        memset(&marked, 0, sizeof(marked));
        marked.hdr.type      = UCP_FAILOVER_MSG_RESTORE_MARKED;
        marked.hdr.seq       = msg->seq;
        marked.hdr.dst_ep_id = msg->src_ep_id;
        marked.hdr.src_ep_id = ucp_ep_local_id(ep);
        ucp_failover_msg_send_queued(ep, UCP_NULL_LANE, &marked.hdr);
        break;
    case UCP_FAILOVER_MSG_RESTORE_MARKED:
        fo = ucp_failover_find(ep, msg->seq);
        if ((fo != NULL) && (fo->state == UCP_FAILOVER_RESTORE)) {
            fo->rebuild.marked = 1; /* the progress finishes */
        }
        break;
    default: /* REBUILD_PROBE: it came, which is all it is for */
        break;
    }
}
