/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 */
#include "sib_registry.h"
#include "sib_hdr.h"
#include "sib_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


const char *const sib_counter_name[SIB_CNT_LAST] = {
    [SIB_CNT_TX_PKTS]            = "tx_packets",
    [SIB_CNT_RX_PKTS]            = "rx_packets",
    [SIB_CNT_TX_BYTES]           = "tx_bytes",
    [SIB_CNT_RX_BYTES]           = "rx_bytes",
    [SIB_CNT_DROP_PORT_DOWN]     = "drop_port_down",
    [SIB_CNT_DROP_RULE]          = "drop_rule",
    [SIB_CNT_DELAY_RULE]         = "delay_rule",
    [SIB_CNT_DROP_MALFORMED]     = "drop_malformed",
    [SIB_CNT_DROP_FOREIGN]       = "drop_foreign",
    [SIB_CNT_DROP_NO_QP]         = "drop_no_qp",
    [SIB_CNT_DROP_QP_STATE]      = "drop_qp_state",
    [SIB_CNT_DROP_NO_ROUTE]      = "drop_no_route",
    [SIB_CNT_DROP_NO_RECV_WQE]   = "drop_no_recv_wqe",
    [SIB_CNT_DROP_SEND_ERR]      = "drop_send_error",
    [SIB_CNT_RETRANSMIT_TIMEOUT] = "retransmit_timeout",
    [SIB_CNT_RETRY_EXCEEDED]     = "retry_exceeded",
    [SIB_CNT_RNR_NAK_SENT]       = "rnr_nak_sent",
    [SIB_CNT_RNR_NAK_RCVD]       = "rnr_nak_received",
    [SIB_CNT_RNR_RETRY_EXCEEDED] = "rnr_retry_exceeded",
    [SIB_CNT_SEQ_NAK_SENT]       = "seq_nak_sent",
    [SIB_CNT_SEQ_NAK_RCVD]       = "seq_nak_received",
    [SIB_CNT_DUP_REQUEST]        = "duplicate_request",
    [SIB_CNT_DUP_READ]           = "duplicate_read",
    [SIB_CNT_DUP_ATOMIC]         = "duplicate_atomic",
    [SIB_CNT_ACK_IMPLIED_RETRY]  = "ack_implied_retry",
    [SIB_CNT_REM_ACCESS_NAK]     = "remote_access_nak",
    [SIB_CNT_INV_REQ_NAK]        = "invalid_request_nak",
    [SIB_CNT_PORT_EVENTS]        = "port_events",
    [SIB_CNT_UNMAPPED_MR]        = "unmapped_mr_access",
    [SIB_CNT_QP_CREATED]         = "qp_created",
    [SIB_CNT_QP_CONNECTED]       = "qp_connected",
    [SIB_CNT_TX_RESPONSES]       = "tx_responses",
};

_Static_assert(sizeof(sib_counter_name) / sizeof(sib_counter_name[0]) ==
               SIB_CNT_LAST, "every counter has a name");

/* The file descriptor of the mapping, kept for flock(). One registry per
 * process is all the library and the tools ever map. */
static int sib_registry_fd = -1;

const char *sib_registry_path(void)
{
    static char path[256];
    const char *env = getenv("SOFTIB_REGISTRY");

    if ((env != NULL) && (*env != '\0')) {
        return env;
    }

    snprintf(path, sizeof(path), "/dev/shm/softib.%u", (unsigned)getuid());
    return path;
}

uint16_t sib_registry_lid(unsigned dev, unsigned port)
{
    /* 0x11, 0x12 for the first device, 0x21, 0x22 for the second, ...:
     * unicast, never 0, readable in traces. */
    return (uint16_t)(((dev + 1) << 4) | port);
}

int sib_registry_lid_lookup(const struct sib_registry *reg, uint16_t lid,
                            unsigned *dev_p, unsigned *port_p)
{
    unsigned dev  = (lid >> 4) - 1;
    unsigned port = lid & 0xf;

    if ((lid < 0x10) || (dev >= reg->num_devs) || (port == 0) ||
        (port > reg->dev[dev].num_ports)) {
        return -ENOENT;
    }

    *dev_p  = dev;
    *port_p = port;
    return 0;
}

