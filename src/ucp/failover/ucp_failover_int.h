/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCP_FAILOVER_INT_H_
#define UCP_FAILOVER_INT_H_

#include "ucp_failover.h"

#include <ucp/core/ucp_types.h>
#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue_types.h>
#include <ucs/time/time_def.h>


/*
 * Internal to UCP's lane failover (DESIGN.md section 7); UCP calls only
 * ucp_failover.h. The failover's state, its wire messages, and the functions
 * one of its files calls in another, each under the banner of the file that
 * defines it. One job per file:
 *
 *   ucp_failover.c          start a failover, step it, end it; the list of
 *                           them
 *   ucp_failover_config.c   UCX_UCP_FAILOVER_*: the table, reading, ranges
 *   ucp_failover_hold.c     the hold endpoint: operations wait, requests
 *                           queue, in order
 *   ucp_failover_xlate.c    another memory domain: the remote key registry,
 *                           buffers registered there, the translating
 *                           endpoint
 *   ucp_failover_msg.c      the messages: packing, a lane to send on, the
 *                           outbox, the active message handler
 *   ucp_failover_replay.c   query and answer, purge, replay, forward, report
 *   ucp_failover_rebuild.c  connecting the failed lane again and giving it
 *                           its traffic back
 *   ucp_failover_side.c     the side channel: the messages over the aux
 *                           transport when no lane is left to carry them
 */


/* An aux interface's address: device and interface address lengths (a
 * byte each), then both */
#define UCP_FAILOVER_SIDE_ADDR_MAX 64

/* The settings, UCX_UCP_FAILOVER_* (ucp_failover_config.c) */
typedef struct {
    int    enable;            /* 0 also when a value is bad */
    int    spare_lane;
    double timeout;           /* seconds, as set */
    double rebuild_interval;  /* seconds; 0: never */
} ucp_failover_config_t;


/* State */

typedef enum {
    UCP_FAILOVER_QUERY,      /* waiting for the peer's RX token */
    UCP_FAILOVER_REPLAY,     /* posting what the transport handed back */
    UCP_FAILOVER_FORWARD,    /* the lane goes to the other lane's endpoint;
                                its own connection is tried again
                                (ucp_failover_rebuild.c) */
    UCP_FAILOVER_RESTORE,    /* a new connection of the lane is proven: its
                                traffic is held until the peer has taken
                                everything it sent on the other lane */
    UCP_FAILOVER_AWAIT       /* no lane to move to, but the lane this one
                                carried the traffic of is being connected
                                again: hold, until its new connection is
                                proven (then QUERY, over it) */
} ucp_failover_state_t;

/* Connecting the failed lane again, while FORWARD (ucp_failover_rebuild.c) */
typedef enum {
    UCP_FAILOVER_REBUILD_OFF,      /* UCX_UCP_FAILOVER_REBUILD_INTERVAL=0 */
    UCP_FAILOVER_REBUILD_IDLE,     /* the next try at rebuild.next */
    UCP_FAILOVER_REBUILD_ASKED,    /* our new endpoint's address is sent */
    UCP_FAILOVER_REBUILD_ANSWERED, /* the peer asked: ours is connected to
                                      its, waiting for its confirmation */
    UCP_FAILOVER_REBUILD_PROBING,  /* connected: a probe is in flight */
    UCP_FAILOVER_REBUILD_PROVEN    /* the probe came through: to confirm */
} ucp_failover_rebuild_state_t;

/* An operation handed back, with copies of everything it points to */
typedef struct {
    ucs_queue_elem_t        queue;
    uct_ep_op_info_t        info;
    char                    data[];   /* iov entries, payload, AM header */
} ucp_failover_op_t;

