/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef RC_VARUNA_TEST_MPI_SOFTIB_LINK_H
#define RC_VARUNA_TEST_MPI_SOFTIB_LINK_H

#include <softib/ctl.h>

/* Take a softib port ("dev:port") down, as a cable pulled out; 0 or -1 */
static int softib_link_down(const char *link)
{
    softib_ctl_t *ctl;
    char dev[64];
    unsigned port;
    int ret;

    if (softib_ctl_open(&ctl) < 0) {
        return -1;
    }
    ret = ((softib_ctl_parse_port(link, dev, sizeof(dev), &port) < 0) ||
           (softib_ctl_link_set(ctl, dev, port, 0) < 0)) ? -1 : 0;
    softib_ctl_close(ctl);
    return ret;
}

#endif
