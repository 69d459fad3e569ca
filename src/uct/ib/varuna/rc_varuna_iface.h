/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_IFACE_H
#define UCT_RC_VARUNA_IFACE_H

#include "rc_varuna_classify.h"
#include "rc_varuna_def.h"
#include "rc_varuna_md.h"

#include <uct/ib/rc/base/rc_iface.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/time/time.h>


/*
 * The interface: the two sides (ports, and a standby device's own CQs and
 * receive queue), its pools, the completion log words, the receive path's
 * held messages, the wakeup mode, the failover's interface-wide state and
 * counters (iface->fo), and the configuration as converted
 * (rc_varuna_iface.c).
 */


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
    ucs_time_t              failback_hold;    /* UCS_TIME_INFINITY = off */
    ucs_time_t              grow_after;       /* UCS_TIME_INFINITY = off */
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


struct uct_rc_varuna_iface {
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
        ucs_list_link_t     failback;         /* the primary the standby
                                                 again, traffic elsewhere:
                                                 in their hold-down */
        ucs_list_link_t     grow;             /* with a short send queue to
                                                 replace, or a replacement
                                                 under way */
        unsigned            grows_asked;      /* started here, not ended
                                                 (UCT_RC_VARUNA_GROW_AT_ONCE) */
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
        unsigned long       grow_qps;         /* of qp_created: by grows
                                                 (each connected once at
                                                 most) and by standbys
                                                 made short again (at
                                                 re-protection), off a
                                                 failover's path */
        unsigned long       failovers;        /* started (failbacks not) */
        unsigned long       failbacks;        /* started: planned, back to
                                                 the primary lane */
        unsigned long       grows;            /* lanes moved to a new QP
                                                 with the full send queue
                                                 (each side counts its
                                                 own) */
        unsigned long       renewed;          /* standby lanes a grow left
                                                 long, made short again */
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
        ucs_time_t          failback_hold;    /* UCS_TIME_INFINITY: no
                                                 failback */
        ucs_time_t          grow_after;       /* UCS_TIME_INFINITY: the
                                                 short queue stays */
    } config;
};


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


/* rc_varuna_rx.c */
unsigned uct_rc_varuna_iface_poll_rx(uct_rc_varuna_iface_t *iface,
                                     unsigned side);
void uct_rc_varuna_iface_refill(uct_rc_varuna_iface_t *iface, int fill);
void uct_rc_varuna_iface_deliver_arrived(uct_rc_varuna_iface_t *iface,
                                         uct_rc_varuna_ep_t *ep);
ucs_status_t uct_rc_varuna_iface_rx_held_init(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_iface_rx_held_cleanup(uct_rc_varuna_iface_t *iface);
void uct_rc_varuna_ep_rx_held_release(uct_rc_varuna_ep_t *ep);


/* rc_varuna_wakeup.c */
ucs_status_t
uct_rc_varuna_iface_wakeup_init(uct_rc_varuna_iface_t *iface,
                                const uct_iface_params_t *params);
void uct_rc_varuna_iface_wakeup_cleanup(uct_rc_varuna_iface_t *iface);
ucs_status_t uct_rc_varuna_iface_event_fd_get(uct_iface_h tl_iface,
                                              int *fd_p);
ucs_status_t uct_rc_varuna_iface_event_arm(uct_iface_h tl_iface,
                                           unsigned events);


/* rc_varuna_log.c */
ucs_status_t uct_rc_varuna_log_alloc(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_log_free(uct_rc_varuna_iface_t *iface,
                            uct_rc_varuna_ep_t *ep);
uint32_t uct_rc_varuna_log_rkey(uct_rc_varuna_ep_t *ep, unsigned side);
void uct_rc_varuna_log_cleanup(uct_rc_varuna_iface_t *iface);
ucs_status_t uct_rc_varuna_log_init(uct_rc_varuna_iface_t *iface,
                                    const uct_ib_iface_config_t *ib_config);

#endif
