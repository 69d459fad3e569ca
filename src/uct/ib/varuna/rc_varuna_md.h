/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_MD_H
#define UCT_RC_VARUNA_MD_H

#include "rc_varuna_def.h"

#include <uct/ib/base/ib_md.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/type/spinlock.h>


/*
 * The memory domain: a pair of devices (or ports), memory registered on
 * both, the keys of both packed in one remote key, and what the devices'
 * async events said (port state, LAST_WQE_REACHED), for every interface of
 * the pair (rc_varuna_md.c).
 */


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


extern uct_component_t uct_rc_varuna_component;


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

#endif
