/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucp_failover.h"

#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_mm.h>
#include <ucp/core/ucp_mm.inl>
#include <ucp/core/ucp_proxy_ep.h>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_request.inl>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/core/ucp_worker.inl>
#include <ucp/wireup/wireup.h>
#include <ucp/wireup/wireup_ep.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/khash.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/stubs.h>
#include <ucs/time/time.h>
#include <ucs/type/spinlock.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


/*
 * UCP lane failover (DESIGN.md section 7).
 *
 * A lane's transport endpoint failed for good (for rc_varuna: both of its
 * paths are dead) while the UCP endpoint has another lane to the same peer
 * with the same transport: on the same memory domain (the other port of a
 * dual-port device: remote keys and registrations stay valid), or on
 * another one (another device pair: every remote key and memory handle the
 * failed lane's operations carry is translated on the way, see "Another
 * memory domain" below). Then:
 *
 *   hold     the failed lane's index now leads to a proxy (ucp_proxy_ep_t)
 *            whose endpoint holds everything: operations answer "no
 *            resource", pending requests queue here, in order. Every
 *            request keeps its lane index, so nothing in UCP's protocols
 *            changes. The failed transport endpoint is kept; the error
 *            handler returns UCS_INPROGRESS, so the transport keeps its
 *            operations in flight, uncompleted.
 *   query    the failed endpoint's TX token goes to the peer over the other
 *            lane (UCP_AM_ID_FAILOVER); the peer's interface fences its side
 *            of the connection and derives the RX token, which comes back.
 *   purge    the transport completes what executed and hands back, in
 *            posting order, what did not (uct_ep_outstanding_purge).
 *   replay   what was handed back is posted on the other lane, with its
 *            original completion; then the proxy forwards to the other
 *            lane's endpoint and the held requests go, in order; then new
 *            traffic.
 *
 * Nothing is sent twice: the peer answered after its side was fenced, and
 * the transport either completes an operation or hands it back, never both.
 * No answer within UCX_UCP_FAILOVER_TIMEOUT, no other lane, or any error:
 * the endpoint fails as it would without this (ucp_ep_set_failed). The
 * failed transport endpoint stays until the lanes are destroyed, so that
 * the peer's own query about the same connection finds it.
 */


/* ------------------------------------------------------------------------
 * Configuration
 * ------------------------------------------------------------------------ */

typedef struct {
    int    enable;
    int    spare_lane;
    double timeout;
    double rebuild_interval;
    char   *report;
} ucp_failover_config_t;

static ucs_config_field_t ucp_failover_config_table[] = {
  {"ENABLE", "y",
   "Move the traffic of a lane whose transport endpoint failed to another\n"
   "lane to the same peer with the same transport (on the same memory domain\n"
   "if there is one, else on another: remote keys and buffers translated),\n"
   "resending only what the transport says never executed (transports with\n"
   "UCT_IFACE_FLAG_EP_OUTSTANDING_PURGE), in any error handling mode.\n"
   "n: the endpoint fails, as without it.",
   ucs_offsetof(ucp_failover_config_t, enable), UCS_CONFIG_TYPE_BOOL},

  {"SPARE_LANE", "y",
   "When UCP selects a lane for remote memory access or atomics on such a\n"
   "transport, add a second lane of the same transport on another local and\n"
   "remote device, if there is one: somewhere to move the traffic when both\n"
   "paths of the lane fail, for endpoints that would otherwise have one lane\n"
   "(RMA-only programs, OpenSHMEM, MPI one-sided). It costs that lane's\n"
   "connection (for rc_varuna two QPs) per endpoint. n: no spare lane.",
   ucs_offsetof(ucp_failover_config_t, spare_lane), UCS_CONFIG_TYPE_BOOL},

  {"TIMEOUT", "2s",
   "How long a failover waits for the peer's answer; then the endpoint fails.",
   ucs_offsetof(ucp_failover_config_t, timeout), UCS_CONFIG_TYPE_TIME},

  {"REBUILD_INTERVAL", "1s",
   "After a lane's traffic moved to another lane, how often to try to connect\n"
   "the failed lane again on its own devices (a new transport endpoint on each\n"
   "side, proven by one message before it carries anything). The interval\n"
   "doubles after each try that fails, up to 32 times this value. When a try\n"
   "works, the lane takes its traffic back, and is there for the next\n"
   "failure of the other lane. 0: never (the next failure of the other lane\n"
   "ends the endpoint).",
   ucs_offsetof(ucp_failover_config_t, rebuild_interval), UCS_CONFIG_TYPE_TIME},

  {"REPORT", "",
   "Append one JSON line per lane failover to this file (empty: none).",
   ucs_offsetof(ucp_failover_config_t, report), UCS_CONFIG_TYPE_STRING},

  {NULL}
};

UCS_CONFIG_DECLARE_TABLE(ucp_failover_config_table, "UCP lane failover",
                         "UCP_FAILOVER_", ucp_failover_config_t)

/* UCX_UCP_FAILOVER_TIMEOUT's range: a failover holds the lane's traffic
 * that long at the most */
#define UCP_FAILOVER_TIMEOUT_MIN 1e-3
#define UCP_FAILOVER_TIMEOUT_MAX 3600.0
/* UCX_UCP_FAILOVER_REBUILD_INTERVAL's range, besides 0 (never) */
#define UCP_FAILOVER_REBUILD_MIN 1e-3
#define UCP_FAILOVER_REBUILD_MAX 3600.0
/* a try that fails doubles the interval, up to this many times the first */
#define UCP_FAILOVER_REBUILD_BACKOFF 32

/* 0 if the report file cannot be opened for appending (errno says why).
 * Tried when the process loads libucp, so that a wrong path is an error
 * then and not a warning at the first lane failover; again only when the
 * path changes (the configuration is read for every new lane too). */
static int ucp_failover_report_writable(const char *path)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char checked[PATH_MAX];
    int writable = 1;
    int fd;

    if (path[0] == '\0') {
        return 1;
    }
    pthread_mutex_lock(&lock);
    if (strcmp(path, checked) != 0) {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd < 0) {
            writable = 0;
        } else {
            close(fd);
            ucs_strncpy_zero(checked, path, sizeof(checked));
        }
    }
    pthread_mutex_unlock(&lock);
    return writable;
}

/* Read at each failure (rare): a process may change it between two.
 * Released with ucs_config_parser_release_opts(). A value that cannot be
 * parsed or is out of range, or a report file that cannot be written,
 * turns the lane failover off (the endpoint fails as without it) and says
 * so, once per process. */
static void ucp_failover_config(ucp_failover_config_t *config)
{
    static int said;

    if (ucs_config_parser_fill_opts(config, ucp_failover_config_table,
                                    UCS_DEFAULT_ENV_PREFIX, "UCP_FAILOVER_",
                                    0) != UCS_OK) {
        if (!said++) {
            ucs_error("UCP lane failover: a UCX_UCP_FAILOVER_* value cannot "
                      "be parsed (above): the lane failover is off");
        }
        ucs_config_parser_set_default_values(config,
                                             ucp_failover_config_table);
        config->enable = 0;
    } else if ((config->timeout < UCP_FAILOVER_TIMEOUT_MIN) ||
               (config->timeout > UCP_FAILOVER_TIMEOUT_MAX)) {
        if (!said++) {
            ucs_error("UCX_UCP_FAILOVER_TIMEOUT=%gs is out of range (%gs to "
                      "%gs): the lane failover is off", config->timeout,
                      UCP_FAILOVER_TIMEOUT_MIN, UCP_FAILOVER_TIMEOUT_MAX);
        }
        config->enable = 0;
    } else if ((config->rebuild_interval != 0) &&
               ((config->rebuild_interval < UCP_FAILOVER_REBUILD_MIN) ||
                (config->rebuild_interval > UCP_FAILOVER_REBUILD_MAX))) {
        if (!said++) {
            ucs_error("UCX_UCP_FAILOVER_REBUILD_INTERVAL=%gs is out of range "
                      "(0, or %gs to %gs): the lane failover is off",
                      config->rebuild_interval, UCP_FAILOVER_REBUILD_MIN,
                      UCP_FAILOVER_REBUILD_MAX);
        }
        config->enable = 0;
    } else if (!ucp_failover_report_writable(config->report)) {
        if (!said++) {
            ucs_error("UCX_UCP_FAILOVER_REPORT=%s cannot be written (%s): "
                      "the lane failover is off", config->report,
                      strerror(errno));
        }
        config->enable = 0;
    }
}

UCS_STATIC_INIT {
    ucp_failover_config_t config;

    UCS_CONFIG_ADD_TABLE(ucp_failover_config_table, &ucs_config_global_list);
    /* read once now, too: UCX counts a variable as used when it is read,
     * and warns about unused ones when the first worker is created, long
     * before any failure reads them */
    ucp_failover_config(&config);
    ucs_config_parser_release_opts(&config, ucp_failover_config_table);
}

UCS_STATIC_CLEANUP {
    ucs_list_del(&ucp_failover_config_table_config_entry.list);
}