int sib_registry_find_dev(const struct sib_registry *reg, const char *name)
{
    unsigned i;

    for (i = 0; i < reg->num_devs; i++) {
        if (!strcmp(reg->dev[i].name, name)) {
            return (int)i;
        }
    }
    return -ENODEV;
}

/* "name:ports[@ip[/ip]]" entries separated by commas */
static int sib_registry_parse_devices(struct sib_registry *reg,
                                      const char *spec)
{
    char buf[512], *save = NULL, *entry, *colon, *at, *slash, *end;
    unsigned dev, port;
    unsigned long nports;
    struct in_addr ip[SIB_MAX_PORTS];

    if (strlen(spec) >= sizeof(buf)) {
        return -EINVAL;
    }
    strcpy(buf, spec);

    reg->num_devs = 0;
    for (entry = strtok_r(buf, ",", &save); entry != NULL;
         entry = strtok_r(NULL, ",", &save)) {
        dev = reg->num_devs;
        if (dev >= SIB_MAX_DEVS) {
            return -E2BIG;
        }

        colon = strchr(entry, ':');
        if ((colon == NULL) || (colon == entry) ||
            ((size_t)(colon - entry) >= SIB_DEV_NAME_MAX)) {
            return -EINVAL;
        }
        *colon = '\0';
        nports = strtoul(colon + 1, &end, 10);
        if ((nports < 1) || (nports > SIB_MAX_PORTS)) {
            return -EINVAL;
        }

        ip[0].s_addr = ip[1].s_addr = htonl(INADDR_LOOPBACK);
        at = (*end == '@') ? end + 1 : NULL;
        if ((at == NULL) && (*end != '\0')) {
            return -EINVAL;
        }
        if (at != NULL) {
            slash = strchr(at, '/');
            if (slash != NULL) {
                *slash = '\0';
            }
            if (inet_pton(AF_INET, at, &ip[0]) != 1) {
                return -EINVAL;
            }
            ip[1] = ip[0];
            if ((slash != NULL) && (inet_pton(AF_INET, slash + 1, &ip[1]) != 1)) {
                return -EINVAL;
            }
        }

        snprintf(reg->dev[dev].name, SIB_DEV_NAME_MAX, "%s", entry);
        reg->dev[dev].num_ports = (uint32_t)nports;
        reg->dev[dev].node_guid = sib_port_guid(dev, 0);
        for (port = 1; port <= nports; port++) {
            reg->dev[dev].port[port - 1].state = SIB_PORT_ACTIVE;
            reg->dev[dev].port[port - 1].lid   = sib_registry_lid(dev, port);
            reg->dev[dev].port[port - 1].ip    = ip[port - 1].s_addr;
        }
        reg->num_devs++;
    }

    return (reg->num_devs > 0) ? 0 : -EINVAL;
}

