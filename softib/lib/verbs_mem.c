/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Verbs: protection domains, memory regions, address handles.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


#define SIB_MR_TABLE_MIN   256
#define SIB_MR_TABLE_MAX   (1u << 24)  /* the index part of a key */

static uint32_t sib_handle_seq;

static uint32_t sib_next_handle(void)
{
    return __atomic_add_fetch(&sib_handle_seq, 1, __ATOMIC_RELAXED);
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    struct sib_pd *pd = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pd->ibpd.context = context;
    pd->ibpd.handle  = sib_next_handle();
    return &pd->ibpd;
}

int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
    free(to_spd(ibpd));
    return 0;
}

/* Engine lock held. A free table index, growing the table if needed. */
static int sib_mr_table_alloc(struct sib_context *ctx, uint32_t *index_p)
{
    struct sib_mr **table;
    uint32_t i, idx, size;

    for (i = 0; i < ctx->mr_table_size; i++) {
        idx = (ctx->mr_next + i) % ctx->mr_table_size;
        if (ctx->mr_table[idx] == NULL) {
            ctx->mr_next = idx + 1;
            *index_p     = idx;
            return 0;
        }
    }

    size = ctx->mr_table_size ? ctx->mr_table_size * 2 : SIB_MR_TABLE_MIN;
    if (size > SIB_MR_TABLE_MAX) {
        return -ENOMEM;
    }
    table = realloc(ctx->mr_table, size * sizeof(*table));
    if (table == NULL) {
        return -ENOMEM;
    }
    memset(table + ctx->mr_table_size, 0,
           (size - ctx->mr_table_size) * sizeof(*table));
    idx                = ctx->mr_table_size;
    ctx->mr_table      = table;
    ctx->mr_table_size = size;
    ctx->mr_next       = idx + 1;
    *index_p           = idx;
    return 0;
}

static int sib_mr_access_valid(unsigned access)
{
    /* IBA 10.6.3.1: remote write or atomic access needs local write */
    return !((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
             !(access & IBV_ACCESS_LOCAL_WRITE));
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr,
                                size_t length, uint64_t iova,
                                unsigned int access)
{
    struct sib_context *ctx = to_sctx(ibpd->context);
    struct sib_mr *mr;
    uint32_t index;
    int ret;

    if ((length == 0) || (length > SIB_MAX_MR_SIZE) ||
        !sib_mr_access_valid(access)) {
        errno = EINVAL;
        return NULL;
    }

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    sib_engine_lock(ctx->eng);
    ret = sib_mr_table_alloc(ctx, &index);
    if (ret < 0) {
        sib_engine_unlock(ctx->eng);
        free(mr);
        errno = -ret;
        return NULL;
    }
    mr->pd           = to_spd(ibpd);
    mr->iova         = iova;
    mr->addr         = addr;
    mr->length       = length;
    mr->access       = access;
    mr->index        = index;
    mr->ibmr.context = ibpd->context;
    mr->ibmr.pd      = ibpd;
    mr->ibmr.addr    = addr;
    mr->ibmr.length  = length;
    mr->ibmr.handle  = sib_next_handle();
    mr->ibmr.lkey    = (index << 8) | (++ctx->mr_key_seq & 0xff);
    mr->ibmr.rkey    = mr->ibmr.lkey;
    ctx->mr_table[index] = mr;
    sib_engine_unlock(ctx->eng);

    sib_log_trace("reg mr %p len %zu key 0x%x", addr, length, mr->ibmr.lkey);
    return &mr->ibmr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
                          int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr,
                            (unsigned)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                               uint64_t iova, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
                                 size_t length, uint64_t iova, int fd,
                                 int access)
{
    (void)pd;
    (void)offset;
    (void)length;
    (void)iova;
    (void)fd;
    (void)access;
    errno = EOPNOTSUPP;
    return NULL;
}

int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd,
                 void *addr, size_t length, int access)
{
    struct sib_context *ctx = to_sctx(ibmr->context);
    struct sib_mr *mr       = to_smr(ibmr);

    if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
        ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (length == 0)) ||
        ((flags & IBV_REREG_MR_CHANGE_ACCESS) &&
         !sib_mr_access_valid((unsigned)access))) {
        return IBV_REREG_MR_ERR_INPUT;
    }

    sib_engine_lock(ctx->eng);
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        mr->addr         = addr;
        mr->iova         = (uintptr_t)addr;
        mr->length       = length;
        mr->ibmr.addr    = addr;
        mr->ibmr.length  = length;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) {
        mr->pd      = to_spd(pd);
        mr->ibmr.pd = pd;
    }
    if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
        mr->access = (unsigned)access;
    }
    sib_engine_unlock(ctx->eng);
    return 0;
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
    struct sib_context *ctx = to_sctx(ibmr->context);
    struct sib_mr *mr       = to_smr(ibmr);

    sib_engine_lock(ctx->eng);
    ctx->mr_table[mr->index] = NULL;
    sib_engine_unlock(ctx->eng);
    free(mr);
    return 0;
}

int ibv_dontfork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    struct sib_context *ctx = to_sctx(pd->context);
    struct sib_ah *ah;

    if ((attr->port_num < 1) || (attr->port_num > ctx->dev->num_ports)) {
        errno = EINVAL;
        return NULL;
    }

    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ah->attr         = *attr;
    ah->ibah.context = pd->context;
    ah->ibah.pd      = pd;
    ah->ibah.handle  = sib_next_handle();
    return &ah->ibah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
    free(to_sah(ah));
    return 0;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
                        struct ibv_wc *wc, struct ibv_grh *grh,
                        struct ibv_ah_attr *ah_attr)
{
    (void)context;
    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->dlid          = wc->slid;
    ah_attr->sl            = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num      = port_num;
    if (wc->wc_flags & IBV_WC_GRH) {
        ah_attr->is_global          = 1;
        ah_attr->grh.dgid           = grh->sgid;
        ah_attr->grh.flow_label     = be32toh(grh->version_tclass_flow) &
                                      0xfffff;
        ah_attr->grh.hop_limit      = 0xff;
        ah_attr->grh.traffic_class  = (be32toh(grh->version_tclass_flow) >>
                                       20) & 0xff;
    }
    return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
                                     struct ibv_grh *grh, uint8_t port_num)
{
    struct ibv_ah_attr attr;

    ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);
    return ibv_create_ah(pd, &attr);
}
