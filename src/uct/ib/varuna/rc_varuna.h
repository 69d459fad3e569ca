/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_H
#define UCT_RC_VARUNA_H

#include "rc_varuna_classify.h"
#include "rc_varuna_psn.h"

#include <uct/ib/base/ib_md.h>
#include <uct/ib/rc/base/rc_ep.h>
#include <uct/ib/rc/base/rc_iface.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/time/time.h>
#include <ucs/type/class.h>


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


/* ------------------------------------------------------------------------
 * Memory domain: registers on both devices, packs both remote keys
 * ------------------------------------------------------------------------ */

typedef struct uct_rc_varuna_md_config {
    uct_md_config_t         super;
    char                    *standby;          /* "auto", "dev" or "dev:port" */
    int                     require_standby;
} uct_rc_varuna_md_config_t;


/* LAST_WQE_REACHED events of one QP (per device, QP number) */
typedef struct uct_rc_varuna_lwr {
    uint32_t                seen;             /* arrived so far */
    uint32_t                skip;             /* given up on: not for UCX */
} uct_rc_varuna_lwr_t;

KHASH_MAP_INIT_INT64(uct_rc_varuna_lwr, uct_rc_varuna_lwr_t);

struct uct_rc_varuna_md;

/* What the async events of one device said (md.c): written by the async
 * thread, read by every interface's progress */
typedef struct uct_rc_varuna_dev_events {
    struct uct_rc_varuna_md *md;
    unsigned                index;            /* in md->events */
    uct_ib_device_t         *dev;             /* NULL: not watched */
#if UCT_RC_VARUNA_STOCK_UCX
    struct ibv_context      *context;         /* our own, for its events */
#endif
    volatile uint8_t        port_down[UCT_IB_DEV_MAX_PORTS + 1];
} uct_rc_varuna_dev_events_t;

typedef struct uct_rc_varuna_md {
    uct_ib_md_t             super;            /* the primary device */
    uct_ib_md_t             *standby_md;      /* NULL: the standby is a port
                                                 of the primary device */
    char                    standby_dev[UCT_DEVICE_NAME_MAX];
    uint8_t                 standby_port;     /* configured; 0 = choose */
    int                     require_standby;
    int                     access_flags;
    /* Port state as the devices' async events report it */
    uct_rc_varuna_dev_events_t events[UCT_RC_VARUNA_NUM_SIDES];
    volatile uint32_t       port_events;      /* changes so far */
    /* LAST_WQE_REACHED events UCX has been given, so re-protection can tell
     * that the one of a failed QP is behind it before resetting the QP */
    ucs_spinlock_t          lwr_lock;
    khash_t(uct_rc_varuna_lwr) lwr;
    /* Event fds of the interfaces whose workers may sleep (wakeup mode):
     * a device event their progress must handle signals them at once, so
     * that no timer has to poll for it */
    ucs_spinlock_t          wakers_lock;
    ucs_list_link_t         wakers;
} uct_rc_varuna_md_t;


/* An interface's event fd, in its md's list of them */
typedef struct uct_rc_varuna_md_waker {
    ucs_list_link_t         list;
    int                     fd;
} uct_rc_varuna_md_waker_t;


/* Starts with the primary keys: UCX's own pools read the lkey there. */
typedef struct uct_rc_varuna_memh {
    uct_ib_mem_t            super;
    struct ibv_mr           *mr[UCT_RC_VARUNA_NUM_SIDES];
    uint32_t                lkey[UCT_RC_VARUNA_NUM_SIDES];
    uint32_t                rkey[UCT_RC_VARUNA_NUM_SIDES];
} uct_rc_varuna_memh_t;


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


extern uct_component_t uct_rc_varuna_component;


/* ------------------------------------------------------------------------
 * Interface
 * ------------------------------------------------------------------------ */

typedef enum {
    UCT_RC_VARUNA_RECOVERY_VARUNA,   /* resend only what was lost */
    UCT_RC_VARUNA_RECOVERY_BLANKET,  /* resend everything in flight */
    UCT_RC_VARUNA_RECOVERY_LAST
} uct_rc_varuna_recovery_t;


typedef struct uct_rc_varuna_iface_config {
    uct_rc_iface_config_t   super;
    size_t                  max_am_hdr;
    size_t                  max_zcopy;
    int                     log_enable;
    unsigned                log_interval;
    int                     recovery;
    unsigned                standby_rx_len;
    unsigned                standby_tx_len;
    ucs_time_t              watchdog;         /* 0 = off */
    ucs_time_t              peer_timeout;     /* UCS_TIME_INFINITY = wait */
    double                  reprotect_interval;
    double                  last_wqe_timeout;
    double                  reprotect_timeout;
    double                  quarantine_max;
    char                    *report;          /* JSON lines file, or "" */
} uct_rc_varuna_iface_config_t;


/* A descriptor of our own pools: payload follows, and its keys on both
 * devices let the same bytes go out on either lane. */
typedef struct uct_rc_varuna_desc {
    uint32_t                lkey[UCT_RC_VARUNA_NUM_SIDES];
} uct_rc_varuna_desc_t;


