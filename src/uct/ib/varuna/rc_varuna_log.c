/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "rc_varuna.h"

#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <uct/base/uct_iface.h>


/*
 * Completion log words (DESIGN.md section 3.3). Every endpoint owns one
 * 8-byte word here, in memory registered on both devices; the peer writes
 * the sequence number of each of its operations into it, right behind the
 * operation, on the same QP. At failover the peer reads it back through its
 * standby QP: the value is the last operation that executed here.
 *
 * The words come from a UCX memory pool registered through our memory
 * domain (both devices' keys, kept in each word at its creation). Its
 * chunks are freed only with the interface: the peer may still write into
 * the word of an endpoint closed here, and a word reused meanwhile starts
 * from 0 again for its new endpoint, whose peer's writes are the only ones
 * that count from then on (a peer's write for the old endpoint came on a
 * QP that is gone).
 */

#define UCT_RC_VARUNA_LOG_GROW  1024


static void uct_rc_varuna_log_word_init(uct_iface_h tl_iface, void *obj,
                                        uct_mem_h memh)
{
    uct_rc_varuna_log_word_t *word = obj;
    uct_rc_varuna_memh_t *m        = memh;
    unsigned side;

    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        word->rkey[side] = m->rkey[side];
    }
}

ucs_status_t uct_rc_varuna_log_init(uct_rc_varuna_iface_t *iface,
                                    const uct_ib_iface_config_t *ib_config)
{
    ucs_status_t status;

    status = uct_iface_mpool_init(&iface->super.super.super, &iface->log_mp,
                                  sizeof(uct_rc_varuna_log_word_t), 0,
                                  UCS_SYS_CACHE_LINE_SIZE, &ib_config->tx.mp,
                                  UCT_RC_VARUNA_LOG_GROW,
                                  uct_rc_varuna_log_word_init,
                                  "rc_varuna_log");
    if (status != UCS_OK) {
        ucs_error("rc_varuna: failed to create the completion log: %s",
                  ucs_status_string(status));
    }
    return status;
}

ucs_status_t uct_rc_varuna_log_alloc(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep)
{
    ep->log = ucs_mpool_get(&iface->log_mp);
    if (ep->log == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    /* 0: nothing of the peer's executed yet (sequence numbers start at 1) */
    ep->log->sn = 0;
    return UCS_OK;
}

void uct_rc_varuna_log_free(uct_rc_varuna_iface_t *iface,
                            uct_rc_varuna_ep_t *ep)
{
    if (ep->log != NULL) {
        ucs_mpool_put(ep->log);
        ep->log = NULL;
    }
}

uint32_t uct_rc_varuna_log_rkey(uct_rc_varuna_ep_t *ep, unsigned side)
{
    return ep->log->rkey[side];
}

/* warns of words still in use */
void uct_rc_varuna_log_cleanup(uct_rc_varuna_iface_t *iface)
{
    ucs_mpool_cleanup(&iface->log_mp, 1);
}