static int sib_registry_format(struct sib_registry *reg)
{
    const char *spec = getenv("SOFTIB_DEVICES");
    int ret;

    memset(reg, 0, sizeof(*reg));
    ret = sib_registry_parse_devices(reg, ((spec != NULL) && (*spec != '\0')) ?
                                     spec : SIB_DEFAULT_DEVICES);
    if (ret < 0) {
        sib_log_error("bad SOFTIB_DEVICES '%s' (want name:ports[@ip[/ip]],...)",
                      spec);
        return ret;
    }

    if (getrandom(&reg->instance, sizeof(reg->instance), 0) !=
        sizeof(reg->instance)) {
        reg->instance = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
    }
    reg->next_rule_id = 1;
    reg->next_slot    = 1;
    reg->version      = SIB_REG_VERSION;
    reg->size         = sizeof(*reg);
    __atomic_store_n(&reg->magic, SIB_REG_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

int sib_registry_attach(struct sib_registry **reg_p)
{
    const char *path = sib_registry_path();
    struct sib_registry *reg;
    struct stat st;
    int fd, ret, fresh;

    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        ret = -errno;
        sib_log_error("cannot open registry %s: %m", path);
        return ret;
    }

    if (flock(fd, LOCK_EX) < 0) {
        ret = -errno;
        goto err_close;
    }

    if (fstat(fd, &st) < 0) {
        ret = -errno;
        goto err_unlock;
    }

    fresh = (size_t)st.st_size != sizeof(*reg);
    if (fresh && (ftruncate(fd, 0) < 0 || ftruncate(fd, sizeof(*reg)) < 0)) {
        ret = -errno;
        goto err_unlock;
    }

    reg = mmap(NULL, sizeof(*reg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (reg == MAP_FAILED) {
        ret = -errno;
        goto err_unlock;
    }

    if (fresh || (reg->magic != SIB_REG_MAGIC) ||
        (reg->version != SIB_REG_VERSION) || (reg->size != sizeof(*reg))) {
        ret = sib_registry_format(reg);
        if (ret < 0) {
            munmap(reg, sizeof(*reg));
            goto err_unlock;
        }
        sib_log_debug("created registry %s with %u devices", path,
                      reg->num_devs);
    }

    flock(fd, LOCK_UN);
    sib_registry_fd = fd;
    *reg_p          = reg;
    return 0;

err_unlock:
    flock(fd, LOCK_UN);
err_close:
    close(fd);
    return ret;
}

void sib_registry_detach(struct sib_registry *reg)
{
    munmap(reg, sizeof(*reg));
    if (sib_registry_fd >= 0) {
        close(sib_registry_fd);
        sib_registry_fd = -1;
    }
}

int sib_registry_lock(struct sib_registry *reg)
{
    (void)reg;
    return (flock(sib_registry_fd, LOCK_EX) < 0) ? -errno : 0;
}

void sib_registry_unlock(struct sib_registry *reg)
{
    (void)reg;
    flock(sib_registry_fd, LOCK_UN);
}

static int sib_registry_pid_alive(uint32_t pid)
{
    return (pid != 0) && ((kill((pid_t)pid, 0) == 0) || (errno != ESRCH));
}

int sib_registry_slot_alive(const struct sib_registry *reg, unsigned slot)
{
    return (slot > 0) && (slot < SIB_MAX_SLOTS) &&
           sib_registry_pid_alive(
                   __atomic_load_n(&reg->slot[slot].pid, __ATOMIC_ACQUIRE));
}

int sib_registry_slot_alloc(struct sib_registry *reg, unsigned dev,
                            const uint16_t *udp_ports, unsigned *slot_p)
{
    struct sib_reg_slot *slot;
    unsigned i, s, port;
    int ret;

    ret = sib_registry_lock(reg);
    if (ret < 0) {
        return ret;
    }

    for (i = 0; i < SIB_MAX_SLOTS - 1; i++) {
        s = 1 + (reg->next_slot - 1 + i) % (SIB_MAX_SLOTS - 1);
        slot = &reg->slot[s];
        /* A slot whose owner died without closing is free again. */
        if (sib_registry_pid_alive(slot->pid)) {
            continue;
        }

        memset(slot->counters, 0, sizeof(slot->counters));
        slot->dev = dev;
        for (port = 0; port < SIB_MAX_PORTS; port++) {
            slot->udp_port[port] = udp_ports[port];
        }
        slot->generation++;
        __atomic_store_n(&slot->pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
        reg->next_slot = 1 + s % (SIB_MAX_SLOTS - 1);
        sib_registry_unlock(reg);
        *slot_p = s;
        return 0;
    }

    sib_registry_unlock(reg);
    return -ENOSPC;
}

void sib_registry_slot_free(struct sib_registry *reg, unsigned slot)
{
    if (sib_registry_lock(reg) < 0) {
        return;
    }
    __atomic_store_n(&reg->slot[slot].pid, 0, __ATOMIC_RELEASE);
    sib_registry_unlock(reg);
}

int sib_registry_port_set(struct sib_registry *reg, unsigned dev,
                          unsigned port, enum sib_port_state state)
{
    struct sib_reg_port *p;
    int ret;

    if ((dev >= reg->num_devs) || (port < 1) ||
        (port > reg->dev[dev].num_ports)) {
        return -EINVAL;
    }

    ret = sib_registry_lock(reg);
    if (ret < 0) {
        return ret;
    }

    p = &reg->dev[dev].port[port - 1];
    if (p->state != (uint32_t)state) {
        if (state == SIB_PORT_DOWN) {
            p->link_downed++;
        }
        __atomic_store_n(&p->state, (uint32_t)state, __ATOMIC_RELEASE);
        __atomic_add_fetch(&reg->generation, 1, __ATOMIC_RELEASE);
    }
    sib_registry_unlock(reg);
    return 0;
}

int sib_registry_rule_add(struct sib_registry *reg,
                          const struct sib_reg_rule *rule, uint32_t *id_p)
{
    struct sib_reg_rule *r;
    unsigned i;
    int ret;

    if (rule->kind == SIB_RULE_FAIL) {
        /* no packet class: packets never match it */
        if ((rule->verbs == 0) || (rule->verbs & ~SIB_VERB_ALL) ||
            (rule->classes != 0) || (rule->err <= 0) ||
            ((rule->dev != SIB_ANY) && (rule->dev >= reg->num_devs)) ||
            (rule->count == 0)) {
            return -EINVAL;
        }
    } else if (((rule->kind != SIB_RULE_DROP) &&
                (rule->kind != SIB_RULE_DELAY)) ||
               (rule->dir == 0) || (rule->dir > SIB_DIR_ANY) ||
               (rule->classes == 0) || (rule->classes & ~SIB_CLASS_ALL) ||
               (rule->verbs != 0) ||
               ((rule->dev != SIB_ANY) && (rule->dev >= reg->num_devs)) ||
               (rule->port > SIB_MAX_PORTS) || (rule->count == 0) ||
               /* a delayed packet is held and sent later by its sender */
               ((rule->kind == SIB_RULE_DELAY) &&
                (rule->dir != SIB_DIR_TX))) {
        return -EINVAL;
    }

    ret = sib_registry_lock(reg);
    if (ret < 0) {
        return ret;
    }

    for (i = 0; i < SIB_MAX_RULES; i++) {
        r = &reg->rule[i];
        if (r->in_use) {
            continue;
        }
        *r         = *rule;
        r->id      = reg->next_rule_id++;
        r->matched = 0;
        r->acted   = 0;
        __atomic_store_n(&r->in_use, 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&reg->num_rules, 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&reg->generation, 1, __ATOMIC_RELEASE);
        *id_p = r->id;
        sib_registry_unlock(reg);
        return 0;
    }

    sib_registry_unlock(reg);
    return -ENOSPC;
}

int sib_registry_rule_del(struct sib_registry *reg, uint32_t id)
{
    unsigned i;
    int ret;

    ret = sib_registry_lock(reg);
    if (ret < 0) {
        return ret;
    }

    ret = -ENOENT;
    for (i = 0; i < SIB_MAX_RULES; i++) {
        if (reg->rule[i].in_use && (reg->rule[i].id == id)) {
            __atomic_store_n(&reg->rule[i].in_use, 0, __ATOMIC_RELEASE);
            __atomic_sub_fetch(&reg->num_rules, 1, __ATOMIC_RELEASE);
            __atomic_add_fetch(&reg->generation, 1, __ATOMIC_RELEASE);
            ret = 0;
            break;
        }
    }

    sib_registry_unlock(reg);
    return ret;
}

void sib_registry_rules_clear(struct sib_registry *reg)
{
    unsigned i;

    if (sib_registry_lock(reg) < 0) {
        return;
    }
    for (i = 0; i < SIB_MAX_RULES; i++) {
        __atomic_store_n(&reg->rule[i].in_use, 0, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&reg->num_rules, 0, __ATOMIC_RELEASE);
    __atomic_add_fetch(&reg->generation, 1, __ATOMIC_RELEASE);
    sib_registry_unlock(reg);
}

/* Counting and deciding in one atomic step keeps "act after the N-th
 * match" exact even when several processes match at once. */
static int sib_registry_rule_acts(struct sib_reg_rule *r)
{
    uint64_t n = __atomic_fetch_add(&r->matched, 1, __ATOMIC_ACQ_REL);

    if ((n >= r->skip) && (n - r->skip < r->count)) {
        __atomic_add_fetch(&r->acted, 1, __ATOMIC_RELAXED);
        return 1;
    }
    return 0;
}

struct sib_reg_rule *sib_registry_rule_match(struct sib_registry *reg,
                                             unsigned dir, unsigned dev,
                                             unsigned port, uint32_t qpn,
                                             unsigned pkt_class)
{
    struct sib_reg_rule *r;
    unsigned i;

    for (i = 0; i < SIB_MAX_RULES; i++) {
        r = &reg->rule[i];
        if (!__atomic_load_n(&r->in_use, __ATOMIC_ACQUIRE) ||
            !(r->dir & dir) || !(r->classes & pkt_class) ||
            ((r->dev != SIB_ANY) && (r->dev != dev)) ||
            ((r->port != 0) && (r->port != port)) ||
            ((r->qpn != 0) && (r->qpn != qpn))) {
            continue;
        }

        if (sib_registry_rule_acts(r)) {
            return r;
        }
    }
    return NULL;
}

int sib_registry_verb_fail(struct sib_registry *reg, unsigned dev,
                           unsigned verb, uint32_t qpn)
{
    struct sib_reg_rule *r;
    unsigned i;

    if (__atomic_load_n(&reg->num_rules, __ATOMIC_ACQUIRE) == 0) {
        return 0;
    }

    for (i = 0; i < SIB_MAX_RULES; i++) {
        r = &reg->rule[i];
        if (!__atomic_load_n(&r->in_use, __ATOMIC_ACQUIRE) ||
            (r->kind != SIB_RULE_FAIL) || !(r->verbs & verb) ||
            ((r->dev != SIB_ANY) && (r->dev != dev)) ||
            ((r->qpn != 0) && (r->qpn != qpn))) {
            continue;
        }
        if (sib_registry_rule_acts(r)) {
            return r->err;
        }
    }
    return 0;
}

void sib_registry_ring_doorbells(struct sib_registry *reg)
{
    struct sib_doorbell db;
    struct sockaddr_in sin;
    struct sib_reg_slot *slot;
    unsigned s, p;
    int fd;

    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return;
    }

    memset(&db, 0, sizeof(db));
    __lrh_set((struct sib_lrh*)db.lrh, 0, SIB_LNH_RAW, 0, 0,
              sizeof(db) / 4);
    db.magic    = SIB_REG_MAGIC;
    db.instance = reg->instance;

    for (s = 1; s < SIB_MAX_SLOTS; s++) {
        slot = &reg->slot[s];
        if (!sib_registry_slot_alive(reg, s) || (slot->dev >= reg->num_devs)) {
            continue;
        }
        /* one doorbell per slot wakes the engine owning it */
        for (p = 0; p < reg->dev[slot->dev].num_ports; p++) {
            if (slot->udp_port[p] == 0) {
                continue;
            }
            memset(&sin, 0, sizeof(sin));
            sin.sin_family      = AF_INET;
            sin.sin_port        = htons(slot->udp_port[p]);
            sin.sin_addr.s_addr = reg->dev[slot->dev].port[p].ip;
            sendto(fd, &db, sizeof(db), MSG_DONTWAIT, (struct sockaddr*)&sin,
                   sizeof(sin));
            break;
        }
    }
    close(fd);
}

uint64_t sib_registry_counter_sum(const struct sib_registry *reg,
                                  unsigned dev, enum sib_counter cnt)
{
    uint64_t sum = 0;
    unsigned s;

    for (s = 1; s < SIB_MAX_SLOTS; s++) {
        if ((reg->slot[s].generation != 0) &&
            ((dev == SIB_ANY) || (reg->slot[s].dev == dev))) {
            sum += __atomic_load_n(&reg->slot[s].counters[cnt],
                                   __ATOMIC_RELAXED);
        }
    }
    return sum;
}