/* One device port of the pair, and the receive resources of its device */
typedef struct uct_rc_varuna_side {
    uint8_t                 port_num;
    uint8_t                 separate;         /* a device of its own */
    uint16_t                pkey_index;
    uint16_t                lid;
    uint8_t                 gid_index;
    uint8_t                 is_global;
    union ibv_gid           gid;
    struct ibv_context      *ibv_context;
    struct ibv_pd           *pd;
    struct ibv_cq           *cq[UCT_IB_DIR_NUM];
    struct ibv_srq          *srq;
    /* only when separate: receives posted on the standby device's SRQ */
    ucs_mpool_t             rx_mp;
    unsigned                rx_posted;
    unsigned                rx_quota;         /* to keep posted; grows */
    unsigned                rx_run;           /* received in full polls */
    unsigned                rx_max;           /* the SRQ's length */
    /* the send queue of this side's QPs, and what an endpoint whose
     * traffic it carries may have posted on it: its length less the
     * control requests' entries, signaled every tx_moderation */
    unsigned                tx_qp_len;
    uint16_t                tx_max_wr;
    uint16_t                tx_moderation;
} uct_rc_varuna_side_t;


KHASH_MAP_INIT_INT(uct_rc_varuna_qp, struct uct_rc_varuna_ep*);


/* The word a peer logs its operations into (rc_varuna_log.c): one per
 * endpoint, from a memory pool registered on both devices */
typedef struct uct_rc_varuna_log_word {
    uint64_t                sn;               /* written by the peer */
    uint32_t                rkey[UCT_RC_VARUNA_NUM_SIDES];
} uct_rc_varuna_log_word_t;


typedef struct uct_rc_varuna_iface {
    uct_rc_iface_t          super;
    uct_rc_varuna_side_t    side[UCT_RC_VARUNA_NUM_SIDES];
    int                     has_standby;
    khash_t(uct_rc_varuna_qp) standby_qps;    /* QPs of side 1 */
    ucs_mpool_t             tx_mp;            /* bcopy and get_bcopy buffers */
    ucs_mpool_t             short_desc_mp;    /* AM headers, atomic results */
    ucs_mpool_t             log_mp;           /* uct_rc_varuna_log_word_t */
    ucs_list_link_t         standby_gc_list;  /* standby QPs being destroyed */

    /* polling of a standby device's CQs (uct_rc_varuna_iface_progress) */
    struct {
        unsigned            calls;            /* progress calls, modulo */
        ucs_time_t          last_busy;        /* they last gave something */
        ucs_time_t          busy_interval;    /* poll at every call after */
        int                 polled;           /* by the last call */
    } sb_poll;

    /* UCX's wakeup mode: a worker that sleeps on the interface's event fd
     * must wake for the standby device's completions and for our own
     * failover work (uct_rc_varuna_iface_event_arm) */
    struct {
        struct ibv_comp_channel *sb_channel;  /* the standby device's */
        int                 epfd;             /* the event fd: both
                                                 channels and efd */
        int                 efd;              /* an eventfd: our own work */
        int                 sb_armed;         /* poll the standby CQs at the
                                                 next progress call */
        int                 sb_arming;        /* ... and at every one until
                                                 an arm succeeds: it waits
                                                 for such a call */
        int                 armed;            /* every CQ armed, and no
                                                 progress found anything
                                                 since */
        int                 timer_id;         /* -1: none (no work that
                                                 waits for time) */
        uct_rc_varuna_md_waker_t waker;       /* efd, in the md's list */
    } wakeup;

    /* failover (rc_varuna_failover.c) */
    struct {
        ucs_list_link_t     active;           /* endpoints recovering */
        ucs_list_link_t     reprotect;        /* with a lane to reconnect */
        ucs_list_link_t     watched;          /* for the watchdog: those
                                                 that awaited a completion
                                                 at the last check or since
                                                 (uct_rc_varuna_op_taken) */
        int                 reprotect_timed;  /* one of them has something
                                                 to do at a later check,
                                                 not only on an event (a
                                                 port, a message, a
                                                 completion): the wakeup
                                                 timer must come for it */
        uint32_t            port_events;      /* md->port_events seen */
        int                 ctrl_cq_available;/* send CQ entries for control
                                                 requests (apart from
                                                 super.tx.cq_available) */
        int                 ctrl_cq_reserve;  /* ... of how many */
        uint8_t             port_down[UCT_RC_VARUNA_NUM_SIDES]; /* as the
                                                 last port event saw it */
        ucs_time_t          port_up_time[UCT_RC_VARUNA_NUM_SIDES]; /* when
                                                 the side's port came back */
        ucs_time_t          next_check;       /* watchdog and re-protection */
        int                 dispatch;         /* an endpoint's traffic may
                                                 go again: run the pending
                                                 queues at the end of this
                                                 progress call */
        ucs_time_t          check_interval;
        FILE                *report;
        /* the classification's working array: as many entries as an
         * endpoint can have operations in flight (its ring), allocated
         * once, not at every try while a failover waits for the peer */
        uct_rc_varuna_cls_op_t *cls;
        size_t              cls_len;
        ucs_mpool_t         held_mp;          /* uct_rc_varuna_rx_held_t */
        /* counters of the interface's life, for users (the iface's
         * "failover" directory in UCX's VFS, the report's totals line at
         * close) and tests; see uct_rc_varuna_iface_counters */
        unsigned long       qp_created;
        unsigned long       qp_connected;     /* by uct_ep_connect_to_ep() */
        unsigned long       failovers;        /* started */
        unsigned long       recovered;        /* ended with a live endpoint */
        unsigned long       reprotected;      /* lanes that are a standby
                                                 again */
        unsigned long       reprotect_late;   /* endpoints still without a
                                                 standby REPROTECT_TIMEOUT
                                                 after its port came back */
        unsigned long       in_flight;        /* classified at failovers */
        unsigned long       resent_ops;       /* sent again: lost ones,
                                                 and executed READs read
                                                 again */
        unsigned long       resent_bytes;
        unsigned long       spared_ops;       /* blanket would have sent
                                                 them again; executed */
        unsigned long       reread;           /* executed READs read again */
        unsigned long       results_lost;     /* fetching atomics */
        unsigned long       undecided;        /* completed with an error,
                                                 never resent */
        unsigned long       stall_probes;     /* posted on a quiet lane
                                                 with no standby */
        unsigned long       standby_probes;   /* posted on the standby
                                                 before a watchdog
                                                 failover */
        unsigned long       watchdog_spared;  /* the quiet lane moved
                                                 while the standby was
                                                 probed: slow, not dead,
                                                 no failover */
        unsigned long       quarantined;      /* paths up but failing their
                                                 probe: re-protection waits
                                                 longer after each try */
        unsigned long       probes_failed;    /* re-protection probes that
                                                 did not cross the path */
        unsigned long       am_dropped;       /* received again after a
                                                 failover, dropped */
        unsigned long       am_unordered;     /* blanket recovery: delivered
                                                 again or ahead of an older
                                                 one */
    } fo;

    struct {
        size_t              max_inline;
        size_t              max_send_sge;
        size_t              short_desc_size;
        size_t              max_zcopy;        /* bytes of one put/get WR */
        size_t              op_size;          /* one replay record */
        unsigned            tx_max_wr;        /* the larger side's */
        int                 log_enable;
        unsigned            log_interval;     /* operations per log write */
        uct_rc_varuna_recovery_t recovery;
        ucs_time_t          watchdog;         /* 0 = off */
        ucs_time_t          peer_timeout;     /* UCS_TIME_INFINITY = wait */
        ucs_time_t          reprotect_interval;
        ucs_time_t          last_wqe_timeout; /* bound on that event */
        ucs_time_t          reprotect_timeout; /* answer to a request */
        ucs_time_t          quarantine_max;   /* longest wait between two
                                                 tries of a path that
                                                 failed its probe */
    } config;
} uct_rc_varuna_iface_t;