typedef struct ucp_failover {
    ucs_list_link_t         list;         /* in ucp_failover_list */
    ucp_ep_h                ep;
    ucp_lane_index_t        lane;         /* the failed one */
    ucp_lane_index_t        sub_lane;     /* where its traffic goes */
    uint8_t                 state;        /* ucp_failover_state_t */
    uint8_t                 query_sent;
    uint8_t                 listed;       /* in ucp_failover_list */
    uint8_t                 other_md;     /* the other lane is on another
                                             memory domain */
    uint8_t                 awaited;      /* started in AWAIT: moved onto a
                                             lane connected again */
    uint32_t                seq;
    ucs_status_t            status;       /* of the failure */
    struct {
        uint8_t             state;        /* ucp_failover_rebuild_state_t */
        uint8_t             failed;       /* the new endpoint failed */
        uint8_t             flush_posted; /* the probe's flush */
        uint8_t             probe_done;   /* its completion came */
        uint8_t             mark_sent;    /* RESTORE: the marker is out */
        uint8_t             marked;       /* RESTORE: the peer took it */
        uint8_t             self;         /* the try's ask came back to us:
                                             an endpoint connected to its
                                             own worker */
        uint8_t             carrier_lost; /* the lane carrying our traffic
                                             failed too, and its failover
                                             awaits us: the rebuild's
                                             messages go over the side
                                             channel, and the restore ends
                                             when that failover has
                                             replayed (no marker) */
        int8_t              path_up;      /* the failed endpoint's local
                                             ports, at the last look: 1 up,
                                             0 down, -1 the transport does
                                             not say */
        ucs_status_t        probe_status;
        uct_ep_h            uct_ep;       /* the new endpoint, on the failed
                                             lane's resource */
        uct_ep_h            stale_ep;     /* one that failed while restoring:
                                             the peer may have restored onto
                                             its half, and its failover of
                                             that must find the connection
                                             here (until the failover ends) */
        uct_completion_t    probe_comp;
        struct ucp_failover_msg_max *unsent; /* ASKED, ANSWERED: our ask or
                                             answer, which found no send
                                             resources: posted again from
                                             the progress, dropped with the
                                             try */
        uint32_t            attempt;      /* the asker's try */
        uint32_t            peer_seq;     /* the peer's failover of the lane */
        uint64_t            peer_ep_id;
        ucs_time_t          base;         /* REBUILD_INTERVAL */
        ucs_time_t          interval;     /* now, after failed tries */
        ucs_time_t          next;         /* IDLE: the next try */
        ucs_time_t          deadline;     /* of the step under way */
        ucs_time_t          t_forward;
        unsigned            tries;
    } rebuild;
    struct {
        uint8_t             peer_addr[UCP_FAILOVER_SIDE_ADDR_MAX];
        uint8_t             peer_addr_length; /* 0: not known; else the
                                                 peer's aux interface on
                                                 the lane's device (its
                                                 reply said) */
        uint8_t             failed;       /* the aux endpoint failed */
        unsigned            pending;      /* messages waiting on it */
        uct_ep_h            uct_ep;       /* open: to the peer's */
        ucp_worker_iface_t  *wiface;      /* open: ours, progressed */
    } side;                               /* ucp_failover_side.c */
    uct_ep_h                sub_new_ep;   /* AWAIT to REPLAY: sub_lane's new
                                             connection, proven, not yet on
                                             the lane (its failover holds
                                             it until we replayed) */
    uct_ep_h                failed_ep;    /* the failed transport endpoint */
    uct_ep_h                proxy;        /* at ep->uct_eps[lane] */
    uct_ep_t                hold_ep;      /* the proxy's endpoint while
                                             holding */
    uct_iface_t             hold_iface;
    uct_ep_t                xlate_ep;     /* the proxy's endpoint after the
                                             replay, to another memory
                                             domain: translates, forwards */
    uct_iface_t             xlate_iface;
    ucp_md_index_t          md_from;      /* local memory domains */
    ucp_md_index_t          md_to;
    ucp_md_index_t          dst_md_from;  /* the peer's memory domains */
    ucp_md_index_t          dst_md_to;
    struct {
        ucp_rkey_h          rkey;         /* where the last key came from */
        uct_rkey_t          from;
        uct_rkey_t          to;
    } last_rkey;
    unsigned                keys_translated;   /* operations' remote keys */
    unsigned                buffers_registered; /* on the other memory
                                                   domain */
    ucs_queue_head_t        held;         /* pending requests, in order */
    ucs_queue_head_t        replay;       /* handed back, in order */
    uint8_t                 tx_token[UCT_EP_TOKEN_MAX_LENGTH];
    size_t                  tx_token_length;
    ucs_time_t              t_failed;
    ucs_time_t              deadline;
    unsigned                handed_back;
    unsigned                dropped;      /* handed back, no memory to
                                             keep them and no completion
                                             to tell */
    unsigned                handed_back_by_op[UCT_EP_OP_LAST];
    unsigned                replayed;
    unsigned                held_count;
    uct_worker_cb_id_t      prog_id;
    char                    *report;      /* UCX_UCP_FAILOVER_REPORT */
} ucp_failover_t;