int ucp_failover_spare_lane(ucp_worker_h worker, ucp_rsc_index_t rsc_index)
{
    ucp_failover_config_t config;
    int spare;

    ucp_failover_config(&config);
    spare = config.enable && config.spare_lane &&
            (ucp_worker_iface(worker, rsc_index)->attr.cap.flags &
             UCT_IFACE_FLAG_EP_OUTSTANDING_PURGE);
    ucs_config_parser_release_opts(&config, ucp_failover_config_table);
    return spare;
}

static double ucp_failover_timeout(void)
{
    ucp_failover_config_t config;
    double timeout;

    ucp_failover_config(&config);
    /* one out of range turned the failover off; the peer's queries are
     * still answered, within a time that makes sense */
    timeout = ucs_min(ucs_max(config.timeout, UCP_FAILOVER_TIMEOUT_MIN),
                      UCP_FAILOVER_TIMEOUT_MAX);
    ucs_config_parser_release_opts(&config, ucp_failover_config_table);
    return timeout;
}


/* ------------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------------ */

typedef enum {
    UCP_FAILOVER_QUERY,      /* waiting for the peer's RX token */
    UCP_FAILOVER_REPLAY,     /* posting what the transport handed back */
    UCP_FAILOVER_FORWARD,    /* the lane goes to the other lane's endpoint;
                                its own connection is tried again (below) */
    UCP_FAILOVER_RESTORE     /* a new connection of the lane is proven: its
                                traffic is held until the peer has taken
                                everything it sent on the other lane */
} ucp_failover_state_t;

/* Connecting the failed lane again, while FORWARD ("Rebuilding" below) */
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
        ucs_status_t        probe_status;
        uct_ep_h            uct_ep;       /* the new endpoint, on the failed
                                             lane's resource */
        uct_ep_h            stale_ep;     /* one that failed while restoring:
                                             the peer may have restored onto
                                             its half, and its failover of
                                             that must find the connection
                                             here (until the failover ends) */
        uct_completion_t    probe_comp;
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

/* Failovers under way or done, of every worker of the process (there are
 * few: one per failed lane) */
static UCS_LIST_HEAD(ucp_failover_list);
static ucs_spinlock_t ucp_failover_lock;  /* the list */
static uint32_t ucp_failover_seq;

UCS_STATIC_INIT {
    ucs_spinlock_init(&ucp_failover_lock, 0);
}

UCS_STATIC_CLEANUP {
    ucs_spinlock_destroy(&ucp_failover_lock);
}

/* The remote keys of endpoints that may move a lane to another memory
 * domain: the unpacked key -> its endpoint. Their own lock: nothing holds
 * it and the list's together. */
KHASH_MAP_INIT_INT64(ucp_failover_rkeys, ucp_ep_h);

static khash_t(ucp_failover_rkeys) ucp_failover_rkeys;
static ucs_spinlock_t ucp_failover_rkeys_lock;

UCS_STATIC_INIT {
    ucs_spinlock_init(&ucp_failover_rkeys_lock, 0);
    kh_init_inplace(ucp_failover_rkeys, &ucp_failover_rkeys);
}

UCS_STATIC_CLEANUP {
    kh_destroy_inplace(ucp_failover_rkeys, &ucp_failover_rkeys);
    ucs_spinlock_destroy(&ucp_failover_rkeys_lock);
}


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
    uint8_t                 token_length;
    uint8_t                 reserved;
    uint32_t                seq;
    uint64_t                dst_ep_id;    /* the receiver's endpoint */
    uint64_t                src_ep_id;    /* the sender's, to answer to */
} UCS_S_PACKED ucp_failover_msg_t;

typedef struct {
    ucp_failover_msg_t      hdr;
    uint8_t                 token[UCT_EP_TOKEN_MAX_LENGTH];
} UCS_S_PACKED ucp_failover_msg_buf_t;

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


/* for the report */
static const char *ucp_failover_op_names[] = {
    [UCT_EP_OP_AM_SHORT]     = "am_short",
    [UCT_EP_OP_AM_BCOPY]     = "am_bcopy",
    [UCT_EP_OP_AM_ZCOPY]     = "am_zcopy",
    [UCT_EP_OP_PUT_SHORT]    = "put_short",
    [UCT_EP_OP_PUT_BCOPY]    = "put_bcopy",
    [UCT_EP_OP_PUT_ZCOPY]    = "put_zcopy",
    [UCT_EP_OP_GET_SHORT]    = "get_short",
    [UCT_EP_OP_GET_BCOPY]    = "get_bcopy",
    [UCT_EP_OP_GET_ZCOPY]    = "get_zcopy",
    [UCT_EP_OP_EAGER_SHORT]  = "eager_short",
    [UCT_EP_OP_EAGER_BCOPY]  = "eager_bcopy",
    [UCT_EP_OP_EAGER_ZCOPY]  = "eager_zcopy",
    [UCT_EP_OP_RNDV_ZCOPY]   = "rndv_zcopy",
    [UCT_EP_OP_ATOMIC_POST]  = "atomic_post",
    [UCT_EP_OP_ATOMIC_FETCH] = "atomic_fetch",
    [UCT_EP_OP_FLUSH]        = "flush"
};

static const char *ucp_failover_state_names[] = {
    [UCP_FAILOVER_QUERY]   = "query",
    [UCP_FAILOVER_REPLAY]  = "replay",
    [UCP_FAILOVER_FORWARD] = "forward",
    [UCP_FAILOVER_RESTORE] = "restore"
};

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

static ucp_failover_t *ucp_failover_of_hold(uct_ep_h hold_ep)
{
    return ucs_container_of(hold_ep, ucp_failover_t, hold_ep);
}


/* ------------------------------------------------------------------------
 * The hold endpoint: what the failed lane's proxy leads to until the replay
 * is done
 * ------------------------------------------------------------------------ */

static ssize_t ucp_failover_hold_bcopy(uct_ep_h ep)
{
    return UCS_ERR_NO_RESOURCE;
}

static ucs_status_t ucp_failover_hold_pending_add(uct_ep_h hold_ep,
                                                  uct_pending_req_t *req,
                                                  unsigned flags)
{
    ucp_failover_t *fo = ucp_failover_of_hold(hold_ep);

    ucs_queue_push(&fo->held, (ucs_queue_elem_t*)req->priv);
    ucp_worker_flush_ops_count_inc(fo->ep->worker);
    ++fo->held_count;
    return UCS_OK;
}

static void ucp_failover_hold_pending_purge(uct_ep_h hold_ep,
                                            uct_pending_purge_callback_t cb,
                                            void *arg)
{
    ucp_failover_t *fo = ucp_failover_of_hold(hold_ep);
    uct_pending_req_t *req;

    ucs_queue_for_each_extract(req, &fo->held, priv, 1) {
        ucp_worker_flush_ops_count_dec(fo->ep->worker);
        cb(req, arg);
    }
}

static void ucp_failover_replay_purge(ucp_failover_t *fo, ucs_status_t status);

static ucs_status_t ucp_failover_hold_flush(uct_ep_h hold_ep, unsigned flags,
                                            uct_completion_t *comp)
{
    ucp_failover_t *fo = ucp_failover_of_hold(hold_ep);

    if (!(flags & UCT_FLUSH_FLAG_CANCEL)) {
        /* waits behind what is held */
        return UCS_ERR_NO_RESOURCE;
    }

    /* the lane is discarded (ucp_failover_ep_cleanup gave up): what the
     * failed endpoint still holds, and what it handed back and was not
     * sent again, completes with the failure's error */
    ucp_failover_replay_purge(fo, fo->status);
    return uct_ep_flush(fo->failed_ep, UCT_FLUSH_FLAG_CANCEL, NULL);
}

static void ucp_failover_rebuild_drop(ucp_failover_t *fo);
static void ucp_failover_rebuild_probe(ucp_failover_t *fo, uint32_t peer_seq,
                                       uint64_t peer_ep_id);

/* fo is out of the list; its endpoints but those of the rebuild are gone */
static void ucp_failover_free(ucp_failover_t *fo)
{
    ucp_failover_rebuild_drop(fo);
    if (fo->rebuild.stale_ep != NULL) {
        uct_ep_destroy(fo->rebuild.stale_ep);
    }
    ucs_free(fo->report);
    ucs_free(fo);
}

static void ucp_failover_unlist(ucp_failover_t *fo)
{
    ucs_spin_lock(&ucp_failover_lock);
    if (fo->listed) {
        ucs_list_del(&fo->list);
        fo->listed = 0;
    }
    ucs_spin_unlock(&ucp_failover_lock);
    uct_worker_progress_unregister_safe(fo->ep->worker->uct, &fo->prog_id);
}

/* The proxy owns the hold endpoint until the replay is done, and again
 * while a lane connected again is restored: destroying it then (the
 * lane's destruction, or its discard) ends the failover */
static void ucp_failover_hold_destroy(uct_ep_h hold_ep)
{
    ucp_failover_t *fo = ucp_failover_of_hold(hold_ep);

    ucs_debug("ep %p: failover of lane %u ends", fo->ep, fo->lane);
    ucp_failover_unlist(fo);
    ucp_failover_replay_purge(fo, fo->status);
    ucs_assert(ucs_queue_is_empty(&fo->held));
    uct_ep_destroy(fo->failed_ep);
    ucp_failover_free(fo);
}