/* ------------------------------------------------------------------------
 * Endpoint
 * ------------------------------------------------------------------------ */

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


/* A gather entry of the caller's memory: its handle gives the keys of both
 * devices, and the buffer back to the caller if the operation is handed
 * back (uct_ep_outstanding_purge) */
typedef struct uct_rc_varuna_sge {
    uint64_t                addr;
    uint32_t                length;
    uct_rc_varuna_memh_t    *memh;
} uct_rc_varuna_sge_t;


/*
 * Replay record (DESIGN.md section 3.2): everything needed to post the
 * operation again on another QP, or to complete it, until it completes.
 * Short payloads are copied here because the caller may reuse its buffer
 * as soon as the call returns; bcopy payloads stay in their descriptor.
 */
typedef struct uct_rc_varuna_op {
    uint64_t                sn;
    uint8_t                 type;             /* uct_rc_varuna_op_type_t */
    uint8_t                 ib_opcode;        /* enum ibv_wr_opcode */
    uint8_t                 lane;             /* lane it went out on */
    uint8_t                 num_wr;           /* WRs it took there */
    uint8_t                 num_sge;
    uint8_t                 send_flags;       /* IBV_SEND_SOLICITED etc. */
    uint8_t                 am_id;
    uint8_t                 flags;            /* UCT_RC_VARUNA_OP_FLAG_* */
    int8_t                  status;           /* when SETTLED */
    uint32_t                am_seq;           /* SENDs: order at the receiver */
    uint32_t                length;           /* bytes the request carries */
    uint32_t                desc_len;         /* of them, in the descriptor */
    uint32_t                last_psn;         /* of its own request */
    uint64_t                log_before;       /* sn of the last log write
                                                 posted before it on its
                                                 lane, 0 if none */
    uint64_t                remote_addr;
    uct_rkey_t              rkey;             /* both halves */
    uint64_t                compare_add;
    uint64_t                swap;
    void                    *result;          /* fetching atomics */
    uct_completion_t        *comp;
    uct_completion_t        *flush_comp;      /* a flush that found this
                                                 one the last posted, and
                                                 signaled: it completes
                                                 with it */
    uct_rc_varuna_desc_t    *desc;            /* bcopy/atomic/AM header */
    uct_unpack_callback_t   unpack_cb;        /* get_bcopy */
    void                    *unpack_arg;
    /* max_send_sge gather entries, then max_inline bytes of inline data */
    uct_rc_varuna_sge_t     sge[];
} uct_rc_varuna_op_t;


enum {
    /* decided by a failover: completes, with op->status, as soon as
     * everything before it has */
    UCT_RC_VARUNA_OP_FLAG_SETTLED    = UCS_BIT(0),
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
    UCT_RC_VARUNA_CTRL_WR_LAST
} uct_rc_varuna_ctrl_wr_t;

