/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_DEF_H
#define UCT_RC_VARUNA_DEF_H

#include <uct/ib/base/ib_md.h>
#include <uct/ib/rc/base/rc_iface.h>
#include <ucs/sys/compiler_def.h>


/*
 * What every part of rc_varuna shares and nothing owns: the constants, the
 * enums (each state and flag set with its meaning), the forward type names
 * and the wire formats (what goes to the peer: the endpoint address, the
 * packed remote key, control messages). As UCX's rc_def.h and ud_def.h are
 * for their transports. The objects are in rc_varuna_md.h,
 * rc_varuna_iface.h and rc_varuna_ep.h, the failover's in
 * rc_varuna_failover.h; rc_varuna.h includes them all.
 */


/*
 * 1 when built against a UCX without our patches (contrib/module-build:
 * Debian's libucx0 as it is, the module loaded with LD_PRELOAD). Then there
 * is no uct_ep_outstanding_purge (patch 0007: UCP's lane failover is not in
 * that libucp either), no watcher of a device's async events (0005: port
 * events come from a device context of our own, rc_varuna_md.c), and no
 * exported completion status mapping (0006: ours, rc_varuna_iface.c).
 */
#ifndef UCT_RC_VARUNA_STOCK_UCX
#define UCT_RC_VARUNA_STOCK_UCX 0
#endif


/*
 * rc_varuna: RC with a standby QP connected in advance on another port
 * (usually another device) and a completion log written behind every
 * operation, so a link failure is recovered without executing anything
 * twice (DESIGN.md).
 *
 * "Sides": index 0 is the primary device of the memory domain and its port,
 * index 1 the standby device (or the standby port of the same device). An
 * endpoint's lane i always connects to the peer's lane i, so the half of a
 * remote key or log key to use on a lane is the lane's index. Failover
 * changes which lane is active, not what the indices mean.
 *
 * What of rc/base (uct_rc_iface_t, uct_rc_ep_t) is live and what rc_varuna
 * replaces; a field of rc/base that is not listed as live is not used:
 *
 *   live     UCX_RC_* and UCX_IB_* configuration; flow control (the FC
 *            window, grants, uct_rc_iface_fc_handler); the arbiter and
 *            pending queues (uct_rc_ep_pending_add, except while a
 *            failover holds new operations back); the send credit counters
 *            (txqp.available, tx.cq_available, CQ moderation); ep_list and
 *            the QP table of the primary lane (uct_rc_iface_add_qp); the
 *            primary side's CQs and SRQ (rx.srq counters included); iface
 *            flush, fence and progress dispatch; uct_rc_ep_check
 *            (keepalive), which posts through rc_varuna's ep_post_check.
 *   replaced the record of operations in flight: rc_varuna's replay ring
 *            (ep->tx.ring, one record per operation with its PSNs), not
 *            txqp->outstanding (uct_rc_txqp_purge_outstanding and the send
 *            op mpool are unused); the send descriptors
 *            (uct_rc_varuna_desc_t, one lkey per device); the RX poll, and
 *            the standby side's CQs, SRQ and QP table; what an error
 *            completion does (rc_varuna_iface.c polls it into the iface's
 *            handle_failure, as rc_verbs does, and that starts a failover
 *            instead of failing the endpoint); endpoint flush and fence
 *            (they wait for the failover); the memory domain (both
 *            devices' keys); port events (rc_varuna_md.c watches them
 *            through UCX's handler, UCX patch 0005).
 */

#define UCT_RC_VARUNA_TL_NAME         "rc_varuna"
#define UCT_RC_VARUNA_NUM_SIDES       2
#define UCT_RC_VARUNA_SIDE_PRIMARY    0
#define UCT_RC_VARUNA_SIDE_STANDBY    1

/* The AM id byte of rc_varuna's own control messages: every FC bit and the
 * highest AM id, a combination UCT never sends. */
#define UCT_RC_VARUNA_CTRL_AM_ID      0xff

/* wr_id of a work request: the operation's sequence number; the op's own
 * request has this bit set, its log write does not. A control request of
 * the failover (rc_varuna_failover.c) has its own bit and its kind in the
 * low byte. */
#define UCT_RC_VARUNA_WRID_OP         UCS_BIT(63)
#define UCT_RC_VARUNA_WRID_CTRL       UCS_BIT(62)
#define UCT_RC_VARUNA_WRID_SN_MASK    (UCS_BIT(62) - 1)

/* Send queue entries each QP keeps beyond the operations' share, for the
 * control requests: drain marker, control message, log READ, and one for
 * a stall probe (or a spare). */