/* Every operation finds no resources; a request waits here, in order */
static const uct_iface_ops_t ucp_failover_hold_ops = {
    .ep_put_short        = (uct_ep_put_short_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_put_bcopy        = (uct_ep_put_bcopy_func_t)ucp_failover_hold_bcopy,
    .ep_put_zcopy        = (uct_ep_put_zcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_get_short        = (uct_ep_get_short_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_get_bcopy        = (uct_ep_get_bcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_get_zcopy        = (uct_ep_get_zcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_am_short         = (uct_ep_am_short_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_am_short_iov     = (uct_ep_am_short_iov_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_am_bcopy         = (uct_ep_am_bcopy_func_t)ucp_failover_hold_bcopy,
    .ep_am_zcopy         = (uct_ep_am_zcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic_cswap64   = (uct_ep_atomic_cswap64_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic_cswap32   = (uct_ep_atomic_cswap32_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic64_post    = (uct_ep_atomic64_post_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic32_post    = (uct_ep_atomic32_post_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic64_fetch   = (uct_ep_atomic64_fetch_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_atomic32_fetch   = (uct_ep_atomic32_fetch_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_tag_eager_short  = (uct_ep_tag_eager_short_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_tag_eager_bcopy  = (uct_ep_tag_eager_bcopy_func_t)
                           ucp_failover_hold_bcopy,
    .ep_tag_eager_zcopy  = (uct_ep_tag_eager_zcopy_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_tag_rndv_zcopy   = (uct_ep_tag_rndv_zcopy_func_t)
                           ucs_empty_function_return_ptr_no_resource,
    .ep_tag_rndv_cancel  = (uct_ep_tag_rndv_cancel_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_rndv_request = (uct_ep_tag_rndv_request_func_t)
                           ucs_empty_function_return_no_resource,
    .ep_pending_add      = ucp_failover_hold_pending_add,
    .ep_pending_purge    = ucp_failover_hold_pending_purge,
    .ep_flush            = ucp_failover_hold_flush,
    .ep_fence            = (uct_ep_fence_func_t)
                           ucs_empty_function_return_success,
    .ep_check            = (uct_ep_check_func_t)
                           ucs_empty_function_return_success,
    .ep_get_address      = (uct_ep_get_address_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_connect_to_ep    = (uct_ep_connect_to_ep_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_destroy          = ucp_failover_hold_destroy
};

static int ucp_failover_is_holding(uct_ep_h uct_ep)
{
    ucp_proxy_ep_t *proxy;

    if (!ucp_proxy_ep_test(uct_ep)) {
        return 0;
    }
    proxy = ucs_derived_of(uct_ep, ucp_proxy_ep_t);
    return (proxy->uct_ep != NULL) &&
           (proxy->uct_ep->iface->ops.ep_destroy == ucp_failover_hold_destroy);
}


/* ------------------------------------------------------------------------
 * Another memory domain: the translating endpoint
 *
 * The failed lane's operations (those handed back, those held, and every
 * later one, which UCP keeps sending to the failed lane's index) carry the
 * remote keys of the peer's memory domain of that lane and the local
 * memory handles of ours. On a lane of another memory domain both are
 * translated:
 *   remote key  UCP unpacks a remote key for every memory domain the peer
 *               packed it for, so the key for the other lane is in the same
 *               ucp_rkey_t; the registry below finds it from the failed
 *               lane's key. A key the peer did not pack for the other
 *               memory domain cannot be translated: the operation fails.
 *   memory      the buffer is registered on the other memory domain (UCP's
 *               registration cache), held until the operation completes.
 * Limits (short, bcopy, zcopy sizes, iov entries) are the failed lane's,
 * which UCP keeps using: the other lane's must be at least as large
 * (ucp_failover_substitute).
 * ------------------------------------------------------------------------ */

/* The lane's transport can tell which operations never executed */
static int ucp_failover_lane_can_purge(ucp_ep_h ep, ucp_lane_index_t lane)
{
    ucp_rsc_index_t rsc_index = ucp_ep_get_rsc_index(ep, lane);

    return (rsc_index != UCP_NULL_RESOURCE) &&
           (ucp_worker_iface(ep->worker, rsc_index)->attr.cap.flags &
            UCT_IFACE_FLAG_EP_OUTSTANDING_PURGE);
}

/* The endpoint has lanes of a transport that can purge on two memory
 * domains: a lane may move from one to the other */
static int ucp_failover_ep_may_change_md(ucp_ep_h ep)
{
    ucp_md_index_t first = UCP_NULL_RESOURCE;
    ucp_lane_index_t lane;
    ucp_md_index_t md_index;

    for (lane = 0; lane < ucp_ep_num_lanes(ep); ++lane) {
        if (!ucp_failover_lane_can_purge(ep, lane)) {
            continue;
        }
        md_index = ucp_ep_md_index(ep, lane);
        if (first == UCP_NULL_RESOURCE) {
            first = md_index;
        } else if (md_index != first) {
            return 1;
        }
    }
    return 0;
}

void ucp_failover_rkey_unpacked(ucp_ep_h ep, ucp_rkey_h rkey)
{
    khiter_t iter;
    int ret;

    if ((ucs_popcount(rkey->md_map) < 2) ||
        !ucp_failover_ep_may_change_md(ep)) {
        return;
    }

    ucs_spin_lock(&ucp_failover_rkeys_lock);
    iter = kh_put(ucp_failover_rkeys, &ucp_failover_rkeys, (uintptr_t)rkey,
                  &ret);
    if (ret >= 0) {
        kh_value(&ucp_failover_rkeys, iter) = ep;
        rkey->flags                        |= UCP_RKEY_DESC_FLAG_FAILOVER;
    }
    ucs_spin_unlock(&ucp_failover_rkeys_lock);
}

void ucp_failover_rkey_destroyed(ucp_rkey_h rkey)
{
    khiter_t iter;

    ucs_spin_lock(&ucp_failover_rkeys_lock);
    iter = kh_get(ucp_failover_rkeys, &ucp_failover_rkeys, (uintptr_t)rkey);
    if (iter != kh_end(&ucp_failover_rkeys)) {
        kh_del(ucp_failover_rkeys, &ucp_failover_rkeys, iter);
    }
    ucs_spin_unlock(&ucp_failover_rkeys_lock);
}

/* The key of remote key rkey for the peer's memory domain md; 0 if none */
static int ucp_failover_rkey_of(ucp_rkey_h rkey, ucp_md_index_t md,
                                uct_rkey_t *value_p)
{
    if (!(rkey->md_map & UCS_BIT(md))) {
        return 0;
    }
    *value_p = rkey->tl_rkey[ucs_bitmap2idx(rkey->md_map, md)].rkey.rkey;
    return 1;
}

/* Called with ucp_failover_rkeys_lock held: the entry at iter is a key of
 * fo's endpoint whose key for the failed lane is from */
static int ucp_failover_rkey_matches(ucp_failover_t *fo, khiter_t iter,
                                     uct_rkey_t from)
{
    ucp_rkey_h rkey = (ucp_rkey_h)(uintptr_t)kh_key(&ucp_failover_rkeys,
                                                    iter);
    uct_rkey_t value;

    return (kh_value(&ucp_failover_rkeys, iter) == fo->ep) &&
           ucp_failover_rkey_of(rkey, fo->dst_md_from, &value) &&
           (value == from);
}

/* The peer's key for the other lane's memory domain, of the memory the
 * failed lane's key `from` opens */
static ucs_status_t ucp_failover_xlate_rkey(ucp_failover_t *fo,
                                            uct_rkey_t from, uct_rkey_t *to_p)
{
    ucs_status_t status = UCS_ERR_NO_ELEM;
    ucp_rkey_h rkey;
    khiter_t iter;

    ucs_spin_lock(&ucp_failover_rkeys_lock);
    /* the same key as last time, mostly, if that is still registered */
    if ((fo->last_rkey.rkey != NULL) && (fo->last_rkey.from == from)) {
        iter = kh_get(ucp_failover_rkeys, &ucp_failover_rkeys,
                      (uintptr_t)fo->last_rkey.rkey);
        if ((iter != kh_end(&ucp_failover_rkeys)) &&
            ucp_failover_rkey_matches(fo, iter, from)) {
            *to_p  = fo->last_rkey.to;
            status = UCS_OK;
            goto out;
        }
    }

    for (iter = kh_begin(&ucp_failover_rkeys);
         iter != kh_end(&ucp_failover_rkeys); ++iter) {
        if (!kh_exist(&ucp_failover_rkeys, iter) ||
            !ucp_failover_rkey_matches(fo, iter, from)) {
            continue;
        }
        rkey = (ucp_rkey_h)(uintptr_t)kh_key(&ucp_failover_rkeys, iter);
        if (!ucp_failover_rkey_of(rkey, fo->dst_md_to, to_p)) {
            /* this memory was not packed for the other memory domain */
            continue;
        }
        fo->last_rkey.rkey = rkey;
        fo->last_rkey.from = from;
        fo->last_rkey.to   = *to_p;
        status = UCS_OK;
        break;
    }

out:
    ucs_spin_unlock(&ucp_failover_rkeys_lock);
    if (status == UCS_OK) {
        ++fo->keys_translated;
    } else {
        ucs_error("ep %p: lane %u moved to another memory domain, but the "
                  "remote key 0x%" PRIx64 " has no key for it: the operation "
                  "fails", fo->ep, fo->lane, (uint64_t)from);
    }
    return status;
}

/* A zero-copy operation's buffers, registered on the other memory domain
 * until it completes; then the original completion */
typedef struct {
    uct_completion_t        super;
    uct_completion_t        *orig;
    ucp_context_h           context;
    size_t                  num_memh;
    ucp_mem_h               *memh;
    uct_iov_t               iov[];
} ucp_failover_zcopy_t;

static void ucp_failover_zcopy_release(ucp_failover_zcopy_t *zc)
{
    size_t i;

    for (i = 0; i < zc->num_memh; ++i) {
        ucp_memh_put(zc->context, zc->memh[i], 0);
    }
    ucs_free(zc);
}

static void ucp_failover_zcopy_completed(uct_completion_t *self)
{
    ucp_failover_zcopy_t *zc = ucs_derived_of(self, ucp_failover_zcopy_t);
    uct_completion_t *orig   = zc->orig;
    ucs_status_t status      = self->status;

    ucp_failover_zcopy_release(zc);
    if (orig != NULL) {
        ucp_invoke_uct_completion(orig, status);
    }
}

static ucs_status_t
ucp_failover_zcopy_start(ucp_failover_t *fo, const uct_iov_t *iov,
                         size_t iovcnt, uct_completion_t *comp,
                         ucp_failover_zcopy_t **zc_p)
{
    ucp_context_h context = fo->ep->worker->context;
    ucp_failover_zcopy_t *zc;
    ucs_status_t status;
    ucp_mem_h memh;
    size_t i, span;

    zc = ucs_malloc(sizeof(*zc) + iovcnt * (sizeof(uct_iov_t) +
                                            sizeof(ucp_mem_h)),
                    "ucp_failover_zcopy");
    if (zc == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    zc->super.func   = ucp_failover_zcopy_completed;
    zc->super.count  = 1;
    zc->super.status = UCS_OK;
    zc->orig         = comp;
    zc->context      = context;
    zc->num_memh     = 0;
    zc->memh         = (ucp_mem_h*)&zc->iov[iovcnt];

    for (i = 0; i < iovcnt; ++i) {
        zc->iov[i] = iov[i];
        if ((iov[i].memh == UCT_MEM_HANDLE_NULL) || (iov[i].length == 0)) {
            continue;
        }
        span   = (ucs_max(iov[i].count, 1) - 1) * iov[i].stride +
                 iov[i].length;
        status = ucp_memh_get(context, iov[i].buffer, span,
                              UCS_MEMORY_TYPE_HOST, UCS_BIT(fo->md_to),
                              UCT_MD_MEM_ACCESS_RMA, &memh);
        if (status != UCS_OK) {
            ucs_error("ep %p: cannot register %p..+%zu on the other lane's "
                      "memory domain: %s", fo->ep, iov[i].buffer, span,
                      ucs_status_string(status));
            zc->orig = NULL;
            ucp_failover_zcopy_release(zc);
            return status;
        }
        zc->memh[zc->num_memh++] = memh;
        zc->iov[i].memh          = memh->uct[fo->md_to];
        ++fo->buffers_registered;
    }

    *zc_p = zc;
    return UCS_OK;
}

/* The operation was posted, or not: unless it is in progress, the caller
 * knows its outcome and the registrations go */
static ucs_status_t ucp_failover_zcopy_posted(ucp_failover_zcopy_t *zc,
                                              ucs_status_t status)
{
    if (status != UCS_INPROGRESS) {
        zc->orig = NULL;
        ucp_failover_zcopy_release(zc);
    }
    return status;
}

static ucp_failover_t *ucp_failover_of_xlate(uct_ep_h xlate_ep)
{
    return ucs_container_of(xlate_ep, ucp_failover_t, xlate_ep);
}

static uct_ep_h ucp_failover_sub_ep(ucp_failover_t *fo)
{
    return fo->ep->uct_eps[fo->sub_lane];
}

/* The operations below: translate, then post on the other lane */
#define UCP_FAILOVER_XLATE_RKEY(_fo, _rkey, _to) \
    { \
        ucs_status_t _status = ucp_failover_xlate_rkey(_fo, _rkey, &(_to)); \
        if (_status != UCS_OK) { \
            return _status; \
        } \
    }

static ucs_status_t ucp_failover_xlate_put_short(uct_ep_h ep,
                                                 const void *buffer,
                                                 unsigned length,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    uct_rkey_t to;

    UCP_FAILOVER_XLATE_RKEY(fo, rkey, to);
    return uct_ep_put_short(ucp_failover_sub_ep(fo), buffer, length,
                            remote_addr, to);
}

static ssize_t ucp_failover_xlate_put_bcopy(uct_ep_h ep,
                                            uct_pack_callback_t pack_cb,
                                            void *arg, uint64_t remote_addr,
                                            uct_rkey_t rkey)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    uct_rkey_t to;

    UCP_FAILOVER_XLATE_RKEY(fo, rkey, to);
    return uct_ep_put_bcopy(ucp_failover_sub_ep(fo), pack_cb, arg,
                            remote_addr, to);
}

/* A zero-copy put or get: its key and its buffers */
static ucs_status_t
ucp_failover_xlate_rma_zcopy(uct_ep_h ep, uct_ep_put_zcopy_func_t post,
                             const uct_iov_t *iov, size_t iovcnt,
                             uint64_t remote_addr, uct_rkey_t rkey,
                             uct_completion_t *comp)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    ucp_failover_zcopy_t *zc;
    ucs_status_t status;
    uct_rkey_t to;

    UCP_FAILOVER_XLATE_RKEY(fo, rkey, to);
    status = ucp_failover_zcopy_start(fo, iov, iovcnt, comp, &zc);
    if (status != UCS_OK) {
        return status;
    }
    return ucp_failover_zcopy_posted(zc,
            post(ucp_failover_sub_ep(fo), zc->iov, iovcnt, remote_addr, to,
                 &zc->super));
}

static ucs_status_t ucp_failover_xlate_put_zcopy(uct_ep_h ep,
                                                 const uct_iov_t *iov,
                                                 size_t iovcnt,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey,
                                                 uct_completion_t *comp)
{
    return ucp_failover_xlate_rma_zcopy(
            ep, ucp_failover_sub_ep(ucp_failover_of_xlate(ep))->iface->
                    ops.ep_put_zcopy,
            iov, iovcnt, remote_addr, rkey, comp);
}

static ucs_status_t ucp_failover_xlate_get_bcopy(uct_ep_h ep,
                                                 uct_unpack_callback_t
                                                 unpack_cb,
                                                 void *arg, size_t length,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey,
                                                 uct_completion_t *comp)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    uct_rkey_t to;

    UCP_FAILOVER_XLATE_RKEY(fo, rkey, to);
    return uct_ep_get_bcopy(ucp_failover_sub_ep(fo), unpack_cb, arg, length,
                            remote_addr, to, comp);
}

static ucs_status_t ucp_failover_xlate_get_zcopy(uct_ep_h ep,
                                                 const uct_iov_t *iov,
                                                 size_t iovcnt,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey,
                                                 uct_completion_t *comp)
{
    return ucp_failover_xlate_rma_zcopy(
            ep, ucp_failover_sub_ep(ucp_failover_of_xlate(ep))->iface->
                    ops.ep_get_zcopy,
            iov, iovcnt, remote_addr, rkey, comp);
}

static ucs_status_t ucp_failover_xlate_am_short(uct_ep_h ep, uint8_t id,
                                                uint64_t header,
                                                const void *payload,
                                                unsigned length)
{
    return uct_ep_am_short(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)),
                           id, header, payload, length);
}

static ucs_status_t ucp_failover_xlate_am_short_iov(uct_ep_h ep, uint8_t id,
                                                    const uct_iov_t *iov,
                                                    size_t iovcnt)
{
    /* short: the data is copied, no memory handle is used */
    return uct_ep_am_short_iov(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)),
                               id, iov, iovcnt);
}

static ssize_t ucp_failover_xlate_am_bcopy(uct_ep_h ep, uint8_t id,
                                           uct_pack_callback_t pack_cb,
                                           void *arg, unsigned flags)
{
    return uct_ep_am_bcopy(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)),
                           id, pack_cb, arg, flags);
}

static ucs_status_t ucp_failover_xlate_am_zcopy(uct_ep_h ep, uint8_t id,
                                                const void *header,
                                                unsigned header_length,
                                                const uct_iov_t *iov,
                                                size_t iovcnt, unsigned flags,
                                                uct_completion_t *comp)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    ucp_failover_zcopy_t *zc;
    ucs_status_t status;

    status = ucp_failover_zcopy_start(fo, iov, iovcnt, comp, &zc);
    if (status != UCS_OK) {
        return status;
    }
    return ucp_failover_zcopy_posted(zc,
            uct_ep_am_zcopy(ucp_failover_sub_ep(fo), id, header,
                            header_length, zc->iov, iovcnt, flags,
                            &zc->super));
}

/* The atomics of one operand size: their key */
#define UCP_FAILOVER_XLATE_ATOMICS(_bits) \
    static ucs_status_t ucp_failover_xlate_atomic_cswap##_bits( \
            uct_ep_h ep, uint##_bits##_t compare, uint##_bits##_t swap, \
            uint64_t remote_addr, uct_rkey_t rkey, uint##_bits##_t *result, \
            uct_completion_t *comp) \
    { \
        ucp_failover_t *fo = ucp_failover_of_xlate(ep); \
        uct_rkey_t to; \
        \
        UCP_FAILOVER_XLATE_RKEY(fo, rkey, to); \
        return uct_ep_atomic_cswap##_bits(ucp_failover_sub_ep(fo), compare, \
                                          swap, remote_addr, to, result, \
                                          comp); \
    } \
    \
    static ucs_status_t ucp_failover_xlate_atomic##_bits##_post( \
            uct_ep_h ep, uct_atomic_op_t opcode, uint##_bits##_t value, \
            uint64_t remote_addr, uct_rkey_t rkey) \
    { \
        ucp_failover_t *fo = ucp_failover_of_xlate(ep); \
        uct_rkey_t to; \
        \
        UCP_FAILOVER_XLATE_RKEY(fo, rkey, to); \
        return uct_ep_atomic##_bits##_post(ucp_failover_sub_ep(fo), opcode, \
                                           value, remote_addr, to); \
    } \
    \
    static ucs_status_t ucp_failover_xlate_atomic##_bits##_fetch( \
            uct_ep_h ep, uct_atomic_op_t opcode, uint##_bits##_t value, \
            uint##_bits##_t *result, uint64_t remote_addr, uct_rkey_t rkey, \
            uct_completion_t *comp) \
    { \
        ucp_failover_t *fo = ucp_failover_of_xlate(ep); \
        uct_rkey_t to; \
        \
        UCP_FAILOVER_XLATE_RKEY(fo, rkey, to); \
        return uct_ep_atomic##_bits##_fetch(ucp_failover_sub_ep(fo), opcode, \
                                            value, result, remote_addr, to, \
                                            comp); \
    }

UCP_FAILOVER_XLATE_ATOMICS(32)
UCP_FAILOVER_XLATE_ATOMICS(64)

static ucs_status_t ucp_failover_xlate_pending_add(uct_ep_h ep,
                                                   uct_pending_req_t *req,
                                                   unsigned flags)
{
    return uct_ep_pending_add(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)),
                              req, flags);
}

static void ucp_failover_xlate_pending_purge(uct_ep_h ep,
                                             uct_pending_purge_callback_t cb,
                                             void *arg)
{
    uct_ep_pending_purge(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)), cb,
                         arg);
}

