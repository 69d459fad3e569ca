/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Verbs: the extended post API (ibv_qp_ex, ibv_wr_*), which perftest uses
 * by default. Each WR built between wr_start and wr_complete comes from a
 * per-QP pool, and wr_complete posts the list through the ordinary path.
 */
#include "sib_loc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


struct sib_wr_ex {
    struct ibv_send_wr wr;
    struct ibv_sge     sge[SIB_MAX_SGE];
    uint8_t            inl[SIB_MAX_INLINE];
};

#define SIB_WR_POOL_MAX  1024

#define SIB_QP_EX_SUPPORTED \
    (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV)

/* A new WR at the end of the list, or NULL once the list has failed. */
static struct sib_wr_ex *sib_wr_new(struct ibv_qp_ex *qpx,
                                    enum ibv_wr_opcode opcode)
{
    struct sib_qp *qp = qpx_to_sqp(qpx);
    struct sib_wr_ex *w;

    if (qp->wr_err != 0) {
        return NULL;
    }
    if (qp->wr_used == qp->wr_pool_size) {
        qp->wr_err = ENOMEM;
        return NULL;
    }

    w = &qp->wr_pool[qp->wr_used++];
    memset(&w->wr, 0, sizeof(w->wr));
    w->wr.wr_id      = qpx->wr_id;
    w->wr.send_flags = qpx->wr_flags;
    w->wr.opcode     = opcode;
    w->wr.sg_list    = w->sge;
    if (qp->wr_used > 1) {
        qp->wr_pool[qp->wr_used - 2].wr.next = &w->wr;
    }
    return w;
}

/* The WR the set_* calls complete, or NULL. */
static struct sib_wr_ex *sib_wr_cur(struct ibv_qp_ex *qpx)
{
    struct sib_qp *qp = qpx_to_sqp(qpx);

    if ((qp->wr_err != 0) || (qp->wr_used == 0)) {
        qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
        return NULL;
    }
    return &qp->wr_pool[qp->wr_used - 1];
}

static void sib_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
                        uint32_t rkey, uint64_t remote_addr, __be32 imm)
{
    struct sib_wr_ex *w = sib_wr_new(qpx, opcode);

    if (w != NULL) {
        w->wr.wr.rdma.rkey        = rkey;
        w->wr.wr.rdma.remote_addr = remote_addr;
        w->wr.imm_data            = imm;
    }
}

static void sib_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
                              uint64_t remote_addr)
{
    sib_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void sib_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
                                  uint64_t remote_addr, __be32 imm)
{
    sib_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm);
}

static void sib_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
                             uint64_t remote_addr)
{
    sib_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void sib_wr_send(struct ibv_qp_ex *qpx)
{
    sib_wr_new(qpx, IBV_WR_SEND);
}

static void sib_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
    struct sib_wr_ex *w = sib_wr_new(qpx, IBV_WR_SEND_WITH_IMM);

    if (w != NULL) {
        w->wr.imm_data = imm;
    }
}

static void sib_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
    struct sib_wr_ex *w = sib_wr_new(qpx, IBV_WR_SEND_WITH_INV);

    if (w != NULL) {
        w->wr.invalidate_rkey = invalidate_rkey;
    }
}

static void sib_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
                          uint32_t rkey, uint64_t remote_addr,
                          uint64_t compare_add, uint64_t swap)
{
    struct sib_wr_ex *w = sib_wr_new(qpx, opcode);

    if (w != NULL) {
        w->wr.wr.atomic.rkey        = rkey;
        w->wr.wr.atomic.remote_addr = remote_addr;
        w->wr.wr.atomic.compare_add = compare_add;
        w->wr.wr.atomic.swap        = swap;
    }
}

static void sib_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
                                  uint64_t remote_addr, uint64_t compare,
                                  uint64_t swap)
{
    sib_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare,
                  swap);
}

static void sib_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
                                    uint64_t remote_addr, uint64_t add)
{
    sib_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add,
                  0);
}

static void sib_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
                               uint32_t remote_qpn, uint32_t remote_qkey)
{
    struct sib_wr_ex *w = sib_wr_cur(qpx);

    if (w != NULL) {
        w->wr.wr.ud.ah          = ah;
        w->wr.wr.ud.remote_qpn  = remote_qpn;
        w->wr.wr.ud.remote_qkey = remote_qkey;
    }
}

