/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Memory keys and access checks. A key is (table index << 8 | 8-bit
 * generation), so a stale key of a deregistered region misses even after
 * its slot is reused. lkey and rkey are the same value.
 */
#include "sib_loc.h"

#include <string.h>


/* Engine lock held. */
struct sib_mr *sib_mr_lookup(struct sib_context *ctx, uint32_t key)
{
    uint32_t index = key >> 8;
    struct sib_mr *mr;

    if (index >= ctx->mr_table_size) {
        return NULL;
    }
    mr = ctx->mr_table[index];
    return ((mr != NULL) && (mr->ibmr.lkey == key)) ? mr : NULL;
}

/* 0 if [iova, iova + len) lies in the region, the PDs match and the region
 * grants every access bit asked for (IBA 10.6.3.1). */
int sib_mr_check(struct sib_mr *mr, struct sib_pd *pd, uint64_t iova,
                 uint64_t len, unsigned access)
{
    if ((mr->pd != pd) || ((mr->access & access) != access) ||
        (iova < mr->iova) || (len > mr->length) ||
        (iova - mr->iova > mr->length - len)) {
        return -1;
    }
    return 0;
}

/* Engine lock held. Scatter len bytes of src into the SGE list, starting
 * offset bytes in. Every SGE touched is checked for local write access.
 * Returns 0, or -1 on a protection error (nothing after it is written). */
int sib_sge_copy_to(struct sib_context *ctx, struct sib_pd *pd,
                    const struct ibv_sge *sge, uint32_t num_sge,
                    uint32_t offset, const void *src, uint32_t len)
{
    const uint8_t *from = src;
    struct sib_mr *mr;
    uint32_t i, piece;

    for (i = 0; (i < num_sge) && (len > 0); i++) {
        if (offset >= sge[i].length) {
            offset -= sge[i].length;
            continue;
        }
        piece = sge[i].length - offset;
        if (piece > len) {
            piece = len;
        }
        mr = sib_mr_lookup(ctx, sge[i].lkey);
        if ((mr == NULL) ||
            sib_mr_check(mr, pd, sge[i].addr + offset, piece,
                         IBV_ACCESS_LOCAL_WRITE)) {
            return -1;
        }
        memcpy(mr->addr + (sge[i].addr + offset - mr->iova), from, piece);
        from  += piece;
        len   -= piece;
        offset = 0;
    }
    return (len == 0) ? 0 : -1;
}