/* Control messages: SENDs without immediate, AM id UCT_RC_VARUNA_CTRL_AM_ID */
typedef enum {
    UCT_RC_VARUNA_CTRL_FAILOVER = 1, /* "I fenced lane X; my rq_psn there" */
    UCT_RC_VARUNA_CTRL_REPROTECT_REQ,/* "reconnect lane X; my new sq_psn" */
    UCT_RC_VARUNA_CTRL_REPROTECT_ACK,/* "done; my new sq_psn" */
    UCT_RC_VARUNA_CTRL_REPROTECT_NACK,
    UCT_RC_VARUNA_CTRL_REPROTECT_DONE,/* "the new lane carried a READ" */
    UCT_RC_VARUNA_CTRL_REPROTECT_ASK  /* "my side of lane X is not
                                         connected: re-protect it" (from the
                                         side that is not the initiator) */
} uct_rc_varuna_ctrl_type_t;

enum {
    UCT_RC_VARUNA_CTRL_FLAG_PORT_ADDR   = UCS_BIT(0), /* lid, gid are valid */
    UCT_RC_VARUNA_CTRL_FLAG_GLOBAL      = UCS_BIT(1), /* route by the gid */
    UCT_RC_VARUNA_CTRL_FLAG_PSN_UNKNOWN = UCS_BIT(2), /* FAILOVER: psn is not
                                                         the expected PSN
                                                         (it could not be
                                                         read) */
    UCT_RC_VARUNA_CTRL_FLAG_LOG         = UCS_BIT(3)  /* FAILOVER: log_sn is
                                                         the log word */
};

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
} UCS_S_PACKED uct_rc_varuna_ctrl_msg_t;

/* An active message that arrived ahead of its turn (over the new lane
 * while an older one still waits in the old lane's receive queue) */
typedef struct uct_rc_varuna_rx_held {
    ucs_list_link_t         list;
    uint32_t                am_seq;
    unsigned                length;
    uct_rc_hdr_t            *hdr;
    void                    *desc;
    uint32_t                imm_data;
    uint16_t                slid;
} uct_rc_varuna_rx_held_t;

/* The failover report of one event (DESIGN.md section 5.4) */
typedef struct uct_rc_varuna_report {
    uint8_t                 cause;
    uint8_t                 failed_lane;
    uint8_t                 new_lane;
    unsigned                in_flight;        /* classified: not completed
                                                 once the failed lane drained */
    unsigned                acked;            /* found completed by the drain
                                                 (acknowledged, unsignaled) */
    uct_rc_varuna_cls_input_t   learned;      /* log word, peer's rq_psn */
    uct_rc_varuna_cls_summary_t decided;      /* the classifier's counts */
    unsigned                results_lost;     /* fetching atomics */
    unsigned                reread;           /* executed READs read again */
    unsigned                resent_ops;
    size_t                  resent_bytes;
    unsigned                resent_posts;     /* ibv_post_send calls (chains)
                                                 that sent them */
    unsigned                blanket_ops;      /* what blanket resends */
    size_t                  blanket_bytes;
    ucs_time_t              t_detect;
    ucs_time_t              t_decided;
    ucs_time_t              t_recovered;
    ucs_time_t              t_peer;           /* the peer's notice came */
    ucs_time_t              t_notice;         /* ours was posted */
    ucs_time_t              t_enter[UCT_RC_VARUNA_FO_LAST]; /* each state,
                                                 where the time goes */
} uct_rc_varuna_report_t;


/* Who completes the operations a dead endpoint had in flight */
typedef enum {
    UCT_RC_VARUNA_OWNER_TRANSPORT,    /* we do, with the failure's status
                                         (as rc_verbs) */
    UCT_RC_VARUNA_OWNER_IN_HANDLER,   /* the error handler is deciding */
    UCT_RC_VARUNA_OWNER_CALLER        /* the handler took them over: kept
                                         for uct_ep_outstanding_purge */
} uct_rc_varuna_owner_t;


typedef struct uct_rc_varuna_lane {
    struct ibv_qp           *qp;
    uint32_t                init_psn;         /* first PSN, told to the peer */
    uint32_t                sq_psn;           /* next PSN of a request */
    uint32_t                path_mtu;         /* bytes */
    uint64_t                log_sn;           /* last log write posted on
                                                 this connection, 0: none */
    uint8_t                 state;            /* uct_rc_varuna_lane_state_t */
    uint32_t                err_count;        /* moves to ERR by failover */
    uint32_t                lwr_given_up;     /* LAST_WQE_REACHED not waited
                                                 for (lane_reset) */
    ucs_time_t              err_time;         /* last move to ERR */
} uct_rc_varuna_lane_t;


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