static void sib_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
                           uint64_t addr, uint32_t length)
{
    struct sib_wr_ex *w = sib_wr_cur(qpx);

    if (w != NULL) {
        w->sge[0].lkey   = lkey;
        w->sge[0].addr   = addr;
        w->sge[0].length = length;
        w->wr.num_sge    = 1;
    }
}

static void sib_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
                                const struct ibv_sge *sg_list)
{
    struct sib_wr_ex *w = sib_wr_cur(qpx);

    if (w == NULL) {
        return;
    }
    if (num_sge > SIB_MAX_SGE) {
        qpx_to_sqp(qpx)->wr_err = EINVAL;
        return;
    }
    memcpy(w->sge, sg_list, num_sge * sizeof(*sg_list));
    w->wr.num_sge = (int)num_sge;
}

static void sib_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
                                        const struct ibv_data_buf *buf_list)
{
    struct sib_wr_ex *w = sib_wr_cur(qpx);
    size_t i, off = 0;

    if (w == NULL) {
        return;
    }
    for (i = 0; i < num_buf; i++) {
        if (buf_list[i].length > SIB_MAX_INLINE - off) {
            qpx_to_sqp(qpx)->wr_err = EINVAL;
            return;
        }
        memcpy(w->inl + off, buf_list[i].addr, buf_list[i].length);
        off += buf_list[i].length;
    }
    w->sge[0].addr    = (uintptr_t)w->inl;
    w->sge[0].length  = (uint32_t)off;
    w->sge[0].lkey    = 0;
    w->wr.num_sge     = 1;
    w->wr.send_flags |= IBV_SEND_INLINE;
}

static void sib_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
                                   size_t length)
{
    struct ibv_data_buf buf = { .addr = addr, .length = length };

    sib_wr_set_inline_data_list(qpx, 1, &buf);
}

static void sib_wr_start(struct ibv_qp_ex *qpx)
{
    struct sib_qp *qp = qpx_to_sqp(qpx);

    qp->wr_used = 0;
    qp->wr_err  = 0;
}

static int sib_wr_complete(struct ibv_qp_ex *qpx)
{
    struct sib_qp *qp = qpx_to_sqp(qpx);
    struct ibv_send_wr *bad_wr;
    int ret = qp->wr_err;

    if ((ret == 0) && (qp->wr_used > 0)) {
        ret = sib_post_send(&qpx->qp_base, &qp->wr_pool[0].wr, &bad_wr);
    }
    qp->wr_used = 0;
    qp->wr_err  = 0;
    return ret;
}

static void sib_wr_abort(struct ibv_qp_ex *qpx)
{
    struct sib_qp *qp = qpx_to_sqp(qpx);

    qp->wr_used = 0;
    qp->wr_err  = 0;
}

int sib_qp_ex_init(struct sib_qp *qp, uint64_t send_ops_flags)
{
    struct ibv_qp_ex *qpx = &qp->ibqpx;

    if (send_ops_flags & ~(uint64_t)SIB_QP_EX_SUPPORTED) {
        return -EOPNOTSUPP;
    }

    qp->wr_pool_size = (qp->sq.max_wr < SIB_WR_POOL_MAX) ? qp->sq.max_wr :
                       SIB_WR_POOL_MAX;
    qp->wr_pool      = calloc(qp->wr_pool_size, sizeof(*qp->wr_pool));
    if (qp->wr_pool == NULL) {
        return -ENOMEM;
    }

    qpx->wr_atomic_cmp_swp       = sib_wr_atomic_cmp_swp;
    qpx->wr_atomic_fetch_add     = sib_wr_atomic_fetch_add;
    qpx->wr_rdma_read            = sib_wr_rdma_read;
    qpx->wr_rdma_write           = sib_wr_rdma_write;
    qpx->wr_rdma_write_imm       = sib_wr_rdma_write_imm;
    qpx->wr_send                 = sib_wr_send;
    qpx->wr_send_imm             = sib_wr_send_imm;
    qpx->wr_send_inv             = sib_wr_send_inv;
    qpx->wr_set_ud_addr          = sib_wr_set_ud_addr;
    qpx->wr_set_inline_data      = sib_wr_set_inline_data;
    qpx->wr_set_inline_data_list = sib_wr_set_inline_data_list;
    qpx->wr_set_sge              = sib_wr_set_sge;
    qpx->wr_set_sge_list         = sib_wr_set_sge_list;
    qpx->wr_start                = sib_wr_start;
    qpx->wr_complete             = sib_wr_complete;
    qpx->wr_abort                = sib_wr_abort;
    return 0;
}