#define UCT_RC_VARUNA_CTRL_WR_RESERVE 4
/* Send CQ entries of an interface kept from its operations for the
 * control requests of all its endpoints (at most a quarter of the CQ).
 * Operations of many busy endpoints keep the CQ's credits at zero; without
 * entries of their own, re-protection requests waited for a moment with a
 * free one that did not come while the traffic lasted (64 endpoints: no
 * re-protection for seconds, and the next failure ended every endpoint).
 * A control request completes within a round trip, so a few dozen serve
 * any number of endpoints, in turns. */
#define UCT_RC_VARUNA_CTRL_CQ_RESERVE 64
/* Grows an interface's endpoints may have asked for and not finished, at
 * once (rc_varuna_grow.c). After a failure that moves every endpoint onto
 * the standby at once, their grows would all start in one periodic check:
 * 1024 endpoints on softib stalled the traffic for 79 to 671 ms (median
 * 362 against 115 without the grow), the QP creations of both sides and
 * every endpoint's drain at the same time. In turns, each drain is short. */
#define UCT_RC_VARUNA_GROW_AT_ONCE    32
/* Replay records an endpoint starts with: most endpoints of a job have few
 * operations in flight, and a record is up to a kilobyte */
#define UCT_RC_VARUNA_RING_INIT       16
/* Watchdog intervals a lane with no standby behind it may stay quiet,
 * probed meanwhile (one probe at a time), before the endpoint fails */
#define UCT_RC_VARUNA_STALL_PROBES    8

/* The status an executed fetching atomic completes with when its response
 * was lost with the link: the value the responder returned exists nowhere
 * any more, and executing it again would break exactly-once (DESIGN.md
 * section 5.4). Distinct from every other status rc_varuna reports for an
 * operation on a live endpoint. */
#define UCT_RC_VARUNA_STATUS_RESULT_LOST UCS_ERR_IO_ERROR

/* The status of an undecided operation when the peer did not answer within
 * UCX_RC_VARUNA_PEER_TIMEOUT (policy "fail"): never resent. */
#define UCT_RC_VARUNA_STATUS_UNDECIDED   UCS_ERR_TIMED_OUT


typedef struct uct_rc_varuna_iface uct_rc_varuna_iface_t;
typedef struct uct_rc_varuna_ep    uct_rc_varuna_ep_t;


typedef enum {
    UCT_RC_VARUNA_RECOVERY_VARUNA,   /* resend only what was lost */
    UCT_RC_VARUNA_RECOVERY_BLANKET,  /* resend everything in flight */
    UCT_RC_VARUNA_RECOVERY_LAST
} uct_rc_varuna_recovery_t;


/* Operation types of the replay record */
typedef enum {
    UCT_RC_VARUNA_OP_PUT_SHORT,
    UCT_RC_VARUNA_OP_PUT_BCOPY,
    UCT_RC_VARUNA_OP_PUT_ZCOPY,
    UCT_RC_VARUNA_OP_GET_BCOPY,
    UCT_RC_VARUNA_OP_GET_ZCOPY,
    UCT_RC_VARUNA_OP_AM_SHORT,
    UCT_RC_VARUNA_OP_AM_BCOPY,
    UCT_RC_VARUNA_OP_AM_ZCOPY,
    UCT_RC_VARUNA_OP_ATOMIC_POST,
    UCT_RC_VARUNA_OP_ATOMIC_FETCH,
    UCT_RC_VARUNA_OP_FLUSH,          /* 0-byte WRITE, completes a flush */
    UCT_RC_VARUNA_OP_CHECK,          /* 0-byte WRITE, keepalive */
    UCT_RC_VARUNA_OP_FC_GRANT,       /* SEND of a pure FC grant */
    UCT_RC_VARUNA_OP_LAST
} uct_rc_varuna_op_type_t;


/* What a replay record's flags say (op->flags) */
enum {
    /* decided by a failover: completes, with op->status, as soon as
     * everything before it has */
    UCT_RC_VARUNA_OP_FLAG_SETTLED    = UCS_BIT(0),
    /* decided lost by a failover: posted again, logged */
    UCT_RC_VARUNA_OP_FLAG_RESEND     = UCS_BIT(1),
    /* a READ decided executed by a failover: read again, not logged */
    UCT_RC_VARUNA_OP_FLAG_REREAD     = UCS_BIT(2),
    /* its QP refused it (uct_rc_varuna_lane_post): nothing of it left */
    UCT_RC_VARUNA_OP_FLAG_NEVER_SENT = UCS_BIT(3)
};


