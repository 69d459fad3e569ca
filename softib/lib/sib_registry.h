/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * The registry: machine-wide state of the software RDMA devices, in one
 * shared-memory file that every process using the devices maps.
 *
 * It holds what real hardware keeps in the NIC and the subnet manager:
 * - the devices, their ports, port state and LIDs;
 * - the contexts alive on each device ("slots"): a QP number encodes its
 *   slot, and the slot names the UDP sockets that reach the owning process,
 *   so (DLID, DestQP) resolves to an address without a central daemon;
 * - fault-injection rules (drop or delay packets), with their counters;
 * - per-slot counters, each written only by the slot's owner.
 *
 * Structural changes (slot and rule allocation, port state) are made under
 * flock() on the file, which the kernel releases if a process dies. Readers
 * on the packet path take no lock: they read aligned words.
 *
 * No verbs or UCX types here: the control library and the CLI use it too.
 */
#ifndef SIB_REGISTRY_H
#define SIB_REGISTRY_H

#include <stdint.h>
#include <sys/types.h>


#define SIB_REG_MAGIC          0x31424954464f53ull /* "SOFTIB1" */
#define SIB_REG_VERSION        6
#define SIB_MAX_DEVS           8
#define SIB_MAX_PORTS          2
#define SIB_DEV_NAME_MAX       32
#define SIB_QPN_SLOT_SHIFT     12
#define SIB_QPS_PER_SLOT       (1u << SIB_QPN_SLOT_SHIFT)
#define SIB_MAX_SLOTS          4096     /* slot 0 is never used */
#define SIB_MAX_RULES          64
#define SIB_ANY                0xffffffffu
#define SIB_DEFAULT_DEVICES    "softib0:2,softib1:2"


/* Port states as libibverbs numbers them (enum ibv_port_state) */
enum sib_port_state {
    SIB_PORT_DOWN   = 1,
    SIB_PORT_ACTIVE = 4
};

/* Counters kept per slot (per device context). Every dropped packet and
 * every protocol exception is counted. */
enum sib_counter {
    SIB_CNT_TX_PKTS,
    SIB_CNT_RX_PKTS,
    SIB_CNT_TX_BYTES,
    SIB_CNT_RX_BYTES,
    SIB_CNT_DROP_PORT_DOWN,     /* sent or received on a port that is down */
    SIB_CNT_DROP_RULE,          /* dropped by a fault-injection rule */
    SIB_CNT_DELAY_RULE,         /* delayed by a fault-injection rule */
    SIB_CNT_DROP_MALFORMED,     /* bad length, version, header CRC, opcode */
    SIB_CNT_DROP_FOREIGN,       /* not a softib datagram at all */
    SIB_CNT_DROP_NO_QP,         /* no such destination QP */
    SIB_CNT_DROP_QP_STATE,      /* destination QP cannot receive now */
    SIB_CNT_DROP_NO_ROUTE,      /* destination LID or slot unknown */
    SIB_CNT_DROP_NO_RECV_WQE,   /* UD datagram with no receive posted */
    SIB_CNT_DROP_SEND_ERR,      /* sendmsg() refused the datagram */
    SIB_CNT_RETRANSMIT_TIMEOUT, /* requester timer expired, went back */
    SIB_CNT_RETRY_EXCEEDED,     /* ... and gave up: RETRY_EXC_ERR */
    SIB_CNT_RNR_NAK_SENT,
    SIB_CNT_RNR_NAK_RCVD,
    SIB_CNT_RNR_RETRY_EXCEEDED,
    SIB_CNT_SEQ_NAK_SENT,
    SIB_CNT_SEQ_NAK_RCVD,
    SIB_CNT_DUP_REQUEST,        /* duplicate SEND/WRITE: re-ACKed only */
    SIB_CNT_DUP_READ,           /* duplicate READ: answered again */
    SIB_CNT_DUP_ATOMIC,         /* duplicate atomic: replayed, not re-run */
    SIB_CNT_ACK_IMPLIED_RETRY,  /* ACK passed a READ/atomic: resent it */
    SIB_CNT_REM_ACCESS_NAK,
    SIB_CNT_INV_REQ_NAK,
    SIB_CNT_PORT_EVENTS,
    SIB_CNT_UNMAPPED_MR,        /* registered memory the application had
                                   unmapped: as with pinned pages, written
                                   to nowhere it can see, read as zeros */
    SIB_CNT_QP_CREATED,         /* ibv_create_qp() that succeeded */
    SIB_CNT_QP_CONNECTED,       /* RC QPs moved to RTR: connection setups */
    SIB_CNT_TX_RESPONSES,       /* of tx_packets, a responder's: ACK or NAK,
                                   READ response, atomic ACK (the rest are
                                   requests and UD datagrams) */
    SIB_CNT_LAST
};