static ucs_status_t ucp_failover_xlate_flush(uct_ep_h ep, unsigned flags,
                                             uct_completion_t *comp)
{
    return uct_ep_flush(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)), flags,
                        comp);
}

static ucs_status_t ucp_failover_xlate_fence(uct_ep_h ep, unsigned flags)
{
    return uct_ep_fence(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)), flags);
}

static ucs_status_t ucp_failover_xlate_check(uct_ep_h ep, unsigned flags,
                                             uct_completion_t *comp)
{
    return uct_ep_check(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)), flags,
                        comp);
}

/* The proxy does not own the translating endpoint: the failover ends with
 * the lane (ucp_failover_ep_cleanup) */
static const uct_iface_ops_t ucp_failover_xlate_ops = {
    .ep_put_short        = ucp_failover_xlate_put_short,
    .ep_put_bcopy        = ucp_failover_xlate_put_bcopy,
    .ep_put_zcopy        = ucp_failover_xlate_put_zcopy,
    .ep_get_short        = (uct_ep_get_short_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_get_bcopy        = ucp_failover_xlate_get_bcopy,
    .ep_get_zcopy        = ucp_failover_xlate_get_zcopy,
    .ep_am_short         = ucp_failover_xlate_am_short,
    .ep_am_short_iov     = ucp_failover_xlate_am_short_iov,
    .ep_am_bcopy         = ucp_failover_xlate_am_bcopy,
    .ep_am_zcopy         = ucp_failover_xlate_am_zcopy,
    .ep_atomic_cswap64   = ucp_failover_xlate_atomic_cswap64,
    .ep_atomic_cswap32   = ucp_failover_xlate_atomic_cswap32,
    .ep_atomic64_post    = ucp_failover_xlate_atomic64_post,
    .ep_atomic32_post    = ucp_failover_xlate_atomic32_post,
    .ep_atomic64_fetch   = ucp_failover_xlate_atomic64_fetch,
    .ep_atomic32_fetch   = ucp_failover_xlate_atomic32_fetch,
    .ep_tag_eager_short  = (uct_ep_tag_eager_short_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_eager_bcopy  = (uct_ep_tag_eager_bcopy_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_eager_zcopy  = (uct_ep_tag_eager_zcopy_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_rndv_zcopy   = (uct_ep_tag_rndv_zcopy_func_t)
                           ucs_empty_function_return_ptr_no_resource,
    .ep_tag_rndv_cancel  = (uct_ep_tag_rndv_cancel_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_rndv_request = (uct_ep_tag_rndv_request_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_pending_add      = ucp_failover_xlate_pending_add,
    .ep_pending_purge    = ucp_failover_xlate_pending_purge,
    .ep_flush            = ucp_failover_xlate_flush,
    .ep_fence            = ucp_failover_xlate_fence,
    .ep_check            = ucp_failover_xlate_check,
    .ep_get_address      = (uct_ep_get_address_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_connect_to_ep    = (uct_ep_connect_to_ep_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_destroy          = (uct_ep_destroy_func_t)ucs_empty_function
};

/* Where the lane's operations go once the replay starts */
static uct_ep_h ucp_failover_target_ep(ucp_failover_t *fo)
{
    return fo->other_md ? &fo->xlate_ep : ucp_failover_sub_ep(fo);
}

/* ------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------ */

/* A header and the token_length bytes after it */
static size_t ucp_failover_msg_pack(void *dest, void *arg)
{
    const ucp_failover_msg_t *msg = arg;
    size_t length = sizeof(*msg) + msg->token_length;

    memcpy(dest, msg, length);
    return length;
}

static ucs_status_t ucp_failover_msg_post(uct_ep_h uct_ep,
                                          const ucp_failover_msg_t *msg)
{
    ssize_t packed;

    packed = uct_ep_am_bcopy(uct_ep, UCP_AM_ID_FAILOVER,
                             ucp_failover_msg_pack, (void*)msg, 0);
    return (packed < 0) ? (ucs_status_t)packed : UCS_OK;
}

/* A lane of the endpoint that can carry a message now: not the failed one,
 * not one that holds its traffic itself */
static ucp_lane_index_t ucp_failover_msg_lane(ucp_ep_h ep,
                                              ucp_lane_index_t avoid)
{
    ucp_lane_index_t lane;
    uct_ep_h uct_ep;

    for (lane = 0; lane < ucp_ep_num_lanes(ep); ++lane) {
        uct_ep = ep->uct_eps[lane];
        if ((lane == avoid) || (uct_ep == NULL) ||
            (ucp_ep_get_rsc_index(ep, lane) == UCP_NULL_RESOURCE) ||
            ucp_is_uct_ep_failed(uct_ep) || ucp_wireup_ep_test(uct_ep) ||
            ucp_failover_is_holding(uct_ep)) {
            continue;
        }
        return lane;
    }
    return UCP_NULL_LANE;
}

static ucs_status_t ucp_failover_msg_send(ucp_ep_h ep, ucp_lane_index_t lane,
                                          const ucp_failover_msg_t *msg)
{
    return ucp_failover_msg_post(ep->uct_eps[lane], msg);
}

/* An answer that found no send resources: sent again from the progress */
typedef struct {
    ucp_worker_h            worker;
    uint64_t                ep_id;
    ucp_lane_index_t        avoid;
    ucs_time_t              deadline;
    uct_worker_cb_id_t      prog_id;
    ucp_failover_msg_buf_t  msg;
} ucp_failover_outbox_t;

static unsigned ucp_failover_outbox_progress(void *arg)
{
    ucp_failover_outbox_t *box = arg;
    ucp_worker_h worker        = box->worker;
    ucs_status_t status        = UCS_ERR_NO_ELEM;
    ucp_lane_index_t lane;
    ucp_ep_h ep;

    UCS_ASYNC_BLOCK(&worker->async);
    if (ucp_worker_get_ep_by_id(worker, box->ep_id, &ep) == UCS_OK) {
        lane   = ucp_failover_msg_lane(ep, box->avoid);
        status = (lane == UCP_NULL_LANE) ? UCS_ERR_NO_RESOURCE :
                 ucp_failover_msg_send(ep, lane, &box->msg.hdr);
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
        ucs_diag("UCP failover: answer to ep id 0x%" PRIx64 " not sent: %s",
                 box->msg.hdr.dst_ep_id, ucs_status_string(status));
    }
    UCS_ASYNC_UNBLOCK(&worker->async);
    ucs_free(box);
    return 1;
}


/* ------------------------------------------------------------------------
 * The peer's side: derive the RX token, answer
 * ------------------------------------------------------------------------ */

/* An answer goes now over a lane other than avoid, or from the progress
 * when none has resources */
static void ucp_failover_answer_send(ucp_ep_h ep, ucp_lane_index_t avoid,
                                     const ucp_failover_msg_buf_t *answer)
{
    ucp_worker_h worker = ep->worker;
    ucp_failover_outbox_t *box;
    ucp_lane_index_t lane;

    lane = ucp_failover_msg_lane(ep, avoid);
    if ((lane != UCP_NULL_LANE) &&
        (ucp_failover_msg_send(ep, lane, &answer->hdr) == UCS_OK)) {
        return;
    }

    box = ucs_malloc(sizeof(*box), "ucp_failover_outbox");
    if (box == NULL) {
        ucs_error("ep %p: no memory to answer the peer's failover message",
                  ep);
        return;
    }
    box->worker   = worker;
    box->ep_id    = ucp_ep_local_id(ep);
    box->avoid    = avoid;
    box->deadline = ucs_get_time() +
                    ucs_time_from_sec(ucp_failover_timeout());
    box->prog_id  = UCS_CALLBACKQ_ID_NULL;
    box->msg      = *answer;
    uct_worker_progress_register_safe(worker->uct,
                                      ucp_failover_outbox_progress, box,
                                      UCS_CALLBACKQ_FLAG_ONESHOT,
                                      &box->prog_id);
}

static void ucp_failover_answer(ucp_worker_h worker,
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
    for (lane = 0; lane < ucp_ep_num_lanes(ep); ++lane) {
        if (!ucp_failover_lane_can_purge(ep, lane)) {
            continue;
        }
        wiface    = ucp_worker_iface(worker, ucp_ep_get_rsc_index(ep, lane));
        rx_length = 0;
        status    = uct_iface_derive_rx_token(wiface->iface, query + 1,
                                              query->token_length,
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

    reply.hdr.type      = UCP_FAILOVER_MSG_REPLY;
    reply.hdr.status    = (int8_t)status;
    reply.hdr.seq       = query->seq;
    reply.hdr.dst_ep_id = query->src_ep_id;
    reply.hdr.src_ep_id = ucp_ep_local_id(ep);
    ucp_failover_answer_send(ep, dead_lane, &reply);
}


/* ------------------------------------------------------------------------
 * Our side: purge, replay, forward
 * ------------------------------------------------------------------------ */

static ucp_failover_t *ucp_failover_find(ucp_ep_h ep, uint32_t seq)
{
    ucp_failover_t *fo, *found = NULL;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep == ep) && (fo->seq == seq)) {
            found = fo;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    return found;
}

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
static ucs_status_t ucp_failover_replay(ucp_failover_t *fo)
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
static void ucp_failover_replay_purge(ucp_failover_t *fo, ucs_status_t status)
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
            (ucp_failover_op_names[op] == NULL)) {
            continue;
        }
        len += snprintf(buf + len, max - len, "%s\"%s\":%u", sep,
                        ucp_failover_op_names[op], fo->handed_back_by_op[op]);
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
                    "\"resent\":%u,\"held\":%u,"
                    "\"failure_to_flowing_us\":%.1f}\n", getpid(), ep,
                    ucs_status_string(fo->status), fo->lane,
                    ucp_ep_get_tl_rsc(ep, fo->lane)->dev_name, fo->sub_lane,
                    ucp_ep_get_tl_rsc(ep, fo->sub_lane)->dev_name,
                    fo->other_md ? "other" : "same", fo->keys_translated,
                    fo->buffers_registered, fo->handed_back, by_op,
                    fo->replayed, fo->held_count, us);
            fclose(file);
        }
    }

    ucs_info("ep %p: lane %u (%s) failed (%s); its traffic moved to lane %u "
             "(%s, %s memory domain): %u operations resent (handed back by "
             "the transport as never executed: {%s}), %u requests held "
             "meanwhile; traffic flowing again %.1f us after the failure",
             ep, fo->lane,
             ucp_ep_get_tl_rsc(ep, fo->lane)->dev_name,
             ucs_status_string(fo->status), fo->sub_lane,
             ucp_ep_get_tl_rsc(ep, fo->sub_lane)->dev_name,
             fo->other_md ? "another" : "the same", fo->replayed,
             by_op, fo->held_count, us);
}

/* The held requests, out of the hold, in order */
static void ucp_failover_held_extract(ucp_failover_t *fo,
                                      ucs_queue_head_t *held)
{
    uct_pending_req_t *req;

    ucs_queue_head_init(held);
    ucs_queue_for_each_extract(req, &fo->held, priv, 1) {
        ucp_worker_flush_ops_count_dec(fo->ep->worker);
        ucs_queue_push(held, (ucs_queue_elem_t*)req->priv);
    }
}

/* Everything handed back is posted: the lane goes to the other lane's
 * endpoint, and the requests held meanwhile go there, in order */
static void ucp_failover_forward(ucp_failover_t *fo)
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
    }
    ucp_wireup_replay_pending_requests(ep, &held);
}

/* The failover cannot finish: the endpoint fails as without it. The
 * cleanup (ucp_failover_ep_cleanup) frees fo. */
static void ucp_failover_abort(ucp_failover_t *fo, ucs_status_t status)
{
    ucs_diag("ep %p: failover of lane %u cannot finish in state %s: %s",
             fo->ep, fo->lane, ucp_failover_state_names[fo->state],
             ucs_status_string(status));
    ucp_ep_set_failed(fo->ep, fo->lane, fo->status);
}

static ucs_status_t ucp_failover_send_query(ucp_failover_t *fo)
{
    ucp_failover_msg_buf_t query;

    memset(&query, 0, sizeof(query));
    query.hdr.type         = UCP_FAILOVER_MSG_QUERY;
    query.hdr.token_length = (uint8_t)fo->tx_token_length;
    query.hdr.seq          = fo->seq;
    query.hdr.dst_ep_id    = ucp_ep_remote_id(fo->ep);
    query.hdr.src_ep_id    = ucp_ep_local_id(fo->ep);
    memcpy(query.token, fo->tx_token, fo->tx_token_length);

    if ((ucp_failover_sub_ep(fo) == NULL) ||
        ucp_is_uct_ep_failed(ucp_failover_sub_ep(fo))) {
        return UCS_ERR_UNREACHABLE;
    }
    return ucp_failover_msg_send(fo->ep, fo->sub_lane, &query.hdr);
}

/* ------------------------------------------------------------------------
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
 *   confirm  we tell the peer; each side then restores its half, alone:
 *   restore  the lane's index holds its traffic again; its requests still
 *            waiting on the other lane come back first in line; a marker
 *            goes on the other lane behind everything the lane sent there,
 *            and when the peer has processed it (it answers), all of that
 *            is ahead of what follows on the new connection (active
 *            messages stay in order; writes before it were executed); then
 *            the lane gets the new endpoint, the held requests go to it in
 *            order, and the failover ends. A new failure of the lane is a
 *            new failover.
 * ------------------------------------------------------------------------ */

static const char *ucp_failover_rebuild_state_names[] = {
    [UCP_FAILOVER_REBUILD_OFF]      = "off",
    [UCP_FAILOVER_REBUILD_IDLE]     = "idle",
    [UCP_FAILOVER_REBUILD_ASKED]    = "asked",
    [UCP_FAILOVER_REBUILD_ANSWERED] = "answered",
    [UCP_FAILOVER_REBUILD_PROBING]  = "probing",
    [UCP_FAILOVER_REBUILD_PROVEN]   = "proven"
};

/* The try's endpoint goes; a probe completion that comes while it is
 * destroyed finds the state no longer PROBING */
static void ucp_failover_rebuild_drop(ucp_failover_t *fo)
{
    uct_ep_h uct_ep = fo->rebuild.uct_ep;

    if (fo->rebuild.state != UCP_FAILOVER_REBUILD_OFF) {
        fo->rebuild.state = UCP_FAILOVER_REBUILD_IDLE;
    }
    fo->rebuild.uct_ep = NULL;
    if (uct_ep != NULL) {
        uct_ep_destroy(uct_ep);
    }
}

/* The try ends without the lane: the next one after a longer interval */
static void ucp_failover_rebuild_retry(ucp_failover_t *fo, const char *why,
                                       ucs_status_t status)
{
    ucp_failover_rebuild_drop(fo);
    fo->rebuild.next     = ucs_get_time() + fo->rebuild.interval;
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
 * failed one */
static ucs_status_t ucp_failover_rebuild_send(ucp_failover_t *fo,
                                              const ucp_failover_msg_t *msg)
{
    ucp_lane_index_t lane = ucp_failover_msg_lane(fo->ep, fo->lane);

    return (lane == UCP_NULL_LANE) ? UCS_ERR_NO_RESOURCE :
           ucp_failover_msg_send(fo->ep, lane, msg);
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
    status              = ucp_failover_rebuild_send(fo, &ask.hdr);
    if (status != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "ask not sent", status);
        return;
    }
    fo->rebuild.state    = UCP_FAILOVER_REBUILD_ASKED;
    fo->rebuild.deadline = ucs_get_time() +
                           ucs_time_from_sec(ucp_failover_timeout());
}

/* Our failover of the lane the peer names by its memory domains: one in
 * FORWARD (or restoring) that tries to rebuild */
static ucp_failover_t *
ucp_failover_find_lane(ucp_ep_h ep, const ucp_failover_rebuild_msg_t *rb)
{
    ucp_failover_t *fo, *found = NULL;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep == ep) && (fo->md_from == rb->dst_md) &&
            (fo->dst_md_from == rb->md) &&
            (fo->rebuild.state != UCP_FAILOVER_REBUILD_OFF) &&
            ((fo->state == UCP_FAILOVER_FORWARD) ||
             (fo->state == UCP_FAILOVER_RESTORE))) {
            found = fo;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    return found;
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
        ucp_failover_answer_send(ep, (fo != NULL) ? fo->lane : UCP_NULL_LANE,
                                 &refusal);
        return;
    }

    if (ucp_failover_rebuild_send(fo, &answer.hdr) != UCS_OK) {
        ucp_failover_rebuild_retry(fo, "answer not sent", UCS_ERR_NO_RESOURCE);
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
             "traffic until the peer took what it sent on lane %u", fo->ep,
             fo->lane, ucp_ep_get_tl_rsc(fo->ep, fo->lane)->dev_name,
             fo->rebuild.tries, fo->sub_lane);
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
    ucp_failover_free(fo);
    ucp_wireup_replay_pending_requests(ep, &held);
}

