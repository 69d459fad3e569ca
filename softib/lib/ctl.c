/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * libsoftib: the control API over the registry (softib/ctl.h).
 */
#include "softib/ctl.h"
#include "sib_registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The public control enums are the registry's own values */
_Static_assert((int)SOFTIB_RULE_DROP == (int)SIB_RULE_DROP, "rule kind");
_Static_assert((int)SOFTIB_RULE_DELAY == (int)SIB_RULE_DELAY, "rule kind");
_Static_assert((int)SOFTIB_RULE_FAIL == (int)SIB_RULE_FAIL, "rule kind");
_Static_assert((int)SOFTIB_DIR_TX == (int)SIB_DIR_TX, "rule direction");
_Static_assert((int)SOFTIB_DIR_RX == (int)SIB_DIR_RX, "rule direction");
_Static_assert((int)SOFTIB_DIR_ANY == (int)SIB_DIR_ANY, "rule direction");
_Static_assert((int)SOFTIB_CLASS_REQ == (int)SIB_CLASS_REQ, "packet class");
_Static_assert((int)SOFTIB_CLASS_ACK == (int)SIB_CLASS_ACK, "packet class");
_Static_assert((int)SOFTIB_CLASS_READ_RESP == (int)SIB_CLASS_READ_RESP, "packet class");
_Static_assert((int)SOFTIB_CLASS_ATOMIC_RESP == (int)SIB_CLASS_ATOMIC_RESP,
               "packet class");
_Static_assert((int)SOFTIB_CLASS_UD == (int)SIB_CLASS_UD, "packet class");
_Static_assert((int)SOFTIB_CLASS_ALL == (int)SIB_CLASS_ALL, "packet class");
_Static_assert((int)SOFTIB_VERB_CREATE_QP == (int)SIB_VERB_CREATE_QP, "verb");
_Static_assert((int)SOFTIB_VERB_QUERY_QP == (int)SIB_VERB_QUERY_QP, "verb");
_Static_assert((int)SOFTIB_VERB_POST_SEND == (int)SIB_VERB_POST_SEND, "verb");
_Static_assert((int)SOFTIB_VERB_POST_READ == (int)SIB_VERB_POST_READ, "verb");
_Static_assert((int)SOFTIB_VERB_MODIFY_QP == (int)SIB_VERB_MODIFY_QP, "verb");
_Static_assert((int)SOFTIB_VERB_CONNECT_QP == (int)SIB_VERB_CONNECT_QP, "verb");
_Static_assert((int)SOFTIB_VERB_ALL == (int)SIB_VERB_ALL, "verb");


struct softib_ctl {
    struct sib_registry *reg;
};

int softib_ctl_open(softib_ctl_t **ctl_p)
{
    softib_ctl_t *ctl = calloc(1, sizeof(*ctl));
    int ret;

    if (ctl == NULL) {
        return -ENOMEM;
    }
    ret = sib_registry_attach(&ctl->reg);
    if (ret < 0) {
        free(ctl);
        return ret;
    }
    *ctl_p = ctl;
    return 0;
}

void softib_ctl_close(softib_ctl_t *ctl)
{
    sib_registry_detach(ctl->reg);
    free(ctl);
}

int softib_ctl_num_devices(softib_ctl_t *ctl)
{
    return (int)ctl->reg->num_devs;
}

const char *softib_ctl_device_name(softib_ctl_t *ctl, int index)
{
    if ((index < 0) || ((unsigned)index >= ctl->reg->num_devs)) {
        return NULL;
    }
    return ctl->reg->dev[index].name;
}

static int softib_ctl_dev_port(softib_ctl_t *ctl, const char *dev,
                               unsigned port)
{
    int idx = sib_registry_find_dev(ctl->reg, dev);

    if (idx < 0) {
        return idx;
    }
    if ((port < 1) || (port > ctl->reg->dev[idx].num_ports)) {
        return -EINVAL;
    }
    return idx;
}

int softib_ctl_num_ports(softib_ctl_t *ctl, const char *dev)
{
    int idx = sib_registry_find_dev(ctl->reg, dev);

    return (idx < 0) ? idx : (int)ctl->reg->dev[idx].num_ports;
}

int softib_ctl_lid(softib_ctl_t *ctl, const char *dev, unsigned port)
{
    int idx = softib_ctl_dev_port(ctl, dev, port);

    return (idx < 0) ? idx : (int)sib_registry_lid((unsigned)idx, port);
}

int softib_ctl_link_set(softib_ctl_t *ctl, const char *dev, unsigned port,
                        int up)
{
    int idx = softib_ctl_dev_port(ctl, dev, port);
    int ret;

    if (idx < 0) {
        return idx;
    }
    ret = sib_registry_port_set(ctl->reg, (unsigned)idx, port,
                                up ? SIB_PORT_ACTIVE : SIB_PORT_DOWN);
    if (ret == 0) {
        sib_registry_ring_doorbells(ctl->reg);
    }
    return ret;
}

int softib_ctl_link_get(softib_ctl_t *ctl, const char *dev, unsigned port)
{
    int idx = softib_ctl_dev_port(ctl, dev, port);

    if (idx < 0) {
        return idx;
    }
    return __atomic_load_n(&ctl->reg->dev[idx].port[port - 1].state,
                           __ATOMIC_ACQUIRE) == SIB_PORT_ACTIVE;
}