/* Wire: the query and its answer, then the token */
enum {
    UCP_FAILOVER_MSG_QUERY           = 1,
    UCP_FAILOVER_MSG_REPLY           = 2,
    UCP_FAILOVER_MSG_REBUILD_ASK     = 3, /* a new endpoint's address */
    UCP_FAILOVER_MSG_REBUILD_ANSWER  = 4, /* the peer's, or why not */
    UCP_FAILOVER_MSG_REBUILD_PROBE   = 5, /* on the new connection */
    UCP_FAILOVER_MSG_REBUILD_CONFIRM = 6, /* it came through: restore */
    UCP_FAILOVER_MSG_RESTORE_MARK    = 7, /* on the other lane, behind the
                                             lane's traffic there */
    UCP_FAILOVER_MSG_RESTORE_MARKED  = 8  /* the peer took all before it */
};

typedef struct {
    uint8_t                 type;
    int8_t                  status;       /* REPLY */
    uint8_t                 token_length; /* bytes after the header */
    uint8_t                 side_length;  /* QUERY, REPLY: the last of them
                                             are the sender's aux interface
                                             address on the lane's device */
    uint32_t                seq;
    uint64_t                dst_ep_id;    /* the receiver's endpoint */
    uint64_t                src_ep_id;    /* the sender's, to answer to */
} UCS_S_PACKED ucp_failover_msg_t;

typedef struct {
    ucp_failover_msg_t      hdr;
    uint8_t                 token[UCT_EP_TOKEN_MAX_LENGTH +
                                  UCP_FAILOVER_SIDE_ADDR_MAX];
} UCS_S_PACKED ucp_failover_msg_buf_t;

/* The longest message */
typedef struct ucp_failover_msg_max {
    ucp_failover_msg_t      hdr;
    uint8_t                 data[UINT8_MAX];
} UCS_S_PACKED ucp_failover_msg_max_t;

/* After the header of the rebuild messages (token_length: its length, with
 * the addresses); hdr.seq is the sender's failover of the lane */
typedef struct {
    uint64_t                uuid;         /* the sender's worker: of two asks
                                             that cross, the smaller goes on */
    uint32_t                peer_seq;     /* the receiver's failover (not
                                             known yet in an ask) */
    uint32_t                attempt;      /* the asker's try */
    ucp_md_index_t          md;           /* the lane's memory domain, the
                                             sender's */
    ucp_md_index_t          dst_md;       /* and the receiver's */
    uint8_t                 dev_addr_length;
    uint8_t                 ep_addr_length;
    uint8_t                 side;         /* sent over the side channel: the
                                             answer goes there too */
    /* device address, endpoint address (ASK, ANSWER) */
} UCS_S_PACKED ucp_failover_rebuild_msg_t;

typedef struct {
    ucp_failover_msg_t         hdr;
    ucp_failover_rebuild_msg_t rb;
    uint8_t                    addr[UINT8_MAX -
                                    sizeof(ucp_failover_rebuild_msg_t)];
} UCS_S_PACKED ucp_failover_rebuild_buf_t;

/* a refusal is sent as a QUERY's answer is */
_Static_assert(sizeof(ucp_failover_rebuild_msg_t) <= UCT_EP_TOKEN_MAX_LENGTH,
               "a refusal does not fit an answer's buffer");


/* ucp_failover.c: start, progress, end; the list of failovers */
int ucp_failover_lane_can_purge(ucp_ep_h ep, ucp_lane_index_t lane);
void ucp_failover_free(ucp_failover_t *fo);
void ucp_failover_unlist(ucp_failover_t *fo);
ucp_failover_t *ucp_failover_find(ucp_ep_h ep, uint32_t seq);
ucp_failover_t *
ucp_failover_find_lane(ucp_ep_h ep, const ucp_failover_rebuild_msg_t *rb);
ucp_failover_t *ucp_failover_of_lane(ucp_ep_h ep, ucp_lane_index_t lane);
uct_ep_h ucp_failover_restoring_ep(ucp_ep_h ep);
ucp_failover_t *ucp_failover_side_owner(ucp_ep_h ep);

