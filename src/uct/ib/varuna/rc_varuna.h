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
#include <ucs/type/class.h>


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
 */

#define UCT_RC_VARUNA_TL_NAME         "rc_varuna"
#define UCT_RC_VARUNA_NUM_SIDES       2
#define UCT_RC_VARUNA_SIDE_PRIMARY    0
#define UCT_RC_VARUNA_SIDE_STANDBY    1

/* The AM id byte of rc_varuna's own control messages: every FC bit and the
 * highest AM id, a combination UCT never sends. */
#define UCT_RC_VARUNA_CTRL_AM_ID      0xff

/* wr_id of a work request: the operation's sequence number; the op's own
 * request has this bit set, its log write does not. */
#define UCT_RC_VARUNA_WRID_OP         UCS_BIT(63)


/* ------------------------------------------------------------------------
 * Memory domain: registers on both devices, packs both remote keys
 * ------------------------------------------------------------------------ */

typedef struct uct_rc_varuna_md_config {
    uct_md_config_t         super;
    char                    *standby;          /* "auto", "dev" or "dev:port" */
    int                     require_standby;
} uct_rc_varuna_md_config_t;


typedef struct uct_rc_varuna_md {
    uct_ib_md_t             super;            /* the primary device */
    uct_ib_md_t             *standby_md;      /* NULL: the standby is a port
                                                 of the primary device */
    char                    standby_dev[UCT_DEVICE_NAME_MAX];
    uint8_t                 standby_port;     /* configured; 0 = choose */
    int                     require_standby;
    int                     access_flags;
} uct_rc_varuna_md_t;


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
    int                     log_enable;
    int                     recovery;
    unsigned                standby_rx_len;
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
    unsigned                rx_quota;
} uct_rc_varuna_side_t;


KHASH_MAP_INIT_INT(uct_rc_varuna_qp, struct uct_rc_varuna_ep*);


/* Log words peers write into: one per endpoint, in registered chunks */
typedef struct uct_rc_varuna_log_chunk {
    ucs_list_link_t         list;
    uint64_t                *words;
    uct_mem_h               memh;
    unsigned                count;
    unsigned                used;
    uint8_t                 *in_use;
} uct_rc_varuna_log_chunk_t;


