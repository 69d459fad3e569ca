/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef RC_VARUNA_TEST_MPI_SOFTIB_LINK_H
#define RC_VARUNA_TEST_MPI_SOFTIB_LINK_H

#include <softib/ctl.h>

#include <string.h>

/* Take softib ports down, as cables pulled out: "dev:port", or several
 * separated by commas (both paths of a lane: its port and its standby's);
 * 0 or -1 */
static inline int softib_link_down(const char *links)
{
    const char *p = links;
    char link[128], dev[64];
    softib_ctl_t *ctl;
    unsigned port;
    size_t len;
    int ret = 0;

    if (softib_ctl_open(&ctl) < 0) {
        return -1;
    }
    while ((ret == 0) && (*p != '\0')) {
        len = strcspn(p, ",");
        if (len >= sizeof(link)) {
            ret = -1;
            break;
        }
        memcpy(link, p, len);
        link[len] = '\0';
        ret = ((softib_ctl_parse_port(link, dev, sizeof(dev), &port) < 0) ||
               (softib_ctl_link_set(ctl, dev, port, 0) < 0)) ? -1 : 0;
        p += len + (p[len] == ',');
    }
    softib_ctl_close(ctl);
    return ret;
}

/* From now on the port of "dev:port" sends no RC response (ACK, READ or
 * atomic response) of any process: what is sent to it still executes, its
 * senders never learn so; 0 or -1 */
static inline int softib_responses_lost(const char *link)
{
    struct softib_rule rule;
    softib_ctl_t *ctl;
    char dev[64];
    unsigned port;
    uint32_t id;
    int ret;

    if (softib_ctl_open(&ctl) < 0) {
        return -1;
    }
    memset(&rule, 0, sizeof(rule));
    ret = softib_ctl_parse_port(link, dev, sizeof(dev), &port);
    if (ret == 0) {
        rule.kind    = SOFTIB_RULE_DROP;
        rule.dev     = dev;
        rule.port    = port;
        rule.dir     = SOFTIB_DIR_TX;
        rule.classes = SOFTIB_CLASS_RESPONSES;
        rule.count   = SOFTIB_FOREVER;
        ret          = softib_ctl_rule_add(ctl, &rule, &id);
    }
    softib_ctl_close(ctl);
    return (ret < 0) ? -1 : 0;
}

#endif