/* ucp_failover_config.c: UCX_UCP_FAILOVER_*, parsed when they change */
void ucp_failover_config(ucp_failover_config_t *config);
ucs_status_t ucp_failover_config_report(char **path_p);
double ucp_failover_timeout(void);

/* ucp_failover_hold.c: the hold endpoint */
extern const uct_iface_ops_t ucp_failover_hold_ops;
ucs_status_t ucp_failover_hold_pending_add(uct_ep_h hold_ep,
                                           uct_pending_req_t *req,
                                           unsigned flags);
void ucp_failover_hold_enqueue_cb(uct_pending_req_t *req, void *arg);
uct_ep_h ucp_failover_final_ep(uct_ep_h uct_ep);
int ucp_failover_is_holding(uct_ep_h uct_ep);
void ucp_failover_held_extract(ucp_failover_t *fo, ucs_queue_head_t *held);

/* ucp_failover_xlate.c: another memory domain */
extern const uct_iface_ops_t ucp_failover_xlate_ops;
uct_ep_h ucp_failover_sub_ep(ucp_failover_t *fo);
uct_ep_h ucp_failover_target_ep(ucp_failover_t *fo);

/* ucp_failover_msg.c: the messages */
ucs_status_t ucp_failover_msg_post(uct_ep_h uct_ep,
                                   const ucp_failover_msg_t *msg);
ucp_lane_index_t ucp_failover_msg_lane(ucp_ep_h ep, ucp_lane_index_t avoid);
ucs_status_t ucp_failover_msg_send(ucp_ep_h ep, ucp_lane_index_t lane,
                                   const ucp_failover_msg_t *msg);
ucs_status_t ucp_failover_peer_send(ucp_ep_h ep, ucp_lane_index_t avoid,
                                    const ucp_failover_msg_t *msg);
void ucp_failover_msg_send_queued(ucp_ep_h ep, ucp_lane_index_t avoid,
                                  const ucp_failover_msg_t *msg);

/* ucp_failover_replay.c: query and answer, purge, replay, forward */
void ucp_failover_answer(ucp_worker_h worker, const ucp_failover_msg_t *query);
ucs_status_t ucp_failover_replay(ucp_failover_t *fo);
void ucp_failover_replay_purge(ucp_failover_t *fo, ucs_status_t status);
void ucp_failover_forward(ucp_failover_t *fo);
ucs_status_t ucp_failover_send_query(ucp_failover_t *fo);
void ucp_failover_replied(ucp_worker_h worker, const ucp_failover_msg_t *reply);

/* ucp_failover_rebuild.c: connecting the failed lane again */
extern const char *ucp_failover_rebuild_state_names[];
void ucp_failover_rebuild_drop(ucp_failover_t *fo);
void ucp_failover_rebuild_progress(ucp_failover_t *fo);
int ucp_failover_restore_progress(ucp_failover_t *fo);
void ucp_failover_rebuild_msg(ucp_worker_h worker,
                              const ucp_failover_msg_t *msg);
int ucp_failover_rebuild_can_carry(ucp_failover_t *fo);
void ucp_failover_rebuild_carrier_lost(ucp_failover_t *fo);

/* ucp_failover_side.c: the side channel */
size_t ucp_failover_side_addr_pack(ucp_ep_h ep, ucp_lane_index_t lane,
                                   uint8_t *buf, size_t max);
void ucp_failover_side_addr_keep(ucp_failover_t *fo, const uint8_t *addr,
                                 size_t length);
int ucp_failover_side_known(const ucp_failover_t *fo);
ucs_status_t ucp_failover_side_open(ucp_failover_t *fo);
void ucp_failover_side_close(ucp_failover_t *fo, int hand_over);
ucs_status_t ucp_failover_side_send(ucp_failover_t *fo,
                                    const ucp_failover_msg_t *msg);
int ucp_failover_side_ep_failed(ucp_failover_t *fo, uct_ep_h uct_ep);
void ucp_failover_side_progress(ucp_failover_t *fo);

#endif