typedef struct uct_rc_varuna_iface {
    uct_rc_iface_t          super;
    uct_rc_varuna_side_t    side[UCT_RC_VARUNA_NUM_SIDES];
    int                     has_standby;
    khash_t(uct_rc_varuna_qp) standby_qps;    /* QPs of side 1 */
    ucs_mpool_t             tx_mp;            /* bcopy and get_bcopy buffers */
    ucs_mpool_t             short_desc_mp;    /* AM headers, atomic results */
    ucs_list_link_t         log_chunks;
    ucs_list_link_t         standby_gc_list;  /* standby QPs being destroyed */

    struct {
        size_t              max_inline;
        size_t              max_send_sge;
        size_t              short_desc_size;
        size_t              op_size;          /* one replay record */
        unsigned            tx_max_wr;
        unsigned            max_ops;          /* in flight per endpoint */
        int                 log_enable;
        uct_rc_varuna_recovery_t recovery;
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


/* A gather entry that is valid on both devices */
typedef struct uct_rc_varuna_sge {
    uint64_t                addr;
    uint32_t                length;
    uint32_t                lkey[UCT_RC_VARUNA_NUM_SIDES];
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
    uint8_t                 reserved;
    uint32_t                length;           /* bytes the request carries */
    uint32_t                desc_len;         /* of them, in the descriptor */
    uint32_t                last_psn;         /* of its own request */
    uint64_t                remote_addr;
    uct_rkey_t              rkey;             /* both halves */
    uint64_t                compare_add;
    uint64_t                swap;
    void                    *result;          /* fetching atomics */
    uct_completion_t        *comp;
    uct_rc_varuna_desc_t    *desc;            /* bcopy/atomic/AM header */
    uct_unpack_callback_t   unpack_cb;        /* get_bcopy */
    void                    *unpack_arg;
    /* max_send_sge gather entries, then max_inline bytes of inline data */
    uct_rc_varuna_sge_t     sge[];
} uct_rc_varuna_op_t;


typedef enum {
    UCT_RC_VARUNA_LANE_IDLE,         /* not created or not connected */
    UCT_RC_VARUNA_LANE_ACTIVE,       /* carries the traffic */
    UCT_RC_VARUNA_LANE_STANDBY,      /* connected, waiting */
    UCT_RC_VARUNA_LANE_FAILED        /* in error, to be reset */
} uct_rc_varuna_lane_state_t;


typedef struct uct_rc_varuna_lane {
    struct ibv_qp           *qp;
    uint32_t                init_psn;         /* first PSN, told to the peer */
    uint32_t                sq_psn;           /* next PSN of a request */
    uint32_t                path_mtu;         /* bytes */
    uint8_t                 state;            /* uct_rc_varuna_lane_state_t */
} uct_rc_varuna_lane_t;


/* Wire: what the peer needs to connect to an endpoint */
enum {
    UCT_RC_VARUNA_EP_ADDR_FLAG_STANDBY = UCS_BIT(0), /* has a standby lane */
    UCT_RC_VARUNA_EP_ADDR_FLAG_GID     = UCS_BIT(1)  /* standby GID follows */
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
    uint8_t                 has_standby;
    uct_ib_fence_info_t     fi;

    struct {
        uint64_t            sn;               /* last operation posted */
        uint64_t            done_sn;          /* last operation completed */
        uint8_t             *ring;            /* replay records */
        unsigned            ring_mask;
    } tx;

    struct {
        uint32_t            am_sn;            /* last SEND delivered (dedup) */
    } rx;

    /* where our operations are logged: the peer's word, its keys */
    struct {
        uint64_t            addr;
        uint32_t            rkey[UCT_RC_VARUNA_NUM_SIDES];
    } peer_log;

    /* the word the peer logs its operations into, here */
    struct {
        uct_rc_varuna_log_chunk_t *chunk;
        unsigned            index;
    } log;
} uct_rc_varuna_ep_t;


UCS_CLASS_DECLARE(uct_rc_varuna_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_rc_varuna_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_rc_varuna_ep_t, uct_ep_t);


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
    return &ep->log.chunk->words[ep->log.index];
}


/* rc_varuna_md.c */
ucs_status_t uct_rc_varuna_md_standby_port(uct_rc_varuna_md_t *md,
                                           uint8_t primary_port,
                                           uint8_t *port_p);


/* rc_varuna_iface.c */
uct_rc_varuna_ep_t *uct_rc_varuna_iface_lookup_ep(uct_rc_varuna_iface_t *iface,
                                                  unsigned side,
                                                  uint32_t qp_num);
ucs_status_t uct_rc_varuna_iface_add_qp(uct_rc_varuna_iface_t *iface,
                                        uct_rc_varuna_ep_t *ep, unsigned side,
                                        uint32_t qp_num);
void uct_rc_varuna_iface_remove_qp(uct_rc_varuna_iface_t *iface,
                                   unsigned side, uint32_t qp_num);
void uct_rc_varuna_iface_qp_cleanup(uct_rc_iface_qp_cleanup_ctx_t *rc_ctx);
void uct_rc_varuna_iface_cleanup_standby_qps(uct_rc_varuna_iface_t *iface);


/* rc_varuna_log.c */
ucs_status_t uct_rc_varuna_log_alloc(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep);
void uct_rc_varuna_log_free(uct_rc_varuna_iface_t *iface,
                            uct_rc_varuna_ep_t *ep);
uint32_t uct_rc_varuna_log_rkey(uct_rc_varuna_ep_t *ep, unsigned side);
void uct_rc_varuna_log_cleanup(uct_rc_varuna_iface_t *iface);


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
void uct_rc_varuna_ep_handle_failure(uct_rc_varuna_ep_t *ep, unsigned lane,
                                     struct ibv_wc *wc, ucs_status_t status);
int uct_rc_varuna_ep_am_is_dup(uct_rc_varuna_ep_t *ep, uint32_t sn32);

#endif
