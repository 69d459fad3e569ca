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
#include <ucs/debug/memtrack_int.h>


/*
 * Completion log words (DESIGN.md section 3.3). Every endpoint owns one
 * 8-byte word here, in memory registered on both devices; the peer writes
 * the sequence number of each of its operations into it, right behind the
 * operation, on the same QP. At failover the peer reads it back through its
 * standby QP: the value is the last operation that executed here.
 *
 * Words live in chunks registered once; a chunk is never freed before the
 * interface, since the peer may still write into a word of a closed
 * endpoint.
 */

#define UCT_RC_VARUNA_LOG_CHUNK_WORDS  1024


static ucs_status_t uct_rc_varuna_log_chunk_add(uct_rc_varuna_iface_t *iface,
                                                uct_rc_varuna_log_chunk_t **chunk_p)
{
    uct_md_h md = iface->super.super.super.md;
    uct_rc_varuna_log_chunk_t *chunk;
    size_t size = UCT_RC_VARUNA_LOG_CHUNK_WORDS * sizeof(uint64_t);
    ucs_status_t status;
    int ret;

    chunk = ucs_calloc(1, sizeof(*chunk), "rc_varuna_log_chunk");
    if (chunk == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    chunk->in_use = ucs_calloc(UCT_RC_VARUNA_LOG_CHUNK_WORDS, 1,
                               "rc_varuna_log_in_use");
    if (chunk->in_use == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free_chunk;
    }

    ret = ucs_posix_memalign((void**)&chunk->words, UCS_SYS_CACHE_LINE_SIZE,
                             size, "rc_varuna_log_words");
    if (ret != 0) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free_in_use;
    }
    memset(chunk->words, 0, size);

    status = uct_md_mem_reg(md, chunk->words, size, UCT_MD_MEM_ACCESS_ALL,
                            &chunk->memh);
    if (status != UCS_OK) {
        ucs_error("rc_varuna: failed to register the completion log: %s",
                  ucs_status_string(status));
        goto err_free_words;
    }

    chunk->count = UCT_RC_VARUNA_LOG_CHUNK_WORDS;
    ucs_list_add_tail(&iface->log_chunks, &chunk->list);
    *chunk_p = chunk;
    return UCS_OK;

err_free_words:
    ucs_free(chunk->words);
err_free_in_use:
    ucs_free(chunk->in_use);
err_free_chunk:
    ucs_free(chunk);
    return status;
}

ucs_status_t uct_rc_varuna_log_alloc(uct_rc_varuna_iface_t *iface,
                                     uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_log_chunk_t *chunk;
    ucs_status_t status;
    unsigned i;

    ucs_list_for_each(chunk, &iface->log_chunks, list) {
        if (chunk->used < chunk->count) {
            goto found;
        }
    }

    status = uct_rc_varuna_log_chunk_add(iface, &chunk);
    if (status != UCS_OK) {
        return status;
    }

found:
    for (i = 0; i < chunk->count; i++) {
        if (!chunk->in_use[i]) {
            break;
        }
    }
    ucs_assert(i < chunk->count);

    chunk->in_use[i] = 1;
    chunk->used++;
    /* 0: nothing of the peer's executed yet (sequence numbers start at 1) */
    chunk->words[i]  = 0;
    ep->log.chunk    = chunk;
    ep->log.index    = i;
    return UCS_OK;
}

void uct_rc_varuna_log_free(uct_rc_varuna_iface_t *iface,
                            uct_rc_varuna_ep_t *ep)
{
    uct_rc_varuna_log_chunk_t *chunk = ep->log.chunk;

    if (chunk == NULL) {
        return;
    }
    chunk->in_use[ep->log.index] = 0;
    chunk->used--;
    ep->log.chunk = NULL;
}

uint32_t uct_rc_varuna_log_rkey(uct_rc_varuna_ep_t *ep, unsigned side)
{
    return ((uct_rc_varuna_memh_t*)ep->log.chunk->memh)->rkey[side];
}

void uct_rc_varuna_log_cleanup(uct_rc_varuna_iface_t *iface)
{
    uct_md_h md = iface->super.super.super.md;
    uct_rc_varuna_log_chunk_t *chunk, *tmp;

    ucs_list_for_each_safe(chunk, tmp, &iface->log_chunks, list) {
        if (chunk->used != 0) {
            ucs_warn("rc_varuna: %u completion log words still in use",
                     chunk->used);
        }
        uct_md_mem_dereg(md, chunk->memh);
        ucs_list_del(&chunk->list);
        ucs_free(chunk->words);
        ucs_free(chunk->in_use);
        ucs_free(chunk);
    }
}