typedef struct uct_rc_varuna_ep {
    uct_rc_ep_t             super;
    uct_rc_varuna_lane_t    lane[UCT_RC_VARUNA_NUM_SIDES];
    uint8_t                 active;           /* lane carrying the traffic */
    uct_ib_fence_info_t     fi;

    struct {
        uint64_t            sn;               /* last operation posted */
        uint64_t            done_sn;          /* last operation completed */
        uint8_t             *ring;            /* replay records: grows
                                                 from RING_INIT, doubling,
                                                 up to one per send credit
                                                 (uct_rc_varuna_ep_ring_grow) */
        unsigned            ring_mask;
        /* Send credits in circulation: available, parked, and held by
         * requests still on a QP, also on a lane left by a failover. The
         * lane carrying the traffic allows wr_limit (its side's
         * tx_max_wr); after a failover onto a smaller standby queue,
         * credits coming back are retired until wr_owned is down to it
         * (uct_rc_varuna_ep_tx_resize) */
        uint16_t            wr_owned;
        uint16_t            wr_limit;
        uint32_t            am_seq;           /* last SEND numbered */
        unsigned            settled;          /* records SETTLED */
        uint64_t            sig_sn;           /* last posted signaled */
        size_t              unsig_bytes;      /* posted since sig_sn */
        ucs_time_t          last_progress;    /* for the watchdog */
        ucs_list_link_t     watch;            /* in iface->fo.watched */
        uint8_t             watched;
        ucs_time_t          probe_time;       /* last stall probe posted */
        ucs_time_t          standby_proven;   /* last standby probe that
                                                 completed */
    } tx;

    struct {
        uint32_t            am_seq;           /* last SEND delivered */
        ucs_list_link_t     held;             /* arrived ahead, in order */
    } rx;

    /* failover of the active lane (rc_varuna_failover.c) */
    struct {
        uint8_t             state;            /* uct_rc_varuna_fo_state_t */
        uint8_t             cause;            /* uct_rc_varuna_cause_t */
        uint8_t             failed_lane;
        uint8_t             flags;            /* UCT_RC_VARUNA_FO_* */
        uint16_t            epoch;            /* failovers so far */
        uint32_t            peer_rq_psn;
        /* the peer's FAILOVER for a failover we have not started yet (our
         * standby still being connected, or our last failover still
         * replaying): applied when ours starts */
        struct {
            uint8_t         valid;
            uint8_t         lane;
            uint8_t         flags;            /* UCT_RC_VARUNA_CTRL_FLAG_* */
            uint16_t        epoch;
            uint32_t        psn;
            uint64_t        log_sn;
        } notice;
        uint64_t            log_sn;
        uint64_t            sn_hi;            /* last op in flight at start */
        uint64_t            replay_sn;        /* next to resend */
        uint64_t            replay_last;      /* last to resend or read */
        uint64_t            replay_log;       /* last to resend, logged */
        unsigned            parked;           /* tx credits held back */
        uct_rc_varuna_desc_t *log_desc;       /* the READ of L lands here */
        ucs_list_link_t     list;             /* in iface->fo.active */
        uct_rc_varuna_report_t report;
    } fo;

    /* re-protection of a failed lane (rc_varuna_reprotect.c) */
    struct {
        ucs_list_link_t     list;             /* in iface->fo.reprotect */
        uint8_t             initiator;        /* we start re-protection */
        uint8_t             lane;             /* lane to reconnect */
        uint8_t             listed;
        uint8_t             probing;          /* probe READ in flight */
        uint8_t             probe_wait;       /* probe READ to post when
                                                 there is room */
        uint8_t             done_pending;     /* DONE to send */
        uint8_t             late_said;        /* reprotect_late counted */
        uint32_t            psn;              /* our new sq_psn there */
        uint32_t            probes_failed;    /* in a row, on this lane:
                                                 quarantined while > 0 */
        uint32_t            attempt;
        uint32_t            peer_attempt;     /* the peer's, last answered */
        ucs_time_t          backoff;          /* the peer said no: wait
                                                 this long before asking
                                                 again (0: it did not) */
        ucs_time_t          sent;             /* the last request posted */
        ucs_time_t          next_try;         /* quarantined: no request
                                                 before this */
        uint8_t             ask;              /* our side of the standby
                                                 failed alone (it could not
                                                 be connected): the peer
                                                 is to be told */
        ucs_time_t          asked;            /* the last REPROTECT_ASK
                                                 queued (0: none) */
        ucs_time_t          unprotected;      /* since when the endpoint
                                                 has no standby (0: it has
                                                 one) */
    } rp;

    /* control requests on the lanes (rc_varuna_ctrl.c) */
    struct {
        uint8_t             pending;          /* bits of ctrl_wr_t to post */
        uint8_t             inflight[UCT_RC_VARUNA_NUM_SIDES];
        /* messages to post, oldest first (msgq_head); entries are kept
         * for FAILOVER, so no message is ever dropped */
        uct_rc_varuna_ctrl_msg_t msgq[UCT_RC_VARUNA_CTRL_MSGQ_LEN];
        uint8_t             msgq_head;
        uint8_t             msgq_count;
        uint8_t             stall_probe;      /* one in flight on the
                                                 active lane */
        uint8_t             standby_probe;    /* one in flight on the
                                                 standby */
        ucs_time_t          progress;         /* the last control request
                                                 completed, or posted on
                                                 a lane with none in
                                                 flight */
    } ctrl;

    /* the peer's side of both lanes, to connect them again */
    struct {
        uint32_t            qpn[UCT_RC_VARUNA_NUM_SIDES];
        struct ibv_ah_attr  ah[UCT_RC_VARUNA_NUM_SIDES];
        enum ibv_mtu        path_mtu;
    } peer;

    /* where our operations are logged: the peer's word, its keys */
    struct {
        uint64_t            addr;
        uint32_t            rkey[UCT_RC_VARUNA_NUM_SIDES];
    } peer_log;

    /* the word the peer logs its operations into, here */
    uct_rc_varuna_log_word_t *log;

    /* after both lanes failed: who completes the operations in flight
     * (rc_varuna_purge.c) */
    struct {
        uint8_t             owner;            /* uct_rc_varuna_owner_t */
        int8_t              status;           /* of the failure */
        uint8_t             callers;          /* the caller's own error
                                                 ended it, not the lanes */
    } dead;
} uct_rc_varuna_ep_t;