extern const char *const sib_counter_name[SIB_CNT_LAST];

/* Packet classes a rule can select; a packet is exactly one class. */
enum sib_pkt_class {
    SIB_CLASS_REQ         = 1u << 0, /* RC requests: SEND, WRITE, READ req, atomic */
    SIB_CLASS_ACK         = 1u << 1, /* RC ACK and NAK */
    SIB_CLASS_READ_RESP   = 1u << 2,
    SIB_CLASS_ATOMIC_RESP = 1u << 3,
    SIB_CLASS_UD          = 1u << 4,
    SIB_CLASS_ALL         = 0x1f
};

enum sib_rule_kind {
    SIB_RULE_DROP  = 1,
    SIB_RULE_DELAY = 2,
    SIB_RULE_FAIL  = 3   /* verbs fail: matched by sib_registry_verb_fail */
};

enum sib_verb {
    SIB_VERB_CREATE_QP = 1u << 0,
    SIB_VERB_QUERY_QP  = 1u << 1,
    SIB_VERB_POST_SEND = 1u << 2,
    SIB_VERB_POST_READ = 1u << 3,
    SIB_VERB_MODIFY_QP = 1u << 4,
    SIB_VERB_CONNECT_QP = 1u << 5,   /* the move to RTR */
    SIB_VERB_ALL       = 0x3f
};

enum sib_rule_dir {
    SIB_DIR_TX  = 1,  /* leaving the port */
    SIB_DIR_RX  = 2,  /* arriving at the port */
    SIB_DIR_ANY = 3
};

struct sib_reg_port {
    uint32_t state;          /* enum sib_port_state */
    uint16_t lid;
    uint16_t reserved;
    uint32_t ip;             /* IPv4 the port's sockets bind, network order */
    uint32_t reserved2;
    uint64_t link_downed;    /* times the link went down */
};

struct sib_reg_dev {
    char                name[SIB_DEV_NAME_MAX];
    uint32_t            num_ports;
    uint32_t            reserved;
    uint64_t            node_guid;
    struct sib_reg_port port[SIB_MAX_PORTS];
};

struct sib_reg_slot {
    uint32_t pid;                    /* 0: free */
    uint32_t dev;
    uint16_t udp_port[SIB_MAX_PORTS]; /* host order */
    uint32_t generation;             /* bumped each time the slot is taken */
    uint64_t counters[SIB_CNT_LAST];
};

struct sib_reg_rule {
    uint32_t in_use;
    uint32_t id;
    uint32_t kind;           /* enum sib_rule_kind */
    uint32_t dir;            /* enum sib_rule_dir */
    uint32_t dev;            /* device index or SIB_ANY */
    uint32_t port;           /* 1-based, or 0 for any */
    uint32_t classes;        /* mask of enum sib_pkt_class */
    uint32_t qpn;            /* the QP on that port, or 0 for any */
    uint64_t skip;           /* let this many matching packets pass first */
    uint64_t count;          /* then act on this many (UINT64_MAX: all) */
    uint64_t delay_ns;       /* SIB_RULE_DELAY */
    uint64_t matched;        /* matching packets (or calls) seen */
    uint64_t acted;          /* packets dropped or delayed, calls failed */
    uint32_t verbs;          /* SIB_RULE_FAIL: mask of enum sib_verb */
    int32_t  err;            /* SIB_RULE_FAIL: the errno */
};