typedef enum {
    UCT_RC_VARUNA_LANE_IDLE,         /* not created or not connected */
    UCT_RC_VARUNA_LANE_ACTIVE,       /* carries the traffic */
    UCT_RC_VARUNA_LANE_STANDBY,      /* connected, waiting */
    UCT_RC_VARUNA_LANE_FAILED,       /* in error, to be reset */
    UCT_RC_VARUNA_LANE_RECONNECTING  /* reset, waiting for the peer */
} uct_rc_varuna_lane_state_t;


/* What started a failover */
typedef enum {
    UCT_RC_VARUNA_CAUSE_NONE,
    UCT_RC_VARUNA_CAUSE_RETRY_EXC,   /* error completion: retries exhausted */
    UCT_RC_VARUNA_CAUSE_WC_ERROR,    /* another error completion */
    UCT_RC_VARUNA_CAUSE_PORT_ERR,    /* IBV_EVENT_PORT_ERR on our port */
    UCT_RC_VARUNA_CAUSE_PEER,        /* the peer told us */
    UCT_RC_VARUNA_CAUSE_WATCHDOG,    /* nothing completed for too long */
    UCT_RC_VARUNA_CAUSE_USER,        /* uct_rc_varuna_ep_fail_lane() */
    UCT_RC_VARUNA_CAUSE_REFUSED,     /* the QP refused a request */
    UCT_RC_VARUNA_CAUSE_FAILBACK,    /* planned: back to the primary lane,
                                        the standby again for
                                        FAILBACK_HOLD (or the peer's
                                        failback) */
    UCT_RC_VARUNA_CAUSE_LAST
} uct_rc_varuna_cause_t;


/*
 * The failover of an endpoint: one state variable (ep->fo.state), moved only
 * by uct_rc_varuna_ep_fo_enter() (rc_varuna_failover.c), which logs each
 * transition by name. From DRAIN to RESEND new operations wait. The events
 * that arrive on the way (the drain marker back, the peer's FAILOVER, the log
 * word read) are noted as UCT_RC_VARUNA_FO_* flags and run the machine.
 */
typedef enum {
    UCT_RC_VARUNA_FO_IDLE,           /* nothing to recover */
    UCT_RC_VARUNA_FO_DRAIN,          /* failed lane fenced: waiting for its
                                        last completion (the drain marker) */
    UCT_RC_VARUNA_FO_WAIT_QUIET,     /* until nothing sent on the failed lane
                                        can still execute: retries exhausted,
                                        the peer fenced, or PEER_TIMEOUT */
    UCT_RC_VARUNA_FO_READ_LOG,       /* the READ of the log word */
    UCT_RC_VARUNA_FO_DECIDE,         /* classify; the log may leave one
                                        operation to the peer's PSN */
    UCT_RC_VARUNA_FO_RESEND,         /* post the lost ones on the standby, as
                                        CQ entries allow */
    UCT_RC_VARUNA_FO_REPLAYING,      /* the standby is active; waiting for
                                        what was in flight to complete */
    UCT_RC_VARUNA_FO_DEAD,           /* both lanes lost: UCX's error path */
    UCT_RC_VARUNA_FO_LAST
} uct_rc_varuna_fo_state_t;

/*
 * The replacement of a short send queue (rc_varuna_grow.c): one state
 * variable (ep->gr.state), moved only by uct_rc_varuna_ep_grow_enter(). The
 * side that initiates re-protection asks (ASKED), both drain their own
 * requests off the old QP before they post on the new one (DRAIN), and the
 * asker waits for the peer's word that it did too (SWAPPED). A standby
 * lane the grow left long is made short again when it is re-protected
 * (RENEWED).
 */
typedef enum {
    UCT_RC_VARUNA_GROW_IDLE,         /* nothing under way */
    UCT_RC_VARUNA_GROW_ASKED,        /* our new QP made, GROW_REQ sent */
    UCT_RC_VARUNA_GROW_READY,        /* the peer's: our new QP connected,
                                        GROW_ACK sent, waiting for SWAP */
    UCT_RC_VARUNA_GROW_DRAIN,        /* new operations held back until our
                                        requests on the old QP completed */
    UCT_RC_VARUNA_GROW_SWAPPED,      /* the asker's: on the new QP, waiting
                                        for SWAP_ACK to destroy the old */
    UCT_RC_VARUNA_GROW_RENEWED,      /* a long standby made short again at
                                        its re-protection: the old QP kept
                                        until the peer has the new number */
    UCT_RC_VARUNA_GROW_LAST
} uct_rc_varuna_grow_state_t;