int softib_ctl_rule_add(softib_ctl_t *ctl, const struct softib_rule *rule,
                        uint32_t *id_p)
{
    struct sib_reg_rule r;
    int idx, ret;

    memset(&r, 0, sizeof(r));
    r.dev = SIB_ANY;
    if (rule->dev != NULL) {
        idx = sib_registry_find_dev(ctl->reg, rule->dev);
        if (idx < 0) {
            return idx;
        }
        r.dev = (uint32_t)idx;
    }
    r.kind     = (uint32_t)rule->kind;
    r.dir      = rule->dir;
    r.port     = rule->port;
    r.classes  = rule->classes;
    r.qpn      = rule->qpn;
    r.skip     = rule->skip;
    r.count    = rule->count;
    r.delay_ns = rule->delay_us * 1000;
    r.verbs    = rule->verbs;
    r.err      = (rule->kind == SOFTIB_RULE_FAIL) ?
                 ((rule->err > 0) ? rule->err : EIO) : 0;

    ret = sib_registry_rule_add(ctl->reg, &r, id_p);
    if (ret == 0) {
        sib_registry_ring_doorbells(ctl->reg);
    }
    return ret;
}

int softib_ctl_rule_del(softib_ctl_t *ctl, uint32_t id)
{
    return sib_registry_rule_del(ctl->reg, id);
}

int softib_ctl_rule_stats(softib_ctl_t *ctl, uint32_t id, uint64_t *matched,
                          uint64_t *acted)
{
    unsigned i;

    for (i = 0; i < SIB_MAX_RULES; i++) {
        if (ctl->reg->rule[i].id == id) {
            *matched = __atomic_load_n(&ctl->reg->rule[i].matched,
                                       __ATOMIC_ACQUIRE);
            *acted   = __atomic_load_n(&ctl->reg->rule[i].acted,
                                       __ATOMIC_ACQUIRE);
            return 0;
        }
    }
    return -ENOENT;
}

int softib_ctl_reset(softib_ctl_t *ctl)
{
    unsigned dev, port;
    int ret;

    sib_registry_rules_clear(ctl->reg);
    for (dev = 0; dev < ctl->reg->num_devs; dev++) {
        for (port = 1; port <= ctl->reg->dev[dev].num_ports; port++) {
            ret = sib_registry_port_set(ctl->reg, dev, port, SIB_PORT_ACTIVE);
            if (ret < 0) {
                return ret;
            }
        }
    }
    sib_registry_ring_doorbells(ctl->reg);
    return 0;
}

int64_t softib_ctl_counter(softib_ctl_t *ctl, const char *dev,
                           const char *name)
{
    unsigned idx = SIB_ANY;
    int cnt, d;

    if (dev != NULL) {
        d = sib_registry_find_dev(ctl->reg, dev);
        if (d < 0) {
            return d;
        }
        idx = (unsigned)d;
    }
    for (cnt = 0; cnt < SIB_CNT_LAST; cnt++) {
        if (!strcmp(sib_counter_name[cnt], name)) {
            return (int64_t)sib_registry_counter_sum(ctl->reg, idx,
                                                     (enum sib_counter)cnt);
        }
    }
    return -ENOENT;
}

int softib_ctl_contexts(softib_ctl_t *ctl, struct softib_ctx_info *info,
                        int max)
{
    const struct sib_reg_slot *s;
    unsigned slot, p;
    int n = 0;

    for (slot = 1; slot < SIB_MAX_SLOTS; slot++) {
        if (!sib_registry_slot_alive(ctl->reg, slot)) {
            continue;
        }
        if (n < max) {
            s = &ctl->reg->slot[slot];
            memset(&info[n], 0, sizeof(info[n]));
            info[n].slot = slot;
            info[n].pid  = (int)s->pid;
            snprintf(info[n].dev, sizeof(info[n].dev), "%s",
                     (s->dev < ctl->reg->num_devs) ?
                     ctl->reg->dev[s->dev].name : "?");
            for (p = 0; p < SIB_MAX_PORTS; p++) {
                info[n].udp_port[p] = s->udp_port[p];
            }
        }
        n++;
    }
    return n;
}

const char *softib_ctl_counter_name(int index)
{
    return ((index >= 0) && (index < SIB_CNT_LAST)) ? sib_counter_name[index] :
                                                       NULL;
}

int softib_ctl_parse_port(const char *spec, char *dev, unsigned len,
                          unsigned *port)
{
    const char *colon = strrchr(spec, ':');
    char *end;
    unsigned long p;

    if ((colon == NULL) || (colon == spec) ||
        ((unsigned)(colon - spec) >= len)) {
        return -EINVAL;
    }
    p = strtoul(colon + 1, &end, 10);
    if ((*end != '\0') || (p < 1) || (p > SIB_MAX_PORTS)) {
        return -EINVAL;
    }
    memcpy(dev, spec, (size_t)(colon - spec));
    dev[colon - spec] = '\0';
    *port             = (unsigned)p;
    return 0;
}