struct sib_registry {
    uint64_t            magic;
    uint32_t            version;
    uint32_t            size;
    uint64_t            instance;    /* random; authenticates doorbells */
    uint64_t            generation;  /* bumped on every port/rule change */
    uint32_t            num_devs;
    uint32_t            num_rules;   /* active rules; 0 keeps the fast path */
    uint32_t            next_rule_id;
    uint32_t            next_slot;   /* slots rotate to delay QPN reuse */
    struct sib_reg_dev  dev[SIB_MAX_DEVS];
    struct sib_reg_rule rule[SIB_MAX_RULES];
    struct sib_reg_slot slot[SIB_MAX_SLOTS];
};

/* Doorbell: a raw datagram that tells an engine to re-read the registry
 * now (port state or rules changed) instead of at its next timer tick. */
struct sib_doorbell {
    uint8_t  lrh[8];         /* LRH with LNH = SIB_LNH_RAW */
    uint64_t magic;
    uint64_t instance;
} __attribute__((packed));


/* Map (creating it on first use) the registry named by $SOFTIB_REGISTRY,
 * default /dev/shm/softib.<uid>. Devices come from $SOFTIB_DEVICES when the
 * file is created ("name:ports[,name:ports...]", default
 * SIB_DEFAULT_DEVICES). Returns 0 or -errno. */
int  sib_registry_attach(struct sib_registry **reg_p);
void sib_registry_detach(struct sib_registry *reg);
const char *sib_registry_path(void);

int  sib_registry_lock(struct sib_registry *reg);
void sib_registry_unlock(struct sib_registry *reg);

/* GUIDs: locally administered, "SIB" in the middle, device index and port
 * last (port 0 is the node). The GID of a port is fe80::/64 + its GUID. */
static inline uint64_t sib_port_guid(unsigned dev, unsigned port)
{
    return 0x0253494200000000ull | ((uint64_t)(dev + 1) << 8) | port;
}

static inline void sib_port_gid(unsigned dev, unsigned port, uint8_t *gid)
{
    uint64_t guid = sib_port_guid(dev, port);
    int i;

    gid[0] = 0xfe;
    gid[1] = 0x80;
    for (i = 2; i < 8; i++) {
        gid[i] = 0;
    }
    for (i = 0; i < 8; i++) {
        gid[8 + i] = (uint8_t)(guid >> (56 - 8 * i));
    }
}

/* LIDs are a function of (device, port); see sib_registry.c */
uint16_t sib_registry_lid(unsigned dev, unsigned port);
int      sib_registry_lid_lookup(const struct sib_registry *reg, uint16_t lid,
                                 unsigned *dev_p, unsigned *port_p);
int      sib_registry_find_dev(const struct sib_registry *reg,
                               const char *name);

/* Slot life cycle; takes the registry lock. */
int  sib_registry_slot_alloc(struct sib_registry *reg, unsigned dev,
                             const uint16_t *udp_ports, unsigned *slot_p);
void sib_registry_slot_free(struct sib_registry *reg, unsigned slot);
int  sib_registry_slot_alive(const struct sib_registry *reg, unsigned slot);

/* Port state; takes the registry lock and bumps the generation. */
int  sib_registry_port_set(struct sib_registry *reg, unsigned dev,
                           unsigned port, enum sib_port_state state);

/* Rules; take the registry lock and bump the generation. */
int  sib_registry_rule_add(struct sib_registry *reg,
                           const struct sib_reg_rule *rule, uint32_t *id_p);
int  sib_registry_rule_del(struct sib_registry *reg, uint32_t id);
void sib_registry_rules_clear(struct sib_registry *reg);

/* Decide whether a rule acts on this packet: counts the match and returns
 * the acting rule (or NULL). Lock-free; called per packet only when
 * reg->num_rules != 0. */
/* The errno a SIB_RULE_FAIL rule makes this call of a verb fail with, or 0.
 * qpn: the QP the verb acts on (0 for none). */
int sib_registry_verb_fail(struct sib_registry *reg, unsigned dev,
                           unsigned verb, uint32_t qpn);
struct sib_reg_rule *sib_registry_rule_match(struct sib_registry *reg,
                                             unsigned dir, unsigned dev,
                                             unsigned port, uint32_t qpn,
                                             unsigned pkt_class);

/* Send a doorbell to every live slot so engines notice a change now. */
void sib_registry_ring_doorbells(struct sib_registry *reg);

uint64_t sib_registry_counter_sum(const struct sib_registry *reg,
                                  unsigned dev, enum sib_counter cnt);

#endif