/* What a failover has learned so far */
enum {
    UCT_RC_VARUNA_FO_DRAINED     = UCS_BIT(0), /* failed lane's CQEs all in */
    UCT_RC_VARUNA_FO_FIRST_ERR   = UCS_BIT(1), /* its first error seen */
    UCT_RC_VARUNA_FO_PEER_FENCED = UCS_BIT(2), /* peer's FAILOVER received */
    UCT_RC_VARUNA_FO_PEER_PSN    = UCS_BIT(3), /* ... with its expected PSN */
    UCT_RC_VARUNA_FO_LOG_DONE    = UCS_BIT(4), /* the log word is known */
    UCT_RC_VARUNA_FO_LOG_FAILED  = UCS_BIT(5), /* the log READ could not be
                                                  posted: the PSN decides */
    UCT_RC_VARUNA_FO_LOG_NOTICE  = UCS_BIT(6)  /* the peer's FAILOVER told
                                                  the log word: no READ */
};

/* Control requests of a failover (low byte of their wr_id) */
typedef enum {
    UCT_RC_VARUNA_CTRL_WR_DRAIN,     /* marker behind the failed lane's WRs */
    UCT_RC_VARUNA_CTRL_WR_MSG,       /* a control message to the peer */
    UCT_RC_VARUNA_CTRL_WR_LOG_READ,  /* READ of our log word at the peer */
    UCT_RC_VARUNA_CTRL_WR_PROBE,     /* an empty WRITE behind a stall */
    UCT_RC_VARUNA_CTRL_WR_STANDBY_PROBE, /* an empty WRITE on the standby
                                            before the watchdog fails over */
    UCT_RC_VARUNA_CTRL_WR_GROW_TAIL, /* an empty WRITE behind operations
                                        that went unsignaled, when a grow
                                        holds new ones back */
    UCT_RC_VARUNA_CTRL_WR_LAST
} uct_rc_varuna_ctrl_wr_t;

/* Control messages: SENDs without immediate, AM id UCT_RC_VARUNA_CTRL_AM_ID */
typedef enum {
    UCT_RC_VARUNA_CTRL_FAILOVER = 1, /* "I fenced lane X; my rq_psn there" */
    UCT_RC_VARUNA_CTRL_REPROTECT_REQ,/* "reconnect lane X; my new sq_psn" */
    UCT_RC_VARUNA_CTRL_REPROTECT_ACK,/* "done; my new sq_psn" */
    UCT_RC_VARUNA_CTRL_REPROTECT_NACK,
    UCT_RC_VARUNA_CTRL_REPROTECT_DONE,/* "the new lane carried a READ" */
    UCT_RC_VARUNA_CTRL_REPROTECT_ASK, /* "my side of lane X is not
                                         connected: re-protect it" (from the
                                         side that is not the initiator) */
    UCT_RC_VARUNA_CTRL_GROW_REQ,     /* "connect a full-length QP of lane X
                                        to my new one (qpn, psn)" */
    UCT_RC_VARUNA_CTRL_GROW_ACK,     /* "connected; mine is qpn, psn" */
    UCT_RC_VARUNA_CTRL_GROW_NACK,    /* "not now" */
    UCT_RC_VARUNA_CTRL_GROW_SWAP,    /* on the new QP: "my requests go here
                                        now, none is left on the old one" */
    UCT_RC_VARUNA_CTRL_GROW_SWAP_ACK /* on the new QP: "mine too" */
} uct_rc_varuna_ctrl_type_t;

enum {
    UCT_RC_VARUNA_CTRL_FLAG_PORT_ADDR   = UCS_BIT(0), /* lid, gid are valid */
    UCT_RC_VARUNA_CTRL_FLAG_GLOBAL      = UCS_BIT(1), /* route by the gid */
    UCT_RC_VARUNA_CTRL_FLAG_PSN_UNKNOWN = UCS_BIT(2), /* FAILOVER: psn is not
                                                         the expected PSN
                                                         (it could not be
                                                         read) */
    UCT_RC_VARUNA_CTRL_FLAG_LOG         = UCS_BIT(3), /* FAILOVER: log_sn is
                                                         the log word */
    UCT_RC_VARUNA_CTRL_FLAG_FAILBACK    = UCS_BIT(4)  /* FAILOVER: a planned
                                                         failback, no
                                                         failure */
};


/* Who completes the operations a dead endpoint had in flight */
typedef enum {
    UCT_RC_VARUNA_OWNER_TRANSPORT,    /* we do, with the failure's status
                                         (as rc_verbs) */
    UCT_RC_VARUNA_OWNER_IN_HANDLER,   /* the error handler is deciding */
    UCT_RC_VARUNA_OWNER_CALLER        /* the handler took them over: kept
                                         for uct_ep_outstanding_purge */
} uct_rc_varuna_owner_t;