/* FORWARD: the next step of the rebuild */
static void ucp_failover_rebuild_progress(ucp_failover_t *fo)
{
    ucs_time_t now = ucs_get_time();
    ucp_failover_rebuild_buf_t confirm;
    ucs_status_t status;

    switch (fo->rebuild.state) {
    case UCP_FAILOVER_REBUILD_IDLE:
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
        memset(&confirm, 0, sizeof(confirm));
        confirm.hdr.type         = UCP_FAILOVER_MSG_REBUILD_CONFIRM;
        confirm.hdr.token_length = sizeof(confirm.rb);
        confirm.hdr.seq          = fo->seq;
        confirm.hdr.dst_ep_id    = fo->rebuild.peer_ep_id;
        confirm.hdr.src_ep_id    = ucp_ep_local_id(fo->ep);
        confirm.rb.uuid          = fo->ep->worker->uuid;
        confirm.rb.peer_seq      = fo->rebuild.peer_seq;
        confirm.rb.attempt       = fo->rebuild.attempt;
        status = ucp_failover_rebuild_send(fo, &confirm.hdr);
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

/* RESTORE: the marker, the peer's answer. Returns 1 if fo is gone. */
static int ucp_failover_restore_progress(ucp_failover_t *fo)
{
    ucp_failover_msg_buf_t mark;
    ucs_status_t status;

    if (fo->rebuild.marked) {
        ucp_failover_restore_finish(fo);
        return 1;
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

/* The rebuild messages other than the ask */
static void ucp_failover_rebuild_msg(ucp_worker_h worker,
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
        fo = ucp_failover_find(ep, rb->peer_seq);
        if ((fo != NULL) && (fo->state == UCP_FAILOVER_FORWARD) &&
            (fo->rebuild.state == UCP_FAILOVER_REBUILD_ANSWERED) &&
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
        ucp_failover_answer_send(ep, UCP_NULL_LANE, &marked);
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

int ucp_failover_unowned_ep_failed(ucp_worker_h worker, uct_ep_h uct_ep,
                                   ucs_status_t status)
{
    ucp_failover_t *fo;
    int ours = 0;

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each(fo, &ucp_failover_list, list) {
        if ((fo->ep->worker == worker) && (fo->rebuild.stale_ep == uct_ep)) {
            ours = 1; /* failed before: nothing more to do */
            break;
        }
        if ((fo->ep->worker == worker) && (fo->rebuild.uct_ep == uct_ep)) {
            /* not destroyed here, in its own error handler: the progress
             * ends the try */
            fo->rebuild.failed = 1;
            ours               = 1;
            break;
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);
    if (ours) {
        ucs_debug("ep %p: lane %u's new endpoint %p failed (%s, rebuild %s)",
                  fo->ep, fo->lane, uct_ep, ucs_status_string(status),
                  ucp_failover_rebuild_state_names[fo->rebuild.state]);
    }
    return ours;
}

static unsigned ucp_failover_progress(void *arg)
{
    ucp_failover_t *fo  = arg;
    ucp_worker_h worker = fo->ep->worker;
    ucs_status_t status;

    UCS_ASYNC_BLOCK(&worker->async);
    switch (fo->state) {
    case UCP_FAILOVER_QUERY:
        if (!fo->query_sent) {
            status = ucp_failover_send_query(fo);
            if (status == UCS_OK) {
                fo->query_sent = 1;
            } else if (status != UCS_ERR_NO_RESOURCE) {
                ucp_failover_abort(fo, status);
                break;
            }
        }
        if (ucs_get_time() > fo->deadline) {
            ucp_failover_abort(fo, UCS_ERR_ENDPOINT_TIMEOUT);
        }
        break;
    case UCP_FAILOVER_REPLAY:
        status = ucp_failover_replay(fo);
        if (status == UCS_OK) {
            ucp_failover_forward(fo);
        } else if (status != UCS_ERR_NO_RESOURCE) {
            ucp_failover_abort(fo, status);
        }
        break;
    case UCP_FAILOVER_FORWARD:
        ucp_failover_rebuild_progress(fo);
        break;
    case UCP_FAILOVER_RESTORE:
        ucp_failover_restore_progress(fo); /* may free fo */
        break;
    default:
        break;
    }
    UCS_ASYNC_UNBLOCK(&worker->async);
    return 0;
}

/* The peer's RX token: purge the failed endpoint, then replay from the
 * progress */
static void ucp_failover_replied(ucp_worker_h worker,
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
    params.rx_token_length = reply->token_length;
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


/* ------------------------------------------------------------------------
 * Start and end
 * ------------------------------------------------------------------------ */

/* The other lane's transport takes whatever the failed lane's does: UCP
 * keeps choosing protocols by the failed lane's limits */
static int ucp_failover_limits_cover(const uct_iface_attr_t *sub,
                                     const uct_iface_attr_t *failed)
{
#define UCP_FAILOVER_COVERS(_field) (sub->cap._field >= failed->cap._field)
    return UCP_FAILOVER_COVERS(put.max_short) &&
           UCP_FAILOVER_COVERS(put.max_bcopy) &&
           UCP_FAILOVER_COVERS(put.max_zcopy) &&
           UCP_FAILOVER_COVERS(put.max_iov) &&
           UCP_FAILOVER_COVERS(get.max_short) &&
           UCP_FAILOVER_COVERS(get.max_bcopy) &&
           UCP_FAILOVER_COVERS(get.max_zcopy) &&
           UCP_FAILOVER_COVERS(get.max_iov) &&
           UCP_FAILOVER_COVERS(am.max_short) &&
           UCP_FAILOVER_COVERS(am.max_bcopy) &&
           UCP_FAILOVER_COVERS(am.max_zcopy) &&
           UCP_FAILOVER_COVERS(am.max_hdr) &&
           UCP_FAILOVER_COVERS(am.max_iov) &&
           ucs_test_all_flags(sub->cap.flags, failed->cap.flags &
                              (UCT_IFACE_FLAG_PUT_SHORT |
                               UCT_IFACE_FLAG_PUT_BCOPY |
                               UCT_IFACE_FLAG_PUT_ZCOPY |
                               UCT_IFACE_FLAG_GET_BCOPY |
                               UCT_IFACE_FLAG_GET_ZCOPY |
                               UCT_IFACE_FLAG_AM_SHORT |
                               UCT_IFACE_FLAG_AM_BCOPY |
                               UCT_IFACE_FLAG_AM_ZCOPY)) &&
           ucs_test_all_flags(sub->cap.atomic64.op_flags,
                              failed->cap.atomic64.op_flags) &&
           ucs_test_all_flags(sub->cap.atomic64.fop_flags,
                              failed->cap.atomic64.fop_flags) &&
           ucs_test_all_flags(sub->cap.atomic32.op_flags,
                              failed->cap.atomic32.op_flags) &&
           ucs_test_all_flags(sub->cap.atomic32.fop_flags,
                              failed->cap.atomic32.fop_flags);
#undef UCP_FAILOVER_COVERS
}

/* Another lane to the same peer with the same transport, whose endpoint
 * works: on the same memory domain if there is one (nothing to translate),
 * else on another whose transport takes what the failed lane's did */
static ucp_lane_index_t ucp_failover_substitute(ucp_ep_h ep,
                                                ucp_lane_index_t failed)
{
    ucp_context_h context = ep->worker->context;
    ucp_rsc_index_t f_rsc = ucp_ep_get_rsc_index(ep, failed);
    ucp_lane_index_t other_md = UCP_NULL_LANE;
    ucp_rsc_index_t rsc;
    ucp_lane_index_t lane;
    uct_ep_h uct_ep;

    for (lane = 0; lane < ucp_ep_num_lanes(ep); ++lane) {
        uct_ep = ep->uct_eps[lane];
        rsc    = ucp_ep_get_rsc_index(ep, lane);
        if ((lane == failed) || (uct_ep == NULL) ||
            (rsc == UCP_NULL_RESOURCE) || (rsc == f_rsc) ||
            ucp_is_uct_ep_failed(uct_ep) || ucp_wireup_ep_test(uct_ep) ||
            ucp_proxy_ep_test(uct_ep) ||
            strcmp(context->tl_rscs[rsc].tl_rsc.tl_name,
                   context->tl_rscs[f_rsc].tl_rsc.tl_name)) {
            continue;
        }
        if (context->tl_rscs[rsc].md_index ==
            context->tl_rscs[f_rsc].md_index) {
            return lane;
        }
        if ((other_md == UCP_NULL_LANE) &&
            ucp_failover_limits_cover(&ucp_worker_iface(ep->worker,
                                                        rsc)->attr,
                                      &ucp_worker_iface(ep->worker,
                                                        f_rsc)->attr)) {
            other_md = lane;
        }
    }
    return other_md;
}

static void ucp_failover_hold_enqueue_cb(uct_pending_req_t *req, void *arg)
{
    ucp_failover_hold_pending_add(&((ucp_failover_t*)arg)->hold_ep, req, 0);
}

/* The endpoint and its failed lane are of the kind the failover moves.
 * Any error handling mode: an endpoint without peer error handling (Open
 * MPI 4.1 creates all of its so) would end the process at this failure,
 * and the same exactly-once rules hold whatever the mode (issue 35). */
static int ucp_failover_can_move(ucp_ep_h ep, ucp_lane_index_t lane,
                                 uct_ep_h uct_ep)
{
    return !ucp_ep_has_cm_lane(ep) &&
           !(ep->flags & (UCP_EP_FLAG_FAILED | UCP_EP_FLAG_CLOSED)) &&
           (ep->uct_eps[lane] == uct_ep) &&
           ucp_failover_lane_can_purge(ep, lane);
}

ucs_status_t ucp_failover_lane_failed(ucp_ep_h ep, ucp_lane_index_t lane,
                                      uct_ep_h uct_ep, ucs_status_t status)
{
    static const uct_iface_ops_t forward_ops; /* all forwarded by the proxy */
    ucp_worker_h worker = ep->worker;
    ucp_failover_config_t config;
    ucp_lane_index_t sub_lane;
    ucp_failover_t *fo;
    uct_ep_attr_t attr;
    ucs_status_t ret;

    ucp_failover_config(&config);
    if (!config.enable || !ucp_failover_can_move(ep, lane, uct_ep)) {
        goto out_release_config;
    }

    sub_lane = ucp_failover_substitute(ep, lane);
    if (sub_lane == UCP_NULL_LANE) {
        ucs_diag("ep %p: lane %u failed (%s), no other lane to the peer "
                 "with the same transport", ep, lane,
                 ucs_status_string(status));
        goto out_release_config;
    }

    fo = ucs_calloc(1, sizeof(*fo), "ucp_failover");
    if (fo == NULL) {
        goto out_release_config;
    }

    memset(&attr, 0, sizeof(attr));
    attr.field_mask      = UCT_EP_ATTR_FIELD_TX_TOKEN;
    attr.tx_token        = fo->tx_token;
    attr.tx_token_length = sizeof(fo->tx_token);
    ret = uct_ep_query(uct_ep, &attr);
    if (ret != UCS_OK) {
        ucs_diag("ep %p: lane %u has no TX token: %s", ep, lane,
                 ucs_status_string(ret));
        goto out_free;
    }

    if (config.report[0] != '\0') {
        fo->report = ucs_strdup(config.report, "ucp_failover_report");
        if (fo->report == NULL) {
            goto out_free;
        }
    }

    fo->hold_iface.ops  = ucp_failover_hold_ops;
    fo->hold_ep.iface   = &fo->hold_iface;
    fo->xlate_iface.ops = ucp_failover_xlate_ops;
    fo->xlate_ep.iface  = &fo->xlate_iface;
    fo->md_from         = ucp_ep_md_index(ep, lane);
    fo->md_to           = ucp_ep_md_index(ep, sub_lane);
    fo->dst_md_from     = ucp_ep_config(ep)->key.lanes[lane].dst_md_index;
    fo->dst_md_to       = ucp_ep_config(ep)->key.lanes[sub_lane].dst_md_index;
    fo->other_md        = (fo->md_from != fo->md_to) ||
                          (fo->dst_md_from != fo->dst_md_to);
    ret = UCS_CLASS_NEW(ucp_proxy_ep_t, &fo->proxy, &forward_ops, ep,
                        &fo->hold_ep, 1);
    if (ret != UCS_OK) {
        goto out_free;
    }

    fo->tx_token_length = attr.tx_token_length;
    fo->ep              = ep;
    fo->lane            = lane;
    fo->sub_lane        = sub_lane;
    fo->state           = UCP_FAILOVER_QUERY;
    fo->status          = status;
    fo->failed_ep       = uct_ep;
    fo->t_failed        = ucs_get_time();
    fo->deadline        = fo->t_failed + ucs_time_from_sec(config.timeout);
    fo->prog_id         = UCS_CALLBACKQ_ID_NULL;
    fo->rebuild.base    = ucs_time_from_sec(config.rebuild_interval);
    fo->rebuild.state   = (fo->rebuild.base == 0) ?
                          UCP_FAILOVER_REBUILD_OFF : UCP_FAILOVER_REBUILD_IDLE;
    ucs_queue_head_init(&fo->held);
    ucs_queue_head_init(&fo->replay);
    ucs_config_parser_release_opts(&config, ucp_failover_config_table);

    ucs_spin_lock(&ucp_failover_lock);
    fo->seq    = ++ucp_failover_seq;
    fo->listed = 1;
    ucs_list_add_tail(&ucp_failover_list, &fo->list);
    ucs_spin_unlock(&ucp_failover_lock);

    /* what waited for the failed endpoint waits here now, first in line */
    uct_ep_pending_purge(uct_ep, ucp_failover_hold_enqueue_cb, fo);
    ep->uct_eps[lane] = fo->proxy;

    ucs_diag("ep %p: lane %u (%s) failed (%s): holding its traffic, asking "
             "the peer over lane %u (%s, %s memory domain) what executed", ep,
             lane, ucp_ep_get_tl_rsc(ep, lane)->dev_name,
             ucs_status_string(status), sub_lane,
             ucp_ep_get_tl_rsc(ep, sub_lane)->dev_name,
             fo->other_md ? "another" : "the same");
    uct_worker_progress_register_safe(worker->uct, ucp_failover_progress, fo,
                                      0, &fo->prog_id);
    return UCS_INPROGRESS;

out_free:
    ucs_free(fo->report);
    ucs_free(fo);
out_release_config:
    ucs_config_parser_release_opts(&config, ucp_failover_config_table);
    return status;
}

void ucp_failover_ep_cleanup(ucp_ep_h ep)
{
    ucp_failover_t *fo, *tmp;
    UCS_LIST_HEAD(mine);

    ucs_spin_lock(&ucp_failover_lock);
    ucs_list_for_each_safe(fo, tmp, &ucp_failover_list, list) {
        if (fo->ep == ep) {
            ucs_list_del(&fo->list);
            ucs_list_add_tail(&mine, &fo->list);
        }
    }
    ucs_spin_unlock(&ucp_failover_lock);

    ucs_list_for_each_safe(fo, tmp, &mine, list) {
        ucs_list_del(&fo->list);
        fo->listed = 0;
        uct_worker_progress_unregister_safe(ep->worker->uct, &fo->prog_id);
        ucs_assert(ep->uct_eps[fo->lane] == fo->proxy);
        if (fo->state != UCP_FAILOVER_FORWARD) {
            /* the lane keeps its proxy: the caller purges what it holds,
             * flushes it (which gives the failed endpoint's operations
             * back, to complete with the error) and destroys it, with the
             * failed endpoint (ucp_failover_hold_destroy) */
            ucs_diag("ep %p: failover of lane %u gives up in state %s: the "
                     "endpoint's lanes are discarded", ep, fo->lane,
                     ucp_failover_state_names[fo->state]);
            continue;
        }

        /* moved: the lane gets its failed endpoint back, to be discarded or
         * destroyed like the others; the proxy forwarded to a lane that is
         * the caller's */
        ep->uct_eps[fo->lane] = fo->failed_ep;
        uct_ep_destroy(fo->proxy);
        ucp_failover_free(fo);
    }
}