UCS_CLASS_DECLARE(uct_rc_varuna_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_rc_varuna_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_rc_varuna_ep_t, uct_ep_t);


/* The endpoint has a lane to fail over to: the one not carrying the traffic
 * is connected and idle. The lane states say it; nothing else keeps it. */
static UCS_F_ALWAYS_INLINE int
uct_rc_varuna_ep_has_standby(const uct_rc_varuna_ep_t *ep)
{
    return ep->lane[UCT_RC_VARUNA_NUM_SIDES - 1 - ep->active].state ==
           UCT_RC_VARUNA_LANE_STANDBY;
}

static UCS_F_ALWAYS_INLINE uct_rc_varuna_op_t *
uct_rc_varuna_ep_op(uct_rc_varuna_ep_t *ep, uint64_t sn)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                                  uct_rc_varuna_iface_t);

    return (uct_rc_varuna_op_t*)(ep->tx.ring +
                                 (sn & ep->tx.ring_mask) *
                                 iface->config.op_size);
}


/* The word the peer logs its operations into, here */
static UCS_F_ALWAYS_INLINE uint64_t *
uct_rc_varuna_log_word(uct_rc_varuna_ep_t *ep)
{
    return &ep->log->sn;
}


/* rc_varuna_md.c */
ucs_status_t uct_rc_varuna_md_standby_port(uct_rc_varuna_md_t *md,
                                           uint8_t primary_port,
                                           uint8_t *port_p, int *up_p);
int uct_rc_varuna_md_port_down(uct_rc_varuna_md_t *md, unsigned side,
                               uint8_t port_num);
uint32_t uct_rc_varuna_md_last_wqe_count(uct_rc_varuna_md_t *md, unsigned side,
                                         uint32_t qp_num);
void uct_rc_varuna_md_waker_add(uct_rc_varuna_md_t *md,
                                uct_rc_varuna_md_waker_t *waker);
void uct_rc_varuna_md_waker_remove(uct_rc_varuna_md_t *md,
                                   uct_rc_varuna_md_waker_t *waker);
void uct_rc_varuna_md_last_wqe_skip(uct_rc_varuna_md_t *md, unsigned side,
                                    uint32_t qp_num, uint32_t count);
void uct_rc_varuna_md_last_wqe_forget(uct_rc_varuna_md_t *md, unsigned side,
                                      uint32_t qp_num);


/* rc_varuna_iface.c */
uct_rc_varuna_ep_t *uct_rc_varuna_iface_lookup_ep(uct_rc_varuna_iface_t *iface,
                                                  unsigned side,
                                                  uint32_t qp_num);
uct_rc_varuna_ep_t *uct_rc_varuna_iface_find_ep(uct_rc_varuna_iface_t *iface,
                                                unsigned side,
                                                uint32_t qp_num);
ucs_status_t uct_rc_varuna_iface_add_qp(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, unsigned side,
                                        uint32_t qp_num);
void uct_rc_varuna_iface_remove_qp(uct_rc_varuna_iface_t *iface,
                                   unsigned side, uint32_t qp_num);
void uct_rc_varuna_iface_side_refresh(uct_rc_varuna_iface_t *iface,
                                      unsigned side);
void uct_rc_varuna_iface_deliver_arrived(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep);
ucs_status_t uct_rc_varuna_iface_rx_held_init(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_iface_rx_held_cleanup(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_ep_rx_held_release(uct_rc_varuna_ep_t *ep);


/* rc_varuna_log.c */
ucs_status_t uct_rc_varuna_log_alloc(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_log_free(uct_rc_varuna_iface_t *iface,
                            uct_rc_varuna_ep_t *ep);
uint32_t uct_rc_varuna_log_rkey(uct_rc_varuna_ep_t *ep, unsigned side);
void uct_rc_varuna_log_cleanup(uct_rc_varuna_iface_t *iface);
ucs_status_t uct_rc_varuna_log_init(uct_rc_varuna_iface_t *iface,
                                    const uct_ib_iface_config_t *ib_config);


/* rc_varuna_ep.c: operations */
ucs_status_t uct_rc_varuna_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey);
ssize_t uct_rc_varuna_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr,
                                   uct_rkey_t rkey);
ucs_status_t uct_rc_varuna_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_get_bcopy(uct_ep_h tl_ep,
                                        uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                       uint64_t hdr, const void *buffer,
                                       unsigned length);
ucs_status_t uct_rc_varuna_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                           const uct_iov_t *iov,
                                           size_t iovcnt);
ssize_t uct_rc_varuna_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                  uct_pack_callback_t pack_cb, void *arg,
                                  unsigned flags);
ucs_status_t uct_rc_varuna_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                       const void *header,
                                       unsigned header_length,
                                       const uct_iov_t *iov, size_t iovcnt,
                                       unsigned flags, uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                             uint64_t swap,
                                             uint64_t remote_addr,
                                             uct_rkey_t rkey, uint64_t *result,
                                             uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                            uint64_t value,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey);