/* ------------------------------------------------------------------------
 * Wire formats
 * ------------------------------------------------------------------------ */

/* The TX token of a dead endpoint (rc_varuna_purge.c): which connection.
 * Lane i of an endpoint is lane i of its peer's. QP numbers alone do not
 * name it: each device numbers its QPs on its own, so an endpoint of
 * another interface of the peer (UCP's other lane) can have the same four
 * (Linux rxe numbers every device's from 0x11 up, and endpoints created in
 * the same order get the same ones). The peer's port of each lane, as we
 * address it, makes the name whole. */
typedef struct {
    uint32_t                magic;
    uint32_t                peer_qpn[UCT_RC_VARUNA_NUM_SIDES]; /* 0: none */
    uint32_t                qpn[UCT_RC_VARUNA_NUM_SIDES];      /* ours */
    uint16_t                peer_lid[UCT_RC_VARUNA_NUM_SIDES];
    uint8_t                 peer_global;  /* bit per lane: by its GID */
    uint8_t                 peer_gid[UCT_RC_VARUNA_NUM_SIDES][16];
} UCS_S_PACKED uct_rc_varuna_tx_token_t;

/* Packed remote key: the primary and standby device keys. Unpacked, they
 * share one uct_rkey_t: primary in the low half, standby in the high. */
typedef struct uct_rc_varuna_packed_rkey {
    uint32_t                rkey[UCT_RC_VARUNA_NUM_SIDES];
} UCS_S_PACKED uct_rc_varuna_packed_rkey_t;


static UCS_F_ALWAYS_INLINE uint32_t
uct_rc_varuna_rkey(uct_rkey_t rkey, unsigned side)
{
    return (uint32_t)(rkey >> (32 * side));
}


/* Wire: what the peer needs to connect to an endpoint */
enum {
    UCT_RC_VARUNA_EP_ADDR_FLAG_STANDBY = UCS_BIT(0), /* has a standby lane */
    UCT_RC_VARUNA_EP_ADDR_FLAG_GID     = UCS_BIT(1), /* standby GID follows */
    UCT_RC_VARUNA_EP_ADDR_FLAG_STANDBY_DOWN = UCS_BIT(2) /* its port is down:
                                                    connect it later, by
                                                    re-protection */
};

typedef struct uct_rc_varuna_ep_addr {
    uint8_t                 flags;
    uct_ib_uint24_t         qp_num[UCT_RC_VARUNA_NUM_SIDES];
    uct_ib_uint24_t         sq_psn[UCT_RC_VARUNA_NUM_SIDES];
    uint64_t                log_addr;         /* the word the peer logs into */
    uint32_t                log_rkey[UCT_RC_VARUNA_NUM_SIDES];
    uint16_t                standby_lid;
} UCS_S_PACKED uct_rc_varuna_ep_addr_t;


/* Control messages an endpoint holds until its lane has room: the few of a
 * re-protection (request or answer, then DONE), and two entries kept for
 * FAILOVERs (a second failover may start before the first one's message
 * could be posted) */
#define UCT_RC_VARUNA_CTRL_MSGQ_LEN   8
#define UCT_RC_VARUNA_CTRL_MSGQ_FO    2

typedef struct uct_rc_varuna_ctrl_msg {
    uct_rc_hdr_t            rc_hdr;           /* am_id = CTRL_AM_ID */
    uint8_t                 type;             /* uct_rc_varuna_ctrl_type_t */
    uint8_t                 lane;             /* the lane it is about */
    uint16_t                epoch;            /* failovers before it */
    uint32_t                psn;
    uint32_t                attempt;          /* re-protection attempt */
    /* REPROTECT_REQ and _ACK: the sender's port of the lane as it is now
     * (a port that was down when the endpoints connected may have had no
     * LID then) */
    uint8_t                 flags;            /* UCT_RC_VARUNA_CTRL_FLAG_* */
    uint16_t                lid;
    union ibv_gid           gid;
    /* FAILOVER: the log word the receiver's operations wrote here, read
     * after the fence (final for the failed lane, as a READ of it would
     * be once this message has arrived) */
    uint64_t                log_sn;
    /* GROW_REQ and _ACK: the sender's new QP of the lane (psn: its first
     * PSN) */
    uint32_t                qpn;
} UCS_S_PACKED uct_rc_varuna_ctrl_msg_t;

#endif
