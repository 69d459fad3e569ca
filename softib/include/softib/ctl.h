/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Control of the softib software RDMA devices: link state, fault-injection
 * rules and counters. The `softib` command is built on this; tests link
 * libsoftib and call it directly. Changes take effect machine-wide, in
 * every process using the devices, within microseconds.
 *
 * Every function returns 0 (or a value) on success and a negative errno
 * on failure.
 */
#ifndef SOFTIB_CTL_H
#define SOFTIB_CTL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct softib_ctl softib_ctl_t;

/* Packet classes a rule selects; each packet is exactly one of them. */
enum softib_class {
    SOFTIB_CLASS_REQ         = 1u << 0, /* RC requests (SEND/WRITE/READ/atomic) */
    SOFTIB_CLASS_ACK         = 1u << 1, /* RC ACK and NAK */
    SOFTIB_CLASS_READ_RESP   = 1u << 2, /* RDMA READ responses */
    SOFTIB_CLASS_ATOMIC_RESP = 1u << 3, /* atomic ACKs (carry the result) */
    SOFTIB_CLASS_UD          = 1u << 4, /* UD datagrams */
    SOFTIB_CLASS_RESPONSES   = (1u << 1) | (1u << 2) | (1u << 3),
    SOFTIB_CLASS_ALL         = 0x1f
};

enum softib_dir {
    SOFTIB_DIR_TX  = 1,                 /* leaving the port */
    SOFTIB_DIR_RX  = 2,                 /* arriving at the port */
    SOFTIB_DIR_ANY = 3
};

enum softib_rule_kind {
    SOFTIB_RULE_DROP  = 1,
    SOFTIB_RULE_DELAY = 2,              /* transmit direction only */
    SOFTIB_RULE_FAIL  = 3               /* make verbs fail (error paths) */
};

/* Verbs a SOFTIB_RULE_FAIL rule makes fail, on its device (and QP) */
enum softib_verb {
    SOFTIB_VERB_CREATE_QP = 1u << 0,    /* NULL, errno = err */
    SOFTIB_VERB_QUERY_QP  = 1u << 1,    /* returns err */
    SOFTIB_VERB_POST_SEND = 1u << 2,    /* any work request: returns err */
    SOFTIB_VERB_POST_READ = 1u << 3,    /* a list with an RDMA READ */
    SOFTIB_VERB_MODIFY_QP = 1u << 4,    /* any transition: returns err, the
                                           QP stays as it was */
    SOFTIB_VERB_CONNECT_QP = 1u << 5,   /* only the move to RTR (it is a
                                           MODIFY_QP too): as rxe, where the
                                           route of a RoCE port whose link
                                           is down cannot be resolved
                                           (ENETUNREACH) */
    SOFTIB_VERB_ALL       = 0x3f
};

#define SOFTIB_FOREVER  UINT64_MAX

struct softib_rule {
    int         kind;       /* enum softib_rule_kind */
    const char *dev;        /* device name, or NULL for any */
    unsigned    port;       /* 1-based, or 0 for any */
    unsigned    dir;        /* enum softib_dir */
    unsigned    classes;    /* mask of enum softib_class */
    uint32_t    qpn;        /* the QP on that port (sender for TX, receiver
                               for RX), or 0 for any */
    uint64_t    skip;       /* let this many matching packets through */
    uint64_t    count;      /* then act on this many (SOFTIB_FOREVER) */
    uint64_t    delay_us;   /* SOFTIB_RULE_DELAY */
    unsigned    verbs;      /* SOFTIB_RULE_FAIL: mask of enum softib_verb
                               (port, dir and classes do not apply; skip
                               and count count calls) */
    int         err;        /* SOFTIB_RULE_FAIL: the errno (default EIO) */
};

int         softib_ctl_open(softib_ctl_t **ctl_p);
void        softib_ctl_close(softib_ctl_t *ctl);

int         softib_ctl_num_devices(softib_ctl_t *ctl);
const char *softib_ctl_device_name(softib_ctl_t *ctl, int index);
int         softib_ctl_num_ports(softib_ctl_t *ctl, const char *dev);
int         softib_ctl_lid(softib_ctl_t *ctl, const char *dev, unsigned port);

/* Take a port's link down or up: the port state changes, every context on
 * the device receives IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE, and no
 * packet leaves or enters the port while it is down. */
int         softib_ctl_link_set(softib_ctl_t *ctl, const char *dev,
                                unsigned port, int up);
/* 1 if up, 0 if down */
int         softib_ctl_link_get(softib_ctl_t *ctl, const char *dev,
                                unsigned port);

int         softib_ctl_rule_add(softib_ctl_t *ctl,
                                const struct softib_rule *rule,
                                uint32_t *id_p);
int         softib_ctl_rule_del(softib_ctl_t *ctl, uint32_t id);
int         softib_ctl_rule_stats(softib_ctl_t *ctl, uint32_t id,
                                  uint64_t *matched, uint64_t *acted);

/* All ports up, all rules removed. */
int         softib_ctl_reset(softib_ctl_t *ctl);

/* A counter (see `softib counters` for the names), summed over every
 * context of the device (NULL: of every device) since it was opened. */
int64_t     softib_ctl_counter(softib_ctl_t *ctl, const char *dev,
                               const char *name);

/* The device contexts alive now (one per ibv_open_device). */
struct softib_ctx_info {
    unsigned slot;          /* QPNs of the context are slot << 12 | n */
    int      pid;
    char     dev[32];
    uint16_t udp_port[2];   /* where its packets arrive, per device port */
};

/* Fills up to max entries; returns how many contexts are alive. */
int         softib_ctl_contexts(softib_ctl_t *ctl,
                                struct softib_ctx_info *info, int max);

/* Name of counter index i, NULL past the last */
const char *softib_ctl_counter_name(int index);

/* "softib0:2" -> ("softib0", 2) */
int         softib_ctl_parse_port(const char *spec, char *dev, unsigned len,
                                  unsigned *port);

#ifdef __cplusplus
}
#endif

#endif