ucs_status_t uct_rc_varuna_ep_atomic64_fetch(uct_ep_h tl_ep,
                                             uct_atomic_op_t opcode,
                                             uint64_t value, uint64_t *result,
                                             uint64_t remote_addr,
                                             uct_rkey_t rkey,
                                             uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp);
ucs_status_t uct_rc_varuna_ep_fence(uct_ep_h tl_ep, unsigned flags);
void uct_rc_varuna_ep_post_check(uct_ep_h tl_ep);
ucs_status_t uct_rc_varuna_ep_fc_ctrl(uct_ep_t *tl_ep, unsigned op,
                                      uct_rc_pending_req_t *req);
ucs_status_t uct_rc_varuna_ep_get_address(uct_ep_h tl_ep,
                                          uct_ep_addr_t *addr);
ucs_status_t uct_rc_varuna_ep_connect_to_ep(uct_ep_h tl_ep,
                                            const uct_device_addr_t *dev_addr,
                                            const uct_ep_addr_t *ep_addr);
ucs_status_t uct_rc_varuna_ep_invalidate(uct_ep_h tl_ep, unsigned flags);
void uct_rc_varuna_ep_vfs_populate(uct_rc_ep_t *rc_ep);

/* completion of everything up to sn; called by the iface progress */
void uct_rc_varuna_ep_complete(uct_rc_varuna_ep_t *ep, uint64_t sn);
void uct_rc_varuna_ep_complete_settled(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_purge(uct_rc_varuna_ep_t *ep, ucs_status_t status);
void uct_rc_varuna_op_complete(uct_rc_varuna_iface_t *iface,
                               uct_rc_varuna_op_t *op, ucs_status_t status);
void uct_rc_varuna_ep_fail(uct_rc_varuna_ep_t *ep, ucs_status_t status);
void uct_rc_varuna_ep_fail_later(uct_rc_varuna_ep_t *ep, ucs_status_t status);
void uct_rc_varuna_ep_fail_cancel(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_dead_complete(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_handle_failure(uct_rc_varuna_ep_t *ep, unsigned lane,
                                     struct ibv_wc *wc, ucs_status_t status);
ucs_status_t uct_rc_varuna_ep_pending_add(uct_ep_h tl_ep,
                                          uct_pending_req_t *req,
                                          unsigned flags);
ucs_status_t uct_rc_varuna_ep_ring_grow(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep);


/* rc_varuna_lane.c */
ucs_status_t uct_rc_varuna_lane_create(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep, unsigned side);
void uct_rc_varuna_lane_destroy(uct_rc_varuna_iface_t *iface,
                                uct_rc_varuna_ep_t *ep, unsigned side,
                                uint16_t cq_credits);
ucs_status_t uct_rc_varuna_lane_reset(uct_rc_varuna_iface_t *iface,
                                      uct_rc_varuna_ep_t *ep, unsigned side);
ucs_status_t uct_rc_varuna_lane_connect(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, unsigned side,
                                        uint32_t dest_qpn, uint32_t rq_psn,
                                        struct ibv_ah_attr *ah_attr,
                                        enum ibv_mtu path_mtu);
void uct_rc_varuna_iface_qp_cleanup(uct_rc_iface_qp_cleanup_ctx_t *rc_ctx);
void uct_rc_varuna_iface_cleanup_standby_qps(uct_rc_varuna_iface_t *iface);
uint32_t uct_rc_varuna_lane_new_psn(uct_rc_varuna_lane_t *lane);
void uct_rc_varuna_lane_ah(uct_rc_varuna_iface_t *iface,
                           uct_rc_varuna_ep_t *ep, unsigned side,
                           uint16_t lid, const union ibv_gid *peer_gid,
                           struct ibv_ah_attr *ah_attr);
const char *uct_rc_varuna_lane_str(uct_rc_varuna_iface_t *iface,
                                   unsigned side, char *buf, size_t max);
const char *uct_rc_varuna_lane_state_str(uct_rc_varuna_lane_state_t state);
int uct_rc_varuna_lane_rq_psn(uct_rc_varuna_lane_t *lane, uint32_t *psn_p);
void uct_rc_varuna_lane_fence(uct_rc_varuna_lane_t *lane);


/* rc_varuna_failover.c: the failover's state machine; each event enters it
 * through one of these */
void uct_rc_varuna_ep_failover(uct_rc_varuna_ep_t *ep, unsigned lane,
                               uct_rc_varuna_cause_t cause);
void uct_rc_varuna_ep_failover_drained(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_failover_log_read(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_failover_peer_fenced(uct_rc_varuna_ep_t *ep,
                                           const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_failover_noticed(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_failover_progress(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_failover_recovered(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_post_refused(uct_rc_varuna_ep_t *ep);
/* For tests: fail the active lane of an endpoint as if an error had been
 * detected on it. */
ucs_status_t uct_rc_varuna_ep_fail_lane(uct_ep_h tl_ep);
void uct_rc_varuna_ep_failover_cleanup(uct_rc_varuna_ep_t *ep,
                                       uct_rc_varuna_fo_state_t state);
void uct_rc_varuna_iface_failovers_progress(uct_rc_varuna_iface_t *iface);
ucs_status_t uct_rc_varuna_iface_cls_init(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_iface_cls_cleanup(uct_rc_varuna_iface_t *iface);
const char *uct_rc_varuna_cause_str(uct_rc_varuna_cause_t cause);
const char *uct_rc_varuna_fo_state_str(uct_rc_varuna_fo_state_t state);


/* rc_varuna_detect.c: port events, the watchdog and its probes, the periodic
 * check */
void uct_rc_varuna_iface_detect_init(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_iface_failover_check(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_ep_standby_probed(uct_rc_varuna_ep_t *ep);


/* rc_varuna_ctrl.c: control requests and messages, and the one dispatcher
 * of their completions and of the peer's messages */
uct_rc_varuna_ctrl_msg_t *
uct_rc_varuna_ep_queue_msg(uct_rc_varuna_ep_t *ep,
                           uct_rc_varuna_ctrl_type_t type, unsigned lane,
                           uint32_t psn, uint32_t attempt);
ucs_status_t uct_rc_varuna_iface_ctrl_init(uct_rc_varuna_iface_t *iface);
int uct_rc_varuna_ep_msgq_room(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_ctrl_kick(uct_rc_varuna_ep_t *ep);
int uct_rc_varuna_reprotect_room(uct_rc_varuna_iface_t *iface,
                                 uct_rc_varuna_ep_t *ep, unsigned lane);
ucs_status_t uct_rc_varuna_post_log_read(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         unsigned lane);
ucs_status_t uct_rc_varuna_ep_post_probe(uct_rc_varuna_ep_t *ep);
ucs_status_t uct_rc_varuna_ep_post_standby_probe(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_ctrl_completion(uct_rc_varuna_ep_t *ep, unsigned lane,
                                      struct ibv_wc *wc);
void uct_rc_varuna_ep_ctrl_recv(uct_rc_varuna_ep_t *ep, unsigned lane,
                                const uct_rc_varuna_ctrl_msg_t *msg,
                                unsigned length);


/* rc_varuna_reprotect.c: re-protection; the peer's messages about it come
 * from uct_rc_varuna_ep_ctrl_recv */
void uct_rc_varuna_ep_standby_later(uct_rc_varuna_ep_t *ep, const char *why);
void uct_rc_varuna_ep_reprotect_list(uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_reprotect_unlist(uct_rc_varuna_ep_t *ep);
int uct_rc_varuna_ep_reprotect_try(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, ucs_time_t now);
void uct_rc_varuna_ep_reprotect_probed(uct_rc_varuna_iface_t *iface,
                                       uct_rc_varuna_ep_t *ep, unsigned lane);
void uct_rc_varuna_ep_reprotect_probe_failed(uct_rc_varuna_iface_t *iface,
                                             uct_rc_varuna_ep_t *ep,
                                             unsigned lane,
                                             enum ibv_wc_status status);
void uct_rc_varuna_ep_reprotect_recv_failover(uct_rc_varuna_iface_t *iface,
                                              uct_rc_varuna_ep_t *ep,
                                              unsigned lane);
void uct_rc_varuna_ep_reprotect_recv_req(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_reprotect_recv_ack(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_reprotect_recv_done(uct_rc_varuna_iface_t *iface,
                                          uct_rc_varuna_ep_t *ep,
                                          const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_reprotect_recv_ask(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const uct_rc_varuna_ctrl_msg_t *msg);
void uct_rc_varuna_ep_reprotect_recv_nack(uct_rc_varuna_iface_t *iface,
                                          uct_rc_varuna_ep_t *ep,
                                          const uct_rc_varuna_ctrl_msg_t *msg);


#if !UCT_RC_VARUNA_STOCK_UCX
/* rc_varuna_purge.c: what a dead endpoint executed, for UCP's failover */
ucs_status_t uct_rc_varuna_ep_query(uct_ep_h tl_ep, uct_ep_attr_t *ep_attr);
ucs_status_t uct_rc_varuna_iface_derive_rx_token(uct_iface_h tl_iface,
                                                 const void *tx_token,
                                                 size_t tx_token_length,
                                                 void *rx_token,
                                                 size_t *rx_token_length_p);
ucs_status_t
uct_rc_varuna_ep_outstanding_purge(uct_ep_h tl_ep,
                                   const uct_ep_outstanding_purge_params_t *params);
#endif


/* rc_varuna_report.c */
void uct_rc_varuna_ep_report(uct_rc_varuna_iface_t *iface,
                             uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_ep_report_purge(uct_rc_varuna_iface_t *iface,
                                   uct_rc_varuna_ep_t *ep, unsigned completed,
                                   unsigned results_lost, unsigned handed_back,
                                   const uct_rc_varuna_cls_summary_t *total,
                                   uint64_t log_sn);
void uct_rc_varuna_ep_report_reprotected(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const char *lane_name,
                                         ucs_time_t now, ucs_time_t port_up);
void uct_rc_varuna_ep_report_quarantined(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep,
                                         const char *lane_name,
                                         const char *why, ucs_time_t now,
                                         ucs_time_t wait);
void uct_rc_varuna_iface_count_failover(uct_rc_varuna_iface_t *iface,
                                        const uct_rc_varuna_report_t *rep);
ucs_status_t uct_rc_varuna_iface_report_open(uct_rc_varuna_iface_t *iface,
                                             const char *path);
void uct_rc_varuna_iface_report_close(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_iface_vfs_refresh(uct_iface_h tl_iface);

#endif
